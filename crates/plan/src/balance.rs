//! `balance`: M tasks over CPUs in proportion to each CPU's capacity.
//!
//! Why: on a hybrid CPU the same task loads an E-core more than a P-core
//! (a blog post on load testing an i5-13500E, 6 P-cores and 8 E-cores,
//! with 200 pinned processes on 20 CPUs: giving each CPU work in
//! proportion to its `cpuinfo_max_freq` raised what the machine carried by
//! about 20%, from 240 to 288 processes).
//!
//! Capacity comes from the best source available, in this order:
//! 1. `--weights FILE` ([`Weights`]): measured, the only source that knows
//!    the workload;
//! 2. the kernel's per-CPU `cpu_capacity` (ARM, recent x86), when every
//!    CPU has one;
//! 3. each CPU's kind's maximum frequency (that post's method), when the
//!    machine has several kinds and every kind has one — per kind rather
//!    than per CPU so that favoured cores (5.2 vs 5.0 GHz on one kind) do
//!    not skew the split;
//! 4. kind rank alone: each rank below the fastest multiplies capacity by
//!    [`DEFAULT_RANK_FACTOR`] — a round guess, flagged in the plan's notes;
//! 5. otherwise all CPUs are equal.
//!
//! Counts are apportioned with the largest-remainder (Hamilton) method so
//! they sum to M exactly.

use crate::weights::{Weights, WeightsError};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use serde::Serialize;

/// Capacity of each rank relative to the next faster one when nothing
/// better is known. 0.5 is deliberately round: a Gracemont E-core at
/// 3.9 GHz against a Golden Cove P-core at 5.2 GHz lands near 0.55 on
/// single-thread throughput, and ARM little cores sit well below that.
/// Measure with `pinsight speed --weights` when it matters.
pub const DEFAULT_RANK_FACTOR: f64 = 0.5;

/// Where the capacities came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacitySource {
    Weights,
    CpuCapacity,
    KindMaxFrequency,
    KindRankDefault,
    Uniform,
}

impl CapacitySource {
    /// A phrase for the plan's notes. It names no command-line option: the
    /// command line's help says how to measure weights.
    pub fn describe(self) -> &'static str {
        match self {
            CapacitySource::Weights => "from the weights file",
            CapacitySource::CpuCapacity => "from the kernel's cpu_capacity",
            CapacitySource::KindMaxFrequency => {
                "from each kind's maximum frequency (no cpu_capacity here)"
            }
            CapacitySource::KindRankDefault => {
                "from kind rank only, x0.5 per rank (a guess: measured per-CPU speeds replace it)"
            }
            CapacitySource::Uniform => "all CPUs equal (one kind, no cpu_capacity)",
        }
    }
}

/// Capacity of each CPU of `cpus` (ascending), and where it came from.
pub fn capacities(
    topo: &Topology,
    cpus: &CpuSet,
    weights: Option<&Weights>,
) -> Result<(Vec<(usize, f64)>, CapacitySource), WeightsError> {
    let list: Vec<usize> = cpus.iter().collect();
    if let Some(w) = weights {
        let missing: CpuSet = list
            .iter()
            .copied()
            .filter(|c| !w.by_cpu.contains_key(c))
            .collect();
        if !missing.is_empty() {
            return Err(WeightsError::Missing {
                missing,
                cpus: cpus.clone(),
            });
        }
        return Ok((
            list.iter().map(|c| (*c, w.by_cpu[c])).collect(),
            CapacitySource::Weights,
        ));
    }
    let caps: Option<Vec<(usize, f64)>> = list
        .iter()
        .map(|c| {
            topo.cpu(*c)
                .and_then(|i| i.capacity)
                .map(|v| (*c, v as f64))
        })
        .collect();
    if let Some(caps) = caps {
        return Ok((caps, CapacitySource::CpuCapacity));
    }
    let kind_of = |c: usize| {
        topo.cpu(c)
            .and_then(|i| i.kind)
            .and_then(|k| topo.kinds.get(k))
    };
    if topo.is_heterogeneous() {
        let mhz: Option<Vec<(usize, f64)>> = list
            .iter()
            .map(|c| kind_of(*c).and_then(|k| k.max_mhz).map(|m| (*c, m as f64)))
            .collect();
        if let Some(mhz) = mhz {
            return Ok((mhz, CapacitySource::KindMaxFrequency));
        }
        let top = topo.kinds.len() - 1;
        let ranks: Option<Vec<(usize, f64)>> = list
            .iter()
            .map(|c| {
                kind_of(*c).map(|k| (*c, DEFAULT_RANK_FACTOR.powi((top - k.rank.min(top)) as i32)))
            })
            .collect();
        if let Some(ranks) = ranks {
            return Ok((ranks, CapacitySource::KindRankDefault));
        }
    }
    Ok((
        list.iter().map(|c| (*c, 1.0)).collect(),
        CapacitySource::Uniform,
    ))
}

