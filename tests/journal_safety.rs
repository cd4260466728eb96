//! The journal and output guarantees end to end, for `compare`, `tune` and
//! `mix` alike: a live journal is locked (a second `--resume` is refused
//! naming the holder's pid, the journal untouched); a cut last line and a
//! newline-less last line are handled one way; edited records (unknown
//! arm, duplicate slot, negative time) are refused naming the line; a link
//! planted at an output name is never followed; a full disk (a small
//! tmpfs, mounted as root) leaves no half-written export, report or
//! journal.

use crate::common_cli;
use crate::common_cmd::{on_fsroot, pinsight_in, text, words};

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Bound for what should end promptly: catches hangs, measures nothing.
const HANG_GUARD: Duration = Duration::from_secs(120);
const SIM: &str = "PINSIGHT_TEST_TUNE_SIM";
const STATIC: &str = "model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1";
const HYBRID: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";

fn pinsight(dir: &Path) -> Command {
    pinsight_in(dir)
}

/// pinsight started with `line`'s words, its output thrown away.
fn spawn_quiet(dir: &Path, line: &str) -> Child {
    pinsight(dir)
        .args(words(line))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = pinsight(dir);
    c.envs(env.iter().copied()).args(args);
    c.output().unwrap()
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// Holds an exclusive `flock` on `path`, as a live pinsight does.
fn hold_lock(path: &Path) -> File {
    let f = File::open(path).unwrap();
    // SAFETY: flock(2) on a descriptor this function owns.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    f
}

/// Every line is a whole JSON object and the file ends with a newline.
fn assert_whole_journal(path: &Path) -> Vec<serde_json::Value> {
    let t = std::fs::read_to_string(path).unwrap();
    assert!(
        t.ends_with('\n'),
        "{}: no final newline:\n{t}",
        path.display()
    );
    t.lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}: line {l:?}: {e}", path.display()))
        })
        .collect()
}

/// The journal's lines (without newlines).
fn lines(path: &Path) -> Vec<String> {
    let t = std::fs::read_to_string(path).unwrap();
    t.lines().map(String::from).collect()
}

/// The usable CPUs (affinity ∩ online).
fn usable_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap();
    let allowed = pinsight_cpuset::CpuSet::parse_list(allowed.trim()).unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| pinsight_cpuset::CpuSet::parse_list(t.trim()).ok())
        .unwrap_or_else(|| allowed.clone());
    allowed.intersection(&online).iter().collect()
}

/// An edit of a journal's lines, and what its refusal names.
/// Rewrites a journal's lines.
type Rewrite = Box<dyn Fn(&[String]) -> Vec<String>>;
type Edit = (Rewrite, &'static str);

/// The checks every kind of journal owes, given a journal `base` with
/// `keep` complete lines that a resume (`resume`: the command line after
/// `pinsight`) continues to the end. `edits` are (line to append or
/// replace, what the refusal names).
fn journal_contract(
    dir: &Path,
    cmd: &dyn Fn() -> Command,
    base: &Path,
    keep: usize,
    resume: &dyn Fn(&str) -> Vec<String>,
    edits: &[Edit],
) {
    let all = lines(base);
    assert!(
        all.len() > keep,
        "{} has {} lines",
        base.display(),
        all.len()
    );
    let head = all[..keep].join("\n");
    let args = |name: &str| resume(name);
    let run_resume = |name: &str| cmd().args(args(name)).output().unwrap();

    // 1. A live journal: refused naming the holder, untouched.
    let live = dir.join("live.jsonl");
    std::fs::write(&live, format!("{head}\n")).unwrap();
    let before = std::fs::read(&live).unwrap();
    let guard = hold_lock(&live);
    let o = run_resume("live.jsonl");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("in use by pid {}", std::process::id())),
        "{err}"
    );
    assert_eq!(std::fs::read(&live).unwrap(), before, "the journal changed");
    drop(guard);

    // 2. A newline-less complete last line and a cut one: one rule. The
    // resume completes the experiment and the journal is whole.
    let cut = &all[keep][..all[keep].len() / 2];
    for (name, body, warns) in [
        ("no-newline.jsonl", head.clone(), false),
        ("cut.jsonl", format!("{head}\n{cut}"), true),
    ] {
        std::fs::write(dir.join(name), &body).unwrap();
        let o = run_resume(name);
        ok(&o);
        let err = text(&o.stderr);
        assert_eq!(
            err.contains(&format!("line {}: cut short", keep + 1)),
            warns,
            "{name}: {err}"
        );
        let done = assert_whole_journal(&dir.join(name));
        assert!(done.len() > keep, "{name}: nothing appended");
        let text_after = std::fs::read_to_string(dir.join(name)).unwrap();
        assert!(text_after.starts_with(&format!("{head}\n")), "{name}");
    }

    // 3. Edited records: refused naming the line, the journal untouched.
    for (edit, why) in edits {
        let edited = edit(&all[..keep]);
        let line = edited.len();
        let name = "edited.jsonl";
        std::fs::write(dir.join(name), edited.join("\n") + "\n").unwrap();
        let before = std::fs::read(dir.join(name)).unwrap();
        let o = run_resume(name);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{why}: {err}");
        assert!(
            err.contains(&format!("{name} line {line}: ")) && err.contains(why),
            "{why}: {err}"
        );
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), before);
    }
}

