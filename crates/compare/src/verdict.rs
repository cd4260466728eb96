//! The answer in plain words: which placement to use and by how much, or
//! "no significant difference — leave it to the OS".
//!
//! A difference counts only when the chosen test gives p < 0.05 AND the
//! 95 % Fieller interval of the speedup excludes 1; below 1 % it is called
//! negligible even when significant (a change nobody would notice is not a
//! reason to pin).

use crate::analysis::{ArmReport, Versus, NEGLIGIBLE_PERCENT};
use crate::fixed::FixedDuration;
use crate::journal::NotApplicable;
use crate::program_metric::{Better, PRESETS};
use crate::request::{Input, Names};
use pinsight_stats::{TestKind, ALPHA};
use serde::Serialize;

/// What to do.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// This arm is significantly and noticeably faster than the baseline.
    Use { arm: String },
    /// Nothing beats the baseline by a noticeable, significant margin.
    KeepBaseline { arm: String },
    /// Not enough successful runs to say anything.
    NotEnoughData,
}

/// The verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    /// One sentence.
    pub headline: String,
    /// One line per arm: the numbers behind the headline.
    pub evidence: Vec<String>,
    /// What limits the conclusion (few runs, arms not applicable, failures).
    pub caveats: Vec<Caveat>,
    /// Groups of arms (ids) that run the same placement here (same CPU
    /// sets, pinning, memory policy, governor and exported variables, e.g.
    /// `p-pinned` and `compact` on a machine with one core kind): a
    /// difference between them is noise, and they are never ranked apart.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_placement: Vec<Vec<String>>,
    /// What the verdict is on: `wall_s`, or the first program metric.
    pub objective: String,
    /// Every arm took the same wall time while CPU time or the program's
    /// own figures differ: the program probably runs for a set time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_duration: Option<FixedDuration>,
}

/// Whether two arms apply the same placement to the program: the same
/// places and process mask, pinned thread by thread alike (a plan of one
/// place equal to its mask is the mask), the same memory policy, governor
/// and exported variables.
pub fn same_placement(a: &ArmReport, b: &ArmReport) -> bool {
    let per_thread = |p: &crate::journal::ArmPlan| {
        p.pinned && !p.places.is_empty() && !p.places.iter().all(|x| *x == p.process_mask)
    };
    let env = |a: &ArmReport| {
        let mut e = a.env.clone();
        e.sort();
        e
    };
    a.plan.places == b.plan.places
        && a.plan.process_mask == b.plan.process_mask
        && per_thread(&a.plan) == per_thread(&b.plan)
        && a.plan.memory == b.plan.memory
        && a.governor == b.governor
        && env(a) == env(b)
}

/// The groups of two or more arms with the same placement, in arm order.
fn identical_groups(arms: &[ArmReport]) -> Vec<Vec<&ArmReport>> {
    let mut groups: Vec<Vec<&ArmReport>> = Vec::new();
    for a in arms {
        match groups.iter_mut().find(|g| same_placement(g[0], a)) {
            Some(g) => g.push(a),
            None => groups.push(vec![a]),
        }
    }
    groups.retain(|g| g.len() > 1);
    groups
}

