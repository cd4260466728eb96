//! Seed 004's operator on the emulated hybrid (`emulate --kinds
//! P:P,E:E@0.5`, the second usable CPU at half speed by a duty-cycle
//! stealer): always-busy processes, where busy time is 100% on every CPU
//! whatever the placement and only each task's progress shows the
//! imbalance. Each task is a C loop that counts its own rounds and
//! writes the count with its own clock every 20 ms: the truth pinsight's
//! progress figures are checked against.
//!
//! - three and three pinned: `load` reads a progress imbalance of about
//!   2.0 and each task's progress agrees with its own iteration rate
//!   within 10%; `balance` reports about 2.0 before, its plan 1.0, and
//!   about 1.0 after, which the tasks' own counts confirm;
//! - 24 started on the slowed CPU: `load` says they get a third of the
//!   capacity they could use; `balance` ends 16:8 with the tasks' own
//!   rates within 10% of each other;
//! - `balance --watch` places the 24, then 6 more started mid-run within
//!   two intervals, keeps the imbalance under its threshold, and after a
//!   `kill -9` leaves a state file `balance --restore` accepts.
//!
//! Premises, each a counted skip with the figures when it fails: root
//! (the stealer), a C compiler, two usable CPUs, the emulation held at its
//! speed (the stealer's own CPU time), and other work under 5% of either
//! CPU (the tasks and pinsight are this test's own).

use crate::common_emulation::{begin, require_premise, steady, steady_ratio, Emulation};
use crate::common_live::entry;
use crate::common_operator::{balance_command, ok_json, per_cpu, restore};
use pinsight_testkit::premise;
use serde_json::Value;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pinsight");

/// Always busy: counts rounds of a fixed loop and writes "COUNT MONOTONIC
/// CPUTIME" (its own CPU time) to argv[1] every 20 ms of wall time (when
/// it runs), through
/// a rename on tmpfs (a journaled file system can block the writer, and a
/// task that sleeps does not want a whole CPU). C, not python: python's
/// speed differs by 10-15% from one process to the next (hash seeds,
/// memory layout), which a count must not carry. argv[2] is the marker
/// `balance --match` selects.
const COUNTER_C: &str = r#"
#include <stdio.h>
#include <time.h>
int main(int argc, char **argv) {
    char tmp[4096];
    if (argc < 2) return 2;
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    unsigned long long n = 0;
    double last = 0;
    for (;;) {
        for (volatile int i = 0; i < 20000; i++) {}
        n++;
        struct timespec ts, cs;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = ts.tv_sec + ts.tv_nsec * 1e-9;
        if (t - last >= 0.02) {
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cs);
            double cpu = cs.tv_sec + cs.tv_nsec * 1e-9;
            FILE *f = fopen(tmp, "w");
            if (f) {
                fprintf(f, "%llu %.9f %.9f\n", n, t, cpu);
                fclose(f);
                rename(tmp, argv[1]);
            }
            last = t;
        }
    }
}
"#;

/// The counter built into `dir` (`$CC`, else cc); `None` (a counted skip)
/// without a C compiler.
fn counter(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("counter.c");
    let bin = dir.join("counter");
    std::fs::write(&src, COUNTER_C).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match Command::new(&cc)
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(bin),
        other => {
            pinsight_testkit::skip(format!(
                "no C compiler ({cc}: {other:?}) for the counting task (.ci/deps installs gcc)"
            ));
            None
        }
    }
}

/// A directory on tmpfs where there is one (/dev/shm), for the counts.
fn count_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap())
}

/// The counting tasks, writing their counts to a directory of their own
/// ([`count_dir`]); killed when dropped.
struct Counters {
    bin: PathBuf,
    counts: tempfile::TempDir,
    marker: String,
    children: Vec<Child>,
}

impl Counters {
    fn new(bin: &Path, marker: &str) -> Counters {
        Counters {
            bin: bin.to_path_buf(),
            counts: count_dir(),
            marker: marker.to_string(),
            children: Vec::new(),
        }
    }

    /// One more task, allowed `cpus` (taskset -c).
    fn add(&mut self, cpus: &str) {
        let i = self.children.len();
        let child = Command::new("taskset")
            .args(["-c", cpus])
            .arg(&self.bin)
            .arg(self.counts.path().join(format!("count-{i}")))
            .arg(&self.marker)
            .stdout(Stdio::null())
            .spawn()
            .expect("taskset starts");
        self.children.push(child);
    }

