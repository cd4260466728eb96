//! The live runner of `pinsight tune`: runs a small design of
//! configurations (P-cores, E-cores, SMT siblings) through compare's
//! machinery — the same plans and thread-count export, the same crash-proof
//! journal, interleaved blocks, resume, Ctrl-C safety — fits the model
//! (`pinsight-tune-model`) to choose the best predicted configurations not
//! measured, and runs those to check the prediction.
//!
//! One entry point: [`TuneSession::open`], then [`TuneSession::run`]. The
//! analysis (fit, predictions, recommendation) and all wording belong to
//! the caller; this crate returns measurements ([`Finished`]). The views
//! of `tune` and `model` (text and SVG, each dialect's line) are in
//! [`view`].
//!
//! # Journals
//!
//! Two compare journals. The design journal (the path the caller chose)
//! has `"kind": "tune"`; once the design is complete, the validation runs
//! go to `<stem>.validate.jsonl` next to it (`"kind": "tune-validate"`),
//! whose header names the design journal. Each header's `extension` holds
//! the [`Identity`]: the machine as the model sees it, every arm's
//! configuration, pinned or not, the CPUs tuned on. Resuming either journal
//! continues the tune where it stopped: the design's missing runs, then the
//! fit (deterministic: seeded, from the journal on disk in slot order), then
//! the validation journal (resumed if it exists). A resumed tune journals
//! the same runs and chooses the same validation configurations as an
//! uninterrupted one.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod live;
pub mod sim;
pub mod view;

use pinsight_compare::experiment::{Executor, Gate, Outcome, SwitchError};
use pinsight_compare::program_metric::{Better, MetricSpec};
use pinsight_compare::session::{self, ExecutorChoice, JournalTarget, Session, SessionError};
use pinsight_compare::setup::{Extension, Request};
use pinsight_compare::{
    journal::Header, journal::Journal, journal::NotApplicable, journal::RunLine,
};
use pinsight_compare::{Phase, Slot};
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::journal::JournalError;
use pinsight_model::Topology;
use pinsight_plan::tune::{TuneLayout, TuneLayoutError};
use pinsight_plan::Policy;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use pinsight_tune_model::{Config, FitError, FitOptions, Machine, Observation};
use serde::{Deserialize, Serialize};
use sim::{SimExecutor, SimSpec, SimSpecError};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// [`Header::kind`] of a design journal.
pub const KIND_DESIGN: &str = "tune";
/// [`Header::kind`] of a validation journal.
pub const KIND_VALIDATION: &str = "tune-validate";

/// What to tune.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneRequest {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// CPUs to tune on (usually the usable CPUs this process may run on).
    pub within: CpuSet,
    /// Measured runs per configuration.
    pub runs: usize,
    /// Warm-up runs per configuration.
    pub warmup: usize,
    /// Seed of the run order (and of the fit choosing the validation).
    pub seed: u64,
    pub timeout: Option<Duration>,
    /// Pin thread i to the configuration's i-th CPU (`cpus:LIST`) rather
    /// than letting threads float in its CPUs (`cpus-set:LIST`).
    pub pinned: bool,
    /// Stop starting runs that would exceed this (measured run time of
    /// this invocation); every design configuration still gets one run.
    pub budget: Option<Duration>,
    /// Validation configurations to run (the best predicted ones not
    /// measured); 0: none.
    pub validate: usize,
    /// A program metric to optimise instead of wall time (`--metric`):
    /// read from every run's output; a higher-is-better rate r becomes the
    /// time-like cost 1/r (time per unit of work) the model fits.
    pub metric: Option<MetricSpec>,
    /// A run is disturbed when other work (or the hypervisor) took more
    /// than this share of one of its CPUs (compare's
    /// `--disturbance-threshold`).
    pub disturbance_threshold: f64,
    /// Run a disturbed run again, up to this many times (compare's
    /// `--rerun-disturbed`; a resume counts the journal's attempts).
    pub rerun_disturbed: usize,
}

impl TuneRequest {
    /// `command` tuned on `within` as `pinsight tune` does without flags:
    /// 3 runs and 1 warm-up per configuration, the fit's default seed,
    /// threads floating in each configuration's CPUs, no timeout or
    /// budget, 2 validation configurations, wall time as the cost, and
    /// compare's disturbance threshold with no reruns.
    pub fn new(command: Vec<String>, within: CpuSet) -> TuneRequest {
        TuneRequest {
            command,
            within,
            runs: 3,
            warmup: 1,
            seed: FitOptions::default().seed,
            timeout: None,
            pinned: false,
            budget: None,
            validate: 2,
            metric: None,
            disturbance_threshold: pinsight_measure::disturbance::DEFAULT_THRESHOLD,
            rerun_disturbed: 0,
        }
    }
}

