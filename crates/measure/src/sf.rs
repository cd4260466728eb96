//! Per-thread speedup factors: SF = IPS(big) / IPS(small),
//! measured with one counter group per core-kind PMU per thread.
//!
//! Hybrid machines register one core PMU per core kind (`cpu_core`,
//! `cpu_atom`, `cpu_lowpower` on x86; `armv8_pmuv3_0`, ... one per ARM
//! cluster, each with a `cpus` file). A counter opened on a thread
//! (`pid = tid`, `cpu = -1`) for one of them counts only while the thread
//! runs on that PMU's CPUs, and its `time_running` is the time it ran
//! there. So per thread and per PMU we open one group (instructions,
//! cycles, and where the PMU has them the phase cache's control metrics:
//! L1D read accesses and branch instructions) and every period read it:
//! the deltas give one window per kind the thread ran on, IPS =
//! instructions / time_running (IPS, not IPC × frequency, so turbo and
//! frequency drops are in it), fed to the one estimator
//! ([`pinsight_sched_model::SfEstimator`]: running average, minimum
//! samples per kind, clamp, phase cache).
//!
//! Kinds come from the topology (fastest kind = big, every other = small,
//! as `pinsight sched` sees them); each PMU is mapped to the kind whose
//! CPUs its `cpus` file lists. One PMU, one kind, no PMU or a forbidding
//! `perf_event_paranoid` are an [`SfUnavailable`] with the reason, never
//! a zero.
//!
//! [`AffinityProbe`] adds `--probe`: short alternating affinity windows
//! (big, small, big, ...) so a thread the OS keeps on one kind still gets
//! samples on both; it restores every thread's affinity on
//! [`AffinityProbe::restore`] and on drop.
//!
//! What `pinsight sched` calls per thread: [`SfSampler::attach`] once,
//! [`SfSampler::sample`] every period, [`SfSampler::sf`] for the current
//! estimate (the phase cache's prediction).

use crate::counters::{self, CorePmu, CountersError};
use crate::error::IoError;
use crate::metric::Metric;
use crate::sys::perf::{self, OpenSpec};
use pinsight_cpuset::CpuSet;
use pinsight_sched_model::Kind as SfKind;
use pinsight_sched_model::{ControlMetrics, SfEstimator, SfParams, SfSample};
use pinsight_sys::perf::GroupReading;
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

pub mod session;

/// A core kind as the topology ranks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindCpus {
    /// Human name ("P-core", "E-core", "Cortex-A76").
    pub name: String,
    /// 0 = least performant (the topology's order).
    pub rank: usize,
    /// Its CPUs.
    pub cpus: CpuSet,
}

impl From<&pinsight_model::Kind> for KindCpus {
    fn from(k: &pinsight_model::Kind) -> KindCpus {
        KindCpus {
            name: k.name.clone(),
            rank: k.rank,
            cpus: k.cpus.clone(),
        }
    }
}

/// A core PMU and the kind it counts on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindPmu {
    /// sysfs name (`cpu_core`, `armv8_pmuv3_0`, ...).
    pub pmu: String,
    /// Its dynamic type number.
    pub type_id: u32,
    /// Big (the fastest kind) or small (any other).
    pub kind: SfKind,
    /// The topology's name of the kind.
    pub kind_name: String,
    /// The CPUs it counts on (its `cpus` file).
    pub cpus: CpuSet,
}

/// The core PMUs mapped to kinds, with the big and small CPU sets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SfPmus {
    pub pmus: Vec<KindPmu>,
    /// The fastest kind's CPUs.
    pub big: CpuSet,
    /// Every other kind's CPUs.
    pub small: CpuSet,
}

