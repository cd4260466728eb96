//! The human output of `pinsight workload`: the list of workloads and the
//! report of one run.

use crate::{Outcome, Schedule, WorkloadInfo};
use pinsight_cpuset::CpuSet;
use std::fmt::Write;

/// The table of `pinsight workload --list`: name, size meaning, default
/// size and schedules, the summary on a line of its own.
pub fn list(workloads: &[WorkloadInfo]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<11} {:<34} {:<14} SCHEDULES",
        "NAME", "SIZE (--size)", "DEFAULT SIZE"
    );
    for w in workloads {
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
    out
}

/// The human report of one run: a hyperfine-like headline, then one row
/// per worker.
pub fn report(o: &Outcome) -> String {
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
    use crate::Params;

    #[test]
    fn report_shows_each_thread_and_the_checksum() {
        let o = crate::run(
            "pi",
            &Params {
                threads: Some(2),
                size: Some(100_000),
                schedule: Some(Schedule::Steal),
                max_iter: None,
            },
        )
        .unwrap();
        let text = report(&o);
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
