//! `pinsight compare`: to pin or not to pin, answered with evidence for the
//! user's own program. Runs COMMAND under each placement policy (and
//! governor), interleaved in a seeded random order, journals every run,
//! and prints hyperfine-style statistics with a plain-words verdict.
//!
//! The experiment itself lives in crate `pinsight-compare`; this file is
//! the command-line edge: flags, the progress bar, files, exit codes.

use crate::errors::{journal_error, session_error};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_compare::experiment::Outcome;
use pinsight_compare::ranks::{RanksExecutor, RanksIdentity};
use pinsight_compare::session::{Config, ExecutorChoice, JournalTarget, Session};
use pinsight_compare::setup;
use pinsight_compare::setup::Extension;
use pinsight_compare::{interrupt, Advice, ExperimentError, Header, Journal, Report, Request};
use pinsight_lifecycle::interrupt::shell_quote;
use pinsight_lifecycle::program::Program;
use pinsight_render::compare as render;
use pinsight_sys::FsRoot;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

const AFTER_HELP: &str = "\
Every arm runs the same experiment: the same program, the same number of threads (--threads, else the CPUs pinsight may use: its affinity mask ∩ online CPUs) and the same thread-count variables (OMP_NUM_THREADS, RAYON_NUM_THREADS, CILK_NWORKERS); only the placement differs. Set policies (os, p-set, e-set, kind-set:, cpus-set:) take any thread count: threads float inside the set. A pinned policy with fewer CPUs than threads is refused before anything runs (one from the default list is reported as not applicable instead), unless --oversubscribe lets it place threads round robin.

The baseline is `os` (no pinning). Policies that need a second core kind (p-*, e-* on a machine with one kind) are reported as \"not applicable here\" with the reason, and the applicable ones run. Runs are interleaved in randomised blocks (every arm once per block), so drift hits all arms alike. Each finished run is appended to the journal at once (synced to disk in batches at most a second apart); an interrupted experiment (Ctrl-C or kill -9 alike) continues with --resume JOURNAL. A run is timed from the program's execve to its exit (the fork and the placement are not timed). Output files (journal and exports) are checked before the first run.

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

/// Splits a `--policies` list at commas, except inside a CPU list: a piece
/// that starts with a digit or `0x` continues the `cpus:`/`cpus-set:`
/// policy before it (`cpus:1,0`, hwloc's `0x00000001,0x00000000`), since
/// no policy name starts with one.
fn parse_policies(text: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let piece = piece.trim();
        let continues = piece.starts_with(|c: char| c.is_ascii_digit())
            && out.last().is_some_and(|p| {
                p.starts_with("cpus:") || p.starts_with("cpus-set:") || p.contains("+mem:")
            });
        if continues {
            let last = out.last_mut().expect("checked above");
            last.push(',');
            last.push_str(piece);
        } else if piece.is_empty() {
            return Err(format!(
                "'{text}': empty policy name (expected a comma-separated list such as os,p-pinned,cpus:1,0)"
            ));
        } else {
            out.push(piece.to_string());
        }
    }
    Ok(out)
}

/// Compare thread placements (and governors) on your own program, with statistics and a verdict.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
// A compare across ranks: started with --launcher, or continued with
// --resume (whether that journal is one is known once it is read).
#[command(group(clap::ArgGroup::new("ranks").multiple(true).args(["launcher", "resume"])))]
pub struct Args {
    /// Placement policies to compare, comma-separated [default: os,p-set,p-pinned,e-set,e-pinned];
    /// CPU lists keep their commas (`--policies os,cpus:1,0,cpus-set:0x1,0x0`); may be repeated.
    #[arg(long, value_name = "LIST", action = clap::ArgAction::Append, value_parser = parse_policies)]
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
    #[arg(long, value_delimiter = ',', value_name = "LIST", requires = "ranks")]
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

