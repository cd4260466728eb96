//! PCI device discovery on recorded machines from
//! hwloc's test set, checked against hwloc's expected XML, and on the
//! hand-made `synthetic/fake-devices` tree (its README lists the devices).
//!
//! Expected values come from hwloc's XML where hwloc and the sysfs files
//! agree: each `PCIDev`'s locality is the CPU set of the object its host
//! bridge hangs under, its OS names are its `OSDev` children. Two known
//! differences, asserted as such:
//! - `fakepcilocalities.xml` was produced with `HWLOC_PCI_LOCALITY`
//!   overriding the files (see its `.test`): bus 0x43 is forced onto CPUs
//!   33 and 37 while its `local_cpus` file says package 1 (CPUs 1, 5, ...,
//!   37). pinsight reads the files, so it keeps package 1, a superset of the
//!   override.
//! - hwloc places a whole host bridge by one locality; a device with its
//!   own narrower `local_cpulist` (the NVMe `0000:00:02.0` of
//!   `32em64t-2n8c+dax+nvme+mic+dimms`: CPUs 0-3, `numa_node` -1) keeps its own in
//!   pinsight, a subset of hwloc's package.

use crate::common;

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_model::{DeviceClass, DeviceLocalitySource, OsDeviceKind, PciDevice};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use std::collections::BTreeMap;

fn load(rel: &str) -> Topology {
    let fs = FsRoot::at(common::machine(rel)).expect("fixture");
    discover(&fs)
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

fn names(d: &PciDevice) -> Vec<&str> {
    d.os_devices.iter().map(|o| o.name.as_str()).collect()
}

/// What hwloc's XML says of one PCI device.
#[derive(Debug)]
struct XmlDev {
    /// The 16-bit class (`0200`).
    class: u32,
    /// The CPU set of the nearest ancestor that has one.
    locality: CpuSet,
    /// Its block, network and OpenFabrics OS devices.
    os_names: Vec<String>,
}

/// Every `PCIDev` of an hwloc XML export, by bus id.
fn xml_devices(xml: &str) -> BTreeMap<String, XmlDev> {
    let text = std::fs::read_to_string(common::fixtures().join("hwloc").join(xml)).unwrap();
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, opts).unwrap();
    let mut out = BTreeMap::new();
    for n in doc
        .descendants()
        .filter(|n| n.attribute("type") == Some("PCIDev"))
    {
        let busid = n.attribute("pci_busid").unwrap().to_string();
        let class = u32::from_str_radix(&n.attribute("pci_type").unwrap()[..4], 16).unwrap();
        let locality = n
            .ancestors()
            .find_map(|a| a.attribute("cpuset"))
            .map(|c| CpuSet::parse_hwloc(c, 4096).unwrap())
            .unwrap();
        let os_names = n
            .children()
            .filter(|c| c.attribute("type") == Some("OSDev"))
            // 1 block, 16 network, 48 OpenFabrics (hwloc's osdev_type bits).
            .filter(|c| matches!(c.attribute("osdev_type"), Some("1" | "16" | "48")))
            .map(|c| c.attribute("name").unwrap().to_string())
            .collect();
        out.insert(
            busid,
            XmlDev {
                class,
                locality,
                os_names,
            },
        );
    }
    out
}

/// Our devices match hwloc's: the same set of placement-class devices,
/// the same OS names; localities compared by `same_locality`.
fn check_against_hwloc(
    t: &Topology,
    xml: &str,
    same_locality: impl Fn(&PciDevice, &CpuSet) -> bool,
) -> usize {
    let expected = xml_devices(xml);
    let wanted: Vec<&String> = expected
        .iter()
        .filter(|(_, x)| DeviceClass::from_pci_class(x.class << 8).is_some())
        .map(|(b, _)| b)
        .collect();
    let ours: Vec<&String> = t.devices.iter().map(|d| &d.address).collect();
    assert_eq!(
        ours, wanted,
        "devices of placement classes, in address order"
    );
    for d in &t.devices {
        let x = &expected[&d.address];
        assert_eq!(d.class_code >> 8, x.class, "{}", d.address);
        let mut ours: Vec<&str> = names(d);
        ours.sort();
        let mut theirs: Vec<&str> = x.os_names.iter().map(String::as_str).collect();
        theirs.sort();
        assert_eq!(ours, theirs, "OS names of {}", d.address);
        assert!(
            same_locality(d, &x.locality),
            "{}: ours {} ({:?}), hwloc {}",
            d.address,
            d.local_cpus,
            d.locality_source,
            x.locality
        );
    }
    t.devices.len()
}

