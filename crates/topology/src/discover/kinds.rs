//! Core kinds: which online CPUs share a micro-architecture, and how the
//! kinds rank from least (0) to most performant — the heart of pinsight.
//!
//! Identity first, performance second (NOTES 5-7):
//! 1. x86 hybrid: the `cpu_core`/`cpu_atom`/`cpu_lowpower` PMU lists (or
//!    CPUID 0x1A live) say which CPU is a P-, E- or LP E-core.
//! 2. ARM: one kind per MIDR implementer/part (`midr_el1`, else each
//!    processor's `CPU implementer`/`CPU part` in `/proc/cpuinfo`).
//!    Capacities that differ a little between identical cores (718 vs
//!    731) do not split a kind.
//! 3. Otherwise `cpu_capacity` (values within 5% are one kind), then
//!    frequencies: equal base frequency and max frequencies within 10% are
//!    one kind (TurboBoost Max 3.0 "favoured cores" report 5200 vs 5000 MHz).
//! 4. With no information at all: one kind over every online CPU.
//!
//! CPUs lacking the deciding data join the only other kind if there is
//! exactly one (cpufreq present on cpu0 only), else form a kind of their own.
//!
//! Ranking follows the capacity chain ([`CapacitySource::CHAIN`]):
//! `cpu_capacity`, AMD `amd_pstate_prefcore_ranking` and
//! `amd_pstate_highest_perf` (rankings, not capacities), ACPI CPPC
//! `highest_perf` and `nominal_perf`, `cpuinfo_max_freq`, `base_frequency`.
//! The first source every kind has, whose highest values differ between
//! every two kinds, decides; a source identical on every CPU is skipped.
//! Without one, core type (Core > Atom > LowPower) decides, else kinds are
//! `Unranked` (ordered by first CPU). Every source's values per kind, and
//! which one won, are kept in [`Provenance`]; later sources that order the
//! kinds differently, and flat max frequencies on a machine with two core
//! types, are warned about, naming the files.

use super::cpus::{Layout, CPU_DIR};
use super::freq::{Perf, PerfMap};
use super::reader::Reader;
use pinsight_cpuset::CpuSet;
use pinsight_model::{
    CapacitySource, CoreType, CpuDecision, Kind, KindSource, Provenance, RankSource,
    SourceEvidence, SourceStatus, ValueRange,
};
use std::collections::BTreeMap;

/// Capacities closer than this ratio belong to the same kind.
const CAPACITY_TOLERANCE: f64 = 1.05;
/// Max frequencies (with equal base) closer than this ratio are one kind.
const FREQUENCY_TOLERANCE: f64 = 1.10;

/// A candidate kind before ranking.
struct Class {
    cpus: CpuSet,
    source: KindSource,
    /// Name from identity (core type or MIDR part), if any.
    identity_name: Option<String>,
}

pub(super) fn discover_kinds(
    r: &mut Reader,
    layout: &Layout,
    perf: &PerfMap,
) -> (Vec<Kind>, Provenance) {
    let online = &layout.online;
    if online.is_empty() {
        return (Vec::new(), Provenance::default());
    }
    let of = |c: usize| perf.get(c).cloned().unwrap_or_default();

    let mut steps = Vec::new();
    let classes = identify(online, perf, &of, &mut steps);
    let mut kinds: Vec<Kind> = classes.into_iter().map(|cl| summarize(cl, &of)).collect();
    let mut provenance = rank(r, &mut kinds, online, perf, &of, &mut steps);
    provenance.identity = steps;
    name(&mut kinds);

    let uncovered = kinds
        .iter()
        .fold(online.clone(), |acc, k| acc.difference(&k.cpus));
    if !uncovered.is_empty() {
        // Cannot happen by construction; say so rather than hide it.
        r.warn_msg(format!(
            "core kinds: online CPUs {uncovered} ended up in no kind"
        ));
    }
    (kinds, provenance)
}

/// Splits the online CPUs into classes by the strongest evidence available.
fn identify(
    online: &CpuSet,
    perf: &PerfMap,
    of: &dyn Fn(usize) -> Perf,
    steps: &mut Vec<String>,
) -> Vec<Class> {
    // 1. x86 hybrid core types.
    if online.iter().any(|c| of(c).core_type.is_some()) {
        return by_core_type(online, perf, of, steps);
    }
    // 2. ARM MIDR implementer/part.
    if online.iter().any(|c| of(c).midr.is_some()) {
        return by_midr(online, perf, of, steps);
    }
    // 3. Capacity, then frequencies.
    if online.iter().any(|c| of(c).capacity.is_some()) {
        let keys = tolerant_keys(
            online.iter().filter_map(|c| of(c).capacity.map(|v| (c, v))),
            CAPACITY_TOLERANCE,
        );
        return split(online, KindSource::Capacity, |c| {
            keys.get(&c).map(|k| (*k, None))
        });
    }
    if online
        .iter()
        .any(|c| of(c).max_mhz.is_some() || of(c).base_mhz.is_some())
    {
        let keys = frequency_keys(online, of);
        return split(online, KindSource::Frequency, |c| {
            keys.get(&c).map(|k| (*k, None))
        });
    }
    // 4. Nothing at all.
    vec![Class {
        cpus: online.clone(),
        source: KindSource::Uniform,
        identity_name: None,
    }]
}

/// Classes by x86 hybrid core type (Zen generation names on AMD), each
/// split further by clock.
fn by_core_type(
    online: &CpuSet,
    perf: &PerfMap,
    of: &dyn Fn(usize) -> Perf,
    steps: &mut Vec<String>,
) -> Vec<Class> {
    let source = perf.core_type_source.unwrap_or(KindSource::HybridPmu);
    let zen = perf.amd_zen;
    let classes = split(online, source, |c| {
        of(c).core_type.map(|t| {
            let name = match (zen, t) {
                (Some(z), CoreType::Core) => z.to_string(),
                (Some(z), _) => format!("{z}c"),
                (None, _) => core_type_name(t).to_string(),
            };
            (t as u8 as u64, Some(name))
        })
    });
    identity_step(steps, "core type", &classes);
    split_by_clock(classes, of, steps)
}

