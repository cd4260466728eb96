//! Parsing the size knob: people write `2e9`, `500k` or `1G` steps.

/// Parses a positive count: a plain integer, scientific notation (`2e9`,
/// `1.5e6`) or a decimal suffix k/M/G (×10³/10⁶/10⁹, case-insensitive).
pub fn parse_size(text: &str) -> Result<u64, crate::SizeError> {
    let bad = || crate::SizeError(text.to_string());
    let t = text.trim().replace('_', "");
    let (number, scale) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    if let Ok(n) = number.parse::<u64>() {
        if scale == 1.0 {
            return if n > 0 { Ok(n) } else { Err(bad()) };
        }
    }
    let v: f64 = number.parse().map_err(|_| bad())?;
    let v = v * scale;
    if !(v.is_finite() && (1.0..1.8e19).contains(&v) && v.fract() == 0.0) {
        return Err(bad());
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("2e9"), Ok(2_000_000_000));
        assert_eq!(parse_size("1.5e6"), Ok(1_500_000));
        assert_eq!(parse_size("500k"), Ok(500_000));
        assert_eq!(parse_size("2M"), Ok(2_000_000));
        assert_eq!(parse_size("1G"), Ok(1_000_000_000));
        assert_eq!(parse_size("1_000"), Ok(1000));
        for bad in ["0", "-5", "1.5", "abc", "", "k", "1e30", "NaN"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
