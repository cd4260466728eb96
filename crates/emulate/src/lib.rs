//! Emulated core kinds on any machine: the CPUs of the slower declared
//! kinds (`--kinds 0:P,1:E@0.5`) run the given fraction of their speed
//! while an [`Emulation`] lives, so the dynamic half of pinsight (speed
//! factors, `tune`, `compare` between P and E arms, `balance`, the
//! asymmetry-aware schedulers) can be tried on a homogeneous machine.
//!
//! Researchers have long emulated asymmetric multicores this way: by
//! per-core frequency scaling (Annavaram, Grochowski and Shen, "Mitigating
//! Amdahl's law through EPI throttling", ISCA 2005; Saez et al., "A
//! comprehensive scheduler for asymmetric multicore systems", EuroSys
//! 2010, §5) or by duty-cycle modulation of some cores.
//!
//! Two mechanisms, best first, chosen by [`start`]:
//!
//! 1. [`cpufreq`]: a `scaling_max_freq` cap per cpufreq policy. A capped
//!    core is slower in clock only: memory-bound code slows less than
//!    compute-bound code, as on real hybrids.
//! 2. [`duty`]: a real-time stealer per slowed CPU taking the
//!    complementary share of each short period. The core is slower by
//!    time share only: memory- and compute-bound programs slow alike, and
//!    per-program speed factors do not vary.
//!
//! Either way the knob is calibrated by measurement ([`probe`]: a
//! CPU-bound loop on the reference CPU and every slowed CPU at once)
//! until the achieved speed ratio is within the tolerance of the asked
//! one, and the result is reported with its spread. Everything is put
//! back on every exit path: drop, the signal lifecycle's restorers, and,
//! for `kill -9`, the stealers' own parent check and the caps' watchdog
//! process (see [`pinsight_sys::stealer`]).

#![forbid(unsafe_code)]

pub mod contention;
pub mod cpufreq;
pub mod duty;
pub mod probe;
pub mod session;
pub mod shown;
pub mod target;
pub mod view;

pub use shown::Talk;
pub use target::{KindTarget, TargetError, Targets};

use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::time::Duration;

/// The environment variable that marks a process tree as emulated (its
/// value: the mechanism); a nested `pinsight emulate` is refused.
pub const EMULATING_ENV: &str = "PINSIGHT_EMULATING";

/// The environment variable that hands the declared kinds to the programs
/// run under an emulation (`0:P,1:E@0.5`): nested pinsight commands see
/// the emulated machine.
pub const KINDS_ENV: &str = "PINSIGHT_KINDS";

/// The name of the machine-wide lock file of emulations (see
/// [`pinsight_sys::machine_lock`]).
pub const LOCK_NAME: &str = "pinsight-emulate.lock";

/// Refuses to start inside another emulation ([`EMULATING_ENV`] set in
/// this process's environment): a nested one would fight the running one.
pub fn check_not_nested() -> Result<(), EmulateError> {
    match std::env::var_os(EMULATING_ENV) {
        Some(m) => Err(EmulateError::Nested {
            mechanism: m.to_string_lossy().into_owned(),
        }),
        None => Ok(()),
    }
}

/// Takes the machine-wide lock of emulations: one at a time owns the
/// machine, a second is refused naming the first's PID
/// ([`EmulateError::Held`]).
pub fn own_machine() -> Result<pinsight_sys::machine_lock::MachineLock, EmulateError> {
    use pinsight_sys::machine_lock::{LockError, MachineLock};
    MachineLock::acquire(LOCK_NAME).map_err(|e| match e {
        LockError::Held { path, pid } => EmulateError::Held { path, pid },
        e => EmulateError::Lock(e.to_string()),
    })
}

/// The environment variable that names a duty-cycle emulation's stealers
/// to the programs run under it (`CPU:PID,...`, see [`stealers_value`]):
/// `pinsight load` and `pinsight balance` leave their run time out of the
/// CPU's busy time, so a slowed CPU shows less capacity, not more load.
pub const STEALERS_ENV: &str = "PINSIGHT_EMULATION_STEALERS";

