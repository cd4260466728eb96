//! `pinsight report`: the main job. Discovers the machine, measures
//! core-to-core latency and per-CPU speed within a time budget, writes one
//! self-contained HTML page and its JSON, and prints what to do.

use crate::cli::{parse_duration, progress_bar, CliError, CmdResult, Globals};
use crate::cmd::speed::{default_mem_bytes, measure_report};
use pinsight_latency::measure::{measure_with_progress, MeasureConfig};
use pinsight_latency::{domains, LatencyMatrix};
use pinsight_report::{html, suggestions, ReportData};
use pinsight_speed::Kernel;
use pinsight_topology::Topology;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One command for the whole picture: topology with core kinds, measured
/// core-to-core latency and latency domains, measured speed of every CPU and
/// the speedup factor between kinds — as an HTML page, JSON, and a short list
/// of concrete suggestions in the terminal.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  pinsight report\n  pinsight report --budget 30s --out /tmp/box\n  pinsight report --latency-from measured.csv")]
pub struct Args {
    /// Total time to spend measuring (latency and speed share it).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub budget: Duration,
    /// Output prefix: writes PREFIX.html and PREFIX.json.
    #[arg(long, default_value = "pinsight-report", value_name = "PREFIX")]
    pub out: PathBuf,
    /// Use a latency matrix measured elsewhere (core-to-core-latency CSV or pinsight JSON) instead of measuring.
    #[arg(long, value_name = "FILE")]
    pub latency_from: Option<PathBuf>,
    /// Skip the latency measurement.
    #[arg(long)]
    pub no_latency: bool,
    /// Skip the speed measurement.
    #[arg(long)]
    pub no_speed: bool,
}

/// How the budget is split: speed gets up to 1 s per CPU but at most 40%;
/// latency gets the rest. Below these floors a part is skipped, and said so.
const MIN_SPEED_PER_CPU: Duration = Duration::from_millis(60);
const MIN_LATENCY: Duration = Duration::from_millis(200);

fn hostname(g: &Globals) -> Option<String> {
    g.fsroot().ok()?.read_opt("/proc/sys/kernel/hostname")
}

/// Measures latency within `budget`. A partial matrix (budget ran out
/// mid-way) is kept, with a note saying how much is missing.
fn measure_latency(topo: &Topology, budget: Duration, g: &Globals) -> Result<(LatencyMatrix, Option<String>), String> {
    let cpus: Vec<usize> = topo.usable().iter().collect();
    let n = cpus.len();
    let pairs = n * (n - 1) / 2;
    let rounds = if n % 2 == 0 { n - 1 } else { n };
    // Each round measures its pairs side by side: a round may take budget/rounds.
    let per_pair = (budget / rounds.max(1) as u32).min(Duration::from_millis(200));
    let cfg = MeasureConfig { cpus, max_time_per_pair: per_pair, budget: Some(budget), ..MeasureConfig::default() };
    let pb = progress_bar(g, pairs as u64, "measuring core-to-core latency");
    let m = measure_with_progress(&cfg, &mut |p| pb.set_position(p.pairs_done as u64));
    pb.finish_and_clear();
    let m = m?;
    if m.skipped.is_empty() {
        return Ok((m.matrix, None));
    }
    let note = format!(
        "latency: budget ran out after {} of {} rounds; {} pairs unmeasured (raise --budget)",
        m.rounds_run,
        m.rounds_planned,
        m.skipped.len()
    );
    if m.rounds_run == 0 {
        return Err(note);
    }
    Ok((m.matrix, Some(note)))
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let started = Instant::now();
    let topo = g.topology()?;
    let live = topo.source_is_live();
    let usable = topo.usable();
    let mut skipped = Vec::new();

    // Speed: up to 1 s per CPU, at most 40% of the budget.
    let mut speed = None;
    let speed_share = args.budget.mul_f64(0.4);
    if args.no_speed {
        skipped.push("speed: skipped (--no-speed)".to_string());
    } else if !live {
        skipped.push("speed: not measured (the machine is recorded, not this one)".to_string());
    } else {
        let per_cpu = (speed_share / usable.len().max(1) as u32).min(Duration::from_secs(1));
        if per_cpu < MIN_SPEED_PER_CPU {
            skipped.push(format!(
                "speed: skipped — {:.0} ms per CPU is below the {} ms minimum; raise --budget to at least {:.0} s",
                per_cpu.as_secs_f64() * 1e3,
                MIN_SPEED_PER_CPU.as_millis(),
                (MIN_SPEED_PER_CPU * usable.len() as u32).as_secs_f64() / 0.4
            ));
        } else {
            speed = Some(measure_report(&topo, usable.clone(), Kernel::ALL.to_vec(), per_cpu, default_mem_bytes(&topo), g)?);
        }
    }

    // Latency: the rest of the budget.
    let mut latency = None;
    if let Some(path) = &args.latency_from {
        latency = Some(LatencyMatrix::load(path).map_err(CliError::usage)?);
    } else if args.no_latency {
        skipped.push("latency: skipped (--no-latency)".to_string());
    } else if !live {
        skipped.push("latency: not measured (the machine is recorded; pass --latency-from FILE)".to_string());
    } else if usable.len() < 2 {
        skipped.push(format!("latency: needs at least 2 usable CPUs, this process may use {usable}"));
    } else {
        let left = args.budget.saturating_sub(started.elapsed());
        if left < MIN_LATENCY {
            skipped.push(format!(
                "latency: skipped — {:.0} ms left of the budget, at least {} ms needed",
                left.as_secs_f64() * 1e3,
                MIN_LATENCY.as_millis()
            ));
        } else {
            match measure_latency(&topo, left, g) {
                Ok((m, note)) => {
                    latency = Some(m);
                    skipped.extend(note);
                }
                Err(e) => skipped.push(e),
            }
        }
    }
    let tree = latency.as_ref().map(domains);
    let sugg = suggestions(&topo, latency.as_ref(), tree.as_ref(), speed.as_ref());
    let data = ReportData {
        pinsight_version: env!("CARGO_PKG_VERSION").to_string(),
        generated_unix: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        hostname: hostname(g),
        budget_s: args.budget.as_secs_f64(),
        elapsed_s: started.elapsed().as_secs_f64(),
        topology: topo,
        latency,
        domains: tree,
        speed,
        skipped,
        suggestions: sugg,
    };
    let html_path = args.out.with_extension("html");
    let json_path = args.out.with_extension("json");
    let json = serde_json::to_string_pretty(&data).map_err(|e| CliError::runtime(format!("JSON: {e}")))?;
    std::fs::write(&json_path, json + "\n").map_err(|e| CliError::runtime(format!("{}: {e}", json_path.display())))?;
    std::fs::write(&html_path, html(&data)).map_err(|e| CliError::runtime(format!("{}: {e}", html_path.display())))?;
    if g.json {
        g.print_json(&data)?;
        return Ok(0);
    }
    let t = &data.topology;
    println!(
        "{} — {} CPUs online, {} usable, {} core kind{}",
        t.model_name.as_deref().unwrap_or("unknown CPU"),
        t.online().len(),
        t.usable().len(),
        t.kinds.len(),
        if t.kinds.len() == 1 { "" } else { "s" }
    );
    for s in &data.suggestions {
        println!("  * {s}");
    }
    for s in &data.skipped {
        println!("  - {s}");
    }
    println!("Report: {} and {} ({:.1} s)", html_path.display(), json_path.display(), data.elapsed_s);
    Ok(0)
}
