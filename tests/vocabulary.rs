//! One vocabulary over every command (docs/src/vocabulary.md; the table
//! itself is checked against the flag definitions by `tests/unit/docs_tests.rs`):
//! here, through the binary, an old spelling is a plain clap alias (no
//! note, the same value, given twice with the new one it is one flag given
//! twice), and the help lists a command's own options before the global
//! ones.

use crate::common_cmd::dir_with;
use std::process::{Command, Output};

fn pinsight(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pinsight"))
        .args(args)
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .env("COLUMNS", "200")
        .output()
        .expect("pinsight runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The subcommands `pinsight --help` lists.
fn subcommands() -> Vec<String> {
    commands(&text(&pinsight(&["--help"]).stdout))
}

/// The commands a `--help` text lists under `Commands:` (not `help`).
pub(crate) fn commands(help: &str) -> Vec<String> {
    let mut in_commands = false;
    let mut out = Vec::new();
    for line in help.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            if !line.starts_with("  ") {
                break;
            }
            // A command's line is indented by two; its wrapped
            // description by more.
            if line.starts_with("   ") {
                continue;
            }
            let name = line.split_whitespace().next().unwrap_or("");
            if !name.is_empty() && name != "help" {
                out.push(name.to_owned());
            }
        }
    }
    out
}

#[test]
fn help_lists_own_options_first_and_the_global_ones_under_their_heading() {
    let commands = subcommands();
    assert!(
        commands.len() >= 18,
        "the command list was not found: {commands:?}"
    );
    for cmd in &commands {
        let o = pinsight(&[cmd, "--help"]);
        let help = text(&o.stdout);
        let global = help
            .find("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{cmd}: no Global options heading:\n{help}"));
        let (own, globals) = help.split_at(global);
        // An option's item: its line starts with the flag (after a short
        // one: `-q, --quiet`).
        let items = |text: &str, flag: &str| {
            text.lines().any(|l| {
                // Items are indented by 2 to 6; their wrapped text by more.
                let t = l.trim_start();
                (2..=6).contains(&(l.len() - t.len()))
                    && (t.starts_with(flag) || t.get(4..).is_some_and(|r| r.starts_with(flag)))
            })
        };
        for flag in ["--fsroot", "--hwloc-xml", "--json", "--quiet", "--kinds"] {
            assert!(
                items(globals, flag),
                "{cmd}: {flag} not under Global options"
            );
            assert!(!items(own, flag), "{cmd}: {flag} among its own options");
        }
    }
}

/// An old spelling works as the new one, silently: a hidden alias.
#[test]
fn an_old_spelling_is_an_alias_with_the_same_value() {
    let dir = dir_with(&[("p.csv", "name,instructions,sf\na,1e9,2\nb,1e9,1\n")]);
    let csv = dir.path().join("p.csv");
    let csv = csv.to_str().unwrap();
    let run = |flags: &[&str]| {
        let mut args = vec![
            "simulate",
            "--machine",
            "1P+1E",
            "--programs",
            csv,
            "--json",
        ];
        args.extend_from_slice(flags);
        let o = pinsight(&args);
        assert!(o.status.success(), "{flags:?}: {}", text(&o.stderr));
        assert!(o.stderr.is_empty(), "{flags:?}: {}", text(&o.stderr));
        text(&o.stdout)
    };
    let new = run(&["--schedulers", "os", "--runs", "1", "--interval", "100ms"]);
    let old = run(&["--policies", "os", "--repeat", "1", "--period", "100ms"]);
    assert_eq!(old, new, "the old spellings gave another result");
    let default = run(&["--schedulers", "os"]);
    assert_ne!(
        default, new,
        "--runs 1 was not used (same as the default 3)"
    );
}

#[test]
fn an_old_spelling_and_its_new_one_are_one_flag_given_twice() {
    let o = pinsight(&[
        "simulate",
        "--programs",
        "x",
        "--repeat",
        "2",
        "--runs",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("cannot be used multiple times"),
        "{}",
        text(&o.stderr)
    );
}

/// Names that now mean one thing: balance's per-thread switch is no
/// longer `--threads` (a count everywhere else), speed's budget is a total.
#[test]
fn retired_meanings_are_refused() {
    let o = pinsight(&["balance", "--pids", "1", "--threads", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = pinsight(&["speed", "--budget-per-cpu", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn one_machine_grammar_for_tune_model_and_simulate() {
    // The same spec, read by both: simulate's big/small form for the model,
    // the model's P/E(+smt) form for the simulator (refusing SMT, which it
    // cannot simulate).
    let o = pinsight(&[
        "model",
        "--params",
        "f=0.9",
        "--machine",
        "4big+4little",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dir = dir_with(&[("p.csv", "name,instructions,sf\na,1e9,2\nb,1e9,1\n")]);
    let csv = dir.path().join("p.csv");
    let csv = csv.to_str().unwrap();
    let o = pinsight(&[
        "simulate",
        "--machine",
        "2P+2E",
        "--programs",
        csv,
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = pinsight(&["simulate", "--machine", "2P+2E+smt", "--programs", csv]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("drop +smt"), "{}", text(&o.stderr));
}
