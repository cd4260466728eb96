//! Running the kernels pinned to each CPU.
//!
//! # Method
//! The budget of every CPU is cut into short **slots** (one kernel on one
//! CPU for ~15–40 ms) and the slots are run **interleaved**: pass after
//! pass, kernel after kernel, every CPU in turn (the CPU order rotated each
//! pass). A burst of background load, a frequency change or a thermal drift
//! then hits every CPU alike instead of spoiling whichever CPU happened to be
//! measured at that moment — which matters most on hybrid machines, where
//! the point is the *ratio* between CPUs.
//!
//! Each slot starts with an untimed warm-up (caches, clock ramp-up; for
//! `mem` one walk of the whole buffer, so the loads are served from this
//! core's caches and not from where the previous CPU left the lines).
//! Within a slot the kernel runs in chunks of ~0.2–1 ms, each timed with the
//! wall clock and with the thread's CPU-time clock. A chunk whose CPU time
//! falls short of its wall time by more than 5% was descheduled part-way
//! (another process ran): it is **disturbed** and dropped, as is a chunk
//! that ran on another CPU than asked. The result per CPU and kernel is the
//! median throughput of the remaining chunks with a distribution-free 95%
//! confidence interval. If fewer than [`MIN_UNDISTURBED`] chunks were left
//! (a machine loaded beyond reason) all chunks on the right CPU are used and
//! the result says so.
//!
//! One worker thread does all the measuring, re-pinning itself slot by slot;
//! the caller's affinity is never touched.

use crate::kernels::{chunk_units, fp_chunk, int_chunk, ChaseBuffer, Kernel, MEM_LOADS};
use crate::pin;
use pinsight_cpuset::CpuSet;
use pinsight_stats::quantile_sorted;
use pinsight_sys::progress::Progress;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Clone, Debug)]
pub struct SpeedConfig {
    /// CPUs to measure.
    pub cpus: CpuSet,
    /// Kernels to run on each CPU.
    pub kernels: Vec<Kernel>,
    /// Time spent on each CPU, shared evenly by the kernels (warm-up included).
    pub budget_per_cpu: Duration,
    /// Pointer-chase buffer size in bytes (should exceed the largest L2).
    pub mem_bytes: usize,
    /// Count the time other tasks take from the measured thread (see
    /// [`summarise_time_share`]): for a machine whose CPUs are slowed by
    /// time share (`pinsight emulate`'s duty-cycle stealers), where the
    /// descheduled time is the very slowness to measure.
    pub time_share: bool,
}

/// Shortest slot worth having: room for a warm-up and a dozen chunks.
pub const MIN_SLOT: Duration = Duration::from_millis(15);
/// More passes than this only adds re-pinning and warm-ups.
pub const MAX_PASSES: usize = 8;
/// A chunk is undisturbed when its thread CPU time is at least this
/// fraction of its wall time.
pub const UNDISTURBED: f64 = 0.95;
/// Fewer undisturbed chunks than this and the disturbed ones are kept too.
pub const MIN_UNDISTURBED: usize = 3;
/// Share of each slot spent warming up (caches, frequency) untimed.
pub const WARMUP_FRACTION: f64 = 0.1;
/// A pessimistic dependent load beyond L2 (DRAM plus a TLB miss), to size
/// the `mem` warm-up walk before knowing the machine.
const SLOW_LOAD: Duration = Duration::from_nanos(150);

/// Shortest slot for `kernel`. For `mem` the slot starts with one walk of
/// the whole buffer (see `Runner::slot`), so it must be long enough for
/// that walk to be a small part of it: three walks at `SLOW_LOAD`.
pub fn min_slot(kernel: Kernel, mem_bytes: usize) -> Duration {
    match kernel {
        Kernel::Mem => MIN_SLOT.max(SLOW_LOAD * 3 * (mem_bytes / 64).max(1) as u32),
        _ => MIN_SLOT,
    }
}

