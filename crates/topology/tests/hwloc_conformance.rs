//! Conformance with hwloc's own test suite: for every recorded machine in
//! `tests/fixtures/hwloc/` (`NAME.tar.bz2` as hwloc ships it, unpacked by
//! `pinsight_testkit::fixtures`; BSD licence: see COPYING-hwloc there),
//! pinsight's discovery must find the same usable CPUs, cores, packages, L2
//! and L3 sharing sets, NUMA nodes and kinds (in rank order) as hwloc's
//! expected output (`NAME.console` or `NAME.xml`, named by `NAME.test`).
//!
//! Everything is compared as CPU sets restricted to the usable CPUs (online
//! and allowed by the cgroup), because that is what lstopo shows by default:
//! objects without an allowed CPU disappear, except NUMA nodes kept for
//! their allowed memory.

use crate::common;

use common::hwloc_expected::{load, Expected};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use pinsight_topology::discover;

/// Sorted, non-empty restrictions of `sets` to `usable`.
fn restrict<'a>(sets: impl Iterator<Item = &'a CpuSet>, usable: &CpuSet) -> Vec<CpuSet> {
    let mut v: Vec<CpuSet> = sets
        .map(|s| s.intersection(usable))
        .filter(|s| !s.is_empty())
        .collect();
    v.sort_by_key(|s| s.first());
    v
}

fn sorted(v: &[CpuSet]) -> Vec<CpuSet> {
    let mut v: Vec<CpuSet> = v.iter().filter(|s| !s.is_empty()).cloned().collect();
    v.sort_by_key(|s| s.first());
    v
}

fn check(name: &str) -> Topology {
    let dir = common::fixtures().join("hwloc");
    let (exp, options) = load(&dir, name);
    let fs = FsRoot::at(common::hwloc(name)).expect("fixture directory");
    let topo = discover(&fs);
    let usable = topo.usable();
    let ctx = |what: &str| format!("{name}: {what} (warnings: {:?})", topo.warnings);

    assert_eq!(usable, exp.pus, "{}", ctx("usable CPUs"));

    // `--filter all:structure` removes objects that add no structure (a
    // core of one PU, an L2 equal to it): compare only types still shown.
    let filtered = options.contains("--filter");
    let shown = |ty: &str| !filtered || exp.saw(ty);
    // Our sets (restricted to the usable CPUs) against hwloc's.
    let same = |what: &str, ours: Vec<CpuSet>, theirs: &[CpuSet]| {
        assert_eq!(ours, sorted(theirs), "{}", ctx(what));
    };
    if shown("Core") {
        same(
            "cores",
            restrict(topo.cores.iter().map(|g| &g.cpus), &usable),
            &exp.cores,
        );
    }
    same(
        "packages",
        restrict(topo.packages.iter().map(|g| &g.cpus), &usable),
        &exp.packages,
    );
    if shown("L2Cache") {
        same(
            "L2 caches",
            restrict(topo.caches_at(2).map(|c| &c.cpus), &usable),
            &exp.l2,
        );
    }
    if shown("L3Cache") {
        same(
            "L3 caches",
            restrict(topo.caches_at(3).map(|c| &c.cpus), &usable),
            &exp.l3,
        );
    }

    check_numa(name, &topo, &exp, &usable);
    check_kinds(name, &topo, &exp, &usable);
    check_invariants(name, &topo);
    topo
}

/// Every NUMA node hwloc shows exists, local to the same usable CPUs (the
/// object hwloc nests it under: its own CPUs, or for a memory-only node
/// those of its initiators or nearest nodes). hwloc hides nodes whose
/// memory the cgroup disallows (`cpuset.mems`), even when they hold allowed
/// CPUs (`16amd64-4n4c-cgroup-distance-merge`: node 0 holds the allowed
/// CPUs 0-3 but `mems` is 2-3): pinsight keeps them listed, marked not
/// allowed, and every node hwloc shows is allowed.
fn check_numa(name: &str, topo: &Topology, exp: &Expected, usable: &CpuSet) {
    for (id, cpus) in &exp.numa {
        let ours = topo.numa_nodes.iter().find(|n| n.id == *id);
        let ours = ours.unwrap_or_else(|| {
            panic!(
                "{name}: NUMA node {id} missing; ours: {:?}",
                topo.numa_nodes
            )
        });
        assert_eq!(
            &ours.memory.locality.intersection(usable),
            cpus,
            "{name}: NUMA node {id} locality ({:?})",
            ours.memory.locality_source
        );
        if !ours.cpus.is_empty() {
            assert_eq!(&ours.cpus.intersection(usable), cpus, "{name}: node {id}");
        }
        assert!(ours.memory.allowed, "{name}: node {id} shown by hwloc");
    }
    for n in &topo.numa_nodes {
        if !exp.numa.iter().any(|(id, _)| *id == n.id) {
            assert!(
                !n.memory.allowed,
                "{name}: NUMA node {} ({}) is not in hwloc's output but allowed",
                n.id, n.cpus
            );
        }
    }
}

