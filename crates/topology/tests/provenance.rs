//! Capacity provenance: which source of the capacity chain
//! ranked the kinds, what every other source said, and the warnings when
//! sources contradict each other or the max frequency is flat on a
//! machine with two core types. Hand-made machines from `common/synth.rs`
//! (committed under `fixtures/synthetic/`) and a recorded AMD server with
//! amd_pstate files added.

use crate::common;
use crate::common::set;

use common::synth;
use pinsight_cpuset::CpuSet;
use pinsight_model::{CapacitySource, KindSource, RankSource, SourceStatus, Topology, ValueRange};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;

fn committed(name: &str) -> Topology {
    discover(&FsRoot::at(common::synthetic(name)).unwrap())
}

fn status(t: &Topology, s: CapacitySource) -> SourceStatus {
    t.provenance
        .source(s)
        .unwrap_or_else(|| panic!("{s:?} not recorded"))
        .status
}

fn range(min: u32, max: u32) -> Option<ValueRange> {
    Some(ValueRange { min, max })
}

#[test]
fn raptor_lake_with_flat_firmware_is_ranked_by_core_type_with_a_warning() {
    let t = committed("raptorlake-flat-firmware");
    let sets: Vec<CpuSet> = t.kinds.iter().map(|k| k.cpus.clone()).collect();
    assert_eq!(
        sets,
        vec![set("12-19"), set("0-11")],
        "P-cores above E-cores"
    );
    assert_eq!(t.kinds[1].name, "P-core");
    assert_eq!(t.kinds[0].name, "E-core");
    common::assert_ranked_by(&t, RankSource::CoreType);
    assert_eq!(t.provenance.winner, None);
    assert_eq!(
        status(&t, CapacitySource::CpuCapacity),
        SourceStatus::Absent
    );
    for s in [
        CapacitySource::CppcHighestPerf,
        CapacitySource::CppcNominalPerf,
        CapacitySource::MaxFrequency,
        CapacitySource::BaseFrequency,
    ] {
        assert_eq!(status(&t, s), SourceStatus::Identical, "{s:?}");
    }
    assert_eq!(t.warnings.len(), 1, "{:#?}", t.warnings);
    let w = &t.warnings[0];
    common::assert_mentions(
        w,
        &[
            "/sys/devices/system/cpu/cpu*/cpufreq/cpuinfo_max_freq",
            "every CPU reports 4800 MHz",
            "/sys/devices/cpu_core/cpus and /sys/devices/cpu_atom/cpus",
            "by core type",
        ],
    );
    assert!(
        t.kinds.iter().all(|k| k.capacity.is_none()),
        "no source gives a capacity ratio"
    );
}

#[test]
fn a_source_identical_on_every_cpu_is_skipped_even_first_in_the_chain() {
    // The phone with every cpu_capacity 1024 (firmware that fills in a
    // constant): the max frequencies rank the kinds instead.
    let mut m = synth::arm_phone();
    m.cpus.iter_mut().for_each(|c| c.capacity = Some(1024));
    let dir = common::tempdir();
    m.write(dir.path());
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(
        status(&t, CapacitySource::CpuCapacity),
        SourceStatus::Identical
    );
    // No kernel capacity orders the kinds, so the Arm core table times
    // each kind's max clock does (X1 prime, A76 big, A55 little); max
    // frequency, consulted after it, agrees.
    assert_eq!(t.provenance.winner, None);
    assert_eq!(t.kinds[2].name, "Cortex-X1");
    assert_eq!(t.kinds[0].name, "Cortex-A55");
    common::assert_ranked_by(&t, RankSource::MicroarchTable);
    assert_eq!(t.provenance.capacity_from, None);
    let cap0 = t.kinds[0].capacity.unwrap();
    let want = 0.45 * 1804.0 / (1.06 * 2841.0);
    assert!((cap0 - want).abs() < 1e-9, "{cap0}");
    let c = t.capacity(0).unwrap();
    assert_eq!(c.source, pinsight_model::CapacityOrigin::MicroarchTable);
    assert_eq!(c.value, cap0);
    assert_eq!(
        t.provenance
            .source(CapacitySource::MaxFrequency)
            .and_then(|e| e.agrees),
        Some(true)
    );
}

