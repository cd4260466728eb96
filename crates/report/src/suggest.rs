//! The sentences a user should act on, derived from what was measured.
//! Each one names CPUs and figures, never a vague "consider pinning".

use pinsight_cpuset::CpuSet;
use pinsight_latency_model::{autopilot, best_group, DomainTree, LatencyMatrix};
use pinsight_model::{DeviceLocalitySource, Topology};
use pinsight_speed::{Kernel, SpeedReport};

fn ns(v: f64) -> String {
    format!("{v:.1} ns")
}

fn cpus_text(v: &[usize]) -> String {
    v.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A "use CPUs a,b not 0,1" suggestion needs at least this gain: smaller
/// differences are within what a re-measurement moves, and would contradict
/// "one latency domain".
pub const MIN_GROUP_GAIN: f64 = 0.10;

/// What the latency matrix says, in sentences that agree with each other:
/// the domains (or the lack of them), then for 2 and 4 threads the best
/// CPUs beside the lowest-numbered ones — named only when clearly better.
fn latency_sentences(
    topo: &Topology,
    m: &LatencyMatrix,
    tree: &DomainTree,
    usable: &[usize],
    file: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let measured: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|c| m.index_of(*c).is_some())
        .collect();
    if measured.len() == 2 {
        if let Some(v) = m.between(measured[0], measured[1]) {
            out.push(format!(
                "Core-to-core latency between your 2 CPUs ({}): {} one way; with one pair there is nothing to choose.",
                cpus_text(&measured),
                ns(v)
            ));
        }
        return out;
    }
    out.push(domains_sentence(m, tree));
    for k in [2usize, 4] {
        if measured.len() <= k {
            continue;
        }
        out.extend(group_sentence(topo, m, &measured, k, file));
    }
    out
}

/// The latency domains of the finest level, or why there is one domain.
fn domains_sentence(m: &LatencyMatrix, tree: &DomainTree) -> String {
    let Some(level) = tree.finest() else {
        return one_domain_sentence(m, tree);
    };
    let parts: Vec<String> = level
        .domains
        .iter()
        .map(|d| match d.mean_intra_ns {
            Some(v) => format!("{{{}}} ({} inside)", d.cpus, ns(v)),
            None => format!("{{{}}}", d.cpus),
        })
        .collect();
    let inter = level
        .domains
        .iter()
        .filter_map(|d| d.mean_inter_ns)
        .fold(f64::NAN, f64::max);
    let across = if inter.is_finite() {
        format!("; between domains up to {} on average", ns(inter))
    } else {
        String::new()
    };
    format!(
        "Your {} latency domains: {}{across}. Keep threads that talk to each other inside one domain.",
        level.domains.len(),
        parts.join(", ")
    )
}

/// One latency domain: its close CPU pairs, or how uniform its pairs are.
fn one_domain_sentence(m: &LatencyMatrix, tree: &DomainTree) -> String {
    let med = tree
        .median_pair_ns
        .map(ns)
        .unwrap_or_else(|| "unknown".into());
    if let Some(p) = &tree.pairs {
        return format!(
            "One latency domain (median {med}), except {} CPU pairs (SMT siblings or cache-sharing cores) at {} or less: \
             two chatty threads gain most from sharing such a pair.",
            p.domains.iter().filter(|d| d.cpus.len() == 2).count(),
            ns(p.below_ns)
        );
    }
    let (lo, hi) = spread(m);
    if hi <= lo * (1.0 + MIN_GROUP_GAIN) {
        format!(
            "One latency domain: core-to-core latency is uniform here (median {med}); which CPUs chatty threads share matters little."
        )
    } else {
        format!(
            "One latency domain: no clear groups of CPUs, but pairs range from {} to {} (5th to 95th percentile, median {med}): \
             some pairs are closer than others.",
            ns(lo),
            ns(hi)
        )
    }
}

