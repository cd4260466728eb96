//! Why speed could not be measured, or a choice was refused. Domain terms
//! and data only: the command line names its own flags when it renders these.

use pinsight_cpuset::{CpuSet, ParseError};

/// A measurement that could not run.
#[derive(Debug, thiserror::Error)]
pub enum SpeedError {
    /// Could not pin to the CPU (offline, forbidden by the cgroup, ...).
    #[error("cannot run on CPU {cpu}: {error}")]
    Pin { cpu: usize, error: std::io::Error },
    /// No CPU to measure.
    #[error("no CPU to measure")]
    NoCpus,
    /// No kernel to run.
    #[error("no kernel to run")]
    NoKernels,
    /// The chase buffer could not be allocated.
    #[error("cannot allocate the {} MiB pointer-chase buffer: not enough memory", bytes >> 20)]
    Memory { bytes: usize },
}

/// A choice of CPUs that [`crate::select_cpus`] refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectError {
    /// The cpulist does not parse.
    #[error("CPU list {list}: {error}")]
    BadList { list: String, error: ParseError },
    /// The cpulist names no CPU.
    #[error("CPU list '{list}' names no CPU (usable: {usable})")]
    NoCpu { list: String, usable: CpuSet },
    /// Some CPUs of the list are offline or not allowed for this process.
    #[error("CPU list {list}: CPU(s) {bad} are offline or not allowed for this process (usable: {usable})")]
    Unusable {
        list: String,
        bad: CpuSet,
        usable: CpuSet,
    },
    /// Zero cores per kind asked for.
    #[error("zero cores per kind: at least 1 is needed")]
    ZeroPerKind,
}

/// The choice a [`SelectError`] refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The CPU list.
    Cpus,
    /// The cores per kind.
    PerKind,
}

impl SelectError {
    /// Which choice is at fault.
    pub fn choice(&self) -> Choice {
        match self {
            SelectError::ZeroPerKind => Choice::PerKind,
            _ => Choice::Cpus,
        }
    }

    /// What is wrong in words that follow the choice's name: the value
    /// given, then why (`0-3,99: CPU(s) 99 are offline ...`).
    pub fn after_choice(&self) -> String {
        match self {
            SelectError::BadList { list, error } => format!("{list}: {error}"),
            SelectError::NoCpu { list, usable } => {
                format!("'{list}': give at least one CPU (usable: {usable})")
            }
            SelectError::Unusable { list, bad, usable } => format!(
                "{list}: CPU(s) {bad} are offline or not allowed for this process (usable: {usable})"
            ),
            SelectError::ZeroPerKind => "0: give at least 1 core per kind".to_string(),
        }
    }
}

/// A kernel name that is not `int`, `fp` or `mem`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kernel '{0}': expected int, fp or mem")]
pub struct UnknownKernel(pub String);

/// A chase buffer that cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// `mib` MiB would not fit in the memory available now (`None`: more
    /// than this machine can address).
    #[error("a {mib} MiB pointer-chase buffer would not fit in memory: {}", self.room())]
    TooBig { mib: usize, available: Option<u64> },
}

impl MemoryError {
    /// The memory there is, in words: `N MiB are available (MemAvailable)`.
    pub fn room(&self) -> String {
        match self {
            MemoryError::TooBig {
                available: Some(a), ..
            } => format!("{} MiB are available (MemAvailable)", a >> 20),
            MemoryError::TooBig {
                available: None, ..
            } => "more than this machine can address".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_choice_is_worded_after_its_name() {
        let e = SelectError::NoCpu {
            list: " ".into(),
            usable: "0-3".parse().unwrap(),
        };
        assert_eq!(e.choice(), Choice::Cpus);
        assert_eq!(e.after_choice(), "' ': give at least one CPU (usable: 0-3)");
        assert_eq!(SelectError::ZeroPerKind.choice(), Choice::PerKind);
        let e = MemoryError::TooBig {
            mib: 9,
            available: Some(8 << 20),
        };
        assert_eq!(e.room(), "8 MiB are available (MemAvailable)");
    }
}
