//! Set-up the root tests share beyond `common_cli`: command lines written
//! as words, the pinsight child started as a terminal would start it (for
//! the tests that signal or watch it: compare_cli, compare_ranks,
//! journal_safety, sf_cli, tune_run), and the 80-column check of what it
//! prints.

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

/// Every line of `out` fits a terminal of 80 columns.
pub fn assert_fits_80(out: &str) {
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

/// A child's output as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// pinsight in `dir`, stdin closed, none of the machine, kinds, width or
/// test-only variables of the caller's environment, and SIGINT at its
/// default: programs, like a shell, leave an inherited SIG_IGN alone
/// (nohup, a background job of a non-interactive shell: how CI may start
/// the suite), and Ctrl-C is tested as a terminal would deliver it.
pub fn pinsight_in(dir: &Path) -> Command {
    use std::os::unix::process::CommandExt;
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
    // SAFETY: signal(2) is async-signal-safe; nothing else runs in the child.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    c
}