/// Where the design journal goes.
#[derive(Clone, Debug)]
pub enum TuneJournal {
    /// A new journal at this path (refused if it exists).
    New(PathBuf),
    /// A new journal `{stem_prefix}{UTC stamp}[-N].jsonl` in `dir`.
    Unique { dir: PathBuf, stem_prefix: String },
    /// Continue this tune: its design journal or its validation journal.
    Resume(PathBuf),
}

/// What runs the programs.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecutorKind {
    /// This machine (compare's live executor).
    Live,
    /// Nothing runs: times from a known model ([`sim`]).
    Simulated(SimSpec),
}

/// TEST ONLY, deliberately not in any help: `PINSIGHT_TEST_TUNE_SIM=SPEC`
/// (`model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1`, see
/// [`sim`]) runs nothing and journals times computed from that model for
/// each configuration: hyperfine's mock-executor idea, so a whole front
/// end (design, journal, resume, validation, words) is tested
/// deterministically.
pub const TEST_SIM: &str = "PINSIGHT_TEST_TUNE_SIM";

/// [`TEST_SIM`] is set but its spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{TEST_SIM}: {0}")]
pub struct TestSimError(#[from] pub SimSpecError);

impl ExecutorKind {
    /// [`ExecutorKind::Simulated`] when [`TEST_SIM`] is set, else live.
    pub fn from_env() -> Result<ExecutorKind, TestSimError> {
        match std::env::var(TEST_SIM) {
            Ok(spec) => Ok(ExecutorKind::Simulated(spec.parse()?)),
            Err(_) => Ok(ExecutorKind::Live),
        }
    }
}

/// Everything a tune needs from its front end.
pub struct TuneConfig<'a> {
    pub request: TuneRequest,
    pub topology: &'a Topology,
    /// Where the measurement files (RAPL, cpufreq) are read.
    pub measure_fs: FsRoot,
    pub journal: TuneJournal,
    pub show_output: bool,
    /// Which environment variables the user already set.
    pub is_env_set: &'a dyn Fn(&str) -> bool,
    pub executor: ExecutorKind,
}

/// The two stages of a tune.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The design configurations, to fit the model.
    Design,
    /// The best predicted configurations not measured, to check it.
    Validation,
}

impl Stage {
    /// The task progress shows while the stage runs.
    pub fn task(self) -> &'static str {
        match self {
            Stage::Design => "tune design",
            Stage::Validation => "tune check",
        }
    }
}

/// One arm of a tune journal: its compare arm id and configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmConfig {
    pub p: u32,
    pub e: u32,
    pub smt: u32,
}

impl From<Config> for ArmConfig {
    fn from(c: Config) -> Self {
        ArmConfig {
            p: c.p,
            e: c.e,
            smt: c.smt,
        }
    }
}

impl From<ArmConfig> for Config {
    fn from(c: ArmConfig) -> Self {
        Config::new(c.p, c.e, c.smt)
    }
}

/// The machine as the model sees it (a readable copy of [`Machine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineCounts {
    pub p_cores: u32,
    pub e_cores: u32,
    pub smt_per_p_core: u32,
    pub smt_per_e_core: u32,
}

impl From<Machine> for MachineCounts {
    fn from(m: Machine) -> Self {
        MachineCounts {
            p_cores: m.p_cores,
            e_cores: m.e_cores,
            smt_per_p_core: m.smt_per_p_core,
            smt_per_e_core: m.smt_per_e_core,
        }
    }
}

/// A tune journal's identity ([`Header::extension`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    pub stage: Stage,
    pub machine: MachineCounts,
    /// [`TuneLayout::describe`].
    pub layout: String,
    /// CPUs tuned on.
    pub within: CpuSet,
    pub pinned: bool,
    /// (arm id, configuration) in request order.
    pub arms: Vec<(String, ArmConfig)>,
    /// Validation journal: the design journal's file name (same directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design_journal: Option<String>,
}

impl Identity {
    /// The identity in `header`, if it is a tune journal's.
    pub fn of(header: &Header) -> Option<Identity> {
        match header.kind.as_deref() {
            Some(KIND_DESIGN | KIND_VALIDATION) => {
                serde_json::from_value(header.extension.clone()?).ok()
            }
            _ => None,
        }
    }

    fn config_of(&self, arm: &str) -> Option<Config> {
        self.arms
            .iter()
            .find(|(id, _)| id == arm)
            .map(|(_, c)| Config::from(*c))
    }
}

/// Why a tune cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error(transparent)]
    Layout(#[from] TuneLayoutError),
    /// The machine allows no configuration.
    #[error("no configuration to run on {layout}")]
    EmptyDesign { layout: String },
    /// The journal to resume is not a tune journal.
    #[error("cannot resume {}: it is {}, not a tune", path.display(),
        kind.as_deref().map_or("a compare experiment".to_string(), |k| format!("a {k} experiment")))]
    NotTune { path: PathBuf, kind: Option<String> },
    /// A tune journal whose identity cannot be read.
    #[error("cannot resume {}: its tune identity is missing or unreadable", path.display())]
    BadIdentity { path: PathBuf },
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// Compare's machinery refused (setup, journal, different experiment).
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Runs of one configuration not started because of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetCut {
    pub stage: Stage,
    pub config: Config,
    pub runs: usize,
}

