//! The `--report` of `pinsight run` (stderr: stdout is the program's):
//! the rank's slice, then where each thread was planned, allowed and seen.

use crate::{FollowStats, Mechanism, PinMain, RunOutcome, ThreadRecord};
use pinsight_cpuset::CpuSet;
use pinsight_plan::slice::RankSlice;
use pinsight_plan::Plan;
use pinsight_term::wrap80;
use std::fmt::Write;

/// The plan's notes (oversubscription, ignored modifiers) as `run` says
/// them on stderr before the program starts, one line each.
pub fn plan_notes(plan: &Plan) -> String {
    plan.notes
        .iter()
        .map(|n| format!("pinsight: note: {n}\n"))
        .collect()
}

/// What `run` says on stderr once the program has ended: with `report`,
/// this rank's slice and the report table; else the run's notes, wrapped.
pub fn ended(plan: &Plan, slice: Option<&RankSlice>, o: &RunOutcome, report: bool) -> String {
    if !report {
        return o
            .notes
            .iter()
            .map(|n| wrap80(&format!("pinsight: note: {n}")) + "\n")
            .collect();
    }
    slice.map(slice_lines).unwrap_or_default() + &self::report(plan, o)
}

/// The slice lines of `--report`.
pub fn slice_lines(s: &RankSlice) -> String {
    let caps: Vec<String> = s.capacities.iter().map(|c| format!("{c:.3}")).collect();
    let text = format!(
        "slice: local rank {} of {} (from {}): CPUs {}, capacity {:.3}; {} slices {} (spread {:.3}, {})",
        s.rank,
        s.size,
        s.launcher,
        s.cpus,
        s.capacity,
        s.rule,
        caps.join(" / "),
        s.spread,
        s.capacity_source.describe()
    );
    let mut out = format!("\n{}\n", wrap80(&text));
    for n in &s.notes {
        out.push_str(&wrap80(&format!("slice note: {n}")));
        out.push('\n');
    }
    out
}

fn opt_set(s: &Option<CpuSet>) -> String {
    s.as_ref().map_or("-".into(), |c| c.to_list_string())
}

/// One thread's row of the `--report` table, and whether it is `ok*`
/// (placed as planned but seen elsewhere before it was pinned).
fn thread_row(plan: &Plan, o: &RunOutcome, t: &ThreadRecord) -> (String, bool) {
    let mut footnote = false;
    let lazy_main = t.tid == o.pid && o.pin_main == Some(PinMain::Lazy);
    // `planned` is matched by tid (crate::threadlog); none is
    // the process mask (skipped threads, a lazily pinned main thread that
    // never created a thread).
    let planned = t
        .planned
        .clone()
        .or_else(|| (!plan.places.is_empty()).then(|| plan.process_mask.clone()));
    let check = match (&planned, &t.affinity) {
        (Some(p), Some(a)) if p == a && t.cpus_seen.is_subset(p) => "ok",
        (Some(p), Some(a)) if p == a && lazy_main => "ok",
        (Some(p), Some(a)) if p == a => {
            footnote = true;
            "ok*"
        }
        (Some(_), Some(_)) => "DIFFERS",
        _ => "",
    };
    let row = format!(
        "{:>3} {:>7} {:<15} {:<9} {:<9} {:>4} {:<9} {:>5} {check}",
        t.index,
        t.tid,
        pinsight_sys::text::shown(&t.name)
            .chars()
            .take(15)
            .collect::<String>(),
        opt_set(&planned),
        opt_set(&t.affinity),
        t.last_cpu.map_or("-".into(), |c| c.to_string()),
        t.cpus_seen.to_list_string(),
        t.samples
    );
    (row + "\n", footnote)
}

/// The `follow:` line: how the /proc watcher pinned the threads.
fn follow_line(f: &FollowStats) -> String {
    let ms = |v: Option<f64>| v.map_or("unavailable".into(), |x| format!("{x:.1} ms"));
    let us = |v: Option<f64>| {
        v.map_or("unavailable (no schedstats)".into(), |x| {
            format!("{x:.0} µs")
        })
    };
    let text = format!(
            "follow: {} thread(s) pinned, {} failed, polling every {} ms; CPU time run before pinning median {}, max {}; creation→pin at most {} (median bound {}; kernel start times have 10 ms ticks)",
            f.pinned,
            f.failed,
            f.poll_interval_ms,
            us(f.median_ran_unpinned_us),
            us(f.max_ran_unpinned_us),
            ms(f.max_delay_max_ms),
            ms(f.median_delay_max_ms),
        );
    wrap80(&text)
}

