//! `run`: start a program under a plan, wait for it, report.
//!
//! How each kind of plan is applied:
//! - `os` (no places): nothing is changed.
//! - set policies (`plan.pinned == false`): the child starts with the
//!   process mask (set in the child before it executes the program,
//!   [`Spawn::affinity_words`]; a mask the kernel refuses there is
//!   reported as [`LaunchError::Affinity`], never as an exec error: the
//!   start names the step that failed, [`pinsight_sys::spawn::Step`]).
//! - pinned policies: the child starts with the plan's whole process mask
//!   (so it sizes itself from the planned CPUs); its main thread moves to
//!   place 0 when it creates its first thread ([`PinMain::Lazy`], or at
//!   once with [`PinMain::Early`]), and either the LD_PRELOAD shim pins
//!   each new thread at creation ([`Mechanism::Shim`]), or the watcher pins
//!   new threads as it sees them ([`Mechanism::Follow`]) — also, with a
//!   note, when the shim cannot reach the program (static, set-id, 32-bit
//!   or foreign-machine binaries, see [`pinsight_lifecycle::program`]), or when the
//!   plan is too large for the environment ([`env_too_large`]). With the
//!   shim the watcher stands guard: a program the shim cannot reach that
//!   the launched one executes in place (`sh -c 'exec ./prog32'`) has its
//!   threads pinned by the watcher from the exec ([`crate::watch`]), and
//!   the shim's handshake in its thread log tells an image it never
//!   reached, so the outcome never claims the shim placed threads it did
//!   not. Skipped threads get the process mask.
//!
//! Before anything is changed, the program is resolved and checked
//! ([`Program::check`]): one whose ELF or `#!` interpreter is missing is
//! refused with the reason (exit 127), not reported as "not found".
//!
//! A memory policy ([`Plan::memory`]) is applied the same way as the
//! start mask: `set_mempolicy` in the child before it executes the
//! program ([`Spawn::mempolicy`]), which keeps it across exec, so no
//! numactl is needed; a refusal is [`LaunchError::MemPolicy`]. The
//! program starts through [`Spawn`] (one `clone(CLONE_VM|CLONE_VFORK)`,
//! nothing of this process copied), as every program pinsight starts.
//!
//! The launcher passes SIGINT, SIGTERM and SIGHUP on to the program tree
//! through the one signal lifecycle ([`pinsight_lifecycle::interrupt`],
//! owning the exit: pinsight does not die of them, its program decides;
//! a terminal's signal, which the program got too, is not sent twice),
//! waits for the child (reaping it only after the watcher took its last
//! look), removes the shim file, and returns the child's status: its exit
//! code, or 128+N if killed by signal N.

use crate::shim::{self, ShimFile};
use crate::threadlog::{self, assign_planned, refusal, Expected, ThreadLog, ENV_THREAD_LOG_FD};
use crate::watch::{
    follow_stats, FollowPlan, FollowStats, Takeover, ThreadRecord, WatchConfig, Watched, Watcher,
};
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::exit::SpawnError;
use pinsight_lifecycle::interrupt::{self, InterruptError};
use pinsight_lifecycle::{program, program::Program};
use pinsight_plan::{MemMode, MemPlan, Plan};
use pinsight_sys::affinity;
use pinsight_sys::mempolicy;
use pinsight_sys::spawn::{Child, Spawn, StartError, Stdio, Step};
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::ffi::OsString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

/// How pinned plans are applied to threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// LD_PRELOAD shim wrapping `pthread_create` (exact, before user code;
    /// dynamically linked programs only).
    Shim,
    /// Watch `/proc/PID/task` and pin threads as they appear (any program;
    /// a thread runs unpinned for up to one poll interval).
    Follow,
}

/// When the main thread of a program pinned thread by thread moves to
/// place 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PinMain {
    /// When the program creates its first thread (likwid-pin's rule):
    /// until then it has the plan's whole process mask, so programs that
    /// size themselves from their affinity see every planned CPU.
    #[default]
    Lazy,
    /// Before the program starts: it sees only place 0 (one CPU for
    /// one-CPU places), as `taskset -c PLACE0` would show it.
    Early,
}

impl PinMain {
    /// Every spelling, as [`PinMain::as_str`] gives them.
    pub const NAMES: [&'static str; 2] = ["lazy", "early"];

    /// The spelling of the shim variable and the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            PinMain::Lazy => "lazy",
            PinMain::Early => "early",
        }
    }
}

/// A word that is not a [`PinMain`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not lazy or early")]
pub struct PinMainError(pub String);

impl std::str::FromStr for PinMain {
    type Err = PinMainError;
    fn from_str(s: &str) -> Result<PinMain, PinMainError> {
        [PinMain::Lazy, PinMain::Early]
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| PinMainError(s.to_string()))
    }
}

