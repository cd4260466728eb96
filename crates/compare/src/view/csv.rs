//! CSV export: one row per arm (applicable or not), summary columns for
//! every metric. Unavailable values are empty cells, never 0. A metric
//! unavailable in every arm has its reason once, in a `#` comment line
//! before the header (`# cycles, IPC: unavailable in every arm (no
//! hardware PMU: ...)`; pandas reads it with `comment='#'`), not in every
//! row; the `<metric>_unavailable` column holds only reasons that differ
//! between arms (e.g. some runs without a value).

use super::*;

pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x}"))
}

/// The summary columns of every metric, after its key.
const METRIC_COLUMNS: [&str; 11] = [
    "mean",
    "stddev",
    "median",
    "min",
    "max",
    "ci_lo",
    "ci_hi",
    "ci_method",
    "hmean",
    "gmean",
    "unavailable",
];

/// The comparison columns of every program metric, after its key.
const PROGRAM_COLUMNS: [&str; 5] = [
    "ratio_vs_baseline",
    "ratio_ci_lo",
    "ratio_ci_hi",
    "p_value",
    "significant",
];

/// Renders the report as CSV.
pub fn render(r: &Report) -> String {
    let keys: Vec<String> = r
        .arms
        .first()
        .map(|a| a.metrics.iter().map(|m| m.def.key.clone()).collect())
        .unwrap_or_default();
    let programs = program_keys(r);
    let head = header(&keys, &programs);
    let mut out = String::new();
    for (labels, reason) in unavailable_groups(r) {
        let line = format!("# {labels}: unavailable in every arm ({reason})");
        out.push_str(&line.replace(['\n', '\r'], " "));
        out.push('\n');
    }
    push_row(&mut out, &head);
    for a in &r.arms {
        let mut row = arm_columns(a);
        for k in &keys {
            row.extend(metric_columns(r, a, k));
        }
        for k in &programs {
            row.extend(program_columns(a, k));
        }
        push_row(&mut out, &row);
    }
    for na in &r.not_applicable {
        let mut row = vec![
            field(&na.what),
            field(&na.what),
            String::new(),
            "false".into(),
            field(&na.reason),
        ];
        row.resize(head.len(), String::new());
        push_row(&mut out, &row);
    }
    out
}

/// One line of the file: the cells joined by commas.
fn push_row(out: &mut String, row: &[String]) {
    out.push_str(&row.join(","));
    out.push('\n');
}

/// The header: the arm's columns, then each metric's `keys` summary
/// columns, then each program metric's comparison columns.
fn header(keys: &[String], programs: &[String]) -> Vec<String> {
    let mut head: Vec<String> = [
        "arm",
        "policy",
        "governor",
        "applicable",
        "reason",
        "placement",
        "runs",
        "failed_runs",
        "speedup_vs_baseline",
        "speedup_ci_lo",
        "speedup_ci_hi",
        "p_value",
        "test",
        "significant",
        "energy_ratio_vs_baseline",
        "edp_change_percent",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for k in keys {
        head.extend(METRIC_COLUMNS.iter().map(|s| format!("{k}_{s}")));
    }
    for k in programs {
        head.extend(PROGRAM_COLUMNS.iter().map(|s| format!("{k}_{s}")));
    }
    head
}

/// An applicable arm's own columns: what it is, its runs, and its time and
/// energy against the baseline.
fn arm_columns(a: &ArmReport) -> Vec<String> {
    let v = a.time_vs_baseline.as_ref();
    vec![
        field(&a.id),
        field(&a.policy),
        field(a.governor.as_deref().unwrap_or("")),
        "true".into(),
        String::new(),
        field(&a.placement),
        a.measured.to_string(),
        a.failed.len().to_string(),
        num(v.map(|v| v.ratio)),
        num(v.and_then(|v| v.ratio_ci).map(|c| c.lo)),
        num(v.and_then(|v| v.ratio_ci).map(|c| c.hi)),
        num(v.and_then(|v| v.p)),
        v.map_or(String::new(), |v| match v.test {
            pinsight_stats::TestKind::Welch => "welch".to_string(),
            pinsight_stats::TestKind::MannWhitney => "mann_whitney".to_string(),
        }),
        v.map_or(String::new(), |v| v.significant.to_string()),
        num(a.energy_vs_baseline.as_ref().map(|e| e.ratio)),
        num(a.edp_change_percent),
    ]
}

/// Metric `k`'s summary columns for arm `a` (see [`METRIC_COLUMNS`]).
fn metric_columns(r: &Report, a: &ArmReport, k: &str) -> [String; 11] {
    let m = a.metric(k);
    let s = m.and_then(|m| m.summary.as_ref());
    // Said once in a comment line when it holds for every arm.
    let everywhere = unavailable_everywhere(&r.arms, k).is_some();
    [
        num(s.map(|s| s.mean)),
        num(s.and_then(|s| s.stddev)),
        num(s.map(|s| s.median)),
        num(s.map(|s| s.min)),
        num(s.map(|s| s.max)),
        num(s.and_then(|s| s.mean_ci).map(|c| c.lo)),
        num(s.and_then(|s| s.mean_ci).map(|c| c.hi)),
        s.and_then(|s| s.mean_ci.and(s.mean_ci_method))
            .map_or(String::new(), |m| m.label().to_string()),
        num(s.and_then(|s| s.harmonic_mean)),
        num(s.and_then(|s| s.geometric_mean)),
        field(
            m.and_then(|m| m.unavailable.as_deref())
                .filter(|_| !everywhere)
                .unwrap_or(""),
        ),
    ]
}

/// Program metric `k`'s comparison columns for arm `a` (see
/// [`PROGRAM_COLUMNS`]).
fn program_columns(a: &ArmReport, k: &str) -> [String; 5] {
    let v = a
        .metrics_vs_baseline
        .iter()
        .find(|m| m.key == k)
        .map(|m| &m.versus);
    [
        num(v.map(|v| v.ratio)),
        num(v.and_then(|v| v.ratio_ci).map(|c| c.lo)),
        num(v.and_then(|v| v.ratio_ci).map(|c| c.hi)),
        num(v.and_then(|v| v.p)),
        v.map_or(String::new(), |v| v.significant.to_string()),
    ]
}
