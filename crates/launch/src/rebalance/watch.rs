//! `balance --watch`: the operator's loop as a daemon. Every interval it
//! selects the tasks again (new matching processes join, exited ones are
//! forgotten), measures their progress by capacity
//! ([`super::load::measure`], the code `load` and a one-shot balance
//! use) and decides:
//!
//! - **new tasks** (selected for the first time) are placed at once, on
//!   the places the plan leaves free (tasks already placed keep theirs
//!   while the plan has room for them: [`super::assign`]);
//! - **a standing imbalance**: when the progress imbalance of the tasks
//!   that want a whole CPU has stayed above the threshold for `patience`
//!   intervals in a row, the whole selection is planned again and moved.
//!   One interval over the threshold (a burst, a task between phases)
//!   moves nothing; the count restarts after every move, so the moved
//!   tasks are measured in their new places before anything moves again;
//! - never more than `max_moves` tasks an interval: the rest move in the
//!   next intervals (said in the decision).
//!
//! Before a thread is first moved its affinity is added to the state
//! file (written crash-safe before the move): after a `kill -9`
//! `balance --restore FILE` puts every moved thread back. On SIGINT,
//! SIGTERM or SIGHUP the daemon puts every thread it moved back itself,
//! removes the state file when all went back, and ends.
//!
//! What it leaves to the kernel: where an unpinned task runs within its
//! CPUs, wake-up placement and load balancing of every task it did not
//! select, interrupts (`irq --watch` moves those), frequency and idle
//! states.

use super::load::{self, LoadView};
use super::select::{self, Task};
use super::state::{self, RestoreReport, SavedThread, State};
use super::{assign, plan_over, Outcome, RebalanceError, Request};
use crate::view::balance as view;
use pinsight_cpuset::CpuSet;
use pinsight_load::journal::Journal;
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use pinsight_sys::{affinity, procfs};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the daemon decides.
#[derive(Clone, Debug)]
pub struct Options {
    /// Progress imbalance (max/min) above which the selection is off.
    pub threshold: f64,
    /// Intervals in a row over the threshold before anything moves.
    pub patience: u32,
    /// Tasks moved at most per interval.
    pub max_moves: usize,
    /// The measuring interval.
    pub interval: Duration,
    /// Stop after this many intervals (and put everything back), as a
    /// signal would; `None`: until a signal.
    pub intervals: Option<u64>,
}

/// What the daemon did in one interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// New tasks were given their places.
    Placed,
    /// The imbalance stood for `patience` intervals: tasks were moved.
    Rebalanced,
    /// Over the threshold, not yet for `patience` intervals.
    Waiting,
    /// Back under the threshold before anything moved.
    Settled,
    /// Nothing to do.
    Steady,
    /// The kernel refused a move: that batch was put back and the task is
    /// left alone from now on.
    Refused,
}

/// One interval's decision: a journal line.
#[derive(Clone, Debug, Serialize)]
pub struct Decision {
    /// 1 for the first interval.
    pub interval: u64,
    /// Seconds since the Unix epoch at the decision.
    pub unix_time: f64,
    pub action: Action,
    /// Tasks selected this interval.
    pub tasks: usize,
    /// Of them, selected for the first time.
    pub new: usize,
    /// Tasks selected before that are gone.
    pub exited: usize,
    /// Progress imbalance over the threads that want a whole CPU.
    pub progress_imbalance: Option<f64>,
    /// Threads that wanted a whole CPU.
    pub wanting: usize,
    /// Intervals in a row over the threshold (before this decision).
    pub over: u32,
    /// Tasks moved (or placed) now.
    pub moved: usize,
    /// Moves left for the next intervals (at most `max_moves` each).
    pub pending: usize,
    /// The progress imbalance the plan expects after the moves.
    pub expected: Option<f64>,
    /// Per CPU, tasks pinned to it alone after this interval.
    pub per_cpu: BTreeMap<usize, usize>,
    /// Why the kernel refused, when it did.
    pub error: Option<String>,
}

impl Decision {
    /// Whether the interval changed anything worth a journal line: quiet
    /// intervals (nothing to do, no task come or gone) are not.
    pub fn is_news(&self) -> bool {
        !(self.action == Action::Steady && self.new == 0 && self.exited == 0)
    }
}