/// The arms with the same placement as `a` (labels), `a` left out.
fn twins<'a>(a: &ArmReport, groups: &[Vec<&'a ArmReport>]) -> Vec<&'a str> {
    groups
        .iter()
        .find(|g| g.iter().any(|x| x.id == a.id))
        .map(|g| {
            g.iter()
                .filter(|x| x.id != a.id)
                .map(|x| x.label.as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// What to do about a caveat, in the experiment's terms; a front end
/// words it its own way (the command line names its flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// Run warm-up runs before the measured ones.
    WarmUp,
    /// At least this many measured runs per arm are needed.
    MoreRuns { at_least: usize },
    /// This many measured runs per arm also allow Welch's t-test.
    RunsForWelch { at_least: usize },
    /// Failed runs can be excluded instead of stopping the experiment.
    IgnoreFailures,
    /// Compare the program's own result (a program metric), with this
    /// preset when one knows the program.
    UseMetric { preset: Option<&'static str> },
}

impl Advice {
    /// The advice in the experiment's terms, as a clause appended to the
    /// caveat's text (the JSON report's wording).
    pub fn clause(self) -> String {
        match self {
            Advice::WarmUp => "; consider warm-up runs".into(),
            Advice::MoreRuns { at_least } => {
                format!(": {at_least} or more runs per arm are needed")
            }
            Advice::RunsForWelch { at_least } => format!(
                "; {at_least} or more runs per arm also allow Welch's t-test on symmetric runs"
            ),
            Advice::IgnoreFailures => " (failed runs can be ignored to go on regardless)".into(),
            Advice::UseMetric { preset: Some(p) } => {
                format!("; compare the program's own result instead (program metric preset {p})")
            }
            Advice::UseMetric { preset: None } => {
                "; compare the program's own result instead (a program metric read from its output)"
                    .into()
            }
        }
    }

    /// The advice naming the inputs to change by `name` (a front end's
    /// flags); a metric to choose is `NAME=REGEX`.
    pub fn named(self, name: Names<'_>) -> String {
        let runs = name(Input::Runs);
        match self {
            Advice::WarmUp => format!("; consider warm-up runs ({})", name(Input::Warmup)),
            Advice::MoreRuns { at_least } => format!(": use {runs} {at_least} or more"),
            Advice::RunsForWelch { at_least } => {
                format!("; {runs} {at_least} or more also allows Welch's t-test on symmetric runs")
            }
            Advice::IgnoreFailures => {
                format!(" (use {} to go on regardless)", name(Input::IgnoreFailure))
            }
            Advice::UseMetric { preset } => format!(
                "; compare the program's own result: {} {}",
                name(Input::Metric),
                preset.unwrap_or("NAME=REGEX")
            ),
        }
    }
}

/// A caveat: what limits the conclusion, and optionally what to do about
/// it. Serialised (and displayed) as one sentence with the advice in the
/// experiment's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Caveat {
    pub text: String,
    pub advice: Option<Advice>,
}

impl Caveat {
    pub fn new(text: impl Into<String>) -> Caveat {
        Caveat {
            text: text.into(),
            advice: None,
        }
    }

    /// The sentence with the advice worded by `word` (a front end's own
    /// terms, e.g. naming its flags).
    pub fn worded(&self, word: &dyn Fn(Advice) -> String) -> String {
        match self.advice {
            Some(a) => format!("{}{}", self.text, word(a)),
            None => self.text.clone(),
        }
    }
}

impl std::fmt::Display for Caveat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.worded(&Advice::clause))
    }
}

impl Serialize for Caveat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Above this ratio (or below its inverse) differences read better as "×".
const TIMES_THRESHOLD: f64 = 1.5;

/// "6.9% faster (95% CI 5.1–8.7%)" / "1.60× slower (95% CI 1.52–1.69×)".
pub fn describe_time(v: &Versus) -> String {
    describe(v, "faster", "slower")
}

/// "11% less energy (95% CI 8.0–14%)": always the change in joules
/// (energy is a quantity, not a rate, so "2× less" would confuse).
pub fn describe_energy(v: &Versus) -> String {
    // ratio = base / arm; change = arm / base − 1.
    let change = 1.0 / v.ratio - 1.0;
    let (word, sign) = if change <= 0.0 {
        ("less", -1.0)
    } else {
        ("more", 1.0)
    };
    let ci = v.ratio_ci.map_or(String::new(), |c| {
        let (a, b) = (sign * (1.0 / c.hi - 1.0), sign * (1.0 / c.lo - 1.0));
        format!(" (95% CI {})", pct_range(a.min(b), a.max(b)))
    });
    format!("{}% {word} energy{ci}", pct(sign * change))
}

