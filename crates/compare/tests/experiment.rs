//! The experiment loop and the analysis with a deterministic fake executor:
//! resume gives exactly the uninterrupted result, failures stop or are
//! ignored, and the verdict says what the numbers say.

use crate::common;
use pinsight_compare::experiment::{done_slots, execute, Always, Executor, Outcome, SwitchError};
use pinsight_compare::journal::{
    ArmHeader, Header, Journal, JournalWriter, NotApplicable, RunLine,
};
use pinsight_compare::view as render;
use pinsight_compare::{analyse, Advice, Decision, Phase, Slot, Status};
use pinsight_cpuset::CpuSet;
use pinsight_measure::{CounterMetrics, EnergyMetrics, Metric, RunError, RunRecord};
use pinsight_sys::progress::Silent;

/// An arm; each policy but `os` pins its two threads to a placement of
/// its own (arms with the same placement are flagged by the verdict).
fn arm(id: &str) -> ArmHeader {
    let own = id.bytes().fold(0usize, |h, b| (h * 31 + b as usize) % 61) + 2;
    let places = match id {
        "os" => vec![],
        _ => vec![CpuSet::single(own), CpuSet::single(own + 1)],
    };
    common::arm(id, "0-63", places)
}

fn header(arms: &[&str], runs: usize, warmup: usize, seed: u64) -> Header {
    Header {
        not_applicable: vec![NotApplicable {
            what: "e-set".into(),
            reason: "needs at least two core kinds; this machine has one kind".into(),
        }],
        ..common::header(
            &["prog"],
            arms.iter().map(|a| arm(a)).collect(),
            runs,
            warmup,
            seed,
        )
    }
}

