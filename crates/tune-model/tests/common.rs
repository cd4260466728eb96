//! Set-up shared by the test modules.

use pinsight_tune_model::{Config, Machine, ModelKind, Observation, Theta};

/// A machine of `p` P-cores with `smt` SMT siblings each and `e` E-cores
/// (without siblings).
pub const fn machine(p: u32, e: u32, smt: u32) -> Machine {
    Machine {
        p_cores: p,
        e_cores: e,
        smt_per_p_core: smt,
        smt_per_e_core: 0,
    }
}

/// Runs of `configs` from `model` with `th`: three each, at -1%, 0, +1%.
pub fn simulate(model: ModelKind, th: &Theta, configs: &[Config]) -> Vec<Observation> {
    configs
        .iter()
        .flat_map(|&c| {
            [0.99, 1.0, 1.01].map(|k| Observation {
                config: c,
                time_s: model.time(th, c) * k,
                energy_j: None,
            })
        })
        .collect()
}

/// A model's parameters: one-thread time `t1`, parallel fraction `f`,
/// P-core to E-core speed ratio `sf`, SMT gain and contention.
pub const fn theta(t1: f64, f: f64, sf: f64, smt_gain: f64, contention: f64) -> Theta {
    Theta {
        t1,
        f,
        sf,
        smt_gain,
        contention,
    }
}