/// Why speedup factors cannot be measured (here, or for one thread).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SfUnavailable {
    /// No core PMU at all (VMs, containers).
    #[error("{0}")]
    NoPmu(#[from] CountersError),
    /// One core PMU: it counts on every CPU alike.
    #[error(
        "one core PMU ({pmu}): it counts on every CPU alike, so it cannot tell a thread's \
         speed per kind (needs one PMU per core kind: cpu_core/cpu_atom, or one per ARM cluster)"
    )]
    OnePmu { pmu: String },
    /// One core kind: nothing to compare.
    #[error("one core kind ({kind}): there is no big and small kind to compare")]
    OneKind { kind: String },
    /// A core PMU without a readable `cpus` file.
    #[error(
        "core PMU {pmu}: {path} is missing or unreadable, so which kind it counts on is unknown"
    )]
    PmuCpusUnknown { pmu: String, path: String },
    /// A PMU counting on CPUs of both the big and the small kind (kinds
    /// declared differently from the hardware's): its counts would mix
    /// both kinds' speeds.
    #[error(
        "core PMU {pmu} counts on CPUs {cpus}, which span the big and the small kind: \
         its counts would mix both kinds' speeds"
    )]
    PmuSpansKinds { pmu: String, cpus: String },
    /// A kind no PMU counts on.
    #[error("no core PMU counts on the {kind} CPUs ({cpus})")]
    KindWithoutPmu { kind: String, cpus: String },
    /// `perf_event_paranoid` (or a missing capability) forbids it.
    #[error(
        "perf_event_paranoid={}: counting another thread is forbidden ({source}); needs root \
         or CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=1`",
        paranoid.map_or("?".to_string(), |p| p.to_string())
    )]
    Forbidden {
        paranoid: Option<i64>,
        source: IoError,
    },
    /// The thread is gone.
    #[error("thread {tid} has exited")]
    Exited { tid: i32 },
    /// Opening a group failed otherwise.
    #[error("perf_event_open({label}) on thread {tid} failed: {source}")]
    Open {
        label: String,
        tid: i32,
        source: IoError,
    },
    /// Reading a group failed.
    #[error("reading the {pmu} counters of thread {tid} failed: {source}")]
    Read {
        pmu: String,
        tid: i32,
        source: IoError,
    },
}

