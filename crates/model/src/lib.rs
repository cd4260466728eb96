//! The machine model every other part of pinsight plans on.
//!
//! Objects are identified by their CPU sets, never by the OS's ids, which
//! are sparse and repeat (NOTES: `core_id` restarts in every package). Each
//! group carries a logical index (`id`, dense, ordered by first CPU, like
//! hwloc's `L#`) and, where the OS has one, its `os_id` (like hwloc's `P#`).
//!
//! This crate is the model only: plain data with serde and a few queries,
//! no I/O. Filling it in — sysfs discovery (live or a recorded machine),
//! hwloc XML import, snapshots — is `pinsight-topology`'s job; every
//! crate imports the model's types from here, their one path.
#![forbid(unsafe_code)]

pub mod bounded;
pub mod declared;
pub mod device;
pub mod duration;
pub mod interval;
pub mod machine_spec;
pub mod memory;
pub mod share;

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
    /// ARM `midr_el1`, when exposed; else, when `/proc/cpuinfo` gives
    /// every online processor's `CPU implementer`/`variant`/`part`/
    /// `revision`, the register rebuilt from them (architecture field 0xf).
    pub midr: Option<u64>,
}

impl Cpu {
    /// CPU `id`, online and allowed, with nothing else known: no core,
    /// package, node or kind, no capacity, frequency or identity.
    pub fn new(id: usize) -> Cpu {
        Cpu {
            id,
            online: true,
            allowed: true,
            core: None,
            package: None,
            die: None,
            cluster: None,
            numa: None,
            kind: None,
            capacity: None,
            max_mhz: None,
            base_mhz: None,
            cppc: None,
            core_type: None,
            midr: None,
        }
    }
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
    /// ARM MIDR implementer/part: `midr_el1`, else the per-processor
    /// fields of `/proc/cpuinfo` (`Provenance::identity` says which).
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
    /// Arm cores without a kernel capacity: the per-microarchitecture
    /// big/little table (by MIDR part) times each kind's maximum clock.
    MicroarchTable,
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
            RankSource::MicroarchTable => "microarch-table",
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
    /// How the kinds' CPUs were found, one line per step (identity by core
    /// type or MIDR part, then the split of one microarchitecture by clock
    /// or capacity, then a microarchitecture-table ranking), for
    /// `topo --explain`.
    #[serde(default)]
    pub identity: Vec<String>,
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

/// Where a CPU's capacity ([`Topology::capacity`]) came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "source", rename_all = "kebab-case")]
pub enum CapacityOrigin {
    /// A source of the capacity chain, read by discovery: the kind's
    /// highest value over the top kind's (see [`Provenance::capacity_from`]).
    Chain(CapacitySource),
    /// The machine has one kind: every CPU is 1.0.
    OneKind,
    /// Kinds ranked without a proportional measure (core type only, an
    /// hwloc XML efficiency, a declaration): each rank below the top one
    /// multiplies capacity by [`RANK_DEFAULT_FACTOR`], a round guess.
    RankDefault,
    /// Arm kinds without a kernel capacity: the per-microarchitecture
    /// table's factor times the kind's maximum clock, over the top kind's
    /// ([`RankSource::MicroarchTable`]).
    MicroarchTable,
    /// Declared kinds with `@SPEED` on a machine discovered as one kind
    /// (`declared::apply`): each kind's speed over the fastest kind's, which
    /// is what `pinsight emulate` makes true of identical CPUs.
    DeclaredSpeed,
}

impl CapacityOrigin {
    /// A short name for human output: the sysfs file, or what was assumed.
    pub fn describe(self) -> &'static str {
        match self {
            CapacityOrigin::Chain(s) => s.file(),
            CapacityOrigin::OneKind => "one kind",
            CapacityOrigin::RankDefault => "rank default x0.5",
            CapacityOrigin::MicroarchTable => "core table x clock",
            CapacityOrigin::DeclaredSpeed => "declared @speed",
        }
    }
}

