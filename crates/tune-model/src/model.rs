//! The two asymmetric Amdahl models.

use crate::Config;
use serde::Serialize;

/// Which model: how the program shares its parallel work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Work-stealing / dynamic scheduling: every core works until the end,
    /// so cores add their speeds. Adnan, "Performance evaluation on
    /// work-stealing featured parallel programs on asymmetric performance
    /// multicore processors" (Array 19, 2023), eq. (3) `T_P >= sf·T1/(sf·P + E)` and eq. (4)
    /// `Speedup = 1/(1 − f + sf·f/(sf·P + E))` against one P-core:
    ///
    /// `T = T1 · (s·(1 − f) + f·sf/(sf·P' + E') + c·(P + E − 1))`
    ///
    /// with `P' = P + γ·smt_P`, `E' = E + γ·smt_E` (an SMT sibling adds γ of
    /// its core), `s = 1` when a P-core runs the serial part and `s = sf`
    /// when only E-cores are used (eqs. 5–6: against one E-core
    /// `T1_E = sf·T1`), and `c` the contention (see [`Theta::contention`];
    /// 0 unless the fit needs it).
    Dynamic,
    /// Equal static split: every thread gets `f/threads` of the work and the
    /// run ends with the slowest thread (the "unfair work distribution" of
    /// Adnan 2023, §1):
    ///
    /// `T = T1 · (s·(1 − f) + f·slowest/threads + c·(P + E − 1))`
    ///
    /// where a thread's slowness is 1 on a P-core, `sf` on an E-core, times
    /// `2/(1 + γ)` when it shares its core with an SMT sibling. Without SMT,
    /// adding E-cores to P-cores helps only when `E > P·(sf − 1)`.
    Static,
}

impl ModelKind {
    /// Both models, dynamic first (the tie-break order).
    pub const ALL: [ModelKind; 2] = [ModelKind::Dynamic, ModelKind::Static];

    /// Name as in the JSON contract: "dynamic" or "static".
    pub const fn name(self) -> &'static str {
        match self {
            ModelKind::Dynamic => "dynamic",
            ModelKind::Static => "static",
        }
    }

    /// Predicted time of `config` under parameters `th` (see the variants'
    /// formulas). Non-finite or non-positive when `th` is out of range (a
    /// configuration of no core).
    pub fn time(self, th: &Theta, config: Config) -> f64 {
        let b = self.basis(th.sf, th.smt_gain, config);
        th.t1 * ((1.0 - th.f) * b.serial + th.f * b.parallel + th.contention * b.added)
    }

    /// The three terms the time is a sum of, for given sf and γ: with
    /// `A = T1·(1 − f)`, `B = T1·f` and `D = T1·c` the time is
    /// `A·serial + B·parallel + D·added`, linear in (A, B, D). The fit
    /// solves that linear part exactly for each (sf, γ) (variable
    /// projection: Golub & Pereyra, "The differentiation of pseudo-inverses
    /// and nonlinear least squares problems whose variables separate",
    /// SIAM J. Numer. Anal. 10(2), 1973).
    pub fn basis(self, sf: f64, smt_gain: f64, config: Config) -> Basis {
        let (p, e) = (f64::from(config.p), f64::from(config.e));
        let (smt_p, smt_e) = config.smt_split();
        let (smt_p, smt_e) = (f64::from(smt_p), f64::from(smt_e));
        let serial = if config.p > 0 { 1.0 } else { sf };
        let parallel = match self {
            ModelKind::Dynamic => {
                let p_eff = p + smt_gain * smt_p;
                let e_eff = e + smt_gain * smt_e;
                sf / (sf * p_eff + e_eff)
            }
            ModelKind::Static => {
                let shared = 2.0 / (1.0 + smt_gain);
                let mut slowest: f64 = 0.0;
                if p - smt_p > 0.0 {
                    slowest = slowest.max(1.0);
                }
                if smt_p > 0.0 {
                    slowest = slowest.max(shared);
                }
                if e - smt_e > 0.0 {
                    slowest = slowest.max(sf);
                }
                if smt_e > 0.0 {
                    slowest = slowest.max(sf * shared);
                }
                slowest / f64::from(config.threads())
            }
        };
        Basis {
            serial,
            parallel,
            added: (p + e - 1.0).max(0.0),
        }
    }
}

/// The terms of a model's time (see [`ModelKind::basis`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Basis {
    /// Time of the serial part, per second of it on one P-core.
    pub serial: f64,
    /// Time of the parallel part, per second of it on one P-core.
    pub parallel: f64,
    /// Cores added beyond the first (the contention term's factor).
    pub added: f64,
}

/// Parameter values of a model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Theta {
    /// Serial time on one P-core, seconds (on a machine or data of one kind:
    /// on one core).
    pub t1: f64,
    /// Parallel fraction, 0..1.
    pub f: f64,
    /// Speed of a P-core relative to an E-core (1 on one kind).
    pub sf: f64,
    /// SMT gain γ: what an SMT sibling adds, as a fraction of its core, 0..1.
    pub smt_gain: f64,
    /// Contention c: each core beyond the first adds `c·T1` of time, the
    /// coherency term of Gunther's Universal Scalability Law
    /// (`C(N) = N/(1 + σ(N − 1) + κN(N − 1))`, i.e. time
    /// `T1·(σ + (1 − σ)/N + κ(N − 1))`: Gunther, "Guerrilla Capacity
    /// Planning", Springer 2007, ch. 4). Unlike a factor on the whole time
    /// it cannot stand in for a serial fraction: it makes time grow with
    /// cores, a slowdown beyond Amdahl's law.
    pub contention: f64,
}

impl Theta {
    /// The asymmetric Amdahl law alone: serial time `t1`, parallel fraction
    /// `f`, P-core speed `sf`; no SMT gain, no contention.
    pub const fn amdahl(t1: f64, f: f64, sf: f64) -> Theta {
        Theta {
            t1,
            f,
            sf,
            smt_gain: 0.0,
            contention: 0.0,
        }
    }
}
