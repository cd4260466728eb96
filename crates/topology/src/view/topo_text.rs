//! The machine as a compact text tree in the spirit of
//! `lstopo-no-graphics`, with core kinds marked, then one line per kind —
//! what `pinsight topo` prints.
//!
//! The tree is [`super::tree::nest`]ed from the flat model; chains of
//! objects covering the same CPUs are printed on one line joined by `+`,
//! as lstopo does. Cores and PUs are numbered by logical index (lstopo's
//! `L#`): their rank in tree order.

use super::tree::{self, Object, TreeNode};
use pinsight_cpuset::CpuSet;
use pinsight_model::{
    CacheType, CapacityOrigin, CapacitySource, Kind, NumaNode, OsDeviceKind, PciDevice, RankSource,
    Topology,
};
use pinsight_term::size::format_size_lstopo;
use std::fmt::Write;

/// The human tree, the offline/forbidden CPUs, the kind summary and the
/// NUMA distances. `show_pus` adds one line per online CPU.
pub fn render(topo: &Topology, show_pus: bool) -> String {
    let mut out = machine_line(topo);
    let roots = tree::nest(tree::objects(topo, show_pus));
    let mut counters = Counters::default();
    for r in &roots {
        walk(&mut out, topo, r, 1, &mut counters);
    }
    out.push_str(&unavailable_lines(topo));
    out.push_str(&render_kinds(topo));
    out.push_str(&numa_distances(topo));
    out
}

fn machine_line(topo: &Topology) -> String {
    let model = topo.model_name.as_deref().unwrap_or("unknown CPU");
    format!(
        "Machine ({model}; {} CPUs online, {} usable, {} kind{})\n",
        topo.online().len(),
        topo.usable().len(),
        topo.kinds.len(),
        if topo.kinds.len() == 1 { "" } else { "s" }
    )
}

/// Logical indexes handed out so far, per numbered type.
#[derive(Default)]
struct Counters {
    core: usize,
    pu: usize,
}

fn walk(out: &mut String, topo: &Topology, node: &TreeNode<'_>, indent: usize, n: &mut Counters) {
    // Collapse single-child chains covering the same CPUs (lstopo's "A + B").
    let chain = node.chain(|t| !t.memory);
    let line: Vec<String> = chain.iter().map(|t| label(topo, t, n)).collect();
    writeln!(out, "{}{}", "  ".repeat(indent), line.join(" + ")).ok();
    let last = chain.last().copied().unwrap_or(node);
    for c in &last.children {
        walk(out, topo, c, indent + 1, n);
    }
}

/// The text of one object; cores and PUs take the next logical index.
fn label(topo: &Topology, node: &TreeNode<'_>, n: &mut Counters) -> String {
    match node.object {
        Object::Package(p) => {
            let os = p.os_id.map(|i| format!(" P#{i}")).unwrap_or_default();
            format!("Package L#{}{os}", p.id)
        }
        Object::Die(d) => format!("Die L#{}", d.id),
        Object::Numa(m) => numa_label(m),
        Object::Device(d) => device_label(d),
        Object::MemoryGroup => format!("Group (CPUs {})", node.cpus),
        Object::Cache(c) => format!(
            "{} ({})",
            cache_name(c.level, c.cache_type),
            format_size_lstopo(c.size_kib)
        ),
        Object::Cluster(cl) => format!("Cluster L#{}", cl.id),
        Object::Core(core) => {
            let mark = core
                .cpus
                .first()
                .map(|c| kind_mark(topo, c))
                .unwrap_or_default();
            n.core += 1;
            format!("Core L#{}{mark}", n.core - 1)
        }
        Object::Pu(c) => {
            n.pu += 1;
            format!("PU L#{} (P#{}){}", n.pu - 1, c.id, kind_tag(topo, c.id))
        }
    }
}

/// `NUMANode P#4 HBM 0.5GiB tier 1 (not allowed by cgroup)`: the kind
/// ("unknown" when nothing tells), size, the kernel's memory tier, then
/// what makes the node unusual.
pub fn numa_label(m: &NumaNode) -> String {
    let mem = &m.memory;
    let mut s = format!("NUMANode P#{}", m.id);
    if mem.has_memory {
        let kind = mem.kind.map_or("unknown", |k| k.hwloc_name());
        write!(s, " {kind}").ok();
        if let Some(mib) = m.memory_mib {
            write!(s, " {:.1}GiB", mib as f64 / 1024.0).ok();
        }
    }
    if let Some(t) = mem.tier {
        write!(s, " tier {t}").ok();
    }
    let mut notes: Vec<&str> = Vec::new();
    if !mem.has_memory {
        notes.push("memoryless");
    }
    if mem.generic_initiator {
        notes.push("generic initiator");
    }
    if !mem.allowed {
        notes.push("not allowed by cgroup");
    }
    if !notes.is_empty() {
        write!(s, " ({})", notes.join(", ")).ok();
    }
    s
}

