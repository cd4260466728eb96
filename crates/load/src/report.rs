//! The load of every CPU between two [`Sample`]s, against its capacity:
//! pure arithmetic over the two readings and the machine's description.
//!
//! Each CPU's busy time (time some task ran there) is measured, best
//! first ([`BusySource`]):
//! 1. `/proc/schedstat`'s run time of the CPU's tasks, in ns (field 7 of
//!    the `cpuN` lines, Documentation/scheduler/sched-stats.rst, version
//!    15 and later), over the interval of `/proc/uptime`;
//! 2. else the interval (`/proc/uptime`) less `/proc/stat`'s idle, iowait
//!    and steal: with the tickless idle of every current kernel the idle
//!    time is measured at each idle entry and exit (`get_cpu_idle_time_us`,
//!    kernel/time/tick-sched.c), not sampled;
//! 3. else `/proc/stat`'s user + nice + system + irq + softirq ticks over
//!    all the ticks the CPU counted. These are sampled at each timer tick
//!    (100 to 1000 Hz): work that runs in step with the tick (a duty-cycle
//!    stealer of a 2 ms period) is over- or under-counted.
//!
//! Time taken by excluded processes ([`crate::sample::Excluded`]: an
//! emulation's stealers) is not busy: it counts as steal, time the CPU
//! did not have (as a hypervisor's), and [`CpuLoad::emulated`] gives it.
//! The split of busy into user (`user` + `nice`), system, irq and softirq
//! keeps `/proc/stat`'s proportions (proc(5)), scaled to the measured
//! busy; idle is what is left. The capacity-normalised load is busy ÷
//! capacity (capacity relative to the most capable CPU, 1.0): an E-core
//! of capacity 0.6 busy 60% of the time is as loaded as a P-core busy
//! 100%.

use crate::progress::{ProgressImbalance, TaskProgress, Trace};
use crate::sample::{Sample, ThreadTick};
use pinsight_cpuset::CpuSet;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// A CPU counts as busy for the imbalance when busy at least this share
/// of the interval (an idle CPU's ratio would be noise over noise).
pub const BUSY_SHARE: f64 = 0.05;
/// A CPU spending at least this share of its time in hard and soft
/// interrupt handlers is an interrupt-hot CPU.
pub const HOT_IRQ_SHARE: f64 = 0.10;
/// Imbalance (max/min normalised load, or max/min progress of the tasks
/// that want a whole CPU) from which a rebalance is suggested.
pub const IMBALANCE_SUGGEST: f64 = 1.25;
/// A CPU busy at least this share of the interval is saturated: its busy
/// time cannot rise, so it cannot show more demand.
pub const SATURATED: f64 = 0.95;

/// One CPU of the machine as the load view needs it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuInfo {
    pub cpu: usize,
    /// Its kind's name and mark (`P-core`, `P`), when the machine has kinds.
    pub kind: Option<String>,
    pub mark: Option<String>,
    /// Logical core index (SMT siblings share it).
    pub core: Option<usize>,
    /// Capacity relative to the most capable CPU (1.0).
    pub capacity: f64,
    /// Its speed while a task runs there, relative to the most capable
    /// CPU: the capacity, lowered by a frequency cap
    /// ([`crate::machine`]).
    pub speed: f64,
}

impl CpuInfo {
    /// CPU `cpu` of no known kind, on logical core `core`, with its
    /// relative capacity and speed.
    pub fn unkinded(cpu: usize, core: Option<usize>, capacity: f64, speed: f64) -> CpuInfo {
        CpuInfo {
            cpu,
            kind: None,
            mark: None,
            core,
            capacity,
            speed,
        }
    }
}

/// The machine: its CPUs and where their capacities came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Machine {
    pub cpus: Vec<CpuInfo>,
    /// A phrase: "from the kernel's cpu_capacity", ...
    pub capacity_source: String,
}

/// One thread's CPU use over the interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadLoad {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    /// A kernel thread.
    pub kernel: bool,
    /// Share of one CPU over the interval (utime + stime).
    pub share: f64,
}

/// Where the busy time of every CPU came from (see the module's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BusySource {
    /// `/proc/schedstat`'s run time per CPU.
    Schedstat,
    /// The `/proc/uptime` interval less `/proc/stat`'s idle time.
    Idle,
    /// `/proc/stat`'s busy ticks.
    Ticks,
}

impl BusySource {
    /// A phrase for the view: "run time from /proc/schedstat".
    pub fn describe(self) -> &'static str {
        match self {
            BusySource::Schedstat => "run time from /proc/schedstat",
            BusySource::Idle => "the interval less idle time (/proc/uptime, /proc/stat)",
            BusySource::Ticks => "tick samples of /proc/stat",
        }
    }
}

/// One CPU over the interval: shares of its time (0..1).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuLoad {
    pub cpu: usize,
    pub kind: Option<String>,
    pub mark: Option<String>,
    pub core: Option<usize>,
    pub capacity: f64,
    pub user: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    /// Time the CPU did not have: the hypervisor's steal and
    /// [`CpuLoad::emulated`].
    pub steal: f64,
    pub idle: f64,
    /// user + system + irq + softirq: time tasks ran, less the excluded
    /// processes' time.
    pub busy: f64,
    /// busy ÷ capacity.
    pub normalised: f64,
    /// Share taken by the excluded processes (an emulation's stealers);
    /// 0 when none run here.
    pub emulated: f64,
    /// Its speed while a task runs there (relative to the most capable
    /// CPU), as the tasks' progress counts it: 1.0 on a CPU slowed by an
    /// emulation's stealer, which takes time, not speed.
    pub speed: f64,
    /// Demand: the mean number of tasks that wanted this CPU (running or
    /// waiting to run), from `/proc/schedstat` where present (busy + run
    /// queue), else from the tasks' own run and wait times
    /// ([`crate::progress::demand_by_cpu`]). Above 1.0 tasks queue; a
    /// saturated CPU shows it here, not in busy. `None` when no thread
    /// could be read.
    pub demand: Option<f64>,
    /// Mean number of tasks waiting to run on it (`/proc/schedstat`
    /// wait time over the interval): the demand a saturated CPU cannot
    /// show as busy. `None` without `/proc/schedstat`.
    pub run_queue: Option<f64>,
    /// Hardware interrupts per second on it (every line of
    /// `/proc/interrupts`); `None` when unreadable.
    pub interrupts_per_s: Option<f64>,
    /// Softirqs per second run on it; `None` when unreadable.
    pub softirqs_per_s: Option<f64>,
    /// The threads that used it most (by the CPU they last ran on).
    pub top_threads: Vec<ThreadLoad>,
}

