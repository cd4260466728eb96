//! What each NUMA node's memory is, who reaches it best and whether this
//! process may allocate on it (the [`NodeMemory`] of every node).
//!
//! Read per node, under `/sys/devices/system/node/`:
//! - `has_memory`, `has_generic_initiator` (node lists): memoryless CPU
//!   nodes and accelerator nodes; without `has_memory`, a node holds memory
//!   when its `MemTotal` is not zero;
//! - `nodeN/access1/initiators/` (CPU initiators), else `access0/`: the
//!   initiator nodes (`nodeM` links) and HMAT bandwidth/latency;
//! - `nodeN/hugepages/hugepages-SIZEkB/{nr,free}_hugepages`;
//! - `nodeN/memory_side_cache/indexK/{size,line_size}`.
//!
//! Locality follows hwloc (`topology-linux.c`): a node with CPUs is local
//! to them; a CPU-less node is local to the CPUs of its `access1` (else
//! `access0`) initiators; without initiators, to the CPU node(s) strictly
//! nearest by the distance matrix (none when every other node is as far:
//! then it belongs to the whole machine, `LocalitySource::Unknown`).
//!
//! Kinds follow hwloc 3.0's guess of memory tiers (`memattrs.c`), limited
//! to what the kernel tells:
//! - GPU memory: a node named by an NVIDIA GPU's
//!   `/proc/driver/nvidia/gpus/<PCI address>/numa_status` (its `Node: N`
//!   line; Grace-Hopper, and POWER9 + V100 where hwloc hides these nodes
//!   by default) is GPU memory (hwloc's `look_sysfsnode` sets subtype
//!   `GPUMemory`; `hwloc__group_memory_tiers` then ranks it first). The
//!   directory is listed only when some node has no CPU. hwloc reads no
//!   device tree for this (POWER9's `ibm,coherent-device-memory` nodes
//!   only reach Linux through the same driver), so neither does pinsight.
//!   Such a node is local to the GPU's `local_cpus` (`LocalitySource::
//!   Device`), as hwloc attaches it;
//! - CXL: hwloc's `annotate_dax_parent` looks for `/regionN` in the DAX
//!   device's parent path (`../../../devices/platform/ACPI0017:00/root0/
//!   decoder0.0/region0/dax_region0/dax0.0` for CXL RAM, `.../root0/
//!   nvdimm-bridge0/ndbus0/region0/dax0.0/dax0.0` for CXL PMEM) and
//!   `annotate_cxl_dax` follows `/sys/bus/cxl/devices/regionN/targetI`
//!   (decoder names) to the memory devices; a node with such a device is
//!   CXL-NVM when its parent is an NVDIMM bus, CXL-DRAM otherwise (CXL
//!   clears SPM in `hwloc__group_memory_tiers`, so never HBM). pinsight
//!   takes a region with a readable `target0` as the CXL evidence (it does
//!   not resolve the memory devices' PCI addresses), and reads it only for
//!   DAX devices of CPU-less nodes;
//! - a DAX device (`/sys/bus/dax/devices/daxX.Y`, `target_node`) under an
//!   NVDIMM bus (`ndbus`) is NVM; under `hmem` (EFI "specific purpose") it
//!   is SPM, or HBM when its HMAT read bandwidth exceeds every DRAM node's;
//! - a node with CPUs and no DAX device is DRAM;
//! - a CPU-less node without DAX is HBM when HMAT says it is faster than
//!   DRAM, DRAM when the kernel put it in a DRAM node's memory tier, and
//!   unknown otherwise (never guessed).
//!
//! `tier` is the kernel's memory tier (`/sys/devices/virtual/memory_tiering/
//! memory_tierN/nodelist`), when the kernel has them.
//!
//! The cgroup's allowed memory nodes (`cpuset.mems.effective` and the like,
//! found by `cgroup`) set `allowed`; nodes outside the set stay listed.

