//! Measuring core-to-core latency on this machine.
//!
//! For every pair of CPUs, two threads pinned one to each bounce a cache
//! line ([`Method`]); the timing side takes samples (each one batch of
//! round trips timed with the monotonic clock) until the 95% confidence
//! interval of the median is within `±target_rel_ci` of it, or the pair's
//! time cap is reached — then the pair is flagged `noisy` rather than
//! measured for longer. Fixed sample counts (`core-to-core-latency 1000
//! 300`) either waste time on quiet pairs or stop too early on noisy ones;
//! the stopping rule spends time where the noise is.
//!
//! Disjoint pairs are measured at the same time by default
//! ([`schedule::round_robin`]); `parallel: false` measures one pair at a
//! time, for comparison.
//!
//! A pair's confidence interval only covers the noise within one run. With
//! `repeats: N` the whole matrix is measured N times, each run starting at
//! a different round of the schedule ([`schedule::rotated`]) so a slow
//! drift (clock frequency, temperature, other load) does not always land
//! on the same pairs; every pair then carries its N run medians
//! ([`PairStat::run_medians_ns`]) and their spread. A pair is also noisy
//! when, in any run, other work took either of its CPUs over the
//! disturbance threshold ([`MeasureConfig::disturbance`]): a median is
//! robust to the few round trips a shared CPU's time slices spoil, so the
//! figure can look steady while the pair was not measured alone.
//!
//! Entry points: [`choose_cpus`] (which CPUs, with the errors a user should
//! see, [`CpuChoiceError`]), then [`measure`] / [`measure_with_progress`].

pub mod affinity;
pub mod pingpong;
pub mod schedule;
pub mod stats;

pub use pingpong::Method;

use pingpong::{PairLines, Pinger};
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::matrix::RunToRun;
use pinsight_latency_model::{LatencyMatrix, PairStat};
use pinsight_measure::disturbance::Watch;
use pinsight_measure::Disturbance;
use pinsight_sys::progress::{Progress, Silent};
use pinsight_sys::FsRoot;
use stats::SortedSamples;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// What to measure and how hard to try.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureConfig {
    /// CPU ids, in matrix order (at least 2, distinct).
    pub cpus: Vec<usize>,
    pub method: Method,
    /// Measure disjoint pairs at the same time (round-robin rounds).
    pub parallel: bool,
    /// Stop sampling a pair when the 95% CI of its median is within this
    /// fraction of the median (0.01 = ±1%).
    pub target_rel_ci: f64,
    /// Give up on a pair after this long (it is then flagged noisy).
    pub max_time_per_pair: Duration,
    /// Aim for samples of about this length; the number of round trips per
    /// sample is calibrated per pair. Long enough that the clock read is
    /// noise (<0.1%), short enough that an interrupt spoils few samples.
    pub sample_duration: Duration,
    /// Never stop before this many samples, even if the interval is
    /// already narrow (guards against a lucky streak).
    pub min_samples: usize,
    /// Stop starting new rounds once this much time has passed; the pairs
    /// not measured stay NaN and are listed in [`Measurement::skipped`].
    /// Covers all runs.
    pub budget: Option<Duration>,
    /// How many times the whole matrix is measured (at least 1); see the
    /// module doc.
    pub repeats: usize,
    /// Start run `k` no earlier than `k × spacing` after the first, so the
    /// runs sample the drift of a whole budget rather than one moment
    /// (never waiting past [`MeasureConfig::budget`]).
    pub spacing: Option<Duration>,
    /// This machine is a virtual machine: the host may move the vCPUs at
    /// any time, so every pair is flagged noisy whatever its intervals.
    pub virtual_machine: bool,
    /// Judge each run's disturbance (other work on the measured CPUs,
    /// steal) with this threshold; `None`: not measured. A pair whose CPU
    /// was disturbed over it in any run is noisy.
    pub disturbance: Option<f64>,
}