/// One kernel's share of a CPU's budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelSlots {
    pub kernel: Kernel,
    /// Slots of this kernel per CPU, each in its own pass.
    pub passes: usize,
    /// Length of each.
    pub slot: Duration,
}

/// How a per-CPU budget is cut into slots: each kernel gets an equal share,
/// in as many slots as fit its [`min_slot`] (at most [`MAX_PASSES`], at
/// least one — a share below the minimum gives one short slot).
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub kernels: Vec<KernelSlots>,
}

impl Schedule {
    /// Passes over the CPUs (the most any kernel has).
    pub fn passes(&self) -> usize {
        self.kernels.iter().map(|k| k.passes).max().unwrap_or(0)
    }

    /// Slots per CPU, all kernels together.
    pub fn slots_per_cpu(&self) -> usize {
        self.kernels.iter().map(|k| k.passes).sum()
    }
}

/// Pure: see [`Schedule`].
pub fn schedule(budget_per_cpu: Duration, kernels: &[Kernel], mem_bytes: usize) -> Schedule {
    let share = budget_per_cpu / kernels.len().max(1) as u32;
    let kernels = kernels
        .iter()
        .map(|&kernel| {
            let fit = share.as_secs_f64() / min_slot(kernel, mem_bytes).as_secs_f64();
            let passes = (fit.floor() as usize).clamp(1, MAX_PASSES);
            KernelSlots {
                kernel,
                passes,
                slot: share / passes as u32,
            }
        })
        .collect();
    Schedule { kernels }
}

/// One slot of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub pass: usize,
    /// Index into the kernel list.
    pub kernel: usize,
    /// Index into the CPU list.
    pub cpu: usize,
}

/// The order slots run in: pass-major, then kernel, then CPU, the CPU order
/// rotated by one each pass so no CPU is always first after a kernel
/// switch. A kernel with fewer passes than the schedule's takes part in
/// passes spread evenly over the run; in each pass it runs on every CPU.
/// Pure.
pub fn slot_order(cpus: usize, sched: &Schedule) -> Vec<Slot> {
    let max = sched.passes();
    let mut out = Vec::with_capacity(cpus * sched.slots_per_cpu());
    for pass in 0..max {
        for (kernel, ks) in sched.kernels.iter().enumerate() {
            // Bresenham: exactly `ks.passes` of the `max` passes, evenly spread.
            if (pass * ks.passes) % max >= ks.passes {
                continue;
            }
            for i in 0..cpus {
                out.push(Slot {
                    pass,
                    kernel,
                    cpu: (i + pass) % cpus,
                });
            }
        }
    }
    out
}

/// One timed chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chunk {
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Thread CPU time over the same chunk, if the clock could be read.
    pub cpu_s: Option<f64>,
    /// The chunk ended on the CPU it was pinned to.
    pub on_cpu: bool,
}

impl Chunk {
    /// Ran without being descheduled (see [`UNDISTURBED`]).
    pub fn undisturbed(&self) -> bool {
        !matches!(self.cpu_s, Some(c) if c < UNDISTURBED * self.wall_s)
    }
}

/// The result of one kernel on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelResult {
    pub kernel: Kernel,
    /// Median throughput over the chunks used, in millions of units per second.
    pub median: f64,
    /// 95% distribution-free confidence interval of that median.
    pub ci_low: f64,
    pub ci_high: f64,
    /// Chunks the median is taken over.
    pub samples: usize,
    /// Chunks timed in all (over every pass).
    #[serde(default)]
    pub chunks: usize,
    /// Chunks that were descheduled part-way (dropped unless too few were left).
    #[serde(default)]
    pub disturbed: usize,
    /// True when too few undisturbed chunks were left and the disturbed ones
    /// were used too: the figure is then a lower bound, not trustworthy.
    #[serde(default)]
    pub disturbed_included: bool,
    /// Throughput relative to the fastest CPU measured for this kernel (1.0 = fastest).
    pub relative: f64,
}

impl KernelResult {
    /// Half-width of the confidence interval relative to the median (0.02 = ±2%).
    pub fn rel_ci_half(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0 / self.median
    }
}

