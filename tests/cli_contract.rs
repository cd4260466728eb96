//! The command-line contract, end to end, for every command: help and
//! version, exit codes (0 ok, 1 runtime failure, 2 usage error, the
//! program's own status for `run`), one-line error messages naming the bad
//! input, `--json` purity (one JSON document on stdout, everything else on
//! stderr), `--fsroot`/`PINSIGHT_FSROOT`/`--hwloc-xml` on recorded
//! machines, the `topo --json` schema, agreement with lstopo on the live
//! machine, and no files left in the working directory.
//!
//! Every invocation runs the real binary in a fresh empty directory and
//! fails if anything it was not asked to write is left there (see
//! `common_cli`). Measuring commands get tiny budgets: the file runs in a
//! few seconds in release.

use crate::common_cli;
use crate::common_cmd::{self, assert_exit, assert_holds, dir_with, strs, words};

use common_cli::*;
use pinsight_cpuset::CpuSet;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// The commands the project has promised (more may be listed).
const COMMANDS: &[&str] = &[
    "topo", "snapshot", "plan", "run", "pin", "latency", "speed", "report", "workload",
];

fn hybrid() -> std::path::PathBuf {
    hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---------------------------------------------------------------- help, version

#[test]
fn top_level_help_lists_every_command_with_a_description() {
    let o = ok(&["--help"]);
    let listed = listed_commands();
    for c in COMMANDS {
        assert!(
            listed.iter().any(|l| l == c),
            "--help does not list '{c}':\n{}",
            o.stdout
        );
    }
    assert!(
        o.stdout.contains("--fsroot") && o.stdout.contains("--json"),
        "{}",
        o.stdout
    );
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    // `-h` and `help` say the same.
    assert_eq!(ok(&["-h"]).stdout.lines().next(), o.stdout.lines().next());
    assert!(ok(&["help"]).stdout.contains("Commands:"));
}

#[test]
fn every_command_has_useful_help_with_examples() {
    for c in listed_commands() {
        let o = ok(&[c.as_str(), "--help"]);
        let first = o.stdout.lines().next().unwrap_or("");
        assert!(
            first.len() > 15 && !first.starts_with("Usage"),
            "`pinsight {c} --help` lacks a one-line description first: {first:?}"
        );
        assert!(
            o.stdout.contains(&format!("Usage: pinsight {c}")),
            "{c}:\n{}",
            o.stdout
        );
        assert!(
            o.stdout.contains("Examples:") && o.stdout.contains(&format!("pinsight {c}")),
            "`pinsight {c} --help` has no example:\n{}",
            o.stdout
        );
        // Help is human output too: 80 columns, wider only for one word
        // that cannot wrap (a long example value).
        for line in o.stdout.lines() {
            assert!(
                line.chars().count() <= 80 || line.split_whitespace().count() == 1,
                "`pinsight {c} --help` is wider than 80 columns: {line}"
            );
        }
        // The short form and `help CMD` work too.
        assert!(ok(&[c.as_str(), "-h"])
            .stdout
            .contains(&format!("Usage: pinsight {c}")));
        assert!(ok(&["help", c.as_str()])
            .stdout
            .contains(&format!("Usage: pinsight {c}")));
    }
}

#[test]
fn version_is_printed_at_top_level_and_after_a_command() {
    let want = format!("pinsight {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(ok(&["--version"]).stdout, want);
    assert_eq!(ok(&["-V"]).stdout, want);
    // After a command clap names it git-style ("pinsight-topo 0.1.0").
    let sub = ok(&["topo", "--version"]).stdout;
    assert!(
        sub.starts_with("pinsight") && sub.ends_with(&format!(" {}\n", env!("CARGO_PKG_VERSION"))),
        "{sub}"
    );
}

/// A global flag means the same typed before the command or after it
/// (the parse finds the command over the root's flags alone, so the
/// value of `--kinds` or `--fsroot` is never taken for a command's name).
#[test]
fn global_flags_work_before_and_after_the_command() {
    let root = hybrid();
    let after = ok(&[
        "topo",
        "--json",
        "--fsroot",
        s(&root),
        "--kinds",
        "0-11:P,12-19:E",
    ]);
    let before = ok(&[
        "--json",
        "--fsroot",
        s(&root),
        "--kinds",
        "0-11:P,12-19:E",
        "topo",
    ]);
    let mixed = ok(&[
        "--fsroot",
        s(&root),
        "topo",
        "--kinds",
        "0-11:P,12-19:E",
        "--json",
    ]);
    assert_eq!(before.stdout, after.stdout);
    assert_eq!(mixed.stdout, after.stdout);
    assert!(before.json()["cpus"].is_array(), "{}", before.stdout);
    // A mistyped command is still refused with clap's suggestion.
    let o = pinsight(&["--fsroot", s(&root), "tpoo"]).run();
    assert_usage_error(&o, &["tpoo"]);
    assert_holds(&o, &o.stderr, &["similar subcommand exists: 'topo'"]);
}

/// Standard streams the parent closed are opened on /dev/null before
/// anything else (as std's start does), so no file pinsight opens becomes
/// its standard output, and the program `run` starts inherits /dev/null
/// rather than a closed descriptor or one of pinsight's files.
#[test]
fn closed_standard_streams_are_opened_on_dev_null() {
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            r#""$0" run cpus:0 -- sh -c 'echo $(readlink /proc/$$/fd/0 /proc/$$/fd/1) >&2' <&- >&-"#,
            env!("CARGO_BIN_EXE_pinsight"),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err, "/dev/null /dev/null\n");
}

// ---------------------------------------------------------------- usage errors: exit 2

/// Exit 2, nothing on stdout, an error on the first stderr line
/// (pinsight's own errors are exactly one line), and every needle in the
/// message: clap puts the offending argument on the next line for
/// missing ones, before a blank line and its hint.
fn assert_usage_error(o: &Out, needles: &[&str]) {
    common_cmd::assert_usage_error(o);
    let head = o.stderr.split("\n\n").next().unwrap();
    assert_holds(o, head, needles);
}

fn usage_error(args: &[&str], needles: &[&str]) {
    assert_usage_error(&pinsight(args).run(), needles);
}

#[test]
fn unknown_flags_commands_and_missing_arguments_exit_2() {
    // No command: the overview on stderr, exit 2.
    let o = pinsight::<&str>(&[]).run();
    assert_eq!(o.code, 2);
    assert!(
        o.stdout.is_empty() && o.stderr.contains("Usage: pinsight"),
        "{}",
        o.stderr
    );
    usage_error(&["topo", "--bogus"], &["'--bogus'"]);
    usage_error(&["frobnicate"], &["'frobnicate'"]);
    usage_error(&["--json", "plan", "--bogus", "os"], &["'--bogus'"]);
    usage_error(&["snapshot"], &["<OUT>"]);
    usage_error(&["plan"], &["<POLICY>"]);
    usage_error(&["run", "compact"], &["<CMD>"]);
    usage_error(&["pin"], &["<PID>"]);
    usage_error(&["workload"], &["<NAME>"]);
}

#[test]
fn bad_values_exit_2_naming_the_value_and_what_is_allowed() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["plan", "bogus"],
            &["'bogus'", "valid policies: os, p-set"],
        ),
        (
            &["plan", "p-pinned", "--threads", "0"],
            &["'0'", "--threads", "at least 1"],
        ),
        (
            &["plan", "p-pinned", "--threads", "x"],
            &["'x'", "--threads"],
        ),
        (
            &["plan", "p-pinned", "--format", "xml"],
            &["'xml'", "valid formats: table, json"],
        ),
        (&["plan", "cpus:0-x"], &["'0-x'"]),
        (
            &["--json", "plan", "p-set", "--format", "cpulist"],
            &["--json", "--format"],
        ),
        (
            &["plan", "compact", "--pipeline"],
            &["--pipeline", "latency-group"],
        ),
        (&["speed", "--cpus", "0-x"], &["--cpus", "'0-x'"]),
        (&["speed", "--cpus", "99"], &["--cpus 99", "usable: "]),
        (&["speed", "--budget", "fast"], &["'fast'", "500ms"]),
        (&["speed", "--kernels", "foo"], &["'foo'", "int, fp or mem"]),
        (
            &["speed", "--per-kind", "0"],
            &["'0'", "--per-kind", "at least 1"],
        ),
        (&["latency", "--cpus", "99"], &["--cpus 99", "online: "]),
        (&["latency", "--cpus", "0-x"], &["--cpus", "'0-x'"]),
        (
            &["latency", "--method", "foo"],
            &["'foo'", "'cas' or 'msg'"],
        ),
        (&["latency", "--target-ci", "150%"], &["'150%'", "1%"]),
        (
            &["latency", "--max-time-per-pair", "soon"],
            &["'soon'", "500ms"],
        ),
        (&["report", "--budget", "fast"], &["'fast'", "500ms"]),
        (
            &["workload", "nope"],
            &["'nope'", "pi, mandelbrot, lu, pingpong"],
        ),
        (
            &["workload", "pi", "--schedule", "foo"],
            &["'foo'", "static, dynamic, steal"],
        ),
        (&["workload", "pi", "--size", "abc"], &["'abc'", "1e6"]),
        (
            &["workload", "pi", "--threads", "0"],
            &["--threads", "at least 1"],
        ),
        (
            &["run", "bogus", "--", "true"],
            &["'bogus'", "valid policies"],
        ),
        (
            &["run", "cpus:0", "--skip", "0xq", "--", "true"],
            &["--skip '0xq'"],
        ),
        (
            &["run", "os", "--interval", "0", "--", "true"],
            &["'0'", "--interval", "an interval is between 1ms and 1h"],
        ),
        (
            &["run", "compact", "--weights", "w.json", "--", "true"],
            &["--weights", "balance"],
        ),
        (&["pin", "notapid", "os"], &["'notapid'"]),
        (&["pin", "1", "bogus"], &["'bogus'", "valid policies"]),
    ];
    for (args, needles) in cases {
        usage_error(args, needles);
    }
}

