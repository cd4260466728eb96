//! `pinsight speed`: per-CPU single-thread throughput and the speedup factor
//! between core kinds.

use crate::{cli::check_output_file, cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_speed::{
    chase_buffer_bytes, select_cpus, unweighted, weights_file, Kernel, MemoryError, SelectError,
    SpeedReport, SpeedSession,
};
use std::path::PathBuf;

use pinsight_speed::default_mem_bytes;

/// Measure how fast each CPU really is, and how much faster each core kind is
/// than the others (the speedup factor), per kernel.
///
/// Three single-thread kernels run pinned to each CPU: `int` (integer,
/// unpredictable branches), `fp` (floating-point multiply-add chains) and
/// `mem` (dependent loads over a buffer larger than L2). The CPUs are
/// measured interleaved — several short passes, every CPU in each — so
/// background load hits them alike; chunks descheduled by other processes
/// are dropped. The speedup factor of each kind pair is printed beside the
/// ratio that max frequency and `cpu_capacity` would predict: they often
/// disagree.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight speed\n  pinsight speed --per-kind --budget 2s\n  pinsight speed --export-weights speed.json\n  pinsight plan balance --tasks 200 --weights speed.json"
)]
pub struct Args {
    /// CPUs to measure (cpulist); default: every online CPU this process may use.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Measure only N cores of each core kind instead of every CPU: the first
    /// hardware thread of each kind's N lowest-numbered cores (`--per-kind`
    /// alone means 1). Enough for the speedup factor on a big machine.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1", value_parser = crate::values::per_kind)]
    pub per_kind: Option<usize>,
    /// Kernels to run, comma separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "int,fp,mem", value_parser = Kernel::parse)]
    pub kernels: Vec<Kernel>,
    /// The measuring time, shared equally by the CPUs measured (each CPU's share by its
    /// kernels) [default: 1s per CPU].
    #[arg(long, value_name = "DURATION", value_parser = crate::values::positive_duration)]
    pub budget: Option<std::time::Duration>,
    /// Pointer-chase buffer size in MiB (default: 4x the largest L2, at least 8).
    /// A size larger than the memory available now (MemAvailable in
    /// /proc/meminfo) is refused before anything runs (exit 2).
    // Bounded by the memory available now (checked before anything runs).
    #[arg(long, value_name = "MIB")]
    pub mem_mib: Option<usize>,
    /// Write per-CPU relative speeds to FILE, for `pinsight plan balance --weights FILE`.
    /// A FILE that cannot be written is refused before anything runs (exit 2).
    #[arg(long = "export-weights", value_name = "FILE")]
    pub weights: Option<PathBuf>,
}

/// Each CPU's measuring time when `--budget` is not given.
const DEFAULT_PER_CPU: std::time::Duration = std::time::Duration::from_secs(1);

/// Measures and summarises with a progress bar.
pub fn measure_report(
    topo: &Topology,
    cpus: CpuSet,
    kernels: Vec<Kernel>,
    budget_per_cpu: std::time::Duration,
    mem_bytes: usize,
    g: &Globals,
) -> Result<SpeedReport, CliError> {
    // The session picks the method (under `pinsight emulate`'s duty-cycle
    // stealers it counts descheduled time), as it does for `report`.
    let session = SpeedSession::new(cpus, kernels, budget_per_cpu, mem_bytes);
    if session.time_share() && !g.quiet {
        eprintln!(
            "{}",
            pinsight_term::wrap80(&format!(
                "pinsight: note: {}",
                pinsight_speed::TIME_SHARE_NOTE
            ))
        );
    }
    session
        .run(topo, &mut crate::cli::progress(g))
        .map_err(|e| CliError::runtime(e.to_string()))
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    g.require_live(
        "speed measures",
        "use `pinsight topo` to inspect a recorded machine",
    )?;
    let topo = g.topology()?;
    check_values(&args)?;
    let cpus = select_cpus(&topo, args.cpus.as_deref(), args.per_kind)
        .map_err(|e| CliError::usage(select_message(&e)))?;
    let mem_bytes = match args.mem_mib {
        // Only the mem kernel allocates the buffer.
        Some(mib) if args.kernels.contains(&Kernel::Mem) => checked_mem_bytes(mib, &g.fsroot()?)?,
        Some(mib) => mib.saturating_mul(1 << 20),
        None => default_mem_bytes(&topo),
    };
    // Checked now, not after minutes of measuring.
    if let Some(path) = &args.weights {
        check_output_file(path, "--export-weights")?;
    }
    if let (Some(vm), false) = (
        pinsight_topology::vm::detect(&pinsight_sys::FsRoot::live()),
        g.quiet,
    ) {
        eprintln!(
            "{}",
            pinsight_term::wrap80(&format!("pinsight: {}", vm.note()))
        );
    }
    let kernels = args.kernels.clone();
    // The budget is the whole measurement's, as report's is: each CPU
    // gets an equal share.
    let per_cpu = args.budget.map_or(DEFAULT_PER_CPU, |b| {
        b / u32::try_from(cpus.len().max(1)).unwrap_or(u32::MAX)
    });
    let report = measure_report(&topo, cpus, kernels, per_cpu, mem_bytes, g)?;
    if let Some(note) = report.disturbance.as_ref().and_then(|d| d.note()) {
        if !g.quiet {
            eprintln!(
                "{}",
                pinsight_term::wrap80(&format!("pinsight: warning: {note}"))
            );
        }
    }
    if let Some(path) = &args.weights {
        write_weights(path, &report, g)?;
    }
    show(&args, g, &topo, &report)
}

