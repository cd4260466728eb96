//! `pinsight mix`: the multi-program experiment of Saez and Prieto-Matias,
//! "Evaluation of the Intel Thread Director technology on an Alder Lake
//! processor" (APSys '22, §5), on the user's own
//! programs, under each scheduler.
//!
//! 1. **Reference runs**: each program alone, pinned to one big CPU, then
//!    alone on one small CPU (`Bᵢ`, `Sᵢ`: wall times, one run each).
//! 2. **Per scheduler**: all programs start together (each `sh -c CMD` in a
//!    process group of its own, on every big and small CPU); each one that
//!    finishes restarts at once, until every program has completed
//!    `repeat` times; the runs still going then are killed and not
//!    counted. A [`Manager`] runs the scheduler over every instance (and
//!    the processes it starts) the whole time.
//! 3. **Metrics** (pinsight-sched-model's one definition,
//!    [`pinsight_sched_model::sim::metrics`]): with `Tᵢ` the geometric mean
//!    of program i's completed runs, slowdown `Tᵢ/Bᵢ`, unfairness, STP,
//!    ANTT, aggregate speedup; 95% Student intervals over the repeats (the
//!    metrics of the j-th completion of every program, j = 1..repeat).
//!
//! Every reference run and completed run is a line of a JSON Lines
//! journal, synced to disk before the next starts; a stopped experiment
//! resumes from it (a scheduler cut short is run again from its start).
//! The file (created exclusively, locked while in use, a cut last line
//! handled one way, every record checked against the header's design) is
//! pinsight-lifecycle's [`pinsight_lifecycle::journal::Journal`].

pub mod document;
mod open;

pub use open::{given_sf, open, Input, MixJournal, MixRequest, Names, OpenError, Opened};

use crate::manager::{Config, Manager};
use crate::sf::{GivenSf, NoSf, SfSource};
use pinsight_compare::output::{Capture, Open};
use pinsight_compare::program_metric::MetricSpec;
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::exit::SpawnError;
use pinsight_lifecycle::journal::JournalError;
use pinsight_lifecycle::journal::{self as lj, Design, JsonLine};
use pinsight_measure::disturbance::{Watch, DEFAULT_THRESHOLD};
use pinsight_measure::Disturbance;
use pinsight_measure::Metric;
use pinsight_sched_model::sim::metrics;
use pinsight_sched_model::{Capacity, Metrics, Policy, ProgramResult};
use pinsight_stats::{CiMethod, MeanCi};
use pinsight_sys::progress::Progress;
use pinsight_sys::spawn::{Spawn, Stdio, Step};
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// What the experiment is (first line).
    Header {
        /// The programs' command lines.
        commands: Vec<String>,
        /// The schedulers, in order.
        schedulers: Vec<String>,
        /// Completions per program.
        repeat: u32,
        /// Scheduler period, seconds.
        period_s: f64,
        /// Big CPUs.
        big_cpus: String,
        /// Small CPUs.
        small_cpus: String,
        /// The `--sf` values given (`NAME=SF`), for a resume.
        #[serde(default)]
        sf: Vec<String>,
        /// Program metrics (`--metric`) read from every mix run's output.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        metrics: Vec<MetricSpec>,
    },
    /// A program alone on one CPU.
    Reference {
        /// Program index (from 0).
        program: usize,
        /// "big" or "small".
        on: String,
        /// Wall seconds.
        time_s: f64,
        /// Exit code (128+N for signal N).
        exit_code: i32,
        /// Other work on that CPU and steal during the run (`/proc/stat`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disturbance: Option<Disturbance>,
    },
    /// A scheduler's mix begins (runs before it for that scheduler are void).
    Start {
        /// The scheduler.
        scheduler: String,
    },
    /// One completed run in a mix.
    Run {
        /// The scheduler.
        scheduler: String,
        /// Program index.
        program: usize,
        /// Which completion (from 1).
        completion: u32,
        /// Wall seconds.
        time_s: f64,
        /// Exit code.
        exit_code: i32,
        /// Program metrics read from the run's output (with `--metric`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        metrics: BTreeMap<String, Metric>,
        /// The run's output, relative to the journal's directory (with `--metric`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// A scheduler's mix ended complete.
    Done {
        /// The scheduler.
        scheduler: String,
        /// Share of the programs' CPU time on big CPUs, per program.
        big_share: Vec<Option<f64>>,
        /// Wall seconds of the mix.
        wall_s: f64,
        /// Periods run.
        periods: u64,
        /// Other work on the mix's CPUs and steal during it (`/proc/stat`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        disturbance: Option<Disturbance>,
    },
}

impl JsonLine for Record {
    fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    fn from_line(line: &str) -> Result<Record, String> {
        serde_json::from_str(line).map_err(|e| format!("not a mix journal record ({e})"))
    }
}

/// A journal's first line: a [`Record::Header`].
#[derive(Debug, Clone, PartialEq)]
pub struct HeaderLine(pub Record);

impl JsonLine for HeaderLine {
    fn to_line(&self) -> Result<String, serde_json::Error> {
        self.0.to_line()
    }

    fn from_line(line: &str) -> Result<HeaderLine, String> {
        match Record::from_line(line) {
            Ok(h @ Record::Header { .. }) => Ok(HeaderLine(h)),
            _ => Err("no mix journal header on the first line".into()),
        }
    }
}

/// What the records read so far imply for the next.
#[derive(Default)]
pub struct Seen {
    /// Reference runs that succeeded: (program, "big" or "small").
    references: HashSet<(usize, String)>,
    /// Per scheduler started and not done: the (program, completion)
    /// runs since its start.
    started: HashMap<String, HashSet<(usize, u32)>>,
}

/// One way a request differs from a journal's experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The field.
    pub field: &'static str,
    /// In the journal.
    pub journal: String,
    /// Asked now.
    pub now: String,
}

fn duration(what: &str, t: f64) -> Result<(), String> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(format!("{what} {t} is not a duration (finite, 0 or more)"))
    }
}

impl Design<Record> for HeaderLine {
    type Seen = Seen;
    type Difference = Difference;