#[test]
fn bad_input_files_exit_2_naming_the_file() {
    let dir = dir_with(&[
        ("garbage.xml", "not xml at all\n"),
        ("bad.csv", ",,\n12.5,,\n13,x7,\n"),
    ]);
    let [missing, garbage, bad_csv] =
        ["missing.csv", "garbage.xml", "bad.csv"].map(|n| dir.path().join(n));
    usage_error(&["latency", "--latency", s(&missing)], &["missing.csv"]);
    usage_error(
        &["latency", "--latency", s(&bad_csv)],
        &["bad.csv:3:2", "'x7'"],
    );
    usage_error(
        &["report", "--no-speed", "--latency", s(&missing)],
        &["missing.csv"],
    );
    usage_error(
        &["plan", "latency-group", "-t", "2", "--latency", s(&missing)],
        &["missing.csv"],
    );
    usage_error(
        &["plan", "balance", "--weights", s(&missing)],
        &["missing.csv"],
    );
    usage_error(
        &["--hwloc-xml", s(&dir.path().join("none.xml")), "topo"],
        &["none.xml"],
    );
    usage_error(
        &["--hwloc-xml", s(&garbage), "plan", "os"],
        &["garbage.xml"],
    );
    usage_error(
        &[
            "--hwloc-xml",
            s(&xml_fixture("2arm-2c.hwloc29.xml")),
            "snapshot",
            "x",
        ],
        &["2arm-2c.hwloc29.xml"],
    );
}

#[test]
fn missing_or_unusable_fsroot_exits_2_naming_the_directory() {
    let dir = dir_with(&[("a-file", "x")]);
    let [missing, file] = ["no-such-machine", "a-file"].map(|n| dir.path().join(n));
    for cmd in [
        &["topo"][..],
        &["plan", "compact"],
        &["snapshot", "out"],
        &["report", "--no-speed", "--no-latency"],
    ] {
        let mut args = vec!["--fsroot", s(&missing)];
        args.extend_from_slice(cmd);
        usage_error(&args, &["--fsroot", "no-such-machine"]);
    }
    usage_error(&["--fsroot", s(&file), "topo"], &["a-file"]);
    // After the command name too (global flag).
    usage_error(&["topo", "--fsroot", s(&missing)], &["no-such-machine"]);
    usage_error(
        &[
            "--fsroot",
            s(&missing),
            "--hwloc-xml",
            s(&xml_fixture("2arm-2c.hwloc29.xml")),
            "topo",
        ],
        &["--fsroot", "--hwloc-xml"],
    );
}

/// A directory that is not a recorded machine (no sys/ in it: a typo, or
/// one level too high) is a usage error, not an empty machine with exit 0.
#[test]
fn fsroot_without_sysfs_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-dir");
    std::fs::create_dir(&empty).unwrap();
    usage_error(&["--fsroot", s(&empty), "topo"], &["empty-dir", "sys"]);
    usage_error(&["--fsroot", s(&empty), "plan", "os"], &["empty-dir"]);
}

