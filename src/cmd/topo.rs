//! `pinsight topo`: the machine as a compact tree in the spirit of
//! `lstopo-no-graphics`, with core kinds marked, then one line per kind.
//!
//! The tree is rebuilt from the flat model by CPU-set inclusion (each object
//! hangs under the smallest object containing it), which is how hwloc
//! itself decides parenthood; chains of objects covering the same CPUs are
//! printed on one line joined by `+`, as lstopo does.

use crate::cli::{CmdResult, Globals};
use pinsight_topology::{CacheType, CpuSet, Kind, RankSource, Topology};
use std::fmt::Write;

/// Show the machine: packages, caches, cores, CPUs, NUMA nodes and core kinds.
///
/// Kinds are ranked from least (0) to most performant. Each PU line carries its
/// kind's mark (P, E, L, ...) and capacity. `--json` prints the full model
/// (schema in the README).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight topo\n  pinsight topo --json\n  pinsight --fsroot dump/ topo\n  pinsight --hwloc-xml box.xml topo"
)]
pub struct Args {
    /// Hide the per-CPU lines (show cores and above only).
    #[arg(long)]
    pub no_pus: bool,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let topo = g.topology()?;
    if g.json {
        g.print_json(&topo)?;
    } else {
        print!("{}", render(&topo, !args.no_pus));
    }
    Ok(0)
}

/// Objects numbered by logical index (lstopo's `L#`): the index is their
/// rank in tree order, known only once the tree is walked.
#[derive(Clone, Copy, PartialEq)]
enum Logical {
    Core,
    Pu,
}

/// One object of the rebuilt tree.
struct Node {
    /// Sort priority for equal CPU sets: lower = outer.
    depth: u8,
    /// The text of the line; for `logical` objects, what follows `L#n`.
    label: String,
    logical: Option<Logical>,
    cpus: CpuSet,
    /// Memory nodes are printed as children lines of their host, not as parents.
    memory: bool,
}

fn fmt_size(kib: Option<u64>) -> String {
    match kib {
        None => "size ?".into(),
        Some(k) if k >= 1024 * 1024 && k % (1024 * 1024) == 0 => format!("{}GB", k / (1024 * 1024)),
        Some(k) if k >= 1024 && k % 1024 == 0 => format!("{}MB", k / 1024),
        Some(k) => format!("{k}KB"),
    }
}

fn cache_name(level: u8, t: CacheType) -> String {
    match t {
        CacheType::Data => format!("L{level}d"),
        CacheType::Instruction => format!("L{level}i"),
        CacheType::Unified => format!("L{level}"),
    }
}

/// ` [P]`-style mark of `cpu`'s kind; empty on a one-kind machine.
fn kind_mark(topo: &Topology, cpu: usize) -> String {
    match topo
        .cpu(cpu)
        .and_then(|c| c.kind)
        .and_then(|k| topo.kinds.get(k))
    {
        Some(k) if topo.is_heterogeneous() => format!(" [{}]", k.mark),
        _ => String::new(),
    }
}

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

