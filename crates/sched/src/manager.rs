//! The manager loop: every period, sample → `Scheduler::step` → apply.
//!
//! * **Threads.** Every thread of every managed process, and (with
//!   [`Config::follow_children`]) of the processes they start, as listed
//!   in `/proc/PID/task` each period: new threads join, exited ones
//!   (gone, or zombies) leave.
//! * **Busy threads only.** A thread that ran less than a tenth of the
//!   period (a shell waiting for its children, an idle helper) is not
//!   offered to the policy that period: under AARR an idle thread's small
//!   big-core time would otherwise hold a big core it does not use. The
//!   policy forgets it and takes it back, when busy again, at the current
//!   minimum counters (as CFS places a waking task at `min_vruntime`); a
//!   thread we had put on a big core moves to the small kinds' CPUs while
//!   idle.
//! * **Where the time went** (see [`crate::sample`]): a period's CPU time
//!   counts on the kind we pinned the thread to for that period; unpinned
//!   (new threads, the `os` policy), on the kind of the CPU it was last
//!   seen on.
//! * **Leave no trace.** Every thread whose affinity we changed gets its
//!   own affinity back when [`Manager::run`] returns (normal end, stop,
//!   error) and when the manager is dropped (a panic unwinding past it).

use crate::apply::{Applier, ApplyError, RestoreReport};
use crate::sample::{Resolution, Sampler, ThreadSample};
use crate::sf::{ProgramRef, SfSource, ThreadPeriod};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_sched_model::{
    Assignment, Capacity, Cpu, Kind, Observation, Policy, Scheduler, ThreadId,
};
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Why the scheduler cannot manage this machine or these processes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManageError {
    /// The machine has one core kind: nothing to schedule between.
    #[error("the machine has one core kind ({kind}); scheduling needs two")]
    OneKind {
        /// The kind's name.
        kind: String,
    },
    /// The kinds are unknown.
    #[error("the machine's core kinds are unknown; scheduling needs two")]
    NoKinds,
    /// A kind has no CPU this process may use.
    #[error("no usable CPU of the {which} kinds ({cpus})")]
    NoUsable {
        /// "fastest" or "other".
        which: &'static str,
        /// The kinds' CPUs.
        cpus: String,
    },
    /// A process to manage does not exist.
    #[error("no process {pid}")]
    NoProcess {
        /// The pid.
        pid: i32,
    },
    /// Nothing to manage.
    #[error("no process to manage")]
    Empty,
}

/// The big and small CPUs of a machine: the fastest kind's usable CPUs are
/// big, every other kind's usable CPUs small (SMT siblings count as CPUs
/// of their own). Performance is unknown (`None`) until a capacity source
/// (HFI) says otherwise.
pub fn capacity(topo: &Topology) -> Result<Capacity, ManageError> {
    capacity_within(topo, &topo.usable())
}