/// The value of [`STEALERS_ENV`]: each stealer as `CPU:PID`, comma
/// separated (`1:4425,3:4426`); empty with cpufreq caps.
pub fn stealers_value(pids: &[(usize, i32)]) -> String {
    pids.iter()
        .map(|(cpu, pid)| format!("{cpu}:{pid}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One entry of [`STEALERS_ENV`]'s value, `CPU:PID` (spaces around
/// either allowed), the inverse of [`stealers_value`]'s entries; `None`
/// when it is not that, or the PID is outside Linux's 1 to
/// 4194304 (`PID_MAX_LIMIT`). Pure.
pub fn parse_stealer(entry: &str) -> Option<(usize, i32)> {
    let (cpu, pid) = entry.trim().split_once(':')?;
    let cpu = cpu.trim().parse::<usize>().ok()?;
    let pid = pid
        .trim()
        .parse::<i32>()
        .ok()
        .filter(|p| (1..=1 << 22).contains(p))?;
    Some((cpu, pid))
}

/// The stealers this process runs among, `(cpu, pid)`: [`STEALERS_ENV`]
/// as `pinsight emulate` exports it to its command, its entries that are
/// not `CPU:PID` ignored; empty outside a duty-cycle emulation. A
/// measurement leaves their run time out of its disturbance: they are the
/// machine being measured, not other work on it.
pub fn stealers_from_env() -> Vec<(usize, i32)> {
    parse_stealers(&std::env::var(STEALERS_ENV).unwrap_or_default())
}

/// Every `CPU:PID` entry of a [`STEALERS_ENV`] value ([`parse_stealer`]),
/// the others ignored. Pure.
pub fn parse_stealers(value: &str) -> Vec<(usize, i32)> {
    value.split(',').filter_map(parse_stealer).collect()
}

/// An entry of a stealers list that is not `CPU:PID` ([`parse_stealer`]),
/// or names a CPU at or above the bound given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{}' is not CPU:PID (a CPU id and a process id from 1 to 4194304, e.g. 1:4425)",
    pinsight_sys::text::shown(.0)
)]
pub struct BadStealer(pub String);

/// Every `CPU:PID` entry of a stealers list (commas between, empty
/// entries skipped), each CPU below `cpu_limit`; the first other entry
/// is refused. Pure.
pub fn parse_stealers_strict(
    value: &str,
    cpu_limit: usize,
) -> Result<Vec<(usize, i32)>, BadStealer> {
    value
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(|w| {
            parse_stealer(w)
                .filter(|&(cpu, _)| cpu < cpu_limit)
                .ok_or_else(|| BadStealer(w.to_owned()))
        })
        .collect()
}

/// How the CPUs are slowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// Per-policy `scaling_max_freq` caps.
    Cpufreq,
    /// Real-time duty-cycle stealers.
    DutyCycle,
}

impl Mechanism {
    /// Its name in output (`cpufreq`, `duty-cycle`).
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Cpufreq => "cpufreq",
            Mechanism::DutyCycle => "duty-cycle",
        }
    }

    /// What this mechanism does not emulate: said in the output and docs.
    pub fn limits(self) -> &'static [&'static str] {
        match self {
            Mechanism::Cpufreq => &[
                "A capped core is slower in clock only, not in microarchitecture: \
                 memory-bound programs slow less than compute-bound ones (closer to \
                 real hybrids, but the ratio printed is a CPU-bound loop's).",
            ],
            Mechanism::DutyCycle => &[
                "A duty-cycled core is slower by time share, not by microarchitecture: \
                 memory- and compute-bound programs slow alike, so per-program speed \
                 factors do not vary.",
                "The slowed CPU runs at full speed in short bursts (one period each): \
                 latency-sensitive work sees pauses a real slow core would not.",
            ],
        }
    }
}

/// Which mechanism to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Choice {
    /// cpufreq caps where possible, else duty-cycle.
    #[default]
    Auto,
    /// Only caps (an error where impossible).
    Cpufreq,
    /// Only duty-cycle.
    DutyCycle,
}

/// Calibration settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Which mechanism.
    pub choice: Choice,
    /// Accepted relative error of the achieved speed (0.05: within 5%).
    pub tolerance: f64,
    /// One measurement window.
    pub window: Duration,
    /// Windows measured, without changes, to confirm the result and give
    /// its spread.
    pub confirm: usize,
    /// Tuning windows at most before giving the best achieved.
    pub max_rounds: usize,
    /// The stealers' periods to try, in order.
    pub periods: Vec<Duration>,
    /// Calibrate even when other real-time tasks or steal take more than
    /// [`contention::THRESHOLD`] of a measured CPU.
    pub force: bool,
    /// How long the measured CPUs are watched for other work before
    /// calibrating (zero: not watched).
    pub contention_window: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            choice: Choice::Auto,
            tolerance: 0.05,
            window: Duration::from_millis(200),
            confirm: 5,
            max_rounds: 14,
            periods: vec![Duration::from_millis(2), Duration::from_millis(5)],
            force: false,
            contention_window: contention::WINDOW,
        }
    }
}