/// Renders the human tree and the kind summary.
pub fn render(topo: &Topology, show_pus: bool) -> String {
    let mut nodes: Vec<Node> = Vec::new();
    for p in &topo.packages {
        let os = p.os_id.map(|i| format!(" P#{i}")).unwrap_or_default();
        nodes.push(Node {
            depth: 1,
            label: format!("Package L#{}{os}", p.id),
            cpus: p.cpus.clone(),
            memory: false,
            logical: None,
        });
    }
    for d in &topo.dies {
        nodes.push(Node {
            depth: 2,
            label: format!("Die L#{}", d.id),
            cpus: d.cpus.clone(),
            memory: false,
            logical: None,
        });
    }
    for n in &topo.numa_nodes {
        let mem = n
            .memory_mib
            .map(|m| format!(" {:.1}GB", m as f64 / 1024.0))
            .unwrap_or_default();
        nodes.push(Node {
            depth: 3,
            label: format!("NUMANode P#{}{mem}", n.id),
            cpus: n.cpus.clone(),
            memory: true,
            logical: None,
        });
    }
    let mut caches: Vec<_> = topo.caches.iter().collect();
    caches.sort_by_key(|c| {
        (
            std::cmp::Reverse(c.level),
            c.cache_type == CacheType::Instruction,
            c.cpus.first(),
        )
    });
    for c in caches {
        let depth = 10 - c.level.min(5)
            + if c.cache_type == CacheType::Instruction {
                1
            } else {
                0
            };
        nodes.push(Node {
            depth: depth * 2,
            label: format!(
                "{} ({})",
                cache_name(c.level, c.cache_type),
                fmt_size(c.size_kib)
            ),
            cpus: c.cpus.clone(),
            memory: false,
            logical: None,
        });
    }
    for cl in &topo.clusters {
        // A cluster sits just below the L3 and above the L2.
        nodes.push(Node {
            depth: 13,
            label: format!("Cluster L#{}", cl.id),
            cpus: cl.cpus.clone(),
            memory: false,
            logical: None,
        });
    }
    for core in &topo.cores {
        let mark = core
            .cpus
            .first()
            .map(|c| kind_mark(topo, c))
            .unwrap_or_default();
        nodes.push(Node {
            depth: 30,
            label: mark,
            cpus: core.cpus.clone(),
            memory: false,
            logical: Some(Logical::Core),
        });
    }
    if show_pus {
        for c in topo.cpus.iter().filter(|c| c.online) {
            nodes.push(Node {
                depth: 31,
                label: format!(" (P#{}){}", c.id, kind_tag(topo, c.id)),
                cpus: CpuSet::single(c.id),
                memory: false,
                logical: Some(Logical::Pu),
            });
        }
    }
    // Outer objects first: bigger sets, then lower depth.
    nodes.sort_by_key(|n| (std::cmp::Reverse(n.cpus.len()), n.depth, n.cpus.first()));
    let mut parent: Vec<Option<usize>> = vec![None; nodes.len()];
    for i in 0..nodes.len() {
        // The last (innermost) earlier node containing this one.
        parent[i] = (0..i)
            .rev()
            .find(|&j| !nodes[j].memory && nodes[i].cpus.is_subset(&nodes[j].cpus));
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (i, up) in parent.iter().enumerate() {
        match *up {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    for ch in &mut children {
        ch.sort_by_key(|&i| (!nodes[i].memory, nodes[i].cpus.first(), nodes[i].depth));
    }
    roots.sort_by_key(|&i| (!nodes[i].memory, nodes[i].cpus.first()));

    let mut out = String::new();
    let online = topo.online();
    let usable = topo.usable();
    let model = topo
        .model_name
        .clone()
        .unwrap_or_else(|| "unknown CPU".into());
    writeln!(
        out,
        "Machine ({model}; {} CPUs online, {} usable, {} kind{})",
        online.len(),
        usable.len(),
        topo.kinds.len(),
        if topo.kinds.len() == 1 { "" } else { "s" }
    )
    .ok();
    /// Logical indexes handed out so far, per numbered type.
    #[derive(Default)]
    struct Counters {
        core: usize,
        pu: usize,
    }
    fn text(n: &Node, counters: &mut Counters) -> String {
        let (name, counter) = match n.logical {
            None => return n.label.clone(),
            Some(Logical::Core) => ("Core", &mut counters.core),
            Some(Logical::Pu) => ("PU", &mut counters.pu),
        };
        *counter += 1;
        format!("{name} L#{}{}", *counter - 1, n.label)
    }
    fn walk(
        out: &mut String,
        nodes: &[Node],
        children: &[Vec<usize>],
        i: usize,
        indent: usize,
        counters: &mut Counters,
    ) {
        let mut line = text(&nodes[i], counters);
        let mut cur = i;
        // Collapse single-child chains covering the same CPUs (lstopo's "A + B").
        while !nodes[cur].memory
            && children[cur].len() == 1
            && nodes[children[cur][0]].cpus == nodes[cur].cpus
            && !nodes[children[cur][0]].memory
        {
            cur = children[cur][0];
            line.push_str(" + ");
            line.push_str(&text(&nodes[cur], counters));
        }
        writeln!(out, "{}{}", "  ".repeat(indent), line).ok();
        for &c in &children[cur] {
            walk(out, nodes, children, c, indent + 1, counters);
        }
    }
    let mut counters = Counters::default();
    for &r in &roots {
        walk(&mut out, &nodes, &children, r, 1, &mut counters);
    }
    let offline = topo
        .cpus
        .iter()
        .filter(|c| !c.online)
        .map(|c| c.id)
        .collect::<CpuSet>();
    if !offline.is_empty() {
        writeln!(out, "  Offline CPUs: {offline}").ok();
    }
    let forbidden = online.difference(&usable);
    if !forbidden.is_empty() {
        writeln!(out, "  Not allowed by this process's cpuset: {forbidden}").ok();
    }
    out.push_str(&render_kinds(topo));
    if let Some(d) = &topo.numa_distances {
        if topo.numa_nodes.len() > 1 {
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
        }
    }
    out
}

fn mhz(v: Option<u32>) -> String {
    v.map(|m| format!("{:.2} GHz", m as f64 / 1000.0))
        .unwrap_or_else(|| "?".into())
}

fn describe_kind(k: &Kind) -> String {
    let cap = match (k.capacity, k.capacity_raw) {
        (Some(c), Some(r)) => format!("capacity {c:.2} ({r})"),
        (Some(c), None) => format!("capacity {c:.2}"),
        _ => "capacity ?".into(),
    };
    format!(
        "  {} {:<2} {:<12} CPUs {:<16} {cap}, max {}, base {}  [identity: {}, rank: {}]",
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
        writeln!(out, "{}", describe_kind(k)).ok();
    }
    out
}
