//! `pinsight plan POLICY`: where each thread would run, in the dialect the
//! user's tool speaks. Pure: reads the topology, never pins anything (the
//! planner is crate `pinsight-plan`; `pinsight run`/`pin` apply plans).

use super::plan_args::{add_interleave_weights, flag, make_request, plan_error, PlanArgs};
use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_plan::{format::FORMAT_NAMES, plan, render, Format, Policy};

const AFTER_HELP: &str = "\
Policies (append +smt-physical-first to any pinned one):
  os                   no pinning; the OS scheduler decides (baseline)
  p-set, e-set         whole process on the fastest / slowest core kind; threads
                       float
  p-pinned, e-pinned   one CPU of that kind per thread, one per core before SMT
                       siblings
  p-first, e-first     fill the fastest (slowest) kind first, then the next
  smt-physical-first   every core's first hardware thread, then the siblings
  compact (close)      nearest CPUs first: siblings, then cores sharing caches
  scatter (spread)     spread over packages, NUMA nodes, L3 and L2 domains
  kind:RANK|NAME       pinned on one kind (rank 0 = slowest; name or mark:
                       E-core, E)
  kind-set:RANK|NAME   process on one kind; threads float
  cpus:LIST            thread i on the i-th CPU of LIST, in your order (1,0:
                       thread 0 on CPU 1, as with likwid-pin -c or GOMP)
  cpus-set:LIST        process on the CPUs of LIST; threads float (taskset -c)
  balance              --tasks M over all usable CPUs in proportion to capacity
                       (--weights FILE, else cpu_capacity, else kind max
                       frequency)
  latency-group        --threads K CPUs with the lowest mean pairwise latency
                       (--latency FILE)
  latency-pipeline     K CPUs in stage order, lowest neighbour latency (or
                       --pipeline)

LIST is a cpulist kept in the order written (1,0  8-11,0-3  0-15:2; a CPU may appear once), a hex mask as taskset and hwloc-calc print it (0xff, or 32-bit words 0x00000001,0x00000000; ascending), or all (every usable CPU, ascending). The plan keeps its name as written: cpus:1,0 stays cpus:1,0.

Set policies (os, p-set, e-set, kind-set:, cpus-set:) take any --threads: the threads float inside the set and the kernel time-shares its CPUs, so nothing is oversubscribed. Pinned policies refuse more threads than CPUs unless --oversubscribe (places are then reused round robin). Exported counts (OMP_NUM_THREADS, RAYON_NUM_THREADS, CILK_NWORKERS) are always --threads, for balance --tasks; balance's omp-places output has one place per task. The per-task formats (taskset-per-task, cpulist-per-task, systemd) print one line per task, task i on line i+1 (every task gets the whole set when threads float), for tasks that are separate processes.

Examples:
  pinsight plan p-pinned --threads 6
  pinsight plan e-first --threads 10 --json
  pinsight plan p-first+smt-physical-first
  pinsight plan balance --tasks 200 --weights speed.json
  pinsight plan latency-group -t 4 --latency c2c.csv --pipeline
  # prints: export GOMP_CPU_AFFINITY='1 0'
  pinsight plan cpus:1,0 --format gomp
  # 16 threads floating over CPUs 4-11; prints: 4-11
  pinsight plan cpus-set:0xff0 -t 16 --format cpulist
  # prints: 12-19
  pinsight plan e-set --format cpulist
  # prints: taskset -c 12-19
  pinsight plan e-set --format taskset
  # prints: numactl --physcpubind=0,4,10,12
  pinsight plan scatter -t 4 --format numactl
  # prints: ... OMP_PLACES='{0},{2},{4},...' ... OMP_PROC_BIND='close'
  eval \"$(pinsight plan p-pinned -t 6 --format omp-places)\"
  # prints: export GOMP_CPU_AFFINITY='12-19 0 2'
  eval \"$(pinsight plan e-first -t 10 --format gomp)\"
  # prints: ... KMP_AFFINITY='granularity=fine,explicit,proclist=[0,2,4,...]'
  eval \"$(pinsight plan p-pinned -t 6 --format kmp-affinity)\"
  # prints: export KMP_HW_SUBSET='6c:eff1' ... OMP_NUM_THREADS='12'
  eval \"$(pinsight plan p-set --format kmp-hw-subset)\"
  # <cputune> with <vcpupin>s
  pinsight plan p-pinned -t 4 --format libvirt
  # prints: --cpu-bind=map_cpu:0,2,4,6
  srun $(pinsight plan p-pinned -t 4 --format slurm) ./app
  # one `taskset -c CPU` line per task: start worker i with line i+1
  pinsight plan balance --tasks 200 --format taskset-per-task
  # one cpulist per line (task i on line i+1), for scripts
  pinsight plan balance --tasks 200 --format cpulist-per-task
  # CPUAffinity= per line, one unit per task (a drop-in each)
  pinsight plan balance --tasks 20 --format systemd
  # prints: numactl --interleave=0 --physcpubind=0,4,10,12
  pinsight plan scatter -t 4 --mem interleave:all --format numactl
  # CPUs local to eth0, its node
  pinsight plan p-pinned -t 4 --near eth0 --mem local

A line `# prints: ...` shows what the next command prints on the recorded i7-1370P (6 P-cores with SMT on CPUs 0-11, 8 E-cores on 12-19); `...` stands for the rest.