/// Why the emulation could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    /// Caps were asked for and are impossible.
    #[error("cpufreq caps: {0}")]
    Cpufreq(#[from] cpufreq::CapError),
    /// Stealers are impossible.
    #[error("{0}")]
    Duty(#[from] duty::DutyError),
    /// The probe could not run on a CPU.
    #[error("cannot measure CPU {cpu}: the probe could not run pinned there")]
    Probe { cpu: usize },
    /// A signal stopped the calibration.
    #[error("stopped by signal {0}")]
    Interrupted(i32),
    /// Other work takes the CPUs to measure: the calibration would tune
    /// the knob to it.
    #[error("the CPUs to measure are not free: {}", reasons.join("; "))]
    Contended {
        /// One line per task or CPU over the threshold.
        reasons: Vec<String>,
    },
    /// This process runs under an emulation already ([`EMULATING_ENV`]
    /// holds its mechanism).
    #[error(
        "already inside `pinsight emulate` ({EMULATING_ENV}={mechanism}): a nested emulation \
         would fight the running one; run pinsight commands directly under it"
    )]
    Nested { mechanism: String },
    /// Another emulation holds the machine-wide lock.
    #[error(
        "another emulation runs (PID {}; lock {}): it owns the CPUs it slows, and calibrating \
         beside it would measure its stealers or caps; wait for it to end",
        pid.map_or("unknown".to_string(), |p| p.to_string()),
        path.display()
    )]
    Held {
        path: std::path::PathBuf,
        pid: Option<i32>,
    },
    /// The machine-wide lock cannot be taken.
    #[error("machine-wide lock: {0}")]
    Lock(String),
}

/// Median, extremes and standard deviation of the achieved speeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub stdev: f64,
    /// Measurement windows behind these figures.
    pub samples: usize,
}

impl Spread {
    /// Of `xs` (at least one).
    pub fn of(xs: &[f64]) -> Spread {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len().max(1);
        let median = if v.is_empty() {
            f64::NAN
        } else if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n.max(2) - 1) as f64;
        Spread {
            median,
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
            stdev: var.sqrt(),
            samples: xs.len(),
        }
    }
}

/// One slowed CPU's setting after calibration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuSetting {
    pub cpu: usize,
    /// The knob: the share of time left to ordinary tasks (duty-cycle),
    /// or the fraction of the max frequency (cpufreq).
    pub knob: f64,
    /// The cap written, kHz (cpufreq).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_khz: Option<u64>,
    /// The stealer's own CPU time over the confirming windows, as a share
    /// of wall time (duty-cycle); compare with `1 - knob`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stealer_cpu_share: Option<f64>,
    /// The stealer's process id (duty-cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stealer_pid: Option<i32>,
}

/// One emulated kind's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindResult {
    pub name: String,
    pub mark: String,
    pub cpus: String,
    /// The speed asked, relative to the reference CPU.
    pub asked: f64,
    /// The speed achieved over the confirming windows.
    pub achieved: Spread,
    /// Whether the median is within the tolerance of the asked speed.
    pub within_tolerance: bool,
    pub settings: Vec<CpuSetting>,
}

/// What the emulation is and how well it matches the declaration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub mechanism: Mechanism,
    /// Why cpufreq caps were not used (duty-cycle chosen automatically).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not_cpufreq: Option<String>,
    /// The full-speed CPU speeds are measured against.
    pub reference_cpu: usize,
    /// The stealers' period, µs (duty-cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_us: Option<u64>,
    /// The real-time share a stealer may take (duty-cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rt_budget: Option<f64>,
    /// The stealers run in the root cgroup: real-time group scheduling
    /// gave pinsight's cgroup no real-time budget (duty-cycle).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stealers_in_root_cgroup: bool,
    pub tolerance: f64,
    /// What else ran on the measured CPUs just before calibrating.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention: Option<contention::Contention>,
    /// Measurement windows used by the calibration, confirmation included.
    pub windows: usize,
    pub kinds: Vec<KindResult>,
    /// What the mechanism does not emulate.
    pub limits: Vec<String>,
}

/// The knob being turned.
#[derive(Debug)]
enum Knob {
    Caps(cpufreq::Caps, FsRoot),
    Duty(duty::Stealers),
}

impl Knob {
    fn set(&self, cpu: usize, fraction: f64) -> Result<Option<u64>, EmulateError> {
        match self {
            Knob::Caps(caps, fs) => Ok(Some(caps.set(fs, cpu, fraction)?)),
            Knob::Duty(s) => {
                s.set(cpu, 1.0 - fraction);
                Ok(None)
            }
        }
    }
}

/// A running emulation: the CPUs stay slowed until it is dropped (or
/// [`Emulation::stop`]ped).
#[derive(Debug)]
pub struct Emulation {
    knob: Knob,
    report: Report,
    targets: Targets,
    window: Duration,
}

/// The speeds measured again once the emulated program ended: whether the
/// emulation held while it ran (another emulation or real-time task that
/// came or went moves them).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EndCheck {
    pub tolerance: f64,
    /// Measurement windows behind each speed.
    pub windows: usize,
    pub kinds: Vec<KindEnd>,
}