use super::reader::Reader;
use pinsight_cpuset::CpuSet;
use pinsight_model::{HugePages, LocalitySource, MemoryAccess, MemoryKind, MemoryKindSource};
use pinsight_model::{MemorySideCache, NumaNode};

const NODE_DIR: &str = "/sys/devices/system/node";
const DAX_DIR: &str = "/sys/bus/dax/devices";
const TIER_DIR: &str = "/sys/devices/virtual/memory_tiering";
const CXL_DIR: &str = "/sys/bus/cxl/devices";
const NVIDIA_GPUS: &str = "/proc/driver/nvidia/gpus";

/// Fills `nodes[..].memory`. `distances` is the matrix in `nodes` order;
/// `mems` the cgroup's allowed node ids and the file that said so.
pub(super) fn discover_memory(
    r: &mut Reader,
    nodes: &mut [NumaNode],
    distances: Option<&[Vec<u32>]>,
    mems: Option<(CpuSet, String)>,
) {
    if nodes.is_empty() {
        return;
    }
    let has_memory = r.cpulist(
        &format!("{NODE_DIR}/has_memory"),
        "used each node's MemTotal instead",
    );
    let generic = r.cpulist(
        &format!("{NODE_DIR}/has_generic_initiator"),
        "assumed no generic initiator",
    );
    for n in nodes.iter_mut() {
        let id = n.id as usize;
        n.memory.has_memory = match &has_memory {
            Some(set) => set.contains(id),
            None => n.memory_mib != Some(0),
        };
        n.memory.generic_initiator = generic.as_ref().is_some_and(|g| g.contains(id));
        let dir = format!("{NODE_DIR}/node{}", n.id);
        // One listing tells which of the optional directories exist, so a
        // plain machine pays one read per node.
        let entries = r.list(&dir);
        let has = |name: &str| entries.iter().any(|e| e == name);
        n.memory.access = [1u8, 0]
            .into_iter()
            .filter(|k| has(&format!("access{k}")))
            .filter_map(|k| read_access(r, &dir, k))
            .collect();
        n.memory.access.sort_by_key(|a| a.class);
        if has("hugepages") {
            n.memory.hugepages = read_hugepages(r, &format!("{dir}/hugepages"));
        }
        if has("memory_side_cache") {
            n.memory.side_caches = read_side_caches(r, &format!("{dir}/memory_side_cache"));
        }
    }
    set_localities(nodes, distances);
    read_tiers(r, nodes);
    set_kinds(r, nodes);
    apply_mems(r, nodes, mems);
}

/// One access class (`nodeN/accessK/initiators/`), `None` when it lists no
/// initiator and no attribute.
fn read_access(r: &mut Reader, dir: &str, class: u8) -> Option<MemoryAccess> {
    let idir = format!("{dir}/access{class}/initiators");
    let mut initiators: Vec<u32> = r
        .list(&idir)
        .iter()
        .filter_map(|e| e.strip_prefix("node"))
        .filter_map(|d| d.parse().ok())
        .collect();
    initiators.sort_unstable();
    // The kernel writes 0 for an attribute HMAT does not give.
    let mut attr = |name: &str| {
        r.number(&format!("{idir}/{name}"), "left it unknown")
            .filter(|v| *v > 0)
    };
    let a = MemoryAccess {
        class,
        read_bandwidth_mbps: attr("read_bandwidth"),
        write_bandwidth_mbps: attr("write_bandwidth"),
        read_latency_ns: attr("read_latency"),
        write_latency_ns: attr("write_latency"),
        initiators,
    };
    let empty = a.initiators.is_empty()
        && a.read_bandwidth_mbps.is_none()
        && a.write_bandwidth_mbps.is_none()
        && a.read_latency_ns.is_none()
        && a.write_latency_ns.is_none();
    (!empty).then_some(a)
}