/// Median and CI of `kernel`'s chunks (`units` of work each). Chunks that
/// ran on another CPU are always dropped; disturbed ones unless fewer than
/// [`MIN_UNDISTURBED`] would remain. Pure.
pub fn summarise(kernel: Kernel, units: u64, chunks: &[Chunk]) -> KernelResult {
    let placed: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.on_cpu && c.wall_s > 0.0)
        .collect();
    let clean: Vec<&Chunk> = placed.iter().copied().filter(|c| c.undisturbed()).collect();
    let disturbed = placed.len() - clean.len();
    let disturbed_included = clean.len() < MIN_UNDISTURBED && disturbed > 0;
    let used = if disturbed_included { placed } else { clean };
    let rates: Vec<f64> = used.iter().map(|c| units as f64 / c.wall_s / 1e6).collect();
    result(kernel, rates, chunks.len(), disturbed, disturbed_included)
}

/// All kernels on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSpeed {
    pub cpu: usize,
    /// Rank of its core kind, if known.
    pub kind: Option<usize>,
    pub results: Vec<KernelResult>,
    /// Geometric mean of the per-kernel relative speeds: one number per CPU,
    /// the weight the `balance` policy uses.
    pub relative: f64,
    /// Chunks that ran on another CPU than asked (should be 0: evidence the
    /// pinning held); they are left out of the figures.
    pub misplaced_chunks: usize,
}

use crate::error::SpeedError;

/// A kernel's running state, carried across its slots.
struct Runner<'a> {
    kernel: Kernel,
    seed: u64,
    pos: usize,
    buffer: Option<&'a ChaseBuffer>,
}

impl Runner<'_> {
    fn chunk(&mut self) {
        self.seed = self.seed.wrapping_add(0x9E37_79B9);
        match self.kernel {
            Kernel::Int => {
                std::hint::black_box(int_chunk(self.seed));
            }
            Kernel::Fp => {
                std::hint::black_box(fp_chunk(self.seed));
            }
            Kernel::Mem => {
                self.pos = self
                    .buffer
                    .expect("buffer allocated for mem")
                    .chase(self.pos)
            }
        }
    }

    /// Runs one slot on `cpu` (already pinned): an untimed warm-up (a tenth
    /// of the slot, at least one chunk, for `mem` at least one walk of the
    /// whole buffer), then timed chunks while another chunk still fits the
    /// slot (at least one).
    fn slot(&mut self, slot: Duration, cpu: usize, out: &mut Vec<Chunk>) {
        let start = Instant::now();
        let warm = slot.mul_f64(WARMUP_FRACTION);
        // The chase buffer was last walked from another CPU, and on a
        // chiplet machine sits in that CPU's L3: walk it whole once so the
        // timed loads see this core's own cache hierarchy, not the order
        // the CPUs were measured in.
        let mut warm_chunks = match (self.kernel, self.buffer) {
            (Kernel::Mem, Some(b)) => b.lines().div_ceil(MEM_LOADS as usize),
            _ => 1,
        };
        loop {
            self.chunk();
            warm_chunks = warm_chunks.saturating_sub(1);
            if warm_chunks == 0 && start.elapsed() >= warm {
                break;
            }
        }
        let mut last = Duration::ZERO;
        let mut timed = 0;
        while timed == 0 || start.elapsed() + last <= slot {
            let c0 = pin::thread_cpu_time();
            let t = Instant::now();
            self.chunk();
            let wall = t.elapsed();
            let c1 = pin::thread_cpu_time();
            let on_cpu = !matches!(pin::current_cpu(), Some(c) if c != cpu);
            out.push(Chunk {
                wall_s: wall.as_secs_f64(),
                cpu_s: c0.zip(c1).map(|(a, b)| b - a),
                on_cpu,
            });
            last = wall;
            timed += 1;
        }
    }
}

