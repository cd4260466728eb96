//! From the user's request to an experiment [`Header`]: which arms run
//! (policy × governor), where their threads go, and which requested arms
//! this machine cannot run — each with the planner's or the OS's reason,
//! so nothing is silently dropped.

use crate::journal::{ArmHeader, ArmPlan, Header, Machine, NotApplicable, SCHEMA};
use crate::request::{Input, Names};
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::LatencyMatrix;
use pinsight_measure::{read_governors, GovernorError, GovernorGuard, RestoreError};
use pinsight_model::Topology;
use pinsight_plan::{
    plan, BasePolicy, MemParseError, MemPolicy, Plan, PlanError, Policy, PolicyParseError,
    Request as PlanRequest, Weights,
};
use pinsight_sys::FsRoot;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// The policies compared when `--policies` is not given: the five mappings
/// of the "to pin or not to pin" study.
pub const DEFAULT_POLICIES: &[&str] = &["os", "p-set", "p-pinned", "e-set", "e-pinned"];

/// Governors accepted by `--governors` (the kernel's generic ones).
pub const KNOWN_GOVERNORS: &[&str] = &[
    "performance",
    "powersave",
    "ondemand",
    "conservative",
    "schedutil",
    "userspace",
];

/// What the user asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub command: Vec<String>,
    pub prepare: Option<String>,
    pub policies: Vec<String>,
    pub governors: Vec<String>,
    /// Threads of every arm; `None`: the number of usable CPUs.
    pub threads: Option<usize>,
    /// Let pinned policies place more threads than they have CPUs (round
    /// robin). Set policies never need it: their threads float.
    pub oversubscribe: bool,
    /// Core-to-core latency matrix for `latency-group`/`latency-pipeline`.
    pub latency: Option<PathBuf>,
    /// Per-CPU weights for `balance`.
    pub weights: Option<PathBuf>,
    /// Memory policy of every arm that has no `+mem:` of its own.
    pub mem: Option<MemPolicy>,
    /// Restrict every arm to the CPUs local to this device.
    pub near: Option<String>,
    /// The kernel's weighted-interleave weights, shown in plans.
    pub interleave_weights: Option<Vec<(u32, u32)>>,
    pub runs: usize,
    pub warmup: usize,
    pub seed: u64,
    pub timeout: Option<Duration>,
    /// Program metrics to read from every run's output (`--metric`).
    pub metrics: Vec<crate::program_metric::MetricSpec>,
}

/// What an experiment built on compare's machinery (tune) adds to a
/// [`Request`]; the default adds nothing (a compare experiment).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extension {
    /// Threads of each arm, one per [`Request::policies`] entry in order
    /// (compare runs every arm with [`Request::threads`]); the header then
    /// has no common `threads` and each arm's plan carries its own.
    pub arm_threads: Option<Vec<usize>>,
    /// [`Header::kind`].
    pub kind: Option<String>,
    /// [`Header::extension`].
    pub extension: Option<serde_json::Value>,
    /// Arms that differ in what the executor does, not in placement
    /// (compare across ranks: one arm per slicing rule): each name becomes
    /// an arm (id and policy) with the plan of the request's one policy,
    /// no exported variables, the first name the baseline.
    pub arm_names: Option<Vec<String>>,
}

impl Request {
    /// `command` under `policies` with compare's defaults: 10 measured runs
    /// and 1 warm-up per arm, seed 0, the usable CPUs' thread count, no
    /// prepare command, governors, timeout, inputs or memory policy. Set
    /// the rest with struct update syntax
    /// (`Request { runs: 3, ..Request::new(cmd, policies) }`).
    pub fn new(command: Vec<String>, policies: Vec<String>) -> Request {
        Request {
            command,
            prepare: None,
            policies,
            governors: Vec::new(),
            threads: None,
            oversubscribe: false,
            latency: None,
            weights: None,
            mem: None,
            near: None,
            interleave_weights: None,
            runs: 10,
            warmup: 1,
            seed: 0,
            timeout: None,
            metrics: Vec::new(),
        }
    }
}