/// Classes by ARM MIDR implementer and part, each split further by clock.
fn by_midr(
    online: &CpuSet,
    perf: &PerfMap,
    of: &dyn Fn(usize) -> Perf,
    steps: &mut Vec<String>,
) -> Vec<Class> {
    let classes = split(online, KindSource::Midr, |c| {
        of(c).midr.map(|m| {
            let (implementer, part) = midr_fields(m);
            (
                (implementer << 12 | part) as u64,
                Some(midr_name(implementer, part)),
            )
        })
    });
    let how = if perf.midr_from_cpuinfo {
        "MIDR part (/proc/cpuinfo CPU implementer/part; no regs/identification/midr_el1)"
    } else {
        "MIDR part (regs/identification/midr_el1)"
    };
    identity_step(steps, how, &classes);
    split_by_clock(classes, of, steps)
}

/// Class keys by frequency: by base frequency first (exactly), then max
/// frequency within a tolerance inside each base group.
fn frequency_keys(online: &CpuSet, of: &dyn Fn(usize) -> Perf) -> BTreeMap<usize, u64> {
    let mut by_base: BTreeMap<Option<u32>, Vec<(usize, u32)>> = BTreeMap::new();
    let mut no_max: BTreeMap<Option<u32>, Vec<usize>> = BTreeMap::new();
    for c in online.iter() {
        let p = of(c);
        if p.max_mhz.is_none() && p.base_mhz.is_none() {
            continue;
        }
        match p.max_mhz {
            Some(m) => by_base.entry(p.base_mhz).or_default().push((c, m)),
            None => no_max.entry(p.base_mhz).or_default().push(c),
        }
    }
    let mut keys: BTreeMap<usize, u64> = BTreeMap::new();
    for (i, (base, members)) in by_base.iter().enumerate() {
        let sub = tolerant_keys(members.iter().copied(), FREQUENCY_TOLERANCE);
        for (c, k) in sub {
            keys.insert(c, ((i as u64) << 32) | k);
        }
        // CPUs with this base but no max join the base's first group.
        if let Some(rest) = no_max.remove(base) {
            let k = ((i as u64) << 32) | sub_first(&keys, members);
            for c in rest {
                keys.insert(c, k);
            }
        }
    }
    let first_free = by_base.len() as u64;
    for (i, (_, rest)) in no_max.into_iter().enumerate() {
        for c in rest {
            keys.insert(c, (first_free + i as u64) << 32);
        }
    }
    keys
}

/// Records one identity step: which classes `how` found.
fn identity_step(steps: &mut Vec<String>, how: &str, classes: &[Class]) {
    let list: Vec<String> = classes
        .iter()
        .map(|c| {
            format!(
                "{} on CPUs {}",
                c.identity_name.as_deref().unwrap_or("?"),
                c.cpus
            )
        })
        .collect();
    steps.push(format!("by {how}: {}", list.join("; ")));
}

/// Measures that split one microarchitecture into kinds, in order: the
/// first that every CPU of the class has decides. Capacities within 5%
/// are one kind (identical cores read 718 vs 731 from their device
/// tree); clocks within 10% are one kind (Intel Turbo Boost Max 3.0
/// "favoured cores" report 5200 vs 5000 MHz, AMD's two CCDs of a Ryzen 9
/// 7950X3D 5700 vs 5250 MHz). Beyond that, the kernel's own capacity
/// separates them (arm64 scales `capacity-dmips-mhz` by each cluster's
/// maximum clock: Documentation/devicetree/bindings/cpu/cpu-capacity.txt)
/// and so does hwloc, which registers one cpukind per max frequency
/// (hwloc 2.9, `hwloc_linux_cpukinds`).
const CLOCK_SPLIT: [(CapacitySource, f64); 3] = [
    (CapacitySource::CpuCapacity, CAPACITY_TOLERANCE),
    (CapacitySource::MaxFrequency, FREQUENCY_TOLERANCE),
    (CapacitySource::CppcHighestPerf, FREQUENCY_TOLERANCE),
];

/// Splits each class (one core type or MIDR part) whose CPUs' capacity or
/// clock differ beyond [`CLOCK_SPLIT`]'s tolerance: one microarchitecture
/// at two clocks is two kinds.
fn split_by_clock(
    classes: Vec<Class>,
    of: &dyn Fn(usize) -> Perf,
    steps: &mut Vec<String>,
) -> Vec<Class> {
    let mut out = Vec::new();
    for class in classes {
        let pick = CLOCK_SPLIT
            .iter()
            .find(|(s, _)| class.cpus.iter().all(|c| value(&of(c), *s).is_some()));
        let Some(&(s, tolerance)) = pick else {
            out.push(class);
            continue;
        };
        let keys = tolerant_keys(
            class
                .cpus
                .iter()
                .filter_map(|c| value(&of(c), s).map(|v| (c, v))),
            tolerance,
        );
        let mut groups: BTreeMap<u64, CpuSet> = BTreeMap::new();
        for (c, k) in keys {
            groups.entry(k).or_default().insert(c);
        }
        if groups.len() <= 1 {
            out.push(class);
            continue;
        }
        let base = class.identity_name.clone().unwrap_or_default();
        let mut parts = Vec::new();
        for cpus in groups.into_values() {
            let top = cpus
                .iter()
                .filter_map(|c| value(&of(c), s))
                .max()
                .unwrap_or(0);
            let mhz = cpus.iter().filter_map(|c| of(c).max_mhz).max();
            let tag = match mhz {
                Some(m) => format!("{:.1}G", m as f64 / 1000.0),
                None => format!("{} {top}", s.unit()),
            };
            parts.push(format!("CPUs {cpus} at {top} {}", s.unit()));
            out.push(Class {
                cpus,
                source: class.source,
                identity_name: Some(if base.is_empty() {
                    String::new()
                } else {
                    format!("{base} {tag}")
                })
                .filter(|n| !n.is_empty()),
            });
        }
        steps.push(format!(
            "split {} (CPUs {}) by {} beyond {:.0}%: {}",
            if base.is_empty() { "a kind" } else { &base },
            class.cpus,
            s.file(),
            (tolerance - 1.0) * 100.0,
            parts.join(", ")
        ));
    }
    out.sort_by_key(|c| c.cpus.first());
    out
}

fn sub_first(keys: &BTreeMap<usize, u64>, members: &[(usize, u32)]) -> u64 {
    members
        .first()
        .and_then(|(c, _)| keys.get(c))
        .map_or(0, |k| k & 0xffff_ffff)
}

