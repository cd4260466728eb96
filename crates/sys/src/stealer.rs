//! Slowing a CPU down, and undoing a change even when pinsight is killed:
//! the two child processes `pinsight emulate` relies on.
//!
//! - [`Stealer`]: a child process pinned to one CPU, under `SCHED_FIFO`,
//!   that busy-waits the first `busy` nanoseconds of every `period` and
//!   sleeps the rest (`clock_nanosleep(TIMER_ABSTIME)`), so every ordinary
//!   (`SCHED_OTHER`) task on that CPU gets at most the remaining share of
//!   its time (sched(7): a real-time thread preempts every normal one).
//!   Period and busy time live in a shared anonymous mapping (mmap(2),
//!   `MAP_SHARED`) that the parent may change at any time.
//! - [`Watchdog`]: a child process holding the read end of a pipe whose
//!   write end only pinsight holds; when pinsight ends without disarming
//!   it (`kill -9` included), the read sees end-of-file (pipe(7)) and the
//!   watchdog writes the saved original values back to their files.
//!
//! Both are forked without an exec, so between `fork` and `_exit` the
//! child calls only async-signal-safe functions and never allocates
//! (signal-safety(7): after a multithreaded program forks, the child may
//! call only those). Both close every inherited descriptor at once
//! (`close_range(2)`, Linux 5.9), so no pipe of pinsight's stays open in
//! them. A stealer dies with its parent thread (`PR_SET_PDEATHSIG`,
//! prctl(2)) and, in case the parent was gone before that call, checks
//! `getppid()` every period; fork both from the thread that lives as long
//! as the emulation (the main thread).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// What parent and stealer share (one page, `MAP_SHARED`).
#[repr(C)]
struct Params {
    /// Period in nanoseconds.
    period_ns: AtomicU64,
    /// Busy time per period in nanoseconds.
    busy_ns: AtomicU64,
    /// Nonzero: exit.
    stop: AtomicU64,
    /// 0 starting, 1 running, negative: `-errno` of the setup that failed
    /// (affinity or scheduling policy).
    state: AtomicI64,
    /// Periods completed.
    periods: AtomicU64,
    /// Periods the stealer woke up too late for (it skipped ahead).
    late: AtomicU64,
}

/// A running stealer process (see the module documentation). Dropping it
/// stops and reaps the process.
#[derive(Debug)]
pub struct Stealer {
    pid: libc::pid_t,
    cpu: usize,
    params: *mut Params,
}

// SAFETY: `params` points at a shared mapping of atomics, valid until drop;
// every access goes through atomics.
unsafe impl Send for Stealer {}
// SAFETY: as above: only atomic accesses through a shared reference.
unsafe impl Sync for Stealer {}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Closes every descriptor from `first` up (async-signal-safe syscall).
fn close_from(first: libc::c_uint) {
    // SAFETY: plain integer arguments.
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
}

/// `Params::state`: running under `SCHED_FIFO` in its own cgroup.
const STARTED: i64 = 1;
/// `Params::state`: running under `SCHED_FIFO`, moved to the root cgroup.
const STARTED_IN_ROOT_CGROUP: i64 = 2;