    /// Each task's (PID, count, its clock, its CPU time) now; a task that
    /// has not written yet reads (pid, 0, NaN, NaN).
    fn read(&self) -> Vec<Reading> {
        self.children
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let text = std::fs::read_to_string(self.counts.path().join(format!("count-{i}")))
                    .unwrap_or_default();
                let mut w = text.split_whitespace().map(|x| x.parse::<f64>().ok());
                let n = w.next().flatten().unwrap_or(0.0);
                let t = w.next().flatten().unwrap_or(f64::NAN);
                let cpu = w.next().flatten().unwrap_or(f64::NAN);
                (c.id(), n, t, cpu)
            })
            .collect()
    }

    /// A window of the tasks' own counts: a reading `settle` from now
    /// and another `span` after it.
    fn window(&self, settle: Duration, span: Duration) -> (Vec<Reading>, Vec<Reading>) {
        std::thread::sleep(settle);
        let start = self.read();
        std::thread::sleep(span);
        (start, self.read())
    }

    fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Each task's own iteration rate between two readings (PID → per s).
/// A task's reading: (PID, count, its clock, its CPU time).
type Reading = (u32, f64, f64, f64);

/// Each task's own rate between two readings: rounds per second of wall
/// time.
fn rates(a: &[Reading], b: &[Reading]) -> Vec<(u32, f64)> {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x.0, (y.1 - x.1) / (y.2 - x.2)))
        .collect()
}

/// Most the tasks' own rounds per CPU second may differ within a window:
/// beyond it the host ran the CPUs at different paces (see [`even_pace`]).
const PACE_EVEN: f64 = 1.08;

/// Whether the host ran every task's CPU at one pace between each pair of
/// readings: a task's rounds per second of its own CPU time is the pace
/// of the CPU it ran on (the emulation takes time, not speed, so P and E
/// alike run at the host's pace). A shared VM changes a CPU's pace for
/// seconds at a time, which no timing before and after the window sees;
/// the tasks' own counts would then differ by that, not by placement.
fn even_pace(windows: &[(&str, &[Reading], &[Reading])]) -> Result<String, String> {
    let mut figures = Vec::new();
    for (name, a, b) in windows {
        let paces: Vec<f64> = a
            .iter()
            .zip(*b)
            .map(|(x, y)| (y.1 - x.1) / (y.3 - x.3))
            .filter(|p| p.is_finite() && *p > 0.0)
            .collect();
        let s = spread(&paces);
        if paces.is_empty() || paces.len() < a.len() || s > PACE_EVEN {
            return Err(format!(
                "premise failed: the host ran the CPUs at different paces while the tasks \
                 counted ({name}: their own rounds per CPU second max/min {s:.3} over {} of {} \
                 tasks, tolerance {PACE_EVEN})",
                paces.len(),
                a.len()
            ));
        }
        figures.push(format!("{name} {s:.3}"));
    }
    Ok(format!(
        "the tasks' own rounds per CPU second max/min: {}",
        figures.join(", ")
    ))
}

/// Max/min of the tasks' own rates.
fn rate_spread(own: &[(u32, f64)]) -> f64 {
    spread(&own.iter().map(|r| r.1).collect::<Vec<_>>())
}

fn spread(v: &[f64]) -> f64 {
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    let min = v.iter().copied().fold(f64::MAX, f64::min);
    max / min
}

/// Most the own rates of the tasks sharing one CPU may differ within a
/// window: the kernel gives tasks pinned to one CPU equal shares of it,
/// and beyond this it did not (the placement is not what differs).
const SHARE_EVEN: f64 = 1.10;

/// Where the tasks are at the end of a window (their CPU lists), and
/// whether each CPU shared its time evenly among its own tasks: their own
/// rates within [`SHARE_EVEN`] of each other. A task whose CPU list is
/// gone (exited) counts nowhere.
fn even_shares(name: &str, own: &[(u32, f64)]) -> (Vec<(String, usize)>, Result<String, String>) {
    let mut by_cpu: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for &(pid, rate) in own {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        if let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            by_cpu.entry(list.trim().to_owned()).or_default().push(rate);
        }
    }
    let placed = by_cpu.iter().map(|(c, r)| (c.clone(), r.len())).collect();
    for (cpus, rates) in &by_cpu {
        let s = spread(rates);
        if s > SHARE_EVEN {
            return (
                placed,
                Err(format!(
                    "premise failed: the kernel shared CPU {cpus} unevenly among its {} tasks \
                     ({name}: their own rates max/min {s:.3}, tolerance {SHARE_EVEN})",
                    rates.len()
                )),
            );
        }
    }
    (placed, Ok(format!("{name}: each CPU shared evenly")))
}