    let previous = match &args.resume {
        Some(p) => Some(Journal::read(p).map_err(|e| journal_error(e, true))?),
        None => None,
    };
    let ranks = ranks_identity(&args, g, previous.as_ref().map(|j| &j.header))?;
    let mut req = request(&args, previous.as_ref().map(|j| &j.header))?;
    if ranks.is_some() {
        // One "os" plan for every arm: the launcher's ranks place themselves.
        req.policies = vec!["os".into()];
        req.governors = Vec::new();
    }
    if let Some(id) = &ranks {
        program_exists(&id.launcher[0], "--launcher ")?;
    }
    program_exists(&req.command[0], "")?;
    // Nothing is measured (or a governor touched) before every output
    // file is known to be writable.
    check_outputs(&args)?;

    let topo = g.topology_with(needs(&args, &req.policies, previous.is_some()))?;
    let journal = journal_target(&args, previous);
    let reports = std::rc::Rc::new(std::cell::OnceCell::new());
    let (ext, executor) = match &ranks {
        None => (Extension::default(), ExecutorChoice::Live),
        Some(id) => ranks_executor(id, &req, &fs, &args, reports.clone())?,
    };
    let session = Session::open_with(
        Config {
            request: req,
            topology: &topo,
            measure_fs: fs,
            journal,
            show_output: args.show_output,
            ignore_failure: args.ignore_failure,
            disturbance_threshold: args
                .disturbance_threshold
                .unwrap_or(pinsight_measure::disturbance::DEFAULT_THRESHOLD),
            rerun_disturbed: args.rerun_disturbed.unwrap_or(0),
            is_env_set: &|k| std::env::var_os(k).is_some(),
        },
        &ext,
        executor,
    )
    .map_err(session_error)?;
    let journal_path = session.journal_path().to_path_buf();
    if ranks.is_some() {
        let _ = reports.set(ranks_dir(&journal_path));
    }
    for w in session.journal_warnings() {
        eprintln!("pinsight: warning: journal {}: {w}", journal_path.display());
    }
    if !g.quiet {
        notices(&session);
        if let Some(dir) = reports.get() {
            eprintln!("pinsight: rank reports: {}/run-N", dir.display());
        }
    }

    let finished = measure(session, g, args.show_output)?;

    let report = &finished.report;
    let written = export(&args, report);
    if g.json {
        g.print_json(report)?;
    } else {
        let width = render::layout::effective_width(pinsight_render::terminal_columns());
        print!("{}", render::text::render(report, width, &advice));
    }
    written?;

    ended(&args, finished, &journal_path)
}

/// Runs the experiment with a progress bar; warns of a late cleanup or a
/// setting not restored.
fn measure(
    session: Session,
    g: &Globals,
    show_output: bool,
) -> Result<pinsight_compare::session::Finished, CliError> {
    let mut bar = crate::cli::progress(g);
    let mut gate = ShowOutput {
        printer: bar.printer(),
        show: show_output,
    };
    let finished = session.run_gated(&mut bar, &mut gate);
    let finished = finished.map_err(session_error)?;
    if finished.cleanup_late {
        eprintln!("pinsight: warning: the signal cleanup did not report back within 5 s");
    }
    if let Some(e) = &finished.restore_failed {
        eprintln!("pinsight: warning: {e}");
    }
    Ok(finished)
}

/// Where the journal goes: the one resumed, `--journal`, else a new unique file here.
fn journal_target(args: &Args, previous: Option<Journal>) -> JournalTarget {
    match (&args.resume, previous) {
        (Some(path), Some(previous)) => JournalTarget::Resume {
            path: path.clone(),
            previous: Box::new(previous),
        },
        _ => match &args.journal {
            Some(path) => JournalTarget::New(path.clone()),
            None => JournalTarget::Unique {
                dir: PathBuf::from("."),
                stem_prefix: "pinsight-compare-".into(),
            },
        },
    }
}

