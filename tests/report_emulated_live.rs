//! `report` and `speed` on the emulated hybrid measure one speedup factor
//! (issue 34, "one measurement per quantity"): `pinsight emulate --kinds
//! P:P,E:E@0.5` slows the second usable CPU to half speed with a
//! SCHED_FIFO duty-cycle stealer, and `report`'s speed pass, run as
//! `speed` runs it (one `SpeedSession`, descheduled time counted), must
//! find the P/E speedup factor `speed` finds: the compute kernels' factor
//! within 10% of speed's and of 2.0, and each kernel's within 15% of 2.0.
//! Before, `report` dropped the stealer's slices as disturbed chunks and
//! said 0.94-1.00 while `speed` said 1.9-2.0; and both counted the
//! stealer's run time as other work in their disturbance.
//!
//! The figures compared are the compute kernels' (`int`, `fp`), which a
//! duty cycle slows by exactly its time share. `mem` is left out: its
//! 8 MiB chase buffer lives in an L3 shared with whatever else runs on
//! the host, so its per-CPU figure swings with their traffic (on the
//! 2-vCPU VM this was written on, without any emulation, CPU 0 and CPU 1
//! chased 48 and 8 M loads/s in one run and 8.4 and 9.8 in the next),
//! and its ratio is not the emulated one.
//!
//! The premise is measured, not assumed: the emulation's calibrated speed
//! and the speed it held during the test (the stealer's own CPU time) are
//! within 5% of 0.5, and no other work took more than 5% of either CPU
//! (`pinsight_testkit::premise`); otherwise a counted skip with the
//! figures, never a failure or a pass by luck.

use crate::common_emulation::{begin, require_premise};
use pinsight_testkit::premise;
use serde_json::Value;
use std::process::Output;

/// The speed asked of the slowed CPU, and the speedup factor it makes.
const SPEED: f64 = 0.5;
/// Relative tolerance of the emulated speed (the premise).
const HELD: f64 = 0.05;
/// Relative tolerance of the compute kernels' speedup factor (the
/// assertion): between the two runs, and to the emulated factor.
const AGREE: f64 = 0.10;
/// Relative tolerance of one kernel's factor to the emulated one.
const KERNEL: f64 = 0.15;
/// Steps of the program timed directly on each CPU (about 0.5 s on P).
const PACE_SIZE: &str = "6e8";

fn ok_json(o: Output, what: &str) -> Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}: stdout {}", String::from_utf8_lossy(&o.stdout)))
}

/// The measured P/E speedup factor of `kernel` in a speed report (`speed
/// --json`, or `report --json`'s `speed`).
fn factor(speed: &Value, kernel: &str) -> f64 {
    speed["speedups"]
        .as_array()
        .unwrap_or_else(|| panic!("no speedups in {speed:#}"))
        .iter()
        .find(|p| p["kernel"] == kernel)
        .and_then(|p| p["measured"].as_f64())
        .unwrap_or_else(|| panic!("no {kernel} speedup in {speed:#}"))
}

