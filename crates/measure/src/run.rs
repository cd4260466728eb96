//! [`Measurer`]: spawn, attach counters before exec, wait with a timeout,
//! reap with rusage.
//!
//! Counting the whole process tree from its first instruction, without
//! stopping the child between fork and exec: the counters are opened once,
//! per measurer, on the thread that spawns every run, the *spawner*, with
//! `perf_event_open(pid = 0 (that thread), cpu = -1, inherit = 1,
//! disabled = 1, enable_on_exec = 1)`. A child inherits the spawner's
//! events (disabled, so the pre-exec work counts nothing); its `execve`
//! enables them (enable_on_exec); every thread and process it creates
//! inherits them in turn; and when each of those tasks exits, the kernel
//! adds its counts and enabled/running times to the spawner's event
//! (perf_event_open(2), "inherit"; `perf_event_exit_task` →
//! `sync_child_event` in kernel/events/core.c). A run's counts are the
//! event's reading after the reap minus its reading just before the
//! spawn. The spawner never execs, so its own events stay disabled; runs
//! of one measurer with counters are serialised.
//!
//! The perf counters are task-clock, CPU migrations and the hardware
//! events; context switches and page faults come from the reaped run's
//! rusage (`wait4`, [`counters::Usage`]), which the kernel keeps for every
//! task anyway: no counter to inherit, copy at each fork and fold back at
//! each exit, and no static key for the kernel to patch in and out.
//! rusage counts from the fork (the exec and the few pre-exec steps
//! included) and covers the children the program waited for; a descendant
//! never reaped (a daemon, or one killed with the run's process group) is
//! in perf's counts but not in rusage's.
//!
//! The spawner is the thread of the first counted run itself (compare,
//! tune and `run` ask from one thread): it clones the child directly, with
//! no hand-over. Once a run is asked for from another thread, the
//! measurer moves its counters to a thread of its own (`pinsight-spawn`)
//! that spawns on request.
//!
//! One more event, a non-inherited dummy, stays open on the spawner. When
//! a child inherits *every* event of its parent, the kernel marks the two
//! contexts as clones and, at a context switch between them, swaps the
//! contexts instead of switching their events (`context_equiv` and
//! `perf_event_context_sched_out` in kernel/events/core.c): the child
//! would then carry the spawner's own events through its `execve` and
//! take them with it at its exit, and every later run would count
//! nothing. An event that is not inherited makes the child's context no
//! clone (`inherited_all` in `perf_event_init_context`), so no swap.
//!
//! ```text
//! caller thread (the spawner)                    child
//! read counters (before)
//! spawn: vfork-style clone ──────────────────►   placement steps
//!                                                stamp the clock
//!                                                execve: counters on
//! wait (pidfd) ...                               exit: counts folded
//! reap, read counters (after)                    into the spawner's
//! ```
//!
//! This replaced a per-run handshake (a helper thread opening the counters
//! on the child's pid while the child waited before exec), which cost a
//! thread, two pipes, two context switches and N opens and closes per run,
//! and then a spawner thread of its own for every measurer, which cost a
//! hand-over and back per run.
//!
//! # The timer: from `execve` to the exit
//!
//! A run's `wall_s` starts when the child, as its very last step before
//! `execve` (after the placement steps), reads `CLOCK_MONOTONIC` and
//! stores it in memory it shares with the parent (the [`Spawn`]'s child
//! runs in our address space until the exec); the parent reads that stamp
//! once the spawn has returned. The clone, the placement steps (affinity,
//! memory policy) and any hand-over to the spawner are therefore not
//! timed, nor is the parent's wake-up after the exec.
//! It ends when the parent sees the exit: `waitid(WNOWAIT)` returns (or,
//! with a timeout or energy to sample meanwhile, the pidfd polls
//! readable) and the clock is read at once, before
//! anything else (energy, the `on_exit` observer, reaping).
//!
//! What remains in the figure and is not the program's: the `execve`
//! system call itself and the dynamic loader (as in hyperfine, whose
//! timer also covers its own `posix_spawn` and `wait`), the store of the
//! stamp (nanoseconds), and the delay from the kernel's exit
//! notification to the parent running again (a scheduler wake-up: a few
//! to tens of microseconds on an idle CPU, more when every CPU is busy).
//! Without a pidfd (Linux < 5.3) the exit is polled with a backoff of
//! 50 µs doubling to 5 ms, which can add up to that much.

