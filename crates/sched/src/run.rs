//! One `pinsight sched` experiment, start to end: start the program (or
//! take running processes), manage their threads period by period, stop on
//! the program's end or on SIGINT, SIGTERM or SIGHUP (the one lifecycle of
//! `pinsight_lifecycle::interrupt`), restore every affinity, and return
//! the report with the exit code a shell would give.
//!
//! A signal stops scheduling and is passed on to every process of the
//! program's tree (pinsight is their child subreaper, prctl(2)
//! `PR_SET_CHILD_SUBREAPER`, so background children that outlived the
//! program are in it); the exit code is then 128 + N. A process that
//! ignores the signal (a non-interactive shell's background jobs ignore
//! SIGINT, POSIX XCU 2.11) keeps running, unpinned. Processes given by
//! pid are not pinsight's: a signal stops the scheduling and restores
//! their affinities, it is not passed on.

use crate::manager::{Config, ManageError, Manager, Report};
use crate::sf::SfSource;
use pinsight_lifecycle::exit::{self, SpawnError};
use pinsight_lifecycle::interrupt::{self, InterruptError};
use pinsight_sys::progress::Progress;
use pinsight_sys::spawn::{Child, Spawn};
use pinsight_sys::FsRoot;
use std::ffi::OsString;
use std::time::{Duration, Instant};

/// What to manage.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// Start this program (argv) and manage it and what it starts.
    Command(&'a [OsString]),
    /// Manage these running processes.
    Pids(&'a [i32]),
}

impl<'a> Target<'a> {
    /// The processes `pids` when there are any, else the program `command`.
    pub fn new(pids: &'a [i32], command: &'a [OsString]) -> Target<'a> {
        if pids.is_empty() {
            Target::Command(command)
        } else {
            Target::Pids(pids)
        }
    }
}

/// Feeds `manager` this machine's dynamic capacity (a `prepare` for
/// [`run`]): Intel HFI changes from the thermal netlink family (as `topo
/// --watch` reads them), read on a thread of their own and applied at the
/// start of each period; a CPU the hardware vacates (performance 0) gets
/// no thread. Where there is no HFI (other CPUs, VMs, kernels without it)
/// the report says why.
pub fn hfi_capacity(manager: &mut Manager) {
    let live = FsRoot::live();
    match pinsight_topology::hfi_watch::performance_feed(&live) {
        Ok(rx) => manager.capacity_updates(rx, "Intel HFI via thermal netlink"),
        Err(why) => manager.capacity_unavailable(&why),
    }
}

/// How the experiment ended; as JSON (`sched --json`), the report's
/// fields then `exit_code` and `stopped_by_signal`.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    #[serde(flatten)]
    pub report: Report,
    /// The program's exit code (128 + N when stopped by signal N; 0 for
    /// processes given by pid that ended on their own).
    pub exit_code: i32,
    /// The signal that stopped the experiment, if one did.
    #[serde(rename = "stopped_by_signal")]
    pub signal: Option<i32>,
}

/// Why the experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program cannot be started (126, 127 or 1).
    #[error(transparent)]
    Program(#[from] SpawnError),
    /// The signal lifecycle could not be installed.
    #[error(transparent)]
    Interrupt(#[from] InterruptError),
    /// The processes cannot be managed.
    #[error(transparent)]
    Manage(#[from] ManageError),
    /// Waiting for the program failed.
    #[error("waiting for '{program}': {source}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs the experiment. `prepare` sets the manager up before the first
/// period (e.g. a capacity feed). `progress` sees one task of unknown
/// length, "scheduling (POLICY)", stepped every period. The caller holds
/// `pinsight_lifecycle::interrupt::main_handles_exit` while it reports.
pub fn run(
    fs: FsRoot,
    cfg: Config,
    target: Target<'_>,
    sf: Box<dyn SfSource>,
    prepare: impl FnOnce(&mut Manager),
    progress: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    interrupt::install()?;
    progress.begin(&format!("scheduling ({})", cfg.policy.name()), 0, 0);
    let mut periods = 0;
    let tick = || {
        periods += 1;
        progress.step("", periods);
    };
    let outcome = run_target(fs, cfg, target, sf, prepare, tick);
    progress.end();
    outcome
}

/// [`run`] between the progress task's begin and end; `tick` is called
/// every period.
fn run_target(
    fs: FsRoot,
    cfg: Config,
    target: Target<'_>,
    sf: Box<dyn SfSource>,
    prepare: impl FnOnce(&mut Manager),
    tick: impl FnMut(),
) -> Result<Outcome, RunError> {
    match target {
        Target::Command(argv) => run_command(fs, cfg, argv, sf, prepare, tick),
        Target::Pids(pids) => {
            let mut manager = Manager::new(fs, cfg, pids, sf)?;
            prepare(&mut manager);
            let mut tick = tick;
            let report = manager.run(|d| {
                tick();
                interrupt::wait(d).is_some()
            });
            let signal = interrupt::stopped();
            Ok(Outcome {
                report,
                exit_code: signal.map_or(0, exit::signal_code),
                signal,
            })
        }
    }
}

fn run_command(
    fs: FsRoot,
    mut cfg: Config,
    argv: &[OsString],
    sf: Box<dyn SfSource>,
    prepare: impl FnOnce(&mut Manager),
    mut tick: impl FnMut(),
) -> Result<Outcome, RunError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(SpawnError::NotFound {
            program: String::new(),
            searched_path: true,
        }
        .into());
    };
    let name = program.to_string_lossy().into_owned();
    // Orphans of the program (started in the background by a parent that
    // then exited) are reparented to pinsight, which keeps managing them.
    if pinsight_sys::process::set_child_subreaper().is_ok() {
        cfg.orphans_of = Some(pinsight_sys::process::getpid());
    }
    let _tree = interrupt::watch_descendants();
    let mut child = Spawn::new(program)
        .args(args)
        .start()
        .map_err(|e| SpawnError::from_io(name.as_str(), &e.error))?;
    let pid = child.id();
    let mut manager = match Manager::new(fs, cfg, &[pid], sf) {
        Ok(m) => m,
        Err(e) => {
            let _ = child.wait();
            return Err(e.into());
        }
    };
    prepare(&mut manager);
    let mut status = None;
    let report = manager.run(|d| {
        tick();
        if status.is_some() {
            // The program has ended; processes it started still run.
            return interrupt::wait(d).is_some();
        }
        // Sleep the period out, looking at the program every 10 ms so its
        // end is seen at once (the next period finds what is left).
        let until = Instant::now() + d;
        loop {
            if let Ok(Some(s)) = child.try_wait() {
                status = Some(s);
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            if interrupt::wait(left.min(Duration::from_millis(10))).is_some() {
                return true;
            }
        }
    });
    // Affinities are restored (Manager::run); now the program's end.
    let signal = interrupt::stopped();
    let exit_code = match (signal, status) {
        (Some(sig), _) => {
            // The signal has reached the whole tree before the watch ends.
            interrupt::wait_for_cleanup(Duration::from_secs(5));
            reap_briefly(&mut child);
            exit::signal_code(sig)
        }
        (None, Some(s)) => exit::status_code(&s),
        (None, None) => exit::status_code(&child.wait().map_err(|source| RunError::Wait {
            program: name.clone(),
            source,
        })?),
    };
    Ok(Outcome {
        report,
        exit_code,
        signal,
    })
}

/// Gives the program a moment to end after the signal was passed on, and
/// reaps it if it did (a program that ignores the signal keeps running).
fn reap_briefly(child: &mut Child) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