fn read_hugepages(r: &mut Reader, dir: &str) -> Vec<HugePages> {
    let mut out: Vec<HugePages> = r
        .list(dir)
        .iter()
        .filter_map(|e| {
            let size = e.strip_prefix("hugepages-")?.strip_suffix("kB")?;
            Some((e.clone(), size.parse::<u64>().ok()?))
        })
        .map(|(e, size_kib)| HugePages {
            size_kib,
            total: r.number(&format!("{dir}/{e}/nr_hugepages"), "left it unknown"),
            free: r.number(&format!("{dir}/{e}/free_hugepages"), "left it unknown"),
        })
        .collect();
    out.sort_by_key(|h| h.size_kib);
    out
}

fn read_side_caches(r: &mut Reader, dir: &str) -> Vec<MemorySideCache> {
    let mut out: Vec<MemorySideCache> = r
        .list(dir)
        .iter()
        .filter_map(|e| Some((e.clone(), e.strip_prefix("index")?.parse::<u8>().ok()?)))
        .map(|(e, level)| MemorySideCache {
            level,
            size_kib: r
                .number(&format!("{dir}/{e}/size"), "left its size unknown")
                .map(|b| b / 1024),
            line_size: r
                .number(&format!("{dir}/{e}/line_size"), "left it unknown")
                .and_then(|v| u32::try_from(v).ok()),
        })
        .collect();
    out.sort_by_key(|c| c.level);
    out
}

/// Locality as hwloc decides it (see the module doc).
fn set_localities(nodes: &mut [NumaNode], distances: Option<&[Vec<u32>]>) {
    let cpus_of = |ids: &[u32], nodes: &[NumaNode]| {
        nodes
            .iter()
            .filter(|n| ids.contains(&n.id))
            .fold(CpuSet::new(), |acc, n| acc.union(&n.cpus))
    };
    let mut out: Vec<(CpuSet, LocalitySource)> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if !n.cpus.is_empty() {
            out.push((n.cpus.clone(), LocalitySource::OwnCpus));
            continue;
        }
        let by_initiators = n
            .memory
            .access
            .iter()
            .rev() // access1 (CPU initiators) first
            .map(|a| cpus_of(&a.initiators, nodes))
            .find(|s| !s.is_empty());
        if let Some(s) = by_initiators {
            out.push((s, LocalitySource::Initiators));
            continue;
        }
        match distances.and_then(|d| nearest_cpus(i, d, nodes)) {
            Some(s) => out.push((s, LocalitySource::Distance)),
            None => out.push((CpuSet::new(), LocalitySource::Unknown)),
        }
    }
    for (n, (set, src)) in nodes.iter_mut().zip(out) {
        n.memory.locality = set;
        n.memory.locality_source = src;
    }
}

/// hwloc's `fixup_cpuless_node_locality_from_distances`: the CPUs of the
/// other nodes at the smallest distance, unless that distance is not above
/// the node's own or every other node is equally far.
fn nearest_cpus(i: usize, d: &[Vec<u32>], nodes: &[NumaNode]) -> Option<CpuSet> {
    let row = d.get(i)?;
    let others: Vec<(usize, u32)> = row
        .iter()
        .copied()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .collect();
    let min = others.iter().map(|(_, v)| *v).min()?;
    let at_min: Vec<usize> = others
        .iter()
        .filter(|(_, v)| *v == min)
        .map(|(j, _)| *j)
        .collect();
    if min <= row[i] || at_min.len() == others.len() {
        return None;
    }
    let set = at_min
        .iter()
        .filter_map(|j| nodes.get(*j))
        .fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));
    (!set.is_empty()).then_some(set)
}

/// The kernel's memory tiers, when it has them.
fn read_tiers(r: &mut Reader, nodes: &mut [NumaNode]) {
    for e in r.list(TIER_DIR) {
        let Some(tier) = e
            .strip_prefix("memory_tier")
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        let path = format!("{TIER_DIR}/{e}/nodelist");
        if let Some(set) = r.cpulist(&path, "left those nodes' tier unknown") {
            for n in nodes.iter_mut().filter(|n| set.contains(n.id as usize)) {
                n.memory.tier = Some(tier);
            }
        }
    }
}

