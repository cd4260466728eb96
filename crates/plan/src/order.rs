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

/// `n` CPUs spread over `usable` as `hwloc-distrib --single n` spreads
/// them (`hwloc_distrib`, hwloc's include/hwloc/helper.h; `--single` is
/// `hwloc_bitmap_singlify`), in tree order. The tree is lstopo's: every
/// set of CPUs that hwloc makes an object of ([`hwloc_tree`]). Down from
/// the root, each child gets a chunk proportional to its number of PUs,
/// with ceil-rounded cumulative shares (`ceil((before + w) n / W) -
/// ceil(before n / W)`); a child given one item (or a PU) is one output,
/// all its CPUs; a child given none joins the output before it (so that
/// it is not ignored, helper.h). Each output is then its lowest CPU. On
/// the i7-1370P, 4 threads land on CPUs 0, 4, 10 and 12 as `hwloc-distrib
/// --single 4` says. `n` must not exceed the usable CPUs.
pub(crate) fn distrib(topo: &Topology, usable: &CpuSet, n: usize) -> Vec<usize> {
    let tree = hwloc_tree(topo, usable);
    let mut out: Vec<CpuSet> = Vec::with_capacity(n);
    distrib_node(&tree, std::slice::from_ref(&tree.root()), n, &mut out);
    out.iter().filter_map(CpuSet::first).collect()
}

/// hwloc's objects over `usable` as nested CPU sets: the machine, groups
/// of NUMA nodes closer to each other than to the rest ([`distance_groups`],
/// hwloc's grouping by distances), each NUMA node's CPUs (a Group where
/// they are no other object's), packages, dies, clusters, caches, cores,
/// and the PUs. Sets are inserted largest first; one that overlaps an
/// inserted set without nesting in it is left out (hwloc cannot nest it
/// either); equal sets are one node (a chain of one child changes no
/// chunk). Children are in order of their first CPU, as hwloc sorts them.
pub(crate) struct Tree {
    /// Node sets; node 0 is the root (`usable`).
    sets: Vec<CpuSet>,
    children: Vec<Vec<usize>>,
}

impl Tree {
    fn root(&self) -> usize {
        0
    }
}
pub(crate) fn hwloc_tree(topo: &Topology, usable: &CpuSet) -> Tree {
    let mut tree = Tree {
        sets: vec![usable.clone()],
        children: vec![Vec::new()],
    };
    let within = |s: &CpuSet| Some(s.intersection(usable)).filter(|s| !s.is_empty());
    // The CPU hierarchy first (nested by construction), largest first.
    let mut cpu_sets: Vec<CpuSet> = Vec::new();
    for level in [&topo.packages, &topo.dies, &topo.clusters, &topo.cores] {
        cpu_sets.extend(level.iter().filter_map(|g| within(&g.cpus)));
    }
    cpu_sets.extend(topo.caches.iter().filter_map(|c| within(&c.cpus)));
    cpu_sets.extend(usable.iter().map(CpuSet::single));
    cpu_sets.sort_by(|a, b| b.len().cmp(&a.len()).then(a.first().cmp(&b.first())));
    cpu_sets.dedup();
    for s in cpu_sets {
        tree.insert(s);
    }
    // Then the memory side: NUMA nodes and their distance groups, where
    // they nest with the CPU hierarchy (largest first, so a group goes
    // above its nodes).
    let mut mem_sets: Vec<CpuSet> = distance_groups(topo)
        .iter()
        .chain(topo.numa_nodes.iter().map(|n| &n.cpus))
        .filter_map(within)
        .collect();
    mem_sets.sort_by(|a, b| b.len().cmp(&a.len()).then(a.first().cmp(&b.first())));
    for s in mem_sets {
        tree.insert(s);
    }
    for i in 0..tree.children.len() {
        let mut kids = std::mem::take(&mut tree.children[i]);
        kids.sort_by_key(|&c| tree.sets[c].first());
        tree.children[i] = kids;
    }
    tree
}

