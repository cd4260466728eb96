//! Hand-built machines for planner tests, and the golden-file helper.
//!
//! The builders describe machines the way lstopo shows them (package →
//! NUMA node → L3 → L2 → core → PU) so each test machine is readable at a
//! glance; the recorded fixtures are used too once discovery reads them.
#![allow(dead_code)]

use pinsight_cpuset::CpuSet;
use pinsight_model::*;
use pinsight_plan::{plan, render, Format, Policy, Request};

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

/// A kind description: (name, mark, core type, max MHz of the kind).
pub struct KindDesc {
    pub name: &'static str,
    pub mark: &'static str,
    pub core_type: Option<CoreType>,
    pub max_mhz: Option<u32>,
    pub capacity_raw: Option<u32>,
}

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

/// Builds a Topology. Logical indices are by first CPU, like discovery.
pub fn build(name: &str, pus: Vec<Pu>, kinds: Vec<KindDesc>) -> Topology {
    let mut pus = pus;
    pus.sort_by_key(|p| p.cpu);
    let cores = groups(&pus, |p| p.core);
    let packages = groups(&pus, |p| p.package);
    let l3s = groups(&pus, |p| p.l3);
    let l2s = groups(&pus, |p| p.l2);
    let numas = groups(&pus, |p| p.numa as usize);
    let index = |gs: &[(usize, CpuSet)], cpu: usize| gs.iter().position(|(_, s)| s.contains(cpu));
    let cpus: Vec<Cpu> = pus
        .iter()
        .map(|p| Cpu {
            id: p.cpu,
            online: p.online,
            allowed: p.allowed,
            core: if p.online { index(&cores, p.cpu) } else { None },
            package: if p.online {
                index(&packages, p.cpu)
            } else {
                None
            },
            die: None,
            cluster: None,
            numa: if p.online { Some(p.numa) } else { None },
            kind: if p.online && !kinds.is_empty() {
                Some(p.kind)
            } else {
                None
            },
            capacity: p.capacity,
            max_mhz: p.max_mhz,
            base_mhz: None,
            cppc: None,
            core_type: kinds.get(p.kind).and_then(|k| k.core_type),
            midr: None,
        })
        .collect();
    let group = |gs: &[(usize, CpuSet)]| -> Vec<Group> {
        gs.iter()
            .enumerate()
            .map(|(i, (k, s))| Group {
                id: i,
                os_id: Some(*k as u32),
                cpus: s.clone(),
            })
            .collect()
    };
    let cache = |level: u8, gs: &[(usize, CpuSet)]| -> Vec<Cache> {
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
    };
    let mut caches = cache(3, &l3s);
    caches.extend(cache(2, &l2s));
    let n_kinds = kinds.len();
    let kinds: Vec<Kind> = kinds
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
            source: if n_kinds > 1 {
                KindSource::HybridPmu
            } else {
                KindSource::Uniform
            },
            rank_source: if n_kinds > 1 {
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
        .collect();
    Topology {
        source: Source::Fsroot(format!("synthetic/{name}")),
        model_name: Some(name.into()),
        arch: Some("x86_64".into()),
        cpus,
        cores: group(&cores),
        packages: group(&packages),
        dies: Vec::new(),
        clusters: Vec::new(),
        caches,
        numa_nodes: numas
            .iter()
            .map(|(k, s)| NumaNode::new(*k as u32, s.clone(), None))
            .collect(),
        numa_distances: None,
        kinds,
        provenance: Default::default(),
        devices: Vec::new(),
        warnings: Vec::new(),
    }
}

/// A single kind of core, named Core (mark C), nothing else known of it.
pub fn one_kind() -> Vec<KindDesc> {
    vec![KindDesc {
        name: "Core",
        mark: "C",
        core_type: None,
        max_mhz: None,
        capacity_raw: None,
    }]
}

/// An online, allowed PU of kind `kind` at that place, no capacity or
/// frequency known.
pub fn pu(
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

/// i7-1370P as recorded: 6 P-cores with SMT (CPUs 2k, 2k+1; 5.0 GHz, two
/// favoured at 5.2), 8 E-cores 12-19 in two 4-core L2 clusters (3.9 GHz),
/// one package, one L3, one NUMA node, no cpu_capacity.
pub fn i7_1370p() -> Topology {
    let mut pus = Vec::new();
    for core in 0..6 {
        for t in 0..2 {
            let mut p = pu(2 * core + t, 0, 0, 0, core, core, 1);
            p.max_mhz = Some(if core == 2 || core == 3 { 5200 } else { 5000 });
            pus.push(p);
        }
    }
    for e in 0..8 {
        let mut p = pu(12 + e, 0, 0, 0, 6 + e / 4, 6 + e, 0);
        p.max_mhz = Some(3900);
        pus.push(p);
    }
    build(
        "i7-1370P",
        pus,
        vec![
            KindDesc {
                name: "E-core",
                mark: "E",
                core_type: Some(CoreType::Atom),
                max_mhz: Some(3900),
                capacity_raw: None,
            },
            KindDesc {
                name: "P-core",
                mark: "P",
                core_type: Some(CoreType::Core),
                max_mhz: Some(5200),
                capacity_raw: None,
            },
        ],
    )
}

/// 4 packages × 2 cores × 2 threads, one NUMA node and L3 per package,
/// CPUs numbered round robin over packages like many BIOSes do
/// (package p, core c, thread t → CPU 8t + 4c... here: p + 4c + 8t).
pub fn four_socket_numa() -> Topology {
    let mut pus = Vec::new();
    for p in 0..4 {
        for c in 0..2 {
            for t in 0..2 {
                let cpu = p + 4 * c + 8 * t;
                let core = p * 2 + c;
                pus.push(pu(cpu, p, p as u32, p, core, core, 0));
            }
        }
    }
    build("4s2c2t", pus, one_kind())
}

/// One package, 4 cores × 2 threads, siblings numbered Intel style
/// (core c = CPUs c and c+4), a single kind.
pub fn smt_machine() -> Topology {
    let pus = (0..8)
        .map(|cpu| pu(cpu, 0, 0, 0, cpu % 4, cpu % 4, 0))
        .collect();
    build("1s4c2t", pus, one_kind())
}

/// Like [`smt_machine`] with siblings adjacent (core c = 2c, 2c+1), CPU 3
/// offline and CPUs 6-7 forbidden by the cgroup.
pub fn offline_and_cgroup() -> Topology {
    let pus = (0..8)
        .map(|cpu| {
            let mut p = pu(cpu, 0, 0, 0, cpu / 2, cpu / 2, 0);
            p.online = cpu != 3;
            p.allowed = cpu < 6;
            p
        })
        .collect();
    build("1s4c2t-offline-cgroup", pus, one_kind())
}

/// A three-cluster ARM phone: 4 × Cortex-A55 (0-3, capacity 414), 3 ×
/// Cortex-A78 (4-6, 946), 1 × Cortex-X1 (7, 1024); L2 per core, one L3.
pub fn arm_phone() -> Topology {
    let mut pus = Vec::new();
    for cpu in 0..8 {
        let (kind, cap, mhz) = match cpu {
            0..=3 => (0, 414, 2000),
            4..=6 => (1, 946, 2600),
            _ => (2, 1024, 3000),
        };
        let mut p = pu(cpu, 0, 0, 0, cpu, cpu, kind);
        p.capacity = Some(cap);
        p.max_mhz = Some(mhz);
        pus.push(p);
    }
    let mut t = build(
        "arm-1+3+4",
        pus,
        vec![
            KindDesc {
                name: "Cortex-A55",
                mark: "0",
                core_type: None,
                max_mhz: Some(2000),
                capacity_raw: Some(414),
            },
            KindDesc {
                name: "Cortex-A78",
                mark: "1",
                core_type: None,
                max_mhz: Some(2600),
                capacity_raw: Some(946),
            },
            KindDesc {
                name: "Cortex-X1",
                mark: "2",
                core_type: None,
                max_mhz: Some(3000),
                capacity_raw: Some(1024),
            },
        ],
    );
    t.arch = Some("aarch64".into());
    for k in &mut t.kinds {
        k.source = KindSource::Midr;
        k.rank_source = RankSource::Capacity;
    }
    t
}

/// Compares `actual` with the insta snapshot `tests/snapshots/<name>.snap`
/// (`name` without `.txt`). A changed output fails the test and leaves a
/// `.snap.new` beside it; accept it with `cargo insta review` after reading
/// the diff — a snapshot is a claim that its content is right.
pub fn golden(name: &str, actual: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let name = name.trim_end_matches(".txt");
    settings.bind(|| insta::assert_snapshot!(name, actual));
}

/// One invocation: policy text, threads/tasks, oversubscribe.
pub struct Case(pub &'static str, pub Option<usize>, pub bool);

pub const EVERY_POLICY: &[Case] = &[
    Case("os", None, false),
    Case("p-set", None, false),
    Case("e-set", None, false),
    Case("p-pinned", None, false),
    Case("e-pinned", None, false),
    Case("p-first", None, false),
    Case("e-first", None, false),
    Case("p-first+smt-physical-first", None, false),
    Case("e-first+smt-physical-first", None, false),
    Case("smt-physical-first", None, false),
    Case("compact", None, false),
    Case("compact+smt-physical-first", None, false),
    Case("scatter", None, false),
    Case("kind:0", None, false),
    Case("kind-set:0", None, false),
    Case("cpus:0-3", None, false),
    Case("cpus-set:0-3", None, false),
    Case("cpus:0-3+smt-physical-first", None, false),
    Case("balance", Some(100), false),
];

/// The command line's count: ` --tasks N` for `balance`, else
/// ` --threads N`; nothing without a count.
pub fn count_flag(policy: &str, n: Option<usize>) -> String {
    let flag = if policy.starts_with("balance") {
        "tasks"
    } else {
        "threads"
    };
    n.map(|n| format!(" --{flag} {n}")).unwrap_or_default()
}

pub fn run_cases(topo: &Topology, extra: &[Case]) -> String {
    let mut out = String::new();
    for Case(policy, threads, over) in EVERY_POLICY.iter().chain(extra) {
        let cmd = format!(
            "pinsight plan {policy}{}{}",
            count_flag(policy, *threads),
            if *over { " --oversubscribe" } else { "" }
        );
        out.push_str(&format!("== {cmd}\n"));
        let req = Request {
            threads: *threads,
            oversubscribe: *over,
            ..Request::new(policy.parse::<Policy>().unwrap())
        };
        match plan(topo, &req) {
            Ok(p) => {
                out.push_str(&render(&p, topo, Format::Table).unwrap().text);
                if p.pinned && p.tasks_per_cpu.is_none() {
                    out.push_str(&render(&p, topo, Format::Gomp).unwrap().text);
                }
            }
            Err(e) => out.push_str(&format!("error: {e}\n")),
        }
        out.push('\n');
    }
    out
}

/// A latency matrix for the i7-1370P shaped like measured ones: SMT
/// siblings 5 ns, E-cores sharing an L2 20 ns, P to P 40 ns, E to E across
/// clusters 50 ns, P to E 60 ns.
pub fn i7_latency() -> pinsight_latency_model::LatencyMatrix {
    let t = i7_1370p();
    let mut m = pinsight_latency_model::LatencyMatrix::new((0..20).collect());
    let l2 = |c: usize| t.caches_at(2).position(|x| x.cpus.contains(c));
    for a in 0..20 {
        for b in 0..a {
            let ns = if t.siblings(a).contains(b) {
                5.0
            } else if a >= 12 && b >= 12 {
                if l2(a) == l2(b) {
                    20.0
                } else {
                    50.0
                }
            } else if a < 12 && b < 12 {
                40.0
            } else {
                60.0
            };
            m.set(a, b, ns);
        }
    }
    m
}
