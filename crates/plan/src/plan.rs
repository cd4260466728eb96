//! The planner: `plan(topology, request) -> Plan`. Pure: no OS access.

use crate::balance::{apportion, capacities, smt_shared, CapacitySource};
use crate::mem::{check_node, resolve, MemError, MemMode, MemPlan, MemPolicy};
use crate::order::{compact, distrib, physical_first, scatter_slots, slots, Slot};
use crate::policy::{BasePolicy, KindSel, Policy};
use crate::weights::{Weights, WeightsError};
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::LatencyMatrix;
use pinsight_model::DEFAULT_SMT_YIELD;
use pinsight_model::{DeviceLookupError, Kind, RankSource, Topology};
use serde::Serialize;

/// What to plan.
///
/// Build it with [`Request::new`] and struct-update syntax so that fields
/// added later do not break callers:
/// `Request { threads: Some(8), ..Request::new(policy) }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub policy: Policy,
    /// Number of threads (default: the number of CPUs in the policy's set).
    pub threads: Option<usize>,
    /// Number of tasks (processes) — a synonym of `threads` that reads
    /// better for `balance`; giving both with different values is an error.
    pub tasks: Option<usize>,
    /// Let a pinned policy place more threads than it has CPUs (round
    /// robin). Set policies (`os`, `*-set`) never need it: their threads
    /// float inside the set, so any number is accepted.
    pub oversubscribe: bool,
    /// Same as the `+smt-physical-first` policy suffix.
    pub smt_physical_first: bool,
    /// Per-CPU speed weights for `balance`.
    pub weights: Option<Weights>,
    /// Core-to-core latency matrix for `latency-group`/`latency-pipeline`
    /// (`--latency FILE`, read with `pinsight_latency::LoadMatrix`).
    pub latency: Option<LatencyMatrix>,
    /// Where the program's memory lives (`None`: the kernel's default,
    /// first touch).
    pub mem: Option<MemPolicy>,
    /// The kernel's weighted-interleave weights `(node, weight)`
    /// (`/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`, read by the
    /// caller), shown with a weighted-interleave policy.
    pub interleave_weights: Option<Vec<(u32, u32)>>,
    /// A device (`eth0`, `0000:3b:00.0`, `gpu0`) whose local CPUs are the
    /// only ones placed on; with `mem: local`, memory goes to its node.
    pub near: Option<String>,
    /// What a second busy SMT thread adds to a core, for `balance`
    /// (measured, e.g. 0.3, `--smt-yield`); it applies to a weights file's
    /// capacities too. `None`: [`pinsight_model::DEFAULT_SMT_YIELD`] on the
    /// topology's capacities, no sharing on a weights file's (measured per
    /// CPU under load).
    pub smt_yield: Option<f64>,
    /// Accept a latency matrix that covers only part of the plan's CPUs
    /// (`latency-group`, `latency-pipeline`); by default it is refused.
    pub latency_partial: bool,
}

impl Request {
    /// A request with every option at its default.
    pub fn new(policy: Policy) -> Request {
        Request {
            policy,
            threads: None,
            tasks: None,
            oversubscribe: false,
            smt_physical_first: false,
            weights: None,
            latency: None,
            mem: None,
            interleave_weights: None,
            near: None,
            smt_yield: None,
            latency_partial: false,
        }
    }
}

/// The device a plan was restricted to (`--near`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NearPlan {
    /// The name asked for (`eth0`, `gpu0`, `0000:3b:00.0`).
    pub device: String,
    /// Its PCI address.
    pub address: String,
    /// Its NUMA node, when the kernel tells.
    pub numa_node: Option<u32>,
    /// Its local CPUs that are usable: the only CPUs placed on.
    pub cpus: CpuSet,
}

/// Where each thread (or task) runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Canonical policy text, e.g. `p-first+smt-physical-first`.
    pub policy: String,
    /// Number of threads/tasks planned for.
    pub threads: usize,
    /// Mask for the whole process: the union of places for pinned
    /// policies, the set for `*-set`, every usable CPU for `os`.
    pub process_mask: CpuSet,
    /// One place per thread/task in creation order; empty for `os`; for
    /// set policies every place is the whole set (threads float inside).
    pub places: Vec<CpuSet>,
    /// Whether threads must be pinned one by one (else the process mask
    /// is all there is to apply).
    pub pinned: bool,
    /// For `balance`: `(cpu, number of tasks)` for every CPU considered,
    /// ascending by CPU (zero counts included). JSON: `[{"cpu": 0, "tasks": 11}, ...]`.
    #[serde(serialize_with = "tasks_per_cpu_json")]
    pub tasks_per_cpu: Option<Vec<(usize, usize)>>,
    /// Human explanations: oversubscription, ignored modifiers, capacity source.
    pub notes: Vec<String>,
    /// The memory policy, resolved and checked (`None`: the kernel's
    /// default, first touch on the node of the CPU that touches).
    pub memory: Option<MemPlan>,
    /// The device the CPUs were restricted to.
    pub near: Option<NearPlan>,
}

