//! The applier: sets each managed thread's affinity by TID
//! (`sched_setaffinity` through pinsight-sys, any CPU count), remembering
//! the affinity it had before the first change so it can be put back.
//!
//! Leave no trace: [`Applier::restore_all`] puts every changed thread
//! back to its own affinity; the [`crate::Manager`] calls it on every exit
//! path (normal end, stop by signal, error) and on drop.

use pinsight_cpuset::CpuSet;
use pinsight_sys::affinity;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;

/// Why a thread's affinity could not be set.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The thread's current affinity could not be read (to restore it later).
    #[error("cannot read the affinity of thread {tid}: {source}")]
    Read {
        /// The thread.
        tid: i32,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The kernel refused the new affinity (EINVAL: a per-CPU kernel
    /// thread or CPUs outside its cpuset; EPERM: another user's thread).
    #[error("cannot set the affinity of thread {tid} to CPUs {cpus}: {source}")]
    Set {
        /// The thread.
        tid: i32,
        /// The CPUs asked for.
        cpus: CpuSet,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl ApplyError {
    /// Whether the thread had simply exited (ESRCH): not a failure.
    pub fn thread_gone(&self) -> bool {
        let e = match self {
            ApplyError::Read { source, .. } | ApplyError::Set { source, .. } => source,
        };
        e.raw_os_error() == Some(libc::ESRCH)
    }
}

/// One thread whose affinity could not be restored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreFailure {
    /// The thread.
    pub tid: i32,
    /// Its original affinity.
    pub cpus: String,
    /// The OS error.
    pub error: String,
}

/// What [`Applier::restore_all`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    /// Threads put back to their own affinity.
    pub restored: usize,
    /// Threads that had exited meanwhile (nothing to restore).
    pub gone: usize,
    /// Threads the kernel refused to restore.
    pub failures: Vec<RestoreFailure>,
}

/// Sets affinities and remembers the originals.
#[derive(Debug, Default)]
pub struct Applier {
    /// Per changed thread: its original affinity and what we set last.
    threads: BTreeMap<i32, (CpuSet, CpuSet)>,
    /// (original, what we set) of threads that exited while pinned: a
    /// process they forked may outlive them carrying that pin (a shell's
    /// background job, reparented to the subreaper).
    departed: Vec<(CpuSet, CpuSet)>,
}

/// How many distinct departed pins are remembered.
const DEPARTED: usize = 256;

impl Applier {
    /// An applier that has changed nothing yet.
    pub fn new() -> Applier {
        Applier::default()
    }

    /// Pins `tid` to `cpus` (nothing to do if that is already what we set).
    /// The first change saves the thread's affinity for [`Applier::restore_all`].
    pub fn set(&mut self, tid: i32, cpus: &CpuSet) -> Result<(), ApplyError> {
        self.set_in(tid, &[], cpus)
    }

    /// [`Applier::set`] for a thread of a process whose other threads are
    /// `siblings`. A thread created by a sibling we had pinned inherits
    /// our pin, not the program's affinity: when the new thread's affinity
    /// is exactly what we set on a sibling, its original is taken to be
    /// that sibling's original, so restoring leaves no pin of ours behind.
    pub fn set_in(&mut self, tid: i32, siblings: &[i32], cpus: &CpuSet) -> Result<(), ApplyError> {
        if let Some((_, last)) = self.threads.get(&tid) {
            if last == cpus {
                return Ok(());
            }
        }
        if !self.threads.contains_key(&tid) {
            let now =
                affinity::get_affinity(tid).map_err(|source| ApplyError::Read { tid, source })?;
            let original = siblings
                .iter()
                .filter(|&&s| s != tid)
                .find_map(|s| self.threads.get(s).filter(|(_, last)| *last == now))
                .map_or_else(|| now.clone(), |(orig, _)| orig.clone());
            self.threads.insert(tid, (original, now));
        }
        affinity::set_affinity(tid, cpus).map_err(|source| ApplyError::Set {
            tid,
            cpus: cpus.clone(),
            source,
        })?;
        if let Some(entry) = self.threads.get_mut(&tid) {
            entry.1 = cpus.clone();
        }
        Ok(())
    }

    /// Takes in a new thread of a process whose other threads are
    /// `siblings` without changing it: if it carries a pin we set on a
    /// sibling (it was created by that sibling), it is remembered with the
    /// sibling's original affinity, to be restored like the others.
    ///
    /// A thread of a new process (`siblings` its parent's threads, or none
    /// for an orphan whose parent is gone) that carries a pin we set on
    /// any thread, live or exited, is taken in the same way: a fork
    /// inherits its parent thread's affinity (sched_setaffinity(2)).
    pub fn adopt(&mut self, tid: i32, siblings: &[i32]) {
        if self.threads.contains_key(&tid) || self.threads.is_empty() && self.departed.is_empty() {
            return;
        }
        let Ok(now) = affinity::get_affinity(tid) else {
            return;
        };
        let original = siblings
            .iter()
            .filter(|&&s| s != tid)
            .find_map(|s| self.threads.get(s).filter(|(_, last)| *last == now))
            .or_else(|| self.threads.values().find(|(_, last)| *last == now))
            .or_else(|| self.departed.iter().find(|(_, last)| *last == now))
            .map(|(orig, _)| orig.clone());
        if let Some(original) = original {
            self.threads.insert(tid, (original, now));
        }
    }

    /// What we last set on `tid`, if we changed it.
    pub fn current(&self, tid: i32) -> Option<&CpuSet> {
        self.threads.get(&tid).map(|(_, c)| c)
    }

    /// The affinity `tid` had before we changed it.
    pub fn original(&self, tid: i32) -> Option<&CpuSet> {
        self.threads.get(&tid).map(|(o, _)| o)
    }

    /// Forgets a thread that exited.
    pub fn forget(&mut self, tid: i32) {
        if let Some(pair) = self.threads.remove(&tid) {
            if pair.0 != pair.1 && !self.departed.contains(&pair) && self.departed.len() < DEPARTED
            {
                self.departed.push(pair);
            }
        }
    }

    /// Puts one thread back to its own affinity now (e.g. it left
    /// management) and forgets it.
    pub fn restore(&mut self, tid: i32) -> Result<(), ApplyError> {
        let Some((original, last)) = self.threads.remove(&tid) else {
            return Ok(());
        };
        if original == last {
            return Ok(());
        }
        affinity::set_affinity(tid, &original).map_err(|source| ApplyError::Set {
            tid,
            cpus: original,
            source,
        })
    }

    /// Number of threads whose affinity we changed and still remember.
    pub fn changed(&self) -> usize {
        self.threads.len()
    }

    /// Puts every changed thread back to its own affinity and forgets them.
    pub fn restore_all(&mut self) -> RestoreReport {
        let mut r = RestoreReport::default();
        let tids: Vec<i32> = self.threads.keys().copied().collect();
        for tid in tids {
            match self.restore(tid) {
                Ok(()) => r.restored += 1,
                Err(e) if e.thread_gone() => r.gone += 1,
                Err(e) => {
                    let (cpus, error) = match &e {
                        ApplyError::Set { cpus, source, .. } => {
                            (cpus.to_string(), source.to_string())
                        }
                        ApplyError::Read { source, .. } => (String::new(), source.to_string()),
                    };
                    r.failures.push(RestoreFailure { tid, cpus, error });
                }
            }
        }
        r
    }
}

impl Drop for Applier {
    fn drop(&mut self) {
        // Leave no trace even when a caller forgot (or unwound past) the
        // explicit restore.
        let _ = self.restore_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_then_restores_a_thread_of_ours() {
        let before = affinity::get_affinity(0).unwrap();
        let Some(cpu) = before.iter().next() else {
            return pinsight_testkit::skip("no CPU in this thread's affinity");
        };
        if before.len() < 2 {
            return pinsight_testkit::skip("needs two usable CPUs to see a change");
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tx.send(pinsight_sys::affinity::gettid()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let mut a = Applier::new();
        a.set(tid, &CpuSet::single(cpu)).unwrap();
        assert_eq!(affinity::get_affinity(tid).unwrap(), CpuSet::single(cpu));
        assert_eq!(a.original(tid), Some(&before));
        let r = a.restore_all();
        assert_eq!(r.restored, 1);
        assert_eq!(affinity::get_affinity(tid).unwrap(), before);
        assert_eq!(a.changed(), 0);
        done_tx.send(()).unwrap();
        h.join().unwrap();
        // A thread that exited: ESRCH counts as gone, not a failure.
        let mut a = Applier::new();
        a.threads
            .insert(i32::MAX, (before.clone(), CpuSet::single(cpu)));
        let r = a.restore_all();
        assert_eq!((r.restored, r.gone, r.failures.len()), (0, 1, 0));
    }
}
