//! The terminal output: a hyperfine-like summary table, a per-metric table
//! (metrics as rows, arms as columns, like `perf stat` side by side), the
//! unavailable metrics with their reasons, and the verdict.

use super::*;
use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};

/// Renders the report as text (no colour codes). `terminal`: fit the
/// tables to the terminal's width.
pub fn render(r: &Report, terminal: bool) -> String {
    let width = terminal;
    let mut out = String::new();
    let h = &r.header;
    out.push_str(&format!("Command:  {}\n", h.command.join(" ")));
    if let Some(p) = &h.prepare {
        out.push_str(&format!("Prepare:  {p}\n"));
    }
    out.push_str(&format!("Design:   {}\n", design_line(r)));
    out.push_str(&format!("Status:   {}\n", status_line(r)));
    let m = &h.machine;
    out.push_str(&format!(
        "Machine:  {} ({} usable CPUs: {}{})\n\n",
        m.model_name.as_deref().unwrap_or("unknown CPU"),
        m.usable_cpus.len(),
        m.usable_cpus,
        if m.kinds.len() > 1 {
            format!("; kinds {}", m.kinds.join(", "))
        } else {
            String::new()
        }
    ));

    let mut t = table(width);
    let base = r
        .baseline
        .as_ref()
        .and_then(|b| r.arms.iter().find(|a| &a.id == b))
        .map(|a| a.label.clone())
        .unwrap_or_default();
    t.set_header(vec![
        "Arm",
        "Placement",
        "Runs",
        "Time (mean ± σ)",
        "95% CI of mean",
        "Range (min … max)",
        &format!("vs {base}"),
        "Test",
    ]);
    for a in &r.arms {
        let runs = if a.failed.is_empty() {
            a.measured.to_string()
        } else {
            format!("{} ({} failed)", a.measured, a.failed.len())
        };
        t.add_row(vec![
            Cell::new(&a.label),
            Cell::new(&a.placement),
            Cell::new(runs).set_alignment(CellAlignment::Right),
            Cell::new(time_cell(a)).set_alignment(CellAlignment::Right),
            Cell::new(ci_cell(a)),
            Cell::new(range_cell(a)),
            Cell::new(versus_cell(a, r)),
            Cell::new(p_cell(a)),
        ]);
    }
    for na in &r.not_applicable {
        t.add_row(vec![
            Cell::new(&na.what),
            Cell::new("not applicable here (below)"),
        ]);
    }
    out.push_str(&t.to_string());
    out.push('\n');
    for (what, reason) in not_applicable_groups(r) {
        out.push_str(&format!("  {what}: not applicable here: {reason}\n"));
    }

    let keys = shown_keys(r);
    if !keys.is_empty() && !r.arms.is_empty() {
        let mut t = table(width);
        let mut head = vec!["Metric (mean ± σ)".to_string()];
        head.extend(r.arms.iter().map(|a| a.label.clone()));
        t.set_header(head);
        for k in &keys {
            let Some(first) = r.arms[0].metric(k) else {
                continue;
            };
            let mut label = first.def.label.clone();
            if first.def.rate {
                label.push_str(" (harmonic mean)");
            }
            let mut row = vec![Cell::new(label)];
            for a in &r.arms {
                let cell = a.metric(k).map(|m| show_mean(m, true)).unwrap_or_default();
                row.push(Cell::new(cell).set_alignment(CellAlignment::Right));
            }
            t.add_row(row);
        }
        out.push('\n');
        out.push_str(&t.to_string());
        out.push('\n');
    }
    let groups = unavailable_groups(r);
    if !groups.is_empty() {
        out.push('\n');
        for (labels, reason) in groups {
            out.push_str(&format!("  {labels}: unavailable ({reason})\n"));
        }
    }
    let mut notes: Vec<String> = Vec::new();
    for a in &r.arms {
        for m in &a.metrics {
            for n in &m.notes {
                let line = format!("{}: {n}", m.def.label);
                if !notes.contains(&line) {
                    notes.push(line);
                }
            }
        }
    }
    for n in notes {
        out.push_str(&format!("  note: {n}\n"));
    }

    out.push('\n');
    out.push_str(&verdict_text(r));
    out
}

/// The verdict block: headline, evidence, caveats.
pub fn verdict_text(r: &Report) -> String {
    let v = &r.verdict;
    let mut out = format!("Verdict: {}\n", v.headline);
    for e in &v.evidence {
        out.push_str(&format!("  • {e}\n"));
    }
    for c in &v.caveats {
        out.push_str(&format!("  ! {c}\n"));
    }
    out
}

fn table(terminal: bool) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_content_arrangement(if terminal {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    });
    t
}