/// Per kind: its CPUs' mean busy share and normalised load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindLoad {
    pub kind: String,
    pub mark: String,
    pub cpus: CpuSet,
    /// Mean capacity of its CPUs.
    pub capacity: f64,
    pub busy: f64,
    pub normalised: f64,
    /// Mean progress (fastest-CPU seconds per second) of the tasks that
    /// want a whole CPU and ran mostly on this kind; `None` without any.
    pub progress: Option<f64>,
}

/// Per core: its CPUs (SMT siblings) together.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreLoad {
    pub core: usize,
    pub cpus: CpuSet,
    pub kind: Option<String>,
    /// Sum of its CPUs' busy shares (2.0 = both siblings always busy).
    pub busy: f64,
    /// Mean of its CPUs' normalised loads.
    pub normalised: f64,
}

/// Max over min normalised load, over the busy CPUs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Imbalance {
    pub ratio: f64,
    pub max_cpu: usize,
    pub max: f64,
    pub min_cpu: usize,
    pub min: f64,
    /// CPUs busy at least [`BUSY_SHARE`] of the interval.
    pub busy_cpus: usize,
}

/// One IRQ's part of a hot CPU's interrupts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IrqShare {
    /// The `/proc/interrupts` name: a number, or `LOC`, `NMI`, ...
    pub irq: String,
    pub per_s: f64,
    /// Share of that CPU's interrupts.
    pub share: f64,
    /// Handler names (`virtio0-input.0`, `eth0-TxRx-3`).
    pub handlers: Vec<String>,
    /// Those of them that look like NIC queues.
    pub queues: Vec<String>,
    /// `smp_affinity_list`, when readable (numbered IRQs only).
    pub affinity: Option<String>,
    /// `effective_affinity_list`, when readable.
    pub effective: Option<String>,
}

/// A CPU that spends [`HOT_IRQ_SHARE`] or more of its time in interrupt
/// handlers, and what lands on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotCpu {
    pub cpu: usize,
    /// irq + softirq share of its time.
    pub irq_share: f64,
    pub interrupts_per_s: f64,
    /// The IRQs that dominate it, most first (at most 3).
    pub irqs: Vec<IrqShare>,
    /// Its busiest softirqs per second (`NET_RX`, `TIMER`, ...), at most 3.
    pub softirqs: Vec<(String, f64)>,
}

/// What the view suggests.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Suggestion {
    /// Interrupts make CPUs hot: move IRQs off them.
    MoveIrqs { cpus: CpuSet, text: String },
    /// Load follows capacity (or is uneven): rebalance by capacity.
    Rebalance { text: String },
    /// Nothing worth acting on.
    None { text: String },
}

/// The load view of one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadReport {
    /// The interval, from `/proc/uptime`, else the CPUs' own tick counts.
    pub interval_s: f64,
    pub capacity_source: String,
    /// Where the busy times came from.
    pub busy_source: BusySource,
    pub cpus: Vec<CpuLoad>,
    pub kinds: Vec<KindLoad>,
    pub cores: Vec<CoreLoad>,
    pub imbalance: Option<Imbalance>,
    /// The user tasks that ran at least [`BUSY_SHARE`] of the interval or
    /// wanted a whole CPU, each with its progress by capacity, slowest
    /// first; an emulation's stealers left out.
    pub tasks: Vec<TaskProgress>,
    /// Max/min progress over the tasks that want a whole CPU
    /// ([`crate::progress::imbalance`]): the imbalance busy time cannot
    /// show when the CPUs are saturated.
    pub progress_imbalance: Option<ProgressImbalance>,
    /// The share of the capacity they could use that the tasks wanting a
    /// whole CPU got ([`crate::progress::capacity_used`]): below 1.0 when
    /// they wait while capacity sits idle.
    pub capacity_used: Option<f64>,
    /// How the tasks' waits were measured: `schedstat` (exact) or the
    /// runnable state sampled at each look, with the number of looks.
    pub wait_source: Option<String>,
    /// Set when every CPU was busy [`SATURATED`] or more: the words that
    /// say busy time cannot show the imbalance and progress can.
    pub saturated: Option<String>,
    pub hot_cpus: Vec<HotCpu>,
    /// What to do, most pressing first: move IRQs, rebalance, or nothing.
    pub suggestions: Vec<Suggestion>,
    /// What could not be measured, each with the reason.
    pub unavailable: Vec<String>,
    /// The CPUs whose counters cannot be trusted over this interval (gone
    /// backwards, past their range, unreadable, or in one reading only):
    /// not in `cpus`, nor in the kinds, cores and imbalance.
    pub unavailable_cpus: Vec<UnavailableCpu>,
}

/// A CPU left out of one interval, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnavailableCpu {
    pub cpu: usize,
    pub reason: String,
}