/// Writes this process's id into the root cgroup's `cgroup.procs`
/// (cgroup v2 at its usual mount point, `/sys/fs/cgroup`; a live write,
/// as the stealer runs only on the live machine). Async-signal-safe:
/// open, write and close with a stack buffer. `true` once written.
fn move_to_root_cgroup() -> bool {
    const PROCS: &std::ffi::CStr = c"/sys/fs/cgroup/cgroup.procs";
    // "0": the writing process itself (cgroup-v2.rst, "cgroup.procs").
    // SAFETY: a NUL-terminated path; a two-byte buffer on this stack.
    unsafe {
        let fd = libc::open(PROCS.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let ok = libc::write(fd, b"0\n".as_ptr().cast(), 2) == 2;
        libc::close(fd);
        ok
    }
}

/// The stealer's life after fork: no allocation, raw syscalls only.
fn stealer_child(params: &Params, cpu: usize, priority: i32, parent: libc::pid_t) -> ! {
    // SAFETY: prctl, getppid, sched_*, clock_nanosleep and _exit are
    // async-signal-safe; the cpu_set_t lives on this stack.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        close_from(0);
        // Inherited handlers would write to pinsight's (now closed)
        // self-pipe: a terminal's Ctrl-C ends a stealer as it ends pinsight.
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            params
                .state
                .store(-i64::from(*libc::__errno_location()), Ordering::SeqCst);
            libc::_exit(1);
        }
        let p = libc::sched_param {
            sched_priority: priority,
        };
        let mut started = STARTED;
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
            let e = *libc::__errno_location();
            // With real-time group scheduling (CONFIG_RT_GROUP_SCHED), a
            // cgroup other than the root one gets no real-time budget
            // unless given one, and SCHED_FIFO there is EPERM even for
            // root (sched-rt-group.rst, "2.3 Basis for grouping tasks";
            // `__sched_setscheduler` in kernel/sched/core.c). The root
            // cgroup has the system's budget: move this stealer (only it;
            // it dies with the emulation) there and try again.
            if e != libc::EPERM
                || !move_to_root_cgroup()
                || libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0
            {
                params.state.store(-i64::from(e), Ordering::SeqCst);
                libc::_exit(1);
            }
            started = STARTED_IN_ROOT_CGROUP;
        }
        params.state.store(started, Ordering::SeqCst);
        let mut start = now_ns();
        loop {
            if params.stop.load(Ordering::Relaxed) != 0 || libc::getppid() != parent {
                libc::_exit(0);
            }
            let period = params.period_ns.load(Ordering::Relaxed).max(10_000);
            let busy = params.busy_ns.load(Ordering::Relaxed).min(period);
            while now_ns() < start + busy {
                std::hint::spin_loop();
            }
            start += period;
            let t = now_ns();
            if t >= start {
                // Woken too late (throttled, or preempted by a higher
                // priority): start the next period now.
                params.late.fetch_add(1, Ordering::Relaxed);
                start = t;
            } else {
                let ts = libc::timespec {
                    tv_sec: (start / 1_000_000_000) as libc::time_t,
                    tv_nsec: (start % 1_000_000_000) as libc::c_long,
                };
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                );
            }
            params.periods.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Stealer {
    /// Forks a stealer for `cpu` at real-time `priority` (1-99), stealing
    /// `busy` of every `period`, and waits (up to a second) until it runs
    /// under `SCHED_FIFO` on that CPU. Where real-time group scheduling
    /// gives pinsight's cgroup no real-time budget, the stealer moves
    /// itself to the root cgroup first ([`Stealer::in_root_cgroup`]). An
    /// error is the setup's (EPERM: no `CAP_SYS_NICE`, or no real-time
    /// budget and no way into the root cgroup; EINVAL: no such CPU).
    pub fn spawn(
        cpu: usize,
        priority: i32,
        period: Duration,
        busy: Duration,
    ) -> io::Result<Stealer> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: anonymous shared mapping of one page, checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let params = ptr.cast::<Params>();
        // SAFETY: the zeroed page is a valid `Params` (atomics of zero).
        let shared = unsafe { &*params };
        shared
            .period_ns
            .store(period.as_nanos() as u64, Ordering::SeqCst);
        shared
            .busy_ns
            .store(busy.as_nanos() as u64, Ordering::SeqCst);
        let parent = crate::process::getpid();
        // SAFETY: the child runs only `stealer_child` (async-signal-safe
        // calls, no allocation) and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: the mapping made above, unused by anyone else.
            unsafe { libc::munmap(ptr, 4096) };
            return Err(e);
        }
        if pid == 0 {
            stealer_child(shared, cpu, priority, parent);
        }
        let s = Stealer { pid, cpu, params };
        for _ in 0..1000 {
            match shared.state.load(Ordering::SeqCst) {
                0 => std::thread::sleep(Duration::from_millis(1)),
                STARTED | STARTED_IN_ROOT_CGROUP => return Ok(s),
                e => return Err(io::Error::from_raw_os_error((-e) as i32)),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the stealer did not start within 1 s",
        ))
    }

    fn shared(&self) -> &Params {
        // SAFETY: the mapping lives until drop.
        unsafe { &*self.params }
    }

    /// Whether the stealer had to leave pinsight's cgroup for the root
    /// one to run under `SCHED_FIFO` (real-time group scheduling gave
    /// pinsight's cgroup no real-time budget).
    pub fn in_root_cgroup(&self) -> bool {
        self.shared().state.load(Ordering::SeqCst) == STARTED_IN_ROOT_CGROUP
    }

    /// The stealer's process id.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// The CPU it slows.
    pub fn cpu(&self) -> usize {
        self.cpu
    }

    /// Changes period and busy time (taken at the next period).
    pub fn set(&self, period: Duration, busy: Duration) {
        let p = self.shared();
        p.period_ns
            .store(period.as_nanos() as u64, Ordering::SeqCst);
        p.busy_ns.store(busy.as_nanos() as u64, Ordering::SeqCst);
    }

    /// (periods completed, periods woken too late for).
    pub fn counts(&self) -> (u64, u64) {
        let p = self.shared();
        (
            p.periods.load(Ordering::Relaxed),
            p.late.load(Ordering::Relaxed),
        )
    }

    /// Stops the process and reaps it (idempotent through drop).
    fn stop(&mut self) {
        if self.pid <= 0 {
            return;
        }
        self.shared().stop.store(1, Ordering::SeqCst);
        let _ = crate::process::kill(self.pid, libc::SIGKILL);
        let mut status = 0;
        // SAFETY: our own child; plain out-pointer.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
        self.pid = 0;
    }
}

