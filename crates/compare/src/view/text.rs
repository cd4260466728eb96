//! The terminal output: a summary table (one column per arm: placement,
//! threads, exported variables, time, CI, comparison with the baseline), a
//! per-metric table (metrics as rows, arms as columns, like `perf stat`
//! side by side), the unavailable metrics with their reasons, and the
//! verdict. Everything fits the given width (80 columns by default).

use super::layout::{grid, hanging, Row};
use super::*;

/// Renders the report as text (no colour codes), every line at most
/// `width` columns (see [`super::layout::effective_width`]): tables have
/// one column per arm and are cut into several when the arms do not fit.
pub fn render(r: &Report, width: usize, word: Word) -> String {
    let mut out = header_text(r, width, word);
    out.push('\n');
    if !r.arms.is_empty() {
        out.push_str(&grid("Arm", &arm_heads(r), &summary_rows(r), width));
    }
    for (what, reason) in not_applicable_groups(r) {
        out.push_str(&hanging(
            "  ",
            &format!("{what}: not applicable here: {reason}"),
            4,
            width,
        ));
    }
    out.push_str(&metric_table(r, width));
    out.push_str(&unavailable_text(r, width));
    out.push_str(&notes_text(r, width));
    out.push('\n');
    out.push_str(&verdict_text(r, width, word));
    out
}

/// The header lines: command, prepare, design, launcher, status, machine.
fn header_text(r: &Report, width: usize, word: Word) -> String {
    let mut out = String::new();
    let h = &r.header;
    out.push_str(&hanging("Command:  ", &h.command.join(" "), 10, width));
    if let Some(p) = &h.prepare {
        out.push_str(&hanging("Prepare:  ", p, 10, width));
    }
    out.push_str(&hanging("Design:   ", &design_line(r), 10, width));
    if let Some(l) = launcher_line(r) {
        out.push_str(&hanging("Launcher: ", &l, 10, width));
    }
    out.push_str(&hanging("Status:   ", &status_line(r, word), 10, width));
    let m = &h.machine;
    out.push_str(&hanging(
        "Machine:  ",
        &format!(
            "{} ({} usable CPUs: {}{})",
            m.model_name.as_deref().unwrap_or("unknown CPU"),
            m.usable_cpus.len(),
            m.usable_cpus,
            if m.kinds.len() > 1 {
                format!("; kinds {}", m.kinds_text())
            } else {
                String::new()
            }
        ),
        10,
        width,
    ));
    out
}

/// The column heads of the arm tables: one label per arm.
fn arm_heads(r: &Report) -> Vec<String> {
    r.arms.iter().map(|a| a.label.clone()).collect()
}

/// One table row: `label`, then `f` of every arm.
fn arm_row(r: &Report, label: &str, right: bool, f: &dyn Fn(&ArmReport) -> String) -> Row {
    Row {
        label: label.to_string(),
        cells: r.arms.iter().map(f).collect(),
        right,
    }
}

/// The rows of the summary table: what each arm is, then its time and
/// comparison with the baseline, then the program's own metrics.
fn summary_rows(r: &Report) -> Vec<Row> {
    let base = r
        .baseline
        .as_ref()
        .and_then(|b| r.arms.iter().find(|a| &a.id == b))
        .map(|a| a.label.clone())
        .unwrap_or_default();
    let ranks = is_ranks(r);
    let mut rows = if ranks {
        rank_rows(r)
    } else {
        placement_rows(r)
    };
    rows.extend(time_rows(r, ranks, &base));
    for k in program_keys(r) {
        rows.extend(program_rows(r, &k, &base));
    }
    rows
}

/// What each arm is when it is a slicing rule: the launcher's ranks place
/// themselves, and the time is the slowest rank's.
fn rank_rows(r: &Report) -> Vec<Row> {
    vec![
        arm_row(r, "Ranks", true, &|a| {
            a.ranks
                .as_ref()
                .map_or(String::new(), |k| k.ranks.to_string())
        }),
        arm_row(r, "Launcher wall (median)", true, &|a| {
            a.ranks.as_ref().map_or(String::new(), |k| {
                crate::metrics::format_seconds(k.launcher_wall_median_s)
            })
        }),
        arm_row(r, "Rank spread (med, max)", false, &|a| {
            a.ranks
                .as_ref()
                .and_then(|k| Some(format!("{:.2}×, {:.2}×", k.spread_median?, k.spread_max?)))
                .unwrap_or_default()
        }),
    ]
}