impl Default for MeasureConfig {
    fn default() -> Self {
        MeasureConfig {
            cpus: Vec::new(),
            method: Method::Cas,
            parallel: true,
            target_rel_ci: 0.01,
            max_time_per_pair: Duration::from_millis(200),
            sample_duration: Duration::from_micros(100),
            min_samples: 16,
            budget: None,
            repeats: 1,
            spacing: None,
            virtual_machine: false,
            disturbance: Some(pinsight_measure::disturbance::DEFAULT_THRESHOLD),
        }
    }
}

/// The result of [`measure`].
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Medians in `ns`, per pair statistics in `stats`, `method` set,
    /// `source` = "measured".
    pub matrix: LatencyMatrix,
    /// Pairs (CPU ids, larger first) left unmeasured because the budget ran
    /// out; NaN in the matrix.
    pub skipped: Vec<(usize, usize)>,
    /// Pairs (CPU ids) measured, but in fewer runs than planned because the
    /// budget ran out.
    pub fewer_runs: Vec<(usize, usize)>,
    /// Rounds run (pairs measured together), and how many were planned,
    /// over all runs.
    pub rounds_run: usize,
    pub rounds_planned: usize,
    /// Runs of the whole matrix planned (`repeats`) and completed.
    pub runs_planned: usize,
    pub runs_completed: usize,
    pub elapsed: Duration,
    /// Each run's disturbance on the measured CPUs, in run order (`None`
    /// where `/proc/stat` could not be read or it was not measured).
    pub disturbance: Vec<Option<Disturbance>>,
}

impl Measurement {
    /// Pairs (CPU ids) whose interval did not reach the target in time.
    pub fn noisy(&self) -> Vec<(usize, usize)> {
        let m = &self.matrix;
        let Some(stats) = &m.stats else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, row) in stats.iter().enumerate() {
            for (j, stat) in row.iter().enumerate().take(i) {
                if stat.as_ref().is_some_and(|s| s.noisy) {
                    out.push((m.cpus[i], m.cpus[j]));
                }
            }
        }
        out
    }

    /// Run-to-run spread over the pairs; see [`LatencyMatrix::run_to_run`].
    pub fn run_to_run(&self) -> Option<RunToRun> {
        self.matrix.run_to_run()
    }
}

/// Why CPUs could not be chosen ([`choose_cpus`]). The first two are the
/// request's fault ([`CpuChoiceError::requested`] gives it), the last the
/// machine's or the process's. Messages speak of CPUs, never of options.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuChoiceError {
    /// Requested CPUs that are offline or outside this process's affinity
    /// (either set may be empty, not both).
    #[error("{}", unusable(.offline, .online, .forbidden, .allowed))]
    Unusable {
        requested: CpuSet,
        offline: CpuSet,
        online: CpuSet,
        forbidden: CpuSet,
        allowed: CpuSet,
    },
    /// Fewer than 2 CPUs requested.
    #[error("core-to-core latency needs at least 2 CPUs (usable here: {})", list_or_none(.usable))]
    TooFewRequested { requested: CpuSet, usable: CpuSet },
    /// Nothing requested, and this process may run on fewer than 2 CPUs.
    #[error(
        "core-to-core latency needs at least 2 CPUs, but this process may run only on {} \
         (online: {}, affinity: {}); widen the affinity (taskset) or cpuset",
        if .usable.is_empty() { "no CPU".to_string() } else { format!("CPU {}", .usable) },
        list_or_none(.online),
        list_or_none(.allowed)
    )]
    TooFewUsable {
        usable: CpuSet,
        online: CpuSet,
        allowed: CpuSet,
    },
}

impl CpuChoiceError {
    /// The requested CPUs, when the request is at fault (the user should
    /// change it); `None` when the machine or the process is.
    pub fn requested(&self) -> Option<&CpuSet> {
        match self {
            CpuChoiceError::Unusable { requested, .. }
            | CpuChoiceError::TooFewRequested { requested, .. } => Some(requested),
            CpuChoiceError::TooFewUsable { .. } => None,
        }
    }
}

fn unusable(offline: &CpuSet, online: &CpuSet, forbidden: &CpuSet, allowed: &CpuSet) -> String {
    let mut problems = Vec::new();
    if !offline.is_empty() {
        problems.push(format!("{} offline (online: {online})", cpus_are(offline)));
    }
    if !forbidden.is_empty() {
        problems.push(format!(
            "{} not allowed for this process (its affinity/cpuset allows {})",
            cpus_are(forbidden),
            list_or_none(allowed)
        ));
    }
    problems.join("; ")
}