/// Everything `run` needs besides the plan.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The program and its arguments.
    pub program: OsString,
    pub args: Vec<OsString>,
    pub mechanism: Mechanism,
    /// Created-thread indices not to pin ([`crate::skip::parse_skip`]).
    pub skip: Vec<usize>,
    /// Variables to export unless already set (e.g. `pinsight_plan::omp_env`);
    /// filter them with [`env_exports`].
    pub env: Vec<(String, String)>,
    /// Sample threads while the program runs, for a report.
    pub report: bool,
    /// Poll interval of `--follow`.
    pub follow_interval: Duration,
    /// Sample interval of `--report`.
    pub sample_interval: Duration,
    /// Let the shim print one line per pinned thread.
    pub verbose: bool,
    /// When the main thread moves to place 0.
    pub pin_main: PinMain,
    /// The program's standard output goes to this process's standard
    /// error, leaving standard output to what the caller prints itself
    /// (`run --json`: one JSON document a reader can parse).
    pub stdout_to_stderr: bool,
}

impl RunOptions {
    /// Options for running `program args` with defaults: shim, no skip, no
    /// env, no report, 1 ms follow polling, 10 ms sampling.
    pub fn new(program: impl Into<OsString>, args: Vec<OsString>) -> RunOptions {
        RunOptions {
            program: program.into(),
            args,
            mechanism: Mechanism::Shim,
            skip: Vec::new(),
            env: Vec::new(),
            report: false,
            follow_interval: Duration::from_millis(1),
            sample_interval: Duration::from_millis(10),
            verbose: false,
            pin_main: PinMain::Lazy,
            stdout_to_stderr: false,
        }
    }

    /// [`RunOptions::new`] for `command`: the program, then its
    /// arguments; `None` when it is empty.
    pub fn for_command(command: &[OsString]) -> Option<RunOptions> {
        let (program, args) = command.split_first()?;
        Some(RunOptions::new(program, args.to_vec()))
    }

    /// One interval for both readers of /proc, the poll of
    /// [`Mechanism::Follow`] and the samples of `report`; `None` keeps
    /// each one's default.
    pub fn with_interval(self, interval: Option<Duration>) -> RunOptions {
        RunOptions {
            follow_interval: interval.unwrap_or(self.follow_interval),
            sample_interval: interval.unwrap_or(self.sample_interval),
            ..self
        }
    }
}

/// What happened.
#[derive(Clone, Debug, Serialize)]
pub struct RunOutcome {
    pub pid: i32,
    /// The exit code to hand on: the child's, or 128+signal.
    pub exit_code: i32,
    /// The signal that killed the child, if any.
    pub signal: Option<i32>,
    /// How threads were actually pinned (`None`: the plan pins nothing
    /// per thread).
    pub mechanism: Option<Mechanism>,
    /// Why the watcher pinned instead of the requested shim (or, with
    /// `mechanism` `None` under a per-thread plan, why nothing placed the
    /// threads of an image the shim never reached).
    pub fallback: Option<String>,
    /// When the main thread moved to place 0 (with per-thread pinning).
    pub pin_main: Option<PinMain>,
    /// Variables exported to the child (JSON: an object).
    #[serde(serialize_with = "as_object")]
    pub exported: Vec<(String, String)>,
    pub wall_ms: f64,
    /// Per-thread observations (with `report` or `Follow`).
    pub threads: Vec<ThreadRecord>,
    /// Delay figures (with `Follow`).
    pub follow: Option<FollowStats>,
    /// The memory policy the program started with (`bind:0`), when the
    /// plan has one.
    pub memory: Option<String>,
    /// The first pin the kernel refused, in words: the program did not run
    /// as planned, and `pinsight run` fails (exit 1) after it ends.
    pub refused: Option<String>,
    pub notes: Vec<String>,
}

impl RunOutcome {
    /// When the kernel refused a pin the plan asked for: the program ran,
    /// but not as planned; in words, with the reason and the program's own
    /// status.
    pub fn refusal(&self) -> Option<String> {
        let why = self.refused.as_deref()?;
        let status = match self.signal {
            Some(s) => format!("killed by signal {s}"),
            None => format!("exit {}", self.exit_code),
        };
        Some(format!(
            "{why}; the program ran ({status}) but not as planned"
        ))
    }
}

fn as_object<S: serde::Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

