//! `pinsight run [POLICY] [--threads N] -- CMD ARGS…`: run a program under a
//! placement plan and hand on its exit status. Without POLICY (`pinsight run
//! --mem bind:0 -- CMD`, as with numactl) the placement is `os`: only the
//! other options (`--mem`, `--near`) apply.
//!
//! Set policies (`p-set`, `cpus-set:…`) restrict the whole process; pinned
//! policies (`p-pinned`, `cpus:…`, `compact`, …) pin every thread the
//! program creates, in creation order, before it runs any user code (an
//! LD_PRELOAD shim around `pthread_create`, like likwid-pin), or, with
//! `--follow`, as soon as a `/proc` watcher sees it (static binaries).
//! `--report` shows where each thread actually ran, sampled from `/proc`.
//! The report goes to stderr: stdout belongs to the program.

use super::plan_args::{make_plan, rank_error, rank_request, PlanArgs};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use pinsight_launch::view::{run as view, run_json};
use pinsight_launch::{parse_skip, Mechanism, PinMain, RunError, RunOptions, RunRequest};
use pinsight_plan::slice::{restrict, RankSlice};
use pinsight_plan::{BasePolicy, Plan, Policy};
use std::ffi::OsString;
use std::time::Duration;

/// Run a program under a placement plan, pinning its threads as planned.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
What the program sees:

Set policies (os, p-set, e-set, kind-set:, cpus-set:): the plan's CPUs as its affinity mask from the first instruction (like taskset -c); threads float inside it.

Pinned policies (p-pinned, cpus:LIST, compact, ...): the program also starts with the plan's whole mask, so sched_getaffinity, nproc, omp_get_num_procs, os.sched_getaffinity, GOMAXPROCS and available_parallelism report the planned CPUs and it starts as many threads as under taskset. When it creates its first thread, the main thread moves to place 0 and each created thread starts on the next place, before it runs any code (likwid-pin's rule); threads beyond the last place wrap. --pin-main early puts the main thread on place 0 before the program starts instead (it then sees one place only). A pthread_create that fails takes no place. Processes the program forks (with or without exec) get the plan's whole mask and are not pinned thread by thread; what the program execs in place (`sh -c 'exec prog'`) is pinned afresh.

Statically linked, set-user-ID/set-group-ID or file-capability programs ignore LD_PRELOAD, and 32-bit (other ELF class or machine) programs cannot load the shim: pinsight detects them before the start and pins through the /proc watcher instead (as --follow), saying so; one executed in place by a wrapper (`sh -c 'exec ./prog32'`) is taken over by the watcher from the exec, and --report names the watcher. A plan too large for the environment (over 131072 bytes a variable, e.g. --oversubscribe -t 70000) is applied by the watcher too. Only the program and what it execs in place get the shim; the other processes it starts get an environment without it.

--mem SPEC: the program starts with that memory policy (set_mempolicy in the started process just before it executes the program, kept across exec, as numactl does; see `pinsight plan --help`); --near DEVICE: only the device's local CPUs.

Examples:
  # one P-core per thread, in creation order
  pinsight run p-pinned -- ./solver
  pinsight run scatter --mem interleave:all -- ./stream
  # pin, then show where each thread really ran
  pinsight run cpus:0,2,4 --report -- ./app
  # restrict to P-cores, threads float
  pinsight run p-set -- make -j8
  pinsight run compact --follow -- ./static-binary
  # each rank on its equal-capacity slice
  srun -n 4 pinsight run --slice p-pinned -- ./solver
  mpirun -np 2 --bind-to none \\
    pinsight run --slice compact --report-dir out -- ./app

