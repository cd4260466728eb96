//! [`Measurer`]: spawn, attach counters before exec, wait with a timeout,
//! reap with rusage.
//!
//! Attaching counters to the whole process tree from its first instruction
//! needs the child to pause between fork and exec while the parent opens
//! `perf_event_open(pid = child, cpu = -1, inherit = 1, disabled = 1,
//! enable_on_exec = 1)`. std's `Command::spawn` does not return until the
//! child has exec'd, so the parent side of that handshake runs on a short
//! helper thread:
//!
//! ```text
//! child (pre_exec, last)        helper thread                 caller thread
//!                                                              spawn() ... blocks
//! write(ready, getpid())  ───►  read pid
//! read(go) ... waits            perf_event_open × N (pid)
//!                         ◄───  write(go)
//! execve                                                      spawn() returns
//! ```
//!
//! If anything fails before the child writes its pid (the caller's own
//! `pre_exec`, exec itself), the helper sees EOF and gives up; if the helper
//! dies, the child sees EOF on `go` and the spawn fails: no hang either way.

use crate::cleanup::{self, GroupRegistration};
use crate::counters::{self, CounterError, CounterMetrics, PlannedEvent};
use crate::disturbance::{self, Sample};
use crate::energy::{EnergyMetrics, EnergySession, Rapl};
use crate::record::{ExitStatusRecord, RunRecord};
use crate::sys::perf::{self, Counter, OpenSpec};
use crate::sys::proc;
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::exit::SpawnError;
use pinsight_topology::FsRoot;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
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

