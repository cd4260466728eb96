//! CPU affinity of any size: read and set a thread's mask by TID.
//!
//! Hand-written FFI on purpose: raw `sched_{get,set}affinity` syscalls with
//! buffers sized to the set. `nix::sched::CpuSet` wraps libc's `cpu_set_t`,
//! and both stop at 1024 CPUs (`CPU_SETSIZE`): a CPU id of 1024 or more
//! cannot even be expressed, and the kernel refuses a getter buffer smaller
//! than its `nr_cpu_ids` bits. This module is the one affinity layer of the
//! workspace (launch, compare, speed, latency and topology discovery all
//! call it), so machines with more than 1024 CPUs work everywhere.

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

/// The inverse of [`to_kernel_words`].
pub fn from_kernel_words(words: &[libc::c_ulong]) -> CpuSet {
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
/// allocation-free, so a child may call it before `execve`
/// ([`crate::spawn::Spawn::affinity_words`]).
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
    get_affinity_with(|words| {
        // SAFETY: the buffer is `words.len()` words long and the length
        // passed is its byte size.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid as libc::c_long,
                std::mem::size_of_val(words),
                words.as_mut_ptr(),
            )
        };
        if r >= 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })
}

/// Words of the getter's first buffer (1024 CPUs, glibc's size).
const FIRST_WORDS: usize = 1024 / WORD_BITS;
/// The getter gives up beyond this many words (4 M CPUs).
const MAX_WORDS: usize = (1 << 22) / WORD_BITS;

/// The getter's buffer growth, apart from the syscall: the kernel refuses
/// a buffer smaller than its `nr_cpu_ids` bits with EINVAL, so retry with
/// a buffer four times larger until it fits.
fn get_affinity_with(
    mut call: impl FnMut(&mut [libc::c_ulong]) -> io::Result<()>,
) -> io::Result<CpuSet> {
    let mut n = FIRST_WORDS;
    loop {
        let mut words = vec![0 as libc::c_ulong; n];
        match call(&mut words) {
            Ok(()) => return Ok(from_kernel_words(&words)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && n < MAX_WORDS => n *= 4,
            Err(e) => return Err(e),
        }
    }
}

/// Pins the calling thread to exactly `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    set_affinity(0, &CpuSet::single(cpu))
}

/// Makes `cmd`'s child start on `set`: the mask is prepared now and set
/// between `fork` and `exec` with one allocation-free syscall. An empty set
/// is refused here with `InvalidInput`. For tests and tools that start
/// their programs with a `std::process::Command`; pinsight itself starts
/// every program through [`crate::spawn::Spawn`]
/// ([`crate::spawn::Spawn::affinity_words`]).
pub fn set_affinity_before_exec(cmd: &mut std::process::Command, set: &CpuSet) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    if set.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty CPU set"));
    }
    let words = to_kernel_words(set);
    // SAFETY: one raw syscall on a buffer allocated before the fork;
    // nothing is allocated or locked in the child.
    unsafe {
        cmd.pre_exec(move || set_affinity_words(0, &words));
    }
    Ok(())
}