/// Groups CPUs by `key`; CPUs without a key join the single keyed class if
/// there is exactly one, else form their own class.
fn split(
    online: &CpuSet,
    source: KindSource,
    key: impl Fn(usize) -> Option<(u64, Option<String>)>,
) -> Vec<Class> {
    let mut by_key: BTreeMap<u64, (CpuSet, Option<String>)> = BTreeMap::new();
    let mut unknown = CpuSet::new();
    for c in online.iter() {
        match key(c) {
            Some((k, name)) => {
                let e = by_key.entry(k).or_insert_with(|| (CpuSet::new(), name));
                e.0.insert(c);
            }
            None => {
                unknown.insert(c);
            }
        }
    }
    let mut classes: Vec<Class> = by_key
        .into_values()
        .map(|(cpus, identity_name)| Class {
            cpus,
            source,
            identity_name,
        })
        .collect();
    if !unknown.is_empty() {
        if classes.len() == 1 {
            classes[0].cpus.union_with(&unknown);
        } else {
            classes.push(Class {
                cpus: unknown,
                source: KindSource::Uniform,
                identity_name: Some("unidentified".to_string()),
            });
        }
    }
    classes.sort_by_key(|c| c.cpus.first());
    classes
}

/// Chain-clusters `(cpu, value)` pairs: sorted values whose neighbour ratio
/// is under `tolerance` share a key (the cluster's smallest value).
fn tolerant_keys(
    values: impl Iterator<Item = (usize, u32)>,
    tolerance: f64,
) -> BTreeMap<usize, u64> {
    let mut v: Vec<(usize, u32)> = values.collect();
    v.sort_by_key(|&(c, x)| (x, c));
    let mut keys = BTreeMap::new();
    let mut key = 0u64;
    let mut prev: Option<u32> = None;
    for (c, x) in v {
        match prev {
            Some(p) if (x as f64) < (p.max(1) as f64) * tolerance => {}
            _ => key = x as u64,
        }
        prev = Some(x);
        keys.insert(c, key);
    }
    keys
}

/// Measures of a class, before ranking.
fn summarize(class: Class, of: &dyn Fn(usize) -> Perf) -> Kind {
    let perfs: Vec<Perf> = class.cpus.iter().map(of).collect();
    let capacity_raw = perfs.iter().filter_map(|p| p.capacity).max();
    let max_mhz = perfs.iter().filter_map(|p| p.max_mhz).max();
    let base_mhz = perfs.iter().filter_map(|p| p.base_mhz).max();
    let mut types = perfs.iter().map(|p| p.core_type);
    let first = types.next().flatten();
    let core_type = if types.all(|t| t == first) {
        first
    } else {
        None
    };
    Kind {
        rank: 0,
        name: class.identity_name.unwrap_or_default(),
        mark: String::new(),
        cpus: class.cpus,
        source: class.source,
        rank_source: RankSource::Uniform,
        capacity: None,
        capacity_raw,
        max_mhz,
        base_mhz,
        core_type,
    }
}

/// The value of chain source `s` on a CPU.
pub(super) fn value(p: &Perf, s: CapacitySource) -> Option<u32> {
    match s {
        CapacitySource::CpuCapacity => p.capacity,
        CapacitySource::AmdPrefcoreRanking => p.amd_prefcore_ranking,
        CapacitySource::AmdHighestPerf => p.amd_highest_perf,
        CapacitySource::CppcHighestPerf => p.cppc.as_ref().and_then(|c| c.highest_perf),
        CapacitySource::CppcNominalPerf => p.cppc.as_ref().and_then(|c| c.nominal_perf),
        CapacitySource::MaxFrequency => p.max_mhz,
        CapacitySource::BaseFrequency => p.base_mhz,
    }
}

/// Per kind: the range of `s` over its CPUs and the CPU holding the
/// highest value (`None` where no CPU of the kind has it).
fn ranges(
    kinds: &[Kind],
    s: CapacitySource,
    of: &dyn Fn(usize) -> Perf,
) -> Vec<Option<(ValueRange, usize)>> {
    kinds
        .iter()
        .map(|k| {
            let mut out: Option<(ValueRange, usize)> = None;
            for c in k.cpus.iter() {
                let Some(v) = value(&of(c), s) else { continue };
                out = Some(match out {
                    None => (ValueRange { min: v, max: v }, c),
                    Some((r, at)) => (
                        ValueRange {
                            min: r.min.min(v),
                            max: r.max.max(v),
                        },
                        if v > r.max { c } else { at },
                    ),
                });
            }
            out
        })
        .collect()
}

/// What `s` can say about the kinds as they stand.
fn status_of(
    kinds: &[Kind],
    online: &CpuSet,
    s: CapacitySource,
    of: &dyn Fn(usize) -> Perf,
) -> SourceStatus {
    let mut vals = online.iter().filter_map(|c| value(&of(c), s));
    let Some(first) = vals.next() else {
        return SourceStatus::Absent;
    };
    if vals.all(|v| v == first) {
        return SourceStatus::Identical;
    }
    if kinds.len() < 2 {
        return SourceStatus::Consulted;
    }
    let r = ranges(kinds, s, of);
    let Some(mut maxes) = r
        .iter()
        .map(|x| x.map(|(r, _)| r.max))
        .collect::<Option<Vec<u32>>>()
    else {
        return SourceStatus::Partial;
    };
    maxes.sort_unstable();
    if maxes.windows(2).all(|w| w[0] != w[1]) {
        SourceStatus::Consulted
    } else {
        SourceStatus::Tied
    }
}

/// Orders kinds from least to most performant along the capacity chain,
/// records how, computes `Kind::capacity`, and returns the evidence.
fn rank(
    r: &mut Reader,
    kinds: &mut [Kind],
    online: &CpuSet,
    perf: &PerfMap,
    of: &dyn Fn(usize) -> Perf,
    steps: &mut Vec<String>,
) -> Provenance {
    let n = kinds.len();
    let mut statuses: Vec<(CapacitySource, SourceStatus)> = CapacitySource::CHAIN
        .iter()
        .map(|&s| (s, status_of(kinds, online, s, of)))
        .collect();
    let table = arm_table(kinds, &statuses, of);
    let winner = if table.is_some() {
        None
    } else {
        decide(&mut statuses)
    };
    let types_distinct = core_types_distinct(kinds);
    let how = order_kinds(kinds, table.as_deref(), winner, types_distinct, of, steps);
    let sources = evidence(r, kinds, &statuses, winner, of);
    if n >= 2 && types_distinct {
        warn_flat_frequency(r, kinds, &statuses, winner, perf, online, of);
    }
    let capacity_from = capacity_source(kinds, winner, &sources);
    set_ranks(kinds, how, capacity_from, of);
    Provenance {
        sources,
        winner,
        capacity_from,
        cpus: cpu_decisions(online, winner, of),
        identity: Vec::new(),
    }
}

