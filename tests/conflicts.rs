//! Flags that do not go together are refused by the parser, declared to
//! clap (`conflicts_with`, `requires`, argument groups): exit 2 and one
//! line naming both flags (or the input missing), whatever the order,
//! whether a global flag comes before or after the command name, and in
//! the old hidden spellings too. Where the refusal depends on a value (a
//! policy, a format, a resumed journal) the code refuses with the one
//! wording of `errors::conflict`, which names both as well.

use crate::common_cli::*;

/// Asserts a one-line usage error (exit 2) whose line holds every needle.
fn refused(args: &[&str], needles: &[&str]) {
    let o = pinsight(args).run();
    assert_eq!(o.code, 2, "{}: exit {}\n{}", o.argv, o.code, o.stderr);
    assert!(o.stdout.is_empty(), "{}: {}", o.argv, o.stdout);
    let lines: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| !l.starts_with("pinsight: note: "))
        .collect();
    assert_eq!(lines.len(), 1, "{}: not one line:\n{}", o.argv, o.stderr);
    for n in needles {
        assert!(lines[0].contains(n), "{}: {} lacks {n}", o.argv, lines[0]);
    }
}

/// A clap conflict: `error: the argument 'A' cannot be used with 'B'`,
/// naming both (A and B in either order).
fn conflict(args: &[&str], a: &str, b: &str) {
    refused(
        args,
        &["error: the argument '", "cannot be used with", a, b],
    );
}

/// `base`, then each of `flags` (a flag and its values), then `tail`:
/// every one a conflict between `with` and that flag.
fn conflicts_each(base: &[&str], flags: &[&[&str]], tail: &[&str], with: &str) {
    for flag in flags {
        conflict(&[base, flag, tail].concat(), with, flag[0]);
    }
}

/// Each command line (its words) a conflict between its two flags.
fn conflicts(cases: &[(&str, &str, &str)]) {
    for (line, a, b) in cases {
        conflict(&line.split_whitespace().collect::<Vec<_>>(), a, b);
    }
}

fn xml() -> String {
    xml_fixture("2arm-2c.hwloc29.xml").display().to_string()
}

#[test]
fn a_declared_machine_conflicts_with_every_other_machine_source() {
    let x = xml();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for cmd in [
        &["tune", "--from", "runs.csv"][..],
        &["model", "--params", "f=0.9"][..],
    ] {
        for (flag, value) in [
            ("--fsroot", d),
            ("--hwloc-xml", x.as_str()),
            ("--kinds", "0:P,1:E"),
        ] {
            // After the command name, and before it (a global flag).
            let mut after: Vec<&str> = cmd.to_vec();
            after.extend(["--machine", "6P+8E", flag, value]);
            conflict(&after, "--machine", flag);
            let mut before: Vec<&str> = vec![flag, value];
            before.extend(cmd);
            before.extend(["--machine", "6P+8E"]);
            conflict(&before, "--machine", flag);
        }
    }
}

#[test]
fn tune_takes_one_of_from_resume_and_a_program() {
    conflicts(&[
        ("tune --from r.csv -- ls", "--from", "[COMMAND]"),
        ("tune --resume j -- ls", "--resume", "[COMMAND]"),
        ("tune --from r.csv --resume j", "--from", "--resume"),
    ]);
    conflicts_each(
        &["tune", "--resume", "j"],
        &[
            &["--runs", "3"],
            &["--warmup", "1"],
            &["--seed", "1"],
            &["--pinned"],
        ],
        &[],
        "--resume",
    );
    conflicts_each(
        &["tune", "--from", "r.csv"],
        &[
            &["--runs", "3"],
            &["--warmup", "1"],
            &["--budget", "1s"],
            &["--validate", "1"],
        ],
        &[],
        "--from",
    );
    conflicts(&[
        ("tune --from r.csv --journal j", "--from", "--journal"),
        ("tune --journal j --resume j", "--journal", "--resume"),
    ]);
    refused(
        &["tune"],
        &[
            "required arguments were not provided",
            "--from",
            "--resume",
            "COMMAND",
        ],
    );
    refused(
        &["tune", "--machine", "6P+8E", "--pinned"],
        &["required arguments were not provided", "--from"],
    );
    // Not silently ignored where --from cannot come.
    conflicts(&[
        ("tune --machine 6P+8E --resume j", "--machine", "--resume"),
        ("tune --machine 6P+8E -- ls", "--machine", "[COMMAND]"),
    ]);
}

#[test]
fn model_takes_from_or_params() {
    conflicts(&[("model --from r.csv --params f=0.9", "--from", "--params")]);
    refused(&["model"], &["required arguments", "--from", "--params"]);
}

#[test]
fn sched_and_sf_take_running_processes_or_a_program() {
    conflicts(&[("sched --schedulers os --pids 1 -- true", "--pids", "[CMD]")]);
    refused(
        &["sched", "--schedulers", "os"],
        &["required arguments", "--pids", "CMD"],
    );
    conflicts(&[
        ("sf --pids 1 -- true", "--pids", "[CMD]"),
        // The old spelling, a hidden alias, is the same flag.
        ("sf --pid 1 -- true", "--pids", "[CMD]"),
        ("sf --from-compare j --pids 1", "--from-compare", "--pids"),
        ("sf --from-compare j -- true", "--from-compare", "[CMD]"),
    ]);
    refused(
        &["sf"],
        &["required arguments were not provided: <--pids <LIST>|CMD|--from-compare <JOURNAL>>"],
    );
}

