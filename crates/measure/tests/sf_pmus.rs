//! Per-thread speedup factors: the PMU ↔ kind mapping on recorded machines
//! with PMU files added (the i7-1370P and the 2-CPU ARM dumps of hwloc's
//! tests record no event_source directory), the window arithmetic through
//! the estimator, the honest "unavailable" of this machine, and the probe's
//! affinity restore.

use pinsight_cpuset::CpuSet;
use pinsight_measure::{
    sf::map_pmus, sf::window, sf::AffinityProbe, sf::KindCpus, sf::SfOptions, sf::SfPmus,
    sf::SfSampler, sf::SfUnavailable,
};
use pinsight_sched_model::Kind as SfKind;
use pinsight_sched_model::{SfEstimator, SfParams};
use pinsight_sys::perf::GroupReading;
use pinsight_sys::FsRoot;
use proptest::prelude::*;
use std::fs;
use std::path::Path;
use std::time::Duration;

fn fixture(name: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let src = pinsight_testkit::fixtures::hwloc(name);
    pinsight_testkit::copy_tree(&src, d.path());
    d
}

/// Registers a PMU as the kernel does: /sys/devices/NAME/{type,cpus} and a
/// link in /sys/bus/event_source/devices.
fn add_pmu(root: &Path, name: &str, ty: u32, cpus: Option<&str>) {
    let dev = root.join("sys/devices").join(name);
    fs::create_dir_all(&dev).unwrap();
    fs::write(dev.join("type"), format!("{ty}\n")).unwrap();
    if let Some(c) = cpus {
        fs::write(dev.join("cpus"), format!("{c}\n")).unwrap();
    }
    let bus = root.join("sys/bus/event_source/devices");
    fs::create_dir_all(&bus).unwrap();
    std::os::unix::fs::symlink(format!("../../../devices/{name}"), bus.join(name)).unwrap();
}

/// Kind `name` of rank `rank` on the CPUs of `list`.
fn k(name: &str, rank: usize, list: &str) -> KindCpus {
    KindCpus {
        name: name.into(),
        rank,
        cpus: CpuSet::parse_list(list).unwrap(),
    }
}

fn kinds_of(root: &Path) -> Vec<KindCpus> {
    let topo = pinsight_topology::discover(&FsRoot::at(root).unwrap());
    topo.kinds.iter().map(KindCpus::from).collect()
}

fn i7_1370p() -> tempfile::TempDir {
    let d = fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    for n in ["software", "breakpoint", "msr"] {
        add_pmu(d.path(), n, 1 + n.len() as u32, None);
    }
    d
}

#[test]
fn x86_hybrid_pmus_map_to_the_recorded_kinds() {
    let d = i7_1370p();
    let kinds = kinds_of(d.path());
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    add_pmu(d.path(), "cpu_core", 4, Some("0-11"));
    add_pmu(d.path(), "cpu_atom", 10, Some("12-19"));
    let m = map_pmus(&FsRoot::at(d.path()).unwrap(), &kinds).unwrap();
    let got: Vec<(&str, u32, SfKind)> = m
        .pmus
        .iter()
        .map(|p| (p.pmu.as_str(), p.type_id, p.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("cpu_core", 4, SfKind::Big),
            ("cpu_atom", 10, SfKind::Small)
        ]
    );
    assert_eq!(m.big.to_list_string(), "0-11");
    assert_eq!(m.small.to_list_string(), "12-19");
    assert_eq!(
        m.pmus[0].kind_name,
        kinds.iter().max_by_key(|k| k.rank).unwrap().name
    );
}

#[test]
fn arm_cluster_pmus_map_by_their_cpus_file() {
    let d = fixture("2arm-2c");
    // Two clusters of one CPU each, declared (the dump has one kind).
    let kinds = vec![k("Cortex-A55", 0, "0"), k("Cortex-A76", 1, "1")];
    add_pmu(d.path(), "armv8_pmuv3_0", 8, Some("0"));
    add_pmu(d.path(), "armv8_pmuv3_1", 9, Some("1"));
    // An uncore PMU (cpumask, no cpus) is not a core PMU.
    add_pmu(d.path(), "arm_dsu_0", 12, None);
    fs::write(d.path().join("sys/devices/arm_dsu_0/cpumask"), "0\n").unwrap();
    let m = map_pmus(&FsRoot::at(d.path()).unwrap(), &kinds).unwrap();
    let got: Vec<(&str, SfKind, &str)> = m
        .pmus
        .iter()
        .map(|p| (p.pmu.as_str(), p.kind, p.kind_name.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("armv8_pmuv3_0", SfKind::Small, "Cortex-A55"),
            ("armv8_pmuv3_1", SfKind::Big, "Cortex-A76")
        ]
    );
}