Memory (--mem): local (MPOL_LOCAL), bind:NODES (numactl --membind, libvirt strict, Slurm mask_mem), interleave:NODES, preferred:NODE (one node), weighted-interleave[:NODES] (Linux 6.9+, numactl 2.0.19+; the kernel's weights in /sys/kernel/mm/mempolicy/weighted_interleave/ are shown, never written). NODES is a node list (0-1,3) or all (the nodes the cgroup allows that hold memory). Nodes that do not exist, hold no memory or that the cgroup forbids are refused. Slurm has no interleave and libvirt no weighted interleave: those formats refuse them; taskset, cpulist and the OpenMP formats say on stderr that they carry no memory policy.

Weights file (--weights): JSON {\"0\": 1.0, \"12\": 0.6} (as `pinsight speed --export-weights` writes) or lines `cpu,weight`. Only ratios matter; 0 = no tasks on that CPU.";

/// `pinsight plan` explains `--latency` and `--pipeline` at more length than
/// `run`/`pin` (whose help points here): the shared flags keep their names
/// and checks, only this help text is longer.
const LATENCY_HELP: &str = "Core-to-core latency matrix for latency-group/latency-pipeline (CSV or JSON, as `pinsight latency` or core-to-core-latency write it)";
const PIPELINE_HELP: &str = "With latency-group: choose CPUs for a pipeline (stage i talks to stage i+1) instead of all-to-all communication (same as policy latency-pipeline)";

/// Show where each thread would run under a placement policy.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
#[command(mut_arg("latency", |a| a.help(LATENCY_HELP)))]
#[command(mut_arg("pipeline", |a| a.help(PIPELINE_HELP)))]
pub struct Args {
    /// Placement policy (see the list below).
    #[arg(value_name = "POLICY")]
    pub policy: Policy,
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Output dialect.
    #[arg(long, short = 'f', value_name = "FORMAT",
          long_help = format!("Output dialect: {}.", FORMAT_NAMES.join(", ")))]
    pub format: Option<Format>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let format = Format::chosen(args.format, g.json).ok_or_else(|| {
        crate::errors::conflict(
            "--json",
            "--format",
            "give one of them (--format json is --json)",
        )
    })?;
    let mut request = make_request(&args.policy, &args.plan)?;
    add_interleave_weights(&mut request, g)?;
    let topo = g.topology_with(args.plan.needs())?;
    let plan = plan(&topo, &request).map_err(plan_error)?;
    let rendered = render(&plan, &topo, format).map_err(|e| CliError::usage(e.named(&flag)))?;
    print!("{}", rendered.text);
    if !g.quiet {
        if !format.carries_notes() {
            for n in &plan.notes {
                eprintln!("pinsight: note: {n}");
            }
        }
        for c in &rendered.caveats {
            eprintln!("pinsight: caveat: {}", c.named(&flag));
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::plan_args::test_cli;
    use clap::CommandFactory;

    type Cli = test_cli::Cli<Args>;

    /// The recorded i7-1370P (hwloc's dump, kept by the topology crate).
    fn hybrid() -> Globals {
        let dir = pinsight_testkit::fixtures::hwloc("20em64t-hybrid-1p6c2t+2ca4co1t");
        Globals {
            fsroot: Some(dir),
            quiet: true,
            ..Globals::default()
        }
    }

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        test_cli::parse("plan", argv)
    }

    #[test]
    fn help_has_an_example_per_format() {
        let help = Cli::command().render_long_help().to_string();
        for f in FORMAT_NAMES.iter().filter(|f| **f != "table") {
            assert!(
                help.contains(&format!("--format {f}"))
                    || (*f == "json" && help.contains("--json")),
                "{f}"
            );
        }
        for p in pinsight_plan::policy::POLICY_NAMES {
            let head = p.split(['|', ':']).next().unwrap();
            assert!(help.contains(head), "{p}");
        }
    }

    #[test]
    fn usage_errors_exit_2() {
        for argv in [
            &["bogus"][..],
            &["p-pinned", "--format", "xml"],
            &["p-pinned", "--threads", "-1"],
            &[],
        ] {
            let e = parse(argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{argv:?}: {e}");
        }
        let e = parse(&["fastest"]).unwrap_err().to_string();
        assert!(e.contains("valid policies: os, p-set"), "{e}");
    }

    #[test]
    fn planner_errors_are_usage_errors() {
        let g = hybrid();
        let run_args = |argv: &[&str]| run(parse(argv).unwrap().args, &g);
        // A count out of range is refused while parsing.
        assert!(parse(&["p-pinned", "--threads", "0"]).is_err());
        for argv in [
            &["p-pinned", "--threads", "13"][..],
            &["cpus:40"],
            &["kind:Cortex-A55"],
            &["p-set", "--format", "gomp"],
            &["compact", "--weights", "w.json"],
            &["compact", "--pipeline"],
            &["latency-group", "-t", "2"],
            &["latency-group", "-t", "2", "--latency", "/nonexistent.csv"],
        ] {
            let e = run_args(argv).unwrap_err();
            assert_eq!(e.code, 2, "{argv:?}: {}", e.message);
        }
        assert_eq!(
            run_args(&["p-pinned", "--threads", "6", "--format", "gomp"]).unwrap(),
            0
        );
        let mut json = g.clone();
        json.json = true;
        let e = run(
            parse(&["p-set", "--format", "cpulist"]).unwrap().args,
            &json,
        )
        .unwrap_err();
        assert_eq!(e.code, 2);
    }
}
