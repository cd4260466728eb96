//! Inline SVG charts for the HTML export, drawn by hand: no JavaScript, no
//! fonts to embed (the browser's sans-serif), no network.

use crate::metrics::{format_value, Unit};
use pinsight_stats::{median, quantile_sorted, CiMethod, Summary};
use std::fmt::Write;

const W: f64 = 720.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 30.0;
const ROW: f64 = 34.0;
const TOP: f64 = 10.0;
const AXIS: f64 = 34.0;

/// One row of a chart.
pub struct Series<'a> {
    pub label: &'a str,
    pub values: &'a [f64],
    /// Highlighted (the verdict's choice).
    pub highlight: bool,
}

use pinsight_term::escape as esc;

/// An axis label: the value without trailing zeros ("30 s", "1.5 ms").
fn tick_label(v: f64, unit: Unit) -> String {
    let t = format_value(v, unit);
    match t.split_once(' ') {
        Some((num, rest)) if num.contains('.') => {
            format!("{} {rest}", num.trim_end_matches('0').trim_end_matches('.'))
        }
        None if t.contains('.') => t.trim_end_matches('0').trim_end_matches('.').to_string(),
        _ => t,
    }
}

/// "Nice" tick positions covering [lo, hi].
pub fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| (hi - lo) / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

struct Scale {
    lo: f64,
    hi: f64,
}

impl Scale {
    fn new(mut lo: f64, mut hi: f64) -> Scale {
        if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
            lo -= pad;
            hi += pad;
        } else {
            let pad = (hi - lo) * 0.05;
            lo -= pad;
            hi += pad;
        }
        Scale { lo, hi }
    }
    fn x(&self, v: f64) -> f64 {
        LEFT + (v - self.lo) / (self.hi - self.lo) * (W - LEFT - RIGHT)
    }
}

fn frame(out: &mut String, rows: usize, scale: &Scale, unit: Unit, title: &str) -> f64 {
    let h = TOP + rows as f64 * ROW + AXIS;
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12">"##,
        t = esc(title)
    );
    let y_axis = TOP + rows as f64 * ROW;
    for t in ticks(scale.lo, scale.hi) {
        let x = scale.x(t);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{y_axis}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
            y_axis + 16.0,
            esc(&tick_label(t, unit))
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{LEFT}" y1="{y_axis}" x2="{:.1}" y2="{y_axis}" stroke="#888"/>"##,
        W - RIGHT
    );
    y_axis
}

fn label(out: &mut String, i: usize, text: &str, highlight: bool) {
    let y = TOP + i as f64 * ROW + ROW / 2.0 + 4.0;
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{y:.1}" text-anchor="end" fill="#222"{}>{}</text>"##,
        LEFT - 8.0,
        if highlight {
            r#" font-weight="bold""#
        } else {
            ""
        },
        esc(text)
    );
}

