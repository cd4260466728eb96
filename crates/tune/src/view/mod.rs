//! `pinsight tune` and `pinsight model` as text and SVG: the recommendation
//! in plain words with its evidence, the parameters, the predictions, the
//! validation runs, the recommendation in every dialect `plan` speaks, and
//! the speedup curves P-first vs E-first (table and SVG line chart).
//! Every text line fits the width given (80 columns by default).

pub mod output;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use pinsight_compare::view::layout::{hanging, width as text_width};
use pinsight_compare::view::svg::ticks;
use pinsight_term::escape as esc;
use pinsight_term::{self as term, Wrap};
use pinsight_tune_model::{
    Alternative, Bound, Caveat, Change, Choice, CurvePoint, Estimate, Goal, ModelKind, Param,
    ParamStatus, RecommendedBy, TuneReport, AT_BOUND_CHI2,
};
use std::fmt::Write;

/// The recommendation in one dialect: its text, or why the dialect cannot
/// say it (the planner's reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// Dialect name as `plan --format` spells it, or "pinsight".
    pub name: String,
    /// The rendered text, or the reason it cannot be expressed.
    pub text: Result<String, String>,
}

/// What the text needs besides the report.
#[derive(Clone, Debug, Default)]
pub struct TuneView {
    /// The machine in words (`6P+8E, 1 SMT sibling per P-core`).
    pub machine: String,
    /// Layout notes and warnings to show under the machine.
    pub notes: Vec<String>,
    /// Show every configuration instead of the measured ones, the best
    /// [`TuneView::top`] and the runner-up.
    pub all: bool,
    /// How many of the best predictions to show without `all`.
    pub top: usize,
    /// The recommendation in each dialect.
    pub dialects: Vec<Dialect>,
    /// Text width (columns).
    pub width: usize,
}

/// Seconds with three significant digits: 4.12 s, 0.323 s, 41.2 s, 412 s.
pub fn seconds(s: f64) -> String {
    format!("{} s", sig3(s))
}

fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let a = x.abs();
    if a == 0.0 {
        return "0".to_owned();
    }
    let d = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else if a >= 0.1 {
        3
    } else if a >= 0.01 {
        4
    } else {
        return format!("{x:.2e}");
    };
    let s = format!("{x:.d$}");
    // 9.999 rounds to "10.00": one decimal fewer past the boundary.
    match s.parse::<f64>() {
        Ok(r) if d > 0 && r.abs() >= 10f64.powi(3 - d as i32) => {
            let d = d - 1;
            format!("{x:.d$}")
        }
        _ => s,
    }
}

fn ci_text(ci: [f64; 2]) -> String {
    format!("{}–{}", sig3(ci[0]), sig3(ci[1]))
}

fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p.abs() < 1.0 && p != 0.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// "6 P-cores, no SMT, no E-cores" (or "8 cores, 8 SMT siblings" on one kind).
fn cores_words(c: &Choice, one_kind: bool) -> String {
    let smt = if c.smt == 0 {
        "no SMT".to_owned()
    } else {
        plural(c.smt, "SMT sibling", "SMT siblings")
    };
    if one_kind {
        return format!("{}, {smt}", plural(c.p, "core", "cores"));
    }
    let p = if c.p == 0 {
        "no P-cores".to_owned()
    } else {
        plural(c.p, "P-core", "P-cores")
    };
    let e = if c.e == 0 {
        "no E-cores".to_owned()
    } else {
        plural(c.e, "E-core", "E-cores")
    };
    if c.p == 0 {
        format!("{e}, {smt}, {p}")
    } else {
        format!("{p}, {smt}, {e}")
    }
}

fn config_label(c: &Choice, one_kind: bool) -> String {
    if one_kind {
        if c.smt == 0 {
            format!("{}", c.p)
        } else {
            format!("{}+{}smt", c.p, c.smt)
        }
    } else {
        format!("{}P+{}E+{}smt", c.p, c.e, c.smt)
    }
}

fn goal_metric(goal: Goal) -> &'static str {
    match goal {
        Goal::Edp => " more energy × time",
        Goal::Energy => " more energy",
        _ => "",
    }
}

