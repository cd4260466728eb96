//! The topology as one tree, shared by `pinsight topo` (text, in the manner
//! of `lstopo-no-graphics`) and `pinsight report` (nested SVG boxes).
//!
//! The flat model is collected into [`Placed`] objects (one function per
//! object family), then [`nest`]ed by CPU-set inclusion: each object hangs
//! under the smallest object containing it, which is how hwloc itself
//! decides parenthood. Objects covering the same CPUs form single-child
//! chains that a renderer may show as one ([`TreeNode::chain`]).
//!
//! Memory hangs under the CPUs it is local to ([`memory`]: a memory-only
//! node under its initiators' CPUs, as lstopo shows it), PCI devices under
//! their local CPUs ([`devices`]); either without a locality (an empty
//! set) sits at machine level.

use pinsight_cpuset::CpuSet;
use pinsight_model::{Cache, CacheType, Cpu, Group, NumaNode, PciDevice, Topology};
use std::cmp::Reverse;

/// A topology object, borrowed from the model.
#[derive(Clone, Copy, Debug)]
pub enum Object<'a> {
    Package(&'a Group),
    Die(&'a Group),
    Numa(&'a NumaNode),
    Cache(&'a Cache),
    Cluster(&'a Group),
    Core(&'a Group),
    Pu(&'a Cpu),
    /// A PCI device (NIC, GPU, NVMe, ...), shown after everything else.
    Device(&'a PciDevice),
    /// The CPUs some memory is local to, when no other object covers
    /// exactly them (lstopo's `Group`; see [`memory_groups`]).
    MemoryGroup,
}

impl Object<'_> {
    /// Order among objects with the same CPUs: lower = outer.
    pub fn depth(&self) -> u8 {
        match self {
            Object::Package(_) => 1,
            Object::Die(_) | Object::MemoryGroup => 2,
            Object::Numa(_) => 3,
            Object::Cache(c) => {
                let instruction = u8::from(c.cache_type == CacheType::Instruction);
                (10 - c.level.min(5) + instruction) * 2
            }
            // A cluster sits just below the L3 and above the L2.
            Object::Cluster(_) => 13,
            Object::Core(_) => 30,
            Object::Pu(_) => 31,
            Object::Device(_) => 32,
        }
    }
}

/// An object about to be nested: what it is, the CPUs it covers, and how
/// it takes part in the nesting.
#[derive(Clone, Debug)]
pub struct Placed<'a> {
    pub object: Object<'a>,
    pub cpus: CpuSet,
    /// Memory is shown beside its host's children (first), never as a parent.
    pub memory: bool,
    /// Never a parent (memory nodes; cores when PUs are not drawn as objects).
    pub leaf: bool,
}

impl<'a> Placed<'a> {
    fn new(object: Object<'a>, cpus: &CpuSet) -> Self {
        Placed {
            object,
            cpus: cpus.clone(),
            memory: false,
            leaf: false,
        }
    }
}

/// One node of the nested tree.
#[derive(Clone, Debug)]
pub struct TreeNode<'a> {
    pub object: Object<'a>,
    pub cpus: CpuSet,
    pub memory: bool,
    pub children: Vec<TreeNode<'a>>,
}

impl<'a> TreeNode<'a> {
    /// This node and the single children below it that cover the same CPUs
    /// (lstopo's "L2 + L1d + Core"), as long as `joins` accepts both ends
    /// of each link. The last node's children are the ones to show below.
    pub fn chain(&self, joins: impl Fn(&TreeNode<'a>) -> bool) -> Vec<&TreeNode<'a>> {
        let mut out = vec![self];
        let mut cur = self;
        while let [only] = cur.children.as_slice() {
            if !joins(cur) || !joins(only) || only.cpus != cur.cpus {
                break;
            }
            out.push(only);
            cur = only;
        }
        out
    }
}

/// The packages.
pub fn packages(topo: &Topology) -> Vec<Placed<'_>> {
    groups(&topo.packages, Object::Package)
}

/// The dies.
pub fn dies(topo: &Topology) -> Vec<Placed<'_>> {
    groups(&topo.dies, Object::Die)
}

/// The clusters (CPUs sharing an L2 or a cluster id).
pub fn clusters(topo: &Topology) -> Vec<Placed<'_>> {
    groups(&topo.clusters, Object::Cluster)
}

/// The cores.
pub fn cores(topo: &Topology) -> Vec<Placed<'_>> {
    groups(&topo.cores, Object::Core)
}

fn groups<'a>(v: &'a [Group], f: fn(&'a Group) -> Object<'a>) -> Vec<Placed<'a>> {
    v.iter().map(|g| Placed::new(f(g), &g.cpus)).collect()
}

/// NUMA node `n` placed at `cpus` as memory: a leaf beside its host's
/// children.
fn memory_node<'a>(n: &'a NumaNode, cpus: &CpuSet) -> Placed<'a> {
    Placed {
        memory: true,
        leaf: true,
        ..Placed::new(Object::Numa(n), cpus)
    }
}