/// Why the experiment cannot be set up. [`SetupError::is_usage`] tells
/// the request's fault from the machine's.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SetupError {
    #[error("no command to measure")]
    NoCommand,
    #[error("no policy to compare: give at least one")]
    NoPolicies,
    #[error("0 threads: the number of threads must be at least 1")]
    ZeroThreads,
    /// Per-arm threads were given, but not one per policy.
    #[error("{threads} per-arm thread counts for {policies} policies: give one per policy")]
    ArmThreadsCount { threads: usize, policies: usize },
    /// Two texts of the same policy ask for different threads.
    #[error("{policy}: asked twice, with {first} and {second} threads")]
    ArmThreadsConflict {
        policy: String,
        first: usize,
        second: usize,
    },
    #[error("unknown governor '{name}'; known governors: {}", KNOWN_GOVERNORS.join(", "))]
    UnknownGovernor { name: String },
    #[error(transparent)]
    Policy(#[from] PolicyParseError),
    /// An arm's own `+mem:SPEC` does not fit this machine.
    #[error("{policy}: {error}")]
    ArmMemoryUnfit {
        /// The arm (`compact+mem:bind:1`).
        policy: String,
        error: pinsight_plan::MemError,
    },
    /// An arm's `+mem:SPEC` does not parse.
    #[error("{policy}: memory policy {error}")]
    ArmMemory {
        /// The arm as written.
        policy: String,
        error: MemParseError,
    },
    /// A latency matrix was given but no policy uses one.
    #[error("{}: applies to latency-group/latency-pipeline only, and the policies have neither", path.display())]
    LatencyUnused { path: PathBuf },
    /// Weights were given but no policy uses them.
    #[error("{}: applies to the balance policy only, and the policies have no balance", path.display())]
    WeightsUnused { path: PathBuf },
    #[error("{path}: cannot read: {reason}")]
    ReadLatency { path: String, reason: String },
    /// The latency matrix or the weights cannot be used (the reason names the file).
    #[error("{0}")]
    BadInput(String),
    /// The request cannot be planned as given.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Every requested arm is not applicable here.
    #[error("none of the policies can run on this machine: {}", .0.iter().map(|n| format!("{}: {}", n.what, n.reason)).collect::<Vec<_>>().join("; "))]
    NothingRuns(Vec<NotApplicable>),
    /// A governor was set to probe it but could not be restored.
    #[error("{0}")]
    GovernorRestore(RestoreError),
}

impl SetupError {
    /// The message with the inputs at fault named by `name`; `None` when
    /// no input is named (the message is the error's own).
    pub fn named(&self, name: Names<'_>) -> Option<String> {
        let policies = name(Input::Policies);
        Some(match self {
            SetupError::NoPolicies => format!("{policies}: give at least one policy"),
            SetupError::ZeroThreads => format!(
                "{} 0: the number of threads must be at least 1",
                name(Input::Threads)
            ),
            SetupError::UnknownGovernor { .. } => format!("{}: {self}", name(Input::Governors)),
            SetupError::Policy(_) => format!("{policies}: {self}"),
            SetupError::LatencyUnused { path } => format!(
                "{} {}: applies to latency-group/latency-pipeline only, and {policies} has neither",
                name(Input::Latency),
                path.display()
            ),
            SetupError::ArmMemory { policy, error } => format!("{policies} {policy}: {error}"),
            SetupError::ArmMemoryUnfit { policy, error } => {
                format!("{policies} {policy}: {error}")
            }
            SetupError::WeightsUnused { path } => format!(
                "{} {}: applies to the balance policy only, and {policies} has no balance",
                name(Input::Weights),
                path.display()
            ),
            _ => return None,
        })
    }

    /// The request's fault (a usage error), not the machine's.
    pub fn is_usage(&self) -> bool {
        !matches!(self, SetupError::GovernorRestore(_))
    }
}

/// The experiment to run.
#[derive(Clone, Debug)]
pub struct Setup {
    pub header: Header,
    /// The planner's plans, in header arm order.
    pub plans: Vec<Plan>,
}

/// Which governors can be set here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GovernorProbe {
    /// Requested governors that were set and restored successfully.
    pub usable: Vec<String>,
    pub not_applicable: Vec<NotApplicable>,
    /// One line for the capabilities list: `governors: ...`.
    pub note: String,
}

