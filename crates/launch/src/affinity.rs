//! The thin syscall layer: read and set a thread's CPU affinity by TID.
//!
//! Raw `sched_{get,set}affinity` with buffers sized to the set, not glibc's
//! fixed 1024-bit `cpu_set_t`, so machines with more CPUs work.

use pinsight_cpuset::CpuSet;
use std::io;

const WORD_BITS: usize = 8 * std::mem::size_of::<libc::c_ulong>();

/// The kernel's mask layout: an array of `unsigned long`, bit `i % W` of
/// word `i / W` = CPU `i`.
pub fn to_kernel_words(set: &CpuSet) -> Vec<libc::c_ulong> {
    let n = set.last().map_or(1, |last| last / WORD_BITS + 1);
    let mut words = vec![0 as libc::c_ulong; n];
    for cpu in set.iter() {
        words[cpu / WORD_BITS] |= (1 as libc::c_ulong) << (cpu % WORD_BITS);
    }
    words
}

fn from_kernel_words(words: &[libc::c_ulong]) -> CpuSet {
    let mut set = CpuSet::new();
    for (w, &bits) in words.iter().enumerate() {
        for b in 0..WORD_BITS {
            if bits & ((1 as libc::c_ulong) << b) != 0 {
                set.insert(w * WORD_BITS + b);
            }
        }
    }
    set
}

/// Sets the affinity of thread `tid` (0 = the calling thread). An empty set
/// is refused here with `InvalidInput` rather than reaching the kernel.
pub fn set_affinity(tid: i32, set: &CpuSet) -> io::Result<()> {
    if set.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty CPU set"));
    }
    set_affinity_words(tid, &to_kernel_words(set))
}

/// [`set_affinity`] with a prepared kernel mask ([`to_kernel_words`]):
/// allocation-free, so it may be called between `fork` and `exec`.
pub fn set_affinity_words(tid: i32, words: &[libc::c_ulong]) -> io::Result<()> {
    // SAFETY: the pointer and byte length describe `words`, which outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid as libc::c_long,
            std::mem::size_of_val(words),
            words.as_ptr(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The affinity of thread `tid` (0 = the calling thread).
pub fn get_affinity(tid: i32) -> io::Result<CpuSet> {
    // The kernel refuses buffers smaller than its own mask (EINVAL): grow.
    let mut n = 16usize;
    loop {
        let mut words = vec![0 as libc::c_ulong; n];
        // SAFETY: the buffer is `n` words long and the length passed is its byte size.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid as libc::c_long,
                std::mem::size_of_val(&words[..]),
                words.as_mut_ptr(),
            )
        };
        if r >= 0 {
            return Ok(from_kernel_words(&words));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINVAL) && n < (1 << 16) {
            n *= 4;
            continue;
        }
        return Err(err);
    }
}

/// The calling thread's kernel TID.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_words_round_trip() {
        let s = CpuSet::parse_list("0,5,63-65,200").unwrap();
        assert_eq!(from_kernel_words(&to_kernel_words(&s)), s);
        assert_eq!(to_kernel_words(&CpuSet::new()), vec![0]);
    }

    #[test]
    fn own_affinity_can_be_read_and_restored() {
        let before = get_affinity(0).unwrap();
        assert!(!before.is_empty());
        let one = CpuSet::single(before.first().unwrap());
        set_affinity(0, &one).unwrap();
        assert_eq!(get_affinity(0).unwrap(), one);
        set_affinity(0, &before).unwrap();
        assert_eq!(get_affinity(0).unwrap(), before);
        assert_eq!(
            set_affinity(0, &CpuSet::new()).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
