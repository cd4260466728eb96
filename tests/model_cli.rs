//! `pinsight model`: a given or fitted model for one configuration, the
//! speedup curves P-first vs E-first as a table, SVG and JSON, and bad
//! specs as one-line usage errors.

use crate::common_cli;

use crate::common_cmd::{
    assert_exit, assert_fits_80, assert_holds, assert_usage_error, on_fsroot, words,
};
use common_cli::*;

/// `pinsight model ARGS...` on a terminal of 80 columns.
fn model_call(args: &[&str]) -> Call {
    let mut argv = vec!["model"];
    argv.extend_from_slice(args);
    pinsight(&argv).env("COLUMNS", "80")
}

/// The same, which must succeed.
fn model(args: &[&str]) -> Out {
    model_call(args).ok()
}

/// Adnan 2023's 4P+8E (Array 19) with f 0.99 and sf 2 (eqs. 4 and 6): 7.48x against one
/// P-core and 14.95x against one E-core with every core.
#[test]
fn given_params_follow_the_seed_equations() {
    let j = model(&words(
        "--params f=0.99,sf=2 --machine 4P+8E --config 4P+8E --json",
    ))
    .json();
    let (f, sf) = (0.99, 2.0);
    let eq4 = 1.0 / (1.0 - f + sf * f / (sf * 4.0 + 8.0));
    let eq6 = 1.0 / ((1.0 - f) / sf + f / (sf * 4.0 + 8.0));
    assert!((j["config"]["vs_1p"].as_f64().unwrap() - eq4).abs() < 1e-9);
    assert!((j["config"]["vs_1e"].as_f64().unwrap() - eq6).abs() < 1e-9);
    let pf = j["curves"]["p_first"].as_array().unwrap();
    let ef = j["curves"]["e_first"].as_array().unwrap();
    assert_eq!((pf.len(), ef.len()), (12, 12));
    assert_eq!(pf[3]["config"]["p"], 4);
    assert_eq!(ef[7]["config"]["e"], 8);
    assert_eq!(j["model"], "dynamic");
}

#[test]
fn table_fits_80_columns_and_svg_has_two_curves() {
    let o = model_call(&words(
        "--params f=0.99,sf=2 --machine 6P+8E+smt --export-svg curve.svg",
    ))
    .writes("curve.svg")
    .ok();
    assert_fits_80(&o.stdout);
    assert!(o.stdout.contains("P-first") && o.stdout.contains("E-first"));
    let rows = o
        .stdout
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 7 && w[0].parse::<u32>().is_ok()
        })
        .count();
    assert_eq!(rows, 14, "{}", o.stdout);
    let svg = std::fs::read_to_string(o.path("curve.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    assert_eq!(svg.matches("<path ").count(), 2);
    assert!(svg.contains("cores used") && svg.contains("speedup vs 1 P-core"));
}

#[test]
fn fitted_from_runs_gives_intervals() {
    let j = model(&[
        "--from",
        &tune_data("seed-runs.csv"),
        "--machine",
        "4P+8E",
        "--config",
        "4P+8E+0smt",
        "--json",
    ])
    .json();
    let ci = j["config"]["ci"].as_array().unwrap();
    let t = j["config"]["predicted_s"].as_f64().unwrap();
    assert!(ci[0].as_f64().unwrap() < t && t < ci[1].as_f64().unwrap());
    assert!((t / 0.323 - 1.0).abs() < 0.05);
    assert_eq!(j["params"]["sf"]["status"], "fitted");
}

#[test]
fn one_kind_recorded_machine_has_one_curve() {
    let root = hwloc_fixture("16em64t-4s2c2t");
    let j = ok(&on_fsroot(
        root.to_str().unwrap(),
        "model --params f=0.9 --json",
    ))
    .json();
    assert_eq!(j["machine"]["e_cores"], 0);
    assert!(j["curves"]["p_first"][0]["vs_e"].is_null());
}

#[test]
fn bad_specs_exit_2_with_one_line() {
    for (args, needle) in [
        (
            &["model", "--params", "sf=2", "--machine", "4P"][..],
            "f (the parallel fraction) is required",
        ),
        (
            &["model", "--params", "f=2", "--machine", "4P"],
            "out of range",
        ),
        (
            &[
                "model",
                "--params",
                "f=0.9",
                "--machine",
                "4P",
                "--config",
                "4Q",
            ],
            "configuration '4Q'",
        ),
        (
            &["model", "--params", "f=0.9", "--machine", "0P"],
            "at least one P-core",
        ),
        (&["model", "--machine", "4P"], "--from"),
    ] {
        let o = pinsight(args).run();
        assert_usage_error(&o);
        assert_holds(&o, &o.stderr, &[needle]);
    }
}

/// Without --machine, the machine comes from the --config (or the runs),
/// never from this machine: the curves of 4P+8E run to 12 cores on a
/// 2-CPU VM, and the output says where the machine came from.
#[test]
fn the_machine_comes_from_the_config_or_the_runs_not_this_machine() {
    let j = model(&["--params", "f=0.99,sf=2", "--config", "4P+8E", "--json"]).json();
    assert_eq!(j["machine_source"], "config");
    assert_eq!(j["curves"]["p_first"].as_array().unwrap().len(), 12);
    let o = model_call(&words(
        "--params f=0.99,sf=2 --config 4P+8E --export-svg c.svg",
    ))
    .writes("c.svg")
    .ok();
    assert!(o.stdout.contains("4P+8E (the --config's"), "{}", o.stdout);
    let svg = std::fs::read_to_string(o.path("c.svg")).unwrap();
    assert!(svg.contains("4P+8E"), "the title names the machine");
    let r = model(&["--from", &tune_data("seed-runs.csv"), "--json"]).json();
    assert_eq!(r["machine_source"], "runs");
    assert_eq!(
        (
            r["machine"]["p_cores"].as_u64(),
            r["machine"]["e_cores"].as_u64()
        ),
        (Some(4), Some(8))
    );
    let o = pinsight(&words("model --params f=0.9")).run();
    assert_exit(&o, 2, &["--machine live"]);
}