/// Box plot per row: box = quartiles, line = median, whiskers to the last
/// run within 1.5 IQR, every run a dot (outliers beyond the whiskers red).
pub fn box_plot(title: &str, unit: Unit, rows: &[Series]) -> String {
    let all: Vec<f64> = rows.iter().flat_map(|s| s.values.iter().copied()).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut out = String::new();
    if all.is_empty() {
        return out;
    }
    let scale = Scale::new(lo, hi);
    frame(&mut out, rows.len(), &scale, unit, title);
    for (i, s) in rows.iter().enumerate() {
        label(&mut out, i, s.label, s.highlight);
        if s.values.is_empty() {
            continue;
        }
        let mut v = s.values.to_vec();
        v.sort_by(f64::total_cmp);
        // Sorted once: the quartiles need it, and so do the whiskers below.
        let (q1, med, q3) = (
            quantile_sorted(&v, 0.25),
            median(&v).unwrap_or(v[0]),
            quantile_sorted(&v, 0.75),
        );
        let iqr = q3 - q1;
        let wlo = v
            .iter()
            .copied()
            .find(|&x| x >= q1 - 1.5 * iqr)
            .unwrap_or(v[0]);
        let whi = v
            .iter()
            .rev()
            .copied()
            .find(|&x| x <= q3 + 1.5 * iqr)
            .unwrap_or(v[v.len() - 1]);
        let yc = TOP + i as f64 * ROW + ROW / 2.0;
        let (bx0, bx1) = (scale.x(q1), scale.x(q3));
        let fill = if s.highlight { "#9ecae1" } else { "#c6dbef" };
        let _ = write!(
            out,
            r##"<line x1="{:.1}" y1="{yc:.1}" x2="{:.1}" y2="{yc:.1}" stroke="#333"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##,
            scale.x(wlo),
            scale.x(whi),
            scale.x(wlo),
            yc - 6.0,
            scale.x(wlo),
            yc + 6.0,
            scale.x(whi),
            yc - 6.0,
            scale.x(whi),
            yc + 6.0
        );
        let _ = write!(
            out,
            r##"<rect x="{bx0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="#333"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#08306b" stroke-width="2"/>"##,
            yc - 10.0,
            (bx1 - bx0).max(1.0),
            20.0,
            scale.x(med),
            yc - 10.0,
            scale.x(med),
            yc + 10.0
        );
        for (k, &x) in s.values.iter().enumerate() {
            let outlier = x < wlo || x > whi;
            let jitter = ((k * 7919) % 13) as f64 - 6.0;
            let _ = write!(
                out,
                r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}" fill-opacity="0.7"><title>{}</title></circle>"##,
                scale.x(x),
                yc + jitter * 0.6,
                if outlier { "#d62728" } else { "#333" },
                esc(&format_value(x, unit))
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The estimate a summary's 95 % interval surrounds, and what it is: the
/// geometric mean for a log-t interval, the mean otherwise.
fn centre(s: &Summary) -> (f64, &'static str) {
    match (s.mean_ci_method, s.geometric_mean) {
        (Some(CiMethod::LogT), Some(g)) if s.mean_ci.is_some() => (g, "geo. mean"),
        _ => (s.mean, "mean"),
    }
}

/// Horizontal bars of the mean with the 95 % CI as an error bar; with a
/// log-t interval ([`pinsight_stats::mean_ci`]) the bar is the geometric
/// mean the interval surrounds, and its tooltip says so.
pub fn bars_with_ci(title: &str, unit: Unit, rows: &[(&str, &Summary, bool)]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let hi = rows
        .iter()
        .map(|(_, s, _)| s.mean_ci.map_or(s.mean, |c| c.hi).max(s.mean))
        .fold(f64::NEG_INFINITY, f64::max);
    let lo = rows
        .iter()
        .map(|(_, s, _)| s.mean_ci.map_or(s.mean, |c| c.lo).min(s.mean).min(0.0))
        .fold(0.0, f64::min);
    let scale = Scale {
        lo,
        hi: if hi > lo { hi * 1.05 } else { lo + 1.0 },
    };
    frame(&mut out, rows.len(), &scale, unit, title);
    for (i, (name, s, highlight)) in rows.iter().enumerate() {
        label(&mut out, i, name, *highlight);
        let yc = TOP + i as f64 * ROW + ROW / 2.0;
        let (v, what) = centre(s);
        let x0 = scale.x(0.0f64.max(lo));
        let x1 = scale.x(v);
        let fill = if *highlight { "#3182bd" } else { "#9ecae1" };
        let _ = write!(
            out,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="18" fill="{fill}"><title>{}</title></rect>"##,
            x0.min(x1),
            yc - 9.0,
            (x1 - x0).abs().max(1.0),
            esc(&format!("{what} {}", format_value(v, unit)))
        );
        if let Some(ci) = s.mean_ci {
            let (a, b) = (scale.x(ci.lo), scale.x(ci.hi));
            let _ = write!(
                out,
                r##"<line x1="{a:.1}" y1="{yc:.1}" x2="{b:.1}" y2="{yc:.1}" stroke="#000"/><line x1="{a:.1}" y1="{:.1}" x2="{a:.1}" y2="{:.1}" stroke="#000"/><line x1="{b:.1}" y1="{:.1}" x2="{b:.1}" y2="{:.1}" stroke="#000"/>"##,
                yc - 5.0,
                yc + 5.0,
                yc - 5.0,
                yc + 5.0
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_drop_trailing_zeros() {
        assert_eq!(tick_label(30.0, Unit::Seconds), "30 s");
        assert_eq!(tick_label(0.0, Unit::Seconds), "0 s");
        assert_eq!(tick_label(1.5, Unit::Ratio), "1.5");
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(0.93, 1.07);
        assert!(t.len() >= 3 && t.len() <= 7, "{t:?}");
        assert_eq!(ticks(1.0, 1.0), vec![1.0]);
    }

    #[test]
    fn box_plot_is_well_formed_svg() {
        let a = [1.0, 1.1, 1.2, 0.9, 3.0];
        let s = box_plot(
            "t",
            Unit::Seconds,
            &[Series {
                label: "os <1>",
                values: &a,
                highlight: true,
            }],
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("os &lt;1&gt;"));
        assert_eq!(s.matches("<circle").count(), 5);
        assert!(s.contains("#d62728"), "3.0 is beyond the whisker");
    }
}
