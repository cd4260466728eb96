//! What a NUMA node's memory is and who reaches it best.
//!
//! Since heterogeneous memory (HBM, persistent memory, CXL expanders, GPU
//! memory exposed as NUMA nodes) a node is no longer "some CPUs and their
//! DRAM": many nodes hold memory and no CPU, some hold CPUs and no memory,
//! and some are generic initiators (accelerators) with neither. The kernel
//! says who reaches a memory node best through the HMAT-derived `access0`
//! (any initiator) and `access1` (CPU initiators) classes; hwloc attaches a
//! memory-only node under those CPUs, and pinsight does the same
//! ([`NumaNode::locality`](crate::NumaNode)).

use pinsight_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// The technology behind a node's memory, named as hwloc names NUMA node
/// subtypes (`NUMANode(HBM)` in `lstopo -v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    /// Ordinary DRAM.
    Dram,
    /// High-bandwidth memory (on-package HBM, MCDRAM).
    Hbm,
    /// Non-volatile / persistent memory (NVDIMM, Optane PMem) used as RAM.
    Nvm,
    /// "Specific purpose" memory (EFI_MEMORY_SP, exposed through `hmem`
    /// DAX devices) whose technology the firmware did not tell.
    Spm,
    /// GPU memory exposed as a NUMA node (Grace-Hopper, MI300A, POWER9 +
    /// V100 with NVLink).
    Gpu,
    /// DRAM behind a CXL memory expander.
    CxlDram,
    /// Persistent memory behind CXL.
    CxlNvm,
}

impl MemoryKind {
    /// The serde name ("dram", "cxl-nvm", ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Dram => "dram",
            MemoryKind::Hbm => "hbm",
            MemoryKind::Nvm => "nvm",
            MemoryKind::Spm => "spm",
            MemoryKind::Gpu => "gpu",
            MemoryKind::CxlDram => "cxl-dram",
            MemoryKind::CxlNvm => "cxl-nvm",
        }
    }

    /// The name hwloc prints (`DRAM`, `HBM`, `NVM`, `SPM`, `GPUMemory`,
    /// `CXL-DRAM`, `CXL-NVM`).
    pub fn hwloc_name(self) -> &'static str {
        match self {
            MemoryKind::Dram => "DRAM",
            MemoryKind::Hbm => "HBM",
            MemoryKind::Nvm => "NVM",
            MemoryKind::Spm => "SPM",
            MemoryKind::Gpu => "GPUMemory",
            MemoryKind::CxlDram => "CXL-DRAM",
            MemoryKind::CxlNvm => "CXL-NVM",
        }
    }

    /// Every kind.
    const ALL: [MemoryKind; 7] = [
        MemoryKind::Dram,
        MemoryKind::Hbm,
        MemoryKind::Nvm,
        MemoryKind::Spm,
        MemoryKind::Gpu,
        MemoryKind::CxlDram,
        MemoryKind::CxlNvm,
    ];

    /// Parses an hwloc subtype name (case-insensitive), for XML import.
    pub fn from_hwloc_name(s: &str) -> Option<MemoryKind> {
        Self::ALL
            .into_iter()
            .find(|k| k.hwloc_name().eq_ignore_ascii_case(s) || k.as_str().eq_ignore_ascii_case(s))
    }
}

/// Where a node's [`MemoryKind`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKindSource {
    /// The node's DAX device (`/sys/bus/dax/devices/daxX.Y`, its parent
    /// region: an NVDIMM bus means NVM, `hmem` means specific-purpose).
    Dax,
    /// HMAT attributes compared with the machine's DRAM nodes (higher
    /// bandwidth than DRAM: HBM; lower: NVM/CXL).
    Hmat,
    /// The kernel's memory tiers (`/sys/devices/virtual/memory_tiering/`).
    MemoryTier,
    /// A node with CPUs and no other evidence: DRAM.
    CpuNode,
    /// The node's driver or owner (a GPU driver's memory, a CXL region).
    Device,
    /// An hwloc XML export's subtype.
    HwlocXml,
}

/// Where a node's [`locality`](crate::NodeMemory::locality) came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalitySource {
    /// The node's own CPUs.
    #[default]
    OwnCpus,
    /// The CPUs of the nodes listed in `access1/initiators/` (CPU
    /// initiators), else `access0/initiators/`.
    Initiators,
    /// The CPUs of the nearest CPU node(s) by the SLIT distance matrix.
    Distance,
    /// The local CPUs of the device that owns the memory (an NVIDIA GPU's
    /// `local_cpulist`, as hwloc attaches GPU memory nodes).
    Device,
    /// An hwloc XML export's nesting.
    HwlocXml,
    /// Nothing tells: the node is attached to the whole machine.
    Unknown,
}