impl Plan {
    /// A pinned plan of one thread per place, in creation order: the
    /// process mask is the places' union; no memory policy, no device.
    pub fn pinned_to(policy: String, places: Vec<CpuSet>, notes: Vec<String>) -> Plan {
        Plan {
            policy,
            threads: places.len(),
            process_mask: places.iter().flat_map(CpuSet::iter).collect(),
            places,
            pinned: true,
            tasks_per_cpu: None,
            notes,
            memory: None,
            near: None,
        }
    }
}

fn tasks_per_cpu_json<S: serde::Serializer>(
    v: &Option<Vec<(usize, usize)>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Entry {
        cpu: usize,
        tasks: usize,
    }
    v.as_ref()
        .map(|v| {
            v.iter()
                .map(|(cpu, tasks)| Entry {
                    cpu: *cpu,
                    tasks: *tasks,
                })
                .collect::<Vec<_>>()
        })
        .serialize(s)
}

/// Why a plan cannot be made. Each variant carries the data; the message
/// says what is wrong in planning terms (the CLI adds which flag to change).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// Zero threads (or tasks) asked for.
    #[error("0 threads: the number of threads must be at least 1")]
    ZeroThreads,
    /// A thread count and a task count that disagree.
    #[error("{threads} threads and {tasks} tasks disagree; give one of them")]
    ThreadsTasksConflict { threads: usize, tasks: usize },
    /// A pinned policy given more threads than CPUs without
    /// [`Request::oversubscribe`].
    #[error("{policy}: {threads} threads but only {} ({cpus}) to pin them on, one each", count(cpus.len(), "CPU", "CPUs"))]
    TooManyThreads {
        policy: String,
        threads: usize,
        cpus: CpuSet,
    },
    /// The policy needs several ranked core kinds.
    #[error("{policy} needs at least two core kinds; {detail}")]
    NeedsKinds { policy: String, detail: String },
    /// `kind:X` names no kind of this machine.
    #[error("no core kind '{wanted}' on this machine; kinds are: {available}")]
    NoSuchKind { wanted: String, available: String },
    /// The selected kind has no usable CPU.
    #[error("{policy}: no usable CPU of kind {kind} (its CPUs {cpus} are offline or not allowed by the cgroup)")]
    KindUnusable {
        policy: String,
        kind: String,
        cpus: CpuSet,
    },
    /// An explicit CPU list names CPUs that cannot be used.
    #[error("{policy}: {detail}")]
    CpusUnusable { policy: String, detail: String },
    /// The machine has no usable CPU at all.
    #[error("this machine has no usable CPU (none online and allowed)")]
    NoUsableCpu,
    /// A modifier that makes no sense for this policy.
    #[error("{policy}: {detail}")]
    Modifier { policy: String, detail: String },
    /// Weights that do not fit this machine.
    #[error("weights: {0}")]
    Weights(#[from] WeightsError),
    /// A latency policy without a usable matrix or thread count.
    #[error("{policy}: {problem}")]
    Latency {
        policy: String,
        problem: LatencyProblem,
    },
    /// A memory policy that does not fit this machine.
    #[error("memory policy {spec}: {error}")]
    Memory {
        /// The policy as written (`bind:1`).
        spec: String,
        /// What is wrong.
        error: MemError,
    },
    /// The device to place near is unknown.
    #[error("{0}")]
    Device(DeviceLookupError),
    /// The device's local CPUs hold no usable CPU.
    #[error("no usable CPU is local to {device} (its CPUs {local}; usable CPUs {usable})")]
    NearUnusable {
        device: String,
        local: CpuSet,
        usable: CpuSet,
    },
}

impl PlanError {
    /// What is wrong, without the policy name the message starts with: for
    /// callers that already name the policy (compare's list of arms that
    /// cannot run). Built from the variant's data, not from its message.
    pub fn reason(&self) -> String {
        match self {
            PlanError::TooManyThreads { threads, cpus, .. } => format!(
                "{threads} threads but only {} ({cpus}) to pin them on, one each",
                count(cpus.len(), "CPU", "CPUs")
            ),
            PlanError::NeedsKinds { detail, .. } => {
                format!("needs at least two core kinds; {detail}")
            }
            PlanError::KindUnusable { kind, cpus, .. } => format!(
                "no usable CPU of kind {kind} (its CPUs {cpus} are offline or not allowed by the cgroup)"
            ),
            PlanError::CpusUnusable { detail, .. } | PlanError::Modifier { detail, .. } => {
                detail.clone()
            }
            PlanError::Latency { problem, .. } => problem.to_string(),
            PlanError::Memory { error, .. } => error.to_string(),
            other => other.to_string(),
        }
    }
}