use crate::cleanup::{self, GroupRegistration};
use crate::counters::{self, CounterError, CounterMetrics, PlannedEvent};
use crate::disturbance::{self, Sample};
use crate::energy::{EnergyMetrics, EnergySession, Rapl};
use crate::error::IoError;
use crate::record::{ExitStatusRecord, RunRecord};
use crate::sys::perf::{self, Counter, OpenSpec, PERF_COUNT_SW_DUMMY, PERF_TYPE_SOFTWARE};
use crate::sys::proc;
use crate::sys::spawn::Spawn;
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::exit::SpawnError;
use pinsight_sys::FsRoot;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What to measure and how long to wait.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Kill the run's process group after this long (`timed_out` is set).
    pub timeout: Option<Duration>,
    /// After SIGTERM on timeout, how long to wait before SIGKILL.
    pub kill_grace: Duration,
    /// Open perf counters (costs a helper thread and ~8 syscalls per run).
    pub counters: bool,
    /// Read RAPL energy before/after (and during long runs).
    pub energy: bool,
    /// When the main process exits, SIGKILL whatever is left in its process
    /// group (daemons, stragglers) so the next run starts clean.
    pub kill_leftovers: bool,
    /// Read `/proc/stat` before and after each run and record the
    /// [`crate::Disturbance`], judged with this threshold (a share of a
    /// CPU's time, e.g. 0.05); `None`: not measured.
    pub disturbance: Option<f64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout: None,
            kill_grace: Duration::from_millis(200),
            counters: true,
            energy: true,
            kill_leftovers: true,
            disturbance: Some(crate::disturbance::DEFAULT_THRESHOLD),
        }
    }
}

/// Starts `cmd` (see [`pinsight_sys::spawn`]: `clone(CLONE_VM |
/// CLONE_VFORK)`, so pinsight's memory is not copied for each run, the
/// placement steps are data, and the child stamps the timer's start
/// itself just before `execve`): its pid and that stamp (0: none).
fn start(cmd: &Spawn) -> io::Result<(libc::pid_t, u64)> {
    cmd.spawn().map(|sp| (sp.pid, sp.exec_ns))
}

/// Why a run could not be measured at all (a run that fails or crashes is
/// *measured*: see [`RunRecord::exit`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program cannot be started: not found (127), not executable
    /// (126), or the clone or a placement step (CPU mask, memory
    /// policy, working directory...) failed (1).
    #[error(transparent)]
    Program(#[from] SpawnError),
    /// Setting up the run failed before the program could start.
    #[error("{program}: cannot start: {source}")]
    Spawn { program: String, source: io::Error },
    /// Waiting for the child failed.
    #[error("waiting for the measured process failed: {0}")]
    Wait(#[source] io::Error),
    /// A cleanup signal (SIGINT/SIGTERM/SIGHUP) arrived: no new runs.
    #[error("interrupted by a signal")]
    Interrupted,
    /// The run did not get the placement it was meant to measure (the
    /// kernel refused a pin): its time would be another arm's.
    #[error("{program}: not placed as planned: {why}")]
    NotPlaced { program: String, why: String },
}
impl RunError {
    /// The exit code a command should use for this error (shell convention).
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Program(p) => p.exit_code(),
            RunError::Interrupted => pinsight_lifecycle::exit::signal_code(libc::SIGINT),
            _ => 1,
        }
    }
}

/// Measures runs. Build once (probing is done here), run many times.
#[derive(Debug)]
pub struct Measurer {
    fs: FsRoot,
    opts: Options,
    /// Every planned counter with how to open it, or why it cannot be.
    events: Vec<(PlannedEvent, Result<OpenSpec, CounterError>)>,
    hybrid: bool,
    hardware_unavailable: Option<String>,
    rapl: Option<Rapl>,
    /// The spawner and its counters, made by the first run with
    /// counters. Open for the measurer's life, the counters also keep the
    /// kernel's software-event hooks on: the kernel turns them on when the
    /// first such event is created and off when the last is freed, each
    /// time patching kernel text on every CPU (`perf_swevent_init` →
    /// `static_key_slow_inc`, an IPI to each CPU; kernel/events/core.c),
    /// which opening counters per run paid twice a run.
    spawner: Mutex<Option<Spawner>>,
    /// The counters the probe opened, kept open until the spawner's are:
    /// closing the last software event of a kind and opening it again
    /// patches kernel text twice more (see `spawner`), milliseconds in a
    /// VM.
    probes: Mutex<Vec<Counter>>,
    /// `/proc/stat`, open for the measurer's life, and the sample taken
    /// after the last run with the spawn count it was taken at (see
    /// [`Measurer::sample_before`]).
    stat: Mutex<(pinsight_sys::cpustat::StatFile, Option<(Sample, u64)>)>,
}

/// Programs started by any measurer of this process so far: a sample
/// taken after a run is reused as the next run's "before" only when no
/// other program started in between.
static SPAWNS: AtomicU64 = AtomicU64::new(0);

