//! Set-up the root tests share beyond `common_cli`: command lines written
//! as words, the pinsight child started as a terminal would start it (for
//! the tests that signal or watch it: compare_cli, compare_ranks,
//! journal_safety, sf_cli, tune_run), the 80-column check of what it
//! prints, and what a refusal owes its caller (exit status, nothing on
//! stdout, the message's lines and words).

use std::path::Path;
use std::process::{Command, Stdio};

/// A command line without quoting: its words split at whitespace.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `--fsroot root` (a path kept whole: it may hold spaces), then `line`'s
/// words.
pub fn on_fsroot<'a>(root: &'a str, line: &'a str) -> Vec<&'a str> {
    let mut args = vec!["--fsroot", root];
    args.extend(words(line));
    args
}

/// `line`'s words, then `sh -c script`: a shell script as the program.
pub fn with_sh<'a>(line: &'a str, script: &'a str) -> Vec<&'a str> {
    let mut args = words(line);
    args.extend(["sh", "-c", script]);
    args
}

/// A fresh directory holding `files`, each a (name, content).
pub fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    dir
}

/// Every line of `out` fits a terminal of 80 columns.
pub fn assert_fits_80(out: &str) {
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

/// A child's output as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// pinsight in `dir`, stdin closed, none of the machine, kinds, width or
/// test-only variables of the caller's environment, and the signals a test
/// delivers at their default ([`crate::common_signals::at_default`]).
pub fn pinsight_in(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    c.current_dir(dir).stdin(Stdio::null());
    for var in [
        "PINSIGHT_FSROOT",
        "PINSIGHT_KINDS",
        "PINSIGHT_TEST_TUNE_SIM",
        "PINSIGHT_TEST_MEASURE_ROOT",
        "COLUMNS",
    ] {
        c.env_remove(var);
    }
    crate::common_signals::at_default(&mut c);
    c
}

/// `o` exited with `code`, and its stderr holds each of `needles`
/// (panics with the command line and stderr otherwise).
pub fn assert_exit(o: &crate::common_cli::Out, code: i32, needles: &[&str]) {
    assert_eq!(o.code, code, "{}: exit {}\n{}", o.argv, o.code, o.stderr);
    assert_holds(o, &o.stderr, needles);
}

/// `o` exited with `code`, and its stderr, read as prose
/// ([`Out::says`](crate::common_cli::Out::says): a wrapped line reads as
/// one), says each of `phrases`.
pub fn assert_says(o: &crate::common_cli::Out, code: i32, phrases: &[&str]) {
    assert_eq!(o.code, code, "{}: exit {}\n{}", o.argv, o.code, o.stderr);
    for p in phrases {
        assert!(
            o.says(p),
            "{}: stderr does not say {p:?}:\n{}",
            o.argv,
            o.stderr
        );
    }
}

/// A refusal as pinsight writes its own: exit `code`, nothing on stdout,
/// and one stderr line holding each of `needles`.
pub fn assert_one_line(o: &crate::common_cli::Out, code: i32, needles: &[&str]) {
    assert_exit(o, code, needles);
    assert!(o.stdout.is_empty(), "{}: stdout: {}", o.argv, o.stdout);
    assert_eq!(
        o.stderr.lines().count(),
        1,
        "{}: not one line:\n{}",
        o.argv,
        o.stderr
    );
}

/// A usage error: exit 2, nothing on stdout, and the first stderr line an
/// error message, clap's (`error: `, which a hint may follow) or
/// pinsight's own (`pinsight: error: `, exactly one line). Returns that
/// first line.
pub fn assert_usage_error(o: &crate::common_cli::Out) -> &str {
    assert_eq!(o.code, 2, "{}: exit {}\n{}", o.argv, o.code, o.stderr);
    assert!(o.stdout.is_empty(), "{}: stdout: {}", o.argv, o.stdout);
    let first = o.first_err_line();
    if first.starts_with("pinsight: error: ") {
        assert_eq!(
            o.stderr.lines().count(),
            1,
            "{}: not one line:\n{}",
            o.argv,
            o.stderr
        );
    } else {
        assert!(
            first.starts_with("error: "),
            "{}: the first stderr line is not an error message:\n{}",
            o.argv,
            o.stderr
        );
    }
    first
}

/// `text` holds each of `needles` (panics with the text otherwise).
pub fn assert_has(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "{n:?} is not in:\n{text}");
    }
}

/// `text`, of what `o` wrote, holds each of `needles`.
pub fn assert_holds(o: &crate::common_cli::Out, text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "{}: {n:?} is not in:\n{text}", o.argv);
    }
}

/// `args` run, a usage error ([`assert_usage_error`]) whose first line
/// holds each of `needles`.
pub fn usage_error<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    needles: &[&str],
) -> crate::common_cli::Out {
    let o = crate::common_cli::pinsight(args).run();
    assert_holds(&o, assert_usage_error(&o), needles);
    o
}

/// The `key` string of each element of the JSON array `array` (panics
/// where it is no array or an element has no string `key`).
pub fn strs<'a>(array: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|e| {
            e[key]
                .as_str()
                .unwrap_or_else(|| panic!("no string {key:?} in {e}"))
        })
        .collect()
}

/// `pinsight COMMAND --help`, which must exit 0 and say each of
/// `phrases`; returns the help.
pub fn help_says(command: &str, phrases: &[&str]) -> String {
    let o = crate::common_cli::ok(&[command, "--help"]);
    assert_holds(&o, &o.stdout, phrases);
    o.stdout
}

/// A child's exit status is `code` and its stderr holds each of
/// `needles`; returns that stderr as text.
pub fn assert_status(o: &std::process::Output, code: i32, needles: &[&str]) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} is not in:\n{err}");
    }
    err
}
