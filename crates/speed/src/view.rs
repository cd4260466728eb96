//! `pinsight speed`'s human output: a row per CPU with each kernel's
//! median and its confidence half-width, then the speedup factors between
//! core kinds (measured, and as predicted by max frequency and capacity).

use crate::{CpuSpeed, Kernel, SlotPlan, SpeedReport};
use pinsight_model::Topology;
use std::fmt::Write;

/// Human output: a row per CPU, then the speedup factors.
pub fn render(topo: &Topology, r: &SpeedReport) -> String {
    let mut out = headline(r);
    writeln!(out, "{}", cpu_table(topo, r).trim_fmt()).ok();
    out.push_str(&caveats(r));
    if r.speedups.is_empty() {
        out.push_str(&one_kind_line(r));
        return out;
    }
    writeln!(out, "Speedup factor (faster kind / slower kind):").ok();
    for line in speedup_table(topo, r).trim_fmt().lines() {
        writeln!(out, "  {line}").ok();
    }
    out
}

/// The first line: CPUs, kernels, budget, passes and time taken.
fn headline(r: &SpeedReport) -> String {
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name()).collect();
    format!(
        "Speed of {} CPU{}: kernels {}; {} per CPU in {} interleaved pass{} ({}){}; took {:.1} s\n",
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
}

/// A borderless table whose columns from `first_right` on are aligned
/// right.
fn table(header: Vec<String>, rows: Vec<Vec<String>>, first_right: usize) -> comfy_table::Table {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_header(header);
    for row in rows {
        table.add_row(row);
    }
    for col in first_right..table.column_count() {
        if let Some(c) = table.column_mut(col) {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    table
}

/// The name of the core kind of CPU `c`, `-` when unknown.
pub fn kind_name(topo: &Topology, c: &CpuSpeed) -> String {
    c.kind
        .and_then(|k| topo.kinds.get(k))
        .map(|k| k.name.clone())
        .unwrap_or_else(|| "-".into())
}

/// A predicted speedup factor, `unknown` when there is none.
pub fn predicted(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}"))
        .unwrap_or_else(|| "unknown".into())
}

/// A row per CPU: its kind, each kernel's median ± CI, its relative speed.
fn cpu_table(topo: &Topology, r: &SpeedReport) -> comfy_table::Table {
    let mut header = vec!["CPU".to_string(), "kind".to_string()];
    for k in &r.kernels {
        header.push(format!("{} {}", k.name(), k.unit()));
    }
    header.push("relative".into());
    let rows = r
        .cpus
        .iter()
        .map(|c| {
            let mut row = vec![c.cpu.to_string(), kind_name(topo, c)];
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
            row
        })
        .collect();
    table(header, rows, 2)
}

/// `(timed chunks, chunks left out as disturbed)` over every CPU and
/// kernel.
pub fn chunk_counts(r: &SpeedReport) -> (usize, usize) {
    let results = || r.cpus.iter().flat_map(|c| &c.results);
    (
        results().map(|k| k.chunks).sum(),
        results().map(|k| k.disturbed).sum(),
    )
}

/// Whether any figure was taken mostly from disturbed chunks.
pub fn any_disturbed_included(r: &SpeedReport) -> bool {
    r.cpus
        .iter()
        .flat_map(|c| &c.results)
        .any(|k| k.disturbed_included)
}

/// The lines under the CPU table: disturbed and misplaced chunks, the SMT
/// yield.
fn caveats(r: &SpeedReport) -> String {
    let mut out = String::new();
    let (chunks, disturbed) = chunk_counts(r);
    if disturbed > 0 {
        writeln!(
            out,
            "{disturbed} of {chunks} timed chunks ({:.0}%) were descheduled by other load and left out.",
            disturbed as f64 * 100.0 / chunks.max(1) as f64
        )
        .ok();
    }
    if any_disturbed_included(r) {
        writeln!(out, "warning: '!' marks figures taken mostly from disturbed chunks (the machine is busy): read them as lower bounds").ok();
    }
    if let Some(y) = &r.smt_yield {
        match (y.value, &y.unavailable) {
            (Some(v), _) => writeln!(
                out,
                "SMT yield {v:.2}: two busy siblings (CPUs {}) run {:.2} times one thread's work (plan balance --smt-yield {v:.2})",
                y.cpus.as_deref().unwrap_or("?"),
                1.0 + v
            )
            .ok(),
            (None, Some(why)) => writeln!(out, "SMT yield: unavailable: {why}").ok(),
            (None, None) => None,
        };
    }
    let misplaced: usize = r.cpus.iter().map(|c| c.misplaced_chunks).sum();
    if misplaced > 0 {
        writeln!(out, "warning: {misplaced} timed chunks ran on another CPU than asked (left out): pinning did not hold").ok();
    }
    out
}

/// The line in place of the speedup table when one core kind was
/// measured, with the spread between CPUs when there are several.
fn one_kind_line(r: &SpeedReport) -> String {
    let rel: Vec<f64> = r
        .cpus
        .iter()
        .map(|c| c.relative)
        .filter(|v| v.is_finite())
        .collect();
    let spread = (1.0 - rel.iter().cloned().fold(f64::INFINITY, f64::min)) * 100.0;
    if rel.len() > 1 {
        format!(
            "One core kind measured: no speedup factor to report. The slowest CPU is {spread:.1}% below the fastest.\n"
        )
    } else {
        "One core kind measured: no speedup factor to report.\n".to_string()
    }
}

/// The speedup factor of each pair of kinds and kernel: measured and
/// predicted.
fn speedup_table(topo: &Topology, r: &SpeedReport) -> comfy_table::Table {
    let header = [
        "kinds",
        "kernel",
        "measured",
        "by max frequency",
        "by capacity",
    ]
    .map(String::from)
    .to_vec();
    let rows = r
        .speedups
        .iter()
        .map(|p| {
            let f = &topo.kinds[p.fast_kind];
            let s = &topo.kinds[p.slow_kind];
            vec![
                format!("{} / {}", f.name, s.name),
                p.kernel.name().to_string(),
                format!("{:.2}", p.measured),
                predicted(p.predicted_by_frequency),
                predicted(p.predicted_by_capacity),
            ]
        })
        .collect();
    table(header, rows, 2)
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
