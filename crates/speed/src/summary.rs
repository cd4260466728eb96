//! From per-CPU throughput to per-kind speed and speedup factors.

use crate::kernels::Kernel;
use crate::run::CpuSpeed;
use pinsight_model::Topology;
use serde::{Deserialize, Serialize};

/// How much faster one kind is than another on one kernel, beside what the
/// OS's figures would have predicted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindPair {
    /// Rank of the faster-ranked kind (numerator).
    pub fast_kind: usize,
    /// Rank of the slower-ranked kind (denominator).
    pub slow_kind: usize,
    pub kernel: Kernel,
    /// Measured speedup factor: median throughput of `fast_kind`'s CPUs over
    /// that of `slow_kind`'s CPUs.
    pub measured: f64,
    /// Ratio of the kinds' max frequencies, if both are known.
    pub predicted_by_frequency: Option<f64>,
    /// Ratio of the kinds' `cpu_capacity`, if both are known.
    pub predicted_by_capacity: Option<f64>,
}

/// Everything `pinsight speed` found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpeedReport {
    pub kernels: Vec<Kernel>,
    pub budget_per_cpu_s: f64,
    /// Interleaved passes over the CPUs; see [`crate::run`].
    #[serde(default)]
    pub passes: usize,
    /// Per kernel: its passes and the length of each of its slots.
    #[serde(default)]
    pub slots: Vec<SlotPlan>,
    /// Wall time the measurement took.
    #[serde(default)]
    pub elapsed_s: f64,
    pub mem_bytes: usize,
    /// True when throughput was counted by wall time over blocks of
    /// chunks, descheduled time included, instead of dropping descheduled
    /// chunks as disturbed: an emulated machine slowed by time share
    /// (`pinsight emulate`'s duty-cycle stealers; see
    /// [`crate::session::time_share_under`]). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub time_share: bool,
    pub cpus: Vec<CpuSpeed>,
    /// Per kind (by rank) and kernel: median throughput of its CPUs.
    pub kinds: Vec<KindSpeed>,
    /// Every ordered pair of measured kinds, every kernel.
    pub speedups: Vec<KindPair>,
    /// Other work on the measured CPUs and hypervisor steal over the whole
    /// measurement (`/proc/stat`; absent when it could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<pinsight_measure::Disturbance>,
    /// What a second busy SMT thread adds to a core (`smt_yield.value`,
    /// for `plan balance --smt-yield`), or why it was not measured
    /// (`smt_yield.unavailable`: no SMT siblings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt_yield: Option<crate::smt::SmtYield>,
}

/// One kernel's slots, as run on every CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotPlan {
    pub kernel: Kernel,
    pub passes: usize,
    pub slot_s: f64,
}

impl SlotPlan {
    /// The serialisable form of a [`crate::Schedule`].
    pub fn from_schedule(s: &crate::Schedule) -> Vec<SlotPlan> {
        s.kernels
            .iter()
            .map(|k| SlotPlan {
                kernel: k.kernel,
                passes: k.passes,
                slot_s: k.slot.as_secs_f64(),
            })
            .collect()
    }
}

/// A kind's median throughput per kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KindSpeed {
    pub rank: usize,
    pub name: String,
    pub cpus_measured: usize,
    /// (kernel, median of the CPUs' medians).
    pub median: Vec<(Kernel, f64)>,
}

/// Per-kind medians and every kind pair's speedup factor.
pub fn speedups(
    topo: &Topology,
    cpus: &[CpuSpeed],
    kernels: &[Kernel],
) -> (Vec<KindSpeed>, Vec<KindPair>) {
    let mut kinds = Vec::new();
    for k in &topo.kinds {
        let mine: Vec<&CpuSpeed> = cpus.iter().filter(|c| c.kind == Some(k.rank)).collect();
        if mine.is_empty() {
            continue;
        }
        let med = kernels
            .iter()
            .filter_map(|kern| {
                let vals = mine.iter().flat_map(|c| {
                    c.results
                        .iter()
                        .filter(|r| r.kernel == *kern)
                        .map(|r| r.median)
                        // A CPU with no valid figure for this kernel is left out.
                        .filter(|m| m.is_finite())
                });
                pinsight_stats::median(&vals.collect::<Vec<f64>>()).map(|m| (*kern, m))
            })
            .collect();
        kinds.push(KindSpeed {
            rank: k.rank,
            name: k.name.clone(),
            cpus_measured: mine.len(),
            median: med,
        });
    }
    let mut pairs = Vec::new();
    for (i, slow) in kinds.iter().enumerate() {
        for fast in &kinds[i + 1..] {
            let ks = &topo.kinds[slow.rank];
            let kf = &topo.kinds[fast.rank];
            let by_freq = match (kf.max_mhz, ks.max_mhz) {
                (Some(f), Some(s)) if s > 0 => Some(f as f64 / s as f64),
                _ => None,
            };
            let by_cap = match (kf.capacity_raw, ks.capacity_raw) {
                (Some(f), Some(s)) if s > 0 => Some(f as f64 / s as f64),
                _ => None,
            };
            for (kern, f) in &fast.median {
                if let Some((_, s)) = slow.median.iter().find(|(k, _)| k == kern) {
                    pairs.push(KindPair {
                        fast_kind: fast.rank,
                        slow_kind: slow.rank,
                        kernel: *kern,
                        measured: f / s,
                        predicted_by_frequency: by_freq,
                        predicted_by_capacity: by_cap,
                    });
                }
            }
        }
    }
    (kinds, pairs)
}