/// "events_per_s 12% higher (95% CI 5.1–18%)": the change of the metric's
/// mean, arm against baseline, whatever the direction (`v.ratio` > 1 is
/// better: see [`crate::analysis::MetricVersus`]).
pub fn describe_metric(key: &str, better: Better, v: &Versus) -> String {
    // change = mean(arm) / mean(baseline) − 1.
    let (change, ci) = match better {
        Better::Higher => (v.ratio - 1.0, v.ratio_ci.map(|c| (c.lo - 1.0, c.hi - 1.0))),
        Better::Lower => (
            1.0 / v.ratio - 1.0,
            v.ratio_ci.map(|c| (1.0 / c.hi - 1.0, 1.0 / c.lo - 1.0)),
        ),
    };
    let (word, sign) = if change >= 0.0 {
        ("higher", 1.0)
    } else {
        ("lower", -1.0)
    };
    let ci = ci.map_or(String::new(), |(a, b)| {
        let (a, b) = (sign * a, sign * b);
        format!(" (95% CI {})", pct_range(a.min(b), a.max(b)))
    });
    format!("{key} {}% {word}{ci}", pct(sign * change))
}

/// "5.1–8.7%", or "−47% to +153%" when the range crosses zero; an
/// unbounded end (the ratio's Fieller interval starts at 0, so its inverse
/// has no upper end) reads "+12% or more" / "up to −20%".
fn pct_range(lo: f64, hi: f64) -> String {
    let signed = |x: f64| {
        if x >= 0.0 {
            format!("+{}%", pct(x))
        } else {
            format!("{}%", pct(x).replace('-', "−"))
        }
    };
    if hi == f64::INFINITY {
        format!("{} or more", signed(lo))
    } else if lo == f64::NEG_INFINITY {
        format!("up to {}", signed(hi))
    } else if lo >= 0.0 {
        format!("{}–{}%", pct(lo), pct(hi))
    } else {
        format!("{}% to +{}%", pct(lo).replace('-', "−"), pct(hi))
    }
}

fn describe(v: &Versus, better: &str, worse: &str) -> String {
    let r = v.ratio;
    let ci = v.ratio_ci;
    if r >= TIMES_THRESHOLD {
        let ci = ci.map_or(String::new(), |c| {
            format!(" (95% CI {:.2}–{:.2}×)", c.lo, c.hi)
        });
        format!("{r:.2}× {better}{ci}")
    } else if r <= 1.0 / TIMES_THRESHOLD {
        let ci = ci.map_or(String::new(), |c| {
            if c.lo > 0.0 {
                format!(" (95% CI {:.2}–{:.2}×)", 1.0 / c.hi, 1.0 / c.lo)
            } else {
                // A ratio interval from 0: its inverse has no upper end.
                format!(" (95% CI {:.2}× or more)", 1.0 / c.hi)
            }
        });
        format!("{:.2}× {worse}{ci}", 1.0 / r)
    } else if r >= 1.0 {
        // "x % faster" = throughput gain: ratio − 1.
        let ci = ci.map_or(String::new(), |c| {
            format!(" (95% CI {})", pct_range(c.lo - 1.0, c.hi - 1.0))
        });
        format!("{}% {better}{ci}", pct(r - 1.0))
    } else {
        // "x % slower" = time increase: 1/ratio − 1.
        let ci = ci.map_or(String::new(), |c| {
            format!(
                " (95% CI {})",
                pct_range(1.0 / c.hi - 1.0, 1.0 / c.lo - 1.0)
            )
        });
        format!("{}% {worse}{ci}", pct(1.0 / r - 1.0))
    }
}

fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p.abs() >= 10.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