fn alternative_words(a: &Alternative, goal: Goal) -> String {
    let what = match a.change {
        Change::AddE => format!("adding the {}", plural(a.config.e, "E-core", "E-cores")),
        Change::AddP => format!("adding the {}", plural(a.config.p, "P-core", "P-cores")),
        Change::DropE => "leaving out the E-cores".to_owned(),
        Change::AddSmt => format!(
            "adding the {}",
            plural(a.config.smt, "SMT sibling", "SMT siblings")
        ),
        Change::DropSmt => "leaving out the SMT siblings".to_owned(),
    };
    let mark = if a.config.extrapolated {
        " (extrapolated)"
    } else {
        ""
    };
    if a.cost.abs() < 0.005 {
        format!("{what} changes it by less than 0.5%{mark}")
    } else {
        format!("{what} costs {}{}{mark}", pct(a.cost), goal_metric(goal))
    }
}

fn goal_value(goal: Goal, v: f64) -> String {
    match goal {
        Goal::Energy => format!("{} J", sig3(v)),
        Goal::Edp => format!("{} J·s", sig3(v)),
        _ => seconds(v),
    }
}

fn short_config(c: pinsight_tune_model::Config, one_kind: bool) -> String {
    if one_kind {
        format!("{}+{}smt", c.p, c.smt)
    } else {
        c.to_string()
    }
}

/// One reason the model is not trusted, in words.
pub fn caveat_words(c: &Caveat, r: &TuneReport) -> String {
    match c {
        Caveat::LowR2 { r2, min } => {
            format!("the model explains little of the runs (R² {r2:.2}, below {min:.2})")
        }
        Caveat::ResidualAboveSpread { rse, spread } => format!(
            "the model misses the runs by {} while they vary by {} among themselves",
            pct(*rse),
            pct(*spread)
        ),
        Caveat::ModelsDisagree {
            model,
            contention,
            picks,
            cost,
        } => format!(
            "the {}{} model fits as well and recommends {} instead ({} apart)",
            model.name(),
            if *contention { " + contention" } else { "" },
            short_config(*picks, r.one_kind),
            pct(*cost)
        ),
        Caveat::MeasuredBeatsModel {
            config,
            measured,
            model_pick,
            model_value,
        } => format!(
            "{} measured {}, better than the model's pick {} at {}: fit and measurements disagree",
            short_config(*config, r.one_kind),
            goal_value(r.goal, *measured),
            short_config(*model_pick, r.one_kind),
            goal_value(r.goal, *model_value)
        ),
        Caveat::AtBound {
            param,
            bound,
            limit,
            beyond,
            change,
        } => {
            let name = match *param {
                "sf" => "sf (P-core speed over E-core)",
                "smt_gain" => "the SMT gain",
                "f" => "the parallel fraction f",
                "contention" => "the contention c",
                other => other,
            };
            let side = match bound {
                Bound::Lower => "lower",
                Bound::Upper => "upper",
            };
            let why = if *change < -AT_BOUND_CHI2 {
                format!("the runs fit better past it ({})", bound_value(*beyond))
            } else {
                "the runs fit as well past it (nothing measured pins it from that side)".to_string()
            };
            format!(
                "{name} sits at its {side} bound {} and {why}: the fit is cut short there",
                bound_value(*limit)
            )
        }
    }
}

