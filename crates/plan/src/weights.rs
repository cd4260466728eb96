//! Per-CPU speed weights for `balance` (`--weights FILE`).
//!
//! Two accepted forms, both keyed by the kernel's CPU number:
//!
//! - **JSON** (what `pinsight speed --weights OUT` writes): an object mapping
//!   the CPU number, as a string, to a non-negative number:
//!   `{"0": 1.0, "1": 1.0, "12": 0.62}`. A wrapping object
//!   `{"weights": {...}}` is accepted too, so a tool may add metadata beside it.
//! - **CSV lines**: `cpu,weight` per line; blank lines, `#` comments and a
//!   header line `cpu,weight` are ignored: `0,1.0` / `12,0.62`.
//!
//! Weights are relative (only ratios matter): 1024-scaled `cpu_capacity`
//! values, MHz or measured ops/s all work. Zero means "give this CPU no
//! tasks". Negative, non-finite or duplicate entries are rejected.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Largest weights file read: 16 MiB, far above one weight per CPU of the
/// largest machine. This crate reads no files: its callers read a weights
/// file through pinsight-sys's bounded reader (a regular file of at most
/// this size) and give the text to [`Weights::parse`].
pub const MAX_WEIGHTS_BYTES: u64 = 16 << 20;

/// Why weights cannot be read or used. `origin` names the input (a path,
/// with `:LINE` for CSV lines).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WeightsError {
    /// The file cannot be read.
    #[error("cannot read weights file {path}: {reason}")]
    Read { path: String, reason: String },
    /// JSON that does not parse.
    #[error("{origin}: not valid JSON: {reason}")]
    Json { origin: String, reason: String },
    /// JSON that is not an object of CPU numbers.
    #[error("{origin}: expected a JSON object like {{\"0\": 1.0, \"12\": 0.6}}")]
    NotAnObject { origin: String },
    /// A JSON key that is not a CPU number.
    #[error("{origin}: key '{key}' is not a CPU number")]
    BadKey { origin: String, key: String },
    /// A JSON weight that is not a number.
    #[error("{origin}: weight of CPU {cpu} is not a number: {value}")]
    NotANumber {
        origin: String,
        cpu: usize,
        value: String,
    },
    /// A CSV line that is not `cpu,weight`.
    #[error("{origin}: expected 'cpu,weight' (e.g. '12,0.6'), got '{line}'")]
    BadLine { origin: String, line: String },
    /// A negative or non-finite weight.
    #[error("{origin}: weight of CPU {cpu} must be a finite number >= 0, got {weight}")]
    BadWeight {
        origin: String,
        cpu: usize,
        weight: f64,
    },
    /// A CPU given two weights.
    #[error("{origin}: CPU {cpu} is listed twice")]
    Duplicate { origin: String, cpu: usize },
    /// Usable CPUs without a weight.
    #[error("the weights file has no weight for usable CPU(s) {missing}; give every CPU in {cpus} a weight (0 = no tasks)")]
    Missing {
        missing: pinsight_cpuset::CpuSet,
        cpus: pinsight_cpuset::CpuSet,
    },
    /// Every usable CPU weighs 0: no CPU can take a task.
    #[error("every usable CPU has weight 0; at least one must be positive")]
    AllZero,
}

/// Relative speed of CPUs, by CPU number.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Weights {
    pub by_cpu: BTreeMap<usize, f64>,
}

