//! Discovery of the machine model from sysfs/procfs, live or recorded.
//!
//! Every read goes through [`FsRoot`], so a recorded machine (an
//! `hwloc-gather-topology` dump, a `pinsight snapshot`) is discovered exactly
//! like the running one. Each step lives in its own module:
//!
//! - `reader`: file reads that turn garbage into warnings naming the file;
//! - `cpus`: present/online CPUs and their core/package/die/cluster groups;
//! - `partition`: contradictory sharing masks settled by majority;
//! - `caches`: cache instances, deduplicated by (level, type, CPU set);
//! - `numa`: NUMA nodes, memory, distances, duplicate-node merging;
//! - `cgroup`: the CPUs and memory nodes this process's cpuset cgroup allows;
//! - `memory`: each node's memory: kind, tier, locality, HMAT, huge pages;
//! - `freq`: frequencies, `cpu_capacity`, ACPI CPPC, ARM MIDR (from
//!   `midr_el1`, else `/proc/cpuinfo`);
//! - `kinds`: core kinds (the heart) and their ranking;
//! - `procinfo`: model name, architecture and Arm MIDRs from `/proc/cpuinfo`;
//! - `pci`: PCI devices of placement classes, their locality and OS names.
//!
//! Objects are identified by CPU sets, never by the OS's ids (sparse,
//! repeated, sometimes `-1`). Groups hold online CPUs only; offline CPUs are
//! listed in `cpus` with `online: false` and belong to no group.
//!
//! Never panics on bad input: anything unreadable becomes a warning in
//! `Topology::warnings` and a best-effort model.

pub(crate) mod caches;
mod cgroup;
mod cpuid;
mod cpus;
mod freq;
pub(crate) mod kinds;
mod memory;
mod numa;
mod partition;
pub mod pci;
pub mod procinfo;
mod reader;

use pinsight_cpuset::CpuSet;
use pinsight_model::{CacheType, Cpu, Group, Source, Topology};
use pinsight_sys::FsRoot;
use reader::Reader;

/// What discovery reads beyond CPUs, cores, packages, NUMA nodes and
/// kinds, which every command needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs {
    /// PCI devices, their locality and OS names (`--near`, `topo`).
    pub devices: bool,
    /// Each NUMA node's memory details: tiers, access classes, huge pages
    /// and the cgroup's allowed nodes (`--mem`, `topo`).
    pub memory: bool,
    /// The caches, and the die and cluster levels (kept or dropped beside
    /// the caches: a level equal to an L2 or L3 adds nothing): every plan that orders CPUs
    /// by the hierarchy. Without them `caches`, `dies` and `clusters` are
    /// empty: a plan on an explicit list or a set (`run cpus:0`, `run
    /// p-set`) skips the cache files, half of what discovery opens on a
    /// small machine.
    pub caches: bool,
    /// The core kinds and what they are made of: cpufreq, `cpu_capacity`,
    /// CPPC, MIDR, the hybrid PMU lists, CPUID (on the live machine a
    /// query on each CPU in turn) and `/proc/cpuinfo` (the model name).
    /// Without them `kinds` and `provenance` are empty, each CPU has no
    /// kind and no performance facts, and `model_name` is unknown: a plan
    /// that names CPUs itself or leaves them to the OS (`run cpus:0`,
    /// `run os`) skips the files and the CPUID traps (each one a
    /// hypervisor exit in a VM), and `/proc/cpuinfo`, which the kernel
    /// writes out for every CPU (milliseconds on a few hundred).
    pub kinds: bool,
}

impl Needs {
    /// Everything.
    pub const ALL: Needs = Needs {
        devices: true,
        memory: true,
        caches: true,
        kinds: true,
    };
    /// What a plan without `--near` or `--mem` needs.
    pub const CPUS: Needs = Needs {
        devices: false,
        memory: false,
        caches: true,
        kinds: true,
    };
}

/// Builds the model of the machine behind `fs`.
pub fn discover(fs: &FsRoot) -> Topology {
    discover_with(fs, Needs::ALL)
}

