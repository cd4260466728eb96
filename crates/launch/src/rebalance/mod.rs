//! `balance` over running work: spread processes (or threads) that already
//! run over CPUs in proportion to capacity, with the planner's `balance`
//! policy ([`pinsight_plan::plan()`], used as it is), and put them back on
//! request.
//!
//! Steps of [`rebalance`]: select the tasks ([`select`]); the CPUs are the
//! ones asked for, else the union of the tasks' current affinities, both
//! within the usable CPUs; plan `balance` for as many tasks on the
//! topology restricted to those CPUs; give each task a place, keeping a
//! task where it already sits when its CPU still has room there (fewer
//! migrations, warm caches); measure the load; save every thread's
//! affinity to the state file ([`state`]) *before* changing anything;
//! apply all or nothing (a refused change puts back what was changed);
//! measure again.

pub mod load;
pub mod select;
pub mod state;
pub mod watch;

use load::{LoadError, LoadView};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_plan::{Plan, PlanError, Request as PlanRequest, Weights, WeightsError};
use pinsight_sys::affinity;
use pinsight_sys::procfs;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use select::{Selector, Task};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// What to rebalance and how.
#[derive(Clone, Debug)]
pub struct Request {
    pub selector: Selector,
    /// One task per thread (else one per process, all its threads
    /// sharing the task's CPUs).
    pub per_thread: bool,
    /// The CPUs to spread over (`None`: the union of the tasks' current
    /// affinities); always within the usable CPUs.
    pub cpus: Option<CpuSet>,
    /// Measured per-CPU speed for the plan (as `plan balance` takes it).
    pub weights: Option<Weights>,
    /// Compute and show, change nothing, write no state.
    pub dry_run: bool,
    /// How long to measure the load before and after (`None`: do not).
    pub interval: Option<Duration>,
    /// Where the previous affinities are saved (needed unless `dry_run`).
    pub state: Option<PathBuf>,
    /// Processes whose run time is not load (an emulation's stealers).
    pub exclude: Vec<pinsight_load::Excluded>,
}

/// What happened to one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Given its new CPUs.
    Moved,
    /// It already had them.
    Unchanged,
    /// Dry run: it would be moved.
    WouldMove,
    /// It exited before it could be moved (or some of its threads did).
    Exited,
}

/// One task and where it goes.
#[derive(Clone, Debug, Serialize)]
pub struct Move {
    pub pid: i32,
    pub tid: Option<i32>,
    pub name: String,
    pub threads: usize,
    pub before: CpuSet,
    pub target: CpuSet,
    pub outcome: Outcome,
}

/// The result of [`rebalance`].
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub dry_run: bool,
    pub per_thread: bool,
    /// The CPUs spread over.
    pub cpus: CpuSet,
    /// Each CPU's relative capacity as the plan used it (fastest = 1.0).
    pub capacity: Vec<CpuCapacity>,
    /// Where the capacities came from (the planner's words).
    pub capacity_source: String,
    /// `(cpu, tasks)` before (tasks pinned to that one CPU) and planned.
    pub per_cpu: Vec<CpuTasks>,
    pub moves: Vec<Move>,
    /// The state file written (`None` on a dry run).
    pub state: Option<PathBuf>,
    pub load_before: Option<LoadView>,
    pub load_after: Option<LoadView>,
    /// The progress the plan expects of the selected tasks
    /// ([`pinsight_load::progress::expected`]).
    pub expected: Expected,
    pub notes: Vec<String>,
}

/// What the plan expects: each CPU's capacity shared equally among the
/// selected threads that want a whole CPU and may run there.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expected {
    /// Each task's expected progress (fastest-CPU seconds per second),
    /// in the order of [`Report::moves`].
    pub tasks: Vec<f64>,
    /// Max/min over the threads counted; `None` with fewer than two.
    pub imbalance: Option<f64>,
    /// The threads counted: those that wanted a whole CPU in the
    /// measurement before, else (no measurement) every selected thread.
    pub threads: usize,
    /// Whether the threads counted are the ones measured wanting a CPU.
    pub measured: bool,
}

/// A CPU's relative capacity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuCapacity {
    pub cpu: usize,
    pub capacity: f64,
}

