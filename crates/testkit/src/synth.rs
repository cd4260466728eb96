//! Generator of small hand-made sysfs/procfs trees (the layout the kernel
//! and `hwloc-gather-topology` use), for machines no recorded dump covers:
//! ARM phones with three clusters, Intel hybrids whose firmware reports the
//! same frequencies everywhere, LP E-cores, 2048 CPUs, offline cpu0, ...
//!
//! The named machines the suites share ([`committed`]) are not kept in
//! the repository: [`crate::fixtures::synthetic`] writes each once per
//! build directory, from this generator, and every suite reads that tree.

use pinsight_cpuset::CpuSet;
use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// One logical CPU of a synthetic machine.
#[derive(Clone, Debug, Default)]
pub struct SCpu {
    pub id: usize,
    pub online: bool,
    /// Index of its core (CPUs sharing it are SMT siblings).
    pub core: usize,
    pub package: usize,
    /// Cluster index (CPUs sharing an L2 on ARM / E-core modules).
    pub cluster: Option<usize>,
    pub capacity: Option<u32>,
    pub max_khz: Option<u64>,
    pub base_khz: Option<u64>,
    pub midr: Option<u64>,
    pub node: usize,
    /// `acpi_cppc/highest_perf` and `nominal_perf`.
    pub cppc: Option<(u32, u32)>,
    /// `cpufreq/amd_pstate_prefcore_ranking` and `amd_pstate_highest_perf`.
    pub amd_pstate: Option<(u32, u32)>,
}

/// A whole synthetic machine.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    pub cpus: Vec<SCpu>,
    /// (`cpu_core` | `cpu_atom` | `cpu_lowpower`, CPUs).
    pub pmus: Vec<(&'static str, CpuSet)>,
    pub cpuinfo: String,
    /// L2 shared per cluster (true) or per core (false).
    pub l2_per_cluster: bool,
    /// Write cache directories at all (the 2048-CPU machine skips L1s).
    pub l1: bool,
    /// NR_CPUS the kernel masks are padded to.
    pub nr_cpus: usize,
    pub mem_mib_per_node: u64,
    /// Write only the files discovery strictly needs (old kernel names, one
    /// L3 index): the 2048-CPU machine stays quick to write.
    pub lean: bool,
}

