//! `pinsight workload`: run a built-in workload and print its figure of
//! merit, checksum and what each worker thread did.
//!
//! The workloads exist so `pinsight run`/`compare` can be tried without a
//! program of one's own: `pinsight run --plan ... -- pinsight workload pi`
//! pins the workers in creation order (worker i is place i + 1; the main
//! thread, place 0, only waits).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_workload::{
    check, names, parse_size, run_with_progress, Param, Params, Schedule, WorkloadError, WORKLOADS,
};

/// Run a built-in workload: pi, mandelbrot, lu or pingpong.
///
/// Each does a fixed amount of work (so placements are compared on equal
/// work), prints its own figure of merit and a checksum that is identical for
/// every thread count and schedule, and shows per-thread work, busy time and
/// the CPUs each worker was seen on, so load imbalance is visible.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight workload --list\n  pinsight workload pi --threads 8 --schedule static\n  \
pinsight workload pi --schedule steal --size 2e9\n  pinsight workload mandelbrot --size 2000 --max-iter 500\n  \
pinsight workload lu --size 2048 --json\n  pinsight workload pingpong --size 10M"
)]
pub struct Args {
    /// Workload to run (see --list).
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    /// List the workloads, their size knob and defaults, and exit.
    #[arg(long, conflicts_with_all = ["threads", "schedule", "size", "max_iter"])]
    pub list: bool,
    /// Worker threads [default: CPUs this process may use; pingpong: 2].
    #[arg(long, short = 't', value_name = "N", value_parser = crate::values::threads)]
    pub threads: Option<usize>,
    /// How pi and mandelbrot hand out work: static (equal contiguous
    /// splits), dynamic (shared counter) or steal (work stealing).
    #[arg(long, value_name = "KIND", value_parser = |s: &str| s.parse::<Schedule>())]
    pub schedule: Option<Schedule>,
    /// The workload's size: pi steps, mandelbrot width, lu matrix order,
    /// pingpong round trips. Accepts 1000000, 1e6, 500k, 2M, 1G.
    #[arg(long, short = 's', value_name = "N", value_parser = parse_size)]
    pub size: Option<u64>,
    /// mandelbrot: iteration cap per pixel [default: 1000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_iter: Option<u32>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    if args.list {
        return list(g);
    }
    let name = args
        .name
        .as_deref()
        .ok_or_else(|| CliError::usage(format!("give a workload name: {}", names())))?;
    let params = Params {
        threads: args.threads,
        size: args.size,
        schedule: args.schedule,
        max_iter: args.max_iter,
    };
    check(name, &params).map_err(|e| CliError::usage(workload_error_message(&e)))?;
    let outcome = run_with_progress(name, &params, &mut crate::cli::progress(g));
    let outcome = outcome.map_err(|e| CliError::runtime(workload_error_message(&e)))?;
    g.print_json_or(&outcome, || pinsight_workload::view::report(&outcome))?;
    Ok(0)
}

fn list(g: &Globals) -> CmdResult {
    g.print_json_or(&WORKLOADS, || pinsight_workload::view::list(WORKLOADS))?;
    Ok(0)
}

/// A workload error as the CLI says it, naming the flag to change.
fn workload_error_message(e: &WorkloadError) -> String {
    e.words(|p| match p {
        Param::Threads => "--threads",
        Param::Size => "--size",
        Param::Schedule => "--schedule",
        Param::MaxIter => "--max-iter",
    })
}
