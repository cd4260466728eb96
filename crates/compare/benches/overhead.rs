//! Per-run harness overhead of `pinsight compare` against a plain exec of
//! `true` (target: ≤ 2 ms added, median), printed as ratios.
//!
//! "compare run" is one iteration of the experiment loop as the command
//! runs it: build the arm's command, measure it with pinsight-measure
//! (counters, rusage, process group), append the record to the journal
//! (synced in batches, as the journal does). Two arms: `os` (nothing to
//! apply) and a pinned arm (start mask + LD_PRELOAD shim, which the
//! dynamic loader must map).
//! The counters' cost on a 1-second workload is pinsight-measure's bench.

use criterion::{Criterion, SamplingMode};
use pinsight_compare::command::PreparedArm;
use pinsight_compare::experiment::{LiveExecutor, Outcome};
use pinsight_compare::journal::{ArmPlan, Header, JournalWriter};
use pinsight_measure::{Measurer, Options};
use pinsight_plan::{plan, Policy, Request};
use pinsight_sys::spawn::{self, Spawn};
use pinsight_sys::FsRoot;
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

// The tests' experiment header and run-to-the-end, shared with the bench.
#[allow(dead_code)]
#[path = "../tests/common.rs"]
mod common;

// pinsight-measure's bench timings: record, then the median.
#[allow(dead_code)]
#[path = "../../measure/benches/support/samples.rs"]
mod samples;
use samples::{median, record};

/// One arm, `policy` planned as `p`, running `true` `runs` times.
fn header(policy: &str, p: &pinsight_plan::Plan, runs: usize) -> Header {
    let arm = common::arm_planned(policy, ArmPlan::from_plan(p));
    common::header(&["true"], vec![arm], runs, 0, 1)
}

fn bench(c: &mut Criterion) {
    let live = FsRoot::live();
    let topo = pinsight_topology::discover(&live);
    let first = topo.usable().first().expect("a usable CPU");
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("per_run");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(30)
        .measurement_time(Duration::from_secs(6));

    g.bench_function("plain exec true", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                let t1 = Instant::now();
                Command::new("true")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .status()
                    .unwrap();
                record("plain", t1.elapsed());
            }
            t.elapsed()
        })
    });

    // The two parts of a compare run: measuring, and the durable journal line.
    let (m, _) = Measurer::new(&live, Options::default());
    g.bench_function("measure only (Measurer::run true)", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                let t1 = Instant::now();
                let mut c = Spawn::new("true");
                c.stdin(spawn::Stdio::Null).stdout(spawn::Stdio::Null);
                m.run(c).unwrap();
                record("measure", t1.elapsed());
            }
            t.elapsed()
        })
    });
    let os_plan = plan(&topo, &Request::new(Policy::from_str("os").unwrap())).unwrap();
    let mut c0 = Spawn::new("true");
    c0.stdin(spawn::Stdio::Null).stdout(spawn::Stdio::Null);
    let sample = pinsight_compare::RunLine {
        slot: 0,
        arm: "os".into(),
        phase: pinsight_compare::Phase::Measured,
        rep: 0,
        started_unix: 0.0,
        record: m.run(c0).unwrap(),
        ranks: None,
        output: None,
        metrics: Default::default(),
    };
    let jpath = dir.path().join("append.jsonl");
    let mut jw = JournalWriter::create(&jpath, &header("os", &os_plan, 1)).unwrap();
    g.bench_function("journal append (batched fdatasync)", |b| {
        b.iter_custom(|n| {
            let t = Instant::now();
            for _ in 0..n {
                let t1 = Instant::now();
                jw.append(&sample).unwrap();
                record("journal", t1.elapsed());
            }
            t.elapsed()
        })
    });

    let mut k = 0;
    for (name, policy) in [
        ("compare run, os", "os".to_string()),
        ("compare run, pinned + shim", format!("cpus:{first}")),
    ] {
        let p = plan(&topo, &Request::new(Policy::from_str(&policy).unwrap())).unwrap();
        let key: &'static str = if policy == "os" { "os" } else { "pinned" };
        g.bench_function(name, |b| {
            b.iter_custom(|n| {
                k += 1;
                let h = header(&policy, &p, n as usize);
                let path = dir.path().join(format!("j{k}.jsonl"));
                let mut w = JournalWriter::create(&path, &h).unwrap();
                let (m, _) = Measurer::new(&live, Options::default());
                let arm = PreparedArm::new(&p, std::ffi::OsStr::new("true"), |_| false);
                let mut exec = LiveExecutor::new(
                    m,
                    vec!["true".into()],
                    vec![arm],
                    false,
                    None,
                    None,
                    live.clone(),
                    topo.usable(),
                )
                .unwrap();
                let t = Instant::now();
                let out = common::execute_all(&h, &mut w, &mut exec);
                let d = t.elapsed();
                assert!(matches!(out, Outcome::Complete));
                record(key, d.div_f64(n as f64));
                d
            })
        });
    }
    g.finish();

    let plain = median("plain");
    println!(
        "parts: Measurer::run(true) median {:.3} ms (+{:.3} ms over plain exec); journal append (batched fdatasync) median {:.3} ms",
        median("measure") * 1e3,
        (median("measure") - plain) * 1e3,
        median("journal") * 1e3
    );
    for key in ["os", "pinned"] {
        let m = median(key);
        println!(
            "compare per-run cost ({key}): median {:.3} ms vs plain exec {:.3} ms: ratio {:.2}, overhead {:+.3} ms (target ≤ 2 ms)",
            m * 1e3,
            plain * 1e3,
            m / plain,
            (m - plain) * 1e3
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