/// One emulated kind's speed at the end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindEnd {
    pub name: String,
    pub mark: String,
    pub cpus: String,
    pub asked: f64,
    /// The speed measured now (reference CPU = 1).
    pub achieved: Spread,
    /// `achieved.median / asked - 1`: the relative drift from the asked speed.
    pub drift: f64,
    pub within_tolerance: bool,
}

/// The end check as one JSON document, `{"end_check": {...}}` (what
/// `emulate --json` prints on stderr after the report).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EndCheckDocument<'a> {
    pub end_check: &'a EndCheck,
}

impl EndCheck {
    /// This check as its own JSON document.
    pub fn document(&self) -> EndCheckDocument<'_> {
        EndCheckDocument { end_check: self }
    }

    /// One line per kind whose speed left the tolerance, in words.
    pub fn drifted(&self) -> Vec<String> {
        self.kinds
            .iter()
            .filter(|k| !k.within_tolerance)
            .map(|k| {
                format!(
                    "{} (CPUs {}) ran at {:.3} of the reference speed at the end, not {} \
                     ({:+.0}%, beyond {:.0}%)",
                    k.name,
                    k.cpus,
                    k.achieved.median,
                    k.asked,
                    k.drift * 100.0,
                    self.tolerance * 100.0
                )
            })
            .collect()
    }
}

/// How a program run under the emulation ended
/// ([`Emulation::run_program`]).
#[derive(Debug)]
pub struct ProgramEnd {
    /// The program's exit status (128 + N when killed by signal N), or
    /// why it could not start.
    pub code: Result<i32, pinsight_lifecycle::exit::SpawnError>,
    /// The speeds measured again after it ended (not after a signal).
    pub end_check: Option<EndCheck>,
    /// One line per value that could not be put back.
    pub failures: Vec<String>,
}

/// How an emulation held until a signal ended ([`Emulation::hold`]).
pub struct HoldEnd {
    /// 128 + the signal's number.
    pub code: i32,
    /// Keeps the process alive until dropped (say goodbye first).
    pub main: pinsight_lifecycle::interrupt::MainExit,
    /// One line per value that could not be put back.
    pub failures: Vec<String>,
}

impl Report {
    /// Why the calibration ran on CPUs other work took (`force`d past
    /// the contention threshold); empty otherwise.
    pub fn forced_past(&self) -> Vec<String> {
        match &self.contention {
            Some(c) if c.forced => c.over_threshold(),
            _ => Vec::new(),
        }
    }
}

impl Emulation {
    /// What was achieved.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Runs `program args` on the emulated machine, its environment
    /// holding `kinds` ([`KINDS_ENV`]), the mechanism ([`EMULATING_ENV`])
    /// and the stealers ([`STEALERS_ENV`]); when it ended without a signal
    /// the speeds are measured again over `windows` windows
    /// ([`Emulation::end_check`]); then the emulation stops.
    pub fn run_program(
        self,
        program: &std::ffi::OsString,
        args: &[std::ffi::OsString],
        kinds: &str,
        windows: usize,
    ) -> ProgramEnd {
        let env = [
            (KINDS_ENV, kinds.to_string()),
            (EMULATING_ENV, self.report.mechanism.name().to_string()),
            (STEALERS_ENV, stealers_value(&self.stealer_pids())),
        ];
        let code = session::run_program(program, args, &env);
        let end_check = if code.is_ok() && pinsight_lifecycle::interrupt::stopped().is_none() {
            self.end_check(windows)
        } else {
            None
        };
        ProgramEnd {
            code,
            end_check,
            failures: self.stop(),
        }
    }

    /// Keeps the emulation until SIGINT, SIGTERM or SIGHUP, then stops it.
    pub fn hold(self) -> HoldEnd {
        let (code, main) = session::hold();
        HoldEnd {
            code,
            main,
            failures: self.stop(),
        }
    }