/// Measures every CPU of `cfg.cpus` (see the module doc for the method).
/// `kind_of` maps a CPU to its kind rank. `progress` sees one task,
/// "measuring CPU speed (P passes over N CPUs)", of `cpus x`
/// [`Schedule::slots_per_cpu`] of [`schedule`] slots, stepped on the
/// calling thread after each slot.
pub fn measure(
    cfg: &SpeedConfig,
    kind_of: &dyn Fn(usize) -> Option<usize>,
    progress: &mut dyn Progress,
) -> Result<Vec<CpuSpeed>, SpeedError> {
    if cfg.cpus.is_empty() {
        return Err(SpeedError::NoCpus);
    }
    if cfg.kernels.is_empty() {
        return Err(SpeedError::NoKernels);
    }
    let cpus: Vec<usize> = cfg.cpus.iter().collect();
    let kernels = &cfg.kernels;
    let sched = schedule(cfg.budget_per_cpu, kernels, cfg.mem_bytes);
    let order = slot_order(cpus.len(), &sched);
    let total = order.len();
    let buffer = if kernels.contains(&Kernel::Mem) {
        let bytes = cfg.mem_bytes;
        Some(ChaseBuffer::new(bytes).map_err(|_| SpeedError::Memory { bytes })?)
    } else {
        None
    };
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    progress.begin(
        &format!(
            "measuring CPU speed ({} passes over {} CPUs)",
            sched.passes(),
            cpus.len()
        ),
        total as u64,
        0,
    );
    let chunks = std::thread::scope(|s| {
        let worker = s.spawn(|| -> Result<Vec<Vec<Vec<Chunk>>>, SpeedError> {
            let tx = tx;
            let mut runners: Vec<Runner> = kernels
                .iter()
                .map(|&kernel| Runner {
                    kernel,
                    seed: 1,
                    pos: 0,
                    buffer: buffer.as_ref(),
                })
                .collect();
            let mut chunks = vec![vec![Vec::new(); kernels.len()]; cpus.len()];
            for (done, slot) in order.iter().enumerate() {
                let cpu = cpus[slot.cpu];
                pin::set_affinity(&CpuSet::single(cpu))
                    .map_err(|error| SpeedError::Pin { cpu, error })?;
                let length = sched.kernels[slot.kernel].slot;
                runners[slot.kernel].slot(length, cpu, &mut chunks[slot.cpu][slot.kernel]);
                let _ = tx.send(done + 1);
            }
            Ok(chunks)
        });
        for done in rx.iter() {
            progress.step("", done as u64);
        }
        worker.join().expect("speed worker panicked")
    });
    progress.end();
    let chunks = chunks?;
    let mut out: Vec<CpuSpeed> = cpus
        .iter()
        .zip(chunks)
        .map(|(&cpu, per_kernel)| {
            let misplaced = per_kernel.iter().flatten().filter(|c| !c.on_cpu).count();
            let results = kernels
                .iter()
                .zip(&per_kernel)
                .map(|(&k, ch)| {
                    if cfg.time_share {
                        summarise_time_share(k, chunk_units(k), ch)
                    } else {
                        summarise(k, chunk_units(k), ch)
                    }
                })
                .collect();
            CpuSpeed {
                cpu,
                kind: kind_of(cpu),
                results,
                relative: f64::NAN,
                misplaced_chunks: misplaced,
            }
        })
        .collect();
    fill_relative(&mut out);
    Ok(out)
}

/// Shortest block of consecutive chunks in [`summarise_time_share`]:
/// several periods of a duty-cycle stealer (2-5 ms).
pub const TIME_SHARE_BLOCK_S: f64 = 0.02;

