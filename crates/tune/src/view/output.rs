//! The whole text of `pinsight tune` and `pinsight model` at the
//! terminal's width (at most 80 columns): tune's report with the
//! recommendation in each dialect ([`tune_text`], laid out by
//! [`super::text`]), and the model, its machine, one configuration
//! and the speedup curves ([`model_text`]).

use super::{curve_table, seconds, text, Dialect, TuneView};
use pinsight_compare::view::layout::{effective_width, hanging};
use pinsight_plan::tune_dialect::TuneDialect;
use pinsight_term::terminal_columns;
use pinsight_tune_model::{ConfigPrediction, Evaluation, TuneReport};
use std::path::Path;

/// Best predictions shown without `--all`.
const TOP: usize = 5;

/// The text width: the terminal's, at most 80 columns.
fn width() -> usize {
    effective_width(terminal_columns()).min(80)
}

/// tune's report as text: the machine in words, the notes under it, every
/// configuration (`all`) or the measured ones and the best, and the
/// recommendation in each dialect.
pub fn tune_text(
    report: &TuneReport,
    machine: &str,
    notes: &[String],
    dialects: &[TuneDialect],
    all: bool,
) -> String {
    let v = TuneView {
        machine: machine.to_owned(),
        notes: notes.to_vec(),
        all,
        top: TOP,
        dialects: dialects
            .iter()
            .map(|d| Dialect {
                name: d.name.clone(),
                text: d.text.clone(),
            })
            .collect(),
        width: width(),
    };
    text(report, &v)
}

/// model's speedup curves as an SVG chart titled with the machine and the
/// model ([`super::curve_svg`]).
pub fn model_svg(ev: &Evaluation) -> String {
    let title = format!(
        "Speedup P-first vs E-first on {} ({} model)",
        ev.machine,
        ev.model.name()
    );
    super::curve_svg(&title, &ev.curves.p_first, &ev.curves.e_first)
}

/// model's text: the Model, Machine (with `how`, where the machine came
/// from, in the caller's words) and Config lines, the curves' table, and
/// where the SVG chart went.
pub fn model_text(ev: &Evaluation, fitted: bool, how: &str, svg: Option<&Path>) -> String {
    let width = width();
    let hang = |first: &str, text: &str| hanging(first, text, 10, width);
    let t = &ev.theta;
    let mut out = hang(
        "Model:    ",
        &format!(
            "{} (f {:.4}, sf {:.3}, smt_gain {:.3}, t1 {}, contention {:.4}){}",
            ev.model.name(),
            t.f,
            t.sf,
            t.smt_gain,
            seconds(t.t1),
            t.contention,
            if fitted { ", fitted" } else { ", given" }
        ),
    );
    out.push_str(&hang("Machine:  ", &format!("{} ({how})", ev.machine)));
    if let Some(o) = &ev.config {
        out.push_str(&hang("Config:   ", &config_line(o)));
    }
    out.push_str("\nSpeedup as cores are added (no SMT)\n");
    out.push_str(&curve_table(&ev.curves.p_first, &ev.curves.e_first, width));
    if let Some(p) = svg {
        out.push_str(&format!("\nSVG chart written to {}\n", p.display()));
    }
    out
}

/// One configuration's prediction: time, interval, speedups, extrapolated.
fn config_line(o: &ConfigPrediction) -> String {
    let mut s = format!(
        "{}P+{}E+{}smt: predicted {}",
        o.p,
        o.e,
        o.smt,
        seconds(o.predicted_s)
    );
    if o.ci[0] != o.ci[1] {
        s.push_str(&format!(" (CI {}–{})", seconds(o.ci[0]), seconds(o.ci[1])));
    }
    s.push_str(&format!(", speedup {:.2}x vs 1 P-core", o.vs_1p));
    if let Some(e) = o.vs_1e {
        s.push_str(&format!(", {e:.2}x vs 1 E-core"));
    }
    if o.extrapolated {
        s.push_str("; extrapolated beyond the runs");
    }
    s
}