/// The exit of an experiment: 0 complete; else what stopped it and how to resume.
fn ended(
    args: &Args,
    finished: pinsight_compare::session::Finished,
    journal_path: &Path,
) -> CmdResult {
    let report = &finished.report;
    let resume_hint = || {
        eprintln!(
            "pinsight: {} of {} runs are in {}; continue with:\n  {}",
            report.runs_done,
            report.runs_planned,
            journal_path.display(),
            resume_command(args, journal_path)
        );
    };
    match finished.outcome {
        Outcome::Complete => Ok(0),
        Outcome::StoppedOnFailure { why, slot, .. } => {
            let kept = report
                .runs
                .iter()
                .rev()
                .find(|r| r.slot == slot)
                .and_then(|r| r.output.as_ref())
                .filter(|o| !o.path.is_empty())
                .map(|o| journal_path.with_file_name(&o.path));
            eprintln!(
                "pinsight: error: stopped: {why}{}",
                match kept {
                    Some(p) if !args.show_output => format!(" (its output: {})", p.display()),
                    _ => String::new(),
                }
            );
            resume_hint();
            Ok(1)
        }
        Outcome::Interrupted => {
            let sig = finished.signal.unwrap_or_else(interrupt::signal);
            eprintln!("pinsight: interrupted: runs stopped, governors restored, journal intact");
            resume_hint();
            interrupt::main_finished();
            Ok(pinsight_lifecycle::exit::signal_code(sig))
        }
        Outcome::Error(e) => {
            resume_hint();
            Err(experiment_error(e))
        }
    }
}

/// `COMMAND` must exist here (126/127 otherwise); `what` names the flag.
fn program_exists(program: &str, what: &str) -> Result<(), CliError> {
    match Program::resolve(std::ffi::OsStr::new(program)) {
        Ok(_) => Ok(()),
        Err(e) => Err(CliError {
            code: e.exit_code(),
            message: format!("{what}{e}"),
        }),
    }
}

/// The slicing rules compared when `--slice-rules` is not given; the
/// first, what the launchers do, is the baseline.
const DEFAULT_RULES: &str = "equal-count,equal-capacity,p-only";