/// The CPUs to measure: `requested` (a list the user gave) or every online
/// CPU this process may run on. Pure: `online` and `allowed` come from
/// [`usable_cpus`]. Errors name the offending CPUs.
pub fn choose_cpus(
    requested: Option<&CpuSet>,
    online: &CpuSet,
    allowed: &CpuSet,
) -> Result<Vec<usize>, CpuChoiceError> {
    let usable = online.intersection(allowed);
    match requested {
        Some(req) => {
            let offline = req.difference(online);
            let forbidden = req.intersection(online).difference(allowed);
            if !offline.is_empty() || !forbidden.is_empty() {
                return Err(CpuChoiceError::Unusable {
                    requested: req.clone(),
                    offline,
                    online: online.clone(),
                    forbidden,
                    allowed: allowed.clone(),
                });
            }
            if req.len() < 2 {
                return Err(CpuChoiceError::TooFewRequested {
                    requested: req.clone(),
                    usable,
                });
            }
            Ok(req.iter().collect())
        }
        None if usable.len() < 2 => Err(CpuChoiceError::TooFewUsable {
            usable,
            online: online.clone(),
            allowed: allowed.clone(),
        }),
        None => Ok(usable.iter().collect()),
    }
}

/// "CPU 3 is" / "CPUs 4-5 are".
fn cpus_are(s: &CpuSet) -> String {
    if s.len() == 1 {
        format!("CPU {s} is")
    } else {
        format!("CPUs {s} are")
    }
}

/// The set as a cpulist, or "no CPU" when empty.
pub fn list_or_none(s: &CpuSet) -> String {
    if s.is_empty() {
        "no CPU".to_string()
    } else {
        s.to_string()
    }
}

/// Why measuring could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// This thread's affinity could not be read.
    #[error("sched_getaffinity: {0}")]
    Affinity(#[source] std::io::Error),
    /// The list of online CPUs could not be read or parsed.
    #[error("/sys/devices/system/cpu/online: {reason}")]
    OnlineCpus { reason: String },
    /// [`MeasureConfig::cpus`] names a CPU twice.
    #[error("CPU list {cpus:?} repeats a CPU")]
    RepeatedCpu { cpus: Vec<usize> },
    /// [`MeasureConfig::cpus`] has fewer than 2 CPUs.
    #[error("core-to-core latency needs at least 2 CPUs, got {got}")]
    TooFewCpus { got: usize },
    /// [`MeasureConfig::target_rel_ci`] is not in (0, 1).
    #[error("target relative CI {target} must be in (0, 1)")]
    BadTarget { target: f64 },
    /// [`MeasureConfig::repeats`] is 0.
    #[error("the matrix must be measured at least once (repeats >= 1)")]
    NoRun,
    /// A zero [`MeasureConfig::max_time_per_pair`] or
    /// [`MeasureConfig::sample_duration`].
    #[error("max time per pair and sample duration must be positive")]
    ZeroDuration,
    /// The threads of a pair could not be pinned (CPU offline or not
    /// allowed); one entry per thread that failed.
    #[error("{}", .failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Pin { failures: Vec<PinFailure> },
}

/// One measuring thread that could not be pinned.
#[derive(Debug, thiserror::Error)]
#[error("cannot pin a thread to CPU {cpu}: {source}")]
pub struct PinFailure {
    pub cpu: usize,
    #[source]
    pub source: std::io::Error,
}

/// `(online, allowed)`: the online CPUs read through `fs` (all of the
/// affinity when the file is missing) and this thread's affinity.
pub fn usable_cpus(fs: &FsRoot) -> Result<(CpuSet, CpuSet), MeasureError> {
    let allowed = affinity::current().map_err(MeasureError::Affinity)?;
    let online = match fs.read_cpulist("/sys/devices/system/cpu/online") {
        Some(Ok(set)) => set,
        Some(Err(e)) => {
            return Err(MeasureError::OnlineCpus {
                reason: e.to_string(),
            })
        }
        None => allowed.clone(),
    };
    Ok((online, allowed))
}

