//! Builds the [`Spawn`] of one run under one arm's plan,
//! applying it exactly as `pinsight run` does: both build on
//! [`pinsight_launch::Application`], which decides once per arm how the plan
//! is applied to this program —
//!
//! - `os`: nothing changes;
//! - set policies: the process starts with the plan's process mask;
//! - pinned policies: the process also starts with the plan's whole mask
//!   (it sizes itself from the planned CPUs), the main thread moves to place
//!   0 at its first thread, and the LD_PRELOAD shim pins each new thread at
//!   creation — or, for programs the shim cannot reach (static, set-id,
//!   file-capability, 32-bit), the `/proc` watcher does, with a note on
//!   the arm (a pin the kernel refuses stops the experiment, see
//!   [`crate::experiment::LiveExecutor`]);
//! - OpenMP/rayon variables from [`pinsight_plan::omp_env`], filtered by
//!   [`pinsight_launch::env_exports`] (user settings win; binding variables
//!   are dropped when pinsight pins threads itself).
//!
//! Why not `pinsight_launch::run`: it runs a program to completion and
//! reaps it itself, while a measured run must be spawned and reaped by
//! [`pinsight_measure::Measurer`] (counters attach between fork and exec,
//! rusage comes from its `wait4`). So this adapter applies the
//! [`Application`] to a [`Spawn`] (started without copying pinsight's
//! memory, see [`pinsight_sys::spawn`]), with the start mask and memory
//! policy as data the child applies before `execve` (one syscall each, on
//! buffers prepared beforehand), and hands the watcher's job
//! ([`PreparedArm::follow`]) to the executor.

use pinsight_cpuset::CpuSet;
use pinsight_launch::shim::ShimFile;
use pinsight_launch::watch::FollowPlan;
use pinsight_launch::{Application, Mechanism, PinMain};
use pinsight_plan::Plan;
use pinsight_sys::affinity::to_kernel_words;
use pinsight_sys::spawn::{Spawn, Stdio};
use std::ffi::{OsStr, OsString};

/// One arm, ready to spawn many times.
#[derive(Clone, Debug)]
pub struct PreparedArm {
    /// Variables exported to the program.
    pub env: Vec<(String, String)>,
    /// Notes from the environment rules and the choice of mechanism.
    pub notes: Vec<String>,
    /// How the plan is applied.
    app: Application,
    /// The main thread's starting mask (kernel words), if any.
    start_mask: Option<Vec<libc::c_ulong>>,
    /// The watcher's pinning job, when the watcher pins this arm's threads.
    follow: Option<FollowPlan>,
    /// The memory policy (`MPOL_*`, nodes), set between fork and exec.
    mem: Option<(i32, CpuSet)>,
    /// The plan's CPUs (its process mask): where the disturbance of a run
    /// is accounted.
    cpus: CpuSet,
}

/// The shim shared by all pinned arms of an experiment (a sealed memfd the
/// runs inherit, else a private file); removed when dropped (the
/// experiment drops it on every exit path, Ctrl-C included).
pub struct Shim(ShimFile);

