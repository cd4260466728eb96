//! `pinsight tune`'s layout (P/E cores, SMT width, the CPUs of a
//! configuration) on recorded machines and hand-built ones.

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_plan::{tune::TuneLayout, tune::TuneLayoutError};
use pinsight_sys::FsRoot;
use pinsight_testkit::topology::*;
use pinsight_topology::discover;
use pinsight_tune_model::Config;

fn fixture(rel: &str) -> Topology {
    let dir = pinsight_testkit::fixtures::machine(rel);
    discover(&FsRoot::at(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())))
}

fn set(s: &str) -> CpuSet {
    s.parse().unwrap()
}

#[test]
fn recorded_hybrid_laptop_is_6p_8e_with_smt_on_p_cores() {
    // i7-1370P: 6 P-cores with 2 threads (CPUs 0-11), 8 E-cores (12-19).
    let t = fixture("hwloc/20em64t-hybrid-1p6c2t+2ca4co1t");
    let l = TuneLayout::new(&t, &t.usable()).unwrap();
    assert_eq!(
        (l.machine.p_cores, l.machine.e_cores),
        (6, 8),
        "{:?}",
        l.machine
    );
    assert_eq!((l.machine.smt_per_p_core, l.machine.smt_per_e_core), (1, 0));
    assert_eq!(l.p_kind, "P-core");
    assert_eq!(l.e_kind.as_deref(), Some("E-core"));
    assert!(l.notes.is_empty(), "{:?}", l.notes);
    assert_eq!(l.describe(), "6P+8E, 1 SMT sibling per P-core");
    // One PU per P-core, then E-cores, then siblings of the used P-cores.
    assert_eq!(
        l.ordered_cpus(Config::new(2, 3, 2)).unwrap(),
        vec![0, 2, 12, 13, 14, 1, 3]
    );
    assert_eq!(l.cpus(Config::new(6, 0, 0)).unwrap(), set("0,2,4,6,8,10"));
    assert_eq!(l.cpus(Config::new(6, 8, 6)).unwrap(), set("0-19"));
    assert_eq!(
        l.policy(Config::new(1, 1, 1), false).unwrap(),
        "cpus-set:0-1,12"
    );
    assert_eq!(l.policy(Config::new(1, 1, 1), true).unwrap(), "cpus:0,12,1");
    // Every configuration the machine allows has exactly threads() CPUs.
    for c in l.machine.configs() {
        assert_eq!(l.cpus(c).unwrap().len(), c.threads() as usize, "{c}");
    }
    let k = |p, e, s| l.kmp_hw_subset(Config::new(p, e, s));
    // The recorded sysfs has no CPUID core types: libomp's efficiency
    // numbers (0 = least performant), as `plan --format kmp-hw-subset`.
    assert_eq!(k(6, 8, 0).unwrap(), "6c:eff1,8c:eff0,1t");
    assert_eq!(k(0, 4, 0).unwrap(), "4c:eff0,1t");
    assert_eq!(k(4, 0, 4).unwrap(), "4c:eff1,2t");
    // Every thread of every chosen core: no thread level.
    assert_eq!(k(6, 8, 6).unwrap(), "6c:eff1,8c:eff0");
    let e = k(6, 8, 3).unwrap_err();
    assert!(matches!(e, TuneLayoutError::NotExpressible { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("KMP_HW_SUBSET cannot express 6P+8E+3smt"),
        "{e}"
    );
    let e = l.cpus(Config::new(7, 0, 0)).unwrap_err();
    assert!(matches!(e, TuneLayoutError::DoesNotFit { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "7P+0E+0smt does not fit this machine (6P+8E, 1 SMT sibling per P-core)"
    );
}

#[test]
fn one_kind_machine_is_all_p_cores() {
    // 16em64t-4s2c2t: 4 packages x 2 cores x 2 threads, one kind.
    let t = fixture("hwloc/16em64t-4s2c2t");
    let l = TuneLayout::new(&t, &t.usable()).unwrap();
    assert!(l.machine.one_kind());
    assert_eq!((l.machine.p_cores, l.machine.smt_per_p_core), (8, 1));
    assert_eq!(l.e_kind, None);
    assert_eq!(l.describe(), "8 cores (one kind), 1 SMT sibling per core");
    assert_eq!(l.kmp_hw_subset(Config::new(8, 0, 8)).unwrap(), "8c,2t");
    assert_eq!(l.kmp_hw_subset(Config::new(3, 0, 0)).unwrap(), "3c,1t");
    assert!(l.kmp_hw_subset(Config::new(3, 0, 1)).is_err());
    let cpus = l.cpus(Config::new(8, 0, 0)).unwrap();
    assert_eq!(cpus.len(), 8);
    // No two of them share a core.
    for a in cpus.iter() {
        assert_eq!(t.siblings(a).intersection(&cpus).len(), 1, "{cpus}");
    }
}

#[test]
fn restricted_to_what_the_process_may_use() {
    let t = i7_1370p();
    // Only P-cores 0-1 (both threads) and E-cores 12-13.
    let l = TuneLayout::new(&t, &set("0-3,12-13")).unwrap();
    assert_eq!((l.machine.p_cores, l.machine.e_cores), (2, 2));
    // Kinds with CPUID core types get libomp's core-type names.
    assert_eq!(
        l.kmp_hw_subset(Config::new(2, 2, 0)).unwrap(),
        "2c:intel_core,2c:intel_atom,1t"
    );
    assert_eq!(l.cpus(Config::new(2, 2, 2)).unwrap(), set("0-3,12-13"));
    // A core whose sibling is not usable makes the SMT width the fewest.
    let l = TuneLayout::new(&t, &set("0-2,12")).unwrap();
    assert_eq!(l.machine.smt_per_p_core, 0);
    assert!(
        l.notes[0].contains("1 to 2 usable hardware threads"),
        "{:?}",
        l.notes
    );
    let e = TuneLayout::new(&t, &set("100")).unwrap_err();
    assert!(matches!(e, TuneLayoutError::NoUsableCpus { .. }), "{e}");
}

#[test]
fn a_third_kind_is_left_out_and_said() {
    // The ARM phone: three kinds (little, mid, big).
    let t = arm_phone();
    assert!(t.kinds.len() >= 3, "{:?}", t.kinds.len());
    let l = TuneLayout::new(&t, &t.usable()).unwrap();
    let fastest = t.fastest_kind().unwrap();
    assert_eq!(l.p_kind, fastest.name);
    assert_eq!(l.notes.len(), t.kinds.len() - 2, "{:?}", l.notes);
    assert!(l.notes[0].contains("left out"), "{:?}", l.notes);
    let used = l
        .cpus(Config::new(l.machine.p_cores, l.machine.e_cores, 0))
        .unwrap();
    assert!(used.intersection(&t.kinds[0].cpus).is_empty(), "{used}");
}
