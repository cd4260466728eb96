//! Baseline vs candidate in one call: what `pinsight compare` prints.
//!
//! Both tests are always computed (when they can be) so nothing is hidden;
//! [`recommend_test`] says which p-value to quote, and why.

use crate::{
    is_skewed, mann_whitney, speedup, welch, MannWhitney, Outliers, Speedup, StatsError, Summary,
    Welch,
};
use serde::Serialize;

/// Below this many runs on either side the normality a t-test relies on
/// cannot be judged, so the distribution-free test is preferred.
pub const FEW_RUNS: usize = 10;

/// Significance level used for the `significant` verdict.
pub const ALPHA: f64 = 0.05;

/// Which test's p-value to trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    Welch,
    MannWhitney,
}

/// Welch unless the runs are few, skewed or contain outliers; the reason is returned too.
pub fn recommend_test(baseline: &[f64], candidate: &[f64]) -> (TestKind, &'static str) {
    let few = baseline.len().min(candidate.len()) < FEW_RUNS;
    let skewed = is_skewed(baseline) || is_skewed(candidate);
    let outliers = [baseline, candidate].iter().any(|xs| {
        Outliers::detect(xs)
            .map(|o| !o.iqr_severe.is_empty())
            .unwrap_or(false)
    });
    if few {
        (
            TestKind::MannWhitney,
            "few runs: normality cannot be checked",
        )
    } else if skewed {
        (TestKind::MannWhitney, "skewed runs")
    } else if outliers {
        (TestKind::MannWhitney, "outliers present")
    } else {
        (TestKind::Welch, "runs look symmetric")
    }
}

/// Everything known about baseline vs candidate timings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: Summary,
    pub candidate: Summary,
    pub speedup: Option<Speedup>,
    pub welch: Option<Welch>,
    pub mann_whitney: Option<MannWhitney>,
    /// The test whose p-value is quoted, and why it was chosen.
    pub test: TestKind,
    pub test_reason: &'static str,
    /// p-value of `test` (or of the other test when `test` could not run).
    pub p: Option<f64>,
    /// p < [`ALPHA`].
    pub significant: bool,
    /// Why a statistic is missing, and outlier warnings, as sentences.
    pub notes: Vec<String>,
}

/// Compares two sets of run times (smaller is better).
///
/// Errors only when a side has no usable runs at all (empty or non-finite);
/// everything that merely needs more runs is left `None` with a note.
pub fn compare(baseline: &[f64], candidate: &[f64]) -> Result<Comparison, StatsError> {
    let base_summary = Summary::of(baseline)?;
    let cand_summary = Summary::of(candidate)?;
    let mut notes = Vec::new();
    let speedup = keep(&mut notes, "speedup", speedup(baseline, candidate));
    let welch = keep(&mut notes, "Welch t-test", welch(baseline, candidate));
    let mann_whitney = keep(
        &mut notes,
        "Mann-Whitney U",
        mann_whitney(baseline, candidate),
    );
    for (name, xs) in [("baseline", baseline), ("candidate", candidate)] {
        if let Some(w) = Outliers::detect(xs).ok().and_then(|o| o.warning()) {
            notes.push(format!("{name}: {w}"));
        }
    }
    let (test, test_reason) = recommend_test(baseline, candidate);
    let p_welch = welch.map(|w| w.p);
    let p_mw = mann_whitney.map(|m| m.p);
    let p = match test {
        TestKind::Welch => p_welch.or(p_mw),
        TestKind::MannWhitney => p_mw.or(p_welch),
    };
    Ok(Comparison {
        baseline: base_summary,
        candidate: cand_summary,
        speedup,
        welch,
        mann_whitney,
        test,
        test_reason,
        p,
        significant: p.is_some_and(|p| p < ALPHA),
        notes,
    })
}

/// The value, or `None` with the reason recorded as a note.
fn keep<T>(notes: &mut Vec<String>, what: &str, r: Result<T, StatsError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            notes.push(format!("{what}: {e}"));
            None
        }
    }
}