#[test]
fn pinsight_fsroot_pointing_nowhere_exits_2_naming_the_variable_and_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone");
    let o = pinsight(&["topo"]).env("PINSIGHT_FSROOT", &missing).run();
    assert_usage_error(&o, &["PINSIGHT_FSROOT", "gone"]);
    let o = pinsight(&["plan", "compact"])
        .env("PINSIGHT_FSROOT", &missing)
        .run();
    assert_usage_error(&o, &["gone"]);
}

/// The environment variable is a default: an explicit `--hwloc-xml` on the
/// command line wins over it instead of conflicting with it.
#[test]
fn hwloc_xml_flag_overrides_pinsight_fsroot_from_the_environment() {
    let xml = xml_fixture("hybrid-i7-1370p-like.v3.xml");
    let want = ok(&["--hwloc-xml", s(&xml), "--json", "topo"]).stdout;
    let o = pinsight(&["--hwloc-xml", s(&xml), "--json", "topo"])
        .env("PINSIGHT_FSROOT", hybrid())
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, want);
}

/// `PINSIGHT_FSROOT=` (set but empty, the usual way to unset it for one
/// command) means this machine, as `FsRoot::from_flag_or_env` documents.
#[test]
fn empty_pinsight_fsroot_means_this_machine() {
    let want = ok(&["--json", "topo"]).stdout;
    let o = pinsight(&["--json", "topo"])
        .env("PINSIGHT_FSROOT", "")
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, want);
}

#[test]
fn live_only_commands_refuse_a_recorded_machine_with_exit_2() {
    let f = hybrid();
    let xml = xml_fixture("hybrid-i7-1370p-like.v3.xml");
    for (globals, name) in [
        (["--fsroot", s(&f)], "--fsroot"),
        (["--hwloc-xml", s(&xml)], "--hwloc-xml"),
    ] {
        for cmd in [
            &["speed"][..],
            &["latency"],
            &["run", "os", "--", "true"],
            &["pin", "1", "os"],
        ] {
            let mut args = globals.to_vec();
            args.extend_from_slice(cmd);
            usage_error(&args, &[name]);
        }
    }
}

/// A PID that no process can have (0, negative) is bad input, not a
/// process that went away.
#[test]
fn pin_rejects_impossible_pids_as_usage_errors() {
    usage_error(&["pin", "0", "os"], &["'0'"]);
    usage_error(&["pin", "--", "-1", "os"], &["'-1'"]);
}

// ---------------------------------------------------------------- runtime failures: exit 1

fn runtime_error(o: &Out, needles: &[&str]) {
    assert_exit(o, 1, needles);
    assert!(
        o.first_err_line().starts_with("pinsight: error: "),
        "{}: {}",
        o.argv,
        o.stderr
    );
}

#[test]
fn runtime_failures_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let nodir = dir.path().join("no/such/dir");
    runtime_error(
        &pinsight(&["pin", "999999999", "os"]).run(),
        &["no process with PID 999999999"],
    );
    // An output path latency cannot write is refused before measuring: exit 2.
    assert_usage_error(
        &pinsight(&[
            "latency",
            "--latency",
            s(&latency_fixture("Apple_M1_Pro.csv")),
            "--export-csv",
            s(&nodir.join("m.csv")),
        ])
        .run(),
        &["no/such/dir/m.csv"],
    );
    // Output files of report and speed are checked before measuring: bad
    // input (exit 2), see tests/no_lost_work.rs.
    for (line, file) in [
        ("report --no-latency --no-speed --export-html", "r.html"),
        (
            "speed --cpus 0 --kernels int --budget 10ms --export-weights",
            "w.json",
        ),
    ] {
        let path = nodir.join(file);
        let mut args = words(line);
        args.push(s(&path));
        usage_error(&args, &[&format!("no/such/dir/{file}")]);
    }
}

/// latency confined to one CPU (by `pinsight run cpus:0`) cannot measure:
/// a runtime error, and `run` hands that status on.
#[test]
fn latency_on_one_cpu_is_a_runtime_error_passed_on_by_run() {
    let o = pinsight(&[
        "run",
        "cpus:0",
        "--",
        env!("CARGO_BIN_EXE_pinsight"),
        "latency",
        "--max-time-per-pair",
        "5ms",
    ])
    .run();
    runtime_error(&o, &["at least 2 CPUs"]);
}

// ---------------------------------------------------------------- run: the program's status

#[test]
fn run_hands_on_the_programs_exit_status() {
    let dir = dir_with(&[("data.txt", "x")]);
    let not_exec = dir.path().join("data.txt");
    let cases: &[(&[&str], i32)] = &[
        (&["run", "os", "--", "true"], 0),
        (&["run", "os", "--", "false"], 1),
        (&["run", "os", "--", "sh", "-c", "exit 7"], 7),
        (&["run", "cpus:0", "--", "sh", "-c", "exit 3"], 3),
        (
            &["run", "compact", "-t", "2", "--", "sh", "-c", "exit 4"],
            4,
        ),
        (
            &["run", "compact", "--follow", "--", "sh", "-c", "exit 5"],
            5,
        ),
        (&["run", "os", "--", "sh", "-c", "kill -9 $$"], 137),
        (&["run", "os", "--", "sh", "-c", "kill -TERM $$"], 143),
        (&["run", "cpus:0", "--", "sh", "-c", "kill -KILL $$"], 137),
        (&["run", "os", "--", "pinsight-no-such-program"], 127),
        (&["run", "os", "--", "/nonexistent/dir/prog"], 127),
        (&["run", "os", "--", s(&not_exec)], 126),
    ];
    for (args, want) in cases {
        let o = pinsight(args).run();
        assert_eq!(o.code, *want, "{}: stderr {}", o.argv, o.stderr);
        if *want == 127 {
            assert!(o.says("not found"), "{}: {}", o.argv, o.stderr);
        }
    }
}

#[test]
fn run_keeps_stdout_for_the_program_and_leaves_no_temp_files() {
    let tmp = tempfile::tempdir().unwrap();
    for policy in ["os", "cpus:0", "compact", "p-set"] {
        let o = pinsight(&[
            "run",
            policy,
            "--report",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2",
        ])
        .env("TMPDIR", tmp.path())
        .run();
        assert_eq!(
            (o.code, o.stdout.as_str()),
            (0, "out\n"),
            "{}: {}",
            o.argv,
            o.stderr
        );
        assert!(
            o.stderr.contains("err\n") && o.stderr.contains("pinsight run:"),
            "{}: {}",
            o.argv,
            o.stderr
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "{}: left {left:?} in $TMPDIR", o.argv);
    }
    // --json: stdout holds only the document; the program's output goes
    // to stderr.
    let o = pinsight(&[
        "run",
        "cpus:0",
        "--json",
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2",
    ])
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr, "out\nerr\n");
    let doc: Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
    assert_eq!(doc["run"]["exit_code"], 0);
    assert_eq!(doc["plan"]["policy"], "cpus:0");
}