/// `PCI 0000:02:00.0 Net eth0`, lstopo-like: the address, then each OS
/// name with its kind (or the class when the OS gives it no name).
pub fn device_label(d: &PciDevice) -> String {
    let mut s = format!("PCI {}", d.address);
    if d.os_devices.is_empty() {
        write!(s, " ({})", d.class.as_str()).ok();
    }
    for o in &d.os_devices {
        let kind = match o.kind {
            OsDeviceKind::Net => "Net",
            OsDeviceKind::Block => "Block",
            OsDeviceKind::Drm => "GPU",
            OsDeviceKind::Rdma => "RDMA",
            OsDeviceKind::NvmeController => "NVMe",
            OsDeviceKind::Other => "OS",
        };
        write!(s, " {kind} {}", o.name).ok();
    }
    s
}

/// "L2", "L1d", "L1i".
pub fn cache_name(level: u8, t: CacheType) -> String {
    match t {
        CacheType::Data => format!("L{level}d"),
        CacheType::Instruction => format!("L{level}i"),
        CacheType::Unified => format!("L{level}"),
    }
}

/// ` [P]`-style mark of `cpu`'s kind; empty on a one-kind machine.
pub fn kind_mark(topo: &Topology, cpu: usize) -> String {
    match topo
        .cpu(cpu)
        .and_then(|c| c.kind)
        .and_then(|k| topo.kinds.get(k))
    {
        Some(k) if topo.is_heterogeneous() => format!(" [{}]", k.mark),
        _ => String::new(),
    }
}

/// The kind mark, capacity and allowed state that end a PU line.
fn kind_tag(topo: &Topology, cpu: usize) -> String {
    let Some(c) = topo.cpu(cpu) else {
        return String::new();
    };
    let mut s = kind_mark(topo, cpu);
    if let Some(cap) = c.capacity {
        write!(s, " cap={cap}").ok();
    }
    if !c.allowed {
        s.push_str(" (not allowed)");
    }
    s
}

/// Offline CPUs and online CPUs this process may not use, when any.
fn unavailable_lines(topo: &Topology) -> String {
    let mut out = String::new();
    let offline = topo
        .cpus
        .iter()
        .filter(|c| !c.online)
        .map(|c| c.id)
        .collect::<CpuSet>();
    if !offline.is_empty() {
        writeln!(out, "  Offline CPUs: {offline}").ok();
    }
    let forbidden = topo.online().difference(&topo.usable());
    if !forbidden.is_empty() {
        writeln!(out, "  Not allowed by this process's cpuset: {forbidden}").ok();
    }
    out
}

/// The NUMA distance matrix, when there are several nodes.
fn numa_distances(topo: &Topology) -> String {
    let mut out = String::new();
    let Some(d) = &topo.numa_distances else {
        return out;
    };
    if topo.numa_nodes.len() <= 1 {
        return out;
    }
    out.push_str("NUMA distances:\n");
    let ids: Vec<String> = topo
        .numa_nodes
        .iter()
        .map(|n| format!("{:>5}", format!("#{}", n.id)))
        .collect();
    writeln!(out, "  {:>5}{}", "", ids.join("")).ok();
    for (i, row) in d.iter().enumerate() {
        let cells: String = row.iter().map(|v| format!("{v:>5}")).collect();
        writeln!(out, "  {:>5}{cells}", format!("#{}", topo.numa_nodes[i].id)).ok();
    }
    out
}

fn mhz(v: Option<u32>) -> String {
    v.map(|m| format!("{:.2} GHz", m as f64 / 1000.0))
        .unwrap_or_else(|| "?".into())
}