/// Why a launch failed. The command line turns each into its exit code
/// (a shell's 127 and 126 for a program that cannot start, else 1).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The program cannot be started (not found: 127, not executable:
    /// 126, fork failed: 1; [`SpawnError::exit_code`]).
    #[error(transparent)]
    Program(#[from] SpawnError),
    /// The plan's mask cannot be applied.
    #[error("cannot restrict the program to CPUs {mask}: {reason}")]
    Affinity { mask: CpuSet, reason: String },
    /// The plan's memory policy cannot be applied (weighted interleave
    /// on a kernel older than 6.9, nodes the cgroup forbids).
    #[error("cannot apply memory policy {policy}: {source}")]
    MemPolicy {
        policy: String,
        #[source]
        source: pinsight_sys::mempolicy::MemPolicyError,
    },
    /// The pinning shim could not be created.
    #[error("cannot create the pinning shim: {0}")]
    Shim(#[source] io::Error),
    /// Standard error could not be duplicated for the program's output.
    #[error("cannot give the program this process's standard error as its output: {0}")]
    StdoutToStderr(#[source] io::Error),
    /// The signal lifecycle could not be installed.
    #[error(transparent)]
    Signals(#[from] InterruptError),
    /// Waiting for the program failed.
    #[error("waiting for '{program}': {source}")]
    Wait {
        program: String,
        #[source]
        source: io::Error,
    },
}

impl LaunchError {
    /// The exit code a shell would give: 127 for a program not found,
    /// 126 for one that cannot be executed, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::Program(p) => p.exit_code(),
            _ => 1,
        }
    }
}

/// Variables that bind OpenMP threads themselves. Exported alongside a
/// per-thread mechanism they would bind twice (libgomp binds the initial
/// thread and sets worker affinities at creation, the shim then moves the
/// workers again), so they are left out when threads are pinned by pinsight.
pub const BINDING_VARS: &[&str] = &[
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "GOMP_CPU_AFFINITY",
    "KMP_AFFINITY",
];

/// Which of `wanted` to export: those not already set (`is_set`), minus
/// binding variables when pinsight pins threads itself. Returns the
/// exports and notes about what was left out and why.
pub fn env_exports(
    wanted: &[(String, String)],
    pins_threads: bool,
    is_set: impl Fn(&str) -> bool,
) -> (Vec<(String, String)>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (k, v) in wanted {
        if pins_threads && BINDING_VARS.contains(&k.as_str()) {
            continue;
        }
        if is_set(k) {
            notes.push(format!("{k} already set in the environment: left as is"));
            continue;
        }
        out.push((k.clone(), v.clone()));
    }
    if pins_threads {
        for k in BINDING_VARS {
            if is_set(k) {
                notes.push(format!(
                    "{k} is set: the OpenMP runtime will bind threads too; pinsight's pinning of new threads wins, but the main thread may be moved"
                ));
            }
        }
    }
    (out, notes)
}

/// Places as the shim reads them: `0;2;4-5`.
pub fn places_env(places: &[CpuSet]) -> String {
    places
        .iter()
        .map(|p| p.to_list_string())
        .collect::<Vec<_>>()
        .join(";")
}

/// The kernel's `MPOL_*` mode and node set for a planned memory policy.
pub fn kernel_policy(mem: &MemPlan) -> (i32, CpuSet) {
    let mode = match mem.mode {
        MemMode::Local => mempolicy::MPOL_LOCAL,
        MemMode::Bind => mempolicy::MPOL_BIND,
        MemMode::Interleave => mempolicy::MPOL_INTERLEAVE,
        MemMode::Preferred => mempolicy::MPOL_PREFERRED,
        MemMode::WeightedInterleave => mempolicy::MPOL_WEIGHTED_INTERLEAVE,
    };
    (mode, mem.nodes.iter().map(|n| *n as usize).collect())
}

/// Why the start of `program` failed: the plan's mask (`mask`) or memory
/// policy (`mem`) refused in the child, as the placement error it is;
/// anything else as the program's ([`SpawnError::from_io`]: 127, 126, 1).
fn start_error(
    e: StartError,
    program: &str,
    mask: Option<&CpuSet>,
    mem: Option<&MemPlan>,
) -> LaunchError {
    match (e.step, mask, mem) {
        (Step::Affinity, Some(mask), _) => LaunchError::Affinity {
            mask: mask.clone(),
            reason: match e.error.raw_os_error() {
                Some(libc::EINVAL) => {
                    "none of these CPUs is online and allowed by this process's cgroup".into()
                }
                _ => e.error.to_string(),
            },
        },
        (Step::MemPolicy, _, Some(mem)) => {
            let (mode, nodes) = kernel_policy(mem);
            LaunchError::MemPolicy {
                policy: mem.policy.clone(),
                source: mempolicy::refusal(mode, &nodes, e.error),
            }
        }
        _ => SpawnError::from_io(program, &e.error).into(),
    }
}

/// Whether applying `plan` needs threads pinned one by one (shim or
/// watcher), or a process mask does the whole job. One distinct place equal
/// to the process mask (e.g. `cpus:0`): every thread, skipped or not, ends
/// up on that set, so the mask is enough — no shim, no watcher, the cost of
/// taskset. Shared by `run` and `compare` so both apply a plan the same way.
pub fn pins_per_thread(plan: &Plan) -> bool {
    let one_place = plan.places.windows(2).all(|w| w[0] == w[1])
        && plan.places.first() == Some(&plan.process_mask);
    plan.pinned && !plan.places.is_empty() && !one_place
}

/// How a plan is applied to one program: decided once, before any spawn,
/// so everything pinsight cannot do is known (and said) before the program
/// runs. `run` and `compare` both build their commands from it.
#[derive(Clone, Debug)]
pub struct Application {
    /// Whether threads are pinned one by one ([`pins_per_thread`]).
    pub per_thread: bool,
    /// The mechanism that will actually pin threads (`None`: no per-thread
    /// pinning). May differ from the requested one: see `fallback`.
    pub mechanism: Option<Mechanism>,
    /// Why the shim was requested but the watcher will pin instead (the
    /// program is one the shim cannot reach, or the plan is too large to
    /// pass in the environment).
    pub fallback: Option<String>,
    /// When the main thread moves to place 0.
    pub pin_main: PinMain,
    /// The mask the program's main thread starts with (`None`: unchanged).
    pub start_mask: Option<CpuSet>,
    /// Variables exported to the program.
    pub exported: Vec<(String, String)>,
    /// What the user should know (variables left as they were, fallbacks).
    pub notes: Vec<String>,
    /// The shim's `PINSIGHT_*` variables (with `Mechanism::Shim`).
    shim_env: Vec<(String, String)>,
}

impl Application {
    /// Decides how to apply `plan` to `program`. `wanted_env` are the
    /// variables to export unless set (`is_set`); `requested` the
    /// mechanism the user asked for; `skip` and `verbose` go to the shim.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &Plan,
        program: &std::ffi::OsStr,
        requested: Mechanism,
        pin_main: PinMain,
        skip: &[usize],
        verbose: bool,
        wanted_env: &[(String, String)],
        is_set: impl Fn(&str) -> bool,
    ) -> Application {
        let per_thread = pins_per_thread(plan);
        let mut notes = Vec::new();
        let mut fallback = None;
        let mechanism = if !per_thread {
            None
        } else if requested == Mechanism::Shim {
            match program::preload_blocker(program) {
                Some(b) => {
                    notes.push(format!(
                        "{b}: threads are pinned by the /proc watcher instead of the shim (the follow mechanism)"
                    ));
                    fallback = Some(b.to_string());
                    Some(Mechanism::Follow)
                }
                None => Some(Mechanism::Shim),
            }
        } else {
            Some(requested)
        };
        // What the main thread starts with: the plan's whole mask, so the
        // program sizes itself from the planned CPUs; with early pinning
        // (or no per-thread pinning of a one-place plan) its place.
        let start_mask = if plan.places.is_empty() {
            None // os: no change
        } else if per_thread && pin_main == PinMain::Early {
            Some(plan.places[0].clone())
        } else {
            Some(plan.process_mask.clone())
        };
        let (exported, env_notes) = env_exports(wanted_env, per_thread, is_set);
        notes.extend(env_notes);
        let mut mechanism = mechanism;
        let mut shim_env = if mechanism == Some(Mechanism::Shim) {
            let mut v = vec![
                (shim::ENV_PLACES.to_string(), places_env(&plan.places)),
                (
                    shim::ENV_PROCESS_MASK.to_string(),
                    plan.process_mask.to_list_string(),
                ),
                (
                    shim::ENV_SKIP.to_string(),
                    skip.iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                (
                    shim::ENV_PIN_MAIN.to_string(),
                    pin_main.as_str().to_string(),
                ),
                (
                    shim::ENV_LAUNCHER_PID.to_string(),
                    std::process::id().to_string(),
                ),
            ];
            if verbose {
                v.push((shim::ENV_VERBOSE.to_string(), "1".to_string()));
            }
            v
        } else {
            Vec::new()
        };
        // The plan must reach the program whole: a variable the kernel
        // would refuse (execve's E2BIG, which the shell reports as the
        // program's "Argument list too long") goes to the watcher instead.
        if let Some(why) = env_too_large(&shim_env, plan.places.len()) {
            notes.push(format!(
                "{why}: threads are pinned by the /proc watcher instead of the shim (the follow mechanism)"
            ));
            fallback = Some(why);
            mechanism = Some(Mechanism::Follow);
            shim_env.clear();
        }
        Application {
            per_thread,
            mechanism,
            fallback,
            pin_main,
            start_mask,
            exported,
            notes,
            shim_env,
        }
    }

    /// [`Application::new`] for `run`'s options, the variables set in
    /// pinsight's own environment counted as set.
    fn of_run(plan: &Plan, opts: &RunOptions) -> Application {
        Application::new(
            plan,
            &opts.program,
            opts.mechanism,
            opts.pin_main,
            &opts.skip,
            opts.verbose,
            &opts.env,
            |k| std::env::var_os(k).is_some(),
        )
    }

    /// The places the threads of `pid` were planned to get, to match the
    /// watcher's threads to.
    fn expected<'a>(&self, plan: &'a Plan, skip: &'a [usize], pid: i32) -> Expected<'a> {
        Expected {
            places: &plan.places,
            skip,
            lazy_main: self.pin_main == PinMain::Lazy,
            pid,
        }
    }

    /// Whether spawning needs a [`ShimFile`].
    pub fn needs_shim(&self) -> bool {
        self.mechanism == Some(Mechanism::Shim)
    }

    /// The watcher's pinning job, when the watcher pins threads.
    pub fn follow_plan(&self, plan: &Plan, skip: &[usize]) -> Option<FollowPlan> {
        (self.mechanism == Some(Mechanism::Follow)).then(|| self.pinning(plan, skip))
    }

    /// The pinning job of `plan`'s places, should the watcher pin threads.
    fn pinning(&self, plan: &Plan, skip: &[usize]) -> FollowPlan {
        FollowPlan {
            places: plan.places.clone(),
            skip: skip.to_vec(),
            process_mask: plan.process_mask.clone(),
            pin_main_lazily: self.pin_main == PinMain::Lazy,
        }
    }

    /// Adds the exports and, with the shim, `LD_PRELOAD` and its variables
    /// to `spawn`, and makes the child inherit the shim's memfd (`run`, and
    /// the measured runs of `compare`). The start mask is the caller's to
    /// apply (see [`Application::start_mask`]).
    pub fn apply(&self, spawn: &mut Spawn, shim_file: Option<&ShimFile>) {
        let (env, fd) = self.child_setup(shim_file);
        for (k, v) in env {
            spawn.env(k, v);
        }
        if let Some(fd) = fd {
            spawn.inherit_fd(fd);
        }
    }

    /// The variables to set, in order, and the shim's descriptor to
    /// inherit.
    fn child_setup(&self, shim_file: Option<&ShimFile>) -> (Vec<(String, String)>, Option<RawFd>) {
        let mut env = self.exported.clone();
        let Some(shim_file) = shim_file.filter(|_| self.needs_shim()) else {
            return (env, None);
        };
        let existing = std::env::var("LD_PRELOAD").ok();
        env.push((
            "LD_PRELOAD".to_string(),
            shim::preload_value(shim_file.path(), existing.as_deref()),
        ));
        env.extend(self.shim_env.iter().cloned());
        let fd = shim_file.inherit_fd();
        if let Some(fd) = fd {
            env.push((shim::ENV_SHIM_FD.to_string(), fd.to_string()));
        }
        (env, fd)
    }
}

/// The most bytes one environment string may have, `NAME=VALUE` and its
/// terminating NUL included (Linux's `MAX_ARG_STRLEN`, 32 pages of 4 KiB:
/// execve(2), "Limits on size of arguments and environment").
pub const MAX_ENV_STRING: usize = 32 * 4096;

/// The most bytes pinsight's own shim variables may take together, so
/// the program's environment and arguments keep nearly all of the
/// kernel's total (`ARG_MAX`, a quarter of an 8 MiB stack by default).
pub const MAX_SHIM_ENV: usize = 256 * 1024;

/// Why the shim's variables cannot be passed in the environment (`None`:
/// they can): one longer than [`MAX_ENV_STRING`], or all together more
/// than [`MAX_SHIM_ENV`].
pub fn env_too_large(vars: &[(String, String)], places: usize) -> Option<String> {
    let size = |(k, v): &(String, String)| k.len() + 1 + v.len() + 1;
    let total: usize = vars.iter().map(size).sum();
    if let Some(var) = vars.iter().find(|kv| size(kv) > MAX_ENV_STRING) {
        return Some(format!(
            "the plan's {places} places take {} bytes in {}, more than one environment variable may hold ({MAX_ENV_STRING}, the kernel's MAX_ARG_STRLEN)",
            size(var),
            var.0
        ));
    }
    (total > MAX_SHIM_ENV).then(|| {
        format!(
            "the plan's {places} places take {total} bytes of environment, more than pinsight passes to a program ({MAX_SHIM_ENV})"
        )
    })
}

/// The shim, created for a launch: a sealed memfd, else a private file.
pub fn create_shim() -> Result<(ShimFile, Option<String>), LaunchError> {
    let shim = ShimFile::create().map_err(LaunchError::Shim)?;
    let note = shim.fallback_reason.clone();
    Ok((shim, note))
}

/// Runs `opts.program` under `plan` and waits for it.
pub fn run(plan: &Plan, opts: &RunOptions) -> Result<RunOutcome, LaunchError> {
    let program = opts.program.to_string_lossy().into_owned();
    // Refused here, before any mask or policy is touched: a program that
    // cannot be found or whose interpreter is missing.
    let resolved = Program::resolve(&opts.program)?;
    resolved.check()?;
    let app = Application::of_run(plan, opts);
    let mechanism = app.mechanism;
    let mut notes = app.notes.clone();
    let mut cmd = command(&resolved, opts)?;
    let shim = shim_for(&app, &mut notes)?;
    app.apply(&mut cmd, shim.as_ref());
    let log = thread_log(&mut cmd, app.needs_shim() && shim.is_some(), &mut notes);
    let start_mask = app.start_mask.clone();
    let exported = app.exported.clone();

    // The handlers now; the cleanup thread only if a signal comes (or a
    // watcher needs it): `run` of a short program starts no thread but the
    // watcher (with per-thread pinning: the shim's guard, see below).
    let main = interrupt::main_owns_exit();
    interrupt::install_handlers()?;
    let t0 = Instant::now();
    if let Some(mask) = &start_mask {
        cmd.affinity_words(affinity::to_kernel_words(mask));
    }
    if let Some(mem) = &plan.memory {
        let (mode, nodes) = kernel_policy(mem);
        cmd.mempolicy(mode, &nodes);
    }
    let child = cmd
        .start()
        .map_err(|e| start_error(e, &program, start_mask.as_ref(), plan.memory.as_ref()))?;
    let pid = child.id();
    // From here a signal reaches the program (one that came since the
    // install reaches it now).
    let tree = interrupt::watch_descendants();
    let watcher = start_watcher(&app, plan, opts, pid);

    interrupt::wait_exited(pid);
    let Watched {
        records: mut threads,
        takeovers,
    } = finish_watcher(watcher, &mut notes);
    // The report names what actually placed the threads: the watcher, when
    // it had to take over from the shim.
    let mut mechanism = mechanism;
    let mut fallback = app.fallback.clone();
    if let Some(why) = note_takeovers(&takeovers, &mut notes) {
        mechanism = Some(Mechanism::Follow);
        fallback = Some(why);
    }
    let status = wait_child(child, &program)?;
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (logged, events) = read_log(log.as_ref(), &mut notes);
    // The shim's handshake: an image it was not loaded into that ended
    // before the watcher saw it is never reported as placed by the shim.
    if mechanism == Some(Mechanism::Shim) && log.is_some() {
        if let Some(why) = note_unreached(&events, &mut notes) {
            mechanism = None;
            fallback = Some(why.to_string());
        }
    }
    if app.per_thread {
        assign_planned(&mut threads, &logged, &app.expected(plan, &opts.skip, pid));
    }
    let refused = refusal(&threads, &logged, &plan.places, &plan.process_mask);
    drop(tree);
    drop(main);
    remove_shim(shim, &mut notes);
    let signal = status.signal();
    let exit_code = pinsight_lifecycle::exit::status_code(&status);
    let follow = (mechanism == Some(Mechanism::Follow))
        .then(|| follow_stats(&threads, opts.follow_interval));
    Ok(RunOutcome {
        pid,
        exit_code,
        signal,
        mechanism,
        fallback,
        pin_main: app.per_thread.then_some(app.pin_main),
        exported,
        wall_ms,
        threads,
        follow,
        memory: plan.memory.as_ref().map(|m| m.policy.clone()),
        refused,
        notes,
    })
}

/// The shim file, when the mechanism is the shim (its fallback noted).
fn shim_for(app: &Application, notes: &mut Vec<String>) -> Result<Option<ShimFile>, LaunchError> {
    if !app.needs_shim() {
        return Ok(None);
    }
    let (shim, note) = create_shim()?;
    notes.extend(note);
    Ok(Some(shim))
}

/// Removes the shim file, noting a failure.
fn remove_shim(shim: Option<ShimFile>, notes: &mut Vec<String>) {
    if let Some(s) = shim {
        if let Err(e) = s.remove() {
            notes.push(format!("could not remove the pinning shim: {e}"));
        }
    }
}

/// Notes each image the watcher took over from the shim; the first's
/// reason is the fallback.
fn note_takeovers(takeovers: &[String], notes: &mut Vec<String>) -> Option<String> {
    for why in takeovers {
        notes.push(format!(
            "{why}: the program executed it in place, and the /proc watcher pinned its threads instead of the shim (the follow mechanism)"
        ));
    }
    takeovers.first().cloned()
}

/// The shim's handshake: why an image it was not loaded into, that ended
/// before the watcher saw it, had its threads unplaced (noted), if one did.
fn note_unreached(
    events: &[threadlog::ImageEvent],
    notes: &mut Vec<String>,
) -> Option<&'static str> {
    let why = threadlog::unreached(events)?;
    notes.push(format!(
        "{why} (a 32-bit or static program?), and it ended before the /proc watcher saw it: its threads were not placed one by one, they ran on the CPUs they inherited"
    ));
    Some(why)
}