// ---------------------------------------------------------------- --json purity

/// `--json` before and after the command give one identical-shaped JSON
/// document on stdout; stderr holds no progress-bar control characters.
fn json_both_ways(cmd: &[&str], writes: &[&str]) -> Value {
    let mut docs = Vec::new();
    for before in [true, false] {
        let mut args: Vec<&str> = Vec::new();
        if before {
            args.push("--json");
        }
        args.extend_from_slice(cmd);
        if !before {
            args.push("--json");
        }
        let mut call = pinsight(&args);
        for w in writes {
            call = call.writes(w);
        }
        let o = call.run();
        assert_eq!(o.code, 0, "{}: {}", o.argv, o.stderr);
        assert!(
            !o.stderr.contains('\r') && !o.stderr.contains('\x1b'),
            "{}: terminal control codes on a pipe: {:?}",
            o.argv,
            o.stderr
        );
        let doc = o.json();
        assert!(doc.is_object() || doc.is_array(), "{}", o.argv);
        docs.push(doc);
    }
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    assert_eq!(
        keys(&docs[0]),
        keys(&docs[1]),
        "{cmd:?}: --json position changes the document"
    );
    docs.pop().unwrap()
}

#[test]
fn json_is_the_only_thing_on_stdout_for_every_command() {
    let topo = json_both_ways(&["topo"], &[]);
    assert!(topo["cpus"].is_array());
    let plan = json_both_ways(&["plan", "compact", "-t", "2"], &[]);
    assert_eq!(plan["policy"], "compact");
    let lat = json_both_ways(
        &[
            "latency",
            "--latency",
            s(&latency_fixture("Apple_M1_Pro.csv")),
            "--cpus",
            "0-3",
        ],
        &[],
    );
    assert_eq!(lat["cpus"].as_array().unwrap().len(), 4);
    let w = json_both_ways(&["workload", "pi", "-t", "2", "--size", "1e5"], &[]);
    assert_eq!(w["workload"], "pi");
    let list = json_both_ways(&["workload", "--list"], &[]);
    assert!(list.as_array().unwrap().len() >= 4);
    let snap = json_both_ways(&["snapshot", "snap"], &["snap"]);
    assert!(snap["files"].as_u64().unwrap() > 0);
    let rep = json_both_ways(
        &[
            "report",
            "--no-latency",
            "--no-speed",
            "--export-html",
            "r.html",
            "--export-json",
            "r.json",
        ],
        &["r.html", "r.json"],
    );
    assert!(rep["topology"]["cpus"].is_array() && rep["suggestions"].is_array());
}

#[test]
fn json_of_measuring_commands_on_this_machine() {
    let usable = ok(&["--json", "topo"]).json()["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == true && c["allowed"] == true)
        .count();
    let speed = json_both_ways(&words("speed --cpus 0 --kernels int --budget 30ms"), &[]);
    assert_eq!(speed["cpus"][0]["cpu"], 0);
    if usable < 2 {
        eprintln!("note: latency --json not checked: fewer than 2 usable CPUs");
        return;
    }
    let lat = json_both_ways(
        &["latency", "--cpus", "0-1", "--max-time-per-pair", "20ms"],
        &[],
    );
    assert_eq!(lat["cpus"], serde_json::json!([0, 1]));
    assert!(lat["measured"].is_object());
}

#[test]
fn pin_json_on_a_live_child() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let doc = json_both_ways(&["pin", &pid, "cpus-set:0", "--dry-run"], &[]);
    assert_eq!(doc["pid"].as_u64().unwrap().to_string(), pid);
    assert_eq!(doc["dry_run"], true);
    // Pin for real: the child's mask changes and exit is 0.
    let o = ok(&["pin", &pid, "cpus:0"]);
    assert!(o.stdout.contains(&pid), "{}", o.stdout);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let allowed = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(allowed.split_whitespace().last(), Some("0"), "{status}");
}

#[test]
fn warnings_go_to_stderr_and_quiet_hides_them() {
    let f = hwloc_fixture("offline-cpu0-node0");
    let o = ok(&["--fsroot", s(&f), "--json", "topo"]);
    o.json();
    assert!(o.stderr.contains("pinsight: warning:"), "{}", o.stderr);
    let q = ok(&["--fsroot", s(&f), "--json", "-q", "topo"]);
    assert_eq!(q.stdout, o.stdout);
    assert!(q.stderr.is_empty(), "{}", q.stderr);
    // The warnings are in the JSON too, for programs.
    assert!(!o.json()["warnings"].as_array().unwrap().is_empty());
}

// ---------------------------------------------------------------- recorded machines

#[test]
fn every_recorded_machine_works_with_topo_and_plan() {
    let fixtures = hwloc_fixtures();
    assert!(fixtures.len() >= 15, "fixtures missing: {fixtures:?}");
    for f in &fixtures {
        let name = f.file_name().unwrap().to_string_lossy();
        let human = ok(&["-q", "--fsroot", s(f), "topo"]);
        assert!(
            human.stdout.starts_with("Machine ("),
            "{name}: {}",
            human.stdout
        );
        let doc = ok(&["-q", "--fsroot", s(f), "--json", "topo"]).json();
        check_topo_contract(&doc, &name);
        let plan = ok(&["-q", "--fsroot", s(f), "--json", "plan", "compact"]).json();
        assert!(plan["places"].is_array(), "{name}");
        // The environment variable gives the same answer as the flag.
        let env = pinsight(&["-q", "--json", "topo"])
            .env("PINSIGHT_FSROOT", f)
            .run();
        assert_eq!(env.code, 0, "{name}: {}", env.stderr);
        assert_eq!(
            env.json(),
            doc,
            "{name}: PINSIGHT_FSROOT differs from --fsroot"
        );
        // A flag overrides the environment.
        let both = pinsight(&["-q", "--json", "--fsroot", s(f), "topo"])
            .env("PINSIGHT_FSROOT", hybrid())
            .run();
        assert_eq!(
            both.json(),
            doc,
            "{name}: --fsroot does not override PINSIGHT_FSROOT"
        );
    }
}

