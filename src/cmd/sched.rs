//! `pinsight sched --schedulers os|aarr|to|acfs (-- CMD | --pids PID,…)`: the
//! live asymmetry-aware scheduler (pinsight-sched). Thin: flags, the
//! machine's big/small CPUs, starting CMD or finding the pids, signals,
//! the report through `pinsight_sched::view::mix`.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_sched::run::{self, Outcome, RunError, Target};
use pinsight_sched::view::notices;
use pinsight_sched::{Config, ManageError};
use pinsight_sched_model::Policy;
use std::ffi::OsString;
use std::time::Duration;

/// Schedule programs' threads between the fastest core kind and the others.
///
/// Every period pinsight samples each thread of the managed programs (and
/// of the processes they start) from /proc, asks the policy which threads
/// get the big CPUs (the fastest kind's; one thread each) and pins them by
/// affinity; the other threads share the other kinds' CPUs. Threads that
/// ran less than a tenth of the period are left out of that period's
/// decision. Policies:
///
///   os    pin nothing (the kernel decides); the report still shows where
///         the time went
///   aarr  asymmetry-aware round robin: big-core time shared equally; a
///         big-core and a small-core thread swap when their big-core times
///         differ by more than one period
///   to    throughput-optimised: big CPUs to the highest speedup factors
///         (SF: speed on a big core / speed on a small one), swapping only
///         for a gain above 0.1
///   acfs  fairness: progress +1 per second on a big core, +1/SF on a
///         small one; the most-advanced big-core thread swaps with the
///         least-advanced small-core thread beyond one period
///
/// SFs are given per program with --sf; a program without one counts at
/// the mean of the others. Without any --sf, to and acfs measure each
/// thread's SF from per-kind counters as `pinsight sf` does, where the
/// machine has them.
/// Runs until every managed program has ended (or Ctrl-C), then every
/// thread gets its own affinity back and the report shows, per program and
/// thread, CPU seconds on big and small CPUs, the big share and the swaps.
/// A period's CPU time counts on the kind the thread was pinned to for it
/// (under os: the kind of the CPU it was last seen on). Big CPUs are the
/// fastest kind's, small CPUs every other kind's, both within pinsight's
/// own affinity (`taskset -c 0-7 pinsight sched ...`); a machine of one
/// kind (a VM) needs --kinds. Affinities are restored on every exit but
/// SIGKILL.
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    after_help = "\
Examples:
  pinsight sched --schedulers aarr -- make -j8
  pinsight sched --schedulers to --sf solver=2.4 --sf io=1.2 -- ./run-both.sh
  pinsight sched --schedulers acfs --pids 4242,4243 --sf '#1=1.9'
  # a VM: declare the kinds
  pinsight --kinds 0:P,1:E sched --schedulers aarr -- ./a

Exit status: CMD's (128+N if killed by signal N; 127 not found, 126 not executable); with --pids 0, or 128+N when stopped by signal N. This machine only: --fsroot/--hwloc-xml are refused (exit 2)."
)]
// What to manage: running processes or a program to start; exactly one.
#[command(group(clap::ArgGroup::new("target").required(true).args(["pids", "command"])))]
pub struct Args {
    /// The scheduler: os, aarr, to or acfs (one; `pinsight mix` compares several).
    #[arg(long, aliases = ["policies", "policy"], value_name = "SCHEDULER", required = true,
          value_parser = crate::values::one_scheduler)]
    pub schedulers: String,
    /// How often threads are sampled and re-pinned: the scheduler's period (e.g. 200ms, 1s).
    #[arg(long, alias = "period", value_name = "DURATION", default_value = "200ms", value_parser = crate::values::interval)]
    pub interval: Duration,
    /// A program's speedup factor: NAME=SF, NAME its name (argv[0]'s
    /// basename) or its position #N (--pids order, else order of start;
    /// N from 1 to 4194304).
    /// Repeatable.
    #[arg(long = "sf", value_name = "NAME=SF")]
    pub sf: Vec<String>,
    /// Manage these running processes (comma-separated) instead of CMD.
    #[arg(long, value_name = "LIST", value_delimiter = ',', num_args = 1.., value_parser = crate::values::pid)]
    pub pids: Vec<i32>,
    /// The program to run and manage, with its arguments (after `--`).
    #[arg(value_name = "CMD", trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let period = args.interval;
    let name = args.schedulers.as_str();
    let policy = Policy::by_name(name, period.as_secs_f64()).ok_or_else(|| {
        CliError::usage(format!(
            "--schedulers '{name}': not a scheduler (allowed: os, aarr, to, acfs)"
        ))
    })?;
    let given = pinsight_sched::mix::given_sf(&args.sf).map_err(crate::errors::mix_open_error)?;
    // The parser took --pids or CMD, not both.
    let pids = &args.pids;
    if g.fsroot.is_some() || g.hwloc_xml.is_some() {
        // The refusal, worded once.
        g.live_capacity("sched")?;
    }
    let topo = g.topology()?;
    let capacity = pinsight_sched::own_capacity(&topo)
        .map_err(|e| crate::errors::capacity_error("sched", e))?;
    let (sf, fallback) = pinsight_sched::sf::choose(given, &policy, &topo)?;
    if let (Some(f), false) = (&fallback, g.quiet) {
        eprint!("{}", notices("note", &[f.note("--sf")]));
    }
    let fs = g.fsroot()?;
    // After a signal, this thread restores the affinities and prints the
    // report before the process ends with 128 + N.
    let _main = pinsight_lifecycle::interrupt::main_handles_exit();
    let outcome = run::run(
        fs,
        Config::new(policy, period, capacity),
        Target::new(pids, &args.command),
        sf,
        run::hfi_capacity,
        &mut crate::cli::progress(g),
    )
    .map_err(|e| match e {
        RunError::Program(p) => p.into(),
        RunError::Manage(ManageError::NoProcess { pid }) if !pids.is_empty() => {
            CliError::usage(format!("--pids: no process {pid} (it may have ended)"))
        }
        other => CliError::runtime(format!("sched: {other}")),
    })?;
    print_report(g, &outcome, pids.is_empty())?;
    Ok(outcome.exit_code)
}

/// The warnings, then the report (JSON, or the table: on stderr when a
/// program ran, since stdout may be the program's too).
fn print_report(g: &Globals, outcome: &Outcome, program_ran: bool) -> Result<(), CliError> {
    let report = &outcome.report;
    if !g.quiet {
        eprint!("{}", notices("warning", &report.warnings));
    }
    if g.json {
        return g.print_json(outcome);
    }
    // stdout may be the program's too: the report goes to stderr when a
    // program ran, as `run --report` does.
    let text = pinsight_sched::view::mix::sched(report);
    if program_ran {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(())
}
