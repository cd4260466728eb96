//! `pinsight compare`: to pin or not to pin, answered with evidence for the
//! user's own program. Runs COMMAND under each placement policy (and
//! governor), interleaved in a seeded random order, journals every run,
//! and prints hyperfine-style statistics with a plain-words verdict.
//!
//! The experiment itself lives in crate `pinsight-compare` (`start`: the
//! request from [`Flags`], its checks, the session), its words on stderr
//! in `pinsight_compare::view::run`; this file is the command-line edge:
//! clap's flags into one [`Flags`], the library's typed errors into lines
//! naming the flags, the progress bar, exit codes.

use crate::errors::{journal_error, session_error};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_compare::request::{Flags, Input, RanksFlags};
use pinsight_compare::session::{Finished, Session};
use pinsight_compare::start::{self, End, OpenError, PrepareError};
use pinsight_compare::view as render;
use pinsight_compare::view::run as view;
use pinsight_compare::{interrupt, Advice, Report};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

const AFTER_HELP: &str = "\
Every arm runs the same experiment: the same program, the same number of threads (--threads, else the CPUs pinsight may use: its affinity mask ∩ online CPUs) and the same thread-count variables (OMP_NUM_THREADS, RAYON_NUM_THREADS, CILK_NWORKERS); only the placement differs. Set policies (os, p-set, e-set, kind-set:, cpus-set:) take any thread count: threads float inside the set. A pinned policy with fewer CPUs than threads is refused before anything runs (one from the default list is reported as not applicable instead), unless --oversubscribe lets it place threads round robin.

The baseline is `os` (no pinning). Policies that need a second core kind (e-* on a machine with one kind; p-* run on the one kind) are reported as \"not applicable here\" with the reason, and the applicable ones run. Runs are interleaved in randomised blocks (every arm once per block), so drift hits all arms alike. Each finished run is appended to the journal at once (synced to disk in batches at most a second apart); an interrupted experiment (Ctrl-C or kill -9 alike) continues with --resume JOURNAL. A run is timed from the program's execve to its exit (the fork and the placement are not timed). Output files (journal and exports) are checked before the first run.

Memory policies: --mem SPEC applies to every arm; an arm may carry its own, POLICY+mem:SPEC (--policies p-pinned,p-pinned+mem:interleave:all), which stays in its name and in the journal's identity of the arm. A policy the kernel refuses is reported before any run.

Across ranks: --launcher LINE --slice POLICY compares slicing rules instead of placements. Every run starts `LINE pinsight [--kinds SPEC] run --slice POLICY --slice-rules RULE --report-dir DIR -- COMMAND` (one arm per rule of --slice-rules, default equal-count,equal-capacity,p-only; the first is the baseline), and its time is the SLOWEST rank's wall time, read from the ranks' reports (DIR = JOURNAL-ranks/run-N, kept). The launcher's own wall time and the slowest/fastest rank spread are kept too. A rank that fails (or writes no report) fails the run. --policies, --threads, --governors and the other placement options do not apply. Keep the launcher from binding each rank (--bind-to none, or Slurm's --cpu-bind=none) so every rank sees the CPUs to slice.

Program metrics: --metric takes a figure from every run's output (stdout and stderr together) and analyses it beside wall time, with the same statistics; the first one given is what the verdict decides on (wall time stays in the tables). Forms: NAME=REGEX[,unit=U][,better=higher|lower] (one capture group, the number; its last match counts; better defaults to higher for a unit with '/', else lower), NAME=json:PATH[,...] (PATH a JSON pointer /results/0/mean, whose only escapes are ~0 and ~1, or dotted results.0.mean, in the last JSON document of the output that has it), or a preset: sysbench (events_per_s, latency_avg_ms, latency_p95_ms), 7zip (rating_mips of `7zz b`), stress-ng (bogo_ops_per_s, with --metrics-brief), hyperfine (mean_s, with --export-json /dev/stdout --style none). A run whose output lacks the figure, or holds one that is not a finite number (1e999), is a failed measurement of that metric, with the reason, named in the verdict (never a zero). When every arm takes the same wall time (within 1%) but CPU time or the program's own figures differ, the verdict says the program probably runs for a set time and suggests --metric.

Output: every run's stdout and stderr go to one file, JOURNAL.out/arm-ARM-run-SLOT.txt (cut to its first and last 512 KiB when longer), named in the run's journal line; --show-output prints each one after its run, under a line naming the arm and run. The program sees a regular file, not the terminal, on stdout and stderr: a program that checks isatty may buffer differently or drop colours.

compare measures this machine: --fsroot, PINSIGHT_FSROOT and --hwloc-xml are refused.

Options go before the program: the first word that is not an option (or everything after `--`) is the program, and the words after it are its own arguments.

