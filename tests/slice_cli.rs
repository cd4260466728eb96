//! `pinsight slice`, `run --slice` and `pinsight gather` from the command
//! line: recorded machines (hwloc's i7-1370P laptop), launcher variables
//! given in the environment, and the usage errors (exit 2) naming the input.

use crate::common_cmd::strs;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

const LAUNCHER_VARS: &[&str] = &[
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_SIZE",
    "PMIX_LOCAL_RANK",
    "PMIX_LOCAL_SIZE",
    "PMI_LOCAL_RANK",
    "PMI_LOCAL_SIZE",
    "FLUX_TASK_LOCAL_ID",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "PINSIGHT_FSROOT",
    "PINSIGHT_KINDS",
];

fn hybrid() -> PathBuf {
    pinsight_testkit::fixtures::hwloc("20em64t-hybrid-1p6c2t+2ca4co1t")
}

/// `pinsight ARGS` with no launcher variable set except `env`.
fn pinsight(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    for v in LAUNCHER_VARS {
        c.env_remove(v);
    }
    c.args(args).envs(env.iter().copied()).output().unwrap()
}

fn on_hybrid(args: &[&str], env: &[(&str, &str)]) -> Output {
    let h = hybrid();
    let mut a = vec!["--fsroot", h.to_str().unwrap()];
    a.extend_from_slice(args);
    pinsight(&a, env)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn usage_error(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    let e = stderr(o);
    assert_eq!(
        e.lines()
            .filter(|l| l.starts_with("pinsight: error:") || l.starts_with("error:"))
            .count(),
        1,
        "{e}"
    );
    for n in needles {
        assert!(e.contains(n), "'{n}' not in: {e}");
    }
}

#[test]
fn all_slices_of_the_hybrid_laptop() {
    let o = on_hybrid(&["slice", "--all", "--size", "2", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cpus: Vec<&str> = strs(&v["slices"], "cpus");
    // E-cores at 0.58 of a P-core (CPPC highest_perf, the capacity topo
    // prints): 8 P-CPUs against 4 P-CPUs and 8 E-cores.
    assert_eq!(cpus, ["0-7", "8-19"]);
    let cap = |i: usize| v["slices"][i]["capacity"].as_f64().unwrap();
    assert!((cap(0) - cap(1)).abs() <= 1.0, "{v}");
    assert_eq!(v["rule"], "equal-capacity");
    // The table says the same, within 80 columns.
    let o = on_hybrid(&["slice", "--all", "--size", "4"], &[]);
    let t = stdout(&o);
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    assert!(t.contains("    3 12-19") && t.contains("8xE"), "{t}");
    assert!(t.contains("spread 0.657 (one CPU: 1)"), "{t}");
    // Equal count puts rank 1 on every E-core.
    let o = on_hybrid(
        &[
            "slice",
            "--all",
            "--size",
            "2",
            "--slice-rules",
            "equal-count",
        ],
        &[],
    );
    assert!(stdout(&o).contains("    1 10-19"), "{}", stdout(&o));
}

#[test]
fn launcher_lines() {
    let o = on_hybrid(&["slice", "--all", "--size", "2", "--format", "slurm"], &[]);
    assert_eq!(stdout(&o), "--cpu-bind=mask_cpu:0xff,0xfff00\n");
    let o = on_hybrid(&["slice", "--all", "--size", "2", "--format", "hydra"], &[]);
    assert_eq!(stdout(&o), "-bind-to user:0-7,8-19\n");
    let o = on_hybrid(
        &["slice", "--all", "--size", "20", "--format", "openmpi"],
        &[],
    );
    assert!(
        stdout(&o).starts_with("--map-by pe-list=0,1,2,"),
        "{}",
        stdout(&o)
    );
    let o = on_hybrid(
        &["slice", "--all", "--size", "2", "--format", "openmpi"],
        &[],
    );
    usage_error(&o, &["--format openmpi", "openmpi-rankfile"]);
    let o = on_hybrid(&["slice", "--all", "--size", "2", "--format", "lsf"], &[]);
    usage_error(&o, &["'lsf'", "intel-mpi"]);
    let o = on_hybrid(&["slice", "--size", "2", "--format", "slurm"], &[]);
    usage_error(&o, &["--all"]);
}

#[test]
fn one_rank_from_the_environment() {
    let ompi = [
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
    ];
    let o = on_hybrid(&["slice", "--json"], &ompi);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["slice"]["cpus"], "8-19");
    assert_eq!(v["slice"]["launcher"], "Open MPI");
    assert_eq!(v["slice"]["rank"], 1);
    let o = on_hybrid(&["slice"], &ompi);
    assert!(
        stdout(&o).starts_with("local rank 1 of 2 (from Open MPI): CPUs 8-19"),
        "{}",
        stdout(&o)
    );
    // Slurm's compressed tasks-per-node list, node 2 of 3.
    let slurm = [
        ("SLURM_LOCALID", "0"),
        ("SLURM_TASKS_PER_NODE", "2(x2),4"),
        ("SLURM_NODEID", "2"),
    ];
    let v: Value = serde_json::from_str(&stdout(&on_hybrid(&["slice", "--json"], &slurm))).unwrap();
    assert_eq!(
        (v["slice"]["size"].clone(), v["slice"]["cpus"].clone()),
        (4.into(), "0-3".into())
    );
    // Flags win over the environment.
    let v: Value = serde_json::from_str(&stdout(&on_hybrid(
        &["slice", "--json", "--rank", "0", "--size", "2"],
        &ompi,
    )))
    .unwrap();
    assert_eq!(v["slice"]["cpus"], "0-7");
}

#[test]
fn usage_errors_name_the_input() {
    usage_error(
        &on_hybrid(&["slice"], &[]),
        &["no launcher found", "--local-rank"],
    );
    usage_error(
        &on_hybrid(&["slice", "--rank", "2", "--size", "2"], &[]),
        &["local rank 2 is not below the local size 2"],
    );
    usage_error(
        &on_hybrid(&["slice", "--all", "--size", "21"], &[]),
        &["21 ranks", "at most 20"],
    );
    usage_error(&on_hybrid(&["slice", "--all"], &[]), &["--local-size"]);
    usage_error(
        &on_hybrid(
            &["slice", "--all", "--size", "2", "--slice-rules", "fair"],
            &[],
        ),
        &["'fair'", "p-only"],
    );
    usage_error(
        &on_hybrid(
            &["slice"],
            &[
                ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
                ("MPI_LOCALRANKID", "0"),
                ("MPI_LOCALNRANKS", "2"),
            ],
        ),
        &["Open MPI says local rank 1 of 2", "MPICH Hydra"],
    );
    usage_error(
        &on_hybrid(
            &["slice"],
            &[("SLURM_LOCALID", "0"), ("SLURM_TASKS_PER_NODE", "2(x")],
        ),
        &["SLURM_TASKS_PER_NODE", "(xN)"],
    );
    // run: --slice with a POLICY too, slice flags without --slice.
    usage_error(
        &pinsight(
            &["run", "compact", "--slice", "p-pinned", "--", "true"],
            &[],
        ),
        &["give the policy once"],
    );
    usage_error(
        &pinsight(&["run", "--local-rank", "0", "--", "true"], &[]),
        &["--slice POLICY only"],
    );
    usage_error(
        &pinsight(&["gather", env!("CARGO_MANIFEST_DIR")], &[]),
        &["rank-<N>.json"],
    );
}

#[test]
fn run_slice_as_the_only_rank_and_gather() {
    let dir = tempfile::tempdir().unwrap();
    let rd = dir.path().join("r");
    let o = pinsight(
        &[
            "--json",
            "run",
            "--slice",
            "os",
            "--local-rank",
            "0",
            "--local-size",
            "1",
            "--report-dir",
            rd.to_str().unwrap(),
            "--",
            "true",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(v["slice"]["rank"], 0);
    assert_eq!(v["slice"]["launcher"], "the command line");
    assert_eq!(v["slice"]["cpus"], v["plan"]["process_mask"]);
    let o = pinsight(&["gather", rd.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.starts_with("node ") && t.contains("spread: fastest"),
        "{t}"
    );
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    let html = dir.path().join("g.html");
    let o = pinsight(
        &[
            "gather",
            rd.to_str().unwrap(),
            "--export-html",
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success());
    assert!(std::fs::read_to_string(html).unwrap().contains("<table>"));
}

#[test]
fn help_has_examples_and_fits_80_columns() {
    for c in ["slice", "gather"] {
        let o = pinsight(&[c, "--help"], &[]);
        let t = stdout(&o);
        assert!(t.contains("Examples:"), "{c}: {t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{c}: {t}");
    }
}