/// The core table's scores when it decides: two or more Arm kinds the
/// kernel gives no capacity for.
fn arm_table(
    kinds: &[Kind],
    statuses: &[(CapacitySource, SourceStatus)],
    of: &dyn Fn(usize) -> Perf,
) -> Option<Vec<(f64, usize, String)>> {
    let kernel_capacity = statuses
        .iter()
        .any(|&(s, st)| s == CapacitySource::CpuCapacity && st == SourceStatus::Consulted);
    if kinds.len() >= 2 && !kernel_capacity {
        table_scores(kinds, of)
    } else {
        None
    }
}

/// The first consulted source of the chain, marked as the one that decided.
fn decide(statuses: &mut [(CapacitySource, SourceStatus)]) -> Option<CapacitySource> {
    statuses
        .iter_mut()
        .find(|(_, st)| *st == SourceStatus::Consulted)
        .map(|(s, st)| {
            *st = SourceStatus::Decided;
            *s
        })
}

/// Whether every kind has a core type and no two kinds share one.
fn core_types_distinct(kinds: &[Kind]) -> bool {
    let mut t: Vec<Option<CoreType>> = kinds.iter().map(|k| k.core_type).collect();
    t.sort_unstable();
    t.iter().all(Option::is_some) && t.windows(2).all(|w| w[0] != w[1])
}

/// Sorts the kinds by the strongest evidence there is and says which.
fn order_kinds(
    kinds: &mut [Kind],
    table: Option<&[(f64, usize, String)]>,
    winner: Option<CapacitySource>,
    types_distinct: bool,
    of: &dyn Fn(usize) -> Perf,
    steps: &mut Vec<String>,
) -> RankSource {
    if kinds.len() <= 1 {
        RankSource::Uniform
    } else if let Some(scores) = table {
        order_by_table(kinds, scores, steps);
        RankSource::MicroarchTable
    } else if let Some(w) = winner {
        let key: Vec<u32> = ranges(kinds, w, of)
            .iter()
            .map(|x| x.map_or(0, |(r, _)| r.max))
            .collect();
        let mut order: Vec<usize> = (0..kinds.len()).collect();
        order.sort_by_key(|&i| key[i]);
        permute(kinds, &order);
        w.rank_source()
    } else if types_distinct {
        kinds.sort_by_key(|k| k.core_type);
        RankSource::CoreType
    } else {
        kinds.sort_by_key(|k| k.cpus.first());
        RankSource::Unranked
    }
}

/// Sorts the kinds by core table score, sets each capacity relative to the
/// top score and records each kind's score as a step.
fn order_by_table(kinds: &mut [Kind], scores: &[(f64, usize, String)], steps: &mut Vec<String>) {
    let mut order: Vec<usize> = (0..kinds.len()).collect();
    order.sort_by(|&a, &b| {
        scores[a]
            .0
            .total_cmp(&scores[b].0)
            .then(scores[a].1.cmp(&scores[b].1))
    });
    let top = scores.iter().map(|s| s.0).fold(0.0f64, f64::max);
    for &i in &order {
        let k = &mut kinds[i];
        k.capacity = (top > 0.0).then(|| scores[i].0 / top);
        steps.push(format!(
            "rank {}: {} = {}",
            k.name,
            scores[i].2,
            fmt_score(scores[i].0)
        ));
    }
    permute(kinds, &order);
}

/// Every chain source's values per kind on the final order, and whether it
/// agrees with that order; warns where one disagrees with the winner.
fn evidence(
    r: &mut Reader,
    kinds: &[Kind],
    statuses: &[(CapacitySource, SourceStatus)],
    winner: Option<CapacitySource>,
    of: &dyn Fn(usize) -> Perf,
) -> Vec<SourceEvidence> {
    let n = kinds.len();
    let mut sources = Vec::new();
    for &(s, status) in statuses {
        let rs = ranges(kinds, s, of);
        let ordering = matches!(status, SourceStatus::Decided | SourceStatus::Consulted) && n >= 2;
        let agrees = ordering.then(|| {
            rs.windows(2)
                .all(|w| matches!((w[0], w[1]), (Some((a, _)), Some((b, _))) if a.max < b.max))
        });
        if agrees == Some(false) {
            if let Some(w) = winner {
                warn_disagreement(r, kinds, w, s, &ranges(kinds, w, of), &rs);
            }
        }
        sources.push(SourceEvidence {
            source: s,
            status,
            kinds: rs.iter().map(|x| x.map(|(r, _)| r)).collect(),
            agrees,
        });
    }
    sources
}

/// The source `Kind::capacity` comes from: one whose ratios are capacity
/// ratios (the winner, else a consulted source that agrees with it).
fn capacity_source(
    kinds: &[Kind],
    winner: Option<CapacitySource>,
    sources: &[SourceEvidence],
) -> Option<CapacitySource> {
    if kinds.len() >= 2 {
        match winner {
            Some(w) if w.is_proportional() => Some(w),
            Some(_) => sources
                .iter()
                .find(|e| {
                    e.status == SourceStatus::Consulted
                        && e.agrees == Some(true)
                        && e.source.is_proportional()
                })
                .map(|e| e.source),
            None => None,
        }
    } else {
        // One kind: 1.0 when it has a capacity, as always.
        kinds
            .first()
            .and_then(|k| k.capacity_raw)
            .map(|_| CapacitySource::CpuCapacity)
    }
}

/// Sets each kind's rank and rank source, and its capacity relative to the
/// top kind's `capacity_from` (the core table has set it already).
fn set_ranks(
    kinds: &mut [Kind],
    how: RankSource,
    capacity_from: Option<CapacitySource>,
    of: &dyn Fn(usize) -> Perf,
) {
    let per_kind: Vec<Option<u32>> = match capacity_from {
        Some(s) => ranges(kinds, s, of)
            .iter()
            .map(|x| x.map(|(r, _)| r.max))
            .collect(),
        None => vec![None; kinds.len()],
    };
    let top = per_kind.iter().flatten().max().copied();
    for (i, k) in kinds.iter_mut().enumerate() {
        k.rank = i;
        k.rank_source = how;
        if how == RankSource::MicroarchTable {
            continue;
        }
        k.capacity = match (per_kind[i], top) {
            (Some(c), Some(t)) if t > 0 => Some(c as f64 / t as f64),
            _ => None,
        };
    }
}