/// Why [`own_capacity`] has no big and small CPUs.
#[derive(Debug, thiserror::Error)]
pub enum OwnCapacityError {
    /// This process's affinity cannot be read.
    #[error("sched_getaffinity: {0}")]
    Affinity(#[source] std::io::Error),
    #[error(transparent)]
    Manage(#[from] ManageError),
}

/// [`capacity_within`] the CPUs this process may run on (`taskset -c 0,1
/// pinsight sched` keeps the programs there too).
pub fn own_capacity(topo: &Topology) -> Result<Capacity, OwnCapacityError> {
    let own = pinsight_sys::affinity::get_affinity(0).map_err(OwnCapacityError::Affinity)?;
    Ok(capacity_within(topo, &own)?)
}

/// [`capacity`] restricted to `allowed` (e.g. the CPUs this process may
/// run on, as `taskset` set them).
pub fn capacity_within(topo: &Topology, allowed: &CpuSet) -> Result<Capacity, ManageError> {
    let Some(fast) = topo.fastest_kind() else {
        return Err(ManageError::NoKinds);
    };
    if topo.kinds.len() < 2 {
        return Err(ManageError::OneKind {
            kind: fast.name.clone(),
        });
    }
    let usable = topo.usable().intersection(allowed);
    let big: CpuSet = fast.cpus.intersection(&usable);
    let mut others = CpuSet::new();
    for k in &topo.kinds[..topo.kinds.len() - 1] {
        others = others.union(&k.cpus);
    }
    let small = others.intersection(&usable);
    if big.is_empty() {
        return Err(ManageError::NoUsable {
            which: "fastest",
            cpus: fast.cpus.to_string(),
        });
    }
    if small.is_empty() {
        return Err(ManageError::NoUsable {
            which: "other",
            cpus: others.to_string(),
        });
    }
    let cpus = |s: &CpuSet| s.iter().map(|c| Cpu::new(c as u32)).collect();
    Ok(Capacity {
        big: cpus(&big),
        small: cpus(&small),
    })
}

/// What the manager runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The policy.
    pub policy: Policy,
    /// The period (default 200 ms).
    pub period: Duration,
    /// The big and small CPUs.
    pub capacity: Capacity,
    /// Also manage the processes the managed ones start.
    pub follow_children: bool,
    /// Processes started by a managed one share its position (one
    /// program = a process tree, as `mix` counts them); otherwise each
    /// gets the next position.
    pub group_children: bool,
    /// Also manage the children of this process (the caller, a child
    /// subreaper: descendants orphaned by their parent's exit land there).
    pub orphans_of: Option<i32>,
}

impl Config {
    /// `pinsight sched`'s configuration: manage the given processes and
    /// every process they start, each one a program of its own.
    pub fn new(policy: Policy, period: Duration, capacity: Capacity) -> Config {
        Config {
            policy,
            period,
            capacity,
            follow_children: true,
            group_children: false,
            orphans_of: None,
        }
    }
}

/// A thread's record.
#[derive(Debug, Clone)]
struct Thread {
    comm: String,
    last_runtime: u64,
    big_ns: u64,
    small_ns: u64,
    swaps: u32,
    /// Where we pinned it for the period now running (`None`: not pinned).
    placed: Option<Kind>,
    /// Last kind it was pinned to (for swap counting across idle spells).
    last_kind: Option<Kind>,
    alive: bool,
    /// Sampled at least once (its run time is a baseline).
    seen: bool,
    /// Ran since the sample before the last (only such a thread can have
    /// started a process since: the others' `children` are not re-read).
    ran: bool,
    /// Left out of management after the kernel refused its affinity.
    excluded: bool,
}

#[derive(Debug, Clone)]
struct Process {
    pid: i32,
    /// The managed process whose tree it belongs to (itself for roots).
    root: i32,
    position: usize,
    name: String,
    alive: bool,
    threads: BTreeMap<i32, Thread>,
}

/// Per thread, at the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadReport {
    /// The thread id.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// CPU seconds on the big CPUs while managed.
    pub big_s: f64,
    /// CPU seconds on the small CPUs while managed.
    pub small_s: f64,
    /// `big_s / (big_s + small_s)`; `None` when it ran no time.
    pub big_share: Option<f64>,
    /// Moves between the big and the small CPUs.
    pub swaps: u32,
}

/// Per program (process), at the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramReport {
    /// Position (from 1): `--pids` order, else order first seen.
    pub position: usize,
    /// Process id.
    pub pid: i32,
    /// The managed process whose tree it belongs to (its own pid for a
    /// process given or started, its ancestor's for one it started).
    pub root_pid: i32,
    /// Name (basename of `argv[0]`, else comm).
    pub name: String,
    /// The SF the scheduler used for it (the last given), if any.
    pub sf: Option<f64>,
    /// Sum over its threads.
    pub big_s: f64,
    /// Sum over its threads.
    pub small_s: f64,
    /// `big_s / (big_s + small_s)`.
    pub big_share: Option<f64>,
    /// Sum over its threads.
    pub swaps: u32,
    /// Its threads, by tid.
    pub threads: Vec<ThreadReport>,
}

