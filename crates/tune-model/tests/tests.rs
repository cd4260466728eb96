//! pinsight-tune-model's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight-tune-model --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.

mod at_bound;
mod common;
mod csv_props;
mod design;
mod energy;
mod errors;
mod grid;
mod identify;
mod properties;
mod regressions;
mod report;
mod seed;
mod specs;

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