#[test]
fn three_kinds_big_is_the_fastest_and_the_rest_small() {
    let d = i7_1370p();
    // Meteor Lake-like: P, E and LP E-cores, declared over the 20 CPUs.
    let kinds = vec![
        k("LP E-core", 0, "18-19"),
        k("E-core", 1, "12-17"),
        k("P-core", 2, "0-11"),
    ];
    add_pmu(d.path(), "cpu_core", 4, Some("0-11"));
    add_pmu(d.path(), "cpu_atom", 10, Some("12-17"));
    add_pmu(d.path(), "cpu_lowpower", 11, Some("18-19"));
    let m = map_pmus(&FsRoot::at(d.path()).unwrap(), &kinds).unwrap();
    let kinds_of: Vec<SfKind> = m.pmus.iter().map(|p| p.kind).collect();
    assert_eq!(kinds_of, vec![SfKind::Big, SfKind::Small, SfKind::Small]);
    assert_eq!(m.small.to_list_string(), "12-19");
}

#[test]
fn missing_pmus_files_and_kinds_are_typed_reasons() {
    // No core PMU: the recorded machine as it is.
    let d = i7_1370p();
    let kinds = kinds_of(d.path());
    let fsr = FsRoot::at(d.path()).unwrap();
    let e = map_pmus(&fsr, &kinds).unwrap_err();
    assert!(matches!(e, SfUnavailable::NoPmu(_)), "{e:?}");
    assert!(e.to_string().starts_with("no hardware PMU"), "{e}");

    // One core PMU (x86 non-hybrid `cpu`).
    add_pmu(d.path(), "cpu", 4, None);
    let e = map_pmus(&fsr, &kinds).unwrap_err();
    assert_eq!(e, SfUnavailable::OnePmu { pmu: "cpu".into() });
    assert!(e
        .to_string()
        .contains("cannot tell a thread's speed per kind"));
    fs::remove_file(d.path().join("sys/bus/event_source/devices/cpu")).unwrap();

    // Two PMUs, one of them without its cpus file.
    add_pmu(d.path(), "cpu_core", 4, Some("0-11"));
    add_pmu(d.path(), "cpu_atom", 10, None);
    let e = map_pmus(&fsr, &kinds).unwrap_err();
    assert!(e.to_string().contains("cpu_atom/cpus is missing"), "{e}");

    // Both PMUs on the P-cores: the E-cores have none.
    fs::write(d.path().join("sys/devices/cpu_atom/cpus"), "0-3\n").unwrap();
    let e = map_pmus(&fsr, &kinds).unwrap_err();
    assert!(
        matches!(&e, SfUnavailable::KindWithoutPmu { cpus, .. } if cpus == "12-19"),
        "{e:?}"
    );

    // Kinds declared across the PMUs: cpu_core spans P and E CPUs.
    let split = vec![k("E-core", 0, "8-19"), k("P-core", 1, "0-7")];
    fs::write(d.path().join("sys/devices/cpu_atom/cpus"), "12-19\n").unwrap();
    let e = map_pmus(&fsr, &split).unwrap_err();
    assert_eq!(
        e,
        SfUnavailable::PmuSpansKinds {
            pmu: "cpu_core".into(),
            cpus: "0-11".into()
        }
    );

    // One kind only.
    let one = vec![k("P-core", 0, "0-19")];
    fs::write(d.path().join("sys/devices/cpu_atom/cpus"), "12-19\n").unwrap();
    let e = map_pmus(&fsr, &one).unwrap_err();
    assert_eq!(
        e,
        SfUnavailable::OneKind {
            kind: "P-core".into()
        }
    );
}

fn reading(running_ns: u64, instr: u64, l1: u64, br: u64) -> GroupReading {
    GroupReading {
        time_enabled_ns: running_ns,
        time_running_ns: running_ns,
        values: vec![instr, instr / 2, l1, br],
    }
}

#[test]
fn windows_through_the_estimator_give_ips_big_over_ips_small() {
    let mut e = SfEstimator::new(SfParams::default());
    let mut big = reading(0, 0, 0, 0);
    let mut small = reading(0, 0, 0, 0);
    let min = Duration::from_millis(2);
    for i in 0..5 {
        // 100 ms on each kind per period: 3e8 instr on big (3e9 IPS),
        // 1.2e8 on small (1.2e9 IPS); 300 L1 loads/Ki, 10% branches.
        let nb = reading(
            big.time_running_ns + 100_000_000,
            big.values[0] + 300_000_000,
            big.values[2] + 90_000_000,
            big.values[3] + 30_000_000,
        );
        let ns = reading(
            small.time_running_ns + 100_000_000,
            small.values[0] + 120_000_000,
            small.values[2] + 36_000_000,
            small.values[3] + 12_000_000,
        );
        e.add(window(SfKind::Big, Some(&big), &nb, min).unwrap());
        assert_eq!(e.estimate(), None, "period {i}: not 5 samples on small yet");
        e.add(window(SfKind::Small, Some(&small), &ns, min).unwrap());
        (big, small) = (nb, ns);
    }
    assert!((e.estimate().unwrap() - 2.5).abs() < 1e-9);
    // Running on small in the same phase: the phase cache predicts 2.5.
    assert_eq!(e.phases(), 1);
    assert!((e.predict().unwrap() - 2.5).abs() < 1e-9);
}

