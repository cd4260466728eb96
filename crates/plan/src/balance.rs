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
//! 2. the topology's one capacity per CPU ([`Topology::capacity`]): the
//!    same number `topo` prints for the CPU's kind, from the source
//!    discovery decided (`cpu_capacity`, CPPC `highest_perf`, max
//!    frequency, the Arm core table, or rank alone x0.5 per rank — a
//!    round guess, flagged in the plan's notes);
//! 3. otherwise all CPUs are equal.
//!
//! SMT: two busy siblings share one core. [`smt_shared`] gives each of
//! the `n` siblings placed on a core `capacity x (1 + yield x (n - 1)) / n`,
//! so tasks per physical core follow the core's capacity rather than
//! counting every sibling as a whole CPU. The yield is measured (a
//! request's `smt_yield`) or [`pinsight_model::DEFAULT_SMT_YIELD`].
//!
//! Counts are apportioned with the largest-remainder (Hamilton) method so
//! they sum to M exactly.

use crate::weights::{Weights, WeightsError};
use pinsight_cpuset::CpuSet;
use pinsight_model::{CapacityOrigin, Topology};
use serde::Serialize;

/// Capacity of each rank relative to the next faster one when nothing
/// better is known (the topology's [`pinsight_model::RANK_DEFAULT_FACTOR`]).
pub const DEFAULT_RANK_FACTOR: f64 = pinsight_model::RANK_DEFAULT_FACTOR;

/// Where the capacities came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacitySource {
    Weights,
    CpuCapacity,
    KindMaxFrequency,
    KindRankDefault,
    Uniform,
    /// ACPI CPPC `highest_perf`, per kind.
    CppcHighestPerf,
    /// ACPI CPPC `nominal_perf`, per kind.
    CppcNominalPerf,
    /// `base_frequency`, per kind.
    KindBaseFrequency,
    /// The Arm core table times each kind's max clock.
    MicroarchTable,
    /// Declared kinds' `@SPEED` on a machine discovered as one kind.
    DeclaredSpeed,
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
            CapacitySource::CppcHighestPerf => "from each kind's ACPI CPPC highest_perf",
            CapacitySource::CppcNominalPerf => "from each kind's ACPI CPPC nominal_perf",
            CapacitySource::KindBaseFrequency => "from each kind's base frequency",
            CapacitySource::MicroarchTable => {
                "from the Arm core table times each kind's max clock (no cpu_capacity here)"
            }
            CapacitySource::DeclaredSpeed => "from the declared kinds' speeds (@SPEED)",
        }
    }

    fn of(origin: CapacityOrigin) -> CapacitySource {
        use pinsight_model::CapacitySource as Chain;
        match origin {
            CapacityOrigin::Chain(Chain::CpuCapacity) => CapacitySource::CpuCapacity,
            CapacityOrigin::Chain(Chain::CppcHighestPerf) => CapacitySource::CppcHighestPerf,
            CapacityOrigin::Chain(Chain::CppcNominalPerf) => CapacitySource::CppcNominalPerf,
            CapacityOrigin::Chain(Chain::BaseFrequency) => CapacitySource::KindBaseFrequency,
            // Rankings never become capacities (Provenance::capacity_from).
            CapacityOrigin::Chain(_) => CapacitySource::KindMaxFrequency,
            CapacityOrigin::OneKind => CapacitySource::Uniform,
            CapacityOrigin::RankDefault => CapacitySource::KindRankDefault,
            CapacityOrigin::MicroarchTable => CapacitySource::MicroarchTable,
            CapacityOrigin::DeclaredSpeed => CapacitySource::DeclaredSpeed,
        }
    }
}

/// Capacity of each CPU of `cpus` (ascending), and where it came from:
/// the weights file when given, else [`Topology::capacity`] (one number
/// per CPU, the one `topo` prints), else all equal. No SMT sharing: see
/// [`smt_shared`].
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
    let caps: Option<Vec<(usize, f64, CapacityOrigin)>> = list
        .iter()
        .map(|c| topo.capacity(*c).map(|k| (*c, k.value, k.source)))
        .collect();
    if let Some(caps) = caps {
        if let Some(&(_, _, origin)) = caps.first() {
            if caps.iter().all(|x| x.2 == origin) {
                let source = CapacitySource::of(origin);
                return Ok((caps.into_iter().map(|(c, v, _)| (c, v)).collect(), source));
            }
        }
    }
    Ok((
        list.iter().map(|c| (*c, 1.0)).collect(),
        CapacitySource::Uniform,
    ))
}

/// SMT sharing: each CPU of `caps` whose core has `n` > 1 CPUs in `caps`
/// gets `capacity x (1 + smt_yield x (n - 1)) / n`, so the siblings of one
/// core together carry the core's capacity under `n` busy threads
/// ([`Topology::core_capacity`]). Returns the new capacities and the
/// number of cores shared.
pub fn smt_shared(
    topo: &Topology,
    caps: &[(usize, f64)],
    smt_yield: f64,
) -> (Vec<(usize, f64)>, usize) {
    let placed: CpuSet = caps.iter().map(|(c, _)| *c).collect();
    let mut shared = CpuSet::new();
    let out = caps
        .iter()
        .map(|&(c, w)| {
            let n = topo.siblings(c).intersection(&placed).len().max(1);
            if n > 1 {
                shared.insert(c);
            }
            (c, w * (1.0 + smt_yield * (n - 1) as f64) / n as f64)
        })
        .collect();
    let cores: std::collections::BTreeSet<usize> = shared
        .iter()
        .filter_map(|c| topo.cpu(c).and_then(|i| i.core))
        .collect();
    (out, cores.len())
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
