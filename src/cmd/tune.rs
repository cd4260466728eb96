//! `pinsight tune`: how many threads on which kinds of core, fitted from a
//! handful of runs with the asymmetric Amdahl models (Adnan, Array 19,
//! 2023, eqs. 3–6).
//!
//! Two ways in: `--from FILE` fits runs measured elsewhere and runs
//! nothing ([`from_file`]); `-- CMD` runs the design live ([`live`],
//! through crate `pinsight-tune`). Both end in [`finish`]: the analysis
//! and the recommendation in every dialect `plan` speaks
//! (`pinsight_tune::analysis`), as JSON or as text (`pinsight_tune::view`).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_compare as compare;
use pinsight_tune::analysis::{self, Analysis, AnalysisError, Answer, FileMachine, LiveEnd};
use pinsight_tune::live;
use pinsight_tune::view::{self, output as tune_output};
use pinsight_tune_model::{choose_machine, parse_runs, Goal, MachineChoice, MachineSource};
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
    let simulated = std::env::var_os(pinsight_tune::TEST_SIM).is_some();
    if !simulated {
        g.require_live(
            "tune runs programs",
            "use --from RUNS.csv to fit runs for a recorded machine",
        )?;
    }
    live(&args, g)
}

/// The live path: run the design (and then the validation configurations)
/// through compare's machinery, crate `pinsight-tune`, and analyse.
fn live(args: &Args, g: &Globals) -> CmdResult {
    compare::interrupt::install().map_err(|e| CliError::runtime(e.to_string()))?;
    let fs = pinsight_measure::measurement_root()?;
    let live_request = live_request(args)?;
    let topo = g.topology()?;
    let opened = live::open(live_request, &topo, fs).map_err(crate::errors::tune_live_error)?;
    eprint!("{}", view::announcement(&opened.session, g.quiet));
    let ran = opened.run(&mut crate::cli::progress(g), &answer(args));
    let outcome = ran.map_err(crate::errors::tune_error)?;
    eprint!("{}", view::live_ended(&outcome));
    let interrupted = matches!(outcome.end, LiveEnd::Interrupted { .. });
    let code = match outcome.end {
        LiveEnd::Answer(a) => show(args, g, *a, "the live runs"),
        LiveEnd::NoEnergy { reason } => Err(CliError::runtime(format!(
            "--goal {}: some runs have no energy ({reason})",
            args.goal
        ))),
        LiveEnd::Interrupted { signal } => Ok(pinsight_lifecycle::exit::signal_code(signal)),
        LiveEnd::Stopped { .. } => Ok(1),
        LiveEnd::Error(e) => Err(CliError::runtime(e)),
    };
    if let Some((journal, design, validation)) = outcome.resume {
        let quoted = pinsight_lifecycle::interrupt::shell_quote(&journal.display().to_string());
        eprintln!(
            "pinsight: {design} design and {validation} validation runs are journaled in {}; continue with:\n  pinsight tune --resume {quoted}",
            journal.display(),
        );
    }
    if interrupted {
        compare::interrupt::main_finished();
    }
    code
}

/// The live runner's request from the flags: a new tune or a resumed one,
/// run live or simulated ([`pinsight_tune::TEST_SIM`]).
fn live_request(args: &Args) -> Result<pinsight_tune::live::LiveRequest, CliError> {
    use pinsight_tune::live::{LiveRequest, Start};
    let executor =
        pinsight_tune::ExecutorKind::from_env().map_err(|e| CliError::usage(e.to_string()))?;
    let start = match &args.resume {
        Some(path) => Start::Resume(path.clone()),
        None => Start::New {
            command: args.command.clone(),
            runs: args.runs,
            warmup: args.warmup,
            seed: args.seed,
            pinned: args.pinned,
            journal: args.journal.clone(),
            metrics: args.metric.clone().unwrap_or_default().concat(),
        },
    };
    Ok(LiveRequest {
        start,
        budget: args.budget,
        validate: args.validate,
        goal: args.goal,
        executor,
        disturbance_threshold: args.disturbance_threshold,
        rerun_disturbed: args.rerun_disturbed,
    })
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
    let asked = crate::values::TuneMachine::asked(&args.machine)?;
    let choice = choose_machine(asked, g.recorded(), Some(&runs), None);
    let topo;
    let machine = match choice.ok_or_else(|| CliError::usage(format!("{name}: no runs")))? {
        MachineChoice::Unplaced(machine, MachineSource::Declared) => FileMachine::Unplaced {
            machine,
            how: "--machine ",
            note: "machine declared by --machine: no topology, so no placement lines (give --fsroot or --hwloc-xml for them)".to_owned(),
        },
        // Never this machine unless asked: the runs name the machine.
        MachineChoice::Unplaced(m, _) => FileMachine::Unplaced {
            machine: m,
            how: "inferred from the runs: ",
            note: format!("machine inferred from the runs (the largest P, E and SMT counts they used): {m}; --machine SPEC or --machine live to predict for another"),
        },
        MachineChoice::Topology(_) => {
            topo = g.topology()?;
            FileMachine::placed(&topo).map_err(|e| CliError::runtime(e.to_string()))?
        }
    };
    let a = analysis::analyse_runs(&runs, &machine, args.pinned, &answer(args));
    show(args, g, a, &name)
}

/// Prints the answer (JSON, or text) of the runs from `source`.
fn show(args: &Args, g: &Globals, a: Result<Analysis, AnalysisError>, source: &str) -> CmdResult {
    let a = a.map_err(|e| {
        let m = format!("{source}: {e}");
        if e.is_input() {
            CliError::usage(m)
        } else {
            CliError::runtime(m)
        }
    })?;
    if g.json {
        g.print_json(&a)?;
    } else {
        let text =
            tune_output::tune_text(&a.report, &a.machine_words, &a.notes, &a.dialects, args.all);
        print!("{text}");
    }
    Ok(0)
}

/// How the flags ask the answer.
fn answer(args: &Args) -> Answer {
    Answer {
        goal: args.goal,
        seed: args.seed,
        extrapolate: args.extrapolate,
        run_line,
    }
}

/// The pinsight line of the recommendation.
fn run_line(policy: &str, threads: usize, cmd: &str) -> String {
    format!("pinsight run {policy} --threads {threads} -- {cmd}")
}
