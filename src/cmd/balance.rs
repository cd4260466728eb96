//! `pinsight balance`: spread running processes (or threads) over CPUs in
//! proportion to capacity, with before/after load; `--restore FILE` puts
//! the saved affinities back.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_compare::setup::load_weights;
use pinsight_cpuset::CpuSet;
use pinsight_launch::rebalance::state::{state_path, StatePathError};
use pinsight_launch::rebalance::{self, select::Selector, Input, RebalanceError, Request};
use pinsight_launch::view::balance as view;
use pinsight_load::journal::Journal;
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use std::path::PathBuf;
use std::time::Duration;

/// Rebalance running processes or threads over CPUs by capacity.
#[derive(clap::Args, Debug)]
#[command(
    override_usage = "pinsight balance [OPTIONS] --pids LIST | --match REGEX | --cgroup PATH\n       pinsight balance --watch [OPTIONS] --pids LIST|--match RE|--cgroup PATH\n       pinsight balance --restore FILE"
)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["pids", "pattern", "cgroup", "restore"]))]
#[command(after_help = "\
What moves: each selected process is one task (all its threads get the task's CPUs, as taskset -a -p does), or with --per-thread each thread is one. The tasks are spread over the CPUs (--cpus, else every CPU their affinities allow) with the planner's balance policy: in proportion to each CPU's capacity (--weights FILE, else the kernel's cpu_capacity, else each kind's maximum frequency, else the kind's rank; see `pinsight plan --help`). A task pinned to one CPU stays there while the plan leaves that CPU room.

Before anything changes, every selected thread's affinity is saved to a state file (--state FILE, else balance-SECONDS-PID.json in $XDG_STATE_HOME/pinsight, else /var/lib/pinsight for root, else ~/.local/state/pinsight; never the temporary directory); its path is printed, and --restore FILE puts those affinities back (threads that exited, or whose TID was reused, are left alone; kernel threads are refused; a file that is not yours or root's, or that others may write, is refused). One balance that moves threads runs at a time on a machine. SIGINT, SIGTERM or SIGHUP ends it in any phase with 130, 143 or 129: before the moves nothing changes; after them the moves stay and the state file to restore is named. All or nothing: if the kernel refuses one change (another user's process without CAP_SYS_NICE, a CPU the cgroup forbids), every change made is put back and the exit status is 1. A task that exits meanwhile is reported, not an error.

Load: each CPU's busy share over --interval, before and after, measured as `pinsight load` measures it (run time from /proc/schedstat, else the interval less /proc/stat's idle time, else /proc/stat's tick samples; an emulation's stealers, --stealers, count as steal), divided by its relative capacity (LOAD), and the share the selected tasks took (MINE); the imbalance is load's: the largest load over the smallest among CPUs busy at least 5% of the interval (1.00 = even).

Progress: each selected task's progress in fastest-CPU seconds per second (its run time times the speed of the CPUs it ran on; an emulated CPU runs at full speed while it runs) before, expected by the plan (each CPU's capacity shared among the threads that want a whole CPU there) and after, and the progress imbalance over the threads that want a whole CPU (ran or waited 90% of the interval), as `pinsight load` computes it. When every CPU is saturated the load imbalance reads 1.00 whatever the placement; the progress imbalance does not.

--watch: a daemon. Every --interval it selects again (new matching processes join, exited ones are forgotten), measures the progress and decides: new tasks are placed at once; the selection is moved only when the progress imbalance has stayed over --threshold for --patience intervals in a row (then the count restarts); at most --max-moves tasks an interval. One line per decision (--json: one object per line). Each thread's affinity is saved before its first move; SIGTERM, SIGINT or SIGHUP puts everything back (exit 143, 130, 129), and after kill -9 --restore FILE does. docs/src/commands/balance.md has a systemd unit.

Examples:
  # every process named worker, spread by capacity
  pinsight balance --match '^worker$'
  # every process whose command line names job.yaml (pgrep -f)
  pinsight balance --match 'job\\.yaml' --match-full
  # show the moves, change nothing
  pinsight balance --pids 4242,4243 --dry-run
  # the threads of a service, over CPUs 0-7
  pinsight balance --cgroup system.slice/app.service --per-thread --cpus 0-7
  # keep every worker spread as they come and go (a service)
  pinsight balance --watch --match '^worker$' --interval 5s
  # put the saved affinities back (FILE: the state file balance named)
  pinsight balance --restore FILE

