//! Measuring on this machine, with small caps so the whole file stays
//! short. Needs 2 usable CPUs (any two this process may use); on a 1-CPU
//! runner the live tests are skipped through `pinsight_testkit::skip`,
//! which logs and counts them (the errors are what is checked there
//! instead).

use pinsight_cpuset::CpuSet;
use pinsight_latency::measure::{
    self, choose_cpus, usable_cpus, CpuChoiceError, MeasureConfig, MeasureError, Method,
};
use pinsight_latency_model::LatencyMatrix;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use pinsight_testkit::progress::Recorder;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Calls `f(done)` at each step of the progress (between the pairs).
struct OnStep<F: FnMut(u64)>(F);

impl<F: FnMut(u64)> Progress for OnStep<F> {
    fn step(&mut self, _: &str, done: u64) {
        (self.0)(done)
    }
}

/// Live tests take turns: two measurements at once on a 2-CPU machine
/// would preempt each other and measure the scheduler instead.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Catches a pair that never stops: far above the 60 ms cap per pair, so
/// a busy machine cannot trip it.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// Any two CPUs this process may use, or a logged skip.
fn two_cpus() -> Option<Vec<usize>> {
    let (online, allowed) = usable_cpus(&FsRoot::live()).unwrap();
    match choose_cpus(None, &online, &allowed) {
        Ok(cpus) => Some(cpus.into_iter().take(2).collect()),
        Err(e) => {
            pinsight_testkit::skip(format!("live measurement: {e}"));
            None
        }
    }
}

fn quick(cpus: Vec<usize>, method: Method, parallel: bool) -> MeasureConfig {
    MeasureConfig {
        cpus,
        method,
        parallel,
        max_time_per_pair: Duration::from_millis(60),
        ..MeasureConfig::default()
    }
}

#[test]
fn measures_both_methods_on_two_cpus_with_statistics() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    for method in [Method::Cas, Method::Msg] {
        let mut seen = Recorder::default();
        let t0 = Instant::now();
        let r =
            measure::measure_with_progress(&quick(cpus.clone(), method, true), &mut seen).unwrap();
        assert!(
            t0.elapsed() < HANG_GUARD,
            "{method}: took {:?}",
            t0.elapsed()
        );
        let m = &r.matrix;
        assert_eq!(m.cpus, cpus);
        assert_eq!(m.method.as_deref(), Some(method.as_str()));
        assert_eq!(m.source.as_deref(), Some("measured"));
        let v = m.get(1, 0);
        assert!(
            v > 0.5 && v < 100_000.0,
            "{method}: implausible one-way latency {v} ns"
        );
        assert_eq!(m.get(0, 1), v);
        let s = m.stats.as_ref().unwrap()[1][0].clone().unwrap();
        assert_eq!(s.median_ns, v);
        assert!(s.ci_low_ns <= v && v <= s.ci_high_ns, "{s:?}");
        assert!(s.samples >= 16 || s.noisy, "{s:?}");
        if !s.noisy {
            assert!(s.ci_high_ns <= v * 1.01 && s.ci_low_ns >= v * 0.99, "{s:?}");
        }
        assert!(r.skipped.is_empty());
        assert_eq!((r.rounds_run, r.rounds_planned), (1, 1));
        // One task named after the method, one step for the one pair.
        let tasks = seen.tasks();
        assert_eq!(tasks.len(), 1, "{seen:?}");
        assert_eq!(tasks[0].what, format!("core-to-core latency ({method})"));
        assert_eq!((tasks[0].total, tasks[0].done, tasks[0].steps), (1, 1, 1));
        assert_eq!(
            tasks[0].labels,
            [format!("core-to-core latency ({method}), round 1/1")]
        );
    }
}

#[test]
fn sequential_measures_the_same_pair_the_same_way() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    let r = measure::measure(&quick(cpus, Method::Cas, false)).unwrap();
    assert_eq!((r.rounds_run, r.rounds_planned), (1, 1));
    assert!(!r.matrix.get(1, 0).is_nan());
}

#[test]
fn a_spent_budget_skips_pairs_and_says_which() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    let c = MeasureConfig {
        budget: Some(Duration::ZERO),
        ..quick(cpus.clone(), Method::Cas, true)
    };
    let r = measure::measure(&c).unwrap();
    assert_eq!(r.skipped, vec![(cpus[1], cpus[0])]);
    assert_eq!(r.rounds_run, 0);
    assert!(r.matrix.get(1, 0).is_nan());
    assert!(r.matrix.stats.as_ref().unwrap()[1][0].is_none());
    // With repeats the budget covers every run: none completes.
    let r = measure::measure(&MeasureConfig { repeats: 3, ..c }).unwrap();
    assert_eq!(r.skipped, vec![(cpus[1], cpus[0])]);
    assert!(r.fewer_runs.is_empty());
    assert_eq!((r.runs_planned, r.runs_completed), (3, 0));
    assert_eq!((r.rounds_run, r.rounds_planned), (0, 3));
}