/// Why CPU `cpu`'s counters between `before` and `after` cannot give its
/// load: a `/proc/stat` line unreadable in either reading, a counter that
/// went backwards, changes too large to add up, a CPU in one reading
/// only, or a `/proc/schedstat` time that went backwards. `None` when they
/// can.
fn unusable(cpu: usize, before: &Sample, after: &Sample) -> Option<String> {
    use pinsight_sys::cpustat::CpuFields;
    if let Some(why) = before.stat_bad.get(&cpu) {
        return Some(format!("{why} in the first reading"));
    }
    if let Some(why) = after.stat_bad.get(&cpu) {
        return Some(format!("{why} in the second reading"));
    }
    let (a, b) = match (before.stat.get(&cpu), after.stat.get(&cpu)) {
        (Some(a), Some(b)) => (a, b),
        (None, _) => return Some("not in the first reading of /proc/stat (came online)".into()),
        (_, None) => return Some("not in the second reading of /proc/stat (went offline)".into()),
    };
    let fields = |f: &CpuFields| {
        [
            ("user", f.user),
            ("nice", f.nice),
            ("system", f.system),
            ("idle", f.idle),
            ("iowait", f.iowait),
            ("irq", f.irq),
            ("softirq", f.softirq),
            ("steal", f.steal),
        ]
    };
    let mut sum = 0u64;
    for ((name, x), (_, y)) in fields(a).into_iter().zip(fields(b)) {
        let Some(d) = y.checked_sub(x) else {
            return Some(format!("/proc/stat's {name} went backwards ({x} to {y})"));
        };
        let Some(s) = sum.checked_add(d) else {
            return Some("/proc/stat's counters grew past 2^64 - 1 ticks in one interval".into());
        };
        sum = s;
    }
    let sched = before
        .sched
        .as_ref()
        .and_then(|s| s.get(&cpu))
        .zip(after.sched.as_ref().and_then(|s| s.get(&cpu)));
    if let Some((x, y)) = sched {
        if y.running_ns < x.running_ns {
            return Some(format!(
                "/proc/schedstat's run time went backwards ({} to {} ns)",
                x.running_ns, y.running_ns
            ));
        }
        if y.waiting_ns < x.waiting_ns {
            return Some(format!(
                "/proc/schedstat's wait time went backwards ({} to {} ns)",
                x.waiting_ns, y.waiting_ns
            ));
        }
    }
    None
}

/// Options of [`analyse`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Threads listed per CPU.
    pub top: usize,
    /// Clock ticks per second (`USER_HZ`).
    pub hz: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { top: 3, hz: 100 }
    }
}

fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 / total as f64
    }
}

/// The load between `before` and `after` on `machine`, the tasks'
/// progress from those two readings alone ([`Trace::of_two`]).
pub fn analyse(machine: &Machine, before: &Sample, after: &Sample, opts: Options) -> LoadReport {
    let trace = Trace::of_two(opts.hz, &before.threads, &after.threads);
    analyse_traced(machine, before, after, &trace, opts)
}

/// [`analyse`], the tasks' progress from `trace`: looks at the threads
/// taken within the interval, the first at `before` and the last at
/// `after`.
pub fn analyse_traced(
    machine: &Machine,
    before: &Sample,
    after: &Sample,
    trace: &Trace,
    opts: Options,
) -> LoadReport {
    let hz = opts.hz.max(1) as f64;
    let mut unavailable = Vec::new();
    let unavailable_cpus = unavailable_cpus(before, after, &mut unavailable);
    let left_out: std::collections::BTreeSet<usize> =
        unavailable_cpus.iter().map(|u| u.cpu).collect();
    let deltas = cpu_deltas(before, after, &left_out);
    let (interval_s, uptime) = interval_of(before, after, &deltas, hz);
    let (sched, busy_source) = busy_source(before, after, uptime, &mut unavailable);
    let (irq_rates, soft_rates) = interrupt_rates(before, after, interval_s, &mut unavailable);
    note_unread_stealers(after, &mut unavailable);
    let stealers = stealer_pids(before, after);
    let threads: Vec<(usize, ThreadLoad)> = thread_loads(before, after, interval_s * hz)
        .into_iter()
        .filter(|(_, t)| !stealers.contains(&t.pid))
        .collect();
    if after.threads.is_empty() {
        unavailable.push("threads per CPU: no /proc/PID/task/TID/stat readable".to_string());
    }
    let info: HashMap<usize, &CpuInfo> = machine.cpus.iter().map(|c| (c.cpu, c)).collect();
    let speeds = crate::speeds(machine, stealer_cpus(before, after));
    let all_tasks: Vec<TaskProgress> = crate::progress::tasks(trace, interval_s, &speeds)
        .into_iter()
        .filter(|t| !stealers.contains(&t.pid))
        .collect();
    let task_demand = (!trace.is_empty()).then(|| crate::progress::demand_by_cpu(all_tasks.iter()));
    let rows = RowInputs {
        before,
        after,
        sched,
        interval_s,
        hz,
        top: opts.top,
        info: &info,
        threads: &threads,
        speeds: &speeds,
        task_demand: task_demand.as_ref(),
        irq_rates: irq_rates.as_ref(),
        soft_rates: soft_rates.as_ref(),
    };
    let cpus: Vec<CpuLoad> = deltas
        .iter()
        .map(|(cpu, d)| rows.cpu_load(*cpu, d))
        .collect();
    let progress_imbalance = crate::progress::imbalance(all_tasks.iter());
    let capacity_used = crate::progress::capacity_used(
        all_tasks.iter(),
        &cpus
            .iter()
            .map(|c| info.get(&c.cpu).map_or(c.capacity, |i| i.speed))
            .collect::<Vec<_>>(),
    );
    let kinds = kind_loads(&cpus, &all_tasks);
    let cores = core_loads(&cpus);
    let imbalance = imbalance(&cpus);
    let hot_cpus = hot_cpus(&cpus, after, irq_rates.as_ref(), soft_rates.as_ref());
    let saturated = saturated(&cpus, progress_imbalance.as_ref());
    let suggestions = suggest(
        &kinds,
        imbalance.as_ref(),
        (progress_imbalance.as_ref(), capacity_used),
        &cpus,
        &hot_cpus,
    );
    let wait_source = wait_source(&all_tasks, trace);
    LoadReport {
        interval_s,
        capacity_source: machine.capacity_source.clone(),
        busy_source,
        cpus,
        kinds,
        cores,
        imbalance,
        tasks: reported_tasks(all_tasks),
        progress_imbalance,
        capacity_used,
        wait_source,
        saturated,
        hot_cpus,
        suggestions,
        unavailable,
        unavailable_cpus,
    }
}

