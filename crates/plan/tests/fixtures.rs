//! Golden snapshots on recorded machines, discovered exactly as `pinsight
//! --fsroot DIR` does (fixtures of crate pinsight-topology: hwloc's test
//! suite dumps, BSD licence, and synthetic machines). Snapshots live in
//! `tests/snapshots/` (insta): review a changed one with `cargo insta
//! review`.

use crate::common;

use common::*;
use pinsight_model::Topology;
use pinsight_plan::{plan, Request};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;

fn fixture(rel: &str) -> Topology {
    let dir = pinsight_testkit::fixtures::machine(rel);
    discover(&FsRoot::at(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())))
}

/// Discovers the recorded machine `rel` and checks every policy and the
/// `extra` cases on it against the golden `fixture-<machine>.txt` (insta's
/// failure names it).
fn golden_fixture(rel: &str, extra: &[Case]) -> Topology {
    let t = fixture(rel);
    let machine = rel.rsplit('/').next().unwrap();
    pinsight_testkit::golden!(&format!("fixture-{machine}.txt"), &run_cases(&t, extra));
    t
}

#[test]
fn i7_1370p_recorded() {
    let t = golden_fixture(
        "hwloc/20em64t-hybrid-1p6c2t+2ca4co1t",
        &[
            Case("p-pinned", Some(6), false),
            Case("e-first", Some(10), false),
            Case("scatter", Some(8), false),
            Case("balance", Some(200), false),
        ],
    );

    // The brief's acceptance checks, on the recorded machine.
    let cpus = |policy: &str, n: usize| -> Vec<usize> {
        let r = Request {
            threads: Some(n),
            ..Request::new(policy.parse().unwrap())
        };
        plan(&t, &r)
            .unwrap()
            .places
            .iter()
            .map(|p| p.first().unwrap())
            .collect()
    };
    assert_eq!(cpus("p-pinned", 6), [0, 2, 4, 6, 8, 10]);
    assert_eq!(cpus("e-first", 10), [12, 13, 14, 15, 16, 17, 18, 19, 0, 2]);
    // As `hwloc-distrib --single 4` spreads them (PU-weighted chunks down
    // the tree: six P-core L2s of 2 PUs, two E-module L2s of 4).
    assert_eq!(cpus("scatter", 4), [0, 4, 10, 12]);
    assert_eq!(cpus("scatter", 8), [0, 2, 4, 6, 10, 12, 14, 16]);
    let r = Request {
        tasks: Some(200),
        ..Request::new("balance".parse().unwrap())
    };
    let p = plan(&t, &r).unwrap();
    let per = p.tasks_per_cpu.clone().unwrap();
    // SMT-aware: tasks per PHYSICAL core follow the core's capacity. A
    // P-core's two busy siblings carry 1.25 (default SMT yield) of its
    // capacity 1.0; an E-core (one thread) carries 0.58, the capacity
    // `topo` prints for it (CPPC highest_perf 39 over 67).
    let cap = |c: usize| t.capacity(c).unwrap().value;
    assert_eq!(format!("{:.2}", cap(12)), "0.58");
    assert_eq!(cap(0), 1.0);
    let mut table = String::from("core  kind  CPUs   tasks  core capacity  tasks/capacity\n");
    let mut ratios = Vec::new();
    for core in &t.cores {
        let tasks: usize = per
            .iter()
            .filter(|(c, _)| core.cpus.contains(*c))
            .map(|(_, n)| *n)
            .sum();
        let first = core.cpus.first().unwrap();
        let busy = core.cpus.len();
        let capacity = t
            .core_capacity(first, busy, pinsight_model::DEFAULT_SMT_YIELD)
            .unwrap();
        let kind = &t.kinds[t.cpu(first).unwrap().kind.unwrap()].mark;
        table.push_str(&format!(
            "{:<5} {:<5} {:<6} {:>5}  {:>13.2}  {:>14.1}\n",
            core.id,
            kind,
            core.cpus.to_list_string(),
            tasks,
            capacity,
            tasks as f64 / capacity
        ));
        ratios.push(tasks as f64 / capacity);
    }
    println!("balance --tasks 200 on the i7-1370P, per physical core:\n{table}");
    // Every core's tasks per unit of capacity within one task of the
    // others' (Hamilton rounding on 20 CPUs).
    let lo = ratios.iter().cloned().fold(f64::MAX, f64::min);
    let hi = ratios.iter().cloned().fold(0.0f64, f64::max);
    assert!(hi - lo <= 1.0 / 0.58 + 1e-9, "{table}");
    assert!(
        p.notes.iter().any(|n| n.contains("0.58 on 12-19")),
        "{:?}",
        p.notes
    );
}

