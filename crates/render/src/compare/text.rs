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
    out.push('\n');

    let base = r
        .baseline
        .as_ref()
        .and_then(|b| r.arms.iter().find(|a| &a.id == b))
        .map(|a| a.label.clone())
        .unwrap_or_default();
    if !r.arms.is_empty() {
        let heads: Vec<String> = r.arms.iter().map(|a| a.label.clone()).collect();
        let row = |label: &str, right: bool, f: &dyn Fn(&ArmReport) -> String| Row {
            label: label.to_string(),
            cells: r.arms.iter().map(f).collect(),
            right,
        };
        let ranks = is_ranks(r);
        let mut rows = if ranks {
            // Each arm is a slicing rule: the launcher's ranks place
            // themselves, and the time is the slowest rank's.
            vec![
                row("Ranks", true, &|a| {
                    a.ranks
                        .as_ref()
                        .map_or(String::new(), |k| k.ranks.to_string())
                }),
                row("Launcher wall (median)", true, &|a| {
                    a.ranks.as_ref().map_or(String::new(), |k| {
                        pinsight_compare::metrics::format_seconds(k.launcher_wall_median_s)
                    })
                }),
                row("Rank spread (med, max)", false, &|a| {
                    a.ranks
                        .as_ref()
                        .and_then(|k| {
                            Some(format!("{:.2}×, {:.2}×", k.spread_median?, k.spread_max?))
                        })
                        .unwrap_or_default()
                }),
            ]
        } else {
            vec![
                row("Placement", false, &|a| a.placement.clone()),
                row("Threads", true, &|a| a.threads.to_string()),
                row("Exports", false, &|a| {
                    a.env
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }),
            ]
        };
        rows.extend([
            row("Runs", true, &|a| {
                if a.failed.is_empty() {
                    a.measured.to_string()
                } else {
                    format!("{} ({} failed)", a.measured, a.failed.len())
                }
            }),
            row(
                if ranks {
                    "Slowest rank (mean ± σ)"
                } else {
                    "Time (mean ± σ)"
                },
                true,
                &time_cell,
            ),
            row("95% CI of mean", false, &ci_cell),
            row("Range (min … max)", false, &range_cell),
            row(&format!("vs {base}"), false, &|a| versus_cell(a, r)),
            row("Test", false, &p_cell),
        ]);
        for k in program_keys(r) {
            rows.extend([
                row(&format!("{k} (mean ± σ)"), true, &|a| {
                    a.metric(&k).map(|m| show_mean(m, true)).unwrap_or_default()
                }),
                row(&format!("{k} 95% CI"), false, &|a| metric_ci_cell(a, &k)),
                row(&format!("{k} vs {base}"), false, &|a| {
                    metric_versus_cell(a, r, &k)
                }),
            ]);
        }
        out.push_str(&grid("Arm", &heads, &rows, width));
    }
    for (what, reason) in not_applicable_groups(r) {
        out.push_str(&hanging(
            "  ",
            &format!("{what}: not applicable here: {reason}"),
            4,
            width,
        ));
    }

    let keys = shown_keys(r);
    if !keys.is_empty() && !r.arms.is_empty() {
        let heads: Vec<String> = r.arms.iter().map(|a| a.label.clone()).collect();
        let mut rows = Vec::new();
        for k in &keys {
            let Some(first) = r.arms[0].metric(k) else {
                continue;
            };
            let mut label = first.def.label.clone();
            if first.def.rate {
                label.push_str(" (harmonic mean)");
            }
            rows.push(Row {
                label,
                cells: r
                    .arms
                    .iter()
                    .map(|a| a.metric(k).map(|m| show_mean(m, true)).unwrap_or_default())
                    .collect(),
                right: true,
            });
        }
        out.push('\n');
        out.push_str(&grid("Metric (mean ± σ)", &heads, &rows, width));
    }
    let groups = unavailable_groups(r);
    if !groups.is_empty() {
        out.push('\n');
        for (labels, reason) in groups {
            out.push_str(&hanging(
                "  ",
                &format!("{labels}: unavailable ({reason})"),
                4,
                width,
            ));
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
        out.push_str(&hanging("  note: ", &n, 8, width));
    }

    out.push('\n');
    out.push_str(&verdict_text(r, width, word));
    out
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
