//! `compare`'s refusals before anything runs, each one line in the
//! command line's words (the library's typed errors worded with their
//! flags in `src/cmd/compare.rs`), byte for byte, with its exit code:
//! 2 for input to change, 126/127 for a program that cannot start.

use crate::common_cli::*;
use crate::common_cmd::dir_with;

/// Runs `compare ARGS` and returns its exit code and its one stderr line.
fn refusal<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String) {
    let mut all: Vec<std::ffi::OsString> = vec!["compare".into()];
    all.extend(args.iter().map(|a| a.as_ref().to_os_string()));
    let o = pinsight(&all).run();
    assert!(o.stdout.is_empty(), "{}: {}", o.argv, o.stdout);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}: not one line:\n{}", o.argv, o.stderr);
    (o.code, lines[0].to_string())
}

/// A usage error (exit 2) saying exactly `message`.
fn usage(args: &[&str], message: &str) {
    assert_eq!(
        refusal(args),
        (2, format!("pinsight: error: {message}")),
        "{args:?}"
    );
}

#[test]
fn launcher_inputs_are_refused_naming_their_flag() {
    usage(
        &["--launcher", "srun 'x", "--slice", "os", "--", "true"],
        "--launcher 'srun '\\''x': unbalanced quotes or a trailing backslash",
    );
    usage(
        &["--launcher", "", "--slice", "os", "--", "true"],
        "--launcher '': give the launcher line, e.g. 'mpirun -np 4 --bind-to none'",
    );
    let slice = ["--launcher", "srun", "--slice"];
    usage(
        &[&slice[..], &["os", "--slice-rules", "fair", "--", "true"]].concat(),
        "--slice-rules fair: unknown slicing rule (expected equal-capacity, equal-count, p-only)",
    );
    usage(
        &[
            &slice[..],
            &[
                "os",
                "--slice-rules",
                "equal-count,equal-count",
                "--",
                "true",
            ],
        ]
        .concat(),
        "--slice-rules equal-count,equal-count: equal-count is given twice",
    );
    let (code, line) = refusal(&[&slice[..], &["nonsense", "--", "true"]].concat());
    assert_eq!(code, 2);
    assert!(
        line.starts_with("pinsight: error: --slice nonsense: invalid policy 'nonsense': "),
        "{line}"
    );
}

#[test]
fn a_launcher_or_program_that_cannot_start_exits_as_a_shell_would() {
    let missing = "pinsight-no-such-program-here";
    let (code, line) = refusal(&["--", missing]);
    assert_eq!(code, 127, "{line}");
    assert!(!line.contains("--launcher"), "{line}");
    assert!(line.contains(missing), "{line}");
    let (code, launcher) = refusal(&["--launcher", missing, "--slice", "os", "--", "true"]);
    assert_eq!(code, 127, "{launcher}");
    // The same words as the program's, after the flag's name.
    assert_eq!(
        launcher,
        line.replacen("pinsight: error: ", "pinsight: error: --launcher ", 1)
    );
}

#[test]
fn request_inputs_are_refused_naming_their_flag() {
    usage(
        &[],
        "no command to measure; usage: pinsight compare [OPTIONS] -- COMMAND [ARGS...] \
         (or --resume JOURNAL)",
    );
    usage(
        &[
            "--metric",
            "x=([0-9]+)",
            "--metric",
            "x=([0-9]+)",
            "--",
            "true",
        ],
        "--metric: 'x' is given twice (each metric needs its own name)",
    );
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"a\xffb");
    let (code, line) = refusal(&[std::ffi::OsStr::new("--"), "true".as_ref(), bad]);
    assert_eq!(code, 2);
    assert_eq!(
        line,
        "pinsight: error: COMMAND argument \"a\\xFFb\" is not valid UTF-8 (the journal stores text)"
    );
}

#[test]
fn output_files_are_checked_naming_their_flag() {
    let dir = dir_with(&[("j.jsonl", "")]);
    let journal = dir.path().join("j.jsonl");
    let j = journal.to_str().unwrap();
    usage(
        &["--journal", j, "--", "true"],
        &format!(
            "--journal {j}: already exists; continue it with --resume {j}, or choose another --journal"
        ),
    );
    let csv = dir.path().join("no-such-dir/r.csv");
    let csv = csv.to_str().unwrap();
    let (code, line) = refusal(&["--export-csv", csv, "--", "true"]);
    assert_eq!(code, 2);
    assert!(
        line.starts_with(&format!(
            "pinsight: error: --export-csv {csv}: cannot write it: "
        )),
        "{line}"
    );
    let html = dir.path().join("no-such-dir/r.html");
    let html = html.to_str().unwrap();
    let (_, line) = refusal(&["--export-json", j, "--export-html", html, "--", "true"]);
    assert!(
        line.starts_with(&format!(
            "pinsight: error: --export-html {html}: cannot write it: "
        )),
        "{line}"
    );
}

#[test]
fn a_failed_run_stops_naming_its_kept_output_and_the_resume_line() {
    fn args(journal: &str, show: bool) -> Vec<&str> {
        let mut a = vec!["compare", "-q", "--runs", "2", "--warmup", "0"];
        a.extend(["--policies", "os", "--journal", journal]);
        if show {
            a.push("--show-output");
        }
        a.extend(["--", "sh", "-c", "echo hi; exit 3"]);
        a
    }
    // Exit 1, the journal and the programs' output kept.
    let failed = |journal: &str, show: bool| {
        let out = format!("{journal}.out");
        let o = pinsight(&args(journal, show))
            .writes(journal)
            .writes(&out)
            .run();
        assert_eq!(o.code, 1, "{}", o.stderr);
        o
    };
    let o = failed("j.jsonl", false);
    assert_eq!(
        o.stderr,
        "pinsight: error: stopped: measured run 1 of os exited with code 3 \
         (its output: j.jsonl.out/arm-os-run-0.txt)\n\
         pinsight: 1 of 2 runs are in j.jsonl; continue with:\n  \
         pinsight compare --resume j.jsonl\n"
    );
    // Shown already: not named again, and the resume line keeps the flag.
    let o = failed("k.jsonl", true);
    assert!(
        o.stderr.ends_with(
            "hi\npinsight: error: stopped: measured run 1 of os exited with code 3\n\
             pinsight: 1 of 2 runs are in k.jsonl; continue with:\n  \
             pinsight compare --resume k.jsonl --show-output\n"
        ),
        "{}",
        o.stderr
    );
}