/// What a latency policy lacks (see [`PlanError::Latency`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LatencyProblem {
    /// No core-to-core latency matrix was given.
    #[error("needs a core-to-core latency matrix (CSV or JSON, e.g. from `pinsight latency`)")]
    NoMatrix,
    /// No thread count: the number of CPUs to choose.
    #[error("needs a thread count K: the number of CPUs to choose")]
    NoThreadCount,
    /// The matrix covers fewer than two usable CPUs.
    #[error(
        "the matrix covers CPUs {matrix} but only {} of them {} usable here ({usable}); measure this machine",
        covered.len(),
        if covered.len() == 1 { "is" } else { "are" }
    )]
    TooFewCovered {
        matrix: CpuSet,
        covered: CpuSet,
        usable: CpuSet,
    },
    /// The matrix leaves usable CPUs out, or names CPUs this machine does
    /// not have online (another machine's matrix): refused unless
    /// [`Request::latency_partial`].
    #[error(
        "the matrix covers CPUs {matrix}, not the plan's CPUs {usable}{}{}; measure this machine",
        if missing.is_empty() { String::new() } else { format!(" (missing {missing})") },
        if foreign.is_empty() { String::new() } else { format!(" (CPUs {foreign} are not online here)") }
    )]
    Partial {
        matrix: CpuSet,
        usable: CpuSet,
        missing: CpuSet,
        foreign: CpuSet,
    },
}

/// "1 thread" / "2 threads".
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "CPU 3 is" / "CPUs 6-7 are".
fn cpus_are(set: &CpuSet) -> String {
    if set.len() == 1 {
        format!("CPU {set} is")
    } else {
        format!("CPUs {set} are")
    }
}

/// Describes the machine's kinds for error messages: `0 = E-core (12-19), 1 = P-core (0-11)`.
fn kinds_text(topo: &Topology) -> String {
    if topo.kinds.is_empty() {
        return "none known".into();
    }
    topo.kinds
        .iter()
        .map(|k| format!("{} = {} ({})", k.rank, k.name, k.cpus))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves a kind selector to a kind of `topo`.
fn resolve_kind<'t>(
    topo: &'t Topology,
    sel: &KindSel,
    policy: &str,
) -> Result<&'t Kind, PlanError> {
    match sel {
        // On a machine of one kind, that kind is the fastest: `p-*` means
        // "the fast cores", which are all of them, so the P-core policies
        // still apply (a user's script works on any box). Only `e-*` asks
        // for a kind the machine lacks.
        KindSel::Fastest if topo.kinds.len() == 1 => Ok(&topo.kinds[0]),
        KindSel::Fastest | KindSel::Slowest => {
            if topo.kinds.len() < 2 {
                let one = match topo.kinds.first() {
                    Some(k) => format!("this machine has one kind: {} ({})", k.name, k.cpus),
                    None => "this machine reports no core kinds".into(),
                };
                return Err(PlanError::NeedsKinds {
                    policy: policy.into(),
                    detail: format!("{one}; use compact, scatter, smt-physical-first or cpus:LIST"),
                });
            }
            if topo
                .kinds
                .iter()
                .any(|k| k.rank_source == RankSource::Unranked)
            {
                return Err(PlanError::NeedsKinds {
                    policy: policy.into(),
                    detail: format!(
                        "this machine's kinds cannot be ranked (no capacity or frequency tells them apart): {}; name one with kind:RANK|NAME",
                        kinds_text(topo)
                    ),
                });
            }
            Ok(if *sel == KindSel::Fastest {
                topo.kinds.last()
            } else {
                topo.kinds.first()
            }
            .expect("two kinds"))
        }
        KindSel::Rank(r) => topo.kinds.get(*r).ok_or_else(|| PlanError::NoSuchKind {
            wanted: r.to_string(),
            available: kinds_text(topo),
        }),
        KindSel::Name(n) => topo
            .kinds
            .iter()
            .find(|k| k.name.eq_ignore_ascii_case(n) || k.mark.eq_ignore_ascii_case(n))
            .ok_or_else(|| PlanError::NoSuchKind {
                wanted: n.clone(),
                available: kinds_text(topo),
            }),
    }
}

/// The usable CPUs of a kind, or an error naming it.
fn kind_cpus(kind: &Kind, usable: &CpuSet, policy: &str) -> Result<CpuSet, PlanError> {
    let cpus = kind.cpus.intersection(usable);
    if cpus.is_empty() {
        return Err(PlanError::KindUnusable {
            policy: policy.into(),
            kind: kind.name.clone(),
            cpus: kind.cpus.clone(),
        });
    }
    Ok(cpus)
}