impl Measurer {
    /// Probes what this machine can measure. The PMU list and RAPL zones
    /// are read through `fs`; counters are tried live on this process (runs
    /// happen on this machine). Returns one human note per capability, e.g.
    /// `counters: hardware unavailable: no hardware PMU: ...`.
    pub fn new(fs: &FsRoot, opts: Options) -> (Measurer, Vec<String>) {
        let mut notes = Vec::new();
        let mut events = Vec::new();
        let mut hybrid = false;
        let mut hardware_unavailable = None;
        let mut probes = Vec::new();
        if opts.counters {
            let plan = counters::plan(&counters::discover_core_pmus(fs));
            hybrid = plan.hybrid;
            hardware_unavailable = plan.hardware_unavailable.clone();
            let paranoid = fs
                .read_opt("/proc/sys/kernel/perf_event_paranoid")
                .and_then(|s| s.trim().parse::<i64>().ok());
            let mut user_only = false;
            for p in plan.events {
                let r = probe(&p, paranoid, plan.hybrid).map(|(spec, c)| {
                    probes.push(c);
                    spec
                });
                if let Ok(s) = &r {
                    user_only |= s.exclude_kernel;
                }
                events.push((p, r));
            }
            let ok: Vec<String> = events
                .iter()
                .filter(|(_, r)| r.is_ok())
                .map(|(p, _)| p.label(plan.hybrid))
                .collect();
            notes.push(if ok.is_empty() {
                "counters: none can be opened".to_string()
            } else {
                format!("counters: {}", ok.join(", "))
            });
            if let Some(r) = &hardware_unavailable {
                notes.push(format!("counters: hardware unavailable: {r}"));
            }
            for (p, r) in &events {
                if let Err(reason) = r {
                    notes.push(format!(
                        "counters: {} unavailable: {reason}",
                        p.label(plan.hybrid)
                    ));
                }
            }
            if user_only {
                notes.push(format!(
                    "counters: user space only (perf_event_paranoid={}; root or CAP_PERFMON counts the kernel too)",
                    paranoid.map_or("?".to_string(), |p| p.to_string())
                ));
            }
            if hybrid {
                notes.push(
                    "counters: hybrid PMUs: hardware events counted per core type and summed"
                        .to_string(),
                );
            }
        } else {
            notes.push("counters: off".to_string());
        }
        let rapl = if opts.energy {
            let r = Rapl::discover(fs);
            notes.extend(r.notes(fs));
            Some(r)
        } else {
            notes.push("energy: off".to_string());
            None
        };
        (
            Measurer {
                fs: fs.clone(),
                opts,
                events,
                hybrid,
                hardware_unavailable,
                rapl,
                spawner: Mutex::new(None),
                probes: Mutex::new(probes),
                stat: Mutex::new((pinsight_sys::cpustat::StatFile::open(fs), None)),
            },
            notes,
        )
    }

    /// The options this measurer was built with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The counter and energy metrics no run of this measurer can have,
    /// by JSON name, each with the reason every run's record gives (no
    /// PMU, no RAPL zone, counters off...): what a journal can write once
    /// in its header instead of in every run line. A run whose record
    /// says otherwise (a counter that failed to read) has its own value.
    pub fn unavailable_in_every_run(&self) -> std::collections::BTreeMap<String, String> {
        // The metrics of a run in which every counter that opens counted:
        // what is unavailable then is unavailable in every run.
        let mut counters = if self.opts.counters && self.events.iter().any(|(_, r)| r.is_ok()) {
            let readings: Vec<(PlannedEvent, Result<perf::Reading, CounterError>)> = self
                .events
                .iter()
                .map(|(p, spec)| {
                    let r = match spec {
                        Ok(_) => Ok(perf::Reading {
                            value: 1,
                            time_enabled_ns: 1,
                            time_running_ns: 1,
                        }),
                        Err(e) => Err(e.clone()),
                    };
                    (p.clone(), r)
                })
                .collect();
            counters::derive(&readings, self.hybrid, self.hardware_unavailable.as_deref())
        } else {
            self.read_counters(None, None)
        }
        // Every reaped run has its rusage.
        .with_usage(counters::Usage::default());
        let mut energy = match &self.rapl {
            Some(Rapl {
                unavailable: Some(reason),
                ..
            }) => EnergyMetrics::unavailable(reason),
            Some(_) => EnergyMetrics::unavailable(""),
            None => EnergyMetrics::unavailable("energy measurement off"),
        };
        RunRecord::metrics_of(&mut counters, &mut energy)
            .into_iter()
            .filter_map(|(name, m)| match m.reason() {
                // Energy read per run: its reasons are the run's own.
                Some(r) if !r.is_empty() => Some((name.to_string(), r.to_string())),
                _ => None,
            })
            .collect()
    }

    /// Runs `cmd` once and measures it.
    ///
    /// The caller owns the command's setup: arguments, environment
    /// (LD_PRELOAD...), current dir, stdio, and placement steps (CPU mask,
    /// memory policy, inherited descriptors), which are neither counted
    /// nor timed. This adds `process_group(0)`; the child stamps the
    /// timer's start itself (see the module's doc); with counters, the
    /// command is spawned from the measurer's spawner thread. Stdio
    /// should be inherited, null or files: piped stdio is closed at once
    /// (the output is not returned). Runs in their own process group cannot
    /// read the terminal (SIGTTIN): give them `Stdio::Null` as stdin.
    pub fn run(&self, cmd: Spawn) -> Result<RunRecord, RunError> {
        self.run_observed_on(cmd, None, |_| (), |()| ())
    }

