//! Running the design: for every slot not yet in the journal, switch the
//! governor if needed, run `--prepare`, run the program under the slot's
//! arm, append the record to the journal (synced in batches, see
//! [`pinsight_lifecycle::journal`]) and report progress.
//!
//! What actually runs a program is an [`Executor`]: [`LiveExecutor`] on
//! this machine, or a deterministic fake in tests, so the loop's rules
//! (skipping done slots, stopping on failure, interruption) are tested
//! without timing noise.

use crate::command::ShimError;
use crate::command::{PreparedArm, Shim};
use crate::design::{schedule, Phase, Slot};
use crate::journal::{ArmHeader, Header, JournalWriter, RankTimes, RunLine};
use crate::output::{Capture, CaptureError, Kept};
use crate::program_metric::MetricSpec;
use crate::request::{Input, Names};
use pinsight_cpuset::CpuSet;
use pinsight_launch::watch::{WatchConfig, Watcher};
use pinsight_lifecycle::journal::JournalError;
use pinsight_measure::{
    GovernorError, GovernorGuard, Measurer, Metric, Options, RunError, RunRecord,
};
use pinsight_sys::progress::Progress;
use pinsight_sys::spawn::{Prebuilt, Spawn, Stdio as SpawnStdio};
use pinsight_sys::FsRoot;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Runs the program of one arm, the `--prepare` command, and switches
/// governors.
pub trait Executor {
    /// Runs the measured program for `slot` (under arm `slot.arm`, an
    /// index into the header's arms).
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError>;
    /// [`Executor::run`] with the ranks of a run under a launcher (the
    /// journal keeps them); the default has none.
    fn run_ranks(&mut self, slot: &Slot) -> Result<(RunRecord, Option<RankTimes>), RunError> {
        self.run(slot).map(|r| (r, None))
    }
    /// Runs `--prepare`, if any. Err: why it failed.
    fn prepare(&mut self) -> Result<(), RunError>;
    /// [`Executor::prepare`] before the run of `slot`; an executor that
    /// keeps output keeps the prepare command's too
    /// ([`Executor::take_prepare_output`]). The default runs `prepare`.
    fn prepare_for(&mut self, _slot: &Slot) -> Result<(), RunError> {
        self.prepare()
    }
    /// The output of the `--prepare` command just run, when kept.
    fn take_prepare_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        None
    }
    /// Keeps every run's output beside `journal` (files named by
    /// `arm_ids`, header order) from now on; the default keeps none (a
    /// simulation). The live executor is given its capture when built.
    fn keep_output_in(
        &mut self,
        _journal: &std::path::Path,
        _arm_ids: Vec<String>,
    ) -> Result<(), CaptureError> {
        Ok(())
    }
    /// Puts `governor` in place (None: leave the machine as it is).
    fn set_governor(&mut self, governor: Option<&str>) -> Result<(), SwitchError>;
    /// Restores the machine (governor) and removes what the executor set
    /// up; called once when the experiment ends, Ctrl-C included.
    fn finish(&mut self) -> Result<(), SwitchError> {
        Ok(())
    }
    /// The output of the run just done, when this executor keeps it
    /// ([`crate::output`]); the default keeps none.
    fn take_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        None
    }
}

/// A governor could not be put in place or restored.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error(transparent)]
    Set(#[from] GovernorError),
    /// Restoring the previous governor failed.
    #[error(transparent)]
    Restore(pinsight_measure::RestoreError),
}

