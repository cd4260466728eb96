//! The model evaluated on a machine (`pinsight model`): one configuration's
//! prediction and the speedup curves P-first and E-first, fitted or given
//! (Adnan, Array 19 (2023), Figs. 3–8). [`Evaluation`] is `model`'s JSON.

use crate::curve::{speedup_curve, CurvePoint, Order};
use crate::design::predict;
use crate::fit::{Fit, Params};
use crate::model::{ModelKind, Theta};
use crate::{Config, Machine};
use serde::Serialize;

/// Where the machine of an evaluation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MachineSource {
    /// Declared by the caller (a machine spec).
    Declared,
    /// The machine this runs on.
    Live,
    /// A recorded topology.
    Recorded,
    /// The largest P, E and SMT counts the runs used.
    Runs,
    /// The configuration asked about.
    Config,
}

/// The machine of a model's curves when none was declared or read: the
/// largest P, E and SMT counts `runs` used ([`MachineSource::Runs`]), else
/// the one `config` spans ([`MachineSource::Config`]); `None` when there
/// is neither.
pub fn machine_spanned(
    runs: Option<&[crate::Observation]>,
    config: Option<Config>,
) -> Option<(Machine, MachineSource)> {
    if let Some(m) = runs.and_then(Machine::spanned) {
        return Some((m, MachineSource::Runs));
    }
    let run = crate::Observation {
        config: config?,
        time_s: 1.0,
        energy_j: None,
    };
    Machine::spanned(&[run]).map(|m| (m, MachineSource::Config))
}

/// The machine a caller asked for by name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MachineAsked {
    /// A declared machine (a machine spec).
    Declared(Machine),
    /// The machine this runs on.
    Live,
}

/// Where the machine to predict for comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MachineChoice {
    /// A topology to read: this machine's ([`MachineSource::Live`]) or a
    /// recorded one ([`MachineSource::Recorded`]).
    Topology(MachineSource),
    /// A machine without a topology: declared, or spanned by the runs or
    /// the configuration.
    Unplaced(Machine, MachineSource),
}

/// The machine to predict for: the one `asked` for, else a `recorded`
/// topology, else the one the `runs` or the `config` span
/// ([`machine_spanned`]); never this machine unless asked. `None` when
/// nothing names a machine.
pub fn choose_machine(
    asked: Option<MachineAsked>,
    recorded: bool,
    runs: Option<&[crate::Observation]>,
    config: Option<Config>,
) -> Option<MachineChoice> {
    match asked {
        Some(MachineAsked::Declared(m)) => {
            Some(MachineChoice::Unplaced(m, MachineSource::Declared))
        }
        Some(MachineAsked::Live) => Some(MachineChoice::Topology(MachineSource::Live)),
        None if recorded => Some(MachineChoice::Topology(MachineSource::Recorded)),
        None => machine_spanned(runs, config).map(|(m, s)| MachineChoice::Unplaced(m, s)),
    }
}

/// One configuration's prediction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ConfigPrediction {
    pub p: u32,
    pub e: u32,
    pub smt: u32,
    /// Predicted time (s).
    pub predicted_s: f64,
    /// 95% interval (the prediction twice for given parameters).
    pub ci: [f64; 2],
    /// Speedup against one P-core.
    pub vs_1p: f64,
    /// Speedup against one E-core; `None` on a machine of one kind unless
    /// the configuration uses E-cores.
    pub vs_1e: Option<f64>,
    /// The machine allows the configuration.
    pub allowed: bool,
    /// Predicted beyond what the fitted runs measured (false for given
    /// parameters: nothing was measured, nothing extrapolated from it).
    pub extrapolated: bool,
}

/// The speedup curves as cores are added (no SMT siblings).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Curves {
    pub p_first: Vec<CurvePoint>,
    pub e_first: Vec<CurvePoint>,
}

/// The model evaluated on a machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    pub model: ModelKind,
    pub theta: Theta,
    /// The fitted parameters with their intervals; `None` when given.
    pub params: Option<Params>,
    pub machine: Machine,
    pub machine_source: MachineSource,
    /// The configuration asked about, if one was.
    pub config: Option<ConfigPrediction>,
    pub curves: Curves,
}

