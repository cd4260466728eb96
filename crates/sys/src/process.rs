//! Process syscalls std lacks: reaping with `rusage`, waiting for exit
//! without reaping (so a zombie leader keeps its process-group id reserved
//! while we kill the group, or its `/proc/PID` stays readable), pidfds,
//! signalling a process group, CLOEXEC pipes, the monotonic clock.
//!
//! Through nix: the blocking `waitid(WNOWAIT)`, `killpg`, `kill`, `pipe2`,
//! `getpid`, `geteuid`, `getrusage`, `poll`, `clock_gettime`. Hand-written,
//! and why:
//! - `wait4`: nix has no wait4, and its `waitpid` drops the `rusage`;
//! - [`has_exited`]: nix's `waitid` decodes the status into a `Signal`,
//!   which fails (EINVAL) for a child killed by a real-time signal, where
//!   we only need to know that it exited;
//! - `pidfd_open`: not in nix 0.31;
//! - [`write_all_raw`]/[`read_exact_raw`]: used between `fork` and `exec`,
//!   on raw descriptor numbers the child inherited.

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// What `wait4` returned for the reaped child.
#[derive(Clone, Copy, Debug)]
pub struct Reaped {
    /// Raw wait status (decode with [`decode_status`]).
    pub status: libc::c_int,
    pub user: Duration,
    pub sys: Duration,
    /// `ru_maxrss`, KiB on Linux.
    pub max_rss_kib: u64,
    /// `ru_nvcsw + ru_nivcsw`: context switches, voluntary and not.
    pub context_switches: u64,
    /// `ru_minflt + ru_majflt`: page faults, minor and major.
    pub page_faults: u64,
}

/// `(exit code, signal)` from a raw wait status.
pub fn decode_status(status: libc::c_int) -> (Option<i32>, Option<i32>) {
    if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    }
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// Reaps `pid` (blocking), returning its status and resource usage.
pub fn wait4(pid: libc::pid_t) -> io::Result<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both out-pointers are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(Reaped {
        status,
        user: timeval(ru.ru_utime),
        sys: timeval(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
        context_switches: (ru.ru_nvcsw.max(0) + ru.ru_nivcsw.max(0)) as u64,
        page_faults: (ru.ru_minflt.max(0) + ru.ru_majflt.max(0)) as u64,
    })
}

/// Reaps `pid` if it has exited (`waitpid(WNOHANG)`, EINTR retried):
/// its raw wait status (see [`decode_status`]), `None` while it runs.
pub fn try_reap(pid: libc::pid_t) -> io::Result<Option<libc::c_int>> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is valid for writes.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Ok(Some(status));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether `pid` has exited (it stays a zombie: not reaped).
pub fn has_exited(pid: libc::pid_t) -> io::Result<bool> {
    // SAFETY: siginfo_t is plain old data; zeroed is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid for writes.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (si_pid is 0 when nothing has exited).
    Ok(unsafe { info.si_pid() } != 0)
}

/// Blocks until `pid` (a child) has exited, without reaping it: its
/// `/proc/PID` stays readable until [`wait4`]. Returns on any error but
/// EINTR (e.g. not our child): there is then nothing to wait for.
pub fn wait_exited_keep(pid: libc::pid_t) {
    use nix::sys::wait::{waitid, Id, WaitPidFlag};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
    while let Err(nix::errno::Errno::EINTR) = waitid(Id::Pid(Pid::from_raw(pid)), flags) {}
}