/// Tasks on one CPU before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CpuTasks {
    pub cpu: usize,
    /// Tasks pinned to this CPU alone before.
    pub before: usize,
    /// Tasks the plan gives it.
    pub after: usize,
}

/// Why nothing was changed (or everything was put back).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RebalanceError {
    /// PIDs with no live process (usage).
    #[error("no process with PID {}", list(.0))]
    UnknownPids(Vec<i32>),
    /// pinsight's own process was named (usage).
    #[error("PID {0} is this pinsight process itself")]
    OwnProcess(i32),
    /// An ancestor of pinsight was named: the shell, `timeout` or `sudo`
    /// it runs under (usage).
    #[error("PID {pid} ('{name}') is an ancestor of this pinsight process (what it runs under); it is never moved")]
    Ancestor { pid: i32, name: String },
    /// A kernel thread was named (usage).
    #[error("PID {pid} ('{name}') is a kernel thread; kernel threads are never moved")]
    KernelThread { pid: i32, name: String },
    /// A pattern that matches no process or thread (usage).
    #[error("no process or thread matches '{0}'")]
    NoMatch(String),
    /// A pattern that does not compile (usage; the text escaped for a
    /// terminal).
    #[error(
        "'{}' is not a regular expression: {reason}",
        pinsight_sys::text::shown(text)
    )]
    BadRegex { text: String, reason: String },
    /// No such cgroup, or not one with `file` (usage).
    #[error("no cgroup {dir} (no {file} there)")]
    NoCgroup { dir: String, file: String },
    /// A cgroup with no live member (usage).
    #[error("cgroup {0} has no process in it")]
    EmptyCgroup(String),
    /// CPUs asked for that are not usable (usage).
    #[error("CPUs {asked} are not usable here (usable: {usable})")]
    CpusNotUsable { asked: CpuSet, usable: CpuSet },
    /// The tasks' affinities have no usable CPU (usage).
    #[error("the selected tasks may run on {allowed}, none of which is usable (usable: {usable})")]
    NoCpus { allowed: CpuSet, usable: CpuSet },
    /// The planner refused (usage).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The weights do not cover the CPUs (usage).
    #[error(transparent)]
    Weights(#[from] WeightsError),
    /// The load could not be measured (runtime).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The state file could not be written: nothing was changed (runtime).
    #[error("cannot save the current affinities to {path}: {reason}; nothing was changed")]
    SaveState { path: PathBuf, reason: String },
    /// The kernel refused a change: what was changed was put back (runtime).
    #[error("{}", refused_text(.pid, .tid, .name, .reason, .owner, .restored))]
    Refused {
        pid: i32,
        tid: i32,
        name: String,
        reason: String,
        /// The owner's uid when the refusal is EPERM.
        owner: Option<u32>,
        /// Threads put back to their previous affinity.
        restored: usize,
    },
    /// SIGINT, SIGTERM or SIGHUP stopped the balance (runtime; the
    /// command ends with 128 + the signal). `moved` threads were moved
    /// before it came; `state` is the file that puts them back.
    #[error("{}", interrupted_text(.signal, .moved, .state))]
    Interrupted {
        signal: i32,
        moved: usize,
        state: Option<PathBuf>,
    },
    /// A state file someone else could have written (usage).
    #[error("{path} not restored: {reason}")]
    UntrustedState { path: PathBuf, reason: String },
    /// A state file that cannot be read (usage).
    #[error("cannot read state file {path}: {reason}")]
    ReadState { path: PathBuf, reason: String },
    /// A file that is not a state file (usage).
    #[error("{path} is not a pinsight balance state file: {reason}")]
    BadState { path: PathBuf, reason: String },
}

