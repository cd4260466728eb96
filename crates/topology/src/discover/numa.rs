//! NUMA nodes from `/sys/devices/system/node/nodeN/`.
//!
//! Node ids are sparse (`node33`), some nodes hold memory but no CPU, and
//! buggy firmware lists several nodes with the same CPUs: those duplicates
//! are merged into the first (hwloc does the same, keeping the first node's
//! memory, since the copies describe the same memory); nodes without CPUs
//! (memory-only, generic initiators) are never duplicates. Offline nodes (absent
//! from `node/online`) are skipped. Without any node directory (a kernel
//! without NUMA) the machine is one node 0 holding every online CPU and the
//! memory of `/proc/meminfo`.

use super::reader::{shorten, Reader};
use pinsight_cpuset::CpuSet;
use pinsight_model::NumaNode;

const NODE_DIR: &str = "/sys/devices/system/node";

pub(super) struct Numa {
    pub nodes: Vec<NumaNode>,
    pub distances: Option<Vec<Vec<u32>>>,
}

pub(super) fn discover_numa(r: &mut Reader, online: &CpuSet) -> Numa {
    let mut ids = node_ids(r);
    if ids.is_empty() {
        return without_nodes(r, online);
    }
    let online_nodes = online_node_ids(r, &ids);
    ids.retain(|i| online_nodes.contains(i));
    let (nodes, rows) = read_nodes(r, ids, online);
    let distances = distance_matrix(r, &nodes, &rows, &online_nodes);
    Numa { nodes, distances }
}

