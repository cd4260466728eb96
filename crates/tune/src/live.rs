//! The one entry point of a live tune ([`open`]): the request built from
//! what the front end was given (or read back from a journal to resume),
//! the program resolved, the energy source checked for an energy goal, and
//! the design journal opened. [`Live::run`] runs it and ends it
//! ([`LiveOutcome`]); the words of [`Finished::notes_all`] are the only
//! ones this module composes.

use crate::analysis::{Answer, LiveOutcome};
use crate::{ExecutorKind, Finished, TuneConfig, TuneError, TuneJournal, TuneRequest, TuneSession};
use pinsight_lifecycle::exit::SpawnError;
use pinsight_lifecycle::interrupt::shell_quote;
use pinsight_lifecycle::program::Program;
use pinsight_measure::energy::Rapl;
use pinsight_model::Topology;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use pinsight_tune_model::Goal;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How a live tune starts.
#[derive(Clone, Debug)]
pub enum Start {
    /// A new tune of `command`; `None` values take the defaults (3 runs,
    /// 1 warm-up, the fit's default seed).
    New {
        /// The program and its arguments (as text: the journal stores
        /// text, so anything not UTF-8 is replaced).
        command: Vec<OsString>,
        runs: Option<usize>,
        warmup: Option<usize>,
        seed: Option<u64>,
        pinned: bool,
        /// The design journal; `None`: a new `pinsight-tune-STAMP.jsonl`
        /// in the current directory.
        journal: Option<PathBuf>,
        /// Program metrics: the first required one is optimised instead
        /// of wall time (a preset's first figure); none, wall time.
        metrics: Vec<pinsight_compare::program_metric::MetricSpec>,
    },
    /// Continue the tune of this journal (design or validation), with its
    /// own command, runs, warm-ups, seed and placement.
    Resume(PathBuf),
}

/// Everything a live tune needs from its front end.
#[derive(Clone, Debug)]
pub struct LiveRequest {
    pub start: Start,
    /// Stop starting runs after this much measured run time.
    pub budget: Option<Duration>,
    /// Validation configurations; `None`: 2, or the resumed tune's.
    pub validate: Option<usize>,
    /// What the caller will minimise; an energy goal needs RAPL.
    pub goal: Goal,
    pub executor: ExecutorKind,
    /// A run is disturbed over this share of one of its CPUs; `None`:
    /// compare's default (5%).
    pub disturbance_threshold: Option<f64>,
    /// Reruns of a disturbed run; `None`: 0.
    pub rerun_disturbed: Option<usize>,
}

/// Why a live tune cannot start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The journal for a new tune already exists.
    #[error("journal {}: the file exists", path.display())]
    JournalExists { path: PathBuf },
    /// The program cannot be run.
    #[error(transparent)]
    Program(#[from] SpawnError),
    /// The goal needs energy, and this machine cannot measure it.
    #[error("goal {goal} needs the energy of every run, but RAPL is unavailable here ({reason})")]
    NoEnergy { goal: Goal, reason: String },
    #[error(transparent)]
    Tune(#[from] TuneError),
}

/// A live tune ready to run.
pub struct Live<'a> {
    pub session: TuneSession<'a>,
    /// The machine it runs on, as the recommendation is placed.
    pub topology: &'a Topology,
    /// The journal's command, quoted as a shell would read it back.
    pub command_line: String,
    /// Whether the journal's arms pin thread i to CPU i.
    pub pinned: bool,
}

/// Which environment variables the user already set (this process's).
fn env_is_set(name: &str) -> bool {
    std::env::var_os(name).is_some()
}
static ENV_IS_SET: fn(&str) -> bool = env_is_set;

