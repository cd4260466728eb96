//! Built-in workloads, so anyone can measure thread placement without a
//! program of their own, and reproduce published findings:
//!
//! | name         | what it stresses                         | after                                                        |
//! |--------------|------------------------------------------|--------------------------------------------------------------|
//! | `pi`         | compute; load balance (static vs steal)  | Adnan, Array 19 (2023): OpenCilk pi on an i5-1240P           |
//! | `mandelbrot` | compute, irregular rows                  | Galante and Oyamada, "To Pin or not to Pin", §4.1–4.2        |
//! | `lu`         | memory bandwidth, a barrier per column   | Galante and Oyamada, "To Pin or not to Pin", §4.1 (serial)   |
//! | `pingpong`   | one cache line bouncing between 2 cores  | "CPU Affinity: Because Even A Single Chip Is Nonuniform"     |
//!
//! Every workload does a fixed amount of work (no `--duration`), so two
//! placements are compared on identical work, and returns a checksum that is
//! bit-identical across thread counts and schedules.
//!
//! **Thread creation order is part of the contract.** `pinsight run` pins
//! threads in creation order through an LD_PRELOAD shim, the main thread
//! being place 0. So workers are plain `std::thread`s (pthread_create)
//! spawned in index order, worker *i* is place *i + 1*, all computing happens
//! in workers, and the main thread only waits (it wakes a few times a second
//! to report progress). No helper thread is ever created.

mod barrier;
mod cpu;
mod error;
mod harness;
mod lu;
mod mandelbrot;
mod pi;
mod pingpong;
mod sched;
mod size;
pub mod view;

pub use error::{Param, ScheduleError, SizeError, WorkloadError};
pub use harness::ThreadStat;
pub use sched::Schedule;
pub use size::parse_size;

use pinsight_sys::progress::{Progress, Silent};
use serde::Serialize;
use std::time::Duration;

/// What the caller may choose. `None` means the workload's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Worker threads; default: available parallelism (2 for `pingpong`).
    pub threads: Option<usize>,
    /// The workload's size knob (see [`WorkloadInfo::size_meaning`]).
    pub size: Option<u64>,
    /// How work is handed out (`pi` and `mandelbrot` only).
    pub schedule: Option<Schedule>,
    /// Iteration cap per pixel (`mandelbrot` only).
    pub max_iter: Option<u32>,
}

/// A workload's description, for `--list` and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub size_meaning: &'static str,
    pub default_size: u64,
    /// Largest size accepted (memory or u32 index limits).
    pub max_size: u64,
    /// Schedules accepted; empty when the workload has a fixed split.
    pub schedules: &'static [Schedule],
    pub default_schedule: Option<Schedule>,
}

/// All built-in workloads.
pub const WORKLOADS: &[WorkloadInfo] = &[pi::INFO, mandelbrot::INFO, lu::INFO, pingpong::INFO];

/// The description of `name`, if it is a workload.
pub fn info(name: &str) -> Option<&'static WorkloadInfo> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// One extra number a workload reports besides its figure of merit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detail {
    pub name: &'static str,
    pub value: f64,
    pub unit: &'static str,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub workload: &'static str,
    pub threads: usize,
    pub size: u64,
    pub schedule: Option<Schedule>,
    /// The workload's own performance number (see `unit`, `higher_is_better`).
    pub figure_of_merit: f64,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// Proof the work was done right; identical for every placement, thread
    /// count and schedule.
    pub checksum: f64,
    pub checksum_meaning: &'static str,
    /// Wall time from the first worker starting to the last one finishing.
    #[serde(serialize_with = "harness::as_secs")]
    pub elapsed: Duration,
    /// What `ThreadStat::work_units` counts.
    pub work_unit: &'static str,
    pub per_thread: Vec<ThreadStat>,
    pub details: Vec<Detail>,
}

impl Outcome {
    /// Slowest worker's busy time over the mean busy time: 1.0 is perfect
    /// balance; static splits on hybrid CPUs show values well above 1.
    pub fn imbalance(&self) -> Option<f64> {
        let busy: Vec<f64> = self
            .per_thread
            .iter()
            .map(|t| t.busy.as_secs_f64())
            .collect();
        let mean = busy.iter().sum::<f64>() / busy.len() as f64;
        let max = busy.iter().cloned().fold(0.0, f64::max);
        (mean > 0.0).then(|| max / mean)
    }
}

