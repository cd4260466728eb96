//! pinsight-emulate's integration tests (one binary).
// Shared helpers.
mod common;

mod cpufreq;
mod live;

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
