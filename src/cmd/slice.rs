//! `pinsight slice`: this rank's share of the node's CPUs (or every rank's
//! with `--all`), and the pieces `run --slice` shares with it: the local
//! rank from the launcher's environment, the allowed CPUs (affinity ∩
//! cgroup), the slicing and its errors as the CLI says them.

use crate::cli::{CliError, CmdResult, Globals};
use pinsight_cpuset::CpuSet;
use pinsight_plan::launcher::{detect, LauncherError, LocalRank};
use pinsight_plan::slice::{slices, SliceError, SliceRequest, SliceRule, Slicing};
use pinsight_plan::Weights;
use pinsight_render::gather::{cap, slicing_text};
use pinsight_topology::Topology;
use serde::Serialize;
use std::path::PathBuf;

/// Print one rank's slice of this node's CPUs (equal capacity by default).
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The local rank and the number of ranks on this node come from --rank and --size, else from the launcher's environment:
  Slurm      SLURM_LOCALID + SLURM_STEP_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE or
             SLURM_TASKS_PER_NODE (2(x3),1 form) and SLURM_NODEID
  Open MPI   OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE
  MPICH/IMPI MPI_LOCALRANKID, MPI_LOCALNRANKS
  MVAPICH2   MV2_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_SIZE
  PMIx, PMI  PMIX_LOCAL_RANK/_SIZE, PMI_LOCAL_RANK/_SIZE
  Flux       FLUX_TASK_LOCAL_ID (with --size)
  torchrun   LOCAL_RANK, LOCAL_WORLD_SIZE
The CPUs sliced are those this process may use (its affinity mask, so the launcher's own binding counts, and the cgroup), cut into contiguous slices in topology order keeping cores, then NUMA nodes, L3 and L2 groups whole where the slices stay equal within one CPU's capacity. Capacity: --weights (`pinsight speed --weights`), else cpu_capacity, kind max frequency or rank.

Examples:
  pinsight slice --all --size 4             every rank's slice, its capacity
  pinsight slice --all --size 2 --format slurm
  srun -n 4 pinsight slice                  what each rank would get
  pinsight slice --rank 1 --size 2 --rule p-only --json")]
pub struct Args {
    #[command(flatten)]
    pub slice: SliceArgs,
    /// Show every rank's slice (needs --size).
    #[arg(long)]
    pub all: bool,
    /// Per-CPU speed weights (JSON {"cpu": weight} or `cpu,weight` lines) as slice capacity.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// With --all: the slices as a launcher's binding option: slurm, openmpi, openmpi-rankfile,
    /// hydra, intel-mpi.
    #[arg(long, value_name = "LAUNCHER")]
    pub format: Option<String>,
}

/// The slicing options `run --slice` and `slice` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SliceArgs {
    /// How to share the CPUs: equal-capacity (default), equal-count, p-only
    /// (one rule; `compare --slice-rules` compares several).
    #[arg(long = "slice-rules", value_name = "RULE", value_parser = parse_rule)]
    pub rule: Option<SliceRule>,
    /// This process's rank among the ranks of this node (default: from the launcher).
    #[arg(long = "local-rank", visible_alias = "rank", value_name = "N", value_parser = crate::values::rank)]
    pub rank: Option<usize>,
    /// Number of ranks on this node (default: from the launcher).
    #[arg(long = "local-size", visible_alias = "size", value_name = "N", value_parser = crate::values::rank)]
    pub size: Option<usize>,
}

fn parse_rule(s: &str) -> Result<SliceRule, String> {
    s.parse::<SliceRule>().map_err(|e| e.to_string())
}

/// One rank's slice and how it was found (`run --report`/`--json`).
#[derive(Clone, Debug, Serialize)]
pub struct RankSlice {
    pub rank: usize,
    pub size: usize,
    pub launcher: String,
    pub vars: Vec<String>,
    pub cpus: CpuSet,
    pub capacity: f64,
    pub rule: SliceRule,
    pub capacity_source: pinsight_plan::balance::CapacitySource,
    /// Every rank's capacity, for the spread.
    pub capacities: Vec<f64>,
    pub spread: f64,
    pub notes: Vec<String>,
}

/// The CPUs this process may use: the topology's usable CPUs, and on the
/// live machine also this thread's affinity mask (the launcher's binding).
pub fn allowed_cpus(topo: &Topology) -> Result<CpuSet, CliError> {
    let usable = topo.usable();
    if !topo.source_is_live() {
        return Ok(usable);
    }
    let mask = pinsight_sys::affinity::get_affinity(0)
        .map_err(|e| CliError::runtime(format!("sched_getaffinity: {e}")))?;
    Ok(mask.intersection(&usable))
}

