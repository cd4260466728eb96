//! `pinsight pin PID POLICY`: apply a plan to a running process, thread by
//! thread (TID order, or by name with `--threads-by-name`); `--qemu` pins
//! QEMU vCPU n to place n and the other QEMU threads to the rest.

use super::plan_args::{make_request, plan_error, PlanArgs};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_launch::pin::{plan_and_pin, PinError, PinOptions, ThreadOrder};
use pinsight_launch::view::pin as view;
use pinsight_plan::Policy;
use pinsight_sys::FsRoot;

/// Re-pin a running process's threads according to a plan.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  # thread i (TID order) -> P-core place i
  pinsight pin 4242 p-pinned
  # vCPU n -> place n, emulator threads elsewhere
  pinsight pin $(pgrep -f qemu) p-pinned --qemu
  # show before/after masks, change nothing
  pinsight pin 4242 cpus-set:0-7 --dry-run

Without --threads the plan is made for as many threads as the process has (vCPUs with --qemu), \
or for every CPU of the policy's set when that is fewer (places are then reused round robin).

Per-CPU kernel threads (ksoftirqd/N, migration/N, cpuhp/N: flag PF_NO_SETAFFINITY) cannot be \
moved: the kernel answers EINVAL, and each such thread is reported, by --dry-run too.

Exit status: 0 when every thread was handled, 1 when the process is missing, exits midway, \
or a thread could not (with --dry-run: would not) be changed.")]
pub struct Args {
    /// The running process.
    #[arg(value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: i32,
    /// Placement policy (as for `pinsight run`).
    #[arg(value_name = "POLICY")]
    pub policy: Policy,
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Give places in order of thread name, then TID (default: TID order).
    #[arg(long)]
    pub threads_by_name: bool,
    /// Treat the process as QEMU: vCPU threads ("CPU n/KVM", "CPU n/TCG") get place n, other
    /// threads the rest of the process mask.
    #[arg(long)]
    pub qemu: bool,
    /// Show what would change, and which threads the kernel would refuse to
    /// move; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// The library's errors; those about the plan name the flag to change.
fn pin_error(e: PinError) -> CliError {
    match e {
        PinError::Plan(a) => CliError::usage(match a.threads_needed() {
            Some(n) => format!("--qemu: {a}; plan with --threads {n}"),
            None => format!("--qemu: {a}"),
        }),
        PinError::Planner(p) => plan_error(p),
        PinError::MemoryPolicy { ref spec } => CliError::usage(format!(
            "--mem {spec}: {e}; start the program with `pinsight run --mem {spec}`"
        )),
        other => CliError::runtime(other.to_string()),
    }
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    g.require_live("'pin' applies a plan", "use `pinsight plan` to plan for it")?;
    let request = make_request(&args.policy, &args.plan)?;
    let topo = g.topology_with(args.plan.needs())?;
    let opts = PinOptions {
        order: if args.threads_by_name {
            ThreadOrder::Name
        } else {
            ThreadOrder::Tid
        },
        qemu: args.qemu,
        dry_run: args.dry_run,
    };
    let (plan, report) =
        plan_and_pin(&FsRoot::live(), args.pid, &topo, request, &opts).map_err(pin_error)?;
    g.print_json_or(&report, || view::table(&report))?;
    if !g.json && !g.quiet {
        eprint!("{}", view::notes(&report, &plan));
    }
    match view::failure(&report) {
        Some(why) => Err(CliError::runtime(why)),
        None => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::plan_args::test_cli;

    /// The flags as `pinsight pin` parses them.
    fn parse(argv: &[&str]) -> Result<test_cli::Cli<Args>, clap::Error> {
        test_cli::parse("pin", argv)
    }

    #[test]
    fn flags_parse() {
        let c = parse(&[
            "42",
            "cpus:0",
            "--qemu",
            "--threads-by-name",
            "--dry-run",
            "-t",
            "1",
        ])
        .unwrap();
        assert_eq!(c.args.pid, 42);
        assert!(c.args.qemu && c.args.threads_by_name && c.args.dry_run);
        assert_eq!(c.args.plan.threads, Some(1));
        assert_eq!(parse(&["notapid", "compact"]).unwrap_err().exit_code(), 2);
        assert_eq!(parse(&["1", "bogus"]).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn missing_pid_is_a_runtime_error_naming_it() {
        let c = parse(&["-q", "999999999", "compact"]).unwrap();
        let e = run(c.args, &c.globals).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (1, "no process with PID 999999999")
        );
    }
}