/// Checks an explicit list: every CPU must exist, be online and allowed.
fn check_explicit(
    topo: &Topology,
    list: &CpuSet,
    usable: &CpuSet,
    policy: &str,
) -> Result<(), PlanError> {
    let bad = list.difference(usable);
    if bad.is_empty() {
        return Ok(());
    }
    let mut absent = CpuSet::new();
    let mut offline = CpuSet::new();
    let mut forbidden = CpuSet::new();
    // Online and allowed, yet not usable: outside the device's CPUs
    // (`Request::near` narrows the usable set).
    let mut far = CpuSet::new();
    for c in bad.iter() {
        match topo.cpu(c) {
            None => absent.insert(c),
            Some(info) if !info.online => offline.insert(c),
            Some(info) if !info.allowed => forbidden.insert(c),
            Some(_) => far.insert(c),
        };
    }
    let mut parts = Vec::new();
    if !absent.is_empty() {
        parts.push(format!("{} not present on this machine", cpus_are(&absent)));
    }
    if !offline.is_empty() {
        parts.push(format!("{} offline", cpus_are(&offline)));
    }
    if !forbidden.is_empty() {
        parts.push(format!(
            "{} not allowed by the cgroup",
            cpus_are(&forbidden)
        ));
    }
    if !far.is_empty() {
        parts.push(format!(
            "{} not local to the device placed near",
            cpus_are(&far)
        ));
    }
    Err(PlanError::CpusUnusable {
        policy: policy.into(),
        detail: format!("{}; usable CPUs are {usable}", parts.join(", ")),
    })
}

/// Kinds present among `slots`, fastest first (`desc`) or slowest first.
fn by_kind(slots: &[Slot], desc: bool) -> Vec<Vec<Slot>> {
    let mut ranks: Vec<Option<usize>> = slots.iter().map(|s| s.kind).collect();
    ranks.sort();
    ranks.dedup();
    if desc {
        ranks.reverse();
    }
    ranks
        .into_iter()
        .map(|r| slots.iter().filter(|s| s.kind == r).cloned().collect())
        .collect()
}

/// Makes a plan. Pure: the same topology and request give the same plan.
///
/// With [`Request::near`] only the device's usable local CPUs are placed
/// on; with [`Request::mem`] the memory policy is checked against the
/// machine (nodes present, holding memory, allowed by the cgroup) before
/// any CPU is chosen.
pub fn plan(topo: &Topology, req: &Request) -> Result<Plan, PlanError> {
    let all = topo.usable();
    let near = match &req.near {
        None => None,
        Some(name) => {
            let dev = topo.device(name).map_err(PlanError::Device)?;
            let cpus = dev.local_cpus.intersection(&all);
            if cpus.is_empty() {
                return Err(PlanError::NearUnusable {
                    device: name.clone(),
                    local: dev.local_cpus.clone(),
                    usable: all,
                });
            }
            Some(NearPlan {
                device: name.clone(),
                address: dev.address.clone(),
                numa_node: dev.numa_node,
                cpus,
            })
        }
    };
    let memory = match &req.mem {
        None => None,
        Some(m) => Some(memory_plan(topo, m, req, near.as_ref())?),
    };
    let usable = near.as_ref().map_or(all, |n| n.cpus.clone());
    let mut p = plan_cpus(topo, req, usable)?;
    if let Some(n) = &near {
        let node = n.numa_node.map_or("NUMA node unknown".to_string(), |x| {
            format!("NUMA node {x}")
        });
        p.notes.insert(
            0,
            format!("CPUs {}: local to {} ({node})", n.cpus, n.device),
        );
    }
    p.memory = memory;
    p.near = near;
    Ok(p)
}

/// The memory policy on this machine; `local` near a device whose node is
/// known binds to that node.
fn memory_plan(
    topo: &Topology,
    m: &MemPolicy,
    req: &Request,
    near: Option<&NearPlan>,
) -> Result<MemPlan, PlanError> {
    let err = |error: MemError| PlanError::Memory {
        spec: m.to_string(),
        error,
    };
    if let (
        MemPolicy::Local,
        Some(NearPlan {
            numa_node: Some(node),
            device,
            ..
        }),
    ) = (m, near)
    {
        check_node(topo, *node).map_err(err)?;
        let mut mp = MemPlan::new(MemMode::Bind, vec![*node]);
        mp.notes.push(format!(
            "memory local to {device}: bound to its NUMA node {node}"
        ));
        return Ok(mp);
    }
    let mut mp = resolve(topo, m, req.interleave_weights.as_deref()).map_err(err)?;
    if let (MemPolicy::Local, Some(n)) = (m, near) {
        mp.notes.push(format!(
            "{}'s NUMA node is unknown: memory stays local to the CPU that touches it",
            n.device
        ));
    }
    Ok(mp)
}

