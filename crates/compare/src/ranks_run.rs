//! A compare across ranks from what the user asked ([`RanksFlags`](crate::request::RanksFlags)) or a
//! resumed journal of one: its identity (launcher words, slice policy,
//! slicing rules, the options every rank gets), where the ranks' reports
//! go, and the extension and executor of its session.

use crate::journal::Header;
use crate::ranks::{RanksExecutor, RanksIdentity, KIND};
use crate::request::{Flags, Input, Names};
use crate::session::ExecutorChoice;
use crate::setup::{Extension, Request};
use pinsight_lifecycle::interrupt::shell_quote;
use pinsight_plan::slice::SliceRule;
use pinsight_sys::FsRoot;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The slicing rules compared when none are given; the first, what the
/// launchers do, is the baseline.
pub const DEFAULT_RULES: &str = "equal-count,equal-capacity,p-only";

/// Why the inputs make no compare across ranks.
#[derive(Debug, thiserror::Error)]
pub enum RanksError {
    /// An input of a compare across ranks, resuming a plain compare.
    #[error("{0} applies to a compare across ranks, and the journal resumed is a plain compare")]
    PlainJournal(Input),
    /// An input that chooses a placement in one process, resuming a
    /// compare across ranks (each arm is a slicing rule there).
    #[error("{0} does not apply to a compare across ranks: each arm is a slicing rule")]
    Placement(Input),
    #[error("{policy}: {error}")]
    Slice {
        policy: String,
        error: pinsight_plan::PolicyParseError,
    },
    /// A launcher line and no slice policy.
    #[error("no slice policy: every rank applies one inside its slice")]
    NoSlice,
    /// The launcher line as given.
    #[error("{}: unbalanced quotes or a trailing backslash", shell_quote(.0))]
    LauncherQuotes(String),
    #[error("'': give the launcher line, e.g. 'mpirun -np 4 --bind-to none'")]
    LauncherEmpty,
    #[error("{0}: unknown slicing rule (expected {names})", names = SliceRule::NAMES)]
    UnknownRule(String),
    /// A rule named twice in `rules` (as given).
    #[error("{}: {name} is given twice", rules.join(","))]
    RuleTwice { rules: Vec<String>, name: String },
}

impl RanksError {
    /// The input the error is about (each message reads after its name).
    pub fn input(&self) -> Input {
        match self {
            RanksError::PlainJournal(i) | RanksError::Placement(i) => *i,
            RanksError::Slice { .. } | RanksError::NoSlice => Input::Slice,
            RanksError::LauncherQuotes(_) | RanksError::LauncherEmpty => Input::Launcher,
            RanksError::UnknownRule(_) | RanksError::RuleTwice { .. } => Input::SliceRules,
        }
    }

    /// The message with the inputs named by `name` (a front end's flags).
    pub fn named(&self, name: Names<'_>) -> String {
        let (resume, slice) = (name(Input::Resume), name(Input::Slice));
        let flag = name(self.input());
        match self {
            RanksError::PlainJournal(_) => format!(
                "{flag} cannot be used with {resume} of a plain compare journal: it applies to a \
                 compare across ranks ({} LINE)",
                name(Input::Launcher)
            ),
            RanksError::Placement(_) => format!(
                "{flag} cannot be used with {resume} of a compare across ranks: each arm is a \
                 slicing rule ({}), and each rank places its threads with {slice} POLICY",
                name(Input::SliceRules)
            ),
            RanksError::NoSlice => format!(
                "{} cannot be used with no {slice} POLICY: every rank applies that policy inside \
                 its slice (e.g. {slice} p-pinned)",
                name(Input::Launcher)
            ),
            _ => format!("{flag} {self}"),
        }
    }
}

/// Why a compare across ranks cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot find pinsight's own binary: {0}")]
    OwnBinary(std::io::Error),
    #[error("journal: {0}")]
    Identity(serde_json::Error),
}