/// The start of a test with counting tasks: [`begin`] (two CPUs, the
/// live premise and the emulation of the second at half speed), a
/// directory with the counter built in it, and the tasks (none started
/// yet), their marker `pinsight-progress-NAME-PID`; `None` after a
/// counted skip.
fn begin_counting(name: &str) -> Option<(premise::Live, Emulation, tempfile::TempDir, Counters)> {
    let (live, em) = begin(0.5)?;
    let d = tempfile::tempdir().unwrap();
    let bin = counter(d.path())?;
    let marker = format!("pinsight-progress-{name}-{}", std::process::id());
    Some((live, em, d, Counters::new(&bin, &marker)))
}

/// `pinsight --json load --once --interval 3s` under the emulation's
/// variables.
fn load(em: &Emulation) -> Value {
    ok_json(
        em.export(Command::new(BIN).args(["--json", "load", "--once", "--interval", "3s"])),
        "load",
    )
}

/// [`balance_command`] of the tasks on the emulated CPUs under the
/// emulation's variables.
fn balance(em: &Emulation, tasks: &Counters, interval: &str, state: &Path) -> Command {
    let mut c = balance_command(&tasks.marker, (em.p, em.e), interval, state);
    em.export(&mut c);
    c
}

/// The premises checked after the measured part: the emulation held its
/// speed and other work stayed under 5%; `Err` with the figures.
fn premises(live: &premise::Live, em: &Emulation) -> Result<String, String> {
    let held = em.held()?;
    let other = live.quiet(0.05)?;
    Ok(format!("{held}; {}", other.describe(live.cpus())))
}

/// `load`'s progress of our tasks (PID → progress).
fn load_progress(doc: &Value, pids: &[u32]) -> Vec<(u32, f64)> {
    pids.iter()
        .map(|pid| {
            let t = entry(&doc["tasks"], "pid", *pid)
                .unwrap_or_else(|| panic!("task {pid} not in load's tasks: {doc:#}"));
            (*pid, t["progress"].as_f64().unwrap())
        })
        .collect()
}

/// Three always-busy tasks on each CPU: load's progress imbalance about
/// 2.0, each task's progress within 10% of its own iteration rate
/// (relative to the tasks' mean); balance about 2.0 -> 1.0, its plan 1.0;
/// the tasks' own rates after within 15% of each other.
#[test]
fn load_and_balance_read_the_progress_each_task_counts_itself() {
    let Some((live, em, d, mut tasks)) = begin_counting("33") else {
        return;
    };
    // The tasks' own counts depend on the host's pace of each CPU, which
    // a shared VM changes for seconds at a time (pinsight's figures, CPU
    // time times capacity, do not see it): timed directly before and
    // after, a pace that moved is a counted skip.
    let pace_before = em.pace(d.path(), 2, "6e8");
    for i in 0..6 {
        tasks.add(&if i < 3 { em.p } else { em.e }.to_string());
    }
    std::thread::sleep(Duration::from_millis(1500));
    let a = tasks.read();
    let doc = load(&em);
    let b = tasks.read();
    let own = rates(&a, &b);
    let shown = load_progress(&doc, &tasks.pids());
    let state = d.path().join("state.json");
    let bal = ok_json(&mut balance(&em, &tasks, "3s", &state), "balance");
    let (c, c2) = tasks.window(Duration::from_millis(500), Duration::from_secs(3));
    let own_after = rates(&c, &c2);
    drop(tasks);
    let pace_after = em.pace(d.path(), 2, "6e8");
    let premise = premises(&live, &em)
        .and_then(|p| steady(pace_before, pace_after).map(|figures| format!("{p}; {figures}")))
        .and_then(|p| {
            even_pace(&[("load", &a, &b), ("after balance", &c, &c2)])
                .map(|figures| format!("{p}; {figures}"))
        });
    restore(&state);
    let ratio = doc["progress_imbalance"]["ratio"].as_f64();
    let before = bal["load_before"]["progress_imbalance"]["ratio"].as_f64();
    let after = bal["load_after"]["progress_imbalance"]["ratio"].as_f64();
    let plan = bal["expected"]["imbalance"].as_f64();
    let after_own = rate_spread(&own_after);
    eprintln!(
        "load: progress imbalance {ratio:?}; own rates {own:?}; load's progress {shown:?}; \
         balance {before:?} -> {after:?} (plan {plan:?}); own rates after: max/min \
         {after_own:.3}"
    );
    require_premise!(premise);
    let ratio = ratio.unwrap_or_else(|| panic!("no progress imbalance: {doc:#}"));
    assert!(
        (1.8..=2.2).contains(&ratio),
        "load's progress imbalance {ratio:.2}"
    );
    let mean = |v: &[(u32, f64)]| v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64;
    let (mo, ms) = (mean(&own), mean(&shown));
    for ((pid, r), (_, s)) in own.iter().zip(&shown) {
        let (ro, rs) = (r / mo, s / ms);
        assert!(
            (rs / ro - 1.0).abs() <= 0.10,
            "task {pid}: its own rate is {ro:.3} of the mean, load's progress {rs:.3}"
        );
    }
    let before = before.unwrap_or_else(|| panic!("{bal:#}"));
    let after = after.unwrap_or_else(|| panic!("{bal:#}"));
    assert!((1.8..=2.2).contains(&before), "balance before {before:.2}");
    assert!(after <= 1.15, "balance after {after:.2}");
    assert!(plan.is_some_and(|p| p <= 1.05), "plan {plan:?}");
    assert!(
        after_own <= 1.15,
        "the tasks' own rates after: max/min {after_own:.3}"
    );
}