/// The CPU part of [`plan()`], over `usable` (the machine's usable CPUs,
/// or those near a device).
fn plan_cpus(topo: &Topology, req: &Request, usable: CpuSet) -> Result<Plan, PlanError> {
    let mut policy = req.policy.clone();
    policy.smt_physical_first |= req.smt_physical_first;
    let name = policy.to_string();
    let threads = match (req.threads, req.tasks) {
        (Some(t), Some(m)) if t != m => {
            return Err(PlanError::ThreadsTasksConflict {
                threads: t,
                tasks: m,
            })
        }
        (t, m) => t.or(m),
    };
    if threads == Some(0) {
        return Err(PlanError::ZeroThreads);
    }
    if usable.is_empty() {
        return Err(PlanError::NoUsableCpu);
    }
    let mut notes = Vec::new();
    let smt = policy.smt_physical_first;
    let modifier_pointless = |what: &str| PlanError::Modifier {
        policy: name.clone(),
        detail: format!("+smt-physical-first orders pinned threads, but {what}; drop the modifier"),
    };

    // Set policies: one mask, threads float.
    if let Some(set) = set_of(topo, &policy.base, &usable, &name)? {
        if smt {
            return Err(modifier_pointless("threads float in this policy"));
        }
        return Ok(plan_set(
            policy.base == BasePolicy::Os,
            set,
            threads,
            name,
            notes,
        ));
    }

    if policy.base == BasePolicy::Balance {
        if smt {
            return Err(modifier_pointless(
                "balance places tasks by capacity, not by order",
            ));
        }
        return plan_balance(topo, &usable, threads, req, name, notes);
    }

    if matches!(
        policy.base,
        BasePolicy::LatencyGroup | BasePolicy::LatencyPipeline
    ) {
        if smt {
            return Err(modifier_pointless(
                "the latency matrix alone decides which CPUs are used",
            ));
        }
        return plan_latency(&policy.base, &usable, &topo.online(), threads, req, name);
    }

    // Pinned policies: build the CPU order, then take `threads` of it.
    let order = pinned_order(topo, &policy, &usable, threads, &name, &mut notes)?;
    plan_pinned(topo, &order, threads, req.oversubscribe, name, notes)
}

/// The CPU set of a set policy (`os`, `*-set`, `cpus-set:`), `None` for
/// the others.
fn set_of(
    topo: &Topology,
    base: &BasePolicy,
    usable: &CpuSet,
    name: &str,
) -> Result<Option<CpuSet>, PlanError> {
    Ok(match base {
        BasePolicy::Os => Some(usable.clone()),
        BasePolicy::KindSet(sel) => Some(kind_cpus(resolve_kind(topo, sel, name)?, usable, name)?),
        BasePolicy::CpusSet(list) => {
            let set: CpuSet = list.resolve(usable).into_iter().collect();
            check_explicit(topo, &set, usable, name)?;
            Some(set)
        }
        _ => None,
    })
}

/// A set policy's plan: every thread floats over `set` (`os`: no places).
fn plan_set(
    os: bool,
    set: CpuSet,
    threads: Option<usize>,
    name: String,
    mut notes: Vec<String>,
) -> Plan {
    // Any number of threads: they float inside the set and the kernel
    // shares its CPUs out, so a set plan never oversubscribes anything
    // (nothing to refuse, nothing to warn about).
    let n = threads.unwrap_or(set.len());
    let threads_text = count(n, "thread", "threads");
    let over = if n > set.len() {
        format!("{} ({set}), time-shared", count(set.len(), "CPU", "CPUs"))
    } else {
        format!("CPUs {set}")
    };
    if os {
        notes.push(format!(
            "no pinning: the OS scheduler places {threads_text} on {over}"
        ));
    } else {
        notes.push(format!("{threads_text} float over {over}"));
    }
    Plan {
        policy: name,
        threads: n,
        places: if os { Vec::new() } else { vec![set.clone(); n] },
        process_mask: set,
        pinned: false,
        tasks_per_cpu: None,
        notes,
        memory: None,
        near: None,
    }
}

