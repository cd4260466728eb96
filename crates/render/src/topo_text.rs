//! The machine as a compact text tree in the spirit of
//! `lstopo-no-graphics`, with core kinds marked, then one line per kind —
//! what `pinsight topo` prints.
//!
//! The tree is [`crate::tree::nest`]ed from the flat model; chains of
//! objects covering the same CPUs are printed on one line joined by `+`,
//! as lstopo does. Cores and PUs are numbered by logical index (lstopo's
//! `L#`): their rank in tree order.

use crate::size::format_size_lstopo;
use crate::tree::{self, Object, TreeNode};
use pinsight_topology::{CacheType, CapacitySource, CpuSet, Kind, RankSource, Topology};
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
        Object::Numa(m) => {
            let mem = m
                .memory_mib
                .map(|m| format!(" {:.1}GB", m as f64 / 1024.0))
                .unwrap_or_default();
            format!("NUMANode P#{}{mem}", m.id)
        }
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
    let from = topo.provenance.capacity_from;
    let cap = match (k.capacity, k.capacity_raw, from) {
        (Some(c), Some(r), Some(CapacitySource::CpuCapacity) | None) => {
            format!("capacity {c:.2} (cpu_capacity {r})")
        }
        (Some(c), _, Some(s)) => format!("capacity {c:.2} ({})", s.file()),
        (Some(c), _, None) => format!("capacity {c:.2}"),
        _ => "capacity ?".into(),
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
