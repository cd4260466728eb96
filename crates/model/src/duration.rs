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

/// A duration flag's text refused, quoting it: not a duration, or outside
/// the range of what it sets (a positive timeout, an
/// [`interval`](crate::interval)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GivenDurationError {
    /// Not a duration of the grammar (see [`DurationError`]).
    #[error("'{0}' is {DurationError}")]
    NotADuration(String),
    /// 0 where only a positive duration means something.
    #[error("'{0}': a duration of 0 means nothing here; give a positive one (e.g. 30s)")]
    Zero(String),
    /// Outside [`INTERVAL_RANGE`](crate::interval::INTERVAL_RANGE).
    #[error("'{}': {}", .0, crate::interval::INTERVAL_ALLOWED)]
    NotAnInterval(String),
}

/// `text` as a duration of the grammar (0 allowed).
pub fn given(text: &str) -> Result<Duration, GivenDurationError> {
    parse_duration(text).map_err(|_| GivenDurationError::NotADuration(text.to_owned()))
}

/// `text` as a positive duration: a timeout or a budget of 0 means nothing.
pub fn positive(text: &str) -> Result<Duration, GivenDurationError> {
    match given(text)? {
        d if d.is_zero() => Err(GivenDurationError::Zero(text.to_owned())),
        d => Ok(d),
    }
}

/// `text` as a sampling [`interval`](crate::interval); with `off_allowed`
/// also 0, for "do not measure".
pub fn interval(text: &str, off_allowed: bool) -> Result<Duration, GivenDurationError> {
    match given(text)? {
        d if crate::interval::is_interval(d) || (off_allowed && d.is_zero()) => Ok(d),
        _ => Err(GivenDurationError::NotAnInterval(text.to_owned())),
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

    #[test]
    fn given_durations_quote_the_text_and_hold_their_range() {
        assert_eq!(
            given("fast").unwrap_err().to_string(),
            "'fast' is not a duration (examples: 500ms, 1s, 2.5s, 2m; at most 7 days)"
        );
        assert!(positive("0s")
            .unwrap_err()
            .to_string()
            .contains("a duration of 0"));
        assert_eq!(positive("2s"), Ok(Duration::from_secs(2)));
        assert!(interval("0.5ms", false).is_err() && interval("61m", false).is_err());
        assert!(interval("1ms", false).is_ok() && interval("1h", false).is_ok());
        assert_eq!(interval("0", true), Ok(Duration::ZERO));
        assert_eq!(
            interval("2h", true).unwrap_err().to_string(),
            "'2h': an interval is between 1ms and 1h"
        );
        assert!(matches!(
            interval("x", true),
            Err(GivenDurationError::NotADuration(_))
        ));
    }
}