    /// Measures the achieved speeds again, over `windows` windows of the
    /// calibration's length, with the knobs as calibrated. `None` when a
    /// signal stopped the emulation (its knobs are put back) or a CPU
    /// cannot be measured.
    pub fn end_check(&self, windows: usize) -> Option<EndCheck> {
        let cpus: Vec<(usize, f64)> = self.targets.cpus();
        let tuning: Vec<Tuning> = cpus
            .iter()
            .map(|&(cpu, asked)| Tuning {
                cpu,
                asked,
                knob: asked,
                khz: None,
            })
            .collect();
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); tuning.len()];
        for _ in 0..windows.max(1) {
            let a = window(self.targets.reference, &tuning, self.window).ok()?;
            for (s, x) in samples.iter_mut().zip(a) {
                s.push(x);
            }
        }
        let tolerance = self.report.tolerance;
        let kinds = self
            .targets
            .slowed
            .iter()
            .map(|k| {
                let mine: Vec<usize> = (0..tuning.len())
                    .filter(|&i| k.cpus.contains(tuning[i].cpu))
                    .collect();
                let n = samples.first().map_or(0, Vec::len);
                let per_window: Vec<f64> = (0..n)
                    .map(|w| {
                        mine.iter().map(|&i| samples[i][w]).sum::<f64>() / mine.len().max(1) as f64
                    })
                    .collect();
                let achieved = Spread::of(&per_window);
                let drift = achieved.median / k.asked - 1.0;
                KindEnd {
                    name: k.name.clone(),
                    mark: k.mark.clone(),
                    cpus: k.cpus.to_string(),
                    asked: k.asked,
                    within_tolerance: drift.abs() <= tolerance,
                    drift,
                    achieved,
                }
            })
            .collect();
        Some(EndCheck {
            tolerance,
            windows: windows.max(1),
            kinds,
        })
    }

    /// The stealer processes, `(cpu, pid)` (empty with caps).
    pub fn stealer_pids(&self) -> Vec<(usize, i32)> {
        match &self.knob {
            Knob::Duty(s) => s.pids(),
            Knob::Caps(..) => Vec::new(),
        }
    }

    /// Ends the emulation now, putting everything back; one line per
    /// value that could not be restored.
    pub fn stop(self) -> Vec<String> {
        let failures = match &self.knob {
            Knob::Caps(..) => cpufreq::restore_all(),
            Knob::Duty(_) => duty::stop_all(),
        };
        drop(self);
        failures
    }
}

/// Starts the emulation of `targets` on this machine (`fs` live), calibrates
/// it and returns it running. Call from the thread that lives as long as
/// the emulation (stealers die with the thread that forked them).
pub fn start(
    fs: &FsRoot,
    targets: &Targets,
    opts: &Options,
    progress: &mut dyn Progress,
) -> Result<Emulation, EmulateError> {
    // Restorers run on SIGINT/SIGTERM/SIGHUP once the lifecycle is in.
    let _ = pinsight_lifecycle::interrupt::install();
    let cpus = targets.cpus();
    let contention = (!opts.contention_window.is_zero()).then(|| {
        let mut measured: pinsight_cpuset::CpuSet = cpus.iter().map(|&(c, _)| c).collect();
        measured.insert(targets.reference);
        let mut c = contention::measure(fs, &measured, opts.contention_window);
        let reasons = c.over_threshold();
        c.forced = !reasons.is_empty() && opts.force;
        (c, reasons)
    });
    if let Some(sig) = pinsight_lifecycle::interrupt::stopped() {
        return Err(EmulateError::Interrupted(sig));
    }
    let contention = match contention {
        Some((_, reasons)) if !reasons.is_empty() && !opts.force => {
            return Err(EmulateError::Contended { reasons })
        }
        Some((c, _)) => Some(c),
        None => None,
    };
    let mut why_not = None;
    if opts.choice != Choice::DutyCycle {
        let caps = cpufreq::policies(fs, &cpus).and_then(|p| cpufreq::Caps::apply(fs, &p));
        match caps {
            Ok(caps) => {
                let knob = Knob::Caps(caps, fs.clone());
                return calibrate(knob, fs, targets, opts, None, None, progress)
                    .map(|e| e.with_contention(contention));
            }
            Err(e) if opts.choice == Choice::Cpufreq => return Err(e.into()),
            Err(e) => why_not = Some(e.to_string()),
        }
    }
    let budget = duty::rt_budget(fs);
    for &(cpu, speed) in &cpus {
        if 1.0 - speed > budget + 1e-9 {
            return Err(duty::DutyError::OverBudget { cpu, speed, budget }.into());
        }
    }
    let shares: Vec<(usize, f64)> = cpus.iter().map(|&(c, s)| (c, 1.0 - s)).collect();
    let period = opts
        .periods
        .first()
        .copied()
        .unwrap_or(Duration::from_millis(2));
    let stealers = duty::Stealers::start(&shares, period)?;
    calibrate(
        Knob::Duty(stealers),
        fs,
        targets,
        opts,
        why_not,
        Some(budget),
        progress,
    )
    .map(|e| e.with_contention(contention))
}

impl Emulation {
    fn with_contention(mut self, c: Option<contention::Contention>) -> Emulation {
        self.report.contention = c;
        self
    }
}

/// Per slowed CPU: the knob now and the speeds it achieved.
struct Tuning {
    cpu: usize,
    asked: f64,
    knob: f64,
    khz: Option<u64>,
}