/// Recorded machines and the cases each adds to `EVERY_POLICY` (see
/// `golden_fixture`).
const MACHINES: &[(&str, &[Case])] = &[
    // AMD Magny-Cours: 4 packages x 2 NUMA nodes x 8 cores (compute units of two).
    (
        "hwloc/64amd64-4s2n4ca2co",
        &[
            Case("scatter", Some(8), false),
            Case("compact", Some(8), false),
            Case("balance", Some(100), false),
        ],
    ),
    // Four sockets, SMT.
    (
        "hwloc/16em64t-4s2c2t",
        &[
            Case("scatter", Some(4), false),
            Case("compact", Some(4), false),
            Case("smt-physical-first", Some(8), false),
        ],
    ),
    // Offline CPUs.
    (
        "hwloc/16em64t-4s2c2t-offlines",
        &[
            Case("cpus:0-15", None, false),
            Case("scatter", Some(4), false),
        ],
    ),
    // CPUs the cgroup forbids.
    (
        "hwloc/16amd64-8n2c-cpusets",
        &[
            Case("cpus:0-15", None, false),
            Case("scatter", Some(4), false),
        ],
    ),
    // An ARM phone with three clusters.
    (
        "synthetic/arm-phone-3cluster",
        &[
            Case("kind:1", None, false),
            Case("p-first", Some(3), false),
            Case("balance", Some(64), false),
        ],
    ),
    // Meteor Lake: three x86 kinds.
    (
        "synthetic/meteorlake-lp-ecores",
        &[
            Case("kind:E", None, false),
            Case("p-first", Some(16), false),
            Case("balance", Some(100), false),
        ],
    ),
];

#[test]
fn recorded_machines_golden() {
    for (rel, extra) in MACHINES {
        golden_fixture(rel, extra);
    }
}

/// On every recorded machine, each of `policies` (with each of
/// `threads`) plans on discovery with `lean` needs as on full discovery:
/// the same plan, notes included, but for the compute-unit note (read
/// from the caches, which only full discovery has when `lean` skips
/// them). `check` looks at the lean topology first.
fn lean_discovery_plans_the_same(
    lean: pinsight_topology::Needs,
    policies: &[&str],
    threads: &[Option<usize>],
    check: impl Fn(&str, &pinsight_model::Topology, &pinsight_model::Topology),
) {
    for name in pinsight_testkit::fixtures::hwloc_names() {
        let fs = FsRoot::at(pinsight_testkit::fixtures::hwloc(&name)).unwrap();
        let full = discover(&fs);
        let topo = pinsight_topology::discover_with(&fs, lean);
        check(&name, &topo, &full);
        for p in policies {
            let policy: pinsight_plan::Policy = p.parse().unwrap();
            for &threads in threads {
                let r = Request {
                    threads,
                    ..Request::new(policy.clone())
                };
                let without_unit_note = |p: Result<pinsight_plan::Plan, _>| {
                    p.map(|mut p| {
                        p.notes.retain(|n| !n.contains("compute unit"));
                        p
                    })
                };
                assert_eq!(
                    format!("{:?}", plan(&topo, &r)),
                    format!("{:?}", without_unit_note(plan(&full, &r))),
                    "{name}: {p} -t {threads:?}"
                );
            }
        }
    }
}

/// Discovery without the caches (what `pinsight run` reads for a policy
/// that does not order CPUs by the hierarchy, `Policy::uses_caches`, when
/// it shows no notes) plans each such policy as full discovery does, on
/// every recorded machine: the same plan, but for the compute-unit note
/// (read from the caches), which only full discovery can give.
#[test]
fn policies_without_caches_plan_the_same_without_them() {
    let policies = [
        "os",
        "p-set",
        "e-set",
        "kind-set:0",
        "cpus:0",
        "cpus:all",
        "cpus-set:0-1",
        "cpus-set:all",
    ];
    for p in policies {
        assert!(
            !p.parse::<pinsight_plan::Policy>().unwrap().uses_caches(),
            "{p}"
        );
    }
    lean_discovery_plans_the_same(
        pinsight_topology::Needs {
            caches: false,
            ..pinsight_topology::Needs::CPUS
        },
        &policies,
        &[None, Some(3)],
        |name, lean, full| {
            assert!(lean.caches.is_empty() && lean.dies.is_empty() && lean.clusters.is_empty());
            assert_eq!(lean.kinds, full.kinds, "{name}");
            // The die and cluster files are not read, and the packages
            // (merged per cluster on Android-style kernels) stay the same.
            assert_eq!(lean.packages, full.packages, "{name}");
            assert_eq!(lean.cores, full.cores, "{name}");
        },
    );
    every_policy(
        &[
            "compact",
            "scatter",
            "p-pinned",
            "balance",
            "cpus:0+smt-physical-first",
        ],
        pinsight_plan::Policy::uses_caches,
    );
}

/// Asserts `says` of every policy named in `names`.
fn every_policy(names: &[&str], says: fn(&pinsight_plan::Policy) -> bool) {
    for p in names {
        assert!(says(&p.parse().unwrap()), "{p}");
    }
}