/// The CPUs whose counters cannot be trusted over this interval, each
/// said in `unavailable`: left out, never read as idle nor as saturated.
fn unavailable_cpus(
    before: &Sample,
    after: &Sample,
    unavailable: &mut Vec<String>,
) -> Vec<UnavailableCpu> {
    let every: std::collections::BTreeSet<usize> = [before, after]
        .iter()
        .flat_map(|s| s.stat.keys().chain(s.stat_bad.keys()).copied())
        .collect();
    let unavailable_cpus: Vec<UnavailableCpu> = every
        .into_iter()
        .filter_map(|cpu| unusable(cpu, before, after).map(|reason| UnavailableCpu { cpu, reason }))
        .collect();
    for u in &unavailable_cpus {
        unavailable.push(format!(
            "CPU {}: {}; its load over this interval is unknown",
            u.cpu, u.reason
        ));
    }
    unavailable_cpus
}

/// Per CPU (those not left out), the `/proc/stat` ticks between the two
/// readings, nice counted as user.
fn cpu_deltas(
    before: &Sample,
    after: &Sample,
    left_out: &std::collections::BTreeSet<usize>,
) -> BTreeMap<usize, pinsight_sys::cpustat::CpuFields> {
    let mut deltas = BTreeMap::new();
    for (cpu, b) in after.stat.iter().filter(|(c, _)| !left_out.contains(c)) {
        if let Some(a) = before.stat.get(cpu) {
            let d = pinsight_sys::cpustat::CpuFields {
                user: b.user.saturating_sub(a.user) + b.nice.saturating_sub(a.nice),
                nice: 0,
                system: b.system.saturating_sub(a.system),
                idle: b.idle.saturating_sub(a.idle),
                iowait: b.iowait.saturating_sub(a.iowait),
                irq: b.irq.saturating_sub(a.irq),
                softirq: b.softirq.saturating_sub(a.softirq),
                steal: b.steal.saturating_sub(a.steal),
            };
            deltas.insert(*cpu, d);
        }
    }
    deltas
}

/// The interval in seconds (`/proc/uptime`'s, else the mean of the CPUs'
/// tick totals), and the uptime interval when both readings have one.
fn interval_of(
    before: &Sample,
    after: &Sample,
    deltas: &BTreeMap<usize, pinsight_sys::cpustat::CpuFields>,
    hz: f64,
) -> (f64, Option<f64>) {
    let totals: Vec<u64> = deltas.values().map(|d| d.total()).collect();
    let interval_ticks = if totals.is_empty() {
        0.0
    } else {
        totals.iter().sum::<u64>() as f64 / totals.len() as f64
    };
    let uptime = match (before.uptime_s, after.uptime_s) {
        (Some(a), Some(b)) if b > a => Some(b - a),
        _ => None,
    };
    (uptime.unwrap_or(interval_ticks / hz), uptime)
}

/// The two `/proc/schedstat` readings when usable (with an uptime
/// interval) and the busy source that follows; says why the run queue
/// is unknown otherwise.
fn busy_source<'a>(
    before: &'a Sample,
    after: &'a Sample,
    uptime: Option<f64>,
    unavailable: &mut Vec<String>,
) -> (Option<SchedPair<'a>>, BusySource) {
    let sched = match (&before.sched, &after.sched) {
        (Some(a), Some(b)) if uptime.is_some() => Some((a, b)),
        _ => None,
    };
    let busy_source = match (sched, uptime) {
        (Some(_), _) => BusySource::Schedstat,
        (None, Some(_)) => BusySource::Idle,
        (None, None) => BusySource::Ticks,
    };
    if sched.is_none() {
        unavailable.push(if after.sched.is_none() {
            "run queue per CPU: /proc/schedstat unreadable (a kernel without CONFIG_SCHEDSTATS, \
             or not recorded)"
                .to_string()
        } else {
            "run queue per CPU: /proc/uptime unreadable (the interval of /proc/schedstat's times)"
                .to_string()
        });
    }
    (sched, busy_source)
}

/// Per CPU, per line, the interrupt and softirq rates over the interval;
/// each unreadable file said in `unavailable`.
fn interrupt_rates(
    before: &Sample,
    after: &Sample,
    interval_s: f64,
    unavailable: &mut Vec<String>,
) -> (Option<Rates>, Option<Rates>) {
    let irq_rates = match (&before.interrupts, &after.interrupts) {
        (Some(a), Some(b)) => Some(rates(
            &a.cpus,
            &a.lines
                .iter()
                .map(|l| (l.name.as_str(), l.counts.as_slice()))
                .collect::<Vec<_>>(),
            &b.cpus,
            &b.lines
                .iter()
                .map(|l| (l.name.as_str(), l.counts.as_slice()))
                .collect::<Vec<_>>(),
            interval_s,
        )),
        _ => None,
    };
    if irq_rates.is_none() {
        unavailable.push("interrupts per CPU: /proc/interrupts unreadable".to_string());
    }
    let soft_rates = match (&before.softirqs, &after.softirqs) {
        (Some(a), Some(b)) => Some(rates(
            &a.cpus,
            &a.rows
                .iter()
                .map(|r| (r.0.as_str(), r.1.as_slice()))
                .collect::<Vec<_>>(),
            &b.cpus,
            &b.rows
                .iter()
                .map(|r| (r.0.as_str(), r.1.as_slice()))
                .collect::<Vec<_>>(),
            interval_s,
        )),
        _ => None,
    };
    if soft_rates.is_none() {
        unavailable.push("softirqs per CPU: /proc/softirqs unreadable".to_string());
    }
    (irq_rates, soft_rates)
}

