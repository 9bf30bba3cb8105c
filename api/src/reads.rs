//! How many heavy reads (raw data exports, fuel resampling) run at once: in
//! all, and per user. A read holds its slot until its answer is sent, a
//! streamed export until its last chunk. Beyond a user's share the caller
//! gets 429 (code 15), beyond the total 503 (code 8), both with `Retry-After`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use schemas::ErrorCode;

use crate::{ApiError, ApiResult};

/// The slots of heavy reads.
#[derive(Debug)]
pub(crate) struct ReadSlots {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    total: usize,
    per_user: usize,
    state: Mutex<State>,
    in_flight: Gauge,
    refusals: Family<LimitLabel, Counter>,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    by_user: HashMap<i64, usize>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct LimitLabel {
    limit: &'static str,
}

/// A slot taken; given back when dropped.
#[derive(Debug)]
pub(crate) struct ReadSlot {
    inner: Arc<Shared>,
    user: i64,
}

impl ReadSlots {
    /// At most `total` reads at once, `per_user` of one user; registers the metrics.
    pub(crate) fn new(total: usize, per_user: usize, registry: &mut Registry) -> Self {
        let inner = Arc::new(Shared {
            total: total.max(1),
            per_user: per_user.max(1),
            state: Mutex::new(State::default()),
            in_flight: Gauge::default(),
            refusals: Family::default(),
        });
        registry.register(
            "trackhouse_reads_in_flight",
            "Raw data exports and fuel resamplings running",
            inner.in_flight.clone(),
        );
        registry.register(
            "trackhouse_read_refusals",
            "Reads refused because too many ran, by limit: per_user (429) or total (503)",
            inner.refusals.clone(),
        );
        Self { inner }
    }

    /// Takes a slot for `user`'s read, or says why not.
    pub(crate) fn take(&self, user: i64) -> ApiResult<ReadSlot> {
        let shared = &self.inner;
        let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
        let own = state.by_user.get(&user).copied().unwrap_or(0);
        if own >= shared.per_user {
            shared
                .refusals
                .get_or_create(&LimitLabel { limit: "per_user" })
                .inc();
            return Err(ApiError::with_description(
                ErrorCode::TooManyRequests,
                format!(
                    "{}: {own} reads of this user are running; at most {} at once (--max-reads-per-user)",
                    ErrorCode::TooManyRequests.meaning(),
                    shared.per_user
                ),
            )
            .retry_after(1));
        }
        if state.running >= shared.total {
            shared
                .refusals
                .get_or_create(&LimitLabel { limit: "total" })
                .inc();
            return Err(ApiError::with_description(
                ErrorCode::QueueUnavailable,
                format!(
                    "{}: {} reads are running; at most {} at once (--max-reads)",
                    ErrorCode::QueueUnavailable.meaning(),
                    state.running,
                    shared.total
                ),
            )
            .retry_after(1));
        }
        state.running += 1;
        *state.by_user.entry(user).or_default() += 1;
        shared.in_flight.inc();
        Ok(ReadSlot {
            inner: self.inner.clone(),
            user,
        })
    }
}

impl Drop for ReadSlot {
    fn drop(&mut self) {
        let mut state = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
        state.running = state.running.saturating_sub(1);
        if let Some(own) = state.by_user.get_mut(&self.user) {
            *own -= 1;
            if *own == 0 {
                state.by_user.remove(&self.user);
            }
        }
        self.inner.in_flight.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_shared_out_per_user_and_in_all() {
        let slots = ReadSlots::new(3, 2, &mut Registry::default());
        let a1 = slots.take(1).unwrap();
        let _a2 = slots.take(1).unwrap();
        let refused = slots.take(1).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::TooManyRequests);
        let _b1 = slots.take(2).unwrap();
        let full = slots.take(3).unwrap_err();
        assert_eq!(full.code(), ErrorCode::QueueUnavailable);
        drop(a1);
        let _c1 = slots.take(3).unwrap();
        assert_eq!(
            slots.take(1).unwrap_err().code(),
            ErrorCode::QueueUnavailable
        );
    }
}