/// Like [`summarise`], but counting descheduled time: consecutive chunks
/// on the right CPU are grouped into blocks of at least
/// [`TIME_SHARE_BLOCK_S`] wall time, each block's throughput is its units
/// over its wall time, and the result is the median block with its
/// confidence interval. A per-chunk median would be a chunk that happened
/// to run between two stolen slices, i.e. the CPU unslowed. Pure.
pub fn summarise_time_share(kernel: Kernel, units: u64, chunks: &[Chunk]) -> KernelResult {
    let placed: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.on_cpu && c.wall_s > 0.0)
        .collect();
    let mut rates: Vec<f64> = Vec::new();
    let (mut n, mut wall) = (0u64, 0.0f64);
    for c in &placed {
        n += units;
        wall += c.wall_s;
        if wall >= TIME_SHARE_BLOCK_S {
            rates.push(n as f64 / wall / 1e6);
            (n, wall) = (0, 0.0);
        }
    }
    if rates.is_empty() && wall > 0.0 {
        rates.push(n as f64 / wall / 1e6);
    }
    // Descheduled time is counted on purpose, not dropped: nothing to warn
    // about.
    result(kernel, rates, chunks.len(), 0, false)
}

/// A kernel's result from its throughput samples (MB or Munits/s): the
/// median with its distribution-free 95% interval (no samples: NaN, which
/// the renderers show as unavailable).
fn result(
    kernel: Kernel,
    mut rates: Vec<f64>,
    chunks: usize,
    disturbed: usize,
    disturbed_included: bool,
) -> KernelResult {
    rates.sort_by(|a, b| a.total_cmp(b));
    let (median, ci_low, ci_high) = if rates.is_empty() {
        (f64::NAN, f64::NAN, f64::NAN)
    } else {
        let (lo, hi) = median_ci_ranks(rates.len());
        (quantile_sorted(&rates, 0.5), rates[lo], rates[hi])
    };
    KernelResult {
        kernel,
        median,
        ci_low,
        ci_high,
        samples: rates.len(),
        chunks,
        disturbed,
        disturbed_included,
        relative: f64::NAN,
    }
}

/// Ranks (0-based, inclusive) bounding the 95% distribution-free CI of the
/// median: `pinsight-stats`' exact binomial rule (one median interval in
/// pinsight). Below 6 samples no interval reaches 95%: the whole range,
/// the widest there is, is given (its coverage is below 95%).
fn median_ci_ranks(n: usize) -> (usize, usize) {
    pinsight_stats::median_ci_ranks(n, 0.95).unwrap_or((0, n.saturating_sub(1)))
}

