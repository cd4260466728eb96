//! The sentences a user should act on, derived from what was measured.
//! Each one names CPUs and figures, never a vague "consider pinning".

use pinsight_latency::{autopilot, best_group, DomainTree, LatencyMatrix};
use pinsight_speed::{Kernel, SpeedReport};
use pinsight_topology::Topology;

fn ns(v: f64) -> String {
    format!("{v:.1} ns")
}

fn cpus_text(v: &[usize]) -> String {
    v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// Concrete suggestions from the topology and whatever was measured.
pub fn suggestions(
    topo: &Topology,
    latency: Option<&LatencyMatrix>,
    domains: Option<&DomainTree>,
    speed: Option<&SpeedReport>,
) -> Vec<String> {
    let mut out = Vec::new();
    let usable: Vec<usize> = topo.usable().iter().collect();

    // Latency domains.
    if let Some(tree) = domains {
        match tree.finest() {
            Some(level) => {
                let parts: Vec<String> = level
                    .domains
                    .iter()
                    .map(|d| match d.mean_intra_ns {
                        Some(v) => format!("{{{}}} ({} inside)", d.cpus, ns(v)),
                        None => format!("{{{}}}", d.cpus),
                    })
                    .collect();
                let inter = level.domains.iter().filter_map(|d| d.mean_inter_ns).fold(f64::NAN, f64::max);
                let across = if inter.is_finite() { format!("; across domains up to {}", ns(inter)) } else { String::new() };
                out.push(format!("Your {} latency domains: {}{across}.", level.domains.len(), parts.join(", ")));
            }
            None => {
                let med = tree.median_pair_ns.map(ns).unwrap_or_else(|| "unknown".into());
                out.push(format!(
                    "One latency domain: core-to-core latency is uniform here (median {med}); which CPUs chatty threads share matters little."
                ));
            }
        }
    }

    // Where to put two (and four) communicating threads.
    if let Some(m) = latency {
        let measured: Vec<usize> = usable.iter().copied().filter(|c| m.index_of(*c).is_some()).collect();
        for k in [2usize, 4] {
            if measured.len() < k {
                continue;
            }
            let best = best_group(m, &measured, k);
            let auto = autopilot(m, &measured, k);
            if !best.mean_pair_ns.is_finite() {
                continue;
            }
            let what = if k == 2 { "2 chatty threads".to_string() } else { format!("{k} communicating threads") };
            if best.cpus == auto.cpus || auto.mean_pair_ns <= best.mean_pair_ns * 1.01 {
                out.push(format!(
                    "For {what}: CPUs {} ({}) — the lowest-numbered CPUs are already the best choice here.",
                    cpus_text(&best.cpus),
                    ns(best.mean_pair_ns)
                ));
            } else {
                out.push(format!(
                    "For {what} use CPUs {} ({}), not {} ({}): {:.0}% lower latency (`pinsight run latency-group --threads {k} --latency FILE -- CMD`).",
                    cpus_text(&best.cpus),
                    ns(best.mean_pair_ns),
                    cpus_text(&auto.cpus),
                    ns(auto.mean_pair_ns),
                    (1.0 - best.mean_pair_ns / auto.mean_pair_ns) * 100.0
                ));
            }
        }
    }

    // Core kinds and their speedup factor.
    if topo.kinds.len() > 1 {
        let fast = topo.kinds.last().expect("kinds");
        let slow = &topo.kinds[0];
        match speed.filter(|s| !s.speedups.is_empty()) {
            Some(s) => {
                let pairs: Vec<_> = s.speedups.iter().filter(|p| p.fast_kind == fast.rank && p.slow_kind == slow.rank).collect();
                let by: Vec<String> = pairs.iter().map(|p| format!("{} {:.2}", p.kernel.name(), p.measured)).collect();
                let mean = (pairs.iter().map(|p| p.measured.ln()).sum::<f64>() / pairs.len().max(1) as f64).exp();
                let freq = pairs
                    .first()
                    .and_then(|p| p.predicted_by_frequency)
                    .map(|f| format!("; max frequency alone predicts {f:.2}"))
                    .unwrap_or_default();
                out.push(format!(
                    "{}/{} speedup factor ≈ {mean:.2} ({}){freq}. Put critical or latency-bound threads on {} (`p-pinned`), background work on {} (`e-set`).",
                    fast.name,
                    slow.name,
                    by.join(", "),
                    fast.cpus,
                    slow.cpus
                ));
            }
            None => out.push(format!(
                "{} core kinds: {} is ranked fastest (CPUs {}); run `pinsight speed` to measure the speedup factor for your kind of code.",
                topo.kinds.len(),
                fast.name,
                fast.cpus
            )),
        }
    } else if let Some(s) = speed {
        let worst = s.cpus.iter().map(|c| c.relative).fold(f64::INFINITY, f64::min);
        if worst.is_finite() {
            let spread = (1.0 - worst) * 100.0;
            if spread < 5.0 {
                out.push(format!(
                    "One core kind: every CPU measured within {spread:.1}% of the fastest; placing by speed gains nothing here."
                ));
            } else {
                out.push(format!(
                    "One core kind, yet the slowest CPU measured {spread:.1}% below the fastest: on identical cores that is \
                     interference (other load, a noisy VM neighbour, turbo limits); re-run `pinsight speed` on a quiet machine before placing by speed."
                ));
            }
        }
        if let Some(mem) = s.kinds.first().and_then(|k| k.median.iter().find(|(kk, _)| *kk == Kernel::Mem)) {
            out.push(format!("Memory-bound pointer chasing runs at {:.1} ns per dependent load.", 1000.0 / mem.1));
        }
    }

    // SMT.
    let smt = topo.cores.iter().filter(|c| c.cpus.len() > 1).count();
    if smt > 0 {
        out.push(format!(
            "{smt} cores have SMT siblings: for compute-bound threads use `smt-physical-first` (one thread per core before any sibling)."
        ));
    }
    if topo.numa_nodes.iter().filter(|n| !n.cpus.is_empty()).count() > 1 {
        out.push(format!(
            "{} NUMA nodes: keep a thread near its memory (`compact` fills one node first; `scatter` spreads for bandwidth).",
            topo.numa_nodes.len()
        ));
    }
    out
}