/// Checks each requested governor by setting it on `cpus` and restoring
/// it at once (the only honest test of "writable"). Unknown names are a
/// usage error; governors this machine cannot set are not applicable.
pub fn probe_governors(
    fs: &FsRoot,
    cpus: &CpuSet,
    wanted: &[String],
) -> Result<GovernorProbe, SetupError> {
    for g in wanted {
        if !KNOWN_GOVERNORS.contains(&g.as_str()) {
            return Err(SetupError::UnknownGovernor { name: g.clone() });
        }
    }
    let current = match read_governors(fs) {
        Ok(v) => {
            let mut names: Vec<&str> = v.iter().map(|g| g.current.as_str()).collect();
            names.dedup();
            format!("governors: now {}", names.join(", "))
        }
        Err(reason) => {
            return Ok(GovernorProbe {
                usable: Vec::new(),
                not_applicable: wanted
                    .iter()
                    .map(|g| NotApplicable {
                        what: format!("governor {g}"),
                        reason: reason.to_string(),
                    })
                    .collect(),
                note: format!("governors: unavailable ({reason})"),
            })
        }
    };
    let mut usable = Vec::new();
    let mut not_applicable = Vec::new();
    for g in wanted {
        match GovernorGuard::set(fs, cpus, g) {
            Ok(mut guard) => {
                guard.restore_now().map_err(SetupError::GovernorRestore)?;
                usable.push(g.clone());
            }
            Err(e @ GovernorError::UnknownGovernor { .. }) => not_applicable.push(NotApplicable {
                what: format!("governor {g}"),
                reason: e.to_string(),
            }),
            Err(GovernorError::Unavailable(reason)) => not_applicable.push(NotApplicable {
                what: format!("governor {g}"),
                reason: reason.to_string(),
            }),
        }
    }
    let note = if not_applicable.is_empty() {
        current
    } else {
        format!(
            "{current}; cannot set: {}",
            not_applicable
                .iter()
                .map(|n| format!("{} ({})", n.what, n.reason))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(GovernorProbe {
        usable,
        not_applicable,
        note,
    })
}

/// Plans every requested policy; builds the header. Pure. `ext` is for an
/// experiment built on compare (per-arm threads, the experiment's kind and
/// identity); plain compare passes [`Extension::default`].
pub fn setup(
    topo: &Topology,
    req: &Request,
    governors: &GovernorProbe,
    machine: Machine,
    is_env_set: &dyn Fn(&str) -> bool,
    created: String,
    ext: &Extension,
) -> Result<Setup, SetupError> {
    check_request(req)?;
    // Every arm runs the same number of threads (the experiment compares
    // placements, not thread counts) unless the extension gives each its own.
    let threads_all = req.threads.unwrap_or_else(|| topo.usable().len().max(1));
    let policies = parse_policies(&req.policies)?;
    let arm_threads = per_arm_threads(&req.policies, &policies, ext)?;
    let (latency, weights) = inputs(req, &policies)?;
    let planner = ArmPlanner {
        topo,
        req,
        latency,
        weights,
        // Policies the user named must run as asked; those of the default
        // list that cannot (another core kind, too few CPUs) are reported
        // instead.
        named: req
            .policies
            .iter()
            .map(String::as_str)
            .ne(DEFAULT_POLICIES.iter().copied()),
    };
    let mut arms = Vec::new();
    let mut plans = Vec::new();
    let mut not_applicable = Vec::new();
    let govs: Vec<Option<String>> = if governors.usable.is_empty() {
        vec![None]
    } else {
        governors.usable.iter().cloned().map(Some).collect()
    };
    for ((name, policy, arm_mem), threads) in policies.iter().zip(arm_threads) {
        let threads = threads.unwrap_or(threads_all);
        let p = match planner.plan(name, policy, arm_mem, threads)? {
            Ok(p) => p,
            Err(na) => {
                not_applicable.push(na);
                continue;
            }
        };
        let prepared =
            crate::command::PreparedArm::new(&p, std::ffi::OsStr::new(&req.command[0]), is_env_set);
        for g in &govs {
            arms.push(arm_header(name, g, &p, &prepared));
            plans.push(p.clone());
        }
    }
    not_applicable.extend(governors.not_applicable.iter().cloned());
    baseline_first(&mut arms, &mut plans, govs.len());
    rename_arms(ext, &mut arms, &mut plans);
    if arms.is_empty() {
        return Err(SetupError::NothingRuns(not_applicable));
    }
    let mut machine = machine;
    machine.capabilities.push(governors.note.clone());
    let arms = Arms {
        arms,
        not_applicable,
        machine,
    };
    Ok(Setup {
        header: header(req, ext, created, threads_all, arms),
        plans,
    })
}

/// Refuses a request with no command, no policies or zero threads.
fn check_request(req: &Request) -> Result<(), SetupError> {
    if req.command.is_empty() {
        return Err(SetupError::NoCommand);
    }
    if req.policies.is_empty() {
        return Err(SetupError::NoPolicies);
    }
    if req.threads == Some(0) {
        return Err(SetupError::ZeroThreads);
    }
    Ok(())
}

/// What every arm's plan is made from, besides its own policy.
struct ArmPlanner<'a> {
    topo: &'a Topology,
    req: &'a Request,
    latency: Option<LatencyMatrix>,
    weights: Option<Weights>,
    /// The user named the policies (not the default list).
    named: bool,
}

impl ArmPlanner<'_> {
    /// Plans one policy with `threads` threads: the plan, or why this
    /// machine cannot run it (Err inside Ok); errors of the user's input
    /// (and a named policy that does not fit) end the setup.
    fn plan(
        &self,
        name: &str,
        policy: &Policy,
        arm_mem: &Option<MemPolicy>,
        threads: usize,
    ) -> Result<Result<Plan, NotApplicable>, SetupError> {
        let req = self.req;
        let r = PlanRequest {
            mem: arm_mem.clone().or_else(|| req.mem.clone()),
            near: req.near.clone(),
            interleave_weights: req.interleave_weights.clone(),
            threads: Some(threads),
            // Threads of a set policy float inside the set: more threads
            // than CPUs is time sharing, not a placement to refuse.
            oversubscribe: req.oversubscribe || !policy.is_pinned(),
            latency: self.latency.clone().filter(|_| is_latency(policy)),
            weights: self
                .weights
                .clone()
                .filter(|_| policy.base == BasePolicy::Balance),
            ..PlanRequest::new(policy.clone())
        };
        match plan(self.topo, &r) {
            Ok(p) => Ok(Ok(p)),
            Err(PlanError::Memory { error, .. }) if arm_mem.is_some() => {
                Err(SetupError::ArmMemoryUnfit {
                    policy: name.to_string(),
                    error,
                })
            }
            Err(e) if is_usage(&e) => Err(e.into()),
            Err(e @ PlanError::TooManyThreads { .. }) if self.named => Err(e.into()),
            Err(e) => Ok(Err(NotApplicable {
                what: name.to_string(),
                reason: e.reason(),
            })),
        }
    }
}