/// Why the experiment could not go on (a failed run is not an error: it
/// is measured, see [`Outcome::StoppedOnFailure`]).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Governor(#[from] SwitchError),
    /// The prepare command failed before run `run` (1-based slot).
    #[error("the prepare command failed before run {run}: {source}")]
    Prepare { run: usize, source: RunError },
    /// The program could not be started or waited for.
    #[error(transparent)]
    Run(RunError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Shim(#[from] ShimError),
    /// A run's output could not be kept.
    #[error(transparent)]
    Output(#[from] CaptureError),
}

impl ExperimentError {
    /// The exit status: a program's that could not run (the shell's
    /// convention), else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            ExperimentError::Run(r) => r.exit_code(),
            _ => 1,
        }
    }

    /// The message with the prepare command named by `name`.
    pub fn named(&self, name: Names<'_>) -> String {
        match self {
            ExperimentError::Prepare { run, source } => {
                format!("{} failed before run {run}: {source}", name(Input::Prepare))
            }
            e => e.to_string(),
        }
    }
}

/// Steers the experiment run by run (a run budget); progress itself goes
/// to a [`Progress`].
pub trait Gate {
    /// The output the run wrote (as kept: see [`crate::output`]), just
    /// before [`Gate::journaled`]; `label` names the arm and run
    /// (`--show-output` prints it).
    fn output(&mut self, _label: &str, _line: &RunLine, _text: &str) {}
    /// Whether to run `slot` now; false skips it (not run, not journaled:
    /// a resume runs it). A run budget says no here; compare never does.
    fn proceed(&mut self, _slot: &Slot, _arm: &str) -> bool {
        true
    }
    /// The kept output of the `--prepare` command run before a slot;
    /// `label` is `prepare before ARM, measured run N (slot S)`.
    fn prepare_output(&mut self, _label: &str, _text: &str) {}
    /// A run was journaled.
    fn journaled(&mut self, _line: &RunLine) {}
    /// How progress names arm `arm` (default: its id).
    fn label(&self, arm: &str) -> String {
        arm.to_string()
    }
}

/// Runs every slot: compare's own gate.
pub struct Always;
impl Gate for Always {}

/// How [`execute`] ended.
#[derive(Debug)]
pub enum Outcome {
    Complete,
    /// A cleanup signal arrived; the run in flight was discarded.
    Interrupted,
    /// A run failed and failures are not ignored.
    StoppedOnFailure {
        slot: usize,
        arm: String,
        why: String,
    },
    /// The experiment could not go on.
    Error(ExperimentError),
}

/// Slots already done according to `runs`: the latest attempt succeeded,
/// or it failed and failures are ignored.
pub fn done_slots(runs: &[RunLine], ignore_failure: bool) -> BTreeMap<usize, bool> {
    done_slots_with(runs, ignore_failure, 0)
}

/// [`done_slots`] under a rerun limit: a slot whose latest attempt
/// succeeded but was disturbed is not done while its disturbed attempts
/// so far ([`disturbed_attempts`]) leave a rerun within `rerun_disturbed`
/// (a resume after Ctrl-C between a disturbed run and its rerun reruns
/// it, and never more often than one uninterrupted experiment would).
pub fn done_slots_with(
    runs: &[RunLine],
    ignore_failure: bool,
    rerun_disturbed: usize,
) -> BTreeMap<usize, bool> {
    let attempts = disturbed_attempts(runs);
    crate::analysis::latest_attempts(runs)
        .into_iter()
        .map(|(s, r)| {
            let done = match r.failure() {
                Some(_) => ignore_failure,
                None => {
                    !r.record.disturbed()
                        || attempts.get(&s).copied().unwrap_or(0) > rerun_disturbed
                }
            };
            (s, done)
        })
        .filter(|(_, done)| *done)
        .collect()
}

/// Per slot, how many of its journaled attempts succeeded but were
/// flagged disturbed: the first is the slot's own run, each further one a
/// rerun already spent.
pub fn disturbed_attempts(runs: &[RunLine]) -> BTreeMap<usize, usize> {
    let mut n: BTreeMap<usize, usize> = BTreeMap::new();
    for r in runs
        .iter()
        .filter(|r| r.failure().is_none() && r.record.disturbed())
    {
        *n.entry(r.slot).or_default() += 1;
    }
    n
}