fn list(v: &[i32]) -> String {
    v.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn refused_text(
    pid: &i32,
    tid: &i32,
    name: &str,
    reason: &str,
    owner: &Option<u32>,
    restored: &usize,
) -> String {
    let who = owner.map_or(String::new(), |u| format!(" (owned by uid {u})"));
    format!(
        "the kernel refused to move thread {tid} ('{name}') of PID {pid}{who}: {reason}; {restored} thread(s) already moved were put back, nothing is changed"
    )
}

fn interrupted_text(signal: &i32, moved: &usize, state: &Option<PathBuf>) -> String {
    match (*moved, state) {
        (0, _) => format!("stopped by signal {signal} before anything moved; nothing is changed"),
        (n, Some(p)) => format!(
            "stopped by signal {signal} after moving {n} thread(s), which stay moved; \
             put them back with: pinsight balance --restore {}",
            pinsight_lifecycle::interrupt::shell_quote(&p.display().to_string())
        ),
        (n, None) => format!("stopped by signal {signal} after moving {n} thread(s)"),
    }
}

/// The input a [`RebalanceError`] is about, for a caller to name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The PIDs of [`Selector::Pids`].
    Pids,
    /// The pattern of [`Selector::Match`].
    Pattern,
    /// The directory of [`Selector::Cgroup`].
    Cgroup,
    /// [`Request::cpus`].
    Cpus,
    /// [`Request::weights`].
    Weights,
    /// A state file given to restore from.
    StateFile,
}

impl RebalanceError {
    /// The input the error is about, when it is one input's.
    pub fn input(&self) -> Option<Input> {
        use RebalanceError as E;
        Some(match self {
            E::UnknownPids(_) | E::OwnProcess(_) | E::Ancestor { .. } | E::KernelThread { .. } => {
                Input::Pids
            }
            E::NoMatch(_) | E::BadRegex { .. } => Input::Pattern,
            E::NoCgroup { .. } | E::EmptyCgroup(_) => Input::Cgroup,
            E::CpusNotUsable { .. } => Input::Cpus,
            E::Weights(_) => Input::Weights,
            E::ReadState { .. } | E::BadState { .. } | E::UntrustedState { .. } => Input::StateFile,
            _ => return None,
        })
    }

    /// The exit code: 128 + the signal for [`RebalanceError::Interrupted`],
    /// else 2 for the input's errors and 1 for the machine's.
    pub fn exit_code(&self) -> i32 {
        match self {
            RebalanceError::Interrupted { signal, .. } => {
                pinsight_lifecycle::exit::signal_code(*signal)
            }
            e if e.is_usage() => 2,
            _ => 1,
        }
    }

    /// Whether the error is the input's (exit 2) rather than the machine's (1).
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            RebalanceError::Load(_)
                | RebalanceError::SaveState { .. }
                | RebalanceError::Refused { .. }
                | RebalanceError::Interrupted { .. }
        )
    }
}

/// Selects, plans, measures, saves, applies and measures again (see the
/// module's documentation): [`prepare`], then [`Prepared::apply`]. Live
/// machine only: affinity is a syscall.
pub fn rebalance(
    fs: &FsRoot,
    topo: &Topology,
    req: &Request,
    progress: &mut dyn Progress,
) -> Result<Report, RebalanceError> {
    prepare(fs, topo, req)?.apply(fs, req, progress)
}

/// The selection and its plan, made before anything is measured or
/// moved: a caller shows [`Prepared::tasks`] first (what `balance`
/// prints before anything moves), then applies it.
#[derive(Debug)]
pub struct Prepared {
    tasks: Vec<Task>,
    cpus: CpuSet,
    plan: pinsight_plan::Plan,
    /// `(cpu, relative capacity, speed while a task runs there)`.
    rel: Vec<(usize, f64, f64)>,
    source: String,
    targets: Vec<CpuSet>,
}

/// Selects the tasks and plans their CPUs; changes nothing.
pub fn prepare(fs: &FsRoot, topo: &Topology, req: &Request) -> Result<Prepared, RebalanceError> {
    let tasks = select::select(fs, &req.selector, req.per_thread)?;
    let usable = topo.usable();
    let cpus = match &req.cpus {
        Some(asked) => {
            let bad = asked.difference(&usable);
            if !bad.is_empty() {
                return Err(RebalanceError::CpusNotUsable { asked: bad, usable });
            }
            asked.clone()
        }
        None => {
            let allowed = tasks.iter().fold(CpuSet::new(), |a, t| a.union(&t.before));
            let cpus = allowed.intersection(&usable);
            if cpus.is_empty() {
                return Err(RebalanceError::NoCpus { allowed, usable });
            }
            cpus
        }
    };
    let (plan, rel, source) = plan_over(fs, topo, &cpus, tasks.len(), req.weights.as_ref())?;
    let targets = assign(&tasks, &plan);
    Ok(Prepared {
        tasks,
        cpus,
        plan,
        rel,
        source,
        targets,
    })
}

