//! Hostile sharing masks on real recorded machines (all-zero or foreign
//! masks, overlapping caches): each test copies a machine from hwloc's test set into a
//! temporary directory, alters the files in question and compares the
//! model with the unaltered machine's.
//!
//! - an all-zero `shared_cpu_map` shares the cache among the core's SMT
//!   siblings (hwloc's rule), with a warning naming the file;
//! - a package mask that names another package, or an L3 map that overlaps
//!   another L3, is outvoted by the masks and lists of the CPUs involved:
//!   packages and each cache level/type still partition the CPUs, and a
//!   warning names the file that lost.

use crate::common;
use crate::common::set;

use pinsight_cpuset::CpuSet;
use pinsight_model::{CacheType, Topology};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use proptest::prelude::*;
use std::path::Path;

const CPU: &str = "sys/devices/system/cpu";

use pinsight_testkit::copy_tree;
/// A copy of the recorded machine `name` and its unaltered model.
fn copy(name: &str) -> (tempfile::TempDir, Topology) {
    let src = common::hwloc(name);
    let dir = common::tempdir();
    copy_tree(&src, dir.path());
    let before = discover(&FsRoot::at(&src).unwrap());
    (dir, before)
}

fn write(dir: &Path, rel: &str, text: &str) {
    std::fs::write(dir.join(CPU).join(rel), text).unwrap();
}

/// (level, type, CPUs) of every cache instance, in the model's order
/// (level, type, first CPU).
fn caches(t: &Topology) -> Vec<(u8, CacheType, CpuSet)> {
    t.caches
        .iter()
        .map(|c| (c.level, c.cache_type, c.cpus.clone()))
        .collect()
}

fn packages(t: &Topology) -> Vec<CpuSet> {
    t.packages.iter().map(|g| g.cpus.clone()).collect()
}

fn warned<'a>(t: &'a Topology, file: &str) -> Option<&'a String> {
    t.warnings.iter().find(|w| w.contains(file))
}

/// Cores and packages partition the online CPUs; the instances of each
/// cache level/type are disjoint.
fn assert_partitions(t: &Topology) {
    let online = t.online();
    for (what, groups) in [("cores", &t.cores), ("packages", &t.packages)] {
        let mut seen = CpuSet::new();
        for g in groups.iter() {
            assert!(!g.cpus.intersects(&seen), "{what} overlap: {groups:?}");
            seen.union_with(&g.cpus);
        }
        assert_eq!(seen, online, "{what} cover the online CPUs");
    }
    for a in &t.caches {
        for b in &t.caches {
            if std::ptr::eq(a, b) || a.level != b.level || a.cache_type != b.cache_type {
                continue;
            }
            assert!(
                !a.cpus.intersects(&b.cpus),
                "L{} {:?} instances {} and {} overlap",
                a.level,
                a.cache_type,
                a.cpus,
                b.cpus
            );
        }
    }
}

#[test]
fn all_zero_shared_cpu_maps_are_shared_by_the_core() {
    // Xeon, 4 packages x 2 cores x 2 threads: cpu0 and cpu8 are one core
    // with private L1d/L1i; the L2 (index2) is shared with cpu4/cpu12.
    let (dir, before) = copy("16em64t-4s2c2t");
    for cpu in [0, 8] {
        for idx in 0..3 {
            write(
                dir.path(),
                &format!("cpu{cpu}/cache/index{idx}/shared_cpu_map"),
                "00000000,00000000\n",
            );
        }
    }
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(caches(&t), caches(&before), "warnings: {:?}", t.warnings);
    let l1d = t
        .caches
        .iter()
        .find(|c| c.level == 1 && c.cache_type == CacheType::Data && c.cpus.contains(0))
        .unwrap();
    assert_eq!(l1d.cpus, set("0,8"), "the core's two threads share its L1d");
    let w = warned(&t, "cpu0/cache/index0/shared_cpu_map").expect("a warning names the file");
    assert!(w.contains("all zeros") && w.contains("core"), "{w}");
    assert!(warned(&t, "cpu8/cache/index1/shared_cpu_map").is_some());
    assert_partitions(&t);
}

