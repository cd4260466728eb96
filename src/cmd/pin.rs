//! `pinsight pin PID POLICY`: apply a plan to a running process, thread by
//! thread (TID order, or by name with `--threads-by-name`); `--qemu` pins
//! QEMU vCPU n to place n and the other QEMU threads to the rest.

use super::plan_args::{make_request, parse_policy, PlanArgs};
use super::run::require_live;
use crate::cli::{CliError, CmdResult, Globals};
use pinsight_launch::pin::{
    pin_process, threads_of, threads_to_plan, Outcome, PinError, PinOptions, ThreadOrder,
};
use pinsight_plan::{PlanError, Policy, Request};
use pinsight_topology::FsRoot;

/// Re-pin a running process's threads according to a plan.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  pinsight pin 4242 p-pinned                 thread i (TID order) -> P-core place i
  pinsight pin $(pgrep -f qemu) p-pinned --qemu   vCPU n -> place n, emulator threads elsewhere
  pinsight pin 4242 cpus-set:0-7 --dry-run    show before/after masks, change nothing

Without --threads the plan is made for as many threads as the process has (vCPUs with --qemu),
or for every CPU of the policy's set when that is fewer (places are then reused round robin).
Exit status: 0 when every thread was handled, 1 when the process is missing, exits midway,
or a thread could not be changed.")]
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
    /// Show what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn pin_error(e: PinError) -> CliError {
    match e {
        PinError::Plan(m) => CliError::usage(m),
        other => CliError::runtime(other.to_string()),
    }
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    require_live(g, "pin")?;
    let fs = FsRoot::live();
    let tasks = threads_of(&fs, args.pid).map_err(pin_error)?;
    let topo = g.topology()?;
    let mut req = make_request(&args.policy, &args.plan)?;
    if req.threads.is_none() && req.tasks.is_none() {
        req.threads = Some(threads_to_plan(&tasks, args.qemu));
    }
    let plan = match pinsight_plan::plan(&topo, &req) {
        // More threads than the policy's CPUs and no --threads: plan the
        // whole set; places are reused round robin (pin_process notes it).
        Err(PlanError::TooManyThreads { .. })
            if args.plan.threads.is_none() && args.plan.tasks.is_none() =>
        {
            pinsight_plan::plan(
                &topo,
                &Request {
                    threads: None,
                    ..req
                },
            )
            .map_err(|e| CliError::usage(e.to_string()))?
        }
        other => other.map_err(|e| CliError::usage(e.to_string()))?,
    };
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
    let failed = report.threads.iter().any(|t| t.outcome == Outcome::Failed);
    if g.json {
        g.print_json(&report)?;
    } else {
        let set = |s: &Option<pinsight_cpuset::CpuSet>| {
            s.as_ref().map_or("-".into(), |c| c.to_list_string())
        };
        println!(
            "pinsight pin: PID {}, policy {}{}",
            report.pid,
            report.policy,
            if report.dry_run {
                " (dry run: nothing changed)"
            } else {
                ""
            }
        );
        println!(
            "{:>8}  {:<16} {:<10} {:<10} {:<10} result",
            "TID", "NAME", "ROLE", "BEFORE", "AFTER"
        );
        for t in &report.threads {
            let result = match (&t.outcome, &t.error) {
                (Outcome::Changed, _) => "changed".to_string(),
                (Outcome::Unchanged, _) => "unchanged".into(),
                (Outcome::WouldChange, _) => "would change".into(),
                (Outcome::LeftAlone, _) => "left alone (os)".into(),
                (Outcome::Exited, _) => "exited".into(),
                (Outcome::Failed, e) => format!("FAILED: {}", e.as_deref().unwrap_or("?")),
            };
            println!(
                "{:>8}  {:<16} {:<10} {:<10} {:<10} {result}",
                t.tid,
                t.name,
                t.role.to_string(),
                set(&t.before),
                set(&t.after)
            );
        }
        for n in report.notes.iter().chain(plan.notes.iter()) {
            if !g.quiet {
                eprintln!("pinsight: note: {n}");
            }
        }
    }
    if report.process_exited {
        return Err(CliError::runtime(format!(
            "PID {} exited while being pinned; the report above is partial",
            args.pid
        )));
    }
    if failed {
        return Err(CliError::runtime(format!(
            "some threads of PID {} could not be pinned (see above)",
            args.pid
        )));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        globals: Globals,
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pin").chain(argv.iter().copied()))
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
