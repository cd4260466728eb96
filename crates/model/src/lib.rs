//! The machine model every other part of pinsight plans on.
//!
//! Objects are identified by their CPU sets, never by the OS's ids, which
//! are sparse and repeat (NOTES: `core_id` restarts in every package). Each
//! group carries a logical index (`id`, dense, ordered by first CPU, like
//! hwloc's `L#`) and, where the OS has one, its `os_id` (like hwloc's `P#`).
//!
//! This crate is the model only: plain data with serde and a few queries,
//! no I/O. Filling it in — sysfs discovery (live or a recorded machine),
//! hwloc XML import, snapshots — is `pinsight-topology`'s job, which
//! re-exports everything here at its old paths (`pinsight_topology::Topology`,
//! `pinsight_topology::model::...`).
#![forbid(unsafe_code)]

pub mod declared;
pub mod device;
pub mod memory;

pub use device::{
    find_device, DeviceClass, DeviceLocalitySource, DeviceLookupError, OsDevice, OsDeviceKind,
    PciDevice,
};
pub use memory::{
    HugePages, LocalitySource, MemoryAccess, MemoryKind, MemoryKindSource, MemorySideCache,
    NodeMemory,
};

use pinsight_cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// Where a topology was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "path", rename_all = "kebab-case")]
pub enum Source {
    /// The running machine's /sys and /proc.
    Live,
    /// A recorded machine (`--fsroot DIR`).
    Fsroot(String),
    /// An hwloc XML export (`--hwloc-xml FILE`).
    HwlocXml(String),
}

/// One logical CPU (hwloc's PU, the kernel's `cpuN`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// The kernel's CPU number.
    pub id: usize,
    /// Online (from `cpu/online` or `cpuN/online`; missing = online).
    pub online: bool,
    /// Allowed by this process's cpuset cgroup.
    pub allowed: bool,
    /// Logical index into [`Topology::cores`]; `None` when offline.
    pub core: Option<usize>,
    /// Logical index into [`Topology::packages`]; `None` when offline.
    pub package: Option<usize>,
    /// Logical index into [`Topology::dies`], if the machine has meaningful dies.
    pub die: Option<usize>,
    /// Logical index into [`Topology::clusters`], if meaningful.
    pub cluster: Option<usize>,
    /// OS number of the NUMA node holding this CPU.
    pub numa: Option<u32>,
    /// Rank of this CPU's kind (index into [`Topology::kinds`]).
    pub kind: Option<usize>,
    /// `cpu_capacity` (ARM/x86 scheduler capacity, 1024 = the biggest core).
    pub capacity: Option<u32>,
    /// Maximum frequency in MHz (`cpuinfo_max_freq`).
    pub max_mhz: Option<u32>,
    /// Base (nominal) frequency in MHz (`base_frequency`, else CPPC nominal).
    pub base_mhz: Option<u32>,
    /// ACPI CPPC performance values, when exposed.
    pub cppc: Option<Cppc>,
    /// x86 hybrid core type, when known.
    pub core_type: Option<CoreType>,
    /// ARM `midr_el1`, when exposed.
    pub midr: Option<u64>,
}

/// ACPI CPPC performance levels of a CPU (`cpuN/acpi_cppc/*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cppc {
    pub highest_perf: Option<u32>,
    pub nominal_perf: Option<u32>,
    pub lowest_perf: Option<u32>,
    pub nominal_freq_mhz: Option<u32>,
}

/// x86 hybrid core types, as the kernel's PMU lists and CPUID 0x1A name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoreType {
    /// Low-power E-core (Meteor Lake "LP E-core", `cpu_lowpower`).
    LowPower,
    /// E-core (`cpu_atom`, CPUID 0x1A type 0x20).
    Atom,
    /// P-core (`cpu_core`, CPUID 0x1A type 0x40).
    Core,
}

/// A group of CPUs: a core, package, die or cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// Logical index, dense, ordered by first CPU.
    pub id: usize,
    /// The OS's id for it (`physical_package_id`, `core_id`, ...), if any.
    pub os_id: Option<u32>,
    /// Its online CPUs.
    pub cpus: CpuSet,
}

/// The kind of a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheType {
    Data,
    Instruction,
    Unified,
}