#[test]
fn report_finds_the_speedup_factor_speed_finds_on_the_emulated_hybrid() {
    // Refused beside another real-time task (another emulation's stealer).
    let Some((live, em)) = begin(SPEED) else {
        return;
    };
    let e = em.e;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The pace a program really sees on each CPU, timed directly before
    // and after report and speed: the factor both should find.
    let before = em.pace(d, 3, PACE_SIZE);
    // Speed alone (no latency), 1 s a CPU: the same session `speed` runs
    // with its defaults.
    let report = ok_json(
        em.pinsight(d)
            .args([
                "report",
                "--quiet",
                "--json",
                "--no-latency",
                "--budget",
                "4s",
            ])
            .arg("--export-html")
            .arg(d.join("r.html"))
            .arg("--export-json")
            .arg(d.join("r.json"))
            .output()
            .unwrap(),
        "report",
    );
    let speed = ok_json(
        em.pinsight(d)
            .args(["speed", "--quiet", "--json"])
            .output()
            .unwrap(),
        "speed",
    );
    let after = em.pace(d, 3, PACE_SIZE);
    let rs = &report["speed"];
    assert_eq!(
        rs["budget_per_cpu_s"], speed["budget_per_cpu_s"],
        "report's speed pass should have speed's default budget"
    );
    // Measured as speed measures the emulated machine, and said so.
    assert_eq!(rs["time_share"], true, "{rs:#}");
    assert_eq!(speed["time_share"], true);
    let conditions = report["conditions"].to_string();
    assert!(
        conditions.contains("descheduled time included"),
        "{conditions}"
    );
    let figures: Vec<(&str, f64, f64)> = ["int", "fp"]
        .into_iter()
        .map(|k| (k, factor(rs, k), factor(&speed, k)))
        .collect();
    let seen = em.speed_seen();
    // mem and report's headline (the kernels' geometric mean) are shown,
    // not asserted (see the module doc).
    let headline = report["suggestions"]
        .as_array()
        .and_then(|s| {
            s.iter()
                .filter_map(|s| s.as_str())
                .find(|s| s.contains("speedup factor"))
        })
        .unwrap_or("no speedup sentence")
        .to_string();
    eprintln!(
        "P/E speedup factor (report, speed): {figures:?}; mem ({:.2}, {:.2}); report says \
         {headline:?}; emulated speed asked {SPEED}, calibrated {:.3}, held {seen:.3}",
        factor(rs, "mem"),
        factor(&speed, "mem"),
        em.achieved
    );
    // The premise: the emulation held the speed asked (calibrated and
    // during the test, by the stealer's own CPU time), and nothing else
    // took the CPUs.
    for (what, s) in [("calibrated", em.achieved), ("held", seen)] {
        // NaN (the stealer gone) fails the premise too.
        let off = (s - SPEED).abs();
        if off.is_nan() || off > HELD * SPEED {
            pinsight_testkit::skip_test!(
                "premise failed: the emulation {what} speed {s:.3} of CPU {e}, \
                 not within {:.0}% of {SPEED}",
                HELD * 100.0
            );
        }
    }
    pinsight_testkit::require_quiet!(live, premise::QUIET);
    // The host kept each CPU's pace (see `steady`), and the emulated
    // machine is the one asked: a program timed directly runs 1/SPEED
    // times longer on the slowed CPU. On a shared VM the host sometimes
    // runs one vCPU 20-25% slower for tens of seconds; report and speed
    // then rightly find another factor than 2.
    require_premise!(crate::common_emulation::steady(before, after));
    let direct = (before.ratio() + after.ratio()) / 2.0;
    if (direct * SPEED - 1.0).abs() > crate::common_emulation::STEADY {
        pinsight_testkit::skip_test!(
            "premise failed: a program timed directly runs E/P {direct:.2} here, not {:.1} \
             (the host ran the two CPUs at different paces)",
            1.0 / SPEED
        );
    }
    // The stealer's run time (half of CPU e) is the emulated slowness,
    // not other work: both leave it out of their disturbance.
    for (who, v) in [("report", rs), ("speed", &speed)] {
        let share = v["disturbance"]["cpus"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["cpu"] == e))
            .and_then(|c| c["share"].as_f64())
            .unwrap_or(0.0);
        assert!(
            share < 0.25,
            "{who} counts the stealer of CPU {e} as other work ({:.0}% of it): {}",
            share * 100.0,
            v["disturbance"]
        );
    }
    let expected = 1.0 / SPEED;
    // The two runs agree on the compute kernels' factor (their geometric
    // mean, as report's headline combines kernels): one kernel's figure
    // alone carries a run's noise, from the host and from where its
    // 83 ms slots fall in the stealer's cycle (seen on this VM: int 2.13
    // by report and 1.86 by speed, fp 2.03 and 2.00, each within 10% of
    // the emulated 2.0, in one run whose direct pace held E/P 2.02-2.04).
    // The old fault this guards against was a factor of two apart.
    let geo_mean = |xs: Vec<f64>| xs.iter().product::<f64>().powf(1.0 / xs.len() as f64);
    let r = geo_mean(figures.iter().map(|f| f.1).collect());
    let s = geo_mean(figures.iter().map(|f| f.2).collect());
    assert!(
        (r / s - 1.0).abs() <= AGREE,
        "report's P/E speedup factor of the compute kernels {r:.3} is not within 10% of \
         speed's {s:.3}: {figures:?}"
    );
    // Each run's compute factor is within 10% of the emulated one, and
    // each kernel's within 15% (one kernel's run-to-run spread here:
    // int 1.82-2.13 over five runs with the premise held).
    for (who, f) in [("report", r), ("speed", s)] {
        assert!(
            (f / expected - 1.0).abs() <= AGREE,
            "{who}'s P/E speedup factor of the compute kernels {f:.3}, the emulation makes \
             {expected:.1} (held speed {seen:.3}): {figures:?}"
        );
    }
    for (kernel, r, s) in figures {
        for (who, f) in [("report", r), ("speed", s)] {
            assert!(
                (f / expected - 1.0).abs() <= KERNEL,
                "{kernel}: {who}'s P/E speedup factor {f:.3}, the emulation makes {expected:.1} \
                 (held speed {seen:.3})"
            );
        }
    }
}
