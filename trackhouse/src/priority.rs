//! Thread priorities of a serving process.
//!
//! The runtime's threads (HTTP, parsing intake bodies, queries) run
//! `--request-nice` steps of nice value below the ingest engine's threads
//! (WAL writer, flusher, key loader). The engine is one thread per stage
//! against as many request threads as the machine has CPUs; at an equal
//! weight a CPU-bound intake leaves the flusher a share too small to keep up,
//! and what it has not flushed stays in memory (BENCHMARKS.md, "Engine
//! threads before request threads"; docs/decisions.md, decision 124).
//!
//! Linux keeps a nice value per thread, and a thread starts with its
//! creator's. Raising a priority again needs `CAP_SYS_NICE` (or an
//! `RLIMIT_NICE`), lowering one does not: so the runtime's threads lower
//! their own as they start, and the engine is opened on [`BaseThread`], a
//! thread started before the runtime, so that the threads it starts keep the
//! process's priority whatever thread asked for them.

use std::sync::mpsc;

use anyhow::Context;

pub(crate) use ingest::priority::{lower_this_thread, this_thread_nice};

type Job = Box<dyn FnOnce() + Send>;

/// A thread at the process's priority that runs jobs given to it in turn:
/// threads started by a job keep that priority.
#[derive(Debug)]
pub(crate) struct BaseThread {
    jobs: mpsc::Sender<Job>,
}

impl BaseThread {
    /// Starts the thread; call it before anything lowers a priority. The
    /// thread ends when the handle is dropped.
    pub(crate) fn start() -> anyhow::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("base-priority".into())
            .spawn(move || {
                for job in queue {
                    job();
                }
            })
            .context("starting the base-priority thread")?;
        Ok(Self { jobs })
    }

    /// Runs `work` on the thread and waits for its result (without holding
    /// a runtime thread).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (answer, result) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                // The waiter may be gone (its task dropped): nothing to tell.
                let _ = answer.send(work());
            }))
            .ok()
            .context("the base-priority thread has stopped")?;
        result
            .await
            .context("the base-priority thread stopped during a job")
    }
}

#[cfg(test)]
mod tests {
    use super::{BaseThread, lower_this_thread, this_thread_nice};

    /// A lowered runtime thread's job runs on the base thread at the nice
    /// value the process started with, and a thread that job starts keeps
    /// it; the runtime's thread is the given steps lower.
    #[cfg(target_os = "linux")]
    #[test]
    fn base_thread_jobs_and_their_threads_keep_the_process_priority() -> anyhow::Result<()> {
        // A thread of its own, so the test harness's thread keeps its value.
        let base_nice = std::thread::spawn(this_thread_nice)
            .join()
            .map_err(|_| anyhow::anyhow!("the probe thread panicked"))?
            .ok_or_else(|| anyhow::anyhow!("no nice value"))?;
        let steps = 3;
        let base = BaseThread::start()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_start(move || {
                lower_this_thread(steps).ok();
            })
            .build()?;
        let (runtime_nice, job_nice, started_nice) = runtime.block_on(async move {
            tokio::spawn(async move {
                let runtime_nice = this_thread_nice();
                let (job_nice, started_nice) = base
                    .run(|| {
                        let started = std::thread::spawn(this_thread_nice).join().ok().flatten();
                        (this_thread_nice(), started)
                    })
                    .await?;
                anyhow::Ok((runtime_nice, job_nice, started_nice))
            })
            .await?
        })?;
        let lowered = (base_nice + i32::from(steps)).min(19);
        assert_eq!(runtime_nice, Some(lowered));
        assert_eq!(job_nice, Some(base_nice));
        assert_eq!(started_nice, Some(base_nice));
        Ok(())
    }

    #[test]
    fn no_steps_changes_nothing() -> anyhow::Result<()> {
        let before = this_thread_nice();
        lower_this_thread(0)?;
        assert_eq!(this_thread_nice(), before);
        Ok(())
    }
}
