//! One `pinsight latency` result as data: where the matrix came from
//! ([`Origin`]), its `--json` form ([`JsonReport`]), the comment line of a
//! CSV export and the title of a chart, a matrix taken from a file for a
//! set of CPUs ([`from_file`]), and how many runs a virtual machine gets
//! ([`runs_for`]). The terminal view is [`crate::view::report`].

use crate::file::{LoadError, LoadMatrix};
use crate::measure::{MeasureConfig, Measurement};
use crate::request::{Input, Names};
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::{DomainTree, LatencyMatrix, RunToRun};
use pinsight_measure::Disturbance;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the matrix came from.
pub enum Origin {
    Measured {
        measurement: Box<Measurement>,
        config: MeasureConfig,
    },
    File {
        path: PathBuf,
        /// The matrix shown (1-based) and a description of every matrix
        /// of the file (more than one for core-to-core-latency -b 1,2).
        benchmark: usize,
        benchmarks: Vec<String>,
    },
}

impl Origin {
    /// The matrix of `measurement`, measured here with `config`, and its
    /// origin.
    pub fn measured(measurement: Measurement, config: MeasureConfig) -> (LatencyMatrix, Origin) {
        let matrix = measurement.matrix.clone();
        let measurement = Box::new(measurement);
        (
            matrix,
            Origin::Measured {
                measurement,
                config,
            },
        )
    }
}

/// `--json` output: the matrix itself at the top level (so the file loads
/// back as a matrix file), plus how it was obtained and its domains.
#[derive(Serialize)]
pub struct JsonReport<'a> {
    #[serde(flatten)]
    matrix: &'a LatencyMatrix,
    unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured: Option<JsonMeasured>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<JsonFile>,
    domains: &'a DomainTree,
}

/// Which matrix of a file this is.
#[derive(Serialize)]
struct JsonFile {
    /// 1-based index of the matrix shown.
    benchmark: usize,
    /// Every matrix of the file: "lines 1-8, 8 CPUs[, 'title']".
    benchmarks: Vec<String>,
}

#[derive(Serialize)]
struct JsonMeasured {
    parallel: bool,
    target_rel_ci: f64,
    max_time_per_pair_s: f64,
    elapsed_s: f64,
    rounds_run: usize,
    rounds_planned: usize,
    /// Pairs (CPU ids) whose interval did not reach the target.
    noisy: Vec<(usize, usize)>,
    /// Pairs (CPU ids) not measured because the budget ran out.
    skipped: Vec<(usize, usize)>,
    /// Runs of the whole matrix asked for and completed.
    repeats: usize,
    runs_completed: usize,
    /// Pairs (CPU ids) measured in fewer runs than asked (budget).
    fewer_runs: Vec<(usize, usize)>,
    /// What each pair's `ci_low_ns`/`ci_high_ns` cover: the samples of one
    /// run only. `run_medians_ns` (per pair, one per run) and `run_to_run`
    /// give the variation between runs.
    ci_covers: &'static str,
    /// Run-to-run spread over the pairs (with 2 runs or more): median and
    /// largest distance of a run median from the pair's median, relative
    /// to it, and the pair (CPU ids) of the largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    run_to_run: Option<RunToRun>,
    /// This machine is a virtual machine: every pair is flagged noisy.
    virtual_machine: bool,
    /// Each run's other work on the measured CPUs and steal (/proc/stat).
    disturbance: Vec<Option<Disturbance>>,
}

/// What a pair's interval covers, as `--json` says it.
pub const CI_COVERS: &str =
    "variation within one run only (the 95% CI of the median from that run's \
     samples); not run-to-run variation: see run_medians_ns and run_to_run (--runs)";

impl<'a> JsonReport<'a> {
    pub fn new(matrix: &'a LatencyMatrix, origin: &Origin, domains: &'a DomainTree) -> Self {
        let measured = match origin {
            Origin::Measured {
                measurement: m,
                config: c,
            } => Some(JsonMeasured {
                parallel: c.parallel,
                target_rel_ci: c.target_rel_ci,
                max_time_per_pair_s: c.max_time_per_pair.as_secs_f64(),
                elapsed_s: m.elapsed.as_secs_f64(),
                rounds_run: m.rounds_run,
                rounds_planned: m.rounds_planned,
                noisy: m.noisy(),
                skipped: m.skipped.clone(),
                repeats: m.runs_planned,
                runs_completed: m.runs_completed,
                fewer_runs: m.fewer_runs.clone(),
                ci_covers: CI_COVERS,
                run_to_run: m.run_to_run(),
                virtual_machine: c.virtual_machine,
                disturbance: m.disturbance.clone(),
            }),
            Origin::File { .. } => None,
        };
        let file = match origin {
            Origin::File {
                benchmark,
                benchmarks,
                ..
            } => Some(JsonFile {
                benchmark: *benchmark,
                benchmarks: benchmarks.clone(),
            }),
            Origin::Measured { .. } => None,
        };
        JsonReport {
            matrix,
            unit: "ns one-way",
            measured,
            file,
            domains,
        }
    }
}