/// Runs workload `name` to completion. Errors name the bad input and what is
/// allowed (unknown workload, 0 threads, out-of-range size, a schedule the
/// workload does not take); use [`check`] first to tell those apart from
/// failures while running.
pub fn run(name: &str, params: &Params) -> Result<Outcome, WorkloadError> {
    run_with_progress(name, params, &mut Silent)
}

/// [`run`], with `progress` seeing one task named after the workload, of
/// its units of work (steps, rows, columns, round trips), stepped from the
/// calling (main) thread a few times a second while the workers compute.
/// No thread is created for this.
pub fn run_with_progress(
    name: &str,
    params: &Params,
    progress: &mut dyn Progress,
) -> Result<Outcome, WorkloadError> {
    let r = resolve(name, params)?;
    progress.begin(r.info.name, 0, 0);
    let outcome = dispatch(&r, progress);
    progress.end();
    outcome
}

/// Runs the resolved workload (see [`run_with_progress`]).
fn dispatch(r: &Resolved, progress: &mut dyn Progress) -> Result<Outcome, WorkloadError> {
    match r.info.name {
        "pi" => pi::run(
            r.threads,
            r.size,
            r.schedule.unwrap_or(Schedule::Steal),
            progress,
        ),
        "mandelbrot" => mandelbrot::run(
            r.threads,
            r.size,
            r.max_iter,
            r.schedule.unwrap_or(Schedule::Dynamic),
            progress,
        ),
        "lu" => lu::run(r.threads, r.size, progress),
        "pingpong" => pingpong::run(r.threads, r.size, progress),
        _ => unreachable!("every WORKLOADS entry is dispatched"),
    }
}

/// Validates `params` for workload `name` without running anything: the
/// errors [`run`] would give for bad input (usage errors, exit code 2).
pub fn check(name: &str, params: &Params) -> Result<(), WorkloadError> {
    resolve(name, params).map(|_| ())
}

/// Parameters with defaults filled in and every bound checked.
struct Resolved {
    info: &'static WorkloadInfo,
    threads: usize,
    size: u64,
    schedule: Option<Schedule>,
    max_iter: Option<u32>,
}

fn resolve(name: &str, params: &Params) -> Result<Resolved, WorkloadError> {
    let Some(info) = info(name) else {
        return Err(WorkloadError::Unknown {
            name: name.to_string(),
        });
    };
    let threads = resolve_threads(info, params.threads)?;
    let size = params.size.unwrap_or(info.default_size);
    if size < 1 || size > info.max_size {
        return Err(WorkloadError::SizeOutOfRange {
            workload: info.name,
            size,
            meaning: info.size_meaning,
            max: info.max_size,
        });
    }
    let schedule = match params.schedule {
        Some(s) if !info.schedules.contains(&s) => {
            return Err(WorkloadError::NoSchedule {
                workload: info.name,
                schedule: s,
                reason: fixed_split_reason(info.name),
                takers: WORKLOADS
                    .iter()
                    .filter(|w| !w.schedules.is_empty())
                    .map(|w| w.name)
                    .collect(),
            })
        }
        Some(s) => Some(s),
        None => info.default_schedule,
    };
    match params.max_iter {
        Some(_) if info.name != "mandelbrot" => {
            return Err(WorkloadError::MaxIterNotApplicable {
                workload: info.name,
            })
        }
        Some(0) => return Err(WorkloadError::ZeroMaxIter),
        _ => {}
    }
    Ok(Resolved {
        info,
        threads,
        size,
        schedule,
        max_iter: params.max_iter,
    })
}

/// Comma-separated workload names.
pub fn names() -> String {
    WORKLOADS
        .iter()
        .map(|w| w.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Most threads a run may ask for: far beyond any machine pinsight targets,
/// low enough that a typo (`--threads 20000`) is caught instead of exhausting memory.
pub const MAX_THREADS: usize = 1024;

fn resolve_threads(info: &WorkloadInfo, threads: Option<usize>) -> Result<usize, WorkloadError> {
    if info.name == "pingpong" {
        return match threads {
            None | Some(2) => Ok(2),
            Some(n) => Err(WorkloadError::PingpongThreads(n)),
        };
    }
    match threads {
        Some(0) => Err(WorkloadError::ZeroThreads),
        Some(n) if n > MAX_THREADS => Err(WorkloadError::TooManyThreads {
            threads: n,
            max: MAX_THREADS,
        }),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)),
    }
}

fn fixed_split_reason(name: &str) -> &'static str {
    match name {
        "lu" => "each column's trailing update is split into equal row blocks",
        "pingpong" => "it is exactly two threads taking turns",
        _ => "fixed split",
    }
}
