//! The one entry point before a mix runs ([`open`]): the request completed
//! from a resumed journal's header, checked (schedulers, programs, SFs),
//! and the journal created or continued under its lock.

use super::{Journal, JournalError, MixError, MixResult, MixSpec, Record};
use crate::{GivenSf, SfSpecError, SfTarget};
use pinsight_lifecycle::interrupt;
use pinsight_sched_model::{Capacity, Policy};
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use std::path::PathBuf;
use std::time::Duration;

/// What the front end asks for. `None` (and an empty list): not given,
/// so a resumed experiment takes the journal's value.
#[derive(Debug, Clone)]
pub struct MixRequest {
    /// Shell command lines, one per program.
    pub commands: Vec<String>,
    /// Scheduler names, in order (os, aarr, to, acfs); `None`: all four.
    pub schedulers: Option<Vec<String>>,
    /// Completions per program; `None`: 3.
    pub repeat: Option<u32>,
    /// Scheduler period; `None`: 200 ms.
    pub period: Option<Duration>,
    /// `NAME=SF` pairs.
    pub sf: Vec<String>,
    /// The journal: a new file, or one to continue.
    pub journal: MixJournal,
    /// Big and small CPUs.
    pub capacity: Capacity,
    /// Program metrics (`--metric`); empty on resume: the journal's.
    pub metrics: Vec<pinsight_compare::program_metric::MetricSpec>,
}

/// Where the journal goes.
#[derive(Debug, Clone)]
pub enum MixJournal {
    /// A new journal (refused if the path exists).
    New(PathBuf),
    /// Continue this journal's experiment.
    Resume(PathBuf),
}

impl MixJournal {
    /// Continue `resume` when given, else a new journal at `new`.
    pub fn new(resume: Option<PathBuf>, new: PathBuf) -> MixJournal {
        resume.map_or(MixJournal::New(new), MixJournal::Resume)
    }
}

/// A mix ready to run.
pub struct Opened {
    pub spec: MixSpec,
    pub journal: Journal,
    pub journal_path: PathBuf,
    /// The records already journaled (a resume's), the header first.
    pub previous: Vec<Record>,
    /// Lines of the resumed journal dropped (a cut fragment).
    pub warnings: Vec<String>,
}

impl Opened {
    /// Runs the experiment ([`super::run`]) under the process's signal
    /// lifecycle (`pinsight_lifecycle::interrupt`, installed here): a
    /// SIGINT, SIGTERM or SIGHUP stops it with [`MixError::Interrupted`],
    /// the journal kept. The caller holds `interrupt::main_handles_exit`
    /// while it reports.
    pub fn run(&mut self, fs: &FsRoot, progress: &mut dyn Progress) -> Result<MixResult, MixError> {
        interrupt::install()?;
        super::run(
            &self.spec,
            fs,
            &mut self.journal,
            &self.previous,
            progress,
            &interrupt::wait,
        )
    }
}

/// Why a mix cannot start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The journal to resume cannot be read.
    #[error("{0}")]
    ReadResume(#[source] JournalError),
    /// The resumed journal's period is outside the interval range
    /// ([`pinsight_model::interval::INTERVAL_RANGE`]).
    #[error(
        "the journal's period '{ms}ms': {}",
        pinsight_model::interval::INTERVAL_ALLOWED
    )]
    JournalPeriod { ms: f64 },
    /// Completions per program outside 1 to 1000.
    #[error("{0}: between 1 and 1000")]
    Repeat(u32),
    /// Not a scheduler name.
    #[error("'{0}' is not a scheduler (allowed: os, aarr, to, acfs)")]
    UnknownScheduler(String),
    /// No program given.
    #[error("no programs")]
    NoPrograms,
    /// An empty command line.
    #[error("empty program '{0}': each CMD is a command line")]
    EmptyProgram(String),
    /// A bad `NAME=SF` pair.
    #[error("'{spec}': {error}")]
    Sf { spec: String, error: SfSpecError },
    /// An SF for a program the mix does not have.
    #[error("{target}=…: no such program (names: {}; positions #1-#{})", names.join(", "), names.len())]
    SfTarget {
        target: SfTarget,
        names: Vec<String>,
    },
    /// The journal to continue cannot be locked or read.
    #[error("{0}")]
    Resume(#[source] JournalError),
    /// The new journal's path exists.
    #[error("{}: exists", path.display())]
    JournalExists { path: PathBuf },
    /// The new journal cannot be created.
    #[error("{0}")]
    Create(#[source] JournalError),
}

/// An input of a [`MixRequest`], for a front end to name (by its flag)
/// in [`OpenError::named`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// [`MixRequest::schedulers`].
    Schedulers,
    /// [`MixRequest::repeat`].
    Repeat,
    /// [`MixRequest::sf`].
    Sf,
    /// A new journal ([`MixJournal::New`]).
    Journal,
    /// The journal to continue ([`MixJournal::Resume`]).
    Resume,
}