/// The header of policy `name`'s arm under governor `g` (None: unchanged).
fn arm_header(
    name: &str,
    g: &Option<String>,
    p: &Plan,
    prepared: &crate::command::PreparedArm,
) -> ArmHeader {
    ArmHeader {
        id: match g {
            Some(g) => format!("{name}@{g}"),
            None => name.to_string(),
        },
        policy: name.to_string(),
        governor: g.clone(),
        plan: ArmPlan::from_plan(p),
        env: prepared.env.clone(),
        notes: p.notes.iter().chain(&prepared.notes).cloned().collect(),
    }
}

/// With [`Extension::arm_names`], the arms are those names, each running
/// the first arm's plan.
fn rename_arms(ext: &Extension, arms: &mut Vec<ArmHeader>, plans: &mut Vec<Plan>) {
    if let (Some(names), Some(first), Some(first_plan)) = (
        &ext.arm_names,
        arms.first().cloned(),
        plans.first().cloned(),
    ) {
        *arms = names
            .iter()
            .map(|n| ArmHeader {
                id: n.clone(),
                policy: n.clone(),
                governor: None,
                env: Vec::new(),
                ..first.clone()
            })
            .collect();
        *plans = vec![first_plan; names.len()];
    }
}

/// What the setup found that the header records besides the request.
struct Arms {
    arms: Vec<ArmHeader>,
    not_applicable: Vec<NotApplicable>,
    machine: Machine,
}

/// The experiment's header: the request, the arms and this machine.
fn header(
    req: &Request,
    ext: &Extension,
    created: String,
    threads_all: usize,
    found: Arms,
) -> Header {
    Header {
        schema: SCHEMA.to_string(),
        pinsight_version: env!("CARGO_PKG_VERSION").to_string(),
        created,
        command: req.command.clone(),
        prepare: req.prepare.clone(),
        policies: req.policies.clone(),
        governors: req.governors.clone(),
        threads: ext.arm_threads.is_none().then_some(threads_all),
        oversubscribe: req.oversubscribe,
        latency: req.latency.as_ref().map(|p| p.display().to_string()),
        weights: req.weights.as_ref().map(|p| p.display().to_string()),
        mem: req.mem.as_ref().map(|m| m.to_string()),
        near: req.near.clone(),
        runs: req.runs,
        warmup: req.warmup,
        seed: req.seed,
        timeout_s: req.timeout.map(|t| t.as_secs_f64()),
        arms: found.arms,
        not_applicable: found.not_applicable,
        machine: found.machine,
        kind: ext.kind.clone(),
        extension: ext.extension.clone(),
        metrics: req.metrics.clone(),
        // The session fills it from its measurer.
        unavailable: Default::default(),
    }
}