/// One window: the achieved speed of every slowed CPU (reference = 1).
fn window(reference: usize, tuning: &[Tuning], d: Duration) -> Result<Vec<f64>, EmulateError> {
    if let Some(sig) = pinsight_lifecycle::interrupt::stopped() {
        return Err(EmulateError::Interrupted(sig));
    }
    let mut cpus = vec![reference];
    cpus.extend(tuning.iter().map(|t| t.cpu));
    let rates = probe::rates(&cpus, d);
    let base = rates[0].ok_or(EmulateError::Probe { cpu: reference })?;
    tuning
        .iter()
        .zip(&rates[1..])
        .map(|(t, r)| {
            r.map(|r| r / base)
                .ok_or(EmulateError::Probe { cpu: t.cpu })
        })
        .collect()
}

fn calibrate(
    mut knob: Knob,
    fs: &FsRoot,
    targets: &Targets,
    opts: &Options,
    why_not: Option<String>,
    budget: Option<f64>,
    progress: &mut dyn Progress,
) -> Result<Emulation, EmulateError> {
    let lowest = budget.map_or(0.01, |b| 1.0 - b);
    let mut tuning: Vec<Tuning> = targets
        .cpus()
        .into_iter()
        .map(|(cpu, asked)| Tuning {
            cpu,
            asked,
            knob: asked,
            khz: None,
        })
        .collect();
    for t in &mut tuning {
        t.khz = knob.set(t.cpu, t.knob)?;
    }
    let what = format!(
        "calibrating {} (window {:?})",
        mechanism_of(&knob).name(),
        opts.window
    );
    // Planned: every tuning round, then one confirmation.
    let planned = (opts.max_rounds + opts.confirm.max(1)) as u64;
    progress.begin(&what, planned, 0);
    let mut counter = WindowCounter {
        what: &what,
        planned,
        windows: 0,
        progress,
    };
    let tuned = tune_and_confirm(
        &mut knob,
        fs,
        targets,
        opts,
        &mut tuning,
        lowest,
        &mut counter,
    );
    let windows = counter.windows;
    counter.progress.end();
    let Confirmed { samples, shares } = tuned?;
    let period_us = match &knob {
        Knob::Duty(s) => Some(s.period().as_micros() as u64),
        Knob::Caps(..) => None,
    };
    let pids = match &knob {
        Knob::Duty(s) => s.pids(),
        Knob::Caps(..) => Vec::new(),
    };
    let stealers_in_root_cgroup = match &knob {
        Knob::Duty(s) => s.in_root_cgroup(),
        Knob::Caps(..) => false,
    };
    let kinds = targets
        .slowed
        .iter()
        .map(|k| kind_result(k, &tuning, &samples, &shares, &pids, opts.tolerance))
        .collect();
    let mechanism = mechanism_of(&knob);
    let report = Report {
        mechanism,
        why_not_cpufreq: why_not,
        reference_cpu: targets.reference,
        period_us,
        rt_budget: budget,
        stealers_in_root_cgroup,
        tolerance: opts.tolerance,
        contention: None,
        windows,
        kinds,
        limits: mechanism.limits().iter().map(|s| s.to_string()).collect(),
    };
    Ok(Emulation {
        knob,
        report,
        targets: targets.clone(),
        window: opts.window,
    })
}

/// Counts the calibration's windows on the progress task.
struct WindowCounter<'a> {
    what: &'a str,
    planned: u64,
    windows: usize,
    progress: &'a mut dyn Progress,
}

impl WindowCounter<'_> {
    /// One more window measured, while `doing` ("tuning", "confirming").
    fn count(&mut self, doing: &str) {
        self.windows += 1;
        let done = self.windows as u64;
        if done > self.planned {
            // A confirmation failed and tuning went on.
            self.planned = done;
            self.progress.resize(done);
        }
        self.progress.step(&format!("{}: {doing}", self.what), done);
    }
}

/// What the confirming windows found.
struct Confirmed {
    /// Per slowed CPU (in `tuning` order), the speed of each window.
    samples: Vec<Vec<f64>>,
    /// Per stealer's CPU, its share of the CPU over those windows.
    shares: Vec<(usize, f64)>,
}

