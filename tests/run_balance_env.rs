//! `pinsight run balance --tasks N -- LAUNCHER`: the launcher's children are
//! the tasks, and each inherits the environment run exports (execve(2)), so
//! one task count (`OMP_NUM_THREADS=N`) would ask every task for N threads.
//! A balance plan exports no thread count; other plans still do.

use crate::common_cli;

use common_cli::*;

/// A launcher that starts three children, each printing what it inherited.
const LAUNCHER: &str = "for i in 1 2 3; do \
    sh -c 'echo \"child omp=${OMP_NUM_THREADS-unset} rayon=${RAYON_NUM_THREADS-unset} cilk=${CILK_NWORKERS-unset}\"' & \
    done; wait";

#[test]
fn a_launchers_children_never_get_the_task_count() {
    let o = ok(&["run", "balance", "--tasks", "3", "--", "sh", "-c", LAUNCHER]);
    let lines: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("child "))
        .collect();
    assert_eq!(lines.len(), 3, "{}", o.stdout);
    for l in lines {
        for var in ["omp", "rayon", "cilk"] {
            assert!(
                !l.contains(&format!("{var}=3")),
                "a child got the task count as its thread count: {l}"
            );
        }
    }
}

#[test]
fn other_plans_still_export_their_thread_count() {
    let o = ok(&[
        "run",
        "cpus-set:0",
        "--threads",
        "3",
        "--",
        "sh",
        "-c",
        "echo \"omp=$OMP_NUM_THREADS\"",
    ]);
    assert!(o.stdout.contains("omp=3"), "{}", o.stdout);
}
