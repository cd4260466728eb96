//! The readers of `/proc/schedstat` and `/proc/uptime` behind `pinsight
//! load`'s busy time: arbitrary text, split at NULs into a "before" and an
//! "after" `/proc/schedstat` and a "before" and an "after" `/proc/uptime`,
//! goes through `pinsight_load::sample::parse_schedstat` and
//! `parse_uptime`, then through `pinsight_load::report::analyse` with a
//! two-CPU `/proc/stat`. Checks: an accepted schedstat names each CPU once
//! (a map) and only with a `version` of 15 or later; an uptime is finite
//! and non-negative; every share of the load lies in [0, 1] and every run
//! queue is finite and non-negative, whatever the two readings say (a
//! counter that went backwards, an interval of zero).
#![no_main]

#[path = "load_common.rs"]
mod load_common;
#[path = "nul_texts.rs"]
mod nul_texts;

use libfuzzer_sys::fuzz_target;
use pinsight_load::sample::{parse_schedstat, parse_uptime, Sample};

fuzz_target!(|data: &[u8]| {
    let Some([sa, sb, ua, ub]) = nul_texts::texts(data) else {
        return;
    };
    let sched = (parse_schedstat(sa), parse_schedstat(sb));
    for (s, t) in [(&sched.0, sa), (&sched.1, sb)] {
        if s.is_some() {
            let v: u32 = t
                .lines()
                .next()
                .unwrap()
                .trim_start_matches("version ")
                .trim()
                .parse()
                .unwrap();
            assert!(v >= 15);
        }
    }
    let up = (parse_uptime(ua), parse_uptime(ub));
    for u in [up.0, up.1].into_iter().flatten() {
        assert!(u.is_finite() && u >= 0.0);
    }
    let before = Sample {
        sched: sched.0,
        uptime_s: up.0,
        ..Default::default()
    };
    let after = Sample {
        sched: sched.1,
        uptime_s: up.1,
        ..Default::default()
    };
    let r = load_common::analysed(3, before, after);
    for q in r.cpus.iter().filter_map(|c| c.run_queue) {
        assert!(q.is_finite() && q >= 0.0, "{q}");
    }
});
