//! The end of every `tune`: the runs (live or read from a file) analysed
//! into a [`TuneReport`], the machine in words, the notes and the
//! recommendation in each dialect ([`Analysis`], also `tune`'s JSON); and
//! how a live tune that stopped short ends ([`Finished::ending`]).

use crate::{Energy, Finished};
use pinsight_compare::experiment::Outcome;
use pinsight_model::Topology;
use pinsight_plan::tune::TuneLayout;
use pinsight_plan::tune_dialect::{tune_dialects, TuneDialect, TuneDialectRequest};
use pinsight_tune_model::{
    analyse_with, design, FitError, FitOptions, Goal, Machine, Observation, TuneReport,
};
use serde::Serialize;

/// Bootstrap resamples of the intervals `tune` reports.
pub const BOOTSTRAP: usize = 200;

/// What to analyse.
pub struct AnalysisRequest<'a> {
    /// The design's runs.
    pub design_runs: &'a [Observation],
    /// The validation runs (empty for runs read from a file).
    pub validation: &'a [Observation],
    /// The machine to predict for.
    pub machine: &'a Machine,
    /// The topology and layout to say the recommendation on; `None` for a
    /// declared or inferred machine (no placement lines then).
    pub placed: Option<(&'a Topology, &'a TuneLayout)>,
    /// The machine in words ([`machine_words`], or the layout's).
    pub machine_words: String,
    /// Notes shown under the machine.
    pub notes: Vec<String>,
    pub goal: Goal,
    /// Seed of the bootstrap [default: [`FitOptions`]'s].
    pub seed: Option<u64>,
    /// Let the recommendation be an extrapolated configuration.
    pub extrapolate: bool,
    /// Pinned threads in the placement lines.
    pub pinned: bool,
    /// The program's command line, as the placement lines end.
    pub command: &'a str,
    /// The pinsight line from a policy, a thread count and the command
    /// (the caller's words).
    pub run_line: fn(&str, usize, &str) -> String,
}

/// `tune`'s answer: the report and what the text shows besides it. As
/// JSON, the report's fields then `machine_words`, `notes`, `dialects`.
#[derive(Debug, Serialize)]
pub struct Analysis {
    #[serde(flatten)]
    pub report: TuneReport,
    pub machine_words: String,
    pub notes: Vec<String>,
    /// The recommendation in each dialect (none without a topology).
    pub dialects: Vec<TuneDialect>,
}

/// The runs could not be fitted.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// Too few configurations: the design the machine would run.
    #[error("{error}; the design for this machine runs {design}")]
    TooFew { error: FitError, design: String },
    /// No configuration of the machine can be predicted (a runtime failure).
    #[error("{0}")]
    NoConfiguration(FitError),
    /// Anything else the runs get wrong (the input's fault).
    #[error("{0}")]
    Input(FitError),
}

impl AnalysisError {
    /// True when the input is at fault (exit 2), false for a runtime failure.
    pub fn is_input(&self) -> bool {
        !matches!(self, AnalysisError::NoConfiguration(_))
    }

    fn of(e: FitError, machine: &Machine) -> AnalysisError {
        match e {
            FitError::NotIdentifiable { .. } | FitError::NoRuns { .. } => {
                let d: Vec<String> = design(machine).iter().map(ToString::to_string).collect();
                AnalysisError::TooFew {
                    error: e,
                    design: d.join(", "),
                }
            }
            FitError::NoConfiguration => AnalysisError::NoConfiguration(e),
            e => AnalysisError::Input(e),
        }
    }
}

/// Fit, predict and recommend; the recommendation in each dialect.
pub fn analyse(req: AnalysisRequest<'_>) -> Result<Analysis, AnalysisError> {
    let opts = FitOptions {
        bootstrap: BOOTSTRAP,
        seed: req.seed.unwrap_or(FitOptions::default().seed),
    };
    let report = analyse_with(
        req.design_runs,
        req.validation,
        req.machine,
        req.goal,
        opts,
        req.extrapolate,
    )
    .map_err(|e| AnalysisError::of(e, req.machine))?;
    let dialects = match req.placed {
        Some((topo, layout)) => {
            let d = TuneDialectRequest {
                config: report.recommended.config(),
                pinned: req.pinned,
                command: req.command,
                run_line: req.run_line,
            };
            tune_dialects(topo, layout, &d)
        }
        None => Vec::new(),
    };
    Ok(Analysis {
        report,
        machine_words: req.machine_words,
        notes: req.notes,
        dialects,
    })
}

/// A machine without a topology in words, and where it came from (`how`,
/// the caller's prefix): `6P+8E, 1 SMT sibling per P-core (how6P+8E+smt)`.
pub fn machine_words(m: &Machine, how: &str) -> String {
    let smt = match m.smt_per_p_core {
        0 => "no SMT".to_owned(),
        1 => "1 SMT sibling per P-core".to_owned(),
        n => format!("{n} SMT siblings per P-core"),
    };
    if m.one_kind() {
        format!("{} cores (one kind), {smt} ({how}{m})", m.p_cores)
    } else {
        format!("{}P+{}E, {smt} ({how}{m})", m.p_cores, m.e_cores)
    }
}

/// How a live tune ended, for its caller to say and to choose the exit.
#[derive(Debug)]
pub enum Ending<'a> {
    /// Every stage ended well: analyse.
    Analyse,
    /// The goal needs energy some runs lack.
    NoEnergy { reason: &'a str },
    /// A signal stopped the runs (the signal, when the tune recorded it).
    Interrupted { signal: Option<i32> },
    /// A run failed and the tune stopped.
    Stopped { why: &'a str },
    /// The runs could not go on.
    Error(String),
}

impl Finished {
    /// The warnings of the cleanup: a late signal cleanup, a failed restore.
    pub fn cleanup_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.cleanup_late {
            out.push("the signal cleanup did not report back within 5 s".to_owned());
        }
        if let Some(e) = &self.restore_failed {
            out.push(e.to_string());
        }
        out
    }

    /// How this tune ends for `goal`: analysed, or stopped short.
    pub fn ending(&self, goal: Goal) -> Ending<'_> {
        if let Energy::Unavailable { reason } = &self.energy {
            if goal.needs_energy() {
                return Ending::NoEnergy { reason };
            }
        }
        match &self.outcome {
            Outcome::Complete => Ending::Analyse,
            Outcome::Interrupted => Ending::Interrupted {
                signal: self.signal,
            },
            Outcome::StoppedOnFailure { why, .. } => Ending::Stopped { why },
            Outcome::Error(e) => Ending::Error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_words_say_kinds_smt_and_where_from() {
        let hybrid: Machine = "6P+8E+smt".parse().unwrap();
        assert_eq!(
            machine_words(&hybrid, "from: "),
            "6P+8E, 1 SMT sibling per P-core (from: 6P+8E+smt)"
        );
        let one: Machine = "8P".parse().unwrap();
        assert!(machine_words(&one, "").starts_with("8 cores (one kind), no SMT ("));
    }

    #[test]
    fn too_few_configurations_name_the_design_and_are_the_inputs_fault() {
        let m: Machine = "2P+2E".parse().unwrap();
        let e = AnalysisError::of(FitError::NoRuns { needed: 3 }, &m);
        assert!(e.is_input());
        assert!(e
            .to_string()
            .contains("; the design for this machine runs "));
        assert!(!AnalysisError::of(FitError::NoConfiguration, &m).is_input());
    }
}
