//! A compact picture of the machine in the manner of `lstopo`: nested boxes
//! for packages, dies, NUMA nodes, L3 and shared L2 caches, holding cores,
//! each core showing its hardware threads coloured by core kind — the part
//! of an `lstopo` drawing that matters for placement.
//!
//! The nesting is derived from CPU sets alone (a box holds every box whose
//! CPUs are a subset of its own), so it works the same for a laptop, a
//! chiplet server whose NUMA nodes sit inside a package, and a POWER machine
//! whose NUMA nodes hold many one-core packages. Boxes with the same CPUs
//! are drawn once with both labels ("Package 0 · L3 24 MiB"); an L2 is drawn
//! only when several cores share it (E-core clusters). Children flow left to
//! right and wrap, so big machines stay a page wide.
//!
//! Like lstopo's I/O and memory objects, two kinds of small boxes ("chips")
//! hang inside the smallest box holding the CPUs they are local to: PCI
//! devices (class, address, OS names: "network 0000:01:00.0 · eth0") and
//! memory-only NUMA nodes (HBM, NVM, CXL, GPU memory: "NUMA node 2 · 16 GiB
//! HBM"); a device local to no known CPUs hangs at the top. NUMA boxes name
//! their memory's size and kind ("NUMA node 1 (64 GiB DRAM)").

use super::{esc, kind_colour};
use pinsight_cpuset::CpuSet;
use pinsight_model::{CacheType, DeviceLocalitySource, Group, Topology};
use pinsight_term::size::format_size;
use pinsight_topology::view::tree::{self, Object, Placed, TreeNode};
use std::fmt::Write;

/// Widest the picture may be (the HTML page is 1000 px wide).
pub const MAX_WIDTH: usize = 960;
const PAD: usize = 6;
const HEAD: usize = 18;
const CORE_HEAD: usize = 13;
const PU_H: usize = 16;
const PUS_PER_ROW: usize = 4;
/// Approximate advance of a 12 px bold sans-serif character, for sizing
/// boxes to their labels (11 px regular is about 0.9 of it).
const CHAR_W: f64 = 6.3;

/// What a box stands for; orders equal-CPU boxes and picks its style.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Machine,
    Package,
    Die,
    Numa,
    L3,
    L2,
}

impl Level {
    /// (fill, stroke, dashed)
    fn style(self) -> (&'static str, &'static str, bool) {
        match self {
            Level::Machine => ("#f7f7f5", "#9a9a9a", false),
            Level::Package => ("#e6e0d2", "#6d6556", false),
            Level::Die => ("#ece6d9", "#857c6b", false),
            Level::Numa => ("#e3e9ef", "#6f7f90", false),
            Level::L3 => ("#f4f1ea", "#b9b2a3", false),
            Level::L2 => ("#fbfaf6", "#b9b2a3", true),
        }
    }
}

/// A box of the picture before layout.
struct Container<'a> {
    level: Level,
    label: String,
    cpus: CpuSet,
    children: Vec<Item<'a>>,
}

