//! `pinsight mix --schedulers os,aarr,to,acfs [--runs 3] -- 'CMD1' 'CMD2' …`:
//! the multi-program experiment of Saez and Prieto-Matias (APSys '22, §5)
//! on the user's programs
//! (pinsight_sched::mix). Thin: flags, journal path, Ctrl-C, progress,
//! output through `pinsight_sched::view::mix`.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_sched::mix::{self, Input, MixError, MixJournal, MixRequest};
use pinsight_sched::view::{self, notices};
use pinsight_term::wrap80;
use std::path::PathBuf;

/// Compare schedulers on a mix of your programs run together.
///
/// Each program (a shell command line, quoted) first runs alone pinned to
/// one big CPU (Bᵢ) and alone on one small CPU (Sᵢ). Then, per scheduler,
/// all programs start together on the big and small CPUs, managed as by
/// `pinsight sched`; each one that finishes restarts at once until every
/// program has completed --runs times (runs still going are then killed
/// and not counted). Tᵢ is the geometric mean of program i's runs in the
/// mix. Metrics (as `pinsight simulate`):
///
///   slowdown           Tᵢ / Bᵢ
///   unfairness         max slowdown / min slowdown
///   STP                Σ Bᵢ / Tᵢ (system throughput: normalised progress)
///   ANTT               mean of Tᵢ / Bᵢ (average normalised turnaround)
///   aggregate speedup  Σ (Sᵢ / Tᵢ − 1) (throughput, APSys '22 §5)
///
/// ± are 95% Student intervals over the repeats (the metrics of every
/// program's j-th run, j = 1..repeat). Every run is journaled (JSON Lines,
/// each line written as it ends, synced in batches); after Ctrl-C,
/// `pinsight mix --resume FILE` continues
/// (a scheduler cut short runs again from its start). Big CPUs are the
/// fastest kind's, small CPUs every other kind's, within pinsight's own
/// affinity; a machine of one kind (a VM) needs --kinds.
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    after_help = "Examples:\n  pinsight mix -- './a.out' 'python3 job.py' 'make -j1'\n  \
pinsight mix --schedulers aarr,to --sf a.out=2.1 --runs 5 -- './a.out' './b'\n  \
pinsight mix --resume pinsight-mix.jsonl\n\n\
Exit status: 0; 130 (128+N) when stopped by signal N (journal kept);\n\
1 when a reference run fails. This machine only (exit 2 for --fsroot)."
)]
pub struct Args {
    /// Schedulers to compare, comma-separated: os, aarr, to, acfs [default: os,aarr,to,acfs].
    #[arg(long, aliases = ["policies"], value_name = "LIST")]
    pub schedulers: Option<String>,
    /// Completions of every program per scheduler [default: 3].
    #[arg(long, alias = "repeat", value_name = "N", value_parser = crate::values::runs)]
    pub runs: Option<usize>,
    /// The schedulers' sampling interval (their period) [default: 200ms].
    #[arg(long, alias = "period", value_name = "DURATION", value_parser = crate::values::interval)]
    pub interval: Option<std::time::Duration>,
    /// A program's speedup factor: NAME=SF (NAME the basename of the
    /// command's first word, or #N for the N-th command). Repeatable.
    #[arg(long = "sf", value_name = "NAME=SF")]
    pub sf: Vec<String>,
    /// A figure to read from every mix run's output, per program (may be repeated; as
    /// compare's --metric: NAME=REGEX[,unit=U][,better=higher|lower], NAME=json:PATH or a
    /// preset); the output is then kept in JOURNAL.out/.
    #[arg(long, value_name = "SPEC", action = clap::ArgAction::Append, value_parser = crate::values::metric)]
    pub metric: Option<Vec<Vec<pinsight_compare::program_metric::MetricSpec>>>,
    /// The journal to write (must not exist).
    #[arg(long, value_name = "FILE", default_value = "pinsight-mix.jsonl")]
    pub journal: PathBuf,
    /// Continue the experiment of this journal (its programs, schedulers,
    /// runs, interval and SFs unless given again, which must then match).
    #[arg(long, value_name = "FILE", conflicts_with = "journal")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub export: crate::cli::ExportArgs,
    /// The programs: one shell command line each (quote them).
    #[arg(value_name = "CMD", trailing_var_arg = true)]
    pub commands: Vec<String>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    // Every export is known to be writable before anything runs.
    for (flag, _, p) in args.export.files() {
        pinsight_lifecycle::output::check(p).map_err(|e| {
            CliError::usage(format!(
                "{flag} {}: cannot write it: {}",
                p.display(),
                e.reason()
            ))
        })?;
    }
    let request = request(&args, g.live_capacity("mix")?);
    let mut opened = mix::open(request).map_err(crate::errors::mix_open_error)?;
    for w in &opened.warnings {
        let path = opened.journal_path.display();
        eprintln!("pinsight: warning: journal {path}: {w}");
    }
    // SIGINT/SIGTERM/SIGHUP: the one lifecycle; this thread stops the
    // programs, restores the affinities and prints the resume line.
    let _main = pinsight_lifecycle::interrupt::main_handles_exit();
    let fs = g.fsroot()?;
    if let (Some(vm), false) = (pinsight_topology::vm::detect(&fs), g.quiet) {
        eprintln!(
            "{}",
            pinsight_term::wrap80(&format!("pinsight: {}", vm.note()))
        );
    }
    match opened.run(&fs, &mut crate::cli::progress(g)) {
        Ok(result) => show(&args, g, &opened, &result),
        Err(e) => mix_error(e, &opened.journal_path),
    }
}