/// The calling thread's kernel TID.
pub fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs this test may run on, read from its own mask (any two, not
    /// 0 and 1); `None` on a one-CPU runner.
    fn two_usable() -> Option<(usize, usize)> {
        let mut it = get_affinity(0)
            .unwrap()
            .iter()
            .collect::<Vec<_>>()
            .into_iter();
        Some((it.next()?, it.next_back()?))
    }

    #[test]
    fn kernel_words_round_trip() {
        let s = CpuSet::parse_list("0,5,63-65,200").unwrap();
        assert_eq!(from_kernel_words(&to_kernel_words(&s)), s);
        assert_eq!(to_kernel_words(&CpuSet::new()), vec![0]);
    }

    #[test]
    fn kernel_words_above_1024_use_bit_i_of_word_i_over_64() {
        for cpu in [1023usize, 1024, 2047] {
            let w = to_kernel_words(&CpuSet::single(cpu));
            assert_eq!(w.len(), cpu / WORD_BITS + 1, "cpu {cpu}");
            assert_eq!(w[cpu / WORD_BITS], 1 << (cpu % WORD_BITS), "cpu {cpu}");
            assert!(w[..cpu / WORD_BITS].iter().all(|&x| x == 0));
            assert_eq!(from_kernel_words(&w), CpuSet::single(cpu));
        }
        let all = CpuSet::parse_list("1023,1024,2047").unwrap();
        let w = to_kernel_words(&all);
        assert_eq!(w.len(), 2048 / WORD_BITS);
        assert_eq!(w[15], 1 << 63);
        assert_eq!(w[16], 1);
        assert_eq!(w[31], 1 << 63);
        assert_eq!(from_kernel_words(&w), all);
    }

    #[test]
    fn own_affinity_round_trips_with_two_usable_cpus() {
        let before = get_affinity(0).unwrap();
        assert!(!before.is_empty());
        let Some((a, b)) = two_usable() else {
            eprintln!("SKIP: fewer than two usable CPUs");
            return;
        };
        let (ok, err) = std::thread::spawn(move || {
            let two = CpuSet::parse_list(&format!("{a},{b}")).unwrap();
            set_affinity(0, &two).unwrap();
            let got_two = get_affinity(0).unwrap();
            set_affinity(0, &CpuSet::single(b)).unwrap();
            let got_one = get_affinity(0).unwrap();
            let err = set_affinity(0, &CpuSet::new()).unwrap_err().kind();
            (got_two == two && got_one == CpuSet::single(b), err)
        })
        .join()
        .unwrap();
        assert!(ok);
        assert_eq!(err, io::ErrorKind::InvalidInput);
        // Only the spawned thread moved.
        assert_eq!(get_affinity(0).unwrap(), before);
    }

    #[test]
    fn a_mask_with_cpu_2000_is_cut_to_the_usable_cpus() {
        let usable = get_affinity(0).unwrap();
        let cpu = usable.last().unwrap();
        if usable.contains(2000) {
            eprintln!("SKIP: CPU 2000 exists here");
            return;
        }
        let got = std::thread::spawn(move || {
            let mut mask = CpuSet::single(cpu);
            mask.insert(2000);
            set_affinity(0, &mask).unwrap();
            get_affinity(0).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(got, CpuSet::single(cpu));
    }

    #[test]
    fn the_getter_grows_its_buffer_for_a_2048_cpu_kernel() {
        // A fake kernel with nr_cpu_ids = 2048 and CPUs 3, 1024 and 2047
        // allowed: it refuses buffers under 2048 bits, like the real one.
        let mut sizes = Vec::new();
        let got = get_affinity_with(|words| {
            sizes.push(words.len() * WORD_BITS);
            if words.len() * WORD_BITS < 2048 {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            let mask = to_kernel_words(&CpuSet::parse_list("3,1024,2047").unwrap());
            words[..mask.len()].copy_from_slice(&mask);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, CpuSet::parse_list("3,1024,2047").unwrap());
        assert_eq!(sizes, vec![1024, 4096]);
        // Other errors are not retried; a kernel that never fits gives up.
        let mut calls = 0;
        let e = get_affinity_with(|_| {
            calls += 1;
            Err(io::Error::from_raw_os_error(libc::ESRCH))
        })
        .unwrap_err();
        assert_eq!((e.raw_os_error(), calls), (Some(libc::ESRCH), 1));
        let e = get_affinity_with(|_| Err(io::Error::from_raw_os_error(libc::EINVAL)));
        assert_eq!(e.unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn a_child_started_on_a_mask_runs_there() {
        use std::io::Read;
        let cpu = get_affinity(0).unwrap().last().unwrap();
        let mut cmd = crate::spawn::Spawn::new("sh");
        cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"])
            .stdout(crate::spawn::Stdio::Piped)
            .affinity_words(to_kernel_words(&CpuSet::single(cpu)));
        let mut child = cmd.start().unwrap();
        let mut text = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(
            text.split_whitespace().nth(1),
            Some(cpu.to_string().as_str())
        );
    }

    #[test]
    fn a_command_started_on_a_mask_runs_there() {
        let cpu = get_affinity(0).unwrap().last().unwrap();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "grep Cpus_allowed_list /proc/self/status"]);
        set_affinity_before_exec(&mut cmd, &CpuSet::single(cpu)).unwrap();
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.split_whitespace().nth(1),
            Some(cpu.to_string().as_str())
        );
        let mut cmd = std::process::Command::new("true");
        assert!(set_affinity_before_exec(&mut cmd, &CpuSet::new()).is_err());
    }
}
