//! `pinsight generate`: the manual pages render under `man` and `groff`
//! without a warning and document every command and flag `--help` shows;
//! the bash completion script loads and completes commands and flags.

use crate::common_cli::*;
use std::process::Command;

/// The long flags a command's `--help` lists (`--name`), `--help` and
/// `--version` aside.
fn help_flags(command: &str) -> Vec<String> {
    let help = ok(&[command, "--help"]).stdout;
    let mut out: Vec<String> = help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            l.split([' ', ',', '=', '<', '['])
                .find(|w| w.starts_with("--"))
        })
        .map(str::to_owned)
        .filter(|f| f != "--help" && f != "--version")
        .collect();
    out.dedup();
    out
}

/// A page's text as `man` shows it at 80 columns, and what it warned.
fn man_page(path: &std::path::Path) -> (String, String) {
    let o = Command::new("man")
        .args(["--warnings", "-E", "UTF-8", "-l"])
        .arg(path)
        .env("MANWIDTH", "80")
        // Plain text: man-db keeps bold overstrikes when the variable is set at all.
        .env_remove("MAN_KEEP_FORMATTING")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("man (Debian man-db, installed by .ci/deps)");
    assert!(o.status.success(), "man -l {}: {o:?}", path.display());
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_command_has_a_manual_page_that_renders_without_warnings() {
    let o = pinsight(&["--json", "generate", "man", "man1"])
        .writes("man1")
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let files: Vec<String> = serde_json::from_value(o.json()).unwrap();
    let mut commands = listed_commands();
    assert!(commands.len() > 20, "{commands:?}");
    commands.push(String::new());
    for c in &commands {
        let stem = if c.is_empty() {
            "pinsight".to_owned()
        } else {
            format!("pinsight-{c}")
        };
        let listed = format!("man1/{stem}.1");
        assert!(files.contains(&listed), "{listed}: {files:?}");
        let path = o.path(&listed);
        let (text, warnings) = man_page(&path);
        assert!(
            warnings.trim().is_empty(),
            "man -l {stem}.1 warned:\n{warnings}"
        );
        let groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&path)
            .output()
            .expect("groff (Debian groff-base, installed by .ci/deps)");
        let warned = String::from_utf8_lossy(&groff.stderr);
        assert!(
            groff.status.success() && warned.is_empty(),
            "groff {stem}.1:\n{warned}"
        );
        assert!(
            text.contains(&stem),
            "{stem}.1 does not name itself:\n{text}"
        );
        if c.is_empty() {
            continue;
        }
        // Every flag --help shows is documented (hyphens may be printed
        // as U+2010 where man breaks a line).
        let flat = text.replace('\u{2010}', "-").replace("-\n", "-");
        for flag in help_flags(c) {
            assert!(flat.contains(&flag), "{stem}.1 lacks {flag}");
        }
    }
}

#[test]
fn the_bash_completion_loads_and_completes_commands_and_flags() {
    let o = ok(&["generate", "completions", "bash"]);
    let script = o.cwd.path().join("pinsight.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let complete =
        |line: &str| -> String {
            let words: Vec<&str> = line.split(' ').collect();
            let probe =
                format!(
            "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; \
             _pinsight pinsight '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            words.len() - 1,
            line.len(),
            words[words.len() - 1],
            words[words.len().saturating_sub(2)],
        );
            let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
            assert!(out.status.success(), "{probe}: {out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
    let commands = complete("pinsight pl");
    assert_eq!(commands.trim(), "plan", "{commands}");
    let flags = complete("pinsight compare --pol");
    assert!(flags.lines().any(|l| l == "--policies"), "{flags}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = ok(&["generate", "completions", shell]);
        assert!(
            o.stdout.contains("pinsight") && o.stdout.len() > 1000,
            "{shell}"
        );
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let o = pinsight(&["generate", "completions", "nosh"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.first_err_line().contains("'nosh'"), "{}", o.stderr);
    let o = pinsight(&["generate", "man", "/proc/pinsight-no-such-dir"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(o.says("/proc/pinsight-no-such-dir"), "{}", o.stderr);
}
