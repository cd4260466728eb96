//! Builds the `std::process::Command` of one run under one arm's plan,
//! applying it exactly as `pinsight run` does (crate `pinsight-launch`):
//!
//! - `os`: nothing changes;
//! - set policies: the process starts with the plan's process mask;
//! - pinned policies: the main thread starts on place 0 and the LD_PRELOAD
//!   shim pins each new thread to its place at creation;
//! - OpenMP/rayon variables from [`pinsight_plan::omp_env`], filtered by
//!   [`pinsight_launch::env_exports`] (user settings win; binding variables
//!   are dropped when pinsight pins threads itself).
//!
//! Why not `pinsight_launch::run`: it runs a program to completion and
//! reaps it itself, while a measured run must be spawned and reaped by
//! [`pinsight_measure::Measurer`] (counters attach between fork and exec,
//! rusage comes from its `wait4`). So this adapter reuses launch's public
//! pieces (shim file, env rules, place encoding) and sets the start mask in
//! a `pre_exec` hook (the child is forked from a multi-threaded process, so
//! the hook only makes one syscall on a buffer prepared beforehand).

use pinsight_cpuset::CpuSet;
use pinsight_launch::affinity::{set_affinity_words, to_kernel_words};
use pinsight_launch::launch::places_env;
use pinsight_launch::shim::{self, ShimFile};
use pinsight_plan::Plan;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// One arm, ready to spawn many times.
#[derive(Clone, Debug)]
pub struct PreparedArm {
    /// Variables exported to the program.
    pub env: Vec<(String, String)>,
    /// Notes from the environment rules.
    pub notes: Vec<String>,
    /// The main thread's starting mask (kernel words), if any.
    start_mask: Option<Vec<libc::c_ulong>>,
    /// Shim variables for pinned plans.
    shim_env: Option<Vec<(String, String)>>,
}

/// The shim file shared by all pinned arms of an experiment; removed when
/// dropped (the experiment drops it on every exit path, Ctrl-C included).
pub struct Shim(ShimFile);

impl Shim {
    pub fn write() -> Result<Shim, String> {
        ShimFile::write()
            .map(Shim)
            .map_err(|e| format!("cannot write the pinning shim: {e}"))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl PreparedArm {
    /// Prepares `plan`. `is_set` tells which variables the user already
    /// set (normally `std::env::var_os(k).is_some()`).
    pub fn new(plan: &Plan, is_set: impl Fn(&str) -> bool) -> PreparedArm {
        // Exactly as `pinsight run` decides (one-place plans are a mask).
        let per_thread = pinsight_launch::pins_per_thread(plan);
        let (env, notes) =
            pinsight_launch::env_exports(&pinsight_plan::omp_env(plan), per_thread, is_set);
        let start: Option<&CpuSet> = if plan.places.is_empty() {
            None
        } else if per_thread {
            Some(&plan.places[0])
        } else {
            Some(&plan.process_mask)
        };
        let shim_env = per_thread.then(|| {
            vec![
                (shim::ENV_PLACES.to_string(), places_env(&plan.places)),
                (
                    shim::ENV_PROCESS_MASK.to_string(),
                    plan.process_mask.to_list_string(),
                ),
                (shim::ENV_SKIP.to_string(), String::new()),
                (
                    shim::ENV_LAUNCHER_PID.to_string(),
                    std::process::id().to_string(),
                ),
            ]
        });
        PreparedArm {
            env,
            notes,
            start_mask: start.map(to_kernel_words),
            shim_env,
        }
    }

    /// Whether runs of this arm need the shim file.
    pub fn needs_shim(&self) -> bool {
        self.shim_env.is_some()
    }

    /// The command for one run. Output goes to /dev/null unless
    /// `show_output`; stdin is always /dev/null (runs live in their own
    /// process group and must not read the terminal).
    pub fn command(&self, argv: &[OsString], shim: Option<&Shim>, show_output: bool) -> Command {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let (Some(vars), Some(shim)) = (&self.shim_env, shim) {
            let existing = std::env::var("LD_PRELOAD").ok();
            cmd.env(
                "LD_PRELOAD",
                shim::preload_value(shim.path(), existing.as_deref()),
            );
            for (k, v) in vars {
                cmd.env(k, v);
            }
        }
        cmd.stdin(Stdio::null());
        if !show_output {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
        if let Some(words) = self.start_mask.clone() {
            // SAFETY: one raw syscall on a buffer allocated before the fork;
            // nothing is allocated or locked in the child.
            unsafe {
                cmd.pre_exec(move || set_affinity_words(0, &words));
            }
        }
        cmd
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), if readable.
pub fn own_affinity() -> Option<CpuSet> {
    pinsight_launch::affinity::get_affinity(0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(pinned: bool, places: &[&str], mask: &str) -> Plan {
        Plan {
            policy: "x".into(),
            threads: places.len().max(1),
            process_mask: CpuSet::parse_list(mask).unwrap(),
            places: places
                .iter()
                .map(|p| CpuSet::parse_list(p).unwrap())
                .collect(),
            pinned,
            tasks_per_cpu: None,
            notes: vec![],
        }
    }

    #[test]
    fn words_match_the_kernel_layout() {
        assert_eq!(
            to_kernel_words(&CpuSet::parse_list("0,2,64").unwrap()),
            vec![5, 1]
        );
    }

    #[test]
    fn os_changes_nothing_but_openmp_variables() {
        let a = PreparedArm::new(&plan(false, &[], "0-1"), |_| false);
        assert!(a.start_mask.is_none() && !a.needs_shim());
        assert!(a
            .env
            .iter()
            .any(|(k, v)| k == "OMP_PROC_BIND" && v == "false"));
    }

    #[test]
    fn pinned_plans_get_the_shim_and_no_binding_variables() {
        let a = PreparedArm::new(&plan(true, &["0", "1"], "0-1"), |_| false);
        assert!(a.needs_shim());
        assert!(!a
            .env
            .iter()
            .any(|(k, _)| k == "OMP_PLACES" || k == "OMP_PROC_BIND"));
        let vars = a.shim_env.as_ref().unwrap();
        assert!(vars.contains(&("PINSIGHT_PLACES".to_string(), "0;1".to_string())));
    }

    #[test]
    fn set_policy_starts_the_process_on_its_mask() {
        let a = PreparedArm::new(&plan(false, &["1"], "1"), |_| false);
        let mut cmd = a.command(
            &[
                "sh".into(),
                "-c".into(),
                "grep Cpus_allowed_list /proc/self/status".into(),
            ],
            None,
            true,
        );
        cmd.stdout(Stdio::piped());
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            assert!(text.trim().ends_with("\t1"), "{text}");
        }
    }
}
