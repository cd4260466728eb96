//! `pinsight irq`: which IRQs land on which CPUs; move them off a CPU set
//! or spread them by capacity through `smp_affinity_list`, with a saved
//! state and `--restore` (library: `pinsight_load::irq`; views:
//! `pinsight_load::view`).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_cpuset::CpuSet;
use pinsight_load::irq::{self, IrqError, IrqView, Move, PerCpuThread, Target};
use pinsight_load::irq_watch;
use pinsight_load::journal::Journal;
use pinsight_load::view;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Show which IRQs land on which CPUs; move them off CPUs or spread them by capacity.
///
/// Without --off, --spread or --restore: every numbered IRQ that has fired,
/// with its count, the CPUs it lands on, its smp_affinity_list and
/// effective affinity and its handler names (NIC queues among them), then
/// the per-CPU interrupts (LOC, NMI, IPIs) that never move, and whether
/// irqbalance runs. `--off CPULIST` takes those CPUs out of every IRQ's
/// affinity (an IRQ left with none gets every other online CPU), e.g. the
/// CPUs a latency-critical plan uses; `--spread` gives each IRQ one CPU,
/// busiest IRQs first, on the CPU whose interrupt count per unit of
/// capacity stays lowest. A move saves each IRQ's affinity first (--state,
/// default a new file in the state directory) and is all or nothing: if the kernel
/// refuses one IRQ (EIO: an IRQ whose affinity the kernel manages) every
/// IRQ already written is put back and the command exits 1. Per-CPU kernel
/// threads (ksoftirqd/N, kworker/N) on the CPUs moved off are reported,
/// never moved.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  pinsight irq
  pinsight irq --off 2-3 --dry-run
  sudo pinsight irq --off 2-3
  sudo pinsight irq --spread --irq 25,26
  sudo pinsight irq --restore /var/lib/pinsight/irq-1764140000-4242.json

Writing smp_affinity_list needs root. While irqbalance runs it moves IRQs back within \
seconds: the command refuses, naming its PID, unless --force (or stop it first: \
systemctl stop irqbalance).

Exit status: 0 done (or nothing to do), 1 when the kernel refused an IRQ (nothing changed) \
or irqbalance runs, 2 for bad input (an unknown IRQ, a CPU that is not online, a recorded \
machine for a move).")]
pub struct Args {
    /// Move IRQs off these CPUs (a cpulist: 2-3, 0,8-15).
    #[arg(long, value_name = "CPULIST", value_parser = crate::values::cpu_list)]
    pub off: Option<CpuSet>,
    /// Give each IRQ one CPU, spread by capacity (over the CPUs not in --off).
    #[arg(long)]
    pub spread: bool,
    /// Only these IRQs (numbers, comma separated); default every movable one.
    #[arg(long = "irq", value_name = "N,...", value_delimiter = ',', value_parser = clap::value_parser!(u32))]
    pub irqs: Option<Vec<u32>>,
    /// Show what would move; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Move IRQs even while irqbalance runs (it may move them back).
    #[arg(long)]
    pub force: bool,
    /// Where to save the affinities before a move (a new file; default irq-SECONDS-PID.json in
    /// the state directory, as balance's: $XDG_STATE_HOME/pinsight, else /var/lib/pinsight for
    /// root, else ~/.local/state/pinsight).
    #[arg(long, alias = "save", value_name = "FILE", conflicts_with = "dry_run")]
    pub state: Option<PathBuf>,
    /// Put back the affinities a move saved in FILE.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["off", "spread", "irqs", "state"])]
    pub restore: Option<PathBuf>,
    /// List IRQs that never fired too.
    #[arg(long)]
    pub all: bool,
    /// Keep the rule (--off or --spread) as a daemon: every --interval, move new IRQs at once
    /// and drifted ones after --patience intervals; put everything back on SIGTERM or SIGINT.
    #[arg(long, conflicts_with_all = ["restore", "dry_run"])]
    pub watch: bool,
    /// With --watch: how often to look again (1s, 10s).
    #[arg(long, value_name = "DURATION", default_value = "5s", requires = "watch", value_parser = crate::values::interval)]
    pub interval: std::time::Duration,
    /// With --watch: intervals in a row an IRQ stays off the rule before it is moved back.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "watch", value_parser = crate::values::patience)]
    pub patience: u32,
    /// With --watch: IRQs moved at most per interval.
    #[arg(long, value_name = "N", default_value_t = 32, requires = "watch", value_parser = crate::values::max_moves)]
    pub max_moves: u64,
    /// With --watch: stop after N intervals, putting everything back as a signal would.
    #[arg(long, value_name = "N", requires = "watch", value_parser = crate::values::stop_count)]
    pub count: Option<u64>,
}

/// The message and exit status of an irq error: 2 when the input is at
/// fault, the flag named where it came from one.
fn irq_error(e: IrqError, args: &Args) -> CliError {
    let message = match &e {
        IrqError::Offline { .. } => format!("--off {}: {e}", args.off.clone().unwrap_or_default()),
        IrqError::Untrusted { .. } => format!("--restore: {e}"),
        IrqError::StateDir(_) => format!("{e}; give --state FILE"),
        e => e.to_string(),
    };
    CliError {
        code: if e.is_input() { 2 } else { 1 },
        message: crate::errors::shown(&message),
    }
}