/// How the daemon ended.
#[derive(Debug, Serialize)]
pub struct End {
    /// The signal that stopped it (`None`: the intervals asked for ran).
    pub signal: Option<i32>,
    pub intervals: u64,
    /// What was put back.
    pub restored: RestoreReport,
    /// Whether the state file was removed (everything went back).
    pub state_removed: bool,
}

impl End {
    /// The exit code: 128 + the signal that stopped the daemon, else 0.
    pub fn exit_code(&self) -> i32 {
        self.signal.map_or(0, pinsight_lifecycle::exit::signal_code)
    }
}

/// The threads moved so far, with their affinity before the first move.
struct Saved {
    path: PathBuf,
    threads: BTreeMap<i32, SavedThread>,
}

impl Saved {
    /// Adds the threads of `tasks` not saved yet and writes the file.
    fn add(&mut self, fs: &FsRoot, tasks: &[&Task]) -> Result<(), RebalanceError> {
        for t in tasks {
            for &tid in &t.threads {
                if self.threads.contains_key(&tid) {
                    continue;
                }
                let (Some(st), Ok(aff)) = (
                    procfs::task_stat(fs, t.pid, tid),
                    affinity::get_affinity(tid),
                ) else {
                    continue;
                };
                self.threads.insert(
                    tid,
                    SavedThread {
                        pid: t.pid,
                        tid,
                        start_ticks: st.start_ticks,
                        name: st.comm,
                        affinity: aff,
                    },
                );
            }
        }
        self.write()
    }

    /// Forgets the threads that exited (or whose TID was reused).
    fn forget_gone(&mut self, fs: &FsRoot) -> bool {
        let before = self.threads.len();
        self.threads.retain(|_, s| {
            procfs::task_stat(fs, s.pid, s.tid)
                .is_some_and(|st| st.start_ticks == s.start_ticks && st.state != 'Z')
        });
        self.threads.len() != before
    }

    fn state(&self) -> State {
        State {
            format: state::FORMAT.into(),
            version: 1,
            threads: self.threads.values().cloned().collect(),
        }
    }