/// Per online CPU: the value that decided it, from the winner or the first
/// later source in the chain the CPU has (none without a winner).
fn cpu_decisions(
    online: &CpuSet,
    winner: Option<CapacitySource>,
    of: &dyn Fn(usize) -> Perf,
) -> Vec<CpuDecision> {
    let Some(w) = winner else {
        return Vec::new();
    };
    let from = CapacitySource::CHAIN
        .iter()
        .position(|&s| s == w)
        .unwrap_or(0);
    online
        .iter()
        .filter_map(|c| {
            let p = of(c);
            CapacitySource::CHAIN[from..].iter().find_map(|&s| {
                value(&p, s).map(|value| CpuDecision {
                    cpu: c,
                    source: s,
                    value,
                })
            })
        })
        .collect()
}

fn fmt_score(x: f64) -> String {
    format!("{x:.0}")
}

/// Per kind, when every kind is an Arm core the table knows: (score,
/// table position, how it was computed). The score is the class factor
/// ([`microarch_class`]) times the kind's highest `cpuinfo_max_freq` when
/// every kind has one, else the factor alone (times 1000).
fn table_scores(kinds: &[Kind], of: &dyn Fn(usize) -> Perf) -> Option<Vec<(f64, usize, String)>> {
    let clocks = kinds.iter().all(|k| k.max_mhz.is_some());
    kinds
        .iter()
        .map(|k| {
            if k.source != KindSource::Midr {
                return None;
            }
            let midr = k.cpus.iter().find_map(|c| of(c).midr)?;
            let (implementer, part) = midr_fields(midr);
            let (class, factor, pos) = microarch_class(implementer, part)?;
            let mhz = if clocks { k.max_mhz? } else { 1000 };
            let how = if clocks {
                format!("{class} factor {factor:.2} x {mhz} MHz")
            } else {
                format!("{class} factor {factor:.2} x 1000 (no clock)")
            };
            Some((factor * mhz as f64, pos, how))
        })
        .collect()
}

/// Reorders `kinds` so that position i holds the kind that was at `order[i]`.
fn permute(kinds: &mut [Kind], order: &[usize]) {
    let old: Vec<Kind> = kinds.to_vec();
    for (slot, &i) in kinds.iter_mut().zip(order) {
        *slot = old[i].clone();
    }
}

/// The sysfs path of source `s` on CPU `cpu`.
pub(crate) fn source_path(s: CapacitySource, cpu: usize) -> String {
    format!("{CPU_DIR}/cpu{cpu}/{}", s.file())
}

/// Warns that `s` orders two kinds against the winner `w`, naming both
/// sources' files on the CPU holding each kind's highest value.
fn warn_disagreement(
    r: &mut Reader,
    kinds: &[Kind],
    w: CapacitySource,
    s: CapacitySource,
    wr: &[Option<(ValueRange, usize)>],
    sr: &[Option<(ValueRange, usize)>],
) {
    // The first pair (lower, higher) in the chosen order that `s` inverts.
    let n = kinds.len();
    for lo in 0..n {
        for hi in lo + 1..n {
            let (Some((wl, wlc)), Some((wh, whc))) = (wr[lo], wr[hi]) else {
                continue;
            };
            let (Some((sl, slc)), Some((sh, shc))) = (sr[lo], sr[hi]) else {
                continue;
            };
            if sl.max <= sh.max {
                continue;
            }
            r.warn_msg(format!(
                "core kinds: {} ranks CPUs {} above CPUs {} ({} = {}, {} = {}) but {} ranks \
                 them the other way ({} = {}, {} = {}); kept the order of {}, the first \
                 source in the chain",
                w.file(),
                kinds[hi].cpus,
                kinds[lo].cpus,
                source_path(w, whc),
                wh.max,
                source_path(w, wlc),
                wl.max,
                s.file(),
                source_path(s, shc),
                sh.max,
                source_path(s, slc),
                sl.max,
                w.file(),
            ));
            return;
        }
    }
}

/// Warns when every CPU reports one max frequency although the PMU lists
/// or CPUID show several core types (the firmware that made sched_ext rank
/// E-cores above P-cores), saying where the order came from instead.
fn warn_flat_frequency(
    r: &mut Reader,
    kinds: &[Kind],
    statuses: &[(CapacitySource, SourceStatus)],
    winner: Option<CapacitySource>,
    perf: &PerfMap,
    online: &CpuSet,
    of: &dyn Fn(usize) -> Perf,
) {
    let flat = statuses
        .iter()
        .any(|&(s, st)| s == CapacitySource::MaxFrequency && st == SourceStatus::Identical);
    if !flat {
        return;
    }
    let Some(mhz) = online.iter().find_map(|c| of(c).max_mhz) else {
        return;
    };
    let evidence = match perf.core_type_source {
        Some(KindSource::Cpuid) => "CPUID".to_string(),
        _ => {
            let mut files: Vec<&str> = Vec::new();
            for k in kinds.iter().rev() {
                files.push(match k.core_type {
                    Some(CoreType::Core) => "/sys/devices/cpu_core/cpus",
                    Some(CoreType::Atom) => "/sys/devices/cpu_atom/cpus",
                    Some(CoreType::LowPower) => "/sys/devices/cpu_lowpower/cpus",
                    None => continue,
                });
            }
            files.join(" and ")
        }
    };
    let by = match winner {
        Some(w) => format!("by {} instead", w.file()),
        None => "by core type instead (P-core above E-core above LP E-core)".to_string(),
    };
    r.warn_msg(format!(
        "{CPU_DIR}/cpu*/cpufreq/cpuinfo_max_freq: every CPU reports {mhz} MHz while {evidence} \
         show {} core types; ignored the max frequency and ranked the kinds {by}",
        kinds.len()
    ));
}