/// `model` with `theta` (or `fitted`, whose intervals the prediction
/// takes) on `machine`: the curves, and `config`'s prediction.
pub fn evaluate(
    model: ModelKind,
    theta: Theta,
    fitted: Option<&Fit>,
    (machine, machine_source): (Machine, MachineSource),
    config: Option<Config>,
) -> Evaluation {
    Evaluation {
        model,
        theta,
        params: fitted.map(|f| f.params),
        machine,
        machine_source,
        config: config.map(|c| one_config(c, model, &theta, fitted, &machine)),
        curves: Curves {
            p_first: speedup_curve(model, &theta, &machine, Order::PFirst),
            e_first: speedup_curve(model, &theta, &machine, Order::EFirst),
        },
    }
}

/// The prediction for one configuration.
fn one_config(
    c: Config,
    model: ModelKind,
    theta: &Theta,
    fitted: Option<&Fit>,
    machine: &Machine,
) -> ConfigPrediction {
    let (t, ci, extrapolated) = match fitted {
        Some(f) => {
            let p = predict(f, c);
            (p.predicted_s, p.ci, p.extrapolated)
        }
        None => {
            let t = model.time(theta, c);
            (t, [t, t], false)
        }
    };
    let t1p = model.time(theta, Config::new(1, 0, 0));
    let t1e = model.time(theta, Config::new(0, 1, 0));
    ConfigPrediction {
        p: c.p,
        e: c.e,
        smt: c.smt,
        predicted_s: t,
        ci,
        vs_1p: t1p / t,
        vs_1e: (!machine.one_kind() || c.e > 0).then_some(t1e / t),
        allowed: machine.allows(c),
        extrapolated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_parameters_predict_without_an_interval_and_sources_are_lowercase() {
        let theta = Theta::amdahl(10.0, 0.9, 2.0);
        let m: Machine = "2P+2E".parse().unwrap();
        let c = Config::new(2, 2, 0);
        let ev = evaluate(
            ModelKind::Dynamic,
            theta,
            None,
            (m, MachineSource::Runs),
            Some(c),
        );
        let one = ev.config.unwrap();
        assert_eq!(one.ci, [one.predicted_s, one.predicted_s]);
        assert!(one.allowed && !one.extrapolated);
        assert!(one.vs_1p > 1.0);
        assert_eq!(ev.curves.p_first.len(), ev.curves.e_first.len());
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["machine_source"], "runs");
    }

    #[test]
    fn an_undeclared_machine_spans_the_runs_else_the_config() {
        let c = |p, e, smt| Config::new(p, e, smt);
        let runs = [crate::Observation {
            config: c(4, 2, 0),
            time_s: 3.0,
            energy_j: None,
        }];
        let (m, src) = machine_spanned(Some(&runs), Some(c(8, 8, 0))).unwrap();
        assert_eq!((m.p_cores, m.e_cores, src), (4, 2, MachineSource::Runs));
        let (m, src) = machine_spanned(Some(&[]), Some(c(2, 3, 0))).unwrap();
        assert_eq!((m.p_cores, m.e_cores, src), (2, 3, MachineSource::Config));
        assert_eq!(machine_spanned(None, None), None);
    }

    #[test]
    fn a_machine_asked_for_wins_then_a_recorded_one_then_the_runs() {
        let m: Machine = "2P+2E".parse().unwrap();
        let runs = [crate::Observation {
            config: Config::new(4, 0, 0),
            time_s: 3.0,
            energy_j: None,
        }];
        let declared = Some(MachineAsked::Declared(m));
        assert_eq!(
            choose_machine(declared, true, Some(&runs), None),
            Some(MachineChoice::Unplaced(m, MachineSource::Declared))
        );
        let live = Some(MachineAsked::Live);
        assert_eq!(
            choose_machine(live, false, Some(&runs), None),
            Some(MachineChoice::Topology(MachineSource::Live))
        );
        assert_eq!(
            choose_machine(None, true, Some(&runs), None),
            Some(MachineChoice::Topology(MachineSource::Recorded))
        );
        let spanned = choose_machine(None, false, Some(&runs), None);
        assert!(
            matches!(spanned, Some(MachineChoice::Unplaced(m, MachineSource::Runs)) if m.p_cores == 4)
        );
        assert_eq!(choose_machine(None, false, None, None), None);
    }
}