/// Why a run could not be measured at all (a run that fails or crashes is
/// *measured*: see [`RunRecord::exit`]).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program cannot be started: not found (127), not executable
    /// (126), or fork or the caller's `pre_exec` failed (1).
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
}

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
        if opts.counters {
            let plan = counters::plan(&counters::discover_core_pmus(fs));
            hybrid = plan.hybrid;
            hardware_unavailable = plan.hardware_unavailable.clone();
            let paranoid = fs
                .read_opt("/proc/sys/kernel/perf_event_paranoid")
                .and_then(|s| s.trim().parse::<i64>().ok());
            let mut user_only = false;
            for p in plan.events {
                let r = probe(&p, paranoid, plan.hybrid);
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
            },
            notes,
        )
    }

    /// The options this measurer was built with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Runs `cmd` once and measures it.
    ///
    /// The caller owns the command's setup: arguments, environment,
    /// current dir, stdio, and `pre_exec` hooks (affinity, LD_PRELOAD...),
    /// which run before the counters attach. This adds `process_group(0)`
    /// and, with counters, a final `pre_exec` for the handshake. Stdio
    /// should be inherited, null or files: piped stdio is closed at once
    /// (the output is not returned). Runs in their own process group cannot
    /// read the terminal (SIGTTIN): give them `Stdio::null()` as stdin.
    pub fn run(&self, cmd: Command) -> Result<RunRecord, RunError> {
        self.run_observed_on(cmd, None, |_| (), |()| ())
    }

    /// [`Measurer::run`] of a program placed on `plan_cpus`: the
    /// disturbance is accounted on those CPUs (else on every CPU).
    pub fn run_on(&self, cmd: Command, plan_cpus: &CpuSet) -> Result<RunRecord, RunError> {
        self.run_observed_on(cmd, Some(plan_cpus), |_| (), |()| ())
    }

    /// [`Measurer::run_observed_on`] with the disturbance on every CPU.
    pub fn run_observed<W>(
        &self,
        cmd: Command,
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
        mut cmd: Command,
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
        let handshake = if want_counters {
            Some(Handshake::new().map_err(|source| RunError::Spawn {
                program: program.clone(),
                source,
            })?)
        } else {
            None
        };
        if let Some(h) = &handshake {
            let (ready_w, go_r) = (h.ready_w.as_raw_fd(), h.go_r.as_raw_fd());
            proc::handshake_before_exec(&mut cmd, ready_w, go_r);
        }

        let max_rss_floor_kib = proc::self_max_rss_kib();
        let energy = match &self.rapl {
            Some(r) if r.unavailable.is_none() => Some(r.start(&self.fs)),
            _ => None,
        };
        let before = self.opts.disturbance.and_then(|_| Sample::take(&self.fs));
        let (spawned, opened, t0) = std::thread::scope(|s| {
            let helper = handshake.as_ref().map(|h| {
                let (ready_r, go_w) = (h.ready_r.as_raw_fd(), h.go_w.as_raw_fd());
                let events = &self.events;
                s.spawn(move || attach(ready_r, go_w, events))
            });
            let t0 = Instant::now();
            let spawned = cmd.spawn();
            // Close our copies of the child's ends so the helper sees EOF
            // if the child never reached the handshake.
            let opened = match handshake {
                Some(h) => {
                    drop(h.ready_w);
                    drop(h.go_r);
                    let r = helper.map(|t| t.join());
                    drop(h.ready_r);
                    drop(h.go_w);
                    r
                }
                None => None,
            };
            (spawned, opened, t0)
        });
        let child = spawned.map_err(|e| spawn_error(program, e))?;
        let pid = child.id() as libc::pid_t;
        // We reap with wait4 ourselves; std's Child never waits (dropping it
        // only closes piped stdio).
        drop(child);
        let registration = GroupRegistration::new(pid);
        let observer = on_spawn(pid);

        let mut energy = energy;
        let (t_end, timed_out) = match self.wait(pid, t0, &mut energy, true) {
            Ok(r) => r,
            Err(e) => {
                let _ = proc::kill_group(pid, libc::SIGKILL);
                on_exit(observer);
                let _ = proc::wait4(pid);
                return Err(RunError::Wait(e));
            }
        };
        let after = before.as_ref().and_then(|_| Sample::take(&self.fs));
        on_exit(observer);
        // Final energy sample as close to the exit as we can.
        let energy = match (energy, &self.rapl) {
            (Some(e), Some(r)) => e.finish(&self.fs, r),
            (
                None,
                Some(Rapl {
                    unavailable: Some(reason),
                    ..
                }),
            ) => EnergyMetrics::unavailable(reason),
            _ => EnergyMetrics::unavailable("energy measurement off"),
        };
        if self.opts.kill_leftovers || timed_out {
            // The leader is a zombie until reaped, so its group id cannot
            // have been reused: this only reaches our run's processes.
            let _ = proc::kill_group(pid, libc::SIGKILL);
        }
        let reaped = proc::wait4(pid).map_err(RunError::Wait)?;
        drop(registration);

        let counters = self.read_counters(opened);
        let (code, signal) = proc::decode_status(reaped.status);
        let disturbance = match (before, after, self.opts.disturbance) {
            (Some(b), Some(a), Some(threshold)) => Some(disturbance::estimate(
                &b,
                &a,
                plan_cpus,
                (reaped.user + reaped.sys).as_secs_f64(),
                pinsight_sys::procfs::clock_ticks(),
                threshold,
            )),
            _ => None,
        };
        Ok(RunRecord {
            wall_s: (t_end - t0).as_secs_f64(),
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

    /// Waits for `pid` to exit without reaping it, enforcing the timeout and
    /// sampling energy on schedule. Returns (exit instant, timed out).
    fn wait(
        &self,
        pid: libc::pid_t,
        t0: Instant,
        energy: &mut Option<EnergySession>,
        use_pidfd: bool,
    ) -> io::Result<(Instant, bool)> {
        let pidfd = if use_pidfd {
            proc::pidfd_open(pid).ok()
        } else {
            None
        };
        let deadline = self.opts.timeout.map(|t| t0 + t);
        let interval = self.rapl.as_ref().map(|r| r.sample_interval());
        let mut next_sample = if energy.is_some() {
            interval.map(|i| Instant::now() + i)
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
                return Ok((Instant::now(), timed_out));
            }
        }
    }

    fn read_counters(
        &self,
        opened: Option<std::thread::Result<Option<OpenedCounters>>>,
    ) -> CounterMetrics {
        if !self.opts.counters {
            return CounterMetrics::unavailable("counters off");
        }
        let opened = match opened {
            None => {
                return CounterMetrics::unavailable("no perf counter can be opened on this machine")
            }
            Some(Err(_)) => return CounterMetrics::unavailable("counter attach thread panicked"),
            Some(Ok(None)) => {
                return CounterMetrics::unavailable("child exited before counters attached")
            }
            Some(Ok(Some(v))) => v,
        };
        let readings: Vec<(PlannedEvent, Result<perf::Reading, CounterError>)> = self
            .events
            .iter()
            .zip(opened)
            .map(|((p, spec), c)| {
                let r = match (spec, c) {
                    (Err(reason), _) => Err(reason.clone()),
                    (Ok(_), Some(Ok(c))) => c.read().map_err(|e| CounterError::Read {
                        label: p.label(self.hybrid),
                        source: e.into(),
                    }),
                    (Ok(_), Some(Err(e))) => Err(CounterError::Attach {
                        label: p.label(self.hybrid),
                        source: e.into(),
                    }),
                    (Ok(_), None) => Err(CounterError::NotOpened),
                };
                (p.clone(), r)
            })
            .collect();
        counters::derive(&readings, self.hybrid, self.hardware_unavailable.as_deref())
    }
}

/// Tries to open `p` on this process to learn whether (and how) it can be
/// opened: with the kernel counted, else user space only (paranoid >= 2).
fn probe(p: &PlannedEvent, paranoid: Option<i64>, hybrid: bool) -> Result<OpenSpec, CounterError> {
    let mut spec = OpenSpec {
        type_: p.attr_type,
        config: p.attr_config,
        exclude_kernel: false,
        inherit: true,
        enable_on_exec: true,
    };
    let first = match perf::open(&spec, 0) {
        Ok(_) => return Ok(spec),
        Err(e) => e,
    };
    if matches!(first.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
        spec.exclude_kernel = true;
        if perf::open(&spec, 0).is_ok() {
            return Ok(spec);
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

/// Per planned event: `None` if the probe ruled it out, else the result of
/// opening it on the child.
type OpenedCounters = Vec<Option<io::Result<Counter>>>;

/// The two pipes of the pre-exec handshake (all close-on-exec).
struct Handshake {
    ready_r: OwnedFd,
    ready_w: OwnedFd,
    go_r: OwnedFd,
    go_w: OwnedFd,
}

impl Handshake {
    fn new() -> io::Result<Handshake> {
        let (ready_r, ready_w) = proc::pipe()?;
        let (go_r, go_w) = proc::pipe()?;
        Ok(Handshake {
            ready_r,
            ready_w,
            go_r,
            go_w,
        })
    }
}

/// Child side, between fork and exec: announce our pid, wait for "go".
/// Helper-thread side: read the child's pid, open the counters on it, let
/// it exec. `None` if the child never reached the handshake.
fn attach(
    ready_r: libc::c_int,
    go_w: libc::c_int,
    events: &[(PlannedEvent, Result<OpenSpec, CounterError>)],
) -> Option<OpenedCounters> {
    let mut b = [0u8; std::mem::size_of::<libc::pid_t>()];
    match proc::read_exact_raw(ready_r, &mut b) {
        Ok(true) => {}
        _ => return None,
    }
    let pid = libc::pid_t::from_ne_bytes(b);
    let opened = events
        .iter()
        .map(|(_, spec)| spec.as_ref().ok().map(|s| perf::open(s, pid)))
        .collect();
    let _ = proc::write_all_raw(go_w, &[1]);
    Some(opened)
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
    #[allow(clippy::zombie_processes)] // reaped by proc::wait4 below
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
            let child = Command::new("sleep")
                .arg(secs)
                .process_group(0)
                .spawn()
                .unwrap();
            let pid = child.id() as libc::pid_t;
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
