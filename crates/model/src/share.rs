//! The one percent-or-fraction grammar (`--disturbance-threshold`,
//! `latency --target-ci`, ...): `5%`, `0.5 %` or `0.05`, read as a
//! fraction (0.05). Each quantity checks its own range: a [`share`] of a
//! CPU's time is above 0 and at most 1, a relative [`precision`] above 0
//! and below 1. An [`imbalance_ratio`] (max/min, a plain number above 1)
//! is refused in the same words' manner ([`FractionError`]).

/// `text` as a finite fraction; `None` when it is not a number or a
/// percentage.
pub fn fraction(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    num.parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite())
}

/// A share of one CPU's time: a [`fraction`] above 0 and at most 1.
pub fn share(text: &str) -> Option<f64> {
    fraction(text).filter(|&v| v > 0.0 && v <= 1.0)
}

/// A relative precision: a [`fraction`] above 0 and below 1.
pub fn precision(text: &str) -> Option<f64> {
    fraction(text).filter(|&v| v > 0.0 && v < 1.0)
}

/// A percent-or-fraction flag's text refused, quoting it and saying the
/// range of its quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FractionError {
    /// Not a [`share`].
    #[error("'{0}' is not a share of a CPU's time: give a percentage above 0 and at most 100 (5%) or a fraction (0.05)")]
    Share(String),
    /// Not a [`precision`].
    #[error("'{0}' is not a relative precision between 0 and 100% (examples: 1%, 0.5%, 0.02)")]
    Precision(String),
    /// Not an [`imbalance_ratio`].
    #[error("'{0}' is not an imbalance ratio: give a number above 1 and at most 100 (1.25: the fastest task may progress 25% faster than the slowest)")]
    Ratio(String),
}

/// [`share`], refused with its range in words.
pub fn given_share(text: &str) -> Result<f64, FractionError> {
    share(text).ok_or_else(|| FractionError::Share(text.to_owned()))
}

/// [`precision`], refused with its range in words.
pub fn given_precision(text: &str) -> Result<f64, FractionError> {
    precision(text).ok_or_else(|| FractionError::Precision(text.to_owned()))
}

/// An imbalance ratio (max/min): a plain number above 1 and at most 100.
pub fn imbalance_ratio(text: &str) -> Result<f64, FractionError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 1.0 && v <= 100.0 => Ok(v),
        _ => Err(FractionError::Ratio(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_fractions_with_each_range() {
        assert_eq!(fraction("5%"), Some(0.05));
        assert_eq!(fraction(" 0.5 % "), Some(0.005));
        assert_eq!(fraction("0.2"), Some(0.2));
        assert_eq!(fraction("x"), None);
        assert_eq!(fraction("inf"), None);
        assert_eq!(share("100%"), Some(1.0));
        for bad in ["0", "0%", "101%", "1.5", "-1%", "nan", ""] {
            assert_eq!(share(bad), None, "{bad:?}");
        }
        assert_eq!(precision("1%"), Some(0.01));
        assert_eq!(precision("100%"), None);
        assert_eq!(precision("0"), None);
    }

    #[test]
    fn given_fractions_say_their_range() {
        assert_eq!(given_share("5%"), Ok(0.05));
        assert!(given_share("101%")
            .unwrap_err()
            .to_string()
            .starts_with("'101%' is not a share of a CPU's time"));
        assert_eq!(given_precision("1%"), Ok(0.01));
        assert!(given_precision("100%")
            .unwrap_err()
            .to_string()
            .contains("relative precision"));
        assert_eq!(imbalance_ratio(" 1.25"), Ok(1.25));
        for bad in ["1", "100.5", "nan", "x", "5%"] {
            assert_eq!(
                imbalance_ratio(bad),
                Err(FractionError::Ratio(bad.to_owned()))
            );
        }
    }
}