    /// A record belongs to this experiment when its program and scheduler
    /// are the header's, a run or end falls between its scheduler's start
    /// and end, nothing is recorded twice (a successful reference run, a
    /// completion of a program under one start) and times are durations.
    fn check(&self, seen: &mut Seen, r: &Record) -> Result<(), String> {
        let Record::Header {
            commands,
            schedulers,
            ..
        } = &self.0
        else {
            return Err("the journal has no header".into());
        };
        let exp = Experiment {
            commands,
            schedulers,
        };
        match r {
            Record::Header { .. } => Err("a second header".into()),
            Record::Reference {
                program: p,
                on,
                time_s,
                exit_code,
                ..
            } => exp.check_reference(seen, *p, on, *time_s, *exit_code),
            Record::Start { scheduler: s } => {
                exp.scheduler(s)?;
                seen.started.insert(s.clone(), HashSet::new());
                Ok(())
            }
            Record::Run {
                scheduler: s,
                program: p,
                completion,
                time_s,
                ..
            } => exp.check_run(seen, s, *p, *completion, *time_s),
            Record::Done {
                scheduler: s,
                big_share,
                wall_s,
                ..
            } => exp.check_done(seen, s, big_share, *wall_s),
        }
    }

    fn mismatch(&self, now: &HeaderLine) -> Vec<Difference> {
        differences(&self.0, &now.0)
    }
}

/// The programs and schedulers of a journal's header, that its records
/// are checked against.
struct Experiment<'h> {
    commands: &'h [String],
    schedulers: &'h [String],
}

impl Experiment<'_> {
    /// Program `p` is one of the experiment's.
    fn program(&self, p: usize) -> Result<(), String> {
        if p < self.commands.len() {
            Ok(())
        } else {
            Err(format!(
                "program {p} is not in the experiment (it has programs 0-{})",
                self.commands.len().saturating_sub(1)
            ))
        }
    }

    /// Scheduler `s` is one of the experiment's.
    fn scheduler(&self, s: &str) -> Result<(), String> {
        if self.schedulers.iter().any(|x| x == s) {
            Ok(())
        } else {
            Err(format!(
                "scheduler '{s}' is not in the experiment (its schedulers: {})",
                self.schedulers.join(", ")
            ))
        }
    }

    /// A reference run: on big or small, a duration, not twice once it
    /// succeeded.
    fn check_reference(
        &self,
        seen: &mut Seen,
        p: usize,
        on: &String,
        time_s: f64,
        exit_code: i32,
    ) -> Result<(), String> {
        self.program(p)?;
        if on != "big" && on != "small" {
            return Err(format!("reference on '{on}': expected big or small"));
        }
        duration("time_s", time_s)?;
        if seen.references.contains(&(p, on.clone())) {
            return Err(format!(
                "the reference run of program {p} on {on} is recorded twice"
            ));
        }
        if exit_code == 0 {
            seen.references.insert((p, on.clone()));
        }
        Ok(())
    }

    /// A completed run: inside a started mix of its scheduler, counted from
    /// 1, not twice under one start.
    fn check_run(
        &self,
        seen: &mut Seen,
        s: &str,
        p: usize,
        completion: u32,
        time_s: f64,
    ) -> Result<(), String> {
        self.scheduler(s)?;
        self.program(p)?;
        duration("time_s", time_s)?;
        if completion == 0 {
            return Err("completion 0: completions count from 1".into());
        }
        let Some(runs) = seen.started.get_mut(s) else {
            return Err(format!("a run under {s} outside a mix of {s} (no start)"));
        };
        if !runs.insert((p, completion)) {
            return Err(format!(
                "completion {completion} of program {p} under {s} is recorded twice"
            ));
        }
        Ok(())
    }

    /// The end of a mix: shares in [0, 1], after its start.
    fn check_done(
        &self,
        seen: &mut Seen,
        s: &str,
        big_share: &[Option<f64>],
        wall_s: f64,
    ) -> Result<(), String> {
        self.scheduler(s)?;
        duration("wall_s", wall_s)?;
        if let Some(x) = big_share
            .iter()
            .flatten()
            .find(|x| !(0.0..=1.0).contains(*x))
        {
            return Err(format!("big_share {x} is not a share (0 to 1)"));
        }
        if seen.started.remove(s).is_none() {
            return Err(format!("the end of a mix under {s} that did not start"));
        }
        Ok(())
    }
}

/// An append-only JSON Lines journal, locked while open, each record
/// written whole before the call returns and synced to disk in batches
/// (the lifecycle journal's guarantees).
pub struct Journal(lj::Journal<HeaderLine, Record>);

/// A journal being continued: what it holds, read under its lock.
pub struct Resumed {
    /// The journal, locked, to append to.
    pub journal: Journal,
    /// Every record, the header first.
    pub records: Vec<Record>,
    /// Lines dropped (a fragment cut by a crash), as sentences.
    pub warnings: Vec<String>,
}

impl Journal {
    /// Creates `path` (it must not exist, nor a link there) with `header`.
    pub fn create(path: &Path, header: &Record) -> Result<Journal, JournalError> {
        lj::Journal::create(path, &HeaderLine(header.clone())).map(Journal)
    }

