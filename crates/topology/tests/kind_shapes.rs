//! The three shapes on which core kinds used to go wrong, each built as an
//! altered copy of a recorded machine from hwloc's test suite (the 2-CPU
//! Arm board `2arm-2c`): one microarchitecture at two clocks, two parts at
//! one clock, and Android-style sysfs where every cluster is its own
//! package with one package id.

use crate::common;

use pinsight_cpuset::CpuSet;
use pinsight_model::{CapacityOrigin, RankSource, Topology};
use pinsight_sys::FsRoot;
use pinsight_testkit::put as write;
use pinsight_topology::discover;
use std::path::Path;

const CPU: &str = "sys/devices/system/cpu";

/// A copy of the recorded Arm board in a temporary directory.
fn board() -> tempfile::TempDir {
    let tmp = common::tempdir();
    pinsight_testkit::copy_tree(&common::hwloc("2arm-2c"), tmp.path());
    tmp
}

/// Gives CPU `cpu` a MIDR and a maximum clock (kHz, as cpufreq writes it).
fn core(root: &Path, cpu: usize, midr: u64, khz: u64) {
    write(
        root,
        &format!("{CPU}/cpu{cpu}/regs/identification/midr_el1"),
        &format!("0x{midr:016x}\n"),
    );
    write(
        root,
        &format!("{CPU}/cpu{cpu}/cpufreq/cpuinfo_max_freq"),
        &format!("{khz}\n"),
    );
    write(
        root,
        &format!("{CPU}/cpu{cpu}/cpufreq/related_cpus"),
        &format!("{cpu}\n"),
    );
}

fn set(s: &str) -> CpuSet {
    s.parse().unwrap()
}

/// Discovery on the board with CPUs 0 and 1 given (MIDR, kHz) each (see
/// [`core`]).
fn two_cores(cpu0: (u64, u64), cpu1: (u64, u64)) -> Topology {
    let tmp = board();
    for (cpu, (midr, khz)) in [cpu0, cpu1].into_iter().enumerate() {
        core(tmp.path(), cpu, midr, khz);
    }
    discover(&FsRoot::at(tmp.path()).unwrap())
}

/// Asserts that `t`'s kinds are `want`, (name, CPU list) in rank order,
/// showing its warnings when not.
#[track_caller]
fn assert_kinds(t: &Topology, want: &[(&str, &str)]) {
    let want: Vec<(String, CpuSet)> = want.iter().map(|(n, s)| (n.to_string(), set(s))).collect();
    assert_eq!(names(t), want, "warnings: {:?}", t.warnings);
}

fn names(t: &Topology) -> Vec<(String, CpuSet)> {
    t.kinds
        .iter()
        .map(|k| (k.name.clone(), k.cpus.clone()))
        .collect()
}

#[test]
fn one_microarchitecture_at_two_clocks_is_two_kinds() {
    // Two Cortex-A78 (MIDR part 0xd41), at 1.9 and 2.6 GHz.
    let t = two_cores((0x411f_d411, 1_900_000), (0x411f_d411, 2_600_000));
    assert_kinds(&t, &[("Cortex-A78 1.9G", "0"), ("Cortex-A78 2.6G", "1")]);
    common::assert_ranked_by(&t, RankSource::MicroarchTable);
    let slow = t.capacity(0).unwrap();
    assert!((slow.value - 1900.0 / 2600.0).abs() < 1e-9, "{slow:?}");
    assert_eq!(slow.source, CapacityOrigin::MicroarchTable);
    assert_eq!(t.capacity(1).unwrap().value, 1.0);
    let steps = t.provenance.identity.join("\n");
    assert!(
        steps.contains("split Cortex-A78 (CPUs 0-1) by cpufreq/cpuinfo_max_freq beyond 10%"),
        "{steps}"
    );
}

#[test]
fn close_clocks_of_one_microarchitecture_stay_one_kind() {
    // 2.0 and 2.1 GHz: within the 10% tolerance (favoured cores).
    let t = two_cores((0x411f_d411, 2_000_000), (0x411f_d411, 2_100_000));
    assert_kinds(&t, &[("Cortex-A78", "0-1")]);
}

#[test]
fn two_parts_at_one_clock_are_ranked_by_the_core_table() {
    // Cortex-A55 (0xd05) and Cortex-A76 (0xd0b), both at 2.0 GHz, no
    // cpu_capacity: only the part tells them apart.
    let t = two_cores((0x411f_d0b0, 2_000_000), (0x411f_d050, 2_000_000));
    assert_kinds(&t, &[("Cortex-A55", "1"), ("Cortex-A76", "0")]);
    assert_eq!(t.kinds[1].mark, "P");
    common::assert_ranked_by(&t, RankSource::MicroarchTable);
    assert!((t.capacity(1).unwrap().value - 0.45).abs() < 1e-9);
}

#[test]
fn kryo_gold_and_silver_at_close_clocks_are_two_kinds() {
    // Qualcomm Kryo 4XX Silver (0x805) at 1.9 GHz, Gold (0x804) at 2.0 GHz:
    // under 10% apart, but different parts.
    let t = two_cores((0x517f_8050, 1_900_000), (0x517f_8040, 2_000_000));
    assert_kinds(&t, &[("Kryo 4XX Silver", "0"), ("Kryo 4XX Gold", "1")]);
    let c = t.capacity(0).unwrap().value;
    assert!((c - 0.45 * 1900.0 / 2000.0).abs() < 1e-9, "{c}");
}

#[test]
fn package_per_cluster_siblings_build_clusters_not_packages() {
    let tmp = board();
    // Each CPU its own "package" by core_siblings, both with package id 3.
    for cpu in 0..2 {
        let d = format!("{CPU}/cpu{cpu}/topology");
        write(
            tmp.path(),
            &format!("{d}/core_siblings_list"),
            &format!("{cpu}\n"),
        );
        write(
            tmp.path(),
            &format!("{d}/core_siblings"),
            &format!("{:x}\n", 1 << cpu),
        );
    }
    let t = discover(&FsRoot::at(tmp.path()).unwrap());
    assert_eq!(t.packages.len(), 1, "{:?}", t.packages);
    assert_eq!(t.packages[0].cpus, set("0-1"));
    assert_eq!(t.packages[0].os_id, Some(3));
    let w = t.warnings.join("\n");
    assert!(
        w.contains("cpu0/topology/physical_package_id")
            && w.contains("cpu1/topology/physical_package_id")
            && w.contains("core_siblings_list"),
        "{w}"
    );
}