/// Replaces the first `"key":VALUE` of a JSON line.
/// An edit setting `key` of the journal's last line to `value` (JSON).
fn set_last(key: &'static str, value: &'static str) -> Rewrite {
    Box::new(move |l: &[String]| {
        let mut l = l.to_vec();
        let last = l.len() - 1;
        l[last] = set(&l[last], key, value);
        l
    })
}

/// An edit writing the journal's last line twice.
fn repeat_last() -> Rewrite {
    Box::new(|l: &[String]| {
        let mut l = l.to_vec();
        l.push(l[l.len() - 1].clone());
        l
    })
}

fn set(line: &str, key: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    v[key] = serde_json::from_str(value).unwrap();
    v.to_string()
}

/// compare/tune run-line edits: unknown arm, a duplicate, negative time.
fn run_edits() -> Vec<Edit> {
    vec![
        (
            set_last("arm", "\"no-such-arm\""),
            "arm 'no-such-arm' is not in the experiment",
        ),
        (repeat_last(), "is recorded twice"),
        (set_last("wall_s", "-1.5"), "wall_s -1.5 is not a duration"),
    ]
}

#[test]
fn compare_journal_is_locked_cut_lines_one_rule_edits_refused() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[],
        &[
            "compare",
            "--journal",
            "c.jsonl",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--policies",
            "os",
            // Never disturbed, even on a loaded machine: a disturbed run's
            // slot may rightly appear twice, and the edits below repeat one.
            "--disturbance-threshold",
            "1",
            "--",
            "true",
        ],
    );
    ok(&o);
    journal_contract(
        d.path(),
        &|| pinsight(d.path()),
        &d.path().join("c.jsonl"),
        2,
        &|name| vec!["compare".into(), "--resume".into(), name.into()],
        &run_edits(),
    );
}

/// A real second pinsight, not a test's lock: `compare --resume` while a
/// compare writes the journal is refused naming that compare's pid.
#[test]
fn compare_resume_of_a_running_compare_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut first = spawn_quiet(
        d.path(),
        "compare --journal j.jsonl --runs 6 --warmup 0 --policies os -- sleep 0.5",
    );
    let j = d.path().join("j.jsonl");
    let t = Instant::now();
    while !std::fs::read_to_string(&j).is_ok_and(|t| t.ends_with('\n')) {
        assert!(t.elapsed() < HANG_GUARD, "no journal");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = run(d.path(), &[], &["compare", "--resume", "j.jsonl"]);
    let err = text(&o.stderr);
    let still_running = first.try_wait().unwrap().is_none();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        !still_running || err.contains(&format!("in use by pid {}", first.id())),
        "{err}"
    );
    assert!(first.wait().unwrap().success());
    let done = assert_whole_journal(&j);
    assert_eq!(done.len(), 1 + 6, "every run journaled once");
}