/// The command that starts the program: the file the PATH search found,
/// named as typed (argv[0], as execvp gives it), so the child makes one
/// execve, not one per PATH entry.
fn command(resolved: &Program, opts: &RunOptions) -> Result<Spawn, LaunchError> {
    let mut cmd = match resolved.exec_path() {
        Some(path) => {
            let mut c = Spawn::new(path);
            c.arg0(&opts.program);
            c
        }
        None => Spawn::new(&opts.program),
    };
    cmd.args(&opts.args);
    if opts.stdout_to_stderr {
        use std::os::fd::AsFd;
        let err = io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(LaunchError::StdoutToStderr)?;
        cmd.stdout(Stdio::Fd(err));
    }
    Ok(cmd)
}

/// With the shim (`wanted`), the log through which the report matches
/// threads to places by tid (a thread that ended unseen shifts nothing),
/// which also carries the pins the kernel refused; the child inherits it.
fn thread_log(cmd: &mut Spawn, wanted: bool, notes: &mut Vec<String>) -> Option<ThreadLog> {
    match wanted.then(ThreadLog::create) {
        Some(Ok(log)) => {
            cmd.env(ENV_THREAD_LOG_FD, log.fd().to_string());
            cmd.inherit_fd(log.fd());
            Some(log)
        }
        Some(Err(e)) => {
            notes.push(format!(
                "no thread log ({e}): threads are matched to places in order of first sight"
            ));
            None
        }
        None => None,
    }
}