/// Capacity of each rank relative to the next faster one when no
/// proportional measure is known. 0.5 is deliberately round: a Gracemont
/// E-core at 3.9 GHz against a Golden Cove P-core at 5.2 GHz lands near
/// 0.55 on single-thread throughput, and Arm's little cores sit well below
/// that. Measured per-CPU speeds (`pinsight speed`) replace it.
pub const RANK_DEFAULT_FACTOR: f64 = 0.5;

/// One CPU's capacity: relative to the most capable kind (1.0), and where
/// it came from. Every command (topo, balance, slice, sched, tune, load)
/// reads it through [`Topology::capacity`], so all print the same number.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// In (0, 1]: 1.0 is the most capable kind.
    pub value: f64,
    /// Where it came from.
    pub source: CapacityOrigin,
}

/// What a second busy SMT thread adds to a core's throughput when nothing
/// was measured: 0.25. Intel reports gains "as high as 30%" on server
/// benchmarks for Hyper-Threading (Marr et al., *Hyper-Threading Technology
/// Architecture and Microarchitecture*, Intel Technology Journal 6(1),
/// 2002); 0.25 is a round value below that. Two busy siblings therefore
/// share 1.25 of one core's capacity.
pub const DEFAULT_SMT_YIELD: f64 = 0.25;

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
    /// A live machine of `cpus` and nothing else: no groups, caches,
    /// nodes, kinds, devices or warnings.
    pub fn bare(cpus: Vec<Cpu>) -> Topology {
        Topology {
            source: Source::Live,
            model_name: None,
            arch: None,
            cpus,
            cores: vec![],
            packages: vec![],
            dies: vec![],
            clusters: vec![],
            caches: vec![],
            numa_nodes: vec![],
            numa_distances: None,
            kinds: vec![],
            provenance: Provenance::default(),
            devices: vec![],
            warnings: vec![],
        }
    }

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

    /// The capacity of online CPU `cpu`: ONE number per CPU, the same for
    /// every CPU of a kind, and the same in every command. In order:
    /// 1. one kind: 1.0;
    /// 2. declared kinds with speeds on a machine discovered as one kind:
    ///    the declared speed over the fastest kind's
    ///    ([`CapacityOrigin::DeclaredSpeed`]);
    /// 3. the kind's capacity ([`Kind::capacity`]: its highest value of
    ///    [`Provenance::capacity_from`] over the top kind's — the kernel's
    ///    `cpu_capacity`, else CPPC `highest_perf`, ... as discovery
    ///    decided; per kind, so that favoured cores of one kind (5.2 vs
    ///    5.0 GHz) do not skew a split), or the Arm core table's;
    /// 4. models without provenance: each kind's `capacity_raw`, else
    ///    `max_mhz`, over the top kind's, when they rise with the rank;
    /// 5. ranked kinds without a proportional measure:
    ///    [`RANK_DEFAULT_FACTOR`] per rank below the top;
    ///
    /// `None` for an offline or unknown CPU, and for kinds that no measure
    /// orders ([`RankSource::Unranked`]).
    pub fn capacity(&self, cpu: usize) -> Option<Capacity> {
        let c = self.cpu(cpu).filter(|c| c.online)?;
        if self.kinds.len() <= 1 {
            return Some(Capacity {
                value: 1.0,
                source: CapacityOrigin::OneKind,
            });
        }
        let kind = self.kinds.get(c.kind?)?;
        if let (Some(value), RankSource::Declared) = (kind.capacity, kind.rank_source) {
            return Some(Capacity {
                value,
                source: CapacityOrigin::DeclaredSpeed,
            });
        }
        if let (Some(value), RankSource::MicroarchTable) = (kind.capacity, kind.rank_source) {
            return Some(Capacity {
                value,
                source: CapacityOrigin::MicroarchTable,
            });
        }
        if let (Some(value), Some(s)) = (kind.capacity, self.provenance.capacity_from) {
            return Some(Capacity {
                value,
                source: CapacityOrigin::Chain(s),
            });
        }
        if kind.rank_source == RankSource::Unranked {
            return None;
        }
        // Models without provenance (built by hand, imported from hwloc
        // XML, saved before it existed): the kinds' own numbers, the
        // kernel's capacity first, when they rise with the rank.
        let raw = |f: fn(&Kind) -> Option<u32>, s: CapacitySource| -> Option<Capacity> {
            let v: Vec<u32> = self.kinds.iter().map(f).collect::<Option<Vec<u32>>>()?;
            let top = *v.last()?;
            (top > 0 && v.windows(2).all(|w| w[0] <= w[1])).then(|| Capacity {
                value: v[kind.rank.min(v.len() - 1)] as f64 / top as f64,
                source: CapacityOrigin::Chain(s),
            })
        };
        if let Some(c) = raw(|k| k.capacity_raw, CapacitySource::CpuCapacity)
            .or_else(|| raw(|k| k.max_mhz, CapacitySource::MaxFrequency))
        {
            return Some(c);
        }
        let top = self.kinds.len() - 1;
        Some(Capacity {
            value: RANK_DEFAULT_FACTOR.powi((top - kind.rank.min(top)) as i32),
            source: CapacityOrigin::RankDefault,
        })
    }

    /// The capacity of a physical core when `busy` of its SMT siblings run
    /// at once: the CPU's capacity times `1 + smt_yield × (busy − 1)`.
    /// `smt_yield` is what a second thread adds to a core (measured by
    /// `pinsight speed`, else [`DEFAULT_SMT_YIELD`]).
    pub fn core_capacity(&self, cpu: usize, busy: usize, smt_yield: f64) -> Option<f64> {
        let c = self.capacity(cpu)?;
        Some(c.value * (1.0 + smt_yield * busy.saturating_sub(1) as f64))
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

    fn two_kinds(capacity: Option<f64>, rank_source: RankSource) -> Topology {
        let kind = |rank: usize, cpu: usize, cap: Option<f64>| Kind {
            rank,
            name: String::new(),
            mark: String::new(),
            cpus: CpuSet::single(cpu),
            source: KindSource::Frequency,
            rank_source,
            capacity: cap,
            capacity_raw: None,
            max_mhz: None,
            base_mhz: None,
            core_type: None,
        };
        let cpu = |id: usize, kind: usize| Cpu {
            core: Some(id),
            package: Some(0),
            kind: Some(kind),
            ..Cpu::new(id)
        };
        Topology {
            kinds: vec![kind(0, 1, capacity), kind(1, 0, capacity.map(|_| 1.0))],
            provenance: Provenance {
                capacity_from: capacity.map(|_| CapacitySource::CppcHighestPerf),
                ..Provenance::default()
            },
            ..Topology::bare(vec![cpu(0, 1), cpu(1, 0)])
        }
    }

    #[test]
    fn one_capacity_per_cpu() {
        let t = two_kinds(Some(0.58), RankSource::CppcHighestPerf);
        let c = t.capacity(1).unwrap();
        assert_eq!(c.value, 0.58);
        assert_eq!(
            c.source,
            CapacityOrigin::Chain(CapacitySource::CppcHighestPerf)
        );
        assert_eq!(t.capacity(0).unwrap().value, 1.0);
        assert_eq!(t.capacity(7), None);
        // Two busy siblings of a 1.0 core: 1.25 with the default yield.
        assert_eq!(t.core_capacity(0, 2, DEFAULT_SMT_YIELD), Some(1.25));
        let r = two_kinds(None, RankSource::CoreType);
        assert_eq!(
            r.capacity(1),
            Some(Capacity {
                value: 0.5,
                source: CapacityOrigin::RankDefault
            })
        );
        assert_eq!(two_kinds(None, RankSource::Unranked).capacity(1), None);
    }

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
            RankSource::MicroarchTable,
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
