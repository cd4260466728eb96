//! `pinsight gather`: the ranks of a `run --slice --report-dir` job, node by
//! node: each rank's slice and capacity, where its threads ran, its wall
//! time, and the spread between the fastest and the slowest rank (in a
//! bulk-synchronous code the slowest rank sets the pace). Text fits 80
//! columns; [`html`] is one self-contained page.

use crate::rank_report::{NodeReports, RankReport};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_plan::slice::{RankSlice, Slicing};
use pinsight_term::escape;
use std::fmt::Write;

/// One rank's report.
#[derive(Clone, Debug, PartialEq)]
pub struct Rank {
    pub rank: usize,
    pub size: usize,
    /// Where the local rank came from (`Slurm`, `Open MPI`, ...).
    pub launcher: String,
    pub policy: String,
    /// The rank's slice (cpulist).
    pub cpus: String,
    pub capacity: f64,
    /// CPUs its threads were sampled on (cpulist; empty: none sampled).
    pub ran_on: String,
    pub wall_ms: f64,
    pub exit_code: i32,
}

/// One node's ranks, in rank order.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub host: String,
    pub ranks: Vec<Rank>,
}

impl From<&RankReport> for Rank {
    fn from(r: &RankReport) -> Rank {
        let or_dash = |s: &str| {
            if s.is_empty() {
                "-".to_string()
            } else {
                s.to_string()
            }
        };
        Rank {
            rank: r.slice.rank,
            size: r.slice.size,
            launcher: or_dash(&r.slice.launcher),
            policy: or_dash(&r.plan.policy),
            cpus: r.slice.cpus.to_list_string(),
            capacity: r.slice.capacity.unwrap_or(f64::NAN),
            ran_on: r.ran_on().to_list_string(),
            wall_ms: r.run.wall_ms,
            exit_code: r.run.exit_code,
        }
    }
}

impl From<&NodeReports> for Node {
    fn from(n: &NodeReports) -> Node {
        Node {
            host: n.host.clone(),
            ranks: n.ranks.iter().map(Rank::from).collect(),
        }
    }
}

/// The `--json` document: per node its ranks, fastest and slowest wall
/// time, their spread and the slowest rank; and the files left out.
pub fn json(nodes: &[Node], warnings: &[String]) -> serde_json::Value {
    let node = |n: &Node| {
        let (fast, slow, slowest) = spread(n).unwrap_or((f64::NAN, f64::NAN, 0));
        serde_json::json!({
            "host": n.host,
            "ranks": n.ranks.iter().map(|r| serde_json::json!({
                "rank": r.rank, "size": r.size, "launcher": r.launcher,
                "policy": r.policy, "cpus": r.cpus, "capacity": r.capacity,
                "ran_on": r.ran_on, "wall_ms": r.wall_ms, "exit_code": r.exit_code,
            })).collect::<Vec<_>>(),
            "wall_ms_fastest": fast,
            "wall_ms_slowest": slow,
            "wall_ms_spread": slow - fast,
            "slowest_rank": slowest,
        })
    };
    serde_json::json!({
        "nodes": nodes.iter().map(node).collect::<Vec<_>>(),
        "warnings": warnings,
    })
}