/// How a front end names an input (its flag).
pub type Names<'a> = &'a dyn Fn(Input) -> &'static str;

impl OpenError {
    /// The request's fault (a usage error), not the machine's: all but a
    /// journal to continue that cannot be locked or read under the lock.
    pub fn is_usage(&self) -> bool {
        !matches!(self, OpenError::Resume(_))
    }

    /// The message with the input at fault named by `name`; `None` for
    /// [`OpenError::NoPrograms`], whose words are the front end's usage.
    pub fn named(&self, name: Names<'_>) -> Option<String> {
        let (resume, journal) = (name(Input::Resume), name(Input::Journal));
        Some(match self {
            OpenError::ReadResume(_) | OpenError::JournalPeriod { .. } | OpenError::Resume(_) => {
                format!("{resume}: {self}")
            }
            OpenError::Repeat(_) => format!("{} {self}", name(Input::Repeat)),
            OpenError::UnknownScheduler(_) => format!("{}: {self}", name(Input::Schedulers)),
            OpenError::NoPrograms => return None,
            OpenError::EmptyProgram(_) => format!("mix: {self}"),
            OpenError::Sf { .. } | OpenError::SfTarget { .. } => {
                format!("{} {self}", name(Input::Sf))
            }
            OpenError::JournalExists { path } => format!(
                "{journal} {self}; continue it with {resume} {}, or choose another {journal}",
                path.display()
            ),
            OpenError::Create(_) => format!("{journal}: {self}"),
        })
    }
}

/// SFs given as `NAME=SF` pairs.
pub fn given_sf(specs: &[String]) -> Result<GivenSf, OpenError> {
    let mut given = GivenSf::new();
    for s in specs {
        given.add_spec(s).map_err(|error| OpenError::Sf {
            spec: s.clone(),
            error,
        })?;
    }
    Ok(given)
}

/// Completes `req` from a resumed journal's header (what was not given),
/// checks it, and creates or continues the journal. Nothing runs yet.
pub fn open(mut req: MixRequest) -> Result<Opened, OpenError> {
    if let MixJournal::Resume(path) = &req.journal {
        let previous = Journal::read(path).map_err(OpenError::ReadResume)?;
        if let Some(header) = previous.first() {
            from_header(&mut req, header)?;
        }
    }
    let spec = spec_of(&req)?;
    let (journal, journal_path, previous, warnings) = match &req.journal {
        MixJournal::Resume(path) => {
            // Locked, and read again under the lock.
            let resumed = Journal::resume(path).map_err(OpenError::Resume)?;
            (
                resumed.journal,
                path.clone(),
                resumed.records,
                resumed.warnings,
            )
        }
        MixJournal::New(path) => {
            if path.exists() {
                return Err(OpenError::JournalExists { path: path.clone() });
            }
            let j = Journal::create(path, &spec.header()).map_err(OpenError::Create)?;
            (j, path.clone(), Vec::new(), Vec::new())
        }
    };
    Ok(Opened {
        spec,
        journal,
        journal_path,
        previous,
        warnings,
    })
}

