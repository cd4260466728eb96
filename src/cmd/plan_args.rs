//! The planning flags `plan`, `run` and `pin` share, and the one way they
//! become a planner request: written once so a plan shown by `pinsight plan`
//! is exactly the plan `run`/`pin` apply, with the same names, checks and
//! error messages; and the slicing flags and steps `slice` and `run --slice`
//! share.

use crate::{cli::Globals, errors::CliError};
use pinsight_latency::LoadMatrix;
use pinsight_latency_model::LatencyMatrix;
use pinsight_launch::slicing::{RankError, RankRequest};
use pinsight_model::Topology;
use pinsight_plan::launcher::LauncherError;
use pinsight_plan::slice::SliceRule;
use pinsight_plan::{
    BasePolicy, Input, MemMode, MemPolicy, Plan, PlanError, Policy, PolicyOption, Request,
};
use std::path::PathBuf;

/// The planning options besides POLICY (flattened into each command's `Args`).
///
/// The help of `--latency` and `--pipeline` is the short form `run`/`pin`
/// show; `pinsight plan` lengthens it (see `plan::Args`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PlanArgs {
    /// Number of threads (default: every CPU of the policy); set policies take any number.
    #[arg(long, short = 't', value_name = "N", value_parser = crate::values::threads)]
    pub threads: Option<usize>,
    /// Number of tasks for `balance` (same as --threads).
    #[arg(long, value_name = "M", value_parser = crate::values::tasks)]
    pub tasks: Option<usize>,
    /// Let a pinned policy place more threads than CPUs (round robin); set policies never need it.
    #[arg(long)]
    pub oversubscribe: bool,
    /// One hardware thread per core before any SMT sibling (same as the +smt-physical-first suffix).
    #[arg(long)]
    pub smt_physical_first: bool,
    /// Per-CPU speed weights for `balance`: JSON {"cpu": weight} or `cpu,weight` lines.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// For balance: what a second busy SMT thread adds to a core's throughput, measured (two
    /// busy siblings give 1+Y times one thread), 0 to 1, or a file holding it (the number, JSON
    /// {"smt_yield": Y}, or `pinsight speed --json` output); default 0.25.
    #[arg(long, value_name = "Y|FILE", value_parser = crate::values::smt_yield)]
    pub smt_yield: Option<f64>,
    /// Core-to-core latency matrix for latency-group/latency-pipeline (CSV or JSON).
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// With latency-group: choose CPUs for a pipeline (same as policy latency-pipeline).
    #[arg(long)]
    pub pipeline: bool,
    /// Accept a --latency matrix that leaves usable CPUs out or names CPUs this machine
    /// lacks (refused by default: it was measured elsewhere); only covered CPUs are chosen.
    #[arg(long)]
    pub latency_partial: bool,
    /// Memory policy: local, bind:NODES, interleave:NODES, preferred:NODE or
    /// weighted-interleave[:NODES] (NODES: a node list such as 0-1,3, or all).
    #[arg(long, value_name = "SPEC", value_parser = parse_mem)]
    pub mem: Option<MemPolicy>,
    /// Place only on the CPUs local to a device (eth0, nvme0n1, 0000:3b:00.0, gpu0, nic0);
    /// with --mem local, memory goes to the device's NUMA node.
    #[arg(long, value_name = "DEVICE")]
    pub near: Option<String>,
}

/// `--mem SPEC` as clap parses it: errors list the accepted forms (exit 2).
pub fn parse_mem(s: &str) -> Result<MemPolicy, String> {
    s.parse::<MemPolicy>().map_err(|e| e.to_string())
}

/// The kernel's weighted-interleave weights when the request asks for
/// weighted interleave (read through the one window on /sys, so a
/// recorded machine shows its own).
pub fn add_interleave_weights(req: &mut Request, g: &Globals) -> Result<(), CliError> {
    if req.mem.as_ref().map(MemPolicy::mode) == Some(MemMode::WeightedInterleave) {
        req.interleave_weights = pinsight_sys::mempolicy::interleave_weights(&g.fsroot()?);
    }
    Ok(())
}

/// Plans `policy` on `topo`. Bad input is a usage error.
pub fn make_plan(
    policy: &Policy,
    args: &PlanArgs,
    topo: &Topology,
    g: &Globals,
) -> Result<Plan, CliError> {
    let mut req = make_request(policy, args)?;
    add_interleave_weights(&mut req, g)?;
    pinsight_plan::plan(topo, &req).map_err(plan_error)
}

/// A planner error as the CLI says it: a usage error (exit 2) naming the
/// flag to change.
pub fn plan_error(e: PlanError) -> CliError {
    CliError::usage(plan_error_message(&e))
}

/// The one-line message for a planner error, naming the flags involved.
pub fn plan_error_message(e: &PlanError) -> String {
    e.named(&flag)
}

/// The flag of each planning input: the one table the planner's and the
/// renderer's messages name their inputs from.
pub fn flag(input: Input) -> &'static str {
    match input {
        Input::Threads => "--threads",
        Input::Tasks => "--tasks",
        Input::Oversubscribe => "--oversubscribe",
        Input::Weights => "--weights",
        Input::SmtYield => "--smt-yield",
        Input::Latency => "--latency",
        Input::Pipeline => "--pipeline",
        Input::LatencyPartial => "--latency-partial",
        Input::Mem => "--mem",
        Input::Near => "--near",
        Input::Format => "--format",
    }
}