    /// [`Measurer::run`] of a program placed on `plan_cpus`: the
    /// disturbance is accounted on those CPUs (else on every CPU).
    pub fn run_on(&self, cmd: Spawn, plan_cpus: &CpuSet) -> Result<RunRecord, RunError> {
        self.run_observed_on(cmd, Some(plan_cpus), |_| (), |()| ())
    }

    /// [`Measurer::run_observed_on`] with the disturbance on every CPU.
    pub fn run_observed<W>(
        &self,
        cmd: Spawn,
        on_spawn: impl FnOnce(libc::pid_t) -> W,
        on_exit: impl FnOnce(W),
    ) -> Result<RunRecord, RunError> {
        self.run_observed_on(cmd, None, on_spawn, on_exit)
    }

    /// [`Measurer::run`] with an observer of the running child:
    /// `on_spawn(pid)` right after the spawn, `on_exit` once the child has
    /// exited but before it is reaped (its `/proc/PID` is still there),
    /// on every path that spawned it. Used to pin the threads of programs
    /// the LD_PRELOAD shim cannot reach with the `/proc` watcher. The
    /// disturbance is accounted on `plan_cpus` (every CPU when `None`).
    pub fn run_observed_on<W>(
        &self,
        mut cmd: Spawn,
        plan_cpus: Option<&CpuSet>,
        on_spawn: impl FnOnce(libc::pid_t) -> W,
        on_exit: impl FnOnce(W),
    ) -> Result<RunRecord, RunError> {
        if cleanup::is_shutting_down() {
            return Err(RunError::Interrupted);
        }
        let program = cmd.get_program().to_string_lossy().into_owned();
        cmd.process_group(0);

        let want_counters = self.opts.counters && self.events.iter().any(|(_, r)| r.is_ok());
        // Held for the whole run: the spawner's counters count one run at
        // a time.
        let mut spawner = want_counters.then(|| self.spawner());

        let max_rss_floor_kib = proc::self_max_rss_kib();
        let mut energy = match &self.rapl {
            Some(r) if r.unavailable.is_none() => Some(r.start(&self.fs)),
            _ => None,
        };
        let stat_before = self.opts.disturbance.and_then(|_| self.sample_before());
        SPAWNS.fetch_add(1, Ordering::Relaxed);
        let before = spawner
            .as_deref()
            .and_then(Option::as_ref)
            .map(Spawner::read);
        let (pid, exec_ns, t0) = spawn_timed(
            spawner.as_deref_mut().and_then(Option::as_mut),
            cmd,
            program,
        )?;
        let registration = GroupRegistration::new(pid);
        let observer = on_spawn(pid);

        let (end_ns, timed_out) = match self.wait(pid, t0, &mut energy, true) {
            Ok(r) => r,
            Err(e) => return Err(abandon(pid, e, || on_exit(observer))),
        };
        let stat_after = stat_before.as_ref().and_then(|_| self.sample_after());
        on_exit(observer);
        // Final energy sample as close to the exit as we can.
        let energy = self.finish_energy(energy);
        if self.opts.kill_leftovers || timed_out {
            // The leader is a zombie until reaped, so its group id cannot
            // have been reused: this only reaches our run's processes.
            let _ = proc::kill_group(pid, libc::SIGKILL);
        }
        let reaped = proc::wait4(pid).map_err(RunError::Wait)?;
        drop(registration);

        let counters =
            self.run_counters(before, spawner.as_deref().and_then(Option::as_ref), &reaped);
        drop(spawner);
        let (code, signal) = proc::decode_status(reaped.status);
        let disturbance = self.disturbance(stat_before, stat_after, plan_cpus, &reaped);
        Ok(RunRecord {
            wall_s: end_ns.saturating_sub(exec_ns) as f64 * 1e-9,
            user_s: reaped.user.as_secs_f64(),
            sys_s: reaped.sys.as_secs_f64(),
            max_rss_kib: reaped.max_rss_kib,
            max_rss_floor_kib,
            exit: ExitStatusRecord { code, signal },
            timed_out,
            counters,
            energy,
            disturbance,
        })
    }

    /// The run's counters: what the spawner's counters counted since
    /// `before`, with the rusage of the `reaped` run.
    fn run_counters(
        &self,
        before: Option<Readings>,
        spawner: Option<&Spawner>,
        reaped: &proc::Reaped,
    ) -> CounterMetrics {
        match (before, spawner) {
            (Some(before), Some(sp)) => self.read_counters(Some(before), Some(sp.read())),
            _ => self.read_counters(None, None),
        }
        .with_usage(counters::Usage {
            context_switches: reaped.context_switches,
            page_faults: reaped.page_faults,
        })
    }