/// Maps the core PMUs under `fs` to `kinds` (any order; the highest rank
/// is big, every other kind small). Reads the PMU registry and each PMU's
/// `cpus` file through `fs`.
pub fn map_pmus(fs: &FsRoot, kinds: &[KindCpus]) -> Result<SfPmus, SfUnavailable> {
    let core = counters::discover_core_pmus(fs)?;
    if core.len() < 2 {
        return Err(SfUnavailable::OnePmu {
            pmu: core.first().map_or(String::new(), |p| p.name.clone()),
        });
    }
    let Some(fast) = kinds.iter().max_by_key(|k| k.rank) else {
        return Err(SfUnavailable::OneKind {
            kind: "unknown".to_string(),
        });
    };
    if kinds.len() < 2 {
        return Err(SfUnavailable::OneKind {
            kind: fast.name.clone(),
        });
    }
    let with_cpus = core
        .into_iter()
        .map(|p| {
            let path = pmu_cpus_path(fs, &p);
            let cpus = fs.read_cpulist(&path).and_then(Result::ok);
            match cpus {
                Some(c) => Ok((p, c)),
                None => Err(SfUnavailable::PmuCpusUnknown { pmu: p.name, path }),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    map_kinds(with_cpus, kinds, fast)
}

fn pmu_cpus_path(fs: &FsRoot, p: &CorePmu) -> String {
    let bus = format!("/sys/bus/event_source/devices/{}/cpus", p.name);
    if fs.exists(&bus) {
        bus
    } else {
        format!("/sys/devices/{}/cpus", p.name)
    }
}

/// The pure half of [`map_pmus`]: each PMU goes to the kind sharing the
/// most CPUs with it; a PMU sharing none (offline CPUs) is left out; one
/// spanning big and small CPUs is refused.
fn map_kinds(
    pmus: Vec<(CorePmu, CpuSet)>,
    kinds: &[KindCpus],
    fast: &KindCpus,
) -> Result<SfPmus, SfUnavailable> {
    let mut big = CpuSet::new();
    let mut small = CpuSet::new();
    for k in kinds {
        if k.rank == fast.rank {
            big.union_with(&k.cpus);
        } else {
            small.union_with(&k.cpus);
        }
    }
    let mut out = Vec::new();
    for (p, cpus) in pmus {
        if cpus.intersects(&big) && cpus.intersects(&small) {
            return Err(SfUnavailable::PmuSpansKinds {
                pmu: p.name,
                cpus: cpus.to_list_string(),
            });
        }
        let best = kinds
            .iter()
            .map(|k| (k.cpus.intersection(&cpus).len(), k))
            .filter(|(n, _)| *n > 0)
            .max_by_key(|(n, k)| (*n, k.rank));
        if let Some((_, k)) = best {
            out.push(KindPmu {
                pmu: p.name,
                type_id: p.type_id,
                kind: if k.rank == fast.rank {
                    SfKind::Big
                } else {
                    SfKind::Small
                },
                kind_name: k.name.clone(),
                cpus,
            });
        }
    }
    for (kind, want) in [(SfKind::Big, &big), (SfKind::Small, &small)] {
        if !out.iter().any(|p| p.kind == kind) {
            let names: Vec<&str> = kinds
                .iter()
                .filter(|k| (k.rank == fast.rank) == (kind == SfKind::Big))
                .map(|k| k.name.as_str())
                .collect();
            return Err(SfUnavailable::KindWithoutPmu {
                kind: names.join("/"),
                cpus: want.to_list_string(),
            });
        }
    }
    Ok(SfPmus {
        pmus: out,
        big,
        small,
    })
}

/// The events of one PMU's group, in this order (the first two always,
/// the control metrics when `control`).
const GROUP_EVENTS: [&str; 4] = ["instructions", "cycles", "L1-dcache-loads", "branches"];

/// How a group's events are encoded for `perf_event_open`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    /// Generic hardware events with the PMU's type in bits 32..63 of
    /// `config` (the kernel's "extended type": x86 hybrid since Linux
    /// 5.13, arm64 since 6.4 or so).
    Extended,
    /// `attr.type` = the PMU's own type and Armv8 PMUv3 architectural event
    /// numbers in `config` (arm_pmu takes raw events on its own type): for
    /// ARM kernels without the extended type.
    ArmRaw,
    /// Software events (see [`SfSampler::software_stand_in`]).
    StandIn,
}

/// Armv8 PMUv3 common architectural events (Arm ARM, D17.10):
/// INST_RETIRED, CPU_CYCLES, L1D_CACHE, BR_RETIRED.
const ARMV8_EVENTS: [u64; 4] = [0x08, 0x11, 0x04, 0x21];

/// Event `i` of a group ([`GROUP_EVENTS`] order) as `(attr.type, config)`.
fn event(encoding: Encoding, type_id: u32, i: usize) -> (u32, u64) {
    match encoding {
        Encoding::StandIn => (
            perf::PERF_TYPE_SOFTWARE,
            [
                perf::PERF_COUNT_SW_TASK_CLOCK,
                perf::PERF_COUNT_SW_PAGE_FAULTS,
                perf::PERF_COUNT_SW_CONTEXT_SWITCHES,
                perf::PERF_COUNT_SW_CPU_MIGRATIONS,
            ][i],
        ),
        Encoding::Extended => {
            let ext = u64::from(type_id) << perf::PERF_PMU_TYPE_SHIFT;
            let (t, id) = [
                (perf::PERF_TYPE_HARDWARE, perf::PERF_COUNT_HW_INSTRUCTIONS),
                (perf::PERF_TYPE_HARDWARE, perf::PERF_COUNT_HW_CPU_CYCLES),
                (
                    perf::PERF_TYPE_HW_CACHE,
                    perf::PERF_COUNT_HW_CACHE_L1D_READ_ACCESS,
                ),
                (
                    perf::PERF_TYPE_HARDWARE,
                    perf::PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
                ),
            ][i];
            (t, ext | id)
        }
        Encoding::ArmRaw => (type_id, ARMV8_EVENTS[i]),
    }
}

fn group_specs(
    type_id: u32,
    control: bool,
    exclude_kernel: bool,
    encoding: Encoding,
) -> Vec<OpenSpec> {
    let n = if control { 4 } else { 2 };
    (0..n)
        .map(|i| {
            let (type_, config) = event(encoding, type_id, i);
            OpenSpec {
                type_,
                config,
                exclude_kernel: exclude_kernel && encoding != Encoding::StandIn,
                inherit: false,
                enable_on_exec: false,
            }
        })
        .collect()
}

/// The sample one PMU group gives between two readings (values laid out
/// as instructions, cycles, then optionally L1D loads and branches), or
/// `None` while the thread has run less than `min_running` on that kind
/// since `prev` (the caller then keeps `prev`, so short stays add up).
/// Pure.
pub fn window(
    kind: SfKind,
    prev: Option<&GroupReading>,
    now: &GroupReading,
    min_running: Duration,
) -> Option<SfSample> {
    let zero = GroupReading::default();
    let prev = prev.unwrap_or(&zero);
    let d = |i: usize| -> Option<u64> {
        Some(
            now.values
                .get(i)?
                .saturating_sub(*prev.values.get(i).unwrap_or(&0)),
        )
    };
    let running = now.time_running_ns.saturating_sub(prev.time_running_ns);
    if running == 0 || (running as u128) < min_running.as_nanos() {
        return None;
    }
    let instructions = d(0)?;
    if instructions == 0 {
        return None;
    }
    let control = match (d(2), d(3)) {
        (Some(l1), Some(br)) => Some(ControlMetrics {
            l1_per_kilo_instr: l1 as f64 * 1000.0 / instructions as f64,
            branch_fraction: (br as f64 / instructions as f64).min(1.0),
        }),
        _ => None,
    };
    Some(SfSample {
        kind,
        instructions: instructions as f64,
        seconds: running as f64 / 1e9,
        control,
    })
}

/// Options of an [`SfSampler`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SfOptions {
    /// The estimator's parameters (PMCTrack's defaults).
    pub params: SfParams,
    /// A kind's window becomes a sample once the thread ran this long on
    /// it (shorter stays add up to the next reading): a few hundred µs on
    /// a kind after a migration would be one noisy sample.
    pub min_running: Duration,
}

impl Default for SfOptions {
    fn default() -> SfOptions {
        SfOptions {
            params: SfParams::default(),
            min_running: Duration::from_millis(2),
        }
    }
}

struct PmuGroup {
    pmu: usize,
    group: perf::Group,
    prev: Option<GroupReading>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
struct Totals {
    samples: u32,
    instructions: f64,
    seconds: f64,
}

struct ThreadSf {
    groups: Vec<PmuGroup>,
    control: bool,
    estimator: SfEstimator,
    big: Totals,
    small: Totals,
    last: Option<SfSample>,
}

/// What was measured on one kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindFigures {
    /// Samples (windows) fed to the estimator.
    pub samples: u32,
    /// Seconds the thread ran on this kind while sampled.
    pub seconds: f64,
    /// Instructions per second over those seconds.
    pub ips: Metric,
}

/// One thread's speedup factor and what it rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadSfReport {
    pub tid: i32,
    /// The estimate over all windows (running averages per kind).
    pub sf: Metric,
    /// The phase cache's SF for the current phase (what a scheduler uses,
    /// also while the thread runs on the small kind).
    pub predicted_sf: Metric,
    /// The kind of the last window.
    pub on: Option<SfKind>,
    pub big: KindFigures,
    pub small: KindFigures,
    /// The last window's control metrics (the phase key's inputs).
    pub phase: Option<ControlMetrics>,
    /// Phases in the cache.
    pub phases: usize,
    /// Whether the PMUs gave the control metrics (else no phase cache).
    pub control_metrics: bool,
}