#[test]
fn fakepcilocalities_matches_hwloc_but_for_its_override() {
    let t = load("hwloc/fakepcilocalities");
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let n = check_against_hwloc(&t, "fakepcilocalities.xml", |d, theirs| {
        if d.address == "0000:43:00.0" {
            // HWLOC_PCI_LOCALITY forced CPUs 33,37; the file says node 1.
            theirs.is_subset(&d.local_cpus) && &d.local_cpus != theirs
        } else {
            &d.local_cpus == theirs
        }
    });
    assert_eq!(n, 8);
    let ib = t.device("qib0").unwrap();
    assert_eq!(ib.class, DeviceClass::Infiniband);
    assert_eq!(ib.numa_node, Some(1));
    assert_eq!(ib.local_cpus, t.node(1).unwrap().cpus);
    assert_eq!(ib.locality_source, DeviceLocalitySource::LocalCpus);
    assert_eq!(ib.vendor, 0x1077);
    assert_eq!(ib.device, 0x7322);
    // sr0 hangs below the SATA controller's SCSI host path.
    assert_eq!(names(t.device("sr0").unwrap()), ["sr0"]);
    assert_eq!(t.device("eth3").unwrap().address, "0000:03:00.1");
}

#[test]
fn em64t_2n8c_dax_matches_hwloc_but_for_the_narrower_nvme() {
    let t = load("hwloc/32em64t-2n8c+dax+nvme+mic+dimms");
    let n = check_against_hwloc(&t, "32em64t-2n8c+dax+nvme+mic+dimms.xml", |d, theirs| {
        if d.address == "0000:00:02.0" {
            d.local_cpus == cpus("0-3") && d.local_cpus.is_subset(theirs)
        } else {
            &d.local_cpus == theirs
        }
    });
    assert_eq!(n, 7);
    let nvme = t.device("nvme0n1").unwrap();
    assert_eq!((nvme.class, nvme.numa_node), (DeviceClass::Nvme, None));
    assert_eq!(nvme.os_devices[0].kind, OsDeviceKind::Block);
    // Class 0x0280 (other network) with an RDMA name is InfiniBand.
    let ib = t.device("mlx4_0").unwrap();
    assert_eq!(ib.class, DeviceClass::Infiniband);
    assert_eq!(ib.class_code, 0x028000);
    assert_eq!(names(ib), ["ib0", "mlx4_0"]);
    assert_eq!(t.device("gpu0").unwrap().address, "0000:05:00.0");
    assert_eq!(t.device("accel0").unwrap().local_cpus, cpus("8-15"));
}

/// (address, class, node, CPUs, locality source, OS names)
type Row<'a> = (
    &'a str,
    DeviceClass,
    Option<u32>,
    String,
    DeviceLocalitySource,
    Vec<&'a str>,
);

#[test]
fn fake_device_tree() {
    let t = load("synthetic/fake-devices");
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let got: Vec<Row> = t
        .devices
        .iter()
        .map(|d| {
            (
                d.address.as_str(),
                d.class,
                d.numa_node,
                d.local_cpus.to_string(),
                d.locality_source,
                names(d),
            )
        })
        .collect();
    use DeviceClass::*;
    use DeviceLocalitySource::*;
    assert_eq!(
        got,
        vec![
            (
                "0000:00:02.0",
                Nvme,
                Some(1),
                "2-3".into(),
                NumaNode,
                vec!["nvme0", "nvme0n1"]
            ),
            (
                "0000:01:00.0",
                Network,
                Some(0),
                "0-1".into(),
                LocalCpus,
                vec!["eth0"]
            ),
            (
                "0000:41:00.0",
                Gpu,
                Some(2),
                "4-5".into(),
                LocalCpus,
                vec!["card0", "renderD128"]
            ),
            (
                "0000:81:00.0",
                Infiniband,
                Some(3),
                "6-7".into(),
                Bridge,
                vec!["ib0", "mlx5_0"]
            ),
        ]
    );
    let nvme = t.device("nvme0n1").unwrap();
    assert_eq!(
        nvme.os_devices.iter().map(|o| o.kind).collect::<Vec<_>>(),
        [OsDeviceKind::NvmeController, OsDeviceKind::Block]
    );
    assert_eq!((nvme.vendor, nvme.device), (0x144d, 0xa808));
}

/// Copies the fake tree into a temporary directory to alter it.
fn altered(edit: impl FnOnce(&std::path::Path)) -> Topology {
    let dir = common::tempdir();
    copy_tree(&common::synthetic("fake-devices"), dir.path());
    edit(dir.path());
    discover(&FsRoot::at(dir.path()).unwrap())
}

use pinsight_testkit::copy_tree;
const IB: &str = "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
const NIC: &str = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";

