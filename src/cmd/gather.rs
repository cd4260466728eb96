//! `pinsight gather DIR`: merges the per-rank reports `run --slice
//! --report-dir DIR` wrote (`DIR/<host>/rank-<N>.json`) into one table,
//! JSON document or HTML page per node.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_launch::rank_report::{gather, GatherError};
use pinsight_launch::view::gather::{html, json, text, warnings, Node};
use std::path::PathBuf;

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
    #[arg(long = "export-html", alias = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let dir = gather(&args.dir).map_err(|e| {
        let by = match e {
            GatherError::Empty => " (written by `pinsight run --slice POLICY --report-dir DIR`)",
            GatherError::Read(_) => "",
        };
        CliError::usage(format!("{}: {e}{by}", crate::errors::shown_path(&args.dir)))
    })?;
    let nodes: Vec<Node> = dir.nodes.iter().map(Node::from).collect();
    if let Some(path) = &args.html {
        pinsight_lifecycle::output::write(path, html(&nodes).as_bytes())
            .map_err(|e| CliError::runtime(format!("--export-html: {e}")))?;
    }
    g.print_json_or(&json(&nodes, &dir.warnings()), || text(&nodes))?;
    if !g.json {
        eprint!("{}", warnings(&dir.warnings()));
    }
    Ok(0)
}
