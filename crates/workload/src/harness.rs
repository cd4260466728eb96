//! Starting a team of workers, timing them, and collecting what each did.
//!
//! The order of thread creation is what `pinsight run` pins by, so workers
//! are spawned one by one in index order and nothing else is ever spawned.
//! All workers wait at a start gate until every one exists, so thread
//! creation cost is not timed and no worker gets a head start.

use crate::cpu::CpuSeen;
use pinsight_sys::progress::Progress;
use serde::{Serialize, Serializer};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What one worker did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadStat {
    /// Worker index: creation order, so place `index + 1` under `pinsight run`.
    pub index: usize,
    /// CPUs the worker was seen on (sched_getcpu samples), ascending.
    pub cpu_seen: Vec<usize>,
    /// Units of work done (see `Outcome::work_unit`).
    pub work_units: u64,
    /// Time from the start signal until this worker ran out of work. On a
    /// hybrid CPU with a static split, the E-core workers have the longest.
    #[serde(serialize_with = "as_secs")]
    pub busy: Duration,
    /// Ranges stolen from other workers (work-stealing schedule only).
    pub steals: u64,
}

/// Serialises a duration as fractional seconds (what JSON consumers expect).
pub(crate) fn as_secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// A worker's view of the run: its identity and its counters.
pub(crate) struct Worker<'a> {
    pub index: usize,
    pub threads: usize,
    pub work_units: u64,
    pub steals: u64,
    cpus: CpuSeen,
    progress: &'a AtomicU64,
}

impl Worker<'_> {
    /// Records the CPU this worker is on now (call once per chunk).
    pub fn sample_cpu(&mut self) {
        self.cpus.sample();
    }

    /// Adds to the shared progress counter (call once per chunk, not per item).
    pub fn report_progress(&self, done: u64) {
        self.progress.fetch_add(done, Ordering::Relaxed);
    }
}

/// What a team returns: each worker's result and stats, in index order.
pub(crate) struct TeamRun<R> {
    pub results: Vec<R>,
    pub stats: Vec<ThreadStat>,
    pub elapsed: Duration,
}

#[derive(Clone, Copy, PartialEq)]
enum Gate {
    Closed,
    Open,
    Abort,
}

/// Runs `body` on `threads` new workers and waits, stepping `progress`
/// (within the task its caller began; sized to `total` here) from the
/// calling thread.
pub(crate) fn run_team<R: Send>(
    threads: usize,
    total: u64,
    progress: &mut dyn Progress,
    body: &(dyn Fn(&mut Worker) -> R + Sync),
) -> Result<TeamRun<R>, crate::WorkloadError> {
    let gate = (Mutex::new(Gate::Closed), Condvar::new());
    let done_units = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let main = thread::current();
    thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for index in 0..threads {
            let (gate, done_units, finished, main) = (&gate, &done_units, &finished, main.clone());
            let spawned = thread::Builder::new()
                .name(format!("pinsight-w{index}"))
                .spawn_scoped(scope, move || {
                    if !wait_at_gate(gate) {
                        return None;
                    }
                    let start = Instant::now();
                    let mut w = Worker {
                        index,
                        threads,
                        work_units: 0,
                        steals: 0,
                        cpus: CpuSeen::default(),
                        progress: done_units,
                    };
                    w.sample_cpu();
                    let result = body(&mut w);
                    let end = Instant::now();
                    w.sample_cpu();
                    finished.fetch_add(1, Ordering::Release);
                    main.unpark();
                    let stat = ThreadStat {
                        index,
                        cpu_seen: w.cpus.into_vec(),
                        work_units: w.work_units,
                        busy: end - start,
                        steals: w.steals,
                    };
                    Some((result, stat, start, end))
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    open_gate(gate, Gate::Abort);
                    return Err(crate::WorkloadError::Spawn {
                        index,
                        threads,
                        reason: e.to_string(),
                    });
                }
            }
        }
        progress.resize(total);
        open_gate(&gate, Gate::Open);
        // The counter ends the wait promptly; `is_finished` catches a panicked worker.
        while finished.load(Ordering::Acquire) < threads && !handles.iter().all(|h| h.is_finished())
        {
            thread::park_timeout(Duration::from_millis(100));
            progress.step("", done_units.load(Ordering::Relaxed).min(total));
        }
        let mut results = Vec::with_capacity(threads);
        let mut stats = Vec::with_capacity(threads);
        let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
        for (index, h) in handles.into_iter().enumerate() {
            let (r, stat, start, end) = h
                .join()
                .map_err(|_| crate::WorkloadError::Panicked { index })?
                .expect("gate was opened");
            first = Some(first.map_or(start, |f| f.min(start)));
            last = Some(last.map_or(end, |l| l.max(end)));
            results.push(r);
            stats.push(stat);
        }
        progress.step("", total);
        let elapsed = match (first, last) {
            (Some(f), Some(l)) => l - f,
            _ => Duration::ZERO,
        };
        Ok(TeamRun {
            results,
            stats,
            elapsed,
        })
    })
}

fn wait_at_gate(gate: &(Mutex<Gate>, Condvar)) -> bool {
    let (lock, cv) = gate;
    let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
    while *state == Gate::Closed {
        state = cv.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    *state == Gate::Open
}

fn open_gate(gate: &(Mutex<Gate>, Condvar), to: Gate) {
    let (lock, cv) = gate;
    *lock.lock().unwrap_or_else(|e| e.into_inner()) = to;
    cv.notify_all();
}
