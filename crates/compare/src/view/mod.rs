//! Exports of a [`crate::Report`]: terminal tables (hyperfine-like), CSV,
//! Markdown and a self-contained HTML page with inline SVG charts. JSON is
//! the report itself (`serde_json`).

pub mod csv;
pub mod html;
pub mod layout;
pub mod markdown;
pub mod run;
pub mod svg;
pub mod text;

use crate::analysis::{show_mean, unavailable_everywhere, ArmReport, Report};
use crate::verdict::{describe_p, describe_time, not_significant_why, Advice};
use pinsight_measure::{COUNTER_METRICS, ENERGY_METRICS};
use pinsight_stats::{CiMethod, Summary};

/// Words an [`Advice`] in a front end's terms (the command line names its
/// flags); [`Advice::clause`] words it in the experiment's.
pub type Word<'a> = &'a dyn Fn(Advice) -> String;

/// Metrics shown in the per-metric table, after wall time: rusage's, every
/// counter and energy metric of a run, then the energy-delay product.
pub fn detail_keys() -> impl Iterator<Item = &'static str> {
    ["user_s", "sys_s", "max_rss_kib"]
        .into_iter()
        .chain(COUNTER_METRICS)
        .chain(ENERGY_METRICS)
        .chain(["edp_js"])
}

/// Keys of every metric to show in detail tables: [`detail_keys`] plus
/// per-PMU metrics, minus those unavailable in every arm.
pub fn shown_keys(r: &Report) -> Vec<String> {
    let Some(first) = r.arms.first() else {
        return Vec::new();
    };
    // Program metrics (`--metric`) first: the figures the user asked for.
    let mut keys: Vec<String> = program_keys(r);
    keys.extend(detail_keys().map(str::to_string));
    keys.extend(
        first
            .metrics
            .iter()
            .filter(|m| m.def.key.contains('@'))
            .map(|m| m.def.key.clone()),
    );
    keys.into_iter()
        .filter(|k| unavailable_everywhere(&r.arms, k).is_none())
        .collect()
}

/// Keys of the program metrics, in the header's order.
pub fn program_keys(r: &Report) -> Vec<String> {
    r.header.metrics.iter().map(|m| m.name.clone()).collect()
}

/// The "vs baseline" cell of program metric `key`: `events_per_s 12%
/// higher (95% CI ...)`, `baseline`, or why not.
pub fn metric_versus_cell(a: &ArmReport, r: &Report, key: &str) -> String {
    if a.is_baseline(r.baseline.as_deref()) {
        return "baseline".into();
    }
    match a.metrics_vs_baseline.iter().find(|m| m.key == key) {
        Some(m) => {
            let v = &m.versus;
            let mut s = crate::verdict::describe_metric(key, m.better, v);
            s.push_str(", ");
            if v.significant {
                s.push_str(&describe_p(v));
            } else {
                s.push_str(&not_significant_why(v));
            }
            s
        }
        None => "not compared (too few values)".into(),
    }
}

/// A summary's 95 % interval of the mean with the method that made it
/// ([`pinsight_stats::mean_ci`]), values formatted by `f`: `1.1 s – 1.3 s
/// (t)`, or for a log-t interval the geometric mean it surrounds, `12 ms –
/// 23.6 s (log-t around geo. mean 537 ms)`. `None` without an interval.
pub fn mean_ci_text(s: &Summary, f: &dyn Fn(f64) -> String) -> Option<String> {
    let (range, how) = mean_ci_parts(s, f)?;
    Some(format!("{range} ({how})"))
}

/// [`mean_ci_text`] in two parts: the range `lo – hi` and the method
/// `t` or `log-t around geo. mean G`.
pub fn mean_ci_parts(s: &Summary, f: &dyn Fn(f64) -> String) -> Option<(String, String)> {
    let ci = s.mean_ci?;
    let how = match (s.mean_ci_method?, s.geometric_mean) {
        (CiMethod::LogT, Some(g)) => format!("log-t around geo. mean {}", f(g)),
        (m, _) => m.label().to_string(),
    };
    Some((format!("{} – {}", f(ci.lo), f(ci.hi)), how))
}