/// What a DAX device's parent says about its memory.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DaxType {
    /// Under an NVDIMM bus.
    Nvm,
    /// Under `hmem` (EFI specific-purpose memory).
    Spm,
}

/// The CXL region (`regionN`) a DAX parent path passes through, when the
/// CXL bus lists a target (a decoder) for it: hwloc's `annotate_cxl_dax`
/// evidence, without resolving the decoders to PCI devices.
fn cxl_region(r: &Reader, parent: &str) -> Option<String> {
    parent.split('/').find_map(|part| {
        let digits = part.strip_prefix("region")?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let target = r.text(&format!("{CXL_DIR}/{part}/target0"))?;
        (!target.trim().is_empty()).then(|| part.to_string())
    })
}

/// The nodes NVIDIA GPUs expose their memory as (`numa_status`'s `Node: N`
/// line, `-1` when the GPU has none), each with the GPU's PCI address; read
/// only when some node has no CPU.
fn nvidia_gpu_nodes(r: &mut Reader, nodes: &[NumaNode]) -> Vec<(u32, String)> {
    if nodes.iter().all(|n| !n.cpus.is_empty()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for gpu in r.list(NVIDIA_GPUS) {
        let path = format!("{NVIDIA_GPUS}/{gpu}/numa_status");
        let Some(text) = r.text(&path) else {
            continue;
        };
        let Some(value) = text
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("Node:"))
        else {
            continue;
        };
        // The value is written as a device's `numa_node` (-1: none), so
        // the PCI parser (fuzzed in `pci_files`) reads it.
        match super::pci::parse_numa_node(value) {
            Ok(id) => out.extend(id.map(|id| (id, gpu.clone()))),
            Err(e) => r.warn(&path, e, "left that GPU's memory node unknown"),
        }
    }
    out
}

/// A GPU memory node is local to its GPU's CPUs
/// (`/sys/bus/pci/devices/ADDR/local_cpus`, else `local_cpulist`), as hwloc
/// attaches it; a GPU without them keeps the initiator/distance locality.
fn gpu_localities(r: &mut Reader, nodes: &mut [NumaNode], gpus: &[(u32, String)]) {
    let online = nodes
        .iter()
        .fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));
    for (id, addr) in gpus {
        let dev = format!("/sys/bus/pci/devices/{addr}");
        let Some(cpus) = r.cpuset(
            &format!("{dev}/local_cpus"),
            &format!("{dev}/local_cpulist"),
            "kept the node's locality from initiators or distances",
        ) else {
            continue;
        };
        let cpus = cpus.intersection(&online);
        if let Some(n) = nodes.iter_mut().find(|n| n.id == *id && n.cpus.is_empty()) {
            if !cpus.is_empty() {
                n.memory.locality = cpus;
                n.memory.locality_source = LocalitySource::Device;
            }
        }
    }
}

