//! Rank slices on recorded machines (hwloc's test dumps, discovered as
//! `pinsight --fsroot DIR` does): equal capacity on the hybrid laptop, NUMA
//! nodes kept whole, and properties over random machines and rank counts.

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_plan::slice::{restrict, slices, SliceError, SliceRequest, SliceRule};
use pinsight_plan::{plan, Request};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use proptest::prelude::*;

fn fixture(rel: &str) -> Topology {
    let dir = pinsight_testkit::fixtures::hwloc(rel);
    discover(&FsRoot::at(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())))
}

fn req(topo: &Topology, size: usize, rule: SliceRule) -> SliceRequest {
    SliceRequest {
        allowed: topo.usable(),
        size,
        rule,
        weights: None,
    }
}

fn lists(s: &pinsight_plan::Slicing) -> Vec<String> {
    s.slices.iter().map(|x| x.cpus.to_list_string()).collect()
}

const HYBRID: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";

fn check_cover(t: &Topology, s: &pinsight_plan::Slicing, allowed: &CpuSet) {
    let mut all = CpuSet::new();
    for x in &s.slices {
        assert!(!x.cpus.is_empty(), "empty slice {x:?}");
        assert!(!all.intersects(&x.cpus), "slices overlap: {:?}", lists(s));
        all.union_with(&x.cpus);
    }
    assert_eq!(all, allowed.intersection(&t.usable()), "{:?}", lists(s));
}

#[test]
fn hybrid_laptop_two_and_four_ways_equal_capacity() {
    // i7-1370P: 6 P-cores x 2 threads (CPUs 0-11) + 8 E-cores (12-19) at
    // 0.58 of a P-core (the topology's one capacity: CPPC highest_perf
    // 39 vs 67, as `topo` prints it).
    let t = fixture(HYBRID);
    let s = slices(&t, &req(&t, 2, SliceRule::EqualCapacity)).unwrap();
    assert_eq!(lists(&s), ["0-7", "8-19"]);
    assert!(s.spread <= s.cpu_capacity, "spread {}", s.spread);
    assert!(!s.cores_split, "{:?}", s.broken);
    let s4 = slices(&t, &req(&t, 4, SliceRule::EqualCapacity)).unwrap();
    assert!(
        s4.spread <= s4.cpu_capacity,
        "{:?} spread {}",
        lists(&s4),
        s4.spread
    );
    assert_eq!(s4.cpu_capacity, 1.0);
    check_cover(&t, &s, &t.usable());
    check_cover(&t, &s4, &t.usable());
    // Equal count: 10 CPUs each, so rank 1 gets all the E-cores.
    let c = slices(&t, &req(&t, 2, SliceRule::EqualCount)).unwrap();
    assert_eq!(lists(&c), ["0-9", "10-19"]);
    assert!(c.spread > 1.0, "equal count is unequal in capacity");
    assert!(!c.cores_split);
    // P only: three whole P-cores each, the E-cores left out with a note.
    let p = slices(&t, &req(&t, 2, SliceRule::POnly)).unwrap();
    assert_eq!(lists(&p), ["0-5", "6-11"]);
    assert!(p.notes[0].contains("12-19"), "{:?}", p.notes);
}

#[test]
fn numa_machines_keep_nodes_whole_when_the_count_divides() {
    for (f, n) in [
        ("16amd64-8n2c", 4),
        ("16amd64-8n2c", 8),
        ("64amd64-4s2n4ca2co", 4),
        ("64amd64-4s2n4ca2co", 8),
        ("256ppc-8n8s4t", 4),
        ("256ppc-8n8s4t", 8),
    ] {
        let t = fixture(f);
        let s = slices(&t, &req(&t, n, SliceRule::EqualCapacity)).unwrap();
        check_cover(&t, &s, &t.usable());
        assert!(s.broken.is_empty(), "{f} {n}: broke {:?}", s.broken);
        for node in &t.numa_nodes {
            let holders = s
                .slices
                .iter()
                .filter(|x| x.cpus.intersects(&node.cpus))
                .count();
            assert_eq!(
                holders,
                1,
                "{f} {n}: node {} split: {:?}",
                node.id,
                lists(&s)
            );
        }
    }
    // 8 nodes of 2 cores, 3 ranks: nodes cannot all stay whole; the counts
    // still differ by at most one CPU.
    let t = fixture("16amd64-8n2c");
    let s = slices(&t, &req(&t, 3, SliceRule::EqualCapacity)).unwrap();
    let n: Vec<usize> = s.slices.iter().map(|x| x.cpus.len()).collect();
    assert!(
        n.iter().max().unwrap() - n.iter().min().unwrap() <= 1,
        "{n:?}"
    );
}

