//! Memory policies (`--mem`) and device locality (`--near`) in plans: the
//! checks against the machine's nodes (present, holding memory, allowed by
//! the cgroup), the dialects that speak them (insta goldens for numactl,
//! libvirt `<numatune>` and Slurm `--mem-bind`), and the restriction to a
//! device's CPUs.

use pinsight_cpuset::CpuSet;
use pinsight_model::{
    DeviceClass, DeviceLocalitySource, NumaNode, OsDevice, OsDeviceKind, PciDevice, Topology,
};
use pinsight_plan::{
    plan, render, Format, FormatError, MemError, MemMode, MemPolicy, PlanError, Request,
};
use pinsight_sys::FsRoot;
use pinsight_testkit::topology::*;
use pinsight_topology::discover;
use proptest::prelude::*;

/// hwloc's recorded 16amd64-8n2c: 8 NUMA nodes of 2 CPUs each.
fn eight_nodes() -> Topology {
    let dir = pinsight_testkit::fixtures::hwloc("16amd64-8n2c");
    discover(&FsRoot::at(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())))
}

fn req(policy: &str, threads: Option<usize>, mem: Option<&str>) -> Request {
    Request {
        threads,
        mem: mem.map(|m| m.parse().unwrap()),
        ..Request::new(policy.parse().unwrap())
    }
}

fn mem_error(topo: &Topology, mem: &str) -> (String, MemError) {
    match plan(topo, &req("compact", Some(2), Some(mem))) {
        Err(PlanError::Memory { spec, error }) => (spec, error),
        other => panic!("{mem}: expected a memory error, got {other:?}"),
    }
}

#[test]
fn nodes_resolve_on_a_recorded_machine() {
    let t = eight_nodes();
    assert_eq!(t.numa_nodes.len(), 8, "fixture has 8 nodes");
    let m = |spec: &str| {
        plan(&t, &req("compact", Some(2), Some(spec)))
            .unwrap()
            .memory
            .unwrap()
    };
    let all = m("interleave:all");
    assert_eq!(all.mode, MemMode::Interleave);
    assert_eq!(all.nodes, (0..8).collect::<Vec<u32>>());
    assert_eq!(all.policy, "interleave:0-7");
    assert_eq!(m("bind:3,1").nodes, vec![1, 3]);
    assert_eq!(m("preferred:5").nodes, vec![5]);
    assert_eq!(m("local").nodes, Vec::<u32>::new());
    let (spec, e) = mem_error(&t, "bind:9");
    assert_eq!(spec, "bind:9");
    assert_eq!(
        e.to_string(),
        "node 9 does not exist on this machine (nodes: 0-7)"
    );
    // No memory policy asked: none in the plan.
    assert!(plan(&t, &req("compact", Some(2), None))
        .unwrap()
        .memory
        .is_none());
}

/// Node `id` of `t`, to change.
fn node_mut(t: &mut Topology, id: u32) -> &mut NumaNode {
    t.numa_nodes.iter_mut().find(|n| n.id == id).unwrap()
}

#[test]
fn forbidden_and_memoryless_nodes_are_refused_and_left_out_of_all() {
    let mut t = eight_nodes();
    node_mut(&mut t, 2).memory.allowed = false;
    node_mut(&mut t, 3).memory.has_memory = false;
    let (_, e) = mem_error(&t, "bind:2");
    assert_eq!(
        e,
        MemError::NotAllowed {
            node: 2,
            allowed: vec![0, 1, 4, 5, 6, 7]
        }
    );
    assert!(e
        .to_string()
        .contains("not allowed by this process's cgroup"));
    assert!(e.to_string().contains("0-1,4-7"), "{e}");
    let (_, e) = mem_error(&t, "preferred:3");
    assert!(matches!(e, MemError::NoMemory { node: 3, .. }), "{e}");
    let all = plan(&t, &req("compact", Some(2), Some("weighted-interleave")))
        .unwrap()
        .memory
        .unwrap();
    assert_eq!(all.nodes, vec![0, 1, 4, 5, 6, 7]);
    // No weights given: the plan says they are the kernel's defaults.
    assert!(all.weights.is_none());
    assert!(all.notes[0].contains("defaults (1 each"), "{:?}", all.notes);
    for n in t.numa_nodes.iter_mut() {
        n.memory.allowed = false;
    }
    assert!(matches!(
        mem_error(&t, "interleave:all").1,
        MemError::NoneAllowed { .. }
    ));
}

