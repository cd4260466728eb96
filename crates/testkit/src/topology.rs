//! One way to write a machine by hand in a test: [`build`] from PUs
//! ([`Pu`]) and kinds ([`KindDesc`]), the way lstopo shows a machine
//! (package → NUMA node → L3 → L2 → core → PU), so each test machine
//! reads at a glance; [`empty`] for a test that needs only the kinds. The
//! named machines ([`i7_1370p`], [`arm_phone`], ...) are shared by every
//! suite that plans on them. Recorded machines come from
//! [`crate::fixtures`] instead.

use pinsight_cpuset::CpuSet;
use pinsight_model::{
    Cache, CacheType, CoreType, Cpu, Group, Kind, KindSource, NumaNode, RankSource, Source,
    Topology,
};

/// One PU of a machine under construction.
#[derive(Clone, Debug)]
pub struct Pu {
    pub cpu: usize,
    pub package: usize,
    pub numa: u32,
    pub l3: usize,
    pub l2: usize,
    pub core: usize,
    pub kind: usize,
    pub online: bool,
    pub allowed: bool,
    pub capacity: Option<u32>,
    pub max_mhz: Option<u32>,
}

impl Pu {
    /// An online, allowed PU: its CPU id, package, NUMA node, L3 and L2
    /// instance, core and kind (the kind's index in [`build`]'s list).
    pub fn new(
        cpu: usize,
        package: usize,
        numa: u32,
        l3: usize,
        l2: usize,
        core: usize,
        kind: usize,
    ) -> Pu {
        Pu {
            cpu,
            package,
            numa,
            l3,
            l2,
            core,
            kind,
            online: true,
            allowed: true,
            capacity: None,
            max_mhz: None,
        }
    }
}

/// A kind: its name, mark, core type, maximum MHz and raw capacity.
#[derive(Clone, Debug)]
pub struct KindDesc {
    pub name: &'static str,
    pub mark: &'static str,
    pub core_type: Option<CoreType>,
    pub max_mhz: Option<u32>,
    pub capacity_raw: Option<u32>,
}

impl KindDesc {
    /// A kind known by name and mark only.
    pub fn named(name: &'static str, mark: &'static str) -> KindDesc {
        KindDesc {
            name,
            mark,
            core_type: None,
            max_mhz: None,
            capacity_raw: None,
        }
    }
}

/// A single kind of core, named Core (mark C), nothing else known of it.
pub fn one_kind() -> Vec<KindDesc> {
    vec![KindDesc::named("Core", "C")]
}

/// The online PUs grouped by `key`, groups ordered by first CPU.
fn groups(pus: &[Pu], key: impl Fn(&Pu) -> usize) -> Vec<(usize, CpuSet)> {
    let mut out: Vec<(usize, CpuSet)> = Vec::new();
    for p in pus.iter().filter(|p| p.online) {
        match out.iter_mut().find(|(k, _)| *k == key(p)) {
            Some((_, s)) => {
                s.insert(p.cpu);
            }
            None => out.push((key(p), CpuSet::single(p.cpu))),
        }
    }
    out.sort_by_key(|(_, s)| s.first());
    out
}

/// The position of the group holding `cpu`.
fn index(gs: &[(usize, CpuSet)], cpu: usize) -> Option<usize> {
    gs.iter().position(|(_, s)| s.contains(cpu))
}

/// Groups as the model holds them: logical index by first CPU, the OS id
/// the key.
fn as_groups(gs: &[(usize, CpuSet)]) -> Vec<Group> {
    gs.iter()
        .enumerate()
        .map(|(i, (k, s))| Group {
            id: i,
            os_id: Some(*k as u32),
            cpus: s.clone(),
        })
        .collect()
}

/// Unified caches of `level`, one per group.
fn caches(level: u8, gs: &[(usize, CpuSet)]) -> Vec<Cache> {
    gs.iter()
        .map(|(_, s)| Cache {
            level,
            cache_type: CacheType::Unified,
            size_kib: None,
            line_size: Some(64),
            ways: None,
            cpus: s.clone(),
        })
        .collect()
}

/// The model's CPUs: an offline one belongs to no core, package, node or
/// kind, as discovery reads it.
fn cpus(
    pus: &[Pu],
    kinds: &[KindDesc],
    cores: &[(usize, CpuSet)],
    packages: &[(usize, CpuSet)],
) -> Vec<Cpu> {
    pus.iter()
        .map(|p| Cpu {
            online: p.online,
            allowed: p.allowed,
            core: index(cores, p.cpu).filter(|_| p.online),
            package: index(packages, p.cpu).filter(|_| p.online),
            numa: p.online.then_some(p.numa),
            kind: (p.online && !kinds.is_empty()).then_some(p.kind),
            capacity: p.capacity,
            max_mhz: p.max_mhz,
            core_type: kinds.get(p.kind).and_then(|k| k.core_type),
            ..Cpu::new(p.cpu)
        })
        .collect()
}