/// Measures every pair of `config.cpus`, showing nothing. See
/// [`measure_with_progress`].
pub fn measure(config: &MeasureConfig) -> Result<Measurement, MeasureError> {
    measure_with_progress(config, &mut Silent)
}

/// Measures every pair of `config.cpus`. `progress` sees one task,
/// "core-to-core latency (METHOD)", of every pair of every run, stepped on
/// the calling thread after each pair with the run and round under way.
/// Errors: bad configuration, or a thread could not be pinned (CPU
/// offline or not allowed).
pub fn measure_with_progress(
    config: &MeasureConfig,
    progress: &mut dyn Progress,
) -> Result<Measurement, MeasureError> {
    validate(config)?;
    let what = format!("core-to-core latency ({})", config.method);
    progress.begin(&what, pairs_planned(config), 0);
    let measured = measure_pairs(config, &what, progress);
    progress.end();
    measured
}

/// Pair measurements in all runs: the progress task's total.
fn pairs_planned(config: &MeasureConfig) -> u64 {
    let n = config.cpus.len();
    (config.repeats * (n * n.saturating_sub(1) / 2)) as u64
}

/// [`measure_with_progress`] between the progress task's begin and end.
fn measure_pairs(
    config: &MeasureConfig,
    what: &str,
    progress: &mut dyn Progress,
) -> Result<Measurement, MeasureError> {
    let started = Instant::now();
    let n = config.cpus.len();
    let rounds = if config.parallel {
        schedule::round_robin(n)
    } else {
        schedule::sequential(n)
    };
    let mut m = Measuring {
        config,
        what,
        started,
        budget_end: config.budget.map(|b| started + b),
        rounds,
        per_run: vec![vec![Vec::new(); n]; n],
        pairs_done: 0,
        rounds_run: 0,
        runs_completed: 0,
        // A round needs room for at least min_samples samples to mean anything.
        least_useful: config.sample_duration * (2 * config.min_samples as u32),
        disturbance: Vec::new(),
    };
    m.run_all(progress)?;
    Ok(m.finish())
}

/// A measurement under way: its plan and what the runs so far gave.
struct Measuring<'a> {
    config: &'a MeasureConfig,
    /// The progress task's name.
    what: &'a str,
    started: Instant,
    /// When the budget runs out, if there is one.
    budget_end: Option<Instant>,
    /// The rounds of one run: pairs (indices) measured together.
    rounds: Vec<Vec<(usize, usize)>>,
    /// Each pair's statistics, one entry per run that measured it.
    per_run: Vec<Vec<Vec<PairStat>>>,
    pairs_done: usize,
    rounds_run: usize,
    runs_completed: usize,
    /// The least time left in which a round still means something.
    least_useful: Duration,
    /// Each run's disturbance, when watched.
    disturbance: Vec<Option<Disturbance>>,
}

