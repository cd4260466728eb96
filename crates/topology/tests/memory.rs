//! Memory in the model: every NUMA node's kind, locality, tier, DAX device,
//! HMAT attributes, huge pages, side caches and cgroup permission, checked
//! against hwloc's expected output for the recorded machines (parsed, not
//! copied by hand), plus recorded machines with files altered for the
//! cases hwloc's set lacks (memoryless CPU node, generic initiator, a
//! cgroup restricting `mems`, kernel memory tiers, no initiators).

use crate::common;

use common::hwloc_expected::load;
use pinsight_cpuset::CpuSet;
use pinsight_model::{LocalitySource, MemoryKind, MemoryKindSource, NumaNode, Topology};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use std::path::Path;

fn recorded(name: &str) -> Topology {
    discover(&FsRoot::at(common::hwloc(name)).unwrap())
}

fn node(t: &Topology, id: u32) -> &NumaNode {
    t.node(id)
        .unwrap_or_else(|| panic!("node {id} missing: {:?}", t.numa_nodes))
}

/// The ids of the nodes the cgroup allows (memory or not).
fn allowed_ids(t: &Topology) -> Vec<u32> {
    t.numa_nodes
        .iter()
        .filter(|n| n.memory.allowed)
        .map(|n| n.id)
        .collect()
}

use pinsight_testkit::copy_tree;
use pinsight_testkit::put;
/// A writable copy of the recorded machine `name`.
fn copy(name: &str) -> tempfile::TempDir {
    let dir = common::tempdir();
    copy_tree(&common::hwloc(name), dir.path());
    dir
}

fn at(dir: &Path) -> Topology {
    discover(&FsRoot::at(dir).unwrap())
}

/// Writes each `(path, text)` of `files` into the copied machine at `root`
/// and discovers it.
fn at_with(root: &Path, files: &[(&str, &str)]) -> Topology {
    for (rel, text) in files {
        put(root, rel, text);
    }
    at(root)
}

/// One `NUMANode(SUBTYPE) L#i (P#n ... key=value ...)` line of `lstopo -v`.
#[derive(Debug)]
struct ConsoleNode {
    os: u32,
    subtype: Option<String>,
    attrs: Vec<(String, String)>,
}

impl ConsoleNode {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn console_nodes(text: &str) -> Vec<ConsoleNode> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("NUMANode") && l.contains("(P#"))
        .map(|l| {
            let subtype = l
                .strip_prefix("NUMANode(")
                .and_then(|r| r.split(')').next())
                .map(str::to_string);
            let inner = &l[l.find("(P#").unwrap() + 1..l.rfind(')').unwrap()];
            let attrs: Vec<(String, String)> = inner
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let os = inner[2..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .unwrap();
            ConsoleNode { os, subtype, attrs }
        })
        .collect()
}

fn read_expected(name: &str) -> String {
    std::fs::read_to_string(common::fixtures().join("hwloc").join(name)).unwrap()
}

