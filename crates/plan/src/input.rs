//! The inputs of a plan request and of its rendering, for a front end to
//! name its own way (the command line by its flags): the planner's and the
//! renderer's errors and caveats then say which input to change in the
//! front end's words ([`PlanError::named`], [`FormatError::named`],
//! [`Caveat::named`]), while their `Display` stays in the planner's terms.

use crate::format::{Caveat, FormatError};
use crate::plan::{LatencyProblem, PlanError};
use crate::policy::PolicyOption;

/// One input of a plan request or its rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The number of threads ([`crate::Request::threads`]).
    Threads,
    /// The number of tasks ([`crate::Request::tasks`]).
    Tasks,
    /// Placing more threads than CPUs ([`crate::Request::oversubscribe`]).
    Oversubscribe,
    /// Per-CPU speed weights.
    Weights,
    /// What a second busy SMT thread adds to a core.
    SmtYield,
    /// The core-to-core latency matrix.
    Latency,
    /// Choosing CPUs for a pipeline.
    Pipeline,
    /// Accepting a latency matrix that does not cover the plan's CPUs.
    LatencyPartial,
    /// The memory policy.
    Mem,
    /// The device to place near.
    Near,
    /// The output dialect.
    Format,
}

/// How a front end names an input (its flag).
pub type Names<'a> = &'a dyn Fn(Input) -> &'static str;

impl From<PolicyOption> for Input {
    fn from(option: PolicyOption) -> Input {
        match option {
            PolicyOption::Weights => Input::Weights,
            PolicyOption::SmtYield => Input::SmtYield,
            PolicyOption::Pipeline => Input::Pipeline,
            PolicyOption::Latency => Input::Latency,
        }
    }
}

impl PlanError {
    /// The message with the inputs to change named by `name`; an error
    /// about the machine alone reads as its `Display`.
    pub fn named(&self, name: Names<'_>) -> String {
        let threads = name(Input::Threads);
        match self {
            PlanError::ZeroThreads => format!("{threads} 0: the number of threads must be at least 1"),
            PlanError::ThreadsTasksConflict { threads: t, tasks } => format!(
                "{threads} {t} and {} {tasks} disagree; give one of them",
                name(Input::Tasks)
            ),
            PlanError::TooManyThreads { cpus, .. } => format!(
                "{self}; use {threads} {} or less, or {}",
                cpus.len(),
                name(Input::Oversubscribe)
            ),
            PlanError::Weights(w) => format!("{}: {w}", name(Input::Weights)),
            PlanError::Latency { policy, problem } => match problem {
                LatencyProblem::NoMatrix => format!(
                    "{policy}: needs a core-to-core latency matrix: {} FILE (CSV or JSON, e.g. from `pinsight latency`)",
                    name(Input::Latency)
                ),
                LatencyProblem::NoThreadCount => {
                    format!("{policy}: needs {threads} K: the number of CPUs to choose")
                }
                LatencyProblem::Partial { .. } => format!(
                    "{policy}: {}: {problem}, or accept it with {}",
                    name(Input::Latency),
                    name(Input::LatencyPartial)
                ),
                LatencyProblem::TooFewCovered { .. } => self.to_string(),
            },
            PlanError::Memory { spec, error } => format!("{} {spec}: {error}", name(Input::Mem)),
            PlanError::Device(d) => format!("{}: {d}", name(Input::Near)),
            PlanError::NearUnusable {
                device,
                local,
                usable,
            } => format!(
                "{} {device}: no usable CPU is local to it (its CPUs {local}; usable CPUs {usable})",
                name(Input::Near)
            ),
            _ => self.to_string(),
        }
    }
}

impl FormatError {
    /// The message with the dialect and the memory policy named by
    /// `name`, and the dialects to use instead.
    pub fn named(&self, name: Names<'_>) -> String {
        let format = name(Input::Format);
        match self {
            FormatError::Floats {
                format: dialect,
                policy,
                why,
                mask,
            } => format!(
                "{format} {dialect} cannot express {policy}: {why}, but this plan lets threads float over {mask}; use {format} omp-places, kmp-affinity, taskset or numactl"
            ),
            FormatError::NotOneKind { policy } => format!(
                "{format} kmp-hw-subset describes one core kind (p-set, e-set, p-pinned, e-pinned, kind:, kind-set:); {policy} is not one; use {format} kmp-affinity"
            ),
            FormatError::Memory {
                format: dialect,
                memory,
                why,
            } => format!(
                "{format} {dialect} cannot express {} {memory}: {why}; use {format} numactl or `pinsight run`",
                name(Input::Mem)
            ),
            FormatError::Unknown(_) => self.to_string(),
        }
    }
}

