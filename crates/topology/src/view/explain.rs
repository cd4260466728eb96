//! `pinsight topo --explain`: where the kinds' order and capacities came
//! from — every source of the capacity chain with its values per kind,
//! which one decided and why, which were skipped and why, and where
//! sources disagree. Rendered from [`pinsight_model::Provenance`]; every
//! line fits 80 columns for kind names up to 12 characters.

use pinsight_model::{
    CapacitySource, Kind, RankSource, SourceEvidence, SourceStatus, Topology, ValueRange,
};
use std::fmt::Write;

/// `topo --explain --json`: the kinds, the provenance of their order and
/// capacities, and the discovery's warnings (the same `provenance` object
/// as the whole model's).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Document<'a> {
    pub kinds: &'a [Kind],
    pub provenance: &'a pinsight_model::Provenance,
    pub warnings: &'a [String],
}

/// The explanation of `topo` as its JSON document.
pub fn document(topo: &Topology) -> Document<'_> {
    Document {
        kinds: &topo.kinds,
        provenance: &topo.provenance,
        warnings: &topo.warnings,
    }
}

/// Width of the source column (the longest file name).
const FILE_COLUMN: usize = 35;

/// The whole explanation.
pub fn render(topo: &Topology) -> String {
    let mut out = String::new();
    out.push_str("Core kinds, rank 0 = least performant:\n");
    for k in &topo.kinds {
        writeln!(
            out,
            "  {} {:<2} {:<12} CPUs {:<16} identity: {}",
            k.rank,
            k.mark,
            k.name,
            k.cpus.to_list_string(),
            k.source.as_str()
        )
        .ok();
    }
    let p = &topo.provenance;
    if !p.identity.is_empty() {
        out.push_str("Identity, step by step:\n");
        for step in &p.identity {
            let wrapped =
                textwrap::wrap(step, textwrap::Options::new(78).subsequent_indent("    "));
            for line in wrapped {
                writeln!(out, "  {line}").ok();
            }
        }
    }
    // Kinds not ranked by the chain (hwloc XML, or replaced after
    // discovery) have no evidence that lines up with them.
    if p.sources.is_empty() || p.sources.iter().any(|e| e.kinds.len() != topo.kinds.len()) {
        writeln!(
            out,
            "No capacity chain for these kinds: they were not ranked from sysfs\n  \
             (rank: {}).",
            rank_of(topo)
        )
        .ok();
        return out;
    }
    out.push_str(
        "Capacity chain, in order (files under /sys/devices/system/cpu/cpuN/;\n  \
         values: lowest-highest over each kind's online CPUs):\n",
    );
    for e in &p.sources {
        source_lines(&mut out, &topo.kinds, e);
    }
    decision_lines(&mut out, topo);
    disagreement_lines(&mut out, topo);
    out
}

fn rank_of(topo: &Topology) -> &'static str {
    topo.kinds
        .first()
        .map_or("none", |k| k.rank_source.as_str())
}

/// One value range with its unit: "221-236 ranking", "4800 MHz".
fn values(r: &ValueRange, s: CapacitySource) -> String {
    if r.min == r.max {
        format!("{} {}", r.min, s.unit())
    } else {
        format!("{}-{} {}", r.min, r.max, s.unit())
    }
}

fn source_lines(out: &mut String, kinds: &[Kind], e: &SourceEvidence) {
    let one_kind = kinds.len() < 2;
    let first = e.kinds.iter().flatten().next();
    let verdict = match e.status {
        SourceStatus::Absent => "absent on every CPU: skipped".to_string(),
        SourceStatus::Identical => format!(
            "identical ({} on every CPU): skipped",
            first.map_or_else(|| "?".to_string(), |r| r.min.to_string())
        ),
        SourceStatus::Partial => "missing on a whole kind: skipped".to_string(),
        SourceStatus::Tied => "two kinds tie: cannot order, skipped".to_string(),
        SourceStatus::Decided if one_kind => "DECIDED: orders the CPUs in the kind".to_string(),
        SourceStatus::Decided => "DECIDED: first to order every kind".to_string(),
        SourceStatus::Consulted if one_kind => "varies, after the winner".to_string(),
        SourceStatus::Consulted if e.agrees == Some(false) => {
            "DISAGREES: orders kinds differently".to_string()
        }
        SourceStatus::Consulted => "agrees with the winner's order".to_string(),
    };
    writeln!(out, "  {:<FILE_COLUMN$}  {verdict}", e.source.file()).ok();
    if matches!(e.status, SourceStatus::Absent | SourceStatus::Identical) {
        return;
    }
    for (k, r) in kinds.iter().zip(&e.kinds) {
        let v = r
            .as_ref()
            .map_or_else(|| "absent".to_string(), |r| values(r, e.source));
        writeln!(out, "      {} {:<12} {v}", k.rank, k.name).ok();
    }
}