/// A deterministic pseudo-normal number from a slot (Box-Muller on a hash).
fn noise(slot: usize, salt: u64) -> f64 {
    let h = |x: u64| {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let u1 = h(slot as u64 * 2 + salt * 1_000_003).max(1e-12);
    let u2 = h(slot as u64 * 2 + 1 + salt * 1_000_003);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn record(wall: f64, energy: Option<f64>, code: i32) -> RunRecord {
    let mut counters = CounterMetrics::unavailable("no hardware PMU: test");
    counters.task_clock_ms = Metric::Value(wall * 1e3);
    counters.context_switches = Metric::Value(3.0);
    counters.cpu_migrations = Metric::Value(1.0);
    counters.page_faults = Metric::Value(100.0);
    let mut energy_m = EnergyMetrics::unavailable("no RAPL: test");
    if let Some(e) = energy {
        energy_m.energy_pkg_j = Metric::Value(e);
    }
    RunRecord {
        counters,
        energy: energy_m,
        ..common::record(wall, code)
    }
}

/// Arm i takes means[i] ± sds[i] seconds (and energy = 40 W × time when set).
struct Fake {
    means: Vec<f64>,
    sds: Vec<f64>,
    energy: bool,
    /// Slots that exit with code 3.
    failing: Vec<usize>,
    calls: usize,
    /// Runs left before an interruption.
    budget: Option<usize>,
}

impl Executor for Fake {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        match &mut self.budget {
            Some(0) => return Err(RunError::Interrupted),
            Some(n) => *n -= 1,
            None => {}
        }
        self.calls += 1;
        let wall = self.means[slot.arm] + self.sds[slot.arm] * noise(slot.index, 1);
        let energy = self.energy.then(|| wall * (40.0 + noise(slot.index, 2)));
        let code = if self.failing.contains(&slot.index) {
            3
        } else {
            0
        };
        Ok(record(wall, energy, code))
    }
    fn prepare(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    fn set_governor(&mut self, _: Option<&str>) -> Result<(), SwitchError> {
        Ok(())
    }
}

fn fake(means: &[f64], sds: &[f64]) -> Fake {
    Fake {
        means: means.to_vec(),
        sds: sds.to_vec(),
        energy: false,
        failing: vec![],
        calls: 0,
        budget: None,
    }
}

/// Runs the experiment in `path` (creating or resuming it). With
/// `stop_after = Some(k)` the k+1-th run reports an interruption, as the
/// measurer does once Ctrl-C arrived.
fn run_all(
    h: &Header,
    path: &std::path::Path,
    exec: &mut Fake,
    stop_after: Option<usize>,
    ignore: bool,
) -> Outcome {
    let (mut w, previous) = if path.exists() {
        let (w, j) = JournalWriter::resume(path).unwrap();
        (w, j.runs)
    } else {
        (JournalWriter::create(path, h).unwrap(), Vec::new())
    };
    exec.budget = stop_after;
    execute(
        h,
        &previous,
        &mut w,
        exec,
        &mut Silent,
        &mut Always,
        ignore,
        0,
        &|| false,
    )
}

#[test]
fn resumed_experiment_gives_the_uninterrupted_result() {
    let d = tempfile::tempdir().unwrap();
    let h = header(&["os", "compact", "scatter"], 6, 1, 42);
    let (means, sds) = ([1.0, 0.93, 1.2], [0.01, 0.01, 0.02]);

    let whole = d.path().join("whole.jsonl");
    assert!(matches!(
        run_all(&h, &whole, &mut fake(&means, &sds), None, false),
        Outcome::Complete
    ));

    let parts = d.path().join("parts.jsonl");
    let mut f = fake(&means, &sds);
    assert!(matches!(
        run_all(&h, &parts, &mut f, Some(5), false),
        Outcome::Interrupted
    ));
    let partial = Journal::read(&parts).unwrap();
    assert_eq!(partial.runs.len(), 5, "5 runs done before the interruption");
    assert!(matches!(
        run_all(&h, &parts, &mut f, Some(4), false),
        Outcome::Interrupted
    ));
    assert!(matches!(
        run_all(&h, &parts, &mut f, None, false),
        Outcome::Complete
    ));
    assert_eq!(f.calls, 21, "no slot ran twice");

    let a = Journal::read(&whole).unwrap();
    let b = Journal::read(&parts).unwrap();
    let mut slots: Vec<usize> = b.runs.iter().map(|r| r.slot).collect();
    slots.sort();
    assert_eq!(slots, (0..21).collect::<Vec<_>>());
    let ra = analyse(&a.header, &a.runs, Status::Complete, vec![]);
    let rb = analyse(&b.header, &b.runs, Status::Complete, vec![]);
    assert_eq!(ra.arms, rb.arms, "same summaries, comparisons");
    assert_eq!(ra.verdict, rb.verdict);
    assert_eq!(ra.arms[0].measured, 6);
    assert_eq!(ra.arms[0].warmups, 1);
}

#[test]
fn a_failed_run_stops_the_experiment_and_is_retried_on_resume() {
    let (_d, p) = common::journal_path();
    let h = header(&["os", "compact"], 3, 0, 1);
    let mut f = fake(&[1.0, 1.0], &[0.01, 0.01]);
    f.failing = vec![2];
    match run_all(&h, &p, &mut f, None, false) {
        Outcome::StoppedOnFailure { slot, why, .. } => {
            assert_eq!(slot, 2);
            assert!(why.contains("exited with code 3"), "{why}");
        }
        o => panic!("{o:?}"),
    }
    let j = Journal::read(&p).unwrap();
    assert_eq!(j.runs.len(), 3, "the failed run is journaled");
    let r = analyse(&j.header, &j.runs, Status::Partial, vec![]);
    let failed: usize = r.arms.iter().map(|a| a.failed.len()).sum();
    assert_eq!(failed, 1);
    common::assert_caveat(&r, "1 failed run (exited with code 3)");

    // Resume: the failed slot runs again (and now succeeds).
    f.failing.clear();
    assert_eq!(done_slots(&j.runs, false).len(), 2);
    assert!(matches!(
        run_all(&h, &p, &mut f, None, false),
        Outcome::Complete
    ));
    let j = Journal::read(&p).unwrap();
    assert_eq!(j.runs.len(), 7, "the failed attempt stays in the journal");
    let r = analyse(&j.header, &j.runs, Status::Complete, vec![]);
    assert!(r
        .arms
        .iter()
        .all(|a| a.failed.is_empty() && a.measured == 3));
}

#[test]
fn ignored_failures_are_recorded_and_excluded() {
    let (_d, p) = common::journal_path();
    let h = header(&["os", "compact"], 4, 1, 9);
    let mut f = fake(&[1.0, 1.0], &[0.01, 0.01]);
    f.failing = vec![0, 5];
    assert!(matches!(
        run_all(&h, &p, &mut f, None, true),
        Outcome::Complete
    ));
    let j = Journal::read(&p).unwrap();
    assert_eq!(j.runs.len(), 10);
    let r = analyse(&j.header, &j.runs, Status::Complete, vec![]);
    let failed: Vec<_> = r.arms.iter().flat_map(|a| &a.failed).collect();
    assert_eq!(failed.len(), 2);
    assert_eq!(
        failed.iter().filter(|f| f.phase == Phase::Warmup).count(),
        1
    );
    let measured: usize = r.arms.iter().map(|a| a.measured).sum();
    assert_eq!(measured, 7);
}

fn report_for(
    means: &[f64],
    sds: &[f64],
    arms: &[&str],
    runs: usize,
    energy: bool,
) -> pinsight_compare::Report {
    let (_d, p) = common::journal_path();
    let h = header(arms, runs, 0, 5);
    let mut f = fake(means, sds);
    f.energy = energy;
    assert!(matches!(
        run_all(&h, &p, &mut f, None, false),
        Outcome::Complete
    ));
    let j = Journal::read(&p).unwrap();
    analyse(&j.header, &j.runs, Status::Complete, vec![])
}

/// [`report_for`] without energy, whose verdict must keep the `os` baseline.
fn keeps_the_os(
    means: &[f64],
    sds: &[f64],
    arms: &[&str],
    runs: usize,
) -> pinsight_compare::Report {
    let r = report_for(means, sds, arms, runs, false);
    assert_eq!(
        r.verdict.decision,
        Decision::KeepBaseline { arm: "os".into() },
        "{}",
        r.verdict.headline
    );
    r
}

#[test]
fn verdict_picks_the_significantly_faster_placement_with_energy() {
    // p-pinned 6.9 % faster; e-set 1.6× slower.
    let r = report_for(
        &[1.0, 1.0 / 1.069, 1.6],
        &[0.01, 0.01, 0.02],
        &["os", "p-pinned", "e-set"],
        10,
        true,
    );
    assert_eq!(
        r.verdict.decision,
        Decision::Use {
            arm: "p-pinned".into()
        }
    );
    let h = &r.verdict.headline;
    assert!(
        h.starts_with("Use p-pinned: 6.") && h.contains("% faster (95% CI "),
        "{h}"
    );
    assert!(h.contains("% less energy"), "energy is 40 W × time: {h}");
    let e = r.verdict.evidence.join("\n");
    assert!(e.contains("e-set: 1.6") && e.contains("× slower"), "{e}");
    assert!(e.contains("EDP "), "{e}");
    let v = r.arms[1].time_vs_baseline.as_ref().unwrap();
    assert!(v.significant && v.ratio_ci.unwrap().lo > 1.0);
    // Every export says it too.
    assert!(render::text::render(&r, 80, &Advice::clause).contains("Verdict: Use p-pinned"));
    assert!(render::markdown::render(&r, &Advice::clause).contains("**Verdict: Use p-pinned"));
    let html = render::html::render(&r, &Advice::clause);
    assert!(html.contains("Use p-pinned") && html.contains("<svg") && !html.contains("<script"));
    let csv = render::csv::render(&r);
    assert_eq!(
        csv.lines().filter(|l| !l.starts_with('#')).count(),
        1 + 3 + 1,
        "header, 3 arms, 1 not applicable"
    );
    assert!(csv
        .lines()
        .last()
        .unwrap()
        .starts_with("e-set,e-set,,false,needs at least two core kinds"));
}

#[test]
fn no_difference_means_leave_it_to_the_os() {
    let r = keeps_the_os(&[1.0, 1.0], &[0.02, 0.02], &["os", "compact"], 10);
    assert_eq!(
        r.verdict.headline,
        "No significant difference — leave it to the OS."
    );
    let e = &r.verdict.evidence[0];
    assert!(e.starts_with("compact: "), "{e}");
    assert!(e.contains(", not significant: "), "{e}");
}

#[test]
fn not_significant_says_which_test_said_no_and_why() {
    // 3 runs, 2× faster: the CI excludes no change, but no rank test on
    // 3 + 3 runs can reach p < 0.05. Both must be said.
    let r = report_for(&[1.0, 0.5], &[0.01, 0.01], &["os", "compact"], 3, false);
    let v = r.arms[1].time_vs_baseline.as_ref().unwrap();
    assert!(!v.significant && v.ratio_ci.is_some_and(|c| c.lo > 1.0));
    let cell = render::versus_cell(&r.arms[1], &r);
    assert!(
        cell.contains("not significant: p = 0.100 Mann-Whitney U ≥ 0.05 with 3 runs per arm"),
        "{cell}"
    );
    assert!(
        cell.contains("(the smallest p it can reach is 0.10)"),
        "{cell}"
    );
    assert!(
        cell.contains("although the 95% CI alone excludes no change"),
        "{cell}"
    );
    let e = r.verdict.evidence.join("\n");
    assert!(
        e.contains("Mann-Whitney U ≥ 0.05 with 3 runs per arm"),
        "{e}"
    );
}

/// Arm 0's first measured run is 3× slower than the rest.
fn slow_first_measured_run(warmup: usize) -> pinsight_compare::Report {
    struct Slow(Fake, bool);
    impl Executor for Slow {
        fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
            let mut r = self.0.run(slot)?;
            if slot.arm == 0 && slot.phase == Phase::Measured && !self.1 {
                self.1 = true;
                r.wall_s *= 3.0;
            }
            Ok(r)
        }
        fn prepare(&mut self) -> Result<(), RunError> {
            Ok(())
        }
        fn set_governor(&mut self, _: Option<&str>) -> Result<(), SwitchError> {
            Ok(())
        }
    }
    let h = header(&["os", "compact"], 8, warmup, 5);
    let mut ex = Slow(fake(&[1.0, 1.0], &[0.001, 0.001]), false);
    let (o, r) = common::run_and_analyse(&h, &mut ex);
    assert!(matches!(o, Outcome::Complete));
    r
}

#[test]
fn the_warmup_advice_appears_only_without_warmups() {
    let cold = slow_first_measured_run(0);
    let w = cold.arms[0].outlier_warning.as_ref().unwrap();
    assert_eq!(w.advice, Some(Advice::WarmUp), "{w}");
    // The report says it in its own terms; a front end names its flag.
    assert!(w.to_string().ends_with("consider warm-up runs"), "{w}");
    let flag = |a: Advice| match a {
        Advice::WarmUp => " (--warmup)".to_string(),
        a => a.clause(),
    };
    let text = render::text::render(&cold, 200, &flag);
    assert!(
        text.contains("caches were probably cold (--warmup)"),
        "{text}"
    );
    let warm = slow_first_measured_run(2);
    let w = warm.arms[0].outlier_warning.as_ref().unwrap();
    assert_eq!(w.advice, None, "{w}");
    assert!(w.text.contains("even after 2 warm-up runs"), "{w}");
    assert!(warm
        .verdict
        .caveats
        .iter()
        .all(|c| c.advice != Some(Advice::WarmUp)));
    let text = render::text::render(&warm, 200, &flag);
    assert!(!text.contains("--warmup"), "{text}");
    // Nowhere in the report either (the statistics' own notes included).
    let json = serde_json::to_string(&warm).unwrap();
    assert!(!json.contains("--warmup"), "{json}");
    assert!(json.contains("even after 2 warm-up runs"), "{json}");
}

#[test]
fn text_fits_80_columns_with_many_arms_and_long_names() {
    use unicode_width::UnicodeWidthStr;
    let names = [
        "os",
        "kind-set:E-core@powersave",
        "cpus-set:0,2,4,6,8,10,12,14,16,18,20,22",
        "latency-pipeline+smt-physical-first",
        "p-pinned@performance",
        "e-pinned@conservative",
        "scatter",
        "compact",
    ];
    let r = report_for(
        &[1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 1.0, 1.01],
        &[0.01; 8],
        &names,
        5,
        true,
    );
    for w in [80, 0] {
        let width = render::layout::effective_width(Some(w));
        let text = render::text::render(&r, width, &Advice::clause);
        for line in text.lines() {
            assert!(
                line.width() <= 80,
                "{} columns at width {w}:\n{line}\n{text}",
                line.width()
            );
        }
        // No word is cut: every arm name and the verdict's words survive.
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for n in [
            "scatter",
            "compact",
            "os",
            "E-core@powersave",
            "p-pinned@performance",
        ] {
            assert!(flat.contains(n), "{n} missing:\n{text}");
        }
        assert!(flat.contains("Verdict: "));
    }
}

#[test]
fn csv_says_an_everywhere_unavailable_reason_once() {
    let r = report_for(
        &[1.0, 1.1, 1.2],
        &[0.01; 3],
        &["os", "compact", "scatter"],
        5,
        false,
    );
    let csv = render::csv::render(&r);
    assert_eq!(
        csv.matches("no hardware PMU: test").count(),
        1,
        "the reason once, not per arm and metric:\n{csv}"
    );
    let comment = csv.lines().next().unwrap();
    assert!(
        comment.starts_with("# cycles, instructions, IPC")
            && comment.contains("unavailable in every arm (no hardware PMU: test)"),
        "{comment}"
    );
    let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    let head: Vec<&str> = rows[0].split(',').collect();
    let i = head
        .iter()
        .position(|h| *h == "cycles_unavailable")
        .unwrap();
    for row in &rows[1..4] {
        assert_eq!(row.split(',').nth(i), Some(""), "{row}");
    }
}

#[test]
fn a_tiny_significant_gain_is_called_negligible() {
    let r = keeps_the_os(&[1.0, 0.996], &[0.0005, 0.0005], &["os", "compact"], 10);
    assert!(
        r.verdict
            .headline
            .contains("significantly but negligibly faster (< 1%)"),
        "{}",
        r.verdict.headline
    );
}

#[test]
fn seed_table_lulesh_serial_keeps_the_os() {
    // "To pin or not to pin", Table 3 (performance governor): time mean ± sd.
    let r = keeps_the_os(
        &[45.073, 45.189, 56.165, 81.899, 82.366],
        &[0.026, 0.043, 0.015, 0.074, 0.155],
        &["os", "p-set", "p-pinned", "e-set", "e-pinned"],
        10,
    );
    assert!(
        r.verdict
            .headline
            .starts_with("Leave it to the OS: no placement is significantly faster than os"),
        "{}",
        r.verdict.headline
    );
    let e = r.verdict.evidence.join("\n");
    assert!(e.contains("p-pinned: 25% slower"), "{e}");
    assert!(e.contains("e-pinned: 1.83× slower"), "{e}");
}

#[test]
fn three_runs_warn_that_no_rank_test_can_be_significant() {
    // Welch is not chosen with 3 runs; Mann-Whitney's p ≥ 0.1: no claim.
    let r = keeps_the_os(&[1.0, 0.5], &[0.01, 0.01], &["os", "compact"], 3);
    common::assert_caveat(&r, "smallest possible p = 0.10");
}

#[test]
fn unavailable_metrics_say_why_and_are_never_zero() {
    let r = report_for(&[1.0, 1.1], &[0.01, 0.01], &["os", "compact"], 5, false);
    let cycles = r.arms[0].metric("cycles").unwrap();
    assert!(cycles.summary.is_none());
    assert_eq!(cycles.unavailable.as_deref(), Some("no hardware PMU: test"));
    let text = render::text::render(&r, 80, &Advice::clause);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("cycles, instructions, IPC, cache references, cache misses, average frequency: unavailable (no hardware PMU: test)"), "{text}");
    assert!(
        text.contains("energy-delay product: unavailable (no RAPL: test)"),
        "{text}"
    );
    let json = serde_json::to_value(&r).unwrap();
    let m = &json["arms"][0]["metrics"];
    let cyc = m
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "cycles")
        .unwrap();
    assert_eq!(cyc["unavailable"], "no hardware PMU: test");
    assert!(cyc.get("summary").is_none());
    let csv = render::csv::render(&r);
    let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = head.iter().position(|h| *h == "cycles_mean").unwrap();
    assert_eq!(row[i], "", "unavailable is an empty cell, not 0");
}