#[test]
fn a_measured_matrix_survives_csv_and_json() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    let r = measure::measure(&quick(cpus, Method::Cas, true)).unwrap();
    let back = LatencyMatrix::parse_csv(&r.matrix.to_csv(), "measured.csv").unwrap();
    assert_eq!(back.cpus, r.matrix.cpus);
    assert_eq!(back.get(1, 0), r.matrix.get(1, 0));
    let json = serde_json::to_string(&r.matrix).unwrap();
    let again: LatencyMatrix = serde_json::from_str(&json).unwrap();
    let (a, b) = (
        again.stats.as_ref().unwrap()[1][0].clone().unwrap(),
        r.matrix.stats.as_ref().unwrap()[1][0].clone().unwrap(),
    );
    // serde_json's default float parsing may be off by one ulp.
    assert!((a.median_ns - b.median_ns).abs() <= b.median_ns * 1e-12);
    assert_eq!((a.samples, a.noisy), (b.samples, b.noisy));
    again.validate().unwrap();
}

#[test]
fn cpus_this_process_may_not_use_are_refused_by_name() {
    let (online, allowed) = usable_cpus(&FsRoot::live()).unwrap();
    let beyond = online.last().unwrap() + 1;
    let mut req = allowed.clone();
    req.insert(beyond);
    let e = choose_cpus(Some(&req), &online, &allowed).unwrap_err();
    assert_eq!(e.requested(), Some(&req));
    assert!(
        matches!(&e, CpuChoiceError::Unusable { offline, .. } if *offline == CpuSet::single(beyond)),
        "{e:?}"
    );
    assert!(
        e.to_string().contains(&format!("CPU {beyond} is offline")),
        "{e}"
    );
    // One CPU this process may use: a request too small, whichever it is.
    let one = CpuSet::single(allowed.first().unwrap());
    let e = choose_cpus(Some(&one), &online, &allowed).unwrap_err();
    assert!(matches!(e, CpuChoiceError::TooFewRequested { .. }), "{e:?}");
    assert!(e.to_string().contains("needs at least 2 CPUs"), "{e}");
}

#[test]
fn pinning_failure_is_an_error_not_a_hang() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    // A CPU that does not exist: both threads must give up together.
    let c = quick(vec![cpus[0], 4095], Method::Cas, true);
    let e = measure::measure(&c).unwrap_err();
    match &e {
        MeasureError::Pin { failures } => {
            assert!(
                !failures.is_empty() && failures.iter().all(|f| f.cpu == 4095),
                "{e:?}"
            )
        }
        other => panic!("expected a pinning failure, got {other:?}"),
    }
    assert!(
        e.to_string().contains("cannot pin a thread to CPU 4095"),
        "{e}"
    );
}

#[test]
fn repeats_measure_the_whole_matrix_again_and_keep_every_run_median() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    let c = MeasureConfig {
        repeats: 3,
        max_time_per_pair: Duration::from_millis(30),
        ..quick(cpus.clone(), Method::Cas, true)
    };
    let mut seen = Recorder::default();
    let r = measure::measure_with_progress(&c, &mut seen).unwrap();
    assert_eq!((r.runs_planned, r.runs_completed), (3, 3));
    assert_eq!((r.rounds_run, r.rounds_planned), (3, 3));
    assert!(r.fewer_runs.is_empty() && r.skipped.is_empty());
    // The progress counts every run: the bar reaches its end once.
    let tasks = seen.tasks();
    assert_eq!(tasks.len(), 1, "{seen:?}");
    assert_eq!((tasks[0].total, tasks[0].done, tasks[0].steps), (3, 3, 3));
    let runs: Vec<&str> = tasks[0]
        .labels
        .iter()
        .map(|l| l.split(", ").nth(1).unwrap_or(""))
        .collect();
    assert_eq!(runs, ["run 1/3", "run 2/3", "run 3/3"]);
    let s = r.matrix.stats.as_ref().unwrap()[1][0].clone().unwrap();
    assert_eq!(s.run_medians_ns.len(), 3);
    let mut sorted = s.run_medians_ns.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(s.median_ns, sorted[1]);
    assert_eq!(r.matrix.get(1, 0), s.median_ns);
    let spread = r.run_to_run().unwrap();
    assert_eq!(spread.pairs, 1);
    assert_eq!(spread.max_pair, (cpus[1], cpus[0]));
    assert_eq!(Some(spread.max_rel), s.run_to_run_rel());
    // One run: no run-to-run figure, but the single median is recorded.
    let one = measure::measure(&quick(cpus, Method::Cas, true)).unwrap();
    assert!(one.run_to_run().is_none());
    let s = one.matrix.stats.as_ref().unwrap()[1][0].clone().unwrap();
    assert_eq!(s.run_medians_ns, vec![s.median_ns]);
}