/// One thread of a measured process, as `pinsight sf` reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadEntry {
    /// The process it belongs to (one of those measured).
    pub pid: i32,
    pub tid: i32,
    /// Its name (`comm`) when last seen.
    pub name: String,
    /// Whether it exited while measured.
    pub exited: bool,
    /// Why it has no counters (attach failed), if so.
    pub error: Option<String>,
    /// What was measured (absent when the counters could not be attached).
    #[serde(flatten)]
    pub report: Option<ThreadSfReport>,
}

/// Per-thread counter groups feeding one estimator per thread.
pub struct SfSampler {
    pmus: SfPmus,
    paranoid: Option<i64>,
    options: SfOptions,
    threads: BTreeMap<i32, ThreadSf>,
    stand_in: bool,
}

impl SfSampler {
    /// Maps the PMUs under `fs` to `kinds` ([`map_pmus`]) and reads
    /// `perf_event_paranoid`; opens nothing yet.
    pub fn new(
        fs: &FsRoot,
        kinds: &[KindCpus],
        options: SfOptions,
    ) -> Result<SfSampler, SfUnavailable> {
        let pmus = map_pmus(fs, kinds)?;
        let paranoid = fs
            .read_opt("/proc/sys/kernel/perf_event_paranoid")
            .and_then(|s| s.trim().parse::<i64>().ok());
        Ok(SfSampler {
            pmus,
            paranoid,
            options,
            threads: BTreeMap::new(),
            stand_in: false,
        })
    }

