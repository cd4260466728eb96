//! Leave no trace on Ctrl-C: on SIGINT/SIGTERM/SIGHUP, pass the signal on
//! to the process groups of runs in flight (SIGKILL after 300 ms), restore
//! every cpufreq governor changed by a
//! [`crate::GovernorGuard`], then die by the same signal (so the shell sees
//! 130/143/129 as usual).
//!
//! It is the one signal lifecycle of `pinsight_lifecycle::interrupt`
//! (a self-pipe handler and a cleanup thread): the governors are one of
//! its restorers and each run's process group is watched with a 300 ms
//! grace before SIGKILL. Everything is done exactly once: registries are
//! drained under a lock, and guards dropped later find nothing left to
//! restore.
//!
//! Composing with a command's own Ctrl-C handling (`pinsight compare`):
//! call [`install_signal_cleanup`] once at start and use
//! [`set_signal_hook`] to flush a journal after cleanup, before the
//! process dies; or call [`cleanup_now`] from ordinary code.
//!
//! Measured children run in their own process group (so a timeout can kill
//! the whole tree), which also means the terminal's Ctrl-C does not reach
//! them directly: killing their groups here is what stops them.

use crate::error::IoError;
use crate::governor::RestoreFailure;
use pinsight_lifecycle::interrupt::{self, GroupWatch, InterruptError};
use std::sync::Mutex;
use std::time::Duration;

/// How long a run in flight may take to end after the signal is passed
/// on before its process group is SIGKILLed.
const RUN_GRACE: Duration = Duration::from_millis(300);

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
pub const CLEANUP_SIGNALS: [libc::c_int; 3] = interrupt::SIGNALS;

/// Whether a cleanup signal arrived; new runs are refused from then on.
pub fn is_shutting_down() -> bool {
    interrupt::stopped().is_some()
}

/// Kills the process groups of runs in flight and restores all governors.
/// Idempotent. Call from ordinary code, never from a signal handler.
/// Returns the restore failures (empty when all went well).
pub fn cleanup_now() -> Vec<RestoreFailure> {
    let failures = crate::governor::restore_all();
    let _ = interrupt::stop_now(libc::SIGKILL);
    failures
}

/// A function run by the cleanup thread after [`cleanup_now`] and before
/// the process dies by the signal (e.g. flush a journal). Replaces any
/// previous hook.
pub fn set_signal_hook(hook: fn(signal: i32)) {
    interrupt::set_hook(hook);
}

fn restore_governors() -> Vec<String> {
    crate::governor::restore_all()
        .iter()
        .map(|f| f.to_string())
        .collect()
}

/// Installs the SIGINT/SIGTERM/SIGHUP cleanup (once per process; later
/// calls return the first result). Signals that were ignored when this is
/// called (e.g. SIGHUP under `nohup`) stay ignored.
pub fn install_signal_cleanup() -> Result<(), SignalCleanupError> {
    interrupt::add_restorer(restore_governors);
    interrupt::install().map_err(|e| {
        let io = |m: String| IoError::from(std::io::Error::other(m));
        match e {
            InterruptError::Pipe(m) => SignalCleanupError::Pipe(io(m)),
            InterruptError::Thread(m) => SignalCleanupError::Thread(io(m)),
            InterruptError::Sigaction { signal, reason } => SignalCleanupError::Sigaction {
                signal,
                source: io(reason),
            },
        }
    })
}

/// A run's process group, registered for the signal lifecycle for as long
/// as this lives: a signal is passed on to it, SIGKILL after 300 ms.
pub(crate) struct GroupRegistration(#[allow(dead_code)] GroupWatch);

impl GroupRegistration {
    /// Registers `pgid`. If a cleanup signal already arrived (it may have
    /// raced with the spawn), kills the group at once.
    pub(crate) fn new(pgid: libc::pid_t) -> GroupRegistration {
        GroupRegistration(interrupt::watch_group(pgid, Some(RUN_GRACE)))
    }
}

/// Locks ignoring poison: cleanup must work even after a panic elsewhere.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
