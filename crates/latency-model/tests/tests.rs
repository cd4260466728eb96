//! pinsight-latency-model's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight-latency-model --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.

mod domains;
mod groups;

use pinsight_latency_model::LatencyMatrix;

/// The recorded matrix `name`.
pub(crate) fn fixture(name: &str) -> LatencyMatrix {
    // The recorded matrices live with pinsight-latency, whose CLI tests
    // share them; this crate reads no files itself, so the test does.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../latency/tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    LatencyMatrix::parse(&text, &path.display().to_string()).unwrap()
}

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
