//! pinsight-measure's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight-measure --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.

// Shared helpers.
mod common;

mod governor_signals;
mod run;
mod sf_pmus;
mod sf_sampling;

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