/// Runs every slot of `header`'s design that `previous` (journal lines
/// already written) does not cover, appending each run to `journal`.
/// `interrupted` is polled between and after runs; `progress` sees one
/// step per run (begun and ended by the caller, who names the task).
///
/// A slot runs again, at once and up to `rerun_disturbed` times, while its
/// run is flagged disturbed ([`pinsight_measure::Disturbance::disturbed`]):
/// every attempt is journaled, and the latest attempt of a slot is the one
/// analysed. On a resume the disturbed attempts in `previous` count against
/// the limit.
#[allow(clippy::too_many_arguments)] // the loop's whole state; a struct would only rename them
pub fn execute(
    header: &Header,
    previous: &[RunLine],
    journal: &mut JournalWriter,
    exec: &mut dyn Executor,
    progress: &mut dyn Progress,
    gate: &mut dyn Gate,
    ignore_failure: bool,
    rerun_disturbed: usize,
    interrupted: &dyn Fn() -> bool,
) -> Outcome {
    let slots = schedule(header.arms.len(), header.runs, header.warmup, header.seed);
    let done = done_slots_with(previous, ignore_failure, rerun_disturbed);
    let mut runner = SlotRunner {
        header,
        journal,
        exec,
        progress,
        gate,
        ignore_failure,
        rerun_disturbed,
        interrupted,
        finished: done.len(),
        // Reruns already spent on each slot by earlier sessions (a resume):
        // the next attempt of a slot with k disturbed attempts is rerun k.
        reruns: disturbed_attempts(previous),
    };
    let mut next = 0;
    while next < slots.len() {
        let slot = &slots[next];
        next += 1;
        if done.contains_key(&slot.index) {
            continue;
        }
        match runner.attempt(slot) {
            Ok(Attempt::Again) => next -= 1, // the same slot again
            Ok(Attempt::Done) => {}
            Err(outcome) => return outcome,
        }
    }
    Outcome::Complete
}

/// What became of one attempt at a slot that did not end the experiment.
enum Attempt {
    /// Journaled and counted, or skipped by the gate.
    Done,
    /// Journaled, disturbed, and to be run again at once.
    Again,
}

/// The state of [`execute`]'s loop over the slots.
struct SlotRunner<'a> {
    header: &'a Header,
    journal: &'a mut JournalWriter,
    exec: &'a mut dyn Executor,
    progress: &'a mut dyn Progress,
    gate: &'a mut dyn Gate,
    ignore_failure: bool,
    rerun_disturbed: usize,
    interrupted: &'a dyn Fn() -> bool,
    /// Slots done so far (the progress count).
    finished: usize,
    /// Disturbed attempts so far of each slot.
    reruns: BTreeMap<usize, usize>,
}

/// An error that ends the experiment.
fn failed(e: impl Into<ExperimentError>) -> Outcome {
    Outcome::Error(e.into())
}

