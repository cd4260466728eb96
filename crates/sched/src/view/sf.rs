//! `pinsight sf`'s human report: one line per thread (SF, the phase
//! cache's current prediction, the kind of the last window, samples and
//! IPS per kind, phases), then why any SF is unavailable. Fits 80 columns.

use pinsight_compare::sf::JournalSf;
use pinsight_measure::sf::session::{Measured, Request, Target};
use pinsight_measure::sf::{SfPmus, SfUnavailable, ThreadEntry};
use pinsight_measure::Metric;
use pinsight_sched_model::Kind as SfKind;
use std::fmt::Write;

/// What the report says about the run as a whole.
pub struct SfRun<'a> {
    /// "PID 1234 (make)" or "sleep 3 (PID 1234)".
    pub target: &'a str,
    pub period_s: f64,
    pub periods: u64,
    pub elapsed_s: f64,
    pub probe: bool,
    /// Stopped by Ctrl-C (what was measured is still reported).
    pub interrupted: bool,
    /// The samples each kind needs before an SF is given.
    pub min_samples: u32,
}

fn kind_line(pmus: &SfPmus, kind: SfKind) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut pmu_names: Vec<&str> = Vec::new();
    for p in pmus.pmus.iter().filter(|p| p.kind == kind) {
        if !names.contains(&p.kind_name) {
            names.push(p.kind_name.clone());
        }
        pmu_names.push(&p.pmu);
    }
    let cpus = match kind {
        SfKind::Big => &pmus.big,
        SfKind::Small => &pmus.small,
    };
    format!(
        "{} (PMU {}, CPUs {})",
        names.join("+"),
        pmu_names.join(", "),
        cpus.to_list_string()
    )
}

fn num(m: &Metric, f: impl Fn(f64) -> String) -> String {
    m.get().map_or_else(|| "-".to_string(), f)
}

/// The report.
pub fn render(run: &SfRun<'_>, pmus: &SfPmus, threads: &[ThreadEntry]) -> String {
    let mut out = preamble(run, pmus);
    out.push_str(&column_heads());
    let mut notes = Vec::new();
    for t in threads {
        out.push_str(&thread_line(t, &mut notes));
    }
    if threads.iter().any(|t| t.exited) {
        notes.push("* exited while measured".to_string());
    }
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "{}", wrap(&n));
        }
    }
    out
}

/// The report of a finished measurement made with `req`.
pub fn measured(m: &Measured, req: &Request<'_>) -> String {
    let run = SfRun {
        target: &m.target,
        period_s: req.period.as_secs_f64(),
        periods: m.periods,
        elapsed_s: m.elapsed_s,
        probe: req.probe,
        interrupted: m.signal.is_some(),
        min_samples: req.options.params.min_samples,
    };
    render(&run, &m.pmus, &m.threads)
}

/// Why nothing was measured, in one line (a program asked for was not
/// started).
pub fn unavailable(req: &Request<'_>, reason: &SfUnavailable) -> String {
    let started = match req.target {
        Target::Command(c) if !c.is_empty() => " (the program was not started)",
        _ => "",
    };
    format!("speedup factors unavailable: {reason}{started}")
}

/// The SF a `pinsight compare` journal gives: the ratio, its interval,
/// and the two arms' mean times it rests on (each line wrapped to 80
/// columns).
pub fn from_compare(sf: &JournalSf) -> String {
    let ci = sf
        .ci
        .map_or_else(String::new, |(lo, hi)| format!(" (95% CI {lo:.2}-{hi:.2})"));
    let text = format!(
        "SF of {} from compare journal {}: {:.2}{ci}\n\
         = mean time on small / on big: arm {} {:.3} s ({} runs) / arm {} {:.3} s ({} runs)",
        sf.command.join(" "),
        sf.journal,
        sf.sf,
        sf.small.arm,
        sf.small.mean_wall_s,
        sf.small.runs,
        sf.big.arm,
        sf.big.mean_wall_s,
        sf.big.runs,
    );
    text.lines()
        .map(|l| pinsight_term::wrap80(l) + "\n")
        .collect()
}

