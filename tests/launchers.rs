//! `pinsight run --slice` under real launchers, started by these tests on
//! this machine: Open MPI's `mpirun` and a one-node Slurm (munged,
//! slurmctld and slurmd with a `slurm.conf` written here, on free ports,
//! stopped on every path). Two ranks must get disjoint CPUs, checked from
//! `/proc/self/status` inside each rank; with declared kinds (`--kinds
//! 0:P,1:E` on a two-CPU machine) each rank gets exactly one CPU; `pinsight
//! gather` merges the ranks' `--report-dir` files.
//!
//! The launchers are test prerequisites (`.ci/deps` installs Debian's
//! `openmpi-bin`, `slurm-wlm`, `munge`): a launcher that cannot start here
//! FAILS the test with the reason; only a machine with fewer than two usable
//! CPUs, where two disjoint slices cannot exist, skips.
//!
//! How they are started:
//! - `mpirun --oversubscribe --bind-to none -np 2`: Open MPI would otherwise
//!   bind each rank to a core of its own choosing (then each rank's allowed
//!   CPUs are already one core and there is nothing to slice); as root it
//!   needs `OMPI_ALLOW_RUN_AS_ROOT=1` and `OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.
//! - Slurm: `TaskPlugin=task/none` (Slurm does not bind),
//!   `ProctrackType=proctrack/linuxproc`, auth through a munged on a socket
//!   in the temporary directory with a fresh key; `sinfo` must report the
//!   node idle before `srun -n 2`.
//!
//! Each rank runs `taskset -c A,B pinsight ...` so that the two CPUs sliced
//! are the same on any machine (A, B: the first two CPUs this test may use).

use crate::common_launch;

use crate::common_cmd::{assert_status, words};
use common_launch::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pinsight() -> &'static str {
    env!("CARGO_BIN_EXE_pinsight")
}

/// The rank's program: the shell itself reads its own status (a builtin
/// loop, no child) and prints the launcher's local rank and its CPUs.
const PROBE: &str = r#"while read k v; do if [ "$k" = Cpus_allowed_list: ]; then echo "probe rank=${OMPI_COMM_WORLD_LOCAL_RANK:-$SLURM_LOCALID} cpus=$v"; fi; done < /proc/self/status"#;

/// The launcher's own options (`launcher`'s words), then the rank
/// command: taskset, pinsight, probe.
fn rank_command(launcher: &str, a: usize, b: usize, kinds: &str, report_dir: &Path) -> Vec<String> {
    let mut args = words(launcher);
    let cpus = format!("{a},{b}");
    args.extend(["taskset", "-c", &cpus, pinsight(), "-q", "--kinds", kinds]);
    args.extend(words("run --slice p-pinned --report-dir"));
    args.extend([report_dir.to_str().unwrap(), "--", "sh", "-c", PROBE]);
    args.iter().map(|s| s.to_string()).collect()
}

/// The (rank, CPUs) lines of the probes: two ranks, disjoint, one CPU each.
fn check_ranks(out: &Output, a: usize, b: usize, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let mut seen: Vec<(usize, String)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("probe rank="))
        .map(|l| {
            let (r, c) = l.split_once(" cpus=").expect("probe line");
            (r.parse().expect("rank"), c.trim().to_string())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![(0, a.to_string()), (1, b.to_string())],
        "{what}: each rank on its own CPU (rank 0 on the declared P-core):\n{stdout}\n{stderr}"
    );
}

/// The ranks' report files, and `pinsight gather` merging them.
fn check_reports(dir: &Path, a: usize, b: usize) {
    let hosts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(hosts.len(), 1, "one host directory: {hosts:?}");
    for (rank, cpu) in [(0, a), (1, b)] {
        let f = hosts[0].join(format!("rank-{rank}.json"));
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())),
        )
        .unwrap();
        assert_eq!(v["slice"]["rank"], rank);
        assert_eq!(v["slice"]["size"], 2);
        assert_eq!(v["slice"]["cpus"], cpu.to_string());
        assert_eq!(v["plan"]["process_mask"], cpu.to_string());
    }
    let out = Command::new(pinsight())
        .args(["gather", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    assert_status(&out, 0, &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranks = v["nodes"][0]["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2, "{v}");
    assert_eq!(ranks[0]["cpus"], a.to_string());
    assert_eq!(ranks[1]["cpus"], b.to_string());
    assert!(v["nodes"][0]["wall_ms_spread"].as_f64().is_some(), "{v}");
}

/// `timeout 60 PROGRAM ARGS`, output captured.
fn run_bounded(program: &str, args: &[String], envs: &[(&str, &str)]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(program)
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot start timeout {program}: {e} (coreutils timeout is a test prerequisite)")
        })
}

#[test]
fn mpirun_two_ranks_get_disjoint_slices() {
    let Some((a, b, kinds)) = two_cpus() else {
        pinsight_testkit::skip_test!(
            "fewer than two usable CPUs: two disjoint slices cannot exist"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let args = rank_command(
        "--oversubscribe --bind-to none -np 2",
        a,
        b,
        &kinds,
        &reports,
    );
    let out = run_bounded("mpirun", &args, &[MPI_ENV[0], MPI_ENV[1]]);
    check_ranks(&out, a, b, "mpirun -np 2 pinsight run --slice p-pinned");
    check_reports(&reports, a, b);
}

#[test]
fn srun_two_ranks_get_disjoint_slices() {
    let Some((a, b, kinds)) = two_cpus() else {
        pinsight_testkit::skip_test!(
            "fewer than two usable CPUs: two disjoint slices cannot exist"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (daemons, conf_s) = start_slurm(d);
    let reports = d.join("reports");
    let args = rank_command("-n 2 -N 1", a, b, &kinds, &reports);
    let out = run_bounded("srun", &args, &[("SLURM_CONF", &conf_s)]);
    check_ranks(&out, a, b, "srun -n 2 pinsight run --slice p-pinned");
    check_reports(&reports, a, b);
    drop(daemons);
}
