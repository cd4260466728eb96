//! The planning flags `plan`, `run` and `pin` share, and the one way they
//! become a planner request: written once so a plan shown by `pinsight plan`
//! is exactly the plan `run`/`pin` apply, with the same names, checks and
//! error messages.

use crate::cli::CliError;
use pinsight_latency::LoadMatrix;
use pinsight_plan::{BasePolicy, LatencyMatrix, Plan, Policy, Request, Weights};
use pinsight_topology::Topology;
use std::path::PathBuf;

/// The planning options besides POLICY (flattened into each command's `Args`).
///
/// The help of `--latency` and `--pipeline` is the short form `run`/`pin`
/// show; `pinsight plan` lengthens it (see `plan::Args`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PlanArgs {
    /// Number of threads (default: every CPU of the policy); set policies take any number.
    #[arg(long, short = 't', value_name = "N")]
    pub threads: Option<usize>,
    /// Number of tasks for `balance` (same as --threads).
    #[arg(long, value_name = "M")]
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
    /// Core-to-core latency matrix for latency-group/latency-pipeline (CSV or JSON).
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// With latency-group: choose CPUs for a pipeline (same as policy latency-pipeline).
    #[arg(long)]
    pub pipeline: bool,
}

/// POLICY as clap parses it: errors list the valid policies (exit 2).
pub fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse::<Policy>().map_err(|e| e.to_string())
}

/// Plans `policy` on `topo`. Bad input is a usage error.
pub fn make_plan(policy: &Policy, args: &PlanArgs, topo: &Topology) -> Result<Plan, CliError> {
    let req = make_request(policy, args)?;
    pinsight_plan::plan(topo, &req).map_err(|e| CliError::usage(e.to_string()))
}

/// The request for `policy` and the planning flags. A flag given to a policy
/// it does not apply to is a usage error naming both; `--pipeline` turns
/// latency-group into latency-pipeline. Loads the --weights/--latency files.
pub fn make_request(policy: &Policy, args: &PlanArgs) -> Result<Request, CliError> {
    let mut policy = policy.clone();
    let weights = match &args.weights {
        Some(_) if policy.base != BasePolicy::Balance => {
            return Err(CliError::usage(format!(
                "--weights applies to the balance policy only, not {policy}"
            )));
        }
        Some(p) => Some(Weights::load(p).map_err(CliError::usage)?),
        None => None,
    };
    if args.pipeline {
        match policy.base {
            BasePolicy::LatencyGroup | BasePolicy::LatencyPipeline => {
                policy.base = BasePolicy::LatencyPipeline
            }
            _ => {
                return Err(CliError::usage(format!(
                    "--pipeline applies to latency-group only, not {policy}"
                )))
            }
        }
    }
    let latency = match &args.latency {
        Some(_)
            if !matches!(
                policy.base,
                BasePolicy::LatencyGroup | BasePolicy::LatencyPipeline
            ) =>
        {
            return Err(CliError::usage(format!(
                "--latency applies to latency-group/latency-pipeline only, not {policy}"
            )));
        }
        Some(p) => Some(LatencyMatrix::load(p).map_err(|e| CliError::usage(e.to_string()))?),
        None => None,
    };
    Ok(Request {
        threads: args.threads,
        tasks: args.tasks,
        oversubscribe: args.oversubscribe,
        smt_physical_first: args.smt_physical_first,
        weights,
        latency,
        ..Request::new(policy)
    })
}
