//! One `pinsight sf` measurement from start to end: the process (attached
//! by pid, or a program started here), the sampling loop over its threads,
//! the probe's affinity windows, the signal lifecycle
//! (`pinsight_lifecycle::interrupt`: Ctrl-C ends the loop, affinities are
//! restored, the report is still made) and the final per-thread reports.
//!
//! The caller holds `pinsight_lifecycle::interrupt::main_handles_exit`
//! while it reports, then calls [`Measured::finish`] for the exit code
//! (it waits for a started program that outlived the measurement).

use super::{AffinityProbe, KindCpus, SfOptions, SfPmus, SfSampler, SfUnavailable, ThreadEntry};
use pinsight_lifecycle::exit::{self, SpawnError};
use pinsight_lifecycle::interrupt::{self, DescendantsWatch, InterruptError};
use pinsight_sys::procfs;
use pinsight_sys::progress::Progress;
use pinsight_sys::spawn::{Child, Spawn};
use pinsight_sys::FsRoot;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// Running processes (every thread of each).
    Pids(&'a [i32]),
    /// Start this program (argv) and measure it.
    Command(&'a [OsString]),
}

impl<'a> Target<'a> {
    /// The running processes `pids` when given, else the program `command`.
    pub fn new(pids: Option<&'a [i32]>, command: &'a [OsString]) -> Target<'a> {
        pids.map_or(Target::Command(command), Target::Pids)
    }

    /// The first of the processes given that does not exist under `fs`
    /// (none for a program).
    pub fn missing(&self, fs: &FsRoot) -> Option<i32> {
        match self {
            Target::Pids(pids) => pids
                .iter()
                .copied()
                .find(|&pid| !procfs::process_exists(fs, pid)),
            Target::Command(_) => None,
        }
    }
}

/// TEST ONLY, in no `--help`: `PINSIGHT_TEST_SF_STAND_IN=1` counts
/// software events in the hardware events' places (meaningless SFs), so
/// the measured path (probe windows, restore, Ctrl-C, reports) is tested
/// through the binary on machines without a PMU
/// ([`Request::software_stand_in`]).
pub const TEST_STAND_IN: &str = "PINSIGHT_TEST_SF_STAND_IN";

/// Whether [`TEST_STAND_IN`] asks for the software stand-in.
pub fn stand_in_requested() -> bool {
    std::env::var_os(TEST_STAND_IN).is_some_and(|v| v == "1")
}

/// One measurement's settings.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub target: Target<'a>,
    /// Alternate the threads between the big and the small CPUs.
    pub probe: bool,
    pub period: Duration,
    /// Stop after this long (else when the process ends, or on a signal).
    pub duration: Option<Duration>,
    pub options: SfOptions,
    /// Count software events in the hardware events' places (tests only:
    /// meaningless SFs, but the whole path runs without a PMU).
    pub software_stand_in: bool,
}

impl<'a> Request<'a> {
    /// Measuring `target` every `period` (alternating the kinds when
    /// `probe`), for `duration` if given, with the default options and the
    /// software stand-in when the environment asks for it
    /// ([`stand_in_requested`]).
    pub fn new(
        target: Target<'a>,
        probe: bool,
        period: Duration,
        duration: Option<Duration>,
    ) -> Request<'a> {
        Request {
            target,
            probe,
            period,
            duration,
            options: SfOptions::default(),
            software_stand_in: stand_in_requested(),
        }
    }
}