/// Kinds and DAX devices equal hwloc's `NUMANode(KIND)` and `DAXDevice=`
/// (DRAM, HBM, NVM: HBM from DAX "SPM" with HMAT bandwidth above DRAM's,
/// NVM from DAX devices under an NVDIMM bus). hwloc's `memorytier=` is its
/// own numbering computed from those kinds (there are no kernel memory
/// tiers in this dump, so pinsight's `tier` stays unknown): we check that
/// nodes hwloc puts in one tier have one kind, and that its tiers order
/// HBM before DRAM before NVM.
#[test]
fn heterogeneous_tiers_kinds_equal_hwloc() {
    let t = recorded("fakeheteromemtiers");
    let exp = console_nodes(&read_expected("fakeheteromemtiers.console"));
    assert_eq!(exp.len(), 7);
    assert_eq!(t.numa_nodes.len(), exp.len());
    let mut tiers: Vec<(u32, MemoryKind)> = Vec::new();
    for e in &exp {
        let n = node(&t, e.os);
        let want = MemoryKind::from_hwloc_name(e.subtype.as_deref().unwrap()).unwrap();
        assert_eq!(n.memory.kind, Some(want), "node {}: {:?}", e.os, n.memory);
        assert_eq!(
            n.memory.dax.as_deref(),
            e.attr("DAXDevice"),
            "node {}",
            e.os
        );
        let src = n.memory.kind_source.unwrap();
        match (e.attr("DAXType"), want) {
            (Some("SPM"), MemoryKind::Hbm) => assert_eq!(src, MemoryKindSource::Hmat),
            (Some(_), _) => assert_eq!(src, MemoryKindSource::Dax),
            (None, _) => assert_eq!(src, MemoryKindSource::CpuNode),
        }
        assert!(n.memory.has_memory && n.memory.allowed && !n.memory.generic_initiator);
        assert_eq!(n.memory.tier, None, "no kernel tiers in this dump");
        let local: u64 = e
            .attr("local")
            .unwrap()
            .trim_end_matches("MiB")
            .parse()
            .unwrap();
        // hwloc rounds to the nearest MiB, pinsight keeps whole MiB.
        let ours = n.memory_mib.unwrap();
        assert!(ours <= local && local - ours <= 1, "node {}: {ours}", e.os);
        tiers.push((e.attr("memorytier").unwrap().parse().unwrap(), want));
    }
    tiers.sort();
    for w in tiers.windows(2) {
        if w[0].0 == w[1].0 {
            assert_eq!(w[0].1, w[1].1, "one hwloc tier, one kind");
        } else {
            assert!(w[0].1 != w[1].1);
        }
    }
    let order: Vec<MemoryKind> = tiers.iter().map(|(_, k)| *k).collect();
    assert_eq!(order.first(), Some(&MemoryKind::Hbm));
    assert_eq!(order.last(), Some(&MemoryKind::Nvm));
}

/// Memory-only nodes hang under their `access1` initiators' CPUs, as hwloc
/// nests them (the `.console` tree, parsed by `hwloc_expected`), and their
/// HMAT attributes are read (latency files hold 0: unknown, not zero).
#[test]
fn heterogeneous_tiers_locality_and_hmat() {
    let t = recorded("fakeheteromemtiers");
    let (exp, _) = load(&common::fixtures().join("hwloc"), "fakeheteromemtiers");
    for (id, cpus) in &exp.numa {
        let n = node(&t, *id);
        assert_eq!(&n.memory.locality, cpus, "node {id}");
        let want = if n.cpus.is_empty() {
            LocalitySource::Initiators
        } else {
            LocalitySource::OwnCpus
        };
        assert_eq!(n.memory.locality_source, want, "node {id}");
        let a = &n.memory.access;
        assert_eq!(a.len(), 1, "node {id}: access1 only");
        assert_eq!(a[0].class, 1);
        assert!(a[0].read_bandwidth_mbps.is_some() && a[0].write_bandwidth_mbps.is_some());
        assert_eq!(a[0].read_latency_ns, None);
        assert_eq!(n.memory.hugepages.len(), 1);
        assert_eq!(n.memory.hugepages[0].size_kib, 2048);
        assert_eq!(n.memory.hugepages[0].total, Some(0));
    }
    // hwloc's `Bandwidth` memory attribute lines give the same values.
    let text = read_expected("fakeheteromemtiers.console");
    let bw: Vec<u64> = text
        .lines()
        .skip_while(|l| !l.starts_with("Memory attribute #2 name `Bandwidth'"))
        .skip(1)
        .take_while(|l| l.starts_with("  NUMANode"))
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(bw.len(), 7);
    let mut ours: Vec<u64> = t
        .numa_nodes
        .iter()
        .map(|n| n.memory.read_bandwidth_mbps().unwrap())
        .collect();
    let mut theirs = bw.clone();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs);
}

