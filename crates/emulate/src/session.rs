//! Keeping an emulation while something runs: a program (ended with its
//! status, as a shell ends with its command's) or nothing until a signal.

use pinsight_lifecycle::exit::SpawnError;
use pinsight_lifecycle::interrupt;
use pinsight_sys::spawn::Spawn;
use std::ffi::OsString;
use std::time::Duration;

/// Runs `program args` with `env` added, passing SIGINT/SIGTERM/SIGHUP on
/// to it (the restorers end the emulation at the first one), and returns
/// its exit code through the one exit table (128 + N when killed by N).
pub fn run_program(
    program: &OsString,
    args: &[OsString],
    env: &[(&str, String)],
) -> Result<i32, SpawnError> {
    let main = interrupt::main_owns_exit();
    let _ = interrupt::install();
    let mut cmd = Spawn::new(program);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let name = program.to_string_lossy().into_owned();
    let mut child = cmd
        .start()
        .map_err(|e| SpawnError::from_io(name, &e.error))?;
    let tree = interrupt::watch_descendants();
    // EINTR (a signal passed on) is retried by the wait itself.
    let status = child.wait().ok();
    drop(tree);
    drop(main);
    Ok(status.map_or(1, |s| pinsight_lifecycle::exit::status_code(&s)))
}

/// Waits for SIGINT, SIGTERM or SIGHUP (the restorers end the emulation)
/// and returns 128 + its number with the guard that keeps the process
/// alive until it is dropped (say goodbye, then drop it and exit).
pub fn hold() -> (i32, interrupt::MainExit) {
    let main = interrupt::main_handles_exit();
    let _ = interrupt::install();
    loop {
        if let Some(sig) = interrupt::wait(Duration::from_secs(1)) {
            return (pinsight_lifecycle::exit::signal_code(sig), main);
        }
    }
}
