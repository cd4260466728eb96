//! `pinsight gather DIR`: merges the per-rank reports `run --slice
//! --report-dir DIR` wrote (`DIR/<host>/rank-<N>.json`) into one table,
//! JSON document or HTML page per node.

use crate::cli::{CliError, CmdResult, Globals};
use pinsight_render::gather::{html, spread, text, Node, Rank};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Merge the rank reports of `run --slice --report-dir DIR`, node by node.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Per node: each rank's slice and capacity, the CPUs its threads ran on, its wall time, and the spread between the fastest and the slowest rank.

Examples:
  srun -n 4 pinsight run --slice p-pinned --report-dir out -- ./solver
  pinsight gather out
  pinsight gather out --export-html ranks.html")]
pub struct Args {
    /// The --report-dir of the runs.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Also write one HTML page.
    #[arg(long = "export-html", value_name = "FILE")]
    pub html: Option<PathBuf>,
}

fn rank_of(path: &Path, v: &Value) -> Result<Rank, String> {
    let s = &v["slice"];
    let num = |x: &Value, what: &str| {
        x.as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| format!("{}: no {what}", path.display()))
    };
    let threads = v["run"]["threads"].as_array().cloned().unwrap_or_default();
    let mut ran = pinsight_cpuset::CpuSet::new();
    for t in &threads {
        if let Some(c) = t["cpus_seen"]
            .as_str()
            .and_then(|c| c.parse::<pinsight_cpuset::CpuSet>().ok())
        {
            ran.union_with(&c);
        }
    }
    Ok(Rank {
        rank: num(&s["rank"], "slice.rank")?,
        size: num(&s["size"], "slice.size")?,
        launcher: s["launcher"].as_str().unwrap_or("-").to_string(),
        policy: v["plan"]["policy"].as_str().unwrap_or("-").to_string(),
        cpus: s["cpus"].as_str().unwrap_or("").to_string(),
        capacity: s["capacity"].as_f64().unwrap_or(f64::NAN),
        ran_on: ran.to_list_string(),
        wall_ms: v["run"]["wall_ms"]
            .as_f64()
            .ok_or_else(|| format!("{}: no run.wall_ms", path.display()))?,
        exit_code: v["run"]["exit_code"].as_i64().unwrap_or(-1) as i32,
    })
}

/// Every node directory's rank files; unreadable files are warnings.
fn load(dir: &Path, warnings: &mut Vec<String>) -> Result<Vec<Node>, CliError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))?;
    let mut nodes = Vec::new();
    let mut hosts: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    hosts.sort();
    for h in hosts {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&h)
            .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rank-") && n.ends_with(".json"))
        });
        let mut ranks = Vec::new();
        for f in files {
            let parsed = crate::errors::read_input("rank report", &f, 16 << 20)
                .map_err(|e| e.message)
                .and_then(|t| {
                    serde_json::from_str::<Value>(&t).map_err(|e| format!("{}: {e}", f.display()))
                })
                .and_then(|v| rank_of(&f, &v));
            match parsed {
                Ok(r) => ranks.push(r),
                Err(w) => warnings.push(format!("{w}; skipped")),
            }
        }
        if ranks.is_empty() {
            continue;
        }
        ranks.sort_by_key(|r| r.rank);
        let host = h
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        nodes.push(Node { host, ranks });
    }
    if nodes.is_empty() {
        return Err(CliError::usage(format!(
            "{}: no DIR/<host>/rank-<N>.json report (written by `pinsight run --slice POLICY --report-dir DIR`)",
            dir.display()
        )));
    }
    Ok(nodes)
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let mut warnings = Vec::new();
    let nodes = load(&args.dir, &mut warnings)?;
    if let Some(path) = &args.html {
        pinsight_lifecycle::output::write(path, html(&nodes).as_bytes())
            .map_err(|e| CliError::runtime(format!("--export-html: {e}")))?;
    }
    if g.json {
        let doc = serde_json::json!({
            "nodes": nodes.iter().map(|n| {
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
            }).collect::<Vec<_>>(),
            "warnings": warnings,
        });
        let s = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError::runtime(format!("JSON output: {e}")))?;
        println!("{s}");
    } else {
        print!("{}", text(&nodes));
        for w in &warnings {
            eprintln!("{}", crate::cli::wrap80(&format!("pinsight: warning: {w}")));
        }
    }
    Ok(0)
}
