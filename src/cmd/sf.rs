//! `pinsight sf`: per-thread speedup factors of a running process or of a
//! program it starts, from one counter group per core-kind PMU per thread
//! (pinsight-measure's `sf`), optionally with alternating affinity windows.
//! Thin: flags, then `pinsight_measure::sf::session::measure` (the
//! sampling loop, probe, signals, restore), output through
//! `pinsight_sched::view::sf`.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_lifecycle::interrupt;
use pinsight_measure::sf::session::{self, Request, SessionError, Target};
use pinsight_measure::sf::{KindCpus, SfUnavailable};
use pinsight_sched::view::{self, notices};
use pinsight_sys::FsRoot;
use std::ffi::OsString;
use std::time::Duration;

/// Measure each thread's speedup factor: SF = IPS on big / IPS on small.
///
/// Opens, on every thread of the process, one counter group per core-kind
/// PMU (cpu_core, cpu_atom, cpu_lowpower; one per ARM cluster): each
/// counts only while the thread runs on that kind, so every period gives
/// the instructions per second (IPS) it reached on each kind it ran on.
/// IPS rather than IPC × frequency, so turbo and frequency drops count.
/// Per kind a running average (weight 0.35 per sample, as PMCTrack); an
/// SF once each kind has 5 samples, clamped to [1, 4]. A phase cache keyed
/// on L1 loads per 1K instructions and the branch fraction gives "now",
/// the SF of the thread's current phase, also while it runs on the small
/// kind. Big is the fastest kind (the topology's, or --kinds); every other
/// kind is small.
///
/// --probe pins each thread to the big and the small CPUs in turn, one
/// period each, so threads the OS keeps on one kind get samples on both;
/// affinities are restored at the end, on Ctrl-C and on errors.
///
/// Without per-kind counters (no PMU, as in most VMs; one kind;
/// perf_event_paranoid) the reason is printed and nothing runs: give SFs
/// per program instead (`pinsight simulate --programs`, and --sf NAME=X
/// of the schedulers), or time a program on each kind with
/// `pinsight compare` (arms confined to each kind, e.g. p-set and e-set)
/// and read its SF from the journal with --from-compare.
///
/// Ends when the program exits, after --duration, or on Ctrl-C (what was
/// measured is printed, then exit 130). With -- CMD the exit status is
/// the program's; 1 when no thread could be counted.
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    after_help = "Examples:\n  pinsight sf --pids 1234 --duration 10s\n  \
pinsight sf --probe -- ./render scene.txt\n  \
pinsight sf --pids 1234 --probe --interval 100ms --json\n  \
pinsight sf --from-compare compare-journal.jsonl"
)]
// What to measure: a running process, a program to start, or a compare
// journal; exactly one.
#[command(group(clap::ArgGroup::new("target").required(true).args(["pids", "command", "from_compare"])))]
pub struct Args {
    /// Measure the threads of these running processes (comma-separated pids).
    #[arg(long, alias = "pid", value_name = "LIST", value_delimiter = ',', value_parser = crate::values::pid)]
    pub pids: Option<Vec<i32>>,
    /// Alternate every thread between the big and the small CPUs, one
    /// period on each (restored at the end).
    #[arg(long)]
    pub probe: bool,
    /// Sampling interval (the probe's window on each kind).
    #[arg(long, alias = "period", value_name = "DURATION", default_value = "200ms", value_parser = crate::values::interval)]
    pub interval: Duration,
    /// Stop after this long [default: when the process exits, or Ctrl-C].
    #[arg(long, value_name = "DURATION", value_parser = crate::values::positive_duration)]
    pub duration: Option<Duration>,
    /// Instead of measuring: the SF of the program a `pinsight compare`
    /// journal measured, from its arms confined to the big kind and to the
    /// small kind (mean time on small / mean time on big, 95% interval).
    #[arg(
        long,
        value_name = "JOURNAL",
        conflicts_with_all = ["pids", "probe", "duration", "command"]
    )]
    pub from_compare: Option<std::path::PathBuf>,
    /// The program to run and measure (after `--`).
    #[arg(value_name = "CMD", trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    if let Some(journal) = &args.from_compare {
        return from_compare(journal, g);
    }
    let target = target(&args, g)?;
    let measure_root = pinsight_measure::measurement_root()?;
    let topo = g.topology()?;
    let kinds: Vec<KindCpus> = topo.kinds.iter().map(KindCpus::from).collect();
    let req = Request::new(target, args.probe, args.interval, args.duration);
    // After a signal, this thread restores, reports, then exits 128 + N.
    let _main = interrupt::main_handles_exit();
    let measured = session::measure(&measure_root, &kinds, req, &mut crate::cli::progress(g));
    let mut m = match measured {
        Ok(m) => m,
        Err(SessionError::Unavailable(reason)) => return unavailable(g, &req, &reason),
        Err(SessionError::Program(e)) => return Err(e.into()),
        Err(e @ SessionError::Interrupt(_)) => return Err(CliError::runtime(format!("sf: {e}"))),
    };
    if !g.quiet {
        eprint!("{}", notices("warning", &m.warnings));
    }
    g.print_json_or(&m.document(&req), || view::sf::measured(&m, &req))?;
    // The program: stopped on a signal (it was passed on), else waited
    // for (--duration ended before it), with its status as ours.
    if m.program_running() && !g.quiet {
        eprintln!(
            "pinsight: note: measuring ended (--duration); waiting for the program \
             to end (Ctrl-C stops it)"
        );
    }
    Ok(m.finish())
}

/// What to measure: --pids LIST or -- CMD, checked.
fn target<'a>(args: &'a Args, g: &Globals) -> Result<Target<'a>, CliError> {
    // The parser took --pids or CMD, not both.
    g.require_live(
        "sf measures threads",
        "unset it (--kinds declares this machine's kinds)",
    )?;
    let target = Target::new(args.pids.as_deref(), &args.command);
    if let Some(pid) = target.missing(&FsRoot::live()) {
        return Err(CliError::usage(format!(
            "--pids {pid}: no such process (a running process's id is needed)"
        )));
    }
    Ok(target)
}

/// Counters cannot be had here: say why, point to the alternatives, and
/// run nothing (exit 1).
fn unavailable(g: &Globals, req: &Request<'_>, reason: &SfUnavailable) -> CmdResult {
    let hint = "without per-kind counters, give each program's SF to the schedulers \
                (--sf NAME=X, e.g. --sf render=1.9), simulate mixes with \
                `pinsight simulate --programs FILE`, or time a program on each kind \
                with `pinsight compare` and read its SF with \
                `pinsight sf --from-compare JOURNAL`";
    if g.json {
        g.print_json(&req.unavailable(reason))?;
    }
    eprint!(
        "{}",
        notices("error", &[view::sf::unavailable(req, reason)])
    );
    if !g.quiet {
        eprint!("{}", notices("note", &[hint]));
    }
    Ok(1)
}

fn from_compare(path: &std::path::Path, g: &Globals) -> CmdResult {
    let j = pinsight_compare::journal::Journal::read(path)
        .map_err(|e| CliError::usage(format!("--from-compare: {e}")))?;
    let mut sf = pinsight_compare::sf::journal_sf(&j)
        .map_err(|e| CliError::runtime(format!("--from-compare {}: no SF: {e}", path.display())))?;
    sf.journal = path.display().to_string();
    if !g.quiet {
        eprint!("{}", notices("warning", &j.warnings));
        eprint!("{}", notices("note", sf.note.as_slice()));
    }
    g.print_json_or(&sf, || view::sf::from_compare(&sf))?;
    Ok(0)
}
