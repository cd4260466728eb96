//! The readers of a thread's `/proc/PID/task/TID/stat` and `schedstat`
//! behind every task's progress (`pinsight load`, `pinsight balance`):
//! arbitrary text, split at NULs into a "before" and an "after" `stat`
//! and `schedstat`, goes through `pinsight_load::sample::thread` and
//! `parse_task_schedstat`, then through a two-look
//! `pinsight_load::progress::Trace` and `progress::tasks` over one
//! second on CPUs of speed 0.5 and 1. Checks: a `schedstat` of `0 0 0`
//! is no reading; run, wait and demand lie in [0, 1]; progress is finite,
//! non-negative and at most run (no CPU is faster than 1.0); an
//! imbalance is at least 1 and finite; expected rates are finite and
//! non-negative.
#![no_main]

#[path = "nul_texts.rs"]
mod nul_texts;

use libfuzzer_sys::fuzz_target;
use pinsight_load::progress::{self, Speeds, Trace};
use pinsight_load::sample::{parse_task_schedstat, thread};

fuzz_target!(|data: &[u8]| {
    let Some([sa, ca, sb, cb]) = nul_texts::texts(data) else {
        return;
    };
    let read = |stat: &str, sched: &str| {
        let mut t = thread(7, 7, stat)?;
        let s = parse_task_schedstat(sched);
        if sched.split_whitespace().take(3).eq(["0", "0", "0"]) {
            assert!(s.is_none());
        }
        if let Some((run, wait)) = s {
            t.run_ns = Some(run);
            t.wait_ns = Some(wait);
        }
        Some(t)
    };
    let (a, b) = (read(sa, ca), read(sb, cb));
    let mut tr = Trace::new(100);
    tr.look(&a.into_iter().collect::<Vec<_>>());
    tr.look(&b.into_iter().collect::<Vec<_>>());
    let speeds: Speeds = [(0, 0.5), (1, 1.0)].into_iter().collect();
    let tasks = progress::tasks(&tr, 1.0, &speeds);
    for t in &tasks {
        for v in [t.run, t.wait, t.demand] {
            assert!(v.is_finite() && (0.0..=1.0).contains(&v), "{t:?}");
        }
        assert!(t.progress.is_finite() && t.progress >= 0.0, "{t:?}");
        assert!(t.progress <= t.run + 1e-9, "{t:?}");
    }
    if let Some(i) = progress::imbalance(&tasks) {
        assert!(i.ratio.is_finite() && i.ratio >= 1.0, "{i:?}");
    }
    let places: Vec<Vec<usize>> = tasks
        .iter()
        .filter_map(|t| t.cpu)
        .map(|c| vec![c])
        .collect();
    let caps = [(0, 0.5), (1, 1.0)].into_iter().collect();
    for e in progress::expected(&places, &caps) {
        assert!(e.is_finite() && e >= 0.0);
    }
});
