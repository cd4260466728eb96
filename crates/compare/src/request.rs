//! What the user asked of a compare, as given ([`Flags`]), and the one
//! [`Request`] it makes: a resumed journal's header fills in what was not
//! given again, each input given again taking its place.
//!
//! The errors name the input by [`Input`], never by a flag: the front end
//! words them.

use crate::journal::Header;
use crate::program_metric::MetricSpec;
use crate::setup::{self, Request};
use pinsight_plan::MemPolicy;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// One input of a compare, for the front end to name (a flag on the
/// command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Policies,
    Threads,
    Governors,
    Oversubscribe,
    Latency,
    Weights,
    Mem,
    Near,
    Launcher,
    Slice,
    SliceRules,
    Journal,
    /// The export file at this index of [`Flags::exports`].
    Export(usize),
    /// The program and its arguments.
    Command,
    Runs,
    Metric,
    /// The journal to continue.
    Resume,
    /// The command run before every run.
    Prepare,
    Warmup,
    Seed,
    Timeout,
    /// Going on when a run fails.
    IgnoreFailure,
    /// Each run's output printed after it.
    ShowOutput,
    DisturbanceThreshold,
    RerunDisturbed,
}

/// How a front end names an input (its flag).
pub type Names<'a> = &'a dyn Fn(Input) -> &'static str;

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            Input::Policies => "the policies",
            Input::Threads => "the thread count",
            Input::Governors => "the governors",
            Input::Oversubscribe => "oversubscription",
            Input::Latency => "the latency matrix",
            Input::Weights => "the weights",
            Input::Mem => "the memory policy",
            Input::Near => "the device",
            Input::Launcher => "the launcher line",
            Input::Slice => "the slice policy",
            Input::SliceRules => "the slicing rules",
            Input::Journal => "the journal",
            Input::Export(i) => return write!(f, "export file {}", i + 1),
            Input::Command => "the command",
            Input::Runs => "the runs per arm",
            Input::Metric => "the program metrics",
            Input::Resume => "the journal to continue",
            Input::Prepare => "the command run before every run",
            Input::Warmup => "the warm-up runs per arm",
            Input::Seed => "the seed",
            Input::Timeout => "the timeout",
            Input::IgnoreFailure => "going on when a run fails",
            Input::ShowOutput => "showing each run's output",
            Input::DisturbanceThreshold => "the disturbance threshold",
            Input::RerunDisturbed => "the reruns of a disturbed run",
        };
        f.write_str(what)
    }
}

/// A compare across ranks as asked (all `None`: a plain compare, unless
/// a resumed journal is one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RanksFlags {
    /// The launcher line as typed (split as a shell would).
    pub launcher: Option<String>,
    /// The policy each rank applies inside its slice.
    pub slice: Option<String>,
    /// The slicing rules to compare, the first the baseline.
    pub slice_rules: Option<Vec<String>>,
    /// The declared core kinds, given to every rank.
    pub kinds: Option<String>,
}

/// Everything a compare was asked, as given: `None` (or empty) where an
/// input was not given, so that a resumed journal's value or the default
/// applies.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// The program and its arguments (empty: the resumed journal's).
    pub command: Vec<OsString>,
    pub prepare: Option<String>,
    pub policies: Option<Vec<String>>,
    pub governors: Option<Vec<String>>,
    pub threads: Option<usize>,
    pub oversubscribe: bool,
    pub latency: Option<PathBuf>,
    pub weights: Option<PathBuf>,
    pub mem: Option<MemPolicy>,
    pub near: Option<String>,
    pub runs: Option<usize>,
    pub warmup: Option<usize>,
    pub seed: Option<u64>,
    pub timeout: Option<Duration>,
    /// Program metrics, in order.
    pub metrics: Option<Vec<MetricSpec>>,
    /// A new journal at this path.
    pub journal: Option<PathBuf>,
    /// Continue the experiment of this journal.
    pub resume: Option<PathBuf>,
    pub ranks: RanksFlags,
    /// Export files, in the order they are written.
    pub exports: Vec<PathBuf>,
    pub show_output: bool,
    pub ignore_failure: bool,
    pub disturbance_threshold: Option<f64>,
    pub rerun_disturbed: Option<usize>,
}

/// Why the flags make no request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("argument {0:?} is not valid UTF-8 (the journal stores text)")]
    NotUtf8(OsString),
    #[error("no command to measure")]
    NoCommand,
    #[error("0 runs: at least 1 run per arm is needed (2 for statistics)")]
    ZeroRuns,
    /// The resumed journal's memory policy does not parse.
    #[error("the journal's memory policy {text}: {error}")]
    JournalMem {
        text: String,
        error: pinsight_plan::MemParseError,
    },
    /// Two program metrics with one name.
    #[error("'{0}' is given twice (each metric needs its own name)")]
    MetricTwice(String),
}

