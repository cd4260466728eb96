//! `pinsight emulate`: a hybrid machine on any machine, the CPUs of the
//! slower declared kinds slowed to their given speed.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_emulate::{Choice, EmulateError, Options, Talk, Targets};
use pinsight_lifecycle::interrupt;
use pinsight_lifecycle::program::Program;
use std::ffi::OsString;

/// How to slow the CPUs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// cpufreq caps where every slowed CPU has a policy of its own, else duty-cycle.
    Auto,
    /// scaling_max_freq caps per cpufreq policy only.
    Cpufreq,
    /// real-time duty-cycle stealers only.
    DutyCycle,
}

/// Emulate a hybrid machine: the CPUs of the slower kinds run at the speed
/// declared for them (`--kinds 0:P,1:E@0.5`: CPU 1 at half the speed of
/// CPU 0) until CMD ends, or until Ctrl-C without CMD.
///
/// Mechanisms, best first, chosen automatically and named in the output:
/// per-CPU frequency caps (cpufreq `scaling_max_freq`, where each slowed
/// CPU's policy holds only CPUs of its speed), else a duty-cycle stealer: a
/// SCHED_FIFO process pinned to each slowed CPU takes the complementary
/// share of every short period (within the real-time throttling budget).
/// The knob is calibrated by measuring a CPU-bound probe on the reference
/// (full-speed) CPU and each slowed CPU until the achieved speed is within
/// 5% of the asked one; the achieved speed and its spread are printed.
///
/// Limits: a duty-cycled CPU is slower by time share, not by
/// microarchitecture: memory- and compute-bound programs slow alike, so
/// per-program speed factors do not vary. With frequency caps,
/// memory-bound programs slow less than compute-bound ones (closer to real
/// hybrids). Under a duty-cycle emulation `pinsight speed` counts
/// descheduled time (wall time over 20 ms blocks) instead of dropping those
/// chunks. Nested pinsight commands get the declaration through
/// PINSIGHT_KINDS and the stealers through PINSIGHT_EMULATION_STEALERS
/// (CPU:PID,...; `load` and `balance` count their time as steal, not busy). Caps are restored and stealers stopped on every exit,
/// kill -9 of pinsight included. Needs root (or CAP_SYS_NICE for the
/// stealers).
///
/// One emulation at a time owns the machine: a second one is refused
/// naming the first's PID (a lock in /run). Before calibrating, the
/// measured CPUs are watched for 0.4 s: other real-time tasks allowed
/// there and hypervisor steal are named, and over 10% of a CPU the
/// emulation is refused (--force goes on). With CMD, the speeds are
/// measured again when CMD ends and a drift beyond the tolerance is
/// reported (a warning; the `end_check` JSON document with --json); the
/// exit status stays CMD's.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight emulate --kinds 0:P,1:E@0.5\n  pinsight emulate --kinds 0:P,1:E@0.5 -- pinsight compare \\\n    --policies p-pinned,e-pinned -t 1 -- pinsight workload pi\n\nWith CMD the report goes to stderr (JSON with --json) and pinsight ends with CMD's exit status; without CMD it goes to stdout and the emulation lasts until Ctrl-C (exit 130)."
)]
pub struct Args {
    /// How to slow the CPUs.
    #[arg(long, value_enum, value_name = "HOW", default_value = "auto")]
    pub mechanism: How,
    /// Calibrate even when other real-time tasks or hypervisor steal take more than
    /// 10% of a measured CPU (the calibration then tunes to the machine as it is).
    #[arg(long)]
    pub force: bool,
    /// The program to run on the emulated machine, and its arguments (after `--`).
    #[arg(value_name = "CMD", trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let (targets, opts) = request(&args, g)?;
    // One emulation at a time owns the machine (a lock in /run).
    let _owner = pinsight_emulate::own_machine().map_err(emulate_error)?;
    // A signal during calibration: the main thread stops it, puts
    // everything back and ends with 128 + N (the guard keeps the signal
    // from ending the process first).
    let _calibrating = interrupt::main_handles_exit();
    interrupt::install().map_err(|e| CliError::runtime(format!("emulate: {e}")))?;
    let mut pb = crate::cli::progress(g);
    let em =
        pinsight_emulate::start(&g.fsroot()?, &targets, &opts, &mut pb).map_err(emulate_error)?;
    if let Some(sig) = interrupt::stopped() {
        // Came as calibration ended: the restorers ran already.
        pinsight_emulate::shown::say_failures(em.stop());
        return Err(emulate_error(EmulateError::Interrupted(sig)));
    }
    for why in em.report().forced_past() {
        if !g.quiet {
            eprintln!("pinsight: warning: calibrated anyway (--force): {why}");
        }
    }
    let talk = Talk {
        json: g.json,
        quiet: g.quiet,
    };
    let exported = g.kinds.clone().unwrap_or_default();
    Ok(em.run_shown(args.command.split_first(), &exported, talk)?)
}

/// The emulation asked for: its targets and options, checked (live
/// machine, no nested emulation, every kind declared, the program
/// present) before anything is slowed.
fn request(args: &Args, g: &Globals) -> Result<(Targets, Options), CliError> {
    g.require_live("emulate slows CPUs", "")?;
    pinsight_emulate::check_not_nested().map_err(emulate_error)?;
    let spec = g.declared_kinds()?.ok_or_else(|| {
        CliError::usage(
            "emulate needs the kinds to emulate: --kinds CPULIST:NAME@SPEED,... \
             (e.g. --kinds 0:P,1:E@0.5; speeds relative to the kind at full speed)",
        )
    })?;
    // Every usable CPU declared, present and online (as every command checks).
    g.topology()?;
    let targets = Targets::of(&spec).map_err(|e| {
        CliError::usage(format!(
            "{} '{}': {e}",
            g.kinds_name(),
            g.kinds.as_deref().unwrap_or_default()
        ))
    })?;
    let opts = Options {
        choice: match args.mechanism {
            How::Auto => Choice::Auto,
            How::Cpufreq => Choice::Cpufreq,
            How::DutyCycle => Choice::DutyCycle,
        },
        force: args.force,
        ..Options::default()
    };
    // The program exists before seconds of calibration are spent.
    if let Some(program) = args.command.first() {
        Program::resolve(program)
            .and_then(|p| p.check().map(|_| ()))
            .map_err(|e| CliError {
                code: e.exit_code(),
                message: format!("emulate: {e}"),
            })?;
    }
    Ok((targets, opts))
}

/// The message and exit status of an emulation that did not start.
fn emulate_error(e: EmulateError) -> CliError {
    match e {
        EmulateError::Interrupted(sig) => CliError {
            code: pinsight_lifecycle::exit::signal_code(sig),
            message: "emulate: stopped during calibration; nothing is left slowed".into(),
        },
        e @ EmulateError::Duty(pinsight_emulate::duty::DutyError::OverBudget { .. }) => {
            CliError::usage(format!("--kinds: {e}"))
        }
        e @ EmulateError::Nested { .. } => CliError::usage(e.to_string()),
        e @ EmulateError::Contended { .. } => CliError::runtime(format!(
            "emulate: {e}; the calibration would measure them as the CPUs' speed (stop them, \
             or pass --force)"
        )),
        e => CliError::runtime(format!("emulate: {e}")),
    }
}
