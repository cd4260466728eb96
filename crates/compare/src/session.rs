//! One experiment from start to report: set it up (or take it over from a
//! journal), open the journal, run the missing slots with the live
//! executor, restore the machine, and analyse what is on disk.
//!
//! The front end supplies the request, the files and a
//! [`Progress`]; it prints the notices ([`Session::header`],
//! [`Session::arm_notes`]) and the result in its own words.

use crate::analysis::{analyse, Report, Status};
use crate::command::{PreparedArm, ShimError};
use crate::experiment::{
    self, done_slots_with, Always, Executor, Gate, LiveExecutor, Outcome, SwitchError,
};
use crate::interrupt;
use crate::journal::{Difference, Header, Journal, JournalWriter, RunLine};
use crate::request::Names;
use crate::setup::{self, machine, probe_governors, Extension, Request, SetupError};
use pinsight_lifecycle::journal::JournalError;
use pinsight_measure as measure;
use pinsight_model::Topology;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long to wait for the signal cleanup to report back after Ctrl-C.
const CLEANUP_WAIT: Duration = Duration::from_secs(5);

/// Where the journal goes.
#[derive(Clone, Debug)]
pub enum JournalTarget {
    /// Continue this journal (already read: `previous`).
    Resume {
        path: PathBuf,
        previous: Box<Journal>,
    },
    /// A new journal at the user's path.
    New(PathBuf),
    /// A new journal `{stem}[-N].jsonl` in `dir`; `stem` gets the UTC stamp.
    Unique { dir: PathBuf, stem_prefix: String },
}

/// Everything an experiment needs from its front end.
pub struct Config<'a> {
    pub request: Request,
    /// This machine.
    pub topology: &'a Topology,
    /// Where the measurement files (cpufreq, perf, RAPL) are read.
    pub measure_fs: FsRoot,
    pub journal: JournalTarget,
    pub show_output: bool,
    pub ignore_failure: bool,
    /// A run is disturbed when other work took more than this share of
    /// one of its plan's CPUs ([`measure::disturbance`]).
    pub disturbance_threshold: f64,
    /// Run a disturbed slot again, up to this many times.
    pub rerun_disturbed: usize,
    /// Which environment variables the user already set.
    pub is_env_set: &'a dyn Fn(&str) -> bool,
}

/// Builds the executor of an experiment from its header (arms in header
/// order): a simulation, a fake in tests.
pub type MakeExecutor = Box<dyn FnOnce(&Header) -> Box<dyn Executor>>;

/// What runs the programs.
pub enum ExecutorChoice {
    /// This machine ([`LiveExecutor`]).
    Live,
    /// Another executor, built once the header is known.
    Custom(MakeExecutor),
}