/// Builds the model of the machine behind `fs`, reading only what
/// `needs` asks for beyond the CPUs: a command that places threads
/// without `--near` or `--mem` walks neither the PCI devices nor the
/// memory tiers (a third of the files discovery opens on a small
/// machine, most of `pinsight run`'s start-up). What is not read is left
/// empty: no devices, and each node's memory details at their defaults.
pub fn discover_with(fs: &FsRoot, needs: Needs) -> Topology {
    let mut r = Reader::new(fs);
    let source = if fs.is_live() {
        Source::Live
    } else {
        Source::Fsroot(fs.root().display().to_string())
    };

    let layout = cpus::discover_cpus(&mut r, needs.caches);
    let online = layout.online.clone();
    let caches = if needs.caches {
        caches::discover_caches(&mut r, &layout)
    } else {
        Vec::new()
    };
    let mut numa = numa::discover_numa(&mut r, &online);
    let group = cgroup::locate(&mut r);
    let allowed = group.as_ref().and_then(|g| cgroup::allowed_cpus(&mut r, g));
    if needs.memory {
        let mems = group.as_ref().and_then(|g| cgroup::allowed_mems(&mut r, g));
        memory::discover_memory(&mut r, &mut numa.nodes, numa.distances.as_deref(), mems);
    }
    // A recorded machine's architecture is read from its cpuinfo (the
    // live one's is the build's): kept whatever `needs` says. Read once:
    // the kinds take each Arm processor's MIDR from it when sysfs has none.
    let cpuinfo = if needs.kinds || !fs.is_live() {
        r.text("/proc/cpuinfo")
    } else {
        None
    };
    let perf = if needs.kinds {
        freq::discover_perf(&mut r, &layout, cpuinfo.as_deref())
    } else {
        freq::PerfMap::unread(&layout)
    };
    let info = cpuinfo
        .as_deref()
        .map(procinfo::read_cpuinfo)
        .unwrap_or_default();
    let devices = if needs.devices {
        pci::discover_devices(&mut r, &online, &numa.nodes)
    } else {
        Vec::new()
    };

    // Whether a die or cluster level adds anything is judged beside the
    // caches: without them, neither level.
    let (dies, clusters) = if needs.caches {
        (
            meaningful_or_empty(&layout.dies, &layout, &caches),
            meaningful_or_empty(&layout.clusters, &layout, &caches),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let usable_mask = usable_mask(&mut r, allowed, &online);
    let (kinds, provenance) = if needs.kinds {
        kinds::discover_kinds(&mut r, &layout, &perf)
    } else {
        (Vec::new(), Default::default())
    };
    let cpus = build_cpus(
        &layout,
        &CpuGroups {
            dies: &dies,
            clusters: &clusters,
            numa: &numa.nodes,
            kinds: &kinds,
            usable_mask: usable_mask.as_ref(),
        },
        &perf,
    );

    let mut topo = Topology {
        source,
        model_name: info.model_name,
        arch: if fs.is_live() {
            Some(std::env::consts::ARCH.to_string())
        } else {
            info.arch
        },
        cpus,
        cores: layout.cores,
        packages: layout.packages,
        dies,
        clusters,
        caches,
        numa_nodes: numa.nodes,
        numa_distances: numa.distances,
        kinds,
        provenance,
        devices,
        warnings: Vec::new(),
    };
    kinds::name_x86_hybrid(&mut topo);
    topo.warnings = r.into_warnings();
    topo
}

/// The die or cluster level `groups`, or no level at all when it adds
/// nothing (see [`groups_meaningful`]).
fn meaningful_or_empty(
    groups: &[Group],
    layout: &cpus::Layout,
    caches: &[pinsight_model::Cache],
) -> Vec<Group> {
    if groups_meaningful(groups, &layout.packages, caches, &layout.online) {
        groups.to_vec()
    } else {
        Vec::new()
    }
}

/// The cgroup's allowed CPUs, unless none of them is online (then the
/// restriction is ignored with a warning naming the cgroup file).
fn usable_mask(
    r: &mut Reader,
    allowed: Option<(CpuSet, String)>,
    online: &CpuSet,
) -> Option<CpuSet> {
    let (a, path) = allowed?;
    if !a.intersects(online) && !online.is_empty() {
        r.warn(
            &path,
            format_args!("allows CPUs {a} but none of them is online ({online})"),
            "ignored the cgroup restriction",
        );
        None
    } else {
        Some(a)
    }
}

/// The groups a CPU is placed in, besides the layout's cores and packages.
struct CpuGroups<'a> {
    dies: &'a [Group],
    clusters: &'a [Group],
    numa: &'a [pinsight_model::NumaNode],
    kinds: &'a [pinsight_model::Kind],
    usable_mask: Option<&'a CpuSet>,
}

/// One [`Cpu`] per present CPU: offline ones belong to no group.
fn build_cpus(layout: &cpus::Layout, g: &CpuGroups, perf: &freq::PerfMap) -> Vec<Cpu> {
    layout
        .present
        .iter()
        .map(|id| {
            let on = layout.online.contains(id);
            let p = perf.get(id);
            Cpu {
                id,
                online: on,
                allowed: !matches!(g.usable_mask, Some(a) if !a.contains(id)),
                core: index_of(&layout.cores, id).filter(|_| on),
                package: index_of(&layout.packages, id).filter(|_| on),
                die: index_of(g.dies, id).filter(|_| on),
                cluster: index_of(g.clusters, id).filter(|_| on),
                numa: g
                    .numa
                    .iter()
                    .find(|n| n.cpus.contains(id))
                    .map(|n| n.id)
                    .filter(|_| on),
                kind: g
                    .kinds
                    .iter()
                    .position(|k| k.cpus.contains(id))
                    .filter(|_| on),
                capacity: p.and_then(|p| p.capacity),
                max_mhz: p.and_then(|p| p.max_mhz),
                base_mhz: p.and_then(|p| p.base_mhz),
                cppc: p.and_then(|p| p.cppc.clone()),
                core_type: p.and_then(|p| p.core_type),
                midr: p.and_then(|p| p.midr),
            }
        })
        .collect()
}

/// Logical index of the group holding `cpu`.
fn index_of(groups: &[Group], cpu: usize) -> Option<usize> {
    groups.iter().position(|g| g.cpus.contains(cpu))
}

/// Whether a die/cluster level adds information (model doc, NOTES 4): it
/// must cover every online CPU (a partial level cannot be planned on), and at
/// least one group must hold more than one CPU while differing from its
/// package and from every L2/L3 instance. The hwloc XML loader applies the
/// same rule, so a machine reads the same from sysfs and from lstopo's XML.
pub(crate) fn groups_meaningful(
    groups: &[Group],
    packages: &[Group],
    caches: &[pinsight_model::Cache],
    online: &CpuSet,
) -> bool {
    if groups.is_empty() {
        return false;
    }
    let covered = groups
        .iter()
        .fold(CpuSet::new(), |acc, g| acc.union(&g.cpus));
    if &covered != online {
        return false;
    }
    groups.iter().any(|g| {
        g.cpus.len() > 1
            && !packages.iter().any(|p| p.cpus == g.cpus)
            && !caches.iter().any(|c| {
                (c.level == 2 || c.level == 3)
                    && c.cache_type != CacheType::Instruction
                    && c.cpus == g.cpus
            })
    })
}