#[test]
fn arms_with_the_same_placement_are_flagged_and_never_ranked_apart() {
    // p-pinned and compact resolve to the same pinned CPUs (one core kind):
    // compact came out faster by noise alone.
    let (d, p) = common::journal_path();
    let mut h = header(&["os", "p-pinned", "compact"], 10, 0, 5);
    h.arms[2].plan.places = h.arms[1].plan.places.clone();
    let mut f = fake(&[1.0, 1.0 / 1.37, 1.0 / 1.46], &[0.01, 0.01, 0.01]);
    assert!(matches!(
        run_all(&h, &p, &mut f, None, false),
        Outcome::Complete
    ));
    let j = Journal::read(&p).unwrap();
    let r = analyse(&j.header, &j.runs, Status::Complete, vec![]);
    let v = &r.verdict;
    assert_eq!(
        v.same_placement,
        vec![vec!["p-pinned".to_string(), "compact".into()]]
    );
    assert!(
        v.headline.starts_with("Use compact: ")
            && v.headline
                .ends_with("p-pinned runs the same placement: either will do."),
        "{}",
        v.headline
    );
    assert!(
        v.caveats.iter().any(|c| c
            .text
            .starts_with("p-pinned and compact run the same placement here (pinned")
            && c.text
                .ends_with("a difference between them is noise, not placement")),
        "{:?}",
        v.caveats
    );
    let e = v.evidence.join("\n");
    assert!(e.contains("(the same placement as compact)"), "{e}");
    assert!(e.contains("(the same placement as p-pinned)"), "{e}");
    let text = render::text::render(&r, 80, &Advice::clause);
    assert!(text.contains("either will do"), "{text}");
    // An arm with the baseline's placement is noise, never the choice.
    let mut h = header(&["cpus:2,3", "twin"], 10, 0, 5);
    h.arms[1].plan = h.arms[0].plan.clone();
    let p2 = d.path().join("k.jsonl");
    let mut f = fake(&[1.0, 1.0 / 1.2], &[0.01, 0.01]);
    run_all(&h, &p2, &mut f, None, false);
    let j = Journal::read(&p2).unwrap();
    let r = analyse(&j.header, &j.runs, Status::Complete, vec![]);
    assert_eq!(
        r.verdict.decision,
        Decision::KeepBaseline {
            arm: "cpus:2,3".into()
        },
        "{}",
        r.verdict.headline
    );
    assert_eq!(
        r.verdict.evidence,
        vec!["twin: the same placement as cpus:2,3: any difference is noise".to_string()]
    );
}