enum Item<'a> {
    Box(Container<'a>),
    Core(&'a Group),
    Chip(Chip),
}

/// A device or a memory-only node, drawn as a small labelled box.
struct Chip {
    label: String,
    /// The tooltip.
    title: String,
    /// (fill, stroke)
    style: (&'static str, &'static str),
    /// The online CPUs it is local to (where it hangs).
    cpus: CpuSet,
}

const DEVICE_STYLE: (&str, &str) = ("#e9f2e4", "#5f7f52");
const MEMORY_STYLE: (&str, &str) = ("#e3e9ef", "#6f7f90");

/// The picture's level of a drawn object (cores are not boxes).
fn level_of(object: Object<'_>) -> Option<Level> {
    match object {
        Object::Package(_) => Some(Level::Package),
        Object::Die(_) => Some(Level::Die),
        Object::Numa(_) => Some(Level::Numa),
        Object::Cache(c) if c.level == 3 => Some(Level::L3),
        Object::Cache(_) => Some(Level::L2),
        Object::Cluster(_) | Object::Core(_) | Object::Pu(_) => None,
        Object::Device(_) | Object::MemoryGroup => None,
    }
}

/// A box's own label ("Package 0", "L3 24 MiB", "NUMA node 1 (64 GiB)").
fn box_label(object: Object<'_>) -> String {
    match object {
        Object::Package(g) => format!("Package {}", g.id),
        Object::Die(g) => format!("Die {}", g.id),
        Object::Cluster(g) => format!("Cluster {}", g.id),
        Object::Numa(n) => {
            let mem = match memory_text(n) {
                Some(m) => format!(" ({m})"),
                None => String::new(),
            };
            format!("NUMA node {}{mem}", n.id)
        }
        Object::Cache(c) => match c.size_kib {
            Some(k) => format!("L{} {}", c.level, format_size(k)),
            None => format!("L{}", c.level),
        },
        Object::Core(g) => format!("core {}", g.id),
        Object::Pu(c) => format!("CPU {}", c.id),
        Object::Device(d) => d.label().to_string(),
        Object::MemoryGroup => "group".to_string(),
    }
}

/// A node's memory size and kind ("64 GiB DRAM", "HBM"), if known.
fn memory_text(n: &pinsight_model::NumaNode) -> Option<String> {
    let size = match n.memory_mib {
        Some(m) if m >= 1024 => Some(format!("{:.0} GiB", m as f64 / 1024.0)),
        Some(m) if m > 0 => Some(format!("{m} MiB")),
        _ => None,
    };
    let kind = n.memory.kind.map(|k| k.hwloc_name().to_string());
    match (size, kind) {
        (Some(s), Some(k)) => Some(format!("{s} {k}")),
        (s, k) => s.or(k),
    }
}

/// The chips: every PCI device, and every NUMA node with memory but no
/// CPU, each with the online CPUs it hangs under (empty: the top).
fn chips(topo: &Topology, online: &CpuSet) -> Vec<Chip> {
    let mut out = Vec::new();
    for n in &topo.numa_nodes {
        // Memory-only nodes; a node whose CPUs are all offline is not one.
        if !n.cpus.is_empty() || !n.memory.has_memory {
            continue;
        }
        let label = match memory_text(n) {
            Some(m) => format!("NUMA node {} · {m}", n.id),
            None => format!("NUMA node {}", n.id),
        };
        let near = n.memory.locality.intersection(online);
        let title = if near.is_empty() {
            format!("{label}: memory only, no CPU known to be near")
        } else {
            format!("{label}: memory only, nearest CPUs {near}")
        };
        out.push(Chip {
            label,
            title,
            style: MEMORY_STYLE,
            cpus: near,
        });
    }
    for d in &topo.devices {
        let names: Vec<&str> = d.os_devices.iter().map(|o| o.name.as_str()).collect();
        let label = if names.is_empty() {
            format!("{} {}", d.class.as_str(), d.address)
        } else {
            format!("{} {} · {}", d.class.as_str(), d.address, names.join(", "))
        };
        let cpus = if d.locality_source == DeviceLocalitySource::Unknown {
            CpuSet::new()
        } else {
            d.local_cpus.intersection(online)
        };
        let node = d
            .numa_node
            .map(|n| format!(", NUMA node {n}"))
            .unwrap_or_default();
        let title = if cpus.is_empty() {
            format!(
                "{label} [{:04x}:{:04x}]: locality unknown{node}",
                d.vendor, d.device
            )
        } else {
            format!(
                "{label} [{:04x}:{:04x}]: local CPUs {cpus}{node}",
                d.vendor, d.device
            )
        };
        out.push(Chip {
            label,
            title,
            style: DEVICE_STYLE,
            cpus,
        });
    }
    out
}

/// Hangs `chip` in the smallest box of `item` holding its CPUs (the top
/// box when its CPUs are unknown or no box holds them all).
fn attach<'a>(item: &mut Item<'a>, chip: Chip) {
    let Item::Box(c) = item else { return };
    if !chip.cpus.is_empty() {
        if let Some(child) = c
            .children
            .iter_mut()
            .find(|i| matches!(i, Item::Box(b) if chip.cpus.is_subset(&b.cpus)))
        {
            return attach(child, chip);
        }
    }
    c.children.push(Item::Chip(chip));
}