/// What was not given again follows the journal's header.
fn from_header(req: &mut MixRequest, header: &Record) -> Result<(), OpenError> {
    let Record::Header {
        commands,
        schedulers,
        repeat,
        period_s,
        sf,
        metrics,
        ..
    } = header
    else {
        return Ok(());
    };
    if req.metrics.is_empty() {
        req.metrics = metrics.clone();
    }
    if req.commands.is_empty() {
        req.commands = commands.clone();
    }
    if req.sf.is_empty() {
        req.sf = sf.clone();
    }
    req.schedulers.get_or_insert_with(|| schedulers.clone());
    req.repeat.get_or_insert(*repeat);
    if req.period.is_none() {
        let ms = (period_s * 1000.0).round();
        let d = (ms.is_finite() && ms >= 0.0).then(|| Duration::from_millis(ms as u64));
        match d {
            Some(d) if pinsight_model::interval::is_interval(d) => req.period = Some(d),
            _ => return Err(OpenError::JournalPeriod { ms }),
        }
    }
    Ok(())
}

/// The experiment `req` describes, checked.
fn spec_of(req: &MixRequest) -> Result<MixSpec, OpenError> {
    let period = req.period.unwrap_or(Duration::from_millis(200));
    let repeat = req.repeat.unwrap_or(3);
    if repeat == 0 || repeat > 1000 {
        return Err(OpenError::Repeat(repeat));
    }
    let names: Vec<String> = match &req.schedulers {
        Some(s) => s.clone(),
        None => ["os", "aarr", "to", "acfs"].map(String::from).to_vec(),
    };
    let schedulers = Policy::list(names.iter().map(String::as_str), period.as_secs_f64())
        .map_err(|e| OpenError::UnknownScheduler(e.0))?;
    if req.commands.is_empty() {
        return Err(OpenError::NoPrograms);
    }
    if let Some(c) = req.commands.iter().find(|c| c.trim().is_empty()) {
        return Err(OpenError::EmptyProgram(c.clone()));
    }
    let spec = MixSpec {
        commands: req.commands.clone(),
        schedulers,
        repeat,
        period,
        capacity: req.capacity.clone(),
        sf: given_sf(&req.sf)?,
        sf_specs: req.sf.clone(),
        metrics: req.metrics.clone(),
    };
    for (t, _) in spec.sf.entries() {
        let known = match t {
            SfTarget::Position(p) => *p <= spec.commands.len(),
            SfTarget::Name(n) => (0..spec.commands.len()).any(|i| &spec.base_name(i) == n),
        };
        if !known {
            let names = (0..spec.commands.len())
                .map(|i| spec.base_name(i))
                .collect();
            return Err(OpenError::SfTarget {
                target: t.clone(),
                names,
            });
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(input: Input) -> &'static str {
        match input {
            Input::Schedulers => "-s",
            Input::Repeat => "-r",
            Input::Sf => "-f",
            Input::Journal => "-j",
            Input::Resume => "-R",
        }
    }

    #[test]
    fn a_refusal_names_the_input_at_fault() {
        let e = given_sf(&["a=x".to_string()]).unwrap_err();
        let named = e.named(&flag).unwrap();
        assert!(named.starts_with("-f 'a=x': "), "{named}");
        let exists = OpenError::JournalExists {
            path: "j.jsonl".into(),
        };
        assert_eq!(
            exists.named(&flag).unwrap(),
            "-j j.jsonl: exists; continue it with -R j.jsonl, or choose another -j"
        );
        assert_eq!(
            OpenError::Repeat(0).named(&flag).unwrap(),
            "-r 0: between 1 and 1000"
        );
        assert_eq!(
            OpenError::UnknownScheduler("fifo".into())
                .named(&flag)
                .unwrap(),
            "-s: 'fifo' is not a scheduler (allowed: os, aarr, to, acfs)"
        );
        assert_eq!(OpenError::NoPrograms.named(&flag), None);
        assert!(exists.is_usage() && OpenError::NoPrograms.is_usage());
    }
}