#[test]
fn every_hwloc_xml_export_works_with_topo_and_plan() {
    for x in xml_fixtures() {
        let name = x.file_name().unwrap().to_string_lossy();
        let human = ok(&["-q", "--hwloc-xml", s(&x), "topo"]);
        assert!(
            human.stdout.starts_with("Machine ("),
            "{name}: {}",
            human.stdout
        );
        let doc = ok(&["-q", "--hwloc-xml", s(&x), "--json", "topo"]).json();
        check_topo_contract(&doc, &name);
        let plan = ok(&[
            "-q",
            "--hwloc-xml",
            s(&x),
            "plan",
            "compact",
            "--format",
            "cpulist",
        ]);
        CpuSet::parse_list(plan.stdout.trim())
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", plan.stdout));
    }
}

#[test]
fn plans_for_the_recorded_hybrid_agree_across_fsroot_xml_and_environment() {
    let xml = xml_fixture("hybrid-i7-1370p-like.v3.xml");
    let f = hybrid();
    let plan = |globals: &[&str], env: Option<&Path>, rest: &[&str]| {
        let mut args = globals.to_vec();
        args.extend_from_slice(rest);
        let mut call = pinsight(&args);
        if let Some(e) = env {
            call = call.env("PINSIGHT_FSROOT", e);
        }
        let o = call.run();
        assert_eq!(o.code, 0, "{}: {}", o.argv, o.stderr);
        o.stdout.trim().to_string()
    };
    for (globals, env) in [
        (vec!["--fsroot", s(&f)], None),
        (vec!["--hwloc-xml", s(&xml)], None),
        (vec![], Some(f.as_path())),
    ] {
        assert_eq!(
            plan(&globals, env, &["plan", "e-set", "--format", "cpulist"]),
            "12-19",
            "{globals:?}"
        );
        assert_eq!(
            plan(&globals, env, &["plan", "p-set", "-f", "taskset"]),
            "taskset -c 0-11",
            "{globals:?}"
        );
        let doc: Value = serde_json::from_str(&plan(
            &globals,
            env,
            &["plan", "p-pinned", "-t", "4", "--json"],
        ))
        .unwrap();
        let places: Vec<String> = doc["places"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        assert_eq!(places.len(), 4, "{globals:?}: {doc}");
        for p in &places {
            let set = CpuSet::parse_list(p).unwrap();
            assert!(
                set.is_subset(&CpuSet::parse_list("0-11").unwrap()),
                "{globals:?}: place {p} is not a P-core CPU"
            );
        }
        // One CPU per core before SMT siblings: 4 places on 4 distinct cores.
        let cores: BTreeSet<usize> = places
            .iter()
            .map(|p| CpuSet::parse_list(p).unwrap().first().unwrap() / 2)
            .collect();
        assert_eq!(cores.len(), 4, "{globals:?}: {places:?}");
    }
}

// ---------------------------------------------------------------- topo --json schema

fn as_cpuset(v: &Value, what: &str) -> CpuSet {
    let t = v
        .as_str()
        .unwrap_or_else(|| panic!("{what}: cpus is not a cpulist string: {v}"));
    CpuSet::parse_list(t).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn uint_or_null(v: &Value, what: &str) {
    assert!(
        v.is_null() || v.is_u64(),
        "{what}: want an unsigned integer or null, got {v}"
    );
}

/// The `topo --json` contract: keys, types, and the invariants
/// between them. Groups (cores, packages, dies, clusters, caches, NUMA
/// nodes, kinds) list online CPUs only.
fn check_topo_contract(doc: &Value, what: &str) {
    for key in [
        "cpus",
        "cores",
        "packages",
        "dies",
        "clusters",
        "caches",
        "numa_nodes",
        "kinds",
    ] {
        assert!(doc[key].is_array(), "{what}: '{key}' is not an array");
    }
    assert!(
        doc.get("numa_distances").is_some(),
        "{what}: no numa_distances key"
    );
    let cpus = doc["cpus"].as_array().unwrap();
    let mut online = CpuSet::new();
    let mut ids = Vec::new();
    for c in cpus {
        let w = format!("{what}: cpu {c}");
        for key in [
            "id", "online", "allowed", "core", "package", "numa", "kind", "capacity", "max_mhz",
            "base_mhz",
        ] {
            assert!(c.get(key).is_some(), "{w}: no '{key}'");
        }
        let id = c["id"].as_u64().unwrap_or_else(|| panic!("{w}: id")) as usize;
        ids.push(id);
        assert!(c["online"].is_boolean() && c["allowed"].is_boolean(), "{w}");
        for key in [
            "core", "package", "numa", "kind", "capacity", "max_mhz", "base_mhz",
        ] {
            uint_or_null(&c[key], &format!("{w}.{key}"));
        }
        if c["online"] == true {
            online.insert(id);
            assert!(
                c["core"].is_u64() && c["package"].is_u64() && c["kind"].is_u64(),
                "{w}: online CPU without core/package/kind"
            );
        } else {
            assert!(
                c["core"].is_null() && c["kind"].is_null(),
                "{w}: offline CPU placed in a group"
            );
        }
    }
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted, "{what}: cpus not sorted by id or duplicated");

    let groups = |key: &str| -> Vec<CpuSet> {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let w = format!("{what}: {key}[{i}]");
                assert_eq!(g["id"].as_u64(), Some(i as u64), "{w}: id is not its index");
                let set = as_cpuset(&g["cpus"], &w);
                assert!(
                    !set.is_empty() && set.is_subset(&online),
                    "{w}: {set} is empty or holds offline CPUs (online {online})"
                );
                set
            })
            .collect()
    };
    for key in ["cores", "packages", "dies", "clusters"] {
        let sets = groups(key);
        // A level partitions the online CPUs (or is absent).
        if !sets.is_empty() {
            let mut seen = CpuSet::new();
            for set in &sets {
                assert!(!set.intersects(&seen), "{what}: {key} overlap");
                seen.union_with(set);
            }
            assert_eq!(seen, online, "{what}: {key} do not cover the online CPUs");
        }
    }
    let cores = groups("cores");
    let packages = groups("packages");
    for c in cpus.iter().filter(|c| c["online"] == true) {
        let id = c["id"].as_u64().unwrap() as usize;
        assert!(
            cores[c["core"].as_u64().unwrap() as usize].contains(id),
            "{what}: cpu {id} not in its core"
        );
        assert!(
            packages[c["package"].as_u64().unwrap() as usize].contains(id),
            "{what}: cpu {id} not in its package"
        );
    }

    for (i, cache) in doc["caches"].as_array().unwrap().iter().enumerate() {
        let w = format!("{what}: caches[{i}] {cache}");
        assert!(
            (1..=4).contains(&cache["level"].as_u64().unwrap_or(0)),
            "{w}"
        );
        assert!(
            matches!(
                cache["type"].as_str(),
                Some("data" | "instruction" | "unified")
            ),
            "{w}"
        );
        uint_or_null(&cache["size_kib"], &w);
        let set = as_cpuset(&cache["cpus"], &w);
        assert!(
            !set.is_empty() && set.is_subset(&online),
            "{w}: offline or no CPUs"
        );
    }

    let nodes = doc["numa_nodes"].as_array().unwrap();
    let mut node_ids = Vec::new();
    for n in nodes {
        let w = format!("{what}: numa node {n}");
        node_ids.push(n["id"].as_u64().unwrap_or_else(|| panic!("{w}: id")));
        let set = as_cpuset(&n["cpus"], &w);
        assert!(set.is_subset(&online), "{w}: offline CPUs");
        uint_or_null(&n["memory_mib"], &w);
    }
    for c in cpus.iter().filter(|c| c["numa"].is_u64()) {
        let node = nodes
            .iter()
            .find(|n| n["id"] == c["numa"])
            .unwrap_or_else(|| panic!("{what}: cpu {c}: unknown node"));
        assert!(
            as_cpuset(&node["cpus"], what).contains(c["id"].as_u64().unwrap() as usize),
            "{what}: {c} not in its node"
        );
    }
    match &doc["numa_distances"] {
        Value::Null => {}
        Value::Array(rows) => {
            assert_eq!(rows.len(), nodes.len(), "{what}: distance rows");
            for r in rows {
                let r = r.as_array().unwrap();
                assert_eq!(r.len(), nodes.len(), "{what}: distance row length");
                assert!(r.iter().all(|v| v.is_u64()), "{what}: distance {r:?}");
            }
        }
        other => panic!("{what}: numa_distances is {other}"),
    }

    let kinds = doc["kinds"].as_array().unwrap();
    let mut covered = CpuSet::new();
    for (i, k) in kinds.iter().enumerate() {
        let w = format!("{what}: kinds[{i}] {k}");
        assert_eq!(
            k["rank"].as_u64(),
            Some(i as u64),
            "{w}: kinds not in rank order"
        );
        assert!(k["name"].is_string() && k["source"].is_string(), "{w}");
        assert!(
            k["capacity"].is_null() || k["capacity"].is_f64() || k["capacity"].is_u64(),
            "{w}"
        );
        uint_or_null(&k["max_mhz"], &w);
        let set = as_cpuset(&k["cpus"], &w);
        assert!(!set.intersects(&covered), "{w}: kinds overlap");
        covered.union_with(&set);
        for cpu in set.iter() {
            let c = cpus.iter().find(|c| c["id"] == cpu).unwrap();
            assert_eq!(
                c["kind"].as_u64(),
                Some(i as u64),
                "{w}: cpu {cpu}'s kind is not this rank"
            );
        }
    }
    assert_eq!(
        covered, online,
        "{what}: kinds do not cover the online CPUs"
    );
}

