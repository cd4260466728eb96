//! Latency-aware CPU groups on recorded machines: the heuristics must be
//! within 1% of what branch and bound finds, and the table of gains over
//! "the k lowest-numbered CPUs" is printed (`--nocapture`).

use crate::fixture;
use pinsight_latency_model::{
    autopilot, best_group, best_pipeline, exhaustive_group, exhaustive_pipeline, SearchLimits,
};

const FIXTURES: [&str; 10] = [
    "AMD_EPYC_7R13_48-Core_Processor.csv",
    "AMD_Ryzen_9_5950X_3.40_GHz.csv",
    "AMD_Ryzen_9_7950X.csv",
    "AMD_Ryzen_Threadripper_1950X.csv",
    "AWS_Graviton3.csv",
    "Apple_M1_Pro.csv",
    "Dual_Intel_R_Xeon_Gold_6242_2.8GHz.csv",
    "Intel_Core_i9-12900K.csv",
    "Intel_R_Xeon_R_CPU_E5-2695_v4_2.10GHz.csv",
    "Intel_R_Xeon_R_Platinum_8375C_CPU_2.90GHz.csv",
];

/// Branch and bound only has to rule out anything 1% better than the best
/// known answer; the node limit keeps the suite fast (only the 64-core
/// mesh of Graviton3 at k = 8 reaches it, for pipelines).
const LIMITS: SearchLimits = SearchLimits {
    max_nodes: 100_000,
    tolerance: 0.01,
};

#[test]
fn heuristics_are_within_one_percent_of_branch_and_bound() {
    println!("| machine | k | all-to-all: autopilot → best (gain) | pipeline: autopilot → best (gain) | proven |");
    println!("|---|---|---|---|---|");
    for name in FIXTURES {
        let m = fixture(name);
        let all = m.cpus.clone();
        for k in [2usize, 4, 8] {
            let g = best_group(&m, &all, k);
            let eg = exhaustive_group(&m, &all, k, LIMITS);
            assert_eq!(g.cpus.len(), k);
            assert!(eg.complete, "{name} k={k}: group search hit the node limit");
            assert!(
                g.mean_pair_ns <= eg.group.mean_pair_ns * 1.01,
                "{name} k={k}: {g:?} vs {eg:?}"
            );
            assert!(
                eg.lower_bound_ns >= g.mean_pair_ns / 1.0101 - 1e-9,
                "{name} k={k}: bound {eg:?}"
            );

            let p = best_pipeline(&m, &all, k);
            let ep = exhaustive_pipeline(&m, &all, k, LIMITS);
            assert_eq!(p.cpus.len(), k);
            assert!(
                p.path_ns <= ep.group.path_ns * 1.01,
                "{name} k={k}: {p:?} vs {ep:?}"
            );
            assert!(ep.lower_bound_ns <= ep.group.path_ns + 1e-9);
            // Everywhere but the Graviton3 mesh the search completes and
            // proves the heuristic within 1%.
            if !name.starts_with("AWS_Graviton3") || k < 8 {
                assert!(
                    ep.complete,
                    "{name} k={k}: pipeline search hit the node limit"
                );
            }

            let a = autopilot(&m, &all, k);
            assert!(g.mean_pair_ns <= a.mean_pair_ns + 1e-9);
            assert!(p.path_ns <= a.path_ns + 1e-9);
            let gain = |auto: f64, best: f64| 100.0 * (auto - best) / auto;
            let proven = if ep.complete {
                "both within 1%".to_string()
            } else {
                format!("pipeline ≥ {:.1} ns proven (node limit)", ep.lower_bound_ns)
            };
            println!(
                "| {} | {k} | {:.1} → {:.1} ns ({:.0}%) | {:.1} → {:.1} ns ({:.0}%) | {proven} |",
                name.trim_end_matches(".csv"),
                a.mean_pair_ns,
                g.mean_pair_ns,
                gain(a.mean_pair_ns, g.mean_pair_ns),
                a.path_ns,
                p.path_ns,
                gain(a.path_ns, p.path_ns),
            );
        }
    }
}

#[test]
fn epyc_groups_stay_in_one_ccd() {
    let m = fixture("AMD_EPYC_7R13_48-Core_Processor.csv");
    let all = m.cpus.clone();
    let ccd = |c: usize| (c % 96) / 8;
    for k in [2usize, 4, 8, 16] {
        let g = best_group(&m, &all, k);
        assert!(
            g.cpus.iter().all(|&c| ccd(c) == ccd(g.cpus[0])),
            "k={k}: {:?}",
            g.cpus
        );
        let p = best_pipeline(&m, &all, k);
        assert!(
            p.cpus.iter().all(|&c| ccd(c) == ccd(p.cpus[0])),
            "k={k}: {:?}",
            p.cpus
        );
    }
    // k = 2: the closest pair is SMT siblings.
    let g = best_group(&m, &all, 2);
    assert_eq!(g.cpus[1], g.cpus[0] + 96);
}

#[test]
fn respects_the_allowed_cpus() {
    let m = fixture("AMD_Ryzen_9_5950X_3.40_GHz.csv");
    // Only CCD 1 and two CPUs of CCD 0 are allowed.
    let allowed: Vec<usize> = [0, 1].into_iter().chain(8..16).chain(24..32).collect();
    let g = best_group(&m, &allowed, 8);
    assert!(
        g.cpus
            .iter()
            .all(|c| (8..16).contains(c) || (24..32).contains(c)),
        "{:?}",
        g.cpus
    );
    let e = exhaustive_group(&m, &allowed, 8, SearchLimits::default());
    assert!(e.complete && g.mean_pair_ns <= e.group.mean_pair_ns + 1e-9);
}