    /// TESTS AND BENCHMARKS ONLY: a sampler over `pmus` whose groups count
    /// software events in the hardware events' places (task-clock as
    /// "instructions", page faults as "cycles", context switches and
    /// migrations as the control metrics), on every kind alike. Its SFs
    /// mean nothing; it runs the whole sampling path (per-thread groups,
    /// group reads, windows, estimator, reports) on machines without a
    /// PMU, so that path is tested and its cost measured everywhere.
    #[doc(hidden)]
    pub fn software_stand_in(pmus: SfPmus, options: SfOptions) -> SfSampler {
        SfSampler {
            pmus,
            paranoid: None,
            options,
            threads: BTreeMap::new(),
            stand_in: true,
        }
    }

    /// Whether thread `tid` is attached.
    pub fn is_attached(&self, tid: i32) -> bool {
        self.threads.contains_key(&tid)
    }

    /// The PMUs and kinds in use.
    pub fn pmus(&self) -> &SfPmus {
        &self.pmus
    }

    /// Opens one group per core PMU on thread `tid` (counting from now).
    /// Attaching a thread twice is a no-op.
    pub fn attach(&mut self, tid: i32) -> Result<(), SfUnavailable> {
        if self.threads.contains_key(&tid) {
            return Ok(());
        }
        let mut control = true;
        let mut groups = self.open_groups(tid, &mut control)?;
        if !control {
            // One PMU without the control metrics: none has them (the phase
            // key must mean the same on every kind). Reopen without.
            groups.clear();
            groups = self.open_groups(tid, &mut control)?;
        }
        self.threads.insert(
            tid,
            ThreadSf {
                groups,
                control,
                estimator: SfEstimator::new(self.options.params),
                big: Totals::default(),
                small: Totals::default(),
                last: None,
            },
        );
        Ok(())
    }

    /// Opens one group per core PMU on thread `tid`, in PMU order
    /// (`control`: with the control metrics, cleared when a PMU lacks them).
    fn open_groups(&self, tid: i32, control: &mut bool) -> Result<Vec<PmuGroup>, SfUnavailable> {
        let mut groups = Vec::new();
        for (i, p) in self.pmus.pmus.iter().enumerate() {
            let group = self.open(p, tid, control)?;
            groups.push(PmuGroup {
                pmu: i,
                group,
                prev: None,
            });
        }
        Ok(groups)
    }