/// Fills per-kernel relative speeds (1.0 = the fastest CPU on that kernel)
/// and per-CPU ones (geometric mean over the kernels, scaled so the best
/// CPU is 1.0).
pub fn fill_relative(cpus: &mut [CpuSpeed]) {
    let kernels: Vec<Kernel> = cpus
        .first()
        .map(|c| c.results.iter().map(|r| r.kernel).collect())
        .unwrap_or_default();
    for k in kernels {
        let best = cpus
            .iter()
            .flat_map(|c| c.results.iter().filter(|r| r.kernel == k).map(|r| r.median))
            .fold(f64::NAN, f64::max);
        for c in cpus.iter_mut() {
            for r in c.results.iter_mut().filter(|r| r.kernel == k) {
                r.relative = r.median / best;
            }
        }
    }
    for c in cpus.iter_mut() {
        let n = c.results.len() as f64;
        c.relative = (c.results.iter().map(|r| r.relative.ln()).sum::<f64>() / n).exp();
    }
    // Different CPUs may win different kernels: scale so the CPU with the
    // best mean is exactly 1 (the weight `balance` gives its fastest CPU).
    let best = cpus.iter().map(|c| c.relative).fold(f64::NAN, f64::max);
    for c in cpus.iter_mut() {
        c.relative /= best;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_testkit::progress::Recorder;

    fn one(cpu: usize, medians: &[f64]) -> CpuSpeed {
        let results = medians
            .iter()
            .zip(Kernel::ALL)
            .map(|(&m, kernel)| KernelResult {
                kernel,
                median: m,
                ci_low: m,
                ci_high: m,
                samples: 1,
                chunks: 1,
                disturbed: 0,
                disturbed_included: false,
                relative: f64::NAN,
            })
            .collect();
        CpuSpeed {
            cpu,
            kind: None,
            results,
            relative: f64::NAN,
            misplaced_chunks: 0,
        }
    }

    #[test]
    fn relative_speed_is_one_for_the_best_cpu_even_when_kernels_disagree() {
        // CPU 0 wins int, CPU 1 wins fp and mem.
        let mut v = vec![
            one(0, &[100.0, 50.0, 10.0]),
            one(1, &[90.0, 60.0, 12.0]),
            one(2, &[50.0, 30.0, f64::NAN]),
        ];
        fill_relative(&mut v);
        assert_eq!(v[0].results[0].relative, 1.0);
        assert_eq!(v[1].results[1].relative, 1.0);
        assert_eq!(v[1].relative, 1.0);
        let raw0 = (1.0f64 * (50.0 / 60.0) * (10.0 / 12.0)).cbrt();
        let raw1 = (0.9f64 * 1.0 * 1.0).cbrt();
        assert!((v[0].relative - raw0 / raw1).abs() < 1e-12);
        // No valid mem figure: no made-up weight.
        assert!(v[2].relative.is_nan());
    }

    #[test]
    fn ci_ranks_are_the_exact_binomial_ones() {
        // Exact binomial ranks (0-based) of pinsight-stats at 95%.
        assert_eq!(median_ci_ranks(10), (1, 8));
        assert_eq!(median_ci_ranks(20), (5, 14));
        assert_eq!(median_ci_ranks(50), (17, 32));
        // Too few for 95%: the whole range.
        assert_eq!(median_ci_ranks(3), (0, 2));
        assert_eq!(median_ci_ranks(1), (0, 0));
    }

    #[test]
    fn ci_ranks_bracket_the_median() {
        for n in 1..200 {
            let (lo, hi) = median_ci_ranks(n);
            assert!(
                lo <= (n - 1) / 2 && hi >= n / 2 && hi < n,
                "n={n} lo={lo} hi={hi}"
            );
        }
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    #[test]
    fn schedule_fits_the_budget_in_passes() {
        let all = Kernel::ALL;
        let mib8 = 8 << 20;
        // mem on 8 MiB: 131072 loads x 150 ns x 3 = 59 ms per slot at least.
        assert!((ms(min_slot(Kernel::Mem, mib8)) - 58.98).abs() < 0.01);
        assert_eq!(min_slot(Kernel::Mem, 1 << 16), MIN_SLOT);
        // 1 s per CPU: 333 ms per kernel -> int, fp 8 x 41.7 ms; mem 5 x 66.7 ms.
        let s = schedule(Duration::from_secs(1), &all, mib8);
        let shape: Vec<usize> = s.kernels.iter().map(|k| k.passes).collect();
        assert_eq!(shape, [8, 8, 5]);
        assert!((ms(s.kernels[2].slot) - 66.67).abs() < 0.01, "{s:?}");
        assert_eq!((s.passes(), s.slots_per_cpu()), (8, 21));
        // 90 ms: 30 ms per kernel -> 2 x 15 ms; mem one 30 ms slot.
        let s = schedule(Duration::from_millis(90), &all, mib8);
        assert_eq!(
            s.kernels
                .iter()
                .map(|k| (k.passes, ms(k.slot).round() as u64))
                .collect::<Vec<_>>(),
            [(2, 15), (2, 15), (1, 30)]
        );
        // Below the minimum: one short slot, never zero passes.
        assert_eq!(
            schedule(Duration::from_millis(9), &all, mib8).kernels[0],
            KernelSlots {
                kernel: Kernel::Int,
                passes: 1,
                slot: Duration::from_millis(3)
            }
        );
        assert_eq!(schedule(Duration::ZERO, &[Kernel::Int], 0).passes(), 1);
        // The slots never add up to more than the budget.
        for budget in [1u64, 14, 15, 16, 44, 45, 100, 333, 1000, 5000] {
            for k in 1..=3 {
                let s = schedule(Duration::from_millis(budget), &all[..k], mib8);
                let total: Duration = s.kernels.iter().map(|k| k.slot * k.passes as u32).sum();
                assert!(
                    total <= Duration::from_millis(budget),
                    "{budget} ms, {k} kernels: {s:?}"
                );
            }
        }
    }

    #[test]
    fn slot_order_interleaves_cpus_and_rotates_each_pass() {
        let sched = |passes: &[usize]| Schedule {
            kernels: passes
                .iter()
                .zip(Kernel::ALL)
                .map(|(&passes, kernel)| KernelSlots {
                    kernel,
                    passes,
                    slot: MIN_SLOT,
                })
                .collect(),
        };
        let o = slot_order(3, &sched(&[2, 2]));
        assert_eq!(o.len(), 12);
        let cpus: Vec<usize> = o.iter().map(|s| s.cpu).collect();
        assert_eq!(cpus, [0, 1, 2, 0, 1, 2, 1, 2, 0, 1, 2, 0]);
        let kernels: Vec<usize> = o.iter().map(|s| s.kernel).collect();
        assert_eq!(kernels, [0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1]);
        // Every (kernel, CPU) once per pass.
        for pass in 0..2 {
            let mut seen: Vec<(usize, usize)> = o
                .iter()
                .filter(|s| s.pass == pass)
                .map(|s| (s.kernel, s.cpu))
                .collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), 6);
        }
        // Fewer passes for one kernel: spread over the run, every CPU each time.
        for (p, k) in [(8usize, 5usize), (8, 1), (8, 3), (5, 2), (7, 7)] {
            let o = slot_order(2, &sched(&[p, k]));
            let passes: Vec<usize> = o
                .iter()
                .filter(|s| s.kernel == 1 && s.cpu == 0)
                .map(|s| s.pass)
                .collect();
            assert_eq!(passes.len(), k, "{p} {k}: {passes:?}");
            assert_eq!(o.iter().filter(|s| s.kernel == 1).count(), 2 * k);
            assert_eq!(o.iter().filter(|s| s.kernel == 0).count(), 2 * p);
            assert_eq!(passes[0], 0);
            if k > 1 {
                let gaps: Vec<usize> = passes.windows(2).map(|w| w[1] - w[0]).collect();
                assert!(
                    gaps.iter().max().unwrap() - gaps.iter().min().unwrap() <= 1,
                    "{p} {k}: {passes:?}"
                );
            }
        }
    }

    fn chunk(wall_ms: f64, cpu_ms: f64, on_cpu: bool) -> Chunk {
        Chunk {
            wall_s: wall_ms / 1e3,
            cpu_s: Some(cpu_ms / 1e3),
            on_cpu,
        }
    }

    #[test]
    fn time_share_counts_descheduled_time_in_blocks() {
        // Every other 1 ms chunk lost 1 ms to a stealer: half speed.
        let chunks: Vec<Chunk> = (0..80)
            .map(|i| {
                if i % 2 == 0 {
                    chunk(1.0, 1.0, true)
                } else {
                    chunk(2.0, 1.0, true)
                }
            })
            .collect();
        let r = summarise_time_share(Kernel::Int, 1000, &chunks);
        // Blocks of 14 chunks (21 ms, 14000 units): 0.667 M units/s; the
        // last 10 chunks (15 ms) are too short for a block of their own.
        assert!((r.median - 2.0 / 3.0).abs() < 0.02, "{r:?}");
        assert_eq!(
            (r.samples, r.disturbed, r.disturbed_included),
            (5, 0, false)
        );
        // The per-chunk median would have said full speed.
        assert_eq!(summarise(Kernel::Int, 1000, &chunks).median, 1.0);
    }

    #[test]
    fn summary_drops_disturbed_and_misplaced_chunks() {
        // 1000 units per chunk: 1 ms -> 1 M units/s.
        let mut chunks = vec![chunk(1.0, 1.0, true); 9];
        chunks.push(chunk(5.0, 1.0, true)); // descheduled for 4 ms
        chunks.push(chunk(4.0, 0.9, true));
        chunks.push(chunk(0.5, 0.5, false)); // ran elsewhere
        let r = summarise(Kernel::Int, 1000, &chunks);
        assert_eq!(
            (r.samples, r.chunks, r.disturbed, r.disturbed_included),
            (9, 12, 2, false)
        );
        assert!(
            (r.median - 1.0).abs() < 1e-9 && r.ci_low == r.median && r.ci_high == r.median,
            "{r:?}"
        );
    }

    #[test]
    fn summary_keeps_disturbed_chunks_when_too_few_are_clean() {
        let chunks = vec![
            chunk(1.0, 1.0, true),
            chunk(2.0, 1.0, true),
            chunk(4.0, 1.0, true),
        ];
        let r = summarise(Kernel::Fp, 1000, &chunks);
        assert_eq!((r.samples, r.disturbed, r.disturbed_included), (3, 2, true));
        assert!((r.median - 0.5).abs() < 1e-9);
        // No usable chunk at all: NaN, not a fake number.
        let r = summarise(Kernel::Mem, 1000, &[chunk(1.0, 1.0, false)]);
        assert_eq!(r.samples, 0);
        assert!(r.median.is_nan());
        // A missing CPU-time clock counts as undisturbed.
        let r = summarise(
            Kernel::Mem,
            1000,
            &[Chunk {
                wall_s: 1e-3,
                cpu_s: None,
                on_cpu: true,
            }],
        );
        assert_eq!((r.samples, r.disturbed), (1, 0));
    }

    #[test]
    fn measures_the_cpus_it_may_use() {
        let mine = pin::current_affinity().unwrap();
        let cfg = SpeedConfig {
            cpus: mine.clone(),
            kernels: Kernel::ALL.to_vec(),
            budget_per_cpu: Duration::from_millis(90),
            mem_bytes: 1 << 20,
            time_share: false,
        };
        let total =
            mine.len() * schedule(cfg.budget_per_cpu, &cfg.kernels, cfg.mem_bytes).slots_per_cpu();
        let mut progress = Recorder::default();
        let t = Instant::now();
        let r = measure(&cfg, &|_| Some(0), &mut progress).unwrap();
        let wall = t.elapsed();
        // One task, a step per slot, one at a time, to the total.
        let tasks = progress.tasks();
        assert_eq!(tasks.len(), 1, "{progress:?}");
        assert!(
            tasks[0].what.starts_with("measuring CPU speed"),
            "{tasks:?}"
        );
        assert_eq!(
            (tasks[0].total, tasks[0].done, tasks[0].steps),
            (total as u64, total as u64, total)
        );
        assert_eq!(r.len(), mine.len());
        // The budget holds (plus one chunk per slot and thread start-up).
        assert!(
            wall < Duration::from_millis(90 * mine.len() as u64 + 200),
            "{wall:?}"
        );
        for c in &r {
            assert_eq!(c.results.len(), 3);
            assert_eq!(c.misplaced_chunks, 0);
            for k in &c.results {
                assert!(k.samples >= 1 && k.chunks >= k.samples, "{k:?}");
                assert!(
                    k.median > 0.0 && k.ci_low <= k.median && k.median <= k.ci_high,
                    "{k:?}"
                );
                assert!(k.relative > 0.0 && k.relative <= 1.0, "{k:?}");
            }
        }
        // The caller's own affinity is untouched.
        assert_eq!(pin::current_affinity().unwrap(), mine);
    }

    #[test]
    fn forbidden_cpu_is_an_error_naming_it() {
        let cfg = SpeedConfig {
            cpus: CpuSet::single(4000),
            kernels: vec![Kernel::Int],
            budget_per_cpu: Duration::from_millis(10),
            mem_bytes: 1 << 16,
            time_share: false,
        };
        let mut progress = Recorder::default();
        let e = measure(&cfg, &|_| None, &mut progress).unwrap_err();
        // The task ends on an error too.
        assert_eq!(progress.tasks().len(), 1);
        assert!(e.to_string().contains("CPU 4000"), "{e}");
    }
}
