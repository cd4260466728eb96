//! `--near DEVICE` end to end on a recorded machine with a device added:
//! hwloc's `16amd64-8n2c` (8 NUMA nodes of 2 CPUs, node N = CPUs 2N, 2N+1)
//! copied into a temporary directory, with one Ethernet controller at
//! `0000:02:00.0` (`eth0`) local to node 2 (CPUs 4-5), laid out as the
//! kernel does (`sys/bus/pci/devices/ADDR` a link into `sys/devices/pci…`).
//!
//! These tests need device discovery (PCI devices from
//! `sys/bus/pci/devices`) to find `eth0`.

use crate::common_cli;

use common_cli::*;
use std::path::{Path, PathBuf};

use pinsight_testkit::copy_tree;
/// The recorded machine plus `eth0` on node 2.
fn machine_with_nic() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("m");
    copy_tree(&hwloc_fixture("16amd64-8n2c"), &root);
    let dev = root.join("sys/devices/pci0000:00/0000:00:03.0/0000:02:00.0");
    std::fs::create_dir_all(dev.join("net/eth0")).unwrap();
    for (file, value) in [
        ("class", "0x020000"),
        ("vendor", "0x8086"),
        ("device", "0x1572"),
        ("numa_node", "2"),
        ("local_cpulist", "4-5"),
        ("net/eth0/uevent", "INTERFACE=eth0"),
    ] {
        std::fs::write(dev.join(file), format!("{value}\n")).unwrap();
    }
    let bus = root.join("sys/bus/pci/devices");
    std::fs::create_dir_all(&bus).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:00/0000:00:03.0/0000:02:00.0",
        bus.join("0000:02:00.0"),
    )
    .unwrap();
    (tmp, root)
}

fn plan(root: &Path, args: &[&str]) -> Out {
    let mut argv = vec!["--fsroot", root.to_str().unwrap(), "plan"];
    argv.extend_from_slice(args);
    pinsight(&argv).run()
}

#[test]
fn near_places_on_the_devices_cpus_and_says_why() {
    let (_tmp, root) = machine_with_nic();
    for name in ["eth0", "0000:02:00.0", "02:00.0", "nic0"] {
        let o = plan(&root, &["compact", "--near", name, "--json"]);
        assert_eq!(o.code, 0, "--near {name}: {}", o.stderr);
        let doc = o.json();
        assert_eq!(doc["process_mask"], "4-5", "--near {name}");
        assert_eq!(doc["near"]["numa_node"], 2);
    }
    let o = plan(&root, &["compact", "--near", "eth0"]);
    assert!(
        o.stdout
            .contains("note: CPUs 4-5: local to eth0 (NUMA node 2)"),
        "{}",
        o.stdout
    );
    // --mem local near the device: memory on the device's node.
    let o = plan(
        &root,
        &[
            "scatter", "--near", "eth0", "--mem", "local", "--format", "numactl",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "numactl --membind=2 --physcpubind=4-5\n");
}

#[test]
fn unknown_device_is_a_usage_error_listing_known_ones() {
    let (_tmp, root) = machine_with_nic();
    let o = plan(&root, &["compact", "--near", "eth9"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(
        o.first_err_line(),
        "pinsight: error: --near: no device 'eth9' (known: eth0)"
    );
    // More threads than the device has CPUs: refused like any pinned plan.
    let o = plan(&root, &["compact", "--near", "eth0", "-t", "3"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.first_err_line().contains("only 2 CPUs (4-5)"),
        "{}",
        o.stderr
    );
}