    /// Opens an existing journal to continue it: locked (refused while
    /// another process writes it, naming its pid), read under the lock,
    /// a fragment cut off its end.
    pub fn resume(path: &Path) -> Result<Resumed, JournalError> {
        let (j, c) = lj::Journal::<HeaderLine, Record>::resume(path)?;
        Ok(Resumed {
            journal: Journal(j),
            records: records(c.header, c.records),
            warnings: c.warnings.iter().map(ToString::to_string).collect(),
        })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Appends one record and syncs it.
    pub fn append(&mut self, r: &Record) -> Result<(), JournalError> {
        self.0.append(r)
    }

    /// Reads every record (the header first) without locking; a fragment
    /// cut by a crash at the end is dropped.
    pub fn read(path: &Path) -> Result<Vec<Record>, JournalError> {
        let c = lj::Journal::<HeaderLine, Record>::read(path)?;
        Ok(records(c.header, c.records))
    }
}

/// Parses journal text as `--resume` reads it (the header first, every
/// record checked against its design; a fragment cut off the end is
/// dropped). The fuzz target's entry to the parser.
pub fn parse(text: &str) -> Result<Vec<Record>, JournalError> {
    let c = lj::parse::<HeaderLine, Record>(Path::new("journal"), text)?;
    Ok(records(c.header, c.records))
}

fn records(header: HeaderLine, rest: Vec<Record>) -> Vec<Record> {
    let mut all = Vec::with_capacity(rest.len() + 1);
    all.push(header.0);
    all.extend(rest);
    all
}

/// The experiment.
#[derive(Debug, Clone)]
pub struct MixSpec {
    /// Shell command lines, one per program.
    pub commands: Vec<String>,
    /// The schedulers.
    pub schedulers: Vec<Policy>,
    /// Completions per program.
    pub repeat: u32,
    /// Scheduler period.
    pub period: Duration,
    /// Big and small CPUs.
    pub capacity: Capacity,
    /// SFs given per program (`#N` = the N-th command; a name = the
    /// basename of a command's first word).
    pub sf: GivenSf,
    /// The `NAME=SF` texts `sf` came from (journaled for a resume).
    pub sf_specs: Vec<String>,
    /// Program metrics read from every mix run's output (`--metric`); the
    /// output is then kept in `JOURNAL.out/`.
    pub metrics: Vec<MetricSpec>,
}

impl MixSpec {
    /// The header record of this experiment.
    pub fn header(&self) -> Record {
        let (b, s) = cpu_sets(&self.capacity);
        Record::Header {
            commands: self.commands.clone(),
            schedulers: self
                .schedulers
                .iter()
                .map(|p| p.name().to_string())
                .collect(),
            repeat: self.repeat,
            period_s: self.period.as_secs_f64(),
            big_cpus: b.to_string(),
            small_cpus: s.to_string(),
            sf: self.sf_specs.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// The basename of program i's command's first word (what `--sf
    /// NAME=` matches).
    pub fn base_name(&self, i: usize) -> String {
        let first = self.commands[i].split_whitespace().next().unwrap_or("");
        first.rsplit('/').next().unwrap_or(first).to_string()
    }

    /// Program i's name in reports: [`MixSpec::base_name`], with `#N`
    /// appended when several programs share it.
    pub fn name(&self, i: usize) -> String {
        let base = self.base_name(i);
        let shared = (0..self.commands.len())
            .filter(|&j| self.base_name(j) == base)
            .count()
            > 1;
        if shared {
            format!("{base}#{}", i + 1)
        } else {
            base
        }
    }
}

fn cpu_sets(c: &Capacity) -> (CpuSet, CpuSet) {
    (
        c.big.iter().map(|x| x.id as usize).collect(),
        c.small.iter().map(|x| x.id as usize).collect(),
    )
}

/// Why the experiment stopped early or failed.
#[derive(Debug, thiserror::Error)]
pub enum MixError {
    /// A signal asked to stop (the journal keeps what was done).
    #[error("stopped by signal {0}")]
    Interrupted(i32),
    /// The shell that runs the commands could not be started (126, 127
    /// or 1 as [`SpawnError::exit_code`] says).
    #[error(transparent)]
    Program(#[from] SpawnError),
    /// A program's CPUs could not be set up before its start.
    /// A run's output could not be kept (`--metric`).
    #[error("{0}")]
    Output(String),
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A reference run failed (non-zero exit): its time means nothing.
    #[error("`{command}` alone on CPU {cpu} exited with status {code}")]
    ReferenceFailed {
        /// The command line.
        command: String,
        /// The CPU.
        cpu: usize,
        /// Its exit code.
        code: i32,
    },
    /// The journal.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The signal lifecycle could not be installed.
    #[error(transparent)]
    Interrupt(#[from] pinsight_lifecycle::interrupt::InterruptError),
    /// The journal belongs to another experiment.
    #[error(
        "the journal is of another experiment: {field} differs (journal {journal}, now {now})"
    )]
    Mismatch {
        /// The differing field.
        field: &'static str,
        /// In the journal.
        journal: String,
        /// Asked now.
        now: String,
    },
    /// Scheduling.
    #[error(transparent)]
    Manage(#[from] crate::ManageError),
}

/// Waits up to the given time; returns a signal number to stop the
/// experiment (the command line passes
/// `pinsight_lifecycle::interrupt::wait`).
pub type Wait<'a> = &'a dyn Fn(Duration) -> Option<i32>;

/// A 95% interval of one metric over the repeats.
pub type Ci = Option<(f64, f64)>;

/// Intervals of each metric over the repeats (`None`: fewer than two
/// repeats or no spread), each `pinsight_stats::mean_ci`'s: log-t (an
/// interval of the geometric mean, which stays positive) when every
/// repeat's value is positive, t otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetricCis {
    /// Of the aggregate speedup.
    pub aggregate_speedup: Ci,
    /// Of STP.
    pub stp: Ci,
    /// Of ANTT.
    pub antt: Ci,
    /// Of unfairness.
    pub unfairness: Ci,
    /// How each interval was made.
    pub method: CiMethods,
}

/// The method of each of [`MetricCis`]'s intervals (`None` with no
/// interval).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CiMethods {
    pub aggregate_speedup: Option<CiMethod>,
    pub stp: Option<CiMethod>,
    pub antt: Option<CiMethod>,
    pub unfairness: Option<CiMethod>,
}

/// One scheduler's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchedulerResult {
    /// The scheduler.
    pub policy: String,
    /// Its metrics (from the geometric-mean times).
    #[serde(flatten)]
    pub metrics: Metrics,
    /// 95% intervals over the repeats.
    pub ci: MetricCis,
    /// Per program (in command order): name, `mean_sf` = Sᵢ/Bᵢ measured,
    /// runs, time, references, slowdown, big share.
    pub programs: Vec<ProgramResult>,
    /// Wall seconds of the mix.
    pub wall_s: f64,
    /// Scheduler periods run.
    pub periods: u64,
    /// Each program metric of each program over its completions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub program_metrics: Vec<ProgramMetric>,
}

/// A program metric of one program under one scheduler.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramMetric {
    /// The program's name in reports.
    pub program: String,
    /// The metric's name.
    pub metric: String,
    pub unit: String,
    pub better: pinsight_compare::program_metric::Better,
    /// Over the completions whose output has the figure; absent: none has.
    pub summary: Option<pinsight_stats::Summary>,
    /// Completions without the figure (failed measurements of it).
    pub missing: usize,
    /// Why (the most recent), when some are missing.
    pub missing_why: Option<String>,
}

