//! The sampling interval: how often a command looks at the machine or at
//! its threads (`--interval` of `run`, `sched`, `mix`, `sf`, `simulate`,
//! `load`, `balance` and `irq`). One quantity, one range: from 1 ms (the
//! poll of `run --follow`, which must see a new thread before it does much
//! work) to an hour (an operator's slow watch). A scheduler's period is
//! this interval too, and a resumed `mix` journal is held to it.

use std::ops::RangeInclusive;
use std::time::Duration;

/// Every interval a command takes: 1 ms to 1 h.
pub const INTERVAL_RANGE: RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(3600);

/// What [`INTERVAL_RANGE`] allows, in words.
pub const INTERVAL_ALLOWED: &str = "an interval is between 1ms and 1h";

/// Whether `d` is an interval a command takes.
pub fn is_interval(d: Duration) -> bool {
    INTERVAL_RANGE.contains(&d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_holds_a_millisecond_and_an_hour_and_nothing_outside() {
        assert!(is_interval(Duration::from_millis(1)));
        assert!(is_interval(Duration::from_secs(3600)));
        assert!(!is_interval(Duration::from_micros(999)));
        assert!(!is_interval(Duration::ZERO));
        assert!(!is_interval(Duration::from_secs(3601)));
    }
}