/// Builds the request (or reads it from the journal to resume), resolves
/// the program, checks RAPL for an energy goal and opens the design
/// journal. Nothing runs yet.
pub fn open(
    req: LiveRequest,
    topology: &Topology,
    measure_fs: FsRoot,
) -> Result<Live<'_>, LiveError> {
    let (request, journal) = request_of(&req, topology)?;
    Program::resolve(std::ffi::OsStr::new(&request.command[0]))?;
    let simulated_energy = matches!(&req.executor, ExecutorKind::Simulated(s) if s.power.is_some());
    if req.goal.needs_energy() && !simulated_energy {
        if let Some(reason) = Rapl::discover(&measure_fs).unavailable {
            return Err(LiveError::NoEnergy {
                goal: req.goal,
                reason,
            });
        }
    }
    let session = TuneSession::open(TuneConfig {
        request,
        topology,
        measure_fs,
        journal,
        show_output: false,
        is_env_set: &ENV_IS_SET,
        executor: req.executor,
    })?;
    let header = session.header();
    let command_line = header
        .command
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    let pinned = header.arms.iter().any(|a| a.plan.pinned);
    Ok(Live {
        session,
        topology,
        command_line,
        pinned,
    })
}

impl Live<'_> {
    /// Runs the design and the validation configurations (`progress` as
    /// [`TuneSession::run`] says), restores the machine and ends as
    /// `answer` asks: analysed, or stopped short.
    pub fn run(
        self,
        progress: &mut dyn Progress,
        answer: &Answer,
    ) -> Result<LiveOutcome, TuneError> {
        let finished = self.session.run(progress)?;
        let program = (self.pinned, self.command_line.as_str());
        Ok(finished.outcome(self.topology, program, answer))
    }
}

/// The request and the journal target of `req`.
fn request_of(
    req: &LiveRequest,
    topology: &Topology,
) -> Result<(TuneRequest, TuneJournal), LiveError> {
    match &req.start {
        Start::Resume(path) => {
            let previous = crate::read_request(path)?;
            let request = TuneRequest {
                budget: req.budget,
                validate: req.validate.unwrap_or(previous.validate),
                disturbance_threshold: threshold(req),
                rerun_disturbed: req.rerun_disturbed.unwrap_or(0),
                ..previous
            };
            Ok((request, TuneJournal::Resume(path.clone())))
        }
        Start::New {
            command,
            runs,
            warmup,
            seed,
            pinned,
            journal,
            metrics,
        } => {
            // The CPUs this process may use (taskset, a launcher's
            // binding); a simulated tune runs nothing, so every usable CPU
            // of the (perhaps recorded) machine.
            let own = match &req.executor {
                ExecutorKind::Live => pinsight_compare::command::own_affinity(),
                ExecutorKind::Simulated(_) => None,
            };
            let within = match own {
                Some(mask) => mask.intersection(&topology.usable()),
                None => topology.usable(),
            };
            let command = command.iter().map(|a| a.to_string_lossy().into_owned());
            let d = TuneRequest::new(command.collect(), within);
            let request = TuneRequest {
                runs: runs.unwrap_or(d.runs),
                warmup: warmup.unwrap_or(d.warmup),
                seed: seed.unwrap_or(d.seed),
                pinned: *pinned,
                budget: req.budget,
                validate: req.validate.unwrap_or(d.validate),
                metric: metrics.iter().find(|m| !m.optional).cloned(),
                disturbance_threshold: threshold(req),
                rerun_disturbed: req.rerun_disturbed.unwrap_or(d.rerun_disturbed),
                ..d
            };
            let journal = match journal {
                Some(p) if p.exists() => return Err(LiveError::JournalExists { path: p.clone() }),
                Some(p) => TuneJournal::New(p.clone()),
                None => TuneJournal::Unique {
                    dir: PathBuf::from("."),
                    stem_prefix: "pinsight-tune-".into(),
                },
            };
            Ok((request, journal))
        }
    }
}

/// The disturbance threshold asked for, or compare's default.
fn threshold(req: &LiveRequest) -> f64 {
    req.disturbance_threshold
        .unwrap_or(pinsight_measure::disturbance::DEFAULT_THRESHOLD)
}

impl Finished {
    /// What the caller should say besides the analysis: the tune's notes,
    /// the design configurations this machine cannot run, and the runs the
    /// budget cut.
    pub fn notes_all(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        for na in &self.not_applicable {
            notes.push(format!("{}: not applicable here: {}", na.what, na.reason));
        }
        for cut in &self.budget_cuts {
            notes.push(format!(
                "budget: {} run{} of {} not started",
                cut.runs,
                if cut.runs == 1 { "" } else { "s" },
                cut.config
            ));
        }
        notes
    }
}