/// The stealers' processes (an emulation's), in either reading.
fn stealer_pids(before: &Sample, after: &Sample) -> std::collections::BTreeSet<i32> {
    before
        .excluded_pids
        .iter()
        .chain(&after.excluded_pids)
        .copied()
        .collect()
}

/// The CPUs a stealer took time on, in either reading, ascending and once each.
fn stealer_cpus(before: &Sample, after: &Sample) -> std::collections::BTreeSet<usize> {
    before
        .excluded_ns
        .keys()
        .chain(after.excluded_ns.keys())
        .copied()
        .collect()
}

/// Says each stealer whose threads could not be read.
fn note_unread_stealers(after: &Sample, unavailable: &mut Vec<String>) {
    for e in &after.excluded_unread {
        unavailable.push(format!(
            "stealer {}:{}: /proc/{}/task unreadable (ended, or not recorded); its time, if any, \
             counts as busy",
            e.cpu, e.pid, e.pid
        ));
    }
}

/// The tasks the report lists (user tasks that ran or wanted a CPU),
/// least progress first.
fn reported_tasks(all_tasks: Vec<TaskProgress>) -> Vec<TaskProgress> {
    let mut tasks: Vec<TaskProgress> = all_tasks
        .into_iter()
        .filter(|t| !t.kernel && (t.run >= BUSY_SHARE || t.wants_cpu()))
        .collect();
    tasks.sort_by(|a, b| {
        a.progress
            .total_cmp(&b.progress)
            .then((a.pid, a.tid).cmp(&(b.pid, b.tid)))
    });
    tasks
}

/// Per CPU, per line of a counted file, a rate per second.
type Rates = BTreeMap<usize, Vec<f64>>;

/// What every CPU's row reads besides its own tick deltas.
struct RowInputs<'a> {
    before: &'a Sample,
    after: &'a Sample,
    sched: Option<SchedPair<'a>>,
    interval_s: f64,
    hz: f64,
    /// Threads listed per CPU.
    top: usize,
    info: &'a HashMap<usize, &'a CpuInfo>,
    threads: &'a [(usize, ThreadLoad)],
    speeds: &'a crate::progress::Speeds,
    task_demand: Option<&'a BTreeMap<usize, f64>>,
    irq_rates: Option<&'a Rates>,
    soft_rates: Option<&'a Rates>,
}

impl RowInputs<'_> {
    /// CPU `cpu`'s row: its shares of the interval, demand, rates and
    /// busiest threads.
    fn cpu_load(&self, cpu: usize, d: &pinsight_sys::cpustat::CpuFields) -> CpuLoad {
        let i = self.info.get(&cpu);
        let capacity = i.map_or(1.0, |i| i.capacity).max(f64::MIN_POSITIVE);
        let t = Times::of(
            cpu,
            d,
            self.before,
            self.after,
            self.sched,
            self.interval_s,
            self.hz,
        );
        let rate = |r: Option<&Rates>| r.map(|r| r.get(&cpu).map_or(0.0, |v| v.iter().sum()));
        CpuLoad {
            cpu,
            kind: i.and_then(|i| i.kind.clone()),
            mark: i.and_then(|i| i.mark.clone()),
            core: i.and_then(|i| i.core),
            capacity,
            user: t.user,
            system: t.system,
            irq: t.irq,
            softirq: t.softirq,
            steal: t.steal,
            idle: t.idle,
            busy: t.busy,
            normalised: t.busy / capacity,
            emulated: t.emulated,
            speed: self.speeds.get(&cpu).copied().unwrap_or(1.0),
            demand: match t.run_queue {
                Some(q) => Some(t.busy + q),
                None => self
                    .task_demand
                    .map(|d| d.get(&cpu).copied().unwrap_or(0.0)),
            },
            run_queue: t.run_queue,
            interrupts_per_s: rate(self.irq_rates),
            softirqs_per_s: rate(self.soft_rates),
            top_threads: self.top_threads(cpu),
        }
    }

    /// The busiest threads that last ran on `cpu`, at most `top`.
    fn top_threads(&self, cpu: usize) -> Vec<ThreadLoad> {
        let mut top: Vec<ThreadLoad> = self
            .threads
            .iter()
            .filter(|(c, _)| *c == cpu)
            .map(|(_, t)| t.clone())
            .filter(|t| t.share > 0.0)
            .collect();
        top.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.tid.cmp(&b.tid)));
        top.truncate(self.top);
        top
    }
}

/// How the tasks' waits were measured, in words.
fn wait_source(tasks: &[TaskProgress], trace: &Trace) -> Option<String> {
    use crate::progress::WaitSource;
    let sampled = tasks
        .iter()
        .filter(|t| t.wait_source == WaitSource::Sampled)
        .count();
    match (tasks.is_empty(), sampled) {
        (true, _) => None,
        (false, 0) => Some("run_delay of each thread's schedstat".into()),
        (false, _) => Some(format!(
            "the runnable state of each thread's stat, sampled at {} looks",
            trace.looks()
        )),
    }
}

/// The words for a machine whose CPUs were all saturated: none idle
/// more than `1 - SATURATED` of the interval (a CPU an emulation's
/// stealer slows is saturated when the tasks take all the stealer
/// leaves).
fn saturated(cpus: &[CpuLoad], p: Option<&ProgressImbalance>) -> Option<String> {
    if cpus.len() < 2 || cpus.iter().any(|c| c.idle > 1.0 - SATURATED) {
        return None;
    }
    Some(match p {
        Some(p) => format!(
            "Every CPU is busy {:.0}% or more: busy time cannot show an imbalance. The \
             tasks' progress can: max/min {:.2} over {} tasks that want a whole CPU.",
            SATURATED * 100.0,
            p.ratio,
            p.tasks
        ),
        None => format!(
            "Every CPU is busy {:.0}% or more: busy time cannot show an imbalance, and \
             fewer than two tasks wanted a whole CPU to compare their progress.",
            SATURATED * 100.0
        ),
    })
}

