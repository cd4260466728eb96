//! Signal handling: forwarding signals to launched children
//! ([`Forwarding`]), the self-pipe handler behind measure's cleanup on
//! SIGINT/SIGTERM/SIGHUP ([`self_pipe`], [`write_to_self_pipe_on`],
//! [`die_by`]), and deferring signals around a write that must not be cut
//! in half ([`DeferSignals`]).
//!
//! Masks, `kill` and `fcntl` go through nix. The handlers themselves are
//! hand-written `extern "C"` functions installed with `sigaction(2)`: the
//! forwarding one reads `si_code` (SA_SIGINFO) to tell a terminal's signal
//! from a `kill`, both restore exactly the handlers they replaced, and the
//! cleanup one leaves ignored signals ignored. `signal-hook` chains
//! handlers instead of replacing and restoring them, and offers no
//! `si_code`, so it would change behaviour.
//!
//! # Forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT to launched children
//!
//! While a child runs, the launcher must not die of those signals (it would
//! leave the shim file behind and lose the child's status), and the child
//! must get them. Signals a terminal sends (Ctrl-C, Ctrl-\, hangup) already
//! reach the child, which shares our process group: those arrive with
//! `si_code == SI_KERNEL` and are not forwarded again, so a program sees
//! one Ctrl-C, not two. Signals sent to the launcher with `kill` are
//! forwarded to every child currently launched (a library user may run
//! several at once). The previous handlers come back when the last
//! [`Forwarding`] guard is dropped.

use std::io;
use std::os::fd::{IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

/// The signals forwarded.
pub const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

const SLOTS: usize = 64;
/// Registered children (0 = free slot). Read by the handler.
static CHILDREN: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
/// A signal that came while no child was registered, forwarded to the next one.
static PENDING: AtomicI32 = AtomicI32::new(0);

/// Handlers installed (count of live guards, and the handlers they replaced).
static INSTALLED: Mutex<(usize, Vec<(libc::c_int, libc::sigaction)>)> = Mutex::new((0, Vec::new()));

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
    let code = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_code }
    };
    if code == libc::SI_KERNEL {
        return; // from the terminal: the children got it too
    }
    let mut any = false;
    for slot in &CHILDREN {
        let pid = slot.load(Ordering::SeqCst);
        if pid > 0 {
            any = true;
            // SAFETY: kill is async-signal-safe.
            unsafe { libc::kill(pid, sig) };
        }
    }
    if !any {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Forwarding handlers in place for one launch; restores the previous
/// handlers when the last guard is dropped.
pub struct Forwarding {
    slot: Option<usize>,
}

impl Forwarding {
    /// Installs the handlers (before spawning, so no signal is lost).
    pub fn install() -> Forwarding {
        let mut st = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if st.0 == 0 {
            PENDING.store(0, Ordering::SeqCst);
            for sig in FORWARDED {
                // SAFETY: plain sigaction calls with zeroed, then filled, structs.
                unsafe {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = forward as *const () as usize;
                    sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                    libc::sigemptyset(&mut sa.sa_mask);
                    let mut prev: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, &sa, &mut prev) == 0 {
                        st.1.push((sig, prev));
                    }
                }
            }
        }
        st.0 += 1;
        Forwarding { slot: None }
    }

    /// Registers the child to forward to, delivering a signal that came early.
    pub fn set_child(&mut self, pid: i32) {
        for (i, slot) in CHILDREN.iter().enumerate() {
            if slot
                .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                self.slot = Some(i);
                break;
            }
        }
        let early = PENDING.swap(0, Ordering::SeqCst);
        if early != 0 {
            // SAFETY: pid is our child.
            unsafe { libc::kill(pid, early) };
        }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        if let Some(i) = self.slot.take() {
            CHILDREN[i].store(0, Ordering::SeqCst);
        }
        let mut st = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        st.0 -= 1;
        if st.0 == 0 {
            for (sig, prev) in st.1.drain(..) {
                // SAFETY: restores a sigaction obtained from the kernel.
                unsafe { libc::sigaction(sig, &prev, std::ptr::null_mut()) };
            }
        }
    }
}

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