    /// Opens one PMU's group: with the kernel counted, else user space
    /// only; with the control metrics while `control`, else (and clearing
    /// `control`) without.
    fn open(
        &self,
        p: &KindPmu,
        tid: i32,
        control: &mut bool,
    ) -> Result<perf::Group, SfUnavailable> {
        let encodings: &[Encoding] = if self.stand_in {
            &[Encoding::StandIn]
        } else if p.pmu.starts_with("armv8") || p.pmu.starts_with("armv9") {
            &[Encoding::Extended, Encoding::ArmRaw]
        } else {
            &[Encoding::Extended]
        };
        // The error to report: that of the least demanding attempt in the
        // first encoding (user space only, no control metrics), whose
        // failure is the real obstacle; else the first.
        let mut first_error = None;
        let mut least_error = None;
        for with_control in [*control, false] {
            for (n, &encoding) in encodings.iter().enumerate() {
                for exclude_kernel in [false, true] {
                    let specs = group_specs(p.type_id, with_control, exclude_kernel, encoding);
                    match perf::open_group(&specs, tid) {
                        Ok(g) => {
                            *control = with_control;
                            return Ok(g);
                        }
                        Err(err) if n == 0 && exclude_kernel && !with_control => {
                            least_error = Some(err);
                        }
                        Err(err) => {
                            first_error.get_or_insert(err);
                        }
                    }
                }
            }
            if !*control {
                break;
            }
        }
        let last = least_error.or(first_error);
        let (i, e) = last.expect("at least one attempt");
        Err(match e.raw_os_error() {
            Some(libc::ESRCH) => SfUnavailable::Exited { tid },
            Some(libc::EACCES) | Some(libc::EPERM) => SfUnavailable::Forbidden {
                paranoid: self.paranoid,
                source: e.into(),
            },
            _ => SfUnavailable::Open {
                label: format!("{}/{}", p.pmu, GROUP_EVENTS[i.min(3)]),
                tid,
                source: e.into(),
            },
        })
    }

    /// Stops counting thread `tid` and forgets it.
    pub fn detach(&mut self, tid: i32) {
        self.threads.remove(&tid);
    }

    /// The attached threads.
    pub fn tids(&self) -> Vec<i32> {
        self.threads.keys().copied().collect()
    }

    /// Reads every group of thread `tid` and feeds the windows it ran long
    /// enough on each kind to its estimator; returns them.
    pub fn sample(&mut self, tid: i32) -> Result<Vec<SfSample>, SfUnavailable> {
        let min = self.options.min_running;
        let pmus = &self.pmus.pmus;
        let Some(t) = self.threads.get_mut(&tid) else {
            return Err(SfUnavailable::Exited { tid });
        };
        let mut out = Vec::new();
        for g in &mut t.groups {
            let now = g.group.read().map_err(|e| SfUnavailable::Read {
                pmu: pmus[g.pmu].pmu.clone(),
                tid,
                source: e.into(),
            })?;
            if let Some(s) = window(pmus[g.pmu].kind, g.prev.as_ref(), &now, min) {
                g.prev = Some(now);
                out.push(s);
            }
        }
        // Feed the kind the thread ran on longest last, so the phase cache's
        // current phase is the latest one.
        out.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
        for s in &out {
            t.estimator.add(*s);
            let tot = match s.kind {
                SfKind::Big => &mut t.big,
                SfKind::Small => &mut t.small,
            };
            tot.samples += 1;
            tot.instructions += s.instructions;
            tot.seconds += s.seconds;
            t.last = Some(*s);
        }
        Ok(out)
    }

    /// [`SfSampler::sample`] for every attached thread; the failures.
    pub fn sample_all(&mut self) -> Vec<(i32, SfUnavailable)> {
        let mut failed = Vec::new();
        for tid in self.tids() {
            if let Err(e) = self.sample(tid) {
                failed.push((tid, e));
            }
        }
        failed
    }

