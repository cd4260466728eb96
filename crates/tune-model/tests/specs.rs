//! The text specs of `tune --machine`, `model --config` and `model
//! --params`: generated valid specs round-trip, arbitrary text never panics
//! and errors are one line.

use crate::common::theta;
use pinsight_tune_model::{Config, Machine, ModelKind, ModelSpec, Theta};
use proptest::prelude::*;

#[test]
fn examples_parse() {
    let m: Machine = "6P+8E+smt".parse().unwrap();
    assert_eq!(
        (m.p_cores, m.e_cores, m.smt_per_p_core, m.smt_per_e_core),
        (6, 8, 1, 0)
    );
    let m: Machine = "8p+smt3".parse().unwrap();
    assert_eq!((m.p_cores, m.e_cores, m.smt_per_p_core), (8, 0, 3));
    assert!(m.one_kind());
    let c: Config = "4P+8E+2smt".parse().unwrap();
    assert_eq!(c, Config::new(4, 8, 2));
    assert_eq!("8E".parse::<Config>().unwrap(), Config::new(0, 8, 0));
    let s: ModelSpec = "f=0.95,sf=2,smt_gain=0.3,t1=10,model=static"
        .parse()
        .unwrap();
    assert_eq!(s.model, ModelKind::Static);
    assert_eq!(s.theta, theta(10.0, 0.95, 2.0, 0.3, 0.0));
}

/// Each of `cases` fails to parse as a `T` with an error containing its
/// words and `also` (every error, when empty).
fn rejected<T: std::str::FromStr + std::fmt::Debug>(cases: &[(&str, &str)], also: &str)
where
    T::Err: std::fmt::Display,
{
    for &(spec, want) in cases {
        let e = spec.parse::<T>().unwrap_err().to_string();
        assert!(e.contains(want) && e.contains(also), "{spec}: {e}");
    }
}

#[test]
fn bad_specs_name_the_problem() {
    rejected::<Machine>(
        &[
            ("0P+8E", "at least one P-core"),
            ("6P+6P", "twice"),
            ("6X", "not NP"),
            ("8E", "no P-core count"),
            ("6P+smt9", "1 to 7"),
        ],
        "allowed",
    );
    rejected::<Config>(
        &[
            ("0P", "no core"),
            ("4P+4P", "twice"),
            ("4Q", "not NP"),
            ("", "not NP"),
        ],
        "",
    );
    rejected::<ModelSpec>(
        &[
            ("sf=2", "f (the parallel fraction) is required"),
            ("f=1.5", "out of range"),
            ("f=0.9,model=guided", "not dynamic or static"),
            ("f=0.9,q=1", "unknown key"),
            ("f=0.9,f=0.8", "twice"),
            ("f=nan", "not a number"),
        ],
        "",
    );
}

proptest! {
    #[test]
    fn machine_round_trips(p in 1u32..512, e in 0u32..512, smt in 0u32..8) {
        let m = Machine { p_cores: p, e_cores: e, smt_per_p_core: smt, smt_per_e_core: 0 };
        prop_assert_eq!(m.to_string().parse::<Machine>().unwrap(), m);
    }

    #[test]
    fn config_round_trips(p in 0u32..1000, e in 0u32..1000, smt in 0u32..1000) {
        prop_assume!(p + e > 0);
        let c = Config::new(p, e, smt);
        prop_assert_eq!(c.to_string().parse::<Config>().unwrap(), c);
    }

    #[test]
    fn model_spec_round_trips(f in 0f64..=1.0, sf in 0.01f64..100.0, g in 0f64..=1.0,
                              t1 in 1e-3f64..1e6, c in 0f64..=1.0, st in any::<bool>()) {
        let s = ModelSpec {
            model: if st { ModelKind::Static } else { ModelKind::Dynamic },
            theta: Theta { t1, f, sf, smt_gain: g, contention: c },
        };
        prop_assert_eq!(s.to_string().parse::<ModelSpec>().unwrap(), s);
    }

    #[test]
    fn arbitrary_text_never_panics_and_errors_are_one_line(s in "\\PC{0,40}|[0-9PEpesmtf=.,+]{0,20}") {
        if let Err(e) = s.parse::<Machine>() { prop_assert!(!e.to_string().contains('\n')); }
        if let Err(e) = s.parse::<Config>() { prop_assert!(!e.to_string().contains('\n')); }
        if let Err(e) = s.parse::<ModelSpec>() { prop_assert!(!e.to_string().contains('\n')); }
    }
}
