//! The core-to-core latency matrix and its two file formats.
//!
//! **CSV** is what `core-to-core-latency --csv` prints (and what its
//! published `results/*.csv` hold): one line per CPU, one field per CPU, the
//! mean one-way latency in nanoseconds in the strictly lower triangle
//! (`row > column`) and empty fields elsewhere. There is no header: the CPU
//! ids are implicit, `0..n` in order. Because our matrices may cover an
//! arbitrary CPU subset in any order, [`LatencyMatrix::to_csv`] writes one
//! extra first line `# cpus: 8,9,10,11` (ids in matrix order) — only when
//! the ids are not `0..n`, so files for whole machines stay byte-compatible
//! with the tool and its plotting notebooks. [`LatencyMatrix::parse_csv`]
//! accepts that line, any other `#` comment line (`pinsight latency --export-csv` starts its files with
//! one saying what the values are), blank lines, CRLF line ends, and full
//! (square) matrices such as other tools write: when both `(i, j)` and
//! `(j, i)` are given, their mean is used. A file may hold several
//! matrices — `core-to-core-latency -b 1,2 --csv` prints one per benchmark,
//! one after the other — which [`LatencyMatrix::parse_csv_all`] returns in
//! order ([`LatencyMatrix::parse_csv`] takes the first).
//!
//! **JSON** is our own serde form of [`LatencyMatrix`], which keeps the per
//! pair statistics. JSON has no NaN, so unmeasured pairs are written `null`.

use std::fmt::Write as _;

use crate::error::{CpuListError, InvalidMatrix, MatrixError};
use pinsight_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// One measured pair (symmetric): statistics of the one-way latency
/// estimate in ns.
///
/// The confidence interval covers the variation *within one run* of the
/// matrix only: samples taken a few microseconds apart. Two runs minutes
/// apart can differ far more (frequency, temperature, other load: five
/// runs of one machine gave 53–64 ns while each claimed ±0.7%). Measuring
/// the matrix several times gives `run_medians_ns`, and
/// [`PairStat::run_to_run_rel`] the spread between runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairStat {
    /// Median of the per-sample one-way latency; with several runs, the
    /// median of the runs' medians.
    pub median_ns: f64,
    /// Mean of the per-sample one-way latency (all runs' samples).
    pub mean_ns: f64,
    /// Lower bound of the 95% confidence interval of the median within one
    /// run (with several runs: the median of the runs' bounds). Does not
    /// cover run-to-run variation.
    pub ci_low_ns: f64,
    /// Upper bound of the 95% confidence interval of the median within one
    /// run (with several runs: the median of the runs' bounds).
    pub ci_high_ns: f64,
    /// Number of samples behind the statistics (all runs).
    pub samples: u64,
    /// Whether the measurement was judged too noisy to trust (in any run).
    pub noisy: bool,
    /// The median of each run of the matrix, in run order (one entry per
    /// run that measured this pair); empty when not known (older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_medians_ns: Vec<f64>,
}

impl PairStat {
    /// Half-width of the within-run confidence interval relative to the
    /// median (the larger side): 0.007 = ±0.7%.
    pub fn within_run_rel(&self) -> f64 {
        let half = (self.median_ns - self.ci_low_ns).max(self.ci_high_ns - self.median_ns);
        relative(half, self.median_ns)
    }

    /// Run-to-run spread relative to the median: how far the farthest
    /// run's median lies from `median_ns` (0.05 = ±5%). `None` with fewer
    /// than two runs.
    pub fn run_to_run_rel(&self) -> Option<f64> {
        if self.run_medians_ns.len() < 2 {
            return None;
        }
        let far = self
            .run_medians_ns
            .iter()
            .map(|m| (m - self.median_ns).abs())
            .fold(0.0, f64::max);
        Some(relative(far, self.median_ns))
    }

    /// The interval to show: the larger of the within-run CI and the
    /// run-to-run spread, relative to the median, and which one it is.
    pub fn shown_interval(&self) -> (f64, IntervalKind) {
        let within = self.within_run_rel();
        match self.run_to_run_rel() {
            Some(r) if r > within => (r, IntervalKind::RunToRun),
            _ => (within, IntervalKind::WithinRun),
        }
    }

    /// Lowest and highest run median; `None` with fewer than two runs.
    pub fn run_range_ns(&self) -> Option<(f64, f64)> {
        if self.run_medians_ns.len() < 2 {
            return None;
        }
        let lo = self
            .run_medians_ns
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let hi = self
            .run_medians_ns
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        Some((lo, hi))
    }

    /// One pair's statistics over several runs of the matrix (`runs` in run
    /// order, each from one run): the median of the run medians, the
    /// median of the runs' CI bounds (widened to contain the median),
    /// sample-weighted mean, all samples counted; noisy if any run was, or
    /// if the runs disagree beyond their within-run intervals (two runs'
    /// 95% intervals do not overlap: the within-run interval does not
    /// describe the value, the run-to-run spread does and is the one
    /// [`PairStat::shown_interval`] shows). `None` for no runs.
    pub fn combine(runs: &[PairStat]) -> Option<PairStat> {
        let first = runs.first()?;
        let medians: Vec<f64> = runs.iter().map(|r| r.median_ns).collect();
        if runs.len() == 1 {
            return Some(PairStat {
                run_medians_ns: medians,
                ..first.clone()
            });
        }
        let median = median_of(runs.iter().map(|r| r.median_ns));
        let samples: u64 = runs.iter().map(|r| r.samples).sum();
        let mean = if samples == 0 {
            median_of(runs.iter().map(|r| r.mean_ns))
        } else {
            runs.iter()
                .map(|r| r.mean_ns * r.samples as f64)
                .sum::<f64>()
                / samples as f64
        };
        Some(PairStat {
            median_ns: median,
            mean_ns: mean,
            ci_low_ns: median_of(runs.iter().map(|r| r.ci_low_ns)).min(median),
            ci_high_ns: median_of(runs.iter().map(|r| r.ci_high_ns)).max(median),
            samples,
            noisy: runs.iter().any(|r| r.noisy) || runs_disagree(runs),
            run_medians_ns: medians,
        })
    }
}

