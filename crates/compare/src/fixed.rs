//! Fixed-duration detection: a program that runs for a set time
//! (`sysbench --time`, `stress-ng --timeout`, `fio --runtime`, `iperf -t`)
//! or until a client stops it takes the same wall time under every
//! placement; its result is what it did in that time, printed in its
//! output. When every arm's wall time agrees within 1 % but CPU time or
//! the program's own figures differ, wall time cannot rank the arms and
//! the verdict says so (and names a `--metric` preset that reads the
//! program's result, when it knows the program). Pure.

use crate::analysis::ArmReport;
use crate::journal::{Header, RunLine};
use crate::metrics::format_seconds;
use crate::program_metric::preset_for;
use pinsight_stats::{compare, Summary};
use serde::Serialize;
use std::collections::BTreeMap;

/// Arms whose mean wall times are within this fraction of each other
/// "took the same time".
pub const WALL_AGREEMENT: f64 = 0.01;

/// ... provided each arm's runs vary less than this (coefficient of
/// variation): a program whose time swings widely is not running for a
/// set time, whatever its means say.
pub const WALL_STEADY: f64 = 0.05;

/// On a loaded machine other work stretches some runs, and means drift
/// apart by more than [`WALL_AGREEMENT`]; a program that runs for a set
/// time still has fastest runs that agree (each is the set time plus
/// start-up). The arms "took the same time" also when their fastest runs
/// agree within [`WALL_AGREEMENT`] and their means within this.
pub const WALL_AGREEMENT_LOADED: f64 = 0.05;

/// A figure varies "beyond noise" when its range over the runs is at
/// least this fraction of its median, and [`FIGURE_VS_WALL`] times the
/// wall time's own relative range.
pub const FIGURE_SPREAD: f64 = 0.02;
pub const FIGURE_VS_WALL: f64 = 3.0;

/// What the check found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FixedDuration {
    /// Largest / smallest arm mean wall time − 1, in % (of the arms'
    /// fastest runs when `by_fastest`).
    pub wall_spread_percent: f64,
    /// The means drifted apart (other work stretched some runs) and the
    /// arms' fastest runs agree ([`WALL_AGREEMENT_LOADED`]).
    pub by_fastest: bool,
    /// What differs although wall time does not, one clause each.
    pub differs: Vec<String>,
    /// The `--metric` preset that reads this program's result, if known.
    pub preset: Option<String>,
    /// Program metrics were given: the verdict is on the first of them.
    pub metric_used: bool,
}

/// Checks the successful measured runs (`measured`, every arm).
pub fn detect(
    header: &Header,
    arms: &[ArmReport],
    base: Option<&str>,
    measured: &[&RunLine],
) -> Option<FixedDuration> {
    let walls: Vec<(&ArmReport, &Summary)> = arms
        .iter()
        .filter(|a| a.measured >= 2)
        .filter_map(|a| Some((a, a.metric("wall_s")?.summary.as_ref()?)))
        .collect();
    if walls.len() < 2 {
        return None;
    }
    let spread = |f: fn(&Summary) -> f64| {
        let lo = walls
            .iter()
            .map(|(_, s)| f(s))
            .fold(f64::INFINITY, f64::min);
        let hi = walls.iter().map(|(_, s)| f(s)).fold(0.0, f64::max);
        (lo > 0.0).then(|| hi / lo - 1.0)
    };
    let (Some(means), Some(fastest)) = (spread(|s| s.mean), spread(|s| s.min)) else {
        return None;
    };
    let steady = walls
        .iter()
        .all(|(_, s)| s.stddev.unwrap_or(0.0) <= WALL_STEADY * s.mean);
    let by_fastest = if means <= WALL_AGREEMENT && steady {
        false
    } else if fastest <= WALL_AGREEMENT && means <= WALL_AGREEMENT_LOADED {
        true
    } else {
        return None;
    };
    let mut differs = Vec::new();
    differs.extend(cpu_differs(arms, base, measured));
    for a in arms {
        for m in &a.metrics_vs_baseline {
            let v = &m.versus;
            if v.significant && !v.negligible {
                differs.push(format!(
                    "{} differs between {} and {}",
                    m.key, v.baseline, a.label
                ));
            }
        }
    }
    differs.extend(figure_differs(measured));
    if differs.is_empty() {
        return None;
    }
    Some(FixedDuration {
        wall_spread_percent: if by_fastest { fastest } else { means } * 100.0,
        by_fastest,
        differs,
        preset: header
            .command
            .first()
            .and_then(|p| preset_for(p))
            .map(|p| p.name.to_string()),
        metric_used: !header.metrics.is_empty(),
    })
}