impl SlotRunner<'_> {
    /// Runs `slot` once (unless the gate skips it) and journals the run;
    /// Err: how the experiment ends here.
    fn attempt(&mut self, slot: &Slot) -> Result<Attempt, Outcome> {
        self.check_interrupted()?;
        let header = self.header;
        let arm = &header.arms[slot.arm];
        if !self.gate.proceed(slot, &arm.id) {
            return Ok(Attempt::Done);
        }
        let label = self.gate.label(&arm.id);
        let what = match slot.phase {
            Phase::Warmup => format!("warm-up {}/{}", slot.rep + 1, header.warmup),
            Phase::Measured => format!("run {}/{}", slot.rep + 1, header.runs),
        };
        self.progress
            .step(&format!("{label} {what}"), self.finished as u64);
        self.prepare(slot, arm)?;
        self.check_interrupted()?;
        let (line, kept) = self.run(slot, arm)?;
        self.journal.append(&line).map_err(failed)?;
        if let Some(k) = &kept {
            self.gate.output(&run_label(&line), &line, &k.text);
        }
        if self.rerun(&line) {
            return Ok(Attempt::Again);
        }
        self.finished += 1;
        self.gate.journaled(&line);
        self.progress.step("", self.finished as u64);
        if let Some(why) = line.failure() {
            self.progress
                .note(&format!("run {} ({label}) {why}", line.slot + 1));
        }
        self.stop_on_failure(&line, slot, arm)?;
        Ok(Attempt::Done)
    }

    /// Err(Interrupted) once a cleanup signal arrived.
    fn check_interrupted(&self) -> Result<(), Outcome> {
        if (self.interrupted)() {
            return Err(Outcome::Interrupted);
        }
        Ok(())
    }

    /// Puts `arm`'s governor in place and runs `--prepare` before `slot`,
    /// handing its kept output to the gate.
    fn prepare(&mut self, slot: &Slot, arm: &ArmHeader) -> Result<(), Outcome> {
        self.exec
            .set_governor(arm.governor.as_deref())
            .map_err(failed)?;
        let prepared = self.exec.prepare_for(slot);
        if let Some(k) = self
            .exec
            .take_prepare_output()
            .transpose()
            .map_err(failed)?
        {
            self.gate.prepare_output(
                &format!("prepare before {}", slot_label(&arm.id, slot)),
                &k.text,
            );
        }
        match prepared {
            Ok(()) => Ok(()),
            Err(RunError::Interrupted) => Err(Outcome::Interrupted),
            Err(source) => Err(Outcome::Error(ExperimentError::Prepare {
                run: slot.index + 1,
                source,
            })),
        }
    }

    /// Runs `slot` under `arm`: its journal line, with the output kept.
    fn run(&mut self, slot: &Slot, arm: &ArmHeader) -> Result<(RunLine, Option<Kept>), Outcome> {
        let started_unix = unix_now();
        let (record, ranks) = match self.exec.run_ranks(slot) {
            Ok(r) => r,
            Err(RunError::Interrupted) => return Err(Outcome::Interrupted),
            Err(e) => return Err(Outcome::Error(ExperimentError::Run(e))),
        };
        // Cut short by the signal: not a measurement. Resume re-runs it.
        self.check_interrupted()?;
        let kept = self.exec.take_output().transpose().map_err(failed)?;
        let line = RunLine {
            slot: slot.index,
            arm: arm.id.clone(),
            phase: slot.phase,
            rep: slot.rep,
            started_unix,
            record,
            ranks,
            metrics: figures(&self.header.metrics, kept.as_ref().map(|k| k.text.as_str())),
            output: kept.as_ref().map(|k| k.reference.clone()),
        };
        Ok((line, kept))
    }

    /// Whether the slot of `line`, a disturbed success, has a rerun left
    /// (then spent).
    fn rerun(&mut self, line: &RunLine) -> bool {
        if line.failure().is_none() && line.record.disturbed() {
            let n = self.reruns.entry(line.slot).or_default();
            if *n < self.rerun_disturbed {
                *n += 1;
                return true;
            }
        }
        false
    }

    /// Err(StoppedOnFailure) when `line` failed and failures are not ignored.
    fn stop_on_failure(&self, line: &RunLine, slot: &Slot, arm: &ArmHeader) -> Result<(), Outcome> {
        let Some(why) = line.failure() else {
            return Ok(());
        };
        if self.ignore_failure {
            return Ok(());
        }
        Err(Outcome::StoppedOnFailure {
            slot: slot.index,
            arm: arm.id.clone(),
            why: format!(
                "{} run {} of {} {why}",
                if slot.phase == Phase::Warmup {
                    "warm-up"
                } else {
                    "measured"
                },
                slot.rep + 1,
                arm.id
            ),
        })
    }
}