/// Why a matrix cannot be taken from a file. The caller names the input
/// (each variant says which: the file, the matrix number, the CPUs).
#[derive(Debug, thiserror::Error)]
pub enum FromFileError {
    /// The file itself (its path is in the message).
    #[error("{0}")]
    Load(#[from] LoadError),
    /// The matrix number asked for is not in the file.
    #[error("{path} holds {count} matri{plural}: {list}", plural = if *count == 1 { "x" } else { "ces" })]
    NoSuchMatrix {
        index: usize,
        path: String,
        count: usize,
        list: String,
    },
    /// CPUs asked for that the matrix lacks.
    #[error("CPU(s) {missing} are not in {path} (it has CPUs {has})")]
    CpusNotInFile {
        asked: CpuSet,
        missing: CpuSet,
        path: String,
        has: CpuSet,
    },
    /// Fewer than two CPUs asked for.
    #[error("a latency matrix needs at least 2 CPUs")]
    TooFewCpus { asked: CpuSet },
}

impl FromFileError {
    /// The message after the input at fault, named by `name`: the file,
    /// the matrix number asked for, or the CPUs asked for.
    pub fn named(&self, name: Names<'_>) -> String {
        match self {
            FromFileError::Load(_) => format!("{} {self}", name(Input::Matrix)),
            FromFileError::NoSuchMatrix { index, .. } => {
                format!("{} {index}: {self}", name(Input::Benchmark))
            }
            FromFileError::CpusNotInFile { asked, .. } | FromFileError::TooFewCpus { asked } => {
                format!("{} {asked}: {self}", name(Input::Cpus))
            }
        }
    }
}

/// A matrix number that is not one: not a whole number from 1 to
/// [`MAX_MATRIX_NUMBER`] (the text as given).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a matrix number (1 for the first matrix of the file, 2 for the second, ... up to {MAX_MATRIX_NUMBER})")]
pub struct MatrixNumberError(pub String);

/// The largest matrix number asked for.
pub const MAX_MATRIX_NUMBER: usize = 1000;

/// A 1-based matrix number of a file holding several, as a user gives it
/// (see [`from_file`]).
pub fn matrix_number(text: &str) -> Result<usize, MatrixNumberError> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_MATRIX_NUMBER).contains(&n) => Ok(n),
        _ => Err(MatrixNumberError(text.to_owned())),
    }
}

/// Matrix number `benchmark` (1-based, default 1) of the file at `path`,
/// restricted to the CPUs `requested` if given, and its [`Origin`].
pub fn from_file(
    path: &Path,
    benchmark: Option<usize>,
    requested: Option<&CpuSet>,
) -> Result<(LatencyMatrix, Origin), FromFileError> {
    let all = LatencyMatrix::load_all(path)?;
    let benchmarks: Vec<String> = all.iter().map(|m| m.describe()).collect();
    let index = benchmark.unwrap_or(1);
    let Some(chosen) = all.into_iter().nth(index - 1) else {
        let list: Vec<String> = benchmarks
            .iter()
            .enumerate()
            .map(|(k, d)| format!("{} ({d})", k + 1))
            .collect();
        return Err(FromFileError::NoSuchMatrix {
            index,
            path: path.display().to_string(),
            count: list.len(),
            list: list.join("; "),
        });
    };
    let origin = Origin::File {
        path: path.to_path_buf(),
        benchmark: index,
        benchmarks,
    };
    let m = chosen.matrix;
    let Some(req) = requested else {
        return Ok((m, origin));
    };
    let missing = req.difference(&m.cpu_set());
    if !missing.is_empty() {
        return Err(FromFileError::CpusNotInFile {
            asked: req.clone(),
            missing,
            path: path.display().to_string(),
            has: m.cpu_set(),
        });
    }
    if req.len() < 2 {
        return Err(FromFileError::TooFewCpus { asked: req.clone() });
    }
    let cpus: Vec<usize> = m
        .cpus
        .iter()
        .copied()
        .filter(|c| req.contains(*c))
        .collect();
    let sub = m
        .submatrix(&cpus)
        .expect("CPUs checked to be in the matrix");
    Ok((sub, origin))
}