#[test]
fn kernel_weights_are_shown_per_node() {
    let t = eight_nodes();
    let r = Request {
        interleave_weights: Some(vec![(0, 3), (1, 1)]),
        ..req("compact", Some(2), Some("weighted-interleave:0-2"))
    };
    let m = plan(&t, &r).unwrap().memory.unwrap();
    let w: Vec<(u32, u32)> = m
        .weights
        .unwrap()
        .iter()
        .map(|w| (w.node, w.weight))
        .collect();
    // Node 2 has no weight file: the kernel's default, 1.
    assert_eq!(w, vec![(0, 3), (1, 1), (2, 1)]);
}

/// Every dialect's memory form on the recorded 8-node machine.
#[test]
fn dialect_goldens() {
    let t = eight_nodes();
    let mut out = String::new();
    for mem in [
        "local",
        "bind:0-1",
        "interleave:all",
        "preferred:2",
        "weighted-interleave:4-7",
    ] {
        for (policy, threads) in [("compact", Some(4)), ("cpus-set:0-3", None)] {
            let p = plan(&t, &req(policy, threads, Some(mem))).unwrap();
            for f in ["numactl", "libvirt", "slurm", "table"] {
                out.push_str(&format!("== {policy} --mem {mem} --format {f}\n"));
                match render(&p, &t, f.parse::<Format>().unwrap()) {
                    Ok(r) => {
                        out.push_str(&r.text);
                        for c in &r.caveats {
                            out.push_str(&format!("caveat: {c}\n"));
                        }
                    }
                    Err(e) => out.push_str(&format!("error: {e}\n")),
                }
            }
        }
    }
    pinsight_testkit::golden!("mem-dialects-16amd64-8n2c.txt", &out);
}

#[test]
fn dialects_never_drop_a_policy_silently() {
    let t = eight_nodes();
    let p = plan(&t, &req("compact", Some(2), Some("interleave:0-1"))).unwrap();
    assert!(matches!(
        render(&p, &t, Format::Slurm),
        Err(FormatError::Memory {
            format: "slurm",
            ..
        })
    ));
    let p = plan(&t, &req("compact", Some(2), Some("weighted-interleave"))).unwrap();
    assert!(matches!(
        render(&p, &t, Format::Libvirt),
        Err(FormatError::Memory {
            format: "libvirt",
            ..
        })
    ));
    for f in ["taskset", "cpulist", "omp-places", "gomp", "kmp-affinity"] {
        let r = render(&p, &t, f.parse().unwrap()).unwrap();
        assert!(
            r.caveats
                .iter()
                .any(|c| c.to_string().contains("weighted-interleave:0-7 is not in")),
            "{f}: {:?}",
            r.caveats
        );
    }
    let json = render(&p, &t, Format::Json).unwrap().text;
    assert!(json.contains("\"mode\": \"weighted-interleave\""), "{json}");
}

/// The 4-socket test machine (node p = CPUs p, p+4, p+8, p+12) with a NIC
/// on node 1, a GPU whose node the kernel does not tell, and an NVMe drive
/// local to node 3.
fn with_devices() -> Topology {
    let mut t = four_socket_numa();
    let dev =
        |addr: &str, class, code, node, cpus: &str, names: &[(&str, OsDeviceKind)]| PciDevice {
            address: addr.into(),
            class,
            class_code: code,
            vendor: 0x8086,
            device: 0x1572,
            numa_node: node,
            local_cpus: CpuSet::parse_list(cpus).unwrap(),
            locality_source: DeviceLocalitySource::LocalCpus,
            os_devices: names
                .iter()
                .map(|(n, k)| OsDevice {
                    name: n.to_string(),
                    kind: *k,
                })
                .collect(),
        };
    t.devices = vec![
        dev(
            "0000:02:00.0",
            DeviceClass::Network,
            0x020000,
            Some(1),
            "1,5,9,13",
            &[("eth0", OsDeviceKind::Net)],
        ),
        dev(
            "0000:03:00.0",
            DeviceClass::Gpu,
            0x030200,
            None,
            "0-15",
            &[("card0", OsDeviceKind::Drm)],
        ),
        dev(
            "0000:81:00.0",
            DeviceClass::Nvme,
            0x010802,
            Some(3),
            "3,7,11,15",
            &[("nvme0n1", OsDeviceKind::Block)],
        ),
    ];
    t
}

