//! The SMT yield: what a second busy hardware thread adds to a core's
//! throughput. `balance` shares a core's capacity among its busy
//! siblings as `1 + yield x (n - 1)`; its default yield (0.25) is a round
//! value below the "up to 30%" Intel reports for Hyper-Threading (Marr et
//! al., Intel Technology Journal 6(1), 2002). Measured here on one core:
//! the integer kernel pinned to one sibling alone, then to two siblings
//! at once, alternating, over equal windows; the yield is the pair's
//! total over the single thread's, minus one (median of the rounds).

use crate::kernels::int_chunk;
use crate::pin::set_affinity;
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A measured SMT yield, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SmtYield {
    /// The yield, clamped to [0, 1]; `None` when unavailable.
    pub value: Option<f64>,
    /// The two siblings measured (`"0,1"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Why there is no value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The first core among `cpus` with two siblings in `cpus`.
pub fn sibling_pair(topo: &Topology, cpus: &CpuSet) -> Option<(usize, usize)> {
    cpus.iter().find_map(|c| {
        let s: Vec<usize> = topo.siblings(c).intersection(cpus).iter().collect();
        (s.len() >= 2).then(|| (s[0], s[1]))
    })
}

/// Measures the SMT yield on the first core of `cpus` with two usable
/// siblings, `rounds` rounds of `window` alone then `window` in pairs.
pub fn measure_smt_yield(
    topo: &Topology,
    cpus: &CpuSet,
    window: Duration,
    rounds: usize,
) -> SmtYield {
    let Some((a, b)) = sibling_pair(topo, cpus) else {
        return SmtYield {
            value: None,
            cpus: None,
            unavailable: Some("no SMT siblings among the measured CPUs".into()),
        };
    };
    let mut ratios = Vec::new();
    for _ in 0..rounds.max(1) {
        let alone = run_on(&[a], window);
        let pair = run_on(&[a, b], window);
        if alone > 0.0 {
            ratios.push(pair / alone - 1.0);
        }
    }
    if ratios.is_empty() {
        return SmtYield {
            value: None,
            cpus: Some(format!("{a},{b}")),
            unavailable: Some("the measuring threads could not be pinned".into()),
        };
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    SmtYield {
        value: Some(median.clamp(0.0, 1.0)),
        cpus: Some(format!("{a},{b}")),
        unavailable: None,
    }
}

/// Chunks per second that threads pinned one on each of `cpus` complete
/// together in `window` (0 when a pin fails).
fn run_on(cpus: &[usize], window: Duration) -> f64 {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let counts: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&c| {
                let stop = &stop;
                s.spawn(move || {
                    if set_affinity(&CpuSet::single(c)).is_err() {
                        return 0;
                    }
                    let mut n = 0u64;
                    let mut seed = c as u64 + 1;
                    while !stop.load(Ordering::Relaxed) {
                        seed = std::hint::black_box(int_chunk(seed));
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(window);
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap_or(0)).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    if counts.contains(&0) || secs <= 0.0 {
        return 0.0;
    }
    counts.iter().sum::<u64>() as f64 / secs
}

/// An SMT yield read back from a text ([`smt_yield_in`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FoundYield {
    /// The number found (its range is the reader's to check).
    pub value: f64,
    /// Whether it came from a JSON document (else the text was the number).
    pub in_json: bool,
}

/// Why a text holds no SMT yield.
#[derive(Debug, thiserror::Error)]
pub enum SmtYieldTextError {
    /// Neither a number nor JSON.
    #[error("neither a number nor JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// JSON without a number `smt_yield` (or `smt_yield.value`) at the top;
    /// `unavailable` is the speed report's reason when it has one.
    #[error(
        "no number \"smt_yield\" (or smt_yield.value) at the top of the JSON{}",
        unavailable.as_deref().map(|w| format!(" (speed: unavailable: {w})")).unwrap_or_default()
    )]
    Missing {
        /// `smt_yield.unavailable` of a speed report.
        unavailable: Option<String>,
    },
}

/// The SMT yield a file's text holds: the number alone, or JSON with a
/// number `smt_yield` at the top (`{"smt_yield": 0.3}`) or
/// `smt_yield.value` (`pinsight speed --json`'s [`SmtYield`]).
pub fn smt_yield_in(text: &str) -> Result<FoundYield, SmtYieldTextError> {
    if let Ok(value) = text.trim().parse::<f64>() {
        return Ok(FoundYield {
            value,
            in_json: false,
        });
    }
    let doc: serde_json::Value = serde_json::from_str(text).map_err(SmtYieldTextError::NotJson)?;
    let y = doc.get("smt_yield");
    let value = y.and_then(serde_json::Value::as_f64).or_else(|| {
        y.and_then(|y| y.get("value"))
            .and_then(serde_json::Value::as_f64)
    });
    match value {
        Some(value) => Ok(FoundYield {
            value,
            in_json: true,
        }),
        None => Err(SmtYieldTextError::Missing {
            unavailable: y
                .and_then(|y| y.get("unavailable"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        }),
    }
}

/// What an SMT yield may be, in words (every [`GivenYieldError`] ends
/// with it).
pub const SMT_YIELD_ALLOWED: &str = "a number from 0 to 1 (what a second busy SMT thread adds to a core: \
                                     0.25 = two siblings give 1.25 times one) or a file holding one";

/// An SMT yield as a user gives it refused, quoting the text as given.
#[derive(Debug, thiserror::Error)]
pub enum GivenYieldError {
    /// A number outside 0 to 1 (`from`: where in the file it was found).
    #[error("'{text}'{from}: SMT yield {value} is out of range; give {SMT_YIELD_ALLOWED}")]
    OutOfRange {
        text: String,
        from: &'static str,
        value: f64,
    },
    /// Neither a number nor a file that can be read.
    #[error(
        "'{text}' is neither a number nor a readable file ({error}); give {SMT_YIELD_ALLOWED}"
    )]
    Unreadable {
        text: String,
        error: pinsight_sys::fs::BoundedReadError,
    },
    /// A file that holds no SMT yield.
    #[error("'{text}': {error}; give {SMT_YIELD_ALLOWED}")]
    NoYield {
        text: String,
        error: SmtYieldTextError,
    },
}

/// An SMT yield as a user gives it (`balance --smt-yield Y|FILE`): a
/// number from 0 to 1, or the path of a file holding one (see
/// [`smt_yield_in`]; a speed report is a few KiB, so at most 1 MiB is
/// read, and a FIFO or a device is refused unread).
pub fn given_smt_yield(text: &str) -> Result<f64, GivenYieldError> {
    let check = |value: f64, from: &'static str| {
        if value.is_finite() && (0.0..=1.0).contains(&value) {
            Ok(value)
        } else {
            Err(GivenYieldError::OutOfRange {
                text: text.to_owned(),
                from,
                value,
            })
        }
    };
    if let Ok(v) = text.trim().parse::<f64>() {
        return check(v, "");
    }
    let body = pinsight_sys::fs::read_bounded_string(std::path::Path::new(text), 1 << 20).map_err(
        |error| GivenYieldError::Unreadable {
            text: text.to_owned(),
            error,
        },
    )?;
    let found = smt_yield_in(&body).map_err(|error| GivenYieldError::NoYield {
        text: text.to_owned(),
        error,
    })?;
    check(
        found.value,
        if found.in_json {
            " (its smt_yield)"
        } else {
            ""
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_sys::FsRoot;
    use pinsight_topology::discover;

    fn recorded(name: &str) -> Topology {
        discover(&FsRoot::at(pinsight_testkit::fixtures::hwloc(name)).unwrap())
    }

    #[test]
    fn the_pair_is_two_siblings_of_one_core_among_the_measured_cpus() {
        // Xeon 4s2c2t: core 0 is CPUs 0 and 8.
        let t = recorded("16em64t-4s2c2t");
        assert_eq!(sibling_pair(&t, &t.usable()), Some((0, 8)));
        assert_eq!(sibling_pair(&t, &CpuSet::parse_list("0-7").unwrap()), None);
        // Bulldozer compute units are cores of their own: no SMT pair.
        let t = recorded("64amd64-4s2n4ca2co");
        assert_eq!(sibling_pair(&t, &t.usable()), None);
        let y = measure_smt_yield(&t, &t.usable(), Duration::from_millis(1), 1);
        assert_eq!(y.value, None);
        assert_eq!(
            y.unavailable.as_deref(),
            Some("no SMT siblings among the measured CPUs")
        );
    }

    #[test]
    fn a_yield_is_read_back_from_a_number_or_a_speed_report() {
        let found = |t: &str| smt_yield_in(t).map(|f| (f.value, f.in_json));
        assert_eq!(found(" 0.3\n").unwrap(), (0.3, false));
        assert_eq!(found(r#"{"smt_yield": 0.4}"#).unwrap(), (0.4, true));
        assert_eq!(
            found(r#"{"smt_yield": {"value": 2.0}}"#).unwrap(),
            (2.0, true)
        );
        let e = found(r#"{"smt_yield": {"value": null, "unavailable": "no SMT"}}"#);
        assert_eq!(
            e.unwrap_err().to_string(),
            "no number \"smt_yield\" (or smt_yield.value) at the top of the JSON \
             (speed: unavailable: no SMT)"
        );
        assert!(found("{}")
            .unwrap_err()
            .to_string()
            .ends_with("of the JSON"));
        assert!(found("zero")
            .unwrap_err()
            .to_string()
            .starts_with("neither a number nor JSON ("));
    }

    #[test]
    fn a_given_yield_is_a_number_or_a_file_in_range() {
        assert_eq!(given_smt_yield(" 0.3").unwrap(), 0.3);
        let e = given_smt_yield("1.5").unwrap_err().to_string();
        assert!(
            e.starts_with("'1.5': SMT yield 1.5 is out of range; give a number from 0 to 1"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("y.json");
        std::fs::write(&file, r#"{"smt_yield": {"value": 2.0}}"#).unwrap();
        let e = given_smt_yield(file.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("y.json' (its smt_yield): SMT yield 2 is out of range"),
            "{e}"
        );
        std::fs::write(&file, r#"{"smt_yield": 0.4}"#).unwrap();
        assert_eq!(given_smt_yield(file.to_str().unwrap()).unwrap(), 0.4);
        let e = given_smt_yield("/nonexistent/y").unwrap_err().to_string();
        assert!(
            e.starts_with("'/nonexistent/y' is neither a number nor a readable file ("),
            "{e}"
        );
    }
}