/// A compare across ranks from `flags` (or the `resumed` journal of one);
/// None for a plain compare.
pub fn identity(
    flags: &Flags,
    resumed: Option<&Header>,
) -> Result<Option<RanksIdentity>, RanksError> {
    let given = &flags.ranks;
    let journal: Option<RanksIdentity> = resumed
        .filter(|h| h.kind.as_deref() == Some(KIND))
        .and_then(|h| h.extension.clone())
        .and_then(|v| serde_json::from_value(v).ok());
    if given.launcher.is_none() && journal.is_none() {
        // Slice inputs with a resumed plain compare do not apply.
        if given.slice_rules.is_some() {
            return Err(RanksError::PlainJournal(Input::SliceRules));
        }
        if given.slice.is_some() {
            return Err(RanksError::PlainJournal(Input::Slice));
        }
        return Ok(None);
    }
    if given.launcher.is_none() {
        // A resumed journal's launcher is known only now.
        refuse_placement(flags)?;
    }
    let launcher = launcher_words(given.launcher.as_deref(), journal.as_ref())?;
    let slice = match (&given.slice, &journal) {
        (Some(p), _) => {
            p.parse::<pinsight_plan::Policy>()
                .map_err(|error| RanksError::Slice {
                    policy: p.clone(),
                    error,
                })?;
            p.clone()
        }
        (None, Some(j)) => j.slice.clone(),
        (None, None) => return Err(RanksError::NoSlice),
    };
    let rules = slice_rules(given.slice_rules.as_deref(), journal.as_ref())?;
    let rank_options = match (&given.kinds, &journal) {
        (Some(k), _) => vec!["--kinds".to_string(), k.clone()],
        (None, Some(j)) => j.rank_options.clone(),
        (None, None) => Vec::new(),
    };
    Ok(Some(RanksIdentity {
        launcher,
        slice,
        rules,
        rank_options,
    }))
}

/// Resuming a compare across ranks each arm is a slicing rule: the
/// inputs that choose a placement in one process do not apply.
fn refuse_placement(flags: &Flags) -> Result<(), RanksError> {
    for (given, input) in [
        (flags.policies.is_some(), Input::Policies),
        (flags.threads.is_some(), Input::Threads),
        (flags.governors.is_some(), Input::Governors),
        (flags.oversubscribe, Input::Oversubscribe),
        (flags.latency.is_some(), Input::Latency),
        (flags.weights.is_some(), Input::Weights),
        (flags.mem.is_some(), Input::Mem),
        (flags.near.is_some(), Input::Near),
    ] {
        if given {
            return Err(RanksError::Placement(input));
        }
    }
    Ok(())
}

/// The launcher line's words (split as a POSIX shell would), else the
/// resumed journal's.
fn launcher_words(
    line: Option<&str>,
    journal: Option<&RanksIdentity>,
) -> Result<Vec<String>, RanksError> {
    let Some(line) = line else {
        return Ok(journal.map(|j| j.launcher.clone()).unwrap_or_default());
    };
    let words = shlex::split(line).ok_or_else(|| RanksError::LauncherQuotes(line.to_string()))?;
    if words.is_empty() {
        return Err(RanksError::LauncherEmpty);
    }
    Ok(words)
}

/// The slicing rules compared (as given, else the journal's, else
/// [`DEFAULT_RULES`]), each named once, in their canonical names.
fn slice_rules(
    given: Option<&[String]>,
    journal: Option<&RanksIdentity>,
) -> Result<Vec<String>, RanksError> {
    let texts: Vec<String> = match (given, journal) {
        (Some(r), _) => r.to_vec(),
        (None, Some(j)) => j.rules.clone(),
        (None, None) => DEFAULT_RULES.split(',').map(str::to_string).collect(),
    };
    let mut rules: Vec<String> = Vec::new();
    for t in &texts {
        let rule: SliceRule = t.parse().map_err(|_| RanksError::UnknownRule(t.clone()))?;
        let name = rule.to_string();
        if rules.contains(&name) {
            return Err(RanksError::RuleTwice {
                rules: texts.clone(),
                name,
            });
        }
        rules.push(name);
    }
    Ok(rules)
}

/// Where the ranks of the experiment in `journal` write their reports:
/// `JOURNAL` without `.jsonl`, plus `-ranks`.
pub fn ranks_dir(journal: &Path) -> PathBuf {
    let name = journal.file_name().map_or("pinsight-compare".into(), |n| {
        n.to_string_lossy().into_owned()
    });
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    journal.with_file_name(format!("{stem}-ranks"))
}