/// For `k` threads: the best group of `measured` against the
/// lowest-numbered CPUs (nothing when either has no finite latency).
fn group_sentence(
    topo: &Topology,
    m: &LatencyMatrix,
    measured: &[usize],
    k: usize,
    file: &str,
) -> Option<String> {
    let best = best_group(m, measured, k);
    let auto = autopilot(m, measured, k);
    if !best.mean_pair_ns.is_finite() || !auto.mean_pair_ns.is_finite() {
        return None;
    }
    let what = if k == 2 {
        "2 chatty threads".to_string()
    } else {
        format!("{k} communicating threads")
    };
    let gain = 1.0 - best.mean_pair_ns / auto.mean_pair_ns;
    Some(if gain >= MIN_GROUP_GAIN {
        format!(
            "For {what} use {}CPUs {} ({}), not {} ({}): {:.0}% lower latency (`pinsight run latency-group --threads {k} --latency {file} -- CMD`).",
            kind_of_all(topo, &best.cpus),
            cpus_text(&best.cpus),
            ns(best.mean_pair_ns),
            cpus_text(&auto.cpus),
            ns(auto.mean_pair_ns),
            gain * 100.0
        )
    } else if best.cpus == auto.cpus {
        format!(
            "For {what}: CPUs {} ({}) — the lowest-numbered CPUs are already the best choice here.",
            cpus_text(&best.cpus),
            ns(best.mean_pair_ns)
        )
    } else {
        format!(
            "For {what}: the lowest-numbered CPUs {} ({}) are within {:.0}% of the best ({}, {}): no need to choose.",
            cpus_text(&auto.cpus),
            ns(auto.mean_pair_ns),
            gain.max(0.0) * 100.0,
            cpus_text(&best.cpus),
            ns(best.mean_pair_ns)
        )
    })
}