    /// The thread's SF for scheduling: the phase cache's prediction for its
    /// current phase (`None` until both kinds have enough samples).
    pub fn sf(&self, tid: i32) -> Option<f64> {
        self.threads.get(&tid)?.estimator.predict()
    }

    /// What was measured on thread `tid`.
    pub fn report(&self, tid: i32) -> Option<ThreadSfReport> {
        let t = self.threads.get(&tid)?;
        let min = self.options.params.min_samples;
        let figures = |x: &Totals| KindFigures {
            samples: x.samples,
            seconds: x.seconds,
            ips: if x.seconds > 0.0 {
                Metric::value(x.instructions / x.seconds)
            } else {
                Metric::unavailable("never ran on this kind while sampled")
            },
        };
        let missing = || {
            let mut why = Vec::new();
            for (name, x) in [("big", &t.big), ("small", &t.small)] {
                if x.samples < min {
                    why.push(format!("{} of {min} samples on the {name} kind", x.samples));
                }
            }
            Metric::unavailable(why.join(", "))
        };
        let sf = t.estimator.estimate().map_or_else(missing, Metric::value);
        let predicted_sf = t.estimator.predict().map_or_else(missing, Metric::value);
        Some(ThreadSfReport {
            tid,
            sf,
            predicted_sf,
            on: t.last.map(|s| s.kind),
            big: figures(&t.big),
            small: figures(&t.small),
            phase: t.last.and_then(|s| s.control),
            phases: t.estimator.phases(),
            control_metrics: t.control,
        })
    }
}

/// Why a thread could not be pinned for a probe window.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("thread {tid}: reading its affinity failed: {source}")]
    Get { tid: i32, source: IoError },
    #[error("thread {tid}: its affinity ({allowed}) has no {kind} CPU")]
    NoCpu {
        tid: i32,
        allowed: String,
        kind: &'static str,
    },
    #[error("thread {tid}: setting its affinity to {cpus} failed: {source}")]
    Set {
        tid: i32,
        cpus: String,
        source: IoError,
    },
}

/// Alternating affinity windows for `--probe`: every call to
/// [`AffinityProbe::pin_next`] pins the threads to the other kind's CPUs
/// (within each thread's own affinity). Every thread's affinity as first
/// seen is restored by [`AffinityProbe::restore`] and on drop.
pub struct AffinityProbe {
    big: CpuSet,
    small: CpuSet,
    next: SfKind,
    originals: BTreeMap<i32, CpuSet>,
}

impl AffinityProbe {
    /// A probe over `pmus`' big and small CPUs, starting on big.
    pub fn new(pmus: &SfPmus) -> AffinityProbe {
        AffinityProbe {
            big: pmus.big.clone(),
            small: pmus.small.clone(),
            next: SfKind::Big,
            originals: BTreeMap::new(),
        }
    }

    /// Pins each of `tids` to the next kind; returns that kind and the
    /// threads that could not be pinned (exited threads are skipped).
    pub fn pin_next(&mut self, tids: &[i32]) -> (SfKind, Vec<ProbeError>) {
        let kind = self.next;
        self.next = match kind {
            SfKind::Big => SfKind::Small,
            SfKind::Small => SfKind::Big,
        };
        let (cpus, name) = match kind {
            SfKind::Big => (&self.big, "big"),
            SfKind::Small => (&self.small, "small"),
        };
        let mut errors = Vec::new();
        for &tid in tids {
            let original = match self.originals.get(&tid) {
                Some(o) => o.clone(),
                None => match pinsight_sys::affinity::get_affinity(tid) {
                    Ok(o) => {
                        self.originals.insert(tid, o.clone());
                        o
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                    Err(e) => {
                        errors.push(ProbeError::Get {
                            tid,
                            source: e.into(),
                        });
                        continue;
                    }
                },
            };
            let target = original.intersection(cpus);
            if target.is_empty() {
                errors.push(ProbeError::NoCpu {
                    tid,
                    allowed: original.to_list_string(),
                    kind: name,
                });
                continue;
            }
            match pinsight_sys::affinity::set_affinity(tid, &target) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                    self.originals.remove(&tid);
                }
                Err(e) => errors.push(ProbeError::Set {
                    tid,
                    cpus: target.to_list_string(),
                    source: e.into(),
                }),
            }
        }
        (kind, errors)
    }

    /// Forgets an exited thread (nothing to restore).
    pub fn forget(&mut self, tid: i32) {
        self.originals.remove(&tid);
    }

    /// Restores every pinned thread's affinity as first seen; idempotent.
    /// Threads that exited meanwhile are not failures.
    pub fn restore(&mut self) -> Vec<ProbeError> {
        let mut errors = Vec::new();
        for (tid, cpus) in std::mem::take(&mut self.originals) {
            match pinsight_sys::affinity::set_affinity(tid, &cpus) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => errors.push(ProbeError::Set {
                    tid,
                    cpus: cpus.to_list_string(),
                    source: e.into(),
                }),
            }
        }
        errors
    }
}