#[test]
fn amd_strix_point_has_zen5_above_zen5c_ranked_by_prefcore() {
    let t = committed("amd-strix-point");
    assert_eq!(t.kinds.len(), 2, "{:#?}", t.kinds);
    assert_eq!(t.kinds[0].cpus, set("4-11,16-23"));
    assert_eq!(t.kinds[1].cpus, set("0-3,12-15"));
    assert_eq!(t.kinds[0].name, "Zen5c");
    assert_eq!(t.kinds[1].name, "Zen5");
    assert_eq!(t.kinds[0].source, KindSource::Frequency);
    common::assert_ranked_by(&t, RankSource::AmdPrefcoreRanking);
    let p = &t.provenance;
    assert_eq!(p.winner, Some(CapacitySource::AmdPrefcoreRanking));
    let rank = p.source(CapacitySource::AmdPrefcoreRanking).unwrap();
    assert_eq!(rank.kinds, vec![range(151, 166), range(221, 236)]);
    assert_eq!(rank.agrees, Some(true));
    for s in [
        CapacitySource::AmdHighestPerf,
        CapacitySource::CppcHighestPerf,
        CapacitySource::MaxFrequency,
    ] {
        let e = p.source(s).unwrap();
        assert_eq!(
            (e.status, e.agrees),
            (SourceStatus::Consulted, Some(true)),
            "{s:?}"
        );
    }
    assert_eq!(
        status(&t, CapacitySource::CppcNominalPerf),
        SourceStatus::Identical
    );
    assert_eq!(
        status(&t, CapacitySource::BaseFrequency),
        SourceStatus::Identical
    );
    // A ranking is not a capacity: the ratio comes from CPPC highest_perf.
    assert_eq!(p.capacity_from, Some(CapacitySource::CppcHighestPerf));
    let c = t.kinds[0].capacity.unwrap();
    assert!((c - 146.0 / 196.0).abs() < 1e-9, "{c}");
    assert_eq!(t.kinds[1].capacity, Some(1.0));
    let d = p.cpu(5).unwrap();
    assert_eq!(
        (d.source, d.value),
        (CapacitySource::AmdPrefcoreRanking, 161)
    );
    assert_eq!(p.cpus.len(), 24);
    assert!(t.warnings.is_empty(), "{:#?}", t.warnings);
}

#[test]
fn capacity_and_cppc_disagreeing_is_warned_naming_both_files() {
    let t = committed("arm-capacity-cppc-disagree");
    assert_eq!(t.kinds[0].cpus, set("0-3"));
    assert_eq!(t.kinds[1].cpus, set("4-7"));
    assert_eq!(t.kinds[1].name, "Cortex-A76");
    assert_eq!(t.provenance.winner, Some(CapacitySource::CpuCapacity));
    assert_eq!(t.kinds[0].rank_source, RankSource::Capacity);
    let cppc = t
        .provenance
        .source(CapacitySource::CppcHighestPerf)
        .unwrap();
    assert_eq!(cppc.agrees, Some(false));
    assert_eq!(cppc.kinds, vec![range(260, 260), range(100, 100)]);
    let freq = t.provenance.source(CapacitySource::MaxFrequency).unwrap();
    assert_eq!(freq.agrees, Some(true));
    let w = t
        .warnings
        .iter()
        .find(|w| w.contains("acpi_cppc/highest_perf"))
        .unwrap_or_else(|| panic!("no CPPC warning in {:#?}", t.warnings));
    common::assert_mentions(
        w,
        &[
            "/sys/devices/system/cpu/cpu4/cpu_capacity = 1024",
            "/sys/devices/system/cpu/cpu0/cpu_capacity = 400",
            "/sys/devices/system/cpu/cpu0/acpi_cppc/highest_perf = 260",
            "/sys/devices/system/cpu/cpu4/acpi_cppc/highest_perf = 100",
            "kept the order of cpu_capacity",
        ],
    );
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("acpi_cppc/nominal_perf")),
        "nominal_perf disagrees too: {:#?}",
        t.warnings
    );
    assert_eq!(t.warnings.len(), 2, "{:#?}", t.warnings);
}

use pinsight_testkit::copy_tree as copy_dir;
/// A homogeneous AMD server whose preferred-core rankings (and the max
/// frequencies amd_pstate derives from them) spread 166..236 over its
/// identical cores stays ONE kind (hwloc splits a Threadripper 7000 by
/// frequency); the ranking orders the CPUs inside it.
#[test]
fn homogeneous_amd_with_preferred_cores_stays_one_kind() {
    let dir = common::tempdir();
    copy_dir(&common::hwloc("64amd64-4s2n4ca2co"), dir.path());
    let cpu_dir = dir.path().join("sys/devices/system/cpu");
    for c in 0..64u32 {
        let f = cpu_dir.join(format!("cpu{c}/cpufreq"));
        std::fs::create_dir_all(&f).unwrap();
        // 166 + c * 70 / 63: from 166 (cpu0) to 236 (cpu63).
        let ranking = 166 + c * 70 / 63;
        let khz = 4_600_000 + (ranking - 166) * 7_000;
        for (name, v) in [
            ("amd_pstate_prefcore_ranking", ranking),
            ("amd_pstate_highest_perf", ranking),
            ("cpuinfo_max_freq", khz),
            ("base_frequency", 3_200_000),
        ] {
            std::fs::write(f.join(name), format!("{v}\n")).unwrap();
        }
    }
    let t = discover(&FsRoot::at(dir.path()).unwrap());
    assert_eq!(t.kinds.len(), 1, "{:#?}", t.kinds);
    assert_eq!(t.kinds[0].cpus, set("0-63"));
    assert_eq!(t.kinds[0].rank_source, RankSource::Uniform);
    let p = &t.provenance;
    assert_eq!(p.winner, Some(CapacitySource::AmdPrefcoreRanking));
    assert_eq!(
        p.source(CapacitySource::AmdPrefcoreRanking).unwrap().kinds,
        vec![range(166, 236)]
    );
    assert_eq!(p.cpu(63).unwrap().value, 236);
    assert_eq!(p.cpu(0).unwrap().value, 166);
    common::assert_not_warned(&t, "core kinds", "one kind ranked by preferred cores");
}