/// "E-core " when a machine has several kinds and `cpus` are all of one
/// (a latency-best group on a hybrid machine may sit on the slow kind:
/// the reader must see that), else "".
fn kind_of_all(topo: &Topology, cpus: &[usize]) -> String {
    if topo.kinds.len() < 2 {
        return String::new();
    }
    let kinds: Vec<Option<usize>> = cpus
        .iter()
        .map(|&c| topo.cpu(c).and_then(|c| c.kind))
        .collect();
    match kinds.first() {
        Some(Some(k)) if kinds.iter().all(|x| *x == Some(*k)) => topo
            .kinds
            .get(*k)
            .map(|k| format!("{} ", k.name))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// 5th and 95th percentile of the measured pair latencies.
fn spread(m: &LatencyMatrix) -> (f64, f64) {
    let mut v: Vec<f64> = m.pair_values().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    (
        pinsight_stats::quantile_sorted(&v, 0.05),
        pinsight_stats::quantile_sorted(&v, 0.95),
    )
}

/// Concrete suggestions from the topology and whatever was measured.
pub fn suggestions(
    topo: &Topology,
    latency: Option<&LatencyMatrix>,
    domains: Option<&DomainTree>,
    speed: Option<&SpeedReport>,
) -> Vec<String> {
    suggestions_with(topo, latency, domains, speed, "FILE")
}

/// [`suggestions`], naming `latency_file` (where the matrix was saved) in
/// the commands it proposes.
pub fn suggestions_with(
    topo: &Topology,
    latency: Option<&LatencyMatrix>,
    domains: Option<&DomainTree>,
    speed: Option<&SpeedReport>,
    latency_file: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let usable: Vec<usize> = topo.usable().iter().collect();

    // Latency domains, and where to put communicating threads.
    if let (Some(m), Some(tree)) = (latency, domains) {
        out.extend(latency_sentences(topo, m, tree, &usable, latency_file));
    }

    // Core kinds and their speedup factor.
    if topo.kinds.len() > 1 {
        out.push(kinds_sentence(topo, speed));
    } else if let Some(s) = speed {
        out.extend(one_kind_sentences(s));
    }

    // SMT.
    let smt = topo.cores.iter().filter(|c| c.cpus.len() > 1).count();
    if smt > 0 {
        out.push(format!(
            "{smt} cores have SMT siblings: for compute-bound threads use `smt-physical-first` (one thread per core before any sibling)."
        ));
    }
    out.extend(numa_sentences(topo));
    out
}

/// On a machine of several kinds: the fastest kind's speedup factor over
/// the slowest as measured, or a pointer to `pinsight speed`.
fn kinds_sentence(topo: &Topology, speed: Option<&SpeedReport>) -> String {
    let fast = topo.kinds.last().expect("kinds");
    let slow = &topo.kinds[0];
    let Some(s) = speed.filter(|s| !s.speedups.is_empty()) else {
        return format!(
            "{} core kinds: {} is ranked fastest (CPUs {}); run `pinsight speed` to measure the speedup factor for your kind of code.",
            topo.kinds.len(),
            fast.name,
            fast.cpus
        );
    };
    let pairs: Vec<_> = s
        .speedups
        .iter()
        .filter(|p| p.fast_kind == fast.rank && p.slow_kind == slow.rank)
        .collect();
    let by: Vec<String> = pairs
        .iter()
        .map(|p| format!("{} {:.2}", p.kernel.name(), p.measured))
        .collect();
    let mean =
        (pairs.iter().map(|p| p.measured.ln()).sum::<f64>() / pairs.len().max(1) as f64).exp();
    let freq = pairs
        .first()
        .and_then(|p| p.predicted_by_frequency)
        .map(|f| format!("; max frequency alone predicts {f:.2}"))
        .unwrap_or_default();
    format!(
        "{}/{} speedup factor ≈ {mean:.2} ({}){freq}. Put critical or latency-bound threads on {} (`p-pinned`), background work on {} (`e-set`).",
        fast.name,
        slow.name,
        by.join(", "),
        fast.cpus,
        slow.cpus
    )
}

/// On a machine of one kind: how far apart its CPUs measured, and the
/// memory latency.
fn one_kind_sentences(s: &SpeedReport) -> Vec<String> {
    let mut out = Vec::new();
    let worst = s
        .cpus
        .iter()
        .map(|c| c.relative)
        .fold(f64::INFINITY, f64::min);
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
    if let Some(mem) = s
        .kinds
        .first()
        .and_then(|k| k.median.iter().find(|(kk, _)| *kk == Kernel::Mem))
    {
        out.push(format!(
            "Memory-bound pointer chasing ({} MiB, beyond L2) runs at {:.1} ns per dependent load.",
            s.mem_bytes >> 20,
            1000.0 / mem.1
        ));
    }
    out
}

/// With several NUMA nodes this process can run on (memory-only nodes
/// and nodes outside the cgroup do not count): keep threads near their
/// memory, and the devices away from `compact`'s first node.
fn numa_sentences(topo: &Topology) -> Vec<String> {
    let mut out = Vec::new();
    let usable_set = topo.usable();
    let nodes = topo
        .numa_nodes
        .iter()
        .filter(|n| n.cpus.intersects(&usable_set))
        .count();
    if nodes > 1 {
        out.push(format!(
            "{nodes} NUMA nodes: keep a thread near its memory (`compact` fills one node first; `scatter` spreads for bandwidth)."
        ));
        // `compact` starts on the node of the lowest usable CPU.
        if let Some(first) = topo
            .numa_nodes
            .iter()
            .filter(|n| n.cpus.intersects(&usable_set))
            .min_by_key(|n| n.cpus.intersection(&usable_set).first())
        {
            let chosen = first.cpus.intersection(&usable_set);
            out.extend(device_sentences(topo, &chosen, "`compact`"));
        }
    }
    out
}

/// One sentence per device that sits away from the CPUs a plan chose
/// (`chosen`, the plan named `plan`, e.g. "`compact`" or "policy p-pinned"):
/// a device whose local CPUs (usable ones) share none with `chosen`. Devices
/// local to no known CPUs, or to none this process may use, say nothing.
pub fn device_sentences(topo: &Topology, chosen: &CpuSet, plan: &str) -> Vec<String> {
    let usable = topo.usable();
    let node_of = |cpus: &CpuSet| {
        let nodes: Vec<u32> = topo
            .numa_nodes
            .iter()
            .filter(|n| n.cpus.intersects(cpus))
            .map(|n| n.id)
            .collect();
        match nodes.as_slice() {
            [n] => format!("NUMA node {n}, "),
            _ => String::new(),
        }
    };
    topo.devices
        .iter()
        .filter(|d| d.locality_source != DeviceLocalitySource::Unknown)
        .filter_map(|d| {
            let local = d.local_cpus.intersection(&usable);
            if local.is_empty() || local.intersects(chosen) || chosen.is_empty() {
                return None;
            }
            let name = d.label();
            let what = if d.os_devices.is_empty() {
                d.class.as_str().to_string()
            } else {
                format!("{} {}", d.class.as_str(), d.address)
            };
            Some(format!(
                "{name} ({what}) sits on {}CPUs {local}, away from the CPUs {plan} chose ({}CPUs {chosen}): \
                 give the threads that feed it CPUs {local} (`--near {name}`).",
                node_of(&local),
                node_of(chosen),
            ))
        })
        .collect()
}
