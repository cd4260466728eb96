//! `pinsight tune`: how many threads on which kinds of core, fitted from a
//! handful of runs with the asymmetric Amdahl models (Adnan, Array 19,
//! 2023, eqs. 3–6).
//!
//! Two ways in: `--from FILE` fits runs measured elsewhere and runs
//! nothing ([`from_file`]); `-- CMD` runs the design live ([`live_runs`],
//! the one seam the live runner fills). Both end in [`finish`]: analyse,
//! the recommendation in every dialect `plan` speaks, text or JSON. The
//! model is crate `pinsight-tune-model`, the words `pinsight-render`.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_compare as compare;
use pinsight_compare::experiment::Outcome as RunOutcome;
use pinsight_model::Topology;
use pinsight_plan::tune::TuneLayout;
use pinsight_plan::{plan, render, Format, Policy, Request};
use pinsight_render::tune::{self as view, Dialect, TuneView};
use pinsight_tune_model::{
    analyse_with, design, parse_runs, FitError, FitOptions, Goal, Machine, Observation, TuneReport,
};
use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

const AFTER_HELP: &str = "\
What tune does: runs CMD at a small design of configurations (P-cores, E-cores, SMT siblings used: 1P, 1E, all P, all E, all P + all E, halves, with and without SMT; on one kind: 1 core, half, all, all with SMT), --runs times each, fits two models, predicts every configuration the machine allows, runs the best two it did not measure (--validate) to check the prediction, and recommends one in plain words and in every dialect `plan` speaks (OMP_NUM_THREADS + OMP_PLACES, KMP_HW_SUBSET, taskset, a pinsight run line).