/// Blocks until `pid` (a child) has exited, without reaping it
/// (`waitid(P_PID, pid, WEXITED | WNOWAIT)`, EINTR retried); unlike
/// [`wait_exited_keep`], says why it could not wait.
pub fn wait_exited(pid: libc::pid_t) -> io::Result<()> {
    use nix::sys::wait::{waitid, Id, WaitPidFlag};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
    loop {
        match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A pidfd for `pid` (Linux 5.3+): becomes readable when the process exits.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: new descriptor owned by us (pidfds are always CLOEXEC).
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Waits until `fd` is readable or `timeout` passes (`None`: forever).
/// Returns whether it became readable.
pub fn poll_readable(fd: impl AsFd, timeout: Option<Duration>) -> io::Result<bool> {
    let ms: libc::c_int = match timeout {
        None => -1,
        // Round up so we never spin on a sub-millisecond remainder.
        Some(d) => d.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
    match poll(&mut fds, timeout) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Waits until one of `fds` is readable (no timeout); returns which, by
/// position (the first when several are). EINTR (a handler ran) and
/// errors return `None`.
pub fn poll_first_readable(fds: &[std::os::fd::BorrowedFd<'_>]) -> Option<usize> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut p: Vec<PollFd> = fds
        .iter()
        .map(|f| PollFd::new(*f, PollFlags::POLLIN))
        .collect();
    match poll(&mut p, PollTimeout::NONE) {
        Ok(n) if n > 0 => p.iter().position(|f| {
            f.revents().is_some_and(|r| {
                r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
            })
        }),
        _ => None,
    }
}

/// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`, through
/// nix): a descendant orphaned by its parent's exit is reparented here
/// instead of to init, so `pinsight sched` still sees (in its own
/// `/proc/self/task/*/children`) the processes a program started in the
/// background before exiting.
pub fn set_child_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

/// Sends `sig` to every process of group `pgid`. `Ok(false)`: no such group.
pub fn kill_group(pgid: libc::pid_t, sig: libc::c_int) -> io::Result<bool> {
    // pgid > 1 is checked so we never signal "every process" (-1) or our
    // own group (0).
    if pgid <= 1 {
        return Err(refused(format!("process group {pgid}")));
    }
    delivered(nix::sys::signal::killpg(Pid::from_raw(pgid), signal(sig)?))
}

/// The error for a signal refused before it was sent, naming the
/// `target`.
fn refused(target: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("refusing to signal {target}"),
    )
}

/// Whether a signal was sent: `Ok(false)` when its target does not exist
/// (ESRCH).
fn delivered(sent: nix::Result<()>) -> io::Result<bool> {
    match sent {
        Ok(()) => Ok(true),
        Err(nix::errno::Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Sends `sig` (0: only check) to process `pid`. `Ok(false)`: no such
/// process.
pub fn kill(pid: libc::pid_t, sig: libc::c_int) -> io::Result<bool> {
    if pid <= 0 {
        return Err(refused(format!("pid {pid}")));
    }
    delivered(nix::sys::signal::kill(Pid::from_raw(pid), signal(sig)?))
}

/// `sig` as nix's type; 0 is "no signal" (existence check).
fn signal(sig: libc::c_int) -> io::Result<Option<Signal>> {
    if sig == 0 {
        return Ok(None);
    }
    Signal::try_from(sig).map(Some).map_err(io::Error::from)
}

/// A close-on-exec pipe: `(read end, write end)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// Writes all of `buf`, retrying on EINTR. Async-signal-safe (used between
/// fork and exec).
pub fn write_all_raw(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer/length pair is within `buf`.
        done += retry_eintr(|| unsafe {
            libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done)
        })?;
    }
    Ok(())
}

/// Fills `buf` or reports EOF (`Ok(false)`), retrying on EINTR.
/// Async-signal-safe.
pub fn read_exact_raw(fd: RawFd, buf: &mut [u8]) -> io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer/length pair is within `buf`.
        let n = retry_eintr(|| unsafe {
            libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done)
        })?;
        if n == 0 {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}

/// Calls `call` (one raw `read` or `write`) again while it fails with
/// EINTR: the byte count it returned, or the error it set.
/// Async-signal-safe.
fn retry_eintr(mut call: impl FnMut() -> libc::ssize_t) -> io::Result<usize> {
    loop {
        let n = call();
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The calling process's own peak RSS in KiB (`getrusage(RUSAGE_SELF)`).
pub fn self_max_rss_kib() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0, |ru| ru.max_rss().max(0) as u64)
}

/// The calling process's own CPU time so far, user + system, in seconds
/// (`getrusage(RUSAGE_SELF)`: every thread of this process, not its
/// children); 0.0 if the call fails.
pub fn self_cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |ru| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 * 1e-6;
        t(ru.user_time()) + t(ru.system_time())
    })
}

/// CPU time, user + system, in seconds, of this process's children that
/// have been waited for (`getrusage(RUSAGE_CHILDREN)`); 0.0 if the call
/// fails.
pub fn children_cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |ru| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 * 1e-6;
        t(ru.user_time()) + t(ru.system_time())
    })
}

/// The calling process's id (async-signal-safe).
pub fn getpid() -> libc::pid_t {
    nix::unistd::getpid().as_raw()
}

/// The process group of `pid` (`None` once it is gone).
pub fn getpgid(pid: libc::pid_t) -> Option<libc::pid_t> {
    nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid)))
        .ok()
        .map(|p| p.as_raw())
}

/// The calling process's effective user id.
pub fn geteuid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The calling process's effective group id.
pub fn getegid() -> u32 {
    nix::unistd::getegid().as_raw()
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock of [`std::time::Instant`]
/// on Linux, readable between `fork` and `exec` (clock_gettime(2) is
/// async-signal-safe, signal-safety(7)). Comparable only with itself.
pub fn monotonic_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(t) => (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64),
        // CLOCK_MONOTONIC cannot fail on Linux (clock_gettime(2): EINVAL only
        // for an unknown clock); 0 reads as "no stamp".
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_exit_and_signal_statuses() {
        assert_eq!(decode_status(3 << 8), (Some(3), None));
        assert_eq!(decode_status(libc::SIGKILL), (None, Some(libc::SIGKILL)));
    }

    #[test]
    fn never_signals_everyone() {
        assert!(kill_group(1, 0).is_err());
        assert!(kill_group(-1, 0).is_err());
        assert!(kill_group(0, 0).is_err());
        assert!(kill(0, 0).is_err());
        assert!(kill(-1, 0).is_err());
    }

    #[test]
    #[allow(clippy::zombie_processes)] // reaped with wait4 below, not Child::wait
    fn waits_for_exit_without_reaping_then_reaps() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        wait_exited_keep(pid);
        assert!(has_exited(pid).unwrap());
        // Not reaped: still there as a zombie.
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        let r = wait4(pid).unwrap();
        assert_eq!(decode_status(r.status), (Some(0), None));
    }
}