impl Caveat {
    /// The caveat with the dialect to use instead named by `name`.
    pub fn named(&self, name: Names<'_>) -> String {
        match self {
            Caveat::ClosePlacesShared => format!(
                "OpenMP 'close' puts consecutive threads on a shared place, not round robin; use {} gomp for the exact per-thread order",
                name(Input::Format)
            ),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemError;

    fn flag(input: Input) -> &'static str {
        match input {
            Input::Threads => "-t",
            Input::Tasks => "-T",
            Input::Oversubscribe => "-o",
            Input::Latency => "-L",
            Input::LatencyPartial => "-P",
            Input::Mem => "-m",
            Input::Format => "-f",
            _ => "?",
        }
    }

    #[test]
    fn plan_errors_name_the_inputs_to_change() {
        assert_eq!(
            PlanError::ZeroThreads.named(&flag),
            "-t 0: the number of threads must be at least 1"
        );
        let e = PlanError::ThreadsTasksConflict {
            threads: 2,
            tasks: 3,
        };
        assert_eq!(e.named(&flag), "-t 2 and -T 3 disagree; give one of them");
        let e = PlanError::TooManyThreads {
            policy: "compact".into(),
            threads: 5,
            cpus: "0-3".parse().unwrap(),
        };
        assert_eq!(e.named(&flag), format!("{e}; use -t 4 or less, or -o"));
        let latency = |problem| PlanError::Latency {
            policy: "latency-group".into(),
            problem,
        };
        assert!(latency(LatencyProblem::NoMatrix)
            .named(&flag)
            .contains("matrix: -L FILE"));
        assert_eq!(
            latency(LatencyProblem::NoThreadCount).named(&flag),
            "latency-group: needs -t K: the number of CPUs to choose"
        );
        let partial = latency(LatencyProblem::Partial {
            matrix: "0-3".parse().unwrap(),
            usable: "0-7".parse().unwrap(),
            missing: "4-7".parse().unwrap(),
            foreign: Default::default(),
        });
        let named = partial.named(&flag);
        assert!(
            named.starts_with("latency-group: -L: the matrix covers CPUs 0-3")
                && named.ends_with(", or accept it with -P"),
            "{named}"
        );
        let e = PlanError::Memory {
            spec: "bind:9".into(),
            error: MemError::NoSuchNode {
                node: 9,
                nodes: vec![0],
            },
        };
        assert!(
            e.named(&flag).starts_with("-m bind:9: "),
            "{}",
            e.named(&flag)
        );
        // About the machine alone: the planner's own words.
        assert_eq!(
            PlanError::NoUsableCpu.named(&flag),
            PlanError::NoUsableCpu.to_string()
        );
    }

    #[test]
    fn format_errors_and_caveats_name_the_dialect() {
        let e = FormatError::NotOneKind {
            policy: "compact".into(),
        };
        let named = e.named(&flag);
        assert!(
            named.starts_with("-f kmp-hw-subset describes one core kind")
                && named.ends_with("compact is not one; use -f kmp-affinity"),
            "{named}"
        );
        let e = FormatError::Memory {
            format: "slurm",
            memory: "interleave:0".into(),
            why: "Slurm has no interleave",
        };
        assert_eq!(
            e.named(&flag),
            "-f slurm cannot express -m interleave:0: Slurm has no interleave; use -f numactl or `pinsight run`"
        );
        let unknown = FormatError::Unknown("xml".into());
        assert_eq!(unknown.named(&flag), unknown.to_string());
        assert!(Caveat::ClosePlacesShared
            .named(&flag)
            .ends_with("use -f gomp for the exact per-thread order"));
        assert_eq!(
            Caveat::SharedCores.named(&flag),
            Caveat::SharedCores.to_string()
        );
        assert_eq!(Input::from(PolicyOption::SmtYield), Input::SmtYield);
    }
}