/// Journal syncs are batched (lifecycle's `SYNC_INTERVAL`), but every
/// record is written whole with one write(2) as its run ends: `kill -9`
/// mid-way loses no record already seen in the file, leaves a journal
/// that reads back, and `--resume` finishes it with every slot once.
#[test]
fn compare_killed_with_sigkill_mid_way_keeps_every_run_and_resumes() {
    let _serial = pinsight_testkit::serial();
    const RUNS: usize = 300;
    let d = tempfile::tempdir().unwrap();
    let runs = RUNS.to_string();
    let mut first = spawn_quiet(
        d.path(),
        &format!("compare --journal j.jsonl --runs {runs} --warmup 0 --policies os -q -- true"),
    );
    let j = d.path().join("j.jsonl");
    let t = Instant::now();
    let seen = loop {
        let n = std::fs::read_to_string(&j).map_or(0, |t| t.matches('\n').count());
        if n > 20 {
            break n;
        }
        assert!(t.elapsed() < HANG_GUARD, "no journal lines");
        assert!(first.try_wait().unwrap().is_none(), "compare ended first");
        std::thread::sleep(Duration::from_millis(2));
    };
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let kept = lines(&j);
    assert!(kept.len() >= seen, "{} lines kept, {seen} seen", kept.len());
    // Whole lines (a last line cut by the kill would be dropped by resume).
    for l in &kept[..seen] {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
    }
    assert!(
        kept.len() < 1 + RUNS,
        "the kill came too late to test anything"
    );
    let o = run(d.path(), &[], &["compare", "-q", "--resume", "j.jsonl"]);
    ok(&o);
    let done = assert_whole_journal(&j);
    assert_eq!(done.len(), 1 + RUNS, "every run journaled");
    let mut slots: Vec<u64> = done[1..]
        .iter()
        .map(|r| r["slot"].as_u64().unwrap())
        .collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), RUNS, "every slot once");
}

#[test]
fn tune_journal_is_locked_cut_lines_one_rule_edits_refused() {
    let d = tempfile::tempdir().unwrap();
    let root = common_cli::hwloc_fixture(HYBRID);
    let root = root.to_str().unwrap().to_string();
    let env = [(SIM, STATIC)];
    let o = run(
        d.path(),
        &env,
        &on_fsroot(&root, "tune --journal t.jsonl --json -- true"),
    );
    ok(&o);
    let base = d.path().join("t.jsonl");
    let keep = lines(&base).len() / 2;
    journal_contract(
        d.path(),
        &|| {
            let mut c = pinsight(d.path());
            c.envs(env);
            c
        },
        &base,
        keep,
        &|name| {
            ["--fsroot", &root, "tune", "--resume", name, "--json"]
                .map(String::from)
                .to_vec()
        },
        &run_edits(),
    );
}

/// pinsight restricted to two usable CPUs, the first declared P.
fn mix_cmd(dir: &Path) -> Option<Command> {
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip(format!("mix needs two usable CPUs (have {})", cpus.len()));
        return None;
    }
    let mut c = pinsight(dir);
    let set: pinsight_cpuset::CpuSet = cpus[..2].iter().copied().collect();
    pinsight_sys::affinity::set_affinity_before_exec(&mut c, &set).unwrap();
    let mut rest: pinsight_cpuset::CpuSet =
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| pinsight_cpuset::CpuSet::parse_list(t.trim()).ok())
            .unwrap_or_else(|| cpus.iter().copied().collect());
    rest.remove(cpus[0]);
    c.args(["--kinds", &format!("{}:P,{rest}:E", cpus[0])]);
    Some(c)
}