/// A parameter's value at or past a bound, as few digits as it needs.
fn bound_value(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The recommendation when the model is not trusted: the best measured
/// configuration, and why.
fn fallback_words(r: &TuneReport) -> String {
    let b = &r.recommended;
    let mut s = format!("use {}, the best measured", cores_words(b, r.one_kind));
    if let Some(m) = b.measured_s {
        let _ = write!(
            s,
            " ({} over {})",
            seconds(m),
            plural(b.runs as u32, "run", "runs")
        );
    }
    let why: Vec<String> = r.caveats.iter().map(|c| caveat_words(c, r)).collect();
    let _ = write!(s, "; the model is not trusted: {}", why.join("; "));
    for a in [&r.evidence.other_kind, &r.evidence.smt]
        .into_iter()
        .flatten()
    {
        let _ = write!(s, "; measured, {}", alternative_words(a, r.goal));
    }
    s.push('.');
    s
}

fn r2_text(r: &TuneReport) -> String {
    r.fit
        .r2
        .map_or_else(|| "R² n/a".to_owned(), |v| format!("R² {v:.2}"))
}

/// True when the other model fits about as well as the chosen one (its
/// best AICc within 2 of the chosen one's, the usual "no real difference"
/// rule): the runs do not say how the program shares its work.
fn models_tied(r: &TuneReport) -> bool {
    let chosen = r
        .fit
        .candidates
        .iter()
        .filter(|c| c.model == r.model)
        .map(|c| c.aicc)
        .fold(f64::INFINITY, f64::min);
    let other = r
        .fit
        .candidates
        .iter()
        .filter(|c| c.model != r.model)
        .map(|c| c.aicc)
        .fold(f64::INFINITY, f64::min);
    !r.one_kind && chosen.is_finite() && other.is_finite() && (other - chosen).abs() < 2.0
}

fn model_words(r: &TuneReport) -> String {
    let mut s = match r.model {
        // One kind: both models are Amdahl's law (they differ only in how
        // SMT siblings pace a static split), so name neither.
        _ if r.one_kind => format!("Amdahl's law fits ({})", r2_text(r)),
        _ if models_tied(r) => format!(
            "the runs cannot tell whether this program shares work dynamically or splits it statically (both models fit, {})",
            r2_text(r)
        ),
        ModelKind::Static => format!(
            "this program splits work statically (static model fits, {})",
            r2_text(r)
        ),
        ModelKind::Dynamic => format!(
            "this program shares work dynamically, so every core adds its speed (dynamic model fits, {})",
            r2_text(r)
        ),
    };
    if r.contention_term {
        let _ = write!(
            s,
            "; each added core adds {} of the one-core time (contention)",
            pct(r.params.contention.value)
        );
    }
    s
}

fn estimate_words(label: &str, e: &Option<Estimate>, unit: &str) -> String {
    e.map_or_else(String::new, |e| {
        format!(", {label} {} {unit} (CI {})", sig3(e.value), ci_text(e.ci))
    })
}

/// The recommendation in words: what to use, the prediction and the
/// measurement, and why (the cost of the other kind, the model, SMT).
pub fn recommendation_words(r: &TuneReport) -> String {
    if r.recommended_by == RecommendedBy::BestMeasured {
        return fallback_words(r);
    }
    let b = &r.recommended;
    let mut s = format!(
        "use {}: predicted {} (CI {}){}",
        cores_words(b, r.one_kind),
        seconds(b.predicted_s),
        ci_text(b.ci),
        if b.extrapolated {
            ", extrapolated beyond the runs"
        } else {
            ""
        }
    );
    if let Some(m) = b.measured_s {
        let _ = write!(s, ", measured {}", seconds(m));
    }
    if r.goal != Goal::Time {
        s.push_str(&estimate_words("energy", &b.energy_j, "J"));
        if r.goal == Goal::Edp {
            s.push_str(&estimate_words("EDP", &b.edp, "J·s"));
        }
    }
    match &r.evidence.other_kind {
        Some(a) => {
            // "because" only where the model explains the cost: a static
            // split is paced by the slowest core (adding a kind costs), a
            // dynamic one adds every core's speed (leaving one out costs).
            let explains = !models_tied(r)
                && matches!(
                    (r.model, a.change),
                    (ModelKind::Static, Change::AddE | Change::AddP)
                        | (ModelKind::Dynamic, Change::DropE)
                );
            let join = if explains { " because " } else { "; " };
            let _ = write!(
                s,
                "; {}{join}{}",
                alternative_words(a, r.goal),
                model_words(r)
            );
        }
        None => {
            let _ = write!(s, "; {}", model_words(r));
        }
    }
    if let Some(a) = &r.evidence.smt {
        let _ = write!(s, "; {}", alternative_words(a, r.goal));
    }
    s.push('.');
    s
}

fn status_text(q: &Param) -> &'static str {
    match (q.status, q.bound) {
        (ParamStatus::Fitted, Some(Bound::Lower)) => "fitted, at lower bound",
        (ParamStatus::Fitted, Some(Bound::Upper)) => "fitted, at upper bound",
        (ParamStatus::Fitted, None) => "fitted",
        (ParamStatus::OneKind, _) => "held at 1: one kind",
        (ParamStatus::NoSmtRuns, _) => "held at 0: no SMT runs",
        (ParamStatus::NotNeeded, _) => "not needed",
        (ParamStatus::NotIdentified, _) => "held: runs do not identify it",
    }
}

