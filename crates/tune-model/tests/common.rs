//! Set-up shared by the test modules.

use pinsight_tune_model::{Config, Machine, ModelKind, Observation, Theta};
use rand_core::Rng;
use rand_xorshift::XorShiftRng;

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

/// Three runs of each of `configs` from `model` with `th`, each time
/// multiplied by exp(`noise` × a standard normal draw from `rng`).
pub fn noisy(
    model: ModelKind,
    th: &Theta,
    configs: &[Config],
    noise: f64,
    rng: &mut XorShiftRng,
) -> Vec<Observation> {
    configs
        .iter()
        .flat_map(|c| std::iter::repeat_n(*c, 3))
        .map(|c| Observation {
            config: c,
            time_s: model.time(th, c) * (noise * gauss(rng)).exp(),
            energy_j: None,
        })
        .collect()
}

/// A uniform draw from [0, 1) (53 bits of `rng`).
pub fn uniform(rng: &mut XorShiftRng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A standard normal draw (Box–Muller).
pub fn gauss(rng: &mut XorShiftRng) -> f64 {
    let u = uniform(rng).max(1e-300);
    let v = uniform(rng);
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
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
