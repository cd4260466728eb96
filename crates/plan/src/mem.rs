//! Memory policies: where a program's memory lives (`--mem`).
//!
//! A [`MemPolicy`] is what the user asked for (`local`, `bind:0-1`,
//! `interleave:all`, `preferred:1`, `weighted-interleave`); [`resolve`]
//! checks it against a [`Topology`] (the nodes exist, hold memory and are
//! allowed by the cgroup's `cpuset.mems`) and turns `all` into node ids,
//! giving the [`MemPlan`] a [`Plan`](crate::Plan) carries. The launcher
//! applies it with `set_mempolicy(2)`; the dialects
//! ([`format`](mod@crate::format)) speak it as numactl, libvirt and Slurm
//! options. Pure: no OS access.

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The kernel's mode (`MPOL_*`) a policy becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemMode {
    /// `MPOL_LOCAL`: allocate on the node of the CPU that touches first.
    Local,
    /// `MPOL_BIND`: only on these nodes.
    Bind,
    /// `MPOL_INTERLEAVE`: page by page round robin over these nodes.
    Interleave,
    /// `MPOL_PREFERRED`: this node first, others when it is full.
    Preferred,
    /// `MPOL_WEIGHTED_INTERLEAVE` (Linux 6.9+): round robin in proportion
    /// to the kernel's per-node weights.
    WeightedInterleave,
}

impl MemMode {
    /// The spec keyword (`bind`, `weighted-interleave`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MemMode::Local => "local",
            MemMode::Bind => "bind",
            MemMode::Interleave => "interleave",
            MemMode::Preferred => "preferred",
            MemMode::WeightedInterleave => "weighted-interleave",
        }
    }
}

/// The nodes a policy names: a list, or every allowed node with memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeSpec {
    /// `all`: the nodes this process may allocate on that hold memory.
    All,
    /// An explicit node list (`0-1,3`), ascending, never empty.
    List(Vec<u32>),
}

impl fmt::Display for NodeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeSpec::All => f.write_str("all"),
            NodeSpec::List(v) => f.write_str(&node_list(v)),
        }
    }
}

/// A memory policy as the user wrote it (`--mem SPEC`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemPolicy {
    /// `local`.
    Local,
    /// `bind:NODES`.
    Bind(NodeSpec),
    /// `interleave:NODES`.
    Interleave(NodeSpec),
    /// `preferred:NODE` (exactly one node).
    Preferred(u32),
    /// `weighted-interleave[:NODES]` (default: all).
    WeightedInterleave(NodeSpec),
}

/// What `--mem` accepts, for error messages.
pub const MEM_EXPECTED: &str =
    "local, bind:NODES, interleave:NODES, preferred:NODE or weighted-interleave[:NODES], where NODES is a node list (0-1,3) or all";

/// The highest node id accepted (the kernel's MAX_NUMNODES is at most 1024).
pub const MAX_NODE: u32 = 1023;

/// Why a `--mem` spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{text}': {problem}; expected {MEM_EXPECTED}")]
pub struct MemParseError {
    /// The spec as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

impl MemPolicy {
    /// The mode this policy becomes.
    pub fn mode(&self) -> MemMode {
        match self {
            MemPolicy::Local => MemMode::Local,
            MemPolicy::Bind(_) => MemMode::Bind,
            MemPolicy::Interleave(_) => MemMode::Interleave,
            MemPolicy::Preferred(_) => MemMode::Preferred,
            MemPolicy::WeightedInterleave(_) => MemMode::WeightedInterleave,
        }
    }
}

impl fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemPolicy::Local => f.write_str("local"),
            MemPolicy::Bind(n) => write!(f, "bind:{n}"),
            MemPolicy::Interleave(n) => write!(f, "interleave:{n}"),
            MemPolicy::Preferred(n) => write!(f, "preferred:{n}"),
            MemPolicy::WeightedInterleave(NodeSpec::All) => f.write_str("weighted-interleave"),
            MemPolicy::WeightedInterleave(n) => write!(f, "weighted-interleave:{n}"),
        }
    }
}

/// Node ids as a compact list: `0-2,5`.
pub fn node_list(nodes: &[u32]) -> String {
    let set: CpuSet = nodes.iter().map(|n| *n as usize).collect();
    if set.is_empty() {
        "none".into()
    } else {
        set.to_list_string()
    }
}