/// The NUMA nodes, as memory (see [`Placed::memory`]).
pub fn numa_nodes(topo: &Topology) -> Vec<Placed<'_>> {
    topo.numa_nodes
        .iter()
        .map(|n| memory_node(n, &n.cpus))
        .collect()
}

/// Every NUMA node placed by its memory's locality (the CPUs that reach
/// it best: its own, or its initiators' for a memory-only node), as
/// memory; a node without one (`locality` empty) sits at machine level.
pub fn memory(topo: &Topology) -> Vec<Placed<'_>> {
    let online = topo.online();
    topo.numa_nodes
        .iter()
        .map(|n| memory_node(n, &n.memory.locality.intersection(&online)))
        .collect()
}

/// The PCI devices, placed by their local CPUs (the whole machine when
/// unknown); leaves shown after the other children.
pub fn devices(topo: &Topology) -> Vec<Placed<'_>> {
    let online = topo.online();
    topo.devices
        .iter()
        .map(|d| Placed {
            leaf: true,
            ..Placed::new(Object::Device(d), &d.local_cpus.intersection(&online))
        })
        .collect()
}

/// The caches, outer levels first, data before instruction, then by CPU.
pub fn caches(topo: &Topology) -> Vec<Placed<'_>> {
    let mut caches: Vec<&Cache> = topo.caches.iter().collect();
    caches.sort_by_key(|c| {
        (
            Reverse(c.level),
            c.cache_type == CacheType::Instruction,
            c.cpus.first(),
        )
    });
    caches
        .into_iter()
        .map(|c| Placed::new(Object::Cache(c), &c.cpus))
        .collect()
}

/// The online CPUs (hardware threads).
pub fn pus(topo: &Topology) -> Vec<Placed<'_>> {
    topo.cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| Placed::new(Object::Pu(c), &CpuSet::single(c.id)))
        .collect()
}

/// Every object of the model, PUs included when `with_pus`: memory by
/// locality ([`memory`]) and the PCI devices ([`devices`]).
pub fn objects(topo: &Topology, with_pus: bool) -> Vec<Placed<'_>> {
    let mut out = packages(topo);
    out.extend(dies(topo));
    out.extend(memory(topo));
    out.extend(devices(topo));
    out.extend(caches(topo));
    out.extend(clusters(topo));
    out.extend(cores(topo));
    if with_pus {
        out.extend(pus(topo));
    }
    let groups = memory_groups(&out);
    out.extend(groups.iter().map(|g| Placed::new(Object::MemoryGroup, g)));
    out
}

