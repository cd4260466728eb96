//! Program metrics (`--metric`): the presets read the real output of the
//! Debian tools (tests/fixtures/output, captured from sysbench 1.0.20,
//! stress-ng 0.15.06, 7-Zip 22 `7zz b` and hyperfine 1.15), and the
//! experiment loop, analysis and verdict use them: direction-aware, a
//! missing figure named, and the fixed-duration check firing when wall
//! time agrees but the program's own figures do not. The report's
//! `results[]` has every field of hyperfine's JSON export with its type.

use crate::common;
use pinsight_compare::experiment::{Executor, SwitchError};
use pinsight_compare::journal::{ArmHeader, Header, RunOutputRef};
use pinsight_compare::output::{CaptureError, Kept};
use pinsight_compare::program_metric::{self, figures_in, Better, MetricSpec};
use pinsight_compare::{Advice, Decision, Slot};
use pinsight_cpuset::CpuSet;
use pinsight_measure::{RunError, RunRecord};

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/output")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn preset(name: &str) -> Vec<MetricSpec> {
    program_metric::parse(name, &[]).unwrap()
}

fn read(specs: &[MetricSpec], text: &str) -> Vec<Result<f64, String>> {
    specs.iter().map(|m| m.extract(text)).collect()
}

#[test]
fn sysbench_preset_reads_events_per_second_and_latency() {
    let s = preset("sysbench");
    assert_eq!(s[0].name, "events_per_s");
    assert_eq!(s[0].better, Better::Higher);
    assert_eq!(
        read(&s, &fixture("sysbench-cpu.txt")),
        vec![Ok(10305.51), Ok(0.19), Ok(0.20)]
    );
    // Another sysbench test has no "events per second": named, not zero.
    let e = s[0]
        .extract("Total operations: 10 (5 per second)")
        .unwrap_err();
    assert!(e.contains("no match"), "{e}");
}

#[test]
fn seven_zip_preset_reads_the_total_rating() {
    let s = preset("7zip");
    assert_eq!(s[0].name, "rating_mips");
    assert_eq!(read(&s, &fixture("7zz-b.txt")), vec![Ok(13062.0)]);
}

#[test]
fn stress_ng_preset_reads_bogo_ops_per_second_real_time() {
    let s = preset("stress-ng");
    // --metrics-brief, and --metrics with its two extra columns.
    assert_eq!(read(&s, &fixture("stress-ng-cpu.txt")), vec![Ok(4371.66)]);
    assert_eq!(
        read(&s, &fixture("stress-ng-metrics.txt")),
        vec![Ok(2198.17)]
    );
}

#[test]
fn hyperfine_preset_reads_its_json_export() {
    let s = preset("hyperfine");
    assert_eq!(s[0].better, Better::Lower);
    assert_eq!(
        read(&s, &fixture("hyperfine-json.txt")),
        vec![Ok(0.0005665653333333334)]
    );
}

#[test]
fn figures_are_labelled_by_what_precedes_them() {
    let f = figures_in(&fixture("sysbench-cpu.txt"));
    let get = |l: &str| f.iter().find(|x| x.0 == l).map(|x| x.1);
    assert_eq!(get("events per second:"), Some(10305.51));
    assert_eq!(get("total number of events:"), Some(10316.0));
    // A pid in a log prefix is no figure.
    let f = figures_in(&fixture("stress-ng-cpu.txt"));
    assert!(!f.iter().any(|x| x.1 == 7847.0), "{f:?}");
}

/// A pinned arm is pinned thread by thread: not os's placement (arms
/// with the same placement are never ranked apart).
fn arm(id: &str) -> ArmHeader {
    let places = if id == "os" {
        vec![]
    } else {
        vec![CpuSet::single(0), CpuSet::single(1)]
    };
    common::arm(id, "0-1", places)
}

fn header(metrics: Vec<MetricSpec>) -> Header {
    Header {
        metrics,
        ..common::header(
            &["/usr/bin/sysbench", "cpu", "run"],
            vec![arm("os"), arm("p-pinned")],
            8,
            0,
            5,
        )
    }
}

/// Like sysbench --time=1: every run takes 1.00 s; arm 1 does 20 % more
/// events per second. `blank` slots print nothing.
struct FixedTime {
    blank: Vec<usize>,
    /// Other work stretches every third run of arm 1 by 6%.
    loaded: bool,
    last: Option<Kept>,
}

impl Executor for FixedTime {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        let jitter = (slot.index % 3) as f64;
        let rate = if slot.arm == 1 { 1200.0 } else { 1000.0 } + 10.0 * jitter;
        let text = if self.blank.contains(&slot.index) {
            String::new()
        } else {
            format!(
                "CPU speed:\n    events per second: {rate:.2}\n\nLatency (ms):\n         avg:   {:.2}\n",
                2000.0 / rate
            )
        };
        self.last = Some(Kept {
            reference: RunOutputRef {
                path: format!("j.jsonl.out/arm-{}-run-{}.txt", slot.arm, slot.index),
                bytes: text.len() as u64,
                cut_bytes: 0,
                figures: figures_in(&text),
            },
            path: "unused".into(),
            text,
        });
        let stretched = self.loaded && slot.arm == 1 && slot.index.is_multiple_of(3);
        let wall = (1.0 + 0.001 * jitter) * if stretched { 1.06 } else { 1.0 };
        Ok(RunRecord {
            user_s: 1.9,
            sys_s: 0.01,
            max_rss_kib: 5000,
            max_rss_floor_kib: 1000,
            ..RunRecord::exited_ok(wall, "test")
        })
    }
    fn take_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        self.last.take().map(Ok)
    }
    fn prepare(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    fn set_governor(&mut self, _: Option<&str>) -> Result<(), SwitchError> {
        Ok(())
    }
}

