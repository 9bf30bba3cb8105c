//! Byte buffers, and a write's columns, kept for reuse between writes.
//!
//! Under full intake a buffer of a megabyte or so, allocated afresh for
//! every chunk of every body, is first touched page by page, and the
//! allocator hands freed pages back to the system 50 ms later
//! (`MIMALLOC_PURGE_DELAY`, decision 114): the next body faults them in
//! again, a kernel trap and a zeroed page every 4 KiB. A [`Buffers`] keeps
//! a few of them instead (decision 134).

/// Things kept for reuse, a bounded number idle.
#[derive(Debug)]
pub(crate) struct Pool<T> {
    max_idle: usize,
    idle: parking_lot::Mutex<Vec<T>>,
}

impl<T> Pool<T> {
    /// A pool keeping at most `max_idle`.
    pub(crate) fn new(max_idle: usize) -> Self {
        Self {
            max_idle,
            idle: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// An idle one, if any.
    pub(crate) fn take(&self) -> Option<T> {
        self.idle.lock().pop()
    }

    /// Keeps `item` for a later [`take`](Self::take), unless enough are idle.
    pub(crate) fn give(&self, item: T) {
        let mut idle = self.idle.lock();
        if idle.len() < self.max_idle {
            idle.push(item);
        }
    }

    /// How many are idle now.
    pub(crate) fn idle(&self) -> usize {
        self.idle.lock().len()
    }
}

/// Empty byte buffers of about one size, a bounded number kept idle.
#[derive(Debug)]
pub(crate) struct Buffers {
    room: usize,
    idle: Pool<Vec<u8>>,
}

impl Buffers {
    /// Buffers of `room` bytes, at most `max_idle` kept.
    pub(crate) fn new(room: usize, max_idle: usize) -> Self {
        Self {
            room,
            idle: Pool::new(max_idle),
        }
    }

    /// The capacity of a new buffer.
    pub(crate) fn room(&self) -> usize {
        self.room
    }

    /// An empty buffer of [`room`](Self::room) or more: an idle one if any.
    pub(crate) fn take(&self) -> Vec<u8> {
        self.idle
            .take()
            .unwrap_or_else(|| Vec::with_capacity(self.room))
    }

    /// Keeps `buffer` for a later [`take`](Self::take), unless enough are
    /// idle or its capacity is off the usual (below the room, or past
    /// twice it).
    pub(crate) fn give(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() < self.room || buffer.capacity() > self.room.saturating_mul(2) {
            return;
        }
        buffer.clear();
        self.idle.give(buffer);
    }

    /// Buffers idle now.
    pub(crate) fn idle(&self) -> usize {
        self.idle.idle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_up_to_the_bound_and_of_the_usual_size() {
        let buffers = Buffers::new(4_096, 2);
        let mut first = buffers.take();
        assert!(first.capacity() >= 4_096 && first.is_empty());
        first.extend_from_slice(b"an earlier write");
        let address = first.as_ptr();
        buffers.give(first);
        let again = buffers.take();
        assert_eq!((again.as_ptr(), again.len()), (address, 0));
        // Too small, too large, or one more than the bound: freed.
        buffers.give(Vec::with_capacity(100));
        buffers.give(Vec::with_capacity(3 * 4_096));
        assert_eq!(buffers.idle(), 0);
        buffers.give(again);
        buffers.give(buffers.take());
        buffers.give(Vec::with_capacity(4_096));
        buffers.give(Vec::with_capacity(4_096));
        assert_eq!(buffers.idle(), 2);
    }
}
