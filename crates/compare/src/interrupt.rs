//! Ctrl-C (SIGINT), SIGTERM and SIGHUP during an experiment.
//!
//! pinsight-measure's cleanup thread does the urgent part the moment the
//! signal arrives: it passes the signal on to the run in flight (its own
//! process group, which the terminal's Ctrl-C does not reach), SIGKILLs
//! what is left after 300 ms and restores every cpufreq governor. Then it
//! calls our hook, which hands over to the main thread: the main thread
//! sees its run end, stops, drops the shim file, prints the partial summary
//! and the exact `--resume` command, and exits with 128 + signal. The hook
//! waits for that (bounded), so the process never dies halfway through.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// (cleanup done, main thread done)
static STATE: Mutex<(bool, bool)> = Mutex::new((false, false));
static CHANGED: Condvar = Condvar::new();

/// How long the hook lets the main thread finish its report.
const MAIN_GRACE: Duration = Duration::from_secs(20);

/// The signal cleanup could not be installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct InstallError(pub pinsight_measure::SignalCleanupError);

/// Installs the cleanup (once per process).
pub fn install() -> Result<(), InstallError> {
    pinsight_measure::install_signal_cleanup().map_err(InstallError)?;
    pinsight_measure::set_signal_hook(hook);
    Ok(())
}

/// Whether a cleanup signal arrived.
pub fn interrupted() -> bool {
    pinsight_measure::is_shutting_down()
}

/// The signal that arrived (SIGINT if not yet known).
pub fn signal() -> i32 {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => libc::SIGINT,
        s => s,
    }
}

fn lock() -> std::sync::MutexGuard<'static, (bool, bool)> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Main thread: waits until the cleanup thread has killed the runs and
/// restored the governors. Returns false on timeout.
pub fn wait_for_cleanup(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut st = lock();
    while !st.0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        st = CHANGED
            .wait_timeout(st, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// Main thread: the partial report is out; the process may exit.
pub fn main_finished() {
    lock().1 = true;
    CHANGED.notify_all();
}

fn hook(sig: i32) {
    SIGNAL.store(sig, Ordering::SeqCst);
    let deadline = Instant::now() + MAIN_GRACE;
    let mut st = lock();
    st.0 = true;
    CHANGED.notify_all();
    while !st.1 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        st = CHANGED
            .wait_timeout(st, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    drop(st);
    // The main thread now exits with 128 + signal; give it time to do so
    // rather than racing it with the re-raised signal.
    std::thread::sleep(Duration::from_secs(2));
}