/// Whether the measured runs carry energy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Energy {
    /// Every measured run has a package energy (RAPL).
    Available,
    /// Not every run has one: the first reason given.
    Unavailable { reason: String },
}

/// How far a tune got.
#[derive(Debug)]
pub struct Finished {
    pub layout: TuneLayout,
    /// Configurations of the design, in request order.
    pub design: Vec<Config>,
    /// One observation per successful measured design run, in run order.
    pub design_runs: Vec<Observation>,
    /// Validation configurations (empty when none was chosen or run).
    pub validation: Vec<Config>,
    pub validation_runs: Vec<Observation>,
    /// The stage that ran last, and how it ended.
    pub stage: Stage,
    pub outcome: Outcome,
    /// The signal that interrupted the tune, if one did.
    pub signal: Option<i32>,
    /// True when both stages ran every run (budget cuts make it false).
    pub complete: bool,
    /// The design journal; resuming it continues this tune.
    pub journal: PathBuf,
    pub validation_journal: Option<PathBuf>,
    /// Configurations of the design this machine could not run.
    pub not_applicable: Vec<NotApplicable>,
    pub budget_cuts: Vec<BudgetCut>,
    /// What else the caller should say (layout notes, why no validation).
    pub notes: Vec<String>,
    pub energy: Energy,
    /// Restoring the machine (governor) failed.
    pub restore_failed: Option<SwitchError>,
    /// After an interruption, the signal cleanup did not report back in time.
    pub cleanup_late: bool,
}

impl Finished {
    /// The journal to resume when the tune did not finish every run.
    pub fn resume(&self) -> Option<&Path> {
        (!self.complete).then_some(self.journal.as_path())
    }
}

/// A tune ready to run (its design journal open).
pub struct TuneSession<'a> {
    cfg: Shared<'a>,
    layout: TuneLayout,
    design: Vec<Config>,
    journal: PathBuf,
    session: Session,
    identity: Identity,
    previous: Vec<RunLine>,
}

/// What both stages need from the configuration.
struct Shared<'a> {
    request: TuneRequest,
    topology: &'a Topology,
    measure_fs: FsRoot,
    show_output: bool,
    is_env_set: &'a dyn Fn(&str) -> bool,
    executor: ExecutorKind,
}

/// The request a tune journal was made with (to resume it without
/// repeating the command line): the design journal's, also when given
/// the validation journal. `budget` is None and `validate` 2: neither is
/// journaled.
pub fn read_request(path: &Path) -> Result<TuneRequest, TuneError> {
    let (_, journal) = design_journal(path)?;
    let h = &journal.header;
    let id = Identity::of(h).ok_or_else(|| TuneError::BadIdentity { path: path.into() })?;
    // The budget, the validation and the disturbance rule are not part of
    // the experiment: each invocation gives its own (else the defaults).
    Ok(TuneRequest {
        runs: h.runs,
        warmup: h.warmup,
        seed: h.seed,
        timeout: h.timeout_s.map(Duration::from_secs_f64),
        pinned: id.pinned,
        metric: h.metrics.first().cloned(),
        ..TuneRequest::new(h.command.clone(), id.within)
    })
}

/// The design journal of the tune journal at `path`, read.
fn design_journal(path: &Path) -> Result<(PathBuf, Journal), TuneError> {
    let journal = Journal::read(path)?;
    match journal.header.kind.as_deref() {
        Some(KIND_DESIGN) => Ok((path.to_path_buf(), journal)),
        Some(KIND_VALIDATION) => {
            let id = Identity::of(&journal.header)
                .and_then(|i| i.design_journal)
                .ok_or_else(|| TuneError::BadIdentity { path: path.into() })?;
            let design = path.with_file_name(id);
            let j = Journal::read(&design)?;
            if j.header.kind.as_deref() != Some(KIND_DESIGN) {
                return Err(TuneError::NotTune {
                    path: design,
                    kind: j.header.kind,
                });
            }
            Ok((design, j))
        }
        _ => Err(TuneError::NotTune {
            path: path.into(),
            kind: journal.header.kind,
        }),
    }
}

/// `<stem>.validate.jsonl` next to the design journal.
pub fn validation_path(design: &Path) -> PathBuf {
    let stem = design
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    design.with_file_name(format!("{stem}.validate.jsonl"))
}