/// The order in which a pinned policy hands out CPUs (thread i gets
/// `order[i]`, round robin when oversubscribed).
fn pinned_order(
    topo: &Topology,
    policy: &Policy,
    usable: &CpuSet,
    threads: Option<usize>,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<usize>, PlanError> {
    let smt = policy.smt_physical_first;
    let all = slots(topo, usable);
    Ok(match &policy.base {
        BasePolicy::KindPinned(sel) => {
            let kind = resolve_kind(topo, sel, name)?;
            let cpus = kind_cpus(kind, usable, name)?;
            if smt {
                notes.push(format!("{name}: already one PU per core before any sibling; +smt-physical-first changes nothing"));
            }
            physical_first(&slots(topo, &cpus))
        }
        BasePolicy::PFirst | BasePolicy::EFirst => {
            let sel = if policy.base == BasePolicy::PFirst {
                KindSel::Fastest
            } else {
                KindSel::Slowest
            };
            resolve_kind(topo, &sel, name)?;
            let groups = by_kind(&all, policy.base == BasePolicy::PFirst);
            if smt {
                physical_first(&groups.concat())
            } else {
                groups.iter().flat_map(|g| physical_first(g)).collect()
            }
        }
        BasePolicy::SmtPhysicalFirst => physical_first(&all),
        BasePolicy::Compact => {
            if smt {
                physical_first(&all)
            } else {
                compact(&all)
            }
        }
        BasePolicy::Scatter => {
            if smt {
                notes.push("scatter already places one PU per core before any sibling; +smt-physical-first changes nothing".into());
            }
            // hwloc-distrib's spread for the threads asked, then the
            // scatter order for the rest (oversubscription, round robin).
            let total: usize = all.iter().map(|s| s.pus.len()).sum();
            let rest = physical_first(&scatter_slots(&all));
            match threads {
                Some(n) if n <= total => {
                    // Tree order, but every chosen core's first PU before
                    // any second sibling (threads 0.. open cores first).
                    let chosen = distrib(topo, usable, n);
                    let taken: CpuSet = chosen.iter().copied().collect();
                    let round = |c: usize| {
                        topo.siblings(c)
                            .intersection(&taken)
                            .iter()
                            .position(|x| x == c)
                            .unwrap_or(0)
                    };
                    let mut first: Vec<usize> = Vec::with_capacity(chosen.len());
                    let depth = chosen.iter().map(|&c| round(c)).max().unwrap_or(0);
                    for r in 0..=depth {
                        first.extend(chosen.iter().copied().filter(|&c| round(c) == r));
                    }
                    first.extend(rest.into_iter().filter(|c| !taken.contains(*c)));
                    first
                }
                _ => rest,
            }
        }
        BasePolicy::Cpus(list) => {
            // The user's order: thread i on the list's i-th CPU.
            let order = list.resolve(usable);
            let set: CpuSet = order.iter().copied().collect();
            check_explicit(topo, &set, usable, name)?;
            if smt {
                physical_first(&slots(topo, &set))
            } else {
                order
            }
        }
        BasePolicy::Os
        | BasePolicy::KindSet(_)
        | BasePolicy::CpusSet(_)
        | BasePolicy::Balance
        | BasePolicy::LatencyGroup
        | BasePolicy::LatencyPipeline => {
            unreachable!("set, balance and latency policies are planned by plan()")
        }
    })
}

/// Takes `threads` CPUs of `order` (all of them by default), round robin
/// when `oversubscribe` allows more threads than CPUs.
fn plan_pinned(
    topo: &Topology,
    order: &[usize],
    threads: Option<usize>,
    oversubscribe: bool,
    name: String,
    mut notes: Vec<String>,
) -> Result<Plan, PlanError> {
    let n = threads.unwrap_or(order.len());
    if n > order.len() {
        if !oversubscribe {
            return Err(PlanError::TooManyThreads {
                policy: name,
                threads: n,
                cpus: order.iter().copied().collect(),
            });
        }
        let per = n.div_ceil(order.len());
        notes.push(format!(
            "oversubscribed: {} on {}, round robin (up to {per} threads per CPU)",
            count(n, "thread", "threads"),
            count(order.len(), "CPU", "CPUs")
        ));
    }
    let places: Vec<CpuSet> = (0..n)
        .map(|i| CpuSet::single(order[i % order.len()]))
        .collect();
    let process_mask: CpuSet = places.iter().flat_map(CpuSet::iter).collect();
    let shared = shared_cores(topo, &process_mask);
    if shared > 0 && n <= order.len() {
        notes.push(format!(
            "{} two threads or more on SMT siblings",
            count(shared, "core runs", "cores run")
        ));
    }
    let units = shared_compute_units(topo, &process_mask);
    if units > 0 && n <= order.len() {
        notes.push(format!(
            "{} two threads or more (their cores share an instruction cache and L2, \
             as in AMD Bulldozer's modules; not SMT siblings)",
            count(units, "compute unit runs", "compute units run")
        ));
    }
    Ok(Plan::pinned_to(name, places, notes))
}

/// Number of compute units holding placed CPUs (`used`) of two cores or
/// more: a level-1 instruction cache shared by several cores is the mark
/// of one (AMD Bulldozer's modules: two cores with one front end, L1i, L2
/// and FPU; the kernel lists them as thread siblings with different core
/// ids, and discovery makes each its own core, as hwloc does).
fn shared_compute_units(topo: &Topology, used: &CpuSet) -> usize {
    topo.caches
        .iter()
        .filter(|c| c.level == 1 && c.cache_type == pinsight_model::CacheType::Instruction)
        .filter(|c| cores_of(topo, &c.cpus.intersection(used)).len() > 1)
        .count()
}

/// The cores (indices into [`Topology::cores`]) holding CPUs of `set`,
/// ascending, each once.
pub(crate) fn cores_of(topo: &Topology, set: &CpuSet) -> Vec<usize> {
    let mut cores: Vec<usize> = set
        .iter()
        .filter_map(|c| topo.cpu(c).and_then(|i| i.core))
        .collect();
    cores.sort_unstable();
    cores.dedup();
    cores
}

/// Number of cores holding more than one CPU of `used` (the placed CPUs).
fn shared_cores(topo: &Topology, used: &CpuSet) -> usize {
    let mut n = 0;
    for core in &cores_of(topo, used) {
        if topo
            .cores
            .get(*core)
            .is_some_and(|g| g.cpus.intersection(used).len() > 1)
        {
            n += 1;
        }
    }
    n
}

/// SMT-aware apportioning: tasks go to PHYSICAL cores in proportion to
/// each core's capacity (the sum of its siblings' shared capacities), then
/// round robin over the core's CPUs in `order` (scatter order, one thread
/// per core first). So a few tasks take idle E-cores before second
/// siblings of P-cores, and many follow the cores' capacities.
fn per_core_counts(
    topo: &Topology,
    order: &[usize],
    weights: &[f64],
    m: usize,
) -> Result<Vec<usize>, WeightsError> {
    let mut index: std::collections::BTreeMap<Option<usize>, usize> = Default::default();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, c) in order.iter().enumerate() {
        match topo.cpu(*c).and_then(|x| x.core) {
            Some(core) => {
                let g = *index.entry(Some(core)).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[g].push(i);
            }
            None => groups.push(vec![i]),
        }
    }
    let gw: Vec<f64> = groups
        .iter()
        .map(|g| g.iter().map(|&i| weights[i]).sum())
        .collect();
    let gc = apportion(m, &gw).ok_or(WeightsError::AllZero)?;
    let mut counts = vec![0; order.len()];
    for (g, n) in groups.iter().zip(gc) {
        for k in 0..n {
            counts[g[k % g.len()]] += 1;
        }
    }
    Ok(counts)
}

