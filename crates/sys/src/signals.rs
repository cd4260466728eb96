//! Signal handling primitives: the self-pipe handler behind the one
//! signal lifecycle (pinsight-lifecycle's `interrupt`) on
//! SIGINT/SIGTERM/SIGHUP ([`self_pipe`], [`write_to_self_pipe_on`],
//! [`die_by`]), and deferring signals around a write that must not be cut
//! in half ([`DeferSignals`]).
//!
//! Masks, `kill` and `fcntl` go through nix. The handler itself is a
//! hand-written `extern "C"` function installed with `sigaction(2)`: it
//! reads `si_code` (SA_SIGINFO) to tell a terminal's signal from a `kill`
//! and leaves ignored signals ignored. `signal-hook` offers no `si_code`,
//! so it would change behaviour.

use std::io;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The write end of the cleanup self-pipe (-1: none), read by the handler.
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// Creates the self-pipe the handler installed by [`write_to_self_pipe_on`]
/// writes signal numbers to (one byte each), and returns its read end. The
/// write end is non-blocking (a full pipe must never block a handler) and
/// stays open for the life of the process.
pub fn self_pipe() -> io::Result<OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let (r, w) = crate::process::pipe()?;
    let flags = fcntl(&w, FcntlArg::F_GETFL).map_err(io::Error::from)?;
    let _ = fcntl(
        &w,
        FcntlArg::F_SETFL(OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK),
    );
    PIPE_WRITE.store(w.into_raw_fd(), Ordering::SeqCst);
    Ok(r)
}

/// Installs a handler for `sig` that writes its number to the
/// [`self_pipe`]. A signal ignored when this is called (e.g. SIGHUP under
/// `nohup`) stays ignored: `Ok(false)`.
pub fn write_to_self_pipe_on(sig: libc::c_int) -> io::Result<bool> {
    // SAFETY: sigaction with a handler that only calls write(2) on a
    // non-blocking pipe and preserves errno: async-signal-safe.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
        {
            return Ok(false);
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal_to_pipe as *const () as usize;
        sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(true)
}

/// Set in a self-pipe byte when the kernel sent the signal (`SI_KERNEL`:
/// a terminal's Ctrl-C, Ctrl-\ or hangup, which the whole foreground
/// process group got), not a process with kill(2).
const FROM_KERNEL: u8 = 0x80;

extern "C" fn on_signal_to_pipe(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _ctx: *mut libc::c_void,
) {
    // SAFETY: only async-signal-safe calls; errno saved and restored; the
    // kernel passes a valid siginfo to SA_SIGINFO handlers.
    unsafe {
        let errno = *libc::__errno_location();
        let fd = PIPE_WRITE.load(Ordering::Relaxed);
        if fd >= 0 {
            let kernel = !info.is_null() && (*info).si_code == libc::SI_KERNEL;
            let b = (sig as u8 & !FROM_KERNEL) | if kernel { FROM_KERNEL } else { 0 };
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

/// Blocks until a signal number arrives on the [`self_pipe`]'s read end;
/// `None` on EOF or error (the pipe is gone: nothing to do).
pub fn next_signal(read: &OwnedFd) -> Option<libc::c_int> {
    next_signal_origin(read).map(|(sig, _)| sig)
}

/// [`next_signal`], with whether the kernel sent it (`si_code ==
/// SI_KERNEL`: a terminal's signal, which the terminal's whole foreground
/// process group got too).
pub fn next_signal_origin(read: &OwnedFd) -> Option<(libc::c_int, bool)> {
    use std::os::fd::AsRawFd;
    let mut b = [0u8; 1];
    match crate::process::read_exact_raw(read.as_raw_fd(), &mut b) {
        Ok(true) => Some((
            libc::c_int::from(b[0] & !FROM_KERNEL),
            b[0] & FROM_KERNEL != 0,
        )),
        _ => None,
    }
}

/// Restores the default action of `sig`, unblocks it on this thread and
/// sends it to the whole process, so it dies the way the sender intended.
/// Returns only if the signal could not kill the process.
pub fn die_by(sig: libc::c_int) {
    use nix::sys::signal::{SigHandler, SigSet, Signal};
    let Ok(s) = Signal::try_from(sig) else {
        return;
    };
    // SAFETY: installing SIG_DFL replaces no Rust handler state.
    unsafe {
        let _ = nix::sys::signal::signal(s, SigHandler::SigDfl);
    }
    let mut set = SigSet::empty();
    set.add(s);
    let _ = set.thread_unblock();
    let _ = nix::sys::signal::kill(nix::unistd::getpid(), s);
}

/// Blocks a set of signals on this thread until dropped; a signal that
/// arrived meanwhile is delivered then (e.g. after a file write completed
/// or was cleaned up).
pub struct DeferSignals {
    old: Option<nix::sys::signal::SigSet>,
}

impl DeferSignals {
    /// Blocks `signals` on the calling thread.
    pub fn new(signals: &[libc::c_int]) -> DeferSignals {
        use nix::sys::signal::{SigSet, SigmaskHow, Signal};
        let mut set = SigSet::empty();
        for &s in signals {
            if let Ok(s) = Signal::try_from(s) {
                set.add(s);
            }
        }
        DeferSignals {
            old: set.thread_swap_mask(SigmaskHow::SIG_BLOCK).ok(),
        }
    }
}

impl Drop for DeferSignals {
    fn drop(&mut self) {
        if let Some(old) = self.old.take() {
            let _ = old.thread_set_mask();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::{SigSet, Signal};

    #[test]
    fn deferred_signals_are_blocked_then_restored() {
        std::thread::spawn(|| {
            let blocked = || SigSet::thread_get_mask().unwrap().contains(Signal::SIGHUP);
            assert!(!blocked());
            {
                let _d = DeferSignals::new(&[libc::SIGHUP, libc::SIGTERM]);
                assert!(blocked());
            }
            assert!(!blocked());
        })
        .join()
        .unwrap();
    }
}