/// Three lines per kind (80 columns): rank, mark, name and CPUs; capacity
/// (and which source it came from) and frequencies; identity and rank
/// sources (`topo --explain` has the whole story).
fn describe_kind(topo: &Topology, k: &Kind) -> String {
    // The one capacity per CPU every command uses (Topology::capacity).
    let one = k.cpus.first().and_then(|c| topo.capacity(c));
    let cap = match (one, k.capacity_raw) {
        (Some(c), Some(r))
            if matches!(
                c.source,
                CapacityOrigin::Chain(CapacitySource::CpuCapacity) | CapacityOrigin::OneKind
            ) =>
        {
            format!("capacity {:.2} (cpu_capacity {r})", c.value)
        }
        (Some(c), _) => format!("capacity {:.2} ({})", c.value, c.source.describe()),
        (None, _) => "capacity ?".into(),
    };
    format!(
        "  {} {:<2} {:<12} CPUs {}\n       {cap}, max {}, base {}\n       \
         identity: {}; rank: {}",
        k.rank,
        k.mark,
        k.name,
        k.cpus.to_list_string(),
        mhz(k.max_mhz),
        mhz(k.base_mhz),
        k.source.as_str(),
        k.rank_source.as_str(),
    )
}

/// The one-line-per-kind summary.
pub fn render_kinds(topo: &Topology) -> String {
    let mut out = String::new();
    if topo.kinds.is_empty() {
        out.push_str("Core kinds: none found (no online CPUs)\n");
        return out;
    }
    let unranked = topo
        .kinds
        .iter()
        .any(|k| k.rank_source == RankSource::Unranked);
    writeln!(
        out,
        "Core kinds ({}):",
        if unranked {
            "cannot be ranked: order means nothing"
        } else {
            "rank 0 = least performant"
        }
    )
    .ok();
    for k in &topo.kinds {
        writeln!(out, "{}", describe_kind(topo, k)).ok();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover;
    use pinsight_model::{DeviceClass, DeviceLocalitySource, MemoryKind, OsDevice};
    use pinsight_sys::FsRoot;

    fn recorded(name: &str) -> Topology {
        discover(&FsRoot::at(pinsight_testkit::fixtures::hwloc(name)).unwrap())
    }

    fn device(address: &str, cpus: &str, os: &[(&str, OsDeviceKind)]) -> PciDevice {
        PciDevice {
            address: address.into(),
            class: DeviceClass::Network,
            class_code: 0x020000,
            vendor: 0x8086,
            device: 0x1572,
            numa_node: None,
            local_cpus: CpuSet::parse_list(cpus).unwrap(),
            locality_source: DeviceLocalitySource::LocalCpus,
            os_devices: os
                .iter()
                .map(|(n, k)| OsDevice {
                    name: n.to_string(),
                    kind: *k,
                })
                .collect(),
        }
    }

    /// The line of `needle` and the indentation of the nearest line above
    /// it that is less indented (its parent in the tree).
    fn parent_of<'a>(text: &'a str, needle: &str) -> (usize, &'a str) {
        let lines: Vec<&str> = text.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} missing:\n{text}"));
        let ind = |l: &str| l.len() - l.trim_start().len();
        let parent = lines[..i]
            .iter()
            .rev()
            .find(|l| ind(l) < ind(lines[i]))
            .unwrap();
        (ind(lines[i]), parent.trim())
    }

    /// hwloc's type of a console line ("L3Cache L#0 (...)" -> "L3Cache"),
    /// with numbered groups and node kinds folded ("Group1" -> "Group",
    /// "NUMANode(DRAM)" -> "NUMANode").
    fn hwloc_type(line: &str) -> String {
        let word = line.split_whitespace().next().unwrap_or("");
        let word = word.split('(').next().unwrap_or("");
        word.trim_end_matches(|c: char| c.is_ascii_digit())
            .to_string()
    }

    /// pinsight's tree line in hwloc's words: the last object of a chain
    /// ("Package L#0 P#0 + L3 (8MB)" -> "L3Cache").
    fn pinsight_type(line: &str) -> String {
        let last = line.rsplit(" + ").next().unwrap_or(line);
        let word = last.split_whitespace().next().unwrap_or("");
        match word {
            "L1d" | "L1i" | "L2" | "L3" | "L4" => {
                format!("{word}Cache").replace("L1dCache", "L1dCache")
            }
            w => w.to_string(),
        }
    }

    /// NUMA parent golden: on every recorded machine with hwloc's expected
    /// console output, each NUMA node's parent in `pinsight topo` is the
    /// object type lstopo puts it under (memory-side caches, which pinsight
    /// prints on the node's own line, are skipped on hwloc's side).
    #[test]
    fn numa_parents_match_hwlocs_expected_console() {
        let dir = pinsight_testkit::fixtures::hwloc_dir();
        let mut checked = 0;
        for name in pinsight_testkit::fixtures::hwloc_names() {
            let console = dir.join(format!("{name}.console"));
            let Ok(expected) = std::fs::read_to_string(&console) else {
                continue;
            };
            let lines: Vec<&str> = expected
                .lines()
                .take_while(|l| !l.starts_with("depth"))
                .collect();
            let ind = |l: &str| l.len() - l.trim_start().len();
            let text = render(&recorded(&name), false);
            for (i, l) in lines.iter().enumerate() {
                if !l.trim_start().starts_with("NUMANode") {
                    continue;
                }
                let Some(os) = l
                    .split("(P#")
                    .nth(1)
                    .and_then(|r| r.split([' ', ')']).next())
                else {
                    continue;
                };
                let mut want_ind = ind(l);
                let mut parent = String::new();
                for p in lines[..i].iter().rev() {
                    if ind(p) < want_ind {
                        let t = hwloc_type(p);
                        if t == "MemCache" {
                            want_ind = ind(p);
                            continue;
                        }
                        parent = t;
                        break;
                    }
                }
                let needle = format!("NUMANode P#{os} ");
                let needle_end = format!("NUMANode P#{os}\n");
                let mine = if text.contains(&needle) {
                    parent_of(&text, &needle).1
                } else {
                    parent_of(&text, needle_end.trim_end()).1
                };
                assert_eq!(
                    pinsight_type(mine),
                    parent,
                    "{name}: parent of NUMA node {os}\n{text}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 20, "only {checked} NUMA nodes checked");
    }

    #[test]
    fn memory_only_nodes_hang_under_their_initiators_cpus() {
        let t = recorded("fakeheteromemtiers");
        let text = render(&t, true);
        assert_eq!(parent_of(&text, "NUMANode P#4 HBM").1, "Group (CPUs 2-3)");
        assert_eq!(parent_of(&text, "NUMANode P#8 NVM").1, "Group (CPUs 0-1)");
        assert_eq!(parent_of(&text, "NUMANode P#2 HBM").1, "Group (CPUs 4-5)");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn devices_and_unusual_nodes() {
        let mut t = recorded("fakeheteromemtiers");
        t.devices = vec![
            device("0000:02:00.0", "2-3", &[("eth0", OsDeviceKind::Net)]),
            device(
                "0000:3b:00.0",
                "0-5",
                &[("mlx5_0", OsDeviceKind::Rdma), ("ib0", OsDeviceKind::Net)],
            ),
            device("0000:05:00.0", "0-1", &[]),
        ];
        {
            let n = &mut t.numa_nodes[0];
            n.memory.allowed = false;
        }
        {
            let n = t.numa_nodes.iter_mut().find(|n| n.id == 9).unwrap();
            n.memory.kind = None;
            n.memory.tier = Some(4);
        }
        {
            let n = t.numa_nodes.iter_mut().find(|n| n.id == 6).unwrap();
            n.memory.has_memory = false;
            n.memory.generic_initiator = true;
            n.memory.locality = CpuSet::new();
        }
        let text = render(&t, false);
        assert_eq!(
            parent_of(&text, "PCI 0000:02:00.0 Net eth0").1,
            "Group (CPUs 2-3)"
        );
        let (_, p) = parent_of(&text, "PCI 0000:3b:00.0 RDMA mlx5_0 Net ib0");
        assert!(p.starts_with("Package L#0"), "{p}");
        assert_eq!(
            parent_of(&text, "PCI 0000:05:00.0 (network)").1,
            "Group (CPUs 0-1)"
        );
        assert!(text.contains("NUMANode P#0 DRAM 2.9GiB (not allowed by cgroup)\n"));
        assert!(text.contains("NUMANode P#9 unknown 0.4GiB tier 4\n"));
        // No locality: at machine level, first.
        let (ind, p) = parent_of(&text, "NUMANode P#6 (memoryless, generic initiator)");
        assert_eq!((ind, p.starts_with("Machine")), (2, true), "{text}");
        // Devices come after the cores of their group.
        let lines: Vec<&str> = text.lines().collect();
        let eth = lines.iter().position(|l| l.contains("eth0")).unwrap();
        let core3 = lines.iter().position(|l| l.contains("Core L#3")).unwrap();
        assert!(eth > core3, "{text}");
        assert_eq!(t.numa_nodes[1].memory.kind, Some(MemoryKind::Dram));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }
}
