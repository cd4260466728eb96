//! Running the kernels pinned to each CPU.

use crate::kernels::{chunk_units, fp_chunk, int_chunk, ChaseBuffer, Kernel};
use crate::pin;
use pinsight_cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Clone, Debug)]
pub struct SpeedConfig {
    /// CPUs to measure, each in turn.
    pub cpus: CpuSet,
    /// Kernels to run on each CPU.
    pub kernels: Vec<Kernel>,
    /// Time spent on each CPU, shared evenly by the kernels (warm-up included).
    pub budget_per_cpu: Duration,
    /// Pointer-chase buffer size in bytes (should exceed the largest L2).
    pub mem_bytes: usize,
}

/// The result of one kernel on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelResult {
    pub kernel: Kernel,
    /// Median throughput over the timed chunks, in millions of units per second.
    pub median: f64,
    /// 95% distribution-free confidence interval of that median.
    pub ci_low: f64,
    pub ci_high: f64,
    /// Timed chunks.
    pub samples: usize,
    /// Throughput relative to the fastest CPU measured for this kernel (1.0 = fastest).
    pub relative: f64,
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
    /// pinning held).
    pub misplaced_chunks: usize,
}

/// Why measuring failed.
#[derive(Debug)]
pub enum SpeedError {
    /// Could not pin to the CPU (offline, forbidden by the cgroup, ...).
    Pin { cpu: usize, error: std::io::Error },
    /// No CPU to measure.
    NoCpus,
}

impl std::fmt::Display for SpeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpeedError::Pin { cpu, error } => write!(f, "cannot run on CPU {cpu}: {error}"),
            SpeedError::NoCpus => write!(f, "no CPU to measure"),
        }
    }
}

impl std::error::Error for SpeedError {}

/// Measures every CPU of `cfg.cpus` in turn on a helper thread (the
/// caller's affinity is never touched). `kind_of` maps a CPU to its kind
/// rank; `progress(done, total)` is called after each CPU.
pub fn measure(
    cfg: &SpeedConfig,
    kind_of: &dyn Fn(usize) -> Option<usize>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<CpuSpeed>, SpeedError> {
    if cfg.cpus.is_empty() {
        return Err(SpeedError::NoCpus);
    }
    let buffer = cfg.kernels.contains(&Kernel::Mem).then(|| ChaseBuffer::new(cfg.mem_bytes));
    let slice = cfg.budget_per_cpu / cfg.kernels.len().max(1) as u32;
    let total = cfg.cpus.len();
    let mut out = Vec::with_capacity(total);
    for (done, cpu) in cfg.cpus.iter().enumerate() {
        let kernels = cfg.kernels.clone();
        let buf = buffer.as_ref();
        let r = std::thread::scope(|s| {
            s.spawn(move || -> Result<(Vec<KernelResult>, usize), SpeedError> {
                pin::set_affinity(&CpuSet::single(cpu)).map_err(|error| SpeedError::Pin { cpu, error })?;
                let mut misplaced = 0;
                let mut results = Vec::new();
                for k in kernels {
                    let (r, m) = time_kernel(k, slice, buf, cpu);
                    misplaced += m;
                    results.push(r);
                }
                Ok((results, misplaced))
            })
            .join()
            .expect("speed worker panicked")
        })?;
        out.push(CpuSpeed { cpu, kind: kind_of(cpu), results: r.0, relative: f64::NAN, misplaced_chunks: r.1 });
        progress(done + 1, total);
    }
    fill_relative(&mut out);
    Ok(out)
}

/// Runs one kernel for `slice`: a warm-up tenth, then timed chunks.
fn time_kernel(k: Kernel, slice: Duration, buf: Option<&ChaseBuffer>, cpu: usize) -> (KernelResult, usize) {
    let mut pos = 0usize;
    let mut seed = 1u64;
    let mut chunk = || {
        seed = seed.wrapping_add(0x9E37_79B9);
        match k {
            Kernel::Int => {
                std::hint::black_box(int_chunk(seed));
            }
            Kernel::Fp => {
                std::hint::black_box(fp_chunk(seed));
            }
            Kernel::Mem => pos = buf.expect("buffer allocated for mem").chase(pos),
        }
    };
    let start = Instant::now();
    let warm = slice / 10;
    while start.elapsed() < warm {
        chunk();
    }
    let units = chunk_units(k) as f64;
    let mut rates = Vec::new();
    let mut misplaced = 0;
    // At least 5 samples even if a chunk overruns the slice.
    while start.elapsed() < slice || rates.len() < 5 {
        let t = Instant::now();
        chunk();
        let dt = t.elapsed().as_secs_f64();
        if pin::current_cpu().is_some_and(|c| c != cpu) {
            misplaced += 1;
        }
        rates.push(units / dt / 1e6);
    }
    rates.sort_by(|a, b| a.total_cmp(b));
    let (lo, hi) = median_ci_ranks(rates.len());
    let r = KernelResult {
        kernel: k,
        median: median_sorted(&rates),
        ci_low: rates[lo],
        ci_high: rates[hi],
        samples: rates.len(),
        relative: f64::NAN,
    };
    (r, misplaced)
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Ranks (0-based, inclusive) bounding a ~95% distribution-free CI of the
/// median: the binomial(n, 1/2) order statistics, normal approximation.
fn median_ci_ranks(n: usize) -> (usize, usize) {
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64 / 2.0 - half).floor().max(0.0)) as usize;
    let hi = ((n as f64 / 2.0 + half).ceil() as usize).min(n - 1);
    (lo.min(n - 1), hi)
}

/// Fills per-kernel and per-CPU relative speeds (1.0 = fastest CPU).
pub fn fill_relative(cpus: &mut [CpuSpeed]) {
    let kernels: Vec<Kernel> = cpus.first().map(|c| c.results.iter().map(|r| r.kernel).collect()).unwrap_or_default();
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_ranks_bracket_the_median() {
        for n in 1..200 {
            let (lo, hi) = median_ci_ranks(n);
            assert!(lo <= (n - 1) / 2 && hi >= n / 2 && hi < n, "n={n} lo={lo} hi={hi}");
        }
    }

    #[test]
    fn measures_the_cpus_it_may_use() {
        let mine = pin::current_affinity().unwrap();
        let first = mine.first().unwrap();
        let cfg = SpeedConfig {
            cpus: CpuSet::single(first),
            kernels: Kernel::ALL.to_vec(),
            budget_per_cpu: Duration::from_millis(90),
            mem_bytes: 1 << 20,
        };
        let mut calls = 0;
        let r = measure(&cfg, &|_| Some(0), &mut |d, t| {
            calls += 1;
            assert_eq!((d, t), (1, 1));
        })
        .unwrap();
        assert_eq!(calls, 1);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].results.len(), 3);
        for k in &r[0].results {
            assert!(k.median > 0.0 && k.ci_low <= k.median && k.median <= k.ci_high, "{k:?}");
            assert!(k.samples >= 5);
            assert!((k.relative - 1.0).abs() < 1e-12);
        }
        assert_eq!(r[0].misplaced_chunks, 0);
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
        };
        let e = measure(&cfg, &|_| None, &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("CPU 4000"), "{e}");
    }
}