/// "p = 0.003, Mann-Whitney" / "p < 0.001, Welch".
pub fn describe_p(v: &Versus) -> String {
    let test = match v.test {
        TestKind::Welch => "Welch t-test",
        TestKind::MannWhitney => "Mann-Whitney U",
    };
    match v.p {
        Some(p) if p < 0.001 => format!("p < 0.001 {test}"),
        Some(p) => format!("p = {p:.3} {test}"),
        None => format!("no p-value ({test} could not run)"),
    }
}

/// Why a difference is not significant, naming the rule that said no:
/// "not significant: p = 0.095 Mann-Whitney U ≥ 0.05 with 5 runs per arm".
/// A difference counts only when the test gives p < 0.05 AND the 95 %
/// interval of the ratio excludes 1; when only one of them says yes, both
/// are stated, so a CI that excludes no change never reads as a
/// contradiction.
pub fn not_significant_why(v: &Versus) -> String {
    let (n1, n2) = (v.detail.baseline.n, v.detail.candidate.n);
    let runs = if n1 == n2 {
        format!("{n1} runs per arm")
    } else {
        format!("{n1} and {n2} runs")
    };
    let ci_excludes_one = v.ratio_ci.is_some_and(|c| !c.contains(1.0));
    let ci = match v.ratio_ci {
        None => "the 95% CI of the ratio is unbounded".to_string(),
        Some(_) if ci_excludes_one => "the 95% CI alone excludes no change".to_string(),
        Some(_) => "the 95% CI includes no change".to_string(),
    };
    match v.p {
        Some(p) if p < ALPHA => format!(
            "not significant: {ci}, although {} < {ALPHA} with {runs}",
            describe_p(v)
        ),
        Some(_) => {
            let mut s = format!("not significant: {} ≥ {ALPHA} with {runs}", describe_p(v));
            if v.test == TestKind::MannWhitney && min_mann_whitney_p(n1, n2) >= ALPHA {
                s.push_str(&format!(
                    " (the smallest p it can reach is {:.2})",
                    min_mann_whitney_p(n1, n2)
                ));
            }
            if ci_excludes_one {
                s.push_str(&format!(", although {ci}"));
            }
            s
        }
        None => format!("not significant: {} with {runs}", describe_p(v)),
    }
}