/// A busy loop pinned to one of the pair's CPUs from the end of the first
/// run's pair to the end of the second's (started and killed from the
/// progress callback, which runs as a run's one pair ends, inside that
/// run's disturbance window) shares that CPU with the pinger for the
/// whole middle run: that run's disturbance names the CPU and the pair is
/// noisy. The run medians alone need not show it (a median is robust to
/// the few round trips a time slice spoils: runs of 125.6, 126.1 and 125.6
/// ns were seen with the loop in the middle one), so each run is made long
/// enough (500 samples of 100 µs) for `/proc/stat`'s 10 ms ticks to see
/// the loop's share.
#[test]
fn a_busy_loop_between_repeats_makes_the_pair_noisy() {
    use std::process::{Command, Stdio};
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    let one: CpuSet = [cpus[1]].into_iter().collect();
    let mut busy: Option<std::process::Child> = None;
    let config = MeasureConfig {
        repeats: 3,
        min_samples: 500,
        max_time_per_pair: Duration::from_millis(400),
        ..quick(cpus.clone(), Method::Cas, true)
    };
    // Two CPUs: one pair per run, so step k ends run k (1-based).
    let r = measure::measure_with_progress(
        &config,
        &mut OnStep(|done| {
            if done == 1 {
                let mut c = Command::new("sh");
                c.args(["-c", "while :; do :; done"]).stdin(Stdio::null());
                pinsight_sys::affinity::set_affinity_before_exec(&mut c, &one).unwrap();
                busy = Some(c.spawn().unwrap());
                std::thread::sleep(Duration::from_millis(50)); // let it start
            } else if let Some(b) = busy.as_mut() {
                // Killed, not yet reaped: a reaped child's CPU time joins
                // this process's own (RUSAGE_CHILDREN), which the run's
                // disturbance subtracts as the harness's.
                let _ = b.kill();
            }
        }),
    );
    if let Some(mut b) = busy.take() {
        let _ = b.kill();
        let _ = b.wait();
    }
    let r = r.unwrap();
    let s = r.matrix.stats.as_ref().unwrap()[1][0].clone().unwrap();
    assert_eq!(s.run_medians_ns.len(), 3, "{s:?}");
    assert!(s.noisy, "{s:?}");
    assert_eq!(r.noisy(), vec![(cpus[1], cpus[0])]);
    // One disturbance per run; the middle one names the loop's CPU.
    assert_eq!(r.disturbance.len(), 3);
    assert!(r.disturbance.iter().all(Option::is_some));
    let middle = r.disturbance[1].as_ref().unwrap();
    // Over the threshold on the loop's CPU. Which CPU is the worst is not
    // asserted: the measuring threads run on both CPUs, and how their
    // time splits between them is unknown to /proc/stat (`share_min` 0),
    // so the estimate may put some of the loop's time on the other CPU.
    assert!(middle.disturbed_cpu(cpus[1]), "{middle:?}");
}

/// `spacing`: run k starts no earlier than k × spacing after the first.
#[test]
fn spaced_runs_cover_the_time_asked() {
    let _turn = one_at_a_time();
    let Some(cpus) = two_cpus() else { return };
    let mut starts: Vec<(u64, Instant)> = Vec::new();
    let t0 = Instant::now();
    let config = MeasureConfig {
        repeats: 3,
        spacing: Some(Duration::from_millis(150)),
        max_time_per_pair: Duration::from_millis(20),
        ..quick(cpus, Method::Cas, true)
    };
    // Two CPUs: one pair per run, so step 3 ends the third run.
    let r = measure::measure_with_progress(
        &config,
        &mut OnStep(|done| starts.push((done, Instant::now()))),
    )
    .unwrap();
    assert_eq!(r.runs_completed, 3);
    let third = starts.iter().find(|s| s.0 == 3).unwrap().1;
    assert!(third - t0 >= Duration::from_millis(300), "{:?}", third - t0);
}