/// Discovery without the kinds (nor the caches: what `pinsight run`
/// reads for `os`, `cpus:` and `cpus-set:`, `Policy::uses_kinds`, when it
/// shows no notes) plans each such policy as full discovery does, on
/// every recorded machine (but for the compute-unit note, as above); and
/// every other policy says it needs them.
#[test]
fn policies_without_kinds_plan_the_same_without_them() {
    let policies = [
        "os",
        "cpus:0",
        "cpus:1,0",
        "cpus:all",
        "cpus-set:0-1",
        "cpus-set:all",
    ];
    for p in policies {
        let policy: pinsight_plan::Policy = p.parse().unwrap();
        assert!(!policy.uses_kinds() && !policy.uses_caches(), "{p}");
    }
    lean_discovery_plans_the_same(
        pinsight_topology::Needs {
            caches: false,
            kinds: false,
            ..pinsight_topology::Needs::CPUS
        },
        &policies,
        &[None, Some(1), Some(3)],
        |name, lean, full| {
            assert!(lean.kinds.is_empty(), "{name}");
            assert_eq!(lean.cpus.len(), full.cpus.len(), "{name}");
        },
    );
    every_policy(
        &[
            "p-set",
            "e-pinned",
            "kind-set:0",
            "p-first",
            "compact",
            "scatter",
            "balance",
            "latency-group",
            "cpus:0+smt-physical-first",
        ],
        pinsight_plan::Policy::uses_kinds,
    );
}

/// `scatter -t N` takes the CPUs `hwloc-distrib --single N` gives, on
/// every recorded machine where hwloc-distrib runs (hwloc's tree:
/// distance groups of NUMA nodes, NUMA nodes above or below packages as
/// they nest, caches, cores; zero chunks joining the output before them),
/// for N up to 24 (all of a smaller machine). The places are in scatter's
/// own order (every chosen core's first PU first), so the sets are
/// compared. A missing hwloc-distrib is a counted skip.
#[test]
fn scatter_takes_the_cpus_hwloc_distrib_gives() {
    use std::process::Command;
    let probe = Command::new("hwloc-distrib").arg("--version").output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        pinsight_testkit::skip("hwloc-distrib is not installed (apt-get install hwloc)");
        return;
    }
    // A mask as hwloc prints it: 32-bit words, most significant first, an
    // empty word zero; `--single` leaves one bit.
    let cpu_of = |line: &str| -> usize {
        let words: Vec<u64> = line
            .trim()
            .split(',')
            .map(|w| {
                let w = w.trim_start_matches("0x");
                if w.is_empty() {
                    0
                } else {
                    u64::from_str_radix(w, 16).unwrap()
                }
            })
            .collect();
        let mut bit = None;
        for (i, w) in words.iter().rev().enumerate() {
            if *w != 0 {
                assert!(w.is_power_of_two() && bit.is_none(), "{line}");
                bit = Some(i * 32 + w.trailing_zeros() as usize);
            }
        }
        bit.unwrap()
    };
    let mut checked = 0;
    for name in pinsight_testkit::fixtures::hwloc_names() {
        let dir = pinsight_testkit::fixtures::hwloc(&name);
        let t = discover(&FsRoot::at(&dir).unwrap());
        let usable = t.usable().len();
        for n in 1..=usable.min(24) {
            let out = Command::new("hwloc-distrib")
                .arg("--single")
                .arg("-i")
                .arg(&dir)
                .arg(n.to_string())
                .env_remove("HWLOC_COMPONENTS")
                .output()
                .unwrap();
            assert!(out.status.success(), "{name}: hwloc-distrib {n} failed");
            let mut theirs: Vec<usize> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(cpu_of)
                .collect();
            let r = Request {
                threads: Some(n),
                ..Request::new("scatter".parse().unwrap())
            };
            let mut ours: Vec<usize> = plan(&t, &r)
                .unwrap()
                .places
                .iter()
                .map(|p| p.first().unwrap())
                .collect();
            theirs.sort_unstable();
            ours.sort_unstable();
            assert_eq!(ours, theirs, "{name}: scatter -t {n}");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// On AMD Bulldozer (the recorded Opteron 6276: two cores per compute
/// unit, one L1i and L2 each), `compact -t 4` takes cores 0-3: two compute
/// units with two threads each, which the note says; no core holds two
/// threads, so no SMT note. `scatter -t 4` uses four units: no note.
#[test]
fn compute_unit_note_tells_the_truth_on_bulldozer() {
    let t = fixture("hwloc/64amd64-4s2n4ca2co");
    let notes = |policy: &str| {
        let r = Request {
            threads: Some(4),
            ..Request::new(policy.parse().unwrap())
        };
        plan(&t, &r).unwrap().notes
    };
    let compact = notes("compact");
    assert!(
        compact
            .iter()
            .any(|n| n.starts_with("2 compute units run two threads or more")),
        "{compact:?}"
    );
    assert!(
        !compact
            .iter()
            .any(|n| n.contains("SMT siblings;") || n.contains("on SMT siblings")),
        "{compact:?}"
    );
    assert!(!notes("scatter").iter().any(|n| n.contains("compute unit")));
    // An SMT machine: siblings, not compute units.
    let smt = fixture("hwloc/16em64t-4s2c2t");
    let r = Request {
        threads: Some(4),
        ..Request::new("compact".parse().unwrap())
    };
    let n = plan(&smt, &r).unwrap().notes;
    assert!(n.iter().any(|x| x.contains("on SMT siblings")), "{n:?}");
    assert!(!n.iter().any(|x| x.contains("compute unit")), "{n:?}");
}