fn plan_balance(
    topo: &Topology,
    usable: &CpuSet,
    tasks: Option<usize>,
    req: &Request,
    name: String,
    mut notes: Vec<String>,
) -> Result<Plan, PlanError> {
    let weights = req.weights.as_ref();
    let m = tasks.unwrap_or(usable.len());
    let (raw, source) = capacities(topo, usable, weights)?;
    let (caps, smt_applies) = smt_capacities(topo, &raw, weights, req.smt_yield, &mut notes);
    if let Some(w) = weights {
        note_ignored_weights(w, usable, &mut notes);
    }
    // Apportion over CPUs in scatter order so that ties (equal remainders)
    // go to distinct packages and cores before SMT siblings.
    let order = physical_first(&scatter_slots(&slots(topo, usable)));
    let cap_of: std::collections::BTreeMap<usize, f64> = caps.iter().copied().collect();
    let ordered: Vec<f64> = order.iter().map(|c| cap_of[c]).collect();
    let counts = if smt_applies {
        per_core_counts(topo, &order, &ordered, m)?
    } else {
        apportion(m, &ordered).ok_or(WeightsError::AllZero)?
    };
    let count_of: std::collections::BTreeMap<usize, usize> =
        order.iter().copied().zip(counts.iter().copied()).collect();
    notes.push(format!("capacity: {}", source.describe()));
    if source != CapacitySource::Uniform {
        notes.push(relative_capacity_note(&raw));
    }
    let places = places_in_rounds(&order, &counts, m);
    let process_mask: CpuSet = count_of
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(c, _)| *c)
        .collect();
    let per: Vec<(usize, usize)> = count_of.into_iter().collect();
    let (lo, hi) = per
        .iter()
        .fold((usize::MAX, 0), |(lo, hi), (_, n)| (lo.min(*n), hi.max(*n)));
    notes.push(format!(
        "{} over {}: {lo} to {hi} per CPU",
        count(m, "task", "tasks"),
        count(per.len(), "CPU", "CPUs")
    ));
    Ok(Plan {
        policy: name,
        threads: m,
        process_mask,
        places,
        pinned: true,
        tasks_per_cpu: Some(per),
        notes,
        memory: None,
        near: None,
    })
}

/// The per-CPU capacities after SMT sharing (when an SMT yield applies: given,
/// or the default without weights), noting the sharing; the flag says whether
/// it applied.
fn smt_capacities(
    topo: &Topology,
    raw: &[(usize, f64)],
    weights: Option<&Weights>,
    given: Option<f64>,
    notes: &mut Vec<String>,
) -> (Vec<(usize, f64)>, bool) {
    let smt_yield = match (weights, given) {
        (_, Some(y)) => Some((y, "given")),
        (None, None) => Some((DEFAULT_SMT_YIELD, "default")),
        (Some(_), None) => None,
    };
    let Some((y, how)) = smt_yield else {
        return (raw.to_vec(), false);
    };
    let (shared, cores) = smt_shared(topo, raw, y);
    if cores > 0 {
        notes.push(format!(
            "SMT: the siblings of {} share the core's capacity x{:.2} ({how} SMT yield {y:.2})",
            count(cores, "core", "cores"),
            1.0 + y
        ));
    }
    (shared, true)
}

