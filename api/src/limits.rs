//! Request rate limits (clarification 10), with governor's GCRA limiters.
//!
//! Each kind of caller has its own keyed limiter, so an API key over its
//! limit never slows down the user's session or another key. The public
//! geo link pages (`/links/`) count client addresses in a limiter of their
//! own, so a page's viewers never use up the logins' budget, nor the reverse.

use std::fmt;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use governor::clock::{Clock as _, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use schemas::DealerId;

use crate::ApiError;

/// A request rate: `requests` per `period`, with a burst of `requests`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests allowed per period (and the burst size).
    pub requests: NonZeroU32,
    /// The period.
    pub period: Duration,
}

impl Rate {
    /// `requests` per second.
    pub const fn per_second(requests: NonZeroU32) -> Self {
        Self {
            requests,
            period: Duration::from_secs(1),
        }
    }

    /// `requests` per minute.
    pub const fn per_minute(requests: NonZeroU32) -> Self {
        Self {
            requests,
            period: Duration::from_secs(60),
        }
    }

    fn quota(self) -> Quota {
        let interval = self.period / self.requests.get();
        Quota::with_period(interval.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(self.requests))
            .allow_burst(self.requests)
    }
}

impl FromStr for Rate {
    type Err = String;

    /// Parses `50/s`, `10/m`, `1000/h`.
    fn from_str(text: &str) -> Result<Self, String> {
        let err = || format!("{text:?} is not a rate like 50/s, 10/m or 1000/h");
        let (count, unit) = text.trim().split_once('/').ok_or_else(err)?;
        let requests = count.trim().parse::<NonZeroU32>().map_err(|_| err())?;
        let period = match unit.trim() {
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(err()),
        };
        Ok(Self { requests, period })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.period.as_secs() {
            1 => "s",
            60 => "m",
            3600 => "h",
            _ => return write!(f, "{}/{:?}", self.requests, self.period),
        };
        write!(f, "{}/{unit}", self.requests)
    }
}

/// The rates of each kind of caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// Per user session.
    pub user_session: Rate,
    /// Per API key, each key counted apart.
    pub api_key: Rate,
    /// Per dealer on the panel, shared by its sessions.
    pub panel_dealer: Rate,
    /// Per client IP, for calls without a credential (logins) and for failed credentials.
    pub anonymous_ip: Rate,
}

const fn nz(n: u32) -> NonZeroU32 {
    match NonZeroU32::new(n) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    }
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            user_session: Rate::per_second(nz(50)),
            api_key: Rate::per_second(nz(50)),
            panel_dealer: Rate::per_second(nz(10)),
            anonymous_ip: Rate::per_minute(nz(30)),
        }
    }
}

/// Requests per client address under `/links/` unless configured: a viewer
/// polls the feed every 2 s (30 a minute), so 20 viewers behind one address.
pub const DEFAULT_LINK_RATE: Rate = Rate::per_minute(nz(600));

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

/// The limiters of a running server.
pub(crate) struct RateLimits {
    user_session: Keyed<String>,
    api_key: Keyed<i64>,
    panel_dealer: Keyed<DealerId>,
    anonymous_ip: Keyed<IpAddr>,
    link_ip: Keyed<IpAddr>,
}

impl fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimits").finish_non_exhaustive()
    }
}

/// The network a client address is counted as: an IPv4 address itself
/// (also when written as IPv6), an IPv6 address its /64 (one site's prefix:
/// a host owns far more addresses than one).
pub(crate) fn network_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(std::net::Ipv6Addr::from(prefix))
            }
        },
    }
}

/// Who a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RateKey {
    /// A user session, by its credential digest.
    UserSession(String),
    /// An API key, by its record id.
    ApiKey(i64),
    /// A dealer's panel sessions.
    PanelDealer(DealerId),
    /// A client address.
    Ip(IpAddr),
    /// A client address reading geo link pages.
    LinkIp(IpAddr),
}

impl RateLimits {
    /// The limiters of `config`, and `link_ip` per client address under `/links/`.
    pub(crate) fn new(config: &RateLimitConfig, link_ip: Rate) -> Self {
        Self {
            user_session: RateLimiter::keyed(config.user_session.quota()),
            api_key: RateLimiter::keyed(config.api_key.quota()),
            panel_dealer: RateLimiter::keyed(config.panel_dealer.quota()),
            anonymous_ip: RateLimiter::keyed(config.anonymous_ip.quota()),
            link_ip: RateLimiter::keyed(link_ip.quota()),
        }
    }