#[test]
fn provenance_is_part_of_the_topology_json() {
    let t = committed("amd-strix-point");
    let v = serde_json::to_value(&t).unwrap();
    let p = &v["provenance"];
    assert_eq!(p["winner"], "amd-prefcore-ranking");
    assert_eq!(p["capacity_from"], "cppc-highest-perf");
    assert_eq!(p["sources"][0]["source"], "cpu-capacity");
    assert_eq!(p["sources"][0]["status"], "absent");
    assert_eq!(p["sources"][1]["kinds"][1]["max"], 236);
    assert_eq!(p["cpus"][0]["source"], "amd-prefcore-ranking");
    let back: Topology = serde_json::from_value(v).unwrap();
    assert_eq!(back.provenance, t.provenance);
    // Older JSON without the field still loads.
    let mut old = serde_json::to_value(&t).unwrap();
    old.as_object_mut().unwrap().remove("provenance");
    let back: Topology = serde_json::from_value(old).unwrap();
    assert!(back.provenance.sources.is_empty());
}

mod chain_properties {
    use super::*;
    use proptest::prelude::*;

    /// Per CPU: (cpu_capacity, AMD ranking, CPPC highest, max MHz), each
    /// maybe absent, drawn from a few values so ties and flat sources occur.
    fn cpu_values() -> impl Strategy<Value = Vec<[Option<u32>; 4]>> {
        let v = || proptest::option::of(prop_oneof![Just(100u32), Just(400), Just(1024)]);
        proptest::collection::vec([v(), v(), v(), v()], 8)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Whatever the sources say: the kinds partition the online CPUs,
        /// every source has one value range per kind, the winner orders the
        /// kinds strictly, and every CPU's deciding value is its own.
        #[test]
        fn the_chain_is_consistent(vals in cpu_values(), atom in 0usize..8) {
            let mut m = synth::small_smt(|_| (3_000_000, 2_000_000));
            for (c, v) in m.cpus.iter_mut().zip(&vals) {
                c.capacity = v[0];
                c.amd_pstate = v[1].map(|r| (r, r));
                c.cppc = v[2].map(|h| (h, 50));
                c.max_khz = v[3].map(|mhz| u64::from(mhz) * 10_000);
            }
            // Sometimes two core types.
            if atom > 0 {
                m.pmus = vec![
                    ("cpu_core", CpuSet::parse_list(&format!("0-{}", atom - 1)).unwrap()),
                    ("cpu_atom", CpuSet::parse_list(&format!("{atom}-7")).unwrap()),
                ];
            }
            let dir = common::tempdir();
            m.write(dir.path());
            let t = discover(&FsRoot::at(dir.path()).unwrap());
            let all = t.kinds.iter().fold(CpuSet::new(), |a, k| a.union(&k.cpus));
            prop_assert_eq!(all, t.online());
            let n = t.kinds.len();
            for e in &t.provenance.sources {
                prop_assert_eq!(e.kinds.len(), n);
            }
            if let (Some(w), true) = (t.provenance.winner, n > 1) {
                let e = t.provenance.source(w).unwrap();
                prop_assert_eq!(e.status, SourceStatus::Decided);
                let maxes: Vec<u32> = e.kinds.iter().map(|r| r.unwrap().max).collect();
                prop_assert!(maxes.windows(2).all(|p| p[0] < p[1]), "{:?}", maxes);
                prop_assert!(t.kinds.iter().all(|k| k.rank_source == w.rank_source()));
            }
            for d in &t.provenance.cpus {
                let c = t.cpu(d.cpu).unwrap();
                prop_assert!(c.online);
                let own = match d.source {
                    CapacitySource::CpuCapacity => c.capacity,
                    CapacitySource::CppcHighestPerf => c.cppc.as_ref().and_then(|p| p.highest_perf),
                    CapacitySource::MaxFrequency => c.max_mhz,
                    _ => Some(d.value),
                };
                prop_assert_eq!(own, Some(d.value));
            }
            for w in &t.warnings {
                prop_assert!(w.contains("/sys/devices/"), "names a file: {}", w);
            }
        }
    }
}