impl<'a> TuneSession<'a> {
    /// Lays the machine out, chooses the design and opens (or resumes)
    /// the design journal; nothing runs yet.
    pub fn open(cfg: TuneConfig<'a>) -> Result<TuneSession<'a>, TuneError> {
        let layout = TuneLayout::new(cfg.topology, &cfg.request.within)?;
        let design = pinsight_tune_model::design(&layout.machine);
        if design.is_empty() {
            return Err(TuneError::EmptyDesign {
                layout: layout.describe(),
            });
        }
        let shared = Shared {
            request: cfg.request,
            topology: cfg.topology,
            measure_fs: cfg.measure_fs,
            show_output: cfg.show_output,
            is_env_set: cfg.is_env_set,
            executor: cfg.executor,
        };
        let target = match cfg.journal {
            TuneJournal::New(p) => JournalTarget::New(p),
            TuneJournal::Unique { dir, stem_prefix } => JournalTarget::Unique { dir, stem_prefix },
            TuneJournal::Resume(p) => {
                let (path, previous) = design_journal(&p)?;
                JournalTarget::Resume {
                    path,
                    previous: Box::new(previous),
                }
            }
        };
        let previous = match &target {
            JournalTarget::Resume { previous, .. } => previous.runs.clone(),
            _ => Vec::new(),
        };
        let (session, identity) =
            open_stage(&shared, &layout, &design, Stage::Design, target, None)?;
        Ok(TuneSession {
            journal: session.journal_path().to_path_buf(),
            cfg: shared,
            layout,
            design,
            session,
            identity,
            previous,
        })
    }

    pub fn layout(&self) -> &TuneLayout {
        &self.layout
    }

    /// The design configurations, in request order.
    pub fn design(&self) -> &[Config] {
        &self.design
    }

    /// The design journal.
    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// Lines of the resumed design journal that were dropped (a fragment
    /// cut by a crash), as sentences.
    pub fn journal_warnings(&self) -> &[String] {
        self.session.journal_warnings()
    }

    /// The design journal's header (the resumed one's when resuming).
    pub fn header(&self) -> &Header {
        self.session.header()
    }

    /// Design runs in all, and those already journaled.
    pub fn progress(&self) -> (usize, usize) {
        self.session.progress()
    }

    /// Runs the design, fits, runs the validation; restores the machine.
    /// `progress` sees two tasks, "tune design" and "tune check" (the
    /// validation), one step per run named by its configuration.
    pub fn run(self, progress: &mut dyn Progress) -> Result<Finished, TuneError> {
        self.run_until(progress, &|| false)
    }

    /// [`TuneSession::run`] that also stops, as on Ctrl-C, when `stop`
    /// says so (polled between runs).
    pub fn run_until(
        self,
        progress: &mut dyn Progress,
        stop: &dyn Fn() -> bool,
    ) -> Result<Finished, TuneError> {
        let TuneSession {
            cfg,
            layout,
            design,
            journal,
            session,
            identity,
            previous,
        } = self;
        let mut budget = Budget::new(cfg.request.budget);
        let not_applicable = session.header().not_applicable.clone();
        let first = Self::run_stage(
            session,
            Stage::Design,
            &identity,
            &previous,
            &mut budget,
            progress,
            stop,
        )?;
        let design_journal = Journal::read(&journal)?;
        let metric = design_journal.header.metrics.first().cloned();
        let design_runs = observations(&design_journal.runs, &identity, metric.as_ref());
        let mut notes = layout.notes.clone();
        notes.extend(first.report.virtual_machine.clone());
        notes.extend(disturbance_note("design", &first.report));
        notes.extend(metric.as_ref().map(Self::objective_note));
        let mut energy = energy_of(&design_journal.runs);
        let mut out =
            Self::design_ended(layout, design, design_runs, journal, not_applicable, first);
        let design_complete = budget.cuts.is_empty();
        if !matches!(out.outcome, Outcome::Complete) {
            budget.finish_into(&mut out, notes, energy);
            return Ok(out);
        }
        // The validation: the best predicted configurations not measured,
        // from a seeded fit of the journal on disk.
        let chosen = choose_validation(
            &out.design_runs,
            &out.layout.machine,
            cfg.request.validate,
            cfg.request.seed,
        )
        .unwrap_or_else(|why| {
            notes.push(why);
            Vec::new()
        });
        if chosen.is_empty() {
            out.complete = design_complete;
            budget.finish_into(&mut out, notes, energy);
            return Ok(out);
        }
        let (vsession, videntity, vpath, vprevious) = Self::open_validation(&cfg, &out, &chosen)?;
        budget.predict(&design_journal.runs, &identity, &chosen, cfg.request.seed);
        let second = Self::run_stage(
            vsession,
            Stage::Validation,
            &videntity,
            &vprevious,
            &mut budget,
            progress,
            stop,
        )?;
        notes.extend(disturbance_note("validation", &second.report));
        let vjournal = Journal::read(&vpath)?;
        out.validation_runs = observations(&vjournal.runs, &videntity, metric.as_ref());
        if energy == Energy::Available {
            energy = energy_of(&vjournal.runs);
        }
        out.validation = chosen;
        out.validation_journal = Some(vpath);
        Self::validation_ended(&mut out, second, budget.cuts.is_empty());
        budget.finish_into(&mut out, notes, energy);
        Ok(out)
    }

    /// Runs one stage's session under its gate (the budget), as the
    /// progress task of `stage`.
    fn run_stage(
        session: Session,
        stage: Stage,
        identity: &Identity,
        previous: &[RunLine],
        budget: &mut Budget,
        progress: &mut dyn Progress,
        stop: &dyn Fn() -> bool,
    ) -> Result<session::Finished, TuneError> {
        let (total, done) = session.progress();
        progress.begin(stage.task(), total as u64, done as u64);
        let mut gate = StageGate::new(identity, previous, budget, stage);
        let run = session.run_until(progress, &mut gate, stop);
        progress.end();
        Ok(run?)
    }

    /// The note that says what the objective `m` is and how it is fitted.
    fn objective_note(m: &MetricSpec) -> String {
        match m.better {
            Better::Higher => format!(
                "objective: {} (higher is better), read from each run's output and fitted as its inverse 1/{} (time per unit of work); \
                 the times shown are that inverse, in {}",
                m.name,
                m.name,
                inverse_unit(&m.unit)
            ),
            Better::Lower => format!(
                "objective: {} (lower is better), read from each run's output; the times shown are {}",
                m.name,
                if m.unit.is_empty() { "its values" } else { &m.unit }
            ),
        }
    }

    /// How the tune stands once the design stage `first` ended.
    fn design_ended(
        layout: TuneLayout,
        design: Vec<Config>,
        design_runs: Vec<Observation>,
        journal: PathBuf,
        not_applicable: Vec<NotApplicable>,
        first: session::Finished,
    ) -> Finished {
        Finished {
            layout,
            design,
            design_runs,
            validation: Vec::new(),
            validation_runs: Vec::new(),
            stage: Stage::Design,
            complete: false,
            journal,
            validation_journal: None,
            not_applicable,
            budget_cuts: Vec::new(),
            notes: Vec::new(),
            energy: Energy::Available,
            restore_failed: first.restore_failed,
            cleanup_late: first.cleanup_late,
            signal: first.signal,
            outcome: first.outcome,
        }
    }

    /// Opens the validation stage of `chosen` after the design in `out`:
    /// its session and arms' identity, its journal (beside the design's,
    /// resumed when it exists) and the runs that journal already holds.
    fn open_validation(
        cfg: &Shared,
        out: &Finished,
        chosen: &[Config],
    ) -> Result<(Session, Identity, PathBuf, Vec<RunLine>), TuneError> {
        let vpath = validation_path(&out.journal);
        let target = if vpath.exists() {
            JournalTarget::Resume {
                previous: Box::new(Journal::read(&vpath)?),
                path: vpath.clone(),
            }
        } else {
            JournalTarget::New(vpath.clone())
        };
        let vprevious = match &target {
            JournalTarget::Resume { previous, .. } => previous.runs.clone(),
            _ => Vec::new(),
        };
        let design_name = out
            .journal
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let (vsession, videntity) = open_stage(
            cfg,
            &out.layout,
            chosen,
            Stage::Validation,
            target,
            design_name,
        )?;
        Ok((vsession, videntity, vpath, vprevious))
    }

    /// How the tune ended after the validation stage `second` (`in_budget`:
    /// no run was cut).
    fn validation_ended(out: &mut Finished, second: session::Finished, in_budget: bool) {
        out.stage = Stage::Validation;
        out.complete = matches!(second.outcome, Outcome::Complete) && in_budget;
        out.outcome = second.outcome;
        out.signal = second.signal;
        out.restore_failed = out.restore_failed.take().or(second.restore_failed);
        out.cleanup_late |= second.cleanup_late;
    }
}

/// The stage's disturbance, when some run was disturbed (a fit over
/// disturbed runs recommends from noise) or rerun because it was.
fn disturbance_note(stage: &str, report: &pinsight_compare::Report) -> Option<String> {
    let d = report.disturbance.as_ref()?;
    let note = match d.note() {
        Some(n) => n,
        None if d.rerun > 0 => format!(
            "{} disturbed run{} rerun, none left disturbed",
            d.rerun,
            if d.rerun == 1 { " was" } else { "s were" }
        ),
        None => return None,
    };
    Some(format!("{stage} runs: {note}"))
}

/// The validation configurations: `n` best predicted by a seeded fit
/// (no bootstrap: only the point estimates rank) that were not measured
/// (nor extrapolated, unless every configuration is),
/// ranked as [`pinsight_tune_model::validation`] ranks them (time, then
/// fewer threads, then the order of [`Machine::configs`]). `Err`: why
/// there is none, in words.
pub fn choose_validation(
    runs: &[Observation],
    machine: &Machine,
    n: usize,
    seed: u64,
) -> Result<Vec<Config>, String> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let fit = pinsight_tune_model::fit(runs, FitOptions { bootstrap: 0, seed })
        .map_err(|e: FitError| format!("no validation runs: the model cannot be fitted ({e})"))?;
    let mut all: Vec<(Config, f64)> = machine
        .configs()
        .into_iter()
        .map(|c| (c, fit.model.time(&fit.theta, c)))
        .filter(|(_, t)| t.is_finite())
        .collect();
    // Check what the analysis may recommend: configurations predicted from
    // measured dimensions, when there are any.
    if all
        .iter()
        .any(|(c, _)| !pinsight_tune_model::extrapolated(&fit, *c))
    {
        all.retain(|(c, _)| !pinsight_tune_model::extrapolated(&fit, *c));
    }
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.threads().cmp(&b.0.threads())));
    let chosen: Vec<Config> = all
        .into_iter()
        .map(|(c, _)| c)
        .filter(|c| !runs.iter().any(|o| o.config == *c))
        .take(n)
        .collect();
    if chosen.is_empty() {
        return Err(
            "no validation runs: every configuration this machine allows was measured".into(),
        );
    }
    Ok(chosen)
}