fn table(width: usize, header: Vec<&str>, right_from: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    let n = header.len();
    t.set_header(header);
    for i in right_from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn push_table(out: &mut String, t: &Table) {
    for line in t.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn params_table(r: &TuneReport, width: usize) -> Table {
    let mut t = table(width, vec!["parameter", "value", "95% CI", "status"], 1);
    let p = &r.params;
    let row = |t: &mut Table, name: &str, q: &Param| {
        t.add_row(vec![
            name.to_owned(),
            sig3(q.value),
            if q.status == ParamStatus::Fitted {
                ci_text(q.ci)
            } else {
                "-".to_owned()
            },
            status_text(q).to_owned(),
        ]);
    };
    row(&mut t, "f (parallel fraction)", &p.f);
    row(&mut t, "sf (P-core / E-core)", &p.sf);
    row(&mut t, "smt_gain", &p.smt_gain);
    row(
        &mut t,
        if r.one_kind {
            "t1 (1 core, s)"
        } else {
            "t1 (1 P-core, s)"
        },
        &p.t1,
    );
    row(&mut t, "contention", &p.contention);
    if let Some(pw) = &r.power {
        for (name, e) in [
            ("power base (W)", pw.params.base_w),
            ("power per P-core (W)", pw.params.per_p_w),
            ("power per E-core (W)", pw.params.per_e_w),
            ("power per SMT (W)", pw.params.per_smt_w),
        ] {
            t.add_row(vec![
                name.to_owned(),
                sig3(e.value),
                ci_text(e.ci),
                "fitted".to_owned(),
            ]);
        }
    }
    t
}

/// Which predictions the text shows: with `all` every one, else the
/// measured ones, the best `top` and the runner-up; best first.
pub fn shown_predictions(r: &TuneReport, all: bool, top: usize) -> Vec<Choice> {
    let score = |c: &Choice| c.score(r.goal).unwrap_or(f64::INFINITY);
    let mut v: Vec<Choice> = r.predictions.clone();
    v.sort_by(|a, b| score(a).total_cmp(&score(b)));
    if all {
        return v;
    }
    let runner = r.runner_up.map(|c| c.config());
    v.into_iter()
        .enumerate()
        .filter(|(i, c)| *i < top || c.runs > 0 || Some(c.config()) == runner)
        .map(|(_, c)| c)
        .collect()
}

fn predictions_table(r: &TuneReport, v: &TuneView) -> Table {
    let energy = r.power.is_some();
    let mut head = vec!["config", "threads", "predicted", "95% CI", "measured"];
    if energy {
        head.push("energy J");
    }
    head.push("");
    let mut t = table(v.width, head, 1);
    let best = r.recommended.config();
    let runner = r.runner_up.map(|c| c.config());
    for c in shown_predictions(r, v.all, v.top) {
        let mut row = vec![
            config_label(&c, r.one_kind),
            c.threads.to_string(),
            seconds(c.predicted_s),
            ci_text(c.ci),
            c.measured_s.map_or_else(
                || "-".to_owned(),
                |m| format!("{} ({})", seconds(m), c.runs),
            ),
        ];
        if energy {
            row.push(c.energy_j.map_or_else(|| "-".to_owned(), |e| sig3(e.value)));
        }
        let mut mark: Vec<&str> = Vec::new();
        if c.config() == best {
            mark.push("best");
        } else if Some(c.config()) == runner {
            mark.push("runner-up");
        }
        if c.extrapolated {
            mark.push("extrap.");
        }
        row.push(mark.join(", "));
        t.add_row(row);
    }
    let last = t.column_count().saturating_sub(1);
    if let Some(col) = t.column_mut(last) {
        col.set_cell_alignment(CellAlignment::Left);
    }
    t
}

fn validation_table(r: &TuneReport, width: usize) -> Table {
    let mut t = table(
        width,
        vec!["config", "predicted", "95% CI", "measured", "error"],
        1,
    );
    for row in &r.validation {
        let c = Choice {
            p: row.p,
            e: row.e,
            smt: row.smt,
            threads: row.p + row.e + row.smt,
            predicted_s: row.predicted_s,
            ci: row.ci,
            measured_s: Some(row.measured_s),
            runs: row.runs,
            energy_j: None,
            edp: None,
            extrapolated: false,
        };
        t.add_row(vec![
            config_label(&c, r.one_kind),
            seconds(row.predicted_s),
            ci_text(row.ci),
            format!("{} ({})", seconds(row.measured_s), row.runs),
            format!("{:+.1}%", row.error * 100.0),
        ]);
    }
    t
}

fn fit_line(r: &TuneReport) -> String {
    let name =
        |m: ModelKind, c: bool| format!("{}{}", m.name(), if c { " + contention" } else { "" });
    if r.one_kind {
        // One kind: the two models are both Amdahl's law; name neither.
        let mut s =
            format!(
            "Amdahl's law{} fits{} (one kind of core: the dynamic and static models coincide); {}",
            if r.contention_term { " + contention" } else { "" },
            if r.recommended_by == RecommendedBy::BestMeasured {
                " least badly, not well enough to trust"
            } else {
                ""
            },
            r2_text(r)
        );
        s.push_str(&fit_tail(r));
        return s;
    }
    let chosen = name(r.model, r.contention_term);
    let mut s = if r.recommended_by == RecommendedBy::BestMeasured {
        format!("{chosen} fits least badly, not well enough to trust")
    } else {
        format!("{chosen} fits best")
    };
    let mut others: Vec<String> = r
        .fit
        .candidates
        .iter()
        .map(|c| format!("{} {:.1}", name(c.model, c.contention), c.aicc))
        .collect();
    if !others.is_empty() {
        others.sort();
        let _ = write!(s, " (AICc: {})", others.join(", "));
    }
    let _ = write!(s, "; {}", r2_text(r));
    s.push_str(&fit_tail(r));
    s
}

/// The end of the model line: the residual error per run, then the runs
/// and configurations fitted.
fn fit_tail(r: &TuneReport) -> String {
    let mut s = String::new();
    if let Some(rse) = r.fit.rse {
        let _ = write!(s, ", residual error {} per run", pct(rse));
    }
    let _ = write!(
        s,
        "; {} at {}.",
        plural(r.fit.runs as u32, "run", "runs"),
        plural(r.fit.configs as u32, "configuration", "configurations")
    );
    s
}

/// `first` then `text`, wrapped to `max` columns as one paragraph, lines
/// after the first indented by `indent` spaces.
fn paragraph(first: &str, text: &str, indent: usize, max: usize) -> String {
    let pad = " ".repeat(indent);
    term::fill(
        text,
        Wrap::new(max.max(indent + 10))
            .indent(first, &pad)
            .break_long_words(),
    )
}

/// The whole `pinsight tune` text.
pub fn text(r: &TuneReport, v: &TuneView) -> String {
    let w = v.width.max(40);
    let mut out = header_lines(r, v, w);
    out.push('\n');
    out.push_str(&advice_text(r, w));
    out.push_str(&tables_text(r, v, w));
    if !v.dialects.is_empty() {
        out.push_str("\nRun it\n");
        for d in &v.dialects {
            out.push_str(&dialect_text(d, w));
        }
    }
    out
}

/// The lines above the advice: machine, goal, model, notes and the runs
/// outside this machine.
fn header_lines(r: &TuneReport, v: &TuneView, w: usize) -> String {
    let mut out = String::new();
    out.push_str(&hanging("Machine:  ", &v.machine, 10, w));
    out.push_str(&hanging("Goal:     ", r.goal.name(), 10, w));
    out.push_str(&hanging("Model:    ", &fit_line(r), 10, w));
    for n in &v.notes {
        out.push_str(&hanging("Note:     ", n, 10, w));
    }
    for c in &r.outside_machine {
        out.push_str(&hanging(
            "Warning:  ",
            &format!(
                "runs at {}P+{}E+{}smt do not fit this machine: fitted, not predicted nor recommended",
                c.p, c.e, c.smt
            ),
            10,
            w,
        ));
    }
    out
}

/// The advice paragraphs: what a machine of one kind means, the
/// recommendation, the runner-up and what is extrapolated.
fn advice_text(r: &TuneReport, w: usize) -> String {
    let mut out = String::new();
    if r.one_kind {
        out.push_str(&term::fill(
            "This machine has one kind of core, so tune chose the thread count and SMT only (Amdahl's law with a contention term).",
            Wrap::new(w).break_long_words(),
        ));
    }
    out.push_str(&paragraph(
        "Recommendation: ",
        &recommendation_words(r),
        2,
        w,
    ));
    if let Some(ru) = &r.runner_up {
        let (how, value) = match (r.recommended_by, ru.measured_s) {
            (RecommendedBy::BestMeasured, Some(m)) => ("measured", m),
            _ => ("predicted", ru.predicted_s),
        };
        out.push_str(&paragraph(
            "Runner-up: ",
            &format!(
                "{} ({}): {how} {}, {} worse.",
                cores_words(ru, r.one_kind),
                plural(ru.threads, "thread", "threads"),
                seconds(value),
                pct(r.gap)
            ),
            2,
            w,
        ));
    }
    if r.predictions.iter().any(|c| c.extrapolated) {
        out.push_str(&extrapolated_text(r, w));
    }
    out
}

/// The paragraph on configurations beyond what the runs used.
fn extrapolated_text(r: &TuneReport, w: usize) -> String {
    let s = r.span;
    let dims = if r.one_kind {
        format!("{} cores, {} SMT siblings", s.p, s.smt)
    } else {
        format!("{} P-cores, {} E-cores, {} SMT siblings", s.p, s.e, s.smt)
    };
    let tail = if r.extrapolate {
        "and may be recommended (--extrapolate)"
    } else {
        "and are not recommended (--extrapolate allows them)"
    };
    paragraph(
        "Extrapolated: ",
        &format!(
            "configurations beyond what the runs used (at most {dims}, or SMT without a fitted SMT gain) are predicted by the model's form alone, marked extrap., {tail}."
        ),
        2,
        w,
    )
}

/// The parameters, predictions and validation tables with their titles.
fn tables_text(r: &TuneReport, v: &TuneView, w: usize) -> String {
    let mut out = String::from("\nParameters\n");
    push_table(&mut out, &params_table(r, w));
    out.push_str(&format!(
        "\nPredictions ({})\n",
        if v.all {
            "every configuration".to_owned()
        } else {
            format!(
                "measured, best {} and runner-up; --all for all {}",
                v.top,
                r.predictions.len()
            )
        }
    ));
    push_table(&mut out, &predictions_table(r, v));
    if !r.validation.is_empty() {
        out.push_str("\nValidation (predicted from the design runs only)\n");
        push_table(&mut out, &validation_table(r, w));
    }
    out
}

/// One dialect's lines under "Run it", or why it cannot say it.
fn dialect_text(d: &Dialect, w: usize) -> String {
    let first = format!("  {:<16}", format!("{}:", d.name));
    let t = match &d.text {
        Ok(t) => t,
        Err(why) => return hanging(&first, &format!("cannot say it: {why}"), 18, w),
    };
    // Shell lines are never wrapped (they must paste as they are): beside
    // the name when they fit, else below it, indented, as long as they
    // need to be.
    let mut out = String::new();
    if t.lines().all(|l| 18 + text_width(l) <= w) {
        for (i, line) in t.lines().enumerate() {
            out.push_str(if i == 0 { &first } else { "                  " });
            out.push_str(line);
            out.push('\n');
        }
    } else {
        out.push_str(&format!("  {}:\n", d.name));
        for line in t.lines() {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The speedup curves as a table: cores, then for each order the
/// configuration and the speedup against one P-core (and one E-core on a
/// machine of two kinds).
pub fn curve_table(p_first: &[CurvePoint], e_first: &[CurvePoint], width: usize) -> String {
    let two = p_first.iter().any(|c| c.vs_e.is_some());
    let mut head = vec!["cores", "P-first", "vs 1P"];
    if two {
        head.extend(["vs 1E", "E-first", "vs 1P", "vs 1E"]);
    }
    let mut t = table(width, head, 0);
    for (i, pf) in p_first.iter().enumerate() {
        let mut row = vec![
            pf.cores.to_string(),
            format!("{}P+{}E", pf.config.p, pf.config.e),
            format!("{:.2}", pf.vs_p),
        ];
        if two {
            row.push(
                pf.vs_e
                    .map_or_else(|| "-".to_owned(), |x| format!("{x:.2}")),
            );
            if let Some(ef) = e_first.get(i) {
                row.push(format!("{}P+{}E", ef.config.p, ef.config.e));
                row.push(format!("{:.2}", ef.vs_p));
                row.push(
                    ef.vs_e
                        .map_or_else(|| "-".to_owned(), |x| format!("{x:.2}")),
                );
            }
        }
        t.add_row(row);
    }
    let mut out = String::new();
    push_table(&mut out, &t);
    out
}

/// The plot area of the speedup chart: its size, margins and scales.
struct CurveFrame {
    /// Cores at the right end of the x axis.
    xmax: f64,
    /// The highest speedup drawn.
    ymax: f64,
}

impl CurveFrame {
    const W: f64 = 640.0;
    const H: f64 = 400.0;
    const L: f64 = 60.0;
    const R: f64 = 20.0;
    const T: f64 = 40.0;
    const B: f64 = 50.0;

    /// The x coordinate of `v` cores.
    fn x(&self, v: f64) -> f64 {
        Self::L + (v - 0.0) / self.xmax * (Self::W - Self::L - Self::R)
    }

    /// The y coordinate of speedup `v`.
    fn y(&self, v: f64) -> f64 {
        Self::H - Self::B - v / (self.ymax * 1.05) * (Self::H - Self::T - Self::B)
    }

    /// The title, the grid with its ticks, the axes and their labels.
    fn axes(&self, title: &str) -> String {
        let (w, h, l, r, t, b) = (Self::W, Self::H, Self::L, Self::R, Self::T, Self::B);
        let mut out = String::new();
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="20" text-anchor="middle" font-size="14">{}</text>"##,
            w / 2.0,
            esc(title)
        );
        for tv in ticks(0.0, self.ymax * 1.05) {
            let yy = self.y(tv);
            let _ = write!(
                out,
                r##"<line x1="{l}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#444">{}</text>"##,
                w - r,
                l - 6.0,
                yy + 4.0,
                esc(&format!("{tv}"))
            );
        }
        for tv in ticks(0.0, self.xmax) {
            let xx = self.x(tv);
            let _ = write!(
                out,
                r##"<line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#888"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
                h - b,
                h - b + 5.0,
                h - b + 18.0,
                esc(&format!("{tv}"))
            );
        }
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#444"/><line x1="{l}" y1="{t}" x2="{l}" y2="{:.1}" stroke="#444"/>"##,
            h - b,
            w - r,
            h - b,
            h - b
        );
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">cores used</text><text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">speedup vs 1 P-core</text>"##,
            (l + w - r) / 2.0,
            h - 12.0,
            (t + h - b) / 2.0
        );
        out
    }

    /// Curve number `i`: its path and its legend entry.
    fn curve(&self, i: usize, name: &str, pts: &[CurvePoint], colour: &str) -> String {
        let d: Vec<String> = pts
            .iter()
            .filter(|c| c.vs_p.is_finite())
            .enumerate()
            .map(|(k, c)| {
                format!(
                    "{}{:.1},{:.1}",
                    if k == 0 { "M" } else { "L" },
                    self.x(f64::from(c.cores)),
                    self.y(c.vs_p)
                )
            })
            .collect();
        let mut out = String::new();
        let _ = write!(
            out,
            r##"<path d="{}" fill="none" stroke="{colour}" stroke-width="2"><title>{}</title></path>"##,
            d.join(" "),
            esc(name)
        );
        let l = Self::L;
        let ly = Self::T + 10.0 + 18.0 * i as f64;
        let _ = write!(
            out,
            r##"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            l + 10.0,
            l + 34.0,
            l + 40.0,
            ly + 4.0,
            esc(name)
        );
        out
    }
}

/// The speedup curves as an SVG line chart: x = cores used, y = speedup
/// against one P-core; one path per order (P-first, E-first), axes
/// labelled. On a machine of one kind one curve.
pub fn curve_svg(title: &str, p_first: &[CurvePoint], e_first: &[CurvePoint]) -> String {
    let two = p_first.iter().any(|c| c.vs_e.is_some());
    let frame = CurveFrame {
        xmax: p_first.len().max(1) as f64,
        ymax: p_first
            .iter()
            .chain(if two { e_first } else { &[] })
            .map(|c| c.vs_p)
            .filter(|v| v.is_finite())
            .fold(1.0f64, f64::max),
    };
    let (w, h) = (CurveFrame::W, CurveFrame::H);
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12">"##,
        t = esc(title)
    );
    out.push_str(&frame.axes(title));
    let mut curves = vec![("P-first", p_first, "#1f77b4")];
    if two {
        curves.push(("E-first", e_first, "#d62728"));
    }
    for (i, (name, pts, colour)) in curves.iter().enumerate() {
        out.push_str(&frame.curve(i, name, pts, colour));
    }
    out.push_str("</svg>");
    out
}

/// True when every line of `s` fits `width` display columns (for tests).
pub fn fits(s: &str, width: usize) -> bool {
    s.lines().all(|l| text_width(l) <= width)
}

/// What a live tune says on stderr once its runs end: the warnings of
/// its cleanup, then why it stopped short (interrupted, or a run failed).
pub fn live_ended(outcome: &crate::analysis::LiveOutcome) -> String {
    use crate::analysis::LiveEnd;
    let mut out = String::new();
    for w in &outcome.warnings {
        let _ = writeln!(out, "pinsight: warning: {w}");
    }
    match &outcome.end {
        LiveEnd::Interrupted { .. } => {
            out.push_str("pinsight: interrupted: runs stopped, machine restored, journal intact\n")
        }
        LiveEnd::Stopped { why } => {
            let _ = writeln!(out, "pinsight: error: stopped: {why}");
        }
        _ => {}
    }
    out
}

/// What a live tune says before it runs (for stderr): the journal's
/// warnings, then, unless `quiet`, the journal's path and the design it
/// runs.
pub fn announcement(session: &crate::TuneSession<'_>, quiet: bool) -> String {
    let path = session.journal_path().display();
    let mut out = String::new();
    for w in session.journal_warnings() {
        let _ = writeln!(out, "pinsight: warning: journal {path}: {w}");
    }
    if !quiet {
        let design: Vec<String> = session.design().iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "pinsight: journal: {path}");
        let line = format!(
            "pinsight: tuning on {}: {} configurations ({})",
            session.layout().describe(),
            design.len(),
            design.join(", ")
        );
        let _ = writeln!(out, "{}", term::wrap80(&line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_tune_that_stopped_says_its_warnings_then_why() {
        use crate::analysis::{LiveEnd, LiveOutcome};
        let outcome = LiveOutcome {
            end: LiveEnd::Stopped {
                why: "run 3 failed".into(),
            },
            warnings: vec!["restore failed".into()],
            resume: None,
        };
        assert_eq!(
            live_ended(&outcome),
            "pinsight: warning: restore failed\npinsight: error: stopped: run 3 failed\n"
        );
    }
    use pinsight_tune_model::{
        analyse, design, speedup_curve, FitOptions, Machine, Observation, Order, Theta,
    };

    const M: Machine = Machine {
        p_cores: 6,
        e_cores: 8,
        smt_per_p_core: 1,
        smt_per_e_core: 0,
    };

    fn report(model: ModelKind, sf: f64) -> TuneReport {
        let th = Theta {
            t1: 20.0,
            f: 0.99,
            sf,
            smt_gain: 0.1,
            contention: 0.0,
        };
        let runs: Vec<Observation> = design(&M)
            .into_iter()
            .flat_map(|c| std::iter::repeat_n(c, 3))
            .enumerate()
            .map(|(i, c)| Observation {
                config: c,
                time_s: model.time(&th, c) * (1.0 + 0.004 * ((i % 3) as f64 - 1.0)),
                energy_j: None,
            })
            .collect();
        let opts = FitOptions {
            bootstrap: 50,
            seed: 1,
        };
        analyse(&runs, &[], &M, Goal::Time, opts).unwrap()
    }

    fn view() -> TuneView {
        TuneView {
            machine: "6P+8E, 1 SMT sibling per P-core".into(),
            notes: vec![],
            all: false,
            top: 5,
            dialects: vec![
                Dialect {
                    name: "taskset".into(),
                    text: Ok("taskset -c 0,2,4,6,8,10 CMD".into()),
                },
                Dialect {
                    name: "kmp-hw-subset".into(),
                    text: Err("format kmp-hw-subset describes one core kind".into()),
                },
            ],
            width: 80,
        }
    }

    #[test]
    fn static_and_dynamic_words_differ_and_fit_80_columns() {
        let s = report(ModelKind::Static, 4.0);
        let d = report(ModelKind::Dynamic, 2.0);
        let ws = recommendation_words(&s);
        let wd = recommendation_words(&d);
        assert!(ws.contains("adding the 8 E-cores costs"), "{ws}");
        assert!(ws.contains("splits work statically"), "{ws}");
        assert!(wd.contains("leaving out the E-cores costs"), "{wd}");
        assert!(wd.contains("shares work dynamically"), "{wd}");
        for r in [&s, &d] {
            let t = text(r, &view());
            assert!(fits(&t, 80), "{t}");
            assert!(t.contains("cannot say it: format kmp-hw-subset"), "{t}");
            assert!(t.contains("best"), "{t}");
        }
        let mut all = view();
        all.all = true;
        let t = text(&s, &all);
        assert!(t.lines().count() > M.configs().len(), "{t}");
    }

    #[test]
    fn curve_svg_has_two_labelled_paths() {
        let th = Theta::amdahl(1.0, 0.99, 2.0);
        let pf = speedup_curve(ModelKind::Dynamic, &th, &M, Order::PFirst);
        let ef = speedup_curve(ModelKind::Dynamic, &th, &M, Order::EFirst);
        let svg = curve_svg("a <b> & c", &pf, &ef);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<path ").count(), 2);
        assert!(svg.contains("speedup vs 1 P-core") && svg.contains("cores used"));
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        let t = curve_table(&pf, &ef, 80);
        assert!(fits(&t, 80), "{t}");
        assert_eq!(t.lines().count(), 1 + 14);
    }
}