fn experiment(h: &Header, blank: Vec<usize>) -> pinsight_compare::Report {
    experiment_on(h, blank, false)
}

fn experiment_on(h: &Header, blank: Vec<usize>, loaded: bool) -> pinsight_compare::Report {
    let mut exec = FixedTime {
        blank,
        loaded,
        last: None,
    };
    common::run_and_analyse(h, &mut exec).1
}

#[test]
fn the_verdict_is_on_the_metric_and_higher_is_better() {
    let r = experiment(&header(preset("sysbench")), vec![]);
    assert_eq!(r.verdict.objective, "events_per_s");
    assert_eq!(
        r.verdict.decision,
        Decision::Use {
            arm: "p-pinned".into()
        },
        "{:?}",
        r.verdict
    );
    assert!(
        r.verdict.headline.contains("events_per_s 20% higher"),
        "{}",
        r.verdict.headline
    );
    let m = &r.arms[1].metrics_vs_baseline[0];
    assert!(m.versus.ratio > 1.15, "ratio {}", m.versus.ratio);
    // The summary has an interval; the run line keeps value and file.
    let s = r.arms[1].metric("events_per_s").unwrap();
    assert!(s.summary.as_ref().unwrap().mean_ci.is_some());
    assert!(r.runs[0].metrics["events_per_s"].get().is_some());
    assert!(r.runs[0].output.as_ref().unwrap().path.contains("run-0"));
    // Wall time agrees: the fixed-duration note says the verdict is on the metric.
    let f = r.verdict.fixed_duration.as_ref().expect("fixed duration");
    assert!(f.metric_used);
    // Lower latency is better too: the arm's latency is 17% lower.
    let lat = &r.arms[1].metrics_vs_baseline[1];
    assert_eq!(lat.key, "latency_avg_ms");
    assert!(lat.versus.ratio > 1.1, "{}", lat.versus.ratio);
}

#[test]
fn fixed_duration_is_named_without_a_metric() {
    let r = experiment(&header(vec![]), vec![]);
    let f = r.verdict.fixed_duration.as_ref().expect("fixed duration");
    assert!(!f.metric_used);
    assert_eq!(f.preset.as_deref(), Some("sysbench"));
    assert!(
        r.verdict.headline.starts_with("Wall time cannot decide"),
        "{}",
        r.verdict.headline
    );
    let c = &r.verdict.caveats[0];
    assert_eq!(
        c.advice,
        Some(Advice::UseMetric {
            preset: Some("sysbench")
        })
    );
    assert!(c.text.contains("\"events per second:\""), "{}", c.text);
}

#[test]
fn fixed_duration_is_named_on_a_loaded_machine_by_the_fastest_runs() {
    // Arm 1's mean is 2% above arm 0's (stretched runs); its fastest runs
    // still take the set time.
    let r = experiment_on(&header(vec![]), vec![], true);
    let f = r.verdict.fixed_duration.as_ref().expect("fixed duration");
    assert!(f.by_fastest && f.wall_spread_percent < 1.0, "{f:?}");
    let c = &r.verdict.caveats[0];
    assert!(c.text.contains("fastest run"), "{}", c.text);
}

#[test]
fn a_missing_figure_is_a_named_failed_measurement() {
    let r = experiment(&header(preset("sysbench")), vec![0, 3]);
    let missing: usize = r
        .arms
        .iter()
        .map(|a| a.metric("events_per_s").unwrap().missing_runs)
        .sum();
    assert_eq!(missing, 2);
    let caveat = r
        .verdict
        .caveats
        .iter()
        .find(|c| c.text.contains("failed measurement"))
        .expect("named");
    assert!(
        caveat.text.contains("no match for /events per second"),
        "{}",
        caveat.text
    );
    let v = serde_json::to_value(&r.runs[0]).unwrap();
    assert!(
        v["metrics"]["events_per_s"]["unavailable"].is_string(),
        "{v}"
    );
}

/// JSON type of a value, for comparing with hyperfine's export.
fn kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Array(a) => {
            format!("array of {}", a.first().map_or("anything".into(), kind))
        }
        serde_json::Value::Number(_) => "number".into(),
        serde_json::Value::String(_) => "string".into(),
        serde_json::Value::Bool(_) => "bool".into(),
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Object(_) => "object".into(),
    }
}

/// Every field of hyperfine's `results[]` entries (`hyperfine -N
/// --export-json`, the real export in the fixture) is in the report's
/// `results[]` with the same JSON type.
pub fn assert_hyperfine_compatible(hyperfine: &serde_json::Value, ours: &serde_json::Value) {
    let theirs = &hyperfine["results"][0];
    let mine = &ours["results"][0];
    let obj = theirs.as_object().expect("hyperfine result is an object");
    assert!(!obj.is_empty());
    for (k, v) in obj {
        assert_eq!(
            kind(&mine[k]),
            kind(v),
            "field {k}: hyperfine has {v}, pinsight {}",
            mine[k]
        );
    }
}

#[test]
fn results_match_hyperfines_export() {
    let r = experiment(&header(vec![]), vec![]);
    let ours = serde_json::to_value(&r).unwrap();
    let theirs: serde_json::Value = serde_json::from_str(&fixture("hyperfine-json.txt")).unwrap();
    assert_hyperfine_compatible(&theirs, &ours);
    let first = &ours["results"][0];
    assert_eq!(first["command"], "os: /usr/bin/sysbench cpu run");
    assert_eq!(first["times"].as_array().unwrap().len(), 8);
    assert_eq!(first["exit_codes"][0], 0);
    // pinsight's own report is all still there.
    assert!(ours["verdict"]["headline"].is_string());
    assert!(ours["arms"][0]["metrics"].is_array());
}
