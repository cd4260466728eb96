//! The one percent-or-fraction grammar (`--disturbance-threshold`,
//! `latency --target-ci`, ...): `5%`, `0.5 %` or `0.05`, read as a
//! fraction (0.05). Each quantity checks its own range: a [`share`] of a
//! CPU's time is above 0 and at most 1, a relative [`precision`] above 0
//! and below 1.

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
}
