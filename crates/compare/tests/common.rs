//! Set-up shared by the test modules (and the overhead bench): the header
//! of a test experiment, and an experiment run from start to end.

use pinsight_compare::experiment::{execute, Always, Executor, Outcome};
use pinsight_compare::journal::{
    ArmHeader, ArmPlan, Header, Journal, JournalWriter, Machine, SCHEMA,
};
use pinsight_compare::{analyse, Report, Status};
use pinsight_cpuset::CpuSet;
use pinsight_measure::{CounterMetrics, EnergyMetrics, ExitStatusRecord, RunRecord};
use pinsight_sys::progress::Silent;

/// Arm `id` (its policy too) running two threads in `mask`, pinned one
/// to each of `places` (none: floating).
pub fn arm(id: &str, mask: &str, places: Vec<CpuSet>) -> ArmHeader {
    arm_planned(
        id,
        ArmPlan {
            policy: id.into(),
            threads: 2,
            process_mask: CpuSet::parse_list(mask).unwrap(),
            pinned: !places.is_empty(),
            places,
            memory: None,
        },
    )
}

/// Arm `id` (its policy too) with `plan`, no governor, env or notes.
pub fn arm_planned(id: &str, plan: ArmPlan) -> ArmHeader {
    ArmHeader {
        id: id.into(),
        policy: id.into(),
        governor: None,
        plan,
        env: vec![],
        notes: vec![],
    }
}

/// An experiment of `command` over `arms` (the policies are their ids):
/// `runs` measured runs and `warmup` warm-ups per arm in the order of
/// `seed`; no other setting, nothing not applicable, no program metrics.
pub fn header(
    command: &[&str],
    arms: Vec<ArmHeader>,
    runs: usize,
    warmup: usize,
    seed: u64,
) -> Header {
    Header {
        schema: SCHEMA.into(),
        pinsight_version: "test".into(),
        created: "2025-01-01T00:00:00Z".into(),
        command: command.iter().map(|c| c.to_string()).collect(),
        prepare: None,
        policies: arms.iter().map(|a| a.id.clone()).collect(),
        governors: vec![],
        threads: None,
        oversubscribe: false,
        latency: None,
        weights: None,
        mem: None,
        near: None,
        runs,
        warmup,
        seed,
        timeout_s: None,
        arms,
        not_applicable: vec![],
        machine: Machine::default(),
        kind: None,
        extension: None,
        metrics: Vec::new(),
        unavailable: Default::default(),
    }
}

/// Runs every slot of `h` on `exec` into `w` from the start (nothing
/// journaled before, a failure stops it, never interrupted).
pub fn execute_all(h: &Header, w: &mut JournalWriter, exec: &mut dyn Executor) -> Outcome {
    execute(h, &[], w, exec, &mut Silent, &mut Always, false, 0, &|| {
        false
    })
}

/// The experiment `h` on `exec` in a fresh journal: how it ended, and the
/// report of what the journal holds, analysed as complete.
pub fn run_and_analyse(h: &Header, exec: &mut dyn Executor) -> (Outcome, Report) {
    let (_d, p) = journal_path();
    let mut w = JournalWriter::create(&p, h).unwrap();
    let out = execute_all(h, &mut w, exec);
    let j = Journal::read(&p).unwrap();
    (out, analyse(&j.header, &j.runs, Status::Complete, vec![]))
}

/// A run of `wall` seconds (user 0.9 and system 0.01 of it) that exited
/// with `code`, without counters or energy.
pub fn record(wall: f64, code: i32) -> RunRecord {
    RunRecord {
        wall_s: wall,
        user_s: wall * 0.9,
        sys_s: wall * 0.01,
        max_rss_kib: 50_000,
        max_rss_floor_kib: 10_000,
        exit: ExitStatusRecord {
            code: Some(code),
            signal: None,
        },
        timed_out: false,
        counters: CounterMetrics::unavailable("no hardware PMU: test"),
        energy: EnergyMetrics::unavailable("no RAPL: test"),
        disturbance: None,
    }
}

/// A fresh directory, and the path of a journal (`j.jsonl`) in it.
pub fn journal_path() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("j.jsonl");
    (d, p)
}

/// Asserts that one of `r`'s verdict caveats says `part`, showing them
/// when none does.
#[track_caller]
pub fn assert_caveat(r: &Report, part: &str) {
    assert!(
        r.verdict.caveats.iter().any(|c| c.text.contains(part)),
        "no caveat with {part:?}: {:?}",
        r.verdict.caveats
    );
}