/// A compare across ranks from `--launcher`/`--slice`/`--slice-rules` (or
/// a resumed journal of one); None for a plain compare. Refuses the
/// flags that do not go together, each in one line.
fn ranks_identity(
    args: &Args,
    g: &Globals,
    resumed: Option<&Header>,
) -> Result<Option<RanksIdentity>, CliError> {
    let journal: Option<RanksIdentity> = resumed
        .filter(|h| h.kind.as_deref() == Some(pinsight_compare::ranks::KIND))
        .and_then(|h| h.extension.clone())
        .and_then(|v| serde_json::from_value(v).ok());
    if args.launcher.is_none() && journal.is_none() {
        // The parser let --slice/--slice-rules through with --resume: of a
        // journal that is not a compare across ranks, they do not apply.
        if let Some(flag) = [
            (args.slice_rules.is_some(), "--slice-rules"),
            (args.slice.is_some(), "--slice"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
        {
            return Err(crate::errors::conflict(
                flag,
                "--resume of a plain compare journal",
                "it applies to a compare across ranks (--launcher LINE)",
            ));
        }
        return Ok(None);
    }
    if args.launcher.is_none() {
        // The parser refuses them beside --launcher; a resumed journal's
        // launcher is known only now.
        refuse_placement_flags(args)?;
    }
    let launcher = launcher_words(args, journal.as_ref())?;
    let slice = match (&args.slice, &journal) {
        (Some(p), _) => {
            p.parse::<pinsight_plan::Policy>()
                .map_err(|e| CliError::usage(format!("--slice {p}: {e}")))?;
            p.clone()
        }
        (None, Some(j)) => j.slice.clone(),
        // The parser requires --slice with --launcher.
        (None, None) => {
            return Err(crate::errors::conflict(
                "--launcher",
                "no --slice POLICY",
                "every rank applies that policy inside its slice (e.g. --slice p-pinned)",
            ))
        }
    };
    let rules = slice_rules(args, journal.as_ref())?;
    let rank_options = match (&g.kinds, &journal) {
        (Some(k), _) => vec!["--kinds".to_string(), k.clone()],
        (None, Some(j)) => j.rank_options.clone(),
        (None, None) => Vec::new(),
    };
    Ok(Some(RanksIdentity {
        launcher,
        slice,
        rules,
        rank_options,
    }))
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

/// With a resumed compare across ranks each arm is a slicing rule: the
/// flags that choose a placement in one process do not apply.
fn refuse_placement_flags(args: &Args) -> Result<(), CliError> {
    for (given, flag) in [
        (args.policies.is_some(), "--policies"),
        (args.threads.is_some(), "--threads"),
        (args.governors.is_some(), "--governors"),
        (args.oversubscribe, "--oversubscribe"),
        (args.latency.is_some(), "--latency"),
        (args.weights.is_some(), "--weights"),
        (args.mem.is_some(), "--mem"),
        (args.near.is_some(), "--near"),
    ] {
        if given {
            return Err(crate::errors::conflict(
                flag,
                "--resume of a compare across ranks",
                "each arm is a slicing rule (--slice-rules), and each rank places its threads \
                 with --slice POLICY",
            ));
        }
    }
    Ok(())
}

/// The launcher line's words: `--launcher`, else the resumed journal's.
fn launcher_words(args: &Args, journal: Option<&RanksIdentity>) -> Result<Vec<String>, CliError> {
    Ok(match &args.launcher {
        Some(line) => {
            let words = shlex::split(line).ok_or_else(|| {
                CliError::usage(format!(
                    "--launcher {}: unbalanced quotes or a trailing backslash",
                    shell_quote(line)
                ))
            })?;
            if words.is_empty() {
                return Err(CliError::usage(
                    "--launcher '': give the launcher line, e.g. 'mpirun -np 4 --bind-to none'",
                ));
            }
            words
        }
        None => journal.map(|j| j.launcher.clone()).unwrap_or_default(),
    })
}

/// The slicing rules compared (`--slice-rules`, else the journal's, else
/// the default), each named once.
fn slice_rules(args: &Args, journal: Option<&RanksIdentity>) -> Result<Vec<String>, CliError> {
    let texts: Vec<String> = match (&args.slice_rules, journal) {
        (Some(r), _) => r.clone(),
        (None, Some(j)) => j.rules.clone(),
        (None, None) => DEFAULT_RULES.split(',').map(str::to_string).collect(),
    };
    let mut rules: Vec<String> = Vec::new();
    for t in &texts {
        let rule: pinsight_plan::slice::SliceRule = t.parse().map_err(|_| {
            CliError::usage(format!(
                "--slice-rules {t}: unknown slicing rule (expected {})",
                pinsight_plan::slice::SliceRule::NAMES
            ))
        })?;
        let name = rule.to_string();
        if rules.contains(&name) {
            return Err(CliError::usage(format!(
                "--slice-rules {}: {name} is given twice",
                texts.join(",")
            )));
        }
        rules.push(name);
    }
    Ok(rules)
}

/// Where the ranks of the experiment in `journal` write their reports:
/// `JOURNAL` without `.jsonl`, plus `-ranks`.
fn ranks_dir(journal: &Path) -> PathBuf {
    let name = journal.file_name().map_or("pinsight-compare".into(), |n| {
        n.to_string_lossy().into_owned()
    });
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    journal.with_file_name(format!("{stem}-ranks"))
}

/// The extension and the executor of a compare across ranks.
fn ranks_executor(
    id: &RanksIdentity,
    req: &Request,
    fs: &FsRoot,
    args: &Args,
    reports: std::rc::Rc<std::cell::OnceCell<PathBuf>>,
) -> Result<(Extension, ExecutorChoice), CliError> {
    use pinsight_measure::{Measurer, Options};
    let pinsight = std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("cannot find pinsight's own binary: {e}")))?;
    let (measurer, _) = Measurer::new(
        fs,
        Options {
            timeout: req.timeout,
            ..Options::default()
        },
    );
    let prepare = req.prepare.clone().map(|p| {
        let (m, _) = Measurer::new(
            fs,
            Options {
                timeout: req.timeout,
                counters: false,
                energy: false,
                ..Options::default()
            },
        );
        (m, p)
    });
    let ext = Extension {
        kind: Some(pinsight_compare::ranks::KIND.into()),
        extension: Some(
            serde_json::to_value(id).map_err(|e| CliError::runtime(format!("journal: {e}")))?,
        ),
        arm_names: Some(id.rules.clone()),
        ..Extension::default()
    };
    let show_output = args.show_output;
    let built = id.clone();
    let make = move |h: &Header| -> Box<dyn pinsight_compare::Executor> {
        // A resumed experiment runs as its journal says.
        let id = h
            .extension
            .clone()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or(built);
        Box::new(RanksExecutor::new(
            measurer,
            id,
            pinsight,
            h.command.clone(),
            reports,
            show_output,
            prepare,
        ))
    };
    Ok((ext, ExecutorChoice::Custom(Box::new(make))))
}

/// What the experiment is about to do, before the first run: the journal,
/// the machine's capabilities, arms that are not applicable here, and how
/// arms are applied when it is not the plain rule.
fn notices(session: &Session) {
    let header = session.header();
    eprintln!("pinsight: journal: {}", session.journal_path().display());
    for c in &header.machine.capabilities {
        eprintln!(
            "{}",
            pinsight_render::term::wrap80(&format!("pinsight: {c}"))
        );
    }
    if let Some(vm) = session.virtual_machine() {
        eprintln!(
            "{}",
            pinsight_render::term::wrap80(&format!("pinsight: {vm}"))
        );
    }
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for na in &header.not_applicable {
        match groups.iter_mut().find(|(_, r)| *r == na.reason) {
            Some(g) => g.0.push(&na.what),
            None => groups.push((vec![&na.what], &na.reason)),
        }
    }
    for (what, reason) in groups {
        eprintln!(
            "{}",
            pinsight_render::term::wrap80(&format!(
                "pinsight: {}: not applicable here: {reason}",
                what.join(", ")
            ))
        );
    }
    for (policy, note) in session.arm_notes() {
        eprintln!(
            "{}",
            pinsight_render::term::wrap80(&format!("pinsight: {policy}: {note}"))
        );
    }
}

/// The request from flags; with `--resume`, unspecified flags come from
/// the journal's header (and given ones must match it, checked later).
fn request(args: &Args, resumed: Option<&Header>) -> Result<Request, CliError> {
    let mut command = Vec::new();
    for a in &args.command {
        command.push(a.to_str().map(str::to_string).ok_or_else(|| {
            CliError::usage(format!(
                "COMMAND argument {a:?} is not valid UTF-8 (the journal stores text)"
            ))
        })?);
    }
    if let Some(h) = resumed {
        return resumed_request(args, command, h);
    }
    if command.is_empty() {
        return Err(CliError::usage(
            "no command to measure; usage: pinsight compare [OPTIONS] -- COMMAND [ARGS...] (or --resume JOURNAL)",
        ));
    }
    let runs = args.runs.unwrap_or(10);
    if runs == 0 {
        return Err(CliError::usage(
            "--runs 0: at least 1 run per arm is needed (2 for statistics)",
        ));
    }
    Ok(Request {
        command,
        prepare: args.prepare.clone(),
        policies: args
            .policies
            .clone()
            .map(|v| v.concat())
            .unwrap_or_else(|| {
                setup::DEFAULT_POLICIES
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            }),
        governors: args.governors.clone().unwrap_or_default(),
        threads: args.threads,
        oversubscribe: args.oversubscribe,
        latency: args.latency.clone(),
        weights: args.weights.clone(),
        mem: args.mem.clone(),
        near: args.near.clone(),
        interleave_weights: pinsight_sys::mempolicy::interleave_weights(
            &pinsight_sys::FsRoot::live(),
        ),
        runs,
        warmup: args.warmup.unwrap_or(1),
        seed: args.seed.unwrap_or_else(random_seed),
        timeout: args.timeout,
        metrics: metrics(args)?,
    })
}

/// The request of a resumed experiment: the journal's, each flag given
/// again taking its place.
fn resumed_request(args: &Args, command: Vec<String>, h: &Header) -> Result<Request, CliError> {
    Ok(Request {
        command: if command.is_empty() {
            h.command.clone()
        } else {
            command
        },
        prepare: args.prepare.clone().or_else(|| h.prepare.clone()),
        policies: args
            .policies
            .clone()
            .map(|v| v.concat())
            .unwrap_or_else(|| h.policies.clone()),
        governors: args
            .governors
            .clone()
            .unwrap_or_else(|| h.governors.clone()),
        threads: args.threads.or(h.threads),
        oversubscribe: args.oversubscribe || h.oversubscribe,
        latency: args
            .latency
            .clone()
            .or_else(|| h.latency.as_ref().map(PathBuf::from)),
        weights: args
            .weights
            .clone()
            .or_else(|| h.weights.as_ref().map(PathBuf::from)),
        mem: match (&args.mem, &h.mem) {
            (Some(m), _) => Some(m.clone()),
            (None, Some(text)) => Some(
                text.parse()
                    .map_err(|e| CliError::usage(format!("the journal's --mem {text}: {e}")))?,
            ),
            (None, None) => None,
        },
        near: args.near.clone().or_else(|| h.near.clone()),
        interleave_weights: pinsight_sys::mempolicy::interleave_weights(
            &pinsight_sys::FsRoot::live(),
        ),
        runs: args.runs.unwrap_or(h.runs),
        warmup: args.warmup.unwrap_or(h.warmup),
        seed: args.seed.unwrap_or(h.seed),
        timeout: args
            .timeout
            .or_else(|| h.timeout_s.map(Duration::from_secs_f64)),
        metrics: match &args.metric {
            Some(_) => metrics(args)?,
            None => h.metrics.clone(),
        },
    })
}

/// The program metrics of `--metric`, in order; a name given twice is a
/// usage error.
fn metrics(args: &Args) -> Result<Vec<pinsight_compare::program_metric::MetricSpec>, CliError> {
    let all: Vec<_> = args.metric.clone().unwrap_or_default().concat();
    for (i, m) in all.iter().enumerate() {
        if all[..i].iter().any(|x| x.name == m.name) {
            return Err(CliError::usage(format!(
                "--metric: '{}' is given twice (each metric needs its own name)",
                m.name
            )));
        }
    }
    Ok(all)
}

/// compare runs and measures programs here: a recorded machine (`--fsroot`,
/// `PINSIGHT_FSROOT`, `--hwloc-xml`) would plan for one CPU and measure
/// another, labelled as the recorded one.
pub(crate) fn refuse_other_machine(g: &Globals) -> Result<(), CliError> {
    g.require_live(
        "compare runs and measures programs",
        "unset it, or use `pinsight plan` to plan for a recorded machine",
    )
}

/// Checks that every output file can be written, before anything runs:
/// an existing file is opened for writing (not truncated), a new one is
/// created and removed again. A problem is a usage error naming the path.
fn check_outputs(args: &Args) -> Result<(), CliError> {
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    if args.resume.is_none() {
        if let Some(j) = &args.journal {
            if j.exists() {
                return Err(CliError::usage(format!(
                    "--journal {}: already exists; continue it with --resume {0}, or choose another --journal",
                    j.display()
                )));
            }
            outputs.push(("--journal", j));
        }
    }
    for (flag, _, p) in args.export.files() {
        outputs.push((flag, p));
    }
    for (flag, path) in outputs {
        writable(path).map_err(|e| {
            CliError::usage(format!("{flag} {}: cannot write it: {e}", path.display()))
        })?;
    }
    if args.resume.is_none() && args.journal.is_none() {
        // The default journal goes to the current directory.
        let probe = PathBuf::from(format!(".pinsight-compare-probe-{}", std::process::id()));
        writable(&probe).map_err(|e| {
            CliError::usage(format!(
                "cannot write the journal in the current directory: {e}; use --journal FILE"
            ))
        })?;
    }
    Ok(())
}

/// Why `path` cannot be written (as pinsight_lifecycle::output writes:
/// a temporary file in its directory renamed into place), if it cannot.
/// Nothing is left behind; an existing file or link is not touched.
pub(crate) fn writable(path: &Path) -> Result<(), String> {
    pinsight_lifecycle::output::check(path).map_err(|e| e.reason())
}

/// A fresh seed (recorded in the journal, so any run order can be replayed).
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64 ^ d.as_secs());
    (nanos ^ (u64::from(std::process::id()) << 16)) % 1_000_000_000
}