    /// The run's energy from its session (sampled last at the exit), or
    /// why there is none.
    fn finish_energy(&self, energy: Option<EnergySession>) -> EnergyMetrics {
        match (energy, &self.rapl) {
            (Some(e), Some(r)) => e.finish(&self.fs, r),
            (
                None,
                Some(Rapl {
                    unavailable: Some(reason),
                    ..
                }),
            ) => EnergyMetrics::unavailable(reason),
            _ => EnergyMetrics::unavailable("energy measurement off"),
        }
    }

    /// The run's disturbance from the samples around it (None when either
    /// is missing or the disturbance is not measured).
    fn disturbance(
        &self,
        stat_before: Option<Sample>,
        stat_after: Option<Sample>,
        plan_cpus: Option<&CpuSet>,
        reaped: &proc::Reaped,
    ) -> Option<disturbance::Disturbance> {
        match (stat_before, stat_after, self.opts.disturbance) {
            (Some(b), Some(a), Some(threshold)) => Some(disturbance::estimate(
                &b,
                &a,
                plan_cpus,
                (reaped.user + reaped.sys).as_secs_f64(),
                pinsight_sys::procfs::clock_ticks(),
                threshold,
            )),
            _ => None,
        }
    }

    /// Waits for `pid` to exit without reaping it, enforcing the timeout and
    /// sampling energy on schedule. Returns (the exit, as
    /// [`proc::monotonic_ns`] read the moment it was seen; timed out).
    fn wait(
        &self,
        pid: libc::pid_t,
        t0: Instant,
        energy: &mut Option<EnergySession>,
        use_pidfd: bool,
    ) -> io::Result<(u64, bool)> {
        let deadline = self.opts.timeout.map(|t| t0 + t);
        let interval = self.rapl.as_ref().map(|r| r.sample_interval());
        let mut next_sample = if energy.is_some() {
            interval.map(|i| Instant::now() + i)
        } else {
            None
        };
        // Nothing to do before the exit (no timeout, no energy to
        // sample): block in waitid(WEXITED | WNOWAIT) (waitid(2)), one
        // system call where a pidfd costs three (open, poll, close); the
        // clock is read the moment it returns, as after the poll.
        if use_pidfd && deadline.is_none() && next_sample.is_none() {
            proc::wait_exited(pid)?;
            return Ok((proc::monotonic_ns(), false));
        }
        let pidfd = if use_pidfd {
            proc::pidfd_open(pid).ok()
        } else {
            None
        };
        let mut timed_out = false;
        let mut kill_at: Option<Instant> = None;
        let mut backoff = Duration::from_micros(50);
        loop {
            let now = Instant::now();
            if let Some(d) = deadline {
                if !timed_out && now >= d {
                    timed_out = true;
                    proc::kill_group(pid, libc::SIGTERM)?;
                    kill_at = Some(now + self.opts.kill_grace);
                }
            }
            if let Some(k) = kill_at {
                if now >= k {
                    proc::kill_group(pid, libc::SIGKILL)?;
                    kill_at = None;
                }
            }
            if let (Some(n), Some(i), Some(r), Some(e)) =
                (next_sample, interval, &self.rapl, energy.as_mut())
            {
                if now >= n {
                    // Long runs: sample so no counter wraps twice unseen.
                    e.sample(&self.fs, r);
                    next_sample = Some(now + i);
                }
            }
            let wake = [
                if timed_out { None } else { deadline },
                kill_at,
                next_sample,
            ]
            .into_iter()
            .flatten()
            .min();
            let exited = match &pidfd {
                Some(fd) => {
                    proc::poll_readable(fd, wake.map(|w| w.saturating_duration_since(now)))?
                }
                None => {
                    // No pidfd (Linux < 5.3, seccomp): poll with backoff.
                    if proc::has_exited(pid)? {
                        true
                    } else {
                        let mut nap = backoff;
                        if let Some(w) = wake {
                            nap = nap.min(w.saturating_duration_since(now));
                        }
                        std::thread::sleep(nap);
                        backoff = (backoff * 2).min(Duration::from_millis(5));
                        proc::has_exited(pid)?
                    }
                }
            };
            if exited {
                return Ok((proc::monotonic_ns(), timed_out));
            }
        }
    }

