//! Human output of the live scheduler (`pinsight sched`): what ran where,
//! per program and, for programs with several busy threads, per thread.
//! Fits 80 columns.

use crate::mix::MixResult;
use crate::{ProgramReport, Report};
use pinsight_sched_model::PolicyResult;
use pinsight_stats::CiMethod;
use std::fmt::Write;

/// Program names longer than this are cut (with `~`).
const NAME_WIDTH: usize = 16;

fn cut(name: &str, width: usize) -> String {
    // Program and thread names come from outside: escaped first.
    let name = pinsight_sys::text::shown(name);
    if name.chars().count() <= width {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(width - 1).collect();
        s.push('~');
        s
    }
}

fn pct(x: Option<f64>) -> String {
    match x {
        Some(v) => format!("{:.1}%", v * 100.0),
        None => "-".into(),
    }
}

fn sf(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

/// One table row: label, pid/tid, SF, then big s, small s, big share, swaps.
fn row(out: &mut String, label: &str, id: i32, sfv: String, t: (f64, f64, Option<f64>, u32)) {
    writeln!(
        out,
        "{:<21}{:>8}{:>6}{:>10.2}{:>10.2}{:>10}{:>7}",
        label,
        id,
        sfv,
        t.0,
        t.1,
        pct(t.2),
        t.3
    )
    .ok();
}

fn program(out: &mut String, p: &ProgramReport) {
    let label = format!("#{} {}", p.position, cut(&p.name, NAME_WIDTH));
    let figures = (p.big_s, p.small_s, p.big_share, p.swaps);
    row(out, &label, p.pid, sf(p.sf), figures);
    let busy: Vec<_> = p
        .threads
        .iter()
        .filter(|t| t.big_s + t.small_s >= 0.005)
        .collect();
    if busy.len() > 1 {
        for t in busy {
            let label = format!("  {}", cut(&t.comm, NAME_WIDTH + 1));
            let figures = (t.big_s, t.small_s, t.big_share, t.swaps);
            row(out, &label, t.tid, String::new(), figures);
        }
    }
}

/// The whole human report of `pinsight sched`.
pub fn sched(r: &Report) -> String {
    let mut out = String::new();
    let head = format!(
        "Policy {}, period {} ms: big CPUs {}, small CPUs {}; {} periods in {:.1} s.",
        r.policy,
        (r.period_s * 1000.0).round(),
        r.big_cpus,
        r.small_cpus,
        r.periods,
        r.wall_s
    );
    writeln!(out, "{}\n", pinsight_term::wrap80(&head)).ok();
    writeln!(
        out,
        "{:<21}{:>8}{:>6}{:>10}{:>10}{:>10}{:>7}",
        "program / thread", "pid/tid", "SF", "big s", "small s", "big share", "swaps"
    )
    .ok();
    for p in &r.programs {
        program(&mut out, p);
    }
    let mut notes = Vec::new();
    if r.policy == "os" {
        notes.push(
            "os pins nothing: CPU time is counted on the kind of the CPU each thread was last \
             seen on at each period's sample."
                .to_string(),
        );
    } else {
        notes.push(
            "CPU time is counted on the kind each thread was pinned to for the period.".to_string(),
        );
    }
    let cap = &r.capacity;
    match (&cap.source, &cap.unavailable) {
        (Some(src), _) => notes.push(format!(
            "Capacity changes ({src}): {} applied{}.",
            cap.changes,
            if cap.vacated.is_empty() {
                String::new()
            } else {
                let ids: Vec<String> = cap.vacated.iter().map(ToString::to_string).collect();
                format!(
                    "; CPUs {} vacated at the end (no thread placed there)",
                    ids.join(",")
                )
            }
        )),
        (None, Some(why)) => notes.push(format!("Capacity changes: unavailable ({why}).")),
        (None, None) => {}
    }
    let rs = &r.restore;
    if r.pinned_threads > 0 {
        let ended = r
            .pinned_threads
            .saturating_sub(rs.restored + rs.failures.len());
        notes.push(format!(
            "Threads pinned: {}; at the end {} got their own affinity back, {} had ended{}.",
            r.pinned_threads,
            rs.restored,
            ended,
            if rs.failures.is_empty() {
                String::new()
            } else {
                format!(", {} could not be restored", rs.failures.len())
            }
        ));
    }
    notes.push(format!(
        "Scheduler cost: {:.0} µs of CPU per period ({:.3}% of one CPU).",
        r.mean_step_s * 1e6,
        if r.period_s > 0.0 {
            100.0 * r.mean_step_s / r.period_s
        } else {
            0.0
        }
    ));
    out.push('\n');
    for n in notes {
        writeln!(out, "{}", pinsight_term::wrap80(&n)).ok();
    }
    out
}

/// `pinsight mix`'s live results as the simulator's, so its program table
/// and verdict are shared.
fn as_policy_results(r: &MixResult) -> Vec<PolicyResult> {
    r.schedulers
        .iter()
        .map(|s| PolicyResult {
            policy: s.policy.clone(),
            metrics: s.metrics,
            programs: s.programs.clone(),
            simulated_s: s.wall_s,
            steps: s.periods,
        })
        .collect()
}

/// A metric and its 95% interval over the repeats: `x±h` for a t interval
/// (symmetric), `x×÷f` for a log-t one (symmetric on the log scale: from
/// G/f to G·f around the repeats' geometric mean G, never below zero).
fn pm(x: f64, ci: Option<(f64, f64)>, method: Option<CiMethod>) -> String {
    match (ci, method) {
        (Some((lo, hi)), Some(CiMethod::LogT)) if lo > 0.0 => {
            format!("{x:.2}×÷{:.2}", (hi / lo).sqrt())
        }
        (Some((lo, hi)), _) => format!("{x:.2}±{:.2}", (hi - lo) / 2.0),
        (None, _) => format!("{x:.2}"),
    }
}

/// The plain verdict of a mix (the simulator's, over the live results),
/// with a caution when intervals overlap.
pub fn mix_verdict(r: &MixResult) -> String {
    let results = as_policy_results(r);
    let mut v = super::simulate::verdict(&results);
    let best = r.schedulers.iter().max_by(|a, b| {
        a.metrics
            .aggregate_speedup
            .total_cmp(&b.metrics.aggregate_speedup)
    });
    if let Some(best) = best {
        let overlaps = r.schedulers.iter().any(|s| {
            s.policy != best.policy
                && match (s.ci.aggregate_speedup, best.ci.aggregate_speedup) {
                    (Some((_, hi)), Some((lo, _))) => hi >= lo,
                    _ => true,
                }
        });
        if overlaps {
            v.push_str(&format!(
                " The aggregate-speedup intervals of {} and another scheduler overlap: \
                 not a significant difference at 95%.",
                best.policy
            ));
        }
    }
    v
}

/// The whole human report of `pinsight mix`.
pub fn mix(r: &MixResult, repeat: u32) -> String {
    let mut out = String::new();
    let n = r.references.len();
    let head = format!(
        "{n} program{} run together under {} scheduler{}, each until every program \
         completed {repeat} time{}; ± are 95% t intervals over the repeats, ×÷ 95% \
         log-t intervals (of the geometric mean; they stay positive).",
        if n == 1 { "" } else { "s" },
        r.schedulers.len(),
        if r.schedulers.len() == 1 { "" } else { "s" },
        if repeat == 1 { "" } else { "s" },
    );
    writeln!(out, "{}\n", pinsight_term::wrap80(&head)).ok();
    writeln!(
        out,
        "{:<7}{:>14}{:>13}{:>13}{:>13}{:>10}",
        "sched", "agg.speedup", "STP", "ANTT", "unfairness", "wall"
    )
    .ok();
    for s in &r.schedulers {
        let m = &s.metrics;
        writeln!(
            out,
            "{:<7}{:>14}{:>13}{:>13}{:>13}{:>8.1} s",
            s.policy,
            pm(
                m.aggregate_speedup,
                s.ci.aggregate_speedup,
                s.ci.method.aggregate_speedup
            ),
            pm(m.stp, s.ci.stp, s.ci.method.stp),
            pm(m.antt, s.ci.antt, s.ci.method.antt),
            pm(m.unfairness, s.ci.unfairness, s.ci.method.unfairness),
            s.wall_s
        )
        .ok();
    }
    out.push('\n');
    let results = as_policy_results(r);
    out.push_str(&super::simulate::program_table(&results));
    writeln!(
        out,
        "(SF column: measured, time alone on a small CPU / on a big CPU.)\n"
    )
    .ok();
    out.push_str(&program_metrics(r));
    writeln!(out, "{}", pinsight_term::wrap80(&mix_verdict(r))).ok();
    out
}

/// A metric: its name, value, 95% interval over the repeats and its method.
type MetricRow = (&'static str, f64, Option<(f64, f64)>, Option<CiMethod>);

/// The four metrics of a scheduler.
fn metric_rows(s: &crate::mix::SchedulerResult) -> [MetricRow; 4] {
    let m = &s.metrics;
    [
        (
            "aggregate_speedup",
            m.aggregate_speedup,
            s.ci.aggregate_speedup,
            s.ci.method.aggregate_speedup,
        ),
        ("stp", m.stp, s.ci.stp, s.ci.method.stp),
        ("antt", m.antt, s.ci.antt, s.ci.method.antt),
        (
            "unfairness",
            m.unfairness,
            s.ci.unfairness,
            s.ci.method.unfairness,
        ),
    ]
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| format!("{v}"))
}

/// `mix --export-csv`: one row per scheduler and metric (value and its 95%
/// interval over the repeats), then one per scheduler and program (its
/// slowdown), then one per scheduler, program and program metric
/// (`--metric`: `what` is `program_metric`, `name` `PROGRAM:METRIC`, the
/// mean and its 95% interval over the completions; an empty value when no
/// completion had the figure), under one header:
/// `scheduler,what,name,value,ci_lo,ci_hi`.
pub fn csv(r: &MixResult) -> String {
    // One quoting rule for every CSV pinsight writes (compare's).
    let f = pinsight_compare::view::csv::field;
    let mut out = String::from("scheduler,what,name,value,ci_lo,ci_hi,ci_method\n");
    for s in &r.schedulers {
        for (name, v, ci, method) in metric_rows(s) {
            let _ = writeln!(
                out,
                "{},metric,{name},{v},{},{},{}",
                f(&s.policy),
                opt(ci.map(|c| c.0)),
                opt(ci.map(|c| c.1)),
                method.map_or("", CiMethod::label)
            );
        }
        for p in &s.programs {
            let _ = writeln!(
                out,
                "{},slowdown,{},{},,,",
                f(&s.policy),
                f(&p.name),
                p.slowdown
            );
        }
        for m in &s.program_metrics {
            let x = m.summary.as_ref();
            let ci = x.and_then(|x| x.mean_ci);
            let method = x.and_then(|x| x.mean_ci.and(x.mean_ci_method));
            let _ = writeln!(
                out,
                "{},program_metric,{},{},{},{},{}",
                f(&s.policy),
                f(&format!("{}:{}", m.program, m.metric)),
                opt(x.map(|x| x.mean)),
                opt(ci.map(|c| c.lo)),
                opt(ci.map(|c| c.hi)),
                method.map_or("", |m| m.label())
            );
        }
    }
    out
}

/// The program metrics as table rows: scheduler, program, metric, mean
/// (95% interval), unit, which direction is better, completions without
/// the figure (and why).
fn program_metric_rows(r: &MixResult) -> Vec<[String; 7]> {
    let mut rows = Vec::new();
    for s in &r.schedulers {
        for m in &s.program_metrics {
            let value = match &m.summary {
                Some(x) => summary_md(x),
                None => "unavailable".into(),
            };
            let missing = match (m.missing, &m.missing_why) {
                (0, _) => "0".to_string(),
                (n, Some(why)) => format!("{n} ({why})"),
                (n, None) => n.to_string(),
            };
            rows.push([
                s.policy.clone(),
                m.program.clone(),
                m.metric.clone(),
                value,
                m.unit.clone(),
                m.better.word().to_string(),
                missing,
            ]);
        }
    }
    rows
}

const PROGRAM_METRIC_HEADS: [&str; 7] = [
    "scheduler",
    "program",
    "metric",
    "mean (95% CI)",
    "unit",
    "better",
    "runs without it",
];

/// A program metric's mean and its 95% interval with the method that made
/// it: `4000.000 (3752.126 – 4264.350, log-t around geo. mean 3999.166)`.
fn summary_md(x: &pinsight_stats::Summary) -> String {
    match pinsight_compare::view::mean_ci_parts(x, &|v| format!("{v:.3}")) {
        Some((range, how)) => format!("{:.3} ({range}, {how})", x.mean),
        None => format!("{:.3}", x.mean),
    }
}

fn pm_md(v: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("{v:.3} ({lo:.3}–{hi:.3})"),
        None => format!("{v:.3}"),
    }
}

