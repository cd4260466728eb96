//! The terminal view of one `pinsight latency` result: what was measured
//! or loaded and how, the heatmap, the summary and what its ± means, the
//! pairs that are noisy, skipped or short of runs, the latency domains,
//! and the files written.

use super::table::{format_pct, heatmap, summary, TableStyle};
use crate::measure::{MeasureConfig, Measurement};
use crate::report::Origin;
use pinsight_latency_model::{DomainTree, LatencyMatrix};
use pinsight_term::{fill, Wrap};
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

/// The heatmap's style on stdout: coloured on a terminal (unless
/// `NO_COLOR`), as wide as the terminal; 200 columns into a file or pipe.
pub fn stdout_style() -> TableStyle {
    let tty = std::io::stdout().is_terminal();
    TableStyle {
        color: tty && std::env::var_os("NO_COLOR").is_none(),
        width: if tty {
            pinsight_term::terminal_width()
        } else {
            200
        },
    }
}

/// The whole view. The text around the heatmap is escaped (the file's
/// path, method and benchmark names are outside text); the heatmap keeps
/// its own colour sequences, so print the result as it is.
pub fn human(
    m: &LatencyMatrix,
    origin: &Origin,
    tree: &DomainTree,
    written: &[&Path],
    style: &TableStyle,
) -> String {
    let head = header(m, origin);
    let map = heatmap(m, Some(tree), style);
    let mut out = String::from("\n");
    out.push_str(&summary(m));
    out.push_str(&interval_legend(m));
    if let Origin::Measured {
        measurement: r,
        config: c,
    } = origin
    {
        out.push_str(&measurement_notes(r, c));
    }
    out.push_str("\nLatency domains:\n");
    for line in tree.describe().lines() {
        // The tree's own indentation stays; continuation lines hang by four.
        let lead = " ".repeat(2 + line.len() - line.trim_start().len());
        out.push_str(&fill(
            line.trim_start(),
            Wrap::new(80).indent(&lead, "    "),
        ));
    }
    if !written.is_empty() {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        out.push('\n');
        out.push_str(&fill(
            &format!("Wrote {}", names.join(", ")),
            Wrap::new(80).indent("", "  "),
        ));
    }
    let shown = pinsight_sys::text::shown_lines;
    format!("{}{map}{}", shown(&head), shown(&out))
}

/// What was measured or loaded, and how: the lines above the heatmap.
fn header(m: &LatencyMatrix, origin: &Origin) -> String {
    let mut out = String::new();
    match origin {
        Origin::Measured {
            measurement: r,
            config: c,
        } => {
            let mut rounds = match (c.parallel, r.rounds_run) {
                (true, 1) => "1 round".to_string(),
                (true, k) => format!("{k} parallel rounds of disjoint pairs"),
                (false, k) => format!("{k} pair(s) one at a time"),
            };
            if c.repeats > 1 {
                rounds.push_str(&format!(" in {} runs of the matrix", c.repeats));
            }
            let value = if c.repeats > 1 {
                "the median of its run medians"
            } else {
                "the median of its samples"
            };
            out.push_str(&format!("{} ({})\n", c.method.describe(), c.method));
            out.push_str(&fill(
                &format!(
                    "One-way latency in ns; each pair is {value}, sampled until the 95% CI \
                     of its median within one run is ±{}% or for {} ms. {} CPUs, {rounds}, {}.",
                    c.target_rel_ci * 100.0,
                    c.max_time_per_pair.as_millis(),
                    c.cpus.len(),
                    seconds(r.elapsed)
                ),
                Wrap::new(80).indent("", ""),
            ));
            out.push('\n');
        }
        Origin::File {
            path,
            benchmark,
            benchmarks,
        } => {
            out.push_str(&format!(
                "{}: one-way latency in ns ({} CPUs{})\n",
                path.display(),
                m.len(),
                m.method
                    .as_deref()
                    .filter(|m| *m != "csv")
                    .map(|m| format!(", method {m}"))
                    .unwrap_or_default()
            ));
            if benchmarks.len() > 1 {
                out.push_str(&format!(
                    "Showing matrix {benchmark} of {} in the file (--benchmark N picks another):\n",
                    benchmarks.len()
                ));
                for (k, d) in benchmarks.iter().enumerate() {
                    let mark = if k + 1 == *benchmark { "*" } else { " " };
                    out.push_str(&fit(&format!("  {mark}{}: {d}", k + 1), 80));
                    out.push('\n');
                }
            }
            out.push('\n');
        }
    }
    out
}

