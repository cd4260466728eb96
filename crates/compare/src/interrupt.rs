//! Ctrl-C (SIGINT), SIGTERM and SIGHUP during an experiment: the one
//! signal lifecycle of [`pinsight_lifecycle::interrupt`], as pinsight-measure
//! installs it (its restorer puts every cpufreq governor back).
//!
//! The lifecycle's cleanup thread does the urgent part the moment the
//! signal arrives: it passes the signal on to the run in flight (its own
//! process group, which the terminal's Ctrl-C does not reach), SIGKILLs
//! what is left after 300 ms and runs the restorers. The main thread handles
//! the exit ([`interrupt::main_handles_exit`]): it sees its run end, stops,
//! drops the shim file, prints the partial summary and the exact `--resume`
//! command, calls [`main_finished`] and exits with 128 + signal; the cleanup
//! thread waits for that (bounded), so the process never dies halfway
//! through.

use pinsight_lifecycle::interrupt::{self, MainExit};
use std::sync::OnceLock;
use std::time::Duration;

/// The signal cleanup could not be installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct InstallError(pub pinsight_measure::SignalCleanupError);

/// Held for the life of the process once installed: an experiment's main
/// thread always writes its own partial report after a signal.
static MAIN: OnceLock<MainExit> = OnceLock::new();

/// Installs the cleanup (once per process).
pub fn install() -> Result<(), InstallError> {
    pinsight_measure::install_signal_cleanup().map_err(InstallError)?;
    MAIN.get_or_init(interrupt::main_handles_exit);
    Ok(())
}

/// Whether a cleanup signal arrived.
pub fn interrupted() -> bool {
    pinsight_measure::is_shutting_down()
}

/// The signal that arrived (SIGINT if not yet known, or if the stop was
/// not one of the lifecycle's signals).
pub fn signal() -> i32 {
    interrupt::stopped()
        .filter(|s| interrupt::SIGNALS.contains(s))
        .unwrap_or(libc::SIGINT)
}

/// Main thread: waits until the cleanup thread has killed the runs and
/// restored the governors. Returns false on timeout.
pub fn wait_for_cleanup(timeout: Duration) -> bool {
    interrupt::wait_for_cleanup(timeout)
}

/// Main thread: the partial report is out; the process may exit.
pub fn main_finished() {
    interrupt::main_finished();
}
