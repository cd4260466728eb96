//! Core kinds: which online CPUs share a micro-architecture, and how the
//! kinds rank from least (0) to most performant — the heart of pinsight.
//!
//! Identity first, performance second (NOTES 5-7):
//! 1. x86 hybrid: the `cpu_core`/`cpu_atom`/`cpu_lowpower` PMU lists (or
//!    CPUID 0x1A live) say which CPU is a P-, E- or LP E-core.
//! 2. ARM: one kind per MIDR implementer/part. Capacities that differ a
//!    little between identical cores (718 vs 731) do not split a kind.
//! 3. Otherwise `cpu_capacity` (values within 5% are one kind), then
//!    frequencies: equal base frequency and max frequencies within 10% are
//!    one kind (TurboBoost Max 3.0 "favoured cores" report 5200 vs 5000 MHz).
//! 4. With no information at all: one kind over every online CPU.
//!
//! CPUs lacking the deciding data join the only other kind if there is
//! exactly one (cpufreq present on cpu0 only), else form a kind of their own.
//!
//! Ranking: by capacity, else max frequency, else core type
//! (Core > Atom > LowPower) — the first measure every kind has and no two
//! kinds share. Without one, kinds are `Unranked` (ordered by first CPU).

use super::cpus::Layout;
use super::freq::{Perf, PerfMap};
use super::reader::Reader;
use crate::{CoreType, CpuSet, Kind, KindSource, RankSource};
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

pub(super) fn discover_kinds(r: &mut Reader, layout: &Layout, perf: &PerfMap) -> Vec<Kind> {
    let online = &layout.online;
    if online.is_empty() {
        return Vec::new();
    }
    let of = |c: usize| perf.get(c).cloned().unwrap_or_default();

    let classes = identify(online, perf, &of);
    let mut kinds: Vec<Kind> = classes.into_iter().map(|cl| summarize(cl, &of)).collect();
    rank(&mut kinds);
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
    kinds
}

/// Splits the online CPUs into classes by the strongest evidence available.
fn identify(online: &CpuSet, perf: &PerfMap, of: &dyn Fn(usize) -> Perf) -> Vec<Class> {
    // 1. x86 hybrid core types.
    if online.iter().any(|c| of(c).core_type.is_some()) {
        let source = perf.core_type_source.unwrap_or(KindSource::HybridPmu);
        return split(online, source, |c| {
            of(c)
                .core_type
                .map(|t| (t as u8 as u64, Some(core_type_name(t).to_string())))
        });
    }
    // 2. ARM MIDR implementer/part.
    if online.iter().any(|c| of(c).midr.is_some()) {
        return split(online, KindSource::Midr, |c| {
            of(c).midr.map(|m| {
                let (implementer, part) = midr_fields(m);
                (
                    (implementer << 12 | part) as u64,
                    Some(midr_name(implementer, part)),
                )
            })
        });
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
        // Group by base frequency first (exactly), then max frequency within
        // a tolerance inside each base group.
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

/// Orders kinds from least to most performant and records how.
fn rank(kinds: &mut [Kind]) {
    let n = kinds.len();
    let distinct = |vals: &[Option<u64>]| {
        let mut v: Vec<u64> = match vals.iter().copied().collect::<Option<Vec<u64>>>() {
            Some(v) => v,
            None => return false,
        };
        v.sort_unstable();
        v.windows(2).all(|w| w[0] != w[1])
    };
    let caps: Vec<Option<u64>> = kinds
        .iter()
        .map(|k| k.capacity_raw.map(u64::from))
        .collect();
    let freqs: Vec<Option<u64>> = kinds.iter().map(|k| k.max_mhz.map(u64::from)).collect();
    let types: Vec<Option<u64>> = kinds
        .iter()
        .map(|k| k.core_type.map(|t| t as u64))
        .collect();

    let how = if n <= 1 {
        RankSource::Uniform
    } else if distinct(&caps) {
        kinds.sort_by_key(|k| k.capacity_raw);
        RankSource::Capacity
    } else if distinct(&freqs) {
        kinds.sort_by_key(|k| k.max_mhz);
        RankSource::MaxFrequency
    } else if distinct(&types) {
        kinds.sort_by_key(|k| k.core_type);
        RankSource::CoreType
    } else {
        kinds.sort_by_key(|k| k.cpus.first());
        RankSource::Unranked
    };
    let top = kinds.iter().filter_map(|k| k.capacity_raw).max();
    for (i, k) in kinds.iter_mut().enumerate() {
        k.rank = i;
        k.rank_source = how;
        k.capacity = match (k.capacity_raw, top) {
            (Some(c), Some(t)) if t > 0 => Some(c as f64 / t as f64),
            _ => None,
        };
    }
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
pub(crate) fn name_x86_hybrid(topo: &mut crate::Topology) {
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
    for k in topo.kinds.iter_mut() {
        if matches!(k.source, KindSource::Capacity | KindSource::Frequency)
            && k.rank_source != RankSource::Unranked
        {
            k.name = if k.rank == 0 { "E-core" } else { "P-core" }.to_string();
        }
    }
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

/// (implementer, part number) of a `midr_el1` value.
pub(crate) fn midr_fields(midr: u64) -> (u32, u32) {
    (((midr >> 24) & 0xff) as u32, ((midr >> 4) & 0xfff) as u32)
}

/// A readable name for an ARM core, from the implementer and part number.
pub(crate) fn midr_name(implementer: u32, part: u32) -> String {
    let known = match (implementer, part) {
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