    /// The disturbance sample before a run: the one taken after this
    /// measurer's previous run when that is at most
    /// [`disturbance::SHARED_SAMPLE_MAX_AGE`] old and no program was started since (by
    /// any measurer of this process: a `--prepare` command's CPU time
    /// must not count as other work), else a fresh read of `/proc/stat`.
    /// Sharing halves the reads of `/proc/stat` (whose generation sums
    /// every interrupt on every CPU: fs/proc/stat.c `show_stat`) for
    /// back-to-back runs; the run's interval then also covers the gap
    /// since the previous run's exit (pinsight's own CPU time in it is
    /// subtracted as in the run), at most that age.
    fn sample_before(&self) -> Option<Sample> {
        let mut stat = self.stat.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((s, at)) = stat.1.take() {
            if at == SPAWNS.load(Ordering::Relaxed) && s.age() <= disturbance::SHARED_SAMPLE_MAX_AGE
            {
                return Some(s);
            }
        }
        Sample::take_from(&self.fs, &mut stat.0)
    }

    /// The disturbance sample after a run, kept for the next run's
    /// [`Measurer::sample_before`].
    fn sample_after(&self) -> Option<Sample> {
        let mut stat = self.stat.lock().unwrap_or_else(PoisonError::into_inner);
        let s = Sample::take_from(&self.fs, &mut stat.0)?;
        stat.1 = Some((s.clone(), SPAWNS.load(Ordering::Relaxed)));
        Some(s)
    }

    /// The spawner, made on first use (its counters opened): the calling
    /// thread itself, until a run is asked for from another thread; from
    /// then on a thread of its own.
    fn spawner(&self) -> MutexGuard<'_, Option<Spawner>> {
        let mut guard = self.spawner.lock().unwrap_or_else(PoisonError::into_inner);
        let specs = || -> Vec<Option<OpenSpec>> {
            self.events
                .iter()
                .map(|(_, r)| r.as_ref().ok().copied())
                .collect()
        };
        let made = match guard.as_ref() {
            None => Some(Spawner::on_caller(&specs())),
            Some(s) if !s.serves_this_thread() => {
                *guard = None; // its counters closed first
                Spawner::on_thread(specs())
            }
            Some(_) => return guard,
        };
        *guard = made;
        // The spawner's counters are open: the probe's may close now.
        self.probes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        guard
    }

    /// Each planned counter's count for one run: `after - before`.
    fn read_counters(&self, before: Option<Readings>, after: Option<Readings>) -> CounterMetrics {
        if !self.opts.counters {
            return CounterMetrics::unavailable("counters off");
        }
        let (Some(before), Some(after)) = (before, after) else {
            return CounterMetrics::unavailable(
                "no perf counter can be opened on this machine (or the spawner thread could not start)",
            );
        };
        let readings: Vec<(PlannedEvent, Result<perf::Reading, CounterError>)> = self
            .events
            .iter()
            .zip(before.into_iter().zip(after))
            .map(|((p, spec), (b, a))| {
                let label = || p.label(self.hybrid);
                let r = match (spec, b, a) {
                    (Err(reason), _, _) => Err(reason.clone()),
                    (Ok(_), Some(Ok(b)), Some(Ok(a))) => Ok(perf::Reading {
                        value: a.value.saturating_sub(b.value),
                        time_enabled_ns: a.time_enabled_ns.saturating_sub(b.time_enabled_ns),
                        time_running_ns: a.time_running_ns.saturating_sub(b.time_running_ns),
                    }),
                    (Ok(_), Some(Err(e)), _) | (Ok(_), _, Some(Err(e))) => match e {
                        ReadError::Open(e) => Err(CounterError::Attach {
                            label: label(),
                            source: e,
                        }),
                        ReadError::Read(e) => Err(CounterError::Read {
                            label: label(),
                            source: e,
                        }),
                    },
                    (Ok(_), _, _) => Err(CounterError::NotOpened),
                };
                (p.clone(), r)
            })
            .collect();
        counters::derive(&readings, self.hybrid, self.hardware_unavailable.as_deref())
    }
}

/// Tries to open `p` on this thread to learn whether (and how) it can be
/// opened: with the kernel counted, else user space only (paranoid >= 2).
/// The counter opened is returned too, to be kept open until the
/// spawner's are (see [`Measurer::probes`]).
fn probe(
    p: &PlannedEvent,
    paranoid: Option<i64>,
    hybrid: bool,
) -> Result<(OpenSpec, Counter), CounterError> {
    let mut spec = OpenSpec {
        type_: p.attr_type,
        config: p.attr_config,
        exclude_kernel: false,
        inherit: true,
        enable_on_exec: true,
    };
    let first = match perf::open(&spec, 0) {
        Ok(c) => return Ok((spec, c)),
        Err(e) => e,
    };
    if matches!(first.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
        spec.exclude_kernel = true;
        if let Ok(c) = perf::open(&spec, 0) {
            return Ok((spec, c));
        }
    }
    Err(CounterError::Open {
        label: p.label(hybrid),
        hardware: p.pmu.is_some(),
        source: first.into(),
        paranoid,
    })
}