impl Drop for Stealer {
    fn drop(&mut self) {
        self.stop();
        // SAFETY: the mapping made in `spawn`; the child is gone.
        unsafe { libc::munmap(self.params.cast(), 4096) };
    }
}

/// Puts the calling thread under `SCHED_FIFO` at `priority` (sched(7);
/// needs `CAP_SYS_NICE`). Only that thread changes; a thread that ends
/// leaves nothing behind.
pub fn fifo_calling_thread(priority: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: plain scheduler syscall on the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the calling thread's nice value (setpriority(2) on its thread id:
/// on Linux the nice value is per thread). Negative values need
/// `CAP_SYS_NICE`; the error is the kernel's.
pub fn nice_calling_thread(nice: i32) -> io::Result<()> {
    let tid = crate::affinity::gettid();
    // SAFETY: plain integer arguments.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A child process that writes files back when pinsight dies (see the
/// module documentation). [`Watchdog::disarm`] (or drop) ends it without
/// writing.
#[derive(Debug)]
pub struct Watchdog {
    pid: libc::pid_t,
    write: Option<OwnedFd>,
}

/// The watchdog's life after fork: no allocation, raw syscalls only.
fn watchdog_child(read: libc::c_int, writes: &[(CString, Vec<u8>)]) -> ! {
    // SAFETY: dup2, close_range, read, open, write, close and _exit are
    // async-signal-safe; every buffer was made before fork.
    unsafe {
        // A terminal's Ctrl-C reaches the whole process group: the
        // watchdog outlives it, to write back if pinsight cannot.
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Keep only the pipe, as descriptor 0.
        libc::dup2(read, 0);
        close_from(1);
        let mut byte = 0u8;
        let n = loop {
            let n = libc::read(0, (&mut byte as *mut u8).cast(), 1);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break n;
        };
        if n == 1 && byte == b'D' {
            libc::_exit(0);
        }
        for (path, value) in writes {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                libc::write(fd, value.as_ptr().cast(), value.len());
                libc::close(fd);
            }
        }
        libc::_exit(0);
    }
}

impl Watchdog {
    /// Forks a watchdog that, should this process end before
    /// [`Watchdog::disarm`], writes each value to its file (in order).
    pub fn spawn(writes: &[(PathBuf, String)]) -> io::Result<Watchdog> {
        let prepared: Vec<(CString, Vec<u8>)> = writes
            .iter()
            .map(|(p, v)| {
                CString::new(p.as_os_str().as_bytes())
                    .map(|c| (c, v.as_bytes().to_vec()))
                    .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
            })
            .collect::<io::Result<_>>()?;
        let (r, w) = crate::process::pipe()?;
        // SAFETY: the child runs only `watchdog_child` and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            watchdog_child(r.as_raw_fd(), &prepared);
        }
        drop(r);
        Ok(Watchdog {
            pid,
            write: Some(w),
        })
    }

    /// The watchdog's process id.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Ends the watchdog without writing anything (the values were put
    /// back already), and reaps it.
    pub fn disarm(&mut self) {
        if let Some(w) = self.write.take() {
            let _ = crate::process::write_all_raw(w.as_raw_fd(), b"D");
            drop(w);
            let mut status = 0;
            // SAFETY: our own child; plain out-pointer.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarm();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_writes_back_only_when_not_disarmed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("scaling_max_freq");
        std::fs::write(&f, "1000\n").unwrap();
        let mut w = Watchdog::spawn(&[(f.clone(), "3000".into())]).unwrap();
        w.disarm();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "1000\n");
        // Closing the write end as a dying parent would: the values go back.
        let mut w = Watchdog::spawn(&[(f.clone(), "3000".into())]).unwrap();
        drop(w.write.take());
        let mut status = 0;
        // SAFETY: our own child.
        unsafe { libc::waitpid(w.pid, &mut status, 0) };
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "3000");
    }
}