impl Weights {
    /// Parses either form (JSON when the text starts with `{` or `[`).
    /// `origin` names the input in errors (a path, or "weights").
    pub fn parse(text: &str, origin: &str) -> Result<Weights, WeightsError> {
        let trimmed = text.trim_start_matches('\u{feff}').trim();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            Self::parse_json(trimmed, origin)
        } else {
            Self::parse_csv(trimmed, origin)
        }
    }

    fn parse_json(text: &str, origin: &str) -> Result<Weights, WeightsError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| WeightsError::Json {
                origin: origin.into(),
                reason: e.to_string(),
            })?;
        let obj = match value.get("weights") {
            Some(inner) => inner,
            None => &value,
        };
        let obj = obj.as_object().ok_or_else(|| WeightsError::NotAnObject {
            origin: origin.into(),
        })?;
        let mut w = Weights::default();
        for (key, val) in obj {
            let cpu = parse_cpu(key).ok_or_else(|| WeightsError::BadKey {
                origin: origin.into(),
                key: key.clone(),
            })?;
            let weight = val.as_f64().ok_or_else(|| WeightsError::NotANumber {
                origin: origin.into(),
                cpu,
                value: val.to_string(),
            })?;
            w.insert(cpu, weight, origin)?;
        }
        Ok(w)
    }

    fn parse_csv(text: &str, origin: &str) -> Result<Weights, WeightsError> {
        let mut w = Weights::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() || line.eq_ignore_ascii_case("cpu,weight") {
                continue;
            }
            let at = format!("{origin}:{}", n + 1);
            let bad = || WeightsError::BadLine {
                origin: at.clone(),
                line: line.to_string(),
            };
            let (c, v) = line.split_once(',').ok_or_else(bad)?;
            let cpu = parse_cpu(c.trim()).ok_or_else(bad)?;
            let weight = v.trim().parse::<f64>().map_err(|_| bad())?;
            w.insert(cpu, weight, &at)?;
        }
        Ok(w)
    }

    fn insert(&mut self, cpu: usize, weight: f64, origin: &str) -> Result<(), WeightsError> {
        if !weight.is_finite() || weight < 0.0 {
            return Err(WeightsError::BadWeight {
                origin: origin.into(),
                cpu,
                weight,
            });
        }
        if self.by_cpu.insert(cpu, weight).is_some() {
            return Err(WeightsError::Duplicate {
                origin: origin.into(),
                cpu,
            });
        }
        Ok(())
    }

    /// The JSON form, as `pinsight speed --weights` should write it.
    pub fn to_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .by_cpu
            .iter()
            .map(|(c, w)| (c.to_string(), serde_json::json!(w)))
            .collect();
        serde_json::to_string_pretty(&serde_json::Value::Object(map))
            .expect("a map of numbers serializes")
    }

    /// The CSV form.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("cpu,weight\n");
        for (c, w) in &self.by_cpu {
            let _ = writeln!(out, "{c},{w}");
        }
        out
    }
}

fn parse_cpu(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<usize>()
        .ok()
        .filter(|c| *c <= pinsight_cpuset::MAX_CPU)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms() {
        let j = Weights::parse(r#"{"0": 1.0, "12": 0.62}"#, "w").unwrap();
        let c =
            Weights::parse("cpu,weight\n# measured\n0,1.0\n\n12, 0.62 # E-core\n", "w").unwrap();
        assert_eq!(j, c);
        assert_eq!(
            Weights::parse(r#"{"weights": {"0": 1, "12": 0.62}}"#, "w").unwrap(),
            j
        );
        assert_eq!(Weights::parse(&j.to_json(), "w").unwrap(), j);
        assert_eq!(Weights::parse(&j.to_csv(), "w").unwrap(), j);
    }

    #[test]
    fn rejects_bad_input() {
        for (text, needle) in [
            (r#"{"x": 1}"#, "not a CPU number"),
            (r#"{"0": "fast"}"#, "not a number"),
            (r#"{"0": -1}"#, ">= 0"),
            ("0,1\n0,2", "listed twice"),
            ("0;1", "expected 'cpu,weight'"),
            ("0,NaN", ">= 0"),
            ("[1,2]", "expected a JSON object"),
            ("{", "not valid JSON"),
        ] {
            let e = Weights::parse(text, "f.txt").unwrap_err().to_string();
            assert!(e.contains(needle) && e.starts_with("f.txt"), "{text}: {e}");
        }
    }
}