/// What the picture draws, restricted to online CPUs: every grouping that
/// says something about placement (packages; dies when a package has
/// several; NUMA nodes when there are several; L3s; L2s shared by several
/// cores) and the cores. Cores are leaves: their PUs are drawn inside them.
fn drawn_objects<'a>(topo: &'a Topology, online: &CpuSet) -> Vec<Placed<'a>> {
    let mut out = tree::packages(topo);
    if topo.dies.len() > topo.packages.len() {
        out.extend(tree::dies(topo));
    }
    let nodes: Vec<_> = tree::numa_nodes(topo)
        .into_iter()
        .filter(|n| n.cpus.intersects(online))
        .map(|n| Placed {
            memory: false,
            leaf: false,
            ..n
        })
        .collect();
    if nodes.len() > 1 {
        out.extend(nodes);
    }
    out.extend(tree::caches(topo).into_iter().filter(|p| match p.object {
        Object::Cache(c) if c.cache_type != CacheType::Instruction => {
            let cores_inside = topo
                .cores
                .iter()
                .filter(|k| k.cpus.intersects(&c.cpus))
                .count();
            c.level == 3 || (c.level == 2 && cores_inside > 1)
        }
        _ => false,
    }));
    out.extend(
        tree::cores(topo)
            .into_iter()
            .map(|p| Placed { leaf: true, ..p }),
    );
    for p in &mut out {
        p.cpus = p.cpus.intersection(online);
    }
    out.retain(|p| !p.cpus.is_empty());
    out
}

/// A nested node as a picture item: boxes with the same CPUs are drawn once
/// with all their labels ("Package 0 · L3 24 MiB"); boxes holding no core
/// are left out.
fn item<'a>(node: &TreeNode<'a>) -> Option<Item<'a>> {
    if let Object::Core(g) = node.object {
        return Some(Item::Core(g));
    }
    let chain = node.chain(|n| !matches!(n.object, Object::Core(_)));
    let mut labels: Vec<String> = Vec::new();
    for n in &chain {
        let l = box_label(n.object);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let last = chain.last().copied().unwrap_or(node);
    let children: Vec<Item> = last.children.iter().filter_map(item).collect();
    if children.is_empty() {
        return None;
    }
    Some(Item::Box(Container {
        level: level_of(node.object)?,
        label: labels.join(" · "),
        cpus: node.cpus.clone(),
        children,
    }))
}

/// Boxes nested by CPU-set containment (the tree `pinsight topo` prints),
/// cores placed in the smallest box holding them. Groups that overlap
/// another without nesting (inconsistent firmware tables) are left out
/// rather than drawn twice.
fn build_tree(topo: &Topology) -> Item<'_> {
    let online = topo.online();
    let roots = tree::nest(tree::laminar(drawn_objects(topo, &online)));
    let mut top: Vec<Item> = roots.iter().filter_map(item).collect();
    let chips = chips(topo, &online);
    // A lone core (a one-core machine) is the picture, unless chips need a
    // box to hang in.
    let mut root = if top.len() == 1 && (matches!(top[0], Item::Box(_)) || chips.is_empty()) {
        top.pop().expect("one item")
    } else {
        Item::Box(Container {
            level: Level::Machine,
            label: format!("Machine ({} CPUs)", online.len()),
            cpus: online.clone(),
            children: top,
        })
    };
    for chip in chips {
        attach(&mut root, chip);
    }
    root
}

/// A laid-out item: its size and its SVG drawn at the origin.
struct Laid {
    w: usize,
    h: usize,
    svg: String,
}

fn text_width(s: &str, scale: f64) -> usize {
    (s.chars().count() as f64 * CHAR_W * scale).ceil() as usize
}

