//! The two affinity syscalls measuring needs, on [`CpuSet`] instead of
//! `cpu_set_t` (which stops at 1024 CPUs).
//!
//! Only the measuring threads are ever pinned, each by itself, and they end
//! with the measurement: the calling thread's affinity is read, never
//! changed, so there is nothing to restore on any exit path.

use pinsight_cpuset::CpuSet;
use std::io;

/// Bits in one word of the kernel's CPU bitmap (`unsigned long`).
const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// The CPUs the calling thread may run on (`sched_getaffinity(0)`).
pub fn current() -> io::Result<CpuSet> {
    // The kernel rejects buffers smaller than its nr_cpu_ids with EINVAL:
    // grow until it fits.
    let mut words = 1024 / WORD_BITS;
    loop {
        let mut buf: Vec<libc::c_ulong> = vec![0; words];
        let bytes = words * std::mem::size_of::<libc::c_ulong>();
        // SAFETY: buf is `bytes` long and writable; the kernel writes at
        // most `bytes` bytes of bitmap into it.
        let rc = unsafe {
            libc::sched_getaffinity(0, bytes, buf.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            let mut set = CpuSet::new();
            for (w, &word) in buf.iter().enumerate() {
                for b in 0..WORD_BITS {
                    if word & (1 << b) != 0 {
                        set.insert(w * WORD_BITS + b);
                    }
                }
            }
            return Ok(set);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) || words >= (1 << 20) / WORD_BITS {
            return Err(err);
        }
        words *= 2;
    }
}

/// Pins the calling thread to exactly `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    let mut buf: Vec<libc::c_ulong> = vec![0; cpu / WORD_BITS + 1];
    buf[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    let bytes = buf.len() * std::mem::size_of::<libc::c_ulong>();
    // SAFETY: buf is `bytes` long; the kernel only reads it.
    let rc = unsafe { libc::sched_setaffinity(0, bytes, buf.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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
            // SAFETY: sched_getcpu has no preconditions.
            let on = unsafe { libc::sched_getcpu() };
            (current().unwrap() == CpuSet::single(cpu), on)
        })
        .join()
        .unwrap();
        assert!(ok);
        assert_eq!(now, cpu as i32);
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