/// What a managed run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The policy's name.
    pub policy: String,
    /// The period, seconds.
    pub period_s: f64,
    /// The big CPUs.
    pub big_cpus: String,
    /// The small CPUs.
    pub small_cpus: String,
    /// Periods run.
    pub periods: u64,
    /// Wall time managed, seconds.
    pub wall_s: f64,
    /// Mean cost of one period (sample + policy + apply), seconds of CPU
    /// time of the manager's thread.
    pub mean_step_s: f64,
    /// Where run times came from.
    pub resolution: Option<Resolution>,
    /// Per program.
    pub programs: Vec<ProgramReport>,
    /// Threads whose affinity the scheduler changed at least once.
    pub pinned_threads: usize,
    /// At the end: threads put back to their own affinity, gone
    /// meanwhile, refused (threads that ended earlier are not counted).
    pub restore: RestoreReport,
    /// Things that did not go as planned (one line each).
    pub warnings: Vec<String>,
    /// Dynamic capacity (HFI): its source and the changes applied.
    pub capacity: CapacityFeed,
}

/// The live scheduler.
pub struct Manager {
    cfg: Config,
    sampler: Sampler,
    applier: Applier,
    scheduler: Scheduler,
    sf: Box<dyn SfSource>,
    procs: Vec<Process>,
    big_set: CpuSet,
    periods: u64,
    step_cpu: Duration,
    warnings: Vec<String>,
    sfs: BTreeMap<i32, f64>,
    children_unsupported: bool,
    last: Option<Instant>,
    pinned: usize,
    capacity_rx: Option<Receiver<(u32, u32)>>,
    capacity: CapacityFeed,
}

/// Where the big and small CPUs' performance comes from, and how often it
/// changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CapacityFeed {
    /// The source (`Intel HFI (thermal netlink)`), or `None`.
    pub source: Option<String>,
    /// Why there is none, when there is none.
    pub unavailable: Option<String>,
    /// Capability changes applied.
    pub changes: u64,
    /// CPUs whose performance was 0 (vacated) at the end.
    pub vacated: Vec<u32>,
}