/// One CPU cache instance (e.g. one L2 shared by two SMT siblings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// 1 for L1, 2 for L2, ...
    pub level: u8,
    #[serde(rename = "type")]
    pub cache_type: CacheType,
    /// Size in KiB (None when the OS does not say).
    pub size_kib: Option<u64>,
    /// Line size in bytes.
    pub line_size: Option<u32>,
    /// Associativity (ways), 0 = fully associative.
    pub ways: Option<u32>,
    /// The online CPUs sharing it.
    pub cpus: CpuSet,
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    /// The OS node number (`nodeN`).
    pub id: u32,
    /// Its online CPUs (may be empty: memory-only nodes).
    pub cpus: CpuSet,
    /// Local memory in MiB.
    pub memory_mib: Option<u64>,
    /// What the memory is, who reaches it best, whether this process may
    /// allocate on it (see [`NodeMemory`]). Models from before these fields
    /// load with the defaults (DRAM-like, allowed, local to its CPUs).
    #[serde(default)]
    pub memory: NodeMemory,
}

impl NumaNode {
    /// A node holding `cpus` and `memory_mib`, with default memory facts
    /// (allowed, holding memory, local to its own CPUs).
    pub fn new(id: u32, cpus: CpuSet, memory_mib: Option<u64>) -> NumaNode {
        let locality = cpus.clone();
        NumaNode {
            id,
            cpus,
            memory_mib,
            memory: NodeMemory {
                locality,
                ..NodeMemory::default()
            },
        }
    }
}

/// Where a kind's identity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KindSource {
    /// `/sys/devices/cpu_core|cpu_atom|cpu_lowpower/cpus` (x86 hybrid PMUs).
    HybridPmu,
    /// CPUID leaf 0x1A core type (live only).
    Cpuid,
    /// ARM `midr_el1` implementer/part.
    Midr,
    /// `cpu_capacity` differences (no identity information).
    Capacity,
    /// Frequency differences (no identity or capacity information).
    Frequency,
    /// The machine has a single kind.
    Uniform,
    /// An hwloc XML `cpukind` element.
    HwlocXml,
    /// Declared by the user (`declared::apply`), not discovered.
    Declared,
}

impl KindSource {
    /// The kebab-case name used in JSON and human output.
    pub fn as_str(self) -> &'static str {
        match self {
            KindSource::HybridPmu => "hybrid-pmu",
            KindSource::Cpuid => "cpuid",
            KindSource::Midr => "midr",
            KindSource::Capacity => "capacity",
            KindSource::Frequency => "frequency",
            KindSource::Uniform => "uniform",
            KindSource::HwlocXml => "hwloc-xml",
            KindSource::Declared => "declared",
        }
    }
}

/// How a kind's rank was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankSource {
    Capacity,
    MaxFrequency,
    CoreType,
    /// AMD `amd_pstate_prefcore_ranking` (a ranking, not a capacity).
    AmdPrefcoreRanking,
    /// AMD `amd_pstate_highest_perf` (a ranking, not a capacity).
    AmdHighestPerf,
    /// ACPI CPPC `highest_perf`.
    CppcHighestPerf,
    /// ACPI CPPC `nominal_perf`.
    CppcNominalPerf,
    /// cpufreq `base_frequency`.
    BaseFrequency,
    /// hwloc's efficiency value from XML.
    HwlocEfficiency,
    /// Only one kind: nothing to rank.
    Uniform,
    /// Kinds that cannot be told apart by any measure: order is by first CPU
    /// and means nothing.
    Unranked,
    /// The order the user declared (`declared::apply`).
    Declared,
}

impl RankSource {
    /// The kebab-case name used in JSON and human output.
    pub fn as_str(self) -> &'static str {
        match self {
            RankSource::Capacity => "capacity",
            RankSource::MaxFrequency => "max-frequency",
            RankSource::CoreType => "core-type",
            RankSource::AmdPrefcoreRanking => "amd-prefcore-ranking",
            RankSource::AmdHighestPerf => "amd-highest-perf",
            RankSource::CppcHighestPerf => "cppc-highest-perf",
            RankSource::CppcNominalPerf => "cppc-nominal-perf",
            RankSource::BaseFrequency => "base-frequency",
            RankSource::HwlocEfficiency => "hwloc-efficiency",
            RankSource::Uniform => "uniform",
            RankSource::Unranked => "unranked",
            RankSource::Declared => "declared",
        }
    }
}

