//! `pinsight pin PID POLICY`: apply a plan to a running process, thread by
//! thread (TID order, or by name with `--threads-by-name`); `--qemu` pins
//! QEMU vCPU n to place n and the other QEMU threads to the rest.

use super::plan_args::{make_request, parse_policy, plan_error, PlanArgs};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_launch::pin::{
    pin_process, threads_of, threads_to_plan, AssignError, Outcome, PinError, PinOptions,
    ThreadOrder, ThreadPin,
};
use pinsight_plan::{PlanError, Policy, Request};
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
    #[arg(value_name = "POLICY", value_parser = parse_policy)]
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

fn pin_error(e: PinError) -> CliError {
    match e {
        PinError::Plan(AssignError::NoVcpus) => CliError::usage(
            "--qemu: no QEMU vCPU threads (named 'CPU n/KVM' or 'CPU n/TCG') in this process",
        ),
        PinError::Plan(AssignError::VcpuWithoutPlace {
            vcpu,
            places,
            vcpus,
            needed,
        }) => CliError::usage(format!(
            "--qemu: vCPU {vcpu} has no place: the plan has {places} place(s) for {vcpus} vCPU(s); plan with --threads {needed}"
        )),
        other => CliError::runtime(other.to_string()),
    }
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    g.require_live("'pin' applies a plan", "use `pinsight plan` to plan for it")?;
    if let Some(m) = &args.plan.mem {
        return Err(CliError::usage(format!(
            "--mem {m}: pin moves the threads of a running process and cannot change its memory policy (set_mempolicy acts on the calling thread only); start the program with `pinsight run --mem {m}`"
        )));
    }
    let fs = FsRoot::live();
    let tasks = threads_of(&fs, args.pid).map_err(pin_error)?;
    let topo = g.topology_with(args.plan.needs())?;
    let plan = plan_for(&args, &tasks, &topo)?;
    let opts = PinOptions {
        order: if args.threads_by_name {
            ThreadOrder::Name
        } else {
            ThreadOrder::Tid
        },
        qemu: args.qemu,
        dry_run: args.dry_run,
    };
    let report = pin_process(&fs, args.pid, &plan, &opts).map_err(pin_error)?;
    let failed: Vec<&ThreadPin> = report
        .threads
        .iter()
        .filter(|t| matches!(t.outcome, Outcome::Failed | Outcome::WouldFail))
        .collect();
    if g.json {
        g.print_json(&report)?;
    } else {
        print_table(&report, &plan, &failed, g);
    }
    if report.process_exited {
        return Err(CliError::runtime(format!(
            "PID {} exited while being pinned; the report above is partial",
            args.pid
        )));
    }
    if !failed.is_empty() {
        return Err(CliError::runtime(pinsight_launch::view::pin::failure(
            &report, &failed,
        )));
    }
    Ok(0)
}

/// The plan for the process's threads: `--threads`, else one place per
/// thread found, else (more threads than CPUs) the policy's whole set.
fn plan_for(
    args: &Args,
    tasks: &[pinsight_launch::pin::TaskInfo],
    topo: &pinsight_model::Topology,
) -> Result<pinsight_plan::Plan, CliError> {
    let mut req = make_request(&args.policy, &args.plan)?;
    if req.threads.is_none() && req.tasks.is_none() {
        req.threads = Some(threads_to_plan(tasks, args.qemu));
    }
    Ok(match pinsight_plan::plan(topo, &req) {
        // More threads than the policy's CPUs and no --threads: plan the
        // whole set; places are reused round robin (pin_process notes it).
        Err(PlanError::TooManyThreads { .. })
            if args.plan.threads.is_none() && args.plan.tasks.is_none() =>
        {
            pinsight_plan::plan(
                topo,
                &Request {
                    threads: None,
                    ..req
                },
            )
            .map_err(plan_error)?
        }
        other => other.map_err(plan_error)?,
    })
}

/// The human table of `pin` (stdout), the notes (stderr).
fn print_table(
    report: &pinsight_launch::pin::PinReport,
    plan: &pinsight_plan::Plan,
    failed: &[&ThreadPin],
    g: &Globals,
) {
    print!("{}", pinsight_launch::view::pin::table(report, failed));
    for n in report.notes.iter().chain(plan.notes.iter()) {
        if !g.quiet {
            eprintln!("pinsight: note: {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::plan_args::test_cli;

    type Cli = test_cli::Cli<Args>;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
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