#[test]
fn errors_are_typed_and_say_how_much() {
    let t = fixture("16amd64-8n2c");
    let e = slices(&t, &req(&t, 17, SliceRule::EqualCapacity)).unwrap_err();
    assert!(
        matches!(e, SliceError::TooManyRanks { size: 17, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("at most 16"), "{e}");
    assert_eq!(
        slices(&t, &req(&t, 0, SliceRule::EqualCount)).unwrap_err(),
        SliceError::ZeroSize
    );
    let s = slices(&t, &req(&t, 2, SliceRule::EqualCount)).unwrap();
    let e = s.slice(2).unwrap_err();
    assert!(
        e.to_string()
            .contains("local rank 2 is not below the local size 2"),
        "{e}"
    );
    // Weights: one heavy CPU; the split stays within one CPU of equal.
    let mut w = std::collections::BTreeMap::new();
    for c in 0..16 {
        w.insert(c, if c == 0 { 100.0 } else { 1.0 });
    }
    let r = SliceRequest {
        weights: Some(pinsight_plan::Weights { by_cpu: w }),
        ..req(&t, 2, SliceRule::EqualCapacity)
    };
    let s = slices(&t, &r).unwrap();
    assert_eq!(
        s.capacity_source,
        pinsight_plan::balance::CapacitySource::Weights
    );
    assert_eq!(s.slices[0].cpus.first(), Some(0));
    assert!(s.spread <= 100.0);
    // The allowed CPUs (the launcher's binding) are all that is sliced.
    let allowed: CpuSet = "4-11".parse().unwrap();
    let s = slices(
        &t,
        &SliceRequest {
            allowed: allowed.clone(),
            ..req(&t, 2, SliceRule::EqualCapacity)
        },
    )
    .unwrap();
    assert_eq!(lists(&s), ["4-7", "8-11"]);
}

#[test]
fn planning_inside_a_slice_uses_the_slices_fastest_kind() {
    let t = fixture(HYBRID);
    let s = slices(&t, &req(&t, 2, SliceRule::EqualCount)).unwrap();
    // Rank 1's slice holds one P-core's CPUs and every E-core.
    let inside = restrict(&t, &s.slices[1].cpus);
    let p = plan(&inside, &Request::new("p-pinned".parse().unwrap())).unwrap();
    assert!(p.process_mask.is_subset(&s.slices[1].cpus));
    assert_eq!(p.process_mask.to_list_string(), "10-11");
    // An E-only slice: p-pinned is its E-cores, one thread per core.
    let e_only: CpuSet = "12-19".parse().unwrap();
    let inside = restrict(&t, &e_only);
    assert_eq!(inside.kinds.len(), 1);
    let p = plan(&inside, &Request::new("p-pinned".parse().unwrap())).unwrap();
    assert_eq!(p.places.len(), 8);
    assert_eq!(p.process_mask, e_only);
}

fn machines() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        HYBRID,
        "16amd64-8n2c",
        "16em64t-4s2c2t",
        "64amd64-4s2n4ca2co",
        "48amd64-4pa2n6c-sparse",
        "8em64t-2s4c-asymcaches",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn slices_are_disjoint_cover_and_are_as_equal_as_a_cpu(
        f in machines(),
        mask in any::<u64>(),
        size in 1usize..10,
        rule in prop::sample::select(vec![SliceRule::EqualCapacity, SliceRule::EqualCount, SliceRule::POnly]),
    ) {
        let t = fixture(f);
        let usable = t.usable();
        let allowed: CpuSet = usable.iter().filter(|c| mask >> (c % 64) & 1 == 1).collect();
        prop_assume!(!allowed.is_empty());
        let r = SliceRequest { allowed: allowed.clone(), size, rule, weights: None };
        match slices(&t, &r) {
            Ok(s) => {
                prop_assert_eq!(s.slices.len(), size);
                if rule == SliceRule::POnly {
                    let all: CpuSet = s.slices.iter().flat_map(|x| x.cpus.iter()).collect();
                    prop_assert!(all.is_subset(&allowed));
                    if let Some(k) = t.fastest_kind().filter(|_| t.is_heterogeneous()) {
                        prop_assert!(all.is_subset(&k.cpus));
                    }
                } else {
                    check_cover(&t, &s, &allowed);
                }
                // Relative capacities (0.58 ...) add up with float error.
                // Equal COUNT promises counts, not capacity: with E-cores
                // at 0.58 (CPPC, the one capacity) a masked i7 can differ
                // by more than a CPU per slice.
                prop_assert!(rule == SliceRule::EqualCount || s.spread <= s.cpu_capacity * (size as f64) + 1e-6, "{} > {} x {}", s.spread, s.cpu_capacity, size);
                if rule == SliceRule::EqualCount || !t.is_heterogeneous() {
                    // Equal CPUs: counts always within one.
                    let n: Vec<usize> = s.slices.iter().map(|x| x.cpus.len()).collect();
                    prop_assert!(n.iter().max().unwrap() - n.iter().min().unwrap() <= 1, "{:?}", n);
                }
            }
            Err(SliceError::TooManyRanks { size: n, cpus }) => prop_assert!(n > cpus.len()),
            Err(SliceError::Unequal { spread, cpu_capacity, .. }) => {
                prop_assert!(t.is_heterogeneous() && rule == SliceRule::EqualCapacity);
                prop_assert!(spread > cpu_capacity);
            }
            Err(SliceError::NoFastCpus { .. }) => prop_assert_eq!(rule, SliceRule::POnly),
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}

/// Every launcher line for every rank count on recorded machines (goldens:
/// tests/snapshots/slice__launcher_lines.snap).
#[test]
fn launcher_lines() {
    use pinsight_plan::format::{launcher_line, Dialect, DIALECT_NAMES};
    let mut out = String::new();
    for (f, sizes) in [
        (HYBRID, &[2usize, 4, 20][..]),
        ("16amd64-8n2c", &[2, 4][..]),
        ("16em64t-4s2c2t", &[2][..]),
    ] {
        let t = fixture(f);
        for &n in sizes {
            let s = slices(&t, &req(&t, n, SliceRule::EqualCapacity)).unwrap();
            let cpus: Vec<CpuSet> = s.slices.iter().map(|x| x.cpus.clone()).collect();
            out.push_str(&format!("== {f}, {n} ranks: {:?}\n", lists(&s)));
            for name in DIALECT_NAMES {
                let d: Dialect = name.parse().unwrap();
                out.push_str(&format!("[{name}]\n{}", launcher_line(d, &cpus)));
            }
        }
    }
    assert!("mpich-x".parse::<Dialect>().is_err());
    insta::assert_snapshot!("launcher_lines", out);
}
