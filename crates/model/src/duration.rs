//! The one duration grammar of every flag that takes a time (`--duration`,
//! `--timeout`, `--interval`, `--budget`, ...): a number with a unit,
//! `1s`, `500ms`, `250us`, `2.5s`, `2m`, `1h`, or a bare number of
//! seconds (`90`); 0 allowed, at most [`MAX_DURATION`]. A command's own
//! range (a positive timeout, a sampling [`interval`](crate::interval)) is
//! checked on the parsed value.

use std::time::Duration;

/// Longest duration any flag takes (a week).
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A text that is not a duration of the grammar, or is above
/// [`MAX_DURATION`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a duration (examples: 500ms, 1s, 2.5s, 2m; at most 7 days)")]
pub struct DurationError;

/// Parses `text` (see the module documentation).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale <= MAX_DURATION.as_secs_f64() => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(DurationError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_bare_seconds_and_the_bounds() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration(" 1h "), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("168h"), Ok(MAX_DURATION));
        for bad in [
            "fast",
            "-1s",
            "169h",
            "99999999999999999",
            "nan",
            "inf",
            "",
            "1d",
        ] {
            assert_eq!(parse_duration(bad), Err(DurationError), "{bad:?}");
        }
    }
}