/// Kinds as CPU sets in rank order. hwloc lists no kind when it has no
/// information; pinsight then has exactly one kind over every usable CPU.
/// When hwloc's kinds leave CPUs out (cpufreq exists for cpu0 only on
/// `2arm-2c`, so hwloc puts only cpu0 in a kind), pinsight's same-rank kind
/// must contain hwloc's: a CPU without data joins the machine's only kind
/// rather than being left kind-less (the model gives every online CPU a kind).
fn check_kinds(name: &str, topo: &Topology, exp: &Expected, usable: &CpuSet) {
    let ours: Vec<CpuSet> = topo
        .kinds
        .iter()
        .map(|k| k.cpus.intersection(usable))
        .collect();
    if exp.kinds.is_empty() {
        assert_eq!(
            ours,
            vec![usable.clone()],
            "{name}: one kind expected, got {:?}",
            topo.kinds
        );
        return;
    }
    assert_eq!(
        ours.len(),
        exp.kinds.len(),
        "{name}: number of kinds: {:?}",
        topo.kinds
    );
    let covered = exp.kinds.iter().fold(CpuSet::new(), |a, k| a.union(k));
    for (rank, (o, e)) in ours.iter().zip(&exp.kinds).enumerate() {
        if &covered == usable {
            assert_eq!(o, e, "{name}: kind of rank {rank}");
        } else {
            assert!(
                e.is_subset(o),
                "{name}: kind of rank {rank}: hwloc {e} not within ours {o}"
            );
        }
    }
}

/// Structural invariants every model must satisfy.
fn check_invariants(name: &str, topo: &Topology) {
    let online = topo.online();
    for (what, groups) in [
        ("cores", &topo.cores),
        ("packages", &topo.packages),
        ("dies", &topo.dies),
        ("clusters", &topo.clusters),
    ] {
        let mut seen = CpuSet::new();
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(g.id, i, "{name}: {what} ids dense");
            assert!(
                g.cpus.is_subset(&online),
                "{name}: {what} hold online CPUs only"
            );
            assert!(!g.cpus.intersects(&seen), "{name}: {what} overlap");
            seen.union_with(&g.cpus);
        }
        assert!(
            groups
                .windows(2)
                .all(|w| w[0].cpus.first() < w[1].cpus.first()),
            "{name}: {what} ordered"
        );
        if what == "cores" || what == "packages" {
            assert_eq!(seen, online, "{name}: {what} cover the online CPUs");
        }
    }
    for c in &topo.cpus {
        if !c.online {
            assert!(
                c.core.is_none() && c.package.is_none() && c.kind.is_none(),
                "{name}: offline cpu{} in a group",
                c.id
            );
        } else {
            let core = c.core.expect("online CPU has a core");
            assert!(topo.cores[core].cpus.contains(c.id));
            let kind = c.kind.expect("online CPU has a kind");
            assert!(topo.kinds[kind].cpus.contains(c.id));
        }
    }
    for (i, k) in topo.kinds.iter().enumerate() {
        assert_eq!(k.rank, i, "{name}: kinds in rank order");
    }
    if let Some(d) = &topo.numa_distances {
        assert_eq!(d.len(), topo.numa_nodes.len());
        assert!(d.iter().all(|row| row.len() == topo.numa_nodes.len()));
    }
}

macro_rules! machines {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*

        /// Every `.test` file in the fixture directory has a test above.
        #[test]
        fn every_fixture_is_tested() {
            let names = [$($name),*];
            let dir = common::fixtures().join("hwloc");
            for e in std::fs::read_dir(&dir).unwrap() {
                let f = e.unwrap().file_name().to_string_lossy().into_owned();
                if let Some(n) = f.strip_suffix(".test") {
                    assert!(names.contains(&n), "fixture {n} has no conformance test");
                }
            }
        }
    };
}

