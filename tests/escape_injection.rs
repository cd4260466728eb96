//! Terminal injection: text from outside (a process's name, a recording's
//! `/proc` text, a spec typed on the command line, the environment) never
//! reaches the terminal as control bytes. A process names itself
//! `ESC ]0;PWN BEL ESC [2J` (retitle the window, clear the screen) and
//! `load`, `balance`, `pin`, `run --report`, `sched` and `irq` run over it,
//! live and on a recording; then the error paths quote such text. No ESC
//! byte may appear on stdout or stderr; the names show escaped
//! (`\u{1b}]0;PWN\u{7}…`).

use crate::common_cli;

use common_cli::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The name: an OSC window title then "erase display".
const EVIL: &str = "\x1b]0;PWN\x07\x1b[2J";
/// The same as `printf` writes it (octal escapes).
const EVIL_PRINTF: &str = r"\033]0;PWN\007\033[2J";
/// How the views show it.
const SHOWN: &str = r"\u{1b}]0;PWN\u{7}";

/// A shell command that renames itself to [`EVIL`] (`printf` is the
/// shell's builtin, so `/proc/self` is the shell), then spins for at
/// most `secs` seconds.
fn renamed_spinner(secs: u32) -> String {
    format!(
        "printf '{EVIL_PRINTF}' > /proc/self/comm || exit 1; \
         end=$(( $(date +%s) + {secs} )); \
         while [ \"$(date +%s)\" -lt \"$end\" ]; do i=0; \
         while [ $i -lt 20000 ]; do i=$((i+1)); done; done"
    )
}

// The spinning process, killed when the test ends.
use pinsight_testkit::Children as Spinner;