Exit status: 0 done; 1 a run failed (without --ignore-failure) or a runtime error; 2 usage; 126/127 COMMAND cannot be executed / not found; 130 interrupted by Ctrl-C (143 SIGTERM).

Examples:
  pinsight compare --runs 10 -- ./my-omp-app input.dat
  pinsight compare --policies os,p-pinned -t 8 --export-html r.html -- make -j8
  pinsight compare --policies os,latency-group --latency lat.csv -- ./app
  pinsight compare --policies p-pinned,p-pinned+mem:interleave:all -- ./stream
  pinsight compare --governors performance,powersave -- sysbench cpu run
  pinsight compare --metric sysbench -- sysbench cpu --threads=2 --time=1 run
  pinsight compare --metric 'fps=([0-9.]+) fps,unit=frames/s' -- ./render
  pinsight compare --launcher 'srun -n 4 --cpu-bind=none' --slice p-pinned \\
    -- ./solver
  pinsight compare --resume pinsight-compare-20250101-120000.jsonl";

/// Compare thread placements (and governors) on your own program, with statistics and a verdict.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
// A compare across ranks: started with --launcher, or continued with
// --resume (whether that journal is one is known once it is read).
#[command(group(clap::ArgGroup::new("ranks").multiple(true).args(["launcher", "resume"])))]
pub struct Args {
    /// Placement policies to compare, comma-separated [default: os,p-set,p-pinned,e-set,e-pinned];
    /// CPU lists keep their commas (`--policies os,cpus:1,0,cpus-set:0x1,0x0`); may be repeated.
    #[arg(long, value_name = "LIST", action = clap::ArgAction::Append, value_parser = pinsight_compare::request::split_policies)]
    pub policies: Option<Vec<Vec<String>>>,
    /// Threads of every arm (exported as OMP_NUM_THREADS etc.) [default: usable CPUs].
    #[arg(long, short = 't', value_name = "N", value_parser = crate::values::threads)]
    pub threads: Option<usize>,
    /// Let pinned policies place more threads than they have CPUs (round robin).
    #[arg(long)]
    pub oversubscribe: bool,
    /// Core-to-core latency matrix for latency-group/latency-pipeline (CSV or JSON).
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// Per-CPU speed weights for balance: JSON {"cpu": weight} or `cpu,weight` lines.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// Memory policy of every arm without its own +mem:SPEC (local, bind:NODES, interleave:NODES,
    /// preferred:NODE, weighted-interleave[:NODES]; see `pinsight plan --help`).
    #[arg(long, value_name = "SPEC", value_parser = super::plan_args::parse_mem)]
    pub mem: Option<pinsight_plan::MemPolicy>,
    /// Every arm only on the CPUs local to a device (eth0, nvme0n1, 0000:3b:00.0, gpu0).
    #[arg(long, value_name = "DEVICE")]
    pub near: Option<String>,
    /// Measured runs per arm [default: 10].
    #[arg(long, short = 'r', value_name = "N", value_parser = crate::values::runs)]
    pub runs: Option<usize>,
    /// Warm-up runs per arm, journaled but not analysed [default: 1].
    #[arg(long, short = 'w', value_name = "N", value_parser = crate::values::warmup)]
    pub warmup: Option<usize>,
    /// Seed of the randomised run order [default: random, recorded in the journal].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Shell command run before every run (`sh -c`), e.g. to drop caches; its output is kept in
    /// JOURNAL.out/prepare-before-run-SLOT.txt.
    #[arg(long, short = 'p', value_name = "CMD")]
    pub prepare: Option<String>,
    /// Kill a run (its whole process group) after this long; the run counts as failed.
    #[arg(long, value_name = "DURATION", value_parser = crate::values::positive_duration)]
    pub timeout: Option<Duration>,
    /// cpufreq governors as a second dimension, comma-separated (needs writable cpufreq).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub governors: Option<Vec<String>>,
    /// Journal file [default: pinsight-compare-<UTC timestamp>[-N].jsonl in the current directory].
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub journal: Option<PathBuf>,
    /// Compare slicing rules across ranks: run every run under this launcher line (split as a
    /// shell would), e.g. 'mpirun -np 4 --bind-to none' or 'srun -n 4'; needs --slice.
    #[arg(long, value_name = "LINE", requires = "slice", conflicts_with_all = PLACEMENT_FLAGS)]
    pub launcher: Option<String>,
    /// With --launcher: the placement policy every rank applies inside its slice.
    #[arg(long, value_name = "POLICY", requires = "ranks")]
    pub slice: Option<String>,
    /// With --launcher: the slicing rules to compare, comma-separated, the first is the baseline
    /// [default: equal-count,equal-capacity,p-only].
    #[arg(
        long,
        alias = "slice-rule",
        value_delimiter = ',',
        value_name = "LIST",
        requires = "ranks"
    )]
    pub slice_rules: Option<Vec<String>>,
    /// Continue an interrupted experiment from its journal (COMMAND and options may be omitted).
    #[arg(long, value_name = "JOURNAL")]
    pub resume: Option<PathBuf>,
    /// Keep going when a run fails (non-zero exit, signal, timeout); failed runs are excluded from the statistics.
    #[arg(long, short = 'i')]
    pub ignore_failure: bool,
    /// A figure to read from every run's output and compare (may be repeated):
    /// NAME=REGEX[,unit=U][,better=higher|lower], NAME=json:PATH[,...], or a preset
    /// (sysbench, 7zip, stress-ng, hyperfine); the first decides the verdict.
    #[arg(long, value_name = "SPEC", action = clap::ArgAction::Append, value_parser = crate::values::metric)]
    pub metric: Option<Vec<Vec<pinsight_compare::program_metric::MetricSpec>>>,
    /// Print each run's output after it, under a line naming the arm and run (it is kept
    /// in JOURNAL.out/ either way; the program sees a file, not the terminal).
    #[arg(long)]
    pub show_output: bool,
    /// A run is disturbed when other work (or the hypervisor) took more than this share of one
    /// of its CPUs, from /proc/stat: a percentage (5%) or a fraction [default: 5%].
    #[arg(long, value_name = "SHARE", value_parser = crate::values::share)]
    pub disturbance_threshold: Option<f64>,
    /// Run a disturbed run again, up to N times; every attempt stays in the journal and the
    /// last one counts; --resume counts the journal's earlier attempts [default: 0].
    #[arg(long, value_name = "N", value_parser = crate::values::reruns)]
    pub rerun_disturbed: Option<usize>,
    #[command(flatten)]
    pub export: crate::cli::ExportArgs,
    /// The program to measure and its arguments: after `--`, or from the first word that is
    /// not an option (options of pinsight go before it; a mistyped one is an error).
    // No `allow_hyphen_values`: an unknown option before the program is a
    // usage error with clap's "similar argument" tip, never the program.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    refuse_other_machine(g)?;
    interrupt::install().map_err(|e| CliError::runtime(e.to_string()))?;
    let fs = pinsight_measure::measurement_root()?;
    let flags = flags(&args, g);
    let prepared = start::prepare(&flags).map_err(|e| prepare_error(e, &args))?;
    let topo = g.topology_with(prepared.needs)?;
    let started = prepared.open(&flags, &topo, fs).map_err(open_error)?;
    let journal = started.session.journal_path().to_path_buf();
    eprint!("{}", view::started(&started, g.quiet));
    let finished = measure(started.session, g, args.show_output)?;
    let report = &finished.report;
    let written = export(&args, report);
    if g.json {
        g.print_json(report)?;
    } else {
        let width = render::layout::effective_width(pinsight_term::terminal_columns());
        print!("{}", render::text::render(report, width, &advice));
    }
    written?;
    ended(&args, &flags, finished, &journal)
}