/// Splits `total` into integer counts proportional to `weights` (Hamilton /
/// largest remainder): each gets the floor of its quota, and the units
/// left go to the largest fractional parts (ties: larger weight, then
/// earlier position). Sums to `total` exactly. All-zero weights → `None`.
pub fn apportion(total: usize, weights: &[f64]) -> Option<Vec<usize>> {
    let sum: f64 = weights.iter().sum();
    if sum.is_nan() || sum <= 0.0 || !sum.is_finite() {
        return None;
    }
    let quotas: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut counts: Vec<usize> = quotas.iter().map(|q| q.floor() as usize).collect();
    let assigned: usize = counts.iter().sum();
    // Float error could push the floors one over; never hand out more than total.
    let mut left = total.saturating_sub(assigned);
    let mut order: Vec<usize> = (0..weights.len()).filter(|i| weights[*i] > 0.0).collect();
    // Remainders compared at 1e-9 so that equal quotas computed through
    // different float paths tie, and ties resolve deterministically.
    let frac = |i: usize| ((quotas[i] - quotas[i].floor()) * 1e9).round() as i64;
    order.sort_by(|a, b| {
        frac(*b)
            .cmp(&frac(*a))
            .then(
                weights[*b]
                    .partial_cmp(&weights[*a])
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
            .then(a.cmp(b))
    });
    while left > 0 {
        for i in &order {
            if left == 0 {
                break;
            }
            counts[*i] += 1;
            left -= 1;
        }
    }
    // If float error over-assigned, take back from the smallest remainders.
    let mut over = counts.iter().sum::<usize>().saturating_sub(total);
    for i in order.iter().rev() {
        if over == 0 {
            break;
        }
        if counts[*i] > 0 {
            counts[*i] -= 1;
            over -= 1;
        }
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hamilton_examples() {
        assert_eq!(apportion(200, &[1.0; 20]).unwrap(), vec![10; 20]);
        // 12 P at 1.0 and 8 E at 0.75: quotas 11.11 and 8.33 → floors 11/8
        // (sum 196), the four left go to the largest remainders (E: .33).
        let mut w = vec![1.0; 12];
        w.extend([0.75; 8]);
        let c = apportion(200, &w).unwrap();
        assert_eq!(c.iter().sum::<usize>(), 200);
        assert_eq!(&c[..12], &[11; 12]);
        assert_eq!(c[12..].iter().filter(|n| **n == 9).count(), 4);
        assert_eq!(c[12..].iter().filter(|n| **n == 8).count(), 4);
        assert_eq!(apportion(3, &[0.0, 1.0, 0.0]).unwrap(), vec![0, 3, 0]);
        assert_eq!(apportion(5, &[0.0, 0.0]), None);
        assert_eq!(apportion(0, &[1.0, 2.0]).unwrap(), vec![0, 0]);
        // Ties at equal remainders go to earlier positions.
        assert_eq!(apportion(1, &[1.0, 1.0, 1.0]).unwrap(), vec![1, 0, 0]);
    }

    proptest! {
        #[test]
        fn hamilton_sums_and_respects_quota(total in 0usize..5000, w in prop::collection::vec(0.0f64..1000.0, 1..64)) {
            let sum: f64 = w.iter().sum();
            prop_assume!(sum > 1e-6);
            let c = apportion(total, &w).unwrap();
            prop_assert_eq!(c.iter().sum::<usize>(), total);
            for (i, n) in c.iter().enumerate() {
                let q = total as f64 * w[i] / sum;
                // Quota property: floor(q) <= n <= ceil(q) (with float slack).
                prop_assert!((*n as f64) >= (q - 1e-6).floor() && (*n as f64) <= (q + 1e-6).ceil(), "{} for quota {}", n, q);
                if w[i] == 0.0 { prop_assert_eq!(*n, 0); }
            }
        }
    }
}