/// Parses NODES: `all` or a node list. The list syntax is the kernel's
/// cpulist (`pinsight_cpuset::CpuSet::parse_list`, reused rather than
/// written again); ids above [`MAX_NODE`] are refused before it runs so a
/// huge id cannot allocate a huge bitmap.
fn parse_nodes(text: &str, spec: &str) -> Result<NodeSpec, MemParseError> {
    let err = |problem: String| MemParseError {
        text: spec.to_string(),
        problem,
    };
    let t = text.trim();
    if t.eq_ignore_ascii_case("all") {
        return Ok(NodeSpec::All);
    }
    if t.is_empty() {
        return Err(err("no nodes after ':'".into()));
    }
    for num in t
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
    {
        match num.parse::<u32>() {
            Ok(n) if n <= MAX_NODE => {}
            _ => {
                return Err(err(format!(
                    "node {num} is beyond the largest node id {MAX_NODE}"
                )))
            }
        }
    }
    let set = CpuSet::parse_list(t).map_err(|e| err(format!("{}", e)))?;
    let nodes: Vec<u32> = set.iter().map(|n| n as u32).collect();
    if nodes.is_empty() {
        return Err(err("no nodes".into()));
    }
    Ok(NodeSpec::List(nodes))
}

impl FromStr for MemPolicy {
    type Err = MemParseError;
    fn from_str(s: &str) -> Result<MemPolicy, MemParseError> {
        let err = |problem: &str| MemParseError {
            text: s.to_string(),
            problem: problem.to_string(),
        };
        let t = s.trim();
        let (word, rest) = match t.split_once(':') {
            Some((w, r)) => (w, Some(r)),
            None => (t, None),
        };
        match (word.to_ascii_lowercase().as_str(), rest) {
            ("local" | "localalloc", None) => Ok(MemPolicy::Local),
            ("local" | "localalloc", Some(_)) => Err(err("local takes no nodes")),
            ("bind" | "membind", Some(r)) => Ok(MemPolicy::Bind(parse_nodes(r, s)?)),
            ("interleave", Some(r)) => Ok(MemPolicy::Interleave(parse_nodes(r, s)?)),
            ("weighted-interleave", Some(r)) => {
                Ok(MemPolicy::WeightedInterleave(parse_nodes(r, s)?))
            }
            ("weighted-interleave", None) => Ok(MemPolicy::WeightedInterleave(NodeSpec::All)),
            ("preferred", Some(r)) => match parse_nodes(r, s)? {
                NodeSpec::List(v) if v.len() == 1 => Ok(MemPolicy::Preferred(v[0])),
                _ => Err(err("preferred takes exactly one node")),
            },
            ("bind" | "membind" | "interleave" | "preferred", None) => {
                Err(err("needs nodes after ':'"))
            }
            _ => Err(err("unknown memory policy")),
        }
    }
}

/// The kernel's weight for one node under weighted interleave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeWeight {
    /// The node.
    pub node: u32,
    /// Its weight (`/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`).
    pub weight: u32,
}

/// A memory policy resolved on a machine: concrete nodes, checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemPlan {
    /// The policy as resolved, canonical (`bind:0-1`, `local`).
    pub policy: String,
    /// The kernel mode.
    pub mode: MemMode,
    /// The nodes (empty for `local`), ascending.
    pub nodes: Vec<u32>,
    /// For weighted interleave: the kernel's weights per node, when the
    /// kernel exposes them (`None`: the kernel's defaults, 1 each).
    pub weights: Option<Vec<NodeWeight>>,
    /// Why this policy (e.g. `--near`'s node), when it is not the policy
    /// as written.
    pub notes: Vec<String>,
}

impl MemPlan {
    /// Canonical text of the resolved policy (`bind:0-1`, `local`).
    fn text(mode: MemMode, nodes: &[u32]) -> String {
        match mode {
            MemMode::Local => "local".into(),
            m => format!("{}:{}", m.as_str(), node_list(nodes)),
        }
    }

    /// A plan for `mode` on `nodes` (already checked).
    pub fn new(mode: MemMode, nodes: Vec<u32>) -> MemPlan {
        MemPlan {
            policy: MemPlan::text(mode, &nodes),
            mode,
            nodes,
            weights: None,
            notes: Vec::new(),
        }
    }
}

/// Why a memory policy does not fit a machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// A node the machine does not have.
    #[error(
        "node {node} does not exist on this machine (nodes: {})",
        node_list(nodes)
    )]
    NoSuchNode {
        /// The node named.
        node: u32,
        /// The machine's nodes.
        nodes: Vec<u32>,
    },
    /// A node the cgroup's `cpuset.mems` forbids.
    #[error(
        "node {node} is not allowed by this process's cgroup (allowed nodes with memory: {})",
        node_list(allowed)
    )]
    NotAllowed {
        /// The node named.
        node: u32,
        /// The allowed nodes holding memory.
        allowed: Vec<u32>,
    },
    /// A node without memory (memoryless CPU node, generic initiator).
    #[error(
        "node {node} holds no memory (allowed nodes with memory: {})",
        node_list(allowed)
    )]
    NoMemory {
        /// The node named.
        node: u32,
        /// The allowed nodes holding memory.
        allowed: Vec<u32>,
    },
    /// `all`, but no node is both allowed and holding memory (or the
    /// machine reports no NUMA node at all).
    #[error(
        "no NUMA node with memory is allowed here (nodes: {})",
        node_list(nodes)
    )]
    NoneAllowed {
        /// The machine's nodes.
        nodes: Vec<u32>,
    },
}

