//! The report's picture and suggestions with memory nodes and devices
//! on models built by hand from the fake device tree
//! (`crates/topology/tests/fixtures/synthetic/fake-devices.tar.gz`: 8 NUMA nodes
//! of 2 CPUs, eth0 on node 0, nvme0n1 on node 1, card0 on node 2, an
//! InfiniBand card on node 3 through its bridge).

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_model::{
    DeviceClass, DeviceLocalitySource, MemoryKind, NumaNode, OsDevice, OsDeviceKind, PciDevice,
};
use pinsight_report::view::{html, topology_svg};
use pinsight_report::{device_sentences, suggestions, ReportData};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;

fn fake_devices() -> Topology {
    let dir = pinsight_testkit::fixtures::synthetic("fake-devices");
    discover(&FsRoot::at(dir).unwrap())
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// The fake tree with memory facts filled in by hand (as discovery of
/// memory does on machines that tell): DRAM sizes, a 16 GiB HBM node
/// without CPUs near CPUs 4-5, and a device whose OS name needs escaping
/// and whose locality is unknown.
fn model() -> Topology {
    let mut t = fake_devices();
    for n in &mut t.numa_nodes {
        n.memory_mib = Some(8192);
        n.memory.kind = Some(MemoryKind::Dram);
    }
    let mut hbm = NumaNode::new(8, CpuSet::new(), Some(16384));
    hbm.memory.kind = Some(MemoryKind::Hbm);
    hbm.memory.locality = cpus("4-5");
    t.numa_nodes.push(hbm);
    t.devices.push(PciDevice {
        address: "0000:c1:00.0".into(),
        class: DeviceClass::Network,
        class_code: 0x020000,
        vendor: 0x1d0f,
        device: 0xefa1,
        numa_node: None,
        local_cpus: cpus("0-15"),
        locality_source: DeviceLocalitySource::Unknown,
        os_devices: vec![OsDevice {
            name: "<b>&x".into(),
            kind: OsDeviceKind::Net,
        }],
    });
    t
}

/// Where `needle` first appears in `hay`.
fn at(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the picture"))
}

#[test]
fn picture_hangs_devices_and_memory_nodes_under_their_cpus() {
    let t = model();
    let svg = topology_svg(&t);
    pinsight_testkit::golden!("picture_fake_devices", &svg);
    // Boxes are written nested, in order: a chip lies between the label of
    // the box it hangs in and the next box's label.
    let node = |n: u32| at(&svg, &format!("NUMA node {n} (8 GiB DRAM)"));
    let eth0 = at(&svg, "network 0000:01:00.0 · eth0");
    assert!(node(0) < eth0 && eth0 < node(1), "eth0 in node 0");
    let nvme = at(&svg, "nvme 0000:00:02.0 · nvme0, nvme0n1");
    assert!(node(1) < nvme && nvme < node(2), "nvme in node 1");
    let gpu = at(&svg, "gpu 0000:41:00.0 · card0, renderD128");
    let hbm = at(&svg, "NUMA node 8 · 16 GiB HBM");
    assert!(node(2) < gpu && gpu < node(3) && node(2) < hbm && hbm < node(3));
    let ib = at(&svg, "infiniband 0000:81:00.0 · ib0, mlx5_0");
    assert!(
        node(3) < ib && ib < node(4),
        "InfiniBand in node 3 (bridge)"
    );
    // Unknown locality: at the top, after every node.
    let odd = at(&svg, "network 0000:c1:00.0 · &lt;b&gt;&amp;x");
    assert!(odd > node(7));
    assert!(!svg.contains("<b>"), "OS names are escaped");
    assert!(svg.contains("local CPUs 6-7, NUMA node 3</title>"));
}

#[test]
fn html_report_escapes_device_names() {
    let t = model();
    let data = ReportData {
        suggestions: suggestions(&t, None, None, None),
        ..crate::report::report_data(t)
    };
    let page = html(&data);
    assert!(!page.contains("<b>&x"), "raw OS name in the page");
    assert!(page.contains("&lt;b&gt;&amp;x"));
}

#[test]
fn suggestions_name_devices_away_from_the_chosen_node() {
    let t = model();
    let s = suggestions(&t, None, None, None);
    let devices: Vec<&String> = s.iter().filter(|l| l.contains("--near")).collect();
    pinsight_testkit::golden!(
        "suggestions_fake_devices",
        &devices
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    );
    // `compact` starts on node 0 where eth0 sits: three devices are away,
    // the unknown-locality one says nothing.
    assert_eq!(devices.len(), 3, "{devices:#?}");
    assert_eq!(
        devices[2].as_str(),
        "ib0 (infiniband 0000:81:00.0) sits on NUMA node 3, CPUs 6-7, away from the CPUs \
         `compact` chose (NUMA node 0, CPUs 0-1): give the threads that feed it CPUs 6-7 \
         (`--near ib0`)."
    );
    // A plan on node 3 is told about the others, not about the IB card.
    let other = device_sentences(&t, &cpus("6-7"), "policy p-pinned");
    assert!(other.iter().any(|l| l.starts_with("eth0 (network 0000:01:00.0) sits on NUMA node 0, CPUs 0-1, away from the CPUs policy p-pinned chose (NUMA node 3, CPUs 6-7)")), "{other:#?}");
    assert!(other.iter().all(|l| !l.contains("ib0")));
    // One node, nothing to say.
    let mut one = fake_devices();
    one.numa_nodes.truncate(1);
    one.numa_nodes[0].cpus = one.online();
    assert!(suggestions(&one, None, None, None)
        .iter()
        .all(|l| !l.contains("--near")));
}