#[test]
fn mix_journal_is_locked_cut_lines_one_rule_edits_refused() {
    let d = tempfile::tempdir().unwrap();
    let Some(mut c) = mix_cmd(d.path()) else {
        return;
    };
    let o = c
        .args(words(
            "mix --journal m.jsonl --runs 1 --schedulers os,to --",
        ))
        .args(["sleep 0.2", "sleep 0.2"])
        .output()
        .unwrap();
    ok(&o);
    let base = d.path().join("m.jsonl");
    // The header and the four reference runs.
    journal_contract(
        d.path(),
        &|| mix_cmd(d.path()).unwrap(),
        &base,
        5,
        &|name| ["mix", "--resume", name].map(String::from).to_vec(),
        &[
            (
                set_last("program", "7"),
                "program 7 is not in the experiment",
            ),
            (repeat_last(), "is recorded twice"),
            (set_last("time_s", "-2"), "time_s -2 is not a duration"),
        ],
    );
}

/// A link planted at `at`, pointing to a file that must stay as it is.
fn plant(at: &Path) -> PathBuf {
    let target = at.with_extension("target");
    std::fs::write(&target, "precious").unwrap();
    std::os::unix::fs::symlink(&target, at).unwrap();
    target
}

fn assert_not_followed(link: &Path, target: &Path) {
    assert_eq!(
        std::fs::read_to_string(target).unwrap(),
        "precious",
        "{} was written through",
        link.display()
    );
}