/// Runs of the slots in `disturbed` are flagged the first `times` times
/// they run (other work took 60% of CPU 1).
struct Disturbed {
    disturbed: Vec<usize>,
    times: usize,
    seen: std::collections::BTreeMap<usize, usize>,
}

impl Executor for Disturbed {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        use pinsight_measure::{disturbance::CpuDisturbance, disturbance::Disturbance};
        let n = self.seen.entry(slot.index).or_default();
        *n += 1;
        let hit = self.disturbed.contains(&slot.index) && *n <= self.times;
        let mut r = record(1.0 + 0.01 * noise(slot.index, 3), None, 0);
        r.disturbance = Some(Disturbance {
            threshold: 0.05,
            disturbed: hit,
            plan_cpus: "0-1".into(),
            interval_s: 1.0,
            other_s: if hit { 0.6 } else { 0.0 },
            steal_s: 0.0,
            emulation_s: 0.0,
            resolution_s: 0.01,
            runnable_before: Some(1),
            runnable_after: Some(2),
            cpus: if hit {
                vec![CpuDisturbance {
                    cpu: 1,
                    share: 0.6,
                    share_min: 0.59,
                    steal_share: 0.0,
                }]
            } else {
                vec![]
            },
        });
        Ok(r)
    }
    fn prepare(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    fn set_governor(&mut self, _: Option<&str>) -> Result<(), SwitchError> {
        Ok(())
    }
}