/// Opens compare's session for one stage.
fn open_stage(
    cfg: &Shared,
    layout: &TuneLayout,
    configs: &[Config],
    stage: Stage,
    target: JournalTarget,
    design_journal: Option<String>,
) -> Result<(Session, Identity), TuneError> {
    let r = &cfg.request;
    let mut policies = Vec::new();
    let mut arms = Vec::new();
    for &c in configs {
        let text = layout.policy(c, r.pinned)?;
        // The arm id is the policy's canonical text, as compare names arms.
        let id = Policy::from_str(&text)
            .map(|p| p.to_string())
            .unwrap_or_else(|_| text.clone());
        policies.push(text);
        arms.push((id, ArmConfig::from(c)));
    }
    let identity = Identity {
        stage,
        machine: layout.machine.into(),
        layout: layout.describe(),
        within: r.within.clone(),
        pinned: r.pinned,
        arms,
        design_journal,
    };
    let ext = Extension {
        arm_threads: Some(configs.iter().map(|c| c.threads() as usize).collect()),
        kind: Some(
            match stage {
                Stage::Design => KIND_DESIGN,
                Stage::Validation => KIND_VALIDATION,
            }
            .to_string(),
        ),
        extension: Some(serde_json::to_value(&identity).expect("identity serialises")),
        ..Extension::default()
    };
    let request = Request {
        runs: r.runs,
        warmup: r.warmup,
        seed: r.seed,
        timeout: r.timeout,
        metrics: r.metric.iter().cloned().collect(),
        ..Request::new(r.command.clone(), policies)
    };
    let executor = match &cfg.executor {
        ExecutorKind::Live => ExecutorChoice::Live,
        ExecutorKind::Simulated(spec) => {
            let spec = *spec;
            let id = identity.clone();
            let make: session::MakeExecutor = Box::new(move |h: &Header| {
                let arms = h
                    .arms
                    .iter()
                    .map(|a| {
                        // The header is this identity's (new) or passed the
                        // identity check (resume): every arm is in it.
                        id.config_of(&a.id)
                            .expect("every arm of a tune header is in its identity")
                    })
                    .collect();
                Box::new(SimExecutor::new(spec, arms)) as Box<dyn Executor>
            });
            ExecutorChoice::Custom(make)
        }
    };
    let session = Session::open_with(
        session::Config {
            request,
            topology: cfg.topology,
            measure_fs: cfg.measure_fs.clone(),
            journal: target,
            show_output: cfg.show_output,
            ignore_failure: false,
            disturbance_threshold: r.disturbance_threshold,
            rerun_disturbed: r.rerun_disturbed,
            is_env_set: cfg.is_env_set,
        },
        &ext,
        executor,
    )?;
    Ok((session, identity))
}