/// The combinations clap cannot refuse (exit 2).
fn check(args: &Args) -> Result<(), CliError> {
    if args.off.as_ref().is_some_and(CpuSet::is_empty) {
        return Err(CliError::usage(
            "--off '': an empty CPU list; give the CPUs to move IRQs off (a cpulist: 2-3, 0,8-15)",
        ));
    }
    let rule = args.off.is_some() || args.spread;
    for (given, what) in [
        (args.irqs.is_some(), "--irq chooses the IRQs to move"),
        (args.watch, "--watch keeps a rule"),
    ] {
        if given && !rule {
            return Err(CliError::usage(format!(
                "{what}: give --off CPULIST or --spread with it"
            )));
        }
    }
    Ok(())
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    check(&args)?;
    let acting = args.off.is_some() || args.spread || args.restore.is_some();
    if acting && !args.dry_run {
        g.require_live(
            "'irq' writes IRQ affinities",
            "add --dry-run to see the plan for it",
        )?;
    }
    let fs = g.fsroot()?;
    let view = irq::view(&fs).map_err(|e| irq_error(e, &args))?;
    if !acting {
        g.print_json_or(&view, || view::irq_table(&view, args.all))?;
        return Ok(0);
    }
    if let Some(file) = &args.restore {
        let moves = irq::restore_moves(file, &view).map_err(|e| irq_error(e, &args))?;
        return apply(&args, g, &fs, &view, moves, Vec::new());
    }
    let topo = g.topology()?;
    let target = match (args.spread, args.off.clone().unwrap_or_default()) {
        (true, off) => Target::Spread { off },
        (false, off) => Target::Off(off),
    };
    let (moves, kept) = irq::plan_rule(&fs, &topo, &view, args.irqs.as_deref(), &target)
        .map_err(|e| irq_error(e, &args))?;
    if args.watch {
        // The rule checked once (bad input is exit 2 before anything runs).
        refuse_irqbalance(&args, g, &view)?;
        let caps = pinsight_load::capacities(&pinsight_load::machine(&fs, &topo));
        return watch(&args, g, &fs, &target, &caps);
    }
    apply(&args, g, &fs, &view, moves, kept)
}

/// Makes (or with --dry-run shows) the moves, after the irqbalance check
/// and under the machine-wide lock.
fn apply(
    args: &Args,
    g: &Globals,
    fs: &pinsight_sys::FsRoot,
    view: &IrqView,
    moves: Vec<Move>,
    kept: Vec<PerCpuThread>,
) -> CmdResult {
    refuse_irqbalance(args, g, view)?;
    // One irq that writes affinities at a time on a machine; taken once
    // the input is known good, so bad input stays exit 2.
    let lock = (!args.dry_run).then(|| crate::cli::one_at_a_time("irq"));
    let _one = lock.transpose()?.flatten();
    let how = irq::Carry {
        dry_run: args.dry_run,
        restore: args.restore.is_some(),
        state: args.state.clone(),
    };
    let done = irq::carry_out(fs, moves, kept, &how).map_err(|e| irq_error(e, args))?;
    g.print_json_or(&done, || view::irq_moved(&done))?;
    Ok(0)
}

/// A running irqbalance: a warning with --dry-run or --force, else a
/// refusal (exit 1).
fn refuse_irqbalance(args: &Args, g: &Globals, view: &IrqView) -> Result<(), CliError> {
    match view.irqbalance {
        Some(pid) if !args.dry_run && !args.force => Err(CliError::runtime(format!(
            "irqbalance runs (PID {pid}) and would move the IRQs back: stop it \
             (systemctl stop irqbalance) or give --force; nothing changed"
        ))),
        Some(pid) if !g.quiet => {
            eprintln!("{}", view::irqbalance_warning(pid));
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `--watch`: the daemon, one line (or JSON object) per decision.
fn watch(
    args: &Args,
    g: &Globals,
    fs: &pinsight_sys::FsRoot,
    target: &Target,
    caps: &BTreeMap<usize, f64>,
) -> CmdResult {
    let _exit = pinsight_lifecycle::interrupt::main_handles_exit();
    pinsight_lifecycle::interrupt::install().map_err(|e| CliError::runtime(format!("irq: {e}")))?;
    let _one = crate::cli::one_at_a_time("irq")?;
    let state = irq::state_path(args.state.as_deref()).map_err(|e| irq_error(e, args))?;
    let opts = irq_watch::Options {
        patience: args.patience,
        max_moves: args.max_moves as usize,
        interval: args.interval,
        intervals: args.count,
    };
    let journal = Journal::stdout(g.json, g.quiet);
    let watch = irq_watch::Watch {
        only: args.irqs.as_deref(),
        target,
        capacity: caps,
        options: &opts,
        state_path: &state,
    };
    let end = irq_watch::run_journaled(fs, &watch, journal).map_err(|e| irq_error(e, args))?;
    Ok(end.exit_code())
}