/// The program metrics of one run, from its kept output (none kept: each
/// is unavailable with that reason).
pub fn figures(specs: &[MetricSpec], output: Option<&str>) -> BTreeMap<String, Metric> {
    specs
        .iter()
        .map(|m| {
            let v = match output {
                Some(text) => match m.extract(text) {
                    Ok(v) => Metric::value(v),
                    Err(why) => Metric::unavailable(why),
                },
                None => Metric::unavailable("the run's output was not kept"),
            };
            (m.name.clone(), v)
        })
        .collect()
}

/// `os, measured run 3 (slot 7)` / `p-pinned, warm-up run 1 (slot 0)`.
pub fn run_label(line: &RunLine) -> String {
    label(&line.arm, line.phase, line.rep, line.slot)
}

/// [`run_label`] of the run `slot` of arm `arm` (before it runs).
pub fn slot_label(arm: &str, slot: &Slot) -> String {
    label(arm, slot.phase, slot.rep, slot.index)
}

fn label(arm: &str, phase: Phase, rep: usize, slot: usize) -> String {
    format!(
        "{arm}, {} run {} (slot {slot})",
        match phase {
            Phase::Warmup => "warm-up",
            Phase::Measured => "measured",
        },
        rep + 1
    )
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Runs programs on this machine through pinsight-measure.
pub struct LiveExecutor {
    measurer: Measurer,
    argv: Vec<OsString>,
    arms: Vec<PreparedArm>,
    shim: Option<Shim>,
    show_output: bool,
    prepare: PrepareCommand,
    fs: FsRoot,
    governor_cpus: CpuSet,
    guard: Option<GovernorGuard>,
    /// Where each run's output is kept, and the arm ids (header order).
    capture: Option<(Capture, Vec<String>)>,
    /// The output of the run in flight or just done.
    kept: Option<Result<Kept, CaptureError>>,
    /// Each arm's argv and environment, built by its first run and
    /// reused by the others ([`Prebuilt`]).
    prebuilt: Vec<Option<Prebuilt>>,
}

impl LiveExecutor {
    /// `measurer` measures the runs; `arms` are prepared in header order;
    /// governors are set on `governor_cpus` through `fs`.
    #[allow(clippy::too_many_arguments)] // one call site; a builder would only rename them
    pub fn new(
        measurer: Measurer,
        argv: Vec<OsString>,
        arms: Vec<PreparedArm>,
        show_output: bool,
        prepare: Option<String>,
        timeout: Option<Duration>,
        fs: FsRoot,
        governor_cpus: CpuSet,
    ) -> Result<LiveExecutor, ShimError> {
        let shim = if arms.iter().any(PreparedArm::needs_shim) {
            Some(Shim::create()?)
        } else {
            None
        };
        let prepare = prepare.map(|p| {
            let (m, _) = Measurer::new(
                &fs,
                Options {
                    timeout,
                    counters: false,
                    energy: false,
                    ..Options::default()
                },
            );
            (m, p)
        });
        Ok(LiveExecutor {
            measurer,
            argv,
            arms,
            shim,
            show_output,
            prepare: PrepareCommand::new(prepare, show_output),
            fs,
            governor_cpus,
            guard: None,
            capture: None,
            kept: None,
            prebuilt: Vec::new(),
        })
    }

    /// Keeps every run's output in `capture` (files named by `ids`, the
    /// arms' ids in header order) instead of discarding it.
    pub fn keep_output(mut self, capture: Capture, ids: Vec<String>) -> LiveExecutor {
        self.capture = Some((capture, ids));
        self
    }

    /// The command of `slot`: its output to a new file of the capture
    /// (kept in `self.kept` once the run ends), else as `show_output` says.
    fn command_for(&mut self, slot: &Slot) -> (Spawn, Option<crate::output::Open>) {
        let arm = &self.arms[slot.arm];
        let mut cmd = arm.command(&self.argv, self.shim.as_ref(), self.show_output);
        if self.prebuilt.len() <= slot.arm {
            self.prebuilt.resize_with(slot.arm + 1, || None);
        }
        let prebuilt = &mut self.prebuilt[slot.arm];
        if prebuilt.is_none() {
            // A failure here (a NUL in an argument) is the spawn's to report.
            *prebuilt = cmd.prebuild().ok();
        }
        if let Some(p) = prebuilt {
            cmd.reuse(p);
        }
        let Some((capture, ids)) = &self.capture else {
            return (cmd, None);
        };
        let id = ids.get(slot.arm).map_or("arm", String::as_str);
        match capture.open(id, slot.index) {
            Ok(o) => {
                o.redirect(&mut cmd);
                (cmd, Some(o))
            }
            Err(e) => {
                self.kept = Some(Err(e));
                (cmd, None)
            }
        }
    }

    /// Restores the governor and removes the shim now (also done on drop).
    pub fn finish(&mut self) -> Result<(), SwitchError> {
        let r = match self.guard.take() {
            Some(mut g) => g.restore_now().map_err(SwitchError::Restore),
            None => Ok(()),
        };
        self.shim = None;
        r
    }
}

impl Executor for LiveExecutor {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        self.kept = None;
        let (cmd, open) = self.command_for(slot);
        let r = self.run_command(slot, cmd);
        if let Some(o) = open {
            self.kept = Some(o.finish());
        }
        r
    }

    fn take_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        self.kept.take()
    }

    fn prepare(&mut self) -> Result<(), RunError> {
        self.prepare.run()
    }

    fn prepare_for(&mut self, slot: &Slot) -> Result<(), RunError> {
        let capture = self.capture.as_ref().map(|c| &c.0);
        self.prepare.run_for(slot, capture)
    }

    fn take_prepare_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        self.prepare.take_output()
    }

    fn finish(&mut self) -> Result<(), SwitchError> {
        LiveExecutor::finish(self)
    }

    fn set_governor(&mut self, governor: Option<&str>) -> Result<(), SwitchError> {
        self.switch_governor(governor)
    }
}

