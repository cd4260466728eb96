//! `pinsight topo --explain` on recorded and hand-made machines: every
//! source of the capacity chain with its values per kind, the winner and
//! why, skipped sources, disagreements; 80 columns; `--json` carries the
//! same facts.

use crate::common_cli;

use crate::common_cmd::on_fsroot;
use common_cli::*;
use std::path::PathBuf;

fn synthetic(name: &str) -> PathBuf {
    pinsight_testkit::fixtures::synthetic(name)
}

fn explain(fsroot: &std::path::Path) -> Out {
    ok(&on_fsroot(fsroot.to_str().unwrap(), "topo --explain"))
}

/// stdout with every line break and its indentation read as one space.
fn prose(o: &Out) -> String {
    o.stdout.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn amd_strix_point_explanation_is_the_golden() {
    let o = explain(&synthetic("amd-strix-point"));
    pinsight_testkit::golden!("topo_explain_amd_strix_point", &o.stdout);
    assert!(o.stdout.contains("DECIDED: first to order every kind"));
    assert!(o.stdout.contains("It is a ranking"));
}

#[test]
fn raptor_lake_with_flat_firmware_explains_the_core_type_order() {
    let o = explain(&synthetic("raptorlake-flat-firmware"));
    pinsight_testkit::golden!("topo_explain_raptorlake_flat_firmware", &o.stdout);
    assert!(o.stdout.contains("identical (4800 on every CPU): skipped"));
    assert!(o.stdout.contains("Order: by core type"));
    assert!(prose(&o).contains("is the same on every CPU although the kinds"));
    assert!(
        o.stderr.contains("every CPU reports 4800 MHz"),
        "the warning goes to stderr: {}",
        o.stderr
    );
}

#[test]
fn disagreeing_sources_are_listed() {
    let o = explain(&synthetic("arm-capacity-cppc-disagree"));
    assert!(o.stdout.contains("DISAGREES"), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("acpi_cppc/highest_perf puts Cortex-A55 above Cortex-A76"),
        "{}",
        o.stdout
    );
    assert!(o
        .stderr
        .contains("/sys/devices/system/cpu/cpu0/acpi_cppc/highest_perf"));
    assert!(o
        .stderr
        .contains("/sys/devices/system/cpu/cpu4/cpu_capacity"));
}

#[test]
fn every_recorded_machine_explains_within_80_columns() {
    let mut roots = hwloc_fixtures();
    for s in [
        "amd-strix-point",
        "raptorlake-flat-firmware",
        "arm-capacity-cppc-disagree",
        "arm-phone-3cluster",
        "meteorlake-lp-ecores",
        "intel-hybrid-laptop",
        "gb10-low-cpus-offline",
    ] {
        roots.push(synthetic(s));
    }
    for root in roots {
        let o = explain(&root);
        assert!(o.stdout.contains("Capacity chain"), "{}", root.display());
        for line in o.stdout.lines() {
            assert!(
                line.chars().count() <= 80,
                "{}: {} columns: {line}",
                root.display(),
                line.chars().count()
            );
        }
    }
}

#[test]
fn json_explain_carries_the_provenance() {
    let root = synthetic("amd-strix-point");
    let root = root.to_str().unwrap();
    let o = ok(&on_fsroot(root, "--json topo --explain"));
    let v = o.json();
    assert_eq!(v["provenance"]["winner"], "amd-prefcore-ranking");
    assert_eq!(v["kinds"][1]["name"], "Zen5");
    assert_eq!(v["kinds"][0]["rank_source"], "amd-prefcore-ranking");
    // The same object as in the full topology JSON.
    let full = ok(&on_fsroot(root, "--json topo")).json();
    assert_eq!(full["provenance"], v["provenance"]);
}

#[test]
fn hwloc_xml_has_no_capacity_chain_and_says_so() {
    let xml = xml_fixture("20em64t-hybrid-1p6c2t+2ca4co1t.hwloc29.xml");
    let o = ok(&["--hwloc-xml", xml.to_str().unwrap(), "topo", "--explain"]);
    assert!(o.stdout.contains("No capacity chain"), "{}", o.stdout);
}

#[test]
fn help_documents_explain() {
    let o = ok(&["topo", "--help"]);
    assert!(
        prose(&o).contains("--explain Explain the kinds' order"),
        "{}",
        o.stdout
    );
    assert!(prose(&o).contains("capacity chain"), "{}", o.stdout);
}
