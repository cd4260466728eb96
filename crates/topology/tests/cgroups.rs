//! cpuset cgroup variants: which CPUs this process may use. The recorded
//! hwloc machines cover legacy `/dev/cpuset`, v1 `noprefix` and v2 at
//! `/cgroup/unified` (see hwloc_conformance.rs); these cover the rest.

use crate::common;
use crate::common::set;

use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use pinsight_testkit::put;
use pinsight_topology::discover;

/// An 8-CPU machine plus the given extra files.
fn machine(files: &[(&str, &str)]) -> Topology {
    let dir = common::tempdir();
    common::synth::small_smt(|_| (3_000_000, 2_000_000)).write(dir.path());
    for (rel, text) in files {
        put(dir.path(), rel, text);
    }
    discover(&FsRoot::at(dir.path()).unwrap())
}

#[test]
fn no_cgroup_means_everything_allowed() {
    let t = machine(&[]);
    assert_eq!(t.usable(), set("0-7"));
}

#[test]
fn v2_at_sys_fs_cgroup_from_proc_self_cgroup() {
    let t = machine(&[
        (
            "proc/mounts",
            "sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n",
        ),
        ("proc/self/cgroup", "0::/user.slice/job.scope\n"),
        (
            "sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory pids\n",
        ),
        (
            "sys/fs/cgroup/user.slice/job.scope/cpuset.cpus.effective",
            "2-5\n",
        ),
    ]);
    assert_eq!(t.usable(), set("2-5"));
    assert!(!t.cpu(0).unwrap().allowed && t.cpu(0).unwrap().online);
}

#[test]
fn v2_without_cpuset_controller_falls_back_to_v1() {
    let t = machine(&[
        (
            "proc/mounts",
            "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,cpuset 0 0\n",
        ),
        ("proc/self/cgroup", "3:cpuset:/slurm/job1\n0::/\n"),
        ("sys/fs/cgroup/unified/cgroup.controllers", "memory pids\n"),
        ("sys/fs/cgroup/cpuset/slurm/job1/cpuset.effective_cpus", "0-1,4-5\n"),
        ("sys/fs/cgroup/cpuset/slurm/job1/cpuset.cpus", "0-7\n"),
    ]);
    assert_eq!(t.usable(), set("0-1,4-5"));
}

#[test]
fn v1_uses_cpus_when_effective_is_absent_or_empty() {
    let t = machine(&[
        ("proc/mounts", "cgroup /cg cgroup rw,cpuset 0 0\n"),
        ("proc/self/cgroup", "5:cpuset,cpu:/a\n"),
        ("cg/a/cpuset.effective_cpus", "\n"),
        ("cg/a/cpuset.cpus", "6-7\n"),
    ]);
    assert_eq!(t.usable(), set("6-7"));
}

#[test]
fn v1_noprefix_and_proc_self_cpuset() {
    let t = machine(&[
        (
            "proc/mounts",
            "cpuset /dev/cpuset cgroup rw,relatime,cpuset,noprefix 0 0\n",
        ),
        ("proc/self/cpuset", "/batch\n"),
        ("dev/cpuset/batch/cpus", "1,3\n"),
    ]);
    assert_eq!(t.usable(), set("1,3"));
}

#[test]
fn legacy_cpuset_filesystem_at_root_group() {
    let t = machine(&[
        ("proc/mounts", "none /dev/cpuset cpuset rw 0 0\n"),
        ("proc/self/cpuset", "/\n"),
        ("dev/cpuset/cpus", "0-3\n"),
    ]);
    assert_eq!(t.usable(), set("0-3"));
}

#[test]
fn mount_points_with_escaped_spaces() {
    let t = machine(&[
        ("proc/mounts", "cgroup2 /my\\040cgroups cgroup2 rw 0 0\n"),
        ("proc/self/cgroup", "0::/x\n"),
        ("my cgroups/cgroup.controllers", "cpuset\n"),
        ("my cgroups/x/cpuset.cpus.effective", "5\n"),
    ]);
    assert_eq!(t.usable(), set("5"));
}

#[test]
fn garbage_cgroup_file_is_a_warning_and_no_restriction() {
    let t = machine(&[
        ("proc/mounts", "cgroup2 /cg cgroup2 rw 0 0\n"),
        ("proc/self/cgroup", "0::/x\n"),
        ("cg/cgroup.controllers", "cpuset\n"),
        ("cg/x/cpuset.cpus.effective", "zz-top\n"),
    ]);
    assert_eq!(t.usable(), set("0-7"));
    common::assert_warned(&t, &["/cg/x/cpuset.cpus.effective"]);
}

#[test]
fn cgroup_allowing_only_offline_cpus_is_ignored_with_a_warning() {
    let t = machine(&[
        ("proc/mounts", "cgroup2 /cg cgroup2 rw 0 0\n"),
        ("proc/self/cgroup", "0::/\n"),
        ("cg/cgroup.controllers", "cpuset\n"),
        ("cg/cpuset.cpus.effective", "100-101\n"),
    ]);
    assert_eq!(t.usable(), set("0-7"));
    common::assert_warned(&t, &["cgroup"]);
}