/// A set of CPUs of one micro-architecture (hwloc's cpukind), ranked from
/// least (0) to most performant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kind {
    /// 0 = least performant (hwloc's efficiency order).
    pub rank: usize,
    /// Short human name: "P-core", "E-core", "LP E-core", "Cortex-A76", ...
    pub name: String,
    /// One-letter mark for compact displays: P, E, L, or a digit.
    pub mark: String,
    /// Its online CPUs.
    pub cpus: CpuSet,
    /// Where its identity came from.
    pub source: KindSource,
    /// How its rank was decided.
    pub rank_source: RankSource,
    /// Capacity relative to the most capable kind (1.0), if known.
    pub capacity: Option<f64>,
    /// The raw `cpu_capacity` (max over its CPUs), if known.
    pub capacity_raw: Option<u32>,
    /// Highest max frequency among its CPUs (MHz).
    pub max_mhz: Option<u32>,
    /// Base frequency (MHz).
    pub base_mhz: Option<u32>,
    /// x86 core type, when known.
    pub core_type: Option<CoreType>,
}

/// One source of the capacity chain: the per-CPU measures discovery
/// consults, in this order, to rank kinds and give every CPU a capacity
/// or rank. Kind identity (PMU lists, CPUID, MIDR) decides WHICH CPUs form
/// a kind; the first source of the chain that separates the kinds decides
/// their ORDER. A source identical on every CPU is skipped: it says
/// nothing (laptop firmware that reports one max frequency everywhere made
/// sched_ext rank E-cores above P-cores).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacitySource {
    /// `cpuN/cpu_capacity`: the scheduler's capacity (1024 = biggest core).
    CpuCapacity,
    /// `cpuN/cpufreq/amd_pstate_prefcore_ranking`: AMD's preferred-core
    /// ranking. A RANKING (higher = preferred), not a capacity: its ratios
    /// mean nothing.
    AmdPrefcoreRanking,
    /// `cpuN/cpufreq/amd_pstate_highest_perf`: AMD's per-core highest
    /// performance level, read as a ranking like the one above.
    AmdHighestPerf,
    /// `cpuN/acpi_cppc/highest_perf`: ACPI CPPC abstract performance,
    /// proportional to capacity.
    CppcHighestPerf,
    /// `cpuN/acpi_cppc/nominal_perf`: CPPC sustained performance.
    CppcNominalPerf,
    /// `cpuinfo_max_freq` (MHz).
    MaxFrequency,
    /// `base_frequency` (MHz).
    BaseFrequency,
}

impl CapacitySource {
    /// The chain, in the order sources are consulted.
    pub const CHAIN: [CapacitySource; 7] = [
        CapacitySource::CpuCapacity,
        CapacitySource::AmdPrefcoreRanking,
        CapacitySource::AmdHighestPerf,
        CapacitySource::CppcHighestPerf,
        CapacitySource::CppcNominalPerf,
        CapacitySource::MaxFrequency,
        CapacitySource::BaseFrequency,
    ];

    /// The kebab-case name used in JSON and human output.
    pub fn as_str(self) -> &'static str {
        match self {
            CapacitySource::CpuCapacity => "cpu-capacity",
            CapacitySource::AmdPrefcoreRanking => "amd-prefcore-ranking",
            CapacitySource::AmdHighestPerf => "amd-highest-perf",
            CapacitySource::CppcHighestPerf => "cppc-highest-perf",
            CapacitySource::CppcNominalPerf => "cppc-nominal-perf",
            CapacitySource::MaxFrequency => "max-frequency",
            CapacitySource::BaseFrequency => "base-frequency",
        }
    }

    /// The file under `/sys/devices/system/cpu/cpuN/` it is read from (for
    /// frequencies, also the shared `cpufreq/policyM/` directory).
    pub fn file(self) -> &'static str {
        match self {
            CapacitySource::CpuCapacity => "cpu_capacity",
            CapacitySource::AmdPrefcoreRanking => "cpufreq/amd_pstate_prefcore_ranking",
            CapacitySource::AmdHighestPerf => "cpufreq/amd_pstate_highest_perf",
            CapacitySource::CppcHighestPerf => "acpi_cppc/highest_perf",
            CapacitySource::CppcNominalPerf => "acpi_cppc/nominal_perf",
            CapacitySource::MaxFrequency => "cpufreq/cpuinfo_max_freq",
            CapacitySource::BaseFrequency => "cpufreq/base_frequency",
        }
    }

    /// What its values are: "capacity", "ranking", "performance" or "MHz".
    pub fn unit(self) -> &'static str {
        match self {
            CapacitySource::CpuCapacity => "capacity",
            CapacitySource::AmdPrefcoreRanking | CapacitySource::AmdHighestPerf => "ranking",
            CapacitySource::CppcHighestPerf | CapacitySource::CppcNominalPerf => "performance",
            CapacitySource::MaxFrequency | CapacitySource::BaseFrequency => "MHz",
        }
    }

    /// Whether its ratios are capacity ratios (false for AMD's rankings).
    pub fn is_proportional(self) -> bool {
        self.unit() != "ranking"
    }

    /// The [`RankSource`] recorded on kinds ranked by it.
    pub fn rank_source(self) -> RankSource {
        match self {
            CapacitySource::CpuCapacity => RankSource::Capacity,
            CapacitySource::AmdPrefcoreRanking => RankSource::AmdPrefcoreRanking,
            CapacitySource::AmdHighestPerf => RankSource::AmdHighestPerf,
            CapacitySource::CppcHighestPerf => RankSource::CppcHighestPerf,
            CapacitySource::CppcNominalPerf => RankSource::CppcNominalPerf,
            CapacitySource::MaxFrequency => RankSource::MaxFrequency,
            CapacitySource::BaseFrequency => RankSource::BaseFrequency,
        }
    }
}

