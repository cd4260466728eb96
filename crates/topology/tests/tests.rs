//! pinsight-topology's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight-topology --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.

// Shared helpers.
mod common;

mod bad_input;
mod cgroups;
mod cpuinfo_midr;
mod devices;
mod hfi;
mod hwloc_conformance;
mod hwloc_xml;
mod kind_shapes;
mod live;
mod memory;
mod provenance;
mod sharing_edges;
mod snapshot;
mod synthetic;

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
