//! The command line's one error type and its exit codes, and the wording of
//! the typed errors the libraries return where several commands meet them.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag, bad
//! input file), and for commands that run a program, that program's status
//! (126/127 when it cannot start, 128+N when killed by signal N).
//!
//! Every text that came from outside (an argument, a file name, an archive
//! entry) goes through [`shown`] before it is printed, so a message never
//! writes raw control bytes to the terminal.

use pinsight_compare::session::SessionError;
use pinsight_compare::SetupError;
use pinsight_lifecycle::journal::JournalError;
use pinsight_plan::slice::SliceError;
use pinsight_sys::fs::BoundedReadError;
use pinsight_sys::FsRootError;
use std::fmt;
use std::path::Path;

/// An error with the exit code it deserves.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

impl CliError {
    /// Bad input from the user: exit 2.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: 2,
            message: message.into(),
        }
    }
    /// Something failed while working: exit 1.
    pub fn runtime(message: impl Into<String>) -> CliError {
        CliError {
            code: 1,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// A program that cannot start exits as a shell would: 127 not found, 126
/// not executable, 1 otherwise (the table of [`pinsight_lifecycle::exit`]).
impl From<pinsight_lifecycle::exit::SpawnError> for CliError {
    fn from(e: pinsight_lifecycle::exit::SpawnError) -> CliError {
        CliError {
            code: e.exit_code(),
            message: e.to_string(),
        }
    }
}

/// A measurement root (`PINSIGHT_TEST_MEASURE_ROOT`) that cannot be opened:
/// a usage error naming the variable.
impl From<pinsight_measure::MeasureRootError> for CliError {
    fn from(e: pinsight_measure::MeasureRootError) -> CliError {
        fsroot_usage(e.var, &e.source)
    }
}

/// What a command returns: the process exit code, or an error.
pub type CmdResult = Result<i32, CliError>;

/// `text` safe to print: control characters (C0, DEL, C1, and the
/// terminal-affecting escape) written as Rust escapes (`\u{1b}`, `\n`), the
/// rest unchanged.
pub fn shown(text: &str) -> String {
    pinsight_sys::text::shown(text).into_owned()
}

/// A path safe to print (see [`shown`]).
pub fn shown_path(path: &Path) -> String {
    shown(&path.to_string_lossy())
}

/// A whole message safe to print: [`shown`], keeping the line breaks a
/// message may hold on purpose (wrapped text).
pub fn safe_message(text: &str) -> String {
    text.split('\n').map(shown).collect::<Vec<_>>().join("\n")
}

/// The text of the input file `path`, given with `flag`: only a regular
/// file of at most `limit` bytes is read (`pinsight_sys::fs::read_bounded`:
/// a FIFO or `/dev/zero` is refused unread, a larger file by its size),
/// checked to be UTF-8. Every failure is a usage error naming the flag, the
/// file and what is wrong.
pub fn read_input(flag: &str, path: &Path, limit: u64) -> Result<String, CliError> {
    let name = format!("{flag} '{}'", shown_path(path));
    let bytes = pinsight_sys::fs::read_bounded(path, limit).map_err(|e| match e {
        BoundedReadError::Io(e) => CliError::usage(format!("{name}: cannot read it: {e}")),
        BoundedReadError::TooLarge { limit } => CliError::usage(format!(
            "{name}: larger than {} MiB, the most read (is it the right file?)",
            limit >> 20
        )),
        e @ BoundedReadError::NotRegular { .. } => CliError::usage(format!("{name}: {e}")),
    })?;
    String::from_utf8(bytes).map_err(|_| CliError::usage(format!("{name}: not UTF-8 text")))
}

/// The usage error for a recorded-machine directory that cannot be opened,
/// naming where it came from (`name`: `--fsroot`, `PINSIGHT_FSROOT`, ...).
pub fn fsroot_usage(name: &str, e: &FsRootError) -> CliError {
    match e {
        FsRootError::NotADirectory { dir, source } => CliError::usage(format!(
            "{name} '{}': {source} (expected a directory holding sys/ and proc/)",
            shown_path(dir)
        )),
        other => CliError::usage(format!("{name}: {}", shown(&other.to_string()))),
    }
}

/// The one wording of two inputs that do not go together where the parser
/// cannot refuse them itself, because it depends on a value (a policy, a
/// format) or on a resumed journal: names both, as clap's refusal of two
/// flags does ("the argument '--a' cannot be used with '--b'"), and why.
/// Flags that conflict whatever their values are declared to clap
/// (`conflicts_with`, `requires`, groups) instead.
pub fn conflict(flag: &str, other: &str, why: &str) -> CliError {
    CliError::usage(format!("{flag} cannot be used with {other}: {why}"))
}

/// The one refusal of work done on this machine only while `source`
/// (`--fsroot`, `PINSIGHT_FSROOT`, `--hwloc-xml`) describes another.
pub fn live_only(what: &str, source: &str, instead: &str) -> CliError {
    let instead = if instead.is_empty() {
        String::new()
    } else {
        format!("; {instead}")
    };
    CliError::usage(format!(
        "{what} on this machine only, but {source} describes another machine{instead}"
    ))
}

/// A setup error in the command line's words: each names the flag it is about.
pub fn session_error(e: SessionError) -> CliError {
    match e {
        SessionError::Setup(e) => setup_error(e),
        SessionError::Journal { error, users_path } => journal_error(error, users_path),
        e => match e.named(&crate::cmd::compare::input_flag) {
            Some(different) => CliError::usage(different),
            None => CliError::runtime(e.to_string()),
        },
    }
}

fn setup_error(e: SetupError) -> CliError {
    if let SetupError::Plan(p) = e {
        return crate::cmd::plan_args::plan_error(p);
    }
    let message = match &e {
        SetupError::NoCommand => {
            "no command to measure; usage: pinsight compare [OPTIONS] -- COMMAND [ARGS...]".into()
        }
        _ => (e.named(&crate::cmd::compare::input_flag)).unwrap_or_else(|| e.to_string()),
    };
    if e.is_usage() {
        CliError::usage(message)
    } else {
        CliError::runtime(message)
    }
}

/// A journal error: `usage` when the path is the user's (`--journal`,
/// `--resume`), else a runtime error.
pub fn journal_error(e: JournalError, usage: bool) -> CliError {
    let message = match &e {
        JournalError::Exists { path } => format!(
            "journal {} already exists; continue it with --resume {0}, or choose another --journal",
            path.display()
        ),
        _ => e.to_string(),
    };
    if usage {
        CliError::usage(message)
    } else {
        CliError::runtime(message)
    }
}

/// A tune error in the command line's words: the journal and setup ones
/// as compare says them, the rest usage or runtime errors as they are.
pub fn tune_error(e: pinsight_tune::TuneError) -> CliError {
    use pinsight_tune::TuneError;
    match e {
        TuneError::Session(s) => session_error(s),
        TuneError::Journal(j) => journal_error(j, true),
        TuneError::Layout(_) | TuneError::EmptyDesign { .. } => CliError::runtime(e.to_string()),
        TuneError::NotTune { .. } | TuneError::BadIdentity { .. } => CliError::usage(e.to_string()),
    }
}

/// Why a live tune cannot start, naming the flag to change.
pub fn tune_live_error(e: pinsight_tune::live::LiveError) -> CliError {
    use pinsight_tune::live::LiveError;
    match e {
        LiveError::JournalExists { path } => CliError::usage(format!(
            "--journal '{}': the file exists; continue it with --resume, or name a new file",
            path.display()
        )),
        LiveError::Program(e) => e.into(),
        LiveError::NoEnergy { goal, reason } => CliError::runtime(format!(
            "--goal {goal} needs the energy of every run, but RAPL is unavailable here ({reason}); use --goal time"
        )),
        LiveError::Tune(e) => tune_error(e),
    }
}

/// `model` with given parameters and nothing that names a machine: it
/// never takes this one unasked.
pub fn model_needs_machine() -> CliError {
    CliError::usage(
        "model: which machine? give --machine SPEC (e.g. 6P+8E+smt), --machine live for this one, or --config",
    )
}

/// Why `what` (a command that re-pins threads) has no big and small CPUs.
pub fn capacity_error(what: &str, e: pinsight_sched::OwnCapacityError) -> CliError {
    use pinsight_sched::{ManageError, OwnCapacityError};
    match e {
        e @ OwnCapacityError::Affinity(_) => CliError::runtime(format!("{what}: {e}")),
        OwnCapacityError::Manage(ManageError::OneKind { kind }) => CliError::usage(format!(
            "{what} needs two core kinds; this machine has one ({kind}): declare them with \
             --kinds, e.g. --kinds 0-3:P,4-7:E (a VM's vCPUs on P- and E-cores)"
        )),
        OwnCapacityError::Manage(other) => {
            CliError::usage(format!("{what}: {other}; declare kinds with --kinds"))
        }
    }
}

/// Why a mix cannot start, naming the flag to change.
pub fn mix_open_error(e: pinsight_sched::mix::OpenError) -> CliError {
    let message = e.named(&crate::cmd::mix::flag).unwrap_or_else(|| {
        "mix needs programs: -- 'CMD1' 'CMD2' ... (one quoted command line each)".into()
    });
    if e.is_usage() {
        CliError::usage(message)
    } else {
        CliError::runtime(message)
    }
}

/// The slicing error as the CLI says it (exit 2: input or flags to change).
pub fn slice_error(e: SliceError) -> CliError {
    CliError::usage(match &e {
        SliceError::RankOutOfRange { .. } => format!("{e}; check --local-rank/--local-size"),
        SliceError::Unequal { .. } => {
            format!("{e}; use --slice-rules equal-count, fewer ranks, or other --weights")
        }
        SliceError::Weights(w) => format!("--weights: {w}"),
        _ => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(shown("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(shown("x\ny\r"), "x\\ny\\r");
        assert_eq!(shown("plain é"), "plain é");
        assert_eq!(safe_message("a\u{7}\nb"), "a\\u{7}\nb");
    }
}