/// The latest line of every slot, in slot order (a retried slot counts
/// once, as its last attempt).
fn latest(runs: &[RunLine]) -> Vec<&RunLine> {
    let mut by_slot: BTreeMap<usize, &RunLine> = BTreeMap::new();
    for r in runs {
        by_slot.insert(r.slot, r);
    }
    by_slot.into_values().collect()
}

/// One observation per successful measured run, in slot order. With a
/// program metric (the journal header's first), its time is the metric's
/// time-like cost ([`metric_cost`]); a run without the figure is left out.
fn observations(runs: &[RunLine], id: &Identity, metric: Option<&MetricSpec>) -> Vec<Observation> {
    latest(runs)
        .into_iter()
        .filter(|r| r.phase == Phase::Measured && r.failure().is_none())
        .filter_map(|r| {
            let time_s = match metric {
                None => r.record.wall_s,
                Some(m) => metric_cost(m, r.metrics.get(&m.name)?.get()?)?,
            };
            Some(Observation {
                config: id.config_of(&r.arm)?,
                time_s,
                energy_j: r.record.energy.energy_pkg_j.get(),
            })
        })
        .collect()
}

/// `events/s` → `s/events`; `MIPS` → `1/MIPS`.
fn inverse_unit(unit: &str) -> String {
    match unit.split_once('/') {
        Some((a, b)) => format!("{b}/{a}"),
        None if unit.is_empty() => "1/value".into(),
        None => format!("1/{unit}"),
    }
}

