//! `pinsight speed`: per-CPU single-thread throughput and the speedup factor
//! between core kinds.

use crate::cli::{parse_duration, progress_bar, CliError, CmdResult, Globals};
use pinsight_speed::{measure, speedups, weights_file, Kernel, SpeedConfig, SpeedReport};
use pinsight_topology::{CacheType, CpuSet, Topology};
use std::fmt::Write;
use std::path::PathBuf;

/// Measure how fast each CPU really is, and how much faster each core kind is
/// than the others (the speedup factor), per kernel.
///
/// Three single-thread kernels run pinned to each CPU in turn: `int`
/// (integer, unpredictable branches), `fp` (floating-point multiply-add
/// chains) and `mem` (dependent loads over a buffer larger than L2). The
/// speedup factor of each kind pair is printed beside the ratio that max
/// frequency and `cpu_capacity` would predict: they often disagree.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  pinsight speed\n  pinsight speed --per-kind --budget-per-cpu 500ms\n  pinsight speed --weights speed.json && pinsight plan balance --tasks 200 --weights speed.json")]
pub struct Args {
    /// CPUs to measure (cpulist); default: every online CPU this process may use.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Measure only N cores of each kind (first PU of each), not every CPU.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1")]
    pub per_kind: Option<usize>,
    /// Kernels to run, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "int,fp,mem", value_parser = Kernel::parse)]
    pub kernels: Vec<Kernel>,
    /// Time spent on each CPU (shared by the kernels).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub budget_per_cpu: std::time::Duration,
    /// Pointer-chase buffer size in MiB (default: 4x the largest L2, at least 8).
    #[arg(long, value_name = "MIB")]
    pub mem_mib: Option<usize>,
    /// Write per-CPU relative speeds to FILE, for `pinsight plan balance --weights FILE`.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
}

/// The CPUs `speed` would measure for these arguments.
pub fn select_cpus(topo: &Topology, cpus: Option<&str>, per_kind: Option<usize>) -> Result<CpuSet, CliError> {
    let usable = topo.usable();
    let chosen = match cpus {
        Some(list) => {
            let want = CpuSet::parse_list(list).map_err(|e| CliError::usage(format!("--cpus: {e}")))?;
            let bad = want.difference(&usable);
            if !bad.is_empty() {
                return Err(CliError::usage(format!(
                    "--cpus {list}: CPU(s) {bad} are offline or not allowed for this process (usable: {usable})"
                )));
            }
            want
        }
        None => usable.clone(),
    };
    let Some(n) = per_kind else { return Ok(chosen) };
    if n == 0 {
        return Err(CliError::usage("--per-kind 0: give at least 1 core per kind"));
    }
    let mut out = CpuSet::new();
    for kind in &topo.kinds {
        let mut taken = 0;
        for core in &topo.cores {
            if taken == n {
                break;
            }
            if let Some(pu) = core.cpus.intersection(&kind.cpus).intersection(&chosen).first() {
                out.insert(pu);
                taken += 1;
            }
        }
    }
    if topo.kinds.is_empty() {
        out = chosen;
    }
    Ok(out)
}

/// Default chase buffer: 4x the largest L2 (so it misses L2 on every
/// core), at least 8 MiB.
pub fn default_mem_bytes(topo: &Topology) -> usize {
    let l2 = topo
        .caches
        .iter()
        .filter(|c| c.level == 2 && c.cache_type != CacheType::Instruction)
        .filter_map(|c| c.size_kib)
        .max()
        .unwrap_or(0) as usize
        * 1024;
    (4 * l2).max(8 << 20)
}