/// Whether two runs' within-run intervals are disjoint: the lowest upper
/// bound lies below the highest lower bound.
fn runs_disagree(runs: &[PairStat]) -> bool {
    let lowest_high = runs
        .iter()
        .map(|r| r.ci_high_ns)
        .fold(f64::INFINITY, f64::min);
    let highest_low = runs
        .iter()
        .map(|r| r.ci_low_ns)
        .fold(f64::NEG_INFINITY, f64::max);
    lowest_high < highest_low
}

/// Summary of the run-to-run spread of a matrix measured several times
/// ([`LatencyMatrix::run_to_run`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunToRun {
    /// Median over the pairs of [`PairStat::run_to_run_rel`] (0.03 = ±3%).
    pub median_rel: f64,
    /// The largest, and its pair (CPU ids).
    pub max_rel: f64,
    pub max_pair: (usize, usize),
    /// Pairs measured in at least two runs.
    pub pairs: usize,
}

/// Which interval [`PairStat::shown_interval`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalKind {
    /// The 95% CI of the median within one run.
    WithinRun,
    /// The spread of the run medians (several runs).
    RunToRun,
}

impl IntervalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IntervalKind::WithinRun => "within-run",
            IntervalKind::RunToRun => "run-to-run",
        }
    }
}

/// `part / whole`, 0 when `whole` is not positive.
fn relative(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// Median of some values (NaN for none or a non-finite one), from
/// `pinsight-stats`: one median in pinsight.
fn median_of(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    pinsight_stats::median(&v).unwrap_or(f64::NAN)
}

/// A symmetric core-to-core latency matrix over an ordered list of CPU ids.
///
/// Indices (`i`, `j`) address rows/columns; CPU ids are what the kernel
/// calls the CPUs. They coincide only for whole-machine matrices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyMatrix {
    /// CPU ids, in matrix order.
    pub cpus: Vec<usize>,
    /// `ns[i][j]` median latency, symmetric, diagonal 0.0; NaN = not
    /// measured (`null` in JSON).
    #[serde(with = "nan_as_null")]
    pub ns: Vec<Vec<f64>>,
    /// Per pair detail when measured here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Vec<Vec<Option<PairStat>>>>,
    /// How it was measured: "cas" | "msg" | "csv" (unknown, read from CSV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The file it came from, or "measured".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl LatencyMatrix {
    /// A matrix over `cpus` with nothing measured yet: NaN off the
    /// diagonal, 0.0 on it.
    pub fn new(cpus: Vec<usize>) -> Self {
        let n = cpus.len();
        let ns = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { 0.0 } else { f64::NAN })
                    .collect()
            })
            .collect();
        LatencyMatrix {
            cpus,
            ns,
            stats: None,
            method: None,
            source: None,
        }
    }

    /// Number of CPUs (rows).
    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    /// Whether the matrix covers no CPU.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// Sets the latency of the pair at indices `i`, `j` (both directions).
    ///
    /// # Panics
    /// If an index is out of range, like slice indexing.
    pub fn set(&mut self, i: usize, j: usize, ns: f64) {
        self.ns[i][j] = ns;
        self.ns[j][i] = ns;
    }

    /// Latency of the pair at indices `i`, `j`; NaN when not measured.
    ///
    /// # Panics
    /// If an index is out of range, like slice indexing.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.ns[i][j]
    }

    /// Latency between two CPUs by id; `None` when a CPU is not in the
    /// matrix or the pair was not measured.
    pub fn between(&self, cpu_a: usize, cpu_b: usize) -> Option<f64> {
        let v = self.get(self.index_of(cpu_a)?, self.index_of(cpu_b)?);
        (!v.is_nan()).then_some(v)
    }

    /// Row/column index of CPU `cpu`.
    pub fn index_of(&self, cpu: usize) -> Option<usize> {
        self.cpus.iter().position(|&c| c == cpu)
    }

    /// The CPU ids as a set.
    pub fn cpu_set(&self) -> CpuSet {
        self.cpus.iter().copied().collect()
    }

    /// Whether every off-diagonal pair has a value.
    pub fn is_complete(&self) -> bool {
        (0..self.len()).all(|i| (0..i).all(|j| !self.ns[i][j].is_nan()))
    }

    /// Measured off-diagonal values, each pair once (`i > j`).
    pub fn pair_values(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.len())
            .flat_map(move |i| (0..i).map(move |j| self.ns[i][j]))
            .filter(|v| !v.is_nan())
    }

    /// Run-to-run spread over all pairs measured in at least two runs:
    /// the median and the largest [`PairStat::run_to_run_rel`], with the
    /// pair (CPU ids) of the largest. `None` without per-pair statistics or
    /// with fewer than two runs.
    pub fn run_to_run(&self) -> Option<RunToRun> {
        let stats = self.stats.as_ref()?;
        let mut spreads: Vec<(f64, (usize, usize))> = Vec::new();
        for (i, row) in stats.iter().enumerate() {
            for (j, stat) in row.iter().enumerate().take(i) {
                if let Some(r) = stat.as_ref().and_then(PairStat::run_to_run_rel) {
                    spreads.push((r, (self.cpus[i], self.cpus[j])));
                }
            }
        }
        if spreads.is_empty() {
            return None;
        }
        spreads.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = spreads.len();
        let median_rel = median_of(spreads.iter().map(|s| s.0));
        let (max_rel, max_pair) = spreads[n - 1];
        Some(RunToRun {
            median_rel,
            max_rel,
            max_pair,
            pairs: n,
        })
    }

    /// The most runs any pair was measured in (1 for a single run or a
    /// matrix without statistics).
    pub fn runs(&self) -> usize {
        self.stats
            .iter()
            .flatten()
            .flatten()
            .flatten()
            .map(|s| s.run_medians_ns.len())
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Reads the `core-to-core-latency --csv` format (see the module doc):
    /// the first matrix of the file (see [`LatencyMatrix::parse_csv_all`]
    /// for files holding several). `origin` names the input in errors,
    /// which look like `AMD.csv:4:3: 'abc' is not a number of nanoseconds`.
    pub fn parse_csv(text: &str, origin: &str) -> Result<Self, MatrixError> {
        let mut all = LatencyMatrix::parse_csv_all(text, origin)?;
        Ok(all.swap_remove(0).matrix)
    }

    /// Reads every matrix of a CSV file, in file order (at least one, or
    /// an error). `core-to-core-latency -b 1,2 --csv` prints one matrix per
    /// benchmark straight after one another on stdout (its titles go to
    /// stderr), so `2n` rows of `n` fields are two matrices; matrices may
    /// also be separated by blank lines or by a title line such as
    /// `2) Single-writer single-reader latency on two shared cache lines`
    /// (what the tool prints to stderr before each benchmark), which then
    /// names the matrix after it. Lines starting with `#` are comments; a
    /// `# cpus:` line before the data applies to every matrix.
    pub fn parse_csv_all(text: &str, origin: &str) -> Result<Vec<CsvMatrix>, MatrixError> {
        let (cpus, blocks) = csv_blocks(text, origin)?;
        let mut out = Vec::new();
        for block in &blocks {
            let n = block_width(block, cpus.as_deref(), origin)?;
            for (k, rows) in block.rows.chunks(n).enumerate() {
                let ids = cpus.clone().unwrap_or_else(|| (0..n).collect());
                let mut m = matrix_from_rows(rows, ids, origin)?;
                m.method = Some("csv".to_string());
                m.source = Some(origin.to_string());
                out.push(CsvMatrix {
                    title: if k == 0 { block.title.clone() } else { None },
                    first_line: rows[0].0,
                    last_line: rows[n - 1].0,
                    matrix: m,
                });
            }
        }
        Ok(out)
    }

    /// Writes the `core-to-core-latency --csv` format: lower triangle,
    /// shortest round-tripping decimal, empty fields elsewhere. A first line
    /// `# cpus: LIST` is added only when the CPU ids are not `0..n`.
    pub fn to_csv(&self) -> String {
        let n = self.len();
        let mut out = String::new();
        if !self.cpus.iter().copied().eq(0..n) {
            let list: Vec<String> = self.cpus.iter().map(|c| c.to_string()).collect();
            // Comma-separated ids rather than a cpulist: keeps the matrix order.
            let _ = writeln!(out, "# cpus: {}", list.join(","));
        }
        for i in 0..n {
            for j in 0..n {
                if j > 0 {
                    out.push(',');
                }
                let v = self.ns[i][j];
                if j < i && !v.is_nan() {
                    let _ = write!(out, "{v}");
                }
            }
            out.push('\n');
        }
        out
    }

    /// Reads the text of a matrix file: our JSON (first non-blank
    /// character `{`) or CSV otherwise; the first matrix of a CSV holding
    /// several (see [`LatencyMatrix::parse_all`]). `origin` names the input
    /// in errors and becomes the matrix's `source`.
    pub fn parse(text: &str, origin: &str) -> Result<Self, MatrixError> {
        let mut all = LatencyMatrix::parse_all(text, origin)?;
        Ok(all.swap_remove(0).matrix)
    }

    /// Every matrix of a file's text, in file order: one for our JSON, one
    /// per benchmark for `core-to-core-latency -b 1,2 --csv` output (see
    /// [`LatencyMatrix::parse_csv_all`]). Never empty. Errors start with
    /// `origin`. Reading the file is the caller's business (the
    /// `pinsight-latency` crate's `LoadMatrix::load_all` does it).
    pub fn parse_all(text: &str, origin: &str) -> Result<Vec<CsvMatrix>, MatrixError> {
        if text.trim_start().starts_with('{') {
            let mut m: LatencyMatrix =
                serde_json::from_str(text).map_err(|source| MatrixError::Json {
                    origin: origin.to_string(),
                    source,
                })?;
            m.validate().map_err(|source| MatrixError::Invalid {
                origin: origin.to_string(),
                source,
            })?;
            if m.source.is_none() || m.method.as_deref() == Some("csv") {
                m.source = Some(origin.to_string());
            }
            let lines = text.lines().count().max(1);
            return Ok(vec![CsvMatrix {
                title: None,
                first_line: 1,
                last_line: lines,
                matrix: m,
            }]);
        }
        LatencyMatrix::parse_csv_all(text, origin)
    }

    /// Checks the invariants the rest of the crate relies on: square shape
    /// matching `cpus`, distinct ids, symmetric, zero diagonal, values
    /// non-negative or NaN, and `stats` (if any) of the same shape.
    pub fn validate(&self) -> Result<(), InvalidMatrix> {
        let n = self.len();
        // Bound ids before building any CPU set: a hostile file naming CPU
        // 33388814825 would otherwise allocate gigabytes (found by fuzzing).
        if let Some(bad) = self.cpus.iter().find(|&&c| c > pinsight_cpuset::MAX_CPU) {
            return Err(InvalidMatrix::CpuAboveLimit {
                cpu: *bad,
                limit: pinsight_cpuset::MAX_CPU,
            });
        }
        let distinct: CpuSet = self.cpus.iter().copied().collect();
        if distinct.len() != n {
            return Err(InvalidMatrix::RepeatedCpu);
        }
        if self.ns.len() != n || self.ns.iter().any(|r| r.len() != n) {
            return Err(InvalidMatrix::NsShape { n });
        }
        for i in 0..n {
            if self.ns[i][i] != 0.0 {
                return Err(InvalidMatrix::Diagonal { index: i });
            }
            for j in 0..i {
                let (a, b) = (self.ns[i][j], self.ns[j][i]);
                if !(a.is_nan() && b.is_nan()) && a != b {
                    return Err(InvalidMatrix::Asymmetric { i, j });
                }
                if a < 0.0 || a.is_infinite() {
                    return Err(InvalidMatrix::BadLatency { i, j, value: a });
                }
            }
        }
        if let Some(stats) = &self.stats {
            if stats.len() != n || stats.iter().any(|r| r.len() != n) {
                return Err(InvalidMatrix::StatsShape { n });
            }
        }
        Ok(())
    }

    /// The matrix restricted to `cpus` (ids, in the order given); `None`
    /// when one of them is not in this matrix or an id repeats.
    pub fn submatrix(&self, cpus: &[usize]) -> Option<Self> {
        let idx: Vec<usize> = cpus
            .iter()
            .map(|&c| self.index_of(c))
            .collect::<Option<_>>()?;
        if cpus.iter().copied().collect::<CpuSet>().len() != cpus.len() {
            return None;
        }
        let ns = idx
            .iter()
            .map(|&i| idx.iter().map(|&j| self.ns[i][j]).collect())
            .collect();
        let stats = self.stats.as_ref().map(|s| {
            idx.iter()
                .map(|&i| idx.iter().map(|&j| s[i][j].clone()).collect())
                .collect()
        });
        Some(LatencyMatrix {
            cpus: cpus.to_vec(),
            ns,
            stats,
            method: self.method.clone(),
            source: self.source.clone(),
        })
    }
}

