//! The operator's experiment on the emulated hybrid machine: `pinsight
//! emulate --kinds P:P,E:E@0.5` slows the second usable CPU to half speed
//! with a SCHED_FIFO duty-cycle stealer (2 ms period); six single-threaded
//! tasks pinned evenly, three per CPU, each asking the same work per unit
//! of wall time (6 ms of its own CPU time every 50 ms: 12% of a CPU on
//! either, the stealer only delays it), load the slowed CPU twice as much
//! against its capacity. `pinsight load` (with the stealer's time counted
//! as steal, from `PINSIGHT_EMULATION_STEALERS`) reads E/P normalised 2.0;
//! `pinsight balance --match` moves them four on P and two on E, and load
//! reads 1.0 (within 15%).
//!
//! Only the two CPUs are used (`--cpus`), so it runs on a 2-vCPU VM. Needs
//! root (real-time stealers) and python3: otherwise a counted skip. The
//! tasks run SCHED_FIFO priority 1 where allowed (below the stealer's 2),
//! so other work does not delay them, and the balance's own figure of the
//! tasks' run time (MINE) is asserted always; `load`'s figure counts
//! everything that runs, so when other work keeps one of these CPUs more
//! than 4% busier than the tasks' own run time explains, that half is a
//! counted skip, never a pass.

use crate::common_emulation::Emulation;
use crate::common_operator::{
    balance_command, can_fifo, has_python, load_comparable, load_cpu, ok_json, per_cpu, restore,
    start, tasks_imbalance,
};
use pinsight_testkit::premise;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_pinsight");

/// 6 ms of CPU time every 50 ms of wall time, on an absolute schedule.
const TASK: &str = r#"
import time
nxt = time.monotonic()
while True:
    t = time.process_time()
    while time.process_time() - t < 0.006:
        pass
    nxt += 0.05
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
    else:
        nxt = time.monotonic()
"#;

/// Other work (busy time beyond the tasks' own) above which `load`'s
/// figure is not compared: on the slowed CPU it counts twice (capacity
/// 0.5), so 0.04 there moves E/P by about 0.15.
const QUIET: f64 = 0.04;

/// What `pinsight load` shows of the two CPUs.
#[derive(Debug)]
struct Reading {
    /// E's normalised load over P's.
    ratio: f64,
    p_busy: f64,
    e_busy: f64,
    e_emulated: f64,
    source: String,
}

fn read_load(em: &Emulation, p: usize, e: usize) -> Reading {
    let doc = ok_json(
        em.export(Command::new(BIN).args(["--json", "load", "--once", "--interval", "2s"])),
        "load",
    );
    let (cp, ce) = (load_cpu(&doc, p), load_cpu(&doc, e));
    let f = |c: &Value, k: &str| c[k].as_f64().unwrap_or_else(|| panic!("no {k} in {c}"));
    Reading {
        ratio: f(ce, "normalised") / f(cp, "normalised"),
        p_busy: f(cp, "busy"),
        e_busy: f(ce, "busy"),
        e_emulated: f(ce, "emulated"),
        source: doc["busy_source"].as_str().unwrap_or("?").to_string(),
    }
}

#[test]
fn balance_evens_the_load_of_the_emulated_hybrid() {
    let usable = pinsight_testkit::usable_cpus();
    if usable.len() < 2 {
        pinsight_testkit::skip_test!("needs two usable CPUs (have {})", usable.len());
    }
    if pinsight_sys::process::geteuid() != 0 {
        pinsight_testkit::skip_test!("the emulation's stealers need root (SCHED_FIFO)");
    }
    if !has_python() {
        pinsight_testkit::skip_test!("python3 is not installed (the tasks are python3 loops)");
    }
    let (p, e) = (usable[0], usable[1]);
    // Refused beside another real-time task (another emulation's stealer).
    let Some(_live) = premise::live(&[p, e]) else {
        return;
    };
    let Some(em) = Emulation::start(p, e, 0.5) else {
        return;
    };
    assert!(
        em.stealers.starts_with(&format!("{e}:")),
        "the emulated command should get the stealer of CPU {e}: {:?}",
        em.stealers
    );
    let marker = format!("pinsight-emulated-balance-{}", std::process::id());
    let rt = can_fifo();
    let tasks = start(p, e, TASK, &marker, rt);
    std::thread::sleep(Duration::from_millis(800));
    let before = read_load(&em, p, e);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let doc = ok_json(
        em.export(&mut balance_command(&marker, (p, e), "2s", &state)),
        "balance",
    );
    std::thread::sleep(Duration::from_millis(300));
    let after = read_load(&em, p, e);
    // The saved state puts the tasks back.
    restore(&state);
    eprintln!(
        "emulated E@0.5, pinsight load E/P normalised: {:.2} before, {:.2} after \
         (busy from {}; P {:.2} -> {:.2}, E {:.2} -> {:.2}, stealer {:.2} -> {:.2})",
        before.ratio,
        after.ratio,
        before.source,
        before.p_busy,
        after.p_busy,
        before.e_busy,
        after.e_busy,
        before.e_emulated,
        after.e_emulated
    );
    let per = per_cpu(&doc, "before", "after");
    assert_eq!(per, vec![(3, 4), (3, 2)], "{doc:#}");
    // The premise of what follows: the stealer took half of E all along,
    // by its own CPU time (not pinsight's figure).
    if let Err(why) = em.held() {
        pinsight_testkit::skip_test!("{why}");
    }
    // The stealer's time is measured exactly and shown as steal: about
    // half of E whatever else runs (it has the higher priority).
    for r in [&before, &after] {
        assert!(
            (0.35..0.65).contains(&r.e_emulated),
            "the stealer took {:.2} of CPU {e}, asked 0.5: {r:?}",
            r.e_emulated
        );
    }
    // The tasks' own run time, as balance measured it.
    let (tb, ta) = (
        tasks_imbalance(&doc, "load_before"),
        tasks_imbalance(&doc, "load_after"),
    );
    eprintln!("balance's figure of the tasks alone: {tb:.2} before, {ta:.2} after");
    if rt {
        assert!(tb > 1.5, "evenly pinned tasks should be uneven: {tb:.2}");
        assert!(ta <= 1.15, "tasks' imbalance after balance {ta:.2}");
    }
    // What `load` shows includes every other program on these CPUs.
    if let Err(why) = load_comparable(
        &doc,
        (p, e),
        [(before.p_busy, before.e_busy), (after.p_busy, after.e_busy)],
        (before.ratio, after.ratio),
        QUIET,
    ) {
        pinsight_testkit::skip_test!("{why}");
    }
    assert!(
        (before.ratio - 2.0).abs() <= 0.3,
        "evenly pinned, E should carry twice P's normalised load: {before:?}"
    );
    assert!(
        (after.ratio - 1.0).abs() <= 0.15,
        "after balance load's E/P is {:.2}, more than 15% from even: {after:?}",
        after.ratio
    );
    drop(tasks);
    drop(em);
}