/// Names and marks: identity names where known, else big/little style.
pub(crate) fn name(kinds: &mut [Kind]) {
    let n = kinds.len();
    for k in kinds.iter_mut() {
        let rank = k.rank;
        let ranked = k.rank_source != RankSource::Unranked;
        k.mark = match (k.source, k.core_type) {
            (KindSource::HybridPmu | KindSource::Cpuid, Some(t)) => core_type_mark(t).to_string(),
            // Two ranked kinds of unknown identity: performance and
            // efficiency cores, the marks users know (P/E).
            _ if n == 2 && ranked => if rank == 0 { "E" } else { "P" }.to_string(),
            _ => rank.to_string(),
        };
        if !k.name.is_empty() {
            continue;
        }
        k.name = match (n, rank) {
            (1, _) => "uniform".to_string(),
            (2, 0) => "little".to_string(),
            (2, _) => "big".to_string(),
            (3, 0) => "little".to_string(),
            (3, 1) => "medium".to_string(),
            (3, _) => "big".to_string(),
            _ => format!("kind {rank}"),
        };
    }
}

/// x86 machines with two kinds told apart only by capacity or frequency
/// (dumps without the `cpu_core`/`cpu_atom` PMU lists, e.g. the recorded
/// i7-1370P) are Intel hybrids: name them P-core and E-core rather than
/// big and little. The identity source stays what it was.
pub(crate) fn name_x86_hybrid(topo: &mut pinsight_model::Topology) {
    let x86 = topo
        .arch
        .as_deref()
        .is_some_and(|a| matches!(a, "x86_64" | "x86" | "i686" | "i386" | "amd64"))
        || topo
            .model_name
            .as_deref()
            .is_some_and(|m| m.contains("Intel"));
    if !x86 || topo.kinds.len() != 2 {
        return;
    }
    let amd = topo.model_name.as_deref().and_then(amd_heterogeneous);
    for k in topo.kinds.iter_mut() {
        if matches!(k.source, KindSource::Capacity | KindSource::Frequency)
            && k.rank_source != RankSource::Unranked
        {
            k.name = match amd {
                Some(zen) if k.rank == 0 => format!("{zen}c"),
                Some(zen) => zen.to_string(),
                None if k.rank == 0 => "E-core".to_string(),
                None => "P-core".to_string(),
            };
        }
    }
}

/// AMD parts known to mix full and compact ("c") cores, by `/proc/cpuinfo`
/// model name, and their Zen generation. Used to name the two kinds of a
/// recorded machine ("Zen5" above "Zen5c"); live, CPUID leaf 0x80000026
/// says it per CPU. Table (as of 2025):
///
/// | model name contains | cores |
/// | --- | --- |
/// | `Ryzen AI` (not `Ryzen AI Max`): Strix Point, Krackan Point (HX 370, 365, 350, 340, 330, ...) | Zen 5 + Zen 5c |
/// | `Ryzen 5 8500G`, `Ryzen 3 8300G` (and GE), `Ryzen 5 8540U`, `Ryzen 3 8440U`, `Ryzen 5 7545U`, `Ryzen 3 7440U`, `Ryzen Z1` (not `Z1 Extreme`): Phoenix 2 | Zen 4 + Zen 4c |
pub(crate) fn amd_heterogeneous(model: &str) -> Option<&'static str> {
    if !model.contains("AMD") {
        return None;
    }
    if model.contains("Ryzen AI") && !model.contains("Ryzen AI Max") {
        return Some("Zen5");
    }
    const PHOENIX2: &[&str] = &[
        "Ryzen 5 8500G",
        "Ryzen 3 8300G",
        "Ryzen 5 PRO 8500G",
        "Ryzen 3 PRO 8300G",
        "Ryzen 5 8540U",
        "Ryzen 3 8440U",
        "Ryzen 5 7545U",
        "Ryzen 3 7440U",
    ];
    if PHOENIX2.iter().any(|p| model.contains(p))
        || (model.contains("Ryzen Z1") && !model.contains("Z1 Extreme"))
    {
        return Some("Zen4");
    }
    None
}

pub(crate) fn core_type_name(t: CoreType) -> &'static str {
    match t {
        CoreType::Core => "P-core",
        CoreType::Atom => "E-core",
        CoreType::LowPower => "LP E-core",
    }
}

pub(crate) fn core_type_mark(t: CoreType) -> &'static str {
    match t {
        CoreType::Core => "P",
        CoreType::Atom => "E",
        CoreType::LowPower => "L",
    }
}

/// Big/little class of an Arm core by MIDR (implementer, part): ("little",
/// "big" or "prime", its per-MHz factor, and its position in the table,
/// which breaks ties: later = newer = ranked higher). `None`: unknown.
///
/// The factors are per-MHz throughput relative to a big out-of-order core
/// (1.0), taken from the kernel's own `capacity-dmips-mhz` device-tree
/// values (Documentation/devicetree/bindings/cpu/cpu-capacity.txt), which
/// give both classes on one SoC: Cortex-A53 578 vs A57 1024 (arm/juno.dts),
/// A53 485 vs A72 1024 (rockchip/rk3399.dtsi), A55 448 vs A77 1024
/// (qcom/sm8250.dtsi), A510 1024 vs A715 1792 vs X3 1894
/// (qcom/sm8550.dtsi): little in-order cores 0.45, prime cores 1.06. They
/// only order kinds that the kernel gives no `cpu_capacity`; the score is
/// the factor times the kind's maximum clock, so one part at two clocks
/// ranks by clock and two parts at one clock rank by class.
pub(crate) fn microarch_class(implementer: u32, part: u32) -> Option<(&'static str, f64, usize)> {
    let key = (implementer, part);
    let mut base = 0;
    for (class, factor, table) in ARM_CLASSES {
        if let Some(i) = table.iter().position(|&k| k == key) {
            return Some((class, factor, base + i));
        }
        base += table.len();
    }
    None
}

/// Arm cores by MIDR (implementer, part).
type ArmParts = &'static [(u32, u32)];

