//! The readers of `/proc/interrupts` and `/proc/softirqs` behind `pinsight
//! load` and `pinsight irq`: arbitrary text (split at the first NUL into a
//! "before" and an "after" reading) goes through
//! `pinsight_load::interrupts::parse_interrupts` and `parse_softirqs`, and
//! when both readings parse, through `pinsight_load::report::analyse` with a
//! two-CPU `/proc/stat`. Checks: accepted files have distinct CPU columns
//! and no line with more counts than columns; handler and queue names never
//! hold a comma; every share of the load lies in [0, 1]; every rate and
//! every IRQ's share of a hot CPU is finite and non-negative.
#![no_main]

#[path = "load_common.rs"]
mod load_common;

use libfuzzer_sys::fuzz_target;
use pinsight_load::interrupts::{parse_interrupts, parse_softirqs};
use pinsight_load::sample::Sample;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (a, b) = text.split_once('\0').unwrap_or((text, text));
    let ints = (parse_interrupts(a), parse_interrupts(b));
    let softs = (parse_softirqs(a), parse_softirqs(b));
    for i in [&ints.0, &ints.1].into_iter().flatten() {
        let mut cpus = i.cpus.clone();
        cpus.sort_unstable();
        cpus.dedup();
        assert_eq!(cpus.len(), i.cpus.len());
        for l in &i.lines {
            assert!(l.counts.len() <= i.cpus.len());
            for h in l.handlers().iter().chain(&l.queues()) {
                assert!(!h.contains(',') && !h.is_empty(), "{h:?}");
            }
        }
    }
    for s in [&softs.0, &softs.1].into_iter().flatten() {
        assert!(s.rows.iter().all(|r| r.1.len() <= s.cpus.len()));
    }
    let before = Sample {
        interrupts: ints.0,
        softirqs: softs.0,
        ..Default::default()
    };
    let after = Sample {
        interrupts: ints.1,
        softirqs: softs.1,
        ..Default::default()
    };
    let r = load_common::analysed(0, before, after);
    for c in &r.cpus {
        for v in [c.interrupts_per_s, c.softirqs_per_s].into_iter().flatten() {
            assert!(v.is_finite() && v >= 0.0);
        }
    }
    for h in &r.hot_cpus {
        for i in &h.irqs {
            assert!(i.per_s.is_finite() && i.per_s >= 0.0);
            assert!(i.share.is_finite() && (0.0..=1.0 + 1e-9).contains(&i.share));
        }
    }
});