/// The kinds in rank order (index = rank): hybrid PMU and core type when
/// there are several, uniform when one.
fn kinds(pus: &[Pu], kinds: Vec<KindDesc>) -> Vec<Kind> {
    let hybrid = kinds.len() > 1;
    kinds
        .into_iter()
        .enumerate()
        .map(|(rank, k)| Kind {
            rank,
            name: k.name.into(),
            mark: k.mark.into(),
            cpus: pus
                .iter()
                .filter(|p| p.online && p.kind == rank)
                .map(|p| p.cpu)
                .collect(),
            source: if hybrid {
                KindSource::HybridPmu
            } else {
                KindSource::Uniform
            },
            rank_source: if hybrid {
                RankSource::CoreType
            } else {
                RankSource::Uniform
            },
            capacity: None,
            capacity_raw: k.capacity_raw,
            max_mhz: k.max_mhz,
            base_mhz: None,
            core_type: k.core_type,
        })
        .collect()
}

/// Builds a Topology named `name` (`Source::Fsroot("synthetic/NAME")`,
/// x86_64). Logical indices are by first CPU, like discovery; L3 and L2
/// caches are unified with 64-byte lines.
pub fn build(name: &str, mut pus: Vec<Pu>, kind_list: Vec<KindDesc>) -> Topology {
    pus.sort_by_key(|p| p.cpu);
    let cores = groups(&pus, |p| p.core);
    let packages = groups(&pus, |p| p.package);
    let numas = groups(&pus, |p| p.numa as usize);
    let mut all_caches = caches(3, &groups(&pus, |p| p.l3));
    all_caches.extend(caches(2, &groups(&pus, |p| p.l2)));
    Topology {
        cpus: cpus(&pus, &kind_list, &cores, &packages),
        cores: as_groups(&cores),
        packages: as_groups(&packages),
        caches: all_caches,
        numa_nodes: numas
            .iter()
            .map(|(k, s)| NumaNode::new(*k as u32, s.clone(), None))
            .collect(),
        kinds: kinds(&pus, kind_list),
        model_name: Some(name.into()),
        arch: Some("x86_64".into()),
        ..empty(Source::Fsroot(format!("synthetic/{name}")))
    }
}

/// A machine with nothing in it but its source: the start of a test
/// that fills in only what it is about (`Topology { kinds, ..empty(s) }`).
pub fn empty(source: Source) -> Topology {
    Topology {
        source,
        ..Topology::bare(Vec::new())
    }
}

/// i7-1370P as recorded: 6 P-cores with SMT (CPUs 2k, 2k+1; 5.0 GHz, two
/// favoured at 5.2), 8 E-cores 12-19 in two 4-core L2 clusters (3.9 GHz),
/// one package, one L3, one NUMA node, no cpu_capacity.
pub fn i7_1370p() -> Topology {
    let mut pus = Vec::new();
    for core in 0..6 {
        for t in 0..2 {
            let mut p = Pu::new(2 * core + t, 0, 0, 0, core, core, 1);
            p.max_mhz = Some(if core == 2 || core == 3 { 5200 } else { 5000 });
            pus.push(p);
        }
    }
    for e in 0..8 {
        let mut p = Pu::new(12 + e, 0, 0, 0, 6 + e / 4, 6 + e, 0);
        p.max_mhz = Some(3900);
        pus.push(p);
    }
    let kind = |name, mark, core_type, mhz| KindDesc {
        core_type: Some(core_type),
        max_mhz: Some(mhz),
        ..KindDesc::named(name, mark)
    };
    build(
        "i7-1370P",
        pus,
        vec![
            kind("E-core", "E", CoreType::Atom, 3900),
            kind("P-core", "P", CoreType::Core, 5200),
        ],
    )
}

/// 4 packages × 2 cores × 2 threads, one NUMA node and L3 per package,
/// CPUs numbered round robin over packages like many BIOSes do
/// (package p, core c, thread t → CPU p + 4c + 8t).
pub fn four_socket_numa() -> Topology {
    let mut pus = Vec::new();
    for p in 0..4 {
        for c in 0..2 {
            for t in 0..2 {
                let cpu = p + 4 * c + 8 * t;
                let core = p * 2 + c;
                pus.push(Pu::new(cpu, p, p as u32, p, core, core, 0));
            }
        }
    }
    build("4s2c2t", pus, vec![KindDesc::named("Core", "C")])
}

