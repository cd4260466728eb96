//! `pinsight topo` on recorded machines with heterogeneous memory: HBM and
//! NVM nodes under the CPUs that reach them best (hwloc's nesting), cgroup
//! `mems` restrictions, and `--json` carrying the same facts
//! (`numa_nodes[].memory`).

use crate::common_cli;

use common_cli::*;
use std::path::PathBuf;

fn recorded(name: &str) -> PathBuf {
    pinsight_testkit::fixtures::hwloc(name)
}

fn topo(name: &str, extra: &[&str]) -> Out {
    let dir = recorded(name);
    let mut args = vec!["--fsroot", dir.to_str().unwrap(), "topo"];
    args.extend_from_slice(extra);
    ok(&args)
}

/// The lines below `header` that are indented deeper than it.
fn block<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    let ind = |l: &str| l.len() - l.trim_start().len();
    let mut lines = text.lines().skip_while(|l| l.trim() != header);
    let head = lines
        .next()
        .unwrap_or_else(|| panic!("{header} missing:\n{text}"));
    lines.take_while(|l| ind(l) > ind(head)).collect()
}

#[test]
fn heterogeneous_memory_sits_under_its_cpus() {
    let o = topo("fakeheteromemtiers", &[]);
    pinsight_testkit::golden!("topo_memory_fakeheteromemtiers", &o.stdout);
    let g = block(&o.stdout, "Group (CPUs 2-3)");
    let text = g.join("\n");
    for node in ["NUMANode P#1 DRAM", "NUMANode P#4 HBM", "NUMANode P#6 NVM"] {
        assert!(text.contains(node), "{node} under CPUs 2-3:\n{}", o.stdout);
    }
    assert!(text.contains("PU L#2 (P#2)") && text.contains("PU L#3 (P#3)"));
    let g = block(&o.stdout, "Group (CPUs 4-5)").join("\n");
    assert!(g.contains("NUMANode P#2 HBM 0.5GiB") && g.contains("NUMANode P#9 NVM"));
    let g = block(&o.stdout, "Group (CPUs 0-1)").join("\n");
    assert!(g.contains("NUMANode P#0 DRAM 2.9GiB") && g.contains("NUMANode P#8 NVM"));
    assert!(o.stdout.lines().all(|l| l.chars().count() <= 80));
}

#[test]
fn json_carries_kind_locality_and_hmat() {
    let o = topo("fakeheteromemtiers", &["--json"]);
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let nodes = doc["numa_nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 7);
    let node = |id: u64| nodes.iter().find(|n| n["id"] == id).unwrap();
    let hbm = &node(4)["memory"];
    assert_eq!(hbm["kind"], "hbm");
    assert_eq!(hbm["kind_source"], "hmat");
    assert_eq!(hbm["locality"], "2-3");
    assert_eq!(hbm["locality_source"], "initiators");
    assert_eq!(hbm["dax"], "dax1.0");
    assert_eq!(hbm["allowed"], true);
    assert_eq!(hbm["has_memory"], true);
    assert_eq!(hbm["access"][0]["class"], 1);
    assert_eq!(hbm["access"][0]["initiators"], serde_json::json!([1]));
    assert_eq!(hbm["access"][0]["read_bandwidth_mbps"], 10000);
    assert!(hbm["access"][0]["read_latency_ns"].is_null());
    assert_eq!(hbm["hugepages"][0]["size_kib"], 2048);
    assert_eq!(node(4)["cpus"], "");
    let nvm = &node(9)["memory"];
    assert_eq!(
        (&nvm["kind"], &nvm["kind_source"]),
        (&"nvm".into(), &"dax".into())
    );
    assert_eq!(nvm["locality"], "4-5");
    let dram = &node(0)["memory"];
    assert_eq!(dram["kind"], "dram");
    assert_eq!(dram["kind_source"], "cpu-node");
    assert_eq!(dram["locality_source"], "own-cpus");
    assert!(dram["tier"].is_null());
}

#[test]
fn cgroup_forbidden_memory_is_listed_and_marked() {
    let o = topo("16amd64-4n4c-cgroup-distance-merge", &["--no-pus"]);
    let marked: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.contains("NUMANode") && l.ends_with("(not allowed by cgroup)"))
        .collect();
    assert_eq!(marked.len(), 2, "{}", o.stdout);
    let j = topo("16amd64-4n4c-cgroup-distance-merge", &["--json"]);
    let doc: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    let allowed: Vec<u64> = doc["numa_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["memory"]["allowed"] == true)
        .map(|n| n["id"].as_u64().unwrap())
        .collect();
    assert_eq!(allowed, vec![2, 3]);
}
