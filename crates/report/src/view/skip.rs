//! The words of what `pinsight report` did not measure: one line a part,
//! naming the flag that would change it (`--no-speed`, `--budget 0.5s or
//! more`), for the page, the JSON and the terminal.

use crate::budget::{secs, NotWanted, Part, Skip, MIN_SPEED_PER_CPU};
use crate::session::Missing;
use std::time::Duration;

/// The report's "not measured" lines: the budget plan's skips, then what
/// measuring could not do.
pub fn skipped(planned: &[Skip], missing: &[Missing]) -> Vec<String> {
    planned
        .iter()
        .map(skip_text)
        .chain(missing.iter().map(missing_text))
        .collect()
}

/// The plan's budget skips, worded: with `--json` stdout is for the data,
/// so a too-small budget is also said on stderr.
pub fn budget_warnings(planned: &[Skip]) -> Vec<String> {
    planned
        .iter()
        .filter(|s| s.is_budget())
        .map(skip_text)
        .collect()
}

/// One line for what measuring could not do.
pub fn missing_text(m: &Missing) -> String {
    match m {
        Missing::Skip(s) => skip_text(s),
        Missing::LatencyFailed(e) => e.to_string(),
    }
}

/// One line for a part not measured, naming the flags that would change it.
pub fn skip_text(s: &Skip) -> String {
    let part = match s.part() {
        Part::Speed => "speed",
        Part::Latency => "latency",
    };
    let why = match s {
        Skip::NotWanted { part, why } => not_wanted_text(*part, *why).to_string(),
        Skip::NoUsableCpu => "not measured (no usable CPU)".to_string(),
        Skip::TooFewCpus { usable } => format!(
            "needs at least 2 usable CPUs, there {}",
            if *usable == 1 { "is 1" } else { "are none" }
        ),
        Skip::LatencyBudget { .. } | Skip::SpeedBudget { .. } | Skip::SpeedAfterLatency { .. } => {
            budget_text(s)
        }
        Skip::LatencyNoTimeLeft {
            spent,
            budget,
            left,
        } => format!(
            "not measured: speed took {:.1} s of the {:.1} s budget, {} ms left (raise --budget)",
            spent.as_secs_f64(),
            budget.as_secs_f64(),
            left.as_millis()
        ),
        Skip::LatencyPartial {
            rounds_run,
            rounds_planned,
            unmeasured,
        } => format!(
            "budget ran out after {rounds_run} of {rounds_planned} rounds; {unmeasured} pairs unmeasured (raise --budget)"
        ),
    };
    format!("{part}: {why}")
}

/// Why a part not wanted was not measured.
fn not_wanted_text(part: Part, why: NotWanted) -> &'static str {
    match (part, why) {
        (Part::Speed, NotWanted::Asked) => "skipped (--no-speed)",
        (Part::Latency, NotWanted::Asked) => "skipped (--no-latency)",
        (Part::Speed, NotWanted::Recorded) => {
            "not measured (the machine is recorded; pass --speed FILE)"
        }
        (Part::Latency, NotWanted::Recorded) => {
            "not measured (the machine is recorded; pass --latency FILE)"
        }
    }
}

/// Why a part did not fit the budget, and the budget that would fit it.
fn budget_text(s: &Skip) -> String {
    let least = |d: &Duration| format!("{:.1}s", d.as_secs_f64());
    match s {
        Skip::LatencyBudget {
            budget,
            measuring,
            cpus,
            needs,
            least_budget,
        } => format!(
            "skipped — the {} budget leaves {} for measuring, latency over {cpus} CPUs needs at least {}; use --budget {} or more",
            secs(*budget),
            secs(*measuring),
            secs(*needs),
            least(least_budget)
        ),
        Skip::SpeedBudget {
            budget,
            measuring,
            cpus,
            needs,
            least_budget,
            with_latency,
        } => format!(
            "skipped — the {} budget leaves {} for measuring, speed needs at least {} ({} per CPU x {cpus} CPUs); use --budget {} or more{}",
            secs(*budget),
            secs(*measuring),
            secs(*needs),
            secs(MIN_SPEED_PER_CPU),
            least(least_budget),
            if *with_latency { " to measure both" } else { "" }
        ),
        Skip::SpeedAfterLatency {
            budget,
            latency,
            left,
            cpus,
            needs,
            least_budget,
        } => format!(
            "skipped — after latency ({}), the {} budget leaves {} for speed, which needs at least {} ({} per CPU x {cpus} CPUs); use --budget {} or more to measure both",
            secs(*latency),
            secs(*budget),
            secs(*left),
            secs(*needs),
            secs(MIN_SPEED_PER_CPU),
            least(least_budget)
        ),
        // skip_text sends only the three above here.
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::tests::input;
    use crate::budget::{split, BudgetInput, Want};

    fn texts(i: &BudgetInput) -> Vec<String> {
        split(i).skipped.iter().map(skip_text).collect()
    }

    #[test]
    fn budget_skips_name_the_budget_flag() {
        let t = texts(&input(100, 2));
        assert_eq!(t, [
            "latency: skipped — the 100 ms budget leaves 70 ms for measuring, latency over 2 CPUs needs at least 200 ms; use --budget 0.3s or more",
            "speed: skipped — the 100 ms budget leaves 70 ms for measuring, speed needs at least 200 ms (100 ms per CPU x 2 CPUs); use --budget 0.5s or more to measure both",
        ]);
        assert_eq!(budget_warnings(&split(&input(100, 2)).skipped), t);
        let mut i = input(100, 2);
        i.latency = Want::No(NotWanted::Asked);
        let t = texts(&i);
        assert_eq!(t[0], "latency: skipped (--no-latency)");
        assert!(t[1].ends_with("use --budget 0.3s or more"), "{t:?}");
        assert_eq!(budget_warnings(&split(&i).skipped), t[1..]);
        assert_eq!(texts(&input(300, 2)), [
            "speed: skipped — after latency (200 ms), the 300 ms budget leaves 70 ms for speed, which needs at least 200 ms (100 ms per CPU x 2 CPUs); use --budget 0.5s or more to measure both",
        ]);
        let t = texts(&input(10_000, 256));
        assert!(
            t[0].contains("needs at least 26 s (100 ms per CPU x 256 CPUs)"),
            "{t:?}"
        );
        let t = texts(&input(2_000, 256));
        assert!(
            t[0].contains("latency over 256 CPUs needs at least 2.5 s"),
            "{t:?}"
        );
    }

    #[test]
    fn unwanted_parts_say_why() {
        let mut i = input(5_000, 1);
        i.speed = Want::No(NotWanted::Recorded);
        i.latency = Want::No(NotWanted::Recorded);
        assert_eq!(
            texts(&i),
            [
                "speed: not measured (the machine is recorded; pass --speed FILE)",
                "latency: not measured (the machine is recorded; pass --latency FILE)",
            ]
        );
        let mut i = input(5_000, 1);
        i.speed = Want::No(NotWanted::Asked);
        assert_eq!(
            texts(&i),
            [
                "speed: skipped (--no-speed)",
                "latency: needs at least 2 usable CPUs, there is 1",
            ]
        );
        let partial = Skip::LatencyPartial {
            rounds_run: 1,
            rounds_planned: 3,
            unmeasured: 2,
        };
        assert_eq!(
            skipped(&split(&i).skipped, &[Missing::Skip(partial)]),
            [
                "speed: skipped (--no-speed)",
                "latency: needs at least 2 usable CPUs, there is 1",
                "latency: budget ran out after 1 of 3 rounds; 2 pairs unmeasured (raise --budget)",
            ]
        );
    }
}
