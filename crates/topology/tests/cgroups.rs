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

/// One cgroup layout: the files it adds to the 8-CPU machine, the CPUs
/// usable then, and the parts of a warning it must give (none if empty).
struct Case {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    usable: &'static str,
    warned: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "no cgroup means everything allowed",
        files: &[],
        usable: "0-7",
        warned: &[],
    },
    Case {
        name: "v2 at /sys/fs/cgroup from /proc/self/cgroup",
        files: &[
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
        ],
        usable: "2-5",
        warned: &[],
    },
    Case {
        name: "v2 without the cpuset controller falls back to v1",
        files: &[
            (
                "proc/mounts",
                "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,cpuset 0 0\n",
            ),
            ("proc/self/cgroup", "3:cpuset:/slurm/job1\n0::/\n"),
            ("sys/fs/cgroup/unified/cgroup.controllers", "memory pids\n"),
            ("sys/fs/cgroup/cpuset/slurm/job1/cpuset.effective_cpus", "0-1,4-5\n"),
            ("sys/fs/cgroup/cpuset/slurm/job1/cpuset.cpus", "0-7\n"),
        ],
        usable: "0-1,4-5",
        warned: &[],
    },
    Case {
        name: "v1 uses cpus when effective is absent or empty",
        files: &[
            ("proc/mounts", "cgroup /cg cgroup rw,cpuset 0 0\n"),
            ("proc/self/cgroup", "5:cpuset,cpu:/a\n"),
            ("cg/a/cpuset.effective_cpus", "\n"),
            ("cg/a/cpuset.cpus", "6-7\n"),
        ],
        usable: "6-7",
        warned: &[],
    },
    Case {
        name: "v1 noprefix and /proc/self/cpuset",
        files: &[
            (
                "proc/mounts",
                "cpuset /dev/cpuset cgroup rw,relatime,cpuset,noprefix 0 0\n",
            ),
            ("proc/self/cpuset", "/batch\n"),
            ("dev/cpuset/batch/cpus", "1,3\n"),
        ],
        usable: "1,3",
        warned: &[],
    },
    Case {
        name: "legacy cpuset filesystem at the root group",
        files: &[
            ("proc/mounts", "none /dev/cpuset cpuset rw 0 0\n"),
            ("proc/self/cpuset", "/\n"),
            ("dev/cpuset/cpus", "0-3\n"),
        ],
        usable: "0-3",
        warned: &[],
    },
    Case {
        name: "mount points with escaped spaces",
        files: &[
            ("proc/mounts", "cgroup2 /my\\040cgroups cgroup2 rw 0 0\n"),
            ("proc/self/cgroup", "0::/x\n"),
            ("my cgroups/cgroup.controllers", "cpuset\n"),
            ("my cgroups/x/cpuset.cpus.effective", "5\n"),
        ],
        usable: "5",
        warned: &[],
    },
    Case {
        name: "a garbage cgroup file is a warning and no restriction",
        files: &[
            ("proc/mounts", "cgroup2 /cg cgroup2 rw 0 0\n"),
            ("proc/self/cgroup", "0::/x\n"),
            ("cg/cgroup.controllers", "cpuset\n"),
            ("cg/x/cpuset.cpus.effective", "zz-top\n"),
        ],
        usable: "0-7",
        warned: &["/cg/x/cpuset.cpus.effective"],
    },
    Case {
        name: "a cgroup allowing only offline CPUs is ignored with a warning",
        files: &[
            ("proc/mounts", "cgroup2 /cg cgroup2 rw 0 0\n"),
            ("proc/self/cgroup", "0::/\n"),
            ("cg/cgroup.controllers", "cpuset\n"),
            ("cg/cpuset.cpus.effective", "100-101\n"),
        ],
        usable: "0-7",
        warned: &["cgroup"],
    },
];

/// Each of `CASES`: the usable CPUs, every CPU still online (a cgroup only
/// forbids), and the warning where one is due.
#[test]
fn cgroup_layouts() {
    for c in CASES {
        let t = machine(c.files);
        let usable = set(c.usable);
        assert_eq!(t.usable(), usable, "{}", c.name);
        for cpu in 0..8 {
            let d = t.cpu(cpu).unwrap();
            assert!(d.online, "{}: CPU {cpu} offline", c.name);
            assert_eq!(d.allowed, usable.contains(cpu), "{}: CPU {cpu}", c.name);
        }
        if !c.warned.is_empty() {
            assert!(
                t.warnings
                    .iter()
                    .any(|w| c.warned.iter().all(|p| w.contains(p))),
                "{}: no warning with {:?}: {:?}",
                c.name,
                c.warned,
                t.warnings
            );
        }
    }
}