/// The file name of `path` (the whole path when it has none).
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// The first line of a CSV export: what the values are (pinsight writes
/// medians where core-to-core-latency writes means). A `#` line, which
/// the CSV reader skips.
pub fn csv_comment(m: &LatencyMatrix, origin: &Origin) -> String {
    match origin {
        Origin::Measured { config, .. } => format!(
            "# pinsight latency ({}): one-way ns, per-pair {} (core-to-core-latency --csv \
             writes means)",
            config.method,
            if config.repeats > 1 {
                format!("median of {} run medians", config.repeats)
            } else {
                "medians".to_string()
            }
        ),
        Origin::File { path, .. } => format!(
            "# pinsight latency: one-way ns as read from {} ({} CPUs; \
             core-to-core-latency --csv writes means, pinsight medians)",
            pinsight_sys::text::shown(&file_name(path)),
            m.len()
        ),
    }
}

/// A chart's title.
pub fn chart_title(m: &LatencyMatrix, origin: &Origin) -> String {
    match origin {
        Origin::Measured { config, .. } => format!(
            "Core-to-core latency, one-way ns ({}, median)",
            config.method
        ),
        Origin::File { path, .. } => format!(
            "Core-to-core latency, one-way ns ({}, {} CPUs)",
            file_name(path),
            m.len()
        ),
    }
}

/// Runs of the matrix on a virtual machine when the user did not choose:
/// the host moves the virtual CPUs between moments, so one matrix sees one
/// moment (the report measures three the same way).
pub const VM_RUNS: usize = 3;
/// How far apart those runs start without a budget.
pub const VM_SPACING: Duration = Duration::from_secs(1);

/// How many runs of the matrix, and how far apart.
#[derive(Clone, Debug, PartialEq)]
pub struct Runs {
    pub repeats: usize,
    /// The least time between the runs' starts: set when the runs were
    /// chosen for a virtual machine, not asked for (the caller says so).
    pub spacing: Option<Duration>,
}

/// `asked` runs when the user chose them (`chosen`) or on a physical
/// machine; else on a virtual machine [`VM_RUNS`] runs started
/// [`VM_SPACING`] (a third of `budget`) apart.
pub fn runs_for(asked: usize, chosen: bool, vm: bool, budget: Option<Duration>) -> Runs {
    if chosen || !vm {
        return Runs {
            repeats: asked,
            spacing: None,
        };
    }
    Runs {
        repeats: VM_RUNS,
        spacing: Some(budget.map_or(VM_SPACING, |b| b / VM_RUNS as u32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_numbers_run_from_one_to_a_thousand() {
        assert_eq!(matrix_number(" 2 "), Ok(2));
        assert_eq!(matrix_number("1000"), Ok(1000));
        for bad in ["0", "1001", "x", "-1"] {
            assert_eq!(matrix_number(bad), Err(MatrixNumberError(bad.to_owned())));
        }
    }

    #[test]
    fn a_file_error_names_the_input_at_fault() {
        let flag = |i: Input| match i {
            Input::Cpus => "-c",
            Input::Benchmark => "-b",
            _ => "?",
        };
        let asked = CpuSet::parse_list("3").unwrap();
        assert_eq!(
            FromFileError::TooFewCpus { asked }.named(&flag),
            "-c 3: a latency matrix needs at least 2 CPUs"
        );
        let none = FromFileError::NoSuchMatrix {
            index: 4,
            path: "m.csv".into(),
            count: 1,
            list: "1 (lines 1-3, 3 CPUs)".into(),
        };
        assert_eq!(
            none.named(&flag),
            "-b 4: m.csv holds 1 matrix: 1 (lines 1-3, 3 CPUs)"
        );
    }

    #[test]
    fn a_virtual_machine_gets_three_spaced_runs_unless_the_user_chose() {
        let r = runs_for(1, false, true, None);
        assert_eq!((r.repeats, r.spacing), (3, Some(Duration::from_secs(1))));
        let r = runs_for(1, false, true, Some(Duration::from_secs(9)));
        assert_eq!(r.spacing, Some(Duration::from_secs(3)));
        assert_eq!(runs_for(2, true, true, None).repeats, 2);
        assert_eq!(
            runs_for(1, false, false, None),
            Runs {
                repeats: 1,
                spacing: None
            }
        );
    }
}
