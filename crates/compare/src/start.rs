//! A compare from what the user asked to a [`Session`] ready to run, in
//! two steps around discovery: [`prepare`] reads the journal to resume,
//! makes the request (and the identity of a compare across ranks), checks
//! that the programs exist and that every output file can be written, and
//! says what discovery must read; [`Prepared::open`] opens the session on
//! the machine found.
//!
//! Nothing is measured (or a governor touched) before every output file
//! is known to be writable.

use crate::analysis::Report;
use crate::experiment::{ExperimentError, Outcome};
use crate::journal::Journal;
use crate::ranks::RanksIdentity;
use crate::ranks_run::{self, RanksError, StartError};
use crate::request::{self, Flags, Input, Names, RequestError};
use crate::session::{Config, ExecutorChoice, JournalTarget, Session, SessionError};
use crate::setup::{Extension, Request};
use pinsight_lifecycle::exit::SpawnError;
use pinsight_lifecycle::journal::JournalError;
use pinsight_lifecycle::program::Program;
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Why a compare cannot start, found before discovery.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The journal to resume cannot be read.
    #[error(transparent)]
    Resume(JournalError),
    #[error(transparent)]
    Ranks(#[from] RanksError),
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The launcher of a compare across ranks cannot be started.
    #[error("launcher: {0}")]
    Launcher(SpawnError),
    /// The program cannot be started.
    #[error(transparent)]
    Program(SpawnError),
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// An output file that cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A new journal's path names a file that exists.
    #[error("journal {}: already exists", .0.display())]
    JournalExists(PathBuf),
    /// The message reads after the input's name.
    #[error("{}: cannot write it: {reason}", path.display())]
    Unwritable {
        input: Input,
        path: PathBuf,
        reason: String,
    },
    /// The default journal's directory, the current one, is not writable.
    #[error("cannot write the journal in the current directory: {0}")]
    NoDefaultJournal(String),
}

impl OutputError {
    /// The message with the inputs named by `name`.
    pub fn named(&self, name: Names<'_>) -> String {
        let journal = name(Input::Journal);
        match self {
            OutputError::JournalExists(j) => format!(
                "{journal} {}: already exists; continue it with {} {0}, or choose another {journal}",
                j.display(),
                name(Input::Resume)
            ),
            OutputError::Unwritable { input, .. } => format!("{} {self}", name(*input)),
            OutputError::NoDefaultJournal(_) => format!("{self}; use {journal} FILE"),
        }
    }
}

/// Why a prepared compare cannot open its session.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Ranks(#[from] StartError),
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// A compare checked and ready to open once the machine is discovered.
#[derive(Debug)]
pub struct Prepared {
    pub request: Request,
    /// A compare across ranks; None for a plain compare.
    pub ranks: Option<RanksIdentity>,
    /// The journal resumed.
    pub previous: Option<Journal>,
    /// What discovery must read.
    pub needs: pinsight_topology::Needs,
}

/// An open session, and where the ranks of a compare across ranks write
/// their reports (`DIR/run-N`).
pub struct Started {
    pub session: Session,
    pub reports: Option<PathBuf>,
}

/// Checks what `flags` ask, before the machine is discovered.
pub fn prepare(flags: &Flags) -> Result<Prepared, PrepareError> {
    let previous = match &flags.resume {
        Some(p) => Some(Journal::read(p).map_err(PrepareError::Resume)?),
        None => None,
    };
    let header = previous.as_ref().map(|j| &j.header);
    let ranks = ranks_run::identity(flags, header)?;
    let mut request = request::request(flags, header)?;
    if let Some(id) = &ranks {
        // One "os" plan for every arm: the launcher's ranks place themselves.
        request.policies = vec!["os".into()];
        request.governors = Vec::new();
        program_exists(&id.launcher[0]).map_err(PrepareError::Launcher)?;
    }
    program_exists(&request.command[0]).map_err(PrepareError::Program)?;
    check_outputs(flags)?;
    let needs = request::needs(flags, &request.policies, previous.is_some());
    Ok(Prepared {
        request,
        ranks,
        previous,
        needs,
    })
}

impl Prepared {
    /// Sets the experiment up on `topology` and opens its journal (the
    /// resumed one, the one asked for, else a new unique file in the
    /// current directory); nothing runs yet.
    pub fn open(
        self,
        flags: &Flags,
        topology: &Topology,
        measure_fs: FsRoot,
    ) -> Result<Started, OpenError> {
        let journal = journal_target(flags, self.previous);
        let reports = Rc::new(OnceCell::new());
        let (ext, executor) = match &self.ranks {
            None => (Extension::default(), ExecutorChoice::Live),
            Some(id) => ranks_run::executor(
                id,
                &self.request,
                &measure_fs,
                flags.show_output,
                reports.clone(),
            )?,
        };
        let config = Config {
            request: self.request,
            topology,
            measure_fs,
            journal,
            show_output: flags.show_output,
            ignore_failure: flags.ignore_failure,
            disturbance_threshold: flags
                .disturbance_threshold
                .unwrap_or(pinsight_measure::disturbance::DEFAULT_THRESHOLD),
            rerun_disturbed: flags.rerun_disturbed.unwrap_or(0),
            is_env_set: &|k| std::env::var_os(k).is_some(),
        };
        let session = Session::open_with(config, &ext, executor)?;
        let dir = self
            .ranks
            .is_some()
            .then(|| ranks_run::ranks_dir(session.journal_path()));
        if let Some(dir) = &dir {
            let _ = reports.set(dir.clone());
        }
        Ok(Started {
            session,
            reports: dir,
        })
    }
}