/// A reason a user can act on for a failed `perf_event_open`.
pub(crate) fn describe_open_error(
    label: &str,
    hardware: bool,
    e: &io::Error,
    paranoid: Option<i64>,
) -> String {
    let errno = e.raw_os_error().unwrap_or(0);
    let name = match errno {
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOSYS => "ENOSYS",
        libc::EBUSY => "EBUSY",
        libc::EMFILE => "EMFILE",
        _ => "error",
    };
    let what = format!("perf_event_open({label}) failed: {name} ({e})");
    match errno {
        libc::EACCES | libc::EPERM => format!(
            "perf_event_paranoid={}: {what}; needs root or CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=2`",
            paranoid.map_or("?".to_string(), |p| p.to_string())
        ),
        libc::ENOSYS => format!("kernel without perf events: {what}"),
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if hardware => format!("no hardware PMU: {what}"),
        _ => what,
    }
}

/// Why one counter has no reading.
#[derive(Clone, Debug)]
enum ReadError {
    /// Opening it on the spawner thread failed.
    Open(IoError),
    /// Reading it failed.
    Read(IoError),
}

/// Per planned event: `None` if the probe ruled it out, else its reading.
type Readings = Vec<Option<Result<perf::Reading, ReadError>>>;

/// The event that keeps a child's perf context from being a clone of the
/// spawner's (see the module's doc): counts nothing, never enabled.
const NO_CLONE: OpenSpec = OpenSpec {
    type_: PERF_TYPE_SOFTWARE,
    config: PERF_COUNT_SW_DUMMY,
    exclude_kernel: true,
    inherit: false,
    enable_on_exec: false,
};

/// Where every counted run is spawned from (see the module's doc), with
/// its counters.
struct Spawner {
    /// Per planned event: `None` if the probe ruled it out, else the
    /// counter opened on the spawning thread (or why it could not be).
    counters: Vec<Option<Result<Counter, IoError>>>,
    how: How,
}