/// "CPU time (user+sys) differs: os 2.006 s, p-pinned 2.294 s" when an arm's
/// CPU time differs significantly (and by 1 % or more) from the baseline's.
fn cpu_differs(arms: &[ArmReport], base: Option<&str>, measured: &[&RunLine]) -> Option<String> {
    let cpu = |id: &str| -> Vec<f64> {
        measured
            .iter()
            .filter(|r| r.arm == id)
            .map(|r| r.record.user_s + r.record.sys_s)
            .collect()
    };
    let base = arms.iter().find(|a| Some(a.id.as_str()) == base)?;
    let b = cpu(&base.id);
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let mut parts = Vec::new();
    for a in arms.iter().filter(|a| a.id != base.id) {
        let x = cpu(&a.id);
        let Ok(c) = compare(&b, &x) else { continue };
        let Some(s) = c.speedup else { continue };
        let ci_excludes_one = s.ci.is_some_and(|ci| !ci.contains(1.0));
        if c.significant && ci_excludes_one && (s.ratio - 1.0).abs() >= WALL_AGREEMENT {
            parts.push(format!("{} {}", a.label, format_seconds(mean(&x))));
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "CPU time (user+sys) differs: {} {}, {}",
            base.label,
            format_seconds(mean(&b)),
            parts.join(", ")
        )
    })
}

/// The program's own figures that vary between runs while wall time does
/// not: `"events per second:" ranges 10100–10400 (3.0%)` (at most two,
/// in output order).
fn figure_differs(measured: &[&RunLine]) -> Vec<String> {
    let runs: Vec<&RunLine> = measured
        .iter()
        .copied()
        .filter(|r| r.output.as_ref().is_some_and(|o| !o.figures.is_empty()))
        .collect();
    if runs.len() < 3 {
        return Vec::new();
    }
    let walls: Vec<f64> = runs.iter().map(|r| r.record.wall_s).collect();
    let wall_rel = rel_range(&walls).unwrap_or(0.0);
    // label → (first position, values)
    let mut by_label: BTreeMap<&str, (usize, Vec<f64>)> = BTreeMap::new();
    for r in &runs {
        let figs = &r.output.as_ref().expect("filtered").figures;
        for (i, f) in figs.iter().enumerate() {
            let e = by_label.entry(f.0.as_str()).or_insert((i, Vec::new()));
            e.1.push(f.1);
        }
    }
    let mut varying: Vec<(usize, String)> = by_label
        .into_iter()
        .filter(|(_, (_, xs))| xs.len() * 2 >= runs.len() && xs.len() >= 3)
        .filter_map(|(label, (pos, xs))| {
            let rel = rel_range(&xs)?;
            (rel >= FIGURE_SPREAD && rel >= FIGURE_VS_WALL * wall_rel).then(|| {
                let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let name = if label.is_empty() {
                    "a number at the start of a line".to_string()
                } else {
                    format!("\"{label}\"")
                };
                (
                    pos,
                    format!(
                        "the program's own figure {name} ranges {}–{} ({:.1}%) over the runs",
                        short(lo),
                        short(hi),
                        rel * 100.0
                    ),
                )
            })
        })
        .collect();
    varying.sort();
    varying.into_iter().take(2).map(|(_, s)| s).collect()
}

/// (max − min) / median of |x|; None when the median is 0.
fn rel_range(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().map(|x| x.abs()).collect();
    v.sort_by(f64::total_cmp);
    let med = v.get(v.len() / 2).copied()?;
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (med > 0.0).then(|| (hi - lo) / med)
}

fn short(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        crate::metrics::sig3(v)
    }
}
