//! The HTML export: one self-contained file (inline CSS and SVG, no
//! scripts, nothing fetched) with the verdict, the summary tables, a box
//! plot per metric and arm, and bars of the mean with their 95 % CI.

use super::svg::{bars_with_ci, box_plot, Series};
use super::*;
use crate::analysis::measured_values;
use crate::verdict::Decision;

use pinsight_term::escape as esc;

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.8em}table{border-collapse:collapse;margin:1em 0}\
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}td.n{text-align:right;white-space:nowrap}\
.verdict{background:#eef6ee;border-left:5px solid #3a3;padding:.8em 1em}.verdict.keep{background:#f3f3f3;border-color:#888}\
.na{color:#777}.warn{color:#a50}code{background:#f4f4f4;padding:1px 4px}figure{margin:1em 0}figcaption{font-size:.9em;color:#555}";

/// Renders the report as one HTML page.
pub fn render(r: &Report, word: Word) -> String {
    let chosen = match &r.verdict.decision {
        Decision::Use { arm } => Some(arm.clone()),
        _ => None,
    };
    let mut o = page_head(r);
    o.push_str(&verdict_block(r, word, chosen.is_some()));
    o.push_str(&context_line(r, word));
    o.push_str(&summary_table(r));
    // Charts: wall time first, then every metric with values.
    let mut keys = vec!["wall_s".to_string()];
    keys.extend(shown_keys(r));
    for k in &keys {
        o.push_str(&metric_charts(r, k, chosen.as_deref()));
    }
    o.push_str(&unavailable_list(r));
    o.push_str(&arms_and_capabilities(r));
    o
}

/// The document's head (title, style) and the page's heading.
fn page_head(r: &Report) -> String {
    let command = esc(&r.header.command.join(" "));
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    o.push_str(&format!(
        "<title>pinsight compare: {command}</title><style>{STYLE}</style></head><body>\n"
    ));
    o.push_str(&format!(
        "<h1>To pin or not to pin: <code>{command}</code></h1>\n"
    ));
    o
}

/// The verdict box: headline, evidence, caveats; grey when no arm is
/// `chosen`.
fn verdict_block(r: &Report, word: Word, chosen: bool) -> String {
    let mut o = format!(
        "<div class=\"verdict{}\"><strong>{}</strong><ul>",
        if chosen { "" } else { " keep" },
        esc(&r.verdict.headline)
    );
    for e in &r.verdict.evidence {
        o.push_str(&format!("<li>{}</li>", esc(e)));
    }
    for c in &r.verdict.caveats {
        o.push_str(&format!("<li class=\"warn\">{}</li>", esc(&c.worded(word))));
    }
    o.push_str("</ul></div>\n");
    o
}

/// The paragraph on the design, the status, the machine and the start.
fn context_line(r: &Report, word: Word) -> String {
    let h = &r.header;
    format!(
        "<p>{}. {}. Machine: {} — {} usable CPUs ({}){}; kernel {}. Started {}.</p>\n",
        esc(&design_line(r)),
        esc(&status_line(r, word)),
        esc(h.machine.model_name.as_deref().unwrap_or("unknown CPU")),
        h.machine.usable_cpus.len(),
        h.machine.usable_cpus,
        if h.machine.kinds.len() > 1 {
            format!("; kinds {}", esc(&h.machine.kinds_text()))
        } else {
            String::new()
        },
        esc(h.machine.kernel.as_deref().unwrap_or("unknown")),
        esc(&h.created)
    )
}

/// The wall-time table: one row per arm, then the arms not applicable.
fn summary_table(r: &Report) -> String {
    let base = r.baseline.clone().unwrap_or_default();
    let mut o = format!(
        "<h2>Wall time</h2><table><tr><th>Arm</th><th>Placement</th><th>Threads</th><th>Exports</th><th>Runs</th><th>Mean ± σ</th><th>95% CI</th><th>Range (min … max)</th><th>vs {}</th><th>Test</th></tr>\n",
        esc(&base)
    );
    for a in &r.arms {
        o.push_str(&summary_row(r, a));
    }
    for na in &r.not_applicable {
        o.push_str(&format!(
            "<tr class=\"na\"><td>{}</td><td colspan=\"9\">not applicable here: {}</td></tr>\n",
            esc(&na.what),
            esc(&na.reason)
        ));
    }
    o.push_str("</table>\n");
    if let Some(note) = ci_methods_note(r) {
        o.push_str(&format!("<p>{}</p>\n", esc(&note)));
    }
    o
}

/// One arm's row of the wall-time table.
fn summary_row(r: &Report, a: &ArmReport) -> String {
    format!(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        esc(&a.label),
        esc(&a.placement),
        a.threads,
        esc(&exports_text(&a.env)),
        a.measured,
        if a.failed.is_empty() { String::new() } else { format!(" ({} failed)", a.failed.len()) },
        esc(&time_cell(a)),
        esc(&ci_cell(a)),
        esc(&range_cell(a)),
        esc(&versus_cell(a, r)),
        esc(&p_cell(a))
    )
}

/// Metric `k`'s heading, box plot and CI bars, the `chosen` arm
/// highlighted; empty when no arm has a value of it.
fn metric_charts(r: &Report, k: &str, chosen: Option<&str>) -> String {
    let Some(m0) = r.arms.first().and_then(|a| a.metric(k)) else {
        return String::new();
    };
    let values: Vec<Vec<f64>> = r
        .arms
        .iter()
        .map(|a| measured_values(r, &a.id, k))
        .collect();
    if values.iter().all(Vec::is_empty) {
        return String::new();
    }
    let unit_s = m0
        .def
        .program
        .as_ref()
        .map_or(m0.def.unit.suffix(), |p| p.unit.as_str());
    let mut o = format!(
        "<h2>{}{}</h2>\n",
        esc(&m0.def.label),
        if unit_s.is_empty() {
            String::new()
        } else {
            format!(" ({unit_s})")
        }
    );
    let series: Vec<Series> = r
        .arms
        .iter()
        .zip(&values)
        .map(|(a, v)| Series {
            label: &a.label,
            values: v,
            highlight: chosen == Some(a.id.as_str()),
        })
        .collect();
    o.push_str("<figure>");
    o.push_str(&box_plot(&m0.def.label, m0.def.unit, &series));
    o.push_str("<figcaption>Box: quartiles; line: median; whiskers: last run within 1.5 IQR; dots: every run (red beyond the whiskers).</figcaption></figure>\n");
    let bars: Vec<(&str, &pinsight_stats::Summary, bool)> = r
        .arms
        .iter()
        .filter_map(|a| {
            let s = a.metric(k)?.summary.as_ref()?;
            Some((a.label.as_str(), s, chosen == Some(a.id.as_str())))
        })
        .collect();
    o.push_str("<figure>");
    o.push_str(&bars_with_ci(&m0.def.label, m0.def.unit, &bars));
    o.push_str(
        "<figcaption>Bar: the mean with its 95% Student-t interval (t) or, when every run is \
         positive, the geometric mean with its log-t interval (Student t on the logarithms, \
         back-transformed), which never goes below zero.</figcaption></figure>\n",
    );
    o
}

/// The metrics not measured here with their reasons; empty when every
/// metric was.
fn unavailable_list(r: &Report) -> String {
    let groups = unavailable_groups(r);
    if groups.is_empty() {
        return String::new();
    }
    let mut o = String::from("<h2>Not measured here</h2><ul>");
    for (labels, reason) in groups {
        o.push_str(&format!(
            "<li>{}: unavailable ({})</li>",
            esc(&labels),
            esc(&reason)
        ));
    }
    o.push_str("</ul>\n");
    o
}

/// The arms as planned, the machine's capabilities and the page's end.
fn arms_and_capabilities(r: &Report) -> String {
    let h = &r.header;
    let mut o = String::from("<h2>Arms</h2><ul>");
    for a in &h.arms {
        o.push_str(&format!(
            "<li><code>{}</code>: {}; environment: {}</li>",
            esc(&a.id),
            esc(&a.plan.describe()),
            esc(&exports_text(&a.env))
        ));
    }
    o.push_str("</ul>\n<h2>Machine capabilities</h2><ul>");
    for c in &h.machine.capabilities {
        o.push_str(&format!("<li>{}</li>", esc(c)));
    }
    o.push_str("</ul>\n<p>Generated by pinsight compare. Raw runs: see the JSON export or the journal.</p></body></html>\n");
    o
}
