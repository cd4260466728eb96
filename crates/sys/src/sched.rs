//! The calling thread's CPU, priority and clocks.
//!
//! `sched_getcpu`, `clock_gettime` and `sysconf` go through nix. Hand-
//! written: [`raise_own_priority`] (`sched_setscheduler` and `setpriority`
//! are not in nix 0.31).

use nix::time::{clock_gettime, ClockId};

/// The CPU the calling thread is running on now (`sched_getcpu`), `None`
/// where unavailable (very old kernels).
pub fn current_cpu() -> Option<usize> {
    nix::sched::sched_getcpu().ok()
}

/// CPU time the calling thread has run, in seconds (`CLOCK_THREAD_CPUTIME_ID`,
/// nanosecond resolution on Linux).
pub fn thread_cpu_time() -> Option<f64> {
    let ts = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9)
}

/// CPU time the calling process has run, in nanoseconds
/// (`CLOCK_PROCESS_CPUTIME_ID`; 0 if unreadable).
pub fn process_cpu_time_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).map_or(0, |ts| {
        ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
    })
}

/// Now on `CLOCK_BOOTTIME` (since boot, suspend included), in ns; the
/// clock `/proc/PID/stat`'s start time counts from. 0 if unreadable.
pub fn boottime_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_BOOTTIME).map_or(0, |ts| {
        ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
    })
}

/// Clock ticks per second (`_SC_CLK_TCK`, 100 if unknown).
pub fn clock_ticks() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

/// Makes the calling thread wake up ahead of normal-priority threads:
/// tries SCHED_FIFO priority 1 (needs CAP_SYS_NICE), else nice -10, else
/// stays as is. Only the calling thread changes.
pub fn raise_own_priority() {
    // SAFETY: plain scheduler syscalls on the calling thread.
    unsafe {
        let param = libc::sched_param { sched_priority: 1 };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 {
            return;
        }
        libc::setpriority(libc::PRIO_PROCESS, 0, -10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_cpu_is_one_we_may_run_on() {
        let allowed = crate::affinity::get_affinity(0).unwrap();
        let cpu = std::thread::spawn(move || {
            let c = allowed.last().unwrap();
            crate::affinity::pin_current_thread(c).unwrap();
            (current_cpu(), c)
        })
        .join()
        .unwrap();
        assert_eq!(cpu.0, Some(cpu.1));
    }

    #[test]
    fn clocks_move_forward() {
        let (t0, b0) = (thread_cpu_time().unwrap(), boottime_ns());
        let mut x = 0u64;
        while thread_cpu_time().unwrap() - t0 < 0.002 {
            x = std::hint::black_box(x + 1);
        }
        assert!(boottime_ns() > b0);
        assert!(process_cpu_time_ns() > 0);
        assert!(clock_ticks() > 0);
    }
}
