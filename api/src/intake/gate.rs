//! The intake's parse tasks (`--intake-parse-tasks`), handed out oldest
//! body first.
//!
//! A long body is parsed in chunks, each on a parse task as soon as it has
//! arrived. With a first-come queue of chunks, bodies arriving together
//! share the tasks chunk by chunk, and each is answered only when the
//! last of them all is parsed. Here a free task goes to the waiting chunk
//! of the body that began first (chunks of one body in the order they
//! asked): the oldest body is answered as if it were alone, and the later
//! ones no later than before. No body waits forever: the older ones have
//! a bounded number of chunks.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;

/// The parse tasks and the chunks waiting for one.
#[derive(Debug)]
pub(crate) struct ParseGate {
    state: Mutex<Queue>,
    bodies: AtomicU64,
}

#[derive(Debug)]
struct Queue {
    free: usize,
    /// The chunks waiting, by (body, order of asking): the first is served next.
    queue: BTreeMap<(u64, u64), oneshot::Sender<()>>,
    asked: u64,
}

impl Queue {
    /// Takes a free task, if there is one.
    fn take_free(&mut self) -> bool {
        let free = self.free > 0;
        if free {
            self.free -= 1;
        }
        free
    }
}

/// A parse task held; given back (to the oldest body waiting) when dropped.
#[derive(Debug)]
pub(crate) struct Held<'a>(&'a ParseGate);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

impl ParseGate {
    /// `tasks` parse tasks (at least one).
    pub(crate) fn new(tasks: usize) -> Self {
        Self {
            state: Mutex::new(Queue {
                free: tasks.max(1),
                queue: BTreeMap::new(),
                asked: 0,
            }),
            bodies: AtomicU64::new(0),
        }
    }

    /// The number of a body beginning now: bodies are served in this order.
    pub(crate) fn next_body(&self) -> u64 {
        self.bodies.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A task at once, if one is free.
    pub(crate) fn try_take(&self) -> Option<Held<'_>> {
        // Not `then_some`: a `Held` built eagerly would give back, when
        // dropped, a task it never took.
        let took = self.lock().take_free();
        took.then(|| Held(self))
    }

    /// A task for a chunk of body `body`, once no older body's chunk waits.
    pub(crate) async fn take(&self, body: u64) -> Held<'_> {
        let wait = {
            let mut state = self.lock();
            // One may have been freed since `try_take`.
            if state.take_free() {
                return Held(self);
            }
            let (wake, wait) = oneshot::channel();
            let asked = state.asked;
            state.asked += 1;
            state.queue.insert((body, asked), wake);
            wait
        };
        let mut waiting = Wait {
            gate: self,
            wait,
            woken: false,
        };
        // The sender is dropped only after a send (see give_back).
        let _ = (&mut waiting.wait).await;
        waiting.woken = true;
        Held(self)
    }

    /// Hands a task to the oldest body's chunk still waiting, or frees it.
    fn give_back(&self) {
        let mut state = self.lock();
        while let Some((_, wake)) = state.queue.pop_first() {
            if wake.send(()).is_ok() {
                return;
            }
            // That chunk's request was given up: the next one.
        }
        state.free += 1;
    }
}

/// A wait for a task; dropped before it ends (its request given up), it
/// gives back the task if one was handed to it meanwhile.
struct Wait<'a> {
    gate: &'a ParseGate,
    wait: oneshot::Receiver<()>,
    woken: bool,
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if !self.woken {
            self.wait.close();
            if self.wait.try_recv().is_ok() {
                self.gate.give_back();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_free_task_goes_to_the_oldest_body_waiting() {
        let gate = std::sync::Arc::new(ParseGate::new(1));
        let held = gate.try_take().expect("one task free");
        assert!(gate.try_take().is_none(), "only one task");
        let (done, mut order) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        // Asked in this order: body 5's chunk, body 2's two chunks, body 9's.
        for (body, chunk) in [(5, 0), (2, 0), (2, 1), (9, 0)] {
            let (waiter, done) = (gate.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                let held = waiter.take(body).await;
                done.send((body, chunk)).unwrap();
                drop(held);
            }));
            tokio::task::yield_now().await;
            while gate.lock().queue.len() < tasks.len() {
                tokio::task::yield_now().await;
            }
        }
        drop(held);
        for task in tasks {
            task.await.unwrap();
        }
        let mut served = Vec::new();
        while let Ok(next) = order.try_recv() {
            served.push(next);
        }
        assert_eq!(served, [(2, 0), (2, 1), (5, 0), (9, 0)]);
        assert_eq!(gate.lock().free, 1, "the task is free again");
    }

    #[tokio::test]
    async fn a_wait_given_up_neither_keeps_nor_loses_the_task() {
        let gate = ParseGate::new(1);
        let held = gate.try_take().expect("one task free");
        // Given up before a task came.
        {
            let wait = gate.take(1);
            let given_up = tokio::time::timeout(std::time::Duration::from_millis(5), wait).await;
            assert!(given_up.is_err());
        }
        // Given up after a task was handed to it, before it ran again.
        let mut wait = Box::pin(gate.take(2));
        assert!(futures::poll!(&mut wait).is_pending());
        drop(held);
        drop(wait);
        assert_eq!(gate.lock().free, 1, "the task came back");
        assert!(gate.try_take().is_some());
    }
}