impl RequestError {
    /// The message with the inputs named by `name`; `None` for
    /// [`RequestError::NoCommand`], whose words are the front end's usage.
    pub fn named(&self, name: Names<'_>) -> Option<String> {
        Some(match self {
            RequestError::NotUtf8(_) => format!("{} {self}", name(Input::Command)),
            RequestError::NoCommand => return None,
            RequestError::ZeroRuns => format!(
                "{} 0: at least 1 run per arm is needed (2 for statistics)",
                name(Input::Runs)
            ),
            RequestError::JournalMem { text, error } => {
                format!("the journal's {} {text}: {error}", name(Input::Mem))
            }
            RequestError::MetricTwice(_) => format!("{}: {self}", name(Input::Metric)),
        })
    }
}

impl Flags {
    /// The inputs a resume of this compare must be given again (the
    /// journal does not keep them), each named by `name` as `NAME` or
    /// `NAME=VALUE`: going on after failures, the output shown, the
    /// disturbance threshold (a percentage) and the reruns.
    pub fn resume_inputs(&self, name: Names<'_>) -> Vec<String> {
        let mut words = Vec::new();
        if self.ignore_failure {
            words.push(name(Input::IgnoreFailure).to_owned());
        }
        if self.show_output {
            words.push(name(Input::ShowOutput).to_owned());
        }
        if let Some(t) = self.disturbance_threshold {
            words.push(format!(
                "{}={}%",
                name(Input::DisturbanceThreshold),
                t * 100.0
            ));
        }
        if let Some(n) = self.rerun_disturbed {
            words.push(format!("{}={n}", name(Input::RerunDisturbed)));
        }
        words
    }
}

/// The request from `flags`; with a `resumed` header, inputs not given
/// come from it (and given ones must match it, checked by the session).
pub fn request(flags: &Flags, resumed: Option<&Header>) -> Result<Request, RequestError> {
    let mut command = Vec::new();
    for a in &flags.command {
        let text = a.to_str().ok_or_else(|| RequestError::NotUtf8(a.clone()))?;
        command.push(text.to_string());
    }
    if let Some(h) = resumed {
        return resumed_request(flags, command, h);
    }
    if command.is_empty() {
        return Err(RequestError::NoCommand);
    }
    let runs = flags.runs.unwrap_or(10);
    if runs == 0 {
        return Err(RequestError::ZeroRuns);
    }
    let defaults = || {
        setup::DEFAULT_POLICIES
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    Ok(Request {
        command,
        prepare: flags.prepare.clone(),
        policies: flags.policies.clone().unwrap_or_else(defaults),
        governors: flags.governors.clone().unwrap_or_default(),
        threads: flags.threads,
        oversubscribe: flags.oversubscribe,
        latency: flags.latency.clone(),
        weights: flags.weights.clone(),
        mem: flags.mem.clone(),
        near: flags.near.clone(),
        interleave_weights: interleave_weights(),
        runs,
        warmup: flags.warmup.unwrap_or(1),
        seed: flags.seed.unwrap_or_else(random_seed),
        timeout: flags.timeout,
        metrics: metrics(flags)?,
    })
}

/// The request of a resumed experiment: the journal's, each input given
/// again taking its place.
fn resumed_request(
    flags: &Flags,
    command: Vec<String>,
    h: &Header,
) -> Result<Request, RequestError> {
    let path = |p: &Option<String>| p.as_ref().map(PathBuf::from);
    Ok(Request {
        command: if command.is_empty() {
            h.command.clone()
        } else {
            command
        },
        prepare: flags.prepare.clone().or_else(|| h.prepare.clone()),
        policies: flags.policies.clone().unwrap_or_else(|| h.policies.clone()),
        governors: flags
            .governors
            .clone()
            .unwrap_or_else(|| h.governors.clone()),
        threads: flags.threads.or(h.threads),
        oversubscribe: flags.oversubscribe || h.oversubscribe,
        latency: flags.latency.clone().or_else(|| path(&h.latency)),
        weights: flags.weights.clone().or_else(|| path(&h.weights)),
        mem: match (&flags.mem, &h.mem) {
            (Some(m), _) => Some(m.clone()),
            (None, Some(text)) => Some(text.parse().map_err(|error| RequestError::JournalMem {
                text: text.clone(),
                error,
            })?),
            (None, None) => None,
        },
        near: flags.near.clone().or_else(|| h.near.clone()),
        interleave_weights: interleave_weights(),
        runs: flags.runs.unwrap_or(h.runs),
        warmup: flags.warmup.unwrap_or(h.warmup),
        seed: flags.seed.unwrap_or(h.seed),
        timeout: flags
            .timeout
            .or_else(|| h.timeout_s.map(Duration::from_secs_f64)),
        metrics: match &flags.metrics {
            Some(_) => metrics(flags)?,
            None => h.metrics.clone(),
        },
    })
}

/// The kernel's weighted-interleave weights, shown in plans.
fn interleave_weights() -> Option<Vec<(u32, u32)>> {
    pinsight_sys::mempolicy::interleave_weights(&pinsight_sys::FsRoot::live())
}

/// The program metrics, in order; a name given twice is refused.
fn metrics(flags: &Flags) -> Result<Vec<MetricSpec>, RequestError> {
    let all: Vec<MetricSpec> = flags.metrics.clone().unwrap_or_default();
    for (i, m) in all.iter().enumerate() {
        if all[..i].iter().any(|x| x.name == m.name) {
            return Err(RequestError::MetricTwice(m.name.clone()));
        }
    }
    Ok(all)
}

/// A fresh seed (recorded in the journal, so any run order can be replayed).
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64 ^ d.as_secs());
    (nanos ^ (u64::from(std::process::id()) << 16)) % 1_000_000_000
}