impl Measuring<'_> {
    /// Every run of the matrix, spaced as asked, each watched for
    /// disturbance when asked.
    fn run_all(&mut self, progress: &mut dyn Progress) -> Result<(), MeasureError> {
        let config = self.config;
        let plan: CpuSet = config.cpus.iter().copied().collect();
        let fs = FsRoot::live();
        for run in 0..config.repeats {
            if let Some(gap) = config.spacing {
                let start = self.started + gap * run as u32;
                if self.budget_end.is_none_or(|end| start < end) {
                    std::thread::sleep(start.saturating_duration_since(Instant::now()));
                }
            }
            let watch = config.disturbance.map(|_| Watch::start(&fs));
            if self.one_run(run, progress)? {
                self.runs_completed += 1;
            }
            if let (Some(w), Some(t)) = (watch, config.disturbance) {
                self.disturbance.push(w.finish(Some(&plan), t));
            }
        }
        Ok(())
    }

    /// Run `run`: its rounds in rotated order, those the budget leaves no
    /// room for skipped; whether every round ran.
    fn one_run(&mut self, run: usize, progress: &mut dyn Progress) -> Result<bool, MeasureError> {
        let config = self.config;
        let runs_total = config.repeats;
        let order = schedule::rotated(self.rounds.len(), run, runs_total);
        let mut complete = true;
        for (r, &round_idx) in order.iter().enumerate() {
            let Some(deadline) = self.round_deadline() else {
                complete = false;
                continue;
            };
            let run_label = if runs_total > 1 {
                format!(", run {}/{runs_total}", run + 1)
            } else {
                String::new()
            };
            let label = format!(
                "{}{run_label}, round {}/{}",
                self.what,
                r + 1,
                self.rounds.len()
            );
            let pairs_done = &mut self.pairs_done;
            let results = run_round(config, &self.rounds[round_idx], deadline, &mut |_, _| {
                *pairs_done += 1;
                progress.step(&label, *pairs_done as u64);
            })?;
            for ((a, b), stat) in results {
                self.per_run[a][b].push(stat);
            }
            self.rounds_run += 1;
        }
        Ok(complete)
    }

    /// When a round starting now must end: after the time per pair, or
    /// at the budget's end; `None` when the budget leaves too little.
    fn round_deadline(&self) -> Option<Instant> {
        let config = self.config;
        let now = Instant::now();
        match self.budget_end {
            Some(end)
                if end.saturating_duration_since(now)
                    < self.least_useful.min(config.max_time_per_pair) =>
            {
                None
            }
            Some(end) => Some((now + config.max_time_per_pair).min(end)),
            None => Some(now + config.max_time_per_pair),
        }
    }

    /// The measurement: each pair's runs combined into the matrix and its
    /// statistics, the pairs skipped or measured in fewer runs.
    // Index loops: cells are addressed as (row, column) pairs.
    #[allow(clippy::needless_range_loop)]
    fn finish(self) -> Measurement {
        let config = self.config;
        let n = config.cpus.len();
        let runs_total = config.repeats;
        let mut matrix = LatencyMatrix::new(config.cpus.clone());
        let mut stats: Vec<Vec<Option<PairStat>>> = vec![vec![None; n]; n];
        let mut skipped = Vec::new();
        let mut fewer_runs = Vec::new();
        for a in 0..n {
            for b in 0..a {
                let ids = (config.cpus[a], config.cpus[b]);
                let runs = &self.per_run[a][b];
                let Some(stat) = self.combine(ids, runs) else {
                    skipped.push(ids);
                    continue;
                };
                if runs.len() < runs_total {
                    fewer_runs.push(ids);
                }
                matrix.set(a, b, stat.median_ns);
                stats[a][b] = Some(stat.clone());
                stats[b][a] = Some(stat);
            }
        }
        matrix.stats = Some(stats);
        matrix.method = Some(config.method.as_str().to_string());
        matrix.source = Some("measured".to_string());
        Measurement {
            matrix,
            skipped,
            fewer_runs,
            rounds_run: self.rounds_run,
            rounds_planned: self.rounds.len() * runs_total,
            runs_planned: runs_total,
            runs_completed: self.runs_completed,
            elapsed: self.started.elapsed(),
            disturbance: self.disturbance,
        }
    }

    /// The runs of the pair of CPUs `ids` combined (`None`: never
    /// measured), noisy on a virtual machine or when a run was disturbed.
    fn combine(&self, ids: (usize, usize), runs: &[PairStat]) -> Option<PairStat> {
        let mut stat = PairStat::combine(runs)?;
        stat.noisy |= self.config.virtual_machine;
        // A run in which other work took a share over the threshold of
        // either CPU: its figures were taken while the pair shared its
        // CPUs, whatever the median says (a median is robust to the few
        // round trips a time slice spoils; the pair's latency is not).
        stat.noisy |= self
            .disturbance
            .iter()
            .flatten()
            .any(|d| d.disturbed_cpu(ids.0) || d.disturbed_cpu(ids.1));
        Some(stat)
    }
}

/// Matrix indices of a pair, ping side first.
type Pair = (usize, usize);

/// A pair's statistics, or why its threads could not be pinned.
type PairOutcome = Result<PairStat, Vec<PinFailure>>;

