//! The simulated executor (hyperfine's mock-executor idea): runs nothing,
//! returns the time a known model gives for the arm's configuration, with
//! seeded multiplicative noise, and optionally an energy from a power
//! model. The journal is written exactly as for live runs, so `tune`'s
//! whole path (design, fit, validation, resume, budget) is tested
//! deterministically.
//!
//! A run's noise depends only on (seed, slot, configuration), never on
//! the order runs happen in: an interrupted and resumed simulation journals
//! the same numbers as an uninterrupted one.

use pinsight_compare::experiment::{Executor, SwitchError};
use pinsight_compare::Slot;
use pinsight_measure::{EnergyMetrics, Metric, RunError, RunRecord};
use pinsight_tune_model::{Config, ModelKind, Theta};
use std::str::FromStr;

/// Watts drawn by a simulated run: `base + p·P + e·E + smt·SMT`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerModel {
    pub base_w: f64,
    pub p_w: f64,
    pub e_w: f64,
    pub smt_w: f64,
}

impl PowerModel {
    /// Watts drawn while `config` runs.
    pub fn watts(&self, c: Config) -> f64 {
        self.base_w
            + self.p_w * f64::from(c.p)
            + self.e_w * f64::from(c.e)
            + self.smt_w * f64::from(c.smt)
    }
}

/// A simulated machine and program: the ground truth of a simulation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimSpec {
    pub model: ModelKind,
    pub theta: Theta,
    /// Standard deviation of the log-normal noise factor (0: none).
    pub noise: f64,
    pub seed: u64,
    /// Energy per run; `None`: energy unavailable (as without RAPL).
    pub power: Option<PowerModel>,
}

/// Why a simulation spec does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimSpecError {
    #[error("'{item}': expected KEY=VALUE")]
    NotKeyValue { item: String },
    #[error("unknown key '{key}'; known keys: {}", KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("'{key}' given twice")]
    Duplicate { key: String },
    #[error("{key}={value}: {allowed}")]
    BadValue {
        key: String,
        value: String,
        allowed: &'static str,
    },
    #[error("missing {key}=")]
    Missing { key: &'static str },
    #[error("power model incomplete: give watts_base, watts_p and watts_e together")]
    PartialPower,
}

/// Keys of the spec, in the order they are documented.
pub const KEYS: &[&str] = &[
    "model",
    "t1",
    "f",
    "sf",
    "smt_gain",
    "contention",
    "noise",
    "seed",
    "watts_base",
    "watts_p",
    "watts_e",
    "watts_smt",
];

impl FromStr for SimSpec {
    type Err = SimSpecError;

    /// `model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1`
    /// (`model`, `t1` and `f` required; `sf` 1, `smt_gain` 0,
    /// `contention` 0, `noise` 0, `seed` 0 by default; energy with
    /// `watts_base`, `watts_p`, `watts_e` and optionally `watts_smt`).
    fn from_str(text: &str) -> Result<SimSpec, SimSpecError> {
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| SimSpecError::NotKeyValue { item: item.into() })?;
            let (k, v) = (k.trim(), v.trim());
            if !KEYS.contains(&k) {
                return Err(SimSpecError::UnknownKey { key: k.into() });
            }
            if seen.iter().any(|(s, _)| *s == k) {
                return Err(SimSpecError::Duplicate { key: k.into() });
            }
            seen.push((k, v));
        }
        let get = |k: &str| seen.iter().find(|(s, _)| *s == k).map(|(_, v)| *v);
        let bad = |key: &str, value: &str, allowed| SimSpecError::BadValue {
            key: key.into(),
            value: value.into(),
            allowed,
        };
        let num = |key: &'static str,
                   default: Option<f64>,
                   ok: fn(f64) -> bool,
                   allowed: &'static str|
         -> Result<f64, SimSpecError> {
            match get(key) {
                None => default.ok_or(SimSpecError::Missing { key }),
                Some(v) => match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && ok(x) => Ok(x),
                    _ => Err(bad(key, v, allowed)),
                },
            }
        };
        let model = match get("model") {
            None => return Err(SimSpecError::Missing { key: "model" }),
            Some("dynamic") => ModelKind::Dynamic,
            Some("static") => ModelKind::Static,
            Some(v) => return Err(bad("model", v, "dynamic or static")),
        };
        let theta = Theta {
            t1: num(
                "t1",
                None,
                |x| (1e-6..=1e9).contains(&x),
                "seconds, 1e-6..1e9",
            )?,
            f: num("f", None, |x| (0.0..=1.0).contains(&x), "a fraction 0..1")?,
            sf: num(
                "sf",
                Some(1.0),
                |x| (1.0..=1000.0).contains(&x),
                "a speed factor 1..1000",
            )?,
            smt_gain: num("smt_gain", Some(0.0), |x| (0.0..=1.0).contains(&x), "0..1")?,
            contention: num(
                "contention",
                Some(0.0),
                |x| (0.0..=10.0).contains(&x),
                "0..10",
            )?,
        };
        let noise = num("noise", Some(0.0), |x| (0.0..=1.0).contains(&x), "0..1")?;
        let seed = match get("seed") {
            None => 0,
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| bad("seed", v, "an integer >= 0"))?,
        };
        let watts = |k| num(k, Some(-1.0), |x| (0.0..=1e6).contains(&x), "watts, 0..1e6");
        let (base_w, p_w, e_w, smt_w) = (
            watts("watts_base")?,
            watts("watts_p")?,
            watts("watts_e")?,
            watts("watts_smt")?,
        );
        let power = match (base_w >= 0.0, p_w >= 0.0, e_w >= 0.0) {
            (true, true, true) => Some(PowerModel {
                base_w,
                p_w,
                e_w,
                smt_w: smt_w.max(0.0),
            }),
            (false, false, false) if smt_w < 0.0 => None,
            _ => return Err(SimSpecError::PartialPower),
        };
        Ok(SimSpec {
            model,
            theta,
            noise,
            seed,
            power,
        })
    }
}