/// The policies asked for, parsed, each once (by canonical name), in
/// order. An arm may carry its own memory policy, `POLICY+mem:SPEC`
/// (`p-pinned+mem:interleave:all`); its name keeps it, so the journal's arm
/// identity does too.
#[allow(clippy::type_complexity)]
pub fn parse_policies(
    texts: &[String],
) -> Result<Vec<(String, Policy, Option<MemPolicy>)>, SetupError> {
    let mut policies: Vec<(String, Policy, Option<MemPolicy>)> = Vec::new();
    for text in texts {
        let (ptext, mem) = match text.split_once("+mem:") {
            Some((p, m)) => (
                p,
                Some(
                    MemPolicy::from_str(m).map_err(|error| SetupError::ArmMemory {
                        policy: text.clone(),
                        error,
                    })?,
                ),
            ),
            None => (text.as_str(), None),
        };
        let p = Policy::from_str(ptext)?;
        let canonical = match &mem {
            Some(m) => format!("{p}+mem:{m}"),
            None => p.to_string(),
        };
        if !policies.iter().any(|(c, _, _)| *c == canonical) {
            policies.push((canonical, p, mem));
        }
    }
    Ok(policies)
}

/// Each parsed policy's own thread count (None: the request's), from
/// [`Extension::arm_threads`] aligned with the policy texts.
fn per_arm_threads(
    texts: &[String],
    policies: &[(String, Policy, Option<MemPolicy>)],
    ext: &Extension,
) -> Result<Vec<Option<usize>>, SetupError> {
    let Some(given) = &ext.arm_threads else {
        return Ok(vec![None; policies.len()]);
    };
    if given.len() != texts.len() {
        return Err(SetupError::ArmThreadsCount {
            threads: given.len(),
            policies: texts.len(),
        });
    }
    if given.contains(&0) {
        return Err(SetupError::ZeroThreads);
    }
    let mut out: Vec<Option<usize>> = vec![None; policies.len()];
    for (text, &n) in texts.iter().zip(given) {
        let canonical = parse_policies(std::slice::from_ref(text))?.remove(0).0;
        let i = policies
            .iter()
            .position(|(c, _, _)| *c == canonical)
            .expect("every text was parsed into the policies");
        match out[i] {
            Some(first) if first != n => {
                return Err(SetupError::ArmThreadsConflict {
                    policy: canonical,
                    first,
                    second: n,
                })
            }
            _ => out[i] = Some(n),
        }
    }
    Ok(out)
}

fn is_latency(p: &Policy) -> bool {
    matches!(
        p.base,
        BasePolicy::LatencyGroup | BasePolicy::LatencyPipeline
    )
}

/// A weights file (`--weights`), read as every file a user names is: only
/// a regular file of at most [`pinsight_plan::weights::MAX_WEIGHTS_BYTES`]
/// (a FIFO or a device is refused unread, a larger file by its size),
/// then parsed by the planner.
pub fn load_weights(path: &std::path::Path) -> Result<Weights, pinsight_plan::WeightsError> {
    use pinsight_sys::fs::BoundedReadError;
    let limit = pinsight_plan::weights::MAX_WEIGHTS_BYTES;
    let text = pinsight_sys::fs::read_bounded_string(path, limit).map_err(|e| {
        pinsight_plan::WeightsError::Read {
            path: path.display().to_string(),
            reason: match e {
                BoundedReadError::Io(e) => e.to_string(),
                e => e.to_string(),
            },
        }
    })?;
    Weights::parse(&text, &path.display().to_string())
}