#[test]
fn links_at_output_names_are_never_followed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // compare's explicit exports: each link replaced by the export.
    let names = ["e.json", "e.csv", "e.md", "e.html"];
    let targets: Vec<PathBuf> = names.iter().map(|n| plant(&dir.join(n))).collect();
    let o = run(
        dir,
        &[],
        &words("compare --journal c.jsonl --runs 2 --warmup 0 --policies os --export-json e.json --export-csv e.csv --export-markdown e.md --export-html e.html -- true"),
    );
    ok(&o);
    for (n, t) in names.iter().zip(&targets) {
        let p = dir.join(n);
        assert_not_followed(&p, t);
        assert!(
            p.symlink_metadata().unwrap().is_file(),
            "{n} is still a link"
        );
    }
    serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(dir.join("e.json")).unwrap(),
    )
    .unwrap();

    // report's default names in the current directory.
    let fixture = common_cli::hwloc_fixture(HYBRID);
    let html = dir.join("pinsight-report.html");
    let json = dir.join("pinsight-report.json");
    let (th, tj) = (plant(&html), plant(&json));
    let o = run(
        dir,
        &[],
        &on_fsroot(fixture.to_str().unwrap(), "report --no-speed --no-latency"),
    );
    ok(&o);
    assert_not_followed(&html, &th);
    assert_not_followed(&json, &tj);
    assert!(json.symlink_metadata().unwrap().is_file());

    // mix's default journal: a link there is refused, never followed, and a
    // dangling one never creates its target.
    let dangling = dir.join("nowhere");
    for target in [Some(plant(&dir.join("pinsight-mix.jsonl"))), None] {
        if target.is_none() {
            std::fs::remove_file(dir.join("pinsight-mix.jsonl")).unwrap();
            std::os::unix::fs::symlink(&dangling, dir.join("pinsight-mix.jsonl")).unwrap();
        }
        let Some(mut c) = mix_cmd(dir) else {
            return;
        };
        let o = c
            .args(["mix", "--runs", "1", "--schedulers", "os", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        if let Some(t) = target {
            assert_not_followed(&dir.join("pinsight-mix.jsonl"), &t);
        }
        assert!(!dangling.exists(), "the dangling link was followed");
    }

    // mix's explicit export.
    let t = plant(&dir.join("m.json"));
    let Some(mut c) = mix_cmd(dir) else {
        return;
    };
    let o = c
        .args(words(
            "mix --journal m.jsonl --runs 1 --schedulers os --export-json m.json --",
        ))
        .arg("sleep 0.2")
        .output()
        .unwrap();
    ok(&o);
    assert_not_followed(&dir.join("m.json"), &t);
}

/// A tmpfs of 256 KiB mounted on a fresh directory, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` (a counted skip) where mounting is not allowed.
    fn mount() -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
            .arg(dir.path())
            .output();
        match o {
            Ok(o) if o.status.success() => Some(SmallDisk { dir }),
            Ok(o) => {
                pinsight_testkit::skip(format!(
                    "cannot mount a small tmpfs (needs root): {}",
                    text(&o.stderr).trim()
                ));
                None
            }
            Err(e) => {
                pinsight_testkit::skip(format!("cannot run mount: {e}"));
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk, leaving about `free` bytes (whole pages).
    fn fill(&self, free: usize) {
        let filler = self.path().join("filler");
        let mut f = File::create(&filler).unwrap();
        let page = vec![7u8; 4096];
        use std::io::Write;
        while f.write_all(&page).is_ok() {}
        drop(f);
        let len = std::fs::metadata(&filler).unwrap().len();
        let keep = len.saturating_sub(free as u64) / 4096 * 4096;
        File::options()
            .write(true)
            .open(&filler)
            .unwrap()
            .set_len(keep)
            .unwrap();
    }

    /// Files other than the filler (no temporary file is left behind).
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "filler")
            .collect();
        v.sort();
        v
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_no_half_written_journal_export_or_report() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();

    // A journal that runs out of room part-way: every line in it is whole.
    disk.fill(8192);
    let journal = disk.path().join("j.jsonl");
    let o = run(
        d.path(),
        &[],
        &words(&format!(
            "compare --journal {} --runs 40 --warmup 0 --policies os -- true",
            journal.to_str().unwrap()
        )),
    );
    assert_ne!(o.status.code(), Some(0), "the disk never filled");
    assert!(
        text(&o.stderr).contains("No space left on device"),
        "{}",
        text(&o.stderr)
    );
    let kept = assert_whole_journal(&journal);
    assert!(kept.len() >= 2, "the runs before the disk filled are kept");
    // The journal and the runs' output kept beside it.
    assert_eq!(disk.files(), vec!["j.jsonl", "j.jsonl.out"]);
    std::fs::remove_file(&journal).unwrap();
    std::fs::remove_dir_all(disk.path().join("j.jsonl.out")).unwrap();

    // An export and a report that do not fit: the old export stays whole,
    // no report file appears, no temporary file is left.
    let export = disk.path().join("e.json");
    std::fs::write(&export, "old").unwrap();
    disk.fill(0);
    let o = run(
        d.path(),
        &[],
        &words(&format!(
            "compare --journal c.jsonl --runs 2 --warmup 0 --policies os --export-json {} -- true",
            export.to_str().unwrap()
        )),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&export).unwrap(), "old");
    assert_eq!(disk.files(), vec!["e.json"]);
    let fixture = common_cli::hwloc_fixture(HYBRID);
    let html = disk.path().join("r.html");
    let json = disk.path().join("r.json");
    let o = run(
        d.path(),
        &[],
        &on_fsroot(
            fixture.to_str().unwrap(),
            &format!(
                "report --no-speed --no-latency --export-html {} --export-json {}",
                html.to_str().unwrap(),
                json.to_str().unwrap()
            ),
        ),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert_eq!(disk.files(), vec!["e.json"]);

    // A journal whose header does not fit is not left behind.
    let Some(mut c) = mix_cmd(d.path()) else {
        return;
    };
    let mj = disk.path().join("m.jsonl");
    let o = c
        .args(words(&format!(
            "mix --journal {} --runs 1 --schedulers os",
            mj.to_str().unwrap()
        )))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(disk.files(), vec!["e.json"]);
}