/// Each CPU's `(cpu, relative capacity, speed while a task runs there)`.
pub type Capacities = Vec<(usize, f64, f64)>;

/// The `balance` plan for `n` tasks over `cpus`, each CPU's `(cpu,
/// relative capacity, speed while a task runs there)` and where the
/// capacities came from (the planner's words).
pub fn plan_over(
    fs: &FsRoot,
    topo: &Topology,
    cpus: &CpuSet,
    n: usize,
    weights: Option<&Weights>,
) -> Result<(Plan, Capacities, String), RebalanceError> {
    let inside = pinsight_plan::slice::restrict(topo, cpus);
    let plan = pinsight_plan::plan(
        &inside,
        &PlanRequest {
            tasks: Some(n),
            weights: weights.cloned(),
            ..PlanRequest::new("balance".parse().expect("balance is a policy"))
        },
    )?;
    let (caps, source) = pinsight_plan::balance::capacities(&inside, cpus, weights)?;
    let max = caps
        .iter()
        .map(|(_, w)| *w)
        .fold(0.0f64, f64::max)
        .max(1e-12);
    // A frequency cap lowers the speed of a CPU whose capacity is the
    // hardware's at full clock; weights (measured) and declared speeds
    // already are the speed (as `load` takes them).
    let capped = !matches!(
        source,
        pinsight_plan::balance::CapacitySource::Weights
            | pinsight_plan::balance::CapacitySource::DeclaredSpeed
    );
    let rel: Vec<(usize, f64, f64)> = caps
        .iter()
        .map(|(c, w)| {
            let r = w / max;
            let cap = if capped {
                pinsight_load::freq_cap(fs, *c).unwrap_or(1.0)
            } else {
                1.0
            };
            (*c, r, r * cap)
        })
        .collect();
    Ok((plan, rel, source.describe().to_string()))
}

impl Prepared {
    /// The selected tasks, ascending by PID then TID.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The CPUs the tasks are spread over.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// Measures, saves, applies (unless a dry run) and measures again.
    pub fn apply(
        self,
        fs: &FsRoot,
        req: &Request,
        progress: &mut dyn Progress,
    ) -> Result<Report, RebalanceError> {
        let Prepared {
            tasks,
            cpus,
            plan,
            rel,
            source,
            targets,
        } = self;
        let steps = if req.interval.is_some() { 3 } else { 1 };
        progress.begin("balance", steps, 0);
        let result = apply_measured(fs, req, &tasks, &targets, &rel, progress);
        progress.end();
        let (moves, load_before, load_after) = result?;
        let per_cpu = per_cpu(&tasks, &plan);
        let expected = expected(&tasks, &targets, &rel, load_before.as_ref());
        Ok(Report {
            dry_run: req.dry_run,
            per_thread: req.per_thread,
            cpus,
            capacity: rel
                .iter()
                .map(|(cpu, capacity, _)| CpuCapacity {
                    cpu: *cpu,
                    capacity: *capacity,
                })
                .collect(),
            capacity_source: source,
            per_cpu,
            state: (!req.dry_run).then(|| req.state.clone()).flatten(),
            notes: notes(fs, &moves, &plan, req.dry_run),
            moves,
            load_before,
            load_after,
            expected,
        })
    }
}

/// The plan's expected progress ([`Expected`]): the threads that wanted a
/// whole CPU before (all of them without a measurement), each allowed its
/// task's target CPUs, on CPUs of their effective speed (an emulation's
/// lower share included).
fn expected(
    tasks: &[Task],
    targets: &[CpuSet],
    rel: &[(usize, f64, f64)],
    before: Option<&LoadView>,
) -> Expected {
    let capacity: BTreeMap<usize, f64> = rel.iter().map(|(c, _, s)| (*c, *s)).collect();
    let wanting: Vec<usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| match before {
            Some(v) => v.tasks.get(i).map_or(0, |l| l.wanting),
            None => t.threads.len(),
        })
        .collect();
    let mut places: Vec<Vec<usize>> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (i, n) in wanting.iter().enumerate() {
        for _ in 0..*n {
            places.push(targets[i].iter().collect());
            owner.push(i);
        }
    }
    let rates = pinsight_load::progress::expected(&places, &capacity);
    let mut per_task = vec![0.0; tasks.len()];
    for (r, i) in rates.iter().zip(&owner) {
        per_task[*i] += r;
    }
    Expected {
        tasks: per_task,
        imbalance: pinsight_load::progress::ratio_of(&rates),
        threads: rates.len(),
        measured: before.is_some(),
    }
}

