//! Leave no trace on Ctrl-C: on SIGINT/SIGTERM/SIGHUP, pass the signal on
//! to the process groups of runs in flight (SIGKILL after 300 ms), restore
//! every cpufreq governor changed by a
//! [`crate::GovernorGuard`], then die by the same signal (so the shell sees
//! 130/143/129 as usual).
//!
//! How it works: the signal handler only writes the signal number to a
//! self-pipe (the one async-signal-safe thing worth doing); a dedicated
//! thread reads it and does the cleanup with ordinary Rust code (locks,
//! file writes). Everything is done exactly once: registries are drained
//! under a lock, and guards dropped later find nothing left to restore.
//!
//! Composing with a command's own Ctrl-C handling (`pinsight compare`):
//! - simplest: call [`install_signal_cleanup`] once at start; use
//!   [`set_signal_hook`] to flush a journal after cleanup, before the
//!   process dies;
//! - or keep your own handler and call [`cleanup_now`] from ordinary code
//!   (not from inside a signal handler) before exiting.
//!
//! Measured children run in their own process group (so a timeout can kill
//! the whole tree), which also means the terminal's Ctrl-C does not reach
//! them directly: killing their groups here is what stops them.

use crate::error::IoError;
use crate::governor::RestoreFailure;
use pinsight_sys::signals;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
static ACTIVE_GROUPS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());
static HOOK: Mutex<Option<fn(i32)>> = Mutex::new(None);
static INSTALLED: OnceLock<Result<(), SignalCleanupError>> = OnceLock::new();

/// Why the signal cleanup could not be installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignalCleanupError {
    #[error("signal cleanup: pipe: {0}")]
    Pipe(#[source] IoError),
    #[error("signal cleanup: thread: {0}")]
    Thread(#[source] IoError),
    #[error("signal cleanup: sigaction({signal}): {source}")]
    Sigaction { signal: i32, source: IoError },
}

/// The signals that trigger cleanup.
pub const CLEANUP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Whether a cleanup signal arrived; new runs are refused from then on.
pub fn is_shutting_down() -> bool {
    SHUTTING_DOWN.load(Ordering::SeqCst)
}

/// Kills the process groups of runs in flight and restores all governors.
/// Idempotent. Call from ordinary code, never from a signal handler.
/// Returns the restore failures (empty when all went well).
pub fn cleanup_now() -> Vec<RestoreFailure> {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    let groups: Vec<libc::pid_t> = std::mem::take(&mut *lock(&ACTIVE_GROUPS));
    for g in groups {
        let _ = crate::sys::proc::kill_group(g, libc::SIGKILL);
    }
    crate::governor::restore_all()
}

/// A function run by the cleanup thread after [`cleanup_now`] and before
/// the process dies by the signal (e.g. flush a journal). Replaces any
/// previous hook.
pub fn set_signal_hook(hook: fn(signal: i32)) {
    *lock(&HOOK) = Some(hook);
}

/// Installs the SIGINT/SIGTERM/SIGHUP cleanup (once per process; later
/// calls return the first result). Signals that were ignored when this is
/// called (e.g. SIGHUP under `nohup`) stay ignored.
pub fn install_signal_cleanup() -> Result<(), SignalCleanupError> {
    INSTALLED.get_or_init(install).clone()
}

fn install() -> Result<(), SignalCleanupError> {
    // The handler only writes the signal number to this pipe; the read end
    // belongs to the cleanup thread.
    let r = signals::self_pipe().map_err(|e| SignalCleanupError::Pipe(e.into()))?;
    std::thread::Builder::new()
        .name("pinsight-cleanup".into())
        .spawn(move || cleanup_thread(r))
        .map_err(|e| SignalCleanupError::Thread(e.into()))?;
    for sig in CLEANUP_SIGNALS {
        // A signal ignored now (e.g. SIGHUP under nohup) stays ignored.
        signals::write_to_self_pipe_on(sig).map_err(|e| SignalCleanupError::Sigaction {
            signal: sig,
            source: e.into(),
        })?;
    }
    Ok(())
}

fn cleanup_thread(read: OwnedFd) {
    // Blocks until the first cleanup signal; EOF or an error means the
    // pipe is gone and there is nothing to do.
    let Some(sig) = signals::next_signal(&read) else {
        return;
    };
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    forward_then_wait(sig, std::time::Duration::from_millis(300));
    for failure in cleanup_now() {
        eprintln!("pinsight: {failure}");
    }
    let hook = *lock(&HOOK);
    if let Some(h) = hook {
        h(sig);
    }
    // Restore the default action and re-send the signal to the whole
    // process, so it dies the way the sender intended.
    signals::die_by(sig);
    // Only reached if the signal could not kill us.
    std::thread::sleep(std::time::Duration::from_secs(1));
    std::process::exit(128 + sig);
}

/// Passes `sig` on to the runs in flight (their own process groups do not
/// get the terminal's Ctrl-C), giving them up to `grace` to clean up and
/// exit before [`cleanup_now`] kills what is left.
fn forward_then_wait(sig: libc::c_int, grace: std::time::Duration) {
    let groups: Vec<libc::pid_t> = lock(&ACTIVE_GROUPS).clone();
    for &g in &groups {
        let _ = crate::sys::proc::kill_group(g, sig);
    }
    let start = std::time::Instant::now();
    while start.elapsed() < grace {
        // Registrations are dropped once the run is reaped.
        let live = lock(&ACTIVE_GROUPS).iter().any(|g| groups.contains(g));
        if !live {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A run's process group, registered for killing on a cleanup signal for
/// as long as this lives.
pub(crate) struct GroupRegistration(libc::pid_t);

impl GroupRegistration {
    /// Registers `pgid`. If a cleanup signal already arrived (it may have
    /// raced with the spawn), kills the group at once.
    pub(crate) fn new(pgid: libc::pid_t) -> GroupRegistration {
        lock(&ACTIVE_GROUPS).push(pgid);
        if is_shutting_down() {
            let _ = crate::sys::proc::kill_group(pgid, libc::SIGKILL);
        }
        GroupRegistration(pgid)
    }
}

impl Drop for GroupRegistration {
    fn drop(&mut self) {
        lock(&ACTIVE_GROUPS).retain(|&g| g != self.0);
    }
}

/// Locks ignoring poison: cleanup must work even after a panic elsewhere.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