impl LiveExecutor {
    fn run_command(&mut self, slot: &Slot, cmd: Spawn) -> Result<RunRecord, RunError> {
        let arm = &self.arms[slot.arm];
        let cpus = arm.cpus().clone();
        let Some(follow) = arm.follow() else {
            return self.measurer.run_on(cmd, &cpus);
        };
        // The shim cannot reach this program: the watcher pins its threads
        // as `pinsight run` does, from the spawn until the exit.
        // A pin the kernel refuses (a thread with capabilities pinsight
        // lacks, a CPU the cgroup forbids) makes the run another arm's:
        // the experiment stops with the reason.
        let follow = follow.clone();
        let (places, mask) = (follow.places.clone(), follow.process_mask.clone());
        let mut refused = None;
        let record = self.measurer.run_observed_on(
            cmd,
            Some(&cpus),
            |pid| {
                Watcher::start(
                    FsRoot::live(),
                    WatchConfig {
                        pid,
                        follow: Some(follow),
                        poll: Duration::from_millis(1),
                        sample_every: Duration::ZERO,
                    },
                    Vec::new(),
                    Vec::new(),
                )
            },
            |w| {
                if let Ok(records) = w.finish() {
                    refused = pinsight_launch::threadlog::refusal(&records, &[], &places, &mask);
                }
            },
        )?;
        match refused {
            Some(why) => Err(RunError::NotPlaced {
                program: self.argv[0].to_string_lossy().into_owned(),
                why,
            }),
            None => Ok(record),
        }
    }

