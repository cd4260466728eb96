//! `pinsight topo --json` lists PCI devices with their locality, on the
//! hand-made device tree and on hwloc's recorded
//! `fakepcilocalities`, and `pinsight snapshot` keeps them.

use crate::common_cli;

use common_cli::*;
use serde_json::{json, Value};
use std::path::PathBuf;

fn fake_devices() -> PathBuf {
    pinsight_testkit::fixtures::synthetic("fake-devices")
}

/// The facts users place threads by, one object per device.
/// `pinsight --fsroot ROOT topo --json`, which must succeed.
fn topo_json(root: &std::path::Path) -> Out {
    ok(&["--fsroot", root.to_str().unwrap(), "topo", "--json"])
}

fn devices(o: &Out) -> Vec<Value> {
    o.json()["devices"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no devices array:\n{}", o.argv, o.stdout))
        .iter()
        .map(|d| {
            json!({
                "address": d["address"],
                "class": d["class"],
                "numa_node": d["numa_node"],
                "local_cpus": d["local_cpus"],
                "locality_source": d["locality_source"],
                "names": d["os_devices"].as_array().unwrap().iter().map(|o| o["name"].clone()).collect::<Vec<_>>(),
            })
        })
        .collect()
}

#[test]
fn topo_json_lists_the_fake_devices_with_their_locality() {
    let o = topo_json(&fake_devices());
    assert_eq!(
        devices(&o),
        [
            json!({"address": "0000:00:02.0", "class": "nvme", "numa_node": 1, "local_cpus": "2-3",
                   "locality_source": "numa-node", "names": ["nvme0", "nvme0n1"]}),
            json!({"address": "0000:01:00.0", "class": "network", "numa_node": 0, "local_cpus": "0-1",
                   "locality_source": "local-cpus", "names": ["eth0"]}),
            json!({"address": "0000:41:00.0", "class": "gpu", "numa_node": 2, "local_cpus": "4-5",
                   "locality_source": "local-cpus", "names": ["card0", "renderD128"]}),
            json!({"address": "0000:81:00.0", "class": "infiniband", "numa_node": 3, "local_cpus": "6-7",
                   "locality_source": "bridge", "names": ["ib0", "mlx5_0"]}),
        ]
    );
    let d = &o.json()["devices"][1];
    assert_eq!(d["vendor"], 0x8086);
    assert_eq!(d["device"], 0x1521);
    assert_eq!(d["class_code"], 0x020000);
    assert_eq!(d["os_devices"][0]["kind"], "net");
    assert!(o.stderr.is_empty(), "{}", o.stderr);
}

#[test]
fn topo_json_on_fakepcilocalities_puts_the_infiniband_card_on_node_1() {
    let o = topo_json(&hwloc_fixture("fakepcilocalities"));
    let devs = devices(&o);
    assert_eq!(devs.len(), 8);
    let ib = devs
        .iter()
        .find(|d| d["names"] == json!(["ib0", "qib0"]))
        .unwrap();
    assert_eq!(ib["numa_node"], 1);
    assert_eq!(ib["local_cpus"], "1,5,9,13,17,21,25,29,33,37");
}

#[test]
fn a_snapshot_of_the_fake_tree_lists_the_same_devices() {
    let fake = fake_devices();
    let o = pinsight(&["--fsroot", fake.to_str().unwrap(), "snapshot", "snap"])
        .writes("snap")
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let snap = o.path("snap");
    let again = topo_json(&snap);
    let before = topo_json(&fake);
    assert_eq!(devices(&again), devices(&before));
    assert!(std::fs::read_link(snap.join("sys/bus/pci/devices/0000:81:00.0")).is_ok());
}

#[test]
fn a_machine_without_pci_lists_no_devices() {
    let o = topo_json(&hwloc_fixture("16amd64-8n2c"));
    assert_eq!(o.json()["devices"], json!([]));
}