/// The whole outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixResult {
    /// Per program: alone on a big CPU, alone on a small CPU (seconds).
    pub references: Vec<(f64, f64)>,
    /// Per scheduler, in the order asked.
    pub schedulers: Vec<SchedulerResult>,
    /// Measurements of this invocation that other work or the hypervisor
    /// disturbed (`/proc/stat`), one sentence each.
    pub notes: Vec<String>,
}

/// A running instance.
struct Instance {
    program: usize,
    pgid: i32,
    start: Instant,
}

/// The output files of a mix's runs (with `--metric`): where they go and
/// the next file number.
struct Outputs {
    capture: Option<Capture>,
    next: usize,
    /// Per running pid, its file.
    open: HashMap<i32, Open>,
}

/// Exit of a child, from its waiter thread.
struct Exit {
    pid: i32,
    code: i32,
    at: Instant,
}

fn spawn(
    command: &str,
    cpus: &CpuSet,
    tx: &mpsc::Sender<Exit>,
) -> Result<(i32, Instant), MixError> {
    spawn_to(command, cpus, tx, None)
}

/// [`spawn`] with stdout and stderr to `out` (a kept output file).
fn spawn_to(
    command: &str,
    cpus: &CpuSet,
    tx: &mpsc::Sender<Exit>,
    out: Option<&std::fs::File>,
) -> Result<(i32, Instant), MixError> {
    let spawn_error = |source| MixError::Spawn {
        command: command.into(),
        source,
    };
    if cpus.is_empty() {
        return Err(spawn_error(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty CPU set",
        )));
    }
    let mut c = Spawn::new("sh");
    c.arg("-c")
        .arg(command)
        .stdin(Stdio::Null)
        .stdout(Stdio::Null)
        .process_group(0)
        .affinity_words(pinsight_sys::affinity::to_kernel_words(cpus));
    if let Some(f) = out {
        // One open file for both streams, as `>FILE 2>&1`.
        let f = std::sync::Arc::new(f.try_clone().map_err(spawn_error)?);
        c.stdout(Stdio::Shared(f.clone())).stderr(Stdio::Shared(f));
    }
    let start = Instant::now();
    let mut child = c.start().map_err(|e| match e.step {
        Step::Parent | Step::Exec => MixError::Program(SpawnError::from_io("sh", &e.error)),
        // The CPUs refused in the child, or another step of its set-up.
        _ => spawn_error(io::Error::new(e.error.kind(), e.to_string())),
    })?;
    let pid = child.id();
    let tx = tx.clone();
    std::thread::spawn(move || {
        let code = match child.wait() {
            Ok(s) => pinsight_lifecycle::exit::status_code(&s),
            Err(_) => pinsight_lifecycle::exit::FAILURE,
        };
        let _ = tx.send(Exit {
            pid,
            code,
            at: Instant::now(),
        });
    });
    Ok((pid, start))
}

fn kill_all(running: &[(i32, Instance)], rx: &mpsc::Receiver<Exit>) {
    for (_, inst) in running {
        let _ = pinsight_sys::process::kill_group(inst.pgid, libc::SIGKILL);
    }
    // Reap them (their waiter threads report), bounded.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = running.len();
    while left > 0 {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(_) => left -= 1,
            Err(_) => break,
        }
    }
}

/// Waits up to `d` for an exit, checking for a stop signal every 50 ms.
fn next_exit(rx: &mpsc::Receiver<Exit>, d: Duration, wait: Wait) -> Result<Option<Exit>, i32> {
    let deadline = Instant::now() + d;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if let Ok(e) = rx.recv_timeout(left.min(Duration::from_millis(50))) {
            return Ok(Some(e));
        }
        if let Some(sig) = wait(Duration::ZERO) {
            return Err(sig);
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
    }
}

/// Runs the experiment, journaling to `journal` (with `previous`, the
/// records of a journal being resumed). `progress` sees the task "mix",
/// one step per reference run and per scheduler; `wait` is polled while
/// programs run and stops the experiment when it returns a signal.
pub fn run(
    spec: &MixSpec,
    fs: &FsRoot,
    journal: &mut Journal,
    previous: &[Record],
    progress: &mut dyn Progress,
    wait: Wait,
) -> Result<MixResult, MixError> {
    if let Some(h) = previous.first() {
        check_header(h, &spec.header())?;
    }
    let total = 2 * spec.commands.len() + spec.schedulers.len();
    progress.begin("mix", total as u64, 0);
    let result = MixRun::new(spec, fs, journal, wait).run_steps(previous, progress);
    progress.end();
    result
}

/// What the steps of one [`run`] share: the experiment, the machine, the
/// journal, the children's exits and the notes gathered.
struct MixRun<'a> {
    spec: &'a MixSpec,
    fs: &'a FsRoot,
    journal: &'a mut Journal,
    wait: Wait<'a>,
    tx: mpsc::Sender<Exit>,
    rx: mpsc::Receiver<Exit>,
    /// Disturbed measurements, one sentence each.
    notes: Vec<String>,
}

/// A program's running instance, keyed by its pid (its process group).
fn instance(program: usize, pid: i32, start: Instant) -> (i32, Instance) {
    (
        pid,
        Instance {
            program,
            pgid: pid,
            start,
        },
    )
}

/// The successful reference runs `previous` holds: per program, alone on a
/// big CPU and alone on a small one (NaN where none).
fn previous_references(previous: &[Record], n: usize) -> Vec<(f64, f64)> {
    let mut refs = vec![(f64::NAN, f64::NAN); n];
    for r in previous {
        if let Record::Reference {
            program,
            on,
            time_s,
            exit_code: 0,
            ..
        } = r
        {
            if *program < n {
                if on == "big" {
                    refs[*program].0 = *time_s;
                } else {
                    refs[*program].1 = *time_s;
                }
            }
        }
    }
    refs
}

impl<'a> MixRun<'a> {
    fn new(spec: &'a MixSpec, fs: &'a FsRoot, journal: &'a mut Journal, wait: Wait<'a>) -> Self {
        let (tx, rx) = mpsc::channel();
        MixRun {
            spec,
            fs,
            journal,
            wait,
            tx,
            rx,
            notes: Vec::new(),
        }
    }