/// The spawning thread: the caller's own, or a thread of its own.
enum How {
    /// The counters are open on this thread (the first to run a counted
    /// program), which spawns its runs itself: no hand-over.
    Caller {
        thread: std::thread::ThreadId,
        /// Keeps the children's contexts from being clones (see the
        /// module's doc).
        _no_clone: Option<Counter>,
    },
    /// A thread of its own, for runs asked for from several threads.
    Thread {
        jobs: Option<mpsc::Sender<Spawn>>,
        spawned: mpsc::Receiver<std::io::Result<(libc::pid_t, u64)>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner")
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// Opens `specs` on the calling thread, after the event that keeps its
/// children's contexts from being clones.
fn open_here(
    specs: &[Option<OpenSpec>],
) -> (Option<Counter>, Vec<Option<Result<Counter, IoError>>>) {
    // pid 0: this thread, the parent of every child it spawns.
    let no_clone = perf::open(&NO_CLONE, 0).map_err(IoError::from);
    let counters = specs
        .iter()
        .map(|s| {
            s.map(|s| match &no_clone {
                Ok(_) => perf::open(&s, 0).map_err(IoError::from),
                Err(e) => Err(e.clone()),
            })
        })
        .collect();
    (no_clone.ok(), counters)
}

impl Spawner {
    /// Opens `specs` on the calling thread, which will spawn the runs.
    ///
    /// The caller's thread is as good a parent as a thread of its own:
    /// its events are disabled and only an `execve` enables them, which
    /// this thread never does; a thread it creates later inherits them
    /// disabled and never execs either. What it saves is the hand-over to
    /// another thread and back on every run (two wake-ups, each an
    /// inter-processor interrupt when the other thread sleeps on another
    /// CPU; a VM exit in a guest), most of pinsight's cost per run of a
    /// short program after the output files. One thing is shared: another
    /// program this thread starts and that exits *during* a counted run
    /// (between its two readings) adds its counts to that run; pinsight
    /// starts none then (a `--prepare` command is reaped before the run's
    /// first reading).
    fn on_caller(specs: &[Option<OpenSpec>]) -> Spawner {
        let (no_clone, counters) = open_here(specs);
        Spawner {
            counters,
            how: How::Caller {
                thread: std::thread::current().id(),
                _no_clone: no_clone,
            },
        }
    }

    /// Starts a thread and opens `specs` on it. `None` if the thread
    /// cannot be started.
    fn on_thread(specs: Vec<Option<OpenSpec>>) -> Option<Spawner> {
        let (opened_tx, opened_rx) = mpsc::channel();
        let (jobs_tx, jobs_rx) = mpsc::channel::<Spawn>();
        let (spawned_tx, spawned_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("pinsight-spawn".into())
            .spawn(move || {
                let (no_clone, counters) = open_here(&specs);
                if opened_tx.send(counters).is_err() {
                    return;
                }
                for cmd in jobs_rx {
                    if spawned_tx.send(start(&cmd)).is_err() {
                        break;
                    }
                }
                drop(no_clone);
            })
            .ok()?;
        let counters = opened_rx.recv().ok()?;
        Some(Spawner {
            counters,
            how: How::Thread {
                jobs: Some(jobs_tx),
                spawned: spawned_rx,
                thread: Some(thread),
            },
        })
    }

    /// Whether a run asked for on the calling thread can be spawned here.
    fn serves_this_thread(&self) -> bool {
        match &self.how {
            How::Caller { thread, .. } => *thread == std::thread::current().id(),
            How::Thread { .. } => true,
        }
    }

    /// Spawns `cmd` from the spawning thread.
    fn spawn(&mut self, cmd: Spawn) -> std::io::Result<(libc::pid_t, u64)> {
        let gone = || std::io::Error::other("the spawner thread is gone");
        match &mut self.how {
            How::Caller { .. } => start(&cmd),
            How::Thread { jobs, spawned, .. } => {
                jobs.as_ref()
                    .ok_or_else(gone)?
                    .send(cmd)
                    .map_err(|_| gone())?;
                spawned.recv().map_err(|_| gone())?
            }
        }
    }

    /// Every counter's reading now.
    fn read(&self) -> Readings {
        self.counters
            .iter()
            .map(|c| {
                c.as_ref().map(|c| match c {
                    Ok(c) => c.read().map_err(|e| ReadError::Read(e.into())),
                    Err(e) => Err(ReadError::Open(e.clone())),
                })
            })
            .collect()
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        if let How::Thread { jobs, thread, .. } = &mut self.how {
            // Closing the job channel ends the thread's loop.
            *jobs = None;
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// Gives up the run of `pid` when waiting for it failed (`e`): its
/// process group killed, `on_exit` told, the child reaped.
fn abandon(pid: libc::pid_t, e: io::Error, on_exit: impl FnOnce()) -> RunError {
    let _ = proc::kill_group(pid, libc::SIGKILL);
    on_exit();
    let _ = proc::wait4(pid);
    RunError::Wait(e)
}

/// Spawns `cmd` (from `spawner` when counting): its pid, the start of
/// its timed interval ([`proc::monotonic_ns`]) and the instant the parent
/// spawned it.
fn spawn_timed(
    spawner: Option<&mut Spawner>,
    cmd: Spawn,
    program: String,
) -> Result<(libc::pid_t, u64, Instant), RunError> {
    let parent_t0_ns = proc::monotonic_ns();
    let t0 = Instant::now();
    let spawned = match spawner {
        Some(sp) => sp.spawn(cmd),
        None => start(&cmd),
    };
    let (pid, child_stamp) = spawned.map_err(|e| spawn_error(program, e))?;
    // The child stamped just before a successful execve (spawn returns
    // Ok only then); the parent's own clock is the fallback.
    let exec_ns = if child_stamp > 0 {
        child_stamp
    } else {
        parent_t0_ns
    };
    Ok((pid, exec_ns, t0))
}

fn spawn_error(program: String, e: io::Error) -> RunError {
    RunError::Program(SpawnError::from_io(program, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_errors_name_the_cause() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        let r = describe_open_error("cycles", true, &e, Some(2));
        assert!(
            r.starts_with("no hardware PMU: perf_event_open(cycles) failed: ENOENT"),
            "{r}"
        );
        let e = io::Error::from_raw_os_error(libc::EACCES);
        let r = describe_open_error("task-clock", false, &e, Some(3));
        assert!(
            r.starts_with("perf_event_paranoid=3: perf_event_open(task-clock) failed: EACCES"),
            "{r}"
        );
        assert_eq!(
            spawn_error("x".into(), io::Error::from_raw_os_error(libc::ENOENT)).exit_code(),
            127
        );
        assert_eq!(
            spawn_error("x".into(), io::Error::from_raw_os_error(libc::EACCES)).exit_code(),
            126
        );
    }

    #[test]
    fn waiting_without_pidfd_still_sees_exit_and_enforces_the_timeout() {
        let opts = Options {
            counters: false,
            energy: false,
            timeout: Some(Duration::from_millis(100)),
            kill_grace: Duration::from_millis(50),
            ..Options::default()
        };
        let (m, _) = Measurer::new(&FsRoot::live(), opts);
        for (secs, expect_timeout) in [("0.02", false), ("30", true)] {
            let t0 = Instant::now();
            let pid = Spawn::new("sleep")
                .arg(secs)
                .process_group(0)
                .spawn()
                .unwrap()
                .pid;
            let (_, timed_out) = m.wait(pid, t0, &mut None, false).unwrap();
            let reaped = proc::wait4(pid).unwrap();
            assert_eq!(timed_out, expect_timeout);
            let (code, signal) = proc::decode_status(reaped.status);
            if expect_timeout {
                assert_eq!(signal, Some(libc::SIGTERM));
            } else {
                assert_eq!(code, Some(0));
            }
        }
    }
}