fn validate(c: &MeasureConfig) -> Result<(), MeasureError> {
    let distinct: CpuSet = c.cpus.iter().copied().collect();
    if distinct.len() != c.cpus.len() {
        return Err(MeasureError::RepeatedCpu {
            cpus: c.cpus.clone(),
        });
    }
    if c.cpus.len() < 2 {
        return Err(MeasureError::TooFewCpus { got: c.cpus.len() });
    }
    if !(c.target_rel_ci > 0.0 && c.target_rel_ci < 1.0) {
        return Err(MeasureError::BadTarget {
            target: c.target_rel_ci,
        });
    }
    if c.repeats == 0 {
        return Err(MeasureError::NoRun);
    }
    if c.max_time_per_pair.is_zero() || c.sample_duration.is_zero() {
        return Err(MeasureError::ZeroDuration);
    }
    Ok(())
}

/// Measures the disjoint `pairs` (matrix indices, ping side first) at the
/// same time: two pinned threads per pair, all released by one barrier so
/// the pairs really overlap. Calls `done` on this thread as each finishes.
fn run_round(
    config: &MeasureConfig,
    pairs: &[(usize, usize)],
    deadline: Instant,
    done: &mut dyn FnMut(Pair, &PairOutcome),
) -> Result<Vec<(Pair, PairStat)>, MeasureError> {
    let lines: Vec<PairLines> = pairs.iter().map(|_| PairLines::default()).collect();
    let pin_failed: Vec<AtomicBool> = pairs.iter().map(|_| AtomicBool::new(false)).collect();
    let pin_errors: Vec<Mutex<Vec<PinFailure>>> =
        pairs.iter().map(|_| Mutex::new(Vec::new())).collect();
    let barrier = Barrier::new(2 * pairs.len());
    let (tx, rx) = mpsc::channel::<(usize, PairOutcome)>();
    let mut results = Vec::with_capacity(pairs.len());
    let mut first_error = None;

    std::thread::scope(|s| {
        for (k, &(a, b)) in pairs.iter().enumerate() {
            let (lines, failed, errors, barrier) =
                (&lines[k], &pin_failed[k], &pin_errors[k], &barrier);
            let pin = move |cpu: usize| {
                if let Err(source) = affinity::pin_current_thread(cpu) {
                    failed.store(true, Ordering::SeqCst);
                    errors.lock().unwrap().push(PinFailure { cpu, source });
                }
            };
            let (cpu_a, cpu_b) = (config.cpus[a], config.cpus[b]);
            s.spawn(move || {
                pin(cpu_b);
                barrier.wait();
                if !failed.load(Ordering::SeqCst) {
                    pingpong::pong(lines, config.method);
                }
            });
            let tx = tx.clone();
            s.spawn(move || {
                pin(cpu_a);
                barrier.wait();
                let outcome = if failed.load(Ordering::SeqCst) {
                    Err(std::mem::take(&mut *errors.lock().unwrap()))
                } else {
                    let mut pinger = Pinger::new(lines, config.method);
                    let stat = sample_pair(&mut pinger, config, deadline);
                    pinger.stop();
                    Ok(stat)
                };
                let _ = tx.send((k, outcome));
            });
        }
        drop(tx);
        for (k, outcome) in rx {
            done(pairs[k], &outcome);
            match outcome {
                Ok(stat) => results.push((pairs[k], stat)),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    });
    match first_error {
        Some(failures) => Err(MeasureError::Pin { failures }),
        None => Ok(results),
    }
}

/// The ping side's work for one pair: calibrate the batch size, discard a
/// warm-up sample, then sample until the stopping rule or the deadline.
fn sample_pair(pinger: &mut Pinger, config: &MeasureConfig, deadline: Instant) -> PairStat {
    let target = config.sample_duration.as_secs_f64();
    // Calibration: time doubling batches and keep the fastest time per
    // round trip seen (a batch can only be slowed down: by the other thread
    // not running yet, an interrupt, a preemption). At least four batches,
    // so one slow first batch cannot make the samples tiny. Also warms the
    // caches and wakes the cores.
    let mut batch: u64 = 8;
    let mut best = f64::INFINITY; // seconds per round trip
    for timed in 1.. {
        let t0 = Instant::now();
        pinger.round_trips(batch);
        best = best.min(t0.elapsed().as_secs_f64() / batch as f64);
        let enough = timed >= 4 && batch as f64 * best >= target;
        if enough || Instant::now() >= deadline || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let round_trips = ((target / best.max(1e-12)).ceil() as u64).clamp(1, 1 << 32);
    pinger.round_trips(round_trips); // warm-up sample, discarded

    let mut samples = SortedSamples::new();
    // Past 2000 samples the stop rule is checked every n/200-th sample
    // (overshooting it by at most 0.5% of the samples).
    let mut next_check = config.min_samples;
    loop {
        let t0 = Instant::now();
        pinger.round_trips(round_trips);
        let end = Instant::now();
        let one_way_ns = (end - t0).as_nanos() as f64 / round_trips as f64 / 2.0;
        samples.push(one_way_ns);
        let n = samples.len();
        if n >= next_check {
            next_check = if n < 2000 { n + 1 } else { n + n / 200 };
            if let Some(s) = samples.summary() {
                if s.within(config.target_rel_ci) {
                    break;
                }
            }
        }
        if end >= deadline {
            break;
        }
    }
    let s = samples.summary().expect("at least one sample was taken");
    PairStat {
        median_ns: s.median,
        mean_ns: s.mean,
        ci_low_ns: s.ci_low,
        ci_high_ns: s.ci_high,
        samples: s.samples as u64,
        noisy: !s.within(config.target_rel_ci) || s.samples < config.min_samples,
        run_medians_ns: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn all_usable_cpus_by_default() {
        assert_eq!(
            choose_cpus(None, &set("0-7"), &set("2-9")).unwrap(),
            vec![2, 3, 4, 5, 6, 7]
        );
        assert_eq!(
            choose_cpus(Some(&set("3,5")), &set("0-7"), &set("0-7")).unwrap(),
            vec![3, 5]
        );
    }

    #[test]
    fn offline_and_forbidden_cpus_are_named() {
        let e = choose_cpus(Some(&set("0-5")), &set("0-3"), &set("0-2")).unwrap_err();
        assert_eq!(e.requested(), Some(&set("0-5")));
        assert!(matches!(
            &e,
            CpuChoiceError::Unusable { offline, forbidden, .. }
                if *offline == set("4-5") && *forbidden == set("3")
        ));
        assert_eq!(
            e.to_string(),
            "CPUs 4-5 are offline (online: 0-3); CPU 3 is not allowed for this process \
             (its affinity/cpuset allows 0-2)"
        );
    }

    #[test]
    fn fewer_than_two_cpus() {
        let e = choose_cpus(Some(&set("1")), &set("0-3"), &set("0-3")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "core-to-core latency needs at least 2 CPUs (usable here: 0-3)"
        );
        assert_eq!(e.requested(), Some(&set("1")));
        let e = choose_cpus(None, &set("0-3"), &set("2")).unwrap_err();
        assert_eq!(e.requested(), None);
        assert!(
            e.to_string()
                .contains("may run only on CPU 2 (online: 0-3, affinity: 2)"),
            "{e}"
        );
    }

    #[test]
    fn bad_configs_are_rejected_before_any_thread_starts() {
        let c = MeasureConfig {
            cpus: vec![0],
            ..Default::default()
        };
        assert!(matches!(
            measure(&c).unwrap_err(),
            MeasureError::TooFewCpus { got: 1 }
        ));
        let c = MeasureConfig {
            cpus: vec![0, 0],
            ..Default::default()
        };
        assert!(matches!(
            measure(&c).unwrap_err(),
            MeasureError::RepeatedCpu { .. }
        ));
        let c = MeasureConfig {
            cpus: vec![0, 1],
            target_rel_ci: 0.0,
            ..Default::default()
        };
        let e = measure(&c).unwrap_err();
        assert!(matches!(e, MeasureError::BadTarget { .. }), "{e:?}");
        assert!(e.to_string().contains("(0, 1)"), "{e}");
        let c = MeasureConfig {
            cpus: vec![0, 1],
            repeats: 0,
            ..Default::default()
        };
        assert!(matches!(measure(&c).unwrap_err(), MeasureError::NoRun));
    }
}
