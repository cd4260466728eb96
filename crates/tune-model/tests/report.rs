//! `analyse`: the report's recommendation, evidence, validation and JSON
//! shape on generated static and dynamic programs.

use crate::common::{self, machine};
use pinsight_tune_model::{
    analyse, design, speedup_curve, Change, Config, FitOptions, Goal, Machine, ModelKind,
    Observation, Order, Theta,
};

const MACHINE: Machine = machine(6, 8, 1);

fn theta(f: f64) -> Theta {
    common::theta(20.0, f, 2.0, 0.15, 0.0)
}

fn noise(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

fn runs(model: ModelKind, th: &Theta, configs: &[Config], seed: u64) -> Vec<Observation> {
    let mut s = seed;
    configs
        .iter()
        .flat_map(|c| std::iter::repeat_n(*c, 3))
        .map(|c| Observation {
            config: c,
            time_s: model.time(th, c) * (1.0 + 0.01 * noise(&mut s)),
            energy_j: None,
        })
        .collect()
}

fn opts() -> FitOptions {
    FitOptions {
        bootstrap: 100,
        seed: 3,
    }
}

/// A static split on 6P+8E: adding E-cores helps only when E > P·(sf − 1);
/// with sf 3, 8 < 12, so the P-cores alone win (with their SMT siblings,
/// where adding the E-cores still costs ~3%).
#[test]
fn static_program_recommends_p_cores_and_says_e_cores_cost() {
    let th = Theta {
        sf: 3.0,
        ..theta(0.99)
    };
    let d = runs(ModelKind::Static, &th, &design(&MACHINE), 1);
    let r = analyse(&d, &[], &MACHINE, Goal::Time, opts()).expect("analyse");
    assert_eq!(r.model, ModelKind::Static);
    assert_eq!(r.recommended.e, 0, "{:?}", r.recommended);
    assert_eq!(r.recommended.p, 6);
    let ok = r.evidence.other_kind.expect("other kind");
    assert_eq!(ok.change, Change::AddE);
    assert!(ok.cost > 0.02, "adding E-cores should cost: {}", ok.cost);
    assert!(r.gap >= 0.0);
    assert_eq!(r.predictions.len(), MACHINE.configs().len());
    assert!(r.recommended.measured_s.is_some(), "6P was a design run");
    assert!(!r.one_kind);
}

#[test]
fn dynamic_program_uses_e_cores_and_validation_is_out_of_sample() {
    let th = theta(0.99);
    let d = runs(ModelKind::Dynamic, &th, &design(&MACHINE), 2);
    let first = analyse(&d, &[], &MACHINE, Goal::Time, opts()).expect("analyse");
    assert_eq!(first.model, ModelKind::Dynamic);
    assert!(first.recommended.e > 0 && first.recommended.p > 0);
    let ok = first.evidence.other_kind.expect("other kind");
    assert_eq!(ok.change, Change::DropE);
    assert!(ok.cost > 0.1, "dropping E-cores should cost: {}", ok.cost);
    // Validation: two configurations not in the design.
    let v_cfg = [Config::new(5, 8, 0), Config::new(6, 7, 3)];
    let v = runs(ModelKind::Dynamic, &th, &v_cfg, 9);
    let r = analyse(&d, &v, &MACHINE, Goal::Time, opts()).expect("analyse");
    assert_eq!(r.validation.len(), 2);
    for row in &r.validation {
        assert!(row.error.abs() < 0.05, "{row:?}");
        assert_eq!(row.runs, 3);
    }
    assert_eq!(r.design_runs, d.len());
    assert_eq!(r.validation_runs, 6);
    assert_eq!(r.fit.runs, d.len() + 6);
}

#[test]
fn runs_outside_the_machine_are_listed_and_energy_goal_is_refused_early() {
    let th = theta(0.95);
    let mut d = runs(ModelKind::Dynamic, &th, &design(&MACHINE), 4);
    d.extend(runs(ModelKind::Dynamic, &th, &[Config::new(8, 0, 0)], 5));
    let r = analyse(&d, &[], &MACHINE, Goal::Time, opts()).expect("analyse");
    assert_eq!(r.outside_machine, vec![Config::new(8, 0, 0)]);
    let e = analyse(&d, &[], &MACHINE, Goal::Energy, opts()).unwrap_err();
    assert!(e.to_string().contains("energy_j"), "{e}");
}

#[test]
fn one_kind_machine_reduces_to_threads_and_smt() {
    let m = machine(8, 0, 1);
    let th = Theta {
        contention: 0.02,
        ..theta(0.9)
    };
    let d = runs(ModelKind::Dynamic, &th, &design(&m), 6);
    let r = analyse(&d, &[], &m, Goal::Time, opts()).expect("analyse");
    assert!(r.one_kind);
    assert!(r.evidence.other_kind.is_none());
    assert_eq!(r.recommended.e, 0);
    assert!(r.evidence.smt.is_some());
}

#[test]
fn json_carries_the_contract_fields() {
    let th = theta(0.99);
    let d = runs(ModelKind::Dynamic, &th, &design(&MACHINE), 2);
    let r = analyse(&d, &[], &MACHINE, Goal::Time, opts()).expect("analyse");
    let j = serde_json::to_value(&r).unwrap();
    assert!(j["model"] == "dynamic" || j["model"] == "static");
    for p in ["f", "sf", "smt_gain", "t1", "contention"] {
        assert!(j["params"][p]["value"].is_f64(), "{p}");
        assert_eq!(j["params"][p]["ci"].as_array().unwrap().len(), 2, "{p}");
        assert!(j["params"][p]["status"].is_string(), "{p}");
    }
    for k in ["p", "e", "smt", "threads"] {
        assert!(j["recommended"][k].is_u64(), "{k}");
    }
    assert!(j["recommended"]["predicted_s"].is_f64());
    assert_eq!(j["goal"], "time");
    let preds = j["predictions"].as_array().unwrap();
    assert_eq!(preds.len(), MACHINE.configs().len());
    assert!(preds[0]["predicted_s"].is_f64() && preds[0]["ci"].is_array());
    assert!(j["fit"]["candidates"].as_array().unwrap().len() >= 2);
    assert!(j["one_kind"].is_boolean());
}

/// Eq. 4 at the last point of the P-first curve; E-first against one
/// E-core is superlinear in cores when sf > 1 (15x on 4P+8E: Adnan 2023,
/// Figs. 7–8).
#[test]
fn speedup_curves_follow_the_seed_equations() {
    let m = machine(4, 8, 0);
    let th = common::theta(1.0, 0.999, 2.0, 0.0, 0.0);
    let pf = speedup_curve(ModelKind::Dynamic, &th, &m, Order::PFirst);
    let ef = speedup_curve(ModelKind::Dynamic, &th, &m, Order::EFirst);
    assert_eq!(pf.len(), 12);
    assert_eq!(pf[3].config, Config::new(4, 0, 0));
    assert_eq!(ef[7].config, Config::new(0, 8, 0));
    let (f, sf) = (th.f, th.sf);
    let eq4 = 1.0 / (1.0 - f + sf * f / (sf * 4.0 + 8.0));
    assert!((pf[11].vs_p - eq4).abs() < 1e-9);
    let last_e = ef[11].vs_e.unwrap();
    assert!(last_e > 12.0 && last_e < 17.0, "{last_e}");
    assert!((pf[11].time_s - ef[11].time_s).abs() < 1e-12);
}