/// Starts [`renamed_spinner`] and waits until its name is [`EVIL`].
fn spinner() -> Spinner {
    let child = Command::new("sh")
        .args(["-c", &renamed_spinner(60)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh starts");
    let s = Spinner(vec![child]);
    let comm = format!("/proc/{}/comm", s.0[0].id());
    let start = Instant::now();
    loop {
        let now = std::fs::read_to_string(&comm).unwrap_or_default();
        if now.trim_end_matches('\n') == EVIL {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the spinner never took its name: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// No ESC (nor any other control byte but a line break or a tab) in
/// either stream of `o`.
fn clean(o: &Out) {
    for (name, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        assert!(
            !text.contains('\x1b'),
            "{}: an ESC byte on {name}:\n{text:?}",
            o.argv
        );
        let bad = text
            .chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t');
        assert!(
            bad.is_none(),
            "{}: control character {bad:?} on {name}:\n{text:?}",
            o.argv
        );
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The first two CPUs this process may run on, for a `--kinds` of two
/// kinds (`sched` needs two).
fn two_cpus() -> Option<(usize, usize)> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let set = pinsight_cpuset::CpuSet::parse_list(online.trim()).ok()?;
    let mut it = set.iter();
    Some((it.next()?, it.next()?))
}

#[test]
fn a_process_named_with_escapes_reaches_no_terminal_live() {
    let evil = spinner();
    let pid = evil.0[0].id().to_string();

    // load: the spinner is the busiest thread of its CPU.
    let o = pinsight(&["load", "--once", "--interval", "500ms", "--top", "50"]).run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    clean(&o);
    assert!(o.stdout.contains(SHOWN), "{}", o.stdout);

    // balance: matched by its name, listed in the moves.
    let o = pinsight(&["balance", "--dry-run", "--match", "PWN"]).run();
    clean(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(r"\u{1b}]0;PWN"), "{}", o.stdout);

    // pin: its thread's row.
    let o = pinsight(&["pin", &pid, "cpus:0", "--dry-run"]).run();
    clean(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(r"\u{1b}]0;PWN"), "{}", o.stdout);

    // run --report: the program renames itself; the report (stderr) lists it.
    let o = pinsight(&[
        "run",
        "--report",
        "cpus:0",
        "--",
        "sh",
        "-c",
        &renamed_spinner(1),
    ])
    .run();
    clean(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains(r"\u{1b}]0;PWN"), "{}", o.stderr);

    // sched: a program of that name (a link to sh), on two declared kinds.
    match two_cpus() {
        Some((p, e)) => {
            let dir = tempfile::tempdir().unwrap();
            let program = dir.path().join(EVIL);
            let sh = String::from_utf8(
                Command::new("sh")
                    .args(["-c", "command -v sh"])
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap();
            std::os::unix::fs::symlink(sh.trim(), &program).unwrap();
            let kinds = format!("{p}:P,{e}:E");
            let o = pinsight(&[
                "--kinds",
                &kinds,
                "sched",
                "--policies",
                "os",
                "--",
                s(&program),
                "-c",
                &renamed_spinner(1),
            ])
            .run();
            clean(&o);
            assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
            assert!(
                o.stdout.contains(r"\u{1b}]0;PWN") || o.stderr.contains(r"\u{1b}]0;PWN"),
                "{}\n{}",
                o.stdout,
                o.stderr
            );
        }
        None => pinsight_testkit::skip("sched over an escaped name: fewer than two CPUs online"),
    }

    // irq lists this machine's IRQs (their names are outside text too).
    let o = pinsight(&["irq"]).run();
    clean(&o);
    drop(evil);
}

/// The hot-IRQ recording of `load_cli.rs` (hwloc's 20-CPU hybrid laptop,
/// two `/proc` readings) with a thread, an IRQ handler and a CPU's
/// counters holding escapes.
fn injected_recording() -> (tempfile::TempDir, tempfile::TempDir) {
    let data = repo().join("tests/data/load/hot-irq");
    let before = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(
        &hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t"),
        before.path(),
    );
    pinsight_testkit::copy_tree(&data.join("before"), before.path());
    let after = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(&data.join("after"), after.path());
    for root in [before.path(), after.path()] {
        let proc_ = root.join("proc");
        let edit = |rel: &str, from: &str, to: &str| {
            let p = proc_.join(rel);
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(text.contains(from), "{}: no {from:?}", p.display());
            std::fs::write(&p, text.replace(from, to)).unwrap();
        };
        edit("1000/task/1000/stat", "(stream)", &format!("({EVIL})"));
        edit("1000/comm", "stream", EVIL);
        edit("interrupts", "eth0-TxRx-0", "eth0\x1b[2J-TxRx-0");
    }
    // One CPU's counter of the second reading is garbage with an escape:
    // the warning quotes it.
    let stat = after.path().join("proc/stat");
    let text = std::fs::read_to_string(&stat).unwrap();
    let line = text.lines().find(|l| l.starts_with("cpu19 ")).unwrap();
    let mut words: Vec<&str> = line.split_whitespace().collect();
    words[1] = "12\x1b[2J";
    std::fs::write(&stat, text.replace(line, &words.join(" "))).unwrap();
    (before, after)
}

#[test]
fn a_recording_with_escapes_reaches_no_terminal() {
    let (m, after) = injected_recording();
    let load = ["--fsroot", s(m.path()), "load", "--after", s(after.path())];
    let o = pinsight(&load).run();
    clean(&o);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(SHOWN), "{}", o.stdout);
    assert!(o.stdout.contains(r"eth0\u{1b}[2J-TxRx-0"), "{}", o.stdout);
    assert!(o.says(r"pinsight: warning: CPU 19: "), "{}", o.stderr);
    assert!(o.says(r"'12\u{1b}[2J' (not a number)"), "{}", o.stderr);
    // JSON is escaped by its own rules: \u001b, never the raw byte.
    let mut j = load.to_vec();
    j.push("--json");
    let o = pinsight(&j).run();
    clean(&o);
    assert_eq!(o.json()["unavailable_cpus"][0]["cpu"], 19);
    for args in [
        vec!["--fsroot", s(m.path()), "irq", "--all"],
        vec!["--fsroot", s(m.path()), "irq", "--off", "3", "--dry-run"],
    ] {
        let o = pinsight(&args).run();
        clean(&o);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(o.stdout.contains(r"eth0\u{1b}[2J-TxRx-0"), "{}", o.stdout);
    }
    for args in [
        vec!["--fsroot", s(m.path()), "topo"],
        vec![
            "--fsroot",
            s(m.path()),
            "balance",
            "--dry-run",
            "--match",
            "PWN",
        ],
    ] {
        clean(&pinsight(&args).run());
    }
}

/// The error paths quote what was typed or read, escaped: a spec, a
/// path, a value, an environment variable.
#[test]
fn errors_quoting_outside_text_reach_no_terminal() {
    let bad_kinds = format!("0-3:{EVIL}");
    let bad_path = format!("/nonexistent/{EVIL}");
    // With whether the message quotes the value (clap drops the escape
    // sequences of a value it parses and refuses: a PID, a policy, a
    // command name).
    let cases: Vec<(Vec<&str>, bool)> = vec![
        (vec!["--kinds", EVIL, "topo"], true),
        (vec!["--kinds", &bad_kinds, "topo"], true),
        (vec!["--fsroot", &bad_path, "topo"], true),
        (vec!["load", "--stealers", EVIL], true),
        (vec!["load", "--interval", EVIL], true),
        (vec!["run", EVIL, "--", "true"], true),
        (vec!["pin", EVIL, "compact"], false),
        (vec!["sched", "--policies", EVIL, "--pids", "1"], false),
        (vec![EVIL], false),
        (vec!["irq", "--off", EVIL], true),
        (vec!["plan", EVIL], false),
    ];
    for (args, quotes) in &cases {
        let o = pinsight(args).run();
        clean(&o);
        assert_ne!(o.code, 0, "{}: {}", o.argv, o.stderr);
        if *quotes {
            assert!(o.stderr.contains(r"\u{1b}"), "{}: {}", o.argv, o.stderr);
        }
    }
    // The same through the environment.
    for (var, args) in [
        ("PINSIGHT_KINDS", vec!["topo"]),
        ("PINSIGHT_FSROOT", vec!["topo"]),
        ("PINSIGHT_EMULATION_STEALERS", vec!["load", "--once"]),
    ] {
        let o = pinsight(&args).env(var, EVIL).run();
        clean(&o);
        assert_ne!(o.code, 0, "{var}: {}", o.stderr);
    }
}