/// The ids of the `nodeN` directories, sorted.
fn node_ids(r: &mut Reader) -> Vec<u32> {
    let mut ids: Vec<u32> = r
        .list(NODE_DIR)
        .iter()
        .filter_map(|n| {
            n.strip_prefix("node")
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|d| d.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

/// A kernel without NUMA: one node 0 holding every online CPU and the
/// memory of `/proc/meminfo` (no node at all without online CPUs).
fn without_nodes(r: &mut Reader, online: &CpuSet) -> Numa {
    if online.is_empty() {
        return Numa {
            nodes: Vec::new(),
            distances: None,
        };
    }
    let memory_mib = meminfo_total_mib(r, "/proc/meminfo", "MemTotal:");
    Numa {
        nodes: vec![NumaNode::new(0, online.clone(), memory_mib)],
        distances: None,
    }
}

/// The online nodes from `node/online` (distance rows list them in id
/// order); every node directory when it is missing or names none of them.
fn online_node_ids(r: &mut Reader, ids: &[u32]) -> Vec<u32> {
    let online_path = format!("{NODE_DIR}/online");
    match r.cpulist(&online_path, "assumed every node directory is online") {
        Some(s) => {
            let s: Vec<u32> = s.iter().filter_map(|n| u32::try_from(n).ok()).collect();
            if ids.iter().any(|i| s.contains(i)) {
                s
            } else {
                r.warn(
                    &online_path,
                    "lists none of the node directories",
                    "assumed every node directory is online",
                );
                ids.to_vec()
            }
        }
        None => ids.to_vec(),
    }
}

/// Reads the nodes `ids` with their raw distance rows: nodes listing the
/// same CPUs as an earlier one are merged into it, a CPU is kept in the
/// first node that lists it, and online CPUs in no node are warned about.
fn read_nodes(
    r: &mut Reader,
    ids: Vec<u32>,
    online: &CpuSet,
) -> (Vec<NumaNode>, Vec<Option<Vec<u32>>>) {
    let mut nodes: Vec<NumaNode> = Vec::new();
    let mut rows: Vec<Option<Vec<u32>>> = Vec::new();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    let mut claimed = CpuSet::new();
    for id in ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let cpus = r
            .cpuset(
                &format!("{dir}/cpumap"),
                &format!("{dir}/cpulist"),
                "treated the node as CPU-less",
            )
            .unwrap_or_default()
            .intersection(online);
        if !cpus.is_empty() {
            if let Some(first) = nodes.iter().find(|n| n.cpus == cpus) {
                merged.push((id, first.id));
                continue;
            }
            let overlap = cpus.intersection(&claimed);
            if !overlap.is_empty() {
                r.warn(
                    &format!("{dir}/cpumap"),
                    format_args!("CPUs {overlap} are also in an earlier node"),
                    "kept them in the earlier node",
                );
            }
        }
        let cpus = cpus.difference(&claimed);
        claimed.union_with(&cpus);
        let memory_mib = meminfo_total_mib(r, &format!("{dir}/meminfo"), "MemTotal:");
        rows.push(read_distances(r, &format!("{dir}/distance")));
        nodes.push(NumaNode::new(id, cpus, memory_mib));
    }
    warn_merged(r, &merged);
    let missing = online.difference(&claimed);
    if !missing.is_empty() && !nodes.is_empty() {
        r.warn(
            NODE_DIR,
            format_args!("online CPUs {missing} are in no NUMA node"),
            "left their node unknown",
        );
    }
    (nodes, rows)
}

/// Warns about the (node, into node) pairs merged for listing the same CPUs.
fn warn_merged(r: &mut Reader, merged: &[(u32, u32)]) {
    if merged.is_empty() {
        return;
    }
    let list: Vec<String> = merged
        .iter()
        .map(|(a, b)| format!("node{a} into node{b}"))
        .collect();
    r.warn(
        NODE_DIR,
        format_args!("several nodes list the same CPUs"),
        &format!("merged {}", list.join(", ")),
    );
}

/// The kept nodes' distances, columns picked from each full row by the
/// position of the node in `online_nodes`. `None` (with a warning when the
/// files exist but disagree) if any row is missing or too short.
fn distance_matrix(
    r: &mut Reader,
    nodes: &[NumaNode],
    rows: &[Option<Vec<u32>>],
    online_nodes: &[u32],
) -> Option<Vec<Vec<u32>>> {
    if rows.iter().all(|r| r.is_none()) {
        return None;
    }
    let cols: Vec<usize> = nodes
        .iter()
        .filter_map(|n| online_nodes.iter().position(|o| *o == n.id))
        .collect();
    if cols.len() != nodes.len() {
        return None;
    }
    let mut out = Vec::with_capacity(nodes.len());
    for (node, row) in nodes.iter().zip(rows) {
        let Some(row) = row else {
            r.warn(
                &format!("{NODE_DIR}/node{}/distance", node.id),
                "missing or unreadable while other nodes have one",
                "left NUMA distances unknown",
            );
            return None;
        };
        if row.len() != online_nodes.len() {
            r.warn(
                &format!("{NODE_DIR}/node{}/distance", node.id),
                format_args!(
                    "has {} values for {} online nodes",
                    row.len(),
                    online_nodes.len()
                ),
                "left NUMA distances unknown",
            );
            return None;
        }
        out.push(cols.iter().map(|&c| row[c]).collect());
    }
    Some(out)
}

fn read_distances(r: &mut Reader, path: &str) -> Option<Vec<u32>> {
    let text = r.text(path)?;
    let parsed: Result<Vec<u32>, _> = text.split_whitespace().map(str::parse::<u32>).collect();
    match parsed {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            r.warn(
                path,
                format_args!("'{}' is not a list of distances", shorten(&text)),
                "ignored it",
            );
            None
        }
    }
}

/// The `key` line of a meminfo file (`Node 0 MemTotal: 16 kB` or
/// `MemTotal: 16 kB`), in MiB.
fn meminfo_total_mib(r: &mut Reader, path: &str, key: &str) -> Option<u64> {
    let text = r.text(path)?;
    for line in text.lines() {
        let mut words = line.split_whitespace().skip_while(|w| *w != key);
        if words.next().is_none() {
            continue;
        }
        let value = words.next().and_then(|v| v.parse::<u64>().ok());
        let unit = words.next().unwrap_or("kB");
        return match (value, unit) {
            (Some(v), "kB") => Some(v / 1024),
            _ => {
                r.warn(
                    path,
                    format_args!("unreadable {key} line '{}'", shorten(line)),
                    "left the memory size unknown",
                );
                None
            }
        };
    }
    r.warn(
        path,
        format_args!("no {key} line"),
        "left the memory size unknown",
    );
    None
}