/// A policy list with an empty item.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}': empty policy name (expected a comma-separated list such as os,p-pinned,cpus:1,0)")]
pub struct EmptyPolicy(pub String);

/// Splits a policy list at commas, except inside a CPU list: a piece
/// that starts with a digit or `0x` continues the `cpus:`/`cpus-set:`
/// policy (or `+mem:` spec) before it (`cpus:1,0`, hwloc's
/// `0x00000001,0x00000000`), since no policy name starts with one.
pub fn split_policies(text: &str) -> Result<Vec<String>, EmptyPolicy> {
    let mut out: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let piece = piece.trim();
        let continues = piece.starts_with(|c: char| c.is_ascii_digit())
            && out.last().is_some_and(|p| {
                p.starts_with("cpus:") || p.starts_with("cpus-set:") || p.contains("+mem:")
            });
        if continues {
            let last = out.last_mut().expect("checked above");
            last.push(',');
            last.push_str(piece);
        } else if piece.is_empty() {
            return Err(EmptyPolicy(text.to_string()));
        } else {
            out.push(piece.to_string());
        }
    }
    Ok(out)
}

/// What discovery must read beyond the CPUs for `policies`: memory
/// details only for a memory policy (the flags' or an arm's `+mem:`; a
/// resumed experiment's arms carry theirs in their names, so everything
/// then), devices only near a device, the caches only when an arm's
/// policy orders CPUs by them ([`pinsight_plan::Policy::uses_caches`]; a
/// slice policy and a policy that does not parse read them, the error
/// coming from the planner). The kinds always: the journal's machine
/// identity names them.
pub fn needs(flags: &Flags, policies: &[String], resumed: bool) -> pinsight_topology::Needs {
    let arm_mem = policies.iter().any(|p| p.contains("+mem:"));
    let caches = resumed
        || flags.ranks.slice.is_some()
        || setup::parse_policies(policies)
            .map_or(true, |ps| ps.iter().any(|(_, p, _)| p.uses_caches()));
    pinsight_topology::Needs {
        devices: flags.near.is_some() || resumed,
        memory: flags.mem.is_some() || arm_mem || resumed,
        caches,
        kinds: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists_keep_cpu_lists_whole() {
        assert_eq!(
            split_policies("os,cpus:1,0,p-pinned").unwrap(),
            vec!["os", "cpus:1,0", "p-pinned"]
        );
        assert_eq!(
            split_policies("cpus-set:0x00000001,0x00000000,cpus:0-3:2,8").unwrap(),
            vec!["cpus-set:0x00000001,0x00000000", "cpus:0-3:2,8"]
        );
        assert_eq!(split_policies("os, p-set").unwrap(), vec!["os", "p-set"]);
        assert!(split_policies("os,,p-set")
            .unwrap_err()
            .to_string()
            .contains("empty policy"));
        // A leading number is not a policy: it stays an item and the
        // planner names it.
        assert_eq!(split_policies("1,os").unwrap(), vec!["1", "os"]);
    }

    fn flags(command: &[&str]) -> Flags {
        Flags {
            command: command.iter().map(OsString::from).collect(),
            ..Flags::default()
        }
    }

    #[test]
    fn a_new_request_takes_the_defaults_and_refuses_what_cannot_run() {
        let r = request(&flags(&["true"]), None).unwrap();
        assert_eq!(r.runs, 10);
        assert_eq!(r.warmup, 1);
        assert_eq!(r.policies, setup::DEFAULT_POLICIES);
        assert!(matches!(
            request(&flags(&[]), None),
            Err(RequestError::NoCommand)
        ));
        let zero = Flags {
            runs: Some(0),
            ..flags(&["true"])
        };
        assert!(matches!(request(&zero, None), Err(RequestError::ZeroRuns)));
        let flag = |i: Input| if i == Input::Runs { "-r" } else { "?" };
        let named = RequestError::ZeroRuns.named(&flag).unwrap();
        assert!(named.starts_with("-r 0: at least 1 run per arm"), "{named}");
        assert_eq!(RequestError::NoCommand.named(&flag), None);
        let carried = Flags {
            show_output: true,
            disturbance_threshold: Some(0.1),
            ..Flags::default()
        };
        let words = carried.resume_inputs(&|i| match i {
            Input::ShowOutput => "S",
            _ => "D",
        });
        assert_eq!(words, ["S", "D=10%"]);
    }

    #[test]
    fn a_metric_name_given_twice_is_refused() {
        let spec = crate::program_metric::parse("x=([0-9]+)", &[])
            .unwrap()
            .remove(0);
        let twice = Flags {
            metrics: Some(vec![spec.clone(), spec]),
            ..flags(&["true"])
        };
        let e = request(&twice, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'x' is given twice (each metric needs its own name)"
        );
    }
}