fn layout(item: &Item, topo: &Topology, max_w: usize, pu_w: usize) -> Laid {
    match item {
        Item::Core(core) => layout_core(topo, core, pu_w),
        Item::Box(c) => layout_box(c, topo, max_w, pu_w),
        Item::Chip(c) => layout_chip(c, max_w),
    }
}

fn layout_chip(c: &Chip, max_w: usize) -> Laid {
    let w = (text_width(&c.label, 0.9) + 10).min(max_w.max(20));
    let h = 18;
    let (fill, stroke) = c.style;
    let svg = format!(
        r##"<g><rect width="{w}" height="{h}" rx="2" fill="{fill}" stroke="{stroke}"/><text x="5" y="13" class="ps-lbl">{}</text><title>{}</title></g>
"##,
        esc(&c.label),
        esc(&c.title)
    );
    Laid { w, h, svg }
}

fn layout_core(topo: &Topology, core: &Group, pu_w: usize) -> Laid {
    let pus: Vec<usize> = core
        .cpus
        .iter()
        .filter(|c| topo.cpu(*c).is_some_and(|c| c.online))
        .collect();
    let cols = pus.len().clamp(1, PUS_PER_ROW);
    let rows = pus.len().div_ceil(PUS_PER_ROW).max(1);
    let label = format!("core {}", core.id);
    let w = (8 + cols * pu_w).max(text_width(&label, 0.85) + 8);
    let h = CORE_HEAD + rows * (PU_H + 2) + 3;
    let mut svg = String::new();
    writeln!(
        svg,
        r##"<rect width="{w}" height="{h}" rx="3" fill="#ffffff" stroke="#8a8170"/><text x="4" y="10" class="ps-small">{}</text>"##,
        esc(&label)
    )
    .ok();
    for (j, pu) in pus.iter().enumerate() {
        let cpu = topo.cpu(*pu);
        let colour = cpu
            .and_then(|c| c.kind)
            .map(|k| kind_colour(k, topo.kinds.len()))
            .unwrap_or("#9aa3ad");
        let allowed = cpu.is_some_and(|c| c.allowed);
        let x = 4 + (j % PUS_PER_ROW) * pu_w;
        let y = CORE_HEAD + (j / PUS_PER_ROW) * (PU_H + 2);
        let kind = cpu
            .and_then(|c| c.kind)
            .and_then(|k| topo.kinds.get(k))
            .map(|k| format!(", {}", k.name))
            .unwrap_or_default();
        writeln!(
            svg,
            r##"<g opacity="{}"><rect x="{x}" y="{y}" width="{}" height="{PU_H}" rx="1" fill="{colour}"/><text x="{}" y="{}" class="ps-pu">{pu}</text><title>CPU {pu}{}{}</title></g>"##,
            if allowed { "1" } else { "0.35" },
            pu_w - 2,
            x + (pu_w - 2) / 2,
            y + 12,
            esc(&kind),
            if allowed { "" } else { " (not allowed for this process)" }
        )
        .ok();
    }
    Laid { w, h, svg }
}

fn count_cores(c: &Container) -> usize {
    c.children
        .iter()
        .map(|i| match i {
            Item::Core(_) => 1,
            Item::Box(b) => count_cores(b),
            Item::Chip(_) => 0,
        })
        .sum()
}

