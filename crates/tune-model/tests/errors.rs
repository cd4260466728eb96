//! Unusable data: typed errors naming what is missing.

use pinsight_tune_model::{fit, parse_runs, Config, FitError, FitOptions, Observation, RunsError};

fn obs(p: u32, e: u32, smt: u32, t: f64) -> Observation {
    Observation {
        config: Config::new(p, e, smt),
        time_s: t,
        energy_j: None,
    }
}

#[test]
fn single_configuration_is_not_identifiable() {
    let runs = vec![obs(4, 0, 0, 1.0), obs(4, 0, 0, 1.1), obs(4, 0, 0, 0.9)];
    let err = fit(&runs, FitOptions::default()).unwrap_err();
    match &err {
        FitError::NotIdentifiable {
            configs, needed, ..
        } => {
            assert_eq!(*configs, 1);
            assert_eq!(*needed, 2);
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("1 configuration") && msg.contains("T1, f"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn too_few_configurations_for_two_kinds_names_sf() {
    // 1P and 1E: T1, f, sf need 3 configurations.
    let err = fit(
        &[obs(1, 0, 0, 2.0), obs(0, 1, 0, 4.0)],
        FitOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("sf"), "{err}");
}

#[test]
fn negative_time_is_refused_by_fit_and_parser() {
    let err = fit(
        &[obs(1, 0, 0, 2.0), obs(2, 0, 0, -1.0)],
        FitOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, FitError::NonPositiveTime { index: 1, .. }),
        "{err:?}"
    );
    let err = parse_runs("p,e,smt,time_s\n1,0,0,2.0\n2,0,0,-1\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "runs CSV line 3, column time_s: '-1' is not a positive number of seconds"
    );
}

#[test]
fn missing_column_is_named() {
    let err = parse_runs("p,e,time_s\n1,0,2.0\n").unwrap_err();
    assert_eq!(err, RunsError::MissingColumn { column: "smt" });
    assert!(err.to_string().contains("'smt'"));
}

#[test]
fn parser_errors_name_row_and_column() {
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("p,e,smt,time_s\n", "no run"),
        ("p,e,smt,time_s,cores\n1,0,0,1\n", "'cores' is unknown"),
        (
            "p,e,smt,time_s\n1,x,0,1\n",
            "line 2, column e: 'x' is not a non-negative integer",
        ),
        ("p,e,smt,time_s\n0,0,0,1\n", "line 2: p + e is 0"),
        (
            "p,e,smt,time_s\n1,0,0\n",
            "line 2: 3 fields, the header has 4",
        ),
        ("p,e,smt,time_s\n1,0,0,0\n", "column time_s: '0'"),
        ("p,e,smt,time_s,energy_j\n1,0,0,1,-3\n", "column energy_j"),
    ];
    for (text, want) in cases {
        let msg = parse_runs(text).unwrap_err().to_string();
        assert!(msg.contains(want), "{text:?}: {msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }
}

#[test]
fn parser_accepts_comments_any_order_and_optional_energy() {
    let runs = parse_runs(
        "# measured elsewhere\ntime_s, smt, e, p, energy_j\n2.5, 0, 0, 1, 30\n# x\n1.0,1,8,4,\n",
    )
    .expect("parse");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].config, Config::new(1, 0, 0));
    assert_eq!(runs[0].energy_j, Some(30.0));
    assert_eq!(runs[1].config, Config::new(4, 8, 1));
    assert_eq!(runs[1].time_s, 1.0);
    assert_eq!(runs[1].energy_j, None);
}