/// Tunes every knob until the achieved speeds are within the tolerance,
/// then confirms over several windows without changes (tuning again when
/// the confirmation fails, up to `opts.max_rounds` rounds).
fn tune_and_confirm(
    knob: &mut Knob,
    fs: &FsRoot,
    targets: &Targets,
    opts: &Options,
    tuning: &mut [Tuning],
    lowest: f64,
    counter: &mut WindowCounter<'_>,
) -> Result<Confirmed, EmulateError> {
    let mut rounds = 0usize;
    let mut period_index = 0usize;
    let within = |a: f64, asked: f64, tol: f64| ((a / asked) - 1.0).abs() <= tol;
    loop {
        // Tune until every CPU is well within the tolerance.
        let achieved = window(targets.reference, tuning, opts.window)?;
        rounds += 1;
        counter.count("tuning");
        let close = tuning
            .iter()
            .zip(&achieved)
            .all(|(t, &a)| within(a, t.asked, opts.tolerance * 0.6));
        if !close && rounds < opts.max_rounds {
            retune(knob, tuning, &achieved, lowest)?;
            // Half-way without success: try the next period.
            if rounds == opts.max_rounds / 2 && period_index + 1 < opts.periods.len() {
                period_index += 1;
                if let Knob::Duty(s) = knob {
                    let shares: Vec<_> = tuning.iter().map(|t| (t.cpu, 1.0 - t.knob)).collect();
                    s.set_period(opts.periods[period_index], &shares);
                }
            }
            continue;
        }
        // Confirm over several windows without changes.
        let before = stealer_times(knob, fs);
        let started = std::time::Instant::now();
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); tuning.len()];
        for _ in 0..opts.confirm.max(1) {
            let a = window(targets.reference, tuning, opts.window)?;
            counter.count("confirming");
            for (s, x) in samples.iter_mut().zip(a) {
                s.push(x);
            }
        }
        let shares = stealer_shares(knob, fs, &before, started.elapsed());
        let medians: Vec<f64> = samples.iter().map(|s| Spread::of(s).median).collect();
        let ok = tuning
            .iter()
            .zip(&medians)
            .all(|(t, &m)| within(m, t.asked, opts.tolerance));
        if ok || rounds >= opts.max_rounds {
            return Ok(Confirmed { samples, shares });
        }
        retune(knob, tuning, &medians, lowest)?;
    }
}

fn mechanism_of(knob: &Knob) -> Mechanism {
    match knob {
        Knob::Caps(..) => Mechanism::Cpufreq,
        Knob::Duty(_) => Mechanism::DutyCycle,
    }
}

/// Moves each knob by the ratio still missing (damped, to settle rather
/// than oscillate on a noisy machine), within `[lowest, 1]`.
fn retune(
    knob: &Knob,
    tuning: &mut [Tuning],
    achieved: &[f64],
    lowest: f64,
) -> Result<(), EmulateError> {
    for (t, &a) in tuning.iter_mut().zip(achieved) {
        if a > 0.0 && a.is_finite() {
            let step = (t.asked / a).powf(0.8).clamp(0.5, 2.0);
            t.knob = (t.knob * step).clamp(lowest, 1.0);
            t.khz = knob.set(t.cpu, t.knob)?;
        }
    }
    Ok(())
}

/// Each stealer's CPU time so far (ns), by CPU.
fn stealer_times(knob: &Knob, fs: &FsRoot) -> Vec<(usize, Option<u64>)> {
    match knob {
        Knob::Duty(s) => s
            .pids()
            .into_iter()
            .map(|(cpu, pid)| (cpu, pinsight_sys::procfs::task_runtime_ns(fs, pid, pid)))
            .collect(),
        Knob::Caps(..) => Vec::new(),
    }
}

fn stealer_shares(
    knob: &Knob,
    fs: &FsRoot,
    before: &[(usize, Option<u64>)],
    wall: Duration,
) -> Vec<(usize, f64)> {
    let after = stealer_times(knob, fs);
    before
        .iter()
        .zip(after)
        .filter_map(|(&(cpu, b), (_, a))| {
            let used = a?.checked_sub(b?)?;
            Some((cpu, used as f64 / wall.as_nanos().max(1) as f64))
        })
        .collect()
}