/// The fastest and slowest rank of a node: (fastest ms, slowest ms,
/// slowest rank). `None` without ranks.
pub fn spread(node: &Node) -> Option<(f64, f64, usize)> {
    let fastest = node
        .ranks
        .iter()
        .map(|r| r.wall_ms)
        .fold(f64::INFINITY, f64::min);
    let slowest = node
        .ranks
        .iter()
        .max_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))?;
    Some((fastest, slowest.wall_ms, slowest.rank))
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// The text table (80 columns).
pub fn text(nodes: &[Node]) -> String {
    let mut out = String::new();
    for n in nodes {
        let launcher = n.ranks.first().map_or("-", |r| r.launcher.as_str());
        let policy = n.ranks.first().map_or("-", |r| r.policy.as_str());
        let _ = writeln!(
            out,
            "{}",
            cut(
                &format!(
                    "node {}: {} rank(s), {policy}, local ranks from {launcher}",
                    n.host,
                    n.ranks.len()
                ),
                80
            )
        );
        let _ = writeln!(
            out,
            "{:>5} {:<18} {:>10} {:<18} {:>11} {:>5}",
            "RANK", "SLICE", "CAPACITY", "RAN ON", "WALL ms", "EXIT"
        );
        for r in &n.ranks {
            let ran = if r.ran_on.is_empty() { "-" } else { &r.ran_on };
            let _ = writeln!(
                out,
                "{:>5} {:<18} {:>10} {:<18} {:>11.1} {:>5}",
                r.rank,
                cut(&r.cpus, 18),
                cap(r.capacity),
                cut(ran, 18),
                r.wall_ms,
                r.exit_code
            );
        }
        if let Some((fast, slow, rank)) = spread(n) {
            let ratio = if fast > 0.0 {
                format!(", slowest/fastest {:.2}", slow / fast)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "spread: fastest {fast:.1} ms, slowest {slow:.1} ms (rank {rank}){ratio}"
            );
        }
        let size = n.ranks.first().map_or(0, |r| r.size);
        if size != n.ranks.len() {
            let _ = writeln!(out, "note: {} of {size} ranks reported", n.ranks.len());
        }
        out.push('\n');
    }
    out
}