type SchedPair<'a> = (
    &'a BTreeMap<usize, crate::sample::CpuSched>,
    &'a BTreeMap<usize, crate::sample::CpuSched>,
);

/// One CPU's shares of the interval.
struct Times {
    user: f64,
    system: f64,
    irq: f64,
    softirq: f64,
    steal: f64,
    idle: f64,
    busy: f64,
    emulated: f64,
    run_queue: Option<f64>,
}

impl Times {
    /// CPU `cpu`'s shares: busy from the best source there is, less the
    /// excluded processes' run time; its split and steal from the ticks
    /// of `d` (the `/proc/stat` deltas, `nice` folded into `user`).
    fn of(
        cpu: usize,
        d: &pinsight_sys::cpustat::CpuFields,
        before: &Sample,
        after: &Sample,
        sched: Option<SchedPair>,
        interval_s: f64,
        hz: f64,
    ) -> Times {
        let total = d.total();
        let parts = d.user + d.system + d.irq + d.softirq;
        let secs = interval_s.max(1e-9);
        let steal_ticks = share(d.steal, total);
        let per_s = |ns: u64| ns as f64 / 1e9 / secs;
        let sched_cpu = sched.and_then(|(a, b)| a.get(&cpu).zip(b.get(&cpu)));
        let raw = match (sched, sched_cpu) {
            (Some(_), Some((a, b))) => per_s(b.running_ns.saturating_sub(a.running_ns)),
            // A CPU missing from /proc/schedstat (it came online meanwhile)
            // ran nothing the scheduler counted there.
            (Some(_), None) => 0.0,
            (None, _) if before.uptime_s.is_some() && after.uptime_s.is_some() => {
                let idle = (d.idle + d.iowait + d.steal) as f64 / hz;
                1.0 - idle / secs
            }
            (None, _) => share(parts, total),
        }
        .clamp(0.0, 1.0);
        let excluded = match (before.excluded_ns.get(&cpu), after.excluded_ns.get(&cpu)) {
            (Some(a), Some(b)) => per_s(b.saturating_sub(*a)),
            _ => 0.0,
        };
        let emulated = excluded.clamp(0.0, raw);
        let busy = raw - emulated;
        if sched.is_none() && after.uptime_s.is_none() && emulated == 0.0 {
            // /proc/stat alone: its own shares, as it splits them.
            return Times {
                user: share(d.user, total),
                system: share(d.system, total),
                irq: share(d.irq, total),
                softirq: share(d.softirq, total),
                steal: steal_ticks,
                idle: share(d.idle + d.iowait, total),
                busy,
                emulated,
                run_queue: None,
            };
        }
        let split = |x: u64| {
            if parts == 0 {
                0.0
            } else {
                busy * x as f64 / parts as f64
            }
        };
        // With no tick in any busy field, all of busy counts as user.
        let user = if parts == 0 { busy } else { split(d.user) };
        let steal = (steal_ticks + emulated).min(1.0 - busy);
        Times {
            user,
            system: split(d.system),
            irq: split(d.irq),
            softirq: split(d.softirq),
            steal,
            idle: (1.0 - busy - steal).max(0.0),
            busy,
            emulated,
            run_queue: sched_cpu.map(|(a, b)| per_s(b.waiting_ns.saturating_sub(a.waiting_ns))),
        }
    }
}

/// A counted file's lines: (name, one count per column).
type Lines<'a> = [(&'a str, &'a [u64])];

/// Per CPU of the later reading, per line of it, the rate between two
/// readings. Lines are matched by name and CPUs by column header (an IRQ
/// or a CPU may come or go between reads); a line or CPU new since the
/// first reading counts from 0.
fn rates(
    a_cpus: &[usize],
    a: &Lines,
    b_cpus: &[usize],
    b: &Lines,
    secs: f64,
) -> BTreeMap<usize, Vec<f64>> {
    let secs = if secs > 0.0 { secs } else { 1.0 };
    let was: HashMap<&str, &[u64]> = a.iter().copied().collect();
    b_cpus
        .iter()
        .enumerate()
        .map(|(col, cpu)| {
            let a_col = a_cpus.iter().position(|c| c == cpu);
            let v = b
                .iter()
                .map(|(name, counts)| {
                    let now = counts.get(col).copied().unwrap_or(0);
                    let then = a_col
                        .and_then(|ac| was.get(name).and_then(|w| w.get(ac)))
                        .copied()
                        .unwrap_or(0);
                    now.saturating_sub(then) as f64 / secs
                })
                .collect();
            (*cpu, v)
        })
        .collect()
}