/// One package, 4 cores × 2 threads, siblings numbered Intel style
/// (core c = CPUs c and c+4), a single kind.
pub fn smt_machine() -> Topology {
    let pus = (0..8)
        .map(|cpu| Pu::new(cpu, 0, 0, 0, cpu % 4, cpu % 4, 0))
        .collect();
    build("1s4c2t", pus, vec![KindDesc::named("Core", "C")])
}

/// Like [`smt_machine`] with siblings adjacent (core c = 2c, 2c+1), CPU 3
/// offline and CPUs 6-7 forbidden by the cgroup.
pub fn offline_and_cgroup() -> Topology {
    let pus = (0..8)
        .map(|cpu| {
            let mut p = Pu::new(cpu, 0, 0, 0, cpu / 2, cpu / 2, 0);
            p.online = cpu != 3;
            p.allowed = cpu < 6;
            p
        })
        .collect();
    build(
        "1s4c2t-offline-cgroup",
        pus,
        vec![KindDesc::named("Core", "C")],
    )
}

/// A three-cluster ARM phone: 4 × Cortex-A55 (0-3, capacity 414), 3 ×
/// Cortex-A78 (4-6, 946), 1 × Cortex-X1 (7, 1024); L2 per core, one L3.
pub fn arm_phone() -> Topology {
    const KINDS: [(&str, &str, u32, u32); 3] = [
        ("Cortex-A55", "0", 414, 2000),
        ("Cortex-A78", "1", 946, 2600),
        ("Cortex-X1", "2", 1024, 3000),
    ];
    let pus = (0..8)
        .map(|cpu| {
            let kind = match cpu {
                0..=3 => 0,
                4..=6 => 1,
                _ => 2,
            };
            let mut p = Pu::new(cpu, 0, 0, 0, cpu, cpu, kind);
            p.capacity = Some(KINDS[kind].2);
            p.max_mhz = Some(KINDS[kind].3);
            p
        })
        .collect();
    let kinds = KINDS
        .iter()
        .map(|&(name, mark, cap, mhz)| KindDesc {
            max_mhz: Some(mhz),
            capacity_raw: Some(cap),
            ..KindDesc::named(name, mark)
        })
        .collect();
    let mut t = build("arm-1+3+4", pus, kinds);
    t.arch = Some("aarch64".into());
    for k in &mut t.kinds {
        k.source = KindSource::Midr;
        k.rank_source = RankSource::Capacity;
    }
    t
}

/// `topo` with two kinds declared as `--kinds FIRST:P,REST:E` declares
/// them: its first usable CPU a P-core, every other usable CPU an E-core,
/// for a live test that needs two kinds on any machine. `Err` with the
/// reason for its counted skip when fewer than two CPUs are usable or
/// the declaration does not apply here.
pub fn declared_first_p(topo: &Topology) -> Result<Topology, String> {
    use pinsight_model::declared::{apply, KindSpec};
    let usable: Vec<usize> = topo.usable().iter().collect();
    if usable.len() < 2 {
        return Err("one usable CPU: two kinds cannot be declared".into());
    }
    let rest: CpuSet = usable[1..].iter().copied().collect();
    let spec = KindSpec::parse(&format!("{}:P,{rest}:E", usable[0])).unwrap();
    apply(topo, &spec).map_err(|e| format!("cannot declare kinds here: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_usable_cpu_is_declared_the_p_core() {
        let t = declared_first_p(&i7_1370p()).unwrap();
        let mut kinds: Vec<String> = t.kinds.iter().map(|k| k.cpus.to_string()).collect();
        kinds.sort();
        assert_eq!(kinds, ["0", "1-19"]);
        let p = t.kinds.iter().find(|k| k.cpus.contains(0)).unwrap();
        assert!(t.kinds.iter().all(|k| k.rank <= p.rank), "{:?}", t.kinds);
    }

    #[test]
    fn a_built_machine_is_what_discovery_would_read() {
        let t = i7_1370p();
        assert_eq!(t.cpus.len(), 20);
        assert_eq!(t.cores.len(), 14);
        assert_eq!(t.kinds[1].cpus, CpuSet::parse_list("0-11").unwrap());
        assert_eq!(t.kinds[0].cpus, CpuSet::parse_list("12-19").unwrap());
        // One L3 and 6 + 2 L2 instances.
        assert_eq!(t.caches.iter().filter(|c| c.level == 3).count(), 1);
        assert_eq!(t.caches.iter().filter(|c| c.level == 2).count(), 8);
        let o = offline_and_cgroup();
        assert_eq!(o.cpus[3].core, None);
        assert_eq!(o.usable(), CpuSet::parse_list("0-2,4-5").unwrap());
        assert_eq!(four_socket_numa().numa_nodes.len(), 4);
        assert_eq!(arm_phone().kinds[2].capacity_raw, Some(1024));
    }
}