fn kind_result(
    k: &KindTarget,
    tuning: &[Tuning],
    samples: &[Vec<f64>],
    shares: &[(usize, f64)],
    pids: &[(usize, i32)],
    tolerance: f64,
) -> KindResult {
    let mine: Vec<usize> = (0..tuning.len())
        .filter(|&i| k.cpus.contains(tuning[i].cpu))
        .collect();
    // Per window, the kind's mean over its CPUs.
    let windows = samples.first().map_or(0, Vec::len);
    let per_window: Vec<f64> = (0..windows)
        .map(|w| mine.iter().map(|&i| samples[i][w]).sum::<f64>() / mine.len().max(1) as f64)
        .collect();
    let achieved = Spread::of(&per_window);
    let settings = mine
        .iter()
        .map(|&i| {
            let t = &tuning[i];
            CpuSetting {
                cpu: t.cpu,
                knob: t.knob,
                max_khz: t.khz,
                stealer_cpu_share: shares.iter().find(|s| s.0 == t.cpu).map(|s| s.1),
                stealer_pid: pids.iter().find(|p| p.0 == t.cpu).map(|p| p.1),
            }
        })
        .collect();
    KindResult {
        name: k.name.clone(),
        mark: k.mark.clone(),
        cpus: k.cpus.to_string(),
        asked: k.asked,
        within_tolerance: ((achieved.median / k.asked) - 1.0).abs() <= tolerance,
        achieved,
        settings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_what_runs_already_and_what_to_do() {
        let nested = EmulateError::Nested {
            mechanism: "duty-cycle".into(),
        };
        assert_eq!(
            nested.to_string(),
            "already inside `pinsight emulate` (PINSIGHT_EMULATING=duty-cycle): a nested \
             emulation would fight the running one; run pinsight commands directly under it"
        );
        let held = |pid| EmulateError::Held {
            path: "/run/pinsight-emulate.lock".into(),
            pid,
        };
        let words = held(Some(42)).to_string();
        assert!(
            words.starts_with("another emulation runs (PID 42; lock /run/pinsight-emulate.lock): "),
            "{words}"
        );
        assert!(words.ends_with("; wait for it to end"), "{words}");
        assert!(held(None).to_string().contains("(PID unknown; "));
        // This process runs under no emulation (the test's environment).
        if std::env::var_os(EMULATING_ENV).is_none() {
            check_not_nested().unwrap();
        }
    }

    #[test]
    fn spread_of_samples() {
        let s = Spread::of(&[0.5, 0.4, 0.6]);
        assert_eq!((s.median, s.min, s.max, s.samples), (0.5, 0.4, 0.6, 3));
        assert!((s.stdev - 0.1).abs() < 1e-12);
        assert_eq!(Spread::of(&[0.2, 0.4]).median, 0.30000000000000004);
    }

    #[test]
    fn the_stealers_variable_names_each_cpu_and_pid() {
        assert_eq!(stealers_value(&[(1, 4425), (3, 4426)]), "1:4425,3:4426");
        assert_eq!(stealers_value(&[]), "");
        // Each entry reads back; what is not CPU:PID, or no PID, does not.
        let v = stealers_value(&[(1, 4425), (3, 4426)]);
        assert_eq!(parse_stealers(&v), [(1, 4425), (3, 4426)]);
        // A measurement reads the variable leniently: bad entries left out.
        assert_eq!(
            parse_stealers(" 0:10, 1:11 ,3:12,x:1,1:-4,1:,"),
            [(0, 10), (1, 11), (3, 12)]
        );
        assert!(parse_stealers("").is_empty());
        assert_eq!(parse_stealer(" 2 : 7 "), Some((2, 7)));
        for bad in ["", "1", "1:", ":5", "x:5", "1:0", "1:-3", "0:4194305"] {
            assert_eq!(parse_stealer(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_end_check_names_each_kind_that_drifted() {
        let kind = |median: f64, asked: f64| KindEnd {
            name: "E-core".into(),
            mark: "E".into(),
            cpus: "1".into(),
            asked,
            achieved: Spread::of(&[median]),
            drift: median / asked - 1.0,
            within_tolerance: (median / asked - 1.0).abs() <= 0.05,
        };
        let check = EndCheck {
            tolerance: 0.05,
            windows: 3,
            kinds: vec![kind(0.97, 0.5), kind(0.51, 0.5)],
        };
        assert_eq!(
            check.drifted(),
            [
                "E-core (CPUs 1) ran at 0.970 of the reference speed at the end, not 0.5 \
              (+94%, beyond 5%)"
            ]
        );
        let v = serde_json::to_value(&check).unwrap();
        assert_eq!(v["kinds"][0]["within_tolerance"], false);
        assert!((v["kinds"][0]["drift"].as_f64().unwrap() - 0.94).abs() < 1e-9);
        assert_eq!(v["kinds"][1]["achieved"]["median"], 0.51);
    }

    #[test]
    fn every_mechanism_states_its_limits() {
        for m in [Mechanism::Cpufreq, Mechanism::DutyCycle] {
            assert!(!m.limits().is_empty());
        }
        assert!(Mechanism::DutyCycle.limits()[0].contains("memory- and compute-bound"));
        assert!(Mechanism::Cpufreq.limits()[0].contains("memory-bound programs slow less"));
    }

    #[test]
    fn a_stealers_list_is_read_strictly() {
        use super::{parse_stealers_strict, BadStealer};
        assert_eq!(
            parse_stealers_strict(" 1:4425, ,2:7", 8),
            Ok(vec![(1, 4425), (2, 7)])
        );
        assert_eq!(parse_stealers_strict("", 8), Ok(vec![]));
        assert_eq!(
            parse_stealers_strict("8:1", 8),
            Err(BadStealer("8:1".into()))
        );
        let e = parse_stealers_strict("1:0\u{1b}", 8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'1:0\\u{1b}' is not CPU:PID (a CPU id and a process id from 1 to 4194304, e.g. 1:4425)"
        );
    }
}
