//! The thin edge: pinning the calling thread, and getting back.

use pinsight_cpuset::CpuSet;

/// The calling thread's affinity mask.
pub fn current_affinity() -> std::io::Result<CpuSet> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Restricts the calling thread to `cpus`.
pub fn set_affinity(cpus: &CpuSet) -> std::io::Result<()> {
    // SAFETY: as above; CPU_SET bounds are checked against CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in cpus.iter().filter(|&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread is running on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments; returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// CPU time the calling thread has run, in seconds (`CLOCK_THREAD_CPUTIME_ID`,
/// nanosecond resolution on Linux). Beside the wall clock it tells whether a
/// timed chunk was descheduled part-way: its CPU time then falls short of
/// its wall time.
pub fn thread_cpu_time() -> Option<f64> {
    // SAFETY: timespec is plain data; clock_gettime fills it or fails.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) != 0 {
            return None;
        }
        Some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
    }
}