type Applied = (Vec<Move>, Option<LoadView>, Option<LoadView>);

/// Measure, apply (or not), measure again.
fn apply_measured(
    fs: &FsRoot,
    req: &Request,
    tasks: &[Task],
    targets: &[CpuSet],
    caps: &[(usize, f64, f64)],
    progress: &mut dyn Progress,
) -> Result<Applied, RebalanceError> {
    // A signal (SIGINT, SIGTERM, SIGHUP) ends the balance in any phase:
    // before the moves nothing is changed; after them the moves stay and
    // the error names the state file that puts them back.
    let stopped = |signal: i32, moved: &[Move]| RebalanceError::Interrupted {
        signal,
        moved: moved
            .iter()
            .filter(|m| m.outcome == Outcome::Moved)
            .map(|m| m.threads)
            .sum(),
        state: (!req.dry_run).then(|| req.state.clone()).flatten(),
    };
    let measure = |tasks: &[Task], moved: &[Move]| -> Result<Option<LoadView>, RebalanceError> {
        match req.interval {
            None => Ok(None),
            Some(d) => match load::measure(fs, caps, tasks, &req.exclude, d) {
                Ok(v) => Ok(Some(v)),
                Err(load::LoadError::Interrupted(sig)) => Err(stopped(sig, moved)),
                Err(e) => Err(e.into()),
            },
        }
    };
    progress.step("measuring the load before", 0);
    let before = measure(tasks, &[])?;
    let done = u64::from(req.interval.is_some());
    progress.step("moving", done);
    if let Some(sig) = pinsight_lifecycle::interrupt::stopped() {
        return Err(stopped(sig, &[]));
    }
    let moves = if req.dry_run {
        dry_moves(tasks, targets)
    } else {
        let path = req.state.clone().ok_or_else(|| RebalanceError::SaveState {
            path: PathBuf::new(),
            reason: "no state file given".into(),
        })?;
        state::save(fs, tasks, &path)?;
        apply(fs, tasks, targets)?
    };
    if let Some(sig) = pinsight_lifecycle::interrupt::stopped() {
        return Err(stopped(sig, &moves));
    }
    if req.interval.is_none() {
        progress.step("", 1);
        return Ok((moves, before, None));
    }
    progress.step("measuring the load after", 2);
    let after = if req.dry_run {
        None
    } else {
        measure(tasks, &moves)?
    };
    progress.step("", 3);
    Ok((moves, before, after))
}

/// Each task's CPUs: a task pinned to one CPU stays there while that CPU
/// has room in the plan; the others take the plan's remaining places in
/// the plan's order.
pub fn assign(tasks: &[Task], plan: &Plan) -> Vec<CpuSet> {
    let mut room: BTreeMap<usize, usize> = plan
        .tasks_per_cpu
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut out: Vec<Option<CpuSet>> = vec![None; tasks.len()];
    for (i, t) in tasks.iter().enumerate() {
        if t.before.len() != 1 {
            continue;
        }
        let Some(c) = t.before.first() else { continue };
        if let Some(n) = room.get_mut(&c).filter(|n| **n > 0) {
            *n -= 1;
            out[i] = Some(CpuSet::single(c));
        }
    }
    let mut free = Vec::new();
    for p in &plan.places {
        if let Some(n) = p.first().and_then(|c| room.get_mut(&c)).filter(|n| **n > 0) {
            *n -= 1;
            free.push(p.clone());
        }
    }
    let mut free = free.into_iter();
    out.into_iter()
        .map(|o| {
            o.or_else(|| free.next())
                .unwrap_or_else(|| plan.process_mask.clone())
        })
        .collect()
}

fn dry_moves(tasks: &[Task], targets: &[CpuSet]) -> Vec<Move> {
    tasks
        .iter()
        .zip(targets)
        .map(|(t, target)| {
            let outcome = if &t.before == target {
                Outcome::Unchanged
            } else {
                Outcome::WouldMove
            };
            move_of(t, target, outcome)
        })
        .collect()
}