/// The request for `policy` and the planning flags. A flag given to a policy
/// it does not apply to is a usage error naming both; `--pipeline` turns
/// latency-group into latency-pipeline. Loads the --weights/--latency files.
pub fn make_request(policy: &Policy, args: &PlanArgs) -> Result<Request, CliError> {
    for (given, option) in [
        (args.weights.is_some(), PolicyOption::Weights),
        (args.smt_yield.is_some(), PolicyOption::SmtYield),
        (args.pipeline, PolicyOption::Pipeline),
        (args.latency.is_some(), PolicyOption::Latency),
    ] {
        if let (true, Some(what)) = (given, policy.not_for(option)) {
            let why = format!("it applies to {what} only");
            let policy = format!("policy {policy}");
            return Err(crate::errors::conflict(flag(option.into()), &policy, &why));
        }
    }
    let mut policy = policy.clone();
    if args.pipeline {
        policy.base = BasePolicy::LatencyPipeline;
    }
    let latency = args.latency.as_ref().map(|p| LatencyMatrix::load(p));
    Ok(Request {
        threads: args.threads,
        tasks: args.tasks,
        oversubscribe: args.oversubscribe,
        smt_physical_first: args.smt_physical_first,
        weights: load_weights(args.weights.as_ref())?,
        latency: latency
            .transpose()
            .map_err(|e| CliError::usage(e.to_string()))?,
        mem: args.mem.clone(),
        near: args.near.clone(),
        latency_partial: args.latency_partial,
        smt_yield: args.smt_yield,
        ..Request::new(policy)
    })
}

/// The `--weights` file, when given.
fn load_weights(path: Option<&PathBuf>) -> Result<Option<pinsight_plan::Weights>, CliError> {
    path.map(|p| pinsight_compare::setup::load_weights(p))
        .transpose()
        .map_err(|e| CliError::usage(e.to_string()))
}

/// The test harness `plan`, `run` and `pin` share: a command's `Args` with
/// the global flags, parsed as clap would from the command line.
/// The slicing options `run --slice` and `slice` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SliceArgs {
    /// How to share the CPUs: equal-capacity (default), equal-count, p-only
    /// (one rule; `compare --slice-rules` compares several).
    #[arg(long = "slice-rules", aliases = ["slice-rule", "rule"], value_name = "RULE")]
    pub rule: Option<SliceRule>,
    /// This process's rank among the ranks of this node (default: from the launcher).
    #[arg(long = "local-rank", visible_alias = "rank", value_name = "N", value_parser = crate::values::rank)]
    pub rank: Option<usize>,
    /// Number of ranks on this node (default: from the launcher).
    #[arg(long = "local-size", visible_alias = "size", value_name = "N", value_parser = crate::values::rank)]
    pub size: Option<usize>,
}

/// The slicing the flags ask for, `weights` (a file) as the slices'
/// capacity.
pub fn rank_request(a: &SliceArgs, weights: Option<&PathBuf>) -> Result<RankRequest, CliError> {
    Ok(RankRequest {
        rank: a.rank,
        size: a.size,
        rule: a.rule.unwrap_or_default(),
        weights: load_weights(weights)?,
    })
}

/// Why this rank's slice cannot be found, as the CLI says it.
pub fn rank_error(e: RankError) -> CliError {
    match e {
        RankError::Affinity(_) => CliError::runtime(e.to_string()),
        RankError::Launcher(LauncherError::NotFound) => CliError::usage(format!(
            "{e}; give --local-rank N --local-size N, or run under a launcher (srun, mpirun, ...)"
        )),
        RankError::Launcher(_) => CliError::usage(e.to_string()),
        RankError::Slice(e) => crate::errors::slice_error(e),
    }
}

impl PlanArgs {
    /// What discovery must read for this plan beyond the CPUs: devices
    /// for `--near`, memory details for `--mem`.
    pub fn needs(&self) -> pinsight_topology::Needs {
        pinsight_topology::Needs {
            devices: self.near.is_some(),
            memory: self.mem.is_some(),
            caches: true,
            kinds: true,
        }
    }

    /// [`PlanArgs::needs`] for planning `policy` and nothing else (`run`
    /// without `--slice`): the caches only when the policy orders by them,
    /// the kinds only when it chooses CPUs by them.
    pub fn needs_for(&self, policy: &pinsight_plan::Policy) -> pinsight_topology::Needs {
        pinsight_topology::Needs {
            caches: policy.uses_caches(),
            kinds: policy.uses_kinds(),
            ..self.needs()
        }
    }
}

#[cfg(test)]
pub mod test_cli {
    use crate::cli::Globals;

    /// Global flags plus one command's arguments.
    #[derive(clap::Parser, Debug)]
    pub struct Cli<A: clap::Args> {
        #[command(flatten)]
        pub globals: Globals,
        #[command(flatten)]
        pub args: A,
    }

    /// Parses `argv` (without the program name) as command `cmd` would.
    pub fn parse<A: clap::Args + std::fmt::Debug>(
        cmd: &str,
        argv: &[&str],
    ) -> Result<Cli<A>, clap::Error> {
        <Cli<A> as clap::Parser>::try_parse_from(std::iter::once(cmd).chain(argv.iter().copied()))
    }
}