fn set_kinds(r: &mut Reader, nodes: &mut [NumaNode]) {
    // DAX devices onlined as system RAM: their target node, parent type
    // and whether a CXL region holds them.
    let mut dax: Vec<(u32, String, Option<DaxType>, bool)> = Vec::new();
    for name in r.list(DAX_DIR) {
        let link = format!("{DAX_DIR}/{name}");
        let target = r.os_id(&format!("{link}/target_node"));
        let Some(node) = target.and_then(|t| nodes.iter().find(|n| n.id == t)) else {
            continue;
        };
        let (target, cpuless) = (node.id, node.cpus.is_empty());
        let parent = r.fs.read_link(&link).map(|p| p.display().to_string());
        let ty = parent.as_deref().and_then(|p| {
            if p.contains("/ndbus") {
                Some(DaxType::Nvm)
            } else if p.contains("/hmem") {
                Some(DaxType::Spm)
            } else {
                None
            }
        });
        let cxl = cpuless && parent.is_some_and(|p| cxl_region(r, &p).is_some());
        if !dax.iter().any(|(t, _, _, _)| *t == target) {
            dax.push((target, name, ty, cxl));
        }
    }
    let gpu_nodes = nvidia_gpu_nodes(r, nodes);
    gpu_localities(r, nodes, &gpu_nodes);
    let gpus: Vec<u32> = gpu_nodes.iter().map(|(id, _)| *id).collect();
    let dax_of = |id: u32| dax.iter().find(|(t, _, _, _)| *t == id);
    // DRAM reference: CPU nodes without a DAX device.
    let dram_bw = nodes
        .iter()
        .filter(|n| !n.cpus.is_empty() && dax_of(n.id).is_none() && !gpus.contains(&n.id))
        .filter_map(|n| n.memory.read_bandwidth_mbps())
        .max();
    let dram_tiers: Vec<u32> = nodes
        .iter()
        .filter(|n| !n.cpus.is_empty() && dax_of(n.id).is_none())
        .filter_map(|n| n.memory.tier)
        .collect();
    for n in nodes.iter_mut() {
        let faster_than_dram = matches!(
            (n.memory.read_bandwidth_mbps(), dram_bw),
            (Some(bw), Some(d)) if bw > d
        );
        if let Some((_, name, _, _)) = dax_of(n.id) {
            n.memory.dax = Some(name.clone());
        }
        let (kind, source) = match dax_of(n.id) {
            // hwloc: a GPU's memory is GPUMemory whatever else is known.
            _ if gpus.contains(&n.id) => (Some(MemoryKind::Gpu), Some(MemoryKindSource::Device)),
            // hwloc: CXL keeps only NVM of the DAX type (never SPM/HBM).
            Some((_, _, Some(DaxType::Nvm), true)) => {
                (Some(MemoryKind::CxlNvm), Some(MemoryKindSource::Device))
            }
            Some((_, _, _, true)) => (Some(MemoryKind::CxlDram), Some(MemoryKindSource::Device)),
            Some((_, _, Some(DaxType::Nvm), _)) => {
                (Some(MemoryKind::Nvm), Some(MemoryKindSource::Dax))
            }
            Some((_, _, Some(DaxType::Spm), _)) if faster_than_dram => {
                (Some(MemoryKind::Hbm), Some(MemoryKindSource::Hmat))
            }
            Some((_, _, Some(DaxType::Spm), _)) => {
                (Some(MemoryKind::Spm), Some(MemoryKindSource::Dax))
            }
            Some((_, _, None, _)) => (None, None),
            None if !n.memory.has_memory => (None, None),
            None if !n.cpus.is_empty() => (Some(MemoryKind::Dram), Some(MemoryKindSource::CpuNode)),
            None if faster_than_dram => (Some(MemoryKind::Hbm), Some(MemoryKindSource::Hmat)),
            None if n.memory.tier.is_some_and(|t| dram_tiers.contains(&t)) => {
                (Some(MemoryKind::Dram), Some(MemoryKindSource::MemoryTier))
            }
            None => (None, None),
        };
        n.memory.kind = kind;
        n.memory.kind_source = source;
    }
}

/// Marks the nodes outside the cgroup's `mems`; a set naming no node is
/// ignored with a warning (never forbid every node).
fn apply_mems(r: &mut Reader, nodes: &mut [NumaNode], mems: Option<(CpuSet, String)>) {
    let Some((set, path)) = mems else {
        return;
    };
    if !nodes.iter().any(|n| set.contains(n.id as usize)) {
        r.warn(
            &path,
            format_args!("allows memory nodes {set} but none of them exists"),
            "ignored the cgroup's memory restriction",
        );
        return;
    }
    for n in nodes.iter_mut() {
        n.memory.allowed = set.contains(n.id as usize);
    }
}