/// Smallest two-sided p-value an exact Mann-Whitney test can reach with
/// n1 and n2 runs: 2 / C(n1 + n2, n1).
pub fn min_mann_whitney_p(n1: usize, n2: usize) -> f64 {
    let (n, k) = (n1 + n2, n1.min(n2));
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// The caveats every verdict carries: arms not applicable here (grouped
/// by reason), failed runs, and wall-time outliers.
fn caveats(arms: &[ArmReport], not_applicable: &[NotApplicable]) -> Vec<Caveat> {
    let mut caveats = Vec::new();
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for na in not_applicable {
        match groups.iter_mut().find(|(_, r)| *r == na.reason) {
            Some(g) => g.0.push(&na.what),
            None => groups.push((vec![&na.what], &na.reason)),
        }
    }
    for (what, reason) in groups {
        caveats.push(Caveat::new(format!(
            "{}: not applicable here: {reason}",
            what.join(", ")
        )));
    }
    for a in arms {
        if !a.failed.is_empty() {
            let why = &a.failed[0].why;
            caveats.push(Caveat::new(format!(
                "{}: {} failed run{} ({why}{}), excluded from the statistics",
                a.label,
                a.failed.len(),
                if a.failed.len() == 1 { "" } else { "s" },
                if a.failed.len() > 1 { ", ..." } else { "" }
            )));
        }
        if let Some(w) = &a.outlier_warning {
            caveats.push(Caveat {
                text: format!("{}: {}", a.label, w.text),
                advice: w.advice,
            });
        }
        for m in &a.metrics {
            let Some(p) = &m.def.program else { continue };
            if p.optional || m.missing_runs == 0 {
                continue;
            }
            caveats.push(Caveat::new(format!(
                "{}: {} failed measurement{} of {} ({}), left out of its statistics",
                a.label,
                m.missing_runs,
                if m.missing_runs == 1 { "" } else { "s" },
                m.def.key,
                m.unavailable.as_deref().unwrap_or("no value")
            )));
        }
    }
    caveats
}

/// The fixed-duration caveat (see [`crate::fixed`]).
fn fixed_caveat(f: &FixedDuration, objective: &str) -> Caveat {
    let same = format!(
        "every arm{} took the same wall time (within {:.1}%) but {}",
        if f.by_fastest {
            "'s fastest run (other work stretched some runs)"
        } else {
            ""
        },
        f.wall_spread_percent,
        f.differs.join("; ")
    );
    if f.metric_used {
        Caveat::new(format!(
            "{same}: the program runs for a set time, so the verdict is on {objective}, not on wall time"
        ))
    } else {
        let preset = f
            .preset
            .as_deref()
            .and_then(|p| PRESETS.iter().find(|x| x.name == p))
            .map(|p| p.name);
        Caveat {
            text: format!(
                "{same}: the program probably runs for a set time (or until stopped), so wall time cannot rank the arms"
            ),
            advice: Some(Advice::UseMetric { preset }),
        }
    }
}

/// Decides. `arms` carry their comparisons with the baseline.
/// `objective`: the program metric the verdict is on (None: wall time);
/// `fixed`: what the fixed-duration check found.
pub fn decide(
    arms: &[ArmReport],
    baseline: Option<&str>,
    not_applicable: &[NotApplicable],
    runs_per_arm: usize,
    objective: Option<&str>,
    fixed: Option<FixedDuration>,
) -> Verdict {
    let v = decide_on(
        arms,
        baseline,
        not_applicable,
        runs_per_arm,
        objective,
        fixed.as_ref(),
    );
    Verdict {
        objective: objective.unwrap_or("wall_s").to_string(),
        fixed_duration: fixed,
        ..v
    }
}

fn decide_on(
    arms: &[ArmReport],
    baseline: Option<&str>,
    not_applicable: &[NotApplicable],
    runs_per_arm: usize,
    objective: Option<&str>,
    fixed: Option<&FixedDuration>,
) -> Verdict {
    let mut caveats = caveats(arms, not_applicable);
    let groups = identical_groups(arms);
    let same_placement: Vec<Vec<String>> = groups
        .iter()
        .map(|g| g.iter().map(|a| a.id.clone()).collect())
        .collect();
    for g in &groups {
        let labels: Vec<&str> = g.iter().map(|a| a.label.as_str()).collect();
        caveats.push(Caveat::new(format!(
            "{} run the same placement here ({}): a difference between them is noise, not placement",
            join_and(&labels),
            g[0].placement
        )));
    }
    if let Some(f) = fixed {
        caveats.insert(0, fixed_caveat(f, objective.unwrap_or("wall time")));
    }
    let verdict = |decision, headline, evidence, caveats| Verdict {
        decision,
        headline,
        evidence,
        caveats,
        objective: String::new(),
        fixed_duration: None,
        same_placement: same_placement.clone(),
    };
    let base = baseline.and_then(|b| arms.iter().find(|a| a.id == b));
    let Some(base) = base else {
        return verdict(
            Decision::NotEnoughData,
            "Nothing to compare: no placement could run on this machine.".into(),
            Vec::new(),
            caveats,
        );
    };
    let others: Vec<&ArmReport> = arms.iter().filter(|a| a.id != base.id).collect();
    if others.is_empty() {
        return verdict(
            Decision::NotEnoughData,
            format!(
                "Only {} could run here, so there is nothing to compare it with.",
                base.label
            ),
            Vec::new(),
            caveats,
        );
    }
    caveats.extend(run_count_caveat(arms, runs_per_arm));
    let obj = Objective::of(arms, objective);
    let ev = evidence(base, &others, &groups, &obj);
    if base.measured < 2 {
        return verdict(
            Decision::NotEnoughData,
            format!(
                "Not enough data: the baseline {} has {} successful run{} (at least 2 are needed).",
                base.label,
                base.measured,
                if base.measured == 1 { "" } else { "s" }
            ),
            ev.lines,
            caveats,
        );
    }
    let (decision, mut headline) = headline(base, &others, ev.best, &ev.negligible_wins, &obj);
    if let Decision::Use { arm } = &decision {
        let chosen = arms.iter().find(|a| &a.id == arm).expect("the chosen arm");
        let same = twins(chosen, &groups);
        if !same.is_empty() {
            headline = format!(
                "{} {} {} the same placement: either will do.",
                headline,
                join_and(&same),
                if same.len() == 1 { "runs" } else { "run" }
            );
        }
    }
    if fixed.is_some_and(|f| !f.metric_used) {
        headline = "Wall time cannot decide: every arm ran for the same time while CPU time or \
                    the program's own figures differ (see below); it probably runs for a set time."
            .to_string();
    }
    verdict(decision, headline, ev.lines, caveats)
}

/// What the verdict compares: wall time, or a program metric.
enum Objective {
    Wall,
    Program { key: String, better: Better },
}

impl Objective {
    fn of(arms: &[ArmReport], key: Option<&str>) -> Objective {
        let Some(key) = key else {
            return Objective::Wall;
        };
        let better = arms
            .iter()
            .find_map(|a| a.metric(key))
            .map_or(Better::Lower, |m| m.def.better());
        Objective::Program {
            key: key.to_string(),
            better,
        }
    }

    /// The arm against the baseline on this objective (ratio > 1: better).
    fn versus<'a>(&self, a: &'a ArmReport) -> Option<&'a Versus> {
        match self {
            Objective::Wall => a.time_vs_baseline.as_ref(),
            Objective::Program { key, .. } => a
                .metrics_vs_baseline
                .iter()
                .find(|m| &m.key == key)
                .map(|m| &m.versus),
        }
    }

    fn describe(&self, v: &Versus) -> String {
        match self {
            Objective::Wall => describe_time(v),
            Objective::Program { key, better } => describe_metric(key, *better, v),
        }
    }
}