/// Little (in-order) Arm cores by MIDR (implementer, part); on a tie the
/// later entry ranks higher.
const ARM_LITTLE: ArmParts = &[
    (0x41, 0xc05), // Cortex-A5
    (0x41, 0xc07), // Cortex-A7
    (0x41, 0xc08), // Cortex-A8
    (0x41, 0xd01), // Cortex-A32
    (0x41, 0xd02), // Cortex-A34
    (0x41, 0xd04), // Cortex-A35
    (0x41, 0xd03), // Cortex-A53
    (0x41, 0xd05), // Cortex-A55
    (0x41, 0xd06), // Cortex-A65
    (0x41, 0xd43), // Cortex-A65AE
    (0x41, 0xd4a), // Neoverse-E1
    (0x41, 0xd46), // Cortex-A510
    (0x41, 0xd80), // Cortex-A520
    (0x41, 0xd88), // Cortex-A520AE
    (0x51, 0x801), // Kryo 2XX Silver
    (0x51, 0x803), // Kryo 3XX Silver
    (0x51, 0x805), // Kryo 4XX Silver
    (0x61, 0x020), // Icestorm (A14)
    (0x61, 0x022), // Icestorm (M1)
    (0x61, 0x024), // Icestorm (M1 Pro)
    (0x61, 0x028), // Icestorm (M1 Max)
    (0x61, 0x030), // Blizzard (A15)
    (0x61, 0x032), // Blizzard (M2)
    (0x61, 0x034), // Blizzard (M2 Pro)
    (0x61, 0x036), // Sawtooth (A16)
    (0x61, 0x038), // Blizzard (M2 Max)
];
/// Big (out-of-order) Arm cores by MIDR (implementer, part); on a tie the
/// later entry ranks higher.
const ARM_BIG: ArmParts = &[
    (0x41, 0xc09), // Cortex-A9
    (0x41, 0xc0d), // Cortex-A12
    (0x41, 0xc0e), // Cortex-A17
    (0x41, 0xc0f), // Cortex-A15
    (0x41, 0xd07), // Cortex-A57
    (0x41, 0xd08), // Cortex-A72
    (0x41, 0xd09), // Cortex-A73
    (0x41, 0xd0a), // Cortex-A75
    (0x41, 0xd0b), // Cortex-A76
    (0x41, 0xd0e), // Cortex-A76AE
    (0x41, 0xd0c), // Neoverse-N1
    (0x41, 0xd0d), // Cortex-A77
    (0x41, 0xd41), // Cortex-A78
    (0x41, 0xd42), // Cortex-A78AE
    (0x41, 0xd4b), // Cortex-A78C
    (0x41, 0xd40), // Neoverse-V1
    (0x41, 0xd47), // Cortex-A710
    (0x41, 0xd49), // Neoverse-N2
    (0x41, 0xd4d), // Cortex-A715
    (0x41, 0xd4f), // Neoverse-V2
    (0x41, 0xd81), // Cortex-A720
    (0x41, 0xd89), // Cortex-A720AE
    (0x41, 0xd87), // Cortex-A725
    (0x41, 0xd8e), // Neoverse-N3
    (0x41, 0xd84), // Neoverse-V3
    (0x41, 0xd83), // Neoverse-V3AE
    (0x4e, 0x000), // NVIDIA Denver
    (0x4e, 0x003), // NVIDIA Denver 2
    (0x4e, 0x004), // NVIDIA Carmel
    (0x51, 0x800), // Kryo 2XX Gold
    (0x51, 0x802), // Kryo 3XX Gold
    (0x51, 0x804), // Kryo 4XX Gold
    (0x53, 0x001), // Samsung Exynos-M1
    (0x53, 0x002), // Samsung Exynos-M3
    (0x53, 0x003), // Samsung Exynos-M4
    (0x53, 0x004), // Samsung Exynos-M5
    (0xc0, 0xac3), // Ampere-1
    (0xc0, 0xac4), // Ampere-1a
];
/// Prime Arm cores by MIDR (implementer, part); on a tie the later entry
/// ranks higher.
const ARM_PRIME: ArmParts = &[
    (0x41, 0xd44), // Cortex-X1
    (0x41, 0xd4c), // Cortex-X1C
    (0x41, 0xd48), // Cortex-X2
    (0x41, 0xd4e), // Cortex-X3
    (0x41, 0xd82), // Cortex-X4
    (0x41, 0xd85), // Cortex-X925
    (0x51, 0x001), // Qualcomm Oryon
    (0x61, 0x021), // Firestorm (A14)
    (0x61, 0x023), // Firestorm (M1)
    (0x61, 0x025), // Firestorm (M1 Pro)
    (0x61, 0x029), // Firestorm (M1 Max)
    (0x61, 0x031), // Avalanche (A15)
    (0x61, 0x033), // Avalanche (M2)
    (0x61, 0x035), // Avalanche (M2 Pro)
    (0x61, 0x037), // Everest (A16)
    (0x61, 0x039), // Avalanche (M2 Max)
];

/// The classes of [`microarch_class`] in rank order: name, per-MHz factor
/// and members.
const ARM_CLASSES: [(&str, f64, ArmParts); 3] = [
    ("little", 0.45, ARM_LITTLE),
    ("big", 1.0, ARM_BIG),
    ("prime", 1.06, ARM_PRIME),
];

/// (implementer, part number) of a `midr_el1` value.
pub(crate) fn midr_fields(midr: u64) -> (u32, u32) {
    (((midr >> 24) & 0xff) as u32, ((midr >> 4) & 0xfff) as u32)
}