#[test]
fn topo_json_contract_on_the_hybrid() {
    let doc = ok(&["--fsroot", s(&hybrid()), "--json", "topo"]).json();
    check_topo_contract(&doc, "hybrid");
    let kinds = doc["kinds"].as_array().unwrap();
    assert_eq!(kinds.len(), 2);
    assert_eq!(
        (kinds[0]["cpus"].as_str(), kinds[1]["cpus"].as_str()),
        (Some("12-19"), Some("0-11"))
    );
    let cpu0 = &doc["cpus"][0];
    assert_eq!(
        (
            cpu0["kind"].as_u64(),
            cpu0["max_mhz"].as_u64(),
            cpu0["base_mhz"].as_u64()
        ),
        (Some(1), Some(5000), Some(1900))
    );
    assert_eq!(doc["cores"].as_array().unwrap().len(), 14);
    assert_eq!(doc["cores"][0]["cpus"], "0-1");
    // The hwloc export of the same kind of machine names its kinds.
    let xml = ok(&[
        "--hwloc-xml",
        s(&xml_fixture("hybrid-i7-1370p-like.v3.xml")),
        "--json",
        "topo",
    ])
    .json();
    let names: Vec<&str> = strs(&xml["kinds"], "name");
    assert_eq!(names, ["E-core", "P-core"]);
}

/// `topo --json` of the recorded machine `name`.
fn recorded_topo_json(name: &str) -> Value {
    ok(&["--fsroot", s(&hwloc_fixture(name)), "--json", "topo"]).json()
}

/// `topo`'s text of the recorded machine `name`.
fn recorded_topo(name: &str) -> String {
    ok(&["--fsroot", s(&hwloc_fixture(name)), "topo"]).stdout
}