/// Where the journal goes: the one resumed, the one asked for, else a
/// new unique file here.
fn journal_target(flags: &Flags, previous: Option<Journal>) -> JournalTarget {
    match (&flags.resume, previous) {
        (Some(path), Some(previous)) => JournalTarget::Resume {
            path: path.clone(),
            previous: Box::new(previous),
        },
        _ => match &flags.journal {
            Some(path) => JournalTarget::New(path.clone()),
            None => JournalTarget::Unique {
                dir: PathBuf::from("."),
                stem_prefix: "pinsight-compare-".into(),
            },
        },
    }
}

/// `program` must exist here (126/127 otherwise).
fn program_exists(program: &str) -> Result<(), SpawnError> {
    Program::resolve(std::ffi::OsStr::new(program)).map(|_| ())
}

/// Checks that every output file can be written, before anything runs:
/// an existing file is opened for writing (not truncated), a new one is
/// created and removed again.
pub fn check_outputs(flags: &Flags) -> Result<(), OutputError> {
    let mut outputs: Vec<(Input, &Path)> = Vec::new();
    if flags.resume.is_none() {
        if let Some(j) = &flags.journal {
            if j.exists() {
                return Err(OutputError::JournalExists(j.clone()));
            }
            outputs.push((Input::Journal, j));
        }
    }
    for (i, p) in flags.exports.iter().enumerate() {
        outputs.push((Input::Export(i), p));
    }
    for (input, path) in outputs {
        writable(path).map_err(|reason| OutputError::Unwritable {
            input,
            path: path.to_path_buf(),
            reason,
        })?;
    }
    if flags.resume.is_none() && flags.journal.is_none() {
        // The default journal goes to the current directory.
        let probe = PathBuf::from(format!(".pinsight-compare-probe-{}", std::process::id()));
        writable(&probe).map_err(OutputError::NoDefaultJournal)?;
    }
    Ok(())
}

/// Why `path` cannot be written (as pinsight_lifecycle::output writes:
/// a temporary file in its directory renamed into place), if it cannot.
/// Nothing is left behind; an existing file or link is not touched.
fn writable(path: &Path) -> Result<(), String> {
    pinsight_lifecycle::output::check(path).map_err(|e| e.reason())
}

/// How an experiment ended, for the front end to report.
#[derive(Debug)]
pub enum End {
    Complete,
    /// A run failed and failures are not ignored; `kept`: where its
    /// output is kept, if it was.
    Stopped {
        why: String,
        kept: Option<PathBuf>,
    },
    /// A signal stopped the runs (the machine is restored, the journal
    /// intact).
    Interrupted {
        signal: i32,
    },
    /// The experiment could not go on.
    Error(ExperimentError),
}

/// How the experiment whose journal is at `journal` ended: its `outcome`,
/// the `signal` that interrupted it (else the one the handler caught)
/// and its `report`.
pub fn end(outcome: Outcome, signal: Option<i32>, report: &Report, journal: &Path) -> End {
    match outcome {
        Outcome::Complete => End::Complete,
        Outcome::StoppedOnFailure { why, slot, .. } => End::Stopped {
            why,
            kept: kept_output(report, slot, journal),
        },
        Outcome::Interrupted => End::Interrupted {
            signal: signal.unwrap_or_else(crate::interrupt::signal),
        },
        Outcome::Error(e) => End::Error(e),
    }
}

/// Where the output of the latest run of `slot` is kept (beside the
/// journal at `journal`), if it was kept.
fn kept_output(report: &Report, slot: usize, journal: &Path) -> Option<PathBuf> {
    report
        .runs
        .iter()
        .rev()
        .find(|r| r.slot == slot)
        .and_then(|r| r.output.as_ref())
        .filter(|o| !o.path.is_empty())
        .map(|o| journal.with_file_name(&o.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_journal_that_exists_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("journal.jsonl");
        std::fs::write(&existing, b"x").unwrap();
        let flags = Flags {
            journal: Some(existing.clone()),
            ..Flags::default()
        };
        let e = check_outputs(&flags).unwrap_err();
        assert!(matches!(&e, OutputError::JournalExists(p) if *p == existing));
        let flag = |i: Input| if i == Input::Journal { "-j" } else { "-R" };
        let named = e.named(&flag);
        let path = existing.display();
        let words =
            format!("-j {path}: already exists; continue it with -R {path}, or choose another -j");
        assert_eq!(named, words);
        // Resuming, the journal is the one to continue: not refused.
        let resumed = Flags {
            resume: Some(existing.clone()),
            ..flags
        };
        check_outputs(&resumed).unwrap();
    }

    #[test]
    fn an_export_that_cannot_be_written_is_named_by_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let flags = Flags {
            resume: Some(PathBuf::from("j")),
            exports: vec![
                dir.path().join("ok.json"),
                PathBuf::from("/nonexistent-dir/x.csv"),
            ],
            ..Flags::default()
        };
        let e = check_outputs(&flags).unwrap_err();
        assert!(matches!(
            e,
            OutputError::Unwritable {
                input: Input::Export(1),
                ..
            }
        ));
    }
}