/// The watcher of the child `pid`, when the report samples threads or a
/// mechanism pins them. With the shim it also stands guard: should the
/// program execute in place an image the shim cannot reach
/// (`sh -c ./prog32`), it pins that image's threads (see [`crate::watch`]).
fn start_watcher(app: &Application, plan: &Plan, opts: &RunOptions, pid: i32) -> Option<Watcher> {
    let mechanism = app.mechanism;
    let takeover = (mechanism == Some(Mechanism::Shim)).then(|| Takeover {
        plan: app.pinning(plan, &opts.skip),
        poll: opts.follow_interval,
    });
    (opts.report || mechanism.is_some()).then(|| {
        let follow = app.follow_plan(plan, &opts.skip);
        let planned = if app.per_thread {
            plan.places.clone()
        } else {
            Vec::new()
        };
        let cfg = WatchConfig {
            pid,
            follow,
            poll: if mechanism == Some(Mechanism::Follow) {
                opts.follow_interval
            } else {
                opts.sample_interval
            },
            sample_every: if opts.report {
                opts.sample_interval
            } else {
                Duration::ZERO
            },
        };
        Watcher::start_guarded(FsRoot::live(), cfg, takeover, planned, opts.skip.clone())
    })
}

/// What the watcher saw, once stopped; a crashed watcher is noted.
fn finish_watcher(watcher: Option<Watcher>, notes: &mut Vec<String>) -> Watched {
    match watcher.map(Watcher::finish_watched) {
        Some(Ok(w)) => w,
        Some(Err(e)) => {
            notes.push(e.to_string());
            Watched::default()
        }
        None => Watched::default(),
    }
}