/// Notes the weighted CPUs that are not usable here (their weights are ignored).
fn note_ignored_weights(w: &Weights, usable: &CpuSet, notes: &mut Vec<String>) {
    let ignored: CpuSet = w
        .by_cpu
        .keys()
        .copied()
        .filter(|c| !usable.contains(*c))
        .collect();
    if !ignored.is_empty() {
        notes.push(format!(
            "weights for {} ignored: not usable here",
            cpus_are(&ignored).replace(" is", "").replace(" are", "")
        ));
    }
}

/// The "relative capacity" note: CPUs grouped by capacity relative to the
/// largest, largest first.
fn relative_capacity_note(raw: &[(usize, f64)]) -> String {
    let max = raw.iter().map(|(_, w)| *w).fold(0.0f64, f64::max);
    let mut groups: Vec<(String, CpuSet)> = Vec::new();
    for (c, w) in raw {
        let rel = if max > 0.0 {
            format!("{:.2}", w / max)
        } else {
            "0.00".into()
        };
        match groups.iter_mut().find(|(r, _)| *r == rel) {
            Some((_, set)) => {
                set.insert(*c);
            }
            None => groups.push((rel, CpuSet::single(*c))),
        }
    }
    groups.sort_by(|a, b| b.0.cmp(&a.0));
    let text: Vec<String> = groups.iter().map(|(r, s)| format!("{r} on {s}")).collect();
    format!("relative capacity: {}", text.join(", "))
}

/// Task order: rounds over CPUs in scatter order, so any prefix of the
/// tasks is spread over packages and cores before doubling up.
fn places_in_rounds(order: &[usize], counts: &[usize], m: usize) -> Vec<CpuSet> {
    let singles: Vec<CpuSet> = order.iter().map(|c| CpuSet::single(*c)).collect();
    let mut left = counts.to_vec();
    let mut places = Vec::with_capacity(m);
    while places.len() < m {
        for (i, k) in left.iter_mut().enumerate() {
            if *k > 0 {
                *k -= 1;
                places.push(singles[i].clone());
            }
        }
    }
    places
}

/// `latency-group` / `latency-pipeline`: the CPUs come from the latency
/// crate's searches over the usable CPUs the matrix covers.
fn plan_latency(
    base: &BasePolicy,
    usable: &CpuSet,
    online: &CpuSet,
    threads: Option<usize>,
    req: &Request,
    name: String,
) -> Result<Plan, PlanError> {
    let oversubscribe = req.oversubscribe;
    let matrix = req.latency.as_ref();
    let err = |problem: LatencyProblem| PlanError::Latency {
        policy: name.clone(),
        problem,
    };
    let m = matrix.ok_or_else(|| err(LatencyProblem::NoMatrix))?;
    let k = threads.ok_or_else(|| err(LatencyProblem::NoThreadCount))?;
    let covered = m.cpu_set().intersection(usable);
    if covered.len() < 2 {
        return Err(err(LatencyProblem::TooFewCovered {
            matrix: m.cpu_set(),
            covered,
            usable: usable.clone(),
        }));
    }
    let missing = usable.difference(&m.cpu_set());
    let foreign = m.cpu_set().difference(online);
    if (!missing.is_empty() || !foreign.is_empty()) && !req.latency_partial {
        return Err(err(LatencyProblem::Partial {
            matrix: m.cpu_set(),
            usable: usable.clone(),
            missing,
            foreign,
        }));
    }
    let mut notes = Vec::new();
    let ignored = m.cpu_set().difference(usable);
    if !ignored.is_empty() {
        notes.push(format!("matrix CPUs {ignored} ignored: not usable here"));
    }
    let uncovered = usable.difference(&m.cpu_set());
    if !uncovered.is_empty() {
        notes.push(format!(
            "usable CPUs {uncovered} are not in the matrix and are never chosen"
        ));
    }
    let allowed: Vec<usize> = covered.iter().collect();
    let pick = k.min(allowed.len());
    let group = if *base == BasePolicy::LatencyPipeline {
        pinsight_latency_model::best_pipeline(m, &allowed, pick)
    } else {
        pinsight_latency_model::best_group(m, &allowed, pick)
    };
    if k > group.cpus.len() {
        if !oversubscribe {
            return Err(PlanError::TooManyThreads {
                policy: name,
                threads: k,
                cpus: covered,
            });
        }
        notes.push(format!(
            "oversubscribed: {} on {}, round robin",
            count(k, "thread", "threads"),
            count(group.cpus.len(), "CPU", "CPUs")
        ));
    }
    let ns = |v: f64| {
        if v.is_finite() {
            format!("{v:.1} ns")
        } else {
            "unmeasured".into()
        }
    };
    if *base == BasePolicy::LatencyPipeline {
        notes.push(format!(
            "pipeline stages in order; neighbour latency sum {}",
            ns(group.path_ns)
        ));
    } else {
        notes.push(format!("mean pairwise latency {}", ns(group.mean_pair_ns)));
    }
    let places: Vec<CpuSet> = (0..k)
        .map(|i| CpuSet::single(group.cpus[i % group.cpus.len()]))
        .collect();
    Ok(Plan::pinned_to(name, places, notes))
}