Exit status: 0 done; 1 refused by the kernel (nothing changed) or the load could not be read; 2 bad input (unknown PID, a pattern matching nothing, no such cgroup, CPUs that are not usable).")]
pub struct Args {
    /// Processes by PID: a comma-separated list (4242,4243).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::values::pid)]
    pub pids: Option<Vec<i32>>,
    /// Processes whose name (comm) matches this regular expression, as pgrep matches, or (with
    /// --per-thread) threads whose name matches. pinsight itself, the processes it runs under
    /// (shell, timeout, sudo) and kernel threads are never selected.
    #[arg(long = "match", value_name = "REGEX")]
    pub pattern: Option<String>,
    /// Match --match against the whole command line instead of the name (pgrep -f).
    #[arg(long, requires = "pattern")]
    pub match_full: bool,
    /// The processes of a cgroup v2 directory (with --per-thread: its cgroup.threads), absolute
    /// under /sys/fs/cgroup or relative to it.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// One task per thread instead of one per process.
    #[arg(long)]
    pub per_thread: bool,
    /// The CPUs to spread over [default: the union of the tasks' current affinities].
    #[arg(long, value_name = "LIST", value_parser = crate::values::cpu_list)]
    pub cpus: Option<CpuSet>,
    /// Per-CPU speed weights: JSON {"cpu": weight} or `cpu,weight` lines (as for `plan balance`).
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// How long to measure the load before and after, and with --watch how often to look again
    /// (0 = do not measure; 1ms to 1h).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::values::interval_or_off)]
    pub interval: Duration,
    /// Show the moves, change nothing, write no state file.
    #[arg(long, conflicts_with = "restore")]
    pub dry_run: bool,
    /// Where to save the previous affinities.
    #[arg(long, value_name = "FILE", conflicts_with = "restore")]
    pub state: Option<PathBuf>,
    /// Put back the affinities saved in FILE by an earlier balance.
    #[arg(long, value_name = "FILE")]
    pub restore: Option<PathBuf>,
    /// Keep balancing as a daemon: every --interval select again, measure the tasks' progress
    /// and move when the imbalance stands (see --threshold, --patience); put everything back on
    /// SIGTERM or SIGINT.
    #[arg(long, conflicts_with_all = ["restore", "dry_run"])]
    pub watch: bool,
    /// With --watch: the progress imbalance (max/min over the tasks that want a whole CPU) above
    /// which the selection is off.
    #[arg(long, value_name = "RATIO", default_value_t = 1.25, requires = "watch", value_parser = crate::values::ratio_above_one)]
    pub threshold: f64,
    /// With --watch: intervals in a row over --threshold before anything moves (new tasks are
    /// placed at once).
    #[arg(long, value_name = "N", default_value_t = 3, requires = "watch", value_parser = crate::values::patience)]
    pub patience: u32,
    /// With --watch: tasks moved at most per interval (the rest move in the next ones).
    #[arg(long, value_name = "N", default_value_t = 32, requires = "watch", value_parser = crate::values::max_moves)]
    pub max_moves: u64,
    /// With --watch: stop after N intervals, putting everything back as a signal would.
    #[arg(long, value_name = "N", requires = "watch", value_parser = crate::values::stop_count)]
    pub count: Option<u64>,
    /// Processes whose run time is not load but missing capacity, as CPU:PID,... (an
    /// emulation's stealers; `pinsight emulate` sets the variable for its command).
    #[arg(long, value_name = "CPU:PID,...", env = "PINSIGHT_EMULATION_STEALERS", value_parser = crate::values::stealers)]
    pub stealers: Option<crate::values::Stealers>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    g.require_live(
        "'balance' moves running processes",
        "use `pinsight plan balance --tasks N` to plan for it",
    )?;
    let fs = FsRoot::live();
    if let Some(path) = &args.restore {
        return restore(&fs, path, g);
    }
    let req = request(&args)?;
    let topo = g.topology()?;
    // SIGINT, SIGTERM, SIGHUP: the library stops at the next phase (a
    // measurement ends early) and the command ends with 128 + N, naming
    // the state file when something moved.
    let _exit = pinsight_lifecycle::interrupt::main_handles_exit();
    pinsight_lifecycle::interrupt::install()
        .map_err(|e| CliError::runtime(format!("balance: {e}")))?;
    if args.watch {
        return watch(&args, g, &fs, &topo, &req);
    }
    // One balance: select, show the selection, measure, move, measure again.
    let prepared = rebalance::prepare(&fs, &topo, &req).map_err(balance_error)?;
    // One balance that moves threads at a time on a machine (two at once
    // would each report "moved", and the last writer would win); taken
    // once the input is known good, so bad input stays exit 2.
    let lock = (!args.dry_run).then(|| crate::cli::one_at_a_time("balance"));
    let _one = lock.transpose()?.flatten();
    if !g.json && !g.quiet {
        let selected = view::selection(prepared.tasks(), args.per_thread, prepared.cpus());
        print!("{selected}");
    }
    let mut bar = crate::cli::progress(g);
    let report = prepared.apply(&fs, &req, &mut bar).map_err(balance_error)?;
    g.print_json_or(&report, || view::report(&report))?;
    Ok(0)
}