/// `mix --export-markdown`: the schedulers' metrics with their 95% intervals, the
/// per-program slowdowns and the verdict, as Markdown tables.
pub fn markdown(r: &MixResult, repeat: u32) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# pinsight mix\n");
    let _ = writeln!(
        out,
        "{} programs, each completed {repeat} time(s) per scheduler; intervals are 95% over the repeats.\n",
        r.references.len()
    );
    let _ = writeln!(
        out,
        "| scheduler | aggregate speedup | STP | ANTT | unfairness | wall (s) |"
    );
    let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- |");
    for s in &r.schedulers {
        let rows = metric_rows(s);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} |",
            s.policy,
            pm_md(rows[0].1, rows[0].2),
            pm_md(rows[1].1, rows[1].2),
            pm_md(rows[2].1, rows[2].2),
            pm_md(rows[3].1, rows[3].2),
            s.wall_s
        );
    }
    let _ = writeln!(
        out,
        "\n| program | alone big (s) | alone small (s) | {} |",
        r.schedulers
            .iter()
            .map(|s| format!("{} slowdown", s.policy))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- |{}",
        " --- |".repeat(r.schedulers.len())
    );
    for (i, (b, sm)) in r.references.iter().enumerate() {
        let name = r
            .schedulers
            .first()
            .and_then(|s| s.programs.get(i))
            .map_or_else(|| format!("#{}", i + 1), |p| p.name.replace('|', "\\|"));
        let sds: Vec<String> = r
            .schedulers
            .iter()
            .map(|s| {
                s.programs
                    .get(i)
                    .map_or_else(String::new, |p| format!("{:.3}", p.slowdown))
            })
            .collect();
        let _ = writeln!(out, "| {name} | {b:.3} | {sm:.3} | {} |", sds.join(" | "));
    }
    let rows = program_metric_rows(r);
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "\n## Program metrics\n\n| {} |\n|{}",
            PROGRAM_METRIC_HEADS.join(" | "),
            " --- |".repeat(PROGRAM_METRIC_HEADS.len())
        );
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    let _ = writeln!(out, "\n{}", mix_verdict(r));
    out
}