/// A program metric's value as the cost the model minimises where it
/// expects a time: a lower-is-better figure as it is (a time, a
/// latency); a higher-is-better rate r as 1/r, the time one unit of work
/// takes (Hennessy & Patterson's performance = 1 / execution time).
/// None for a value that cannot be a cost (0 or negative).
pub fn metric_cost(m: &MetricSpec, value: f64) -> Option<f64> {
    (value.is_finite() && value > 0.0).then(|| match m.better {
        Better::Higher => 1.0 / value,
        Better::Lower => value,
    })
}

/// Whether every successful measured run has a package energy.
fn energy_of(runs: &[RunLine]) -> Energy {
    for r in latest(runs) {
        if r.phase != Phase::Measured || r.failure().is_some() {
            continue;
        }
        if let pinsight_measure::Metric::Unavailable { reason } = &r.record.energy.energy_pkg_j {
            return Energy::Unavailable {
                reason: reason.clone(),
            };
        }
    }
    Energy::Available
}

/// The run budget: measured run time of this invocation against the limit.
struct Budget {
    limit_s: Option<f64>,
    spent_s: f64,
    /// Sum and count of the known run times of each configuration.
    known: HashMap<Config, (f64, usize)>,
    /// Configurations with a successful measured run.
    measured: HashMap<Config, usize>,
    /// Predicted time of validation configurations not yet run.
    predicted: HashMap<Config, f64>,
    cuts: BTreeMap<(Stage, Config), usize>,
}

impl Budget {
    fn new(limit: Option<Duration>) -> Budget {
        Budget {
            limit_s: limit.map(|d| d.as_secs_f64()),
            spent_s: 0.0,
            known: HashMap::new(),
            measured: HashMap::new(),
            predicted: HashMap::new(),
            cuts: BTreeMap::new(),
        }
    }

    fn learn(&mut self, c: Config, line: &RunLine) {
        let k = self.known.entry(c).or_insert((0.0, 0));
        k.0 += line.record.wall_s;
        k.1 += 1;
        if line.phase == Phase::Measured && line.failure().is_none() {
            *self.measured.entry(c).or_insert(0) += 1;
        }
    }

    /// A fit of the journal's measured wall times predicts validation
    /// configurations' run times until they have run (no bootstrap: point
    /// estimates). Wall times, never the objective: with `--metric` the
    /// model of the objective is in cost units (1/rate), not seconds, and
    /// a fixed-duration program's wall time does not follow its rate.
    fn predict(&mut self, journal: &[RunLine], id: &Identity, configs: &[Config], seed: u64) {
        if self.limit_s.is_none() {
            return;
        }
        let walls = observations(journal, id, None);
        if let Ok(fit) = pinsight_tune_model::fit(&walls, FitOptions { bootstrap: 0, seed }) {
            for &c in configs {
                self.predicted.insert(c, fit.model.time(&fit.theta, c));
            }
        }
    }

    fn estimate(&self, c: Config) -> f64 {
        if let Some((sum, n)) = self.known.get(&c).filter(|k| k.1 > 0) {
            return sum / *n as f64;
        }
        if let Some(t) = self.predicted.get(&c) {
            return *t;
        }
        let (sum, n) = self
            .known
            .values()
            .fold((0.0, 0), |(s, n), (a, b)| (s + a, n + b));
        if n == 0 {
            0.0
        } else {
            sum / n as f64
        }
    }

    /// Whether to start a run of `c` now.
    fn allows(&mut self, stage: Stage, slot: &Slot, c: Config) -> bool {
        let Some(limit) = self.limit_s else {
            return true;
        };
        let first = stage == Stage::Design
            && slot.phase == Phase::Measured
            && !self.measured.contains_key(&c);
        if first || self.spent_s + self.estimate(c) <= limit {
            return true;
        }
        *self.cuts.entry((stage, c)).or_insert(0) += 1;
        false
    }

    fn finish_into(self, out: &mut Finished, mut notes: Vec<String>, energy: Energy) {
        out.budget_cuts = self
            .cuts
            .iter()
            .map(|(&(stage, config), &runs)| BudgetCut {
                stage,
                config,
                runs,
            })
            .collect();
        if !out.budget_cuts.is_empty() {
            out.complete = false;
            let n: usize = out.budget_cuts.iter().map(|c| c.runs).sum();
            let what: Vec<String> = out
                .budget_cuts
                .iter()
                .map(|c| {
                    let stage = match c.stage {
                        Stage::Design => "design",
                        Stage::Validation => "validation",
                    };
                    format!("{} ({stage}) {}×", c.config, c.runs)
                })
                .collect();
            notes.push(format!(
                "budget: {n} run{} not started: {}; resuming the journal runs them",
                if n == 1 { "" } else { "s" },
                what.join(", ")
            ));
        }
        out.notes = notes;
        out.energy = energy;
    }
}