/// The one request of the flags (and the global `--kinds`, which every
/// rank of a compare across ranks gets).
fn flags(args: &Args, g: &Globals) -> Flags {
    Flags {
        command: args.command.clone(),
        prepare: args.prepare.clone(),
        policies: args.policies.clone().map(|v| v.concat()),
        governors: args.governors.clone(),
        threads: args.threads,
        oversubscribe: args.oversubscribe,
        latency: args.latency.clone(),
        weights: args.weights.clone(),
        mem: args.mem.clone(),
        near: args.near.clone(),
        runs: args.runs,
        warmup: args.warmup,
        seed: args.seed,
        timeout: args.timeout,
        metrics: args.metric.clone().map(|v| v.concat()),
        journal: args.journal.clone(),
        resume: args.resume.clone(),
        ranks: RanksFlags {
            launcher: args.launcher.clone(),
            slice: args.slice.clone(),
            slice_rules: args.slice_rules.clone(),
            kinds: g.kinds.clone(),
        },
        exports: args
            .export
            .files()
            .iter()
            .map(|f| f.2.to_path_buf())
            .collect(),
        show_output: args.show_output,
        ignore_failure: args.ignore_failure,
        disturbance_threshold: args.disturbance_threshold,
        rerun_disturbed: args.rerun_disturbed,
    }
}

/// Runs the experiment with a progress bar; warns of a late cleanup or a
/// setting not restored.
fn measure(session: Session, g: &Globals, show: bool) -> Result<Finished, CliError> {
    let finished = view::run_shown(session, &mut crate::cli::progress(g), show);
    let finished = finished.map_err(session_error)?;
    eprint!("{}", view::finish_warnings(&finished));
    Ok(finished)
}

