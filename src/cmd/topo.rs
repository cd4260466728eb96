//! `pinsight topo`: the machine as a compact tree in the spirit of
//! `lstopo-no-graphics`, with core kinds marked, then one line per kind.
//! The tree is built and rendered by `pinsight_topology::view::topo_text`;
//! `--explain` (capacity provenance) by `pinsight_topology::view::explain`.

use crate::{cli::Globals, errors::CmdResult};
use pinsight_topology::view::{explain, topo_text};

/// Show the machine: packages, caches, cores, CPUs, NUMA nodes and core kinds.
///
/// Kinds are ranked from least (0) to most performant. Each PU line carries its
/// kind's mark (P, E, L, ...) and capacity. Each NUMA node sits under the CPUs
/// its memory is local to (memory-only HBM/NVM/CXL nodes under their
/// initiators' CPUs, as lstopo shows them) with its kind (DRAM, HBM, NVM, ...,
/// "unknown" when the kernel does not tell), size, memory tier and whether the
/// cgroup allows it; PCI devices (NICs, GPUs, NVMe) sit under their local CPUs.
/// `--json` prints the full model (schema: docs/src/schemas/topo.md). `--explain` shows how
/// the kinds were ranked.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight topo\n  pinsight topo --json\n  pinsight topo --explain\n  pinsight topo --watch --duration 10m\n  pinsight --fsroot dump/ topo\n  pinsight --hwloc-xml box.xml topo"
)]
pub struct Args {
    /// Hide the per-CPU lines (show cores and above only).
    #[arg(long)]
    pub no_pus: bool,

    /// Explain the kinds' order and capacities instead of the tree: every
    /// source of the capacity chain (cpu_capacity, AMD preferred-core
    /// ranking and highest_perf, ACPI CPPC highest/nominal perf, max and
    /// base frequency) with its values per kind, which one decided and why,
    /// skipped sources and disagreements. With --json: the kinds, the
    /// provenance and the warnings (the same `provenance` object as in
    /// `topo --json`).
    #[arg(long, conflicts_with = "watch")]
    pub explain: bool,

    #[command(flatten)]
    pub watch: super::topo_watch::WatchArgs,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    if args.watch.watch {
        return super::topo_watch::run(&args.watch, g);
    }
    let topo = g.topology()?;
    if args.explain {
        g.print_json_or(&explain::document(&topo), || explain::render(&topo))?;
    } else {
        g.print_json_or(&topo, || topo_text::render(&topo, !args.no_pus))?;
    }
    Ok(0)
}