    /// [`run`] between the progress's begin and end.
    fn run_steps(
        mut self,
        previous: &[Record],
        progress: &mut dyn Progress,
    ) -> Result<MixResult, MixError> {
        let spec = self.spec;
        let n = spec.commands.len();
        let mut done = 0;
        // 1. References.
        let refs = self.references(previous, progress, &mut done)?;
        // 2. Schedulers.
        let mut results = Vec::new();
        for policy in &spec.schedulers {
            let name = policy.name();
            progress.step(&format!("mix under {name}"), done as u64);
            done += 1;
            let res = match completed(previous, name, n) {
                Some(r) => r,
                None => {
                    self.journal.append(&Record::Start {
                        scheduler: name.into(),
                    })?;
                    let (runs, disturbance) = self.one_mix(*policy)?;
                    if let Some(note) = disturbance.as_ref().and_then(Disturbance::note) {
                        self.notes.push(format!("mix under {name}: {note}"));
                    }
                    runs
                }
            };
            results.push(result(spec, name, &refs, &res));
        }
        Ok(MixResult {
            references: refs,
            schedulers: results,
            notes: self.notes,
        })
    }

    /// Every program alone on one big CPU, then on one small one, except
    /// the runs `previous` holds; `done` counts the progress steps.
    fn references(
        &mut self,
        previous: &[Record],
        progress: &mut dyn Progress,
        done: &mut usize,
    ) -> Result<Vec<(f64, f64)>, MixError> {
        let spec = self.spec;
        let (big, small) = cpu_sets(&spec.capacity);
        let mut refs = previous_references(previous, spec.commands.len());
        for (i, r) in refs.iter_mut().enumerate() {
            for (on, cpu) in [("big", big.first()), ("small", small.first())] {
                let have = if on == "big" { r.0 } else { r.1 };
                *done += 1;
                if have.is_finite() {
                    continue;
                }
                let cpu = cpu.expect("capacity has both kinds");
                progress.step(
                    &format!("{} alone on {on} CPU {cpu}", spec.name(i)),
                    *done as u64 - 1,
                );
                let t = self.reference(i, on, cpu)?;
                if on == "big" {
                    r.0 = t;
                } else {
                    r.1 = t;
                }
            }
        }
        Ok(refs)
    }

    /// One reference run: program `i` alone on `cpu` (of kind `on`),
    /// journaled; its wall seconds, or why it failed or stopped.
    fn reference(&mut self, i: usize, on: &str, cpu: usize) -> Result<f64, MixError> {
        let spec = self.spec;
        let watch = Watch::start(self.fs);
        let (pid, start) = spawn(&spec.commands[i], &CpuSet::single(cpu), &self.tx)?;
        let exit = loop {
            match next_exit(&self.rx, Duration::from_secs(3600), self.wait) {
                Ok(Some(e)) if e.pid == pid => break e,
                Ok(_) => continue,
                Err(sig) => {
                    kill_all(&[instance(i, pid, start)], &self.rx);
                    return Err(MixError::Interrupted(sig));
                }
            }
        };
        let t = (exit.at - start).as_secs_f64();
        let disturbance = watch.finish(Some(&CpuSet::single(cpu)), DEFAULT_THRESHOLD);
        if let Some(note) = disturbance.as_ref().and_then(Disturbance::note) {
            self.notes
                .push(format!("{} alone on {on} CPU {cpu}: {note}", spec.name(i)));
        }
        self.journal.append(&Record::Reference {
            program: i,
            on: on.into(),
            time_s: t,
            exit_code: exit.code,
            disturbance,
        })?;
        if exit.code != 0 {
            return Err(MixError::ReferenceFailed {
                command: spec.commands[i].clone(),
                cpu,
                code: exit.code,
            });
        }
        Ok(t)
    }
    /// One scheduler's mix: every program started together on all CPUs
    /// under a [`Manager`], restarted as it ends until each has completed
    /// `repeat` runs, journaled; the runs and the mix's disturbance.
    fn one_mix(&mut self, policy: Policy) -> Result<(MixRuns, Option<Disturbance>), MixError> {
        let spec = self.spec;
        let n = spec.commands.len();
        let (big, small) = cpu_sets(&spec.capacity);
        let all = big.union(&small);
        let watch = Watch::start(self.fs);
        let t0 = Instant::now();
        let mut mix = Mix {
            policy,
            all,
            running: Vec::new(),
            outs: Outputs::new(spec, self.journal)?,
            times: vec![Vec::new(); n],
            figures: vec![Vec::new(); n],
        };
        for i in 0..n {
            let (pid, start) = mix.outs.spawn(spec, policy, i, &mix.all, &self.tx)?;
            mix.running.push(instance(i, pid, start));
        }
        let pids: Vec<i32> = mix.running.iter().map(|(p, _)| *p).collect();
        // Started just now, a fast program may be gone already: its exit
        // is on `rx`, counted below like any other.
        let mut manager = Manager::new_spawned(
            self.fs.clone(),
            mix_config(spec, policy),
            &pids,
            sf_source(spec),
        )?;
        let stop = self.run_mix(&mut mix, &mut manager)?;
        kill_all(&mix.running, &self.rx);
        let report = manager.finish(t0.elapsed());
        if let Some(sig) = stop {
            return Err(MixError::Interrupted(sig));
        }
        let big_share = big_shares(&report, n);
        let wall = t0.elapsed().as_secs_f64();
        let disturbance = watch.finish(Some(&mix.all), DEFAULT_THRESHOLD);
        self.journal.append(&Record::Done {
            scheduler: policy.name().into(),
            big_share: big_share.clone(),
            wall_s: wall,
            periods: report.periods,
            disturbance: disturbance.clone(),
        })?;
        Ok((
            (mix.times, big_share, wall, report.periods, mix.figures),
            disturbance,
        ))
    }