fn mask(set: &CpuSet, nr_cpus: usize) -> String {
    let words = nr_cpus.div_ceil(32).max(1);
    let w64 = set.as_words();
    (0..words)
        .rev()
        .map(|i| {
            let w = w64.get(i / 2).copied().unwrap_or(0);
            format!("{:08x}", (w >> (32 * (i % 2))) as u32)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The files of a tree: (path relative to the root, contents).
pub type Files = Vec<(String, String)>;

fn put(root: &mut Files, rel: &str, text: &str) {
    root.push((rel.trim_start_matches('/').to_string(), text.to_string()));
}

impl Machine {
    fn set(&self, f: impl Fn(&SCpu) -> bool) -> CpuSet {
        self.cpus.iter().filter(|c| f(c)).map(|c| c.id).collect()
    }

    /// Writes the tree under `root` (which must be empty or absent).
    pub fn write(&self, root: &Path) {
        for (rel, text) in self.files() {
            let p = root.join(rel);
            fs::create_dir_all(p.parent().expect("a relative path")).expect("creating a directory");
            fs::write(p, text).expect("writing a file");
        }
    }

    /// Every file of the tree, in the order written.
    pub fn files(&self) -> Files {
        let mut files = Files::new();
        self.emit(&mut files);
        files
    }

    fn emit(&self, root: &mut Files) {
        let nr = self.nr_cpus.max(self.cpus.len());
        let cpu_dir = "sys/devices/system/cpu";
        self.emit_cpu_lists(root, cpu_dir, nr);
        let groups = self.groups();
        for c in &self.cpus {
            let d = format!("{cpu_dir}/cpu{}", c.id);
            emit_cpu_attributes(root, &d, c);
            if !c.online {
                // Offline CPUs have no topology/ or cache/ directory.
                continue;
            }
            self.emit_topology(root, &d, c, &groups, nr);
        }
        let nodes = self.emit_nodes(root, nr);
        self.emit_pmus_and_proc(root, nodes);
    }

    /// The `online`, `present`, `possible` and `kernel_max` files of the cpu directory.
    fn emit_cpu_lists(&self, root: &mut Files, cpu_dir: &str, nr: usize) {
        let online = self.set(|c| c.online);
        let present = self.set(|_| true);
        put(
            root,
            &format!("{cpu_dir}/online"),
            &format!("{}\n", online.to_list_string()),
        );
        put(
            root,
            &format!("{cpu_dir}/present"),
            &format!("{}\n", present.to_list_string()),
        );
        put(
            root,
            &format!("{cpu_dir}/possible"),
            &format!("0-{}\n", nr - 1),
        );
        put(
            root,
            &format!("{cpu_dir}/kernel_max"),
            &format!("{}\n", nr - 1),
        );
    }

    /// Core, package and cluster sets, computed once (the 2048-CPU machine
    /// would be quadratic).
    fn groups(&self) -> Groups {
        let mut groups = Groups::default();
        for c in &self.cpus {
            groups
                .cores
                .entry((c.package, c.core))
                .or_default()
                .insert(c.id);
            groups.pkgs.entry(c.package).or_default().insert(c.id);
            if let Some(k) = c.cluster {
                groups
                    .clusters
                    .entry((c.package, k))
                    .or_default()
                    .insert(c.id);
            }
        }
        groups
    }

    /// The `topology/` and `cache/` directories of the online CPU `c` at `d`.
    fn emit_topology(&self, root: &mut Files, d: &str, c: &SCpu, groups: &Groups, nr: usize) {
        let core = groups.cores[&(c.package, c.core)].clone();
        let pkg = groups.pkgs[&c.package].clone();
        let t = format!("{d}/topology");
        put(root, &format!("{t}/core_id"), &format!("{}\n", c.core));
        put(
            root,
            &format!("{t}/physical_package_id"),
            &format!("{}\n", c.package),
        );
        if self.lean {
            emit_lean_topology(root, d, &core, &pkg, nr);
            return;
        }
        for (name, set) in [
            ("core_cpus", &core),
            ("thread_siblings", &core),
            ("package_cpus", &pkg),
            ("core_siblings", &pkg),
        ] {
            put_mask_and_list(
                root,
                &format!("{t}/{name}"),
                &format!("{t}/{name}_list"),
                set,
                nr,
            );
        }
        put(root, &format!("{t}/die_id"), "0\n");
        put_mask_and_list(
            root,
            &format!("{t}/die_cpus"),
            &format!("{t}/die_cpus_list"),
            &pkg,
            nr,
        );
        let cluster = match c.cluster {
            Some(k) => groups.clusters[&(c.package, k)].clone(),
            None => core.clone(),
        };
        put(
            root,
            &format!("{t}/cluster_id"),
            &format!("{}\n", c.cluster.unwrap_or(c.core)),
        );
        put_mask_and_list(
            root,
            &format!("{t}/cluster_cpus"),
            &format!("{t}/cluster_cpus_list"),
            &cluster,
            nr,
        );
        self.emit_caches(root, d, &core, &cluster, &pkg, nr);
    }

    /// The full `cache/index*` directories: L1 data and instruction (when
    /// the machine has them), L2 per core or cluster, L3 per package.
    fn emit_caches(
        &self,
        root: &mut Files,
        d: &str,
        core: &CpuSet,
        cluster: &CpuSet,
        pkg: &CpuSet,
        nr: usize,
    ) {
        let mut caches: Vec<(u8, &str, &str, &CpuSet, u32)> = Vec::new();
        if self.l1 {
            caches.push((1, "Data", "32K", core, 8));
            caches.push((1, "Instruction", "32K", core, 8));
        }
        let l2 = if self.l2_per_cluster { cluster } else { core };
        caches.push((2, "Unified", "1024K", l2, 16));
        caches.push((3, "Unified", "16384K", pkg, 16));
        for (i, (level, ty, size, set, ways)) in caches.iter().enumerate() {
            let x = format!("{d}/cache/index{i}");
            put(root, &format!("{x}/level"), &format!("{level}\n"));
            put(root, &format!("{x}/type"), &format!("{ty}\n"));
            put(root, &format!("{x}/size"), &format!("{size}\n"));
            put(root, &format!("{x}/coherency_line_size"), "64\n");
            put(
                root,
                &format!("{x}/ways_of_associativity"),
                &format!("{ways}\n"),
            );
            put_mask_and_list(
                root,
                &format!("{x}/shared_cpu_map"),
                &format!("{x}/shared_cpu_list"),
                set,
                nr,
            );
        }
    }

    /// The NUMA node directory; returns the node numbers, ascending.
    fn emit_nodes(&self, root: &mut Files, nr: usize) -> Vec<usize> {
        let nodes: Vec<usize> = {
            let mut v: Vec<usize> = self.cpus.iter().map(|c| c.node).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let node_dir = "sys/devices/system/node";
        let node_list: CpuSet = nodes.iter().copied().collect();
        put(
            root,
            &format!("{node_dir}/online"),
            &format!("{}\n", node_list.to_list_string()),
        );
        for &n in &nodes {
            let set = self.set(|c| c.node == n && c.online);
            put_mask_and_list(
                root,
                &format!("{node_dir}/node{n}/cpumap"),
                &format!("{node_dir}/node{n}/cpulist"),
                &set,
                nr,
            );
            let kb = self.mem_mib_per_node * 1024;
            put(
                root,
                &format!("{node_dir}/node{n}/meminfo"),
                &format!("Node {n} MemTotal:       {kb} kB\nNode {n} MemFree:        {kb} kB\n"),
            );
            let row: Vec<String> = nodes
                .iter()
                .map(|&m| if m == n { "10".into() } else { "20".into() })
                .collect();
            put(
                root,
                &format!("{node_dir}/node{n}/distance"),
                &format!("{}\n", row.join(" ")),
            );
        }
        nodes
    }

    /// The PMU CPU lists, `/proc/cpuinfo`, `/proc/meminfo` and the README.
    fn emit_pmus_and_proc(&self, root: &mut Files, nodes: Vec<usize>) {
        for (pmu, set) in &self.pmus {
            put(
                root,
                &format!("sys/devices/{pmu}/cpus"),
                &format!("{}\n", set.to_list_string()),
            );
        }
        put(root, "proc/cpuinfo", &self.cpuinfo);
        let total = self.mem_mib_per_node * nodes.len() as u64 * 1024;
        put(
            root,
            "proc/meminfo",
            &format!("MemTotal:       {total} kB\n"),
        );
        put(
            root,
            "README.md",
            "Synthetic machine written by crates/topology/tests/common/synth.rs (see tests/synthetic.rs).\n",
        );
    }
}

/// Core, package and cluster CPU sets of a machine, by (package, index).
#[derive(Default)]
struct Groups {
    cores: HashMap<(usize, usize), CpuSet>,
    pkgs: HashMap<usize, CpuSet>,
    clusters: HashMap<(usize, usize), CpuSet>,
}

/// Writes `set` as a kernel mask at `mask_path`, then as a list at `list_path`.
fn put_mask_and_list(root: &mut Files, mask_path: &str, list_path: &str, set: &CpuSet, nr: usize) {
    put(root, mask_path, &format!("{}\n", mask(set, nr)));
    put(root, list_path, &format!("{}\n", set.to_list_string()));
}

/// The per-CPU files every CPU has, online or not, at `d`: `online`
/// (not for cpu0), capacity, MIDR, cpufreq and ACPI CPPC.
fn emit_cpu_attributes(root: &mut Files, d: &str, c: &SCpu) {
    if c.id != 0 {
        put(
            root,
            &format!("{d}/online"),
            if c.online { "1\n" } else { "0\n" },
        );
    }
    if let Some(cap) = c.capacity {
        put(root, &format!("{d}/cpu_capacity"), &format!("{cap}\n"));
    }
    if let Some(m) = c.midr {
        put(
            root,
            &format!("{d}/regs/identification/midr_el1"),
            &format!("0x{m:016x}\n"),
        );
    }
    if c.max_khz.is_some() || c.base_khz.is_some() {
        emit_cpufreq(root, d, c);
    }
    if let Some((highest, nominal)) = c.cppc {
        put(
            root,
            &format!("{d}/acpi_cppc/highest_perf"),
            &format!("{highest}\n"),
        );
        put(
            root,
            &format!("{d}/acpi_cppc/nominal_perf"),
            &format!("{nominal}\n"),
        );
    }
}

/// The `cpufreq/` directory of a CPU that has a max or base frequency,
/// with the amd_pstate files when it has them.
fn emit_cpufreq(root: &mut Files, d: &str, c: &SCpu) {
    if let Some(f) = c.max_khz {
        put(
            root,
            &format!("{d}/cpufreq/cpuinfo_max_freq"),
            &format!("{f}\n"),
        );
    }
    if let Some(f) = c.base_khz {
        put(
            root,
            &format!("{d}/cpufreq/base_frequency"),
            &format!("{f}\n"),
        );
    }
    put(
        root,
        &format!("{d}/cpufreq/related_cpus"),
        &format!("{}\n", c.id),
    );
    if let Some((ranking, highest)) = c.amd_pstate {
        put(
            root,
            &format!("{d}/cpufreq/amd_pstate_prefcore_ranking"),
            &format!("{ranking}\n"),
        );
        put(
            root,
            &format!("{d}/cpufreq/amd_pstate_highest_perf"),
            &format!("{highest}\n"),
        );
        put(
            root,
            &format!("{d}/cpufreq/scaling_driver"),
            "amd-pstate-epp\n",
        );
    }
}

/// The lean machine's topology and cache: old kernel names only, one L3,
/// few files, quick to write.
fn emit_lean_topology(root: &mut Files, d: &str, core: &CpuSet, pkg: &CpuSet, nr: usize) {
    let t = format!("{d}/topology");
    put(
        root,
        &format!("{t}/thread_siblings"),
        &format!("{}\n", mask(core, nr)),
    );
    put(
        root,
        &format!("{t}/core_siblings"),
        &format!("{}\n", mask(pkg, nr)),
    );
    let x = format!("{d}/cache/index0");
    put(root, &format!("{x}/level"), "3\n");
    put(root, &format!("{x}/type"), "Unified\n");
    put(root, &format!("{x}/size"), "65536K\n");
    put(
        root,
        &format!("{x}/shared_cpu_map"),
        &format!("{}\n", mask(pkg, nr)),
    );
}

fn x86_cpuinfo(n: usize, model: &str) -> String {
    (0..n)
        .map(|i| {
            format!(
                "processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: {model}\nflags\t\t: fpu lm hybrid\n\n"
            )
        })
        .collect()
}

fn amd_cpuinfo(n: usize, model: &str, family: u32, model_id: u32) -> String {
    (0..n)
        .map(|i| {
            format!(
                "processor\t: {i}\nvendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: {model_id}\nmodel name\t: {model}\nflags\t\t: fpu lm cppc amd_lbr_v2\n\n"
            )
        })
        .collect()
}

/// An arm64 `/proc/cpuinfo`: one block per online CPU, with the MIDR
/// fields (`CPU implementer`, `CPU variant`, `CPU part`, `CPU revision`)
/// of the CPUs that have a MIDR, as the kernel prints them.
pub fn arm_cpuinfo(cpus: &[SCpu]) -> String {
    cpus.iter()
        .filter(|c| c.online)
        .map(|c| {
            let ident = c.midr.map_or(String::new(), |m| {
                format!(
                    "CPU implementer\t: 0x{:02x}\nCPU architecture: 8\nCPU variant\t: 0x{:x}\nCPU part\t: 0x{:03x}\nCPU revision\t: {}\n",
                    (m >> 24) & 0xff,
                    (m >> 20) & 0xf,
                    (m >> 4) & 0xfff,
                    m & 0xf
                )
            });
            format!(
                "processor\t: {}\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd\n{ident}\n",
                c.id
            )
        })
        .collect()
}

pub const A55: u64 = 0x412f_d050;
pub const A76: u64 = 0x414f_d0b1;
pub const X1: u64 = 0x411f_d440;
pub const A72: u64 = 0x410f_d083;
pub const A510: u64 = 0x410f_d461;
pub const A710: u64 = 0x412f_d471;
pub const X2: u64 = 0x410f_d480;
pub const A725: u64 = 0x410f_d870;
pub const X925: u64 = 0x410f_d850;

fn cpu(id: usize) -> SCpu {
    SCpu {
        id,
        online: true,
        core: id,
        package: 0,
        ..Default::default()
    }
}

/// An online Arm CPU of its own core, in cluster `cluster`, with a MIDR,
/// a capacity and a max frequency.
fn arm_cpu(id: usize, midr: u64, capacity: u32, max_khz: u64, cluster: usize) -> SCpu {
    SCpu {
        cluster: Some(cluster),
        capacity: Some(capacity),
        max_khz: Some(max_khz),
        midr: Some(midr),
        ..cpu(id)
    }
}

/// An Arm machine of `cpus` (cpuinfo from their MIDRs), one node, L1s, L2
/// per core.
fn arm_machine(cpus: Vec<SCpu>, nr_cpus: usize, mem_mib_per_node: u64) -> Machine {
    let cpuinfo = arm_cpuinfo(&cpus);
    Machine {
        cpus,
        cpuinfo,
        l2_per_cluster: false,
        l1: true,
        nr_cpus,
        mem_mib_per_node,
        ..Default::default()
    }
}

/// An Intel hybrid of `cpus`: the PMU lists `pmus` (name, CPU list), one
/// cpuinfo block per CPU named `model`, L2 per cluster, NR_CPUS 64.
fn intel_hybrid(
    cpus: Vec<SCpu>,
    pmus: &[(&'static str, &str)],
    model: &str,
    mem_mib_per_node: u64,
) -> Machine {
    let n = cpus.len();
    Machine {
        cpus,
        pmus: pmus
            .iter()
            .map(|&(name, list)| (name, CpuSet::parse_list(list).unwrap()))
            .collect(),
        cpuinfo: x86_cpuinfo(n, model),
        l2_per_cluster: true,
        l1: true,
        nr_cpus: 64,
        mem_mib_per_node,
        lean: false,
    }
}

/// Snapdragon-888-like phone: Cortex-A55 ×4 (capacity 160), A76 ×2 (498),
/// X1 ×2 (1024), one cluster per core type, cpufreq per CPU.
pub fn arm_phone() -> Machine {
    let cpus: Vec<SCpu> = (0..8)
        .map(|i| {
            let (midr, cap, khz, cl) = match i {
                0..=3 => (A55, 160, 1_804_800, 0),
                4..=5 => (A76, 498, 2_419_200, 1),
                _ => (X1, 1024, 2_841_600, 2),
            };
            arm_cpu(i, midr, cap, khz, cl)
        })
        .collect();
    arm_machine(cpus, 8, 7680)
}

/// Alder-Lake-P-like laptop (i7-1260P: 4 P-cores with SMT = CPUs 0-7, 8
/// E-cores in two 4-core modules = 8-15) whose firmware reports the same
/// max (4700 MHz) and base (2100 MHz) frequency on every CPU and no
/// capacity: only the `cpu_core`/`cpu_atom` lists tell the kinds apart.
pub fn intel_hybrid_laptop() -> Machine {
    let mut cpus = Vec::new();
    for i in 0..16 {
        let (core, cluster) = if i < 8 {
            (i / 2, None)
        } else {
            (4 + (i - 8), Some(10 + (i - 8) / 4))
        };
        cpus.push(SCpu {
            core,
            cluster,
            max_khz: Some(4_700_000),
            base_khz: Some(2_100_000),
            ..cpu(i)
        });
    }
    for c in cpus.iter_mut().filter(|c| c.cluster.is_none()) {
        c.cluster = Some(c.core);
    }
    intel_hybrid(
        cpus,
        &[("cpu_core", "0-7"), ("cpu_atom", "8-15")],
        "12th Gen Intel(R) Core(TM) i7-1260P",
        15872,
    )
}

/// Meteor-Lake-like (Core Ultra 7 155H): 6 P-cores with SMT (0-11), 8
/// E-cores in two modules (12-19), 2 LP E-cores on the SoC tile (20-21).
pub fn meteor_lake() -> Machine {
    let mut cpus = Vec::new();
    for i in 0..22 {
        let c = match i {
            0..=11 => SCpu {
                core: i / 2,
                cluster: Some(i / 2),
                max_khz: Some(4_800_000),
                base_khz: Some(1_400_000),
                ..cpu(i)
            },
            12..=19 => SCpu {
                core: 6 + (i - 12),
                cluster: Some(20 + (i - 12) / 4),
                max_khz: Some(3_800_000),
                base_khz: Some(900_000),
                ..cpu(i)
            },
            _ => SCpu {
                core: 14 + (i - 20),
                cluster: Some(30),
                max_khz: Some(2_500_000),
                base_khz: Some(700_000),
                ..cpu(i)
            },
        };
        cpus.push(c);
    }
    intel_hybrid(
        cpus,
        &[
            ("cpu_core", "0-11"),
            ("cpu_atom", "12-19"),
            ("cpu_lowpower", "20-21"),
        ],
        "Intel(R) Core(TM) Ultra 7 155H",
        31744,
    )
}

/// GB10-like ARM hybrid: CPUs 0-9 Cortex-A725 (capacity 470), 10-19
/// Cortex-X925 (capacities 997/1017/1024), with CPUs 0-4 offline. Reading
/// `cpu_capacity` by position in the online list (as hwloc does) would
/// swap the kinds.
pub fn gb10_low_offline() -> Machine {
    let cpus: Vec<SCpu> = (0..20)
        .map(|i| {
            let (midr, cap, khz, cl) = if i < 10 {
                (A725, 470, 2_808_000, 0)
            } else {
                (X925, [997, 1017, 1024][i % 3], 3_900_000, 1)
            };
            SCpu {
                online: i >= 5,
                ..arm_cpu(i, midr, cap, khz, cl)
            }
        })
        .collect();
    arm_machine(cpus, 20, 122880)
}

/// Raptor-Lake-P-like laptop (i7-1370P: 6 P-cores with SMT = CPUs 0-11,
/// 8 E-cores in two 4-core modules = 12-19) whose firmware reports the
/// same max (4800 MHz) and base (1900 MHz) frequency and the same CPPC
/// levels on every CPU: every capacity source is flat, only the
/// `cpu_core`/`cpu_atom` PMU lists tell the kinds apart (expected: a
/// warning, P above E).
pub fn raptor_lake_flat_firmware() -> Machine {
    let cpus: Vec<SCpu> = (0..20)
        .map(|i| {
            let (core, cluster) = if i < 12 {
                (i / 2, i / 2)
            } else {
                (6 + (i - 12), 20 + (i - 12) / 4)
            };
            SCpu {
                core,
                cluster: Some(cluster),
                max_khz: Some(4_800_000),
                base_khz: Some(1_900_000),
                cppc: Some((64, 24)),
                ..cpu(i)
            }
        })
        .collect();
    intel_hybrid(
        cpus,
        &[("cpu_core", "0-11"), ("cpu_atom", "12-19")],
        "13th Gen Intel(R) Core(TM) i7-1370P",
        31744,
    )
}

/// Strix-Point-like AMD part (Ryzen AI 9 HX 370: 4 Zen 5 cores = CPUs
/// 0-3 and 12-15, 8 Zen 5c cores = 4-11 and 16-23, SMT siblings `i` and
/// `i + 12` as Linux numbers them on AMD), amd_pstate with preferred-core
/// rankings and highest_perf that differ between the core types and a
/// little within each, CPPC, and max frequencies 5.0-5.16 GHz vs 3.25-3.3
/// GHz with one base frequency. No PMU lists: recorded, the kinds come from
/// the frequencies and are named from the model name.
pub fn amd_strix_point() -> Machine {
    let cpus: Vec<SCpu> = (0..24)
        .map(|i| {
            let core = i % 12;
            let (ranking, highest, khz) = if core < 4 {
                (
                    236 - 5 * core as u32,
                    196 - 5 * (core as u32 / 2),
                    [5_157_000, 5_100_000, 5_050_000, 5_000_000][core],
                )
            } else {
                let j = (core - 4) as u32;
                (
                    166 - 5 * (j % 4),
                    146 - 5 * (j % 2),
                    [3_300_000, 3_250_000][(j % 2) as usize] as u64,
                )
            };
            SCpu {
                core,
                max_khz: Some(khz),
                base_khz: Some(2_000_000),
                cppc: Some((highest, 118)),
                amd_pstate: Some((ranking, highest)),
                ..cpu(i)
            }
        })
        .collect();
    Machine {
        cpus,
        cpuinfo: amd_cpuinfo(24, "AMD Ryzen AI 9 HX 370 w/ Radeon 890M", 26, 36),
        l2_per_cluster: false,
        l1: true,
        nr_cpus: 32,
        mem_mib_per_node: 31744,
        ..Default::default()
    }
}

/// ARM big.LITTLE (4 Cortex-A55 = 0-3, 4 Cortex-A76 = 4-7) whose firmware
/// contradicts itself: `cpu_capacity` and the max frequencies put the A76
/// above the A55, ACPI CPPC `highest_perf`/`nominal_perf` the other way
/// round (expected: a warning naming both files; the chain's first
/// source, `cpu_capacity`, decides).
pub fn arm_capacity_cppc_disagree() -> Machine {
    let cpus: Vec<SCpu> = (0..8)
        .map(|i| {
            let (midr, cap, khz, cppc, cl) = if i < 4 {
                (A55, 400, 1_800_000, (260, 200), 0)
            } else {
                (A76, 1024, 2_400_000, (100, 90), 1)
            };
            SCpu {
                cppc: Some(cppc),
                ..arm_cpu(i, midr, cap, khz, cl)
            }
        })
        .collect();
    arm_machine(cpus, 8, 7680)
}

/// The named synthetic machines the suites share, by directory name
/// ([`crate::fixtures::synthetic`]).
pub fn committed() -> Vec<(&'static str, Machine)> {
    vec![
        ("arm-phone-3cluster", arm_phone()),
        ("intel-hybrid-laptop", intel_hybrid_laptop()),
        ("meteorlake-lp-ecores", meteor_lake()),
        ("gb10-low-cpus-offline", gb10_low_offline()),
        ("raptorlake-flat-firmware", raptor_lake_flat_firmware()),
        ("amd-strix-point", amd_strix_point()),
        ("arm-capacity-cppc-disagree", arm_capacity_cppc_disagree()),
    ]
}

/// `packages` × `cores` × `threads` x86 server, one NUMA node per package,
/// no L1 directories (kept small to write quickly).
pub fn big_server(packages: usize, cores: usize, threads: usize) -> Machine {
    let n = packages * cores * threads;
    // Linux numbering: first threads of every core, then second threads.
    let cpus: Vec<SCpu> = (0..n)
        .map(|i| {
            let rest = i % (packages * cores);
            let package = rest / cores;
            let core = rest % cores;
            SCpu {
                core,
                package,
                node: package,
                ..cpu(i)
            }
        })
        .collect();
    Machine {
        cpus,
        cpuinfo: x86_cpuinfo(1, "Synthetic 2048-thread server"),
        l2_per_cluster: false,
        l1: false,
        lean: true,
        nr_cpus: n,
        mem_mib_per_node: 65536,
        ..Default::default()
    }
}

/// Four SMT cores on one package (x86), all homogeneous.
pub fn small_smt(frequencies: impl Fn(usize) -> (u64, u64)) -> Machine {
    let cpus: Vec<SCpu> = (0..8)
        .map(|i| {
            let (max, base) = frequencies(i);
            SCpu {
                core: i % 4,
                max_khz: Some(max),
                base_khz: Some(base),
                ..cpu(i)
            }
        })
        .collect();
    Machine {
        cpus,
        cpuinfo: x86_cpuinfo(8, "Synthetic quad-core"),
        l2_per_cluster: false,
        l1: true,
        nr_cpus: 8,
        mem_mib_per_node: 16384,
        ..Default::default()
    }
}

/// An Arm hybrid whose two microarchitectures run at one clock and
/// report no capacity: CPUs 0-3 are `little`, 4-7 `big` (MIDRs), every
/// CPU at `khz`, one cluster each. `midr_el1`: whether sysfs has
/// `regs/identification/midr_el1`; `/proc/cpuinfo` always gives each
/// processor's MIDR fields (a kernel without the `regs` directory).
pub fn arm_one_clock(little: u64, big: u64, khz: u64, midr_el1: bool) -> Machine {
    let mut cpus: Vec<SCpu> = (0..8)
        .map(|i| SCpu {
            midr: Some(if i < 4 { little } else { big }),
            max_khz: Some(khz),
            cluster: Some(i / 4),
            ..cpu(i)
        })
        .collect();
    let cpuinfo = arm_cpuinfo(&cpus);
    if !midr_el1 {
        cpus.iter_mut().for_each(|c| c.midr = None);
    }
    Machine {
        cpus,
        cpuinfo,
        l2_per_cluster: false,
        l1: true,
        nr_cpus: 8,
        mem_mib_per_node: 8192,
        ..Default::default()
    }
}

/// Four identical Cortex-A72 cores whose capacities differ a little.
pub fn identical_a72(with_midr: bool) -> Machine {
    let cpus: Vec<SCpu> = (0..4)
        .map(|i| SCpu {
            capacity: Some(if i % 2 == 0 { 718 } else { 731 }),
            midr: with_midr.then_some(A72),
            cluster: Some(0),
            ..cpu(i)
        })
        .collect();
    let cpuinfo = arm_cpuinfo(&cpus);
    Machine {
        cpus,
        cpuinfo,
        l2_per_cluster: true,
        l1: true,
        nr_cpus: 4,
        mem_mib_per_node: 4096,
        ..Default::default()
    }
}
