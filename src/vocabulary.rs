//! One vocabulary over every command (docs/vocabulary.md has the table).
//!
//! A concept has one flag wherever it appears: `--runs N` for repetitions,
//! `--policies LIST` for policies and schedulers, `--latency FILE` for a
//! latency matrix read, `--export-FORMAT FILE` for every file written,
//! `--weights FILE` read only, `--pids LIST`, `--slice-rules LIST`, one
//! `--machine` grammar. The spellings used before stay accepted as hidden
//! flags: each is added here from [`RENAMED`] as a copy of the new flag
//! (same value parser, conflicts and requirements, no default, hidden, in
//! conflict with it, in the new flag's argument groups), and a use
//! prints one note on stderr (`note: --repeat is deprecated; use --runs`).
//! `main` then moves the value into the new flag's field.

use clap::{ArgMatches, Command};

/// A flag spelled differently before: in `command`, `--old` is now `--new`.
pub struct Renamed {
    /// The subcommand.
    pub command: &'static str,
    /// The spelling kept as a hidden alias.
    pub old: &'static str,
    /// The clap id of the flag that replaces it (the field name).
    pub id: &'static str,
    /// Its spelling now.
    pub new: &'static str,
    /// The clap id of the hidden flag that keeps `old`: `deprecated-OLD`.
    pub hidden: &'static str,
}

macro_rules! r {
    ($command:literal, $old:literal, $id:literal, $new:literal) => {
        Renamed {
            command: $command,
            old: $old,
            id: $id,
            new: $new,
            hidden: concat!("deprecated-", $old),
        }
    };
}

/// Every renamed flag. A row whose `id` has no flag in `command` is a bug
/// caught by [`with_old_spellings`] (a debug assertion) and by the tests.
pub const RENAMED: &[Renamed] = &[
    r!("compare", "csv", "csv", "export-csv"),
    r!("compare", "markdown", "markdown", "export-markdown"),
    r!("compare", "html", "html", "export-html"),
    r!("compare", "slice-rule", "slice_rules", "slice-rules"),
    r!("mix", "repeat", "repeat", "runs"),
    r!("mix", "schedulers", "schedulers", "policies"),
    r!("mix", "csv", "csv", "export-csv"),
    r!("mix", "markdown", "markdown", "export-markdown"),
    r!("mix", "html", "html", "export-html"),
    r!("latency", "repeat", "repeat", "runs"),
    r!("latency", "from-csv", "from_csv", "latency"),
    r!("latency", "csv", "csv", "export-csv"),
    r!("latency", "svg", "svg", "export-svg"),
    r!("latency", "png", "png", "export-png"),
    r!("simulate", "repeat", "repeat", "runs"),
    r!("sched", "policy", "policy", "policies"),
    r!("report", "latency-from", "latency_from", "latency"),
    r!("speed", "weights", "weights", "export-weights"),
    r!("sf", "pid", "pid", "pids"),
    r!("run", "slice-rule", "rule", "slice-rules"),
    r!("run", "rule", "rule", "slice-rules"),
    r!("slice", "slice-rule", "rule", "slice-rules"),
    r!("slice", "rule", "rule", "slice-rules"),
    r!("gather", "html", "html", "export-html"),
    r!("model", "svg", "svg", "export-svg"),
];

/// The clap id of the hidden flag that keeps `old`.
pub fn old_id(old: &str) -> String {
    format!("deprecated-{old}")
}

/// Whether the matches hold `id` (false for a hidden old spelling that
/// was not added: see [`typed`]).
fn has(m: &ArgMatches, id: &str) -> bool {
    m.try_contains_id(id).unwrap_or(false)
}

/// Whether `argv` types an old spelling of subcommand `command` (any
/// command's when `None`): `--old` or `--old=VALUE`. Only then are the
/// hidden flags added ([`with_old_spellings`]): clap would parse every
/// other command line the same without them, and adding them (a built
/// copy of the command to find their conflicts) was a fifth of clap's
/// share of `pinsight run`'s start-up.
pub fn typed(command: Option<&str>, argv: &[std::ffi::OsString]) -> bool {
    RENAMED
        .iter()
        .filter(|r| command.is_none_or(|c| c == r.command))
        .any(|r| {
            let flag = format!("--{}", r.old);
            argv.iter().filter_map(|a| a.to_str()).any(|a| {
                a == flag
                    || a.strip_prefix(flag.as_str())
                        .is_some_and(|rest| rest.starts_with('='))
            })
        })
}

/// `cmd` with every old spelling of [`RENAMED`] added as a hidden flag.
pub fn with_old_spellings(mut cmd: Command) -> Command {
    // The flags in conflict with each renamed one, read from a built copy:
    // only there do the subcommands hold the global flags a conflict may
    // name (clap's conflict lookup panics on an unknown one).
    let mut built = cmd.clone();
    built.build();
    // Only the subcommands offered (all, or the one typed: see main's
    // `Typed`).
    for row in RENAMED {
        if cmd.find_subcommand(row.command).is_none() {
            continue;
        }
        let conflicting = conflicting_ids(&built, row);
        cmd = cmd.mut_subcommand(row.command, |sub| with_old_spelling(sub, row, &conflicting));
    }
    cmd
}

