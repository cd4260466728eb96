//! CPU orderings every pinned policy is built from.
//!
//! Everything works on "slots": the usable PUs of one core, with the
//! core's position in the hierarchy (package, NUMA node, L3, L2). Orders
//! are then simple: *compact* walks slots in hierarchy order and takes all
//! of a core's PUs together; *physical-first* takes every slot's first PU,
//! then every second PU, ...; *scatter* interleaves the slots across the
//! hierarchy before going physical-first.

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;

/// The usable PUs of one core and where the core sits.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    /// (package, NUMA position, L3 index, L2 index, core first CPU): sorting
    /// by this is "compact" order, whatever the kernel's numbering.
    pub key: [usize; 5],
    /// Usable PUs of the core, ascending.
    pub pus: Vec<usize>,
    /// Kind rank, if known.
    pub kind: Option<usize>,
}

/// Index of the first cache of `level` holding `cpu` (usize::MAX if none).
fn cache_index(topo: &Topology, level: u8, cpu: usize) -> usize {
    topo.caches_at(level)
        .position(|c| c.cpus.contains(cpu))
        .unwrap_or(usize::MAX)
}

/// Slots for the CPUs of `within` (which must be usable), in compact order.
pub(crate) fn slots(topo: &Topology, within: &CpuSet) -> Vec<Slot> {
    let mut slots: Vec<Slot> = Vec::new();
    let mut seen = CpuSet::new();
    for cpu in within.iter() {
        if seen.contains(cpu) {
            continue;
        }
        let pus: Vec<usize> = topo.siblings(cpu).intersection(within).iter().collect();
        let pus = if pus.is_empty() { vec![cpu] } else { pus };
        for p in &pus {
            seen.insert(*p);
        }
        let info = topo.cpu(cpu);
        let package = info.and_then(|c| c.package).unwrap_or(usize::MAX);
        let numa = info
            .and_then(|c| c.numa)
            .and_then(|n| topo.numa_nodes.iter().position(|node| node.id == n))
            .unwrap_or(usize::MAX);
        let key = [
            package,
            numa,
            cache_index(topo, 3, cpu),
            cache_index(topo, 2, cpu),
            pus[0],
        ];
        slots.push(Slot {
            key,
            pus,
            kind: info.and_then(|c| c.kind),
        });
    }
    slots.sort_by_key(|s| s.key);
    slots
}

/// All PUs of each slot together, slots in the given order.
pub(crate) fn compact(slots: &[Slot]) -> Vec<usize> {
    slots.iter().flat_map(|s| s.pus.iter().copied()).collect()
}

/// Every slot's first PU, then every slot's second PU, ...
pub(crate) fn physical_first(slots: &[Slot]) -> Vec<usize> {
    let depth = slots.iter().map(|s| s.pus.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for round in 0..depth {
        out.extend(slots.iter().filter_map(|s| s.pus.get(round).copied()));
    }
    out
}

/// Slots interleaved across the hierarchy: the first core of every package
/// before the second core of any; within a package the same across NUMA
/// nodes, then L3, then L2 domains (KMP_AFFINITY=scatter, OpenMP spread).
pub(crate) fn scatter_slots(slots: &[Slot]) -> Vec<Slot> {
    let order = spread(slots, (0..slots.len()).collect(), 0);
    order.into_iter().map(|i| slots[i].clone()).collect()
}

/// Indices of `idx` (in compact order) interleaved from hierarchy `level` down.
fn spread(slots: &[Slot], idx: Vec<usize>, level: usize) -> Vec<usize> {
    if level == 4 || idx.len() <= 1 {
        return idx;
    }
    // Group by the key at this level, keeping compact order.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in idx {
        match groups.last_mut() {
            Some(g) if slots[g[0]].key[level] == slots[i].key[level] => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    let groups: Vec<Vec<usize>> = groups
        .into_iter()
        .map(|g| spread(slots, g, level + 1))
        .collect();
    let depth = groups.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for d in 0..depth {
        out.extend(groups.iter().filter_map(|g| g.get(d).copied()));
    }
    out
}

/// `n` CPUs spread as hwloc-distrib spreads `n` items (`hwloc_distrib`,
/// hwloc/helper.h): down the hierarchy (package, NUMA node, L3, L2, core,
/// PU), each child gets a chunk proportional to its number of PUs, with
/// ceil-rounded cumulative shares (`ceil((before + w) n / W) - ceil(before
/// n / W)`); a chunk of one takes the child's first PU. In tree order. On
/// the i7-1370P, 4 threads land on CPUs 0, 4, 10 and 12 as
/// `hwloc-distrib 4` says. `n` must not exceed the slots' PUs.
pub(crate) fn distrib(slots: &[Slot], n: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(n);
    let idx: Vec<usize> = (0..slots.len()).collect();
    distrib_level(slots, &idx, 0, n, &mut out);
    out
}

fn distrib_level(slots: &[Slot], idx: &[usize], level: usize, n: usize, out: &mut Vec<usize>) {
    if n == 0 || idx.is_empty() {
        return;
    }
    let groups: Vec<Vec<usize>> = if level == 4 {
        idx.iter().map(|&i| vec![i]).collect()
    } else {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &i in idx {
            match groups.last_mut() {
                Some(g) if slots[g[0]].key[level] == slots[i].key[level] => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        groups
    };
    if level < 4 && groups.len() == 1 {
        return distrib_level(slots, idx, level + 1, n, out);
    }
    let weight = |g: &[usize]| g.iter().map(|&i| slots[i].pus.len()).sum::<usize>();
    let total: usize = groups.iter().map(|g| weight(g)).sum();
    if total == 0 {
        return;
    }
    let share = |w: usize| (w * n).div_ceil(total);
    let mut before = 0;
    for g in &groups {
        let w = weight(g);
        let chunk = share(before + w) - share(before);
        before += w;
        if level == 4 {
            out.extend(slots[g[0]].pus.iter().take(chunk).copied());
        } else {
            distrib_level(slots, g, level + 1, chunk, out);
        }
    }
}