/// One HMAT access class of a memory node: who its best initiators are
/// and the performance they see (`nodeN/accessK/`). Values the kernel does
/// not give are `None`, never zero.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryAccess {
    /// The access class: 0 = any initiator (CPUs, GPUs, generic
    /// initiators), 1 = CPU initiators only.
    pub class: u8,
    /// The initiator nodes (`accessK/initiators/nodeM` links).
    pub initiators: Vec<u32>,
    /// Read bandwidth in MB/s (`read_bandwidth`).
    pub read_bandwidth_mbps: Option<u64>,
    /// Write bandwidth in MB/s (`write_bandwidth`).
    pub write_bandwidth_mbps: Option<u64>,
    /// Read latency in ns (`read_latency`).
    pub read_latency_ns: Option<u64>,
    /// Write latency in ns (`write_latency`).
    pub write_latency_ns: Option<u64>,
}

/// One huge page pool of a node (`nodeN/hugepages/hugepages-SIZEkB/`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugePages {
    /// Page size in KiB (2048, 1048576, ...).
    pub size_kib: u64,
    /// Pages in the pool (`nr_hugepages`).
    pub total: Option<u64>,
    /// Pages not in use (`free_hugepages`).
    pub free: Option<u64>,
}

/// A memory-side cache in front of a node's memory
/// (`nodeN/memory_side_cache/indexK/`; e.g. DRAM caching NVM, MCDRAM in
/// cache mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySideCache {
    /// Level (`indexK`, 1 closest to the memory).
    pub level: u8,
    /// Size in KiB.
    pub size_kib: Option<u64>,
    /// Line size in bytes.
    pub line_size: Option<u32>,
}

/// The memory-related facts of one NUMA node, kept apart from its id and
/// CPUs so that older models (JSON without these fields) still load.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeMemory {
    /// The technology, when the kernel (or an hwloc export) tells.
    pub kind: Option<MemoryKind>,
    /// Where `kind` came from.
    pub kind_source: Option<MemoryKindSource>,
    /// The kernel's memory tier id (`memory_tierN`; lower is faster), or
    /// hwloc's `memorytier` from an XML export.
    pub tier: Option<u32>,
    /// Whether this process's cpuset cgroup allows allocating here
    /// (`cpuset.mems.effective`). `true` when no cgroup restricts memory.
    pub allowed: bool,
    /// Whether the node holds memory at all (`has_memory`, else a
    /// non-zero `MemTotal`). A memoryless CPU node is `false`.
    pub has_memory: bool,
    /// Whether the node is a generic initiator (`has_generic_initiator`:
    /// an accelerator that initiates memory accesses but has no CPU).
    pub generic_initiator: bool,
    /// The CPUs that reach this memory best: from initiators for
    /// memory-only nodes, else its own CPUs; empty when unknown.
    pub locality: CpuSet,
    /// Where `locality` came from.
    pub locality_source: LocalitySource,
    /// HMAT access classes (`access0`, `access1`), when the kernel has them.
    pub access: Vec<MemoryAccess>,
    /// Huge page pools.
    pub hugepages: Vec<HugePages>,
    /// Memory-side caches.
    pub side_caches: Vec<MemorySideCache>,
    /// The DAX device backing the node, if any (`dax1.0`).
    pub dax: Option<String>,
}

impl Default for NodeMemory {
    fn default() -> NodeMemory {
        NodeMemory {
            kind: None,
            kind_source: None,
            tier: None,
            allowed: true,
            has_memory: true,
            generic_initiator: false,
            locality: CpuSet::new(),
            locality_source: LocalitySource::OwnCpus,
            access: Vec::new(),
            hugepages: Vec::new(),
            side_caches: Vec::new(),
            dax: None,
        }
    }
}

impl NodeMemory {
    /// The best (lowest-class-first: `access1` for CPUs, else `access0`)
    /// read bandwidth known, in MB/s.
    pub fn read_bandwidth_mbps(&self) -> Option<u64> {
        let mut classes: Vec<&MemoryAccess> = self.access.iter().collect();
        classes.sort_by_key(|a| std::cmp::Reverse(a.class));
        classes.iter().find_map(|a| a.read_bandwidth_mbps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip() {
        for k in MemoryKind::ALL {
            assert_eq!(MemoryKind::from_hwloc_name(k.hwloc_name()), Some(k));
            assert_eq!(MemoryKind::from_hwloc_name(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(
            MemoryKind::from_hwloc_name("gpumemory"),
            Some(MemoryKind::Gpu)
        );
        assert_eq!(MemoryKind::from_hwloc_name("SRAM"), None);
    }

    #[test]
    fn default_is_plain_allowed_memory() {
        let m = NodeMemory::default();
        assert!(m.allowed && m.has_memory && !m.generic_initiator);
        assert_eq!(m.read_bandwidth_mbps(), None);
    }

    #[test]
    fn cpu_class_bandwidth_wins() {
        let m = NodeMemory {
            access: vec![
                MemoryAccess {
                    class: 0,
                    read_bandwidth_mbps: Some(5),
                    ..Default::default()
                },
                MemoryAccess {
                    class: 1,
                    read_bandwidth_mbps: Some(7),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(m.read_bandwidth_mbps(), Some(7));
    }
}