/// Runs the slots of `h` not in `previous` into `w`, slots 2 and 7
/// disturbed on their first `times` attempts and rerun up to `rerun`
/// times; how many attempts ran.
fn run_disturbed(
    h: &Header,
    previous: &[RunLine],
    w: &mut JournalWriter,
    rerun: usize,
    times: usize,
) -> usize {
    let mut ex = Disturbed {
        disturbed: vec![2, 7],
        times,
        seen: Default::default(),
    };
    let out = pinsight_compare::experiment::execute(
        h,
        previous,
        w,
        &mut ex,
        &mut Silent,
        &mut Always,
        false,
        rerun,
        &|| false,
    );
    assert!(matches!(out, Outcome::Complete));
    ex.seen.values().sum::<usize>()
}

#[test]
fn disturbed_runs_are_rerun_journaled_and_named_in_the_verdict() {
    let d = tempfile::tempdir().unwrap();
    let h = header(&["os", "compact"], 5, 0, 9);
    let run = |name: &str, rerun: usize, times: usize| {
        let path = d.path().join(name);
        let mut w = JournalWriter::create(&path, &h).unwrap();
        run_disturbed(&h, &[], &mut w, rerun, times);
        let j = Journal::read(&path).unwrap();
        analyse(&h, &j.runs, Status::Complete, vec![])
    };
    // No rerun: two disturbed runs out of ten, worst CPU 1 at 60%.
    let r = run("none.jsonl", 0, 1);
    assert_eq!(r.runs.len(), 10);
    let dist = r.disturbance.as_ref().unwrap();
    assert_eq!((dist.summary.measured, dist.summary.disturbed), (10, 2));
    assert_eq!(dist.summary.worst_cpu, Some(1));
    assert_eq!(dist.rerun, 0);
    let caveats: Vec<String> = r.verdict.caveats.iter().map(|c| c.to_string()).collect();
    assert!(
        caveats
            .iter()
            .any(|c| c.contains("2 of 10 runs disturbed") && c.contains("CPU 1, 60%")),
        "{caveats:?}"
    );
    // One rerun each: the disturbed attempts stay in the journal, marked;
    // the clean reruns fill their slots.
    let r = run("once.jsonl", 3, 1);
    assert_eq!(r.runs.len(), 12);
    let marked: Vec<usize> = r
        .runs
        .iter()
        .filter(|l| l.record.disturbance.as_ref().unwrap().disturbed)
        .map(|l| l.slot)
        .collect();
    assert_eq!(marked, [2, 7]);
    let dist = r.disturbance.as_ref().unwrap();
    assert_eq!((dist.summary.disturbed, dist.rerun), (0, 2));
    assert!(r
        .verdict
        .caveats
        .iter()
        .all(|c| !c.to_string().contains("disturb")));
    // Still disturbed after the limit: the last attempt counts.
    let r = run("limit.jsonl", 2, 10);
    assert_eq!(r.runs.len(), 14, "two reruns of each of the two slots");
    let dist = r.disturbance.as_ref().unwrap();
    assert_eq!((dist.summary.disturbed, dist.rerun), (2, 4));
}

