//! The `/proc/stat` reader behind the disturbance of a run: arbitrary text
//! (split at the first NUL into a "before" and an "after" file) goes
//! through `pinsight_sys::cpustat::parse_proc_stat` and, when both parse,
//! through `pinsight_measure::disturbance::estimate`. Checks: accepted
//! files have a CPU; every share lies in [0, 1], is finite, and `share_min`
//! never exceeds its CPU's busy share; times are finite and non-negative.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_measure::disturbance::{estimate, Sample};
use pinsight_sys::cpustat::parse_proc_stat;
use std::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (a, b) = text.split_once('\0').unwrap_or((text, text));
    let (Some(before), Some(after)) = (parse_proc_stat(a), parse_proc_stat(b)) else {
        return;
    };
    assert!(!before.cpus.is_empty() && !after.cpus.is_empty());
    let t0 = Instant::now();
    let program = (data.len() % 7) as f64 * 0.1;
    let d = estimate(
        &Sample::from_parts(before, t0, 0.0),
        &Sample::from_parts(after, t0 + Duration::from_millis(250), 0.01),
        None,
        program,
        100,
        0.05,
    );
    assert!(d.other_s.is_finite() && d.other_s >= 0.0, "{d:?}");
    assert!(d.steal_s.is_finite() && d.steal_s >= 0.0, "{d:?}");
    for c in &d.cpus {
        for s in [c.share, c.share_min, c.steal_share] {
            assert!(s.is_finite() && (0.0..=1.0).contains(&s), "{d:?}");
        }
    }
});
