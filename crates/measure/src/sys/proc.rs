//! Process syscalls std lacks: reaping with `rusage`, waiting for exit
//! without reaping (so a zombie leader keeps its process-group id reserved
//! while we kill the group), signalling a process group, and CLOEXEC pipes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
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
    })
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
pub fn poll_readable(fd: &OwnedFd, timeout: Option<Duration>) -> io::Result<bool> {
    let ms: libc::c_int = match timeout {
        None => -1,
        // Round up so we never spin on a sub-millisecond remainder.
        Some(d) => d.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

/// Sends `sig` to every process of group `pgid`. `Ok(false)`: no such group.
pub fn kill_group(pgid: libc::pid_t, sig: libc::c_int) -> io::Result<bool> {
    // SAFETY: plain integer arguments; pgid > 1 is checked so we never
    // signal "every process" (-1) or our own group (0).
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    let r = unsafe { libc::kill(-pgid, sig) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// A close-on-exec pipe: `(read end, write end)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned by us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Writes all of `buf`, retrying on EINTR. Async-signal-safe (used between
/// fork and exec).
pub fn write_all_raw(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer/length pair is within `buf`.
        let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// Fills `buf` or reports EOF (`Ok(false)`), retrying on EINTR.
/// Async-signal-safe.
pub fn read_exact_raw(fd: RawFd, buf: &mut [u8]) -> io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer/length pair is within `buf`.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(false);
        }
        done += n as usize;
    }
    Ok(true)
}

/// The calling process's own peak RSS in KiB (`getrusage(RUSAGE_SELF)`).
pub fn self_max_rss_kib() -> u64 {
    // SAFETY: rusage is plain old data; the out-pointer is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_maxrss.max(0) as u64
}

/// The calling process's id (async-signal-safe).
pub fn getpid() -> libc::pid_t {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getpid() }
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
    }
}
