//! [`Metric`]: a measured number, or the honest reason there is none.
//!
//! Why not `Option<f64>` or `0`: a journal read months later must say *why*
//! a column is empty ("no hardware PMU", "perf_event_paranoid=3"), and a 0
//! would be averaged into results as if it had been measured.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A measured value or the reason it could not be measured.
///
/// JSON: a bare number (`1234.0`) or `{"unavailable": "reason"}`. Values are
/// always finite (derived ratios with a zero denominator become
/// `Unavailable`), so records always serialize.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Metric {
    /// The measured value, in the unit the field's name says.
    Value(f64),
    /// Why there is no value.
    Unavailable {
        #[serde(rename = "unavailable")]
        reason: String,
    },
}

impl Metric {
    /// An unavailable metric with `reason`.
    pub fn unavailable(reason: impl Into<String>) -> Metric {
        Metric::Unavailable {
            reason: reason.into(),
        }
    }

    /// A value; non-finite numbers become `Unavailable` (JSON cannot hold
    /// them and they are never a measurement).
    pub fn value(v: f64) -> Metric {
        if v.is_finite() {
            Metric::Value(v)
        } else {
            Metric::unavailable(format!("not a finite number ({v})"))
        }
    }

    /// The stand-in a journal writer puts for a metric its header already
    /// gives for every run (an unavailable metric with an empty reason,
    /// which no measurement has): it is left out of the JSON line
    /// ([`Metric::is_omitted`]), and a metric missing from a line reads
    /// back as it, for the journal's reader to fill from its header.
    pub fn omitted() -> Metric {
        Metric::Unavailable {
            reason: String::new(),
        }
    }

    /// Whether this is [`Metric::omitted`].
    pub fn is_omitted(&self) -> bool {
        matches!(self, Metric::Unavailable { reason } if reason.is_empty())
    }

    /// The value, if measured.
    pub fn get(&self) -> Option<f64> {
        match self {
            Metric::Value(v) => Some(*v),
            Metric::Unavailable { .. } => None,
        }
    }

    /// The reason, if unavailable.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Metric::Value(_) => None,
            Metric::Unavailable { reason } => Some(reason),
        }
    }

    /// `self / other`, unavailable if either is, or if `other` is 0
    /// (`what` names the denominator in that reason).
    pub fn ratio(&self, other: &Metric, what: &str) -> Metric {
        match (self, other) {
            (Metric::Unavailable { reason }, _) | (_, Metric::Unavailable { reason }) => {
                Metric::unavailable(reason.clone())
            }
            (Metric::Value(_), Metric::Value(d)) if *d == 0.0 => {
                Metric::unavailable(format!("{what} was 0"))
            }
            (Metric::Value(n), Metric::Value(d)) => Metric::value(n / d),
        }
    }

    /// Applies `f` to a value; keeps the reason otherwise.
    pub fn map(&self, f: impl FnOnce(f64) -> f64) -> Metric {
        match self {
            Metric::Value(v) => Metric::value(f(*v)),
            u => u.clone(),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Value(v) => write!(f, "{v}"),
            Metric::Unavailable { reason } => write!(f, "unavailable: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_a_number_or_an_unavailable_object() {
        assert_eq!(serde_json::to_string(&Metric::Value(1.5)).unwrap(), "1.5");
        let u = Metric::unavailable("no PMU");
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"unavailable":"no PMU"}"#
        );
        assert_eq!(
            serde_json::from_str::<Metric>("2.0").unwrap(),
            Metric::Value(2.0)
        );
        assert_eq!(
            serde_json::from_str::<Metric>(r#"{"unavailable":"no PMU"}"#).unwrap(),
            u
        );
    }

    #[test]
    fn ratio_never_divides_by_zero_nor_hides_reasons() {
        let a = Metric::Value(10.0);
        assert_eq!(a.ratio(&Metric::Value(4.0), "d"), Metric::Value(2.5));
        assert_eq!(
            a.ratio(&Metric::Value(0.0), "cycles").reason(),
            Some("cycles was 0")
        );
        assert_eq!(a.ratio(&Metric::unavailable("x"), "d").reason(), Some("x"));
        assert_eq!(Metric::value(f64::NAN).get(), None);
    }
}