/// One matrix of a CSV file ([`LatencyMatrix::parse_csv_all`]) and where
/// it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvMatrix {
    /// The title line before it (`2) Single-writer ...`), if the file has one.
    pub title: Option<String>,
    /// 1-based lines of its first and last row.
    pub first_line: usize,
    pub last_line: usize,
    pub matrix: LatencyMatrix,
}

impl CsvMatrix {
    /// "lines 9-16, '2) Single-writer ...'": which matrix this is, for
    /// messages listing the matrices of a file.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "lines {}-{}, {} CPUs",
            self.first_line,
            self.last_line,
            self.matrix.len()
        );
        if let Some(t) = &self.title {
            s.push_str(&format!(", '{t}'"));
        }
        s
    }
}

/// Splits a CSV file into its blocks of data lines (each titled by the
/// title line before it, if any), with the CPU ids of a `# cpus:` line.
fn csv_blocks<'a>(
    text: &'a str,
    origin: &str,
) -> Result<(Option<Vec<usize>>, Vec<Block<'a>>), MatrixError> {
    let mut cpus: Option<Vec<usize>> = None;
    let mut blocks: Vec<Block> = Vec::new();
    let mut current = Block::default();
    // A title line waiting for the rows it names: (line number, title).
    let mut pending: Option<(usize, String)> = None;
    let mut seen_data = false;
    for (idx, raw) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(comment) = line.trim_start().strip_prefix('#') {
            let late = cpus.is_some() || seen_data;
            if let Some(ids) = cpus_line(comment, line_no, late, origin)? {
                cpus = Some(ids);
            }
            continue;
        }
        let title = benchmark_title(line);
        if line.trim().is_empty() || title.is_some() {
            if !current.rows.is_empty() {
                blocks.push(std::mem::take(&mut current));
            }
            if let Some(t) = title {
                if let Some((at, prev)) = pending.replace((line_no, t)) {
                    return Err(title_without_matrix(origin, at, prev));
                }
                seen_data = true;
            }
            continue;
        }
        if current.rows.is_empty() {
            current.title = pending.take().map(|(_, t)| t);
        }
        seen_data = true;
        current.rows.push((line_no, line));
    }
    if !current.rows.is_empty() {
        blocks.push(current);
    }
    if let Some((at, t)) = pending {
        return Err(title_without_matrix(origin, at, t));
    }
    if blocks.is_empty() {
        return Err(MatrixError::NoRows {
            origin: origin.to_string(),
        });
    }
    Ok((cpus, blocks))
}

