//! `pinsight speed`: per-CPU single-thread throughput and the speedup factor
//! between core kinds.

use crate::cli::{check_output_file, parse_duration, progress_bar, CliError, CmdResult, Globals};
use pinsight_speed::{
    chase_buffer_bytes, select_cpus, unweighted, weights_file, Kernel, MemoryError, SelectError,
    SlotPlan, SpeedReport, SpeedSession,
};
use pinsight_topology::{CpuSet, Topology};
use std::fmt::Write;
use std::path::PathBuf;

pub use pinsight_speed::default_mem_bytes;

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
    after_help = "Examples:\n  pinsight speed\n  pinsight speed --per-kind --budget-per-cpu 500ms\n  pinsight speed --weights speed.json && pinsight plan balance --tasks 200 --weights speed.json"
)]
pub struct Args {
    /// CPUs to measure (cpulist); default: every online CPU this process may use.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Measure only N cores of each core kind instead of every CPU: the first
    /// hardware thread of each kind's N lowest-numbered cores (`--per-kind`
    /// alone means 1). Enough for the speedup factor on a big machine.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1")]
    pub per_kind: Option<usize>,
    /// Kernels to run, comma separated.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "int,fp,mem", value_parser = Kernel::parse)]
    pub kernels: Vec<Kernel>,
    /// Time spent on each CPU (shared by the kernels; total = this x CPUs).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub budget_per_cpu: std::time::Duration,
    /// Pointer-chase buffer size in MiB (default: 4x the largest L2, at least 8).
    /// A size larger than the memory available now (MemAvailable in
    /// /proc/meminfo) is refused before anything runs (exit 2).
    #[arg(long, value_name = "MIB")]
    pub mem_mib: Option<usize>,
    /// Write per-CPU relative speeds to FILE, for `pinsight plan balance --weights FILE`.
    /// A FILE that cannot be written is refused before anything runs (exit 2).
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
}