/// Why nothing was measured.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No per-kind counters here (the program was not started).
    #[error(transparent)]
    Unavailable(#[from] SfUnavailable),
    /// The signal lifecycle could not be installed.
    #[error(transparent)]
    Interrupt(#[from] InterruptError),
    /// The program cannot be started.
    #[error(transparent)]
    Program(#[from] SpawnError),
}

/// A finished measurement.
pub struct Measured {
    /// The processes measured: those given, or the started program.
    pub pids: Vec<i32>,
    /// `PID 12 (name)` or `cmd args (PID 12)`.
    pub target: String,
    pub periods: u64,
    pub elapsed_s: f64,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub pmus: SfPmus,
    /// Every thread seen, exited ones included.
    pub threads: Vec<ThreadEntry>,
    pub warnings: Vec<String>,
    child: Option<RunningChild>,
    /// Signals reach the started program's tree until the end.
    _tree: DescendantsWatch,
}

struct RunningChild {
    child: Child,
    status: Option<ExitStatus>,
}

/// The sampling loop's state.
struct Session {
    live: FsRoot,
    pids: Vec<i32>,
    sampler: SfSampler,
    probe: Option<AffinityProbe>,
    threads: BTreeMap<i32, ThreadEntry>,
    warnings: Vec<String>,
}

/// Opens the counters (before anything starts), installs the signal
/// lifecycle, starts or attaches to the process and measures it.
/// `progress` sees one task, "measuring TARGET", stepped each period: of
/// the periods `req.duration` holds, or of an unknown count (the label
/// then counts them) when the process's end ends it.
pub fn measure(
    root: &FsRoot,
    kinds: &[KindCpus],
    req: Request<'_>,
    progress: &mut dyn Progress,
) -> Result<Measured, SessionError> {
    let sampler = if req.software_stand_in {
        super::map_pmus(root, kinds).map(|p| SfSampler::software_stand_in(p, req.options))?
    } else {
        SfSampler::new(root, kinds, req.options)?
    };
    // Ctrl-C, SIGTERM, SIGHUP: end the loop, restore, report; the signal
    // reaches the program and everything it started.
    interrupt::install()?;
    let tree = interrupt::watch_descendants();
    let live = FsRoot::live();
    let (pids, target, mut child) = start(&live, req.target)?;
    let mut s = Session {
        probe: req.probe.then(|| AffinityProbe::new(sampler.pmus())),
        live,
        pids,
        sampler,
        threads: BTreeMap::new(),
        warnings: Vec::new(),
    };
    let start = Instant::now();
    let periods = req.duration.map_or(0, |d| {
        (d.as_secs_f64() / req.period.as_secs_f64()).ceil() as u64
    });
    let what = format!("measuring {target}");
    progress.begin(&what, periods, 0);
    // No duration: the end is the program's; the label counts periods.
    let label = |done: u64| {
        if periods == 0 {
            format!("{what}: {done} periods")
        } else {
            String::new()
        }
    };
    let (periods, signal) = s.sample_loop(&req, start, child.as_mut(), &mut |done| {
        if periods != 0 && done > periods {
            // The clock's rounding gave one more period.
            progress.resize(done);
        }
        progress.step(&label(done), done)
    });
    progress.end();
    let elapsed_s = start.elapsed().as_secs_f64();
    let mut measured = s.finish(target, periods, elapsed_s, signal, tree);
    measured.child = child;
    Ok(measured)
}

/// Attaches to the processes, or starts the program: their ids and a
/// label (`PID 12 (name)`, `PIDs 12 (a), 14 (b)`, `cmd args (PID 12)`).
fn start(
    live: &FsRoot,
    target: Target<'_>,
) -> Result<(Vec<i32>, String, Option<RunningChild>), SpawnError> {
    match target {
        Target::Pids(given) => {
            // A process named twice is measured once.
            let mut pids: Vec<i32> = Vec::with_capacity(given.len());
            for &p in given {
                if !pids.contains(&p) {
                    pids.push(p);
                }
            }
            let named: Vec<String> = pids
                .iter()
                .map(|&pid| {
                    let name =
                        procfs::task_stat(live, pid, pid).map_or_else(String::new, |s| s.comm);
                    format!("{pid} ({name})")
                })
                .collect();
            let label = match named.as_slice() {
                [one] => format!("PID {one}"),
                _ => shorten(&format!("PIDs {}", named.join(", ")), 60),
            };
            Ok((pids, label, None))
        }
        Target::Command(argv) => {
            let Some((program, args)) = argv.split_first() else {
                return Err(SpawnError::NotFound {
                    program: String::new(),
                    searched_path: true,
                });
            };
            let child = Spawn::new(program)
                .args(args)
                .start()
                .map_err(|e| SpawnError::from_io(program.to_string_lossy(), &e.error))?;
            let pid = child.id();
            let words: Vec<String> = argv
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect();
            let label = format!("{} (PID {pid})", shorten(&words.join(" "), 30));
            let running = RunningChild {
                child,
                status: None,
            };
            Ok((vec![pid], label, Some(running)))
        }
    }
}

impl Session {
    /// Samples every period until the duration, the process's end or a
    /// signal; returns the periods sampled and the signal.
    fn sample_loop(
        &mut self,
        req: &Request<'_>,
        start: Instant,
        mut child: Option<&mut RunningChild>,
        period_done: &mut dyn FnMut(u64),
    ) -> (u64, Option<i32>) {
        let mut periods = 0u64;
        loop {
            self.refresh();
            self.probe_next();
            let wait = match req.duration {
                Some(d) => req.period.min(d.saturating_sub(start.elapsed())),
                None => req.period,
            };
            let signal = interrupt::wait(wait);
            self.sample();
            periods += 1;
            period_done(periods);
            if signal.is_some() {
                return (periods, signal);
            }
            if req.duration.is_some_and(|d| start.elapsed() >= d) || self.gone(child.as_deref_mut())
            {
                return (periods, None);
            }
        }
    }

    /// Attaches new threads of every process, marks exited ones (their
    /// counts are kept).
    fn refresh(&mut self) {
        let now: Vec<(i32, i32)> = self
            .pids
            .iter()
            .flat_map(|&pid| {
                procfs::tids(&self.live, pid)
                    .into_iter()
                    .map(move |t| (pid, t))
            })
            .collect();
        for &(pid, tid) in &now {
            let name = procfs::task_stat(&self.live, pid, tid).map(|s| s.comm);
            let t = self.threads.entry(tid).or_insert_with(|| ThreadEntry {
                pid,
                tid,
                name: String::new(),
                exited: false,
                error: None,
                report: None,
            });
            if let Some(n) = name {
                t.name = n;
            }
            if t.error.is_none() && !self.sampler.is_attached(tid) && !t.exited {
                if let Err(e) = self.sampler.attach(tid) {
                    t.error = Some(e.to_string());
                }
            }
        }
        for t in self.threads.values_mut() {
            if !t.exited && !now.iter().any(|&(_, tid)| tid == t.tid) {
                t.exited = true;
                if let Some(p) = self.probe.as_mut() {
                    p.forget(t.tid);
                }
            }
        }
    }

    /// Pins the live threads to the probe's next kind.
    fn probe_next(&mut self) {
        let Some(p) = self.probe.as_mut() else {
            return;
        };
        let tids: Vec<i32> = self
            .threads
            .values()
            .filter(|t| !t.exited && t.error.is_none())
            .map(|t| t.tid)
            .collect();
        let (_, errors) = p.pin_next(&tids);
        for e in errors {
            let w = format!("probe: {e}");
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    /// Reads every attached thread's counters; a failing thread is
    /// detached with its error.
    fn sample(&mut self) {
        for tid in self.sampler.tids() {
            if self.threads.get(&tid).is_some_and(|t| t.exited) {
                continue;
            }
            if let Err(e) = self.sampler.sample(tid) {
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.error = Some(e.to_string());
                }
                self.sampler.detach(tid);
            }
        }
    }

    /// Whether the process ended, or every process given did (a started
    /// program's status is kept).
    fn gone(&self, child: Option<&mut RunningChild>) -> bool {
        match child {
            Some(c) => match c.child.try_wait() {
                Ok(Some(s)) => {
                    c.status = Some(s);
                    true
                }
                Ok(None) => false,
                Err(_) => true,
            },
            None => self.pids.iter().all(|&pid| {
                !procfs::process_exists(&self.live, pid)
                    || procfs::task_stat(&self.live, pid, pid).is_some_and(|s| s.state == 'Z')
            }),
        }
    }

    /// Restores the probe's affinities and makes the final reports.
    fn finish(
        mut self,
        target: String,
        periods: u64,
        elapsed_s: f64,
        signal: Option<i32>,
        tree: DescendantsWatch,
    ) -> Measured {
        if let Some(mut p) = self.probe.take() {
            for e in p.restore() {
                self.warnings.push(format!("probe: restoring: {e}"));
            }
        }
        let sampler = &self.sampler;
        let threads: Vec<ThreadEntry> = std::mem::take(&mut self.threads)
            .into_values()
            .map(|mut t| {
                if t.error.is_none() {
                    t.report = sampler.report(t.tid);
                }
                t
            })
            .collect();
        Measured {
            pids: self.pids,
            target,
            periods,
            elapsed_s,
            signal,
            pmus: self.sampler.pmus().clone(),
            threads,
            warnings: self.warnings,
            child: None,
            _tree: tree,
        }
    }
}

impl Measured {
    /// Whether a started program is still running after the measurement
    /// (it ended by --duration, not by the program's end or a signal).
    pub fn program_running(&self) -> bool {
        self.signal.is_none() && self.child.as_ref().is_some_and(|c| c.status.is_none())
    }

    /// The exit code: 128 + N after signal N; else the started program's
    /// status (waited for if it still runs: a signal meanwhile reaches it
    /// through the lifecycle); 1 when not one thread could be counted.
    pub fn finish(&mut self) -> i32 {
        let status = self.child.as_mut().and_then(|c| match c.status {
            Some(s) => Some(s),
            None => wait_child(&mut c.child),
        });
        if let Some(sig) = self.signal {
            return exit::signal_code(sig);
        }
        let code = status.map_or(0, |s| exit::status_code(&s));
        let counted = self.threads.iter().any(|t| t.report.is_some());
        if code == 0 && !self.threads.is_empty() && !counted {
            // Not one thread could be counted: the measurement failed.
            return 1;
        }
        code
    }
}

/// `pinsight sf`'s JSON document: the measurement's settings, what it
/// measured (or why nothing could be) and every thread's speedup factor.
#[derive(Debug, serde::Serialize)]
pub struct SfDocument<'a> {
    pub available: bool,
    /// Why nothing could be measured (when `available` is false).
    pub reason: Option<String>,
    /// The processes measured (given, or the one started; empty when
    /// nothing could be measured before a program was started).
    pub pids: Vec<i32>,
    /// The program started, with its arguments.
    pub command: Option<Vec<String>>,
    pub probe: bool,
    pub period_s: f64,
    pub periods: u64,
    pub elapsed_s: f64,
    /// A signal ended the measurement.
    pub interrupted: bool,
    /// Samples on each kind a thread needs for its SF.
    pub min_samples: u32,
    pub pmus: Option<&'a SfPmus>,
    pub threads: &'a [ThreadEntry],
    pub warnings: &'a [String],
}

impl Request<'_> {
    /// The program's words when one is started.
    fn command_words(&self) -> Option<Vec<String>> {
        match self.target {
            Target::Command(c) if !c.is_empty() => {
                Some(c.iter().map(|w| w.to_string_lossy().into_owned()).collect())
            }
            _ => None,
        }
    }

    /// The document of a measurement that could not be made, and why.
    pub fn unavailable(&self, reason: &SfUnavailable) -> SfDocument<'static> {
        SfDocument {
            available: false,
            reason: Some(reason.to_string()),
            pids: match self.target {
                Target::Pids(p) => p.to_vec(),
                Target::Command(_) => Vec::new(),
            },
            command: self.command_words(),
            probe: self.probe,
            period_s: self.period.as_secs_f64(),
            periods: 0,
            elapsed_s: 0.0,
            interrupted: false,
            min_samples: self.options.params.min_samples,
            pmus: None,
            threads: &[],
            warnings: &[],
        }
    }
}