#[test]
fn launcher_conflicts_with_every_placement_flag() {
    conflicts_each(
        &[
            "compare",
            "--launcher",
            "mpirun -np 2",
            "--slice",
            "p-pinned",
        ],
        &[
            &["--policies", "os"],
            &["--threads", "2"],
            &["--governors", "performance"],
            &["--oversubscribe"],
            &["--latency", "l.csv"],
            &["--weights", "w.json"],
            &["--mem", "local"],
            &["--near", "eth0"],
        ],
        &["--", "true"],
        "--launcher",
    );
    refused(
        &["compare", "--launcher", "mpirun -np 2", "--", "true"],
        &["required arguments", "--slice"],
    );
    for flag in [
        &["--slice", "p-pinned"][..],
        &["--slice-rules", "p-only"],
        &["--slice-rule", "p-only"],
    ] {
        let mut args = vec!["compare"];
        args.extend(flag);
        args.extend(["--", "true"]);
        refused(&args, &["required arguments", "--launcher", "--resume"]);
    }
    conflicts(&[("compare --journal j --resume j", "--journal", "--resume")]);
}

#[test]
fn other_declared_pairs() {
    let x = xml();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    conflict(
        &["--fsroot", d, "--hwloc-xml", &x, "topo"],
        "--fsroot",
        "--hwloc-xml",
    );
    conflicts(&[("topo --watch --explain", "--explain", "--watch")]);
    refused(
        &["topo", "--count", "3"],
        &["required arguments", "--watch"],
    );
    refused(
        &["topo", "--duration", "1s"],
        &["required arguments", "--watch"],
    );
    refused(
        &["topo", "--count", "3", "--explain"],
        &["required arguments", "--watch"],
    );
    refused(
        &["latency", "--benchmark", "2", "--sequential"],
        &["required arguments", "--latency"],
    );
    refused(
        &[
            "compare",
            "--journal",
            "j",
            "--slice",
            "p-pinned",
            "--",
            "true",
        ],
        &["required arguments", "--launcher", "--resume"],
    );
    refused(&["slice", "--all"], &["required arguments", "--local-size"]);
    refused(
        &["slice", "--format", "slurm"],
        &["required arguments", "--all"],
    );
    conflicts(&[("mix --journal j --resume j", "--journal", "--resume")]);
    // `--from-csv`, the old spelling, is an alias of --latency: the
    // refusal names --latency either way.
    for matrix in ["--latency", "--from-csv"] {
        conflicts_each(
            &["latency", matrix, "m.csv"],
            &[
                &["--method", "cas"],
                &["--sequential"],
                &["--target-ci", "2%"],
                &["--max-time-per-pair", "1s"],
                &["--runs", "2"],
                &["--budget", "1s"],
            ],
            &[],
            "--latency",
        );
    }
    refused(
        &["latency", "--benchmark", "2"],
        &["required arguments were not provided: <--latency <FILE>>"],
    );
    conflicts(&[("workload --list --threads 2", "--list", "--threads")]);
}

/// A plain compare journal's header, or one of a compare across ranks.
fn journal(dir: &std::path::Path, ranks: bool) -> String {
    let extension = if ranks {
        r#","kind":"compare-ranks","extension":{"launcher":["true"],"slice":"p-pinned","rules":["equal-count"],"rank_options":[]}"#
    } else {
        ""
    };
    let line = format!(
        r#"{{"type":"header","schema":"pinsight-compare/1","pinsight_version":"0.1.0","created":"2025-01-31T12:00:00Z","command":["true"],"prepare":null,"policies":["os"],"governors":[],"threads":1,"oversubscribe":false,"runs":2,"warmup":0,"seed":42,"timeout_s":null,"arms":[{{"id":"os","policy":"os","governor":null,"plan":{{"policy":"os","threads":1,"process_mask":"0","places":[],"pinned":false}},"env":[],"notes":[]}}],"not_applicable":[],"machine":{{"hostname":null,"kernel":null,"model_name":null,"arch":null,"usable_cpus":"0","kinds":[],"capabilities":[]}}{extension}}}"#
    );
    let path = dir.join(if ranks { "ranks.jsonl" } else { "plain.jsonl" });
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path.display().to_string()
}

#[test]
fn conflicts_that_depend_on_a_value_name_both() {
    let x = xml();
    for (flag, value, policy) in [
        ("--weights", Some("w.json"), "os"),
        ("--pipeline", None, "os"),
        ("--latency", Some("l.csv"), "p-set"),
    ] {
        let mut args = vec!["--hwloc-xml", x.as_str(), "plan", policy, flag];
        args.extend(value);
        refused(
            &args,
            &[
                "pinsight: error: ",
                &format!("{flag} cannot be used with policy {policy}: it applies to"),
            ],
        );
    }
    refused(
        &[
            "--json",
            "--hwloc-xml",
            &x,
            "plan",
            "os",
            "--format",
            "cpulist",
        ],
        &["pinsight: error: --json cannot be used with --format"],
    );
    let dir = tempfile::tempdir().unwrap();
    let plain = journal(dir.path(), false);
    for flag in [&["--slice", "p-pinned"][..], &["--slice-rules", "p-only"]] {
        let mut args = vec!["compare", "--resume", plain.as_str()];
        args.extend(flag);
        refused(
            &args,
            &[&format!(
                "pinsight: error: {} cannot be used with --resume of a plain compare journal",
                flag[0]
            )],
        );
    }
    let ranks = journal(dir.path(), true);
    refused(
        &["compare", "--resume", &ranks, "--threads", "2"],
        &["pinsight: error: --threads cannot be used with --resume of a compare across ranks"],
    );
}