/// Pairs measured in fewer runs, noisy or not measured, after the summary.
fn measurement_notes(r: &Measurement, c: &MeasureConfig) -> String {
    let mut out = String::new();
    let para = |text: &str| fill(text, Wrap::new(80).indent("", "  "));
    if !r.fewer_runs.is_empty() {
        out.push_str(&para(&format!(
            "{} pair(s) measured in fewer than {} runs: the --budget ran out: {}",
            r.fewer_runs.len(),
            c.repeats,
            pair_list(&r.fewer_runs)
        )));
    }
    let noisy = r.noisy();
    if !noisy.is_empty() {
        out.push_str(&para(&format!(
            "{} noisy pair(s) (within-run interval wider than ±{}% after {} ms, \
             runs that disagree, or a virtual machine): {}",
            noisy.len(),
            c.target_rel_ci * 100.0,
            c.max_time_per_pair.as_millis(),
            pair_list(&noisy)
        )));
    }
    let summary = pinsight_measure::disturbance::Summary::of(r.disturbance.iter().flatten());
    if let Some(n) = summary.note() {
        out.push_str(&para(&n.replace(" runs ", " runs of the matrix ")));
    }
    if !r.skipped.is_empty() {
        out.push_str(&para(&format!(
            "{} pair(s) not measured: the --budget ran out after {} of {} rounds: {}",
            r.skipped.len(),
            r.rounds_run,
            r.rounds_planned,
            pair_list(&r.skipped)
        )));
    }
    out
}

/// What the ± of the summary lines means (nothing when the matrix has no
/// per-pair statistics, e.g. read from core-to-core-latency's CSV).
pub fn interval_legend(m: &LatencyMatrix) -> String {
    if m.stats.is_none() {
        return String::new();
    }
    let runs = m.runs();
    if runs < 2 {
        return fill(
            "± within-run: the 95% CI of the median from this one run's samples; it \
             does not cover run-to-run variation (often larger): see --runs N.",
            Wrap::new(80).indent("", ""),
        );
    }
    let mut out = fill(
        &format!(
            "± is the larger of the within-run 95% CI and the run-to-run spread: how far \
             the farthest of the {runs} run medians lies from their median (the value shown)."
        ),
        Wrap::new(80).indent("", ""),
    );
    if let Some(s) = m.run_to_run() {
        out.push_str(&fill(
            &format!(
                "Run-to-run spread over {} pair{}: median ±{}, max ±{} (CPUs {},{}).",
                s.pairs,
                if s.pairs == 1 { "" } else { "s" },
                format_pct(s.median_rel),
                format_pct(s.max_rel),
                s.max_pair.0,
                s.max_pair.1
            ),
            Wrap::new(80).indent("", ""),
        ));
    }
    out
}

/// `line` cut to `width` characters, ending in "…" when cut.
fn fit(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.to_string();
    }
    let mut s: String = line.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// "12 ms" / "3.4 s".
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// "(1,0) (3,2) ..." — at most 12, then a count.
fn pair_list(pairs: &[(usize, usize)]) -> String {
    let mut s: Vec<String> = pairs
        .iter()
        .take(12)
        .map(|(a, b)| format!("({a},{b})"))
        .collect();
    if pairs.len() > 12 {
        s.push(format!("and {} more", pairs.len() - 12));
    }
    s.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_cuts_with_an_ellipsis() {
        assert_eq!(fit("abcdef", 10), "abcdef");
        assert_eq!(fit("abcdefghijkl", 5), "abcd…");
        assert_eq!(fit("abcdefghijkl", 5).chars().count(), 5);
    }

    #[test]
    fn pair_lists_stop_at_twelve_and_count_the_rest() {
        let pairs: Vec<(usize, usize)> = (0..15).map(|i| (i + 1, i)).collect();
        let s = pair_list(&pairs);
        assert!(s.starts_with("(1,0) (2,1)"), "{s}");
        assert!(s.ends_with("(12,11) and 3 more"), "{s}");
    }

    #[test]
    fn seconds_switch_from_ms_at_one_second() {
        assert_eq!(seconds(Duration::from_millis(12)), "12 ms");
        assert_eq!(seconds(Duration::from_millis(3400)), "3.4 s");
    }
    #[test]
    fn legend_names_the_interval_and_the_run_to_run_spread() {
        use pinsight_latency_model::PairStat;
        let stat = |runs: &[f64]| {
            let one: Vec<PairStat> = runs
                .iter()
                .map(|&v| PairStat {
                    median_ns: v,
                    mean_ns: v,
                    ci_low_ns: v * 0.995,
                    ci_high_ns: v * 1.005,
                    samples: 50,
                    noisy: false,
                    run_medians_ns: Vec::new(),
                })
                .collect();
            PairStat::combine(&one).unwrap()
        };
        let mut m = LatencyMatrix::new(vec![0, 1]);
        assert_eq!(interval_legend(&m), "", "no statistics, no legend");
        let s = stat(&[50.0]);
        m.stats = Some(vec![vec![None, Some(s.clone())], vec![Some(s), None]]);
        let one = interval_legend(&m);
        assert!(
            one.contains("± within-run: the 95% CI of the median from this one run's")
                && one.contains("cover run-to-run variation")
                && one.contains("--runs N"),
            "{one}"
        );
        let s = stat(&[53.0, 64.0, 58.0, 55.0, 60.0]);
        m.stats = Some(vec![vec![None, Some(s.clone())], vec![Some(s), None]]);
        let five = interval_legend(&m);
        assert!(
            five.contains("± is the larger of the within-run 95% CI and the run-to-run")
                && five.contains("farthest of the 5 run medians")
                && five
                    .contains("Run-to-run spread over 1 pair: median ±10%, max ±10% (CPUs 1,0)."),
            "{five}"
        );
        assert!(five.lines().all(|l| l.chars().count() <= 80), "{five}");
    }
}
