//! The one table from a program's fate to the exit code a shell reports,
//! used by every command that runs a program:
//!
//! | fate | code |
//! | --- | --- |
//! | exited with code C | C |
//! | killed by signal N (or pinsight stopped by it) | 128 + N |
//! | cannot be found (`ENOENT`), or its interpreter cannot | 127 |
//! | found but cannot be executed (permission, directory, bad ELF, ...) | 126 |
//! | could not be started otherwise (fork failed, a `pre_exec` step failed) | 1 |
//!
//! The 126/127/128+N convention is POSIX's (XCU 2.8.2 "Exit Status for
//! Commands": "If a command is not found, the exit status shall be 127. If
//! the command name is found, but it is not an executable utility, the
//! exit status shall be 126"; a command killed by a signal reports a status
//! greater than 128) as bash implements it (bash(1), EXIT STATUS: "the
//! value of 128+n").

use std::io;
use std::process::ExitStatus;

/// A program that cannot be found.
pub const NOT_FOUND: i32 = 127;
/// A program that was found but cannot be executed.
pub const CANNOT_EXECUTE: i32 = 126;
/// A failure that is not the program's (e.g. fork failed).
pub const FAILURE: i32 = 1;

/// The exit code for signal `signal`: 128 + N.
pub fn signal_code(signal: i32) -> i32 {
    128 + signal
}

/// The exit code of a status given as its parts (`code` when the program
/// exited, `signal` when a signal killed it; neither: 1).
pub fn code_of(code: Option<i32>, signal: Option<i32>) -> i32 {
    match (code, signal) {
        (Some(c), _) => c,
        (None, Some(s)) => signal_code(s),
        (None, None) => FAILURE,
    }
}

/// The exit code of a waited-for status.
pub fn status_code(status: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    code_of(status.code(), status.signal())
}

/// Why a program could not be started: the one error every command uses
/// for a program it cannot run, with the shell's exit code
/// ([`SpawnError::exit_code`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist (a name searched in `PATH`, or a path).
    #[error("{program}: {}", if *.searched_path { "command not found" } else { "command not found (no such file)" })]
    NotFound {
        program: String,
        /// Whether `PATH` was searched (a name without a slash).
        searched_path: bool,
    },
    /// It exists but cannot be executed; `errno` is the exec's error
    /// (`EACCES` for a file without execute permission, `EISDIR`,
    /// `ENOEXEC` for a file the kernel cannot load, ...).
    #[error("{program}: cannot execute: {}", errno_text(*.errno))]
    NotExecutable { program: String, errno: i32 },
    /// It exists but its interpreter (an ELF's `PT_INTERP` loader, or a
    /// script's `#!` program) does not: the exec would fail with `ENOENT`
    /// and a shell would say the program is missing. Found before the
    /// start by [`crate::program::Program::check`]; exit 127 as bash gives.
    #[error("{program}: cannot execute: its interpreter {interpreter} does not exist")]
    NoInterpreter {
        program: String,
        interpreter: String,
    },
    /// fork failed, or a step run in the child before exec did.
    #[error("{program}: cannot start: {}", errno_text(*.errno))]
    Start { program: String, errno: i32 },
}

/// The exec errors that mean "found, but not executable" (execve(2),
/// ERRORS), as opposed to failures of fork or of the caller's setup.
const EXEC_ERRNOS: [i32; 11] = [
    libc::EACCES,
    libc::EPERM,
    libc::ENOEXEC,
    libc::EISDIR,
    libc::ETXTBSY,
    libc::ENOTDIR,
    libc::ELOOP,
    libc::ENAMETOOLONG,
    libc::E2BIG,
    libc::ELIBBAD,
    libc::EIO,
];

fn errno_text(errno: i32) -> &'static str {
    nix::errno::Errno::from_raw(errno).desc()
}

impl SpawnError {
    /// Classifies the error `Command::spawn` (or an exec) returned for
    /// `program`.
    pub fn from_io(program: impl Into<String>, e: &io::Error) -> SpawnError {
        let program = program.into();
        let errno = e.raw_os_error().unwrap_or(match e.kind() {
            io::ErrorKind::NotFound => libc::ENOENT,
            io::ErrorKind::PermissionDenied => libc::EACCES,
            _ => libc::EIO,
        });
        if errno == libc::ENOENT {
            SpawnError::NotFound {
                searched_path: !program.contains('/'),
                program,
            }
        } else if EXEC_ERRNOS.contains(&errno) && e.raw_os_error().is_some()
            || e.kind() == io::ErrorKind::PermissionDenied
        {
            SpawnError::NotExecutable { program, errno }
        } else {
            SpawnError::Start { program, errno }
        }
    }

    /// The shell's exit code: 127, 126, or 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            SpawnError::NotFound { .. } | SpawnError::NoInterpreter { .. } => NOT_FOUND,
            SpawnError::NotExecutable { .. } => CANNOT_EXECUTE,
            SpawnError::Start { .. } => FAILURE,
        }
    }

    /// The program as given.
    pub fn program(&self) -> &str {
        match self {
            SpawnError::NotFound { program, .. }
            | SpawnError::NotExecutable { program, .. }
            | SpawnError::NoInterpreter { program, .. }
            | SpawnError::Start { program, .. } => program,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn statuses_map_to_the_shells_codes() {
        assert_eq!(status_code(&ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(status_code(&ExitStatus::from_raw(libc::SIGTERM)), 143);
        assert_eq!(code_of(None, Some(libc::SIGINT)), 130);
        assert_eq!(code_of(Some(0), None), 0);
        assert_eq!(code_of(None, None), 1);
        assert_eq!(signal_code(libc::SIGHUP), 129);
    }

    #[test]
    fn spawn_errors_map_to_126_127_or_1() {
        let e = |errno| SpawnError::from_io("prog", &io::Error::from_raw_os_error(errno));
        assert_eq!(e(libc::ENOENT).exit_code(), 127);
        assert_eq!(e(libc::ENOENT).to_string(), "prog: command not found");
        for errno in [libc::EACCES, libc::ENOEXEC, libc::EISDIR, libc::ETXTBSY] {
            assert_eq!(e(errno).exit_code(), 126, "{errno}");
        }
        assert_eq!(
            e(libc::EACCES).to_string(),
            "prog: cannot execute: Permission denied"
        );
        assert_eq!(e(libc::EAGAIN).exit_code(), 1);
        assert_eq!(e(libc::EINVAL).exit_code(), 1);
        let p = SpawnError::from_io("./x", &io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(p.to_string(), "./x: command not found (no such file)");
        assert_eq!(p.program(), "./x");
        let k = SpawnError::from_io("y", &io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(k.exit_code(), 126);
    }

    #[test]
    fn real_spawns_are_classified() {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        std::fs::write(&data, "x").unwrap();
        for (prog, code) in [
            (data.clone(), 126),
            (d.path().to_path_buf(), 126),
            (d.path().join("missing"), 127),
        ] {
            let e = std::process::Command::new(&prog).spawn().unwrap_err();
            let s = SpawnError::from_io(prog.display().to_string(), &e);
            assert_eq!(s.exit_code(), code, "{s}");
        }
    }
}
