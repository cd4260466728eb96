//! `pinsight load`: per-CPU utilisation over an interval beside each
//! CPU's kind and capacity, the capacity-normalised load, the imbalance,
//! the top threads and the interrupts per CPU (library:
//! `pinsight_load`; views: `pinsight_load::view`).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_load::shown::{Format as Shown, Series};
use pinsight_load::{LoadError, Options, Parts, Watch};
use std::path::PathBuf;
use std::time::Duration;

/// Show each CPU's load against its capacity, the interrupts it takes and the threads on it.
///
/// Per CPU: user, system, IRQ, softirq, steal and idle shares of the
/// interval, the CPU's kind and capacity (relative to the most capable CPU,
/// as `plan balance` weighs CPUs), busy time, and the capacity-normalised
/// load NORM = busy / capacity (an E-core of capacity 0.6 busy 60% is as
/// loaded as a P-core busy 100%). Busy is the CPU's run time from
/// /proc/schedstat where the kernel has it, else the interval
/// (/proc/uptime) less /proc/stat's idle time, else /proc/stat's tick
/// samples; the split into user, system, IRQ and softirq is /proc/stat's.
/// The run time of an emulation's stealers (--stealers, set by `pinsight
/// emulate`) counts as steal, not busy. With /proc/schedstat the JSON also
/// gives each CPU's run queue (mean tasks waiting to run), shown for the
/// saturated CPUs, whose busy time cannot rise. Interrupts per second
/// (/proc/interrupts) and the thread that used it most. WANT is the CPU's
/// demand: tasks running or waiting to run there, on average.
///
/// Per task: its progress by capacity in fastest-CPU seconds per second
/// (its run time times the speed of the CPUs it ran on; on a CPU slowed by
/// an emulation's stealer, full speed, as the stealer takes time, not
/// speed), and its wait to run (schedstat's run_delay, else its runnable
/// state sampled ten times an interval). Tasks that ran or waited 90% of
/// the interval want a whole CPU: the progress imbalance is the max/min of
/// their progress, the imbalance busy time cannot show once every CPU is
/// saturated.
///
/// Below: per kind and per core summaries, the imbalance (max/min NORM over
/// CPUs busy at least 5%), the progress imbalance, the slowest tasks, the
/// CPUs that spend 10% or more of their time in interrupt handlers
/// with the IRQs that dominate them (handler and NIC queue names,
/// smp_affinity_list), and a suggestion: move IRQs (`pinsight irq`) or
/// rebalance by capacity (`pinsight balance`).
///
/// On a terminal the view refreshes every interval and fits the window
/// (most loaded CPUs first); `--once` prints one whole view and exits.
/// `--json` prints one object (schema: docs/src/schemas/load.md), or one
/// line per interval without `--once`; `--format openmetrics` prints the
/// OpenMetrics text format for node_exporter's textfile collector.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  pinsight load
  pinsight load --once --interval 5s
  pinsight load --json --once
  # for node_exporter's textfile collector
  pinsight load --interval 5s --format openmetrics > pinsight.prom.tmp
  # two readings of a recorded machine, taken an interval apart
  mkdir -p after/proc; pinsight snapshot before/
  f='stat uptime schedstat interrupts softirqs'
  for x in $f; do cp /proc/$x before/proc/; done
  sleep 5; for x in $f; do cp /proc/$x after/proc/; done
  pinsight --fsroot before/ load --after after/