Models (seed \"work-stealing-on-asymmetric-multicore\"), T1 = time on one P-core, f = parallel fraction, sf = P-core speed / E-core speed, smt_gain = what an SMT sibling adds (fraction of its core), contention c = time each core beyond the first adds, as a share of T1 (the coherency term of Gunther's Universal Scalability Law: a slowdown beyond Amdahl's law):
  dynamic  work-stealing: T = T1 (1 - f + f sf/(sf P + E)); cores add their
           speeds
  static   equal split: the slowest thread paces the run; E-cores help only when
           E > P (sf - 1)
Both are fitted on log time, with and without contention, each to its global optimum (T1, f and c solved exactly for every sf and smt_gain, which are searched over their whole range: 0 <= f <= 1, 1 <= sf <= 16, 0 <= smt_gain <= 1); the lowest AICc wins. A parameter the runs do not identify is held and said so; one at a bound is marked. Intervals: 95% bootstrap. On a machine of one kind sf is held at 1 and tune chooses the thread count and SMT only. With --kinds the declared kinds count.

Trust: configurations beyond what the runs used (more P-cores, E-cores or SMT siblings than any run) are marked extrapolated and not recommended unless --extrapolate. When R² is below 0.8, the residual error exceeds 3x the run-to-run spread, an equally good model recommends differently, a measured configuration beats the model's pick beyond the noise, or a fitted parameter sits at a bound of its range (sf 1 or 16, smt_gain 0 or 1, f 0 or 1) that the runs do not bracket (they fit as well or better past it: caveat at_bound), tune says why and recommends the best measured configuration.

--from FILE fits runs measured elsewhere (CSV p,e,smt,time_s[,energy_j], one row per run, # comments) and runs nothing. The machine it predicts for, named in the output: --machine 6P+8E+smt (N P-cores, M E-cores, smt = 1 sibling per P-core, smtN = N), --machine live (this machine), a recorded one (--fsroot, --hwloc-xml, --kinds), else the one the runs imply (the largest P, E and SMT counts they used); never this machine unless asked. Runs at configurations the machine does not allow are fitted, listed as a warning (outside_machine in JSON), and never recommended. --goal energy|edp needs the energy_j column (energy = fitted power x time; EDP = energy x time).

JSON (--json): goal, machine {p_cores, e_cores, smt_per_p_core, smt_per_e_core}, one_kind, model (\"dynamic\"|\"static\"), contention_term, params {t1, f, sf, smt_gain, contention: {value, ci [lo, hi], status, bound}}, power (or null), fit {rse, r2, runs, configs, objective, spread, candidates [{model, contention, k, rss, aicc, theta, condition}]}, recommended_by (\"model\"|\"best_measured\"), caveats [{kind, ...}], extrapolate, span {p, e, smt}, recommended and runner_up {p, e, smt, threads, predicted_s, ci, measured_s, runs, energy_j, edp, extrapolated}, gap, evidence {other_kind, smt: {change, config, cost}}, predictions [one per configuration], validation [{p, e, smt, predicted_s, ci, measured_s, runs, error}], outside_machine, design_runs, validation_runs, machine_words, notes, dialects [{name, text | error}].

Live runs: the design journal is pinsight-tune-STAMP.jsonl (or --journal), the validation runs go to STAMP.validate.jsonl beside it; --resume FILE (either one) continues an interrupted or budget-cut tune and gives the same answer.

Exit status: 0 done; 1 runtime error (an energy goal without RAPL); 2 usage (bad CSV line, unknown goal, --from with a command, too few configurations, energy goal without energy_j); 126/127 CMD cannot run; 128+N stopped by signal N (the journal is kept: --resume).

Examples:
  pinsight tune -- ./my-omp-app input.dat
  pinsight tune --from runs.csv --machine 6P+8E+smt
  pinsight tune --from runs.csv --fsroot recorded/ --goal edp --json";

/// How many threads on which core kinds: fit the asymmetric Amdahl models
/// to a few runs and recommend a configuration.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
// What to tune: a program, a journal to continue, or runs measured
// elsewhere; exactly one.
#[command(group(clap::ArgGroup::new("what").required(true).args(["from", "resume", "command"])))]
pub struct Args {
    /// What to minimise: time, energy or edp (energy × time; energy needs RAPL or energy_j).
    #[arg(long, value_name = "GOAL", default_value = "time", value_parser = parse_goal)]
    pub goal: Goal,
    /// Runs per design configuration [default: 3].
    #[arg(long, short = 'r', value_name = "N", value_parser = crate::values::runs)]
    pub runs: Option<usize>,
    /// Warm-up runs per configuration, not analysed [default: 1].
    #[arg(long, short = 'w', value_name = "N", value_parser = crate::values::warmup)]
    pub warmup: Option<usize>,
    /// Stop starting runs after this long (e.g. 10m); what ran is fitted.
    #[arg(long, value_name = "DURATION", value_parser = crate::values::positive_duration)]
    pub budget: Option<Duration>,
    /// Best predicted configurations not in the design to run as a check [default: 2].
    #[arg(long, value_name = "N", value_parser = crate::values::validate)]
    pub validate: Option<usize>,
    /// Pin thread i to the i-th CPU (policy cpus:LIST) instead of letting threads float (cpus-set:LIST).
    #[arg(long)]
    pub pinned: bool,
    /// Seed of the run order and of the bootstrap [default: 12 for the bootstrap].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Optimise a figure the program prints instead of wall time (--metric of compare:
    /// NAME=REGEX[,unit=U][,better=higher|lower], NAME=json:PATH or a preset; a preset's
    /// first figure); a higher-is-better rate r is fitted as the time-like cost 1/r.
    // One occurrence (a preset may give several figures: its first counts);
    // the value type is compare's, a list per --metric.
    #[arg(long, value_name = "SPEC", value_parser = crate::values::metric, conflicts_with_all = ["from", "resume"])]
    pub metric: Option<Vec<Vec<pinsight_compare::program_metric::MetricSpec>>>,
    /// A run is disturbed when other work (or the hypervisor) took more than this share of one
    /// of its CPUs, from /proc/stat: a percentage (5%) or a fraction [default: 5%]; the notes
    /// name disturbed runs.
    #[arg(long, value_name = "SHARE", value_parser = crate::values::share, conflicts_with = "from")]
    pub disturbance_threshold: Option<f64>,
    /// Run a disturbed run again, up to N times; every attempt stays in the journal and the
    /// last one is fitted; --resume counts the journal's earlier attempts [default: 0].
    #[arg(long, value_name = "N", value_parser = crate::values::reruns, conflicts_with = "from")]
    pub rerun_disturbed: Option<usize>,
    /// Journal file of the live runs.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub journal: Option<PathBuf>,
    /// Continue an interrupted tune from its journal (its own command, runs, warm-ups, seed and
    /// placement).
    #[arg(long, value_name = "JOURNAL", conflicts_with_all = ["runs", "warmup", "seed", "pinned"])]
    pub resume: Option<PathBuf>,
    /// Fit runs measured elsewhere (CSV p,e,smt,time_s[,energy_j]); runs nothing.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["runs", "warmup", "budget", "validate", "journal", "resume"])]
    pub from: Option<PathBuf>,
    /// With --from: the machine to predict for (6P+8E, 6P+8E+smt, 8P+smt, or live for this
    /// one) [default: a recorded topology if --fsroot, --hwloc-xml or --kinds is given, else
    /// inferred from the runs: the largest P, E and SMT counts they used].
    // clap lets a requirement go unmet when it conflicts with a flag given
    // (--from with --resume or COMMAND): those are declared here too.
    #[arg(long, value_name = "SPEC", requires = "from", value_parser = crate::values::tune_machine,
          conflicts_with_all = ["fsroot", "hwloc_xml", "kinds", "resume", "command"])]
    pub machine: Option<crate::values::TuneMachine>,
    /// Let the recommendation be a configuration predicted by extrapolation (more P-cores,
    /// E-cores or SMT siblings than any run used); marked extrapolated either way.
    #[arg(long)]
    pub extrapolate: bool,
    /// List every configuration, not only the measured ones, the best 5 and the runner-up.
    #[arg(long)]
    pub all: bool,
    /// The program to tune and its arguments (after `--`). Threads: OMP_NUM_THREADS etc.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

fn parse_goal(s: &str) -> Result<Goal, String> {
    s.parse::<Goal>().map_err(|e| e.to_string())
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    // The parser took exactly one of --from, --resume and COMMAND, and
    // refused the flags that do not go with --from or --resume.
    if let Some(path) = &args.from {
        return from_file(&args, g, path);
    }
    // A simulated tune (test only) runs nothing, so it may plan a recorded
    // machine; a live one runs programs here and refuses another machine.
    let simulated = std::env::var_os(TEST_SIM).is_some();
    if !simulated {
        g.require_live(
            "tune runs programs",
            "use --from RUNS.csv to fit runs for a recorded machine",
        )?;
    }
    live(&args, g)
}

/// TEST ONLY, deliberately not in `--help`: `PINSIGHT_TEST_TUNE_SIM=SPEC`
/// (`model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1`, see
/// `pinsight_tune::sim`) runs nothing and journals times computed from that
/// model for each configuration: hyperfine's mock-executor idea, so the
/// whole command (design, journal, resume, validation, words) is tested
/// deterministically.
const TEST_SIM: &str = "PINSIGHT_TEST_TUNE_SIM";

/// The live path: run the design (and then the validation configurations)
/// through compare's machinery, crate `pinsight-tune`, and analyse.
fn live(args: &Args, g: &Globals) -> CmdResult {
    use pinsight_tune::live::{self, LiveRequest, Start};
    compare::interrupt::install().map_err(|e| CliError::runtime(e.to_string()))?;
    let fs = pinsight_measure::measurement_root()?;
    let executor = match std::env::var(TEST_SIM) {
        Ok(spec) => pinsight_tune::ExecutorKind::Simulated(
            spec.parse()
                .map_err(|e| CliError::usage(format!("{TEST_SIM}: {e}")))?,
        ),
        Err(_) => pinsight_tune::ExecutorKind::Live,
    };
    let topo = g.topology()?;
    let start = match &args.resume {
        Some(path) => Start::Resume(path.clone()),
        None => Start::New {
            command: args
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            runs: args.runs,
            warmup: args.warmup,
            seed: args.seed,
            pinned: args.pinned,
            journal: args.journal.clone(),
            metric: args
                .metric
                .as_ref()
                .and_then(|m| m.concat().into_iter().find(|x| !x.optional)),
        },
    };
    let request = LiveRequest {
        start,
        budget: args.budget,
        validate: args.validate,
        goal: args.goal,
        executor,
        disturbance_threshold: args.disturbance_threshold,
        rerun_disturbed: args.rerun_disturbed,
    };
    let opened = live::open(request, &topo, fs).map_err(crate::errors::tune_live_error)?;
    let session = opened.session;
    let layout = session.layout().clone();
    announce(&session, g);
    let finished = session.run(&mut crate::cli::progress(g));
    let f = finished.map_err(crate::errors::tune_error)?;
    if let Some(code) = stopped(args, &f)? {
        return Ok(code);
    }
    let code = finish(
        args,
        g,
        &f.design_runs,
        &f.validation_runs,
        &layout.machine,
        Some((&topo, &layout)),
        layout.describe(),
        f.notes_all(),
        "the live runs",
        (opened.pinned, &opened.command_line),
    );
    resume_hint(&f);
    code
}

/// The journal's warnings, its path and the design, on stderr.
fn announce(session: &pinsight_tune::TuneSession<'_>, g: &Globals) {
    for w in session.journal_warnings() {
        let path = session.journal_path().display();
        eprintln!("pinsight: warning: journal {path}: {w}");
    }
    if !g.quiet {
        eprintln!("pinsight: journal: {}", session.journal_path().display());
        eprintln!(
            "{}",
            pinsight_render::term::wrap80(&format!(
                "pinsight: tuning on {}: {} configurations ({})",
                session.layout().describe(),
                session.design().len(),
                session
                    .design()
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        );
    }
}

/// The line that continues an unfinished tune, on stderr.
fn resume_hint(f: &pinsight_tune::Finished) {
    if let Some(p) = f.resume() {
        eprintln!(
            "pinsight: {} design and {} validation runs are journaled in {}; continue with:\n  pinsight tune --resume {}",
            f.design_runs.len(),
            f.validation_runs.len(),
            p.display(),
            pinsight_lifecycle::interrupt::shell_quote(&p.display().to_string())
        );
    }
}

/// How a tune that did not end well ends: the warnings of the cleanup,
/// then `Some(exit code)` or an error when the runs stopped short or lack
/// the energy the goal needs; `None` to analyse.
fn stopped(args: &Args, f: &pinsight_tune::Finished) -> Result<Option<i32>, CliError> {
    if f.cleanup_late {
        eprintln!("pinsight: warning: the signal cleanup did not report back within 5 s");
    }
    if let Some(e) = &f.restore_failed {
        eprintln!("pinsight: warning: {e}");
    }
    if let pinsight_tune::Energy::Unavailable { reason } = &f.energy {
        if args.goal.needs_energy() {
            resume_hint(f);
            return Err(CliError::runtime(format!(
                "--goal {}: some runs have no energy ({reason})",
                args.goal
            )));
        }
    }
    match &f.outcome {
        RunOutcome::Complete => Ok(None),
        RunOutcome::Interrupted => {
            let sig = f.signal.unwrap_or_else(compare::interrupt::signal);
            eprintln!("pinsight: interrupted: runs stopped, machine restored, journal intact");
            resume_hint(f);
            compare::interrupt::main_finished();
            Ok(Some(pinsight_lifecycle::exit::signal_code(sig)))
        }
        RunOutcome::StoppedOnFailure { why, .. } => {
            eprintln!("pinsight: error: stopped: {why}");
            resume_hint(f);
            Ok(Some(1))
        }
        RunOutcome::Error(e) => {
            resume_hint(f);
            Err(CliError::runtime(e.to_string()))
        }
    }
}

fn layout_of(topo: &Topology) -> Result<TuneLayout, CliError> {
    TuneLayout::new(topo, &topo.usable()).map_err(|e| CliError::runtime(e.to_string()))
}

fn from_file(args: &Args, g: &Globals, path: &std::path::Path) -> CmdResult {
    let name = format!("--from '{}'", path.display());
    let text = crate::errors::read_input("--from", path, 16 << 20)?;
    let runs = parse_runs(&text).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
    if args.goal.needs_energy() && !runs.iter().any(|o| o.energy_j.is_some()) {
        return Err(CliError::usage(format!(
            "{name}: goal {} needs the energy_j column (joules per run), which the file lacks; use --goal time",
            args.goal
        )));
    }
    use crate::values::TuneMachine;
    let recorded = g.fsroot.is_some() || g.hwloc_xml.is_some() || g.kinds.is_some();
    let declared = match &args.machine {
        Some(TuneMachine::Declared(spec)) => Some((
            spec.for_tune()
                .map_err(|e| CliError::usage(format!("--machine {e}")))?,
            "machine declared by --machine: no topology, so no placement lines (give --fsroot or --hwloc-xml for them)".to_owned(),
            "--machine ",
        )),
        Some(TuneMachine::Live) => None,
        None if recorded => None,
        None => {
            // Never this machine unless asked: the runs name the machine.
            let m = Machine::spanned(&runs).ok_or_else(|| CliError::usage(format!("{name}: no runs")))?;
            Some((
                m,
                format!("machine inferred from the runs (the largest P, E and SMT counts they used): {m}; --machine SPEC or --machine live to predict for another"),
                "inferred from the runs: ",
            ))
        }
    };
    if let Some((machine, note, how)) = declared {
        return finish(
            args,
            g,
            &runs,
            &[],
            &machine,
            None,
            machine_words(&machine, how),
            vec![note],
            &name,
            (args.pinned, "CMD"),
        );
    }
    let topo = g.topology()?;
    let layout = layout_of(&topo)?;
    finish(
        args,
        g,
        &runs,
        &[],
        &layout.machine,
        Some((&topo, &layout)),
        layout.describe(),
        layout.notes.clone(),
        &name,
        (args.pinned, "CMD"),
    )
}

/// The machine in words, and where it came from (`how`).
fn machine_words(m: &Machine, how: &str) -> String {
    let smt = match m.smt_per_p_core {
        0 => "no SMT".to_owned(),
        1 => "1 SMT sibling per P-core".to_owned(),
        n => format!("{n} SMT siblings per P-core"),
    };
    if m.one_kind() {
        format!("{} cores (one kind), {smt} ({how}{m})", m.p_cores)
    } else {
        format!("{}P+{}E, {smt} ({how}{m})", m.p_cores, m.e_cores)
    }
}

/// The JSON of `tune`: the report and what the text shows besides it.
#[derive(Serialize)]
struct Output<'a> {
    #[serde(flatten)]
    report: &'a TuneReport,
    machine_words: &'a str,
    notes: &'a [String],
    dialects: Vec<DialectJson>,
}

#[derive(Serialize)]
struct DialectJson {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn fit_error(e: FitError, source: &str, machine: &Machine) -> CliError {
    match e {
        FitError::NotIdentifiable { .. } | FitError::NoRuns { .. } => {
            let d: Vec<String> = design(machine).iter().map(ToString::to_string).collect();
            CliError::usage(format!(
                "{source}: {e}; the design for this machine runs {}",
                d.join(", ")
            ))
        }
        FitError::NoConfiguration => CliError::runtime(format!("{source}: {e}")),
        _ => CliError::usage(format!("{source}: {e}")),
    }
}

#[allow(clippy::too_many_arguments)]
fn finish(
    args: &Args,
    g: &Globals,
    design_runs: &[Observation],
    validation: &[Observation],
    machine: &Machine,
    placed: Option<(&Topology, &TuneLayout)>,
    machine_text: String,
    notes: Vec<String>,
    source: &str,
    run_as: (bool, &str),
) -> CmdResult {
    let opts = FitOptions {
        bootstrap: 200,
        seed: args.seed.unwrap_or(FitOptions::default().seed),
    };
    let report = analyse_with(
        design_runs,
        validation,
        machine,
        args.goal,
        opts,
        args.extrapolate,
    )
    .map_err(|e| fit_error(e, source, machine))?;
    let dialects = match placed {
        Some((topo, layout)) => dialects(&report, topo, layout, run_as.0, run_as.1),
        None => Vec::new(),
    };
    if g.json {
        let out = Output {
            report: &report,
            machine_words: &machine_text,
            notes: &notes,
            dialects: dialects
                .iter()
                .map(|d| DialectJson {
                    name: d.name.clone(),
                    text: d.text.as_ref().ok().cloned(),
                    error: d.text.as_ref().err().cloned(),
                })
                .collect(),
        };
        g.print_json(&out)?;
        return Ok(0);
    }
    let v = TuneView {
        machine: machine_text,
        notes,
        all: args.all,
        top: 5,
        dialects,
        width: pinsight_render::compare::layout::effective_width(
            pinsight_render::terminal_columns(),
        )
        .min(80),
    };
    print!("{}", view::text(&report, &v));
    Ok(0)
}

/// The recommendation planned and rendered in each dialect: OpenMP
/// (OMP_NUM_THREADS + OMP_PLACES), KMP_HW_SUBSET, taskset, and a pinsight
/// run line; where a dialect cannot express it, the planner's reason.
fn dialects(
    r: &TuneReport,
    topo: &Topology,
    layout: &TuneLayout,
    pinned: bool,
    cmd: &str,
) -> Vec<Dialect> {
    let c = r.recommended.config();
    let threads = c.threads() as usize;
    let policy_text = match layout.policy(c, pinned) {
        Ok(p) => p,
        Err(e) => {
            return vec![Dialect {
                name: "pinsight".into(),
                text: Err(e.to_string()),
            }]
        }
    };
    let planned = policy_text
        .parse::<Policy>()
        .map_err(|e| e.to_string())
        .and_then(|p| {
            let req = Request {
                threads: Some(threads),
                ..Request::new(p)
            };
            plan(topo, &req).map_err(|e| e.to_string())
        });
    let mut out = Vec::new();
    for (name, format) in [
        ("omp-places", Format::OmpPlaces),
        ("kmp-hw-subset", Format::KmpHwSubset),
        ("taskset", Format::Taskset),
    ] {
        if format == Format::KmpHwSubset {
            // The planner says KMP_HW_SUBSET for whole kinds only; the
            // layout says it for a count of cores of each kind.
            out.push(Dialect {
                name: name.into(),
                text: layout
                    .kmp_hw_subset(c)
                    .map(|v| {
                        format!("export OMP_NUM_THREADS='{threads}'\nexport KMP_HW_SUBSET='{v}'")
                    })
                    .map_err(|e| e.to_string()),
            });
            continue;
        }
        let text = match &planned {
            Ok(p) => render(p, topo, format)
                .map(|r| {
                    let t = r.text.trim_end().to_owned();
                    if format == Format::Taskset {
                        format!("{t} {cmd}")
                    } else {
                        t
                    }
                })
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        };
        out.push(Dialect {
            name: name.into(),
            text,
        });
    }
    out.push(Dialect {
        name: "pinsight".into(),
        text: Ok(format!(
            "pinsight run {policy_text} --threads {threads} -- {cmd}"
        )),
    });
    out
}
