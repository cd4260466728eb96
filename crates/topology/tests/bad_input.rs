//! Bad input never panics: a missing root is an error naming it, an empty
//! tree is an empty-but-valid model with a warning saying nothing was found,
//! and garbage in any file is a warning naming that file plus a best-effort
//! model. A proptest writes random bytes into random files of a machine.

use crate::common;

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_sys::{FsRoot, FsRootError};
use pinsight_topology::discover;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// A private copy of a synthetic machine.
fn copy_of(machine: &common::synth::Machine) -> tempfile::TempDir {
    let dir = common::tempdir();
    machine.write(dir.path());
    dir
}

fn hybrid() -> common::synth::Machine {
    common::synth::intel_hybrid_laptop()
}

fn warned_about(t: &Topology, file: &str) -> bool {
    t.warnings.iter().any(|w| w.contains(file))
}

/// Invariants of any model, however bad the input.
fn assert_valid(t: &Topology) {
    let online = t.online();
    for groups in [&t.cores, &t.packages, &t.dies, &t.clusters] {
        let mut seen = CpuSet::new();
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(g.id, i);
            assert!(g.cpus.is_subset(&online) && !g.cpus.intersects(&seen));
            seen.union_with(&g.cpus);
        }
    }
    let kinds = t.kinds.iter().fold(CpuSet::new(), |a, k| a.union(&k.cpus));
    assert_eq!(kinds, online, "every online CPU has exactly one kind");
    assert!(t.cpus.windows(2).all(|w| w[0].id < w[1].id));
    for c in t.cpus.iter().filter(|c| c.online) {
        assert!(c.core.is_some() && c.package.is_some() && c.kind.is_some());
    }
}

#[test]
fn missing_root_is_an_error_naming_it() {
    let e = FsRoot::at("/no/such/machine").unwrap_err();
    assert!(
        matches!(&e, FsRootError::NotADirectory { dir, .. } if dir == Path::new("/no/such/machine")),
        "{e:?}"
    );
    assert!(e.to_string().contains("/no/such/machine"), "{e}");
}

#[test]
fn empty_tree_gives_an_empty_valid_model_and_says_so() {
    let dir = common::tempdir();
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert!(
        t.cpus.is_empty() && t.cores.is_empty() && t.kinds.is_empty() && t.numa_nodes.is_empty()
    );
    common::assert_warned(&t, &["no CPUs found"]);
    assert_valid(&t);
}

#[test]
fn cpu_directories_without_any_topology() {
    let dir = common::tempdir();
    for c in 0..4 {
        std::fs::create_dir_all(dir.path().join(format!("sys/devices/system/cpu/cpu{c}"))).unwrap();
    }
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(t.online().len(), 4);
    assert_eq!(t.cores.len(), 4, "each CPU its own core");
    assert_eq!(
        t.packages.len(),
        1,
        "one package for CPUs we know nothing about"
    );
    assert_eq!(t.kinds.len(), 1);
    assert_eq!(t.numa_nodes.len(), 1, "a kernel without NUMA is one node");
    assert!(warned_about(&t, "cpu0/topology"), "{:?}", t.warnings);
    assert_valid(&t);
}

/// (file, garbage, what must still hold) for each kind of file.
#[test]
fn garbage_in_each_kind_of_file_is_a_warning_naming_it() {
    let cases: &[(&str, &str)] = &[
        ("sys/devices/system/cpu/online", "banana"),
        ("sys/devices/system/cpu/cpu3/online", "maybe"),
        ("sys/devices/system/cpu/cpu2/topology/core_cpus", "xyz"),
        ("sys/devices/system/cpu/cpu2/topology/core_id", "core two"),
        ("sys/devices/system/cpu/cpu0/topology/package_cpus", "0x,,"),
        ("sys/devices/system/cpu/cpu0/cache/index2/level", "second"),
        ("sys/devices/system/cpu/cpu0/cache/index2/type", "Sideways"),
        ("sys/devices/system/cpu/cpu0/cache/index2/size", "big"),
        (
            "sys/devices/system/cpu/cpu0/cache/index2/shared_cpu_map",
            "not a mask",
        ),
        (
            "sys/devices/system/cpu/cpu0/cache/index0/ways_of_associativity",
            "-8",
        ),
        ("sys/devices/system/node/node0/cpumap", "??"),
        (
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal: lots kB",
        ),
        ("sys/devices/system/node/node0/distance", "ten"),
        ("sys/devices/system/node/online", "a-b"),
        (
            "sys/devices/system/cpu/cpu5/cpufreq/cpuinfo_max_freq",
            "fast",
        ),
        ("sys/devices/system/cpu/cpu5/cpufreq/base_frequency", "0"),
        ("sys/devices/cpu_atom/cpus", "8-"),
    ];
    for (file, garbage) in cases {
        let dir = copy_of(&hybrid());
        if file.ends_with("cpu3/online") {
            // Per-CPU online files are read only without the global list.
            std::fs::remove_file(dir.path().join("sys/devices/system/cpu/online")).unwrap();
        }
        let p = dir.path().join(file);
        assert!(p.exists(), "the fixture has {file}");
        std::fs::write(&p, garbage).unwrap();
        let t = discover(&FsRoot::at(dir.path()).unwrap());
        assert!(
            warned_about(&t, &format!("/{file}")),
            "{file}: no warning naming it: {:?}",
            t.warnings
        );
        assert!(
            !t.online().is_empty(),
            "{file}: best-effort model still has CPUs"
        );
        assert_valid(&t);
    }
}