/// What happened to task `t` given `target`.
fn move_of(t: &Task, target: &CpuSet, outcome: Outcome) -> Move {
    Move {
        pid: t.pid,
        tid: t.tid,
        name: t.name.clone(),
        threads: t.threads.len(),
        before: t.before.clone(),
        target: target.clone(),
        outcome,
    }
}

/// Gives every thread its task's CPUs; on a refusal (anything but a
/// thread that exited) puts back every thread changed so far.
fn apply(fs: &FsRoot, tasks: &[Task], targets: &[CpuSet]) -> Result<Vec<Move>, RebalanceError> {
    let mut changed: Vec<(i32, CpuSet)> = Vec::new();
    let mut moves = Vec::with_capacity(tasks.len());
    for (t, target) in tasks.iter().zip(targets) {
        let mut gone = 0;
        let mut moved = false;
        for &tid in &t.threads {
            let Ok(before) = affinity::get_affinity(tid) else {
                gone += 1;
                continue;
            };
            if &before == target {
                continue;
            }
            match affinity::set_affinity(tid, target) {
                Ok(()) => {
                    changed.push((tid, before));
                    moved = true;
                }
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => gone += 1,
                Err(e) => {
                    let restored = roll_back(&changed);
                    let eperm = e.raw_os_error() == Some(libc::EPERM);
                    let reason = match e.raw_os_error() {
                        Some(libc::EPERM) => {
                            "permission denied (EPERM): run as its owner or with CAP_SYS_NICE"
                                .to_string()
                        }
                        Some(libc::EINVAL) if crate::pin::affinity_is_fixed(fs, t.pid, tid) => {
                            "EINVAL: a per-CPU kernel thread (PF_NO_SETAFFINITY)".to_string()
                        }
                        Some(libc::EINVAL) => {
                            format!("EINVAL: CPUs {target} are not allowed by its cgroup")
                        }
                        _ => e.to_string(),
                    };
                    return Err(RebalanceError::Refused {
                        pid: t.pid,
                        tid,
                        name: procfs::task_stat(fs, t.pid, tid)
                            .map_or_else(|| t.name.clone(), |s| s.comm),
                        reason,
                        owner: if eperm {
                            procfs::process_uid(fs, t.pid)
                        } else {
                            None
                        },
                        restored,
                    });
                }
            }
        }
        let outcome = if gone == t.threads.len() || (gone > 0 && !moved) {
            Outcome::Exited
        } else if moved {
            Outcome::Moved
        } else {
            Outcome::Unchanged
        };
        moves.push(move_of(t, target, outcome));
    }
    Ok(moves)
}

/// Puts every changed thread back; returns how many were put back.
fn roll_back(changed: &[(i32, CpuSet)]) -> usize {
    changed
        .iter()
        .rev()
        .filter(|(tid, before)| affinity::set_affinity(*tid, before).is_ok())
        .count()
}

fn per_cpu(tasks: &[Task], plan: &Plan) -> Vec<CpuTasks> {
    let mut before: BTreeMap<usize, usize> = BTreeMap::new();
    for t in tasks.iter().filter(|t| t.before.len() == 1) {
        if let Some(c) = t.before.first() {
            *before.entry(c).or_default() += 1;
        }
    }
    plan.tasks_per_cpu
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(cpu, after)| CpuTasks {
            cpu,
            before: before.get(&cpu).copied().unwrap_or(0),
            after,
        })
        .collect()
}

