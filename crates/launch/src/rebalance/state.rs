//! The state file of a rebalance: every selected thread's affinity before
//! it was changed, so that it can be put back.
//!
//! JSON: `{"format": "pinsight-balance-state", "version": 1, "threads":
//! [{"pid": 4242, "tid": 4243, "start_ticks": 12345, "name": "worker",
//! "affinity": "0-19"}, ...]}`. `start_ticks` (field 22 of
//! `/proc/PID/task/TID/stat`, proc(5)) tells a thread from a later one
//! that reuses its TID: such a thread is left alone on restore.

use super::select::Task;
use super::RebalanceError;
use pinsight_cpuset::CpuSet;
use pinsight_sys::affinity;
use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` field of a state file.
pub const FORMAT: &str = "pinsight-balance-state";

/// Largest state file read (far above the threads of any machine).
pub const MAX_STATE_BYTES: u64 = 64 << 20;

/// The saved affinities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format: String,
    pub version: u32,
    pub threads: Vec<SavedThread>,
}

/// One thread's affinity before the change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedThread {
    pub pid: i32,
    pub tid: i32,
    pub start_ticks: u64,
    pub name: String,
    pub affinity: CpuSet,
}

/// What restoring did to one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestoreOutcome {
    Restored,
    /// It had that affinity already.
    Unchanged,
    /// It exited (or its TID now belongs to another thread): left alone.
    Gone,
    /// The kernel refused (see the error).
    Failed,
    /// Not put back: a kernel thread, which `balance` never moves (the
    /// file was not written by it).
    Refused,
}

/// One thread of a restore.
#[derive(Clone, Debug, Serialize)]
pub struct Restored {
    pub pid: i32,
    pub tid: i32,
    pub name: String,
    pub affinity: CpuSet,
    pub outcome: RestoreOutcome,
    pub error: Option<String>,
}

/// The result of [`restore`].
#[derive(Clone, Debug, Serialize)]
pub struct RestoreReport {
    pub state: PathBuf,
    pub threads: Vec<Restored>,
}

impl RestoreReport {
    /// The threads the kernel would not put back.
    pub fn failed(&self) -> usize {
        self.threads
            .iter()
            .filter(|t| t.outcome == RestoreOutcome::Failed)
            .count()
    }
}

/// Where a state file goes when none is named: `balance-SECONDS-PID.json`
/// in [`pinsight_lifecycle::state_file::dir_for`]
/// (`$XDG_STATE_HOME/pinsight`, else `/var/lib/pinsight` for root, else
/// `~/.local/state/pinsight`), created when missing. Never the shared
/// temporary directory, where another user could place or edit it.
pub fn default_path() -> std::io::Result<PathBuf> {
    pinsight_lifecycle::state_file::new_path("balance")
}

/// Why no state file can be written, found before anything moves.
#[derive(Debug, thiserror::Error)]
pub enum StatePathError {
    /// No directory for a state file could be made (runtime).
    #[error("cannot make a directory for the state file: {0}")]
    NoDirectory(#[source] std::io::Error),
    /// The file named cannot be written (usage).
    #[error("cannot write {}: {reason} (nothing was changed)", path.display())]
    Unwritable { path: PathBuf, reason: String },
}

/// Where the previous affinities go: `given`, else [`default_path`];
/// checked as the write itself will be (a temporary file beside it)
/// before anything moves.
pub fn state_path(given: Option<&Path>) -> Result<PathBuf, StatePathError> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => default_path().map_err(StatePathError::NoDirectory)?,
    };
    pinsight_lifecycle::output::check(&path).map_err(|e| StatePathError::Unwritable {
        reason: e.reason(),
        path: path.clone(),
    })?;
    Ok(path)
}

/// Writes the current affinity of every thread of `tasks` to `path`
/// (crash-safe: a temporary file renamed over it).
pub fn save(fs: &FsRoot, tasks: &[Task], path: &Path) -> Result<State, RebalanceError> {
    let mut threads = Vec::new();
    for t in tasks {
        for &tid in &t.threads {
            let (Some(st), Ok(aff)) = (
                procfs::task_stat(fs, t.pid, tid),
                affinity::get_affinity(tid),
            ) else {
                continue; // exited: nothing to put back
            };
            threads.push(SavedThread {
                pid: t.pid,
                tid,
                start_ticks: st.start_ticks,
                name: st.comm,
                affinity: aff,
            });
        }
    }
    let state = State {
        format: FORMAT.into(),
        version: 1,
        threads,
    };
    let text = serde_json::to_string_pretty(&state).expect("a state serializes") + "\n";
    pinsight_lifecycle::output::write(path, text.as_bytes()).map_err(|e| {
        RebalanceError::SaveState {
            path: path.to_path_buf(),
            reason: e.reason(),
        }
    })?;
    Ok(state)
}

/// Reads and checks a state file.
pub fn load(path: &Path) -> Result<State, RebalanceError> {
    let read = |reason: String| RebalanceError::ReadState {
        path: path.to_path_buf(),
        reason,
    };
    // A regular file of at most MAX_STATE_BYTES: a FIFO or a device is
    // refused unread, a larger file by its size.
    let bytes = pinsight_sys::fs::read_bounded(path, MAX_STATE_BYTES).map_err(|e| match e {
        pinsight_sys::fs::BoundedReadError::Io(e) => read(e.to_string()),
        e => read(e.to_string()),
    })?;
    // A file that moves threads must be one nobody else could have
    // written: the caller's or root's, writable by no one else.
    pinsight_lifecycle::state_file::check_trusted(path).map_err(|reason| {
        RebalanceError::UntrustedState {
            path: path.to_path_buf(),
            reason,
        }
    })?;
    let bad = |reason: String| RebalanceError::BadState {
        path: path.to_path_buf(),
        reason,
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    if state.format != FORMAT || state.version != 1 {
        return Err(bad(format!(
            "format '{}' version {}, expected '{FORMAT}' version 1",
            state.format, state.version
        )));
    }
    Ok(state)
}

/// Puts back every saved thread that still runs (same TID and start time).
pub fn restore(fs: &FsRoot, path: &Path) -> Result<RestoreReport, RebalanceError> {
    Ok(restore_loaded(fs, path, load(path)?))
}

/// [`restore`] of a state already [`load`]ed (and so checked) from `path`.
pub fn restore_loaded(fs: &FsRoot, path: &Path, state: State) -> RestoreReport {
    let threads = state
        .threads
        .into_iter()
        .map(|s| {
            let same = procfs::task_stat(fs, s.pid, s.tid)
                .is_some_and(|st| st.start_ticks == s.start_ticks && st.state != 'Z');
            let mut r = Restored {
                pid: s.pid,
                tid: s.tid,
                name: s.name,
                affinity: s.affinity,
                outcome: RestoreOutcome::Gone,
                error: None,
            };
            if !same {
                return r;
            }
            if super::select::is_kernel_thread(fs, s.pid) {
                r.outcome = RestoreOutcome::Refused;
                r.error = Some("a kernel thread: balance never moves one".into());
                return r;
            }
            let now = affinity::get_affinity(s.tid).ok();
            if now.as_ref() == Some(&r.affinity) {
                r.outcome = RestoreOutcome::Unchanged;
                return r;
            }
            match affinity::set_affinity(s.tid, &r.affinity) {
                Ok(()) => r.outcome = RestoreOutcome::Restored,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    r.outcome = RestoreOutcome::Failed;
                    r.error = Some(e.to_string());
                }
            }
            r
        })
        .collect();
    RestoreReport {
        state: path.to_path_buf(),
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_path_is_checked_before_anything_moves() {
        let dir = tempfile::tempdir().unwrap();
        let given = dir.path().join("s.json");
        assert_eq!(state_path(Some(&given)).unwrap(), given);
        assert!(!given.exists(), "checked, not written");
        let e = state_path(Some(&dir.path().join("no/such/s.json"))).unwrap_err();
        assert!(matches!(e, StatePathError::Unwritable { .. }), "{e}");
        assert!(e.to_string().ends_with("(nothing was changed)"), "{e}");
        let e = state_path(Some(dir.path())).unwrap_err();
        assert!(e.to_string().contains("it is a directory"), "{e}");
    }

    #[test]
    fn failed_counts_the_threads_not_put_back() {
        let t = |outcome| Restored {
            pid: 1,
            tid: 1,
            name: "w".into(),
            affinity: CpuSet::single(0),
            outcome,
            error: None,
        };
        let r = RestoreReport {
            state: PathBuf::from("s.json"),
            threads: vec![
                t(RestoreOutcome::Failed),
                t(RestoreOutcome::Restored),
                t(RestoreOutcome::Failed),
                t(RestoreOutcome::Gone),
            ],
        };
        assert_eq!(r.failed(), 2);
        assert_eq!(
            crate::view::balance::restore_failure(&r).unwrap(),
            "2 thread(s) could not be put back (see above)"
        );
        let none = RestoreReport {
            threads: vec![t(RestoreOutcome::Unchanged)],
            ..r
        };
        assert_eq!(crate::view::balance::restore_failure(&none), None);
    }

    #[test]
    fn a_state_round_trips_and_other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let me = std::process::id() as i32;
        let tid = pinsight_sys::affinity::gettid();
        let task = Task {
            pid: me,
            tid: Some(tid),
            name: "me".into(),
            threads: vec![tid],
            before: affinity::get_affinity(tid).unwrap(),
        };
        let fs = FsRoot::live();
        let saved = save(&fs, &[task], &path).unwrap();
        assert_eq!(load(&path).unwrap(), saved);
        let r = restore(&fs, &path).unwrap();
        assert_eq!(r.threads.len(), 1);
        assert_eq!(r.threads[0].outcome, RestoreOutcome::Unchanged);
        std::fs::write(&path, "{\"weights\": {}}").unwrap();
        assert!(matches!(load(&path), Err(RebalanceError::BadState { .. })));
        std::fs::write(
            &path,
            "{\"format\": \"x\", \"version\": 1, \"threads\": []}",
        )
        .unwrap();
        assert!(matches!(load(&path), Err(RebalanceError::BadState { .. })));
        assert!(matches!(
            load(&dir.path().join("missing")),
            Err(RebalanceError::ReadState { .. })
        ));
    }
}