fn decision_lines(out: &mut String, topo: &Topology) {
    let p = &topo.provenance;
    let how = topo.kinds.first().map(|k| k.rank_source);
    match (how, p.winner) {
        (Some(RankSource::Uniform), Some(w)) => {
            writeln!(
                out,
                "Order: one kind, nothing to rank; {} orders its CPUs\n  \
                 (the first source that is not identical on every CPU).",
                w.file()
            )
            .ok();
        }
        (Some(RankSource::Uniform) | None, _) => {
            out.push_str("Order: one kind, nothing to rank.\n");
        }
        (Some(RankSource::CoreType), _) => {
            out.push_str(
                "Order: by core type (P-core above E-core above LP E-core): no source\n  \
                 of the chain orders every kind.\n",
            );
        }
        (Some(RankSource::MicroarchTable), _) => {
            out.push_str(
                "Order: by the Arm core table (little 0.45, big 1.0, prime 1.06 per MHz,\n  \
                 from the kernel's capacity-dmips-mhz device-tree values) times each\n  \
                 kind's max clock: no cpu_capacity orders every kind. Capacity ratios:\n  \
                 each kind's score over the top kind's.\n",
            );
            return;
        }
        (Some(RankSource::Unranked), _) => {
            out.push_str(
                "Order: none; nothing tells the kinds apart, their order means nothing.\n",
            );
        }
        (Some(_), Some(w)) => {
            writeln!(
                out,
                "Order: by {},\n  the first source in the chain whose highest values \
                 differ between\n  every two kinds.",
                w.file()
            )
            .ok();
            if !w.is_proportional() {
                out.push_str(
                    "  It is a ranking (higher = preferred), not a capacity: its ratios\n  \
                     mean nothing.\n",
                );
            }
        }
        (Some(r), None) => {
            writeln!(out, "Order: {}.", r.as_str()).ok();
        }
    }
    match p.capacity_from {
        Some(s) => writeln!(
            out,
            "Capacity ratios (kind's highest over the top kind's): from\n  {} ({}).",
            s.file(),
            s.unit()
        )
        .ok(),
        None => writeln!(out, "Capacity ratios: none known.").ok(),
    };
    if !p.cpus.is_empty() {
        let mut by: Vec<(CapacitySource, usize)> = Vec::new();
        for d in &p.cpus {
            match by.iter_mut().find(|(s, _)| *s == d.source) {
                Some((_, n)) => *n += 1,
                None => by.push((d.source, 1)),
            }
        }
        let list: Vec<String> = by
            .iter()
            .map(|(s, n)| format!("{} ({n})", s.as_str()))
            .collect();
        writeln!(out, "Per-CPU deciding source: {}.", list.join(", ")).ok();
    }
}

fn disagreement_lines(out: &mut String, topo: &Topology) {
    let p = &topo.provenance;
    let mut lines = Vec::new();
    for e in p.sources.iter().filter(|e| e.agrees == Some(false)) {
        // The first pair of kinds (lower, higher) this source inverts.
        let n = topo.kinds.len();
        let pair = (0..n)
            .flat_map(|lo| (lo + 1..n).map(move |hi| (lo, hi)))
            .find(|&(lo, hi)| match (e.kinds.get(lo), e.kinds.get(hi)) {
                (Some(Some(a)), Some(Some(b))) => a.max > b.max,
                _ => false,
            });
        if let Some((lo, hi)) = pair {
            lines.push(format!(
                "  {} puts {} above {}",
                e.source.file(),
                topo.kinds[lo].name,
                topo.kinds[hi].name
            ));
        }
    }
    let flat = p
        .source(CapacitySource::MaxFrequency)
        .is_some_and(|e| e.status == SourceStatus::Identical)
        && topo.kinds.len() > 1
        && topo.kinds.iter().all(|k| k.core_type.is_some());
    if flat {
        lines.push(
            "  cpufreq/cpuinfo_max_freq is the same on every CPU although the kinds\n  \
             have different core types (firmware reports one max frequency)"
                .to_string(),
        );
    }
    if lines.is_empty() {
        out.push_str("Disagreements: none.\n");
    } else {
        out.push_str("Disagreements (warned):\n");
        for l in lines {
            writeln!(out, "{l}").ok();
        }
    }
}
