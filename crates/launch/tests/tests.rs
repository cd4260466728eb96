//! pinsight-launch's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight-launch --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.
//!
//! Own binaries (a `[[test]]` each in Cargo.toml):
//! - `signals_live.rs`: it sets TMPDIR for the whole process and signals its own process.

// Shared helpers.
mod common;

mod arms_live;
mod mempolicy_live;
mod pin_live;
mod rebalance_live;
mod run_live;

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