#[test]
fn all_zero_map_and_empty_list_share_the_cache_with_the_smt_sibling() {
    // The same machine, both files of cpu8's L1d emptied: still shared.
    let (dir, before) = copy("16em64t-4s2c2t");
    for idx in 0..2 {
        write(
            dir.path(),
            &format!("cpu0/cache/index{idx}/shared_cpu_map"),
            "0\n",
        );
        write(
            dir.path(),
            &format!("cpu8/cache/index{idx}/shared_cpu_map"),
            "00000000,00000000\n",
        );
        std::fs::write(
            dir.path()
                .join(CPU)
                .join(format!("cpu8/cache/index{idx}/shared_cpu_list")),
            "\n",
        )
        .unwrap();
    }
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(caches(&t), caches(&before), "warnings: {:?}", t.warnings);
    assert!(warned(&t, "cpu0/cache/index1/shared_cpu_map").is_some());
}

#[test]
fn a_package_mask_naming_another_package_is_outvoted() {
    // Opteron, 4 packages of 4 CPUs; cpu0's core_siblings mask names
    // package 1 while its own core_siblings_list and its mates say 0-3.
    let (dir, before) = copy("16amd64-4n4c-cgroup-distance-merge");
    let pkg1 =
        std::fs::read_to_string(dir.path().join(CPU).join("cpu4/topology/core_siblings")).unwrap();
    write(dir.path(), "cpu0/topology/core_siblings", &pkg1);
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(
        packages(&t),
        packages(&before),
        "warnings: {:?}",
        t.warnings
    );
    assert_eq!(packages(&t)[0], set("0-3"));
    let w = warned(&t, "cpu0/topology/core_siblings:").expect("a warning names the mask");
    assert!(w.contains("majority") && w.contains("0-3"), "{w}");
    assert!(
        warned(&t, "core_siblings_list").is_none(),
        "the list agreed with the majority: {:?}",
        t.warnings
    );
    assert_partitions(&t);
}

#[test]
fn an_l3_map_overlapping_another_l3_is_outvoted() {
    // The same machine: one L3 per package (0-3, 4-7, ...); cpu4's map and
    // list claim 0-7, overlapping package 0's L3.
    let (dir, before) = copy("16amd64-4n4c-cgroup-distance-merge");
    let wide = std::fs::read_to_string(
        dir.path()
            .join(CPU)
            .join("cpu0/cache/index3/shared_cpu_map"),
    )
    .unwrap()
    .replace("0000000f", "000000ff");
    write(dir.path(), "cpu4/cache/index3/shared_cpu_map", &wide);
    write(dir.path(), "cpu4/cache/index3/shared_cpu_list", "0-7\n");
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(caches(&t), caches(&before), "warnings: {:?}", t.warnings);
    let l3: Vec<CpuSet> = t.caches_at(3).map(|c| c.cpus.clone()).collect();
    assert!(
        l3.contains(&set("0-3")) && l3.contains(&set("4-7")),
        "{l3:?}"
    );
    let w = warned(&t, "cpu4/cache/index3/shared_cpu_map").expect("a warning names the map");
    assert!(w.contains("majority") && w.contains("4-7"), "{w}");
    assert_partitions(&t);
}

/// The files one CPU's perturbation may hit, with their format.
const TARGETS: &[(&str, bool)] = &[
    ("topology/core_siblings", true),
    ("topology/core_siblings_list", false),
    ("topology/thread_siblings", true),
    ("cache/index0/shared_cpu_map", true),
    ("cache/index2/shared_cpu_map", true),
    ("cache/index3/shared_cpu_map", true),
    ("cache/index3/shared_cpu_list", false),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// One file of one CPU rewritten to a random set of CPUs: cores,
    /// packages and caches still partition the CPUs; packages and L3s
    /// (four CPUs each, so one file is always outvoted) are unchanged.
    #[test]
    fn one_perturbed_mask_never_breaks_the_partition(
        cpu in 0usize..16,
        target in 0..TARGETS.len(),
        bits in 0u32..0x1_0000,
    ) {
        let (dir, before) = copy("16amd64-4n4c-cgroup-distance-merge");
        let (file, is_mask) = TARGETS[target];
        let s: CpuSet = (0..16).filter(|b| bits & (1 << b) != 0).collect();
        let text = if is_mask { s.to_mask_string() } else { s.to_list_string() };
        write(dir.path(), &format!("cpu{cpu}/{file}"), &format!("{text}\n"));
        let t = discover(&FsRoot::at(dir.path()).unwrap());
        assert_partitions(&t);
        prop_assert_eq!(packages(&t), packages(&before), "{:?}", t.warnings);
        let l3 = |t: &Topology| t.caches_at(3).map(|c| c.cpus.clone()).collect::<Vec<_>>();
        prop_assert_eq!(l3(&t), l3(&before), "{:?}", t.warnings);
    }
}