/// The DAX devices of this machine target offline nodes (4, 5): its two
/// CPU nodes stay DRAM without a DAX device. hwloc's XML (an older export)
/// gives no subtype at all: hwloc names kinds only when several tiers
/// exist, pinsight always names a CPU node's memory and says why
/// (`kind_source: cpu-node`).
#[test]
fn dax_devices_on_offline_nodes_leave_cpu_nodes_dram() {
    let name = "32em64t-2n8c+dax+nvme+mic+dimms";
    let t = recorded(name);
    let (exp, _) = load(&common::fixtures().join("hwloc"), name);
    assert_eq!(t.numa_nodes.len(), exp.numa.len());
    let xml = read_expected(&format!("{name}.xml"));
    for (id, cpus) in &exp.numa {
        let n = node(&t, *id);
        assert_eq!(&n.memory.locality, cpus);
        assert_eq!(n.memory.kind, Some(MemoryKind::Dram));
        assert_eq!(n.memory.kind_source, Some(MemoryKindSource::CpuNode));
        assert_eq!(n.memory.dax, None);
        let line = xml
            .lines()
            .find(|l| l.contains("type=\"NUMANode\"") && l.contains(&format!("os_index=\"{id}\"")))
            .unwrap();
        assert!(!line.contains("subtype="));
        let bytes: u64 = line
            .split("local_memory=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(n.memory_mib, Some(bytes >> 20));
    }
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// Memory-side caches equal hwloc's `MemCache` objects above each node.
#[test]
fn memory_side_caches_equal_hwloc_memcache() {
    let t = recorded("memorysidecaches");
    let text = read_expected("memorysidecaches.console");
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    let mut seen = 0;
    for w in lines.windows(2) {
        if !(w[0].starts_with("MemCache") && w[1].starts_with("NUMANode")) {
            continue;
        }
        let e = &console_nodes(w[1])[0];
        let attr = |k: &str| {
            w[0].split_whitespace()
                .find_map(|x| x.strip_prefix(&format!("{k}=")))
                .unwrap()
                .trim_end_matches(')')
                .to_string()
        };
        let size_gib: u64 = attr("size").trim_end_matches("GiB").parse().unwrap();
        let n = node(&t, e.os);
        assert_eq!(n.memory.side_caches.len(), 1, "node {}", e.os);
        let c = &n.memory.side_caches[0];
        assert_eq!(c.level, 1);
        assert_eq!(c.size_kib, Some(size_gib << 20));
        assert_eq!(c.line_size, Some(attr("linesize").parse().unwrap()));
        assert!(n.memory.hugepages.iter().any(|h| h.size_kib == 1 << 20));
        seen += 1;
    }
    assert_eq!(seen, 4);
}

/// The nodes the cgroup allows are exactly those hwloc shows (hwloc hides
/// the others); pinsight keeps every online node listed.
#[test]
fn cgroup_mems_equal_hwloc_nodesets() {
    for name in [
        "16amd64-8n2c-cpusets",
        "32amd64-4s2n4c-cgroup2",
        "16amd64-4n4c-cgroup-distance-merge",
    ] {
        let t = recorded(name);
        let (exp, _) = load(&common::fixtures().join("hwloc"), name);
        let mut want: Vec<u32> = exp.numa.iter().map(|(id, _)| *id).collect();
        want.sort_unstable();
        let allowed = allowed_ids(&t);
        assert_eq!(allowed, want, "{name}");
        assert!(
            t.numa_nodes.len() > allowed.len(),
            "{name}: forbidden nodes stay listed"
        );
    }
}

/// `16amd64-8n2c` with node 3's memory gone (`has_memory` leaves it out):
/// a memoryless CPU node keeps its CPUs but has no memory kind.
#[test]
fn memoryless_cpu_node() {
    let dir = copy("16amd64-8n2c");
    let t = at_with(
        dir.path(),
        &[("sys/devices/system/node/has_memory", "0-2,4-7\n")],
    );
    let n = node(&t, 3);
    assert!(!n.cpus.is_empty());
    assert!(!n.memory.has_memory);
    assert_eq!(n.memory.kind, None);
    assert_eq!(n.memory.locality, n.cpus);
    let mut others = t.numa_nodes.iter().filter(|n| n.id != 3);
    assert!(others.clone().all(|n| n.memory.has_memory));
    assert!(others.all(|n| n.memory.kind == Some(MemoryKind::Dram)));

    // Without `has_memory`, a zero MemTotal says the same.
    std::fs::remove_file(dir.path().join("sys/devices/system/node/has_memory")).unwrap();
    let t = at_with(
        dir.path(),
        &[(
            "sys/devices/system/node/node3/meminfo",
            "Node 3 MemTotal:       0 kB\n",
        )],
    );
    assert!(!node(&t, 3).memory.has_memory);
    assert!(node(&t, 2).memory.has_memory);
}

/// Adds node `id` without CPUs to a copy of `16amd64-8n2c`, with distance
/// row `row`; the other nodes' rows gain the column `col`.
fn add_cpuless_node(root: &Path, id: u32, row: &[u32], col: &[u32]) {
    let base = root.join("sys/devices/system/node");
    for (i, c) in col.iter().enumerate() {
        let p = base.join(format!("node{i}/distance"));
        let mut d = std::fs::read_to_string(&p).unwrap().trim().to_string();
        d.push_str(&format!(" {c}"));
        std::fs::write(&p, d + "\n").unwrap();
    }
    let dir = format!("sys/devices/system/node/node{id}");
    put(root, &format!("{dir}/cpumap"), "00000000\n");
    put(root, &format!("{dir}/cpulist"), "\n");
    let row: Vec<String> = row.iter().map(u32::to_string).collect();
    put(root, &format!("{dir}/distance"), &(row.join(" ") + "\n"));
    put(
        root,
        &format!("{dir}/meminfo"),
        &format!("Node {id} MemTotal:       1048576 kB\n"),
    );
    put(
        root,
        "sys/devices/system/node/online",
        &format!("0-7,{id}\n"),
    );
}

/// A generic initiator (an accelerator node: no CPU, no memory) is listed
/// and flagged, without a memory kind.
#[test]
fn generic_initiator_node() {
    let dir = copy("16amd64-8n2c");
    let row = [20, 20, 20, 20, 20, 20, 20, 20, 10];
    add_cpuless_node(dir.path(), 8, &row, &[20; 8]);
    let t = at_with(
        dir.path(),
        &[
            ("sys/devices/system/node/has_memory", "0-7\n"),
            ("sys/devices/system/node/has_generic_initiator", "8\n"),
        ],
    );
    let gi = node(&t, 8);
    assert!(gi.memory.generic_initiator && !gi.memory.has_memory);
    assert_eq!(gi.memory.kind, None);
    assert!(gi.cpus.is_empty());
    // Equally far from everyone: no locality (the whole machine).
    assert_eq!(gi.memory.locality_source, LocalitySource::Unknown);
    assert!(gi.memory.locality.is_empty());
    assert_eq!(
        t.numa_nodes
            .iter()
            .filter(|n| n.memory.generic_initiator)
            .count(),
        1
    );
}

/// A memory-only node without initiators is local to the CPU node(s)
/// strictly nearest by distance (hwloc's fallback); it is never merged into
/// another CPU-less node; without DAX, HMAT or tiers its kind is unknown;
/// with a kernel memory tier shared with DRAM nodes it is DRAM.
#[test]
fn memory_only_node_without_initiators_uses_distances() {
    let dir = copy("16amd64-8n2c");
    let mut row = [30; 10];
    row[2] = 15;
    row[8] = 10;
    let mut col = [30; 8];
    col[2] = 15;
    add_cpuless_node(dir.path(), 8, &row[..9], &col);
    let t = at(dir.path());
    let n = node(&t, 8);
    assert_eq!(n.memory.locality_source, LocalitySource::Distance);
    assert_eq!(n.memory.locality, node(&t, 2).cpus);
    assert_eq!(n.memory.kind, None, "nothing tells");
    assert!(n.memory.has_memory);

    let t = at_with(
        dir.path(),
        &[(
            "sys/devices/virtual/memory_tiering/memory_tier4/nodelist",
            "0-8\n",
        )],
    );
    let n = node(&t, 8);
    assert_eq!(n.memory.tier, Some(4));
    assert_eq!(n.memory.kind, Some(MemoryKind::Dram));
    assert_eq!(n.memory.kind_source, Some(MemoryKindSource::MemoryTier));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// Two memory-only nodes (empty CPU sets) are two nodes, never duplicates.
#[test]
fn cpuless_nodes_are_not_merged() {
    let t = recorded("fakeheteromemtiers");
    assert_eq!(common::cpuless_nodes(&t), vec![4, 6, 8, 9]);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// `16amd64-8n2c` confined by a cgroup v2 whose `cpuset.mems.effective` is
/// 1,3: the other nodes stay listed, not allowed; a v1 `cpuset.mems` and a
/// set naming no node (ignored, with a warning naming the file) too.
#[test]
fn cgroup_mems_restriction() {
    let dir = copy("16amd64-8n2c");
    let root = dir.path();
    let t = at_with(
        root,
        &[
            (
                "proc/mounts",
                "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n",
            ),
            ("proc/self/cgroup", "0::/job\n"),
            ("sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n"),
            ("sys/fs/cgroup/job/cpuset.cpus.effective", "0-15\n"),
            ("sys/fs/cgroup/job/cpuset.mems.effective", "1,3\n"),
        ],
    );
    let allowed = allowed_ids(&t);
    assert_eq!(allowed, vec![1, 3]);
    assert_eq!(t.numa_nodes.len(), 8);
    assert!(t.cpus.iter().all(|c| c.allowed), "CPUs are not confined");

    let t = at_with(
        root,
        &[
            ("proc/mounts", "cgroup /dev/cpuset cgroup rw,cpuset 0 0\n"),
            ("proc/self/cgroup", "3:cpuset:/\n"),
            ("dev/cpuset/cpuset.effective_mems", "\n"),
            ("dev/cpuset/cpuset.mems", "0-1\n"),
        ],
    );
    let allowed = allowed_ids(&t);
    assert_eq!(allowed, vec![0, 1]);

    let t = at_with(root, &[("dev/cpuset/cpuset.mems", "12-13\n")]);
    assert!(t.numa_nodes.iter().all(|n| n.memory.allowed));
    common::assert_warned(&t, &["dev/cpuset/cpuset.mems", "none of them exists"]);
}

/// Generated garbage in the memory files never panics and never invents a
/// value: an unreadable number is unknown, with a warning naming the file.
#[test]
fn garbage_memory_files_are_warnings() {
    let dir = copy("fakeheteromemtiers");
    let node4 = "sys/devices/system/node/node4";
    let t = at_with(
        dir.path(),
        &[
            (
                &format!("{node4}/access1/initiators/read_bandwidth"),
                "fast\n",
            ),
            (
                &format!("{node4}/hugepages/hugepages-2048kB/nr_hugepages"),
                "-\n",
            ),
            ("sys/devices/system/node/has_memory", "zz\n"),
        ],
    );
    let n = node(&t, 4);
    assert_eq!(n.memory.access[0].read_bandwidth_mbps, None);
    assert_eq!(n.memory.hugepages[0].total, None);
    // Without bandwidth the SPM DAX node is no longer known to be HBM.
    assert_eq!(n.memory.kind, Some(MemoryKind::Spm));
    for f in ["read_bandwidth", "nr_hugepages", "has_memory"] {
        assert!(
            t.warnings.iter().any(|w| w.contains(f)),
            "{f}: {:?}",
            t.warnings
        );
    }
    assert_eq!(CpuSet::parse_list("2-3").unwrap(), n.memory.locality);
}

/// Moves the DAX device `name` of the copied machine under the parent path
/// `parent` (relative to `/sys/devices`), as the kernel links it there.
fn move_dax(root: &Path, name: &str, parent: &str, target_node: u32) {
    let dev = format!("sys/devices/{parent}/{name}");
    put(
        root,
        &format!("{dev}/target_node"),
        &format!("{target_node}\n"),
    );
    let link = root.join(format!("sys/bus/dax/devices/{name}"));
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(format!("../../../devices/{parent}/{name}"), &link).unwrap();
}

/// Every node's kind and kind source, but `except`'s.
fn kinds_but(
    t: &Topology,
    except: u32,
) -> Vec<(u32, Option<MemoryKind>, Option<MemoryKindSource>)> {
    t.numa_nodes
        .iter()
        .filter(|n| n.id != except)
        .map(|n| (n.id, n.memory.kind, n.memory.kind_source))
        .collect()
}

/// A copy of `fakeheteromemtiers` with the DAX device `dax` of node `id`
/// moved under `parent`, a CXL region: without the CXL bus entry for
/// `region` the node is not of kind `want`; with it (target `decoder`) it
/// is, from the device, and the other nodes keep the recorded kinds.
/// Returns the recorded machine and the one with the bus entry.
fn dax_in_cxl_region(
    dax: &str,
    parent: &str,
    id: u32,
    region: &str,
    decoder: &str,
    want: MemoryKind,
) -> (Topology, Topology) {
    let plain = recorded("fakeheteromemtiers");
    let dir = copy("fakeheteromemtiers");
    move_dax(dir.path(), dax, parent, id);
    let no_bus = at(dir.path());
    assert_ne!(
        node(&no_bus, id).memory.kind,
        Some(want),
        "no CXL bus entry"
    );
    let t = at_with(
        dir.path(),
        &[(
            &format!("sys/bus/cxl/devices/{region}/target0"),
            &format!("{decoder}\n"),
        )],
    );
    let n = node(&t, id);
    assert_eq!(n.memory.kind, Some(want), "{:?}", n.memory);
    assert_eq!(n.memory.kind_source, Some(MemoryKindSource::Device));
    assert_eq!(kinds_but(&t, id), kinds_but(&plain, id));
    (plain, t)
}

/// CXL RAM: the kernel links a CXL memory expander's DAX device under its
/// region (`ACPI0017:00/root0/decoder0.0/region0/dax_region0/daxX.Y`) and
/// the CXL bus lists the region's targets. hwloc calls that node CXL-DRAM
/// even when HMAT says it is faster than DRAM (CXL clears SPM). Without
/// the CXL bus entry the same path is not CXL; the other nodes keep their
/// kinds.
#[test]
fn dax_under_cxl_ram_region_is_cxl_dram() {
    let (plain, t) = dax_in_cxl_region(
        "dax1.0",
        "platform/ACPI0017:00/root0/decoder0.0/region0/dax_region0",
        4,
        "region0",
        "decoder2.0",
        MemoryKind::CxlDram,
    );
    assert_eq!(node(&plain, 4).memory.kind, Some(MemoryKind::Hbm));
    assert_eq!(node(&t, 4).memory.dax.as_deref(), Some("dax1.0"));
    assert_eq!(t.warnings, plain.warnings);
}

/// CXL PMEM: the DAX device sits on an NVDIMM bus under the CXL root's
/// `nvdimm-bridge0`, in a region the CXL bus lists: CXL-NVM. The recorded
/// machine's own NVDIMM regions (`ndbus0/region7`, no CXL bus) stay NVM.
#[test]
fn dax_under_cxl_pmem_region_is_cxl_nvm() {
    let (plain, t) = dax_in_cxl_region(
        "dax7.0",
        "platform/ACPI0017:00/root0/nvdimm-bridge0/ndbus0/region3/dax3.1",
        8,
        "region3",
        "decoder5.0",
        MemoryKind::CxlNvm,
    );
    assert_eq!(node(&plain, 8).memory.kind, Some(MemoryKind::Nvm));
    for id in [6, 9] {
        assert_eq!(node(&t, id).memory.kind, Some(MemoryKind::Nvm));
    }
}

/// GPU memory (Grace-Hopper, POWER9 + V100): the NVIDIA driver's
/// `numa_status` names the node (`Node: N`); `-1` (no node) is ignored,
/// garbage is a warning naming the file. The other nodes keep their kinds.
#[test]
fn nvidia_numa_status_names_gpu_memory() {
    let plain = recorded("fakeheteromemtiers");
    let dir = copy("fakeheteromemtiers");
    let gpus = "proc/driver/nvidia/gpus";
    let t = at_with(
        dir.path(),
        &[
            (
                &format!("{gpus}/0009:01:00.0/numa_status"),
                "Node:                          9\nOffline memory:\nStatus:                        online_movable\n",
            ),
            (&format!("{gpus}/0009:02:00.0/numa_status"), "Node: -1\n"),
            (&format!("{gpus}/0009:03:00.0/numa_status"), "Node: nine\n"),
            (&format!("{gpus}/0009:04:00.0/information"), "Model: x\n"),
            // The GPU's own CPUs (2-3) win over node 9's initiators (node 2: 4-5).
            ("sys/bus/pci/devices/0009:01:00.0/local_cpulist", "2-3\n"),
        ],
    );
    let n = node(&t, 9);
    assert_eq!(n.memory.kind, Some(MemoryKind::Gpu), "{:?}", n.memory);
    assert_eq!(n.memory.kind_source, Some(MemoryKindSource::Device));
    assert_eq!(n.memory.locality.to_string(), "2-3");
    assert_eq!(n.memory.locality_source, LocalitySource::Device);
    assert_eq!(node(&plain, 9).memory.locality.to_string(), "4-5");
    assert_eq!(kinds_but(&t, 9), kinds_but(&plain, 9));
    let new: Vec<&String> = t
        .warnings
        .iter()
        .filter(|w| !plain.warnings.contains(w))
        .collect();
    assert_eq!(new.len(), 1, "{:?}", t.warnings);
    assert!(new[0].contains("0009:03:00.0/numa_status"), "{new:?}");
}

/// A machine whose nodes all have CPUs never reads the NVIDIA directory
/// (discovery on big plain machines reads no extra file).
#[test]
fn gpu_memory_needs_a_cpuless_node() {
    let dir = copy("16amd64-8n2c");
    put(
        dir.path(),
        "proc/driver/nvidia/gpus/0000:01:00.0/numa_status",
        "Node: 3\n",
    );
    let fs = FsRoot::at(dir.path()).unwrap().recording();
    let t = discover(&fs);
    assert_eq!(node(&t, 3).memory.kind, Some(MemoryKind::Dram));
    assert!(
        !fs.recorded()
            .iter()
            .any(|p| p.to_string_lossy().contains("nvidia")),
        "{:?}",
        fs.recorded()
    );
}

mod garbage {
    use super::*;
    use proptest::prelude::*;

    const FILES: &[&str] = &[
        "sys/devices/system/node/has_memory",
        "sys/devices/system/node/has_generic_initiator",
        "sys/devices/system/node/node4/access1/initiators/read_bandwidth",
        "sys/devices/system/node/node4/access1/initiators/write_latency",
        "sys/devices/system/node/node2/hugepages/hugepages-2048kB/free_hugepages",
        "sys/devices/system/node/node6/distance",
        "sys/bus/dax/devices/dax1.0/target_node",
        "sys/devices/virtual/memory_tiering/memory_tier4/nodelist",
        "proc/driver/nvidia/gpus/0000:01:00.0/numa_status",
        "sys/bus/cxl/devices/region7/target0",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Random bytes in any memory file never panic, never give a zero
        /// bandwidth or latency, and leave every node listed.
        #[test]
        fn random_bytes_in_memory_files(
            picks in proptest::collection::vec((0..FILES.len(), proptest::collection::vec(any::<u8>(), 0..24)), 1..4)
        ) {
            let dir = copy("fakeheteromemtiers");
            for (i, bytes) in &picks {
                let p = dir.path().join(FILES[*i]);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, bytes).unwrap();
            }
            let t = at(dir.path());
            prop_assert_eq!(t.numa_nodes.len(), 7);
            for n in &t.numa_nodes {
                for a in &n.memory.access {
                    for v in [a.read_bandwidth_mbps, a.write_bandwidth_mbps, a.read_latency_ns, a.write_latency_ns] {
                        prop_assert!(v != Some(0));
                    }
                }
                prop_assert!(n.memory.locality.is_subset(&t.online()));
            }
        }
    }
}