/// What the number of runs per arm allows: a rank test that cannot reach
/// significance at all, or the rank test only (too few runs for Welch).
fn run_count_caveat(arms: &[ArmReport], runs_per_arm: usize) -> Option<Caveat> {
    let min_n = arms.iter().map(|a| a.measured).min().unwrap_or(0);
    if min_n >= 2 && min_mann_whitney_p(min_n, min_n) >= ALPHA {
        Some(Caveat {
            text: format!(
                "with {min_n} runs per arm a rank test cannot reach p < {ALPHA} (smallest possible p = {:.2})",
                min_mann_whitney_p(min_n, min_n)
            ),
            advice: Some(Advice::MoreRuns { at_least: 5 }),
        })
    } else if runs_per_arm < pinsight_stats::FEW_RUNS {
        Some(Caveat {
            text: format!(
                "{runs_per_arm} runs per arm: the distribution-free Mann-Whitney test is used"
            ),
            advice: Some(Advice::RunsForWelch {
                at_least: pinsight_stats::FEW_RUNS,
            }),
        })
    } else {
        None
    }
}

/// One evidence line per arm against the baseline, and the candidates
/// for the headline.
struct Evidence<'a> {
    lines: Vec<String>,
    /// The significantly and noticeably faster arm with the largest speed-up.
    best: Option<(&'a ArmReport, &'a Versus)>,
    /// Arms significantly but negligibly faster.
    negligible_wins: Vec<String>,
}

