//! `pinsight slice`: this rank's share of the node's CPUs (or every rank's
//! with `--all`). The slicing flags and steps it shares with `run --slice`
//! are in `plan_args`; the slice itself is `pinsight_plan::slice`.

use super::plan_args::{rank_error, rank_request, SliceArgs};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_launch::view::gather::{rank_json, rank_text, slicing_text};
use pinsight_plan::format::Dialect;
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
    #[arg(long, requires = "size")]
    pub all: bool,
    /// Per-CPU speed weights (JSON {"cpu": weight} or `cpu,weight` lines) as slice capacity.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// With --all: the slices as a launcher's binding option: slurm, openmpi, openmpi-rankfile,
    /// hydra, intel-mpi.
    #[arg(long, value_name = "LAUNCHER", requires = "all")]
    pub format: Option<String>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let topo = g.topology()?;
    let request = rank_request(&args.slice, args.weights.as_ref())?;
    if args.all {
        let size = args.slice.size.ok_or_else(|| {
            CliError::usage("--all needs --size N: the number of ranks on a node")
        })?;
        let s = request.slicing(&topo, size).map_err(rank_error)?;
        if let Some(f) = &args.format {
            let dialect = f
                .parse::<Dialect>()
                .map_err(|e| CliError::usage(e.to_string()))?;
            let line = s.launcher_line(dialect);
            let line = line.map_err(|e| CliError::usage(format!("--format {f}: {e}")))?;
            print!("{line}");
        } else {
            g.print_json_or(&s, || slicing_text(&topo, &s, None))?;
        }
        return Ok(0);
    }
    let mine = request.mine(&topo).map_err(rank_error)?;
    g.print_json_or(&rank_json(&mine.slicing, &mine.slice), || {
        rank_text(&topo, &mine.slicing, &mine.slice, &mine.local.notes)
    })?;
    Ok(0)
}
