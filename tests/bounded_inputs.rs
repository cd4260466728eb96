//! Bounded, non-blocking inputs, by construction: every file a user names
//! is opened through one reader (`pinsight_sys::fs::open_regular`) that
//! refuses what is not a regular file (a FIFO would block, `/dev/zero`
//! never ends) and a file over its cap (a sparse giant, by its size)
//! before a byte is read.
//!
//! The flags are not listed by hand: they are read from every command's
//! `--help`, which clap writes from the definitions, so a new flag whose
//! value is a file (`<FILE>`, `<JOURNAL>`, `<DIR>`, ...) is tested as soon
//! as it exists. Each gets `/dev/zero`, a FIFO with no writer and a 1 GiB
//! sparse file: exit 2 within 2 s, a message naming the file, and a peak
//! RSS (`ru_maxrss` of `wait4`) under 100 MB. The flags that name a file
//! pinsight WRITES are no inputs and are skipped by design: [`OUTPUTS`],
//! each with its reason (and each must still exist). A flag that needs
//! other arguments to reach its file gets them from [`CONTEXT`].
//!
//! A recorded machine (`--fsroot DIR`) whose `proc/cpuinfo` is a FIFO, or
//! a sparse 1 GiB file, is read without hanging or filling memory too.

use crate::common_cli;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The value names that say "a path" (clap's `value_name`), split on `|`
/// (`Y|FILE`, `DIR|TAR.GZ`).
const PATH_NAMES: &[&str] = &["FILE", "JOURNAL", "DIR", "TAR.GZ", "PATH", "OUT", "PREFIX"];

/// Flags (or `<POSITIONAL>`s) that name a file pinsight writes, not one it
/// reads: (command, flag, why). Every `--export-*` flag is one too.
const OUTPUTS: &[(&str, &str, &str)] = &[
    ("snapshot", "<OUT>", "the recording it writes"),
    (
        "run",
        "--report-dir",
        "the directory a rank's report is written into",
    ),
    (
        "compare",
        "--journal",
        "the new journal it creates (O_EXCL)",
    ),
    ("tune", "--journal", "the new journal it creates (O_EXCL)"),
    ("mix", "--journal", "the new journal it creates (O_EXCL)"),
    (
        "balance",
        "--state",
        "where the affinities before a change are saved",
    ),
    (
        "irq",
        "--state",
        "where the affinities before a move are saved",
    ),
];

/// What a flag needs around it to reach its file: (command, flag, words
/// before it, words after it). `{pid}` is a sleeping child's PID,
/// `{machine}` a recorded machine directory.
const CONTEXT: &[(&str, &str, &[&str], &[&str])] = &[
    ("plan", "--weights", &["balance"], &[]),
    ("plan", "--smt-yield", &["balance"], &[]),
    ("plan", "--latency", &["latency-group"], &[]),
    ("run", "--weights", &["balance"], &["--", "true"]),
    ("run", "--smt-yield", &["balance"], &["--", "true"]),
    ("run", "--latency", &["latency-group"], &["--", "true"]),
    ("pin", "--weights", &["{pid}", "balance"], &[]),
    ("pin", "--smt-yield", &["{pid}", "balance"], &[]),
    ("pin", "--latency", &["{pid}", "latency-group"], &[]),
    (
        "balance",
        "--weights",
        &["--pids", "{pid}", "--dry-run"],
        &[],
    ),
    ("balance", "--cgroup", &["--dry-run"], &[]),
    (
        "compare",
        "--latency",
        &["--policies", "latency-group"],
        &["--", "true"],
    ),
    (
        "compare",
        "--weights",
        &["--policies", "balance"],
        &["--", "true"],
    ),
    (
        "slice",
        "--weights",
        &["--local-rank", "0", "--local-size", "1"],
        &[],
    ),
    ("irq", "--restore", &["--dry-run"], &[]),
    ("load", "--after", &[], &[]),
];

/// Global flags and commands that need them before the command name:
/// (command, words before the command).
const BEFORE_COMMAND: &[(&str, &[&str])] = &[
    ("mix", &["-q", "--kinds", "0:P,1:E"]),
    ("load", &["--fsroot", "{machine}"]),
];

fn pinsight_help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_pinsight"))
        .args(args)
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .env("COLUMNS", "200")
        .output()
        .expect("pinsight runs");
    assert!(o.status.success(), "{args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The items of a `--help` whose value is a path: `--flag` for options,
/// `<NAME>` for positionals.
fn path_items(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if !(2..=6).contains(&indent) {
            continue;
        }
        let mut rest = line.trim_start();
        if rest.len() > 4 && rest.starts_with('-') && rest.as_bytes()[1] != b'-' {
            // "-r, --runs <N>"
            rest = rest.get(4..).unwrap_or("");
        }
        let (item, value) = if let Some(name) = rest.strip_prefix("--") {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            let after = rest[2 + name.len()..].trim_start_matches([' ', '=']);
            (format!("--{name}"), after)
        } else if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            (rest[..end].to_string(), rest)
        } else {
            continue;
        };
        let Some(value) = value.strip_prefix('<') else {
            continue;
        };
        let value = &value[..value.find('>').unwrap_or(value.len())];
        if value.split('|').any(|v| PATH_NAMES.contains(&v)) {
            out.push(item);
        }
    }
    out
}

