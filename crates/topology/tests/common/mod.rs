//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod hwloc_expected;

use std::path::PathBuf;

/// `crates/topology/tests/fixtures`.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}
