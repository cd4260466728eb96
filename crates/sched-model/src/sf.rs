//! The speedup-factor estimator: SF = IPS(big) / IPS(small).
//!
//! Instructions per second rather than IPC × frequency, so turbo and
//! frequency drops are in it. Defaults after PMCTrack's IPC-sampling
//! estimator (Saez et al., "PMCTrack", The Computer Journal 60(1), 2017):
//! each kind's IPS is a running average
//! `avg ← avg + 0.35 · (sample − avg)`, an SF is produced only once each
//! kind has at least 5 samples, and it is clamped to `[1, max]`.
//!
//! A phase cache, as the per-thread history table of Saez and
//! Prieto-Matias (APSys '22, §4, "The TD-based method"): each sample
//! carries cheap control metrics measured on the current kind (L1 accesses
//! per 1K instructions and the fraction of branch instructions, which that
//! paper found stable across kinds and under contention), bucketed into a
//! phase key. IPS averages are kept per phase and kind, so a phase's SF is
//! built from samples of that phase only, and while a thread runs on the
//! small kind its current phase's SF can be predicted from what was learnt
//! earlier ([`SfEstimator::predict`]); a phase never seen falls back to
//! the mean of the known phases' SFs (that paper's rule).

use crate::policy::Kind;
use serde::Serialize;
use std::collections::BTreeMap;

/// The estimator's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SfParams {
    /// Weight of a new sample in the running average (PMCTrack: 0.35).
    pub factor: f64,
    /// Samples needed on each kind before an SF is produced (5).
    pub min_samples: u32,
    /// Upper clamp (default 4). The SFs Saez and Prieto-Matias measured on
    /// Alder Lake (APSys '22, §3, Fig. 2) lie in 1.3–2.6 and Thread
    /// Director's largest class is 2.62; published
    /// big.LITTLE pairs (Cortex-A76 vs A55, ...) reach about 3–3.5 for
    /// compute-bound code. Anything above 4 is a window disturbed by an
    /// interrupt or a migration, not a real speedup, and would let one bad
    /// sample monopolise a big core under TO.
    pub max: f64,
    /// Phase key bucket width for L1 accesses per 1K instructions (50).
    pub l1_bucket: f64,
    /// Phase key bucket width for the branch fraction (0.05).
    pub branch_bucket: f64,
}

impl Default for SfParams {
    fn default() -> SfParams {
        SfParams {
            factor: 0.35,
            min_samples: 5,
            max: 4.0,
            l1_bucket: 50.0,
            branch_bucket: 0.05,
        }
    }
}

/// Cheap per-phase control metrics measured on the current kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ControlMetrics {
    /// L1 data-cache accesses per 1000 instructions.
    pub l1_per_kilo_instr: f64,
    /// Branch instructions / instructions, in [0, 1].
    pub branch_fraction: f64,
}

/// One counter window of one thread on one kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SfSample {
    /// The kind the thread ran on during the window.
    pub kind: Kind,
    /// Instructions retired in the window.
    pub instructions: f64,
    /// Seconds the thread ran in the window (`time_running`).
    pub seconds: f64,
    /// The window's control metrics, when measured.
    pub control: Option<ControlMetrics>,
}

/// A phase key: the two control metrics, bucketed.
type PhaseKey = (i64, i64);

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Avg {
    value: f64,
    samples: u32,
}

