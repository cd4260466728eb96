//! Arm kinds from `/proc/cpuinfo` when the kernel has no
//! `regs/identification/midr_el1`: each processor's `CPU implementer`,
//! `CPU variant`, `CPU part` and `CPU revision` rebuild its MIDR, so big
//! and little cores at one clock (no capacity to tell them apart) are two
//! kinds, ranked by the microarchitecture table. Malformed files leave the
//! identity unknown with a warning, as before the fallback existed.

use crate::common;
use crate::common::{discover_machine, set};

use common::synth::{self, A510, A55, A710, A76, X2};
use pinsight_cpuset::CpuSet;
use pinsight_model::{KindSource, RankSource, Topology};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use pinsight_topology::discover::procinfo::{parse_midrs, MidrError};

fn names(t: &Topology) -> Vec<(String, CpuSet)> {
    t.kinds
        .iter()
        .map(|k| (k.name.clone(), k.cpus.clone()))
        .collect()
}

fn cpuinfo_warnings(t: &Topology) -> Vec<&String> {
    t.warnings
        .iter()
        .filter(|w| w.starts_with("/proc/cpuinfo"))
        .collect()
}

#[test]
fn two_parts_at_one_clock_without_midr_el1_are_two_ranked_kinds() {
    for (little, big, lname, bname) in [
        (A55, A76, "Cortex-A55", "Cortex-A76"),
        (A510, A710, "Cortex-A510", "Cortex-A710"),
        (A510, X2, "Cortex-A510", "Cortex-X2"),
    ] {
        let m = synth::arm_one_clock(little, big, 2_000_000, false);
        let t = discover_machine(&m);
        assert_eq!(
            names(&t),
            vec![
                (lname.to_string(), set("0-3")),
                (bname.to_string(), set("4-7"))
            ],
            "warnings: {:?}",
            t.warnings
        );
        assert!(t.kinds.iter().all(|k| k.source == KindSource::Midr));
        assert!(t
            .kinds
            .iter()
            .all(|k| k.rank_source == RankSource::MicroarchTable));
        assert_eq!(t.kinds[1].rank, 1);
        // The MIDR is rebuilt whole, with the architecture field 0xf.
        assert_eq!(t.cpu(0).unwrap().midr, Some(little));
        assert_eq!(t.cpu(7).unwrap().midr, Some(big));
        let step = &t.provenance.identity[0];
        assert!(
            step.contains("/proc/cpuinfo") && step.contains(lname),
            "{step}"
        );
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    }
}

#[test]
fn midr_el1_and_cpuinfo_agree() {
    let from_cpuinfo = discover_machine(&synth::arm_one_clock(A55, A76, 1_800_000, false));
    let both = discover_machine(&synth::arm_one_clock(A55, A76, 1_800_000, true));
    assert_eq!(names(&both), names(&from_cpuinfo));
    assert_eq!(
        both.kinds.iter().map(|k| k.rank_source).collect::<Vec<_>>(),
        from_cpuinfo
            .kinds
            .iter()
            .map(|k| k.rank_source)
            .collect::<Vec<_>>()
    );
    for c in 0..8 {
        assert_eq!(both.cpu(c).unwrap().midr, from_cpuinfo.cpu(c).unwrap().midr);
    }
    // With midr_el1 the provenance names sysfs, not the fallback.
    assert!(both.provenance.identity[0].contains("regs/identification/midr_el1"));
    assert!(!both.provenance.identity[0].contains("/proc/cpuinfo"));
    assert!(both.warnings.is_empty(), "{:?}", both.warnings);

    // A recorded machine with CPUs offline (GB10, CPUs 0-4): cpuinfo lists
    // only the online ones, and gives the same kinds as midr_el1.
    let gb10 = synth::gb10_low_offline();
    let mut stripped = gb10.clone();
    stripped.cpus.iter_mut().for_each(|c| c.midr = None);
    let (a, b) = (discover_machine(&gb10), discover_machine(&stripped));
    assert_eq!(names(&a), names(&b));
    assert_eq!(b.kinds[0].name, "Cortex-A725");
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
}

/// The one-clock machine with its cpuinfo edited by `edit`.
fn edited(edit: impl Fn(&str) -> String) -> Topology {
    let mut m = synth::arm_one_clock(A55, A76, 2_000_000, false);
    m.cpuinfo = edit(&m.cpuinfo);
    discover_machine(&m)
}

