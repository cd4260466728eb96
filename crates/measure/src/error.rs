//! Error types shared by the modules of this crate.

use std::sync::Arc;

/// An OS error kept as the source of a typed error. Cloneable (errors of
/// this crate are stored and compared by callers); two are equal when
/// their kind and errno match.
#[derive(Clone, Debug, thiserror::Error)]
#[error(transparent)]
pub struct IoError(#[from] Arc<std::io::Error>);

impl IoError {
    /// The underlying error.
    pub fn io(&self) -> &std::io::Error {
        &self.0
    }
}

impl From<std::io::Error> for IoError {
    fn from(e: std::io::Error) -> IoError {
        IoError(Arc::new(e))
    }
}

impl PartialEq for IoError {
    fn eq(&self, other: &IoError) -> bool {
        self.0.kind() == other.0.kind() && self.0.raw_os_error() == other.0.raw_os_error()
    }
}

impl Eq for IoError {}