/// Reaps the child (a signal interrupting the wait retries it).
fn wait_child(mut child: Child, program: &str) -> Result<std::process::ExitStatus, LaunchError> {
    child.wait().map_err(|source| LaunchError::Wait {
        program: program.to_string(),
        source,
    })
}

/// The shim's thread log: the threads it placed and its image events
/// (none without a log; an unreadable log is noted).
fn read_log(
    log: Option<&ThreadLog>,
    notes: &mut Vec<String>,
) -> (Vec<threadlog::LoggedThread>, Vec<threadlog::ImageEvent>) {
    match log.map(ThreadLog::read_all) {
        Some(Ok(l)) => l,
        Some(Err(e)) => {
            notes.push(format!("cannot read the thread log: {e}"));
            (Vec::new(), Vec::new())
        }
        None => (Vec::new(), Vec::new()),
    }
}

/// A finished run of PID 42 that exited 0 with `notes`, for the tests of
/// this crate's outcome and its views.
#[cfg(test)]
impl RunOutcome {
    pub(crate) fn sample(notes: Vec<String>) -> RunOutcome {
        RunOutcome {
            pid: 42,
            exit_code: 0,
            signal: None,
            mechanism: None,
            fallback: None,
            pin_main: None,
            exported: Vec::new(),
            wall_ms: 1.0,
            threads: Vec::new(),
            follow: None,
            memory: None,
            refused: None,
            notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pins_per_thread;

    fn plan(pinned: bool, mask: &str, places: &[&str]) -> pinsight_plan::Plan {
        let places = places.iter().map(|p| p.parse().unwrap()).collect();
        pinsight_plan::Plan {
            process_mask: mask.parse().unwrap(),
            pinned,
            ..pinsight_plan::Plan::pinned_to("test".into(), places, Vec::new())
        }
    }

    #[test]
    fn one_place_plans_are_a_mask_and_others_pin_per_thread() {
        assert!(
            !pins_per_thread(&plan(true, "0", &["0"])),
            "cpus:0 is taskset's job"
        );
        assert!(
            !pins_per_thread(&plan(true, "0", &["0", "0"])),
            "oversubscribed on one CPU"
        );
        assert!(pins_per_thread(&plan(true, "0-1", &["0", "1"])));
        assert!(
            !pins_per_thread(&plan(false, "0-1", &["0-1", "0-1"])),
            "set policies float"
        );
        assert!(
            !pins_per_thread(&plan(false, "0-1", &[])),
            "os changes nothing"
        );
    }
    use super::*;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.into(), v.into())
    }