/// Values clap's parsers let through that measure nothing.
fn check_values(args: &Args) -> Result<(), CliError> {
    if args.kernels.is_empty() {
        return Err(CliError::usage(
            "--kernels: give at least one of int, fp, mem",
        ));
    }
    if args.mem_mib == Some(0) {
        return Err(CliError::usage(
            "--mem-mib 0: give a buffer size of at least 1 MiB",
        ));
    }
    Ok(())
}

/// `--export-weights FILE`: the per-CPU weights, and a warning naming the
/// CPUs left out.
fn write_weights(
    path: &std::path::Path,
    report: &SpeedReport,
    g: &Globals,
) -> Result<(), CliError> {
    let text =
        serde_json::to_string_pretty(&weights_file(&report.cpus)).expect("weights serialise");
    pinsight_lifecycle::output::write(path, (text + "\n").as_bytes())
        .map_err(|e| CliError::runtime(format!("--export-weights: {e}")))?;
    let missing = unweighted(&report.cpus);
    if !missing.is_empty() && !g.quiet {
        let list: CpuSet = missing.into_iter().collect();
        eprintln!(
            "pinsight: warning: CPU(s) {list} have no valid measurement and are left out of {}",
            path.display()
        );
    }
    Ok(())
}

/// The report on stdout: the JSON (`--json`) or the table.
fn show(args: &Args, g: &Globals, topo: &Topology, report: &SpeedReport) -> CmdResult {
    if g.json {
        g.print_json(report)?;
    } else {
        print!("{}", pinsight_speed::view::render(topo, report));
        if let Some(path) = &args.weights {
            println!(
                "Weights written to {} (use: pinsight plan balance --weights {})",
                path.display(),
                path.display()
            );
        }
    }
    Ok(0)
}

/// `--mem-mib MIB` in bytes, refused (usage error, before anything runs)
/// when the buffer would not fit in the memory available now.
fn checked_mem_bytes(mib: usize, fs: &pinsight_sys::FsRoot) -> Result<usize, CliError> {
    chase_buffer_bytes(mib, fs).map_err(|e| match e {
        MemoryError::TooBig { mib, available } => {
            let avail = match available {
                Some(a) => format!("{} MiB are available (MemAvailable)", a >> 20),
                None => "more than this machine can address".to_string(),
            };
            CliError::usage(format!(
                "--mem-mib {mib}: the pointer-chase buffer would not fit in memory: {avail}; \
                 give a smaller size or leave --mem-mib out (default: 4x the largest L2)"
            ))
        }
    })
}

/// The usage message for a refused `--cpus` / `--per-kind` choice.
fn select_message(e: &SelectError) -> String {
    match e {
        SelectError::BadList { list, error } => format!("--cpus {list}: {error}"),
        SelectError::NoCpu { list, usable } => {
            format!("--cpus '{list}': give at least one CPU (usable: {usable})")
        }
        SelectError::Unusable { list, bad, usable } => format!(
            "--cpus {list}: CPU(s) {bad} are offline or not allowed for this process (usable: {usable})"
        ),
        SelectError::ZeroPerKind => "--per-kind 0: give at least 1 core per kind".to_string(),
    }
}