impl Drop for AffinityProbe {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(running_ms: u64, values: &[u64]) -> GroupReading {
        GroupReading {
            time_enabled_ns: 1_000_000_000,
            time_running_ns: running_ms * 1_000_000,
            values: values.to_vec(),
        }
    }

    #[test]
    fn window_is_ips_over_running_time_with_control_metrics() {
        let prev = reading(100, &[1_000, 2_000, 300, 50]);
        // 50 ms more on this kind: 1e8 instructions → 2e9 IPS.
        let now = reading(150, &[100_001_000, 0, 30_000_300, 20_000_050]);
        let s = window(SfKind::Big, Some(&prev), &now, Duration::from_millis(2)).unwrap();
        assert_eq!(s.kind, SfKind::Big);
        assert_eq!(s.instructions, 1e8);
        assert!((s.seconds - 0.05).abs() < 1e-12);
        let c = s.control.unwrap();
        assert!((c.l1_per_kilo_instr - 300.0).abs() < 1e-9);
        assert!((c.branch_fraction - 0.2).abs() < 1e-12);
        // Without the control members: no control metrics.
        let s = window(
            SfKind::Small,
            None,
            &reading(10, &[5_000_000, 9]),
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(s.control, None);
    }

    #[test]
    fn short_or_idle_windows_give_no_sample() {
        let prev = reading(100, &[1_000, 2_000]);
        let d = Duration::from_millis(2);
        assert_eq!(window(SfKind::Big, Some(&prev), &prev, d), None);
        assert_eq!(
            window(SfKind::Big, Some(&prev), &reading(101, &[9_000, 9_000]), d),
            None
        );
        assert_eq!(
            window(SfKind::Big, Some(&prev), &reading(200, &[1_000, 9_000]), d),
            None
        );
    }

    #[test]
    fn encodings_name_the_pmu_its_way() {
        // x86 hybrid / arm64 with extended types: generic ids, PMU type in
        // the high bits; L1D loads are a HW_CACHE event.
        let g = group_specs(10, true, false, Encoding::Extended);
        let tc: Vec<(u32, u64)> = g.iter().map(|s| (s.type_, s.config)).collect();
        assert_eq!(
            tc,
            vec![
                (0, 0xa_0000_0001),
                (0, 0xa_0000_0000),
                (3, 0xa_0000_0000),
                (0, 0xa_0000_0004)
            ]
        );
        // Older ARM kernels: the PMU's own type with PMUv3 event numbers.
        let g = group_specs(8, false, true, Encoding::ArmRaw);
        let tc: Vec<(u32, u64, bool)> = g
            .iter()
            .map(|s| (s.type_, s.config, s.exclude_kernel))
            .collect();
        assert_eq!(tc, vec![(8, 0x08, true), (8, 0x11, true)]);
        assert!(group_specs(4, true, true, Encoding::StandIn)
            .iter()
            .all(|s| s.type_ == perf::PERF_TYPE_SOFTWARE && !s.exclude_kernel && !s.inherit));
    }
}
