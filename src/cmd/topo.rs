//! `pinsight topo`: the machine as a compact tree in the spirit of
//! `lstopo-no-graphics`, with core kinds marked, then one line per kind.
//! The tree is built and rendered by `pinsight_render::topo_text`.

use crate::cli::{CmdResult, Globals};

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
    #[command(flatten)]
    pub watch: super::topo_watch::WatchArgs,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    if args.watch.watch {
        return super::topo_watch::run(&args.watch, g);
    }
    let topo = g.topology()?;
    if g.json {
        g.print_json(&topo)?;
    } else {
        print!(
            "{}",
            pinsight_render::topo_text::render(&topo, !args.no_pus)
        );
    }
    Ok(0)
}