/// The memory localities among `items` that no other non-leaf object
/// covers exactly and that nest with every one of them (so the tree stays
/// a tree): hwloc adds a `Group` there to hang the memory under (two DRAM
/// nodes in one L3, an HBM node local to half a package).
pub fn memory_groups(items: &[Placed<'_>]) -> Vec<CpuSet> {
    let mut out: Vec<CpuSet> = Vec::new();
    // Memory local to every CPU hangs under the Machine, as in lstopo.
    let machine: CpuSet = items
        .iter()
        .filter(|p| !p.memory && !p.leaf)
        .fold(CpuSet::new(), |acc, p| acc.union(&p.cpus));
    for m in items.iter().filter(|p| p.memory && !p.cpus.is_empty()) {
        let l = &m.cpus;
        if *l == machine {
            continue;
        }
        let boxes = || items.iter().filter(|p| !p.leaf && !p.memory);
        let covered = boxes().any(|p| &p.cpus == l);
        let nests =
            boxes().all(|p| !p.cpus.intersects(l) || p.cpus.is_subset(l) || l.is_subset(&p.cpus));
        if !covered && nests && !out.contains(l) {
            out.push(l.clone());
        }
    }
    out
}

/// Drops the non-leaf objects that overlap an earlier, bigger one without
/// nesting in it (inconsistent firmware tables), so that what remains is a
/// laminar family: any two objects are nested or disjoint.
pub fn laminar(mut items: Vec<Placed<'_>>) -> Vec<Placed<'_>> {
    sort_outer_first(&mut items);
    let mut kept: Vec<Placed> = Vec::with_capacity(items.len());
    for p in items {
        let clash = !p.leaf
            && kept
                .iter()
                .any(|k| !k.leaf && k.cpus.intersects(&p.cpus) && !p.cpus.is_subset(&k.cpus));
        if !clash {
            kept.push(p);
        }
    }
    kept
}

/// Outer objects first: bigger sets, then lower depth, then by first CPU.
fn sort_outer_first(items: &mut [Placed<'_>]) {
    items.sort_by_key(|n| (Reverse(n.cpus.len()), n.object.depth(), n.cpus.first()));
}

/// Nests `items` by CPU-set inclusion: each hangs under the innermost
/// non-leaf object containing its CPUs (an object without CPUs is a root);
/// objects with the same CPUs chain, outer depth above. Children are
/// ordered memory first, devices last, else by first CPU.
pub fn nest(mut items: Vec<Placed<'_>>) -> Vec<TreeNode<'_>> {
    sort_outer_first(&mut items);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); items.len()];
    let mut roots = Vec::new();
    for i in 0..items.len() {
        // Memory hangs under the OUTERMOST object covering exactly its CPUs,
        // as hwloc attaches a NUMA node (lstopo prints a node whose CPUs
        // equal an L3's inside that L3, and one equal to a whole package
        // under the package); else, like everything, under the last
        // (innermost) earlier object containing it.
        let exact = if items[i].memory && !items[i].cpus.is_empty() {
            (0..items.len()).find(|&j| {
                j != i && !items[j].leaf && !items[j].memory && items[j].cpus == items[i].cpus
            })
        } else {
            None
        };
        let parent = exact.or_else(|| {
            (0..i).rev().find(|&j| {
                !items[i].cpus.is_empty()
                    && !items[j].leaf
                    && items[i].cpus.is_subset(&items[j].cpus)
            })
        });
        match parent {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let group = |p: &Placed| match p.object {
        _ if p.memory => 0,
        Object::Device(_) => 2,
        _ => 1,
    };
    for ch in &mut children {
        ch.sort_by_key(|&i| {
            (
                group(&items[i]),
                items[i].cpus.first(),
                items[i].object.depth(),
            )
        });
    }
    roots.sort_by_key(|&i| (group(&items[i]), items[i].cpus.first()));
    let mut slots: Vec<Option<Placed>> = items.into_iter().map(Some).collect();
    roots
        .iter()
        .filter_map(|&r| build(r, &mut slots, &children))
        .collect()
}

fn build<'a>(
    i: usize,
    slots: &mut [Option<Placed<'a>>],
    children: &[Vec<usize>],
) -> Option<TreeNode<'a>> {
    let p = slots[i].take()?;
    let kids = children[i]
        .iter()
        .filter_map(|&c| build(c, slots, children))
        .collect();
    Some(TreeNode {
        object: p.object,
        cpus: p.cpus,
        memory: p.memory,
        children: kids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(id: usize, cpus: &[usize]) -> Group {
        Group {
            id,
            os_id: None,
            cpus: cpus.iter().copied().collect(),
        }
    }

    #[test]
    fn nests_by_inclusion_and_chains_equal_sets() {
        let pkg = group(0, &[0, 1, 2, 3]);
        let l3 = Cache {
            level: 3,
            cache_type: CacheType::Unified,
            size_kib: Some(8192),
            line_size: None,
            ways: None,
            cpus: pkg.cpus.clone(),
        };
        let (c0, c1) = (group(0, &[0, 1]), group(1, &[2, 3]));
        let items = vec![
            Placed::new(Object::Core(&c1), &c1.cpus),
            Placed::new(Object::Cache(&l3), &l3.cpus),
            Placed::new(Object::Core(&c0), &c0.cpus),
            Placed::new(Object::Package(&pkg), &pkg.cpus),
        ];
        let roots = nest(items);
        assert_eq!(roots.len(), 1);
        let chain = roots[0].chain(|_| true);
        assert!(matches!(chain[0].object, Object::Package(_)));
        assert!(matches!(chain[1].object, Object::Cache(_)));
        assert_eq!(chain.len(), 2, "two cores below: the chain stops");
        let cores: Vec<_> = chain[1].children.iter().map(|c| c.cpus.first()).collect();
        assert_eq!(cores, vec![Some(0), Some(2)]);
    }

    #[test]
    fn laminar_drops_overlapping_boxes_but_keeps_leaves() {
        let a = group(0, &[0, 1, 2, 3]);
        let b = group(1, &[2, 3, 4]);
        let core = group(0, &[3, 4]);
        let items = vec![
            Placed::new(Object::Package(&a), &a.cpus),
            Placed::new(Object::Die(&b), &b.cpus),
            Placed {
                leaf: true,
                ..Placed::new(Object::Core(&core), &core.cpus)
            },
        ];
        let kept = laminar(items);
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|p| !matches!(p.object, Object::Die(_))));
    }

    #[test]
    fn leaves_and_memory_never_hold_children() {
        let node = NumaNode::new(0, [0, 1].into_iter().collect(), None);
        let core = group(0, &[0, 1]);
        let pkg = group(0, &[0, 1]);
        let mut items = numa_nodes_of(&node);
        items.push(Placed::new(Object::Core(&core), &core.cpus));
        items.push(Placed::new(Object::Package(&pkg), &pkg.cpus));
        let roots = nest(items);
        assert_eq!(roots.len(), 1);
        // Memory first among the package's children, the core beside it.
        assert!(roots[0].children[0].memory);
        assert!(matches!(roots[0].children[1].object, Object::Core(_)));
    }

    fn numa_nodes_of(n: &NumaNode) -> Vec<Placed<'_>> {
        vec![Placed {
            memory: true,
            leaf: true,
            ..Placed::new(Object::Numa(n), &n.cpus)
        }]
    }
}