/// The JSON lines a child prints, read by a thread of their own (a
/// quiet interval prints nothing, so a read must never block the test).
fn json_lines(out: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<Value> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if tx.send(v).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// Lines from `rx` until `want` accepts one or `within` passes; returns
/// every line read and whether one was accepted.
fn lines_until(
    rx: &std::sync::mpsc::Receiver<Value>,
    within: Duration,
    mut want: impl FnMut(&Value) -> bool,
) -> (Vec<Value>, bool) {
    let t = Instant::now();
    let mut seen = Vec::new();
    while let Some(left) = within.checked_sub(t.elapsed()) {
        let Ok(v) = rx.recv_timeout(left) else { break };
        let done = want(&v);
        seen.push(v);
        if done {
            return (seen, true);
        }
    }
    (seen, false)
}

/// The interval of the last of `lines` (0 without one).
fn last_interval(lines: &[Value]) -> u64 {
    lines
        .last()
        .and_then(|v| v["interval"].as_u64())
        .unwrap_or(0)
}

/// Seed 004 at scale: 24 always-busy tasks started on the slowed CPU.
/// `load` says they get about a third of the capacity they could use;
/// `balance` ends with 16 on P and 8 on E, and the tasks' own iteration
/// rates are within 10% of each other (of what the CPUs' real pace, timed
/// directly, allows). Then `balance --watch` from the
/// same start: it places the 24, and 6 more started mid-run (free to run
/// on both CPUs) within two intervals; its progress imbalance stays
/// under the threshold afterwards; a `kill -9` leaves a state file that
/// `balance --restore` accepts and that puts every task back.
#[test]
fn twenty_four_busy_tasks_are_spread_and_the_watch_keeps_them_even() {
    let Some((live, em, d, mut tasks)) = begin_counting("24") else {
        return;
    };
    // The tasks' own counts follow the host's real pace of each CPU, which
    // is not exactly the emulated 2:1 and which a shared VM changes for
    // seconds at a time: timed directly before and after, an E/P ratio
    // that moved is a counted skip, and the even split is judged against
    // the ratio the CPUs really had.
    let pace_before = em.pace(d.path(), 2, "6e8");
    let e = em.e.to_string();
    for _ in 0..24 {
        tasks.add(&e);
    }
    std::thread::sleep(Duration::from_millis(2000));
    let doc = load(&em);
    let used = doc["capacity_used"].as_f64();
    let state = d.path().join("state.json");
    let cpus = format!("{},{}", em.p, em.e);
    let bal = ok_json(&mut balance(&em, &tasks, "2s", &state), "balance");
    let (a, a2) = tasks.window(Duration::from_millis(1000), Duration::from_secs(5));
    let own = rates(&a, &a2);
    let own_spread = rate_spread(&own);
    let (placed_after_balance, shared_after_balance) = even_shares("after balance", &own);
    let per_cpu = per_cpu(&bal, "cpu", "after");
    restore(&state);
    // The watch, from all 24 on E again.
    let wstate = d.path().join("watch.json");
    let mut watch = balance(&em, &tasks, "1s", &wstate)
        .arg("--watch")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = json_lines(watch.stdout.take().unwrap());
    let (first, placed) = lines_until(&out, Duration::from_secs(15), |v| {
        v["action"] == "placed" && v["moved"].as_u64() == Some(16)
    });
    let placed_at = last_interval(&first);
    for _ in 0..6 {
        tasks.add(&cpus);
    }
    let (second, more) = lines_until(&out, Duration::from_secs(15), |v| {
        v["action"] == "placed" && v["new"].as_u64() == Some(6)
    });
    let more_at = last_interval(&second);
    // Three intervals in the new places: what the watch measures there.
    let (later, _) = lines_until(&out, Duration::from_secs(5), |_| false);
    let moved: u64 = first
        .iter()
        .chain(&second)
        .chain(&later)
        .filter_map(|v| v["moved"].as_u64())
        .sum();
    let (b, b2) = tasks.window(Duration::from_secs(3), Duration::from_secs(4));
    let own_watch = rates(&b, &b2);
    let watch_spread = rate_spread(&own_watch);
    let (_, shared_under_watch) = even_shares("under the watch", &own_watch);
    watch.kill().unwrap();
    watch.wait().unwrap();
    let kept = wstate.exists();
    let restored = Command::new(BIN)
        .args(["--json", "balance", "--restore"])
        .arg(&wstate)
        .output()
        .unwrap();
    drop(tasks);
    let pace_after = em.pace(d.path(), 2, "6e8");
    let premise = premises(&live, &em)
        .and_then(|p| {
            steady_ratio(pace_before, pace_after).map(|figures| format!("{p}; {figures}"))
        })
        .and_then(|p| {
            even_pace(&[("after balance", &a, &a2), ("under the watch", &b, &b2)])
                .map(|figures| format!("{p}; {figures}"))
        })
        .and_then(|p| shared_after_balance.map(|f| format!("{p}; {f}")))
        .and_then(|p| shared_under_watch.map(|f| format!("{p}; {f}")));
    // 16 tasks on P and 8 on E, E really `r` times slower than P: a task
    // on P counts r/2 times as fast as one on E (1.0 at exactly 2:1).
    let r = (pace_before.ratio() + pace_after.ratio()) / 2.0;
    let pace_spread = (r / 2.0).max(2.0 / r);
    eprintln!(
        "24 on E: capacity used {used:?}; balance per CPU {per_cpu:?}, own rates max/min \
         {own_spread:.3} (the CPUs' real E/P {r:.2} alone gives {pace_spread:.3}); watch placed \
         16 at interval {placed_at} ({placed}), 6 more at {more_at} ({more}); own rates under \
         the watch max/min {watch_spread:.3}; later {later:?}"
    );
    require_premise!(premise);
    let used = used.unwrap_or_else(|| panic!("no capacity_used: {doc:#}"));
    assert!(
        (0.25..=0.45).contains(&used),
        "capacity used {used:.2}, expected about 1/3"
    );
    let on = |cpu: usize| per_cpu.iter().find(|c| c.0 == cpu as u64).map(|c| c.1);
    assert_eq!((on(em.p), on(em.e)), (Some(16), Some(8)), "{bal:#}");
    // The tasks really are where balance says it put them.
    let really = |cpu: usize| {
        placed_after_balance
            .iter()
            .find(|c| c.0 == cpu.to_string())
            .map(|c| c.1 as u64)
    };
    assert_eq!(
        (really(em.p), really(em.e)),
        (Some(16), Some(8)),
        "the tasks' CPU lists after balance: {placed_after_balance:?}"
    );
    assert!(
        own_spread <= 1.10 * pace_spread,
        "own rates after balance: max/min {own_spread:.3}, the CPUs' real pace alone \
         {pace_spread:.3} (E/P {r:.2})"
    );
    assert!(placed, "the watch did not place 16 of the 24: {first:?}");
    assert!(more, "the watch did not place the 6 new tasks: {second:?}");
    // The tasks started just after the decision at `placed_at`: seen by
    // the selection of the next interval and placed by its decision, or
    // the one after.
    assert!(
        more_at <= placed_at + 2,
        "6 new tasks placed at interval {more_at}, started after {placed_at}"
    );
    assert!(
        watch_spread <= 1.25 * pace_spread,
        "own rates under the watch: max/min {watch_spread:.3}, over its threshold (the CPUs' \
         real pace alone {pace_spread:.3})"
    );
    assert!(kept, "kill -9 of the watch should leave its state file");
    assert!(
        restored.status.success(),
        "balance --restore of the watch's state: {}",
        String::from_utf8_lossy(&restored.stderr)
    );
    let r: Value = serde_json::from_slice(&restored.stdout).unwrap();
    let back = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["outcome"] == "restored")
        .count();
    assert_eq!(back as u64, moved, "the watch moved {moved} tasks: {r:#}");
}