/// The extension and the executor of a compare across ranks: every run
/// starts this very pinsight under the launcher; `reports` is set to the
/// reports' directory once the journal is open.
pub fn executor(
    id: &RanksIdentity,
    req: &Request,
    fs: &FsRoot,
    show_output: bool,
    reports: Rc<OnceCell<PathBuf>>,
) -> Result<(Extension, ExecutorChoice), StartError> {
    use pinsight_measure::{Measurer, Options};
    let pinsight = std::env::current_exe().map_err(StartError::OwnBinary)?;
    let options = Options {
        timeout: req.timeout,
        ..Options::default()
    };
    let (measurer, _) = Measurer::new(fs, options.clone());
    let prepare = req.prepare.clone().map(|p| {
        let quiet = Options {
            counters: false,
            energy: false,
            ..options
        };
        (Measurer::new(fs, quiet).0, p)
    });
    let ext = Extension {
        kind: Some(KIND.into()),
        extension: Some(serde_json::to_value(id).map_err(StartError::Identity)?),
        arm_names: Some(id.rules.clone()),
        ..Extension::default()
    };
    let built = id.clone();
    let make = move |h: &Header| -> Box<dyn crate::Executor> {
        // A resumed experiment runs as its journal says.
        let id = h
            .extension
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or(built);
        Box::new(RanksExecutor::new(
            measurer,
            id,
            pinsight,
            h.command.clone(),
            reports,
            show_output,
            prepare,
        ))
    };
    Ok((ext, ExecutorChoice::Custom(Box::new(make))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A front end's names: upper-case, so the tests see where each goes.
    fn shout(i: Input) -> &'static str {
        match i {
            Input::Resume => "RESUME",
            Input::Slice => "SLICE",
            Input::Launcher => "LAUNCHER",
            Input::SliceRules => "RULES",
            Input::Threads => "THREADS",
            _ => "OTHER",
        }
    }

    #[test]
    fn ranks_errors_name_every_input_they_mention() {
        let e = RanksError::Placement(Input::Threads).named(&shout);
        assert!(e.starts_with("THREADS cannot be used with RESUME of a compare across ranks"));
        assert!(e.contains("(RULES)") && e.contains("SLICE POLICY"), "{e}");
        let e = RanksError::NoSlice.named(&shout);
        assert!(
            e.starts_with("LAUNCHER cannot be used with no SLICE POLICY"),
            "{e}"
        );
        let e = RanksError::LauncherEmpty.named(&shout);
        assert_eq!(e, format!("LAUNCHER {}", RanksError::LauncherEmpty));
    }

    fn ranks(launcher: Option<&str>, slice: Option<&str>, rules: Option<&[&str]>) -> Flags {
        Flags {
            ranks: crate::request::RanksFlags {
                launcher: launcher.map(str::to_string),
                slice: slice.map(str::to_string),
                slice_rules: rules.map(|r| r.iter().map(|s| s.to_string()).collect()),
                kinds: None,
            },
            ..Flags::default()
        }
    }

    #[test]
    fn a_launcher_line_makes_the_identity_with_default_rules() {
        let id = identity(
            &ranks(Some("srun -n 4 'a b'"), Some("p-pinned"), None),
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(id.launcher, vec!["srun", "-n", "4", "a b"]);
        assert_eq!(id.slice, "p-pinned");
        assert_eq!(id.rules, vec!["equal-count", "equal-capacity", "p-only"]);
        assert!(id.rank_options.is_empty());
        assert!(identity(&Flags::default(), None).unwrap().is_none());
    }

    #[test]
    fn bad_ranks_inputs_are_refused_by_kind() {
        let e = |f: Flags| identity(&f, None).unwrap_err();
        assert!(matches!(
            e(ranks(Some("srun 'x"), Some("os"), None)),
            RanksError::LauncherQuotes(l) if l == "srun 'x"
        ));
        assert!(matches!(
            e(ranks(Some(""), Some("os"), None)),
            RanksError::LauncherEmpty
        ));
        assert!(matches!(
            e(ranks(Some("srun"), None, None)),
            RanksError::NoSlice
        ));
        assert!(matches!(
            e(ranks(Some("srun"), Some("nonsense"), None)),
            RanksError::Slice { .. }
        ));
        assert!(matches!(
            e(ranks(Some("srun"), Some("os"), Some(&["fair"]))),
            RanksError::UnknownRule(r) if r == "fair"
        ));
        let twice = e(ranks(
            Some("srun"),
            Some("os"),
            Some(&["equal-count", "equal-count"]),
        ));
        assert_eq!(
            twice.to_string(),
            "equal-count,equal-count: equal-count is given twice"
        );
        assert!(matches!(
            e(ranks(None, Some("os"), None)),
            RanksError::PlainJournal(Input::Slice)
        ));
    }

    #[test]
    fn the_reports_sit_beside_the_journal() {
        assert_eq!(
            ranks_dir(Path::new("/x/pinsight-compare-1.jsonl")),
            Path::new("/x/pinsight-compare-1-ranks")
        );
        assert_eq!(ranks_dir(Path::new("j")), Path::new("j-ranks"));
    }
}