/// A readable name for an ARM core, from the implementer and part number.
pub(crate) fn midr_name(implementer: u32, part: u32) -> String {
    // Names as util-linux's lscpu prints them (sys-utils/lscpu-arm.c,
    // tables arm_part, qcom_part, samsung_part, apple_part, nvidia_part),
    // which hwloc's Linux backend follows for `CPUModel`; pinsight's older
    // names ("Apple Icestorm", "Kryo 4XX Gold") are kept.
    let known = match (implementer, part) {
        (0x41, 0xc05) => "Cortex-A5",
        (0x41, 0xc08) => "Cortex-A8",
        (0x41, 0xc0d) => "Cortex-A12",
        (0x41, 0xc0e) => "Cortex-A17",
        (0x41, 0xd02) => "Cortex-A34",
        (0x41, 0xd83) => "Neoverse-V3AE",
        (0x41, 0xd88) => "Cortex-A520AE",
        (0x41, 0xd89) => "Cortex-A720AE",
        (0x4e, 0x000) => "Denver",
        (0x4e, 0x003) => "Denver 2",
        (0x51, 0x00f) | (0x51, 0x02d) => "Scorpion",
        (0x51, 0x04d) | (0x51, 0x06f) => "Krait",
        (0x51, 0x201) | (0x51, 0x205) | (0x51, 0x211) => "Kryo",
        (0x51, 0xc00) => "Falkor",
        (0x51, 0xc01) => "Saphira",
        (0x53, 0x001) => "exynos-m1",
        (0x53, 0x002) => "exynos-m3",
        (0x53, 0x003) => "exynos-m4",
        (0x53, 0x004) => "exynos-m5",
        (0x61, 0x020) => "Apple Icestorm",
        (0x61, 0x021) => "Apple Firestorm",
        (0x61, 0x030) | (0x61, 0x032) | (0x61, 0x034) | (0x61, 0x038) => "Apple Blizzard",
        (0x61, 0x031) | (0x61, 0x033) | (0x61, 0x035) | (0x61, 0x039) => "Apple Avalanche",
        (0x61, 0x036) => "Apple Sawtooth",
        (0x61, 0x037) => "Apple Everest",
        (0x48, 0xd01) => "TaiShan-v110",
        (0x48, 0xd02) => "TaiShan-v120",
        (0x43, 0x0a1) => "ThunderX 88XX",
        (0x43, 0x0af) => "ThunderX2 99xx",
        (0x46, 0x001) => "A64FX",
        (0x41, 0xc07) => "Cortex-A7",
        (0x41, 0xc09) => "Cortex-A9",
        (0x41, 0xc0f) => "Cortex-A15",
        (0x41, 0xd01) => "Cortex-A32",
        (0x41, 0xd03) => "Cortex-A53",
        (0x41, 0xd04) => "Cortex-A35",
        (0x41, 0xd05) => "Cortex-A55",
        (0x41, 0xd06) => "Cortex-A65",
        (0x41, 0xd07) => "Cortex-A57",
        (0x41, 0xd08) => "Cortex-A72",
        (0x41, 0xd09) => "Cortex-A73",
        (0x41, 0xd0a) => "Cortex-A75",
        (0x41, 0xd0b) => "Cortex-A76",
        (0x41, 0xd0c) => "Neoverse-N1",
        (0x41, 0xd0d) => "Cortex-A77",
        (0x41, 0xd0e) => "Cortex-A76AE",
        (0x41, 0xd40) => "Neoverse-V1",
        (0x41, 0xd41) => "Cortex-A78",
        (0x41, 0xd42) => "Cortex-A78AE",
        (0x41, 0xd43) => "Cortex-A65AE",
        (0x41, 0xd44) => "Cortex-X1",
        (0x41, 0xd46) => "Cortex-A510",
        (0x41, 0xd47) => "Cortex-A710",
        (0x41, 0xd48) => "Cortex-X2",
        (0x41, 0xd49) => "Neoverse-N2",
        (0x41, 0xd4a) => "Neoverse-E1",
        (0x41, 0xd4b) => "Cortex-A78C",
        (0x41, 0xd4c) => "Cortex-X1C",
        (0x41, 0xd4d) => "Cortex-A715",
        (0x41, 0xd4e) => "Cortex-X3",
        (0x41, 0xd4f) => "Neoverse-V2",
        (0x41, 0xd80) => "Cortex-A520",
        (0x41, 0xd81) => "Cortex-A720",
        (0x41, 0xd82) => "Cortex-X4",
        (0x41, 0xd84) => "Neoverse-V3",
        (0x41, 0xd85) => "Cortex-X925",
        (0x41, 0xd87) => "Cortex-A725",
        (0x41, 0xd8e) => "Neoverse-N3",
        (0x4e, 0x004) => "NVIDIA Carmel",
        (0x51, 0x800) => "Kryo 2XX Gold",
        (0x51, 0x801) => "Kryo 2XX Silver",
        (0x51, 0x802) => "Kryo 3XX Gold",
        (0x51, 0x803) => "Kryo 3XX Silver",
        (0x51, 0x804) => "Kryo 4XX Gold",
        (0x51, 0x805) => "Kryo 4XX Silver",
        (0x51, 0x001) => "Oryon",
        (0x61, 0x022) | (0x61, 0x024) | (0x61, 0x028) => "Apple Icestorm",
        (0x61, 0x023) | (0x61, 0x025) | (0x61, 0x029) => "Apple Firestorm",
        (0xc0, 0xac3) => "Ampere-1",
        (0xc0, 0xac4) => "Ampere-1a",
        _ => "",
    };
    if !known.is_empty() {
        known.to_string()
    } else if implementer == 0x41 {
        format!("ARM part 0x{part:03x}")
    } else {
        format!("ARM part 0x{part:03x} (implementer 0x{implementer:02x})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_heterogeneous_parts_by_model_name() {
        assert_eq!(
            amd_heterogeneous("AMD Ryzen AI 9 HX 370 w/ Radeon 890M"),
            Some("Zen5")
        );
        assert_eq!(
            amd_heterogeneous("AMD Ryzen AI Max+ 395 w/ Radeon 8060S"),
            None
        );
        assert_eq!(
            amd_heterogeneous("AMD Ryzen 5 8500G w/ Radeon 740M Graphics"),
            Some("Zen4")
        );
        assert_eq!(amd_heterogeneous("AMD Ryzen Z1 Extreme"), None);
        assert_eq!(
            amd_heterogeneous("AMD Ryzen Threadripper 7980X 64-Cores"),
            None
        );
        assert_eq!(amd_heterogeneous("Intel(R) Core(TM) Ultra 7 155H"), None);
    }

    #[test]
    fn midr_names() {
        assert_eq!(midr_fields(0x410fd0b0), (0x41, 0xd0b));
        assert_eq!(midr_name(0x41, 0xd0b), "Cortex-A76");
        assert_eq!(midr_name(0x41, 0xd44), "Cortex-X1");
        assert_eq!(midr_name(0x41, 0xfff), "ARM part 0xfff");
    }

    #[test]
    fn tolerance_chains_close_values_only() {
        let k = tolerant_keys(
            [(0, 718), (1, 731), (2, 1024), (3, 160)].into_iter(),
            CAPACITY_TOLERANCE,
        );
        assert_eq!(k[&0], k[&1]);
        assert_ne!(k[&0], k[&2]);
        assert_ne!(k[&3], k[&0]);
        let f = tolerant_keys(
            [(0, 5000), (1, 5200), (2, 3900)].into_iter(),
            FREQUENCY_TOLERANCE,
        );
        assert_eq!(f[&0], f[&1]);
        assert_ne!(f[&0], f[&2]);
    }
}