fn evidence<'a>(
    base: &ArmReport,
    others: &[&'a ArmReport],
    groups: &[Vec<&ArmReport>],
    obj: &Objective,
) -> Evidence<'a> {
    let mut ev = Evidence {
        lines: Vec::new(),
        best: None,
        negligible_wins: Vec::new(),
    };
    for &a in others {
        if same_placement(a, base) {
            // The same placement as the baseline: any difference is noise,
            // never a reason to choose it.
            ev.lines.push(format!(
                "{}: the same placement as {}: any difference is noise",
                a.label, base.label
            ));
            continue;
        }
        let Some(v) = obj.versus(a) else {
            ev.lines.push(format!(
                "{}: not compared ({} successful run{}; {} has {})",
                a.label,
                a.measured,
                if a.measured == 1 { "" } else { "s" },
                base.label,
                base.measured
            ));
            continue;
        };
        let mut line = evidence_line(a, v, obj);
        let same = twins(a, groups);
        if !same.is_empty() {
            line.push_str(&format!(" (the same placement as {})", join_and(&same)));
        }
        ev.lines.push(line);
        if v.significant && v.ratio > 1.0 {
            if v.negligible {
                ev.negligible_wins.push(a.label.clone());
            } else if ev.best.is_none_or(|(_, b)| v.ratio > b.ratio) {
                ev.best = Some((a, v));
            }
        }
    }
    ev
}

/// "p-pinned: 1.12× faster (…), p = 0.003 (Welch), energy …".
fn evidence_line(a: &ArmReport, v: &Versus, obj: &Objective) -> String {
    let mut line = if v.significant {
        let mut s = format!("{}: {}, {}", a.label, obj.describe(v), describe_p(v));
        if v.negligible {
            s.push_str(&format!(", negligible (< {NEGLIGIBLE_PERCENT}%)"));
        }
        s
    } else {
        format!(
            "{}: {}, {}",
            a.label,
            obj.describe(v),
            not_significant_why(v)
        )
    };
    if let (Objective::Program { .. }, Some(t)) = (obj, &a.time_vs_baseline) {
        line.push_str(&format!("; wall time {}", describe_time(t)));
    }
    if let Some(e) = &a.energy_vs_baseline {
        if e.significant && !e.negligible {
            line.push_str(&format!(", {}", describe_energy(e)));
        } else {
            line.push_str(", energy: no significant difference");
        }
        if let Some(edp) = a.edp_change_percent {
            line.push_str(&format!(", EDP {edp:+.0}%"));
        }
    }
    line
}