/// The latency matrix and the weights the request names, read and parsed;
/// refused when no policy would use them.
fn inputs(
    req: &Request,
    policies: &[(String, Policy, Option<MemPolicy>)],
) -> Result<(Option<LatencyMatrix>, Option<Weights>), SetupError> {
    let latency = match &req.latency {
        Some(path) => {
            if !policies.iter().any(|(_, p, _)| is_latency(p)) {
                return Err(SetupError::LatencyUnused { path: path.clone() });
            }
            // The latency model reads no files: read it here, parse there.
            let shown = path.display().to_string();
            let bytes = pinsight_sys::fs::read_bounded(path, 32 << 20).map_err(|e| {
                SetupError::ReadLatency {
                    path: shown.clone(),
                    reason: e.to_string(),
                }
            })?;
            let text = String::from_utf8(bytes).map_err(|_| SetupError::ReadLatency {
                path: shown.clone(),
                reason: "not UTF-8 text".to_owned(),
            })?;
            Some(
                LatencyMatrix::parse(&text, &shown)
                    .map_err(|e| SetupError::BadInput(e.to_string()))?,
            )
        }
        None => None,
    };
    let weights = match &req.weights {
        Some(path) => {
            if !policies
                .iter()
                .any(|(_, p, _)| p.base == BasePolicy::Balance)
            {
                return Err(SetupError::WeightsUnused { path: path.clone() });
            }
            Some(load_weights(path).map_err(|e| SetupError::BadInput(e.to_string()))?)
        }
        None => None,
    };
    Ok((latency, weights))
}

/// The baseline (os, first governor) moves first: it is the reference row.
/// `per_policy` arms (one per governor) move together.
fn baseline_first(arms: &mut Vec<ArmHeader>, plans: &mut Vec<Plan>, per_policy: usize) {
    if let Some(i) = arms.iter().position(|a| a.policy == "os") {
        let os_arms: Vec<ArmHeader> = arms.drain(i..i + per_policy).collect();
        let os_plans: Vec<Plan> = plans.drain(i..i + per_policy).collect();
        arms.splice(0..0, os_arms);
        plans.splice(0..0, os_plans);
    }
}

/// Plan errors that are the user's input, not the machine's limits.
fn is_usage(e: &PlanError) -> bool {
    matches!(
        e,
        PlanError::ZeroThreads
            | PlanError::ThreadsTasksConflict { .. }
            | PlanError::Modifier { .. }
            | PlanError::Weights(_)
            | PlanError::Latency { .. }
            | PlanError::Memory { .. }
            | PlanError::Device(_)
            | PlanError::NearUnusable { .. }
    )
}

/// The machine summary for the header.
pub fn machine(topo: &Topology, fs: &FsRoot, capabilities: Vec<String>) -> Machine {
    let read = |p: &str| {
        fs.read_opt(p)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Machine {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        model_name: topo.model_name.clone(),
        arch: topo.arch.clone(),
        usable_cpus: topo.usable(),
        kinds: topo
            .kinds
            .iter()
            .map(|k| crate::journal::MachineKind {
                name: k.name.clone(),
                cpus: k.cpus.clone(),
                rank: k.rank,
            })
            .collect(),
        capabilities,
    }
}

/// UTC now as `2025-01-31T12:34:56Z` and `20250131-123456` (for file names).
pub fn utc_now() -> (String, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// Formats Unix seconds as UTC: RFC 3339 and its digits for file names.
/// The calendar arithmetic is the topology crate's (one copy of it).
pub fn utc(secs: u64) -> (String, String) {
    let rfc3339 = pinsight_topology::snapshot::rfc3339_utc(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
    );
    // `2025-01-31T12:34:56Z` -> `20250131-123456`
    let stamp = rfc3339
        .trim_end_matches('Z')
        .replace(['-', ':'], "")
        .replace('T', "-");
    (rfc3339, stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_carry_their_memory_policy_in_their_name() {
        let texts: Vec<String> = [
            "compact",
            "compact+mem:interleave:all",
            "compact+mem:Interleave:ALL",
            "os+mem:bind:1,0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let p = parse_policies(&texts).unwrap();
        let names: Vec<&str> = p.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["compact", "compact+mem:interleave:all", "os+mem:bind:0-1"]
        );
        assert!(p[0].2.is_none());
        assert_eq!(p[2].2.as_ref().unwrap().to_string(), "bind:0-1");
        let e = parse_policies(&["os+mem:bogus".to_string()]).unwrap_err();
        assert!(matches!(e, SetupError::ArmMemory { .. }), "{e}");
        let named = e.named(&|i| if i == Input::Policies { "-P" } else { "?" });
        assert!(named.unwrap().starts_with("-P "));
        assert!(e
            .to_string()
            .starts_with("os+mem:bogus: memory policy 'bogus'"));
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0).0, "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400).0, "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_735_689_599).1, "20241231-235959");
    }
}