/// The CPU ids of a `# cpus:` comment at `line_no` (refused when `late`:
/// after the data or a first such line); `None` for any other comment.
fn cpus_line(
    comment: &str,
    line_no: usize,
    late: bool,
    origin: &str,
) -> Result<Option<Vec<usize>>, MatrixError> {
    let Some(list) = comment.trim().strip_prefix("cpus:") else {
        return Ok(None);
    };
    if late {
        return Err(MatrixError::CpusLinePlacement {
            origin: origin.to_string(),
            line: line_no,
        });
    }
    parse_id_list(list)
        .map(Some)
        .map_err(|source| MatrixError::CpusLine {
            origin: origin.to_string(),
            line: line_no,
            source,
        })
}

/// A title line at `line` with no matrix after it.
fn title_without_matrix(origin: &str, line: usize, title: String) -> MatrixError {
    MatrixError::TitleWithoutMatrix {
        origin: origin.to_string(),
        line,
        title,
    }
}

/// The width `n` of a block whose rows make whole `n`×`n` matrices, all
/// rows of `n` fields (and `n` the count of `cpus` when listed), or why not.
fn block_width(block: &Block, cpus: Option<&[usize]>, origin: &str) -> Result<usize, MatrixError> {
    let (first_line, first) = block.rows[0];
    let n = first.split(',').count();
    for &(line_no, line) in &block.rows {
        let k = line.split(',').count();
        if k != n {
            return Err(MatrixError::RaggedRow {
                origin: origin.to_string(),
                line: line_no,
                fields: k,
                expected: n,
                first_line,
            });
        }
    }
    let r = block.rows.len();
    if n < 2 || r < 2 {
        return Err(MatrixError::TooSmall {
            origin: origin.to_string(),
            line: first_line,
            rows: r,
            fields: n,
        });
    }
    if !r.is_multiple_of(n) {
        return Err(MatrixError::NotSquare {
            origin: origin.to_string(),
            first_line,
            last_line: block.rows[r - 1].0,
            rows: r,
            fields: n,
        });
    }
    if let Some(c) = cpus {
        if c.len() != n {
            return Err(MatrixError::CpuCount {
                origin: origin.to_string(),
                listed: c.len(),
                rows: n,
            });
        }
    }
    Ok(n)
}