/// What each arm is otherwise: placement, threads and exported variables.
fn placement_rows(r: &Report) -> Vec<Row> {
    vec![
        arm_row(r, "Placement", false, &|a| a.placement.clone()),
        arm_row(r, "Threads", true, &|a| a.threads.to_string()),
        arm_row(r, "Exports", false, &|a| exports_text(&a.env)),
    ]
}

/// The runs, the time with its CI and range, and the comparison with the
/// baseline `base`.
fn time_rows(r: &Report, ranks: bool, base: &str) -> Vec<Row> {
    vec![
        arm_row(r, "Runs", true, &|a| {
            if a.failed.is_empty() {
                a.measured.to_string()
            } else {
                format!("{} ({} failed)", a.measured, a.failed.len())
            }
        }),
        arm_row(
            r,
            if ranks {
                "Slowest rank (mean ± σ)"
            } else {
                "Time (mean ± σ)"
            },
            true,
            &time_cell,
        ),
        arm_row(r, "95% CI", false, &ci_cell),
        arm_row(r, "Range (min … max)", false, &range_cell),
        arm_row(r, &format!("vs {base}"), false, &|a| versus_cell(a, r)),
        arm_row(r, "Test", false, &p_cell),
    ]
}

/// The program's metric `k`: its mean, CI and comparison with `base`.
fn program_rows(r: &Report, k: &str, base: &str) -> [Row; 3] {
    [
        arm_row(r, &format!("{k} (mean ± σ)"), true, &|a| {
            a.metric(k).map(|m| show_mean(m, true)).unwrap_or_default()
        }),
        arm_row(r, &format!("{k} 95% CI"), false, &|a| metric_ci_cell(a, k)),
        arm_row(r, &format!("{k} vs {base}"), false, &|a| {
            metric_versus_cell(a, r, k)
        }),
    ]
}

/// The per-metric table (metrics as rows, arms as columns), after a blank
/// line; empty without shown metrics or arms.
fn metric_table(r: &Report, width: usize) -> String {
    let keys = shown_keys(r);
    if keys.is_empty() || r.arms.is_empty() {
        return String::new();
    }
    let mut rows = Vec::new();
    for k in &keys {
        let Some(first) = r.arms[0].metric(k) else {
            continue;
        };
        let mut label = first.def.label.clone();
        if first.def.rate {
            label.push_str(" (harmonic mean)");
        }
        rows.push(arm_row(r, &label, true, &|a| {
            a.metric(k).map(|m| show_mean(m, true)).unwrap_or_default()
        }));
    }
    format!(
        "\n{}",
        grid("Metric (mean ± σ)", &arm_heads(r), &rows, width)
    )
}

/// The metrics unavailable here with their reasons, after a blank line;
/// empty when every metric is available.
fn unavailable_text(r: &Report, width: usize) -> String {
    let groups = unavailable_groups(r);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n");
    for (labels, reason) in groups {
        out.push_str(&hanging(
            "  ",
            &format!("{labels}: unavailable ({reason})"),
            4,
            width,
        ));
    }
    out
}

/// Every distinct note of every arm's metrics, in order of first mention.
fn notes_text(r: &Report, width: usize) -> String {
    let mut notes: Vec<String> = ci_methods_note(r).into_iter().collect();
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
    notes
        .iter()
        .map(|n| hanging("  note: ", n, 8, width))
        .collect()
}

/// The verdict block: headline, evidence, caveats.
pub fn verdict_text(r: &Report, width: usize, word: Word) -> String {
    let v = &r.verdict;
    let mut out = hanging("Verdict: ", &v.headline, 9, width);
    for e in &v.evidence {
        out.push_str(&hanging("  • ", e, 4, width));
    }
    for c in &v.caveats {
        out.push_str(&hanging("  ! ", &c.worded(word), 4, width));
    }
    out
}