    /// Steps `manager` every period and journals each run that ends,
    /// restarting its program, until every program has its completions;
    /// the stop signal when `wait` gave one.
    fn run_mix(&mut self, mix: &mut Mix, manager: &mut Manager) -> Result<Option<i32>, MixError> {
        let spec = self.spec;
        loop {
            let step_start = Instant::now();
            manager.step();
            loop {
                let left = spec.period.saturating_sub(step_start.elapsed());
                let e = match next_exit(&self.rx, left, self.wait) {
                    Err(sig) => return Ok(Some(sig)),
                    Ok(None) => break,
                    Ok(Some(e)) => e,
                };
                let Some(k) = mix.running.iter().position(|(p, _)| *p == e.pid) else {
                    continue;
                };
                let (_, inst) = mix.running.remove(k);
                let i = inst.program;
                self.completed_run(mix, i, &inst, &e)?;
                if mix.times.iter().all(|t| t.len() >= spec.repeat as usize) {
                    return Ok(None);
                }
                let (pid, start) = mix.outs.spawn(spec, mix.policy, i, &mix.all, &self.tx)?;
                manager.add(pid, i + 1);
                mix.running.push(instance(i, pid, start));
            }
        }
    }

    /// Records the run of `inst` that ended with `e`: its time, program
    /// metrics and journal line.
    fn completed_run(
        &mut self,
        mix: &mut Mix,
        i: usize,
        inst: &Instance,
        e: &Exit,
    ) -> Result<(), MixError> {
        let t = (e.at - inst.start).as_secs_f64();
        mix.times[i].push(t);
        let (metrics, output) = mix.outs.finish(e.pid, &self.spec.metrics)?;
        mix.figures[i].push(metrics.clone());
        self.journal.append(&Record::Run {
            scheduler: mix.policy.name().into(),
            program: i,
            completion: mix.times[i].len() as u32,
            time_s: t,
            exit_code: e.code,
            metrics,
            output,
        })?;
        Ok(())
    }
}

/// One scheduler's mix in progress.
struct Mix {
    policy: Policy,
    /// Every big and small CPU.
    all: CpuSet,
    /// The instances running.
    running: Vec<(i32, Instance)>,
    outs: Outputs,
    /// Per program, its completed run times.
    times: Vec<Vec<f64>>,
    /// Per program, the program metrics of each completion.
    figures: Vec<Vec<BTreeMap<String, Metric>>>,
}

/// The SFs the manager sees: the given ones by program position, or none.
fn sf_source(spec: &MixSpec) -> Box<dyn SfSource> {
    let names: Vec<String> = (0..spec.commands.len())
        .map(|i| spec.base_name(i))
        .collect();
    if spec.sf.entries().is_empty() {
        Box::new(NoSf)
    } else {
        Box::new(spec.sf.by_position(&names))
    }
}

/// The manager's configuration for a mix under `policy`: following and
/// grouping the programs' children.
fn mix_config(spec: &MixSpec, policy: Policy) -> Config {
    Config {
        policy,
        period: spec.period,
        capacity: spec.capacity.clone(),
        follow_children: true,
        group_children: true,
        orphans_of: None,
    }
}

/// Per program (of `n`), the share of its CPU time on big CPUs in the
/// manager's report (`None` without CPU time).
fn big_shares(report: &crate::manager::Report, n: usize) -> Vec<Option<f64>> {
    let mut shares = vec![(0.0, 0.0); n];
    for p in &report.programs {
        let i = p.position - 1;
        if i < n {
            shares[i].0 += p.big_s;
            shares[i].1 += p.small_s;
        }
    }
    shares
        .iter()
        .map(|&(b, s)| (b + s > 0.0).then(|| b / (b + s)))
        .collect()
}

/// Per program its completed run times; big shares; wall; periods; per
/// program the program metrics of each completion.
type MixRuns = (
    Vec<Vec<f64>>,
    Vec<Option<f64>>,
    f64,
    u64,
    Vec<Vec<BTreeMap<String, Metric>>>,
);

/// The runs of a scheduler the journal holds complete (after its last
/// Start, followed by Done).
fn completed(previous: &[Record], name: &str, n: usize) -> Option<MixRuns> {
    let start = previous
        .iter()
        .rposition(|r| matches!(r, Record::Start { scheduler } if scheduler == name))?;
    let mut times = vec![Vec::new(); n];
    let mut figures = vec![Vec::new(); n];
    for r in &previous[start + 1..] {
        match r {
            Record::Run {
                scheduler,
                program,
                time_s,
                metrics,
                ..
            } if scheduler == name && *program < n => {
                times[*program].push(*time_s);
                figures[*program].push(metrics.clone());
            }
            Record::Done {
                scheduler,
                big_share,
                wall_s,
                periods,
                ..
            } if scheduler == name => {
                return Some((times, big_share.clone(), *wall_s, *periods, figures));
            }
            _ => {}
        }
    }
    None
}

impl Outputs {
    /// Where a mix's run outputs go: nowhere without program metrics, else
    /// files beside the journal.
    fn new(spec: &MixSpec, journal: &Journal) -> Result<Outputs, MixError> {
        Ok(Outputs {
            capture: if spec.metrics.is_empty() {
                None
            } else {
                Some(
                    Capture::for_journal(journal.path())
                        .map_err(|e| MixError::Output(e.to_string()))?,
                )
            },
            next: 0,
            open: HashMap::new(),
        })
    }

    /// Starts program `i` with its output to a new file when kept.
    fn spawn(
        &mut self,
        spec: &MixSpec,
        policy: Policy,
        i: usize,
        cpus: &CpuSet,
        tx: &mpsc::Sender<Exit>,
    ) -> Result<(i32, Instant), MixError> {
        let Some(c) = &self.capture else {
            return spawn(&spec.commands[i], cpus, tx);
        };
        let label = format!("{}-{}", policy.name(), spec.name(i));
        let open = c
            .open(&label, self.next)
            .map_err(|e| MixError::Output(e.to_string()))?;
        self.next += 1;
        let r = spawn_to(&spec.commands[i], cpus, tx, Some(&open.file))?;
        self.open.insert(r.0, open);
        Ok(r)
    }