/// `--restore FILE`: the saved affinities put back.
fn restore(fs: &FsRoot, path: &std::path::Path, g: &Globals) -> CmdResult {
    // The file checked first (bad input is exit 2, lock or not), then
    // one balance at a time.
    let state = rebalance::state::load(path).map_err(balance_error)?;
    let _one = crate::cli::one_at_a_time("balance")?;
    let r = rebalance::state::restore_loaded(fs, path, state);
    if g.json {
        g.print_json(&r)?;
    } else if !g.quiet {
        print!("{}", view::restore(&r));
    }
    view::restore_failure(&r).map_or(Ok(0), |why| Err(CliError::runtime(why)))
}

/// `--watch`: the daemon, one line (or JSON object) per decision, until
/// a signal or --count; everything it moved put back at the end.
fn watch(args: &Args, g: &Globals, fs: &FsRoot, topo: &Topology, req: &Request) -> CmdResult {
    if args.interval.is_zero() {
        return Err(CliError::usage(
            "--interval 0: --watch measures every interval; give a duration (1s, 5s)",
        ));
    }
    let state = req.state.clone().expect("a state path unless --dry-run");
    let _one = crate::cli::one_at_a_time("balance")?;
    let opts = rebalance::watch::Options {
        threshold: args.threshold,
        patience: args.patience,
        max_moves: args.max_moves as usize,
        interval: args.interval,
        intervals: args.count,
    };
    let journal = Journal::stdout(g.json, g.quiet);
    let end = rebalance::watch::run_journaled(fs, topo, req, &opts, &state, journal);
    Ok(end.map_err(balance_error)?.exit_code())
}

/// The library's request from the flags (the state file's default path
/// made, and its directory checked, before anything moves).
fn request(args: &Args) -> Result<Request, CliError> {
    let selector = Selector::first_of(
        args.pids.as_deref(),
        args.pattern.as_deref(),
        args.match_full,
        args.cgroup.as_deref(),
    )
    .map_err(balance_error)?
    .ok_or_else(|| CliError::usage("give --pids, --match, --cgroup or --restore"))?;
    let weights = args.weights.as_deref().map(load_weights).transpose();
    let weights = weights.map_err(|e| CliError::usage(e.to_string()))?;
    let state = (!args.dry_run).then(|| state_path(args.state.as_deref()));
    let state = state.transpose().map_err(|e| match e {
        StatePathError::NoDirectory(_) => CliError::runtime(format!("{e}; give --state FILE")),
        StatePathError::Unwritable { .. } => CliError::usage(format!("--state: {e}")),
    })?;
    Ok(Request {
        selector,
        per_thread: args.per_thread,
        cpus: args.cpus.clone(),
        weights,
        dry_run: args.dry_run,
        interval: (!args.interval.is_zero()).then_some(args.interval),
        state,
        exclude: args.stealers.clone().unwrap_or_default().0,
    })
}

/// The library's errors, worded with the flag to change.
fn balance_error(e: RebalanceError) -> CliError {
    let flag = match e.input() {
        Some(Input::Pids) => "--pids: ",
        Some(Input::Pattern) => "--match: ",
        Some(Input::Cgroup) => "--cgroup: ",
        Some(Input::Cpus) => "--cpus: ",
        Some(Input::Weights) => "--weights: ",
        Some(Input::StateFile) => "--restore: ",
        None => "",
    };
    let message = match &e {
        RebalanceError::Interrupted { .. } => format!("balance: {e}"),
        RebalanceError::NoCpus { .. } => format!("{e}; give --cpus LIST"),
        RebalanceError::Plan(p) => super::plan_args::plan_error_message(p),
        _ => format!("{flag}{e}"),
    };
    CliError {
        code: e.exit_code(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::plan_args::test_cli;

    /// The flags as `pinsight balance` parses them.
    fn parse(argv: &[&str]) -> Result<test_cli::Cli<Args>, clap::Error> {
        test_cli::parse("balance", argv)
    }

    #[test]
    fn flags_parse_and_conflict() {
        let c = parse(&[
            "--pids",
            "1,2",
            "--per-thread",
            "--cpus",
            "0-1",
            "--interval",
            "0",
        ])
        .unwrap();
        assert_eq!(c.args.pids, Some(vec![1, 2]));
        assert!(c.args.per_thread && c.args.interval.is_zero());
        for bad in [
            &[][..],
            &["--pids", "x"],
            &["--pids", "1", "--match", "a"],
            &["--restore", "f", "--dry-run"],
            &["--pids", "0"],
        ] {
            assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }
}