/// Why `item` of `cmd` is an output, if it is one.
fn output_reason(cmd: &str, item: &str) -> Option<&'static str> {
    if item.starts_with("--export-") {
        return Some("an --export-* file, written");
    }
    OUTPUTS
        .iter()
        .find(|(c, f, _)| *c == cmd && *f == item)
        .map(|(_, _, why)| *why)
}

/// What one run did.
struct Ran {
    code: Option<i32>,
    elapsed: Duration,
    /// Peak resident set, KiB (`ru_maxrss`).
    max_rss_kib: i64,
    stderr: String,
}

/// Runs pinsight with `args` in a fresh directory, reaped with `wait4` for
/// its peak RSS; killed after 10 s (a hang).
fn run_measured(args: &[OsString]) -> Ran {
    let cwd = tempfile::tempdir().unwrap();
    // Reaped by wait4 below (for its rusage), not by Child::wait.
    #[allow(clippy::zombie_processes)]
    let mut child = Command::new(env!("CARGO_BIN_EXE_pinsight"))
        .args(args)
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .current_dir(cwd.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pinsight starts");
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child, filling status and usage.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            // SAFETY: as above, blocking now that it is killed.
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = start.elapsed();
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ran {
        code,
        elapsed,
        max_rss_kib: usage.ru_maxrss,
        stderr,
    }
}

/// The three inputs no flag may hang on or read whole.
struct Bad {
    _dir: tempfile::TempDir,
    inputs: Vec<(&'static str, PathBuf)>,
}

fn bad_inputs() -> Bad {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    Bad {
        inputs: vec![
            ("/dev/zero", PathBuf::from("/dev/zero")),
            ("a FIFO", fifo),
            ("a 1 GiB sparse file", sparse),
        ],
        _dir: dir,
    }
}

/// A recorded machine for the commands that read one beside the input.
fn machine() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(
        &common_cli::hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t"),
        d.path(),
    );
    pinsight_testkit::copy_tree(
        &common_cli::repo().join("tests/data/load/hot-irq/before"),
        d.path(),
    );
    d
}

/// Exit 2 within 2 s, a message naming the file, peak RSS under 100 MB.
fn check(what: &str, argv: &[OsString], path: &Path, failures: &mut Vec<String>) -> Ran {
    let ran = run_measured(argv);
    let shown: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let label = format!("{what}: pinsight {}", shown.join(" "));
    let first = ran
        .stderr
        .lines()
        .find(|l| l.contains("error"))
        .unwrap_or("");
    if ran.code != Some(2) {
        failures.push(format!("{label}: exit {:?}: {}", ran.code, ran.stderr));
    } else if ran.elapsed > Duration::from_secs(2) {
        failures.push(format!("{label}: took {:?}", ran.elapsed));
    } else if ran.max_rss_kib > 100 * 1024 {
        failures.push(format!("{label}: peak RSS {} KiB", ran.max_rss_kib));
    } else if !first.contains(path.to_str().unwrap()) {
        failures.push(format!(
            "{label}: the error does not name the file: {}",
            ran.stderr
        ));
    }
    ran
}

#[test]
fn every_file_flag_refuses_devices_fifos_and_sparse_giants() {
    let top = pinsight_help(&["--help"]);
    let globals: BTreeSet<String> = path_items(&top).into_iter().collect();
    assert!(
        globals.contains("--fsroot") && globals.contains("--hwloc-xml"),
        "{globals:?}"
    );
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let m = machine();
    let machine_dir = m.path().to_str().unwrap().to_string();
    let fill = |w: &str| -> OsString {
        w.replace("{pid}", &pid)
            .replace("{machine}", &machine_dir)
            .into()
    };
    // (command, item, argv without the path, where the path goes).
    let mut cases: Vec<(String, String, Vec<OsString>, usize)> = Vec::new();
    // The global inputs once, with a command that reads them.
    for g in &globals {
        cases.push(("topo".into(), g.clone(), vec![g.into(), "topo".into()], 1));
    }
    let mut skipped = Vec::new();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for cmd in crate::vocabulary::commands(&top) {
        let help = pinsight_help(&[&cmd, "--help"]);
        for item in path_items(&help) {
            if globals.contains(&item) {
                continue;
            }
            seen.insert((cmd.clone(), item.clone()));
            if let Some(why) = output_reason(&cmd, &item) {
                skipped.push(format!("{cmd} {item}: {why}"));
                continue;
            }
            let mut argv: Vec<OsString> = BEFORE_COMMAND
                .iter()
                .filter(|(c, _)| *c == cmd)
                .flat_map(|(_, w)| w.iter().map(|w| fill(w)))
                .collect();
            argv.push(cmd.clone().into());
            let (before, after) = CONTEXT
                .iter()
                .find(|(c, f, _, _)| *c == cmd && *f == item)
                .map_or((&[][..], &[][..]), |(_, _, b, a)| (*b, *a));
            argv.extend(before.iter().map(|w| fill(w)));
            if item.starts_with("--") {
                argv.push(item.clone().into());
            }
            let at = argv.len();
            argv.extend(after.iter().map(|w| fill(w)));
            cases.push((cmd.clone(), item, argv, at));
        }
    }
    // The skip list names flags that exist.
    for (c, f, _) in OUTPUTS {
        assert!(
            seen.contains(&(c.to_string(), f.to_string())),
            "OUTPUTS lists {c} {f}, which --help no longer shows"
        );
    }
    // What this test covers (not a guess: read from --help).
    for must in [
        ("compare", "--resume"),
        ("tune", "--resume"),
        ("tune", "--from"),
        ("mix", "--resume"),
        ("irq", "--restore"),
        ("latency", "--latency"),
        ("gather", "<DIR>"),
    ] {
        assert!(
            cases.iter().any(|(c, i, _, _)| c == must.0 && i == must.1),
            "{must:?} not found in --help"
        );
    }
    let bad = bad_inputs();
    let mut failures = Vec::new();
    let mut figures = Vec::new();
    for (cmd, item, argv, at) in &cases {
        for (what, path) in &bad.inputs {
            let mut a = argv.clone();
            a.insert(*at, path.into());
            let ran = check(
                &format!("{cmd} {item} with {what}"),
                &a,
                path,
                &mut failures,
            );
            figures.push((ran.elapsed, ran.max_rss_kib, format!("{cmd} {item} {what}")));
        }
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let slowest = figures.iter().max_by_key(|f| f.0).unwrap();
    let largest = figures.iter().max_by_key(|f| f.1).unwrap();
    eprintln!(
        "bounded inputs: {} runs ({} flags x 3); slowest {:?} ({}); largest peak RSS {} KiB ({}); skipped as outputs: {}",
        figures.len(),
        cases.len(),
        slowest.0,
        slowest.2,
        largest.1,
        largest.2,
        skipped.join("; ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A recorded machine whose `proc/cpuinfo` is a FIFO with no writer, or a
/// sparse 1 GiB file: read without hanging, without filling memory.
#[test]
fn a_recorded_machine_with_a_fifo_or_a_sparse_giant_does_not_hang() {
    for kind in ["fifo", "sparse"] {
        let m = machine();
        let cpuinfo = m.path().join("proc/cpuinfo");
        let _ = std::fs::remove_file(&cpuinfo);
        if kind == "fifo" {
            let c = std::ffi::CString::new(cpuinfo.to_str().unwrap()).unwrap();
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        } else {
            std::fs::File::create(&cpuinfo)
                .unwrap()
                .set_len(1 << 30)
                .unwrap();
        }
        let ran = run_measured(&["--fsroot".into(), m.path().into(), "topo".into()]);
        assert!(ran.code.is_some(), "{kind}: killed after 10 s: a hang");
        assert!(
            ran.elapsed < Duration::from_secs(2),
            "{kind}: {:?}",
            ran.elapsed
        );
        assert!(
            ran.max_rss_kib < 100 * 1024,
            "{kind}: peak RSS {} KiB",
            ran.max_rss_kib
        );
        assert!(!ran.stderr.contains("panicked"), "{kind}: {}", ran.stderr);
    }
}