impl Avg {
    fn add(&mut self, x: f64, factor: f64) {
        if self.samples == 0 {
            self.value = x;
        } else {
            self.value += factor * (x - self.value);
        }
        self.samples = self.samples.saturating_add(1);
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct KindAvgs {
    big: Avg,
    small: Avg,
}

impl KindAvgs {
    fn add(&mut self, kind: Kind, ips: f64, factor: f64) {
        match kind {
            Kind::Big => self.big.add(ips, factor),
            Kind::Small => self.small.add(ips, factor),
        }
    }
    fn sf(&self, p: &SfParams) -> Option<f64> {
        if self.big.samples < p.min_samples || self.small.samples < p.min_samples {
            return None;
        }
        if self.small.value <= 0.0 {
            return Some(p.max);
        }
        Some((self.big.value / self.small.value).clamp(1.0, p.max))
    }
}

/// One thread's SF estimator.
#[derive(Debug, Clone, PartialEq)]
pub struct SfEstimator {
    params: SfParams,
    all: KindAvgs,
    phases: BTreeMap<PhaseKey, KindAvgs>,
    current: Option<PhaseKey>,
}

impl SfEstimator {
    /// An estimator with no samples.
    pub fn new(params: SfParams) -> SfEstimator {
        let mut params = params;
        if !(params.factor > 0.0 && params.factor <= 1.0) {
            params.factor = SfParams::default().factor;
        }
        if !(params.max.is_finite() && params.max >= 1.0) {
            params.max = SfParams::default().max;
        }
        SfEstimator {
            params,
            all: KindAvgs::default(),
            phases: BTreeMap::new(),
            current: None,
        }
    }

    fn key(&self, c: &ControlMetrics) -> Option<PhaseKey> {
        let (a, b) = (c.l1_per_kilo_instr, c.branch_fraction);
        if !(a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0) {
            return None;
        }
        let l1 = (a / self.params.l1_bucket.max(1e-9)).floor();
        let br = (b / self.params.branch_bucket.max(1e-9)).floor();
        Some((l1.min(1e12) as i64, br.min(1e12) as i64))
    }

    /// Adds one window. Windows with no time or no instructions (or
    /// non-finite figures) are ignored.
    pub fn add(&mut self, s: SfSample) {
        if !(s.seconds.is_finite() && s.seconds > 0.0 && s.instructions.is_finite())
            || s.instructions <= 0.0
        {
            return;
        }
        let ips = s.instructions / s.seconds;
        let f = self.params.factor;
        self.all.add(s.kind, ips, f);
        self.current = s.control.as_ref().and_then(|c| self.key(c));
        if let Some(k) = self.current {
            self.phases.entry(k).or_default().add(s.kind, ips, f);
        }
    }

    /// The SF from all windows so far (running averages per kind), once
    /// each kind has [`SfParams::min_samples`]; clamped to `[1, max]`.
    pub fn estimate(&self) -> Option<f64> {
        self.all.sf(&self.params)
    }

    /// The SF for the current phase (the last window's control metrics):
    /// the phase's own SF when both kinds have enough samples of it, else
    /// the mean of the known phases' SFs, else [`SfEstimator::estimate`].
    pub fn predict(&self) -> Option<f64> {
        if let Some(sf) = self
            .current
            .and_then(|k| self.phases.get(&k))
            .and_then(|a| a.sf(&self.params))
        {
            return Some(sf);
        }
        let known: Vec<f64> = self
            .phases
            .values()
            .filter_map(|a| a.sf(&self.params))
            .collect();
        if known.is_empty() {
            self.estimate()
        } else {
            Some(known.iter().sum::<f64>() / known.len() as f64)
        }
    }

    /// How many phases the cache holds.
    pub fn phases(&self) -> usize {
        self.phases.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: Kind, ips: f64, control: Option<(f64, f64)>) -> SfSample {
        SfSample {
            kind,
            instructions: ips,
            seconds: 1.0,
            control: control.map(|(a, b)| ControlMetrics {
                l1_per_kilo_instr: a,
                branch_fraction: b,
            }),
        }
    }

    #[test]
    fn needs_five_samples_on_each_kind() {
        let mut e = SfEstimator::new(SfParams::default());
        for i in 0..5 {
            e.add(sample(Kind::Big, 2e9, None));
            assert_eq!(e.estimate(), None, "after {} big", i + 1);
        }
        for _ in 0..4 {
            e.add(sample(Kind::Small, 1e9, None));
        }
        assert_eq!(e.estimate(), None);
        e.add(sample(Kind::Small, 1e9, None));
        assert_eq!(e.estimate(), Some(2.0));
    }

    #[test]
    fn running_average_factor_and_clamp() {
        let mut e = SfEstimator::new(SfParams::default());
        for _ in 0..5 {
            e.add(sample(Kind::Big, 1e9, None));
            e.add(sample(Kind::Small, 1e9, None));
        }
        assert_eq!(e.estimate(), Some(1.0));
        // One big sample of 3e9: avg = 1e9 + 0.35 * 2e9 = 1.7e9.
        e.add(sample(Kind::Big, 3e9, None));
        assert!((e.estimate().unwrap() - 1.7).abs() < 1e-12);
        // Small faster than big: clamped to 1.
        for _ in 0..20 {
            e.add(sample(Kind::Small, 5e9, None));
        }
        assert_eq!(e.estimate(), Some(1.0));
        // Absurd ratio: clamped to max.
        for _ in 0..20 {
            e.add(sample(Kind::Small, 1.0, None));
        }
        assert_eq!(e.estimate(), Some(4.0));
    }

    #[test]
    fn phase_cache_predicts_on_small() {
        let mut e = SfEstimator::new(SfParams::default());
        let a = Some((300.0, 0.20));
        let b = Some((120.0, 0.05));
        for _ in 0..5 {
            e.add(sample(Kind::Big, 3e9, a));
            e.add(sample(Kind::Small, 1e9, a));
            e.add(sample(Kind::Big, 1.5e9, b));
            e.add(sample(Kind::Small, 1e9, b));
        }
        assert_eq!(e.phases(), 2);
        e.add(sample(Kind::Small, 1e9, a));
        assert!((e.predict().unwrap() - 3.0).abs() < 1e-9);
        e.add(sample(Kind::Small, 1e9, b));
        assert!((e.predict().unwrap() - 1.5).abs() < 1e-9);
        // An unseen phase: mean of the known phases.
        e.add(sample(Kind::Small, 1e9, Some((900.0, 0.5))));
        assert!((e.predict().unwrap() - 2.25).abs() < 1e-9);
    }

    #[test]
    fn ignores_empty_windows() {
        let mut e = SfEstimator::new(SfParams::default());
        e.add(SfSample {
            kind: Kind::Big,
            instructions: 1.0,
            seconds: 0.0,
            control: None,
        });
        e.add(SfSample {
            kind: Kind::Big,
            instructions: f64::NAN,
            seconds: 1.0,
            control: None,
        });
        assert_eq!(e.estimate(), None);
        assert_eq!(e.predict(), None);
    }
}