/// What became of one source of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceStatus {
    /// No online CPU has it.
    Absent,
    /// The same value on every online CPU that has it: skipped.
    Identical,
    /// Some kind has no CPU with it: cannot order every kind; skipped.
    Partial,
    /// Two kinds share the same (highest) value: cannot order them; skipped.
    Tied,
    /// The first source that orders every kind: it decided.
    Decided,
    /// Orders every kind too, after the winner (see `agrees`).
    Consulted,
}

impl SourceStatus {
    /// The kebab-case name used in JSON and human output.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceStatus::Absent => "absent",
            SourceStatus::Identical => "identical",
            SourceStatus::Partial => "partial",
            SourceStatus::Tied => "tied",
            SourceStatus::Decided => "decided",
            SourceStatus::Consulted => "consulted",
        }
    }
}

/// Lowest and highest value of a source over a kind's online CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueRange {
    pub min: u32,
    pub max: u32,
}

/// One source's evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceEvidence {
    pub source: CapacitySource,
    pub status: SourceStatus,
    /// Its values per kind (index = rank); `None` where no CPU of the kind
    /// has it.
    pub kinds: Vec<Option<ValueRange>>,
    /// For a source that orders every kind: whether its order (by each
    /// kind's highest value) is the chosen one. `None` otherwise.
    pub agrees: Option<bool>,
}

/// Which source gave one CPU its capacity or rank, and the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuDecision {
    pub cpu: usize,
    pub source: CapacitySource,
    pub value: u32,
}

/// Where the kinds' order and every CPU's capacity came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Every source of [`CapacitySource::CHAIN`], in chain order (empty
    /// when the model was not discovered from sysfs).
    pub sources: Vec<SourceEvidence>,
    /// The source that ordered the kinds (on a one-kind machine: the first
    /// that is not identical everywhere, which orders CPUs inside the kind,
    /// e.g. AMD preferred cores). `None` when none did: the order then
    /// comes from core type, or there is none (see [`Kind::rank_source`]).
    pub winner: Option<CapacitySource>,
    /// The source `Kind::capacity` was computed from: the winner when its
    /// values are proportional to capacity, else the first later source
    /// that orders the kinds the same way and is (AMD's rankings are not
    /// capacities). `None`: no capacity ratio is known.
    pub capacity_from: Option<CapacitySource>,
    /// Per online CPU: the first source, from the winner on, it has a value
    /// for.
    pub cpus: Vec<CpuDecision>,
}

impl Provenance {
    /// The evidence of one source, if recorded.
    pub fn source(&self, s: CapacitySource) -> Option<&SourceEvidence> {
        self.sources.iter().find(|e| e.source == s)
    }

    /// Which source decided `cpu`'s capacity or rank.
    pub fn cpu(&self, cpu: usize) -> Option<&CpuDecision> {
        self.cpus.iter().find(|d| d.cpu == cpu)
    }
}

