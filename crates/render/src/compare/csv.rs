//! CSV export: one row per arm (applicable or not), summary columns for
//! every metric. Unavailable values are empty cells, never 0. A metric
//! unavailable in every arm has its reason once, in a `#` comment line
//! before the header (`# cycles, IPC: unavailable in every arm (no
//! hardware PMU: ...)`; pandas reads it with `comment='#'`), not in every
//! row; the `<metric>_unavailable` column holds only reasons that differ
//! between arms (e.g. some runs without a value).

use super::*;

pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x}"))
}

/// Renders the report as CSV.
pub fn render(r: &Report) -> String {
    let keys: Vec<String> = r
        .arms
        .first()
        .map(|a| a.metrics.iter().map(|m| m.def.key.clone()).collect())
        .unwrap_or_default();
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
    for k in &keys {
        for s in [
            "mean",
            "stddev",
            "median",
            "min",
            "max",
            "ci_lo",
            "ci_hi",
            "hmean",
            "unavailable",
        ] {
            head.push(format!("{k}_{s}"));
        }
    }
    let programs = program_keys(r);
    for k in &programs {
        for s in [
            "ratio_vs_baseline",
            "ratio_ci_lo",
            "ratio_ci_hi",
            "p_value",
            "significant",
        ] {
            head.push(format!("{k}_{s}"));
        }
    }
    let mut out = String::new();
    for (labels, reason) in unavailable_groups(r) {
        let line = format!("# {labels}: unavailable in every arm ({reason})");
        out.push_str(&line.replace(['\n', '\r'], " "));
        out.push('\n');
    }
    out.push_str(&head.join(","));
    out.push('\n');
    for a in &r.arms {
        let v = a.time_vs_baseline.as_ref();
        let mut row = vec![
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
        ];
        for k in &keys {
            let m = a.metric(k);
            let s = m.and_then(|m| m.summary.as_ref());
            row.push(num(s.map(|s| s.mean)));
            row.push(num(s.and_then(|s| s.stddev)));
            row.push(num(s.map(|s| s.median)));
            row.push(num(s.map(|s| s.min)));
            row.push(num(s.map(|s| s.max)));
            row.push(num(s.and_then(|s| s.mean_ci).map(|c| c.lo)));
            row.push(num(s.and_then(|s| s.mean_ci).map(|c| c.hi)));
            row.push(num(s.and_then(|s| s.harmonic_mean)));
            // Said once in a comment line when it holds for every arm.
            let everywhere = unavailable_everywhere(&r.arms, k).is_some();
            row.push(field(
                m.and_then(|m| m.unavailable.as_deref())
                    .filter(|_| !everywhere)
                    .unwrap_or(""),
            ));
        }
        for k in &programs {
            let v = a
                .metrics_vs_baseline
                .iter()
                .find(|m| &m.key == k)
                .map(|m| &m.versus);
            row.push(num(v.map(|v| v.ratio)));
            row.push(num(v.and_then(|v| v.ratio_ci).map(|c| c.lo)));
            row.push(num(v.and_then(|v| v.ratio_ci).map(|c| c.hi)));
            row.push(num(v.and_then(|v| v.p)));
            row.push(v.map_or(String::new(), |v| v.significant.to_string()));
        }
        out.push_str(&row.join(","));
        out.push('\n');
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
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}