machines! {
    pci_localities => "fakepcilocalities",
    cgroup_distance_merge_16amd64 => "16amd64-4n4c-cgroup-distance-merge",
    cpusets_16amd64_8n2c => "16amd64-8n2c-cpusets",
    numa_16amd64_8n2c => "16amd64-8n2c",
    offlines_16em64t => "16em64t-4s2c2t-offlines",
    uma_16em64t => "16em64t-4s2c2t",
    hybrid_20em64t_raptorlake => "20em64t-hybrid-1p6c2t+2ca4co1t",
    power7_256ppc => "256ppc-8n8s4t",
    arm_2c => "2arm-2c",
    cgroup2_32amd64 => "32amd64-4s2n4c-cgroup2",
    vector_engines_32intel64 => "32intel64-2p8co2t+8ve",
    sparse_48amd64 => "48amd64-4pa2n6c-sparse",
    bulldozer_64amd64 => "64amd64-4s2n4ca2co",
    buggy_numa_8em64t => "8em64t-2s2ca2c-buggynuma",
    dual_die_8em64t => "8em64t-2s2ca2c",
    asymmetric_caches_8em64t => "8em64t-2s4c-asymcaches",
    cpuid1f_dies_64intel64 => "fakecpuid1f-64intel64-2p4d2n2c2t",
    memory_side_caches => "memorysidecaches",
    heterogeneous_memory_tiers => "fakeheteromemtiers",
    dax_nvme_32em64t => "32em64t-2n8c+dax+nvme+mic+dimms",
    offline_cpu0_node0 => "offline-cpu0-node0",
}

/// Every recorded machine shipped in the fixture directory (found by
/// listing it, so a machine added later is covered without touching this
/// file) conforms; the named tests above say which one failed faster.
#[test]
fn every_recorded_machine_conforms() {
    let dir = common::fixtures().join("hwloc");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let f = e.unwrap().file_name().to_string_lossy().into_owned();
            f.strip_suffix(".test").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 18, "fixtures missing: {names:?}");
    for name in &names {
        check(name);
    }
}

/// Details hwloc's output does not show but the model must get right.
#[test]
fn hybrid_raptorlake_kinds_are_named_and_ranked_by_frequency() {
    let t = check("20em64t-hybrid-1p6c2t+2ca4co1t");
    assert_eq!(t.kinds.len(), 2);
    assert_eq!(t.kinds[0].max_mhz, Some(3900));
    assert_eq!(
        t.kinds[1].max_mhz,
        Some(5200),
        "favoured cores (5200) and others (5000) are one kind"
    );
    assert_eq!(t.kinds[1].base_mhz, Some(1900));
    assert_eq!(
        t.model_name.as_deref(),
        Some("13th Gen Intel(R) Core(TM) i7-1370P")
    );
    assert_eq!(t.arch.as_deref(), Some("x86_64"));
}

#[test]
fn cpufreq_on_cpu0_only_stays_missing_elsewhere() {
    let t = check("2arm-2c");
    assert_eq!(t.cpu(0).unwrap().max_mhz, Some(800));
    assert_eq!(t.cpu(1).unwrap().max_mhz, None);
    assert_eq!(t.arch.as_deref(), Some("arm"));
}

#[test]
fn offline_cpus_are_listed_but_in_no_group() {
    let t = check("offline-cpu0-node0");
    let c0 = t.cpu(0).expect("cpu0 listed");
    assert!(!c0.online);
    assert!(c0.core.is_none() && c0.numa.is_none());
    assert_eq!(t.numa_nodes.len(), 1, "offline node0 is not a node");
}

#[test]
fn buggy_numa_merges_duplicate_nodes_with_a_warning() {
    let t = check("8em64t-2s2ca2c-buggynuma");
    assert_eq!(t.numa_nodes.len(), 1);
    common::assert_warned(&t, &["merged"]);
}

#[test]
fn sparse_numa_ids_and_distances_follow_node_order() {
    let t = check("48amd64-4pa2n6c-sparse");
    let ids: Vec<u32> = t.numa_nodes.iter().map(|n| n.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let d = t.numa_distances.as_ref().expect("distances");
    assert!(d.iter().enumerate().all(|(i, row)| row[i] == 10));
}

#[test]
fn clean_fixtures_give_no_warnings() {
    for name in [
        "16em64t-4s2c2t",
        "20em64t-hybrid-1p6c2t+2ca4co1t",
        "64amd64-4s2n4ca2co",
        "256ppc-8n8s4t",
    ] {
        let t = discover(&FsRoot::at(common::hwloc(name)).unwrap());
        assert!(t.warnings.is_empty(), "{name}: {:?}", t.warnings);
    }
}