fn near(policy: &str, threads: Option<usize>, dev: &str, mem: Option<&str>) -> Request {
    Request {
        near: Some(dev.into()),
        ..req(policy, threads, mem)
    }
}

#[test]
fn near_restricts_cpus_to_the_device() {
    let t = with_devices();
    let p = plan(&t, &near("compact", None, "eth0", None)).unwrap();
    assert_eq!(p.process_mask, CpuSet::parse_list("1,5,9,13").unwrap());
    assert_eq!(p.threads, 4);
    assert_eq!(p.notes[0], "CPUs 1,5,9,13: local to eth0 (NUMA node 1)");
    let n = p.near.unwrap();
    assert_eq!((n.address.as_str(), n.numa_node), ("0000:02:00.0", Some(1)));
    // By address and by class alias too.
    for name in ["0000:81:00.0", "81:00.0", "nvme0"] {
        let p = plan(&t, &near("scatter", Some(2), name, None)).unwrap();
        assert!(
            p.process_mask
                .is_subset(&CpuSet::parse_list("3,7,11,15").unwrap()),
            "{name}: {}",
            p.process_mask
        );
    }
    // More threads than the device's CPUs: refused like any pinned plan.
    assert!(matches!(
        plan(&t, &near("compact", Some(5), "eth0", None)),
        Err(PlanError::TooManyThreads { .. })
    ));
    // An explicit list outside the device's CPUs says so.
    let e = plan(&t, &near("cpus:1,2", None, "eth0", None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cpus:1,2: CPU 2 is not local to the device placed near; usable CPUs are 1,5,9,13"
    );
    // Set policies float over the device's CPUs only.
    let p = plan(&t, &near("os", Some(8), "nvme0n1", None)).unwrap();
    assert_eq!(p.process_mask, CpuSet::parse_list("3,7,11,15").unwrap());
}

#[test]
fn near_with_local_memory_binds_to_the_devices_node() {
    let t = with_devices();
    let m = plan(&t, &near("compact", Some(2), "eth0", Some("local")))
        .unwrap()
        .memory
        .unwrap();
    assert_eq!((m.mode, m.nodes.clone()), (MemMode::Bind, vec![1]));
    assert!(m.notes[0].contains("local to eth0"), "{:?}", m.notes);
    // Another policy is kept as written.
    let m = plan(
        &t,
        &near("compact", Some(2), "eth0", Some("interleave:all")),
    )
    .unwrap()
    .memory
    .unwrap();
    assert_eq!(m.nodes, vec![0, 1, 2, 3]);
    // Unknown node: stays local, and says why.
    let m = plan(&t, &near("compact", Some(2), "card0", Some("local")))
        .unwrap()
        .memory
        .unwrap();
    assert_eq!(m.mode, MemMode::Local);
    assert!(m.notes[0].contains("card0's NUMA node is unknown"));
}

#[test]
fn unknown_device_lists_known_ones() {
    let t = with_devices();
    let e = plan(&t, &near("compact", None, "eth9", None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no device 'eth9' (known: eth0, card0, nvme0n1)"
    );
    // A device whose CPUs are all unusable.
    let mut t = with_devices();
    for c in t.cpus.iter_mut().filter(|c| [1, 5, 9, 13].contains(&c.id)) {
        c.allowed = false;
    }
    assert!(matches!(
        plan(&t, &near("compact", None, "eth0", None)),
        Err(PlanError::NearUnusable { .. })
    ));
}

fn arb_nodes() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("all".to_string()),
        proptest::collection::btree_set(0u32..64, 1..6).prop_map(|s| s
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")),
    ]
}

proptest! {
    /// Any text: a policy or a one-line error, never a panic.
    #[test]
    fn any_text_parses_or_errs(s in ".{0,40}") {
        match s.parse::<MemPolicy>() {
            Ok(p) => {
                let again: MemPolicy = p.to_string().parse().unwrap();
                prop_assert_eq!(again, p);
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    /// Every well-formed spec parses, prints canonically and reparses.
    #[test]
    fn specs_round_trip(
        word in prop_oneof![Just("bind"), Just("interleave"), Just("weighted-interleave")],
        nodes in arb_nodes(),
        one in 0u32..1024,
    ) {
        for text in [format!("{word}:{nodes}"), format!("preferred:{one}"), "local".to_string()] {
            let p: MemPolicy = text.parse().unwrap();
            let canon = p.to_string();
            prop_assert_eq!(canon.parse::<MemPolicy>().unwrap(), p);
        }
    }
}