/// Measures and summarises (shared with `report`).
pub fn measure_report(
    topo: &Topology,
    cpus: CpuSet,
    kernels: Vec<Kernel>,
    budget_per_cpu: std::time::Duration,
    mem_bytes: usize,
    g: &Globals,
) -> Result<SpeedReport, CliError> {
    let cfg = SpeedConfig { cpus: cpus.clone(), kernels: kernels.clone(), budget_per_cpu, mem_bytes };
    let pb = progress_bar(g, cpus.len() as u64, "measuring CPU speed");
    let kind_of = |c: usize| topo.cpu(c).and_then(|c| c.kind);
    let res = measure(&cfg, &kind_of, &mut |done, _| pb.set_position(done as u64));
    pb.finish_and_clear();
    let cpus = res.map_err(|e| CliError::runtime(e.to_string()))?;
    let (kinds, pairs) = speedups(topo, &cpus, &kernels);
    Ok(SpeedReport {
        kernels,
        budget_per_cpu_s: budget_per_cpu.as_secs_f64(),
        mem_bytes,
        cpus,
        kinds,
        speedups: pairs,
    })
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let topo = g.topology()?;
    if !topo.source_is_live() {
        return Err(CliError::usage(
            "speed measures this machine: it cannot run with --fsroot or --hwloc-xml (use `pinsight topo` to inspect a recorded machine)",
        ));
    }
    if args.kernels.is_empty() {
        return Err(CliError::usage("--kernels: give at least one of int, fp, mem"));
    }
    let cpus = select_cpus(&topo, args.cpus.as_deref(), args.per_kind)?;
    let mem_bytes = args.mem_mib.map(|m| m << 20).unwrap_or_else(|| default_mem_bytes(&topo));
    let report = measure_report(&topo, cpus, args.kernels, args.budget_per_cpu, mem_bytes, g)?;
    if let Some(path) = &args.weights {
        let text = serde_json::to_string_pretty(&weights_file(&report.cpus)).expect("weights serialise");
        std::fs::write(path, text + "\n")
            .map_err(|e| CliError::runtime(format!("--weights '{}': {e}", path.display())))?;
    }
    if g.json {
        g.print_json(&report)?;
    } else {
        print!("{}", render(&topo, &report));
        if let Some(path) = &args.weights {
            println!("Weights written to {} (use: pinsight plan balance --weights {})", path.display(), path.display());
        }
    }
    Ok(0)
}

/// Human output: a row per CPU, then the speedup factors.
pub fn render(topo: &Topology, r: &SpeedReport) -> String {
    let mut out = String::new();
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name()).collect();
    writeln!(
        out,
        "Speed of {} CPU(s): kernels {}; {:.2} s per CPU; chase buffer {} MiB",
        r.cpus.len(),
        names.join(", "),
        r.budget_per_cpu_s,
        r.mem_bytes >> 20
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
        let kind = c.kind.and_then(|k| topo.kinds.get(k)).map(|k| k.mark.clone()).unwrap_or_else(|| "-".into());
        let mut row = vec![c.cpu.to_string(), kind];
        for res in &c.results {
            let half = (res.ci_high - res.ci_low) / 2.0 / res.median * 100.0;
            row.push(format!("{:.1} ±{:.1}%", res.median, half));
        }
        row.push(format!("{:.2}", c.relative));
        table.add_row(row);
    }
    writeln!(out, "{table}").ok();
    let misplaced: usize = r.cpus.iter().map(|c| c.misplaced_chunks).sum();
    if misplaced > 0 {
        writeln!(out, "warning: {misplaced} timed chunks ran on another CPU than asked: pinning did not hold").ok();
    }
    if r.speedups.is_empty() {
        let rel: Vec<f64> = r.cpus.iter().map(|c| c.relative).collect();
        let spread = (1.0 - rel.iter().cloned().fold(f64::INFINITY, f64::min)) * 100.0;
        writeln!(
            out,
            "One core kind measured: no speedup factor to report. The slowest CPU is {spread:.1}% below the fastest."
        )
        .ok();
        return out;
    }
    writeln!(out, "Speedup factor (faster kind / slower kind):").ok();
    for p in &r.speedups {
        let f = &topo.kinds[p.fast_kind];
        let s = &topo.kinds[p.slow_kind];
        let pred = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "unknown".into());
        writeln!(
            out,
            "  {:<10} / {:<10} {:<4} measured {:.2}   predicted by max frequency {}, by capacity {}",
            f.name,
            s.name,
            p.kernel.name(),
            p.measured,
            pred(p.predicted_by_frequency),
            pred(p.predicted_by_capacity)
        )
        .ok();
    }
    out
}