fn notes(fs: &FsRoot, moves: &[Move], plan: &Plan, dry_run: bool) -> Vec<String> {
    let mut notes: Vec<String> = plan
        .notes
        .iter()
        .filter(|n| n.starts_with("relative capacity") || n.contains(" over "))
        .cloned()
        .collect();
    let exited = moves
        .iter()
        .filter(|m| m.outcome == Outcome::Exited)
        .count();
    if exited > 0 {
        notes.push(format!(
            "{exited} task(s) exited before they could be moved"
        ));
    }
    let me = pinsight_sys::process::geteuid();
    let moving = || moves.iter().filter(|m| m.outcome == Outcome::WouldMove);
    if dry_run && me != 0 {
        let others = moving()
            .filter(|m| procfs::process_uid(fs, m.pid).is_some_and(|u| u != me))
            .count();
        if others > 0 {
            notes.push(format!(
                "dry run: {others} task(s) to move belong to another user; moving them needs CAP_SYS_NICE"
            ));
        }
    }
    if dry_run {
        let fixed = moving()
            .filter(|m| crate::pin::affinity_is_fixed(fs, m.pid, m.tid.unwrap_or(m.pid)))
            .count();
        if fixed > 0 {
            notes.push(format!(
                "dry run: {fixed} task(s) are per-CPU kernel threads (PF_NO_SETAFFINITY): the kernel would refuse"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_input_and_exit_code() {
        let e = RebalanceError::UnknownPids(vec![9]);
        assert_eq!((e.input(), e.exit_code()), (Some(Input::Pids), 2));
        let e = RebalanceError::NoMatch("w".into());
        assert_eq!(e.input(), Some(Input::Pattern));
        let e = RebalanceError::EmptyCgroup("a".into());
        assert_eq!(e.input(), Some(Input::Cgroup));
        let e = RebalanceError::ReadState {
            path: "s".into(),
            reason: "gone".into(),
        };
        assert_eq!((e.input(), e.exit_code()), (Some(Input::StateFile), 2));
        let e = RebalanceError::Interrupted {
            signal: 15,
            moved: 0,
            state: None,
        };
        assert_eq!((e.input(), e.exit_code()), (None, 143));
        let e = RebalanceError::SaveState {
            path: "s".into(),
            reason: "full".into(),
        };
        assert_eq!((e.input(), e.exit_code()), (None, 1));
    }

    fn task(pid: i32, before: &str) -> Task {
        Task {
            pid,
            tid: None,
            name: format!("t{pid}"),
            threads: vec![pid],
            before: CpuSet::parse_list(before).unwrap(),
        }
    }

    fn plan(per: &[(usize, usize)], places: &[usize]) -> Plan {
        Plan {
            policy: "balance".into(),
            threads: places.len(),
            process_mask: per
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(c, _)| *c)
                .collect(),
            places: places.iter().map(|c| CpuSet::single(*c)).collect(),
            pinned: true,
            tasks_per_cpu: Some(per.to_vec()),
            notes: vec![],
            memory: None,
            near: None,
        }
    }

    #[test]
    fn tasks_stay_where_the_plan_has_room() {
        // 6 tasks, 3 on each CPU; the plan wants 4 on CPU 0 and 2 on CPU 1:
        // one task of CPU 1 moves, the others stay.
        let tasks: Vec<Task> = (1..=6)
            .map(|p| task(p, if p % 2 == 1 { "0" } else { "1" }))
            .collect();
        let p = plan(&[(0, 4), (1, 2)], &[0, 1, 0, 1, 0, 0]);
        let t = assign(&tasks, &p);
        let on = |c: usize| t.iter().filter(|s| s.first() == Some(c)).count();
        assert_eq!((on(0), on(1)), (4, 2));
        let moved = tasks
            .iter()
            .zip(&t)
            .filter(|(a, b)| &a.before != *b)
            .count();
        assert_eq!(moved, 1);
    }

    #[test]
    fn floating_tasks_take_the_places_left_in_plan_order() {
        let tasks = vec![task(1, "0-1"), task(2, "0-1"), task(3, "1")];
        let p = plan(&[(0, 2), (1, 1)], &[0, 1, 0]);
        let t: Vec<String> = assign(&tasks, &p).iter().map(|s| s.to_string()).collect();
        assert_eq!(t, vec!["0", "0", "1"]);
    }

    #[test]
    fn a_task_that_exited_is_reported_not_fatal() {
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id() as i32;
        gone.wait().unwrap();
        let tasks = vec![task(pid, "0")];
        let moves = apply(
            &FsRoot::live(),
            &tasks,
            &[CpuSet::parse_list("0-1").unwrap()],
        )
        .unwrap();
        assert_eq!(moves[0].outcome, Outcome::Exited);
    }

    #[test]
    fn usage_and_runtime_errors() {
        assert!(RebalanceError::NoMatch("x".into()).is_usage());
        assert!(!RebalanceError::Refused {
            pid: 1,
            tid: 1,
            name: "init".into(),
            reason: "EPERM".into(),
            owner: Some(0),
            restored: 2
        }
        .is_usage());
        assert_eq!(
            RebalanceError::UnknownPids(vec![7, 9]).to_string(),
            "no process with PID 7, 9"
        );
    }
}