/// Why an experiment could not start or its journal could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// `users_path`: the file is one the user named (new or resumed), not
    /// a default one.
    #[error("{error}")]
    Journal {
        error: JournalError,
        users_path: bool,
    },
    /// The journal to resume holds a different experiment.
    #[error("cannot resume {}: it is a different experiment ({})", path.display(),
        diffs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    DifferentExperiment {
        path: PathBuf,
        diffs: Vec<Difference>,
    },
    #[error(transparent)]
    Shim(#[from] ShimError),
    /// The directory that keeps the runs' output cannot be made.
    #[error(transparent)]
    Output(#[from] crate::output::CaptureError),
    /// The kernel refuses an arm's memory policy (weighted interleave
    /// before Linux 6.9, nodes outside the cgroup): found before any run.
    #[error("{arm}: cannot apply memory policy {policy}: {error}")]
    Memory {
        arm: String,
        policy: String,
        error: pinsight_sys::mempolicy::MemPolicyError,
    },
}

impl SessionError {
    /// A different experiment's message with the inputs that set each
    /// difference named by `name`; `None` for every other error.
    pub fn named(&self, name: Names<'_>) -> Option<String> {
        let SessionError::DifferentExperiment { path, diffs } = self else {
            return None;
        };
        let diffs: Vec<String> = diffs.iter().map(|d| d.named(name)).collect();
        Some(format!(
            "cannot resume {}: it is a different experiment ({})",
            path.display(),
            diffs.join("; ")
        ))
    }
}

/// An experiment ready to run.
pub struct Session {
    header: Header,
    journal_path: PathBuf,
    writer: JournalWriter,
    previous_runs: Vec<RunLine>,
    journal_warnings: Vec<String>,
    arm_notes: Vec<(String, String)>,
    exec: Box<dyn Executor>,
    ignore_failure: bool,
    rerun_disturbed: usize,
    virtual_machine: Option<String>,
}

/// How a session ended, with the report drawn from the journal on disk.
#[derive(Debug)]
pub struct Finished {
    pub outcome: Outcome,
    /// The signal that interrupted the experiment, if one did.
    pub signal: Option<i32>,
    pub report: Report,
    /// Restoring the governor at the end failed.
    pub restore_failed: Option<SwitchError>,
    /// After an interruption, the signal cleanup did not report back in time.
    pub cleanup_late: bool,
}

impl Session {
    /// Sets the experiment up and opens its journal; nothing runs yet.
    pub fn open(cfg: Config) -> Result<Session, SessionError> {
        Session::open_with(cfg, &Extension::default(), ExecutorChoice::Live)
    }

    /// [`Session::open`] for an experiment built on compare: `ext` adds
    /// per-arm threads and the experiment's kind and identity to the
    /// header (a resumed journal must match them), `executor` chooses
    /// what runs the programs.
    pub fn open_with(
        cfg: Config,
        ext: &Extension,
        executor: ExecutorChoice,
    ) -> Result<Session, SessionError> {
        refuse_other_kind(&cfg.journal, ext)?;
        let mut req = cfg.request;
        let usable = cfg.topology.usable();
        let (measurer, mut capabilities) = measure::Measurer::new(
            &cfg.measure_fs,
            measure::Options {
                timeout: req.timeout,
                disturbance: Some(cfg.disturbance_threshold),
                ..measure::Options::default()
            },
        );
        let probe = probe_governors(&cfg.measure_fs, &usable, &req.governors)?;
        capabilities.retain(|c| !c.is_empty());
        let (created, stamp) = setup::utc_now();
        if req.threads.is_none() {
            req.threads = Some(default_threads(&usable));
        }
        let plan = setup::setup(
            cfg.topology,
            &req,
            &probe,
            machine(cfg.topology, &FsRoot::live(), capabilities),
            cfg.is_env_set,
            created,
            ext,
        )?;
        probe_memory_policies(&plan)?;
        let mut header = plan.header;
        header.unavailable = measurer.unavailable_in_every_run();
        let opened = open_journal(cfg.journal, header, &stamp)?;
        let header = opened.header;
        let argv: Vec<OsString> = header.command.iter().map(OsString::from).collect();
        let prepared: Vec<PreparedArm> = plan
            .plans
            .iter()
            .map(|p| PreparedArm::new(p, &argv[0], cfg.is_env_set))
            .collect();
        let arm_notes = arm_notes(&header, &prepared);
        let virtual_machine = pinsight_topology::vm::detect(&cfg.measure_fs).map(|vm| vm.note());
        let exec = make_executor(executor, &header, &opened.path, || {
            LiveExecutor::new(
                measurer,
                argv,
                prepared,
                cfg.show_output,
                header.prepare.clone(),
                req.timeout,
                cfg.measure_fs,
                usable,
            )
        })?;
        Ok(Session {
            header,
            journal_path: opened.path,
            writer: opened.writer,
            previous_runs: opened.runs,
            journal_warnings: opened.warnings,
            arm_notes,
            exec,
            ignore_failure: cfg.ignore_failure,
            rerun_disturbed: cfg.rerun_disturbed,
            virtual_machine,
        })
    }

    /// The experiment (the resumed journal's own header when resuming).
    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn journal_path(&self) -> &Path {
        &self.journal_path
    }

    /// Lines of the resumed journal that could not be read.
    pub fn journal_warnings(&self) -> &[String] {
        &self.journal_warnings
    }

    /// How arms are applied when it is not the plain rule, as
    /// (policy, note), each once.
    pub fn arm_notes(&self) -> &[(String, String)] {
        &self.arm_notes
    }

    /// What shows this machine is virtual, and what that means; `None` on
    /// bare metal (the front end says it once).
    pub fn virtual_machine(&self) -> Option<&str> {
        self.virtual_machine.as_deref()
    }

    /// Slots of the design, and those already done.
    pub fn progress(&self) -> (usize, usize) {
        let h = &self.header;
        (
            h.arms.len() * (h.runs + h.warmup),
            done_slots_with(
                &self.previous_runs,
                self.ignore_failure,
                self.rerun_disturbed,
            )
            .len(),
        )
    }

    /// Runs the missing slots, restores the machine and analyses the
    /// journal on disk. `Err` only when the journal cannot be read back.
    /// `progress` sees the task "compare", one step per run.
    pub fn run(self, progress: &mut dyn Progress) -> Result<Finished, SessionError> {
        self.run_gated(progress, &mut Always)
    }

    /// [`Session::run`] through `gate` (which also sees each run's kept
    /// output, for `--show-output`).
    pub fn run_gated(
        self,
        progress: &mut dyn Progress,
        gate: &mut dyn Gate,
    ) -> Result<Finished, SessionError> {
        let (total, done) = self.progress();
        progress.begin("compare", total as u64, done as u64);
        let finished = self.run_until(progress, gate, &|| false);
        progress.end();
        finished
    }

    /// [`Session::run`] that also stops, as on Ctrl-C, when `stop` says so
    /// (polled between runs): the run in flight is discarded and the
    /// machine restored, but no signal is waited for (`signal` is None).
    /// `gate` may skip runs; `progress` sees one step per run but is
    /// neither begun nor ended here (the caller names the task).
    pub fn run_until(
        mut self,
        progress: &mut dyn Progress,
        gate: &mut dyn Gate,
        stop: &dyn Fn() -> bool,
    ) -> Result<Finished, SessionError> {
        let stopped = std::cell::Cell::new(false);
        let outcome = experiment::execute(
            &self.header,
            &self.previous_runs,
            &mut self.writer,
            self.exec.as_mut(),
            progress,
            gate,
            self.ignore_failure,
            self.rerun_disturbed,
            &|| {
                if interrupt::interrupted() {
                    return true;
                }
                let s = stop();
                stopped.set(stopped.get() || s);
                s
            },
        );
        // However the loop ended, the batch being synced is waited for
        // (once the machine is restored and the journal read back) and a
        // failed sync reported; the runs of the last sync interval are
        // left to the kernel's writeback (the journal's bounded policy).
        let restore = self.exec.finish();
        drop(self.exec);
        let read = Journal::read(&self.journal_path);
        let synced = self.writer.finish();
        let mut outcome = outcome;
        if let (Err(e), Outcome::Complete) = (synced, &outcome) {
            outcome = Outcome::Error(e.into());
        }
        if interrupt::interrupted() {
            outcome = Outcome::Interrupted;
        }
        let interrupted = matches!(outcome, Outcome::Interrupted);
        // Stopped by the caller, not by a signal: nothing to wait for.
        let signalled = interrupted && (interrupt::interrupted() || !stopped.get());
        let cleanup_late = signalled && !interrupt::wait_for_cleanup(CLEANUP_WAIT);
        // Everything shown is computed from the journal on disk.
        let journal = read.map_err(|error| SessionError::Journal {
            error,
            users_path: false,
        })?;
        let signal = signalled.then(interrupt::signal);
        let status = match &outcome {
            Outcome::Complete => Status::Complete,
            Outcome::Interrupted => Status::Interrupted {
                signal: signal.unwrap_or(interrupt::signal()),
            },
            Outcome::StoppedOnFailure { slot, arm, why } => Status::StoppedOnFailure {
                slot: *slot,
                arm: arm.clone(),
                why: why.clone(),
            },
            Outcome::Error(_) => Status::Partial,
        };
        let mut report = analyse(&self.header, &journal.runs, status, journal.warnings);
        report.virtual_machine = self.virtual_machine.clone();
        Ok(Finished {
            outcome,
            signal,
            report,
            restore_failed: restore.err(),
            cleanup_late,
        })
    }
}

/// A journal opened (or taken over) for a session, with what it already held.
struct OpenedJournal {
    /// The experiment: the resumed journal's own header when resuming.
    header: Header,
    path: PathBuf,
    writer: JournalWriter,
    runs: Vec<RunLine>,
    warnings: Vec<String>,
}

impl OpenedJournal {
    /// A journal just made: it holds no runs yet.
    fn new(header: Header, path: PathBuf, writer: JournalWriter) -> OpenedJournal {
        OpenedJournal {
            header,
            path,
            writer,
            runs: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// Refuses another kind's journal before its arms are planned (they may
/// not even plan as this kind's request).
fn refuse_other_kind(journal: &JournalTarget, ext: &Extension) -> Result<(), SessionError> {
    if let JournalTarget::Resume { path, previous } = journal {
        if previous.header.kind != ext.kind {
            let now = Header {
                kind: ext.kind.clone(),
                ..previous.header.clone()
            };
            return Err(SessionError::DifferentExperiment {
                path: path.clone(),
                diffs: previous.header.mismatch(&now),
            });
        }
    }
    Ok(())
}

/// Asks the kernel whether it accepts each arm's memory policy, before any run.
fn probe_memory_policies(plan: &setup::Setup) -> Result<(), SessionError> {
    for (arm, p) in plan.header.arms.iter().zip(&plan.plans) {
        if let Some(m) = &p.memory {
            let (mode, nodes) = pinsight_launch::kernel_policy(m);
            pinsight_sys::mempolicy::probe(mode, &nodes).map_err(|error| SessionError::Memory {
                arm: arm.id.clone(),
                policy: m.policy.clone(),
                error,
            })?;
        }
    }
    Ok(())
}

/// A journal error, saying whether the file is one the user named.
fn journal_error(error: JournalError, users_path: bool) -> SessionError {
    SessionError::Journal { error, users_path }
}

/// Opens the session's journal at `target` for the experiment `header`
/// (`stamp` names a unique one); a resumed journal must hold the same
/// experiment and keeps its own header.
fn open_journal(
    target: JournalTarget,
    header: Header,
    stamp: &str,
) -> Result<OpenedJournal, SessionError> {
    match target {
        JournalTarget::Resume { path, previous } => resume_journal(path, &previous, header),
        JournalTarget::New(path) => {
            // No journal is made for runs whose output cannot be kept
            // (a link or a file at JOURNAL.out, a directory that
            // cannot be written).
            crate::output::Capture::check(&path)?;
            let writer =
                JournalWriter::create(&path, &header).map_err(|e| journal_error(e, true))?;
            Ok(OpenedJournal::new(header, path, writer))
        }
        JournalTarget::Unique { dir, stem_prefix } => {
            let writer =
                JournalWriter::create_unique(&dir, &format!("{stem_prefix}{stamp}"), &header)
                    .map_err(|e| journal_error(e, false))?;
            // The name is known only now: a journal whose output
            // cannot be kept is removed at once (it holds its header
            // only, and no one else has it: it was just created).
            if let Err(e) = crate::output::Capture::check(writer.path()) {
                let made = writer.path().to_path_buf();
                drop(writer);
                let _ = std::fs::remove_file(made);
                return Err(e.into());
            }
            let path = writer
                .path()
                .strip_prefix(".")
                .unwrap_or(writer.path())
                .to_path_buf();
            Ok(OpenedJournal::new(header, path, writer))
        }
    }
}

/// Takes over the journal at `path` (read before as `previous`) for the
/// experiment `header`: refused when either reading holds another experiment.
fn resume_journal(
    path: PathBuf,
    previous: &Journal,
    header: Header,
) -> Result<OpenedJournal, SessionError> {
    let diffs = previous.header.mismatch(&header);
    if !diffs.is_empty() {
        return Err(SessionError::DifferentExperiment { path, diffs });
    }
    // The runs' output can be kept beside it (before the
    // journal is touched).
    crate::output::Capture::check(&path)?;
    // Locked, then read again through the lock: what another
    // writer appended since `previous` was read counts, and a
    // journal in use is refused here.
    let (writer, locked) = JournalWriter::resume(&path).map_err(|e| journal_error(e, false))?;
    let diffs = locked.header.mismatch(&header);
    if !diffs.is_empty() {
        return Err(SessionError::DifferentExperiment { path, diffs });
    }
    // The journal's header stays the experiment's identity.
    let Journal {
        header,
        runs,
        warnings,
    } = locked;
    Ok(OpenedJournal {
        header,
        path,
        writer,
        runs,
        warnings,
    })
}

/// How arms are applied when it is not the plain rule, as (policy, note),
/// each once, in arm order.
fn arm_notes(header: &Header, prepared: &[PreparedArm]) -> Vec<(String, String)> {
    let mut notes: Vec<(String, String)> = Vec::new();
    for (arm, prep) in header.arms.iter().zip(prepared) {
        for n in &prep.notes {
            let note = (arm.policy.clone(), n.clone());
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    notes
}

/// The executor `choice` names for the experiment `header`, keeping
/// every run's output beside the journal at `journal_path`; `live` builds
/// this machine's.
fn make_executor(
    choice: ExecutorChoice,
    header: &Header,
    journal_path: &Path,
    live: impl FnOnce() -> Result<LiveExecutor, ShimError>,
) -> Result<Box<dyn Executor>, SessionError> {
    Ok(match choice {
        ExecutorChoice::Live => Box::new(live()?.keep_output(
            crate::output::Capture::for_journal(journal_path)?,
            arm_ids(header),
        )),
        ExecutorChoice::Custom(make) => {
            let mut e = make(header);
            e.keep_output_in(journal_path, arm_ids(header))?;
            e
        }
    })
}

/// The arms' identities, in header order.
fn arm_ids(header: &Header) -> Vec<String> {
    header.arms.iter().map(|a| a.id.clone()).collect()
}

/// Threads of every arm when none are requested: the CPUs this process
/// may run on (its affinity mask) among the usable ones.
fn default_threads(usable: &pinsight_cpuset::CpuSet) -> usize {
    let n = match crate::command::own_affinity() {
        Some(mask) => mask.intersection(usable).len(),
        None => usable.len(),
    };
    n.max(1)
}
