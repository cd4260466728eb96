//! The matrix as text for the terminal, laid out like
//! `core-to-core-latency` prints it (lower triangle, CPU ids along both
//! edges) so it reads the same, with the cells coloured by latency when
//! the output is a terminal.
//!
//! A matrix wider than the terminal is not wrapped (a wrapped matrix cannot
//! be read): it is summarised as the mean latency between groups of CPUs —
//! the latency domains when the matrix has them, else runs of consecutive
//! CPUs — and the full matrix is left to `--export-csv`/`--export-svg`.

use super::colormap;
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::cluster::DomainTree;
use pinsight_latency_model::{IntervalKind, LatencyMatrix};
use std::fmt::Write as _;

/// How to lay the table out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableStyle {
    /// Colour cells with ANSI escapes (only when writing to a terminal).
    pub color: bool,
    /// Columns available; wider matrices are summarised.
    pub width: usize,
}

impl Default for TableStyle {
    fn default() -> Self {
        TableStyle {
            color: false,
            width: 100,
        }
    }
}

/// The number of characters of the longest of `texts`, 1 when there are
/// none.
pub(crate) fn widest<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> usize {
    texts
        .into_iter()
        .map(|t| t.as_ref().chars().count())
        .max()
        .unwrap_or(1)
}

/// A number of nanoseconds in at most 4–5 characters: one decimal below
/// 10 ns (on-die SMT siblings, Apple clusters), whole numbers above.
pub fn format_ns(v: f64) -> String {
    if v.is_nan() {
        "-".to_string()
    } else if v < 9.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// The heatmap table (see the module doc). `tree` gives the groups of a
/// summary; without it consecutive CPUs are grouped.
pub fn heatmap(m: &LatencyMatrix, tree: Option<&DomainTree>, style: &TableStyle) -> String {
    let n = m.len();
    let noisy = |i: usize, j: usize| {
        m.stats
            .as_ref()
            .and_then(|s| s[i][j].as_ref())
            .is_some_and(|s| s.noisy)
    };
    let cells: Vec<Vec<String>> = (0..n)
        .map(|i| {
            (0..i)
                .map(|j| {
                    let mark = if noisy(i, j) { "~" } else { "" };
                    format!("{}{mark}", format_ns(m.get(i, j)))
                })
                .collect()
        })
        .collect();
    let labels: Vec<String> = m.cpus.iter().map(|c| c.to_string()).collect();
    let grid = Grid {
        row_labels: labels.clone(),
        col_labels: labels,
        cells,
        values: (0..n)
            .map(|i| (0..i).map(|j| m.get(i, j)).collect())
            .collect(),
    };
    if grid.width() <= style.width || n <= 2 {
        let mut out = grid.render(style.color);
        if (0..n).any(|i| (0..i).any(|j| noisy(i, j))) {
            out.push_str("~ noisy: the confidence interval did not reach the target in time\n");
        }
        return out;
    }
    summarised(m, tree, style)
}

/// Lower-triangular text grid with labels.
struct Grid {
    row_labels: Vec<String>,
    col_labels: Vec<String>,
    /// `cells[i]` has `i` entries, or `i + 1` when the diagonal means
    /// something (group summaries).
    cells: Vec<Vec<String>>,
    values: Vec<Vec<f64>>,
}

impl Grid {
    fn label_width(&self) -> usize {
        self.row_labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(1)
    }

    fn cell_width(&self) -> usize {
        let cell = widest(self.cells.iter().flatten());
        let col = widest(&self.col_labels);
        cell.max(col) + 1
    }

    fn width(&self) -> usize {
        2 + self.label_width() + 1 + self.col_labels.len() * self.cell_width()
    }

    fn render(&self, color: bool) -> String {
        let (lw, cw) = (self.label_width(), self.cell_width());
        let measured: Vec<f64> = self
            .values
            .iter()
            .flatten()
            .copied()
            .filter(|v| !v.is_nan())
            .collect();
        let lo = measured.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = measured.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut out = String::new();
        let _ = write!(out, "  {:>lw$} ", "");
        for l in &self.col_labels {
            let _ = write!(out, "{l:>cw$}");
        }
        out.push('\n');
        for (i, row) in self.cells.iter().enumerate() {
            let mut line = format!("  {:>lw$} ", self.row_labels[i]);
            for (j, cell) in row.iter().enumerate() {
                let v = self.values[i][j];
                if color && !v.is_nan() {
                    let rgb = colormap::viridis(colormap::position(v, lo, hi));
                    let fg = if colormap::prefers_dark_text(rgb) {
                        30
                    } else {
                        97
                    };
                    let _ = write!(
                        line,
                        "\x1b[48;5;{};{fg}m{cell:>cw$}\x1b[0m",
                        colormap::ansi256(rgb)
                    );
                } else {
                    let _ = write!(line, "{cell:>cw$}");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Mean of the measured pairs between the CPUs at indices `a` and `b`
/// (inside `a` when they are the same group).
fn block_mean(m: &LatencyMatrix, a: &[usize], b: &[usize]) -> f64 {
    let (mut sum, mut count) = (0.0, 0usize);
    for &i in a {
        for &j in b {
            let v = m.get(i, j);
            if i != j && !v.is_nan() {
                sum += v;
                count += 1;
            }
        }
    }
    if count == 0 {
        f64::NAN
    } else {
        sum / count as f64
    }
}

/// Groups for a summary: the finest latency level if it fits, else runs of
/// consecutive matrix rows.
fn summary_groups(
    m: &LatencyMatrix,
    tree: Option<&DomainTree>,
    max_groups: usize,
) -> (Vec<CpuSet>, &'static str) {
    if let Some(level) = tree.and_then(|t| {
        t.levels
            .iter()
            .rev()
            .find(|l| l.domains.len() >= 2 && l.domains.len() <= max_groups)
    }) {
        return (
            level.domains.iter().map(|d| d.cpus.clone()).collect(),
            "latency domain",
        );
    }
    let n = m.len();
    let per = n.div_ceil(max_groups.max(1)).max(1);
    let groups = m
        .cpus
        .chunks(per)
        .map(|c| c.iter().copied().collect())
        .collect();
    (groups, "run of consecutive CPUs")
}

fn summarised(m: &LatencyMatrix, tree: Option<&DomainTree>, style: &TableStyle) -> String {
    // "G12" labels, 5-6 character cells: what fits.
    let max_groups = (style.width.saturating_sub(8) / 6).clamp(2, 64);
    let (groups, what) = summary_groups(m, tree, max_groups);
    let index: Vec<Vec<usize>> = groups
        .iter()
        .map(|g| g.iter().filter_map(|c| m.index_of(c)).collect())
        .collect();
    let labels: Vec<String> = (0..groups.len()).map(|g| format!("G{g}")).collect();
    let values: Vec<Vec<f64>> = (0..groups.len())
        .map(|a| {
            (0..=a)
                .map(|b| block_mean(m, &index[a], &index[b]))
                .collect()
        })
        .collect();
    let grid = Grid {
        row_labels: labels.clone(),
        col_labels: labels,
        cells: values
            .iter()
            .map(|r| r.iter().map(|&v| format_ns(v)).collect())
            .collect(),
        values,
    };
    let mut out = format!(
        "{} CPUs do not fit in {} columns: mean latency (ns) between groups, each group a {what}; \
         the diagonal is the mean inside a group (all pairs: --export-csv, --export-svg)\n",
        m.len(),
        style.width
    );
    out.push_str(&grid.render(style.color));
    for (g, cpus) in groups.iter().enumerate() {
        let _ = writeln!(out, "  G{g} = CPUs {cpus}");
    }
    out
}

/// `core-to-core-latency`'s closing lines: min, max and mean latency, with
/// the pair and (when measured here) its interval: `±X% within-run` (the
/// 95% CI of the median within one run, bounds and sample count in
/// brackets as `CI lo–hi, n=N`) or `±X% run-to-run` (the farthest run
/// median, when the matrix was measured several times and that is larger;
/// the run medians' range and the within-run CI in brackets; a within-run
/// ± over several runs shows the runs' range only). A line that
/// would pass 80 columns puts the bracket on the next.
pub fn summary(m: &LatencyMatrix) -> String {
    let n = m.len();
    let pairs: Vec<(usize, usize, f64)> = (0..n)
        .flat_map(|i| (0..i).map(move |j| (i, j)))
        .map(|(i, j)| (i, j, m.get(i, j)))
        .filter(|p| !p.2.is_nan())
        .collect();
    if pairs.is_empty() {
        return "no pair measured\n".to_string();
    }
    let stat = |i: usize, j: usize| m.stats.as_ref().and_then(|s| s[i][j].as_ref());
    let min = pairs.iter().min_by(|a, b| a.2.total_cmp(&b.2)).unwrap();
    // The first pair among equals, in both directions: stable output.
    let max = pairs.iter().min_by(|a, b| b.2.total_cmp(&a.2)).unwrap();
    let mean = pairs.iter().map(|p| p.2).sum::<f64>() / pairs.len() as f64;
    let mut out = String::new();
    for (name, &(i, j, v)) in [("Min ", min), ("Max ", max)] {
        let (interval, detail) = match stat(i, j) {
            None => (String::new(), String::new()),
            Some(s) => {
                let (rel, kind) = s.shown_interval();
                let detail = match s.run_range_ns() {
                    // The ± is the within-run CI: no need to repeat it.
                    Some((lo, hi)) if kind == IntervalKind::WithinRun => {
                        format!("({} runs {lo:.1}–{hi:.1})", s.run_medians_ns.len())
                    }
                    Some((lo, hi)) => format!(
                        "({} runs {lo:.1}–{hi:.1}; CI ±{})",
                        s.run_medians_ns.len(),
                        format_pct(s.within_run_rel())
                    ),
                    None => format!(
                        "(CI {:.1}–{:.1}, n={})",
                        s.ci_low_ns, s.ci_high_ns, s.samples
                    ),
                };
                (format!(" ±{} {}", format_pct(rel), kind.as_str()), detail)
            }
        };
        let head = format!(
            "{name} latency: {v:.1} ns{interval}  CPUs ({},{})",
            m.cpus[i], m.cpus[j]
        );
        if detail.is_empty() {
            let _ = writeln!(out, "{head}");
        } else if head.chars().count() + 2 + detail.chars().count() <= 80 {
            let _ = writeln!(out, "{head}  {detail}");
        } else {
            let _ = writeln!(out, "{head}\n              {detail}");
        }
    }
    let _ = writeln!(
        out,
        "Mean latency: {mean:.1} ns  over {} pair{}",
        pairs.len(),
        if pairs.len() == 1 { "" } else { "s" }
    );
    out
}

/// A relative precision as a percentage: "0.7%", "12%".
pub fn format_pct(rel: f64) -> String {
    let p = rel * 100.0;
    if p < 9.95 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(n: usize) -> LatencyMatrix {
        let mut m = LatencyMatrix::new((0..n).collect());
        for i in 0..n {
            for j in 0..i {
                // Two blocks of n/2: 20 ns inside, 100 ns between.
                m.set(
                    i,
                    j,
                    if (i < n / 2) == (j < n / 2) {
                        20.0
                    } else {
                        100.0
                    },
                );
            }
        }
        m
    }

    /// The table's style: with or without colour, `width` columns.
    fn style(color: bool, width: usize) -> TableStyle {
        TableStyle { color, width }
    }

    #[test]
    fn small_matrices_print_like_core_to_core_latency() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2]);
        m.set(1, 0, 98.49);
        m.set(2, 0, 5.333);
        let t = heatmap(&m, None, &TableStyle::default());
        assert_eq!(t, "       0   1   2\n  0\n  1   98\n  2  5.3   -\n");
    }

    #[test]
    fn colour_only_when_asked() {
        let m = matrix(4);
        let plain = heatmap(&m, None, &style(false, 100));
        assert!(!plain.contains('\x1b'));
        let coloured = heatmap(&m, None, &style(true, 100));
        assert!(coloured.contains("\x1b[48;5;"));
        // Low (dark) cells get white text, high (bright) ones black.
        assert!(
            coloured.contains(";97m  20\x1b[0m") && coloured.contains(";30m 100\x1b[0m"),
            "{coloured:?}"
        );
    }

    #[test]
    fn wide_matrices_are_summarised_by_groups() {
        let m = matrix(64);
        let t = heatmap(&m, None, &style(false, 40));
        assert!(t.starts_with("64 CPUs do not fit in 40 columns"), "{t}");
        assert!(t.contains("G0 = CPUs 0-"), "{t}");
        assert!(
            t.lines()
                .all(|l| l.chars().count() <= 40 || l.starts_with("64 CPUs")),
            "{t}"
        );
        let tree = pinsight_latency_model::cluster::domains(&m);
        let t = heatmap(&m, Some(&tree), &style(false, 40));
        assert!(t.contains("latency domain"), "{t}");
        assert!(
            t.contains("G0 = CPUs 0-31") && t.contains("G1 = CPUs 32-63"),
            "{t}"
        );
        assert!(t.contains("  G1  100  20"), "{t}");
    }

    #[test]
    fn noisy_pairs_are_marked() {
        let mut m = matrix(2);
        let stat = pinsight_latency_model::PairStat {
            median_ns: 100.0,
            mean_ns: 120.0,
            ci_low_ns: 90.0,
            ci_high_ns: 130.0,
            samples: 40,
            noisy: true,
            run_medians_ns: Vec::new(),
        };
        m.stats = Some(vec![vec![None, Some(stat.clone())], vec![Some(stat), None]]);
        let t = heatmap(&m, None, &TableStyle::default());
        assert!(t.contains("100~") && t.contains("~ noisy"), "{t}");
        let s = summary(&m);
        assert!(
            s.contains("Min  latency: 100.0 ns ±30% within-run  CPUs (1,0)  (CI 90.0–130.0, n=40)"),
            "{s}"
        );
    }

    #[test]
    fn several_runs_show_the_run_to_run_spread_when_it_is_larger() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2]);
        let runs = |medians: &[f64]| -> Vec<pinsight_latency_model::PairStat> {
            medians
                .iter()
                .map(|&v| pinsight_latency_model::PairStat {
                    median_ns: v,
                    mean_ns: v,
                    ci_low_ns: v * 0.993,
                    ci_high_ns: v * 1.007,
                    samples: 100,
                    noisy: false,
                    run_medians_ns: Vec::new(),
                })
                .collect()
        };
        let wide =
            pinsight_latency_model::PairStat::combine(&runs(&[53.0, 64.0, 58.0, 55.0, 60.0]))
                .unwrap();
        let calm =
            pinsight_latency_model::PairStat::combine(&runs(&[140.0, 140.2, 140.1])).unwrap();
        let mut stats = vec![vec![None; 3]; 3];
        m.set(1, 0, wide.median_ns);
        stats[1][0] = Some(wide.clone());
        stats[0][1] = Some(wide);
        m.set(2, 0, calm.median_ns);
        stats[2][0] = Some(calm.clone());
        stats[0][2] = Some(calm);
        m.stats = Some(stats);
        let s = summary(&m);
        assert!(
            s.contains(
                "Min  latency: 58.0 ns ±10% run-to-run  CPUs (1,0)  (5 runs 53.0–64.0; CI ±0.7%)"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "Max  latency: 140.1 ns ±0.7% within-run  CPUs (2,0)  (3 runs 140.0–140.2)\n"
            ),
            "{s}"
        );
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
    }

    #[test]
    fn summary_names_extreme_pairs() {
        let m = matrix(4);
        let s = summary(&m);
        assert!(s.contains("Min  latency: 20.0 ns  CPUs (1,0)"), "{s}");
        assert!(s.contains("Max  latency: 100.0 ns  CPUs (2,0)"), "{s}");
        assert!(s.contains("Mean latency: 73.3 ns  over 6 pairs"), "{s}");
        assert_eq!(
            summary(&LatencyMatrix::new(vec![0, 1])),
            "no pair measured\n"
        );
    }
}