/// Per CPU (the one each thread last ran on), each thread's share of one
/// CPU over the interval. A thread new since `before` counts all its ticks.
fn thread_loads(before: &Sample, after: &Sample, interval_ticks: f64) -> Vec<(usize, ThreadLoad)> {
    let was: HashMap<(i32, i32), &ThreadTick> =
        before.threads.iter().map(|t| ((t.pid, t.tid), t)).collect();
    after
        .threads
        .iter()
        .filter_map(|t| {
            let cpu = t.last_cpu?;
            let d = match was.get(&(t.pid, t.tid)) {
                Some(w) => t.ticks.saturating_sub(w.ticks),
                None => t.ticks,
            };
            let share = if interval_ticks > 0.0 {
                (d as f64 / interval_ticks).min(1.0)
            } else {
                0.0
            };
            Some((
                cpu,
                ThreadLoad {
                    pid: t.pid,
                    tid: t.tid,
                    comm: t.comm.clone(),
                    kernel: t.is_kernel(),
                    share,
                },
            ))
        })
        .collect()
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

fn kind_loads(cpus: &[CpuLoad], tasks: &[TaskProgress]) -> Vec<KindLoad> {
    let mut by: BTreeMap<(String, String), Vec<&CpuLoad>> = BTreeMap::new();
    for c in cpus {
        if let (Some(k), Some(m)) = (&c.kind, &c.mark) {
            by.entry((k.clone(), m.clone())).or_default().push(c);
        }
    }
    let mut v: Vec<KindLoad> = by
        .into_iter()
        .map(|((kind, mark), cs)| KindLoad {
            kind,
            mark,
            cpus: cs.iter().map(|c| c.cpu).collect(),
            capacity: mean(cs.iter().map(|c| c.capacity)),
            busy: mean(cs.iter().map(|c| c.busy)),
            normalised: mean(cs.iter().map(|c| c.normalised)),
            progress: {
                let on: Vec<f64> = tasks
                    .iter()
                    .filter(|t| t.wants_cpu() && !t.kernel)
                    .filter(|t| t.cpu.is_some_and(|c| cs.iter().any(|x| x.cpu == c)))
                    .map(|t| t.progress)
                    .collect();
                (!on.is_empty()).then(|| mean(on.into_iter()))
            },
        })
        .collect();
    // Most capable first, as `topo` lists kinds.
    v.sort_by(|a, b| b.capacity.total_cmp(&a.capacity).then(a.kind.cmp(&b.kind)));
    v
}

fn core_loads(cpus: &[CpuLoad]) -> Vec<CoreLoad> {
    let mut by: BTreeMap<usize, Vec<&CpuLoad>> = BTreeMap::new();
    for c in cpus {
        if let Some(core) = c.core {
            by.entry(core).or_default().push(c);
        }
    }
    by.into_iter()
        .map(|(core, cs)| CoreLoad {
            core,
            cpus: cs.iter().map(|c| c.cpu).collect(),
            kind: cs[0].kind.clone(),
            busy: cs.iter().map(|c| c.busy).sum(),
            normalised: mean(cs.iter().map(|c| c.normalised)),
        })
        .collect()
}

fn imbalance(cpus: &[CpuLoad]) -> Option<Imbalance> {
    imbalance_of(cpus.iter().map(|c| (c.cpu, c.busy, c.normalised)))
}

/// The imbalance of `(cpu, busy share, normalised load)` values: the
/// largest normalised load over the smallest among the CPUs busy at least
/// [`BUSY_SHARE`] of the interval (an idle CPU's ratio would be noise over
/// noise); `None` with fewer than two. The one definition `load` and
/// `balance` use.
pub fn imbalance_of(values: impl IntoIterator<Item = (usize, f64, f64)>) -> Option<Imbalance> {
    let busy: Vec<(usize, f64)> = values
        .into_iter()
        .filter(|v| v.1 >= BUSY_SHARE)
        .map(|v| (v.0, v.2))
        .collect();
    if busy.len() < 2 {
        return None;
    }
    let order = |a: &&(usize, f64), b: &&(usize, f64)| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0));
    let max = busy.iter().max_by(order)?;
    let min = busy.iter().min_by(order)?;
    Some(Imbalance {
        ratio: max.1 / min.1,
        max_cpu: max.0,
        max: max.1,
        min_cpu: min.0,
        min: min.1,
        busy_cpus: busy.len(),
    })
}