/// The whole model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Where it was read from.
    pub source: Source,
    /// CPU model name if known (`/proc/cpuinfo`).
    pub model_name: Option<String>,
    /// Architecture ("x86_64", "aarch64", "ppc64", ...), if known.
    pub arch: Option<String>,
    /// Every present CPU, sorted by id.
    pub cpus: Vec<Cpu>,
    pub cores: Vec<Group>,
    pub packages: Vec<Group>,
    /// Only when dies are meaningful (neither single-CPU nor equal to package).
    pub dies: Vec<Group>,
    /// Only when clusters are meaningful.
    pub clusters: Vec<Group>,
    pub caches: Vec<Cache>,
    pub numa_nodes: Vec<NumaNode>,
    /// Distances between `numa_nodes` in list order (row i = `numa_nodes[i]`).
    pub numa_distances: Option<Vec<Vec<u32>>>,
    /// Kinds in rank order (index = rank).
    pub kinds: Vec<Kind>,
    /// Where the kinds' order and every CPU's capacity came from: each
    /// source of the capacity chain, its values per kind, and the winner
    /// (see [`Provenance`]). Empty when the model was not discovered from
    /// sysfs (hwloc XML) or predates it.
    #[serde(default)]
    pub provenance: Provenance,
    /// PCI devices of the classes placement cares about (NICs, GPUs, NVMe,
    /// InfiniBand, accelerators), in address order. Empty when none was
    /// found or the source has none (older JSON models).
    #[serde(default)]
    pub devices: Vec<PciDevice>,
    /// What could not be read, each naming the file and what was done.
    pub warnings: Vec<String>,
}

impl Topology {
    /// Online CPUs.
    pub fn online(&self) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.id)
            .collect()
    }

    /// Online CPUs this process may run on: the set every plan draws from.
    pub fn usable(&self) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.online && c.allowed)
            .map(|c| c.id)
            .collect()
    }

    /// Whether this model describes the machine pinsight runs on (so
    /// measuring and pinning make sense).
    pub fn source_is_live(&self) -> bool {
        self.source == Source::Live
    }

    /// The CPU with this kernel number.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus
            .binary_search_by_key(&id, |c| c.id)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// Caches of a level and type (Unified or Data for "the L2").
    pub fn caches_at(&self, level: u8) -> impl Iterator<Item = &Cache> {
        self.caches
            .iter()
            .filter(move |c| c.level == level && c.cache_type != CacheType::Instruction)
    }

    /// The most performant kind, if the machine has more than one ranked kind.
    pub fn fastest_kind(&self) -> Option<&Kind> {
        self.kinds.last()
    }

    /// Whether the machine has more than one kind.
    pub fn is_heterogeneous(&self) -> bool {
        self.kinds.len() > 1
    }

    /// The NUMA node with this OS id.
    pub fn node(&self, id: u32) -> Option<&NumaNode> {
        self.numa_nodes.iter().find(|n| n.id == id)
    }

    /// Nodes this process may allocate memory on (the cgroup's
    /// `cpuset.mems`), holding memory.
    pub fn allowed_nodes(&self) -> Vec<u32> {
        self.numa_nodes
            .iter()
            .filter(|n| n.memory.allowed && n.memory.has_memory)
            .map(|n| n.id)
            .collect()
    }

    /// The device a user names (`eth0`, `0000:3b:00.0`, `gpu0`; see
    /// [`find_device`]).
    pub fn device(&self, name: &str) -> Result<&PciDevice, DeviceLookupError> {
        find_device(&self.devices, name)
    }

    /// The SMT siblings of `cpu` (its core's online CPUs), itself included.
    pub fn siblings(&self, cpu: usize) -> CpuSet {
        match self.cpu(cpu).and_then(|c| c.core) {
            Some(core) => self.cores[core].cpus.clone(),
            None => CpuSet::single(cpu),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_is_the_serde_name() {
        for k in [
            KindSource::HybridPmu,
            KindSource::Cpuid,
            KindSource::Midr,
            KindSource::Capacity,
            KindSource::Frequency,
            KindSource::Uniform,
            KindSource::HwlocXml,
            KindSource::Declared,
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        for r in [
            RankSource::Capacity,
            RankSource::MaxFrequency,
            RankSource::CoreType,
            RankSource::AmdPrefcoreRanking,
            RankSource::AmdHighestPerf,
            RankSource::CppcHighestPerf,
            RankSource::CppcNominalPerf,
            RankSource::BaseFrequency,
            RankSource::HwlocEfficiency,
            RankSource::Uniform,
            RankSource::Unranked,
            RankSource::Declared,
        ] {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        for c in CapacitySource::CHAIN {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
            assert_eq!(
                serde_json::to_value(c.rank_source()).unwrap(),
                c.as_str().replace("cpu-capacity", "capacity")
            );
        }
    }
}