    #[test]
    fn binding_vars_dropped_when_pinsight_pins() {
        let wanted = vec![
            kv("OMP_NUM_THREADS", "4"),
            kv("OMP_PLACES", "{0},{1}"),
            kv("OMP_PROC_BIND", "close"),
        ];
        let (out, notes) = env_exports(&wanted, true, |_| false);
        assert_eq!(out, vec![kv("OMP_NUM_THREADS", "4")]);
        assert!(notes.is_empty());
        let (out, _) = env_exports(&wanted, false, |_| false);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn user_settings_win_and_are_noted() {
        let wanted = vec![kv("OMP_NUM_THREADS", "4"), kv("RAYON_NUM_THREADS", "4")];
        let (out, notes) = env_exports(&wanted, true, |k| {
            k == "OMP_NUM_THREADS" || k == "OMP_PROC_BIND"
        });
        assert_eq!(out, vec![kv("RAYON_NUM_THREADS", "4")]);
        assert!(notes
            .iter()
            .any(|n| n.starts_with("OMP_NUM_THREADS already set")));
        assert!(notes.iter().any(|n| n.starts_with("OMP_PROC_BIND is set")));
    }

    #[test]
    fn a_plan_too_large_for_the_environment_is_named_with_its_size() {
        let small = vec![kv("PINSIGHT_PLACES", "0;1")];
        assert_eq!(env_too_large(&small, 2), None);
        // 70000 places round robin over two CPUs: "0;1;0;1;…".
        let places = ["0", "1"].repeat(35_000).join(";");
        let big = vec![kv("PINSIGHT_PLACES", &places)];
        let why = env_too_large(&big, 70_000).unwrap();
        assert_eq!(
            why,
            "the plan's 70000 places take 140016 bytes in PINSIGHT_PLACES, more than one environment variable may hold (131072, the kernel's MAX_ARG_STRLEN)"
        );
        let many: Vec<_> = (0..3)
            .map(|i| kv(&format!("V{i}"), &"0".repeat(100_000)))
            .collect();
        assert!(env_too_large(&many, 3).unwrap().contains("300012 bytes"));
    }

    #[test]
    fn places_env_format() {
        let p = vec![
            CpuSet::single(0),
            CpuSet::single(2),
            CpuSet::parse_list("4-5").unwrap(),
        ];
        assert_eq!(places_env(&p), "0;2;4-5");
    }

    #[test]
    fn a_refused_pin_is_said_with_the_programs_status() {
        let mut o = super::RunOutcome::sample(Vec::new());
        assert_eq!(o.refusal(), None);
        o.refused = Some("CPU 3 refused".into());
        assert_eq!(
            o.refusal().unwrap(),
            "CPU 3 refused; the program ran (exit 0) but not as planned"
        );
        (o.exit_code, o.signal) = (137, Some(9));
        assert_eq!(
            o.refusal().unwrap(),
            "CPU 3 refused; the program ran (killed by signal 9) but not as planned"
        );
    }

    #[test]
    fn pin_main_reads_its_own_spellings() {
        for p in [PinMain::Lazy, PinMain::Early] {
            assert_eq!(p.as_str().parse::<PinMain>(), Ok(p));
        }
        assert_eq!(
            PinMain::NAMES.map(|n| n.parse::<PinMain>().unwrap().as_str()),
            PinMain::NAMES
        );
        let e = "soon".parse::<PinMain>().unwrap_err();
        assert_eq!(e.to_string(), "'soon' is not lazy or early");
    }

    #[test]
    fn a_launch_failure_exits_as_a_shell_would() {
        let missing = io::Error::from_raw_os_error(libc::ENOENT);
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        let code = |e: LaunchError| e.exit_code();
        assert_eq!(code(SpawnError::from_io("nope", &missing).into()), 127);
        assert_eq!(code(SpawnError::from_io("./x", &denied).into()), 126);
        assert_eq!(code(LaunchError::Shim(io::Error::other("full"))), 1);
    }

    #[test]
    fn options_for_a_command_and_one_interval_for_both_readers() {
        assert!(RunOptions::for_command(&[]).is_none());
        let o = RunOptions::for_command(&["prog".into(), "-x".into()]).unwrap();
        assert_eq!(o.program, OsString::from("prog"));
        assert_eq!(o.args, vec![OsString::from("-x")]);
        let kept = o.clone().with_interval(None);
        assert_eq!(
            (kept.follow_interval, kept.sample_interval),
            (Duration::from_millis(1), Duration::from_millis(10))
        );
        let both = o.with_interval(Some(Duration::from_millis(5)));
        assert_eq!(both.follow_interval, Duration::from_millis(5));
        assert_eq!(both.sample_interval, Duration::from_millis(5));
    }
}
