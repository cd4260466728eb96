//! The end of every `tune`: the runs (live or read from a file) analysed
//! into a [`TuneReport`], the machine in words, the notes and the
//! recommendation in each dialect ([`Analysis`], also `tune`'s JSON); and
//! how a live tune ends ([`Finished::outcome`]); runs measured elsewhere
//! analysed for the machine they are predicted for ([`analyse_runs`]).

use crate::{Energy, Finished};
use pinsight_compare::experiment::Outcome;
use pinsight_model::Topology;
use pinsight_plan::tune::{TuneLayout, TuneLayoutError};
use pinsight_plan::tune_dialect::{tune_dialects, TuneDialect, TuneDialectRequest};
use pinsight_tune_model::{
    analyse_with, design, FitError, FitOptions, Goal, Machine, Observation, TuneReport,
};
use serde::Serialize;
use std::path::PathBuf;

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
        ..FitOptions::seeded(req.seed)
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

/// How `tune` answers, whatever the runs' source.
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    pub goal: Goal,
    /// Seed of the bootstrap [default: [`FitOptions`]'s].
    pub seed: Option<u64>,
    /// Let the recommendation be an extrapolated configuration.
    pub extrapolate: bool,
    /// The pinsight line from a policy, a thread count and the command
    /// (the caller's words).
    pub run_line: fn(&str, usize, &str) -> String,
}

impl Answer {
    /// The analysis of `runs` on `machine` as this answer asks it.
    fn request<'a>(
        &self,
        (design_runs, validation): (&'a [Observation], &'a [Observation]),
        machine: &'a Machine,
        placed: Option<(&'a Topology, &'a TuneLayout)>,
        (machine_words, notes): (String, Vec<String>),
        (pinned, command): (bool, &'a str),
    ) -> AnalysisRequest<'a> {
        AnalysisRequest {
            design_runs,
            validation,
            machine,
            placed,
            machine_words,
            notes,
            goal: self.goal,
            seed: self.seed,
            extrapolate: self.extrapolate,
            pinned,
            command,
            run_line: self.run_line,
        }
    }
}

/// The machine runs measured elsewhere are predicted for.
pub enum FileMachine<'a> {
    /// A machine without a topology (no placement lines), said as
    /// [`machine_words`] with `how`, and `note` under it.
    Unplaced {
        machine: Machine,
        how: &'a str,
        note: String,
    },
    /// A topology: the recommendation in every dialect.
    Placed {
        topology: &'a Topology,
        layout: TuneLayout,
    },
}

impl<'a> FileMachine<'a> {
    /// The usable CPUs of `topology`.
    pub fn placed(topology: &'a Topology) -> Result<FileMachine<'a>, TuneLayoutError> {
        let layout = TuneLayout::new(topology, &topology.usable())?;
        Ok(FileMachine::Placed { topology, layout })
    }
}

/// Runs measured elsewhere (`tune --from`), fitted for `machine`; the
/// placement lines of a program `CMD`, `pinned` or not.
pub fn analyse_runs(
    runs: &[Observation],
    machine: &FileMachine<'_>,
    pinned: bool,
    answer: &Answer,
) -> Result<Analysis, AnalysisError> {
    let run_as = (pinned, "CMD");
    analyse(match machine {
        FileMachine::Unplaced { machine, how, note } => {
            let words = (machine_words(machine, how), vec![note.clone()]);
            answer.request((runs, &[]), machine, None, words, run_as)
        }
        FileMachine::Placed { topology, layout } => {
            let words = (layout.describe(), layout.notes.clone());
            let placed = Some((*topology, layout));
            answer.request((runs, &[]), &layout.machine, placed, words, run_as)
        }
    })
}

/// How a live tune ended, for its caller to say and to choose the exit.
#[derive(Debug)]
pub enum LiveEnd {
    /// Every stage ended well: the runs analysed.
    Answer(Box<Result<Analysis, AnalysisError>>),
    /// The goal needs energy some runs lack.
    NoEnergy { reason: String },
    /// A signal stopped the runs (the machine restored, the journal intact).
    Interrupted { signal: i32 },
    /// A run failed and the tune stopped.
    Stopped { why: String },
    /// The runs could not go on.
    Error(String),
}

/// A live tune that ran: how it ended, the warnings of its cleanup, and
/// the journal to continue it from when it did not finish.
#[derive(Debug)]
pub struct LiveOutcome {
    pub end: LiveEnd,
    /// A late signal cleanup, a failed restore.
    pub warnings: Vec<String>,
    /// The design journal to resume, with the design and validation runs
    /// it holds; `None` when every run ran.
    pub resume: Option<(PathBuf, usize, usize)>,
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

    /// How this tune ends as `answer` asks: analysed (placed on
    /// `topology`, the program's line `command`, `pinned` or not), or
    /// stopped short.
    pub fn outcome(
        &self,
        topology: &Topology,
        (pinned, command): (bool, &str),
        answer: &Answer,
    ) -> LiveOutcome {
        let end = match &self.energy {
            Energy::Unavailable { reason } if answer.goal.needs_energy() => LiveEnd::NoEnergy {
                reason: reason.clone(),
            },
            _ => match &self.outcome {
                Outcome::Complete => {
                    let layout = &self.layout;
                    let words = (layout.describe(), self.notes_all());
                    let runs = (&self.design_runs[..], &self.validation_runs[..]);
                    let placed = Some((topology, layout));
                    let req =
                        answer.request(runs, &layout.machine, placed, words, (pinned, command));
                    LiveEnd::Answer(Box::new(analyse(req)))
                }
                Outcome::Interrupted => LiveEnd::Interrupted {
                    signal: self
                        .signal
                        .unwrap_or_else(pinsight_compare::interrupt::signal),
                },
                Outcome::StoppedOnFailure { why, .. } => LiveEnd::Stopped { why: why.clone() },
                Outcome::Error(e) => LiveEnd::Error(e.to_string()),
            },
        };
        let resume = self.resume().map(|p| {
            let runs = (self.design_runs.len(), self.validation_runs.len());
            (p.to_path_buf(), runs.0, runs.1)
        });
        LiveOutcome {
            end,
            warnings: self.cleanup_warnings(),
            resume,
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
    fn runs_on_an_unplaced_machine_are_said_with_its_note_and_no_dialects() {
        use pinsight_tune_model::{Config, ModelKind, Theta};
        let m: Machine = "2P+2E".parse().unwrap();
        let theta = Theta::amdahl(10.0, 0.9, 2.0);
        let runs: Vec<Observation> = design(&m)
            .into_iter()
            .chain([Config::new(1, 1, 0)])
            .flat_map(|config| {
                let t = ModelKind::Dynamic.time(&theta, config);
                [0.99, 1.01].map(|k| Observation {
                    config,
                    time_s: t * k,
                    energy_j: None,
                })
            })
            .collect();
        let answer = Answer {
            goal: Goal::Time,
            seed: None,
            extrapolate: false,
            run_line: |p, t, c| format!("{p} {t} {c}"),
        };
        let machine = FileMachine::Unplaced {
            machine: m,
            how: "given: ",
            note: "a note".into(),
        };
        let a = analyse_runs(&runs, &machine, false, &answer).unwrap();
        assert_eq!(a.machine_words, machine_words(&m, "given: "));
        assert_eq!(a.notes, ["a note"]);
        assert!(a.dialects.is_empty());
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