/// One self-contained HTML page with a table per node.
pub fn html(nodes: &[Node]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pinsight gather</title>\n<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:right}</style></head><body>\n",
    );
    for n in nodes {
        let _ = writeln!(out, "<h2>node {}</h2>", escape(&n.host));
        out.push_str("<table><tr><th>rank</th><th>slice</th><th>capacity</th><th>ran on</th><th>wall ms</th><th>exit</th></tr>\n");
        for r in &n.ranks {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
                r.rank,
                escape(&r.cpus),
                cap(r.capacity),
                escape(&r.ran_on),
                r.wall_ms,
                r.exit_code
            );
        }
        out.push_str("</table>\n");
        if let Some((fast, slow, rank)) = spread(n) {
            let _ = writeln!(
                out,
                "<p>fastest {fast:.1} ms, slowest {slow:.1} ms (rank {rank})</p>"
            );
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn kinds_of(topo: &Topology, cpus: &CpuSet) -> String {
    let k: Vec<String> = topo
        .kinds
        .iter()
        .filter(|k| k.cpus.intersects(cpus))
        .map(|k| format!("{}x{}", k.cpus.intersection(cpus).len(), k.mark))
        .collect();
    if k.is_empty() {
        "-".into()
    } else {
        k.join(" ")
    }
}

/// The files a report directory left out, one warning line each
/// (wrapped), for stderr.
pub fn warnings(warnings: &[String]) -> String {
    warnings
        .iter()
        .map(|w| pinsight_term::wrap80(&format!("pinsight: warning: {w}")) + "\n")
        .collect()
}

/// `pinsight slice`'s text for one rank: its slice, the node's slicing
/// with the rank marked, and the launcher's `notes`.
pub fn rank_text(topo: &Topology, s: &Slicing, mine: &RankSlice, notes: &[String]) -> String {
    let mut out = format!(
        "local rank {} of {} (from {}): CPUs {}, capacity {}\n",
        mine.rank,
        mine.size,
        mine.launcher,
        mine.cpus,
        cap(mine.capacity)
    );
    out.push_str(&slicing_text(topo, s, Some(mine.rank)));
    for n in notes {
        out.push_str(&pinsight_term::wrap80(&format!("note: {n}")));
        out.push('\n');
    }
    out
}

/// `pinsight slice --json` for one rank: `{ "slice", "slicing" }`.
pub fn rank_json(s: &Slicing, mine: &RankSlice) -> serde_json::Value {
    serde_json::json!({ "slice": mine, "slicing": s })
}

/// A capacity: whole numbers without decimals.
pub fn cap(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// The table of a node's slices (`pinsight slice`): every rank's CPUs,
/// count, capacity and kinds, the spread, the groups shared between ranks;
/// `mark` highlights one rank. 80 columns.
pub fn slicing_text(topo: &Topology, s: &Slicing, mark: Option<usize>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        pinsight_term::wrap80(&format!(
            "CPUs {} in {} {} slices; capacity {}",
            s.cpus,
            s.size,
            s.rule,
            s.capacity_source.describe()
        ))
    );
    let _ = writeln!(
        out,
        "{:>5} {:<24} {:>4} {:>10}  KINDS",
        "RANK", "CPUS", "N", "CAPACITY"
    );
    for x in &s.slices {
        let list = x.cpus.to_list_string();
        let list = if list.chars().count() > 24 {
            format!("{}…", list.chars().take(23).collect::<String>())
        } else {
            list
        };
        let _ = writeln!(
            out,
            "{}{:>4} {:<24} {:>4} {:>10}  {}",
            if mark == Some(x.rank) { '>' } else { ' ' },
            x.rank,
            list,
            x.cpus.len(),
            cap(x.capacity),
            kinds_of(topo, &x.cpus)
        );
    }
    let _ = writeln!(
        out,
        "spread {} (one CPU: {})",
        cap(s.spread),
        cap(s.cpu_capacity)
    );
    if !s.broken.is_empty() {
        let mut b = s.broken.clone();
        b.dedup();
        let _ = writeln!(
            out,
            "{}",
            pinsight_term::wrap80(&format!("shared between ranks: {}", b.join(", ")))
        );
    }
    for n in &s.notes {
        let _ = writeln!(out, "{}", pinsight_term::wrap80(&format!("note: {n}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rank_s_text_and_json() {
        use pinsight_plan::launcher::{Launcher, LocalRank};
        use pinsight_plan::slice::{rank_slice, slices, SliceRequest};
        let topo = pinsight_testkit::topology::i7_1370p();
        let s = slices(
            &topo,
            &SliceRequest {
                allowed: topo.usable(),
                size: 2,
                rule: Default::default(),
                weights: None,
            },
        )
        .unwrap();
        let local = LocalRank {
            rank: 1,
            size: 2,
            launcher: Launcher::CommandLine,
            vars: Vec::new(),
            notes: vec!["from the flags".into()],
        };
        let mine = rank_slice(&local, &s).unwrap();
        let text = rank_text(&topo, &s, &mine, &local.notes);
        let first = format!(
            "local rank 1 of 2 (from {}): CPUs {}, capacity {}\n",
            mine.launcher,
            mine.cpus,
            cap(mine.capacity)
        );
        assert!(text.starts_with(&first), "{text}");
        assert!(text.contains(&slicing_text(&topo, &s, Some(1))), "{text}");
        assert!(text.ends_with("note: from the flags\n"), "{text}");
        let doc = rank_json(&s, &mine);
        assert_eq!(doc["slice"]["rank"], 1);
        assert_eq!(doc["slicing"]["size"], 2);
    }

    #[test]
    fn warnings_are_one_wrapped_line_each() {
        assert_eq!(warnings(&[]), "");
        let long = format!("rank report: {}; skipped", "cannot read it ".repeat(8));
        let text = warnings(&["a; skipped".into(), long]);
        assert!(
            text.starts_with("pinsight: warning: a; skipped\n"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.ends_with('\n'));
    }

    fn rank(rank: usize, cpus: &str, wall_ms: f64) -> Rank {
        Rank {
            rank,
            size: 2,
            launcher: "Open MPI".into(),
            policy: "p-pinned".into(),
            cpus: cpus.into(),
            capacity: 1.0,
            ran_on: cpus.into(),
            wall_ms,
            exit_code: 0,
        }
    }

    #[test]
    fn table_fits_80_columns_and_names_the_slowest() {
        let n = Node {
            host: "node-with-a-rather-long-name-0001.cluster.example.org".into(),
            ranks: vec![
                rank(0, "0-8", 100.0),
                rank(1, "9-19,20-39:2,41,43,45,47", 150.0),
            ],
        };
        let t = text(std::slice::from_ref(&n));
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        assert!(
            t.contains("slowest 150.0 ms (rank 1), slowest/fastest 1.50"),
            "{t}"
        );
        assert_eq!(spread(&n), Some((100.0, 150.0, 1)));
        let h = html(&[n]);
        assert!(h.contains("<td>9-19,20-39:2,41,43,45,47</td>"));
    }
}