    fn write(&self) -> Result<(), RebalanceError> {
        let text = serde_json::to_string_pretty(&self.state()).expect("a state serializes") + "\n";
        pinsight_lifecycle::output::write(&self.path, text.as_bytes()).map_err(|e| {
            RebalanceError::SaveState {
                path: self.path.clone(),
                reason: e.reason(),
            }
        })
    }
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The tasks of `sel` now; a selection that finds nothing (no match yet,
/// every PID gone) is empty, not an error: the daemon waits for work.
fn select_now(
    fs: &FsRoot,
    req: &Request,
    refused: &BTreeSet<(i32, Option<i32>)>,
) -> Result<Vec<Task>, RebalanceError> {
    let sel = match &req.selector {
        select::Selector::Pids(p) => {
            let alive: Vec<i32> = p
                .iter()
                .copied()
                .filter(|pid| fs.read_opt(format!("/proc/{pid}/stat")).is_some())
                .collect();
            if alive.is_empty() {
                return Ok(Vec::new());
            }
            select::Selector::Pids(alive)
        }
        s => s.clone(),
    };
    match select::select(fs, &sel, req.per_thread) {
        Ok(t) => Ok(t
            .into_iter()
            .filter(|t| !refused.contains(&(t.pid, t.tid)))
            .collect()),
        Err(RebalanceError::NoMatch(_) | RebalanceError::EmptyCgroup(_)) => Ok(Vec::new()),
        // A PID that exited between the check and the selection.
        Err(RebalanceError::UnknownPids(_)) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The CPUs the daemon spreads over, for its whole life: those asked
/// for, else the union of the first selection's affinities (within the
/// usable CPUs), else every usable CPU.
pub fn cpus_for(topo: &Topology, req: &Request, first: &[Task]) -> Result<CpuSet, RebalanceError> {
    let usable = topo.usable();
    if let Some(asked) = &req.cpus {
        let bad = asked.difference(&usable);
        if !bad.is_empty() {
            return Err(RebalanceError::CpusNotUsable { asked: bad, usable });
        }
        return Ok(asked.clone());
    }
    let allowed = first.iter().fold(CpuSet::new(), |a, t| a.union(&t.before));
    let cpus = allowed.intersection(&usable);
    Ok(if cpus.is_empty() { usable } else { cpus })
}

/// Runs the daemon until a signal (or `opts.intervals`), calling
/// `on_decision` after every interval, then puts back every thread it
/// moved. `state_path` receives the saved affinities (written before the
/// first move). Errors: a selection or plan that cannot be made (bad
/// input, before anything moves) or a state file that cannot be written
/// (what was moved is put back first).
pub fn run(
    fs: &FsRoot,
    topo: &Topology,
    req: &Request,
    opts: &Options,
    state_path: &Path,
    on_decision: &mut dyn FnMut(&Decision),
) -> Result<End, RebalanceError> {
    let refused = BTreeSet::new();
    let first = select_now(fs, req, &refused)?;
    let cpus = cpus_for(topo, req, &first)?;
    // The plan is checked once before the loop: bad weights or CPUs are
    // bad input, said before anything runs.
    plan_over(fs, topo, &cpus, first.len().max(1), req.weights.as_ref())?;
    let mut daemon = Daemon {
        fs,
        topo,
        req,
        opts,
        cpus,
        saved: Saved {
            path: state_path.to_path_buf(),
            threads: BTreeMap::new(),
        },
        refused,
        known: BTreeSet::new(),
        over: 0,
        n: 0,
    };
    let signal = loop {
        if let Some(sig) = pinsight_lifecycle::interrupt::stopped() {
            break Some(sig);
        }
        if opts.intervals.is_some_and(|k| daemon.n >= k) {
            break None;
        }
        match daemon.interval()? {
            ControlFlow::Break(sig) => break Some(sig),
            ControlFlow::Continue(d) => on_decision(&d),
        }
    };
    let saved = &daemon.saved;
    let restored = state::restore_loaded(fs, &saved.path, saved.state());
    let all_back = restored
        .threads
        .iter()
        .all(|t| t.outcome != state::RestoreOutcome::Failed);
    let state_removed = all_back && std::fs::remove_file(&saved.path).is_ok();
    Ok(End {
        signal,
        intervals: daemon.n,
        restored,
        state_removed,
    })
}

/// [`run`] with its journal on stdout (through [`pinsight_term::out`]):
/// the opening line, a line per decision that changed something
/// ([`Decision::is_news`]) and the ending, as `journal` writes them.
pub fn run_journaled(
    fs: &FsRoot,
    topo: &Topology,
    req: &Request,
    opts: &Options,
    state_path: &Path,
    journal: Journal,
) -> Result<End, RebalanceError> {
    let say = |text: String| pinsight_term::out::stdout(format_args!("{text}"));
    say(journal.start(|| view::watch_start(opts, state_path)));
    let mut line = |d: &Decision| {
        if d.is_news() {
            say(journal.line(d, || view::decision(d)));
        }
    };
    let end = run(fs, topo, req, opts, state_path, &mut line)?;
    say(journal.end(&end, || view::watch_end(&end, state_path)));
    Ok(end)
}

/// A task's key: its PID, and its TID when the task is one thread.
type TaskKey = (i32, Option<i32>);

/// The daemon's state between intervals.
struct Daemon<'a> {
    fs: &'a FsRoot,
    topo: &'a Topology,
    req: &'a Request,
    opts: &'a Options,
    /// The CPUs the tasks are balanced over.
    cpus: CpuSet,
    /// The affinities of the threads moved so far, and their state file.
    saved: Saved,
    /// Tasks whose move the kernel refused: no longer selected.
    refused: BTreeSet<TaskKey>,
    /// The tasks selected in the last interval.
    known: BTreeSet<TaskKey>,
    /// Intervals in a row over the threshold.
    over: u32,
    /// Intervals begun.
    n: u64,
}

impl Daemon<'_> {
    /// One interval: selects the tasks again, measures them and moves
    /// what the decision says; breaks with the signal that came meanwhile.
    fn interval(&mut self) -> Result<ControlFlow<i32, Decision>, RebalanceError> {
        let fs = self.fs;
        self.n += 1;
        let tasks = select_now(fs, self.req, &self.refused)?;
        let keys: BTreeSet<TaskKey> = tasks.iter().map(|t| (t.pid, t.tid)).collect();
        let exited = self.known.difference(&keys).count();
        let new: BTreeSet<TaskKey> = keys.difference(&self.known).copied().collect();
        self.known = keys;
        if self.saved.forget_gone(fs) {
            self.saved.write()?;
        }
        let (plan, rel, _) = if tasks.is_empty() {
            (None, Vec::new(), String::new())
        } else {
            let weights = self.req.weights.as_ref();
            let (p, r, s) = plan_over(fs, self.topo, &self.cpus, tasks.len(), weights)?;
            (Some(p), r, s)
        };
        let view = match self.look(&tasks, &rel)? {
            ControlFlow::Break(sig) => return Ok(ControlFlow::Break(sig)),
            ControlFlow::Continue(view) => view,
        };
        let imbalance = view
            .as_ref()
            .and_then(|v| v.progress_imbalance.as_ref())
            .map(|p| p.ratio);
        let wanting = view
            .as_ref()
            .and_then(|v| v.progress_imbalance.as_ref())
            .map_or(0, |p| p.tasks);
        let is_over = imbalance.is_some_and(|r| r > self.opts.threshold);
        let was_over = self.over;
        self.over = if is_over { self.over + 1 } else { 0 };
        let mut d = Decision {
            interval: self.n,
            unix_time: now_s(),
            action: Action::Steady,
            tasks: tasks.len(),
            new: new.len(),
            exited,
            progress_imbalance: imbalance,
            wanting,
            over: self.over,
            moved: 0,
            pending: 0,
            expected: None,
            per_cpu: BTreeMap::new(),
            error: None,
        };
        if let Some(plan) = plan {
            let targets = assign(&tasks, &plan);
            let rebalance = self.over >= self.opts.patience.max(1);
            let moving = self.moving(&tasks, &targets, &new, rebalance, &mut d);
            if !moving.is_empty() {
                self.apply_moves(&tasks, &targets, &moving, rebalance, &mut d)?;
                let threads = tasks.iter().map(|t| t.threads.len()).collect::<Vec<_>>();
                let places: Vec<Vec<usize>> = targets.iter().map(|s| s.iter().collect()).collect();
                d.expected = expected_of(view.as_ref(), &threads, &places, &rel);
            } else if is_over {
                d.action = Action::Waiting;
            } else if was_over > 0 {
                d.action = Action::Settled;
            }
            d.per_cpu = pinned_per_cpu(fs, &tasks);
        }
        Ok(ControlFlow::Continue(d))
    }

    /// The tasks' progress over one interval (`None` with no task: the
    /// interval is only waited); breaks with a signal that came meanwhile.
    /// A measure that fails puts back what was moved.
    fn look(
        &self,
        tasks: &[Task],
        rel: &[(usize, f64, f64)],
    ) -> Result<ControlFlow<i32, Option<LoadView>>, RebalanceError> {
        if tasks.is_empty() {
            return Ok(
                match pinsight_lifecycle::interrupt::wait(self.opts.interval) {
                    Some(sig) => ControlFlow::Break(sig),
                    None => ControlFlow::Continue(None),
                },
            );
        }
        let fs = self.fs;
        match load::measure(fs, rel, tasks, &self.req.exclude, self.opts.interval) {
            Ok(v) => Ok(ControlFlow::Continue(Some(v))),
            Err(load::LoadError::Interrupted(sig)) => Ok(ControlFlow::Break(sig)),
            Err(e) => Err(finish_with(fs, &self.saved, e.into())),
        }
    }

    /// Which tasks move, new ones first: the new ones (always), every one
    /// whose place differs when the imbalance has stood long enough
    /// (`rebalance`); at most `max_moves`, the rest said pending in `d`.
    fn moving(
        &self,
        tasks: &[Task],
        targets: &[CpuSet],
        new: &BTreeSet<TaskKey>,
        rebalance: bool,
        d: &mut Decision,
    ) -> Vec<usize> {
        let mut moving: Vec<usize> = (0..tasks.len())
            .filter(|&i| tasks[i].before != targets[i])
            .filter(|&i| rebalance || new.contains(&(tasks[i].pid, tasks[i].tid)))
            .collect();
        moving.sort_by_key(|&i| !new.contains(&(tasks[i].pid, tasks[i].tid)));
        d.pending = moving.len().saturating_sub(self.opts.max_moves);
        moving.truncate(self.opts.max_moves);
        moving
    }

    /// Saves the affinities of the tasks at `moving`, then moves them to
    /// their targets. A refusal is said in `d` and the task is no longer
    /// selected; any other failure puts back what was moved.
    fn apply_moves(
        &mut self,
        tasks: &[Task],
        targets: &[CpuSet],
        moving: &[usize],
        rebalance: bool,
        d: &mut Decision,
    ) -> Result<(), RebalanceError> {
        let fs = self.fs;
        let batch: Vec<&Task> = moving.iter().map(|&i| &tasks[i]).collect();
        let batch_targets: Vec<CpuSet> = moving.iter().map(|&i| targets[i].clone()).collect();
        self.saved
            .add(fs, &batch)
            .map_err(|e| finish_with(fs, &self.saved, e))?;
        let owned: Vec<Task> = batch.iter().map(|t| (*t).clone()).collect();
        match super::apply(fs, &owned, &batch_targets) {
            Ok(moves) => {
                d.moved = moves.iter().filter(|m| m.outcome == Outcome::Moved).count();
                d.action = if rebalance {
                    Action::Rebalanced
                } else {
                    Action::Placed
                };
                self.over = 0;
            }
            Err(RebalanceError::Refused {
                pid, tid, reason, ..
            }) => {
                let t = owned.iter().find(|t| t.pid == pid);
                self.refused.insert((pid, t.and_then(|t| t.tid)));
                d.action = Action::Refused;
                d.error = Some(format!("thread {tid} of PID {pid}: {reason}"));
            }
            Err(e) => return Err(finish_with(fs, &self.saved, e)),
        }
        Ok(())
    }
}

/// The progress imbalance the plan expects: the threads that wanted a
/// whole CPU in `view` (all of them without it) on their places.
fn expected_of(
    view: Option<&LoadView>,
    threads: &[usize],
    places: &[Vec<usize>],
    rel: &[(usize, f64, f64)],
) -> Option<f64> {
    let capacity: BTreeMap<usize, f64> = rel.iter().map(|(c, _, s)| (*c, *s)).collect();
    let mut want = Vec::new();
    for (i, p) in places.iter().enumerate() {
        let k = view.map_or(threads[i], |v| v.tasks.get(i).map_or(0, |l| l.wanting));
        want.extend(std::iter::repeat_n(p.clone(), k));
    }
    pinsight_load::progress::ratio_of(&pinsight_load::progress::expected(&want, &capacity))
}

/// Per CPU, the tasks pinned to it alone now.
fn pinned_per_cpu(fs: &FsRoot, tasks: &[Task]) -> BTreeMap<usize, usize> {
    let mut out = BTreeMap::new();
    for t in tasks {
        let tid = t.tid.unwrap_or(t.pid);
        if let Some(s) = procfs::task_allowed(fs, t.pid, tid).filter(|s| s.len() == 1) {
            if let Some(c) = s.first() {
                *out.entry(c).or_default() += 1;
            }
        }
    }
    out
}

/// Puts back what was moved before returning `e` (the daemon cannot go
/// on); the state file stays when something could not be put back.
fn finish_with(fs: &FsRoot, saved: &Saved, e: RebalanceError) -> RebalanceError {
    let r = state::restore_loaded(fs, &saved.path, saved.state());
    if r.threads
        .iter()
        .all(|t| t.outcome != state::RestoreOutcome::Failed)
    {
        let _ = std::fs::remove_file(&saved.path);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(action: Action, new: usize, exited: usize) -> Decision {
        Decision {
            interval: 1,
            unix_time: 0.0,
            action,
            tasks: 2,
            new,
            exited,
            progress_imbalance: None,
            wanting: 0,
            over: 0,
            moved: 0,
            pending: 0,
            expected: None,
            per_cpu: BTreeMap::new(),
            error: None,
        }
    }

    #[test]
    fn quiet_intervals_are_no_news() {
        assert!(!decision(Action::Steady, 0, 0).is_news());
        assert!(decision(Action::Steady, 1, 0).is_news());
        assert!(decision(Action::Steady, 0, 1).is_news());
        assert!(decision(Action::Waiting, 0, 0).is_news());
        assert_eq!(
            crate::view::balance::decision(&decision(Action::Steady, 0, 0)),
            ""
        );
    }

    #[test]
    fn the_end_exits_with_its_signal() {
        let end = |signal| End {
            signal,
            intervals: 3,
            restored: RestoreReport {
                state: PathBuf::from("s.json"),
                threads: Vec::new(),
            },
            state_removed: true,
        };
        assert_eq!(end(None).exit_code(), 0);
        assert_eq!(end(Some(2)).exit_code(), 130);
    }
}