/// Without a usable identity the old behaviour stands: one clock, no
/// capacity, one kind.
fn assert_degraded(t: &Topology, says: &str) {
    assert_eq!(names(t).len(), 1, "{:?}", names(t));
    assert_eq!(t.kinds[0].cpus, set("0-7"));
    assert_ne!(t.kinds[0].source, KindSource::Midr);
    let w = cpuinfo_warnings(t);
    assert_eq!(w.len(), 1, "{:?}", t.warnings);
    assert!(w[0].contains(says), "{}", w[0]);
    assert!(w[0].contains("left the core identity unknown"), "{}", w[0]);
}

#[test]
fn malformed_cpuinfo_degrades_with_a_warning() {
    // Processor 5 lacks its part.
    let t = edited(|text| {
        let blocks: Vec<&str> = text.split("\n\n").collect();
        blocks
            .iter()
            .map(|b| {
                if b.starts_with("processor\t: 5\n") {
                    b.lines()
                        .filter(|l| !l.starts_with("CPU part"))
                        .collect::<Vec<_>>()
                        .join("\n")
                } else {
                    b.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    });
    assert_degraded(&t, "processor 5 has no 'CPU part' line");

    // Processor numbers that are not the online CPUs.
    let t = edited(|text| text.replace("processor\t: 7\n", "processor\t: 9\n"));
    assert_degraded(&t, "describes processors 0-6,9 but CPUs 0-7 are online");
    let t = edited(|text| {
        text.split("\n\n")
            .filter(|b| !b.starts_with("processor\t: 3\n"))
            .collect::<Vec<_>>()
            .join("\n\n")
    });
    assert_degraded(&t, "describes processors 0-2,4-7");

    // Garbled values, repeats.
    let t = edited(|text| text.replacen("CPU part\t: 0xd05", "CPU part\t: 0xd0z5", 1));
    assert_degraded(&t, "'CPU part : 0xd0z5' is not a hex number up to 0xfff");
    let t = edited(|text| text.replacen("CPU implementer\t: 0x41", "CPU implementer\t: 0x141", 1));
    assert_degraded(&t, "is not a hex number up to 0xff");
    let t = edited(|text| text.replacen("CPU revision\t: 0", "CPU revision\t: 16", 1));
    assert_degraded(&t, "is not a decimal number up to 15");
    let t = edited(|text| text.replace("processor\t: 6\n", "processor\t: 5\n"));
    assert_degraded(&t, "processor 5 appears twice");
    let t = edited(|text| text.replace("processor\t: 2\n", "processor\t: two\n"));
    assert_degraded(&t, "'processor : two' is not a CPU number");
}

#[test]
fn cpuinfo_without_per_processor_identity_is_ignored_silently() {
    // x86: no MIDR fields.
    let mut m = synth::arm_one_clock(A55, A76, 2_000_000, false);
    m.cpuinfo = m
        .cpuinfo
        .lines()
        .filter(|l| !l.starts_with("CPU "))
        .map(|l| format!("{l}\n"))
        .collect();
    let t = discover_machine(&m);
    assert_eq!(t.kinds.len(), 1);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // The recorded 32-bit Arm board (Linux before 3.8): the boot CPU's
    // identity once, after the processor blocks, describes no processor.
    let t = discover(&FsRoot::at(common::hwloc("2arm-2c")).unwrap());
    assert!(cpuinfo_warnings(&t).is_empty(), "{:?}", t.warnings);
    assert!(t.kinds.iter().all(|k| k.source != KindSource::Midr));
}

#[test]
fn parse_midrs_rebuilds_the_register() {
    let text = "processor\t: 0\nBogoMIPS\t: 38.40\nCPU implementer\t: 0x41\n\
                CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd05\n\
                CPU revision\t: 0\n\nprocessor\t: 4\nCPU implementer\t: 0x51\n\
                CPU architecture: 8\nCPU variant\t: 0xd\nCPU part\t: 0x805\n\
                CPU revision\t: 14\n";
    let m = parse_midrs(text).unwrap().unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[&0], 0x411f_d050);
    assert_eq!(m[&4], 0x51df_805e);
    assert_eq!(
        parse_midrs("processor\t: 0\nvendor_id\t: GenuineIntel\n\n"),
        Ok(None)
    );
    assert_eq!(parse_midrs(""), Ok(None));
    assert_eq!(
        parse_midrs("processor : 0\nCPU implementer : 0x41\nCPU implementer : 0x41\n"),
        Err(MidrError::DuplicateField {
            cpu: 0,
            field: "CPU implementer"
        })
    );
    assert_eq!(
        parse_midrs("processor : 99999999999999999999999\n"),
        Err(MidrError::BadProcessor("99999999999999999999999".into()))
    );
}
