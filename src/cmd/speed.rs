//! `pinsight speed`: per-CPU single-thread throughput and the speedup factor
//! between core kinds.

use crate::{cli::check_output_file, cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_model::Topology;
use pinsight_speed::request::{notes_before, write_weights, Input, Request};
use pinsight_speed::{Kernel, SpeedReport};
use pinsight_term::wrap80;
use std::path::PathBuf;

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

pub fn run(args: Args, g: &Globals) -> CmdResult {
    g.require_live(
        "speed measures",
        "use `pinsight topo` to inspect a recorded machine",
    )?;
    let topo = g.topology()?;
    let request = Request {
        cpus: args.cpus.clone(),
        per_kind: args.per_kind,
        kernels: args.kernels.clone(),
        budget: args.budget,
        mem_mib: args.mem_mib,
    };
    let session = request
        .session(&topo, &g.fsroot()?)
        .map_err(|e| CliError::usage(e.named(&flag)))?;
    // Checked now, not after minutes of measuring.
    if let Some(path) = &args.weights {
        check_output_file(path, "--export-weights")?;
    }
    for note in notes_before(&session, &pinsight_sys::FsRoot::live()) {
        say(g, &note);
    }
    let report = session
        .run(&topo, &mut crate::cli::progress(g))
        .map_err(|e| CliError::runtime(e.to_string()))?;
    if let Some(note) = report.disturbance.as_ref().and_then(|d| d.note()) {
        say(g, &format!("warning: {note}"));
    }
    if let Some(path) = &args.weights {
        let left_out = write_weights(path, &report)
            .map_err(|e| CliError::runtime(format!("--export-weights: {e}")))?;
        if let (Some(w), false) = (left_out, g.quiet) {
            eprintln!("pinsight: warning: {w}");
        }
    }
    show(&args, g, &topo, &report)
}

/// One line on stderr, wrapped, unless `--quiet`.
fn say(g: &Globals, line: &str) {
    if !g.quiet {
        eprintln!("{}", wrap80(&format!("pinsight: {line}")));
    }
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

/// The flag of each input of the request.
fn flag(input: Input) -> &'static str {
    match input {
        Input::Cpus => "--cpus",
        Input::PerKind => "--per-kind",
        Input::Kernels => "--kernels",
        Input::MemMib => "--mem-mib",
    }
}
