//! One vocabulary over every command (docs/vocabulary.md): every
//! subcommand's flags, as its `--help` lists them, use the one spelling of
//! each concept; the old spellings are still accepted, hidden, with a
//! one-line deprecation note, and their values reach the command.

use std::collections::BTreeSet;
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

/// The long flags a `--help` text lists (the heads of its option items,
/// not flags named in prose).
fn flags(help: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if !(2..=6).contains(&indent) {
            continue;
        }
        let mut rest = line.trim_start();
        if rest.len() > 3 && rest.starts_with('-') && rest.as_bytes()[1] != b'-' {
            // "-r, --runs <N>"
            rest = rest.get(4..).unwrap_or("");
        }
        if let Some(name) = rest.strip_prefix("--") {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn help_flags(cmd: &str) -> BTreeSet<String> {
    let o = pinsight(&[cmd, "--help"]);
    assert!(o.status.success(), "{cmd} --help: {}", text(&o.stderr));
    flags(&text(&o.stdout))
}

/// Spellings no command shows any more (each is the old name of one
/// concept: see docs/vocabulary.md).
const RETIRED: &[&str] = &[
    "repeat",
    "schedulers",
    "policy",
    "latency-from",
    "from-csv",
    "csv",
    "markdown",
    "html",
    "svg",
    "png",
    "pid",
    "slice-rule",
    "rule",
    "out",
];

#[test]
fn every_visible_flag_is_in_the_vocabulary() {
    let commands = subcommands();
    assert!(
        commands.len() >= 18,
        "the command list was not found: {commands:?}"
    );
    let mut bad = Vec::new();
    for cmd in &commands {
        let flags = help_flags(cmd);
        assert!(flags.contains("help"), "{cmd}: no flags parsed: {flags:?}");
        for f in &flags {
            if RETIRED.contains(&f.as_str()) {
                bad.push(format!("{cmd} --{f}"));
            }
            // Every file written is --export-FORMAT.
            if f.contains("export") && !f.starts_with("export-") {
                bad.push(format!("{cmd} --{f} (exports are --export-FORMAT)"));
            }
        }
        // --weights is read only: speed writes with --export-weights.
        if cmd == "speed" && flags.contains("weights") {
            bad.push("speed --weights (speed writes --export-weights)".to_owned());
        }
    }
    assert!(bad.is_empty(), "flags outside the vocabulary: {bad:?}");
}

#[test]
fn each_concept_has_its_one_flag_where_it_appears() {
    // (command, flags it must show)
    let table: &[(&str, &[&str])] = &[
        (
            "compare",
            &[
                "runs",
                "policies",
                "latency",
                "weights",
                "export-json",
                "export-csv",
                "export-markdown",
                "export-html",
                "slice-rules",
            ],
        ),
        ("tune", &["runs", "machine"]),
        (
            "mix",
            &[
                "runs",
                "policies",
                "export-json",
                "export-csv",
                "export-markdown",
                "export-html",
            ],
        ),
        (
            "latency",
            &["runs", "latency", "export-csv", "export-svg", "export-png"],
        ),
        ("simulate", &["runs", "policies", "machine"]),
        ("sched", &["policies", "pids"]),
        ("sf", &["pids"]),
        (
            "report",
            &["latency", "export-html", "export-json", "export-latency"],
        ),
        ("speed", &["export-weights"]),
        ("plan", &["latency", "weights"]),
        ("run", &["latency", "weights", "slice-rules"]),
        ("slice", &["weights", "slice-rules"]),
        ("gather", &["export-html"]),
        ("model", &["machine", "export-svg"]),
    ];
    for (cmd, want) in table {
        let flags = help_flags(cmd);
        for f in *want {
            assert!(flags.contains(*f), "{cmd}: no --{f} in {flags:?}");
        }
    }
}

/// Every old spelling is accepted with one note on stderr. A global
/// `--hwloc-xml` that does not exist (or a refused live-only command)
/// makes each invocation end right after parsing, measuring nothing.
#[test]
fn old_spellings_are_hidden_aliases_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("no/such.xml");
    let nowhere = nowhere.to_str().unwrap();
    let missing = dir.path().join("no/such.out");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (&["mix", "--repeat", "2", "--", "true"], "repeat", "runs"),
        (
            &["mix", "--schedulers", "os", "--", "true"],
            "schedulers",
            "policies",
        ),
        (
            &["mix", "--csv", missing, "--", "true"],
            "csv",
            "export-csv",
        ),
        (
            &["mix", "--markdown", missing, "--", "true"],
            "markdown",
            "export-markdown",
        ),
        (
            &["mix", "--html", missing, "--", "true"],
            "html",
            "export-html",
        ),
        (&["latency", "--repeat", "2"], "repeat", "runs"),
        (&["latency", "--from-csv", missing], "from-csv", "latency"),
        (&["latency", "--csv", missing], "csv", "export-csv"),
        (&["latency", "--svg", missing], "svg", "export-svg"),
        (&["latency", "--png", missing], "png", "export-png"),
        (
            &["simulate", "--programs", missing, "--repeat", "2"],
            "repeat",
            "runs",
        ),
        (
            &["sched", "--policy", "aarr", "--pids", "999999999"],
            "policy",
            "policies",
        ),
        (
            &["report", "--latency-from", missing],
            "latency-from",
            "latency",
        ),
        (
            &["speed", "--weights", missing],
            "weights",
            "export-weights",
        ),
        (&["sf", "--pid", "999999999"], "pid", "pids"),
        (
            &["compare", "--csv", missing, "--", "true"],
            "csv",
            "export-csv",
        ),
        (
            &["compare", "--markdown", missing, "--", "true"],
            "markdown",
            "export-markdown",
        ),
        (
            &["compare", "--html", missing, "--", "true"],
            "html",
            "export-html",
        ),
        (
            &["run", "compact", "--slice-rule", "p-only", "--", "true"],
            "slice-rule",
            "slice-rules",
        ),
        (&["slice", "--rule", "p-only"], "rule", "slice-rules"),
        (
            &["gather", missing, "--html", missing],
            "html",
            "export-html",
        ),
        (
            &["model", "--params", "f=0.9", "--svg", missing],
            "svg",
            "export-svg",
        ),
    ];
    for (args, old, new) in cases {
        let mut all = vec!["--hwloc-xml", nowhere];
        all.extend_from_slice(args);
        let o = pinsight(&all);
        let err = text(&o.stderr);
        let note = format!("pinsight: note: --{old} is deprecated; use --{new}\n");
        assert!(
            err.starts_with(&note),
            "{args:?}: expected the note first, got: {err}"
        );
        assert_eq!(err.matches("deprecated").count(), 1, "{args:?}: {err}");
        assert_ne!(o.status.code(), Some(0), "{args:?} ran: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_old_spelling_and_its_new_one_conflict() {
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
        text(&o.stderr).contains("cannot be used with"),
        "{}",
        text(&o.stderr)
    );
}

/// The value given with an old spelling is the one used.
#[test]
fn an_old_spelling_carries_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    std::fs::write(&csv, "name,instructions,sf\na,1e9,2\nb,1e9,1\n").unwrap();
    let csv = csv.to_str().unwrap();
    let run = |flag: &str| {
        let o = pinsight(&[
            "simulate",
            "--machine",
            "1P+1E",
            "--programs",
            csv,
            "--policies",
            "os",
            flag,
            "1",
            "--json",
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let old = run("--repeat");
    let new = run("--runs");
    assert_eq!(old, new, "--repeat 1 and --runs 1 differ");
    let default = pinsight(&[
        "simulate",
        "--machine",
        "1P+1E",
        "--programs",
        csv,
        "--policies",
        "os",
        "--json",
    ]);
    assert_ne!(
        text(&default.stdout),
        new,
        "--runs 1 was not used (same as the default 3)"
    );
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
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    std::fs::write(&csv, "name,instructions,sf\na,1e9,2\nb,1e9,1\n").unwrap();
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
