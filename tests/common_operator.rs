//! What the operator's experiments (`balance_live`, `balance_emulated_live`)
//! share: six single-threaded python3 tasks pinned alternately on a P and an
//! E CPU, killed on every exit path, running pinsight for its JSON, the
//! balance and its restore, and the lookups in what `pinsight load
//! --json` and `balance --json` print.

use crate::common_live::entry;
use serde_json::Value;
use std::process::{Command, Stdio};

/// The tasks, killed on every exit path; their PIDs in start order (even:
/// on `p`, odd: on `e`).
pub use pinsight_testkit::Children as Tasks;

/// Whether python3 runs here (the tasks are python3 loops).
pub fn has_python() -> bool {
    Command::new("python3")
        .args(["-c", "pass"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this process may start a SCHED_FIFO task (chrt(1)): root, chrt
/// installed, and not refused by real-time group scheduling (a cgroup
/// without a real-time budget refuses it even to root).
pub fn can_fifo() -> bool {
    Command::new("chrt")
        .args(["-f", "1", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Six copies of `python3 -c task marker` (the marker is what `balance
/// --match` selects), three pinned to `p` and three to `e` with
/// taskset(1), SCHED_FIFO when `rt` (other work on the machine then
/// delays none of them).
pub fn start(p: usize, e: usize, task: &str, marker: &str, rt: bool) -> Tasks {
    let mut tasks = Tasks(Vec::new());
    for i in 0..6 {
        let cpu = if i % 2 == 0 { p } else { e };
        let mut cmd = if rt {
            let mut c = Command::new("chrt");
            c.args(["-f", "1", "taskset"]);
            c
        } else {
            Command::new("taskset")
        };
        let child = cmd
            .args(["-c", &cpu.to_string(), "python3", "-c", task, marker])
            .stdout(Stdio::null())
            .spawn()
            .expect("taskset starts");
        tasks.0.push(child);
    }
    tasks
}

/// CPU `n`'s entry in a `pinsight load --json` document.
pub fn load_cpu(doc: &Value, n: usize) -> &Value {
    entry(&doc["cpus"], "cpu", n).unwrap_or_else(|| panic!("no CPU {n} in {doc:#}"))
}

/// Runs `c` (a pinsight command with `--json`), which must succeed, and
/// returns what it printed; `what` names it in the failure.
pub fn ok_json(c: &mut Command, what: &str) -> Value {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// `pinsight --json balance --match MARKER --match-full --cpus P,E
/// --interval INTERVAL --state STATE` (the marker is in the tasks'
/// command lines; their name is python3), for the caller to add its
/// environment to.
pub fn balance_command(
    marker: &str,
    (p, e): (usize, usize),
    interval: &str,
    state: &std::path::Path,
) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    c.args(["--json", "balance", "--match", marker, "--match-full"])
        .arg("--cpus")
        .arg(format!("{p},{e}"))
        .args(["--interval", interval, "--state"])
        .arg(state);
    c
}

/// `pinsight --json balance --restore STATE`, which must succeed: puts
/// the tasks back where they were.
pub fn restore(state: &std::path::Path) -> Value {
    ok_json(
        Command::new(env!("CARGO_BIN_EXE_pinsight"))
            .args(["--json", "balance", "--restore"])
            .arg(state),
        "balance --restore",
    )
}

/// `(FIRST, SECOND)` of each CPU in `balance --json`'s `per_cpu`: its
/// task counts `before` and `after`, or its `cpu` and `after`.
pub fn per_cpu(doc: &Value, first: &str, second: &str) -> Vec<(u64, u64)> {
    doc["per_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[first].as_u64().unwrap(), c[second].as_u64().unwrap()))
        .collect()
}

/// The selected tasks' own share of `cpu` in balance's measure `when`
/// (their schedstat run time; the tasks keep their pace, so it is their
/// share during `load`'s reading of the same placement too).
pub fn tasks_busy(doc: &Value, when: &str, cpu: usize) -> f64 {
    entry(&doc[when]["cpus"], "cpu", cpu)
        .and_then(|c| c["tasks_busy"].as_f64())
        .unwrap_or_else(|| panic!("no {when} tasks_busy of CPU {cpu} in {doc:#}"))
}

/// Whether `load`'s figures of `p` and `e` can be compared: `Err` with
/// the reason (a counted skip) when other work kept one of them more than
/// `limit` busier than the tasks' own run time explains (balance's
/// [`tasks_busy`] in its measure before and after; the tasks keep their
/// pace), since `load` counts everything that runs. `busy` is `load`'s
/// busy share of P and E before and after the balance, `ratios` its E/P
/// before and after.
pub fn load_comparable(
    doc: &Value,
    (p, e): (usize, usize),
    busy: [(f64, f64); 2],
    ratios: (f64, f64),
    limit: f64,
) -> Result<(), String> {
    let beyond = ["load_before", "load_after"]
        .into_iter()
        .zip(busy)
        .flat_map(|(when, (bp, be))| [bp - tasks_busy(doc, when, p), be - tasks_busy(doc, when, e)])
        .fold(f64::MIN, f64::max);
    if beyond > limit {
        return Err(format!(
            "other work kept a CPU {:.0}% busier than the tasks' run time: load's E/P \
             ({:.2} before, {:.2} after) cannot be compared",
            beyond * 100.0,
            ratios.0,
            ratios.1
        ));
    }
    Ok(())
}

/// The selected tasks' imbalance in `balance --json`'s measure `when`.
pub fn tasks_imbalance(doc: &Value, when: &str) -> f64 {
    doc[when]["tasks_imbalance"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {when}.tasks_imbalance in {doc:#}"))
}