    /// The program metrics of the run of `pid` (just exited), and its file.
    fn finish(
        &mut self,
        pid: i32,
        specs: &[MetricSpec],
    ) -> Result<(BTreeMap<String, Metric>, Option<String>), MixError> {
        let Some(open) = self.open.remove(&pid) else {
            return Ok((BTreeMap::new(), None));
        };
        let kept = open.finish().map_err(|e| MixError::Output(e.to_string()))?;
        let m = pinsight_compare::experiment::figures(specs, Some(&kept.text));
        let path = kept.reference.path;
        Ok((m, (!path.is_empty()).then_some(path)))
    }
}

/// Each program metric of each program over its completions.
fn program_metrics(
    spec: &MixSpec,
    figures: &[Vec<BTreeMap<String, Metric>>],
) -> Vec<ProgramMetric> {
    let mut out = Vec::new();
    for (i, runs) in figures.iter().enumerate() {
        for m in &spec.metrics {
            let vals: Vec<Metric> = runs
                .iter()
                .map(|r| {
                    r.get(&m.name)
                        .cloned()
                        .unwrap_or_else(|| Metric::unavailable("not read from this run's output"))
                })
                .collect();
            let xs: Vec<f64> = vals.iter().filter_map(Metric::get).collect();
            out.push(ProgramMetric {
                program: spec.name(i),
                metric: m.name.clone(),
                unit: m.unit.clone(),
                better: m.better,
                summary: pinsight_stats::Summary::of(&xs).ok(),
                missing: vals.len() - xs.len(),
                missing_why: vals.iter().rev().find_map(|v| v.reason().map(String::from)),
            });
        }
    }
    out
}

fn geomean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len().max(1) as f64).exp()
}

fn result(spec: &MixSpec, name: &str, refs: &[(f64, f64)], runs: &MixRuns) -> SchedulerResult {
    let (times, shares, wall, periods, figures) = runs;
    let prog = |i: usize, t: f64, runs: usize| {
        let (b, s) = refs[i];
        ProgramResult {
            name: spec.name(i),
            mean_sf: s / b,
            runs: runs as u32,
            time_s: t,
            alone_big_s: b,
            alone_small_s: s,
            slowdown: t / b,
            big_share: shares.get(i).copied().flatten().unwrap_or(f64::NAN),
        }
    };
    let programs: Vec<ProgramResult> = times
        .iter()
        .enumerate()
        .map(|(i, t)| prog(i, geomean(t), t.len()))
        .collect();
    let m = metrics(&programs);
    // Per completion index j: every program's j-th run.
    let reps = times.iter().map(Vec::len).min().unwrap_or(0);
    let per_rep: Vec<Metrics> = (0..reps)
        .map(|j| {
            let ps: Vec<ProgramResult> = times
                .iter()
                .enumerate()
                .map(|(i, t)| prog(i, t[j], 1))
                .collect();
            metrics(&ps)
        })
        .collect();
    // One implementation of a mean's interval (compare's): it stays
    // positive for STP, ANTT and unfairness, which are.
    let ci = |f: fn(&Metrics) -> f64| -> Option<MeanCi> {
        let xs: Vec<f64> = per_rep.iter().map(f).collect();
        pinsight_stats::mean_ci(&xs, 0.95).ok()
    };
    let [a, s, t, u] = [
        ci(|m| m.aggregate_speedup),
        ci(|m| m.stp),
        ci(|m| m.antt),
        ci(|m| m.unfairness),
    ];
    let bounds = |c: Option<MeanCi>| c.map(|c| (c.interval.lo, c.interval.hi));
    let method = |c: Option<MeanCi>| c.map(|c| c.method);
    SchedulerResult {
        policy: name.into(),
        metrics: m,
        ci: MetricCis {
            aggregate_speedup: bounds(a),
            stp: bounds(s),
            antt: bounds(t),
            unfairness: bounds(u),
            method: CiMethods {
                aggregate_speedup: method(a),
                stp: method(s),
                antt: method(t),
                unfairness: method(u),
            },
        },
        programs,
        wall_s: *wall,
        periods: *periods,
        program_metrics: program_metrics(spec, figures),
    }
}

fn check_header(journal: &Record, now: &Record) -> Result<(), MixError> {
    match differences(journal, now).into_iter().next() {
        None => Ok(()),
        Some(d) => Err(MixError::Mismatch {
            field: d.field,
            journal: d.journal,
            now: d.now,
        }),
    }
}