/// The `--report` table: how the threads were placed, one row per
/// thread, the watcher's figures, exported variables and notes.
pub fn report(plan: &Plan, o: &RunOutcome) -> String {
    let mut out = String::new();
    let how = match (o.mechanism, &o.fallback) {
        (Some(Mechanism::Shim), _) => "the LD_PRELOAD shim, as each thread is created",
        (Some(Mechanism::Follow), None) => "the /proc watcher (--follow), as it sees threads",
        (Some(Mechanism::Follow), Some(_)) => {
            "the /proc watcher: the shim cannot reach this program"
        }
        (None, _) if plan.places.is_empty() => "nothing (os): the program runs as is",
        (None, _) => "the process mask only; threads float",
    };
    let main = match o.pin_main {
        Some(PinMain::Early) => Some("on place 0 from the start (--pin-main early)"),
        Some(PinMain::Lazy) => Some("whole mask until its first thread, then place 0"),
        None => None,
    };
    let status = match o.signal {
        Some(sig) => format!("killed by signal {sig} (exit {})", o.exit_code),
        None => format!("exit {}", o.exit_code),
    };
    let _ = writeln!(
        out,
        "\npinsight run: {}; PID {}, {status}, {:.1} ms",
        plan.policy, o.pid, o.wall_ms
    );
    let _ = writeln!(out, "placed by: {how}");
    if let Some(m) = &o.memory {
        let _ = writeln!(out, "memory: {m} (set_mempolicy before exec, inherited)");
    }
    if let Some(m) = main {
        let _ = writeln!(out, "main thread: {m}");
    }
    let _ = writeln!(
        out,
        "{:>3} {:>7} {:<15} {:<9} {:<9} {:>4} {:<9} {:>5} CHECK",
        "#", "TID", "NAME", "PLANNED", "AFFINITY", "LAST", "SEEN ON", "N"
    );
    let mut footnote = false;
    for t in &o.threads {
        let (row, seen_elsewhere) = thread_row(plan, o, t);
        out.push_str(&row);
        footnote |= seen_elsewhere;
    }
    if o.threads.is_empty() {
        let _ = writeln!(
            out,
            "  (no thread was sampled: the program ended before the first sample)"
        );
    }
    let _ = writeln!(
        out,
        "SEEN ON: CPUs it was sampled on; N: samples (every --interval)"
    );
    if footnote {
        let _ = writeln!(
            out,
            "ok*: placed as planned, but seen elsewhere before it was pinned"
        );
    }
    if let Some(f) = &o.follow {
        let _ = writeln!(out, "{}", follow_line(f));
    }
    if !o.exported.is_empty() {
        let vars: Vec<String> = o.exported.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "{}", wrap80(&format!("exported: {}", vars.join(" "))));
    }
    for n in &o.notes {
        let _ = writeln!(out, "{}", wrap80(&format!("note: {n}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(notes: &[&str]) -> RunOutcome {
        RunOutcome::sample(notes.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn what_run_says_before_and_after() {
        let plan = Plan {
            notes: vec!["more threads than CPUs".into()],
            ..Plan::pinned_to("os".into(), Vec::new(), Vec::new())
        };
        assert_eq!(
            plan_notes(&plan),
            "pinsight: note: more threads than CPUs\n"
        );
        let o = outcome(&["the shim cannot reach it"]);
        assert_eq!(
            ended(&plan, None, &o, false),
            "pinsight: note: the shim cannot reach it\n"
        );
        let shown = ended(&plan, None, &o, true);
        assert_eq!(shown, report(&plan, &o));
        assert!(shown.contains("note: the shim cannot reach it"), "{shown}");
        assert_eq!(ended(&plan, None, &outcome(&[]), false), "");
    }
}