fn hot_cpus(
    cpus: &[CpuLoad],
    after: &Sample,
    irq_rates: Option<&BTreeMap<usize, Vec<f64>>>,
    soft_rates: Option<&BTreeMap<usize, Vec<f64>>>,
) -> Vec<HotCpu> {
    let mut hot: Vec<&CpuLoad> = cpus
        .iter()
        .filter(|c| c.irq + c.softirq >= HOT_IRQ_SHARE)
        .collect();
    hot.sort_by(|a, b| (b.irq + b.softirq).total_cmp(&(a.irq + a.softirq)));
    hot.truncate(3);
    hot.into_iter()
        .map(|c| {
            let mut irqs = Vec::new();
            let mut per_s = 0.0;
            if let (Some(r), Some(i)) = (irq_rates.and_then(|r| r.get(&c.cpu)), &after.interrupts) {
                per_s = r.iter().sum();
                let mut lines: Vec<(usize, f64)> = r
                    .iter()
                    .copied()
                    .enumerate()
                    .filter(|(_, v)| *v > 0.0)
                    .collect();
                lines.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                for (idx, v) in lines
                    .into_iter()
                    .filter(|(_, v)| *v >= per_s * 0.01)
                    .take(3)
                {
                    let Some(l) = i.lines.get(idx) else { continue };
                    irqs.push(IrqShare {
                        irq: l.name.clone(),
                        per_s: v,
                        share: if per_s > 0.0 { v / per_s } else { 0.0 },
                        handlers: if l.number().is_some() {
                            l.handlers()
                        } else {
                            vec![l.desc.clone()]
                        },
                        queues: l.queues(),
                        affinity: None,
                        effective: None,
                    });
                }
            }
            let mut softirqs = Vec::new();
            if let (Some(r), Some(s)) = (soft_rates.and_then(|r| r.get(&c.cpu)), &after.softirqs) {
                let mut rows: Vec<(String, f64)> = r
                    .iter()
                    .zip(&s.rows)
                    .filter(|(v, _)| **v > 0.0)
                    .map(|(v, row)| (row.0.clone(), *v))
                    .collect();
                rows.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                rows.truncate(3);
                softirqs = rows;
            }
            HotCpu {
                cpu: c.cpu,
                irq_share: c.irq + c.softirq,
                interrupts_per_s: per_s,
                irqs,
                softirqs,
            }
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The share of their usable capacity below which the tasks that want a
/// whole CPU are said to wait while capacity sits idle.
pub const CAPACITY_USED_SUGGEST: f64 = 0.8;

fn suggest(
    kinds: &[KindLoad],
    imb: Option<&Imbalance>,
    (progress, used): (Option<&ProgressImbalance>, Option<f64>),
    cpus: &[CpuLoad],
    hot: &[HotCpu],
) -> Vec<Suggestion> {
    let mut out: Vec<Suggestion> = move_irqs(hot).into_iter().collect();
    let waiting = used
        .filter(|u| *u < CAPACITY_USED_SUGGEST)
        .map(|u| capacity_unused(u, cpus));
    if let Some(s) = waiting.or_else(|| uneven_progress(progress)) {
        out.push(s);
        return out;
    }
    let Some(imb) = imb else {
        if out.is_empty() {
            out.push(Suggestion::None {
                text: "Fewer than two CPUs were busy: no imbalance to measure.".into(),
            });
        }
        return out;
    };
    if imb.ratio < IMBALANCE_SUGGEST {
        if out.is_empty() {
            out.push(balanced(imb));
        }
        return out;
    }
    out.push(uneven_load(kinds, imb));
    out
}

/// No suggestion: the busy CPUs' normalised loads are even.
fn balanced(imb: &Imbalance) -> Suggestion {
    Suggestion::None {
        text: format!(
            "Balanced: max/min normalised load {:.2} over {} busy CPUs.",
            imb.ratio, imb.busy_cpus
        ),
    }
}

/// Moving IRQs off the CPUs busiest with interrupts, naming the first's
/// top numbered IRQ.
fn move_irqs(hot: &[HotCpu]) -> Option<Suggestion> {
    let h = hot.first()?;
    let set: CpuSet = hot.iter().map(|h| h.cpu).collect();
    let top = h
        .irqs
        .iter()
        .find(|i| i.irq.parse::<u32>().is_ok())
        .map(|i| {
            let names = if i.handlers.is_empty() {
                String::new()
            } else {
                format!(" {}", i.handlers.join(","))
            };
            format!(" (IRQ {}{}: {} of them)", i.irq, names, pct(i.share))
        })
        .unwrap_or_default();
    let text = format!(
        "CPU {} spends {} of its time on interrupts{top}: move IRQs off it with \
         `pinsight irq --off {}`, or spread them by capacity with `pinsight irq --spread`.",
        h.cpu,
        pct(h.irq_share),
        set.to_list_string()
    );
    Some(Suggestion::MoveIrqs { cpus: set, text })
}

/// Tasks that wait while a CPU idles (`used` of their usable capacity):
/// their affinities keep them off it (all pinned to one CPU, say). Busy
/// time shows one idle CPU, not that the work is waiting for it.
fn capacity_unused(used: f64, cpus: &[CpuLoad]) -> Suggestion {
    let idle = cpus
        .iter()
        .max_by(|a, b| a.idle.total_cmp(&b.idle).then(b.cpu.cmp(&a.cpu)));
    let crowded = cpus
        .iter()
        .filter_map(|c| c.demand.map(|d| (c, d)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cpu.cmp(&a.0.cpu)));
    let place = match (idle, crowded) {
        (Some(i), Some((c, d))) if i.cpu != c.cpu => format!(
            " (CPU {} is idle {} while {d:.1} tasks want CPU {})",
            i.cpu,
            pct(i.idle),
            c.cpu
        ),
        _ => String::new(),
    };
    Suggestion::Rebalance {
        text: format!(
            "Tasks that want a whole CPU get {} of the capacity they could use{place}. \
             Spread them by capacity with `pinsight balance` (`--pids`, `--match` or \
             `--cgroup`, and `--cpus` for the CPUs their affinities leave out).",
            pct(used)
        ),
    }
}

/// Tasks that want a whole CPU and progress unevenly: the imbalance a
/// saturated machine shows only here.
fn uneven_progress(progress: Option<&ProgressImbalance>) -> Option<Suggestion> {
    let p = progress.filter(|p| p.ratio >= IMBALANCE_SUGGEST)?;
    let cpu = |c: Option<usize>| c.map_or(String::new(), |c| format!(" on CPU {c}"));
    Some(Suggestion::Rebalance {
        text: format!(
            "Tasks that want a whole CPU progress unevenly: {} ({}){} advances {:.2}x as \
             fast as {} ({}){}. Give each CPU work in proportion to its capacity with \
             `pinsight balance` (`--pids`, `--match` or `--cgroup`).",
            p.max.comm,
            p.max.pid,
            cpu(p.max.cpu),
            p.ratio,
            p.min.comm,
            p.min.pid,
            cpu(p.min.cpu)
        ),
    })
}

/// An uneven normalised load: by kind when load follows capacity (the
/// least capable busy kind carries more normalised load than the most
/// capable one), else between the extreme CPUs.
fn uneven_load(kinds: &[KindLoad], imb: &Imbalance) -> Suggestion {
    let busy_kinds: Vec<&KindLoad> = kinds.iter().filter(|k| k.busy >= BUSY_SHARE).collect();
    let follows = match (busy_kinds.first(), busy_kinds.last()) {
        (Some(big), Some(small))
            if big.kind != small.kind && small.normalised >= big.normalised * IMBALANCE_SUGGEST =>
        {
            Some(format!(
                "Load follows capacity: the {}s carry {:.2}x the normalised load of the {}s. \
                 Give each CPU work in proportion to its capacity with `pinsight balance` \
                 (`--pids`, `--match` or `--cgroup`).",
                small.kind,
                small.normalised / big.normalised.max(f64::MIN_POSITIVE),
                big.kind
            ))
        }
        _ => None,
    };
    let text = follows.unwrap_or_else(|| {
        format!(
            "Uneven: CPU {} carries {:.2}x the normalised load of CPU {}. Spread the work by \
             capacity with `pinsight balance` (`--pids`, `--match` or `--cgroup`).",
            imb.max_cpu, imb.ratio, imb.min_cpu
        )
    });
    Suggestion::Rebalance { text }
}