/// The `--weights` file `pinsight plan balance --weights FILE` reads: one
/// relative speed per CPU (geometric mean over the kernels, fastest = 1),
/// wrapped as `{"source": "pinsight speed", "kernels": [...], "weights": {"0": 1.0, ...}}`
/// (plan reads the `weights` object and ignores the rest). A CPU without a
/// valid figure (no usable chunk) is left out rather than given a made-up
/// weight; [`unweighted`] lists them so the caller can say so.
pub fn weights_file(cpus: &[CpuSpeed]) -> serde_json::Value {
    let weights: serde_json::Map<String, serde_json::Value> = cpus
        .iter()
        .filter(|c| c.relative.is_finite() && c.relative > 0.0)
        .map(|c| (c.cpu.to_string(), serde_json::json!(c.relative)))
        .collect();
    let kernels: Vec<&str> = cpus
        .first()
        .map(|c| c.results.iter().map(|r| r.kernel.name()).collect())
        .unwrap_or_default();
    serde_json::json!({ "source": "pinsight speed", "kernels": kernels, "weights": weights })
}

/// CPUs [`weights_file`] leaves out: no valid measurement.
pub fn unweighted(cpus: &[CpuSpeed]) -> Vec<usize> {
    cpus.iter()
        .filter(|c| !(c.relative.is_finite() && c.relative > 0.0))
        .map(|c| c.cpu)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::KernelResult;
    use pinsight_model::*;

    fn kind(rank: usize, cpus: &str, cap: u32, mhz: u32) -> Kind {
        Kind {
            rank,
            name: format!("k{rank}"),
            mark: rank.to_string(),
            cpus: cpus.parse().unwrap(),
            source: KindSource::Capacity,
            rank_source: RankSource::Capacity,
            capacity: Some(cap as f64 / 1024.0),
            capacity_raw: Some(cap),
            max_mhz: Some(mhz),
            base_mhz: None,
            core_type: None,
        }
    }

    fn speed(cpu: usize, kind: usize, v: f64) -> CpuSpeed {
        CpuSpeed {
            cpu,
            kind: Some(kind),
            results: vec![KernelResult {
                kernel: Kernel::Int,
                median: v,
                ci_low: v,
                ci_high: v,
                samples: 5,
                chunks: 5,
                disturbed: 0,
                disturbed_included: false,
                relative: f64::NAN,
            }],
            relative: f64::NAN,
            misplaced_chunks: 0,
        }
    }

    #[test]
    fn speedup_is_fast_over_slow_with_predictions() {
        let topo = Topology {
            kinds: vec![kind(0, "2-3", 512, 3000), kind(1, "0-1", 1024, 5000)],
            ..pinsight_testkit::topology::empty(Source::Live)
        };
        let mut cpus = vec![
            speed(0, 1, 200.0),
            speed(1, 1, 220.0),
            speed(2, 0, 100.0),
            speed(3, 0, 100.0),
        ];
        crate::run::fill_relative(&mut cpus);
        let (kinds, pairs) = speedups(&topo, &cpus, &[Kernel::Int]);
        assert_eq!(kinds.len(), 2);
        assert_eq!(pairs.len(), 1);
        assert!((pairs[0].measured - 2.1).abs() < 1e-9);
        assert!((pairs[0].predicted_by_frequency.unwrap() - 5.0 / 3.0).abs() < 1e-9);
        assert!((pairs[0].predicted_by_capacity.unwrap() - 2.0).abs() < 1e-9);
        assert!((cpus[1].relative - 1.0).abs() < 1e-9);
        let w = weights_file(&cpus);
        assert!((w["weights"]["2"].as_f64().unwrap() - 100.0 / 220.0).abs() < 1e-9);
    }
}
