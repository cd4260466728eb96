//! `pinsight gather DIR`: merges the per-rank reports `run --slice
//! --report-dir DIR` wrote (`DIR/<host>/rank-<N>.json`) into one table,
//! JSON document or HTML page per node.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_launch::rank_report::{RankReport, MAX_REPORT_BYTES};
use pinsight_render::gather::{html, spread, text, Node, Rank};
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

/// The table row of one rank's report.
fn rank_of(r: RankReport) -> Rank {
    let or_dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
    Rank {
        rank: r.slice.rank,
        size: r.slice.size,
        ran_on: r.ran_on().to_list_string(),
        launcher: or_dash(r.slice.launcher),
        policy: or_dash(r.plan.policy),
        cpus: r.slice.cpus.to_list_string(),
        capacity: r.slice.capacity.unwrap_or(f64::NAN),
        wall_ms: r.run.wall_ms,
        exit_code: r.run.exit_code,
    }
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
            let host = h
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            let parsed = crate::errors::read_input("rank report", &f, MAX_REPORT_BYTES)
                .map_err(|e| e.message)
                .and_then(|t| {
                    RankReport::parse(&t, &host).map_err(|e| format!("{}: {e}", f.display()))
                })
                .map(rank_of);
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
            eprintln!(
                "{}",
                pinsight_render::term::wrap80(&format!("pinsight: warning: {w}"))
            );
        }
    }
    Ok(0)
}