    fn switch_governor(&mut self, governor: Option<&str>) -> Result<(), SwitchError> {
        let current = self.guard.as_ref().map(|g| g.governor().to_string());
        if current.as_deref() == governor {
            return Ok(());
        }
        // Restore before setting the next one, so originals stay the
        // machine's own values.
        if let Some(mut g) = self.guard.take() {
            g.restore_now().map_err(SwitchError::Restore)?;
        }
        if let Some(gov) = governor {
            self.guard = Some(GovernorGuard::set(&self.fs, &self.governor_cpus, gov)?);
        }
        Ok(())
    }
}

/// An executor's `--prepare` command (if any), measured by its own
/// measurer, with the output of its latest run when kept.
pub(crate) struct PrepareCommand {
    command: Option<(Measurer, String)>,
    show_output: bool,
    kept: Option<Result<Kept, CaptureError>>,
}

impl PrepareCommand {
    /// `command` (measured by its measurer), its output shown when
    /// `show_output` and not kept.
    pub(crate) fn new(command: Option<(Measurer, String)>, show_output: bool) -> PrepareCommand {
        PrepareCommand {
            command,
            show_output,
            kept: None,
        }
    }

    /// Runs it ([`Executor::prepare`]).
    pub(crate) fn run(&self) -> Result<(), RunError> {
        match &self.command {
            Some((m, text)) => run_prepare(m, text, self.show_output),
            None => Ok(()),
        }
    }

    /// Runs it before `slot`, its output kept in `capture` when there is
    /// one ([`Executor::prepare_for`]).
    pub(crate) fn run_for(
        &mut self,
        slot: &Slot,
        capture: Option<&Capture>,
    ) -> Result<(), RunError> {
        let Some((m, text)) = &self.command else {
            return Ok(());
        };
        let (r, kept) = run_prepare_kept(m, text, self.show_output, capture, slot);
        self.kept = kept;
        r
    }

    /// The output of the run just done, when kept
    /// ([`Executor::take_prepare_output`]).
    pub(crate) fn take_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        self.kept.take()
    }
}

/// Runs the `--prepare` command `text` (`sh -c`) measured by `m`; Err:
/// why it failed.
pub fn run_prepare(m: &Measurer, text: &str, show_output: bool) -> Result<(), RunError> {
    let mut cmd = Spawn::new("sh");
    cmd.arg("-c").arg(text).stdin(SpawnStdio::Null);
    if !show_output {
        cmd.stdout(SpawnStdio::Null);
    }
    prepare_result(m, cmd, text)
}

/// [`run_prepare`] before `slot` with its output (stdout and stderr) kept
/// in `capture` as `prepare-before-run-SLOT.txt` (without one, as
/// [`run_prepare`]); the kept output comes back beside the result, also
/// when the command failed.
#[allow(clippy::type_complexity)] // the result and the kept output
pub fn run_prepare_kept(
    m: &Measurer,
    text: &str,
    show_output: bool,
    capture: Option<&Capture>,
    slot: &Slot,
) -> (Result<(), RunError>, Option<Result<Kept, CaptureError>>) {
    let Some(capture) = capture else {
        return (run_prepare(m, text, show_output), None);
    };
    let mut cmd = Spawn::new("sh");
    cmd.arg("-c").arg(text).stdin(SpawnStdio::Null);
    let open = match capture.open_prepare(slot.index) {
        Ok(o) => o,
        Err(e) => return (Ok(()), Some(Err(e))),
    };
    open.redirect(&mut cmd);
    let r = prepare_result(m, cmd, text);
    (r, Some(open.finish()))
}

fn prepare_result(m: &Measurer, cmd: Spawn, text: &str) -> Result<(), RunError> {
    let r = m.run(cmd)?;
    if r.exit.success() && !r.timed_out {
        return Ok(());
    }
    let why = if r.timed_out {
        "timed out".to_string()
    } else if let Some(s) = r.exit.signal {
        format!("killed by signal {s}")
    } else {
        format!("exited with code {}", r.exit.shell_code())
    };
    Err(RunError::Spawn {
        program: format!("`{text}`"),
        source: std::io::Error::other(why),
    })
}