/// The methods of the 95 % intervals of the means `r` shows (wall time and
/// the shown metrics), each explained once: the footnote every export
/// prints under its tables. `None` when no interval is shown.
pub fn ci_methods_note(r: &Report) -> Option<String> {
    let mut keys = shown_keys(r);
    keys.push("wall_s".into());
    let used = |method: CiMethod| {
        r.arms.iter().any(|a| {
            keys.iter().any(|k| {
                a.metric(k)
                    .and_then(|m| m.summary.as_ref())
                    .is_some_and(|s| s.mean_ci.is_some() && s.mean_ci_method == Some(method))
            })
        })
    };
    let mut parts = Vec::new();
    if used(CiMethod::LogT) {
        parts.push(
            "log-t = Student t on the logarithms, back-transformed: an interval of the \
             geometric mean, used when every value is positive, so it never goes below zero",
        );
    }
    if used(CiMethod::T) {
        parts.push("t = Student t of the mean, used when some value is zero or negative");
    }
    (!parts.is_empty()).then(|| format!("95% CI: {}.", parts.join("; ")))
}

/// 95 % CI of the mean of metric `key`, in its unit, with its method.
pub fn metric_ci_cell(a: &ArmReport, key: &str) -> String {
    let Some(m) = a.metric(key) else {
        return String::new();
    };
    m.summary
        .as_ref()
        .and_then(|s| mean_ci_text(s, &|x| m.def.format(x)))
        .unwrap_or_else(|| "n/a (fewer than 2 values or no spread)".into())
}

/// Metrics unavailable in every arm, grouped by reason:
/// `("cycles, IPC", "no hardware PMU: ...")`.
pub fn unavailable_groups(r: &Report) -> Vec<(String, String)> {
    let Some(first) = r.arms.first() else {
        return Vec::new();
    };
    let mut groups: Vec<(Vec<String>, String)> = Vec::new();
    for m in &first.metrics {
        if let Some(reason) = unavailable_everywhere(&r.arms, &m.def.key) {
            match groups.iter_mut().find(|(_, r)| r == reason) {
                Some(g) => g.0.push(m.def.label.clone()),
                None => groups.push((vec![m.def.label.clone()], reason.to_string())),
            }
        }
    }
    groups.into_iter().map(|(l, r)| (l.join(", "), r)).collect()
}

/// The "vs baseline" cell: `1.07× faster (CI ...)`, `baseline`, or why not.
pub fn versus_cell(a: &ArmReport, r: &Report) -> String {
    if a.is_baseline(r.baseline.as_deref()) {
        return "baseline".into();
    }
    match &a.time_vs_baseline {
        Some(v) => {
            let mut s = describe_time(v);
            if !v.significant {
                s.push_str(", ");
                s.push_str(&not_significant_why(v));
            }
            s
        }
        None => "not compared (too few runs)".into(),
    }
}

/// The variables exported to an arm's program: `K=V` space-separated.
pub fn exports_text(env: &[(String, String)]) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The p-value cell.
pub fn p_cell(a: &ArmReport) -> String {
    a.time_vs_baseline
        .as_ref()
        .map(describe_p)
        .unwrap_or_default()
}

/// `mean ± σ` of wall time or the reason there is none.
pub fn time_cell(a: &ArmReport) -> String {
    a.metric("wall_s")
        .map(|m| show_mean(m, true))
        .unwrap_or_default()
}

/// `min … max` of wall time.
pub fn range_cell(a: &ArmReport) -> String {
    match a.metric("wall_s").and_then(|m| m.summary.as_ref()) {
        Some(s) => format!(
            "{} … {}",
            crate::metrics::format_seconds(s.min),
            crate::metrics::format_seconds(s.max)
        ),
        None => String::new(),
    }
}