/// The result: the exports, then JSON or the tables on stdout, then the
/// notes of disturbed measurements on stderr.
fn show(args: &Args, g: &Globals, opened: &mix::Opened, result: &mix::MixResult) -> CmdResult {
    let repeat = opened.spec.repeat;
    let json = view::mix::document(&opened.spec, result, &opened.journal_path);
    args.export.write(&view::mix::Export {
        result,
        repeat,
        json: &json,
    })?;
    g.print_json_or(&json, || view::mix::mix(result, repeat))?;
    if !g.quiet {
        eprint!("{}", notices("warning", &result.notes));
    }
    Ok(0)
}

/// The library's request: flags not given follow a resumed journal (and
/// take the library's defaults, the same as clap's, in a new one); given
/// ones must match it.
fn request(args: &Args, capacity: pinsight_sched_model::Capacity) -> MixRequest {
    MixRequest {
        commands: args.commands.clone(),
        // A flag not typed follows a resumed journal; a typed one, even
        // equal to its default, must match it.
        schedulers: args
            .schedulers
            .as_ref()
            .map(|s| s.split(',').map(String::from).collect()),
        repeat: args.runs.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        period: args.interval,
        sf: args.sf.clone(),
        journal: MixJournal::new(args.resume.clone(), args.journal.clone()),
        capacity,
        metrics: args.metric.clone().unwrap_or_default().concat(),
    }
}

/// The flag of each input of the request.
pub(crate) fn flag(input: Input) -> &'static str {
    match input {
        Input::Schedulers => "--schedulers",
        Input::Repeat => "--runs",
        Input::Sf => "--sf",
        Input::Journal => "--journal",
        Input::Resume => "--resume",
    }
}

/// How a mix that did not finish ends: a signal (the resume line, 128 + N),
/// a journal of another experiment (usage), the program, or a failure.
fn mix_error(e: MixError, journal_path: &std::path::Path) -> CmdResult {
    match e {
        MixError::Interrupted(sig) => {
            eprintln!(
                "{}",
                wrap80(&format!(
                    "pinsight: mix stopped by signal {sig}; every affinity restored, the journal \
                     {} kept. Continue with: pinsight mix --resume {}",
                    journal_path.display(),
                    pinsight_lifecycle::interrupt::shell_quote(&journal_path.display().to_string())
                ))
            );
            Ok(pinsight_lifecycle::exit::signal_code(sig))
        }
        e @ MixError::Mismatch { .. } => Err(CliError::usage(format!("--resume: {e}"))),
        MixError::Program(e) => Err(e.into()),
        e => Err(CliError::runtime(format!("mix: {e}"))),
    }
}