fn layout_box(c: &Container, topo: &Topology, max_w: usize, pu_w: usize) -> Laid {
    let inner_max = max_w.saturating_sub(2 * PAD).max(1);
    let laid: Vec<Laid> = c
        .children
        .iter()
        .map(|child| layout(child, topo, inner_max, pu_w))
        .collect();
    // Balanced rows: as many rows as greedy filling needs, the children
    // spread evenly over them (8 boxes in 2 rows are 4 + 4, not 6 + 2).
    let greedy_rows = {
        let (mut rows, mut x) = (1, 0usize);
        for l in &laid {
            if x > 0 && x + l.w > inner_max {
                rows += 1;
                x = 0;
            }
            x += l.w + PAD;
        }
        rows
    };
    let per_row = laid.len().div_ceil(greedy_rows).max(1);
    let (mut x, mut y, mut row_h, mut content_w) = (PAD, HEAD, 0usize, 0usize);
    let mut body = String::new();
    for (i, l) in laid.into_iter().enumerate() {
        if x > PAD && (x + l.w > PAD + inner_max || i % per_row == 0) {
            x = PAD;
            y += row_h + PAD;
            row_h = 0;
        }
        writeln!(body, r#"<g transform="translate({x},{y})">"#).ok();
        body.push_str(&l.svg);
        body.push_str("</g>\n");
        content_w = content_w.max(x + l.w);
        x += l.w + PAD;
        row_h = row_h.max(l.h);
    }
    // A box of one core needs no CPU list: its PUs show the numbers.
    let label = if count_cores(c) > 1 {
        format!("{} · CPUs {}", c.label, c.cpus)
    } else {
        c.label.clone()
    };
    let title = matches!(c.level, Level::Machine | Level::Package | Level::Numa);
    let label_w = text_width(&label, if title { 1.0 } else { 0.9 });
    let w = (content_w + PAD)
        .max(label_w + 2 * PAD)
        .min(max_w.max(content_w + PAD));
    let h = y + row_h + PAD;
    let (fill, stroke, dashed) = c.level.style();
    let mut svg = String::new();
    writeln!(
        svg,
        r##"<rect width="{w}" height="{h}" rx="4" fill="{fill}" stroke="{stroke}"{}/><text x="{PAD}" y="13" class="{}">{}</text>"##,
        if dashed { r#" stroke-dasharray="4 2""# } else { "" },
        if title { "ps-title" } else { "ps-lbl" },
        esc(&label)
    )
    .ok();
    svg.push_str(&body);
    Laid { w, h, svg }
}

/// The topology as an SVG document (embeddable in HTML).
pub fn topology_svg(topo: &Topology) -> String {
    let digits = topo
        .cpus
        .iter()
        .map(|c| c.id)
        .max()
        .unwrap_or(0)
        .to_string()
        .len();
    let pu_w = ((digits as f64 * 5.6).ceil() as usize + 6).max(14);
    let tree = build_tree(topo);
    let root = layout(&tree, topo, MAX_WIDTH, pu_w);
    let mut body = root.svg;
    let mut width = root.w;
    // Legend: one swatch per kind, then what faded means.
    let mut items: Vec<(Option<&str>, String)> = topo
        .kinds
        .iter()
        .map(|k| {
            (
                Some(kind_colour(k.rank, topo.kinds.len())),
                format!("{} (rank {}, CPUs {})", k.name, k.rank, k.cpus),
            )
        })
        .collect();
    if topo.cpus.iter().any(|c| c.online && !c.allowed) {
        items.push((None, "faded: not allowed for this process".to_string()));
    }
    let (mut x, mut y) = (0usize, root.h + 8);
    for (colour, label) in &items {
        let w = 20 + text_width(label, 0.9);
        if x > 0 && x + w > MAX_WIDTH {
            x = 0;
            y += 20;
        }
        let tx = match colour {
            Some(c) => {
                writeln!(
                    body,
                    r##"<rect x="{x}" y="{y}" width="14" height="14" fill="{c}"/>"##
                )
                .ok();
                x + 18
            }
            None => x,
        };
        writeln!(
            body,
            r##"<text x="{tx}" y="{}" class="ps-lbl">{}</text>"##,
            y + 11,
            esc(label)
        )
        .ok();
        x += w + 16;
        width = width.max(x);
    }
    let height = y + 20;
    let width = width.min(MAX_WIDTH).max(root.w) + 2;
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="-1 -1 {width} {height}" font-family="sans-serif"><style>.ps-title{{font-size:12px;font-weight:bold}} .ps-lbl{{font-size:11px}} .ps-small{{font-size:9px;fill:#555}} .ps-pu{{font-size:9px;fill:#fff;text-anchor:middle}}</style>
{body}</svg>"##
    )
}
