//! `pinsight simulate`'s human output: what was simulated, a table of the
//! multi-program metrics (Saez and Prieto-Matias, APSys '22, §5) per policy, a table of slowdowns per program, and a
//! plain verdict line. Fits 80 columns.

use pinsight_sched_model::{PolicyResult, SimConfig};
use std::fmt::Write;

/// Program names longer than this are cut (with `~`) in the table.
const NAME_WIDTH: usize = 14;

/// The whole human report.
pub fn render(cfg: &SimConfig, results: &[PolicyResult]) -> String {
    let mut out = String::new();
    let n = results.first().map_or(0, |r| r.programs.len());
    let head = format!(
        "Simulated {n} program{} on {} big + {} small cores, SF estimates {}, seed {}; \
         each restarted until all completed {} times; period {} ms.",
        if n == 1 { "" } else { "s" },
        cfg.machine.big,
        cfg.machine.small,
        cfg.quality,
        cfg.seed,
        cfg.repeat,
        (cfg.period_s * 1000.0).round()
    );
    writeln!(out, "{}\n", pinsight_term::wrap80(&head)).ok();
    out.push_str(&policy_table(results));
    out.push('\n');
    out.push_str(&program_table(results));
    out.push('\n');
    writeln!(out, "{}", pinsight_term::wrap80(&verdict(results))).ok();
    out
}

fn base(results: &[PolicyResult]) -> Option<&PolicyResult> {
    results.iter().find(|r| r.policy == "aarr")
}

/// One row per policy: aggregate speedup, STP, ANTT, unfairness, the
/// aggregate speedup relative to AARR (when simulated), simulated time.
pub fn policy_table(results: &[PolicyResult]) -> String {
    let mut out = String::new();
    let base = base(results);
    writeln!(
        out,
        "{:<8}{:>12}{:>9}{:>8}{:>12}{:>10}{:>12}",
        "policy",
        "agg.speedup",
        "STP",
        "ANTT",
        "unfairness",
        if base.is_some() { "vs aarr" } else { "" },
        "simulated"
    )
    .ok();
    for r in results {
        let m = &r.metrics;
        let rel = match base {
            Some(b) if b.metrics.aggregate_speedup > 0.0 => format!(
                "{:+.1}%",
                (m.aggregate_speedup / b.metrics.aggregate_speedup - 1.0) * 100.0
            ),
            Some(_) => "-".into(),
            None => String::new(),
        };
        writeln!(
            out,
            "{:<8}{:>12.3}{:>9.3}{:>8.3}{:>12.3}{:>10}{:>10.0} s",
            r.policy, m.aggregate_speedup, m.stp, m.antt, m.unfairness, rel, r.simulated_s
        )
        .ok();
    }
    out
}

/// One row per program: its SF, time alone on a big and a small core,
/// and its slowdown under each policy.
pub fn program_table(results: &[PolicyResult]) -> String {
    let mut out = String::new();
    let Some(first) = results.first() else {
        return out;
    };
    writeln!(
        out,
        "Slowdown per program (time in the mix / time alone on a big core):"
    )
    .ok();
    let mut header = format!(
        "{:<w$}{:>6}{:>10}{:>10}",
        "program",
        "SF",
        "big",
        "small",
        w = NAME_WIDTH
    );
    // 40 columns so far; up to 5 policies of 8 fit in 80.
    let shown = results.len().min(5);
    for r in &results[..shown] {
        write!(header, "{:>8}", r.policy).ok();
    }
    writeln!(out, "{header}").ok();
    for (i, p) in first.programs.iter().enumerate() {
        let mut row = format!(
            "{:<w$}{:>6.2}{:>8.1} s{:>8.1} s",
            cut(&p.name),
            p.mean_sf,
            p.alone_big_s,
            p.alone_small_s,
            w = NAME_WIDTH
        );
        for r in &results[..shown] {
            write!(row, "{:>8.2}", r.programs[i].slowdown).ok();
        }
        writeln!(out, "{row}").ok();
    }
    if results.len() > shown {
        writeln!(out, "(more policies in --json)").ok();
    }
    out
}

/// The plain verdict: the highest aggregate speedup and the lowest
/// unfairness, each against AARR when it was simulated.
pub fn verdict(results: &[PolicyResult]) -> String {
    let Some(best) = results.iter().max_by(|a, b| {
        a.metrics
            .aggregate_speedup
            .total_cmp(&b.metrics.aggregate_speedup)
    }) else {
        return "Verdict: nothing simulated.".into();
    };
    let fairest = results
        .iter()
        .min_by(|a, b| a.metrics.unfairness.total_cmp(&b.metrics.unfairness))
        .unwrap_or(best);
    let versus = |r: &PolicyResult, thr: bool| match base(results) {
        Some(b) if b.policy != r.policy => {
            if thr && b.metrics.aggregate_speedup > 0.0 {
                format!(
                    ", {:+.1}% over aarr",
                    (r.metrics.aggregate_speedup / b.metrics.aggregate_speedup - 1.0) * 100.0
                )
            } else if !thr {
                format!(", aarr {:.2}", b.metrics.unfairness)
            } else {
                String::new()
            }
        }
        _ => String::new(),
    };
    format!(
        "Verdict: highest throughput: {} (aggregate speedup {:.2}{}); fairest: {} \
         (unfairness {:.2}{}).",
        best.policy,
        best.metrics.aggregate_speedup,
        versus(best, true),
        fairest.policy,
        fairest.metrics.unfairness,
        versus(fairest, false)
    )
}

/// A program name, escaped ([`pinsight_sys::text::shown`]) and cut.
fn cut(name: &str) -> String {
    let name = pinsight_sys::text::shown(name);
    if name.chars().count() < NAME_WIDTH {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(NAME_WIDTH - 2).collect();
        s.push('~');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_sched_model::{parse_programs, simulate, Machine, Policy};

    fn run() -> (SimConfig, Vec<PolicyResult>) {
        let cfg = SimConfig::new(Machine { big: 1, small: 1 });
        let ps =
            parse_programs("name,instructions,sf\na-program-with-a-long-name,2e9,2.5\nb,2e9,1.2\n")
                .unwrap();
        let rs = [
            Policy::Os,
            Policy::aarr(0.2),
            Policy::to(),
            Policy::acfs(0.2),
        ]
        .into_iter()
        .map(|p| simulate(&cfg, &ps, p).unwrap())
        .collect();
        (cfg, rs)
    }

    #[test]
    fn fits_80_columns_and_names_every_policy() {
        let (cfg, rs) = run();
        let text = render(&cfg, &rs);
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
        for p in ["os", "aarr", "to", "acfs"] {
            assert!(text.lines().any(|l| l.starts_with(p)), "{p}: {text}");
        }
        assert!(text.contains("a-program-wi~"), "{text}");
        assert!(text.contains("Verdict: highest throughput: to"), "{text}");
    }

    #[test]
    fn verdict_without_aarr_has_no_comparison() {
        let (_, rs) = run();
        let only: Vec<PolicyResult> = rs.into_iter().filter(|r| r.policy != "aarr").collect();
        let v = verdict(&only);
        assert!(!v.contains("aarr"), "{v}");
        assert!(!policy_table(&only).contains("vs aarr"));
    }
}
