//! Forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT to launched children.
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