/// The decision and its one-sentence headline.
fn headline(
    base: &ArmReport,
    others: &[&ArmReport],
    best: Option<(&ArmReport, &Versus)>,
    negligible_wins: &[String],
    obj: &Objective,
) -> (Decision, String) {
    let (faster, slower_word) = match obj {
        Objective::Wall => ("faster", "slower"),
        Objective::Program { .. } => ("better", "worse"),
    };
    let leave = if base.policy == "os" {
        "leave it to the OS".to_string()
    } else {
        format!("keep {}", base.label)
    };
    let keep = Decision::KeepBaseline {
        arm: base.id.clone(),
    };
    if let Some((a, v)) = best {
        let mut h = format!("Use {}: {} than {}", a.label, obj.describe(v), base.label);
        if let Some(e) = &a.energy_vs_baseline {
            if e.significant && !e.negligible {
                h.push_str(&format!(", {}", describe_energy(e)));
            }
        }
        h.push('.');
        return (Decision::Use { arm: a.id.clone() }, h);
    }
    if !negligible_wins.is_empty() {
        return (
            keep,
            format!(
                "No placement is noticeably {faster} — {leave}: {} {} significantly but negligibly {faster} (< {NEGLIGIBLE_PERCENT}%).",
                negligible_wins.join(", "),
                if negligible_wins.len() == 1 { "is" } else { "are" }
            ),
        );
    }
    let slower: Vec<&str> = others
        .iter()
        .filter(|a| !same_placement(a, base))
        .filter(|a| {
            obj.versus(a)
                .is_some_and(|v| v.significant && v.ratio < 1.0)
        })
        .map(|a| a.label.as_str())
        .collect();
    if slower.is_empty() {
        let what = match obj {
            Objective::Wall => String::new(),
            Objective::Program { key, .. } => format!(" in {key}"),
        };
        return (keep, format!("No significant difference{what} — {leave}."));
    }
    let mut s = leave;
    if let Some(c) = s.get_mut(0..1) {
        c.make_ascii_uppercase();
    }
    let h = format!(
        "{s}: no placement is significantly {faster} than {}; {} {} {slower_word}.",
        base.label,
        slower.join(", "),
        if slower.len() == 1 { "is" } else { "are" }
    );
    (keep, h)
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_names_the_inputs_to_change() {
        let name = |i: Input| match i {
            Input::Runs => "RUNS",
            Input::Metric => "METRIC",
            _ => "OTHER",
        };
        let more = Advice::MoreRuns { at_least: 5 }.named(&name);
        assert_eq!(more, ": use RUNS 5 or more");
        let metric = Advice::UseMetric { preset: None }.named(&name);
        assert_eq!(
            metric,
            "; compare the program's own result: METRIC NAME=REGEX"
        );
        let preset = Advice::UseMetric {
            preset: Some("sysbench"),
        };
        assert!(preset.named(&name).ends_with("METRIC sysbench"));
    }

    #[test]
    fn percent_ranges_read_naturally() {
        assert_eq!(pct_range(0.051, 0.087), "5.1–8.7%");
        assert_eq!(pct_range(-0.47, 1.53), "−47% to +153%");
        assert_eq!(pct_range(0.12, f64::INFINITY), "+12% or more");
        assert_eq!(pct_range(-0.2, f64::INFINITY), "−20% or more");
        assert_eq!(pct_range(f64::NEG_INFINITY, -0.2), "up to −20%");
    }

    /// A Versus on time whose Fieller interval starts at 0 (a baseline too
    /// noisy to bound the ratio away from zero: pinsight-stats cuts the
    /// interval there, a ratio of positive means being positive).
    fn from_zero(ratio: f64, hi: f64) -> Versus {
        let base = [0.2, 0.25, 3.1];
        let arm = [1.0, 1.1, 0.9];
        let detail = pinsight_stats::compare(&base, &arm).unwrap();
        Versus {
            baseline: "os".into(),
            ratio,
            ratio_ci: Some(pinsight_stats::Interval {
                lo: 0.0,
                hi,
                level: 0.95,
            }),
            p: detail.p,
            test: detail.test,
            test_reason: String::new(),
            significant: false,
            negligible: false,
            detail,
        }
    }

    #[test]
    fn an_interval_from_zero_never_reads_infinite_or_negative() {
        for (ratio, hi) in [(0.5, 1.3), (0.9, 1.3), (1.1, 1.6), (2.0, 3.0)] {
            let v = from_zero(ratio, hi);
            for s in [
                describe_time(&v),
                describe_energy(&v),
                describe_metric("m", Better::Lower, &v),
                describe_metric("m", Better::Higher, &v),
            ] {
                assert!(!s.contains("inf") && !s.contains("NaN"), "{s}");
                assert!(s.contains("(95% CI "), "{s}");
            }
        }
        assert_eq!(
            describe_time(&from_zero(0.5, 1.3)),
            "2.00× slower (95% CI 0.77× or more)"
        );
        assert_eq!(
            describe_time(&from_zero(0.9, 1.3)),
            "11% slower (95% CI −23% or more)"
        );
        assert_eq!(
            describe_time(&from_zero(1.1, 1.6)),
            "10% faster (95% CI −100% to +60%)"
        );
    }

    #[test]
    fn smallest_rank_test_p() {
        assert!((min_mann_whitney_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((min_mann_whitney_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(min_mann_whitney_p(1, 1), 1.0);
    }
}