impl Measured {
    /// This measurement's document (`req`: the request it was made with).
    pub fn document<'a>(&'a self, req: &Request<'_>) -> SfDocument<'a> {
        SfDocument {
            available: true,
            reason: None,
            pids: self.pids.clone(),
            command: req.command_words(),
            probe: req.probe,
            period_s: req.period.as_secs_f64(),
            periods: self.periods,
            elapsed_s: self.elapsed_s,
            interrupted: self.signal.is_some(),
            min_samples: req.options.params.min_samples,
            pmus: Some(&self.pmus),
            threads: &self.threads,
            warnings: &self.warnings,
        }
    }
}

/// Waits for the program; a signal to pinsight meanwhile reaches it
/// through the lifecycle.
fn wait_child(c: &mut Child) -> Option<ExitStatus> {
    loop {
        match c.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) => {}
            Err(_) => return None,
        }
        interrupt::wait(Duration::from_millis(100));
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(max - 3).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_the_first_process_not_running() {
        let me = std::process::id() as i32;
        let live = FsRoot::live();
        let pids = [me, i32::MAX, me];
        assert_eq!(Target::new(Some(&pids), &[]).missing(&live), Some(i32::MAX));
        assert_eq!(Target::new(Some(&[me]), &[]).missing(&live), None);
        let cmd = [OsString::from("true")];
        assert!(matches!(Target::new(None, &cmd), Target::Command(_)));
        assert_eq!(Target::new(None, &cmd).missing(&live), None);
        let period = Duration::from_millis(100);
        let req = Request::new(Target::new(None, &cmd), true, period, None);
        assert!(req.probe && req.period == period && req.duration.is_none());
        assert_eq!(req.software_stand_in, stand_in_requested());
    }
}