/// Why the experiment stopped, with the shell's exit code for a program
/// that cannot be started.
pub(crate) fn experiment_error(e: ExperimentError) -> CliError {
    match e {
        ExperimentError::Prepare { run, source } => {
            CliError::runtime(format!("--prepare failed before run {run}: {source}"))
        }
        ExperimentError::Run(r) => CliError {
            code: r.exit_code(),
            message: r.to_string(),
        },
        e => CliError::runtime(e.to_string()),
    }
}

/// Advice worded for this command line: it names the flags.
fn advice(a: Advice) -> String {
    match a {
        Advice::WarmUp => "; consider warm-up runs (--warmup)".into(),
        Advice::MoreRuns { at_least } => format!(": use --runs {at_least} or more"),
        Advice::RunsForWelch { at_least } => {
            format!("; --runs {at_least} or more also allows Welch's t-test on symmetric runs")
        }
        Advice::IgnoreFailures => " (use --ignore-failure to go on regardless)".into(),
        Advice::UseMetric { preset: Some(p) } => {
            format!("; compare the program's own result: --metric {p}")
        }
        Advice::UseMetric { preset: None } => {
            "; compare the program's own result: --metric NAME=REGEX (see --help)".into()
        }
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
fn resume_command(args: &Args, journal: &Path) -> String {
    let mut parts = vec!["pinsight".to_string(), "compare".into(), "--resume".into()];
    parts.push(shell_quote(&journal.display().to_string()));
    if args.ignore_failure {
        parts.push("--ignore-failure".into());
    }
    if args.show_output {
        parts.push("--show-output".into());
    }
    if let Some(t) = args.disturbance_threshold {
        parts.push(format!("--disturbance-threshold={}%", t * 100.0));
    }
    if let Some(n) = args.rerun_disturbed {
        parts.push(format!("--rerun-disturbed={n}"));
    }
    parts.extend(args.export.resume_words());
    parts.join(" ")
}

/// Prints each run's kept output under a label naming arm and run
/// (`--show-output`), around the progress bar.
struct ShowOutput {
    printer: pinsight_render::progress::Printer,
    show: bool,
}

impl ShowOutput {
    fn output_of(&mut self, label: &str, text: &str) {
        if self.show {
            // On stderr, so a --json report on stdout stays parseable.
            self.printer.print(|| {
                eprintln!("── pinsight: output of {label} ──");
                eprint!("{text}");
                if !text.is_empty() && !text.ends_with('\n') {
                    eprintln!();
                }
            });
        }
    }
}

impl pinsight_compare::Gate for ShowOutput {
    fn output(&mut self, label: &str, _line: &pinsight_compare::RunLine, text: &str) {
        self.output_of(label, text);
    }

    fn prepare_output(&mut self, label: &str, text: &str) {
        self.output_of(label, text);
    }
}

/// What discovery must read beyond the CPUs: memory details only for a
/// memory policy (`--mem`, or an arm's `+mem:`; a resumed experiment's
/// arms carry theirs in their names, so everything then), devices only
/// for `--near`, the caches only when an arm's policy orders CPUs by them
/// ([`pinsight_plan::Policy::uses_caches`]; `--slice` and a policy that
/// does not parse read them, the error coming from the planner). The
/// kinds always: the journal's machine identity names them.
fn needs(args: &Args, policies: &[String], resumed: bool) -> pinsight_topology::Needs {
    let arm_mem = policies.iter().any(|p| p.contains("+mem:"));
    let caches = resumed
        || args.slice.is_some()
        || pinsight_compare::setup::parse_policies(policies)
            .map_or(true, |ps| ps.iter().any(|(_, p, _)| p.uses_caches()));
    pinsight_topology::Needs {
        devices: args.near.is_some() || resumed,
        memory: args.mem.is_some() || arm_mem || resumed,
        caches,
        kinds: true,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_policies;

    #[test]
    fn policy_lists_keep_cpu_lists_whole() {
        assert_eq!(
            parse_policies("os,cpus:1,0,p-pinned").unwrap(),
            vec!["os", "cpus:1,0", "p-pinned"]
        );
        assert_eq!(
            parse_policies("cpus-set:0x00000001,0x00000000,cpus:0-3:2,8").unwrap(),
            vec!["cpus-set:0x00000001,0x00000000", "cpus:0-3:2,8"]
        );
        assert_eq!(parse_policies("os, p-set").unwrap(), vec!["os", "p-set"]);
        assert!(parse_policies("os,,p-set")
            .unwrap_err()
            .contains("empty policy"));
        // A leading number is not a policy: it stays an item and the
        // planner names it.
        assert_eq!(parse_policies("1,os").unwrap(), vec!["1", "os"]);
    }
}