impl Tree {
    /// Adds `s` under the smallest node holding it, above the children it
    /// holds; nothing when it equals a node or overlaps one without
    /// nesting.
    fn insert(&mut self, s: CpuSet) {
        let mut at = 0;
        'down: loop {
            if self.sets[at] == s {
                return;
            }
            for &c in &self.children[at] {
                let cs = &self.sets[c];
                if s.is_subset(cs) {
                    at = c;
                    continue 'down;
                }
                if s.intersects(cs) && !cs.is_subset(&s) {
                    return;
                }
            }
            break;
        }
        let id = self.sets.len();
        let (inside, outside): (Vec<usize>, Vec<usize>) = self.children[at]
            .iter()
            .partition(|&&c| self.sets[c].is_subset(&s));
        self.sets.push(s);
        self.children.push(inside);
        self.children[at] = outside;
        self.children[at].push(id);
    }
}

/// `hwloc_distrib` over the nodes `roots` of `tree`, `n` items.
fn distrib_node(tree: &Tree, roots: &[usize], n: usize, out: &mut Vec<CpuSet>) {
    let total: usize = roots.iter().map(|&r| tree.sets[r].len()).sum();
    if total == 0 {
        return;
    }
    let share = |w: usize| (w * n).div_ceil(total);
    let mut before = 0;
    for &r in roots {
        let set = &tree.sets[r];
        let w = set.len();
        let chunk = share(before + w) - share(before);
        before += w;
        let kids = &tree.children[r];
        if kids.is_empty() || chunk <= 1 {
            if chunk > 0 {
                out.extend(std::iter::repeat_n(set.clone(), chunk));
            } else if let Some(last) = out.last_mut() {
                *last = last.union(set);
            }
        } else {
            distrib_node(tree, kids, chunk, out);
        }
    }
}

/// Groups of NUMA nodes by distance, as hwloc groups them (hwloc's
/// topology-distances: `hwloc__groups_by_distances`, exact values): the
/// nodes linked, directly or through each other, by the smallest distance
/// between two different nodes form a group; when that makes more than
/// one group and not every node alone, the groups are kept (their CPUs)
/// and grouped again over the averaged distances between groups, until
/// one group or none remains.
pub(crate) fn distance_groups(topo: &Topology) -> Vec<CpuSet> {
    let Some(d) = topo.numa_distances.as_ref() else {
        return Vec::new();
    };
    let n = topo.numa_nodes.len();
    if n < 3 || d.len() != n || d.iter().any(|r| r.len() != n) {
        return Vec::new();
    }
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut dist: Vec<Vec<f64>> = d
        .iter()
        .map(|r| r.iter().map(|&v| f64::from(v)).collect())
        .collect();
    let mut out = Vec::new();
    loop {
        let m = members.len();
        let min = (0..m)
            .flat_map(|i| (0..m).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| dist[i][j])
            .fold(f64::INFINITY, f64::min);
        if !min.is_finite() {
            break;
        }
        // Connected components of the "at the minimal distance" relation.
        let mut group = vec![usize::MAX; m];
        let mut count = 0;
        for i in 0..m {
            if group[i] != usize::MAX {
                continue;
            }
            let mut stack = vec![i];
            group[i] = count;
            while let Some(x) = stack.pop() {
                for y in 0..m {
                    if y != x && group[y] == usize::MAX && (dist[x][y] == min || dist[y][x] == min)
                    {
                        group[y] = count;
                        stack.push(y);
                    }
                }
            }
            count += 1;
        }
        if count <= 1 || count == m {
            break;
        }
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (i, &g) in group.iter().enumerate() {
            next[g].extend(members[i].iter().copied());
        }
        let mut nd = vec![vec![0.0; count]; count];
        let mut sizes = vec![vec![0.0; count]; count];
        for i in 0..m {
            for j in 0..m {
                nd[group[i]][group[j]] += dist[i][j];
                sizes[group[i]][group[j]] += 1.0;
            }
        }
        for (row, srow) in nd.iter_mut().zip(&sizes) {
            for (v, s) in row.iter_mut().zip(srow) {
                *v /= s;
            }
        }
        for g in &next {
            if g.len() > 1 {
                let cpus = g
                    .iter()
                    .fold(CpuSet::new(), |acc, &i| acc.union(&topo.numa_nodes[i].cpus));
                out.push(cpus);
            }
        }
        members = next;
        dist = nd;
    }
    out
}