#[test]
fn unknown_node_and_no_bridge_is_the_whole_machine() {
    let t = altered(|root| {
        std::fs::write(
            root.join("sys/devices/pci0000:80/0000:80:01.0/numa_node"),
            "-1\n",
        )
        .unwrap();
    });
    let ib = t.device("mlx5_0").unwrap();
    assert_eq!(ib.numa_node, None);
    assert_eq!(ib.locality_source, DeviceLocalitySource::Unknown);
    assert_eq!(ib.local_cpus, cpus("0-15"));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn garbage_files_are_warned_about_by_name() {
    let t = altered(|root| {
        std::fs::write(root.join(NIC).join("local_cpulist"), "zz\n").unwrap();
        std::fs::write(root.join(IB).join("class"), "network\n").unwrap();
    });
    // The NIC falls back to its node's CPUs; the IB card is left out.
    let nic = t.device("eth0").unwrap();
    assert_eq!(
        (nic.local_cpus.to_string(), nic.locality_source),
        ("0-1".into(), DeviceLocalitySource::NumaNode)
    );
    assert!(t.device("mlx5_0").is_err());
    let w = t.warnings.join("\n");
    assert!(
        w.contains("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/local_cpulist:"),
        "{w}"
    );
    assert!(w.contains("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0/class: 'network' is not a 24-bit hexadecimal number; ignored the device"), "{w}");
}

#[test]
fn contradictory_locality_is_warned_about() {
    let t = altered(|root| {
        std::fs::write(root.join(NIC).join("local_cpulist"), "8-9\n").unwrap();
    });
    let nic = t.device("eth0").unwrap();
    assert_eq!(nic.local_cpus, cpus("8-9"));
    assert_eq!(nic.numa_node, Some(0));
    assert!(
        t.warnings.iter().any(|w| w
            .contains("0000:01:00.0/local_cpulist: CPUs 8-9 are not those of numa_node 0 (0-1)")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn a_machine_without_pci_has_no_devices() {
    let t = load("hwloc/16amd64-8n2c");
    assert!(t.devices.is_empty());
    assert!(
        t.warnings.iter().all(|w| !w.contains("pci")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn live_machine_devices_are_within_its_cpus() {
    let fs = FsRoot::live();
    if fs.list_dir("/sys/bus/pci/devices").is_empty() {
        pinsight_testkit::skip("no /sys/bus/pci/devices on this machine");
        return;
    }
    let t = discover(&fs);
    let online: CpuSet = t.cpus.iter().filter(|c| c.online).map(|c| c.id).collect();
    for d in &t.devices {
        assert!(
            !d.local_cpus.is_empty() && d.local_cpus.is_subset(&online),
            "{d:?}"
        );
        assert!(d.address.len() >= 12, "{d:?}");
    }
}

mod files {
    use super::*;
    use pinsight_topology::discover::pci;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// The file parsers accept exactly the values they print back.
        #[test]
        fn parsers_round_trip(code in 0u32..0x100_0000, id: u16, node: u32, junk in "\\PC{0,24}") {
            prop_assert_eq!(pci::parse_class(&format!("0x{code:06x}\n")), Ok(code));
            prop_assert_eq!(pci::parse_id(&format!("0x{id:04x}")), Ok(id));
            prop_assert_eq!(pci::parse_numa_node(&format!("{node}\n")), Ok(Some(node)));
            prop_assert_eq!(pci::parse_numa_node("-1\n"), Ok(None));
            let too_wide = format!("0x{:07x}", u64::from(code) + 0x100_0000);
            prop_assert!(pci::parse_class(&too_wide).is_err());
            // Arbitrary text: a value in range or a one-line error.
            for r in [pci::parse_class(&junk).map(|_| ()), pci::parse_id(&junk).map(|_| ()),
                      pci::parse_numa_node(&junk).map(|_| ()), pci::parse_address(&junk)] {
                if let Err(e) = r {
                    prop_assert!(!e.to_string().contains('\n'));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        /// Any content in the NIC's files: discovery never panics, every
        /// device it keeps has online CPUs, and every warning names one of
        /// the NIC's files.
        #[test]
        fn arbitrary_device_files(
            which in 0usize..6,
            text in prop_oneof!["\\PC{0,12}", "-?[0-9]{1,3}", "0x[0-9a-f]{1,8}", "[0-9,-]{1,9}"],
        ) {
            let file = ["class", "vendor", "device", "numa_node", "local_cpulist", "local_cpus"][which];
            let t = altered(|root| std::fs::write(root.join(NIC).join(file), &text).unwrap());
            let online: CpuSet = t.cpus.iter().filter(|c| c.online).map(|c| c.id).collect();
            for d in &t.devices {
                prop_assert!(!d.local_cpus.is_empty() && d.local_cpus.is_subset(&online), "{:?}", d);
            }
            for w in &t.warnings {
                prop_assert!(w.contains("/0000:01:00.0/"), "{}", w);
            }
            if t.device("eth0").is_err() {
                prop_assert!(!t.warnings.is_empty() || pci::parse_class(&text).is_ok());
            }
        }
    }
}