#[test]
fn resume_reruns_a_disturbed_slot_within_the_limit_counting_earlier_attempts() {
    use pinsight_compare::experiment::done_slots_with;
    let d = tempfile::tempdir().unwrap();
    let h = header(&["os", "compact"], 5, 0, 9);
    let path = d.path().join("j.jsonl");
    // One session of `ex` over what the journal holds; how many it ran.
    let session = |rerun: usize, times: usize| {
        let previous = Journal::read(&path).map(|j| j.runs).unwrap_or_default();
        let mut w = if previous.is_empty() {
            JournalWriter::create(&path, &h).unwrap()
        } else {
            JournalWriter::resume(&path).unwrap().0
        };
        run_disturbed(&h, &previous, &mut w, rerun, times)
    };
    // Without reruns slots 2 and 7 end disturbed (one attempt each).
    assert_eq!(session(0, 1), 10);
    let runs = Journal::read(&path).unwrap().runs;
    assert_eq!(done_slots_with(&runs, false, 0).len(), 10);
    assert_eq!(done_slots_with(&runs, false, 1).len(), 8);
    // Resumed with one rerun allowed: only those two run again (clean).
    assert_eq!(session(1, 0), 2);
    let j = Journal::read(&path).unwrap();
    let r = analyse(&h, &j.runs, Status::Complete, vec![]);
    let dist = r.disturbance.as_ref().unwrap();
    assert_eq!((dist.summary.disturbed, dist.rerun), (0, 2));
    // Done now under any limit: a clean latest attempt.
    assert_eq!(session(5, 10), 0);

    // Still disturbed: each resume spends what is left of the limit, never
    // more than one uninterrupted experiment would.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(session(1, 10), 12, "ten slots and one rerun each of 2, 7");
    assert_eq!(session(1, 10), 0, "the limit is spent: nothing reruns");
    assert_eq!(session(3, 10), 4, "two more reruns each of 2 and 7");
    let runs = Journal::read(&path).unwrap().runs;
    assert_eq!(runs.iter().filter(|l| l.slot == 2).count(), 4);
}
