//! Speedup as cores are added P-first or E-first (Adnan, "Performance
//! evaluation on work-stealing featured parallel programs on asymmetric
//! performance multicore processors", Array 19 (2023), Figs. 3–8).

use crate::{Config, Machine, ModelKind, Theta};
use serde::Serialize;

/// In which order cores are added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// All P-cores one by one, then the E-cores.
    PFirst,
    /// All E-cores one by one, then the P-cores.
    EFirst,
}

impl Order {
    /// "p_first" or "e_first".
    pub const fn name(self) -> &'static str {
        match self {
            Order::PFirst => "p_first",
            Order::EFirst => "e_first",
        }
    }
}

/// One point of a speedup curve (no SMT siblings).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Cores used.
    pub cores: u32,
    /// The configuration.
    pub config: Config,
    /// Predicted time (s).
    pub time_s: f64,
    /// Speedup against one P-core (eq. 4).
    pub vs_p: f64,
    /// Speedup against one E-core (eq. 6); `None` on a machine of one kind.
    pub vs_e: Option<f64>,
}

/// Speedup of `model` under `theta` as cores of `machine` are added in
/// `order`, one point per core count from 1 to all. On a machine of one
/// kind both orders are the same curve.
pub fn speedup_curve(
    model: ModelKind,
    theta: &Theta,
    machine: &Machine,
    order: Order,
) -> Vec<CurvePoint> {
    let t_p = model.time(theta, Config::new(1, 0, 0));
    let t_e = (!machine.one_kind()).then(|| model.time(theta, Config::new(0, 1, 0)));
    let (first, second) = match order {
        Order::PFirst => (machine.p_cores, machine.e_cores),
        Order::EFirst => (machine.e_cores, machine.p_cores),
    };
    let mut out = Vec::new();
    for n in 1..=first + second {
        let (a, b) = (n.min(first), n.saturating_sub(first));
        let config = match order {
            Order::PFirst => Config::new(a, b, 0),
            Order::EFirst => Config::new(b, a, 0),
        };
        let t = model.time(theta, config);
        out.push(CurvePoint {
            cores: n,
            config,
            time_s: t,
            vs_p: t_p / t,
            vs_e: t_e.map(|e| e / t),
        });
    }
    out
}