/// The exit of an experiment: 0 complete; else what stopped it and how to resume.
fn ended(args: &Args, flags: &Flags, finished: Finished, journal: &Path) -> CmdResult {
    let report = &finished.report;
    let end = start::end(finished.outcome, finished.signal, report, journal);
    let command = resume_command(args, flags, journal);
    eprint!(
        "{}",
        view::ended(&end, report, journal, &command, args.show_output)
    );
    match end {
        End::Complete => Ok(0),
        End::Stopped { .. } => Ok(1),
        End::Interrupted { signal } => {
            interrupt::main_finished();
            Ok(pinsight_lifecycle::exit::signal_code(signal))
        }
        End::Error(e) => Err(CliError {
            code: e.exit_code(),
            message: e.named(&input_flag),
        }),
    }
}

/// The flag of an input, the export files as given.
fn flag(input: Input, args: &Args) -> &'static str {
    match input {
        Input::Export(i) => args.export.files().get(i).map_or("--export", |f| f.0),
        input => input_flag(input),
    }
}

/// The flag of an input.
pub(crate) fn input_flag(input: Input) -> &'static str {
    match input {
        Input::Policies => "--policies",
        Input::Threads => "--threads",
        Input::Governors => "--governors",
        Input::Oversubscribe => "--oversubscribe",
        Input::Latency => "--latency",
        Input::Weights => "--weights",
        Input::Mem => "--mem",
        Input::Near => "--near",
        Input::Launcher => "--launcher",
        Input::Slice => "--slice",
        Input::SliceRules => "--slice-rules",
        Input::Journal => "--journal",
        Input::Export(_) => "--export",
        Input::Command => "COMMAND",
        Input::Runs => "--runs",
        Input::Metric => "--metric",
        Input::Resume => "--resume",
        Input::Prepare => "--prepare",
        Input::Warmup => "--warmup",
        Input::Seed => "--seed",
        Input::Timeout => "--timeout",
        Input::IgnoreFailure => "--ignore-failure",
        Input::ShowOutput => "--show-output",
        Input::DisturbanceThreshold => "--disturbance-threshold",
        Input::RerunDisturbed => "--rerun-disturbed",
    }
}

/// Why the experiment cannot start, naming the flag to change.
fn prepare_error(e: PrepareError, args: &Args) -> CliError {
    match e {
        PrepareError::Resume(e) => journal_error(e, true),
        PrepareError::Ranks(e) => CliError::usage(e.named(&|i| flag(i, args))),
        PrepareError::Request(e) => CliError::usage(e.named(&input_flag).unwrap_or_else(|| {
            "no command to measure; usage: pinsight compare [OPTIONS] -- COMMAND [ARGS...] \
             (or --resume JOURNAL)"
                .into()
        })),
        PrepareError::Launcher(e) => CliError {
            code: e.exit_code(),
            message: format!("--launcher {e}"),
        },
        PrepareError::Program(e) => e.into(),
        PrepareError::Output(e) => CliError::usage(e.named(&|i| flag(i, args))),
    }
}

fn open_error(e: OpenError) -> CliError {
    match e {
        OpenError::Session(e) => session_error(e),
        OpenError::Ranks(e) => CliError::runtime(e.to_string()),
    }
}

/// compare runs and measures programs here: a recorded machine (`--fsroot`,
/// `PINSIGHT_FSROOT`, `--hwloc-xml`) would plan for one CPU and measure
/// another, labelled as the recorded one.
fn refuse_other_machine(g: &Globals) -> Result<(), CliError> {
    g.require_live(
        "compare runs and measures programs",
        "unset it, or use `pinsight plan` to plan for a recorded machine",
    )
}

/// Advice worded for this command line: it names the flags.
fn advice(a: Advice) -> String {
    let words = a.named(&input_flag);
    match a {
        Advice::UseMetric { preset: None } => words + " (see --help)",
        _ => words,
    }
}

/// Writes the requested export files.
fn export(args: &Args, report: &Report) -> Result<(), CliError> {
    args.export.write(&render::Export {
        report,
        word: &advice,
    })
}

/// The exact command that continues this experiment.
fn resume_command(args: &Args, flags: &Flags, journal: &Path) -> String {
    let journal = pinsight_lifecycle::interrupt::shell_quote(&journal.display().to_string());
    let mut parts = vec!["pinsight compare --resume".to_owned(), journal];
    parts.extend(flags.resume_inputs(&input_flag));
    parts.extend(args.export.resume_words());
    parts.join(" ")
}

/// The clap ids of the flags that choose a placement in one process: with
/// `--launcher` each arm is a slicing rule, so they do not apply.
const PLACEMENT_FLAGS: [&str; 8] = [
    "policies",
    "threads",
    "governors",
    "oversubscribe",
    "latency",
    "weights",
    "mem",
    "near",
];