impl MemError {
    /// The node the error is about, if one.
    pub fn node(&self) -> Option<u32> {
        match self {
            MemError::NoSuchNode { node, .. }
            | MemError::NotAllowed { node, .. }
            | MemError::NoMemory { node, .. } => Some(*node),
            MemError::NoneAllowed { .. } => None,
        }
    }
}

/// Checks one node: present, holding memory, allowed.
pub fn check_node(topo: &Topology, node: u32) -> Result<(), MemError> {
    let all: Vec<u32> = topo.numa_nodes.iter().map(|n| n.id).collect();
    let Some(n) = topo.node(node) else {
        return Err(MemError::NoSuchNode { node, nodes: all });
    };
    if !n.memory.has_memory {
        return Err(MemError::NoMemory {
            node,
            allowed: topo.allowed_nodes(),
        });
    }
    if !n.memory.allowed {
        return Err(MemError::NotAllowed {
            node,
            allowed: topo.allowed_nodes(),
        });
    }
    Ok(())
}

fn resolve_nodes(topo: &Topology, spec: &NodeSpec) -> Result<Vec<u32>, MemError> {
    match spec {
        NodeSpec::All => {
            let v = topo.allowed_nodes();
            if v.is_empty() {
                return Err(MemError::NoneAllowed {
                    nodes: topo.numa_nodes.iter().map(|n| n.id).collect(),
                });
            }
            Ok(v)
        }
        NodeSpec::List(v) => {
            for n in v {
                check_node(topo, *n)?;
            }
            Ok(v.clone())
        }
    }
}

/// Resolves `policy` on `topo`: every node named must exist, hold memory
/// and be allowed by the cgroup; `all` becomes the allowed nodes with
/// memory. `weights` are the kernel's weighted-interleave weights
/// (node, weight) when it exposes them; only weighted interleave uses them.
pub fn resolve(
    topo: &Topology,
    policy: &MemPolicy,
    weights: Option<&[(u32, u32)]>,
) -> Result<MemPlan, MemError> {
    let (mode, nodes) = match policy {
        MemPolicy::Local => (MemMode::Local, Vec::new()),
        MemPolicy::Bind(s) => (MemMode::Bind, resolve_nodes(topo, s)?),
        MemPolicy::Interleave(s) => (MemMode::Interleave, resolve_nodes(topo, s)?),
        MemPolicy::WeightedInterleave(s) => (MemMode::WeightedInterleave, resolve_nodes(topo, s)?),
        MemPolicy::Preferred(n) => {
            check_node(topo, *n)?;
            (MemMode::Preferred, vec![*n])
        }
    };
    let mut plan = MemPlan::new(mode, nodes);
    if mode == MemMode::WeightedInterleave {
        match weights {
            Some(w) if !w.is_empty() => {
                let per: Vec<NodeWeight> = plan
                    .nodes
                    .iter()
                    .map(|n| NodeWeight {
                        node: *n,
                        weight: w.iter().find(|(m, _)| m == n).map_or(1, |(_, x)| *x),
                    })
                    .collect();
                let text: Vec<String> = per
                    .iter()
                    .map(|w| format!("node {} x{}", w.node, w.weight))
                    .collect();
                plan.notes
                    .push(format!("interleave weights (kernel): {}", text.join(", ")));
                plan.weights = Some(per);
            }
            _ => plan.notes.push(
                "interleave weights: the kernel's defaults (1 each: plain interleave); weights live in /sys/kernel/mm/mempolicy/weighted_interleave/, which pinsight never writes".into(),
            ),
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for (text, canon) in [
            ("local", "local"),
            ("bind:0-1,3", "bind:0-1,3"),
            ("bind:3,1,0", "bind:0-1,3"),
            ("interleave:all", "interleave:all"),
            ("preferred:2", "preferred:2"),
            ("weighted-interleave", "weighted-interleave"),
            ("weighted-interleave:all", "weighted-interleave"),
            ("weighted-interleave:0,1", "weighted-interleave:0-1"),
            ("Bind:ALL", "bind:all"),
        ] {
            let p: MemPolicy = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(p.to_string(), canon, "{text}");
            assert_eq!(canon.parse::<MemPolicy>().unwrap(), p);
        }
    }

    #[test]
    fn refuses_bad_specs() {
        for (text, problem) in [
            ("", "unknown memory policy"),
            ("bind", "needs nodes"),
            ("bind:", "no nodes"),
            ("preferred:0-1", "exactly one node"),
            ("preferred:all", "exactly one node"),
            ("local:0", "takes no nodes"),
            ("bind:5000", "beyond the largest node id"),
            ("bind:99999999999999999999", "beyond the largest node id"),
            ("bind:1-0", "decreasing"),
            ("firsttouch", "unknown memory policy"),
        ] {
            let e = text.parse::<MemPolicy>().unwrap_err().to_string();
            assert!(e.contains(problem), "{text}: {e}");
            assert!(e.contains("expected local, bind:NODES"), "{e}");
        }
    }
}
