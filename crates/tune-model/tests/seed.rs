//! The model against a paper's own measurements: Adnan, "Performance
//! evaluation on work-stealing featured parallel programs on asymmetric
//! performance multicore processors", Array 19 (2023), Tables 4–5
//! (tests/data/work-stealing-amp.csv).

use pinsight_tune_model::{
    fit, fit_model, predict, Config, FitOptions, ModelKind, Observation, ParamStatus,
};

/// (table, kind, threads, GHz, time) rows of the paper's tables (comments and
/// the IPC rows skipped).
fn rows() -> Vec<(String, String, u32, String, f64)> {
    let text = include_str!("data/work-stealing-amp.csv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            let time = v.get(4)?.parse().ok()?;
            Some((
                v[0].to_owned(),
                v[1].to_owned(),
                v[2].parse().ok()?,
                v[3].to_owned(),
                time,
            ))
        })
        .filter(|r| r.0 != "ipc")
        .collect()
}

fn row(table: &str, kind: &str, ghz: &str) -> Observation {
    let r = rows()
        .into_iter()
        .find(|r| r.0 == table && r.1 == kind && r.3 == ghz)
        .unwrap_or_else(|| panic!("seed row {table},{kind},{ghz} missing"));
    let config = match kind {
        "P" => Config::new(r.2, 0, 0),
        "E" => Config::new(0, r.2, 0),
        "P4+E8" => Config::new(4, 8, 0),
        other => panic!("kind {other}"),
    };
    Observation {
        config,
        time_s: r.4,
        energy_j: None,
    }
}

const OPTS: FitOptions = FitOptions {
    bootstrap: 0,
    seed: 1,
};

/// At equal clock (2.57 GHz: serial P 3.134 s, serial E 6.619 s, 4P
/// 0.859 s) the fit gives sf = 6.619/3.134 = 2.11.
#[test]
fn equal_clock_serial_times_give_sf_2_11() {
    let runs = vec![
        row("serial", "P", "2.57"),
        row("serial", "E", "2.57"),
        row("parallel", "P", "2.57"),
    ];
    let f = fit(&runs, OPTS).expect("fit");
    assert_eq!(f.params.sf.status, ParamStatus::Fitted);
    let sf = f.params.sf.value;
    assert!((sf - 6.619 / 3.134).abs() < 0.01, "sf {sf}");
    assert!((2.0..2.2).contains(&sf));
}

/// The dynamic model fitted on the single-kind rows predicts the hybrid row
/// (4P + 8E, 0.323 s) within 5%. The parallel rows ran at 3.52 GHz (4P) and
/// 3.11 GHz (8E); the serial rows at the nearest clocks are P at 3.50 GHz
/// (2.454 s) and E at 3.30 GHz (5.030 s, the only E row above 2.57).
#[test]
fn dynamic_fit_on_single_kind_rows_predicts_the_hybrid_row() {
    let runs = vec![
        row("serial", "P", "3.50"),
        row("serial", "E", "3.30"),
        row("parallel", "P", "3.52"),
        row("parallel", "E", "3.11"),
    ];
    let hybrid = row("parallel", "P4+E8", "3.52/3.11");
    let f = fit_model(&runs, ModelKind::Dynamic, false, OPTS).expect("fit");
    let p = predict(&f, hybrid.config);
    let err = (p.predicted_s - hybrid.time_s).abs() / hybrid.time_s;
    eprintln!(
        "seed hybrid: predicted {:.4} s, measured {} s, error {:.1}%; sf {:.3}, f {:.4}",
        p.predicted_s,
        hybrid.time_s,
        100.0 * err,
        f.params.sf.value,
        f.params.f.value
    );
    assert!(err < 0.05, "prediction error {err}");
    // The static split would be far off: it is paced by the E-cores.
    let s = fit_model(&runs, ModelKind::Static, false, OPTS).expect("fit");
    let ps = predict(&s, hybrid.config);
    assert!((ps.predicted_s - hybrid.time_s).abs() / hybrid.time_s > 0.2);
}
