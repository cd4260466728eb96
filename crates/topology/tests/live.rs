//! Discovery of the machine the tests run on, and — when hwloc's
//! `lstopo-no-graphics` is installed — agreement with it on CPUs, cores,
//! packages, every cache and NUMA nodes.

use crate::common;

use common::hwloc_expected::parse_xml;
use pinsight_cpuset::CpuSet;
use pinsight_model::{CacheType, Source};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use std::process::Command;

fn sorted(mut v: Vec<CpuSet>) -> Vec<CpuSet> {
    v.retain(|s| !s.is_empty());
    v.sort_by_key(|s| s.first());
    v
}

#[test]
fn live_machine_is_consistent() {
    let t = discover(&FsRoot::live());
    assert_eq!(t.source, Source::Live);
    let online = t.online();
    assert!(
        !online.is_empty(),
        "at least one online CPU; warnings: {:?}",
        t.warnings
    );
    assert!(!t.usable().is_empty());
    assert!(t.arch.is_some());
    let cores = t.cores.iter().fold(CpuSet::new(), |a, g| a.union(&g.cpus));
    let packages = t
        .packages
        .iter()
        .fold(CpuSet::new(), |a, g| a.union(&g.cpus));
    let kinds = t.kinds.iter().fold(CpuSet::new(), |a, k| a.union(&k.cpus));
    assert_eq!(cores, online);
    assert_eq!(packages, online);
    assert_eq!(kinds, online);
    for c in t.cpus.iter().filter(|c| c.online) {
        assert!(
            c.core.is_some() && c.package.is_some() && c.kind.is_some(),
            "cpu{}",
            c.id
        );
    }
    for c in &t.caches {
        assert!(c.cpus.is_subset(&online));
    }
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // available_parallelism is this process's affinity, further cut by a
    // cgroup CPU quota: discovery may never see fewer usable CPUs, nor any
    // that are not online.
    assert!(t.usable().len() >= n, "usable {} < {n}", t.usable());
    assert!(t.usable().is_subset(&online), "usable {}", t.usable());
}

#[test]
fn live_machine_agrees_with_lstopo() {
    let out = match Command::new("lstopo-no-graphics")
        .args(["--of", "xml", "-"])
        .output()
    {
        Ok(o) if o.status.success() => o,
        _ => {
            pinsight_testkit::skip_test!("lstopo-no-graphics is not installed (apt-get install hwloc; .ci/deps does it); comparison skipped");
        }
    };
    let exp = parse_xml(&String::from_utf8_lossy(&out.stdout));
    let t = discover(&FsRoot::live());
    let usable = t.usable();
    assert_eq!(usable, exp.pus, "usable CPUs");
    let restrict =
        |v: Vec<&CpuSet>| sorted(v.into_iter().map(|s| s.intersection(&usable)).collect());
    assert_eq!(
        restrict(t.cores.iter().map(|g| &g.cpus).collect()),
        sorted(exp.cores.clone()),
        "cores"
    );
    assert_eq!(
        restrict(t.packages.iter().map(|g| &g.cpus).collect()),
        sorted(exp.packages.clone()),
        "packages"
    );
    let mut ours: Vec<(u8, char, CpuSet)> = t
        .caches
        .iter()
        .map(|c| {
            let k = match c.cache_type {
                CacheType::Data => 'd',
                CacheType::Instruction => 'i',
                CacheType::Unified => 'u',
            };
            (c.level, k, c.cpus.intersection(&usable))
        })
        .filter(|(_, _, s)| !s.is_empty())
        .collect();
    let mut theirs = exp.caches.clone();
    ours.sort_by_key(|(l, k, s)| (*l, *k, s.first()));
    theirs.sort_by_key(|(l, k, s)| (*l, *k, s.first()));
    assert_eq!(ours, theirs, "caches");
    for (id, cpus) in &exp.numa {
        let n = t
            .numa_nodes
            .iter()
            .find(|n| n.id == *id)
            .expect("NUMA node hwloc shows");
        assert_eq!(&n.cpus.intersection(&usable), cpus, "NUMA node {id}");
    }
    assert_eq!(t.numa_nodes.len(), exp.numa.len(), "NUMA nodes");
}