Exit status: the program's; 127 if it cannot be found, 126 if not executable, 128+N if killed by signal N; 1 if the kernel refused a pin the plan asked for (a thread with capabilities pinsight lacks, a CPU the cgroup forbids), with the reason. Unless --no-env, OMP_NUM_THREADS, RAYON_NUM_THREADS, CILK_NWORKERS (and for set policies OMP_PLACES, OMP_PROC_BIND, GOMP_CPU_AFFINITY) are exported when not already set; a balance plan exports no thread count (its tasks are usually processes a launcher starts, and each would inherit the one count). When pinsight pins threads itself the binding variables are left out so the OpenMP runtime does not bind a second time. Options go before the program; everything from the program's name on is the program's. With --json, stdout holds only pinsight's JSON document (written when the program ends) and the program's standard output goes to stderr.")]
pub struct Args {
    /// Placement policy: os, p-set, e-set, p-pinned, e-pinned, p-first, e-first, compact, scatter,
    /// cpus:LIST, cpus-set:LIST, kind:K, kind-set:K, balance, ... (see `pinsight plan --help`).
    /// Without it (`pinsight run --mem bind:0 -- CMD`): os.
    // Kept as the word typed: clap gives the first word after a leading `--` to POLICY, and only
    // the command line tells whether it is the program's name (see `Args::resolve`).
    #[arg(value_name = "POLICY")]
    pub policy: Option<String>,
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Pin threads as a /proc watcher sees them instead of through the LD_PRELOAD shim
    /// (static binaries, runtimes that bypass pthread_create).
    #[arg(long)]
    pub follow: bool,
    /// Created threads to leave unpinned on the process mask (runtime helper threads), likwid-pin
    /// style: a hex mask (0x1 = the first created thread) or a list (0,2).
    #[arg(long, value_name = "MASK|LIST")]
    pub skip: Option<String>,
    /// Do not export OMP_NUM_THREADS, OMP_PLACES, RAYON_NUM_THREADS, ...
    #[arg(long)]
    pub no_env: bool,
    /// After the program exits, show where each thread ran (affinity and CPUs, sampled from /proc).
    #[arg(long)]
    pub report: bool,
    /// How often /proc is read: the poll of --follow for new threads, and the samples of
    /// --report [default: 1ms for --follow, 10ms for --report].
    #[arg(long, value_name = "DURATION", value_parser = crate::values::interval)]
    pub interval: Option<Duration>,
    /// When the main thread of a pinned policy moves to place 0: lazy = when the program creates its
    /// first thread (it starts with the plan's whole mask), early = before it starts.
    #[arg(long, value_name = "WHEN", default_value = "lazy", value_parser = PossibleValuesParser::new(PinMain::NAMES).try_map(|s| s.parse::<PinMain>()))]
    pub pin_main: PinMain,
    /// Print a line per pinned thread as it is pinned.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Run as one of several ranks on this node (under srun, mpirun, ...): split the CPUs this
    /// process may use into one slice per local rank (equal capacity by default, see
    /// `pinsight slice --help`) and plan POLICY inside this rank's slice.
    #[arg(long, value_name = "POLICY")]
    pub slice: Option<String>,
    #[command(flatten)]
    pub slicing: super::plan_args::SliceArgs,
    /// With --slice: also write this rank's report as JSON to DIR/<host>/rank-<N>.json
    /// (merge the ranks with `pinsight gather DIR`).
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<std::path::PathBuf>,
    /// The program to run and its arguments (after `--`, or from the first word that is not an
    /// option: an unknown option before the program is an error, never the program).
    #[arg(value_name = "CMD", trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

impl Args {
    /// The policy and the program (checked by [`options`]), given the
    /// whole command line `argv`.
    /// clap puts the first word after a leading `--` into POLICY
    /// (`pinsight run --mem bind:0 -- cat FILE`): when that word follows the
    /// first `--` and was not typed before it, it is the program's name and
    /// the policy is `os`.
    pub fn resolve(&self, argv: &[OsString]) -> Result<(Policy, Vec<OsString>), CliError> {
        let mut command = self.command.clone();
        let policy = match &self.policy {
            Some(word) if !after_dashes(argv, word) => word.parse::<Policy>().map_err(|e| {
                CliError::usage(format!("invalid value '{word}' for '<POLICY>': {e}"))
            })?,
            // No policy, or the program's name after a leading `--`.
            word => {
                command.splice(0..0, word.iter().map(OsString::from));
                Policy::new(BasePolicy::Os)
            }
        };
        Ok((policy, command))
    }
}

/// Whether `word` is the first word after the first `--` of `argv` and was
/// not typed before it. `argv[0]` is pinsight's own name, not a typed word:
/// `pinsight run -- pinsight topo` runs pinsight under the `os` policy.
fn after_dashes(argv: &[OsString], word: &str) -> bool {
    let Some(dd) = argv.iter().position(|a| a == "--") else {
        return false;
    };
    let typed = argv.get(1..dd).unwrap_or_default();
    argv.get(dd + 1).is_some_and(|a| a == word) && !typed.iter().any(|a| a == word)
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    g.require_live("'run' applies a plan", "use `pinsight plan` to plan for it")?;
    let argv: Vec<OsString> = std::env::args_os().collect();
    let (policy, command) = args.resolve(&argv)?;
    let options = options(&args, &command, g.json)?;
    // With --slice the slices are cut along the caches; the plan's notes
    // (shown with --report, --verbose, --json) include the compute-unit
    // one, read from the caches.
    let needs = if args.slice.is_some() || args.report || args.verbose || g.json {
        args.plan.needs()
    } else {
        args.plan.needs_for(&policy)
    };
    let topo = g.topology_with(needs)?;
    let (plan, slice) = plan_and_slice(&args, &argv, &policy, &topo, g)?;
    let ready = RunRequest {
        plan: &plan,
        slice: slice.as_ref(),
        report_dir: args.report_dir.as_deref(),
        export_env: !args.no_env,
        options,
    }
    .prepare(&g.fsroot()?)
    .map_err(run_error)?;
    // Plan notes are shown with the report: a plain `run` stays as quiet
    // as taskset.
    if !g.quiet && (args.report || args.verbose) {
        eprint!("{}", view::plan_notes(&plan));
    }
    let outcome = ready.run().map_err(run_error)?;
    if g.json {
        g.print_json(&run_json::document(&plan, slice.as_ref(), &outcome))?;
    } else if args.report || !g.quiet {
        let said = view::ended(&plan, slice.as_ref(), &outcome, args.report);
        eprint!("{said}");
    }
    match outcome.refusal() {
        Some(refusal) => Err(CliError::runtime(refusal)),
        None => Ok(outcome.exit_code),
    }
}

/// The launch options the flags ask for, checked before anything is
/// discovered. `json`: stdout is for pinsight's document, so the
/// program's output goes to stderr.
fn options(args: &Args, command: &[OsString], json: bool) -> Result<RunOptions, CliError> {
    let run = RunOptions::for_command(command).ok_or_else(|| {
        CliError::usage(
            "run: no program given: <CMD> is required (pinsight run [POLICY] [OPTIONS] -- <CMD> [ARGS]...)",
        )
    })?;
    let skip = args.skip.as_deref().map(parse_skip).transpose();
    let skip = skip.map_err(|e| CliError::usage(format!("invalid --skip {e}")))?;
    Ok(RunOptions {
        mechanism: if args.follow {
            Mechanism::Follow
        } else {
            Mechanism::Shim
        },
        skip: skip.unwrap_or_default(),
        report: args.report,
        verbose: args.verbose,
        pin_main: args.pin_main,
        stdout_to_stderr: json,
        ..run.with_interval(args.interval)
    })
}

/// A run that failed: the shell's exit code for a program that cannot
/// start; a report directory that cannot be used names the flag.
fn run_error(e: RunError) -> CliError {
    let message = match &e {
        RunError::ReportDir(_) => format!("--report-dir: {e}"),
        _ => e.to_string(),
    };
    CliError {
        code: e.exit_code(),
        message,
    }
}

/// The plan: for POLICY on the whole machine, or with `--slice POLICY`
/// inside this rank's slice (returned for the report).
fn plan_and_slice(
    args: &Args,
    argv: &[OsString],
    policy: &Policy,
    topo: &pinsight_model::Topology,
    g: &Globals,
) -> Result<(Plan, Option<RankSlice>), CliError> {
    let Some(word) = &args.slice else {
        if args.slicing.rule.is_some()
            || args.slicing.rank.is_some()
            || args.slicing.size.is_some()
            || args.report_dir.is_some()
        {
            return Err(CliError::usage(
                "--slice-rules, --local-rank, --local-size and --report-dir apply with --slice POLICY only",
            ));
        }
        return Ok((make_plan(policy, &args.plan, topo, g)?, None));
    };
    if args.policy.as_ref().is_some_and(|w| !after_dashes(argv, w)) {
        return Err(CliError::usage(format!(
            "give the policy once: --slice {word} plans {word} inside this rank's slice; drop the POLICY before it"
        )));
    }
    let policy = word.parse::<Policy>().map_err(|e| {
        CliError::usage(format!(
            "invalid value '{word}' for '--slice <POLICY>': {e}"
        ))
    })?;
    let request = rank_request(&args.slicing, args.plan.weights.as_ref())?;
    let mine = request.mine(topo).map_err(rank_error)?.slice;
    // --weights gave the slices' capacity; only balance also plans with it.
    let mut plan_args = args.plan.clone();
    if policy.base != BasePolicy::Balance {
        plan_args.weights = None;
    }
    let plan = make_plan(&policy, &plan_args, &restrict(topo, &mine.cpus), g)?;
    Ok((plan, Some(mine)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::plan_args::make_request;
    use crate::cmd::plan_args::test_cli;

    type Cli = test_cli::Cli<Args>;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        test_cli::parse("run", argv)
    }

    #[test]
    fn command_after_dashes_keeps_its_own_flags() {
        let c = parse(&[
            "cpus:0,1",
            "--threads",
            "2",
            "--report",
            "--",
            "prog",
            "-x",
            "--threads",
            "9",
        ])
        .unwrap();
        assert_eq!(c.args.plan.threads, Some(2));
        assert!(c.args.report);
        assert_eq!(c.args.command, vec!["prog", "-x", "--threads", "9"]);
        // Without `--`, everything from the program on is the program's.
        let c = parse(&["compact", "prog", "--report"]).unwrap();
        assert!(!c.args.report);
        assert_eq!(c.args.command, vec!["prog", "--report"]);
    }

    #[test]
    fn a_program_named_like_pinsight_itself_is_the_program() {
        let argv: Vec<OsString> = ["pinsight", "run", "--", "pinsight", "topo"]
            .iter()
            .map(OsString::from)
            .collect();
        let c = parse(&["--", "pinsight", "topo"]).unwrap();
        let (policy, command) = c.args.resolve(&argv).unwrap();
        assert_eq!(policy.to_string(), "os");
        assert_eq!(command, vec!["pinsight", "topo"]);
    }

    #[test]
    fn usage_errors_exit_2_and_name_the_input() {
        let argv = |words: &[&str]| -> Vec<OsString> {
            ["pinsight", "run"]
                .iter()
                .chain(words)
                .map(OsString::from)
                .collect()
        };
        let words = ["bogus", "--", "true"];
        let e = parse(&words)
            .unwrap()
            .args
            .resolve(&argv(&words))
            .unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("'bogus'")
                && e.message.contains("p-pinned")
                && e.message.contains("cpus:LIST"),
            "{}",
            e.message
        );
        let args = parse(&["compact"]).unwrap().args;
        let (_, command) = args.resolve(&argv(&["compact"])).unwrap();
        let e = options(&args, &command, false).unwrap_err();
        assert_eq!(e.code, 2, "a command is required");
        assert!(e.message.contains("<CMD> is required"), "{}", e.message);
        assert_eq!(
            parse(&["compact", "--threads", "x", "--", "true"])
                .unwrap_err()
                .exit_code(),
            2
        );
    }

    #[test]
    fn without_a_policy_the_placement_is_os() {
        let resolve = |words: &[&str]| {
            let argv: Vec<OsString> = ["pinsight", "--quiet", "run"]
                .iter()
                .chain(words)
                .map(OsString::from)
                .collect();
            let (p, c) = parse(words).unwrap().args.resolve(&argv).unwrap();
            (p.to_string(), c)
        };
        // As numactl: `pinsight run --mem bind:0 -- cat /proc/self/status`.
        let (p, c) = resolve(&["--mem", "bind:0", "--", "cat", "/proc/self/status"]);
        assert_eq!(
            (p.as_str(), c),
            ("os", vec!["cat".into(), "/proc/self/status".into()])
        );
        // A program named like a policy, after a leading `--`, is the program.
        let (p, c) = resolve(&["--", "compact", "x"]);
        assert_eq!((p.as_str(), c), ("os", vec!["compact".into(), "x".into()]));
        // A policy before `--` stays a policy, even when the program has its name.
        let (p, c) = resolve(&["os", "--", "os"]);
        assert_eq!((p.as_str(), c), ("os", vec![OsString::from("os")]));
        let (p, c) = resolve(&["p-set", "--", "true"]);
        assert_eq!((p.as_str(), c), ("p-set", vec![OsString::from("true")]));
        let (p, c) = resolve(&["p-set", "sh", "-c", "x", "--", "y"]);
        assert_eq!(p, "p-set");
        assert_eq!(c, ["sh", "-c", "x", "--", "y"].map(OsString::from).to_vec());
    }

    #[test]
    fn planning_flags_are_checked_like_plan() {
        let c = parse(&["compact", "--weights", "w.json", "--", "true"]).unwrap();
        let (policy, _) = c.args.resolve(&[]).unwrap();
        let e = make_request(&policy, &c.args.plan).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message
                .contains("--weights cannot be used with policy compact: it applies to the balance policy only"),
            "{}",
            e.message
        );
        assert!(parse(&["--interval", "0", "--", "true"]).is_err());
        let c = parse(&["--pin-main", "early", "--", "true"]).unwrap();
        assert_eq!(c.args.pin_main, PinMain::Early);
        assert_eq!(parse(&["--", "true"]).unwrap().args.pin_main, PinMain::Lazy);
        let e = parse(&["--pin-main", "soon", "--", "true"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("[possible values: lazy, early]"),
            "{e}"
        );
        let c = parse(&["--interval", "5ms", "--", "true"]).unwrap();
        assert_eq!(c.args.interval, Some(Duration::from_millis(5)));
    }

    #[test]
    fn recorded_machines_cannot_be_pinned_on() {
        let c = parse(&["--fsroot", "/tmp", "cpus:0", "--", "true"]).unwrap();
        let e = run(c.args, &c.globals).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("--fsroot"));
    }

    #[test]
    fn skip_and_errors_from_the_launcher() {
        let c = parse(&["-q", "cpus:0", "--skip", "0xq", "--", "true"]).unwrap();
        let e = run(c.args, &c.globals).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("--skip '0xq'"));
    }
}