/// The lines above the table: the target, the periods, the two kinds and
/// what SF and "now" mean, then a blank line.
fn preamble(run: &SfRun<'_>, pmus: &SfPmus) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        wrap(&format!("Speedup factors of {}", run.target))
    );
    let _ = writeln!(
        out,
        "{} period{} of {:.0} ms ({:.1} s){}{}",
        run.periods,
        if run.periods == 1 { "" } else { "s" },
        run.period_s * 1e3,
        run.elapsed_s,
        if run.probe {
            ", probe (alternating affinity)"
        } else {
            ""
        },
        if run.interrupted { ", interrupted" } else { "" },
    );
    let _ = writeln!(
        out,
        "{}",
        wrap(&format!("big:   {}", kind_line(pmus, SfKind::Big)))
    );
    let _ = writeln!(
        out,
        "{}",
        wrap(&format!("small: {}", kind_line(pmus, SfKind::Small)))
    );
    let _ = writeln!(
        out,
        "SF = IPS big / IPS small (running averages, >= {} samples per kind);",
        run.min_samples
    );
    let _ = writeln!(
        out,
        "\"now\" is the phase cache's SF for the thread's current phase."
    );
    let _ = writeln!(out);
    out
}

/// The table's two heading lines: the columns, then their units.
fn column_heads() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>7}  {:<15} {:>5} {:>5} {:<5} {:>9} {:>8} {:>8} {:>4}",
        "TID", "thread", "SF", "now", "on", "samples", "IPS big", "IPS sml", "phs"
    );
    let units = format!(
        "{:>7}  {:<15} {:>5} {:>5} {:<5} {:>9} {:>8} {:>8}",
        "", "", "", "", "", "big/sml", "G/s", "G/s"
    );
    let _ = writeln!(out, "{}", units.trim_end());
    out
}

/// Thread `t`'s line of the table; why its SF is unavailable goes to
/// `notes`.
fn thread_line(t: &ThreadEntry, notes: &mut Vec<String>) -> String {
    let mut name: String = t.name.chars().take(15).collect();
    if t.exited {
        name = format!("{}*", name.chars().take(14).collect::<String>());
    }
    let Some(r) = &t.report else {
        notes.push(format!(
            "{}: unavailable: {}",
            t.tid,
            t.error.as_deref().unwrap_or("not measured")
        ));
        return format!("{:>7}  {:<15} unavailable\n", t.tid, name);
    };
    if let Some(why) = r.sf.reason() {
        notes.push(format!("{}: SF unavailable: {why}", t.tid));
    }
    format!(
        "{:>7}  {:<15} {:>5} {:>5} {:<5} {:>9} {:>8} {:>8} {:>4}\n",
        t.tid,
        name,
        num(&r.sf, |v| format!("{v:.2}")),
        num(&r.predicted_sf, |v| format!("{v:.2}")),
        match r.on {
            Some(SfKind::Big) => "big",
            Some(SfKind::Small) => "small",
            None => "-",
        },
        format!("{}/{}", r.big.samples, r.small.samples),
        num(&r.big.ips, |v| format!("{:.2}", v / 1e9)),
        num(&r.small.ips, |v| format!("{:.2}", v / 1e9)),
        if r.control_metrics {
            r.phases.to_string()
        } else {
            "-".to_string()
        },
    )
}

/// Wraps at 80 columns with the one wrapper, continuation lines indented
/// by two, a long list of events broken at its commas.
fn wrap(text: &str) -> String {
    pinsight_term::wrap(
        text,
        pinsight_term::Wrap::new(pinsight_term::DEFAULT_WIDTH)
            .indent("", "  ")
            .break_long_words(),
    )
    .join("\n")
}