/// How `now` differs from the journal's experiment (empty: the same one).
fn differences(journal: &Record, now: &Record) -> Vec<Difference> {
    let (
        Record::Header {
            commands: c1,
            schedulers: s1,
            repeat: r1,
            period_s: p1,
            big_cpus: b1,
            small_cpus: sm1,
            metrics: m1,
            ..
        },
        Record::Header {
            commands: c2,
            schedulers: s2,
            repeat: r2,
            period_s: p2,
            big_cpus: b2,
            small_cpus: sm2,
            metrics: m2,
            ..
        },
    ) = (journal, now)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut diff = |field: &'static str, journal: String, now: String| {
        if journal != now {
            out.push(Difference {
                field,
                journal,
                now,
            });
        }
    };
    diff("commands", format!("{c1:?}"), format!("{c2:?}"));
    diff("schedulers", s1.join(","), s2.join(","));
    diff("runs", r1.to_string(), r2.to_string());
    diff("interval", format!("{p1}s"), format!("{p2}s"));
    diff("big CPUs", b1.clone(), b2.clone());
    diff("small CPUs", sm1.clone(), sm2.clone());
    let names = |m: &[MetricSpec]| {
        m.iter()
            .map(|x| format!("{}={}", x.name, x.source_text()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    diff("metrics", names(m1), names(m2));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header of an experiment of `commands` under `schedulers`, two
    /// completions each, big CPU 0 and small CPU 1.
    fn header(commands: &[&str], schedulers: &[&str]) -> Record {
        Record::Header {
            commands: commands.iter().map(|c| c.to_string()).collect(),
            schedulers: schedulers.iter().map(|s| s.to_string()).collect(),
            repeat: 2,
            period_s: 0.2,
            big_cpus: "0".into(),
            small_cpus: "1".into(),
            sf: vec![],
            metrics: vec![],
        }
    }

    #[test]
    fn journal_round_trip_and_torn_line() {
        let recs = vec![
            header(&["a"], &["os"]),
            Record::Start {
                scheduler: "os".into(),
            },
            Record::Run {
                scheduler: "os".into(),
                program: 0,
                completion: 1,
                time_s: 1.5,
                exit_code: 0,
                metrics: BTreeMap::new(),
                output: None,
            },
        ];
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("mix.jsonl");
        let mut j = Journal::create(&p, &recs[0]).unwrap();
        for r in &recs[1..] {
            j.append(r).unwrap();
        }
        assert!(matches!(
            Journal::resume(&p),
            Err(JournalError::Locked { .. })
        ));
        drop(j);
        assert_eq!(Journal::read(&p).unwrap(), recs);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{text}{{\"record\":\"ru")).unwrap();
        assert_eq!(
            Journal::read(&p).unwrap(),
            recs,
            "a torn last line is dropped"
        );
        std::fs::write(&p, format!("{text}{{\"record\":\"ru\n")).unwrap();
        assert_eq!(
            Journal::read(&p).unwrap(),
            recs,
            "a complete line that is no record is skipped"
        );
        let r = Journal::resume(&p).unwrap();
        assert_eq!(r.records, recs);
        assert!(
            r.warnings.len() == 1 && r.warnings[0].starts_with("line 4: not a record"),
            "{:?}",
            r.warnings
        );
        drop(r);
        // A complete record without its newline is kept, the next append
        // starts on a line of its own.
        let start = serde_json::to_string(&Record::Start {
            scheduler: "os".into(),
        })
        .unwrap();
        std::fs::write(&p, format!("{text}{start}")).unwrap();
        let mut r = Journal::resume(&p).unwrap();
        assert_eq!(r.records.len(), 4);
        assert!(r.warnings.is_empty());
        r.journal.append(&recs[2]).unwrap();
        drop(r);
        assert_eq!(Journal::read(&p).unwrap().len(), 5);
        assert!(completed(&recs, "os", 1).is_none(), "no Done: not complete");
    }

    #[test]
    fn records_outside_the_design_are_refused() {
        let h = HeaderLine(header(&["a", "b"], &["os", "to"]));
        let mut seen = Seen::default();
        let run = |s: &str, program, completion, time_s| Record::Run {
            scheduler: s.into(),
            program,
            completion,
            time_s,
            exit_code: 0,
            metrics: BTreeMap::new(),
            output: None,
        };
        let reference = Record::Reference {
            program: 1,
            on: "big".into(),
            time_s: 1.0,
            exit_code: 0,
            disturbance: None,
        };
        h.check(&mut seen, &reference).unwrap();
        let e = h.check(&mut seen, &reference).unwrap_err();
        assert!(e.contains("recorded twice"), "{e}");
        let e = h.check(&mut seen, &run("os", 0, 1, 1.0)).unwrap_err();
        assert!(e.contains("no start"), "{e}");
        let start = Record::Start {
            scheduler: "os".into(),
        };
        h.check(&mut seen, &start).unwrap();
        h.check(&mut seen, &run("os", 0, 1, 1.0)).unwrap();
        let e = h.check(&mut seen, &run("os", 0, 1, 1.0)).unwrap_err();
        assert!(
            e.contains("completion 1 of program 0 under os is recorded twice"),
            "{e}"
        );
        let e = h.check(&mut seen, &run("os", 2, 1, 1.0)).unwrap_err();
        assert!(e.contains("program 2 is not in the experiment"), "{e}");
        let e = h.check(&mut seen, &run("acfs", 0, 2, 1.0)).unwrap_err();
        assert!(
            e.contains("scheduler 'acfs' is not in the experiment"),
            "{e}"
        );
        let e = h.check(&mut seen, &run("os", 0, 2, -1.0)).unwrap_err();
        assert!(e.contains("time_s -1"), "{e}");
        // A new start of a scheduler voids its earlier runs.
        h.check(&mut seen, &start).unwrap();
        h.check(&mut seen, &run("os", 0, 1, 1.0)).unwrap();
    }

    #[test]
    fn metrics_come_from_the_model_with_intervals() {
        let spec = MixSpec {
            commands: vec!["a".into(), "b x".into()],
            schedulers: vec![Policy::Os],
            repeat: 3,
            period: Duration::from_millis(200),
            capacity: Capacity::uniform(1, 1),
            sf: GivenSf::new(),
            sf_specs: vec![],
            metrics: pinsight_compare::program_metric::parse("ops=ops: ([0-9]+),unit=op/s", &[])
                .unwrap(),
        };
        let refs = [(1.0, 2.0), (2.0, 3.0)];
        let fig = |v: Option<f64>| -> BTreeMap<String, Metric> {
            let m = v.map_or_else(|| Metric::unavailable("no match"), Metric::value);
            [("ops".to_string(), m)].into_iter().collect()
        };
        let runs: MixRuns = (
            vec![vec![2.0, 2.2, 1.8], vec![3.0, 3.3, 2.9]],
            vec![Some(0.5), Some(0.5)],
            10.0,
            50,
            vec![
                vec![fig(Some(10.0)), fig(Some(12.0)), fig(Some(11.0))],
                vec![fig(Some(5.0)), fig(None), fig(Some(5.0))],
            ],
        );
        let r = result(&spec, "os", &refs, &runs);
        // The program metric per program, a missing figure counted, not 0.
        let pm = &r.program_metrics;
        assert_eq!(pm.len(), 2);
        assert_eq!(pm[0].summary.as_ref().unwrap().mean, 11.0);
        assert!(pm[0].summary.as_ref().unwrap().mean_ci.is_some());
        assert_eq!((pm[1].missing, pm[1].summary.as_ref().unwrap().n), (1, 2));
        assert_eq!(pm[1].missing_why.as_deref(), Some("no match"));
        assert_eq!(r.programs[1].name, "b");
        assert!((r.programs[0].mean_sf - 2.0).abs() < 1e-12);
        let want = metrics(&r.programs);
        assert_eq!(r.metrics, want);
        let (lo, hi) = r.ci.aggregate_speedup.unwrap();
        assert!(lo < hi);
        assert!(r.ci.unfairness.is_some());
        // Unfairness is positive: its interval is log-t and stays so.
        assert_eq!(r.ci.method.unfairness, Some(CiMethod::LogT));
        assert!(r.ci.unfairness.unwrap().0 > 0.0);
    }
}