/// The flags of `row`'s command in conflict with its new spelling.
fn conflicting_ids(built: &Command, row: &Renamed) -> Vec<clap::Id> {
    built
        .find_subcommand(row.command)
        .map(|sub| {
            sub.get_arguments()
                .filter(|a| {
                    sub.get_arg_conflicts_with(a)
                        .iter()
                        .any(|c| c.get_id() == row.id)
                })
                .map(|a| a.get_id().clone())
                .collect()
        })
        .unwrap_or_default()
}

/// `sub` with `row`'s old spelling: a hidden copy of the new flag, in its
/// groups and conflicts, either spelling meeting its requirement.
fn with_old_spelling(sub: Command, row: &Renamed, conflicting: &[clap::Id]) -> Command {
    let Some(new) = sub.get_arguments().find(|a| a.get_id() == row.id).cloned() else {
        debug_assert!(false, "{}: no flag {}", row.command, row.id);
        return sub;
    };
    let required = new.is_required_set();
    let old = new
        .id(row.hidden)
        .long(row.old)
        .short(None)
        .hide(true)
        .required(false)
        .default_value(None)
        .default_missing_value(None)
        .help(None)
        .long_help(None)
        .conflicts_with(row.id);
    // A group of the new flag (one of several inputs) takes either
    // spelling.
    let groups: Vec<clap::Id> = sub
        .get_groups()
        .filter(|g| g.get_args().any(|a| a == row.id))
        .map(|g| g.get_id().clone())
        .collect();
    let mut sub = sub.arg(old);
    for g in groups {
        sub = sub.mut_group(g, |g| g.arg(row.hidden));
    }
    // A flag in conflict with the new spelling is in conflict with
    // the old one too.
    for id in conflicting {
        if sub.get_arguments().any(|a| a.get_id() == id) {
            sub = sub.mut_arg(id, |a| a.conflicts_with(row.hidden));
        }
    }
    if !required {
        return sub;
    }
    // Either spelling satisfies the requirement (the field is an Option
    // that `main` fills from the old one).
    sub.mut_arg(row.id, |a| {
        a.required(false).required_unless_present(row.hidden)
    })
}

/// A missing-input item of clap's refusal (`<--pids <PID>|CMD|--pid <PID>>`,
/// an argument group) without the hidden old spellings beside their new
/// one: the group holds both so that either satisfies it, but only the new
/// one is shown.
pub fn hide_old_spellings(item: &str) -> String {
    let Some(inner) = item.strip_prefix('<').and_then(|i| i.strip_suffix('>')) else {
        return item.to_string();
    };
    let parts: Vec<&str> = inner.split('|').collect();
    let flag = |p: &str| p.split(' ').next().unwrap_or_default().to_string();
    let shown: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| {
            !RENAMED.iter().any(|r| {
                flag(p) == format!("--{}", r.old)
                    && parts.iter().any(|q| flag(q) == format!("--{}", r.new))
            })
        })
        .collect();
    format!("<{}>", shown.join("|"))
}

/// Prints one note for each old spelling used in `matches` (the
/// subcommand's), and returns the rows used.
pub fn notes(command: &str, matches: &ArgMatches, quiet: bool) -> Vec<&'static Renamed> {
    let used: Vec<&Renamed> = RENAMED
        .iter()
        .filter(|r| r.command == command && has(matches, r.hidden))
        .collect();
    if !quiet {
        for r in &used {
            eprintln!("pinsight: note: --{} is deprecated; use --{}", r.old, r.new);
        }
    }
    used
}

/// Whether flag `id` of `command` was given on the command line (or from
/// its environment variable), in either spelling, rather than left at its
/// default: clap's `ArgMatches::value_source`, not a comparison of values.
pub fn given(command: &str, m: &ArgMatches, id: &str) -> bool {
    use clap::parser::ValueSource;
    matches!(
        m.value_source(id),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    ) || RENAMED
        .iter()
        .any(|r| r.command == command && r.id == id && has(m, r.hidden))
}

/// Moves the value of the hidden old spelling `old` into `field` (the new
/// flag's field, of the value parser's type `T`).
pub fn take<T: Clone + Send + Sync + 'static>(m: &ArgMatches, old: &str, field: &mut T) {
    if let Ok(Some(v)) = m.try_get_one::<T>(&old_id(old)) {
        *field = v.clone();
    }
}

/// [`take`] for an optional field.
pub fn take_opt<T: Clone + Send + Sync + 'static>(
    m: &ArgMatches,
    old: &str,
    field: &mut Option<T>,
) {
    if let Ok(Some(v)) = m.try_get_one::<T>(&old_id(old)) {
        *field = Some(v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::typed;
    use std::ffi::OsString;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn old_spellings_are_added_only_when_typed() {
        let run = |w: &[&str]| typed(Some("run"), &argv(w));
        assert!(!run(&["pinsight", "run", "cpus:0", "--", "true"]));
        assert!(!run(&[
            "pinsight",
            "run",
            "--slice-rules",
            "equal",
            "--",
            "true"
        ]));
        assert!(run(&["pinsight", "run", "--rule", "equal", "--", "true"]));
        assert!(run(&[
            "pinsight",
            "run",
            "--slice-rule=equal",
            "--",
            "true"
        ]));
        assert!(!run(&["pinsight", "run", "--ruler", "--", "true"]));
        // Another command's old spelling does not count for this one.
        assert!(!run(&["pinsight", "run", "--csv", "x"]));
        assert!(typed(None, &argv(&["pinsight", "compare", "--csv", "x"])));
    }
}