/// `mix --export-html`: the Markdown report's tables as one self-contained page
/// (no script, no external resource; every text escaped).
pub fn html(r: &MixResult, repeat: u32) -> String {
    let esc = pinsight_term::escape;
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pinsight mix</title>\n\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #999;padding:.2em .6em;text-align:right}\
         td:first-child,th:first-child{text-align:left}</style></head><body>\n<h1>pinsight mix</h1>\n",
    );
    let _ = writeln!(
        out,
        "<p>{} programs, each completed {repeat} time(s) per scheduler; intervals are 95% over the repeats.</p>",
        r.references.len()
    );
    out.push_str("<table><tr><th>scheduler</th><th>aggregate speedup</th><th>STP</th><th>ANTT</th><th>unfairness</th><th>wall (s)</th></tr>\n");
    for s in &r.schedulers {
        let rows = metric_rows(s);
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td></tr>",
            esc(&s.policy),
            esc(&pm_md(rows[0].1, rows[0].2)),
            esc(&pm_md(rows[1].1, rows[1].2)),
            esc(&pm_md(rows[2].1, rows[2].2)),
            esc(&pm_md(rows[3].1, rows[3].2)),
            s.wall_s
        );
    }
    out.push_str("</table>\n<h2>Slowdown per program</h2>\n<table><tr><th>program</th><th>alone big (s)</th><th>alone small (s)</th>");
    for s in &r.schedulers {
        let _ = write!(out, "<th>{}</th>", esc(&s.policy));
    }
    out.push_str("</tr>\n");
    for (i, (b, sm)) in r.references.iter().enumerate() {
        let name = r
            .schedulers
            .first()
            .and_then(|s| s.programs.get(i))
            .map_or_else(|| format!("#{}", i + 1), |p| p.name.clone());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{b:.3}</td><td>{sm:.3}</td>",
            esc(&name)
        );
        for s in &r.schedulers {
            let v = s
                .programs
                .get(i)
                .map_or_else(String::new, |p| format!("{:.3}", p.slowdown));
            let _ = write!(out, "<td>{v}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let rows = program_metric_rows(r);
    if !rows.is_empty() {
        out.push_str("<h2>Program metrics</h2>\n<table><tr>");
        for h in PROGRAM_METRIC_HEADS {
            let _ = write!(out, "<th>{h}</th>");
        }
        out.push_str("</tr>\n");
        for row in rows {
            out.push_str("<tr>");
            for c in row {
                let _ = write!(out, "<td>{}</td>", esc(&c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    let _ = writeln!(out, "<p>{}</p>\n</body></html>", esc(&mix_verdict(r)));
    out
}

/// mix's JSON document (`--json`, the JSON export) of `result`, the
/// experiment `spec` journaled at `journal`, with [`mix_verdict`]'s words.
pub fn document<'a>(
    spec: &'a crate::mix::MixSpec,
    result: &'a MixResult,
    journal: &std::path::Path,
) -> crate::mix::document::MixDocument<'a> {
    crate::mix::document::document(spec, result, journal, mix_verdict(result))
}

/// mix's result in every export format: the JSON document is the one
/// `--json` prints ([`document`]), the others are rendered from the
/// result.
pub struct Export<'a, J: serde::Serialize> {
    /// The experiment's result.
    pub result: &'a MixResult,
    /// Completions per program and scheduler.
    pub repeat: u32,
    /// The JSON document.
    pub json: &'a J,
}

impl<J: serde::Serialize> pinsight_lifecycle::export::Exportable for Export<'_, J> {
    fn serialize(
        &self,
        format: pinsight_lifecycle::export::ExportFormat,
    ) -> Result<Vec<u8>, pinsight_lifecycle::export::ExportError> {
        use pinsight_lifecycle::export::ExportFormat as F;
        Ok(match format {
            F::Json => return pinsight_lifecycle::export::json_bytes(self.json),
            F::Csv => csv(self.result).into_bytes(),
            F::Markdown => markdown(self.result, self.repeat).into_bytes(),
            F::Html => html(self.result, self.repeat).into_bytes(),
        })
    }
}

/// The program metrics (`--metric`) per scheduler and program: mean and
/// its 95% interval over the completions with the interval's method (log-t
/// around the geometric mean when every value is positive: it is not
/// symmetric, so not a "±"), and the completions without the figure.
fn program_metrics(r: &MixResult) -> String {
    let mut out = String::new();
    for s in &r.schedulers {
        for m in &s.program_metrics {
            let value = match &m.summary {
                Some(x) => {
                    let ci = pinsight_compare::view::mean_ci_text(x, &|v| format!("{v:.4}"))
                        .map_or(String::new(), |c| format!(", 95% CI {c}"));
                    format!("{:.4} {} ({} better){ci}", x.mean, m.unit, m.better.word())
                }
                None => "unavailable".to_string(),
            };
            let missing = if m.missing > 0 {
                format!(
                    "; {} run{} without it ({})",
                    m.missing,
                    if m.missing == 1 { "" } else { "s" },
                    m.missing_why.as_deref().unwrap_or("no value")
                )
            } else {
                String::new()
            };
            let line = format!("{} {} {}: {value}{missing}", s.policy, m.program, m.metric);
            writeln!(out, "{}", pinsight_term::wrap80(&line)).ok();
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RestoreReport, ThreadReport};

    fn report() -> Report {
        let t = |tid, b, s| ThreadReport {
            tid,
            comm: "worker-with-a-long-name".into(),
            big_s: b,
            small_s: s,
            big_share: Some(b / (b + s)),
            swaps: 3,
        };
        Report {
            policy: "aarr".into(),
            period_s: 0.2,
            big_cpus: "0".into(),
            small_cpus: "1".into(),
            periods: 40,
            wall_s: 8.0,
            mean_step_s: 0.00012,
            resolution: None,
            programs: vec![ProgramReport {
                position: 1,
                pid: 4_194_303,
                root_pid: 4_194_303,
                name: "a-very-long-program-name-indeed".into(),
                sf: Some(2.5),
                big_s: 4.0,
                small_s: 4.0,
                big_share: Some(0.5),
                swaps: 6,
                threads: vec![t(4_194_303, 2.0, 2.0), t(4_194_304, 2.0, 2.0)],
            }],
            pinned_threads: 3,
            restore: RestoreReport {
                restored: 2,
                gone: 0,
                failures: vec![],
            },
            warnings: vec![],
            capacity: Default::default(),
        }
    }

    #[test]
    fn fits_80_columns_and_shows_threads() {
        let s = sched(&report());
        for l in s.lines() {
            assert!(l.chars().count() <= 80, "{l}");
        }
        assert!(s.contains("#1 a-very-long-pro~"), "{s}");
        assert!(s.contains("50.0%"));
        assert!(s.contains("4194304"));
        assert!(
            s.contains("Threads pinned: 3; at the end 2 got their own affinity back, 1 had ended."),
            "{s}"
        );
    }

    #[test]
    fn capacity_feed_is_reported_or_its_absence_explained() {
        let mut r = report();
        assert!(!sched(&r).contains("Capacity changes"));
        r.capacity.unavailable = Some("no hfi flag".into());
        assert!(sched(&r).contains("Capacity changes: unavailable (no hfi flag)."));
        r.capacity = crate::CapacityFeed {
            source: Some("Intel HFI via thermal netlink".into()),
            unavailable: None,
            changes: 3,
            vacated: vec![4, 5],
        };
        let s = sched(&r);
        let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("Capacity changes (Intel HFI via thermal netlink): 3 applied; CPUs 4,5 vacated at the end"),
            "{s}"
        );
    }

    #[test]
    fn mix_report_fits_80_columns_with_intervals() {
        use crate::mix::{CiMethods, MetricCis, MixResult, SchedulerResult};
        use pinsight_sched_model::{Metrics, ProgramResult};
        let prog = |name: &str, sd: f64| ProgramResult {
            name: name.into(),
            mean_sf: 1.8,
            runs: 3,
            time_s: 2.0 * sd,
            alone_big_s: 2.0,
            alone_small_s: 3.6,
            slowdown: sd,
            big_share: 0.5,
        };
        let sched = |policy: &str, a: f64| SchedulerResult {
            policy: policy.into(),
            metrics: Metrics {
                aggregate_speedup: a,
                stp: 1.2,
                antt: 1.7,
                unfairness: 1.3,
            },
            ci: MetricCis {
                aggregate_speedup: Some((a - 0.1, a + 0.1)),
                stp: Some((1.1, 1.3)),
                antt: None,
                unfairness: Some((1.0, 1.6)),
                method: CiMethods {
                    aggregate_speedup: Some(CiMethod::T),
                    stp: Some(CiMethod::T),
                    antt: None,
                    unfairness: Some(CiMethod::LogT),
                },
            },
            programs: vec![prog("a-rather-long-program-name", 1.5), prog("b", 2.0)],
            wall_s: 123.4,
            periods: 600,
            program_metrics: vec![],
        };
        let r = MixResult {
            references: vec![(2.0, 3.6), (2.0, 3.6)],
            schedulers: vec![sched("os", 0.2), sched("aarr", 0.5), sched("to", 0.55)],
            notes: vec![],
        };
        let s = mix(&r, 3);
        for l in s.lines() {
            assert!(l.chars().count() <= 80, "{l}");
        }
        assert!(s.contains("0.55±0.10"), "{s}");
        // A log-t interval (1.0 to 1.6) reads as a factor: sqrt(1.6) = 1.26.
        assert!(s.contains("1.30×÷1.26"), "{s}");
        assert!(s.contains("1.70 "), "no interval shown without one: {s}");
        assert!(s.contains("Verdict: highest throughput: to"), "{s}");
        assert!(s.contains("overlap"), "to and aarr overlap: {s}");
    }

    #[test]
    fn program_metrics_are_in_every_export() {
        use crate::mix::{MetricCis, MixResult, ProgramMetric, SchedulerResult};
        use pinsight_compare::program_metric::Better;
        use pinsight_sched_model::Metrics;
        let metric = |program: &str, xs: &[f64], missing: usize| ProgramMetric {
            program: program.into(),
            metric: "events/s".into(),
            unit: "events/s".into(),
            better: Better::Higher,
            summary: pinsight_stats::Summary::of(xs).ok(),
            missing,
            missing_why: (missing > 0).then(|| "no match for 'events per second'".into()),
        };
        let r = MixResult {
            references: vec![],
            schedulers: vec![SchedulerResult {
                policy: "aarr".into(),
                metrics: Metrics {
                    aggregate_speedup: 1.0,
                    stp: 1.0,
                    antt: 1.0,
                    unfairness: 1.0,
                },
                ci: MetricCis::default(),
                programs: vec![],
                wall_s: 10.0,
                periods: 10,
                program_metrics: vec![
                    metric("sys|bench", &[3900.0, 4000.0, 4100.0], 0),
                    metric("other", &[], 3),
                ],
            }],
            notes: vec![],
        };
        let c = csv(&r);
        let row = c
            .lines()
            .find(|l| l.starts_with("aarr,program_metric,sys|bench:events/s,4000,"))
            .unwrap_or_else(|| panic!("{c}"));
        let lo: f64 = row.split(',').nth(4).unwrap().parse().unwrap();
        assert!(lo < 4000.0, "{row}");
        assert!(row.ends_with(",log-t"), "the method is named: {row}");
        assert!(
            c.contains("aarr,program_metric,other:events/s,,,,\n"),
            "never a zero: {c}"
        );
        let md = markdown(&r, 3);
        assert!(md.contains("## Program metrics"), "{md}");
        assert!(
            md.contains("| aarr | sys\\|bench | events/s | 4000.000 (3"),
            "{md}"
        );
        assert!(md.contains(", log-t around geo. mean 3999."), "{md}");
        let text = program_metrics(&r);
        assert!(
            text.contains("95% CI 3") && text.contains("(log-t around geo. mean 3999."),
            "{text}"
        );
        assert!(
            md.contains("| unavailable | events/s | higher | 3 (no match"),
            "{md}"
        );
        let page = html(&r, 3);
        assert!(page.contains("<h2>Program metrics</h2>"), "{page}");
        assert!(page.contains("<td>sys|bench</td>") && page.contains("<td>unavailable</td>"));
    }
}
