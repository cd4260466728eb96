//! Issue 37: the 95 % interval of a mean time never goes below zero. With
//! three runs of 0.2 s, 0.25 s and 3.1 s the Student t interval of the mean
//! is −2.94 s … 5.31 s; every export shows the log-t interval instead
//! (12.2 ms … 23.6 s around the geometric mean 537 ms) and names it.

use crate::common;
use pinsight_compare::experiment::{Executor, Outcome, SwitchError};
use pinsight_compare::view as render;
use pinsight_compare::{Advice, Slot};
use pinsight_cpuset::CpuSet;
use pinsight_measure::{RunError, RunRecord};
use pinsight_stats::CiMethod;

/// Arm `a`'s `rep`-th measured run takes `walls[a][rep]` seconds.
struct Table(Vec<Vec<f64>>);

impl Executor for Table {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        let wall = self.0[slot.arm][slot.rep];
        Ok(common::record(wall, 0))
    }
    fn prepare(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    fn set_governor(&mut self, _: Option<&str>) -> Result<(), SwitchError> {
        Ok(())
    }
}

fn report(walls: Vec<Vec<f64>>) -> pinsight_compare::Report {
    let arms = ["os", "compact"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let places = match *id {
                "os" => vec![],
                _ => vec![CpuSet::single(2 + 2 * i), CpuSet::single(3 + 2 * i)],
            };
            common::arm(id, "0-63", places)
        })
        .collect();
    let h = common::header(&["prog"], arms, walls[0].len(), 0, 7);
    let (out, r) = common::run_and_analyse(&h, &mut Table(walls));
    assert!(matches!(out, Outcome::Complete));
    r
}

#[test]
fn few_wide_runs_get_a_positive_interval_in_every_export() {
    let r = report(vec![vec![1.0, 1.1, 0.9], vec![0.2, 0.25, 3.1]]);
    let wall = r.arms[1]
        .metric("wall_s")
        .unwrap()
        .summary
        .as_ref()
        .unwrap();
    let ci = wall.mean_ci.unwrap();
    assert_eq!(wall.mean_ci_method, Some(CiMethod::LogT));
    assert!(ci.lo > 0.0, "{ci:?}");
    assert!((ci.lo - 0.012245976424271065).abs() < 1e-9, "{ci:?}");
    assert!((ci.hi - 23.562844278663864).abs() < 1e-7, "{ci:?}");
    // The old interval, mean ± t·s/√n, for comparison.
    let old = pinsight_stats::mean_interval(&[0.2, 0.25, 3.1], 0.95).unwrap();
    assert!(old.lo < 0.0);

    let text = render::text::render(&r, 200, &Advice::clause);
    let row = text
        .lines()
        .find(|l| l.starts_with("│ 95% CI"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("(log-t around geo. mean 537"),
        "the method and its centre are named: {row}"
    );
    let negative = |t: &str| {
        t.contains('−')
            || t.as_bytes()
                .windows(2)
                .any(|w| w[0] == b'-' && w[1].is_ascii_digit())
    };
    assert!(!negative(row), "nothing negative: {row}");
    assert!(
        text.contains("95% CI: log-t = Student t on the logarithms"),
        "the footnote explains the method: {text}"
    );

    // At 80 columns the longer cells wrap and still fit.
    let narrow = render::text::render(&r, 80, &Advice::clause);
    assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
    assert!(narrow.contains("log-t"), "{narrow}");

    let md = render::markdown::render(&r, &Advice::clause);
    assert!(
        md.contains("| 95% CI |") && md.contains("(log-t around geo. mean "),
        "{md}"
    );
    assert!(md.contains("95% CI: log-t = "), "{md}");
    let html = render::html::render(&r, &Advice::clause);
    assert!(html.contains("<th>95% CI</th>") && html.contains("log-t around geo. mean"));

    let csv = render::csv::render(&r);
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').collect())
        .collect();
    let col = |name: &str| rows[0].iter().position(|h| *h == name).unwrap();
    let (lo, method, gmean) = (
        col("wall_s_ci_lo"),
        col("wall_s_ci_method"),
        col("wall_s_gmean"),
    );
    for row in &rows[1..3] {
        assert!(row[lo].parse::<f64>().unwrap() > 0.0, "{row:?}");
        assert_eq!(row[method], "log-t", "{row:?}");
        assert!(row[gmean].parse::<f64>().unwrap() > 0.0, "{row:?}");
    }

    let json = serde_json::to_value(&r).unwrap();
    let wall_json = json["arms"][1]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "wall_s")
        .unwrap()
        .clone();
    assert_eq!(
        wall_json["summary"]["mean_ci_method"], "log-t",
        "{wall_json}"
    );
    assert!(wall_json["summary"]["mean_ci"]["lo"].as_f64().unwrap() > 0.0);
    assert!(wall_json["summary"]["geometric_mean"].is_number());
}

#[test]
fn the_verdict_is_unchanged_by_the_intervals_of_the_means() {
    // The verdict rests on the Fieller interval of the ratio of mean times
    // and the tests, not on the arms' intervals: a clear 2× gain is still
    // called, with or without wide arms.
    let r = report(vec![
        vec![2.0, 2.02, 1.98, 2.01, 1.99, 2.0],
        vec![1.0, 1.01, 0.99, 1.0, 1.02, 0.98],
    ]);
    assert!(
        r.verdict.headline.starts_with("Use compact"),
        "{}",
        r.verdict.headline
    );
    let v = r.arms[1].time_vs_baseline.as_ref().unwrap();
    assert!(v.significant && v.ratio_ci.unwrap().lo > 1.0);
}
