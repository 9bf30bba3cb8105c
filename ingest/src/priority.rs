//! Thread priorities (Linux nice values, which Linux keeps per thread).
//!
//! Raising a priority again needs `CAP_SYS_NICE` (or an `RLIMIT_NICE`),
//! lowering one does not: a thread that must run below others lowers its
//! own, and one that may need the higher priority again is not lowered
//! (the engine runs a relaxed flush on a thread of its own: decision 148).

/// Lowers the calling thread's priority by `steps` nice values (to 19 at
/// most). Linux only: elsewhere the nice value belongs to the process.
pub fn lower_this_thread(steps: u8) -> std::io::Result<()> {
    if steps == 0 {
        return Ok(());
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let thread = Some(rustix::thread::gettid());
        let nice = getpriority_process(thread)?;
        setpriority_process(thread, (nice + i32::from(steps)).min(19))?;
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "thread priorities are set on Linux only",
    ))
}

/// The calling thread's nice value (Linux).
pub fn this_thread_nice() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_its_own_priority_and_no_other() {
        let before = this_thread_nice();
        let lowered = std::thread::spawn(|| {
            let start = this_thread_nice();
            lower_this_thread(3).map(|()| (start, this_thread_nice()))
        })
        .join()
        .ok()
        .and_then(Result::ok);
        let Some((Some(start), Some(after))) = lowered else {
            panic!("the thread's nice value could not be read or lowered");
        };
        assert_eq!(after, (start + 3).min(19));
        assert_eq!(this_thread_nice(), before);
    }
}