A recorded machine holds one reading: --fsroot names the first (with its sys/ tree for the \
kinds), --after DIR the second (DIR/proc/stat, and where recorded proc/uptime, \
proc/schedstat, proc/interrupts, proc/softirqs, proc/irq/N/ and proc/PID/task/TID/stat); the \
interval is read from proc/uptime, else from the CPUs' own tick counts.")]
pub struct Args {
    /// How long each measurement lasts (1s, 500ms, 2m).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::values::interval)]
    pub interval: Duration,
    /// Measure one interval, print the whole view and exit.
    #[arg(long)]
    pub once: bool,
    /// Stop after N intervals (default: until interrupted, or one with --once).
    #[arg(long, value_name = "N", value_parser = crate::values::stop_count, conflicts_with = "once")]
    pub count: Option<u64>,
    /// Threads listed per CPU.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(0..=50))]
    pub top: u64,
    /// The second reading of a recorded machine (a directory holding proc/stat), taken an
    /// interval after the one --fsroot names.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["count", "interval"])]
    pub after: Option<PathBuf>,
    /// Output format: text (the view), json (as --json) or openmetrics (the OpenMetrics text
    /// format, for node_exporter's textfile collector; one interval unless --count is given).
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub format: Option<Format>,
    /// Processes whose run time is not load but missing capacity, as CPU:PID,... (an
    /// emulation's stealers; `pinsight emulate` sets the variable for its command): a CPU of
    /// the machine, a PID from 1 to 4194304.
    #[arg(long, value_name = "CPU:PID,...", env = "PINSIGHT_EMULATION_STEALERS", value_parser = crate::values::stealers)]
    pub stealers: Option<crate::values::Stealers>,
}

/// `--format`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Openmetrics,
}

/// The format asked for: `--format`, else `--json`'s; a `--format` that
/// contradicts `--json` is refused (exit 2).
fn format(args: &Args, g: &Globals) -> Result<Shown, CliError> {
    Ok(match (args.format, g.json) {
        (None, true) | (Some(Format::Json), _) => Shown::Json,
        (None, false) | (Some(Format::Text), false) => Shown::Text,
        (Some(Format::Openmetrics), false) => Shown::OpenMetrics,
        (Some(f), true) => {
            return Err(CliError::usage(format!(
                "--format {}: --json asks for JSON; give one of them",
                clap::ValueEnum::to_possible_value(&f)
                    .map_or_else(String::new, |v| v.get_name().into())
            )))
        }
    })
}

/// The exit status and message of a load that could not be measured: a
/// `--stealers` CPU the machine does not have, or a recorded reading, is
/// the input's fault (exit 2).
fn load_error(e: LoadError, recorded: bool) -> CliError {
    match e {
        LoadError::ExcludedCpu { .. } => CliError::usage(format!("--stealers {e}")),
        e if recorded => CliError::usage(crate::errors::shown(&format!("--fsroot/--after: {e}"))),
        e => CliError::runtime(crate::errors::shown(&e.to_string())),
    }
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let format = format(&args, g)?;
    let opts = Options {
        top: args.top as usize,
        hz: pinsight_sys::procfs::clock_ticks(),
    };
    let parts = Parts {
        threads: true,
        exclude: args.stealers.clone().unwrap_or_default().0,
    };
    if let Some(after) = &args.after {
        return recorded(after, g, format, opts, &parts);
    }
    g.require_live(
        "'load' measures the counters",
        "give a second reading of it with --after DIR",
    )?;
    let fs = g.fsroot()?;
    let m = pinsight_load::machine(&fs, &g.topology()?);
    let mut w = Watch::start(fs, m, opts, parts).map_err(|e| load_error(e, false))?;
    let series = Series::on_stdout(format, args.once, args.count, g.quiet);
    w.show(args.interval, &series, &mut crate::cli::progress(g))
        .map_err(|e| load_error(e, false))?;
    Ok(0)
}

/// `--after DIR`: the load between two readings of a recorded machine.
fn recorded(
    after: &std::path::Path,
    g: &Globals,
    format: Shown,
    opts: Options,
    parts: &Parts,
) -> CmdResult {
    if g.fsroot.is_none() {
        return Err(CliError::usage(
            "--after needs --fsroot: it names the second reading of a recorded machine, \
             --fsroot the first",
        ));
    }
    let before = g.fsroot()?;
    let after_fs =
        pinsight_sys::FsRoot::at(after).map_err(|e| crate::errors::fsroot_usage("--after", &e))?;
    let m = pinsight_load::machine(&before, &g.topology()?);
    let r = pinsight_load::recorded(&m, &before, &after_fs, opts, parts)
        .map_err(|e| load_error(e, true))?;
    pinsight_load::shown::say(&r, format.style(true), g.quiet);
    Ok(0)
}