/// Consecutive data lines of a CSV file: one matrix, or several written
/// one after another.
#[derive(Default)]
struct Block<'a> {
    title: Option<String>,
    rows: Vec<(usize, &'a str)>,
}

/// The title core-to-core-latency prints before each benchmark
/// (`1) CAS latency on a single shared cache line`): a number, `)`, text
/// without commas. `None` for any other line.
fn benchmark_title(line: &str) -> Option<String> {
    let t = line.trim();
    let (num, rest) = t.split_once(')')?;
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || t.contains(',') {
        return None;
    }
    if rest.trim().is_empty() {
        return None;
    }
    Some(t.to_string())
}

/// One square block of rows (`rows.len()` == fields per row, checked by
/// the caller) as a matrix over `cpus`. Both triangles are read: when
/// both `(i, j)` and `(j, i)` are given, their mean is used.
// Index loops: cells are addressed as (row, column) pairs.
#[allow(clippy::needless_range_loop)]
fn matrix_from_rows(
    rows: &[(usize, &str)],
    cpus: Vec<usize>,
    origin: &str,
) -> Result<LatencyMatrix, MatrixError> {
    let n = rows.len();
    let mut cells = vec![vec![None::<f64>; n]; n];
    for (r, (line_no, line)) in rows.iter().enumerate() {
        for (c, field) in line.split(',').enumerate() {
            let field = field.trim();
            if field.is_empty() {
                continue;
            }
            let v: f64 = field
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| MatrixError::BadCell {
                    origin: origin.to_string(),
                    line: *line_no,
                    column: c + 1,
                    field: field.to_string(),
                })?;
            cells[r][c] = Some(v);
        }
    }
    let mut m = LatencyMatrix::new(cpus);
    for i in 0..n {
        for j in 0..i {
            let v = match (cells[i][j], cells[j][i]) {
                (Some(a), Some(b)) => (a + b) / 2.0,
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => continue,
            };
            m.set(i, j, v);
        }
    }
    Ok(m)
}

/// The ids of a `# cpus:` line, in the order written (the matrix order):
/// comma-separated ids or ranges `a-b`, each id at most once.
fn parse_id_list(text: &str) -> Result<Vec<usize>, CpuListError> {
    let mut ids = Vec::new();
    let mut seen = CpuSet::new();
    let bad = |tok: &str| CpuListError::BadEntry {
        entry: tok.to_string(),
    };
    for tok in text.split(',').map(str::trim) {
        let (a, b) = match tok.split_once('-') {
            Some((a, b)) => (a, b),
            None => (tok, tok),
        };
        let parse = |t: &str| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&c| c <= pinsight_cpuset::MAX_CPU)
        };
        let (Some(a), Some(b)) = (parse(a), parse(b)) else {
            return Err(bad(tok));
        };
        if a > b {
            return Err(bad(tok));
        }
        for c in a..=b {
            if !seen.insert(c) {
                return Err(CpuListError::Repeated { cpu: c });
            }
            ids.push(c);
        }
    }
    Ok(ids)
}

/// Fuzz entry point for the CSV parser (outside input): any bytes must be
/// rejected with an error or parsed, never panic; every matrix of a file
/// that parses must survive a `to_csv` round trip unchanged, and the first
/// one is what [`LatencyMatrix::parse_csv`] returns.
pub fn fuzz_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = LatencyMatrix::parse_csv(text, "fuzz");
    let Ok(all) = LatencyMatrix::parse_csv_all(text, "fuzz") else {
        assert!(
            first.is_err(),
            "parse_csv accepted what parse_csv_all refused"
        );
        return;
    };
    assert!(!all.is_empty(), "parse_csv_all returned no matrix");
    let first = first.expect("parse_csv refused what parse_csv_all accepted");
    assert_eq!(first.cpus, all[0].matrix.cpus);
    assert!(first
        .ns
        .iter()
        .flatten()
        .zip(all[0].matrix.ns.iter().flatten())
        .all(|(a, b)| a == b || (a.is_nan() && b.is_nan())));
    for (k, part) in all.iter().enumerate() {
        let m = &part.matrix;
        assert!(part.first_line <= part.last_line);
        let _ = part.describe();
        m.validate().expect("parsed matrix violates invariants");
        if k > 0 {
            assert!(part.first_line > all[k - 1].last_line, "matrices overlap");
        }
        let again =
            LatencyMatrix::parse_csv(&m.to_csv(), "fuzz").expect("to_csv output must parse");
        assert_eq!(again.cpus, m.cpus);
        for (a, b) in again.ns.iter().flatten().zip(m.ns.iter().flatten()) {
            assert!(
                a == b || (a.is_nan() && b.is_nan()),
                "round trip changed {b} into {a}"
            );
        }
    }
}