    /// Counts one request; code 15 with `Retry-After` when over the rate.
    pub(crate) fn check(&self, key: &RateKey) -> Result<(), ApiError> {
        let outcome = match key {
            RateKey::UserSession(digest) => check(&self.user_session, digest),
            RateKey::ApiKey(id) => check(&self.api_key, id),
            RateKey::PanelDealer(dealer) => check(&self.panel_dealer, dealer),
            RateKey::Ip(ip) => check(&self.anonymous_ip, &network_of(*ip)),
            RateKey::LinkIp(ip) => check(&self.link_ip, &network_of(*ip)),
        };
        outcome.map_err(|wait| ApiError::rate_limited(wait.as_secs_f64().ceil() as u64))
    }

    /// Forgets callers whose buckets are full again, bounding memory.
    pub(crate) fn forget_idle(&self) {
        self.user_session.retain_recent();
        self.api_key.retain_recent();
        self.panel_dealer.retain_recent();
        self.anonymous_ip.retain_recent();
        self.link_ip.retain_recent();
        self.user_session.shrink_to_fit();
        self.api_key.shrink_to_fit();
        self.panel_dealer.shrink_to_fit();
        self.anonymous_ip.shrink_to_fit();
        self.link_ip.shrink_to_fit();
    }
}

/// The client's address: the socket peer, or, behind `hops` trusted proxies,
/// the `X-Forwarded-For` entry the outermost trusted proxy appended.
pub(crate) fn client_address(headers: &axum::http::HeaderMap, peer: IpAddr, hops: usize) -> IpAddr {
    if hops == 0 {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    entries
        .len()
        .checked_sub(hops)
        .and_then(|i| entries.get(i))
        .and_then(|e| e.parse().ok())
        .unwrap_or(peer)
}

fn check<K: Clone + Hash + Eq>(limiter: &Keyed<K>, key: &K) -> Result<(), Duration> {
    limiter
        .check_key(key)
        .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_print() {
        let rate: Rate = "50/s".parse().unwrap();
        assert_eq!(rate, Rate::per_second(nz(50)));
        assert_eq!(rate.to_string(), "50/s");
        assert_eq!("10/m".parse::<Rate>().unwrap(), Rate::per_minute(nz(10)));
        for bad in ["", "0/s", "5", "5/d", "x/s"] {
            assert!(bad.parse::<Rate>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ipv6_addresses_are_counted_by_their_64_prefix() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(network_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            network_of(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            network_of(ip("2001:db8:1:2::7"))
        );
        assert_ne!(
            network_of(ip("2001:db8:1:3::1")),
            network_of(ip("2001:db8:1:2::1"))
        );
        assert_eq!(network_of(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(network_of(ip("192.0.2.7")), ip("192.0.2.7"));
        // An attacker rotating through its /64 shares one bucket.
        let limits = RateLimits::new(
            &RateLimitConfig {
                anonymous_ip: Rate::per_minute(NonZeroU32::new(2).unwrap()),
                ..RateLimitConfig::default()
            },
            Rate::per_minute(nz(600)),
        );
        for host in 1..=2 {
            assert!(
                limits
                    .check(&RateKey::Ip(ip(&format!("2001:db8::{host}"))))
                    .is_ok()
            );
        }
        assert!(limits.check(&RateKey::Ip(ip("2001:db8::ff"))).is_err());
        assert!(limits.check(&RateKey::Ip(ip("2001:db8:0:1::1"))).is_ok());
    }

    #[test]
    fn keys_are_counted_apart() {
        let limits = RateLimits::new(
            &RateLimitConfig {
                api_key: Rate::per_minute(nz(2)),
                ..RateLimitConfig::default()
            },
            Rate::per_minute(nz(600)),
        );
        assert!(limits.check(&RateKey::ApiKey(1)).is_ok());
        assert!(limits.check(&RateKey::ApiKey(1)).is_ok());
        let err = limits.check(&RateKey::ApiKey(1)).unwrap_err();
        assert_eq!(err.code(), schemas::ErrorCode::TooManyRequests);
        assert!(limits.check(&RateKey::ApiKey(2)).is_ok());
        assert!(limits.check(&RateKey::UserSession("a".into())).is_ok());
    }

    #[test]
    fn link_pages_count_addresses_apart_from_logins() {
        let limits = RateLimits::new(&RateLimitConfig::default(), Rate::per_minute(nz(1)));
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        assert!(limits.check(&RateKey::LinkIp(ip)).is_ok());
        let err = limits.check(&RateKey::LinkIp(ip)).unwrap_err();
        assert_eq!(err.code(), schemas::ErrorCode::TooManyRequests);
        assert!(limits.check(&RateKey::Ip(ip)).is_ok());
    }
}