impl std::fmt::Display for SimSpec {
    /// The spec in the syntax [`SimSpec::from_str`] reads, every key given
    /// (numbers in Rust's shortest round-trip form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.theta;
        write!(
            f,
            "model={},t1={},f={},sf={},smt_gain={},contention={},noise={},seed={}",
            self.model.name(),
            t.t1,
            t.f,
            t.sf,
            t.smt_gain,
            t.contention,
            self.noise,
            self.seed
        )?;
        if let Some(p) = &self.power {
            write!(
                f,
                ",watts_base={},watts_p={},watts_e={},watts_smt={}",
                p.base_w, p.p_w, p.e_w, p.smt_w
            )?;
        }
        Ok(())
    }
}

/// Why simulated runs have no energy.
pub const NO_POWER_MODEL: &str = "simulated run without a power model";

/// Runs nothing; see the module documentation.
#[derive(Clone, Debug)]
pub struct SimExecutor {
    spec: SimSpec,
    /// The configuration of every arm, in header order.
    arms: Vec<Config>,
}

impl SimExecutor {
    /// Simulates `spec` for arms running `arms` (header order).
    pub fn new(spec: SimSpec, arms: Vec<Config>) -> SimExecutor {
        SimExecutor { spec, arms }
    }

    /// The noise factor of run `slot` of `config`.
    fn factor(&self, slot: usize, c: Config) -> f64 {
        if self.spec.noise == 0.0 {
            return 1.0;
        }
        let key = self.spec.seed
            ^ (slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (u64::from(c.p) << 40 | u64::from(c.e) << 20 | u64::from(c.smt));
        let a = splitmix(key);
        let b = splitmix(a);
        // Box–Muller from two uniforms in (0, 1].
        let u1 = ((a >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (self.spec.noise * z).exp()
    }

    /// The record of run `slot` of `config`.
    pub fn record(&self, slot: usize, c: Config) -> RunRecord {
        let factor = self.factor(slot, c);
        let wall = self.spec.model.time(&self.spec.theta, c) * factor;
        let energy = match self.spec.power {
            Some(p) => EnergyMetrics {
                energy_pkg_j: Metric::value(p.watts(c) * wall),
                ..EnergyMetrics::unavailable(NO_POWER_MODEL)
            },
            None => EnergyMetrics::unavailable(NO_POWER_MODEL),
        };
        RunRecord {
            user_s: wall * f64::from(c.threads()),
            energy,
            ..RunRecord::exited_ok(wall, "simulated run")
        }
    }
}

/// SplitMix64's output function: a keyed hash of one word. Hand-written
/// (five lines) because a run's noise must be a function of its key, not
/// a position in a stream a generator crate would give.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Executor for SimExecutor {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        Ok(self.record(slot.index, self.arms[slot.arm]))
    }

    fn prepare(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    fn set_governor(&mut self, _: Option<&str>) -> Result<(), SwitchError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_spec_parses() {
        let s: SimSpec = "model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1"
            .parse()
            .unwrap();
        assert_eq!(s.model, ModelKind::Static);
        assert_eq!(
            (s.theta.t1, s.theta.f, s.theta.sf, s.theta.smt_gain),
            (10.0, 0.95, 2.0, 0.3)
        );
        assert_eq!((s.noise, s.seed, s.power), (0.02, 1, None));
        let e: SimSpec = "model=dynamic,t1=1,f=0.5,watts_base=5,watts_p=10,watts_e=3"
            .parse()
            .unwrap();
        assert_eq!(e.theta.sf, 1.0);
        assert_eq!(e.power.unwrap().watts(Config::new(1, 2, 0)), 21.0);
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let err = |s: &str| s.parse::<SimSpec>().unwrap_err().to_string();
        assert_eq!(err("t1=1,f=0.5"), "missing model=");
        assert_eq!(err("model=x,t1=1,f=1"), "model=x: dynamic or static");
        assert_eq!(err("model=static,t1=-1,f=1"), "t1=-1: seconds, 1e-6..1e9");
        assert_eq!(
            err("model=static,t1=1e300,f=1"),
            "t1=1e300: seconds, 1e-6..1e9"
        );
        assert_eq!(err("model=static,t1=1,f=1.5"), "f=1.5: a fraction 0..1");
        assert_eq!(err("model=static,t1=1,f=1,f=1"), "'f' given twice");
        assert_eq!(err("model=static,t1"), "'t1': expected KEY=VALUE");
        assert!(err("model=static,t1=1,f=1,bogus=2").starts_with("unknown key 'bogus'"));
        assert_eq!(
            err("model=static,t1=1,f=1,watts_p=3"),
            "power model incomplete: give watts_base, watts_p and watts_e together"
        );
        assert_eq!(
            err("model=static,t1=1,f=1,seed=-1"),
            "seed=-1: an integer >= 0"
        );
    }

    #[test]
    fn noise_depends_on_the_run_not_the_order() {
        let spec: SimSpec = "model=dynamic,t1=2,f=0.9,noise=0.05,seed=3"
            .parse()
            .unwrap();
        let c = Config::new(2, 0, 0);
        let a = SimExecutor::new(spec, vec![c]);
        let b = SimExecutor::new(spec, vec![c]);
        let later: Vec<f64> = (0..10).rev().map(|i| b.record(i, c).wall_s).collect();
        let first: Vec<f64> = (0..10).map(|i| a.record(i, c).wall_s).collect();
        let mut later = later;
        later.reverse();
        assert_eq!(first, later);
        assert!(first.windows(2).any(|w| w[0] != w[1]), "noise varies");
        let exact = ModelKind::Dynamic.time(&spec.theta, c);
        assert!(first.iter().all(|t| (t / exact).ln().abs() < 0.05 * 6.0));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text: a spec or a typed error, never a panic; a parsed
        /// spec always simulates positive, finite times.
        #[test]
        fn any_text_parses_or_says_why(text in "(model=(static|dynamic),)?(t1=[0-9e.-]{1,6},)?(f=[0-9.]{1,4},)?[a-z_=0-9.e,-]{0,40}") {
            match text.parse::<SimSpec>() {
                Ok(s) => for c in [Config::new(1, 0, 0), Config::new(0, 1, 0), Config::new(6, 8, 6)] {
                    let t = s.model.time(&s.theta, c);
                    prop_assert!(t.is_finite() && t > 0.0, "{s}: {c} {t}");
                },
                Err(e) => prop_assert!(!e.to_string().contains('\n')),
            }
        }

        #[test]
        fn printed_specs_parse_back(t1 in 0.001f64..100.0, f in 0.0f64..=1.0, gain in 0.0f64..=1.0,
                                    c in 0.0f64..0.2, noise in 0.0f64..=1.0, seed: u64,
                                    power in proptest::option::of((0.0f64..50.0, 0.0f64..20.0, 0.0f64..10.0, 0.0f64..5.0))) {
            let spec = SimSpec {
                model: ModelKind::Static,
                theta: Theta { t1, f, sf: 1.0 + gain, smt_gain: gain, contention: c },
                noise,
                seed,
                power: power.map(|(base_w, p_w, e_w, smt_w)| PowerModel { base_w, p_w, e_w, smt_w }),
            };
            prop_assert_eq!(spec.to_string().parse::<SimSpec>(), Ok(spec));
        }

        #[test]
        fn valid_specs_round_trip(t1 in 0.001f64..100.0, f in 0.0f64..=1.0, sf in 1.0f64..4.0, seed: u64) {
            let text = format!("model=dynamic,t1={t1},f={f},sf={sf},seed={seed}");
            let s: SimSpec = text.parse().unwrap();
            prop_assert_eq!((s.theta.t1, s.theta.f, s.theta.sf, s.seed), (t1, f, sf, seed));
        }
    }
}
