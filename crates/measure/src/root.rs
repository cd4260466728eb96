//! Where the measurement files are read: cpufreq governors, perf PMUs and
//! `perf_event_paranoid`, RAPL powercap zones.

use pinsight_sys::{FsRoot, FsRootError};

/// TEST ONLY, deliberately not in any `--help`: `PINSIGHT_TEST_MEASURE_ROOT=DIR`
/// reads the measurement files under DIR instead of /, so tests can fake
/// and watch them. The topology and every plan stay this machine's, and
/// programs still run here.
pub const TEST_MEASURE_ROOT: &str = "PINSIGHT_TEST_MEASURE_ROOT";

/// The measurement root named by [`TEST_MEASURE_ROOT`] cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("{var}: {source}")]
pub struct MeasureRootError {
    /// The variable that named it ([`TEST_MEASURE_ROOT`]).
    pub var: &'static str,
    #[source]
    pub source: FsRootError,
}

/// The root the measurement files are read under: this machine's `/`,
/// or the directory [`TEST_MEASURE_ROOT`] names when it is set and not
/// empty.
pub fn measurement_root() -> Result<FsRoot, MeasureRootError> {
    match std::env::var_os(TEST_MEASURE_ROOT).filter(|v| !v.is_empty()) {
        Some(dir) => FsRoot::at(&dir).map_err(|source| MeasureRootError {
            var: TEST_MEASURE_ROOT,
            source,
        }),
        None => Ok(FsRoot::live()),
    }
}