#[test]
fn topo_json_contract_with_offline_cpus() {
    let doc = recorded_topo_json("16em64t-4s2c2t-offlines");
    check_topo_contract(&doc, "offlines");
    let offline: Vec<u64> = doc["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == false)
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(offline, [2, 5, 13, 14]);
    let human = recorded_topo("16em64t-4s2c2t-offlines");
    assert!(human.contains("Offline CPUs: 2,5,13-14"), "{human}");
    assert!(!human.contains("(P#2)"), "an offline CPU is drawn: {human}");
}

#[test]
fn topo_json_contract_inside_cgroups() {
    let doc = recorded_topo_json("16amd64-8n2c-cpusets");
    check_topo_contract(&doc, "cpusets");
    let cpus = doc["cpus"].as_array().unwrap();
    let not_allowed: CpuSet = cpus
        .iter()
        .filter(|c| c["allowed"] == false)
        .map(|c| c["id"].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(not_allowed.to_list_string(), "7-11");
    // Online but not allowed CPUs stay in their groups (they exist; this process just may not use them).
    assert!(as_cpuset(&doc["numa_nodes"][3]["cpus"], "node 3").contains(7));
    let human = recorded_topo("16amd64-8n2c-cpusets");
    assert!(
        human.contains("Not allowed by this process's cpuset: 7-11"),
        "{human}"
    );
    for name in [
        "16amd64-4n4c-cgroup-distance-merge",
        "32amd64-4s2n4c-cgroup2",
    ] {
        let doc = recorded_topo_json(name);
        check_topo_contract(&doc, name);
        assert!(
            doc["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["allowed"] == false),
            "{name}: cgroup not seen"
        );
    }
}

#[test]
fn topo_json_contract_live() {
    let doc = ok(&["--json", "topo"]).json();
    check_topo_contract(&doc, "live");
    let online = doc["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == true)
        .count();
    let human = ok(&["topo"]).stdout;
    assert!(
        human.starts_with(&format!(
            "Machine ({}; {online} CPUs online",
            doc["model_name"].as_str().unwrap_or("unknown CPU")
        )),
        "{human}"
    );
    assert_eq!(human.matches("PU L#").count(), online, "{human}");
    assert_eq!(ok(&["topo", "--no-pus"]).stdout.matches("PU L#").count(), 0);
}

// ---------------------------------------------------------------- live: agreement with lstopo

/// One object of `lstopo-no-graphics --of xml`, read from its opening tag.
struct HwlocObject {
    kind: String,
    os_index: Option<u64>,
    cpuset: CpuSet,
    attrs: Vec<(String, String)>,
}

impl HwlocObject {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

/// The attributes of every `<object ...>` tag (hwloc writes one tag per
/// line), with plain string parsing: no XML dependency needed.
fn parse_lstopo_xml(xml: &str) -> Vec<HwlocObject> {
    let mut out = Vec::new();
    for line in xml.lines() {
        let Some(tag) = line.trim().strip_prefix("<object ") else {
            continue;
        };
        let mut attrs = Vec::new();
        let mut rest = tag;
        while let Some(eq) = rest.find("=\"") {
            let name = rest[..eq].trim().to_string();
            let after = &rest[eq + 2..];
            let end = after.find('"').expect("closing quote");
            attrs.push((name, after[..end].to_string()));
            rest = &after[end + 1..];
        }
        let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let Some(cpuset) = get("cpuset") else {
            continue;
        };
        out.push(HwlocObject {
            kind: get("type").unwrap_or_default(),
            os_index: get("os_index").and_then(|v| v.parse().ok()),
            cpuset: CpuSet::parse_hwloc(&cpuset, 8192).unwrap(),
            attrs,
        });
    }
    out
}

#[test]
fn live_topo_agrees_with_lstopo() {
    if !on_path("lstopo-no-graphics") {
        pinsight_testkit::skip_test!(
            "lstopo-no-graphics not installed (.ci/deps installs hwloc): live comparison"
        );
    }
    let lst = std::process::Command::new("lstopo-no-graphics")
        .args(["--of", "xml", "--no-io", "--whole-system", "-"])
        .output()
        .unwrap();
    common_cmd::assert_status(&lst, 0, &[]);
    let objs = parse_lstopo_xml(&String::from_utf8_lossy(&lst.stdout));
    let of = |k: &'static str| objs.iter().filter(move |o| o.kind == k);
    let doc = ok(&["--json", "topo"]).json();
    let human = ok(&["topo"]).stdout;

    // CPUs.
    let pus: CpuSet = of("PU").map(|o| o.os_index.unwrap() as usize).collect();
    let online: CpuSet = doc["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == true)
        .map(|c| c["id"].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(online, pus, "online CPUs differ from lstopo's PUs");
    assert_eq!(human.matches("PU L#").count(), pus.len());

    // Cores and packages: the same CPU sets.
    let sets = |key: &str| -> BTreeSet<String> {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["cpus"].as_str().unwrap().to_string())
            .collect()
    };
    let hw_sets = |k: &'static str| -> BTreeSet<String> {
        of(k).map(|o| o.cpuset.to_list_string()).collect()
    };
    assert_eq!(sets("cores"), hw_sets("Core"), "cores differ from lstopo");
    assert_eq!(
        sets("packages"),
        hw_sets("Package"),
        "packages differ from lstopo"
    );
    assert_eq!(human.matches("Core L#").count(), of("Core").count());

    // Caches: level, type, size and sharing set, as a multiset.
    let mut hw_caches: Vec<(u64, &str, Option<u64>, String)> = objs
        .iter()
        .filter(|o| o.kind.ends_with("Cache") && o.kind != "MemCache")
        .map(|o| {
            let ty = match o.attr("cache_type") {
                Some("1") => "data",
                Some("2") => "instruction",
                _ => "unified",
            };
            let level = o.attr("depth").unwrap().parse().unwrap();
            let size = o
                .attr("cache_size")
                .and_then(|v| v.parse::<u64>().ok())
                .map(|b| b / 1024);
            (level, ty, size, o.cpuset.to_list_string())
        })
        .collect();
    let mut ours: Vec<(u64, &str, Option<u64>, String)> = doc["caches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["level"].as_u64().unwrap(),
                c["type"].as_str().unwrap(),
                c["size_kib"].as_u64(),
                c["cpus"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    hw_caches.sort();
    ours.sort();
    assert_eq!(ours, hw_caches, "caches differ from lstopo");
    for (level, ty, _, _) in &hw_caches {
        let label = match *ty {
            "data" => format!("L{level}d ("),
            "instruction" => format!("L{level}i ("),
            _ => format!("L{level} ("),
        };
        let want = hw_caches
            .iter()
            .filter(|c| c.0 == *level && c.1 == *ty)
            .count();
        assert_eq!(
            human.matches(&label).count(),
            want,
            "human tree: {label} count\n{human}"
        );
    }

    // NUMA nodes: ids, CPUs, memory (MiB, rounding allowed).
    let mut hw_nodes: Vec<(u64, String, Option<u64>)> = of("NUMANode")
        .map(|o| {
            (
                o.os_index.unwrap(),
                o.cpuset.to_list_string(),
                o.attr("local_memory")
                    .and_then(|m| m.parse::<u64>().ok())
                    .map(|b| b >> 20),
            )
        })
        .collect();
    hw_nodes.sort();
    let nodes: Vec<(u64, String, Option<u64>)> = doc["numa_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["id"].as_u64().unwrap(),
                n["cpus"].as_str().unwrap().to_string(),
                n["memory_mib"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        nodes.len(),
        hw_nodes.len(),
        "NUMA nodes: {nodes:?} vs lstopo {hw_nodes:?}"
    );
    for (a, b) in nodes.iter().zip(&hw_nodes) {
        assert_eq!((a.0, &a.1), (b.0, &b.1), "NUMA node differs from lstopo");
        if let (Some(x), Some(y)) = (a.2, b.2) {
            assert!(
                x.abs_diff(y) <= 1,
                "node {} memory {x} MiB, lstopo {y} MiB",
                a.0
            );
        }
    }
    assert_eq!(human.matches("NUMANode P#").count(), hw_nodes.len());
}

// ---------------------------------------------------------------- files written where asked, nowhere else

#[test]
fn commands_write_only_the_files_they_were_asked_to() {
    let m1 = latency_fixture("Apple_M1_Pro.csv");
    let o = pinsight(&[
        "latency",
        "--latency",
        s(&m1),
        "--export-csv",
        "m.csv",
        "--export-svg",
        "m.svg",
        "--export-png",
        "m.png",
    ])
    .writes("m.csv")
    .writes("m.svg")
    .writes("m.png")
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    for f in ["m.csv", "m.svg", "m.png"] {
        assert!(o.path(f).is_file(), "{f} not written");
    }
    assert!(
        o.stdout.contains("Wrote m.csv, m.svg, m.png"),
        "{}",
        o.stdout
    );

    let o = pinsight(&["snapshot", "box.tar.gz"])
        .writes("box.tar.gz")
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.path("box.tar.gz").is_file());

    let o = pinsight(&[
        "speed",
        "--kernels",
        "int",
        "--budget",
        "20ms",
        "--export-weights",
        "w.json",
    ])
    .writes("w.json")
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The weights file is what `plan balance --weights` reads.
    let w = o.path("w.json");
    let plan = ok(&[
        "--json",
        "plan",
        "balance",
        "--tasks",
        "4",
        "--weights",
        s(&w),
    ])
    .json();
    assert!(plan["places"].is_array(), "{plan}");

    // report's documented default output prefix.
    let o = pinsight(&["--fsroot", s(&hybrid()), "report"])
        .writes("pinsight-report.html")
        .writes("pinsight-report.json")
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("Report: pinsight-report.html")
            && o.stdout.contains("pinsight-report.json"),
        "{}",
        o.stdout
    );

    // Read-only commands write nothing (checked by the harness on every call).
    for args in [
        &["topo"][..],
        &["plan", "p-pinned", "-t", "2"],
        &["workload", "pi", "-t", "1", "--size", "1e4"],
        &["latency", "--latency", s(&m1)],
        &["run", "os", "--report", "--", "true"],
        &["run", "compact", "--follow", "--", "true"],
    ] {
        ok(args);
    }
}

#[test]
fn report_json_on_stdout_is_the_json_file_it_writes() {
    let o = pinsight(&[
        "--json",
        "--fsroot",
        s(&hybrid()),
        "report",
        "--export-html",
        "box.html",
        "--export-json",
        "box.json",
    ])
    .writes("box.html")
    .writes("box.json")
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(o.path("box.json")).unwrap()).unwrap();
    assert_eq!(o.json(), file);
    check_topo_contract(&file["topology"], "report topology");
    let html = std::fs::read_to_string(o.path("box.html")).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html") || html.starts_with("<!doctype html"),
        "{}",
        &html[..80.min(html.len())]
    );
}

// ---------------------------------------------------------------- topo's tree reads like lstopo's

/// `(L#, P#)` of every `PU L#n (P#m` in a console tree.
fn pu_pairs(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for part in text.split("PU L#").skip(1) {
        let (l, rest) = part.split_once(" (P#").expect("PU L#n (P#m");
        let p: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        out.push((l.parse().unwrap(), p.parse().unwrap()));
    }
    out
}

/// `L#` is hwloc's logical index: the rank in tree order. So printed PUs
/// and cores count 0, 1, 2, ... down the page, even when the OS numbers
/// CPUs across packages (even CPUs on socket 0), and each PU gets the
/// `L#` lstopo gives it in hwloc's recorded output (`NAME.console`).
#[test]
fn topo_numbers_pus_and_cores_in_tree_order_like_lstopo() {
    for f in hwloc_fixtures() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let ours = ok(&["-q", "--fsroot", s(&f), "topo"]).stdout;
        let pus = pu_pairs(&ours);
        let logical: Vec<usize> = pus.iter().map(|p| p.0).collect();
        assert_eq!(
            logical,
            (0..pus.len()).collect::<Vec<_>>(),
            "{name}: PU L# not in tree order:\n{ours}"
        );
        let cores: Vec<usize> = ours
            .split("Core L#")
            .skip(1)
            .map(|r| {
                r.chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect::<String>()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            cores,
            (0..cores.len()).collect::<Vec<_>>(),
            "{name}: Core L# not in tree order:\n{ours}"
        );

        let Ok(console) = std::fs::read_to_string(f.with_extension("console")) else {
            continue;
        };
        let theirs = pu_pairs(&console);
        let set = |v: &[(usize, usize)]| v.iter().map(|p| p.1).collect::<BTreeSet<_>>();
        // hwloc hides CPUs outside the cgroup (we show them), and makes
        // sub-NUMA-cluster Groups inside a package (we do not): different trees.
        if set(&pus) != set(&theirs) || name == "memorysidecaches" {
            continue;
        }
        assert_eq!(pus, theirs, "{name}: PU numbering differs from lstopo's");
    }
}

/// The command lines of the processes whose command line holds `marker`.
fn running_with(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker))
        .collect()
}

/// Ctrl-C / SIGTERM sent to `pinsight run` reach the program; pinsight
/// exits 128+N and leaves no program behind.
#[test]
fn run_passes_interrupts_on_and_leaves_no_program_running() {
    for (policy, signal, want) in [
        ("os", "INT", 130),
        ("cpus:0", "TERM", 143),
        ("compact", "INT", 130),
    ] {
        let marker = format!("7.{}{}", std::process::id(), want); // a sleep nobody else runs
        let cwd = tempfile::tempdir().unwrap();
        let mut child = crate::common_cmd::pinsight_in(cwd.path())
            .args(["run", policy, "--", "sleep", &marker])
            .spawn()
            .unwrap();
        // Waited for, not timed: the program started (pinsight's handlers
        // are in place before it starts). On a busy host a signal sent
        // sooner kills pinsight by the default action.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // (pinsight's own command line holds the marker too.)
        let program = || {
            running_with(&marker)
                .iter()
                .any(|c| c.starts_with("sleep "))
        };
        while !program() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(program(), "run {policy}: the program never started");
        let started = std::time::Instant::now();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(want), "run {policy}: SIG{signal}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "run {policy}: slow to stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
        let left = running_with(&marker);
        assert!(
            left.is_empty(),
            "run {policy}: program still running after SIG{signal}: {left:?}"
        );
        assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);
    }
}