/// serde for `Vec<Vec<f64>>` with NaN written as `null` (JSON has no NaN).
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(ns: &[Vec<f64>], s: S) -> Result<S::Ok, S::Error> {
        let rows: Vec<Vec<Option<f64>>> = ns
            .iter()
            .map(|r| r.iter().map(|v| (!v.is_nan()).then_some(*v)).collect())
            .collect();
        rows.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
        let rows: Vec<Vec<Option<f64>>> = Vec::deserialize(d)?;
        Ok(rows
            .into_iter()
            .map(|r| r.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error text of a parse that must fail.
    fn err<T: std::fmt::Debug>(r: Result<T, MatrixError>) -> String {
        r.unwrap_err().to_string()
    }

    fn same(a: &LatencyMatrix, b: &LatencyMatrix) -> bool {
        a.cpus == b.cpus
            && a.ns
                .iter()
                .flatten()
                .zip(b.ns.iter().flatten())
                .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
    }

    #[test]
    fn huge_cpu_ids_are_refused_not_allocated() {
        let m: LatencyMatrix = serde_json::from_str("[[33388814825],[],[]]").unwrap();
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("33388814825"));
    }

    #[test]
    fn new_set_get_between() {
        let mut m = LatencyMatrix::new(vec![4, 5, 7]);
        assert_eq!(m.get(0, 0), 0.0);
        assert!(m.get(0, 1).is_nan());
        m.set(2, 0, 30.5);
        assert_eq!(m.get(0, 2), 30.5);
        assert_eq!(m.between(7, 4), Some(30.5));
        assert_eq!(m.between(4, 5), None);
        assert_eq!(m.between(4, 9), None);
        assert_eq!(m.index_of(7), Some(2));
        assert!(!m.is_complete());
    }

    #[test]
    fn parses_the_tool_format() {
        let text = ",,\n10.5,,\n20,30,\n";
        let m = LatencyMatrix::parse_csv(text, "t.csv").unwrap();
        assert_eq!(m.cpus, vec![0, 1, 2]);
        assert_eq!(m.between(1, 0), Some(10.5));
        assert_eq!(m.between(0, 2), Some(20.0));
        assert_eq!(m.between(2, 1), Some(30.0));
        assert_eq!(m.method.as_deref(), Some("csv"));
        assert_eq!(m.source.as_deref(), Some("t.csv"));
        assert_eq!(m.to_csv(), text);
    }

    #[test]
    fn accepts_crlf_full_matrices_and_cpu_line() {
        let text = "# cpus: 8,10\r\n0,12\r\n14,0\r\n\r\n";
        let m = LatencyMatrix::parse_csv(text, "full.csv").unwrap();
        assert_eq!(m.cpus, vec![8, 10]);
        assert_eq!(m.between(8, 10), Some(13.0));
        assert_eq!(m.to_csv(), "# cpus: 8,10\n,\n13,\n");
    }

    #[test]
    fn errors_carry_their_data() {
        match LatencyMatrix::parse_csv(",,\n1,,\n2,abc,\n", "AMD.csv").unwrap_err() {
            MatrixError::BadCell {
                origin,
                line,
                column,
                field,
            } => assert_eq!(
                (origin.as_str(), line, column, field.as_str()),
                ("AMD.csv", 3, 2, "abc")
            ),
            other => panic!("{other:?}"),
        }
        match LatencyMatrix::parse_csv("# cpus: 0,0\n,\n1,\n", "c.csv").unwrap_err() {
            MatrixError::CpusLine { line, source, .. } => {
                assert_eq!((line, source), (1, CpuListError::Repeated { cpu: 0 }))
            }
            other => panic!("{other:?}"),
        }
        match LatencyMatrix::parse("{\"cpus\":[0,1],\"ns\":[[0,1],[2,0]]}", "m.json").unwrap_err() {
            MatrixError::Invalid { source, .. } => {
                assert_eq!(source, InvalidMatrix::Asymmetric { i: 1, j: 0 })
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_name_origin_line_and_column() {
        let e = err(LatencyMatrix::parse_csv(",,\n1,,\n2,abc,\n", "AMD.csv"));
        assert!(
            e.starts_with("AMD.csv:3:2: 'abc' is not a number of nanoseconds"),
            "{e}"
        );
        let e = err(LatencyMatrix::parse_csv(",,\n1,\n2,3,\n", "x.csv"));
        assert!(
            e.starts_with("x.csv:2: row has 2 fields, expected 3"),
            "{e}"
        );
        let e = err(LatencyMatrix::parse_csv(",,\n-1,,\n2,3,\n", "x.csv"));
        assert!(e.starts_with("x.csv:2:1: '-1'"), "{e}");
        let e = err(LatencyMatrix::parse_csv("", "empty.csv"));
        assert!(e.starts_with("empty.csv: found 0 matrix rows"), "{e}");
        let e = err(LatencyMatrix::parse_csv("# cpus: 1-3\n,\n1,\n", "c.csv"));
        assert!(e.contains("lists 3 CPUs but the matrix has 2 rows"), "{e}");
    }

    #[test]
    fn reads_every_matrix_of_core_to_core_latency_multi_benchmark_output() {
        // `core-to-core-latency -b 1,2 --csv` on 3 CPUs: the two matrices
        // straight after one another on stdout (titles go to stderr).
        let text = ",,\n50.5,,\n60,70,\n,,\n80,,\n90,100.25,\n";
        let all = LatencyMatrix::parse_csv_all(text, "b12.csv").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].first_line, all[0].last_line), (1, 3));
        assert_eq!((all[1].first_line, all[1].last_line), (4, 6));
        assert_eq!(all[0].matrix.between(1, 0), Some(50.5));
        assert_eq!(all[1].matrix.between(2, 1), Some(100.25));
        assert_eq!(all[1].title, None);
        assert_eq!(all[1].describe(), "lines 4-6, 3 CPUs");
        let first = LatencyMatrix::parse_csv(text, "b12.csv").unwrap();
        assert!(same(&first, &all[0].matrix));

        // Separated by blank lines, named by the titles the tool prints to
        // stderr (as with 2>&1 around the CSV), after our comment line.
        let text = "# pinsight latency: medians\n\n1) CAS latency on a single shared cache line\n\
                    ,\n5,\n\n2) Single-writer single-reader latency on two shared cache lines\n\
                    ,\n7,\n\n";
        let all = LatencyMatrix::parse_csv_all(text, "t.csv").unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[0].title.as_deref(),
            Some("1) CAS latency on a single shared cache line")
        );
        assert_eq!(all[1].matrix.between(0, 1), Some(7.0));
        assert_eq!(
            all[1].describe(),
            "lines 8-9, 2 CPUs, '2) Single-writer single-reader latency on two shared cache lines'"
        );
    }

    #[test]
    fn multi_matrix_errors_say_what_is_expected() {
        let e = err(LatencyMatrix::parse_csv_all(",\n1,\n2,\n", "odd.csv"));
        assert!(
            e.starts_with("odd.csv:1-3: 3 rows of 2 fields: a matrix has one row per CPU (2)"),
            "{e}"
        );
        let e = err(LatencyMatrix::parse_csv_all(",\n1,\n1) CAS\n", "t.csv"));
        assert_eq!(
            e,
            "t.csv:3: benchmark title '1) CAS' is followed by no matrix"
        );
        let e = err(LatencyMatrix::parse_csv_all("1) A\n2) B\n,\n1,\n", "t.csv"));
        assert!(e.starts_with("t.csv:1: benchmark title '1) A'"), "{e}");
        let e = err(LatencyMatrix::parse_csv_all(",\n1,\n\n,,\n1,,\n", "t.csv"));
        assert!(e.starts_with("t.csv:4-5: 2 rows of 3 fields"), "{e}");
        let e = err(LatencyMatrix::parse_csv_all(",\n1,\n\n1,2\n", "t.csv"));
        assert!(
            e.starts_with("t.csv:4: found 1 matrix row(s) of 2 field(s)"),
            "{e}"
        );
        let e = err(LatencyMatrix::parse_csv_all(
            "# cpus: 4,5\n,\n1,\n\n,,\n1,,\n2,3,\n",
            "t.csv",
        ));
        assert!(e.contains("lists 2 CPUs but the matrix has 3 rows"), "{e}");
        let e = err(LatencyMatrix::parse_csv_all(
            ",\n1,\n# cpus: 0-1\n",
            "t.csv",
        ));
        assert!(e.contains("must come before the matrix"), "{e}");
    }

    #[test]
    fn comment_lines_before_the_cpu_line_are_skipped() {
        let text = "# pinsight latency: per-pair medians\n# cpus: 8,10\n,\n13,\n";
        let m = LatencyMatrix::parse_csv(text, "c.csv").unwrap();
        assert_eq!(m.cpus, vec![8, 10]);
        assert_eq!(m.between(8, 10), Some(13.0));
    }

    fn stat(median: f64, lo: f64, hi: f64, samples: u64) -> PairStat {
        PairStat {
            median_ns: median,
            mean_ns: median + 1.0,
            ci_low_ns: lo,
            ci_high_ns: hi,
            samples,
            noisy: false,
            run_medians_ns: Vec::new(),
        }
    }

    #[test]
    fn one_run_shows_its_within_run_interval() {
        let s = PairStat::combine(&[stat(100.0, 99.5, 100.7, 40)]).unwrap();
        assert_eq!(s.run_medians_ns, vec![100.0]);
        assert_eq!(s.run_to_run_rel(), None);
        let (rel, kind) = s.shown_interval();
        assert!((rel - 0.007).abs() < 1e-9 && kind == IntervalKind::WithinRun);
        assert!(PairStat::combine(&[]).is_none());
    }

    #[test]
    fn several_runs_show_the_larger_of_ci_and_run_to_run_spread() {
        // Five runs claiming about ±0.7% each, spread over 53-64 ns.
        let runs: Vec<PairStat> = [53.0, 64.0, 58.0, 55.0, 60.0]
            .iter()
            .map(|&m| stat(m, m * 0.993, m * 1.007, 100))
            .collect();
        let s = PairStat::combine(&runs).unwrap();
        assert_eq!(s.median_ns, 58.0);
        assert_eq!(s.run_medians_ns, vec![53.0, 64.0, 58.0, 55.0, 60.0]);
        assert_eq!(s.samples, 500);
        assert_eq!(s.run_range_ns(), Some((53.0, 64.0)));
        let r2r = s.run_to_run_rel().unwrap();
        assert!((r2r - 6.0 / 58.0).abs() < 1e-12, "{r2r}");
        assert_eq!(s.shown_interval(), (r2r, IntervalKind::RunToRun));
        assert!(s.ci_low_ns <= s.median_ns && s.median_ns <= s.ci_high_ns);
        // Runs that agree: the within-run CI is the larger one.
        let calm =
            PairStat::combine(&[stat(50.0, 49.0, 51.0, 10), stat(50.1, 49.1, 51.1, 10)]).unwrap();
        assert_eq!(calm.shown_interval().1, IntervalKind::WithinRun);
        assert!(!calm.noisy, "overlapping intervals agree");
        assert!(s.noisy, "53 ± 0.7% and 64 ± 0.7% disagree");
    }

    #[test]
    fn a_disturbed_repeat_makes_the_pair_noisy() {
        // Seen on a VM: three runs of one pair, each claiming ±1%.
        let runs: Vec<PairStat> = [25.0, 25.5, 116.5]
            .iter()
            .map(|&m| stat(m, m * 0.99, m * 1.01, 200))
            .collect();
        assert!(runs.iter().all(|r| !r.noisy));
        let s = PairStat::combine(&runs).unwrap();
        assert!(s.noisy);
        let (rel, kind) = s.shown_interval();
        assert_eq!(kind, IntervalKind::RunToRun);
        assert!(rel > 3.0, "the interval admits the 25-116 ns spread: {rel}");
    }

    #[test]
    fn stats_without_run_medians_still_load() {
        let json =
            r#"{"median_ns":5,"mean_ns":5,"ci_low_ns":4,"ci_high_ns":6,"samples":9,"noisy":false}"#;
        let s: PairStat = serde_json::from_str(json).unwrap();
        assert!(s.run_medians_ns.is_empty());
        assert!(!serde_json::to_string(&s).unwrap().contains("run_medians"));
    }

    #[test]
    fn json_round_trip_keeps_nan() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2]);
        m.set(1, 0, 5.0);
        m.method = Some("cas".into());
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains("null"));
        let back: LatencyMatrix = serde_json::from_str(&json).unwrap();
        assert!(same(&m, &back));
        back.validate().unwrap();
    }

    #[test]
    fn parse_sniffs_json_and_csv() {
        let mut m = LatencyMatrix::new(vec![2, 3]);
        m.set(0, 1, 7.0);
        let a = LatencyMatrix::parse(&serde_json::to_string(&m).unwrap(), "m.json").unwrap();
        let b = LatencyMatrix::parse(&m.to_csv(), "m.txt").unwrap();
        assert!(same(&a, &m) && same(&b, &m));
        assert_eq!(a.source.as_deref(), Some("m.json"));
        assert_eq!(b.source.as_deref(), Some("m.txt"));
        let all =
            LatencyMatrix::parse_all("  {\"cpus\":[0,1],\"ns\":[[0,1],[1,0]]}\n", "x").unwrap();
        assert_eq!((all.len(), all[0].first_line, all[0].last_line), (1, 1, 1));
        let e = err(LatencyMatrix::parse(
            "{\"cpus\":[0,1],\"ns\":[[0,1],[2,0]]}",
            "m.json",
        ));
        assert!(
            e.starts_with("m.json: ") && e.contains("not symmetric"),
            "{e}"
        );
        let e = err(LatencyMatrix::parse("{\"cpus\":", "m.json"));
        assert!(
            e.contains("m.json: not a pinsight latency matrix JSON"),
            "{e}"
        );
        let e = err(LatencyMatrix::parse("", "empty.csv"));
        assert!(e.starts_with("empty.csv: found 0 matrix rows"), "{e}");
    }

    #[test]
    fn submatrix_reorders_and_rejects_unknown() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2, 3]);
        for i in 0..4 {
            for j in 0..i {
                m.set(i, j, (10 * i + j) as f64);
            }
        }
        let s = m.submatrix(&[3, 1]).unwrap();
        assert_eq!(s.cpus, vec![3, 1]);
        assert_eq!(s.get(0, 1), 31.0);
        assert_eq!(s.get(0, 0), 0.0);
        assert!(m.submatrix(&[3, 9]).is_none());
        assert!(m.submatrix(&[3, 3]).is_none());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn matrix() -> impl Strategy<Value = LatencyMatrix> {
            (2usize..9, any::<bool>()).prop_flat_map(|(n, shifted)| {
                proptest::collection::vec(
                    proptest::option::weighted(0.9, 0.0f64..1e6),
                    n * (n - 1) / 2,
                )
                .prop_map(move |vals| {
                    // Ascending ids 0..n (the tool's case) or scattered, descending ids.
                    let cpus = if shifted {
                        (0..n).rev().map(|c| c * 3 + 1).collect()
                    } else {
                        (0..n).collect()
                    };
                    let mut m = LatencyMatrix::new(cpus);
                    let mut it = vals.into_iter();
                    for i in 0..n {
                        for j in 0..i {
                            if let Some(v) = it.next().unwrap() {
                                m.set(i, j, v);
                            }
                        }
                    }
                    m
                })
            })
        }

        proptest! {
            #[test]
            fn csv_round_trip(m in matrix()) {
                let back = LatencyMatrix::parse_csv(&m.to_csv(), "p").unwrap();
                prop_assert!(same(&m, &back), "{:?} vs {:?}", m, back);
            }

            #[test]
            fn concatenated_matrices_read_back_in_order(
                ms in proptest::collection::vec(matrix(), 1..4),
                blank in any::<bool>(),
            ) {
                // Same size and ids 0..n, as core-to-core-latency -b 1,2 writes them.
                let n = ms[0].len();
                let ms: Vec<LatencyMatrix> = ms
                    .into_iter()
                    .map(|m| {
                        let mut m = m.submatrix(&m.cpus[..n.min(m.len())]).unwrap();
                        m.cpus = (0..m.len()).collect();
                        m
                    })
                    .filter(|m| m.len() == n)
                    .collect();
                let sep = if blank { "\n" } else { "" };
                let text: Vec<String> = ms.iter().map(|m| m.to_csv()).collect();
                let all = LatencyMatrix::parse_csv_all(&text.join(sep), "p").unwrap();
                prop_assert_eq!(all.len(), ms.len());
                for (a, b) in all.iter().zip(&ms) {
                    prop_assert!(same(&a.matrix, b), "{:?} vs {:?}", a.matrix, b);
                }
                fuzz_parse(text.join(sep).as_bytes());
            }

            #[test]
            fn multi_matrix_like_garbage_never_panics(s in "[0-9.,)# A\n]{0,160}") {
                fuzz_parse(s.as_bytes());
            }

            #[test]
            fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
                fuzz_parse(&bytes);
            }

            #[test]
            fn csv_like_garbage_never_panics(s in "[0-9.,e\\-# cpus:\\r\\n]{0,120}") {
                fuzz_parse(s.as_bytes());
            }
        }
    }
}