/// Compare's gate for one stage: keeps the budget, names arms by their
/// configuration.
struct StageGate<'b> {
    id: &'b Identity,
    budget: &'b mut Budget,
    stage: Stage,
}

impl<'b> StageGate<'b> {
    fn new(
        id: &'b Identity,
        previous: &[RunLine],
        budget: &'b mut Budget,
        stage: Stage,
    ) -> StageGate<'b> {
        for r in previous {
            if let Some(c) = id.config_of(&r.arm) {
                budget.learn(c, r);
            }
        }
        StageGate { id, budget, stage }
    }
}

impl Gate for StageGate<'_> {
    fn journaled(&mut self, line: &RunLine) {
        if let Some(c) = self.id.config_of(&line.arm) {
            self.budget.spent_s += line.record.wall_s;
            self.budget.learn(c, line);
        }
    }

    fn proceed(&mut self, slot: &Slot, arm: &str) -> bool {
        match self.id.config_of(arm) {
            Some(c) => self.budget.allows(self.stage, slot, c),
            None => true,
        }
    }

    fn label(&self, arm: &str) -> String {
        self.id
            .config_of(arm)
            .map_or_else(|| arm.to_string(), |c| c.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_test_simulation_spec_names_the_variable() {
        let e = TestSimError("f".parse::<SimSpec>().unwrap_err());
        assert!(
            e.to_string().starts_with("PINSIGHT_TEST_TUNE_SIM: 'f': "),
            "{e}"
        );
    }

    #[test]
    fn a_rate_becomes_a_time_like_cost() {
        let parse = |t: &str| pinsight_compare::program_metric::parse(t, &[]).unwrap();
        let rate = &parse("sysbench")[0];
        assert_eq!(metric_cost(rate, 4000.0), Some(1.0 / 4000.0));
        // Twice the rate is half the cost: the model's "faster" is the
        // metric's "better".
        assert!(metric_cost(rate, 8000.0) < metric_cost(rate, 4000.0));
        let time = &parse("hyperfine")[0];
        assert_eq!(metric_cost(time, 0.25), Some(0.25));
        assert_eq!(metric_cost(rate, 0.0), None, "no cost from a zero rate");
        assert_eq!(inverse_unit("events/s"), "s/events");
        assert_eq!(inverse_unit("MIPS"), "1/MIPS");
    }

    /// A run of `c` of one second (a fixed-duration program) that reads
    /// `rate` events/s.
    fn fixed_run(slot: usize, arm: &str, rate: f64) -> RunLine {
        use pinsight_measure::{Metric, RunRecord};
        RunLine {
            slot,
            arm: arm.into(),
            phase: Phase::Measured,
            rep: 0,
            started_unix: 0.0,
            record: RunRecord {
                user_s: 1.0,
                max_rss_kib: 1,
                max_rss_floor_kib: 1,
                ..RunRecord::exited_ok(1.0 + 0.001 * (slot % 3) as f64, "test")
            },
            ranks: None,
            metrics: [("events/s".to_string(), Metric::Value(rate))].into(),
            output: None,
        }
    }

    #[test]
    fn the_budget_predicts_seconds_from_wall_times_not_the_metrics_cost() {
        let configs = [(1, 0), (2, 0), (4, 0), (1, 1), (2, 2), (4, 4), (0, 2)];
        let id = Identity {
            stage: Stage::Design,
            machine: MachineCounts {
                p_cores: 4,
                e_cores: 4,
                smt_per_p_core: 1,
                smt_per_e_core: 1,
            },
            layout: "test".into(),
            within: CpuSet::default(),
            pinned: true,
            arms: configs
                .iter()
                .map(|&(p, e)| (format!("p{p}e{e}"), ArmConfig { p, e, smt: 0 }))
                .collect(),
            design_journal: None,
        };
        let mut runs = Vec::new();
        for rep in 0..3 {
            for (i, &(p, e)) in configs.iter().enumerate() {
                let rate = 4000.0 * (p as f64 + 0.5 * e as f64) * (1.0 + 0.01 * rep as f64);
                runs.push(fixed_run(
                    rep * configs.len() + i,
                    &format!("p{p}e{e}"),
                    rate,
                ));
            }
        }
        let metric = pinsight_compare::program_metric::parse("sysbench", &[]).unwrap();
        let costs = observations(&runs, &id, metric.first());
        assert!(
            costs.iter().all(|o| o.time_s < 0.01),
            "the objective is 1/rate"
        );
        let mut budget = Budget::new(Some(Duration::from_secs(60)));
        let unmeasured = Config::new(3, 1, 0);
        budget.predict(&runs, &id, &[unmeasured], 1);
        let t = budget.predicted.get(&unmeasured).copied();
        assert!(
            t.is_some_and(|t| (0.8..1.25).contains(&t)),
            "a one-second program is predicted at about one second: {t:?}"
        );
        assert!((0.8..1.25).contains(&budget.estimate(unmeasured)));
    }
}