/// The pinning shim could not be created.
#[derive(Debug, thiserror::Error)]
#[error("cannot create the pinning shim: {0}")]
pub struct ShimError(#[source] pub std::io::Error);

impl Shim {
    pub fn create() -> Result<Shim, ShimError> {
        ShimFile::create().map(Shim).map_err(ShimError)
    }
}

impl PreparedArm {
    /// Prepares `plan` for `program`. `is_set` tells which variables the
    /// user already set (normally `std::env::var_os(k).is_some()`).
    pub fn new(plan: &Plan, program: &OsStr, is_set: impl Fn(&str) -> bool) -> PreparedArm {
        let app = Application::new(
            plan,
            program,
            Mechanism::Shim,
            PinMain::Lazy,
            &[],
            false,
            &pinsight_plan::omp_env(plan),
            is_set,
        );
        PreparedArm {
            env: app.exported.clone(),
            notes: app.notes.clone(),
            start_mask: app.start_mask.as_ref().map(to_kernel_words),
            follow: app.follow_plan(plan, &[]),
            mem: plan.memory.as_ref().map(pinsight_launch::kernel_policy),
            cpus: plan.process_mask.clone(),
            app,
        }
    }

    /// Whether runs of this arm need the shim file.
    pub fn needs_shim(&self) -> bool {
        self.app.needs_shim()
    }

    /// The plan's CPUs (the process mask; every usable CPU under `os`).
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// The watcher's job for each run, when the watcher pins the threads.
    pub fn follow(&self) -> Option<&FollowPlan> {
        self.follow.as_ref()
    }

    /// The command for one run. Output goes to /dev/null unless
    /// `show_output`; stdin is always /dev/null (runs live in their own
    /// process group and must not read the terminal).
    pub fn command(&self, argv: &[OsString], shim: Option<&Shim>, show_output: bool) -> Spawn {
        let mut cmd = Spawn::new(&argv[0]);
        cmd.args(&argv[1..]);
        self.app.apply(&mut cmd, shim.map(|s| &s.0));
        cmd.stdin(Stdio::Null);
        if !show_output {
            cmd.stdout(Stdio::Null).stderr(Stdio::Null);
        }
        if let Some(words) = self.start_mask.clone() {
            // One allocation-free syscall between the spawn and the exec.
            cmd.affinity_words(words);
        }
        if let Some((mode, nodes)) = &self.mem {
            // The child inherits the policy across exec, as under numactl.
            cmd.mempolicy(*mode, nodes);
        }
        cmd
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), if readable.
pub fn own_affinity() -> Option<CpuSet> {
    pinsight_sys::affinity::get_affinity(0).ok()
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
            memory: None,
            near: None,
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
        let a = PreparedArm::new(&plan(false, &[], "0-1"), OsStr::new("true"), |_| false);
        assert!(a.start_mask.is_none() && !a.needs_shim());
        assert!(a
            .env
            .iter()
            .any(|(k, v)| k == "OMP_PROC_BIND" && v == "false"));
    }

    #[test]
    fn pinned_plans_get_the_shim_and_no_binding_variables() {
        let a = PreparedArm::new(&plan(true, &["0", "1"], "0-1"), OsStr::new("sh"), |_| false);
        assert!(a.needs_shim());
        assert!(a.follow().is_none());
        assert!(!a
            .env
            .iter()
            .any(|(k, _)| k == "OMP_PLACES" || k == "OMP_PROC_BIND"));
        // The program starts on the whole plan, not on place 0.
        assert_eq!(
            a.start_mask,
            Some(to_kernel_words(&CpuSet::parse_list("0-1").unwrap()))
        );
        let shim = Shim::create().unwrap();
        let cmd = a.command(&["sh".into()], Some(&shim), false);
        let envs: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
            .collect();
        assert!(envs.contains(&("PINSIGHT_PLACES".to_string(), "0;1".to_string())));
        assert!(envs.contains(&("PINSIGHT_PIN_MAIN".to_string(), "lazy".to_string())));
        assert!(envs
            .iter()
            .any(|(k, v)| k == "LD_PRELOAD" && v.starts_with("/proc/self/fd/")));
    }

    #[test]
    fn programs_the_shim_cannot_reach_are_pinned_by_the_watcher() {
        // A set-user-ID copy of `true` owned by another user (root only) or
        // a static ELF header: either way the loader will not preload.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("static");
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2; // 64-bit
        elf[5] = 1; // little endian
        elf[6] = 1;
        elf[16] = 2; // ET_EXEC
        elf[18] = 62; // x86-64
        elf[20] = 1;
        elf[52] = 64; // e_ehsize
        elf[54] = 56; // e_phentsize, no program headers: no PT_INTERP
        std::fs::write(&p, &elf).unwrap();
        let a = PreparedArm::new(&plan(true, &["0", "1"], "0-1"), p.as_os_str(), |_| false);
        assert!(!a.needs_shim());
        assert!(a.follow().is_some_and(|f| f.pin_main_lazily));
        assert!(
            a.notes.iter().any(|n| n.contains("statically linked")),
            "{:?}",
            a.notes
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_32_bit_program_is_pinned_by_the_watcher_and_the_arm_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = pinsight_testkit::elf::write_i386_exit7(dir.path(), "i386");
        let a = PreparedArm::new(&plan(true, &["0", "1"], "0-1"), p.as_os_str(), |_| false);
        assert!(!a.needs_shim(), "the 64-bit shim is never named for it");
        let cmd = a.command(&[p.clone().into()], None, false);
        assert!(
            !cmd.get_envs().any(|(k, _)| k == "LD_PRELOAD"),
            "no LD_PRELOAD in its environment"
        );
        assert!(a.follow().is_some());
        assert!(
            a.notes.iter().any(|n| n.contains("32-bit i386 program")
                && n.contains("pinned by the /proc watcher instead of the shim")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn set_policy_starts_the_process_on_its_mask() {
        let a = PreparedArm::new(&plan(false, &["1"], "1"), OsStr::new("sh"), |_| false);
        let mut cmd = a.command(
            &[
                "sh".into(),
                "-c".into(),
                "grep Cpus_allowed_list /proc/self/status".into(),
            ],
            None,
            true,
        );
        let (r, w) = pinsight_sys::process::pipe().unwrap();
        cmd.stdout(Stdio::Fd(w));
        let child = cmd.spawn().unwrap();
        drop(cmd);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(r), &mut text).unwrap();
        pinsight_sys::process::wait4(child.pid).unwrap();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            assert!(text.trim().ends_with("\t1"), "{text}");
        }
    }
}
