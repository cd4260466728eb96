//! The two affinity calls measuring needs, through `pinsight-sys` (whose
//! buffers are sized to the set, so CPU ids of 1024 and more work).
//!
//! Only the measuring threads are ever pinned, each by itself, and they end
//! with the measurement: the calling thread's affinity is read, never
//! changed, so there is nothing to restore on any exit path.

use pinsight_cpuset::CpuSet;
use std::io;

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`).
pub fn current() -> io::Result<CpuSet> {
    pinsight_sys::affinity::get_affinity(0)
}

/// Pins the calling thread to exactly `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    pinsight_sys::affinity::pin_current_thread(cpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_where_it_was_pinned_and_the_caller_is_untouched() {
        let before = current().unwrap();
        let cpu = before.last().unwrap();
        let (ok, now) = std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            let on = pinsight_sys::sched::current_cpu();
            (current().unwrap() == CpuSet::single(cpu), on)
        })
        .join()
        .unwrap();
        assert!(ok);
        assert_eq!(now, Some(cpu));
        assert_eq!(current().unwrap(), before);
    }

    #[test]
    fn pinning_to_a_cpu_that_does_not_exist_fails_cleanly() {
        let e = std::thread::spawn(|| pin_current_thread(100_000))
            .join()
            .unwrap();
        assert!(e.is_err());
    }
}
