//! `pinsight workload`: run a built-in workload and print its figure of
//! merit, checksum and what each worker thread did.
//!
//! The workloads exist so `pinsight run`/`compare` can be tried without a
//! program of one's own: `pinsight run --plan ... -- pinsight workload pi`
//! pins the workers in creation order (worker i is place i + 1; the main
//! thread, place 0, only waits).

use crate::cli::{progress_bar, CliError, CmdResult, Globals};
use pinsight_cpuset::CpuSet;
use pinsight_workload::{
    check, names, parse_size, run_with_progress, Outcome, Params, Schedule, WorkloadError,
    WORKLOADS,
};
use std::fmt::Write;

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
    let pb = progress_bar(g, 0, name);
    let outcome = run_with_progress(name, &params, &|p| {
        pb.set_length(p.total);
        pb.set_position(p.done);
    });
    pb.finish_and_clear();
    let outcome = outcome.map_err(|e| CliError::runtime(workload_error_message(&e)))?;
    if g.json {
        g.print_json(&outcome)?;
    } else {
        print!("{}", render(&outcome));
    }
    Ok(0)
}

fn list(g: &Globals) -> CmdResult {
    if g.json {
        g.print_json(&WORKLOADS)?;
        return Ok(0);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<11} {:<34} {:<14} SCHEDULES",
        "NAME", "SIZE (--size)", "DEFAULT SIZE"
    );
    for w in WORKLOADS {
        let schedules = if w.schedules.is_empty() {
            "-".to_string()
        } else {
            w.schedules
                .iter()
                .map(|s| {
                    if Some(*s) == w.default_schedule {
                        format!("{s} (default)")
                    } else {
                        s.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "{:<11} {:<34} {:<14} {}",
            w.name, w.size_meaning, w.default_size, schedules
        );
        let _ = writeln!(out, "{:<11} {}", "", w.summary);
    }
    print!("{out}");
    Ok(0)
}

/// The human report: a hyperfine-like headline, then one row per worker.
/// A workload error as the CLI says it, naming the flag to change.
fn workload_error_message(e: &WorkloadError) -> String {
    match e {
        WorkloadError::ZeroThreads => "--threads must be at least 1".to_string(),
        WorkloadError::TooManyThreads { threads, max } => {
            format!("--threads {threads} is too many (at most {max})")
        }
        WorkloadError::SizeOutOfRange {
            workload,
            size,
            meaning,
            max,
        } => format!("{workload}: --size {size} is out of range: {meaning} must be 1..={max}"),
        WorkloadError::NoSchedule {
            workload,
            reason,
            takers,
            ..
        } => format!(
            "workload '{workload}' does not take --schedule ({reason}); --schedule applies to: {}",
            takers.join(", ")
        ),
        WorkloadError::MaxIterNotApplicable { workload } => {
            format!("--max-iter applies to mandelbrot only, not '{workload}'")
        }
        WorkloadError::ZeroMaxIter => "mandelbrot: --max-iter must be at least 1".to_string(),
        WorkloadError::Singular => {
            "lu: the generated matrix is singular (a zero pivot); try another --size".to_string()
        }
        other => other.to_string(),
    }
}

fn render(o: &Outcome) -> String {
    let mut out = String::new();
    let schedule = o
        .schedule
        .map(|s| format!(", schedule {s}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}: {} {}",
        o.workload,
        figure(o.figure_of_merit),
        o.unit
    );
    let _ = writeln!(
        out,
        "  Time:      {:.3} s   ({}, {} thread{}{schedule})",
        o.elapsed.as_secs_f64(),
        size_text(o),
        o.threads,
        if o.threads == 1 { "" } else { "s" },
    );
    let _ = writeln!(out, "  Checksum:  {} ({})", checksum(o), o.checksum_meaning);
    for d in &o.details {
        let unit = if d.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", d.unit)
        };
        let _ = writeln!(out, "  {}: {}{unit}", d.name, figure(d.value));
    }
    let total: u64 = o.per_thread.iter().map(|t| t.work_units).sum();
    let show_steals = o.schedule == Some(Schedule::Steal);
    let _ = writeln!(
        out,
        "\n  {:>6}  {:<10} {:>16} {:>7} {:>10}{}",
        "thread",
        "cpus seen",
        o.work_unit,
        "share",
        "busy",
        if show_steals { "  steals" } else { "" }
    );
    for t in &o.per_thread {
        let cpus: CpuSet = t.cpu_seen.iter().copied().collect();
        let cpus = if cpus.is_empty() {
            "unavailable".to_string()
        } else {
            cpus.to_string()
        };
        let share = if total > 0 {
            100.0 * t.work_units as f64 / total as f64
        } else {
            0.0
        };
        let steals = if show_steals {
            format!("  {:>6}", t.steals)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {:>6}  {:<10} {:>16} {:>6.1}% {:>8.3} s{steals}",
            t.index,
            cpus,
            t.work_units,
            share,
            t.busy.as_secs_f64()
        );
    }
    if let Some(imbalance) = o.imbalance().filter(|_| o.threads > 1) {
        let _ = writeln!(
            out,
            "  Imbalance: {imbalance:.2} (slowest worker's busy time / mean; 1.00 = even)"
        );
    }
    out
}

/// What the size knob meant for this run, in words.
fn size_text(o: &Outcome) -> String {
    match o.workload {
        "pi" => format!("{} steps", o.size),
        "mandelbrot" => format!("{0}×{0} pixels", o.size),
        "lu" => format!("{0}×{0} matrix", o.size),
        "pingpong" => format!("{} round trips", o.size),
        _ => format!("size {}", o.size),
    }
}

/// Every digit: integers for counts, the shortest exact form otherwise (so
/// two runs' checksums can be compared by eye).
fn checksum(o: &Outcome) -> String {
    if o.checksum.fract() == 0.0 && o.checksum.abs() < 1e15 {
        format!("{}", o.checksum as i64)
    } else {
        format!("{}", o.checksum)
    }
}

/// Three significant figures at least, no exponent for everyday magnitudes.
fn figure(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if v.fract() == 0.0 && a < 1e15 {
        format!("{}", v as i64)
    } else if !(1e-3..1e9).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_shows_each_thread_and_the_checksum() {
        let o = pinsight_workload::run(
            "pi",
            &Params {
                threads: Some(2),
                size: Some(100_000),
                schedule: Some(Schedule::Steal),
                max_iter: None,
            },
        )
        .unwrap();
        let text = render(&o);
        assert!(text.starts_with("pi: "), "{text}");
        assert!(text.contains("Checksum:  3.14159265"), "{text}");
        assert!(
            text.contains("schedule steal") && text.contains("steals"),
            "{text}"
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with(['0', '1']))
                .count(),
            2,
            "{text}"
        );
        assert!(text.contains("Imbalance:"));
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(figure(1234.56), "1234.6");
        assert_eq!(figure(1.23456), "1.235");
        assert_eq!(figure(1.2e-7), "1.200e-7");
        assert_eq!(figure(0.0), "0");
        assert_eq!(figure(382.0), "382");
    }
}