#[test]
fn garbage_in_arm_files_is_a_warning_naming_it() {
    for (file, garbage) in [
        ("sys/devices/system/cpu/cpu4/cpu_capacity", "large"),
        (
            "sys/devices/system/cpu/cpu4/regs/identification/midr_el1",
            "0xZZ",
        ),
    ] {
        let dir = copy_of(&common::synth::arm_phone());
        std::fs::write(dir.path().join(file), garbage).unwrap();
        let t = discover(&FsRoot::at(dir.path()).unwrap());
        assert!(
            warned_about(&t, &format!("/{file}")),
            "{file}: {:?}",
            t.warnings
        );
        assert_valid(&t);
    }
}

#[test]
fn masks_sized_to_nr_cpus_with_trailing_nul() {
    let dir = copy_of(&common::synth::small_smt(|_| (3_000_000, 2_000_000)));
    let words = vec!["00000000"; 255].join(",");
    let p = dir
        .path()
        .join("sys/devices/system/cpu/cpu0/topology/core_cpus");
    std::fs::write(&p, format!("{words},00000011\n\0")).unwrap();
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(t.siblings(0), CpuSet::parse_list("0,4").unwrap());
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn relative_symlinks_are_followed() {
    // cpufreq as a link to the shared policy directory, as kernels do.
    let dir = copy_of(&common::synth::small_smt(|_| (3_000_000, 2_000_000)));
    let cpu = dir.path().join("sys/devices/system/cpu");
    std::fs::create_dir_all(cpu.join("cpufreq/policy1")).unwrap();
    std::fs::write(cpu.join("cpufreq/policy1/cpuinfo_max_freq"), "4200000\n").unwrap();
    std::fs::write(cpu.join("cpufreq/policy1/related_cpus"), "1\n").unwrap();
    std::fs::remove_dir_all(cpu.join("cpu1/cpufreq")).unwrap();
    std::os::unix::fs::symlink("../cpufreq/policy1", cpu.join("cpu1/cpufreq")).unwrap();
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(t.cpu(1).unwrap().max_mhz, Some(4200));
}

/// Every regular file under `dir`, relative.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            // Never follow links: sysfs dumps have cycles (cpuN/node0 ↔ node0/cpuN).
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..48),
        "[0-9a-fx,\\- :\n\0]{0,24}".prop_map(|s| s.into_bytes()),
        Just(b"-1\n".to_vec()),
        Just(b"4294967296\n".to_vec()),
        Just(b"0-4095\n".to_vec()),
        Just(b"ffffffff,ffffffff,ffffffff\n".to_vec()),
        Just(Vec::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random bytes in up to four random files of a hybrid machine (and a
    /// recorded cgroup machine): discovery returns a valid model.
    #[test]
    fn random_garbage_never_panics(
        picks in proptest::collection::vec((any::<prop::sample::Index>(), garbage()), 1..5),
        recorded in any::<bool>(),
    ) {
        let dir = common::tempdir();
        if recorded {
            let src = common::hwloc("16amd64-8n2c-cpusets");
            copy_tree(&src, dir.path());
        } else {
            hybrid().write(dir.path());
        }
        let all = files(dir.path());
        for (idx, bytes) in &picks {
            std::fs::write(idx.get(&all), bytes).unwrap();
        }
        let t = discover(&FsRoot::at(dir.path()).unwrap());
        assert_valid(&t);
    }
}

use pinsight_testkit::copy_tree;