/// Measures and summarises with a progress bar (shared with `report`).
pub fn measure_report(
    topo: &Topology,
    cpus: CpuSet,
    kernels: Vec<Kernel>,
    budget_per_cpu: std::time::Duration,
    mem_bytes: usize,
    g: &Globals,
) -> Result<SpeedReport, CliError> {
    let session = SpeedSession::new(cpus, kernels, budget_per_cpu, mem_bytes);
    let pb = progress_bar(
        g,
        session.slots() as u64,
        &format!(
            "measuring CPU speed ({} passes over {} CPUs)",
            session.passes(),
            session.cpus()
        ),
    );
    let res = session.run(topo, &mut |done| pb.set_position(done as u64));
    pb.finish_and_clear();
    res.map_err(|e| CliError::runtime(e.to_string()))
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let topo = g.topology()?;
    if !topo.source_is_live() {
        return Err(CliError::usage(
            "speed measures this machine: it cannot run with --fsroot or --hwloc-xml (use `pinsight topo` to inspect a recorded machine)",
        ));
    }
    if args.kernels.is_empty() {
        return Err(CliError::usage(
            "--kernels: give at least one of int, fp, mem",
        ));
    }
    if args.budget_per_cpu.is_zero() {
        return Err(CliError::usage(
            "--budget-per-cpu 0: give a positive duration, e.g. 200ms or 1s",
        ));
    }
    if args.mem_mib == Some(0) {
        return Err(CliError::usage(
            "--mem-mib 0: give a buffer size of at least 1 MiB",
        ));
    }
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
        check_output_file(path, "--weights")?;
    }
    let report = measure_report(&topo, cpus, args.kernels, args.budget_per_cpu, mem_bytes, g)?;
    if let Some(path) = &args.weights {
        let text =
            serde_json::to_string_pretty(&weights_file(&report.cpus)).expect("weights serialise");
        std::fs::write(path, text + "\n")
            .map_err(|e| CliError::runtime(format!("--weights '{}': {e}", path.display())))?;
        let missing = unweighted(&report.cpus);
        if !missing.is_empty() && !g.quiet {
            let list: CpuSet = missing.into_iter().collect();
            eprintln!(
                "pinsight: warning: CPU(s) {list} have no valid measurement and are left out of {}",
                path.display()
            );
        }
    }
    if g.json {
        g.print_json(&report)?;
    } else {
        print!("{}", render(&topo, &report));
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
fn checked_mem_bytes(mib: usize, fs: &pinsight_topology::FsRoot) -> Result<usize, CliError> {
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

/// Human output: a row per CPU, then the speedup factors.
pub fn render(topo: &Topology, r: &SpeedReport) -> String {
    let mut out = String::new();
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name()).collect();
    writeln!(
        out,
        "Speed of {} CPU{}: kernels {}; {} per CPU in {} interleaved pass{} ({}){}; took {:.1} s",
        r.cpus.len(),
        if r.cpus.len() == 1 { "" } else { "s" },
        names.join(", "),
        seconds(r.budget_per_cpu_s),
        r.passes,
        if r.passes == 1 { "" } else { "es" },
        slots_text(&r.slots),
        if r.kernels.contains(&Kernel::Mem) {
            format!("; chase buffer {} MiB", r.mem_bytes >> 20)
        } else {
            String::new()
        },
        r.elapsed_s
    )
    .ok();
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    let mut header = vec!["CPU".to_string(), "kind".to_string()];
    for k in &r.kernels {
        header.push(format!("{} {}", k.name(), k.unit()));
    }
    header.push("relative".into());
    table.set_header(header);
    for c in &r.cpus {
        let kind = c
            .kind
            .and_then(|k| topo.kinds.get(k))
            .map(|k| k.name.clone())
            .unwrap_or_else(|| "-".into());
        let mut row = vec![c.cpu.to_string(), kind];
        for res in &c.results {
            row.push(if res.median.is_finite() {
                format!(
                    "{:.1} ± {}{}",
                    res.median,
                    pct(res.rel_ci_half()),
                    if res.disturbed_included { " !" } else { "" }
                )
            } else {
                "unavailable".to_string()
            });
        }
        row.push(if c.relative.is_finite() {
            format!("{:.2}", c.relative)
        } else {
            "-".into()
        });
        table.add_row(row);
    }
    for col in 2..table.column_count() {
        if let Some(c) = table.column_mut(col) {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    writeln!(out, "{}", table.trim_fmt()).ok();
    let chunks: usize = r
        .cpus
        .iter()
        .flat_map(|c| &c.results)
        .map(|k| k.chunks)
        .sum();
    let disturbed: usize = r
        .cpus
        .iter()
        .flat_map(|c| &c.results)
        .map(|k| k.disturbed)
        .sum();
    if disturbed > 0 {
        writeln!(
            out,
            "{disturbed} of {chunks} timed chunks ({:.0}%) were descheduled by other load and left out.",
            disturbed as f64 * 100.0 / chunks.max(1) as f64
        )
        .ok();
    }
    if r.cpus
        .iter()
        .flat_map(|c| &c.results)
        .any(|k| k.disturbed_included)
    {
        writeln!(out, "warning: '!' marks figures taken mostly from disturbed chunks (the machine is busy): read them as lower bounds").ok();
    }
    let misplaced: usize = r.cpus.iter().map(|c| c.misplaced_chunks).sum();
    if misplaced > 0 {
        writeln!(out, "warning: {misplaced} timed chunks ran on another CPU than asked (left out): pinning did not hold").ok();
    }
    if r.speedups.is_empty() {
        let rel: Vec<f64> = r
            .cpus
            .iter()
            .map(|c| c.relative)
            .filter(|v| v.is_finite())
            .collect();
        let spread = (1.0 - rel.iter().cloned().fold(f64::INFINITY, f64::min)) * 100.0;
        if rel.len() > 1 {
            writeln!(
                out,
                "One core kind measured: no speedup factor to report. The slowest CPU is {spread:.1}% below the fastest."
            )
            .ok();
        } else {
            writeln!(out, "One core kind measured: no speedup factor to report.").ok();
        }
        return out;
    }
    writeln!(out, "Speedup factor (faster kind / slower kind):").ok();
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header(vec![
        "kinds",
        "kernel",
        "measured",
        "by max frequency",
        "by capacity",
    ]);
    for p in &r.speedups {
        let f = &topo.kinds[p.fast_kind];
        let s = &topo.kinds[p.slow_kind];
        let pred = |v: Option<f64>| {
            v.map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "unknown".into())
        };
        table.add_row(vec![
            format!("{} / {}", f.name, s.name),
            p.kernel.name().to_string(),
            format!("{:.2}", p.measured),
            pred(p.predicted_by_frequency),
            pred(p.predicted_by_capacity),
        ]);
    }
    for col in 2..5 {
        if let Some(c) = table.column_mut(col) {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    for line in table.trim_fmt().lines() {
        writeln!(out, "  {line}").ok();
    }
    out
}

/// `int 8 x 42 ms, fp 8 x 42 ms, mem 5 x 67 ms`.
pub fn slots_text(slots: &[SlotPlan]) -> String {
    slots
        .iter()
        .map(|s| {
            format!(
                "{} {} x {:.0} ms",
                s.kernel.name(),
                s.passes,
                s.slot_s * 1e3
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `1 s`, `250 ms`.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + " s"
    } else {
        format!("{:.0} ms", s * 1e3)
    }
}

/// A confidence half-width as a percentage; below the last digit shown it
/// says so instead of a misleading 0.0%.
fn pct(rel: f64) -> String {
    if rel < 0.0005 {
        "<0.1%".to_string()
    } else {
        format!("{:.1}%", rel * 100.0)
    }
}
