//! `pinsight emulate`'s report: the mechanism, the achieved speed of each
//! emulated kind with its spread, and the mechanism's limits, in 80
//! columns.

use crate::{Mechanism, Report};
use pinsight_term::{wrap, Wrap};
use std::fmt::Write;

/// The report, `exported` being the declaration nested commands get.
pub fn render(r: &Report, exported: &str) -> String {
    let mut out = String::new();
    let how = match r.mechanism {
        Mechanism::Cpufreq => "cpufreq: scaling_max_freq capped per policy".to_string(),
        Mechanism::DutyCycle => format!(
            "duty-cycle: a SCHED_FIFO stealer per slowed CPU, period {} us",
            r.period_us.unwrap_or(0)
        ),
    };
    let _ = writeln!(
        out,
        "{}",
        para(&format!("Emulated core kinds ({how})"), "", "  ")
    );
    if let Some(why) = &r.why_not_cpufreq {
        let _ = writeln!(
            out,
            "{}",
            para(&format!("cpufreq caps not used: {why}"), "  ", "    ")
        );
    }
    if r.stealers_in_root_cgroup {
        let _ = writeln!(
            out,
            "{}",
            para(
                "stealers moved to the root cgroup: real-time group scheduling gives \
                 this cgroup no real-time budget (they end with the emulation)",
                "  ",
                "    "
            )
        );
    }
    let _ = writeln!(
        out,
        "  speeds relative to CPU {} (full speed), {} windows measured",
        r.reference_cpu, r.windows
    );
    let _ = writeln!(out);
    let tol = format!("within {:.0}%", r.tolerance * 100.0);
    let _ = writeln!(
        out,
        "  {:<12} {:<10} {:>5} {:>8}  {:<21} {}",
        "Kind", "CPUs", "Asked", "Achieved", "Spread (min-max, sd)", tol
    );
    for k in &r.kinds {
        let a = &k.achieved;
        let cpus: String = k.cpus.chars().take(10).collect();
        let name: String = k.name.chars().take(12).collect();
        let _ = writeln!(
            out,
            "  {:<12} {:<10} {:>5.2} {:>8.3}  {:<21} {}",
            name,
            cpus,
            k.asked,
            a.median,
            format!("{:.3}-{:.3}, {:.3}", a.min, a.max, a.stdev),
            if k.within_tolerance { "yes" } else { "NO" }
        );
    }
    for k in &r.kinds {
        for s in &k.settings {
            let line = match (s.max_khz, s.stealer_cpu_share) {
                (Some(khz), _) => format!(
                    "CPU {}: scaling_max_freq {} MHz ({:.0}% of max)",
                    s.cpu,
                    khz / 1000,
                    s.knob * 100.0
                ),
                (None, Some(used)) => format!(
                    "CPU {}: stealer (pid {}) set to {:.1}%, took {:.1}% of the time",
                    s.cpu,
                    s.stealer_pid.unwrap_or(0),
                    (1.0 - s.knob) * 100.0,
                    used * 100.0
                ),
                (None, None) => continue,
            };
            let _ = writeln!(out, "{}", para(&line, "  ", "    "));
        }
    }
    if r.kinds.iter().any(|k| !k.within_tolerance) {
        let _ = writeln!(
            out,
            "{}",
            para(&format!(
                "warning: a kind is not within {:.0}% of its speed: the machine is busy, \
                 or the speed is near the mechanism's limits; the achieved figure is the one to use",
                r.tolerance * 100.0
            ), "  ", "    ")
        );
    }
    let _ = writeln!(out, "\nLimits:");
    for l in &r.limits {
        let _ = writeln!(out, "{}", para(&format!("- {l}"), "  ", "    "));
    }
    let _ = writeln!(out, "{}", para(&nested_line(r, exported), "", "  "));
    out
}

/// What nested commands get: the kinds and, with stealers, their `CPU:PID`
/// list (`pinsight load` and `balance` count their time as steal).
fn nested_line(r: &Report, exported: &str) -> String {
    let stealers: Vec<String> = r
        .kinds
        .iter()
        .flat_map(|k| &k.settings)
        .filter_map(|s| s.stealer_pid.map(|p| format!("{}:{p}", s.cpu)))
        .collect();
    if stealers.is_empty() {
        format!("Nested pinsight commands get PINSIGHT_KINDS={exported}")
    } else {
        format!(
            "Nested pinsight commands get PINSIGHT_KINDS={exported} and \
             PINSIGHT_EMULATION_STEALERS={} (load and balance count the stealers' time as \
             steal, not busy)",
            stealers.join(",")
        )
    }
}

/// `text` wrapped at 80 columns, `first` before its first line and `rest`
/// before the others.
fn para(text: &str, first: &str, rest: &str) -> String {
    wrap(text, Wrap::new(80).indent(first, rest)).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CpuSetting, KindResult, Spread};

    #[test]
    fn fits_80_columns_and_states_the_mechanism_and_limits() {
        let r = Report {
            mechanism: Mechanism::DutyCycle,
            why_not_cpufreq: Some("no cpufreq policy for CPU 1 (/sys/devices/system/cpu/cpu1/cpufreq absent: VM, or no cpufreq driver)".into()),
            reference_cpu: 0,
            period_us: Some(2000),
            rt_budget: Some(0.95),
            stealers_in_root_cgroup: true,
            tolerance: 0.05,
            windows: 7,
            contention: None,
            kinds: vec![KindResult {
                name: "E-core".into(),
                mark: "E".into(),
                cpus: "1".into(),
                asked: 0.5,
                achieved: Spread::of(&[0.49, 0.5, 0.51]),
                within_tolerance: true,
                settings: vec![CpuSetting {
                    cpu: 1,
                    knob: 0.52,
                    max_khz: None,
                    stealer_cpu_share: Some(0.47),
                    stealer_pid: Some(42),
                }],
            }],
            limits: Mechanism::DutyCycle.limits().iter().map(|s| s.to_string()).collect(),
        };
        let text = render(&r, "0:P,1:E@0.5");
        assert!(
            text.lines().all(|l| pinsight_term::display_width(l) <= 80),
            "{text}"
        );
        assert!(text.contains("duty-cycle"));
        assert!(text.contains("memory- and compute-bound"));
        assert!(text.contains("0.500"));
        assert!(text.contains("PINSIGHT_KINDS=0:P,1:E@0.5"));
    }
}