#[test]
fn this_machine_says_why_or_maps_its_pmus() {
    let fs = FsRoot::live();
    let topo = pinsight_topology::discover(&fs);
    let kinds: Vec<KindCpus> = topo.kinds.iter().map(KindCpus::from).collect();
    match SfSampler::new(&fs, &kinds, SfOptions::default()) {
        Err(e) => {
            // Unavailable here: the reason must be the one this machine
            // gives (read independently of pinsight), never a zero.
            let text = e.to_string();
            assert!(!text.is_empty() && !text.contains(" 0 "), "{text}");
            let core_pmus = std::fs::read_dir("/sys/bus/event_source/devices")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n == "cpu" || n.starts_with("cpu_") || n.starts_with("armv"))
                        .count()
                })
                .unwrap_or(0);
            match core_pmus {
                0 => assert!(matches!(e, SfUnavailable::NoPmu(_)), "{text}"),
                1 => assert!(
                    matches!(
                        e,
                        SfUnavailable::OnePmu { .. } | SfUnavailable::OneKind { .. }
                    ),
                    "{text}"
                ),
                _ if topo.kinds.len() < 2 => {
                    assert!(matches!(e, SfUnavailable::OneKind { .. }), "{text}")
                }
                _ => {}
            }
        }
        Ok(s) => {
            assert!(s.pmus().pmus.len() >= 2);
            assert!(!s.pmus().big.intersects(&s.pmus().small));
        }
    }
}

#[test]
fn the_probe_alternates_kinds_and_restores_affinity_on_drop() {
    let allowed = pinsight_sys::affinity::get_affinity(0).unwrap();
    if allowed.len() < 2 {
        return pinsight_testkit::skip("the probe test needs two allowed CPUs");
    }
    let first = allowed.first().unwrap();
    let pmus = SfPmus {
        pmus: Vec::new(),
        big: CpuSet::single(first),
        small: allowed.difference(&CpuSet::single(first)),
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        tid_tx.send(pinsight_sys::affinity::gettid()).unwrap();
        let _ = rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    {
        let mut probe = AffinityProbe::new(&pmus);
        let (k, errors) = probe.pin_next(&[tid]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(k, SfKind::Big);
        assert_eq!(pinsight_sys::affinity::get_affinity(tid).unwrap(), pmus.big);
        let (k, _) = probe.pin_next(&[tid]);
        assert_eq!(k, SfKind::Small);
        assert_eq!(
            pinsight_sys::affinity::get_affinity(tid).unwrap(),
            pmus.small
        );
    }
    assert_eq!(pinsight_sys::affinity::get_affinity(tid).unwrap(), allowed);
    tx.send(()).unwrap();
    t.join().unwrap();
}

proptest! {
    /// Any pair of readings: a sample only with enough running time and
    /// instructions, and then with finite, positive figures and a branch
    /// fraction in [0, 1].
    #[test]
    fn windows_are_finite_and_honest(
        prev in proptest::collection::vec(any::<u64>(), 0..5),
        now in proptest::collection::vec(any::<u64>(), 0..5),
        r0 in any::<u64>(), r1 in any::<u64>(), min_us in 0u64..10_000,
    ) {
        let p = GroupReading { time_enabled_ns: r0, time_running_ns: r0, values: prev };
        let n = GroupReading { time_enabled_ns: r1, time_running_ns: r1, values: now };
        let min = Duration::from_micros(min_us);
        if let Some(s) = window(SfKind::Small, Some(&p), &n, min) {
            prop_assert!(s.instructions >= 1.0 && s.instructions.is_finite());
            prop_assert!(s.seconds > 0.0 && s.seconds.is_finite());
            prop_assert!((r1 - r0) as u128 >= min.as_nanos());
            if let Some(c) = s.control {
                prop_assert!(c.l1_per_kilo_instr.is_finite() && c.l1_per_kilo_instr >= 0.0);
                prop_assert!((0.0..=1.0).contains(&c.branch_fraction));
            }
        }
    }
}