fn ns_s(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn share(big: f64, small: f64) -> Option<f64> {
    let t = big + small;
    (t > 0.0).then(|| big / t)
}

/// What one period's sample of a thread gives the policy.
enum ThreadSeen {
    /// It ran enough to count: its observation.
    Busy(Observation),
    /// Idle while placed on a big CPU (to move to the small ones).
    IdleOnBig,
    /// Nothing: gone, excluded or idle elsewhere.
    Quiet,
}

/// This thread's CPU time so far (for the manager's own cost).
fn own_cpu(sampler: &mut Sampler) -> Option<u64> {
    let pid = std::process::id() as i32;
    let tid = pinsight_sys::affinity::gettid();
    sampler.sample(pid, tid).map(|s| s.runtime_ns)
}

impl Manager {
    /// A manager of processes `pids` (in that order: positions 1, 2, …);
    /// each must exist ([`ManageError::NoProcess`]).
    pub fn new(
        fs: FsRoot,
        cfg: Config,
        pids: &[i32],
        sf: Box<dyn SfSource>,
    ) -> Result<Manager, ManageError> {
        Manager::build(fs, cfg, pids, sf, true)
    }

    /// A manager of the caller's own children `pids` (positions 1, 2, …),
    /// started just before: one may have exited (and been reaped) already
    /// (`echo a` lives for a millisecond), which is its end, not an error:
    /// it is managed as a process that has ended (as [`Manager::add`]
    /// does), and the caller counts its exit.
    pub fn new_spawned(
        fs: FsRoot,
        cfg: Config,
        pids: &[i32],
        sf: Box<dyn SfSource>,
    ) -> Result<Manager, ManageError> {
        Manager::build(fs, cfg, pids, sf, false)
    }

    fn build(
        fs: FsRoot,
        cfg: Config,
        pids: &[i32],
        sf: Box<dyn SfSource>,
        must_exist: bool,
    ) -> Result<Manager, ManageError> {
        if pids.is_empty() {
            return Err(ManageError::Empty);
        }
        let sampler = Sampler::new(fs);
        let big_set: CpuSet = cfg.capacity.big.iter().map(|c| c.id as usize).collect();
        let mut m = Manager {
            scheduler: Scheduler::new(cfg.policy),
            cfg,
            sampler,
            applier: Applier::new(),
            sf,
            procs: Vec::new(),
            big_set,
            periods: 0,
            step_cpu: Duration::ZERO,
            warnings: Vec::new(),
            sfs: BTreeMap::new(),
            children_unsupported: false,
            last: None,
            pinned: 0,
            capacity_rx: None,
            capacity: CapacityFeed::default(),
        };
        for &pid in pids {
            if m.procs.iter().any(|p| p.pid == pid) {
                continue;
            }
            if must_exist && m.sampler.tids(pid).is_empty() {
                return Err(ManageError::NoProcess { pid });
            }
            m.add_process(pid);
        }
        Ok(m)
    }

    fn add_process(&mut self, pid: i32) {
        let position = self.procs.iter().map(|p| p.position).max().unwrap_or(0) + 1;
        self.add_at(pid, pid, position);
    }

    fn add_at(&mut self, pid: i32, root: i32, position: usize) {
        let name = self
            .sampler
            .program_name(pid)
            .unwrap_or_else(|| format!("pid {pid}"));
        self.procs.push(Process {
            pid,
            root,
            position,
            name,
            alive: true,
            threads: BTreeMap::new(),
        });
    }

    /// Manages one more process (e.g. a program restarted by `mix`) at
    /// `position` (several processes may share one).
    pub fn add(&mut self, pid: i32, position: usize) {
        if !self.procs.iter().any(|p| p.pid == pid) {
            self.add_at(pid, pid, position);
        }
    }

    /// Whether any managed process is still alive.
    pub fn any_alive(&self) -> bool {
        self.procs.iter().any(|p| p.alive)
    }

    /// The managed processes' pids, in position order.
    pub fn pids(&self) -> Vec<i32> {
        self.procs.iter().map(|p| p.pid).collect()
    }

    /// Feeds dynamic capacity: every `(cpu, performance)` received (Intel
    /// HFI's 0–255 scale; 0 = the hardware vacates the CPU) is applied at
    /// the start of the next period, so a CPU at 0 gets no thread until it
    /// comes back. `source` names the feed in the report.
    pub fn capacity_updates(&mut self, rx: Receiver<(u32, u32)>, source: &str) {
        self.capacity_rx = Some(rx);
        self.capacity.source = Some(source.to_string());
        self.capacity.unavailable = None;
    }

    /// Records why no capacity feed could be had (shown in the report).
    pub fn capacity_unavailable(&mut self, reason: &str) {
        self.capacity.unavailable = Some(reason.to_string());
    }

    /// Applies the capacity changes that arrived since the last period.
    fn drain_capacity(&mut self) {
        let Some(rx) = &self.capacity_rx else {
            return;
        };
        while let Ok((cpu, perf)) = rx.try_recv() {
            for c in self
                .cfg
                .capacity
                .big
                .iter_mut()
                .chain(self.cfg.capacity.small.iter_mut())
                .filter(|c| c.id == cpu)
            {
                c.performance = Some(perf);
            }
            self.capacity.changes += 1;
        }
    }

    /// One period: discover threads, sample them, step the policy, apply.
    /// Returns whether any managed process is still alive.
    pub fn step(&mut self) -> bool {
        let t_cpu = own_cpu(&mut self.sampler);
        let now = Instant::now();
        let elapsed = self.last.map(|l| now - l).unwrap_or(self.cfg.period);
        self.last = Some(now);
        self.drain_capacity();
        // A tenth of the time that passed: less than that is idle.
        let busy_ns = (elapsed.as_nanos() / 10) as u64;
        self.discover();
        let (obs, idle_on_big) = self.observe(busy_ns);
        self.mark_ended();
        let a = self.scheduler.step(&obs, &self.cfg.capacity);
        self.place(&a, idle_on_big);
        self.periods += 1;
        if let (Some(a), Some(b)) = (t_cpu, own_cpu(&mut self.sampler)) {
            self.step_cpu += Duration::from_nanos(b.saturating_sub(a));
        }
        self.any_alive()
    }

    /// Samples every live thread of every live process (`busy_ns`: the
    /// least run time that is not idle): the policy's observations, and
    /// the idle threads placed on a big CPU.
    fn observe(&mut self, busy_ns: u64) -> (Vec<Observation>, Vec<i32>) {
        let mut obs = Vec::new();
        let mut idle_on_big = Vec::new();
        for pi in 0..self.procs.len() {
            if !self.procs[pi].alive {
                continue;
            }
            let tids: Vec<i32> = self.procs[pi]
                .threads
                .iter()
                .filter(|(_, t)| t.alive)
                .map(|(&tid, _)| tid)
                .collect();
            for tid in tids {
                match self.observe_thread(pi, tid, busy_ns) {
                    ThreadSeen::Busy(o) => obs.push(o),
                    ThreadSeen::IdleOnBig => idle_on_big.push(tid),
                    ThreadSeen::Quiet => {}
                }
            }
        }
        (obs, idle_on_big)
    }

    /// Samples thread `tid` of process `procs[pi]`: marks it gone, or
    /// counts its run time since the last period on the kind it ran on.
    /// Gone is a zombie, or a thread its process no longer lists: a read
    /// that fails while the thread is still listed is tried again next
    /// period. (A thread marked gone is never sampled again: once, in a
    /// dozen live runs, `a` of `sh -c 'a & exit 0'` was marked gone at its
    /// first sample and ran for seconds with no time counted.)
    fn observe_thread(&mut self, pi: usize, tid: i32, busy_ns: u64) -> ThreadSeen {
        let pid = self.procs[pi].pid;
        let sample = self.sampler.sample(pid, tid);
        if sample.is_none() && self.sampler.tids(pid).binary_search(&tid).is_ok() {
            return ThreadSeen::Quiet;
        }
        let big_set = &self.big_set;
        let th = self.procs[pi].threads.get_mut(&tid).expect("listed");
        let Some(s) = sample.filter(|s| !s.exited()) else {
            th.alive = false;
            self.applier.forget(tid);
            return ThreadSeen::Quiet;
        };
        let delta = s.runtime_ns.saturating_sub(th.last_runtime);
        let first = !th.seen;
        th.seen = true;
        th.ran = first || delta > 0;
        th.last_runtime = s.runtime_ns;
        th.comm.clone_from(&s.comm);
        if th.excluded {
            return ThreadSeen::Quiet;
        }
        let kind = th.placed.unwrap_or_else(|| where_ran(&s, big_set));
        let delta = if first { 0 } else { delta };
        match kind {
            Kind::Big => th.big_ns += delta,
            Kind::Small => th.small_ns += delta,
        }
        let busy = delta >= busy_ns.max(1) || (first && s.state == 'R');
        if !busy {
            return if th.placed == Some(Kind::Big) {
                ThreadSeen::IdleOnBig
            } else {
                ThreadSeen::Quiet
            };
        }
        let (big_s, small_s) = match kind {
            Kind::Big => (ns_s(delta), 0.0),
            Kind::Small => (0.0, ns_s(delta)),
        };
        ThreadSeen::Busy(self.observation(pi, tid, big_s, small_s))
    }

    /// The policy's observation of a busy thread `tid` of `procs[pi]`,
    /// with the SF its source gives (kept as the process's last).
    fn observation(&mut self, pi: usize, tid: i32, big_s: f64, small_s: f64) -> Observation {
        let p = &self.procs[pi];
        let pid = p.pid;
        let prog = ProgramRef {
            position: p.position,
            name: &p.name,
            pid,
        };
        let sf = self.sf.sf(
            &prog,
            &ThreadPeriod {
                tid,
                big_s,
                small_s,
            },
        );
        if let Some(v) = sf {
            self.sfs.insert(pid, v);
        }
        Observation {
            id: ThreadId(tid as u64),
            big_time: big_s,
            small_time: small_s,
            sf,
        }
    }

    /// A process whose threads have all exited (a zombie not yet reaped)
    /// has ended.
    fn mark_ended(&mut self) {
        for p in &mut self.procs {
            if p.alive && !p.threads.is_empty() && p.threads.values().all(|t| !t.alive) {
                p.alive = false;
            }
        }
    }

    /// Applies assignment `a`: the chosen threads pinned to their big CPU,
    /// the rest (and `idle_on_big`) to the small CPUs; with nothing to
    /// pin, every thread back on its own affinity.
    fn place(&mut self, a: &Assignment, idle_on_big: Vec<i32>) {
        // Unpinned this period unless placed below.
        for p in &mut self.procs {
            for t in p.threads.values_mut() {
                t.placed = None;
            }
        }
        if a.managed {
            let small: CpuSet = a.small_cpus.iter().map(|&c| c as usize).collect();
            let mut jobs: Vec<(i32, CpuSet, Kind)> = Vec::new();
            for &(ThreadId(tid), cpu) in &a.big {
                jobs.push((tid as i32, CpuSet::single(cpu as usize), Kind::Big));
            }
            for &ThreadId(tid) in &a.small {
                jobs.push((tid as i32, small.clone(), Kind::Small));
            }
            for tid in idle_on_big {
                jobs.push((tid, small.clone(), Kind::Small));
            }
            for (tid, cpus, kind) in jobs {
                self.apply(tid, &cpus, kind);
            }
        } else if self.applier.changed() > 0 {
            // Nothing to pin (os, or no usable CPU): threads float on
            // their own affinities again.
            let r = self.applier.restore_all();
            self.note_restore_failures(&r);
        }
    }

    fn apply(&mut self, tid: i32, cpus: &CpuSet, kind: Kind) {
        let Some(p) = self.procs.iter_mut().find(|p| p.threads.contains_key(&tid)) else {
            return;
        };
        let (pid, name) = (p.pid, p.name.clone());
        let siblings: Vec<i32> = p.threads.keys().copied().collect();
        let th = p.threads.get_mut(&tid).expect("found");
        match self.applier.set_in(tid, &siblings, cpus) {
            Ok(()) => {
                if th.last_kind.is_some_and(|k| k != kind) {
                    th.swaps += 1;
                }
                if th.last_kind.is_none() {
                    self.pinned += 1;
                }
                th.last_kind = Some(kind);
                th.placed = Some(kind);
            }
            Err(e) if e.thread_gone() => {
                th.alive = false;
                self.applier.forget(tid);
            }
            Err(e) => {
                th.excluded = true;
                self.warnings.push(format!(
                    "thread {tid} ({}) of {name} (pid {pid}) left unmanaged: {}",
                    th.comm,
                    err_text(&e)
                ));
                if let Err(e) = self.applier.restore(tid) {
                    if !e.thread_gone() {
                        self.warnings.push(format!(
                            "thread {tid}: affinity not restored: {}",
                            err_text(&e)
                        ));
                    }
                }
            }
        }
    }

    fn note_restore_failures(&mut self, r: &RestoreReport) {
        for f in &r.failures {
            self.warnings.push(format!(
                "thread {}: could not restore its affinity {}: {}",
                f.tid, f.cpus, f.error
            ));
        }
    }

    /// Lists the threads (and with `follow_children`, new processes).
    /// The orphans are looked for again after a pass that found a
    /// process gone: one that exited between the first look for orphans
    /// and its own check left its children to pinsight after that look
    /// (`sh -c 'a & exit 0'`: `a` was still `sh`'s child at the first
    /// look, and `sh` was gone at its own), and the new ones are listed
    /// in the same pass.
    fn discover(&mut self) {
        self.discover_orphans();
        let mut i = 0;
        loop {
            let alive_before = self.procs.iter().filter(|p| p.alive).count();
            self.discover_pass(&mut i);
            let gone = self.procs.iter().filter(|p| p.alive).count() < alive_before;
            let known = self.procs.len();
            if gone {
                self.discover_orphans();
            }
            if self.procs.len() == known {
                break;
            }
        }
    }

    /// One pass of [`Manager::discover`] over the processes from index
    /// `*i` on (those added meanwhile included).
    fn discover_pass(&mut self, i: &mut usize) {
        while *i < self.procs.len() {
            if !self.procs[*i].alive {
                *i += 1;
                continue;
            }
            let pid = self.procs[*i].pid;
            let tids = self.sampler.tids(pid);
            if tids.is_empty() {
                self.procs[*i].alive = false;
                for (tid, t) in self.procs[*i].threads.iter_mut() {
                    t.alive = false;
                    self.applier.forget(*tid);
                }
                *i += 1;
                continue;
            }
            // The name at first sight may be a fork's before its exec.
            if let Some(name) = self.sampler.program_name(pid) {
                self.procs[*i].name = name;
            }
            let p = &mut self.procs[*i];
            for (tid, t) in p.threads.iter_mut() {
                if t.alive && tids.binary_search(tid).is_err() {
                    t.alive = false;
                    self.applier.forget(*tid);
                }
            }
            let siblings: Vec<i32> = p.threads.keys().copied().collect();
            for &tid in &tids {
                if !p.threads.contains_key(&tid) {
                    // Created by a thread we pinned, it carries our pin.
                    self.applier.adopt(tid, &siblings);
                }
                p.threads.entry(tid).or_insert_with(|| Thread {
                    comm: String::new(),
                    last_runtime: 0,
                    big_ns: 0,
                    small_ns: 0,
                    swaps: 0,
                    placed: None,
                    last_kind: None,
                    alive: true,
                    seen: false,
                    ran: true,
                    excluded: false,
                });
            }
            if self.cfg.follow_children && !self.children_unsupported {
                let forkers: Vec<i32> = tids
                    .iter()
                    .copied()
                    .filter(|t| p.threads.get(t).is_none_or(|t| t.ran))
                    .collect();
                match self.sampler.children(pid, &forkers) {
                    Some(children) => {
                        let (root, position) = (self.procs[*i].root, self.procs[*i].position);
                        for c in children {
                            if !self.procs.iter().any(|p| p.pid == c) {
                                if self.cfg.group_children {
                                    self.add_at(c, root, position);
                                } else {
                                    self.add_process(c);
                                }
                                // Forked by a thread we pinned: it carries our pin.
                                for t in self.sampler.tids(c) {
                                    self.applier.adopt(t, &tids);
                                }
                            }
                        }
                    }
                    None => {
                        self.children_unsupported = true;
                        self.warnings.push(format!(
                            "/proc/{pid}/task/*/children is missing (kernel without \
                             CONFIG_PROC_CHILDREN): processes the program starts are not managed"
                        ));
                    }
                }
            }
            *i += 1;
        }
    }

    /// Takes in the orphans reparented to [`Config::orphans_of`].
    fn discover_orphans(&mut self) {
        let Some(me) = self.cfg.orphans_of else {
            return;
        };
        let tids = self.sampler.tids(me);
        let Some(children) = self.sampler.children(me, &tids) else {
            return;
        };
        for c in children {
            if self.procs.iter().any(|p| p.pid == c) {
                continue;
            }
            // pinsight starts nothing else while it schedules: every
            // other child of it is a managed program's orphan. Forked by a
            // thread we pinned (its parent may be gone), it carries our pin.
            self.add_process(c);
            for t in self.sampler.tids(c) {
                self.applier.adopt(t, &[]);
            }
        }
    }

    /// Runs periods until no managed process is alive or `wait` returns
    /// true (`wait(d)` sleeps up to `d`, returning early with true to stop:
    /// a signal). Restores every changed affinity before returning.
    pub fn run(&mut self, mut wait: impl FnMut(Duration) -> bool) -> Report {
        let t0 = Instant::now();
        loop {
            let start = Instant::now();
            if !self.step() {
                break;
            }
            let left = self.cfg.period.saturating_sub(start.elapsed());
            if wait(left) {
                break;
            }
        }
        self.finish(t0.elapsed())
    }

    /// Ends management: counts the last stretch (one final sample, no new
    /// placement), restores every changed affinity and reports. For
    /// callers driving [`Manager::step`] themselves.
    pub fn finish(&mut self, wall: Duration) -> Report {
        // Threads and processes created since the last period may carry a
        // pin of ours (inherited): take them in so they are restored too.
        self.discover();
        self.account_final();
        let restore = self.applier.restore_all();
        self.note_restore_failures(&restore);
        self.report(wall, restore)
    }

    /// Adds the CPU time since the last period to each live thread.
    fn account_final(&mut self) {
        for p in &mut self.procs {
            for (&tid, th) in p.threads.iter_mut() {
                if !th.alive || th.excluded {
                    continue;
                }
                let Some(s) = self.sampler.sample(p.pid, tid) else {
                    continue;
                };
                if !th.seen {
                    continue;
                }
                let delta = s.runtime_ns.saturating_sub(th.last_runtime);
                th.last_runtime = s.runtime_ns;
                match th.placed.unwrap_or_else(|| where_ran(&s, &self.big_set)) {
                    Kind::Big => th.big_ns += delta,
                    Kind::Small => th.small_ns += delta,
                }
            }
        }
    }

    /// Restores every changed affinity now (also done by [`Manager::run`]
    /// and on drop).
    pub fn restore(&mut self) -> RestoreReport {
        self.applier.restore_all()
    }

    /// The report so far.
    pub fn report(&self, wall: Duration, restore: RestoreReport) -> Report {
        let programs = self
            .procs
            .iter()
            .map(|p| {
                let threads: Vec<ThreadReport> = p
                    .threads
                    .iter()
                    .map(|(&tid, t)| {
                        let (b, s) = (ns_s(t.big_ns), ns_s(t.small_ns));
                        ThreadReport {
                            tid,
                            comm: t.comm.clone(),
                            big_s: b,
                            small_s: s,
                            big_share: share(b, s),
                            swaps: t.swaps,
                        }
                    })
                    .collect();
                let b: f64 = threads.iter().map(|t| t.big_s).sum();
                let s: f64 = threads.iter().map(|t| t.small_s).sum();
                ProgramReport {
                    position: p.position,
                    pid: p.pid,
                    root_pid: p.root,
                    name: p.name.clone(),
                    sf: self.sfs.get(&p.pid).copied(),
                    big_s: b,
                    small_s: s,
                    big_share: share(b, s),
                    swaps: threads.iter().map(|t| t.swaps).sum(),
                    threads,
                }
            })
            .collect();
        let list = |cpus: &[Cpu]| {
            cpus.iter()
                .map(|c| c.id as usize)
                .collect::<CpuSet>()
                .to_string()
        };
        Report {
            policy: self.cfg.policy.name().to_string(),
            period_s: self.cfg.period.as_secs_f64(),
            big_cpus: list(&self.cfg.capacity.big),
            small_cpus: list(&self.cfg.capacity.small),
            periods: self.periods,
            wall_s: wall.as_secs_f64(),
            mean_step_s: if self.periods == 0 {
                0.0
            } else {
                self.step_cpu.as_secs_f64() / self.periods as f64
            },
            resolution: self.sampler.resolution(),
            programs,
            pinned_threads: self.pinned,
            restore,
            warnings: self.warnings.clone(),
            capacity: CapacityFeed {
                vacated: self
                    .cfg
                    .capacity
                    .big
                    .iter()
                    .chain(&self.cfg.capacity.small)
                    .filter(|c| !c.usable())
                    .map(|c| c.id)
                    .collect(),
                ..self.capacity.clone()
            },
        }
    }
}

/// The kind of the CPU a thread was last seen on (small when unknown).
fn where_ran(s: &ThreadSample, big: &CpuSet) -> Kind {
    match s.last_cpu {
        Some(c) if big.contains(c) => Kind::Big,
        _ => Kind::Small,
    }
}

fn err_text(e: &ApplyError) -> String {
    e.to_string()
}