/// 95 % CI of the mean wall time, with its method.
pub fn ci_cell(a: &ArmReport) -> String {
    a.metric("wall_s")
        .and_then(|m| m.summary.as_ref())
        .and_then(|s| mean_ci_text(s, &crate::metrics::format_seconds))
        .unwrap_or_else(|| "n/a (fewer than 2 runs or no spread)".into())
}

/// Not-applicable arms grouped by reason: `("p-set, e-set", "needs ...")`.
pub fn not_applicable_groups(r: &Report) -> Vec<(String, String)> {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for na in &r.not_applicable {
        match groups.iter_mut().find(|(_, reason)| *reason == na.reason) {
            Some(g) => g.0.push(&na.what),
            None => groups.push((vec![&na.what], &na.reason)),
        }
    }
    groups
        .into_iter()
        .map(|(w, r)| (w.join(", "), r.to_string()))
        .collect()
}

/// One line on how the experiment ended.
pub fn status_line(r: &Report, word: Word) -> String {
    use crate::analysis::Status;
    match &r.status {
        Status::Complete => format!(
            "complete: {} runs ({} measured + {} warm-up per arm × {} arm{})",
            r.runs_done,
            r.header.runs,
            r.header.warmup,
            r.arms.len(),
            if r.arms.len() == 1 { "" } else { "s" }
        ),
        Status::Interrupted { signal } => format!(
            "INTERRUPTED by signal {signal} after {} of {} runs: partial results",
            r.runs_done, r.runs_planned
        ),
        Status::StoppedOnFailure { why, .. } => format!(
            "STOPPED after {} of {} runs: {why}{}",
            r.runs_done,
            r.runs_planned,
            word(Advice::IgnoreFailures)
        ),
        Status::Partial => format!(
            "partial journal: {} of {} runs",
            r.runs_done, r.runs_planned
        ),
    }
}

/// The experiment in one line: command, runs, warm-ups, seed.
pub fn design_line(r: &Report) -> String {
    let h = &r.header;
    format!(
        "{} run{} per arm, {} warm-up{}, randomised interleaved order (seed {})",
        h.runs,
        if h.runs == 1 { "" } else { "s" },
        h.warmup,
        if h.warmup == 1 { "" } else { "s" },
        h.seed
    )
}

/// Whether the report is a compare across ranks (each arm a slicing rule,
/// timed as the slowest rank).
pub fn is_ranks(r: &Report) -> bool {
    r.header.kind.as_deref() == Some(crate::ranks::KIND)
}

/// `mpirun -np 4 --bind-to none; each rank: run --slice p-pinned
/// --slice-rules ARM` for a compare across ranks.
pub fn launcher_line(r: &Report) -> Option<String> {
    if !is_ranks(r) {
        return None;
    }
    let id: crate::ranks::RanksIdentity =
        serde_json::from_value(r.header.extension.clone()?).ok()?;
    let mut opts = id.rank_options.join(" ");
    if !opts.is_empty() {
        opts.push(' ');
    }
    Some(format!(
        "{}; each rank: pinsight {opts}run --slice {} --slice-rules ARM; time = the slowest rank's",
        id.launcher.join(" "),
        id.slice
    ))
}

/// compare's result in every export format (`--export-json`, `-csv`,
/// `-markdown`, `-html`): the report and the words that advise the user
/// (they name flags, so the command line supplies them).
pub struct Export<'a> {
    /// The experiment's report.
    pub report: &'a Report,
    /// The advice, worded by the command line.
    pub word: Word<'a>,
}

impl pinsight_lifecycle::export::Exportable for Export<'_> {
    fn serialize(
        &self,
        format: pinsight_lifecycle::export::ExportFormat,
    ) -> Result<Vec<u8>, pinsight_lifecycle::export::ExportError> {
        use pinsight_lifecycle::export::ExportFormat as F;
        Ok(match format {
            F::Json => return pinsight_lifecycle::export::json_bytes(self.report),
            F::Csv => csv::render(self.report).into_bytes(),
            F::Markdown => markdown::render(self.report, self.word).into_bytes(),
            F::Html => html::render(self.report, self.word).into_bytes(),
        })
    }
}
