//! A bench's own timings, by name: recorded as it runs, summed up in its
//! report. Shared by this crate's overhead bench and pinsight-compare's
//! (which includes this file by path).

use std::sync::Mutex;
use std::time::Duration;

/// Every sample recorded, seconds, with its name.
static SAMPLES: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());

/// Records `d` as a sample of `name`.
pub fn record(name: &'static str, d: Duration) {
    SAMPLES.lock().unwrap().push((name, d.as_secs_f64()));
}

/// The samples of `name`, seconds, in the order recorded.
fn seconds(name: &str) -> Vec<f64> {
    SAMPLES
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .collect()
}

/// The smallest sample of `name`, seconds (infinity when there is none).
pub fn minimum(name: &str) -> f64 {
    seconds(name).into_iter().fold(f64::INFINITY, f64::min)
}

/// The median sample of `name` (the upper one of an even count), seconds
/// (NaN when there is none).
pub fn median(name: &str) -> f64 {
    let mut v = seconds(name);
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}