/// The local rank: from the flags, else the environment.
pub fn local_rank(a: &SliceArgs) -> Result<LocalRank, CliError> {
    let get = |k: &str| std::env::var(k).ok();
    detect(&get, a.rank, a.size).map_err(|e| match e {
        LauncherError::NotFound => CliError::usage(format!(
            "{e}; give --local-rank N --local-size N, or run under a launcher (srun, mpirun, ...)"
        )),
        other => CliError::usage(other.to_string()),
    })
}

/// The slicing error as the CLI says it (exit 2: input or flags to change).
pub fn slice_error(e: SliceError) -> CliError {
    CliError::usage(match &e {
        SliceError::RankOutOfRange { .. } => format!("{e}; check --local-rank/--local-size"),
        SliceError::TooManyRanks { .. } => format!(
            "{e}; use fewer ranks per node, or let the launcher not bind each rank (mpirun --bind-to none, srun --cpu-bind=none): the CPUs sliced are those this process may use"
        ),
        SliceError::Unequal { .. } => {
            format!("{e}; use --slice-rules equal-count, fewer ranks, or other --weights")
        }
        SliceError::Weights(w) => format!("--weights: {w}"),
        _ => e.to_string(),
    })
}

/// Slices `allowed` for `size` ranks.
pub fn make_slicing(
    topo: &Topology,
    allowed: CpuSet,
    size: usize,
    rule: SliceRule,
    weights: Option<&PathBuf>,
) -> Result<Slicing, CliError> {
    let weights = match weights {
        Some(p) => Some(Weights::load(p).map_err(|e| CliError::usage(e.to_string()))?),
        None => None,
    };
    slices(
        topo,
        &SliceRequest {
            allowed,
            size,
            rule,
            weights,
        },
    )
    .map_err(slice_error)
}

/// This rank's slice, with what the report shows.
pub fn rank_slice(local: &LocalRank, s: &Slicing) -> Result<RankSlice, CliError> {
    let mine = s.slice(local.rank).map_err(slice_error)?;
    let mut notes = local.notes.clone();
    notes.extend(s.notes.iter().cloned());
    Ok(RankSlice {
        rank: local.rank,
        size: local.size,
        launcher: local.launcher.to_string(),
        vars: local.vars.clone(),
        cpus: mine.cpus.clone(),
        capacity: mine.capacity,
        rule: s.rule,
        capacity_source: s.capacity_source,
        capacities: s.slices.iter().map(|x| x.capacity).collect(),
        spread: s.spread,
        notes,
    })
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let topo = g.topology()?;
    let allowed = allowed_cpus(&topo)?;
    let rule = args.slice.rule.unwrap_or_default();
    if args.format.is_some() && !args.all {
        return Err(CliError::usage(
            "--format writes every rank's binding: give --all --size N",
        ));
    }
    if args.all {
        let size = args.slice.size.ok_or_else(|| {
            CliError::usage("--all needs --size N: the number of ranks on a node")
        })?;
        let s = make_slicing(&topo, allowed, size, rule, args.weights.as_ref())?;
        if let Some(f) = &args.format {
            let dialect: pinsight_plan::format::Dialect = f
                .parse()
                .map_err(|e: pinsight_plan::format::DialectError| CliError::usage(e.to_string()))?;
            let cpus: Vec<CpuSet> = s.slices.iter().map(|x| x.cpus.clone()).collect();
            let line = pinsight_plan::format::launcher_line(dialect, &cpus);
            if let Some(why) = line.strip_prefix("# pe-list") {
                return Err(CliError::usage(format!(
                    "--format {f}: pe-list{}",
                    why.trim_end()
                )));
            }
            print!("{line}");
            return Ok(0);
        }
        if g.json {
            println!("{}", json(&s)?);
        } else {
            print!("{}", slicing_text(&topo, &s, None));
        }
        return Ok(0);
    }
    let local = local_rank(&args.slice)?;
    let s = make_slicing(&topo, allowed, local.size, rule, args.weights.as_ref())?;
    let mine = rank_slice(&local, &s)?;
    if g.json {
        let doc = serde_json::json!({ "slice": mine, "slicing": s });
        println!("{}", json(&doc)?);
    } else {
        println!(
            "local rank {} of {} (from {}): CPUs {}, capacity {}",
            mine.rank,
            mine.size,
            mine.launcher,
            mine.cpus,
            cap(mine.capacity)
        );
        print!("{}", slicing_text(&topo, &s, Some(mine.rank)));
        for n in &local.notes {
            println!("{}", crate::cli::wrap80(&format!("note: {n}")));
        }
    }
    Ok(0)
}

fn json<T: Serialize>(v: &T) -> Result<String, CliError> {
    serde_json::to_string_pretty(v).map_err(|e| CliError::runtime(format!("JSON output: {e}")))
}
