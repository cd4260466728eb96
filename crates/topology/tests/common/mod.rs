//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod hwloc_expected;

#[allow(unused_imports)]
pub use pinsight_testkit::fixtures::{hwloc, machine, synthetic};
#[allow(unused_imports)]
pub use pinsight_testkit::synth;

use std::path::PathBuf;

/// `crates/topology/tests/fixtures`: hwloc's expected outputs and `.test`
/// files beside the recorded machines' tarballs (`hwloc/`), XML files
/// (`xml/`); the machines themselves are read through [`hwloc`],
/// [`synthetic`] and [`machine`] (unpacked or generated once per build
/// directory).
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A temporary directory, on tmpfs (`/dev/shm`) when there is one: the
/// synthetic trees hold thousands of small files, and creating them on a
/// disk-backed /tmp costs a millisecond each.
pub fn tempdir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("pinsight-test-")
            .tempdir_in(shm)
        {
            return d;
        }
    }
    tempfile::tempdir().expect("temporary directory")
}

/// Asserts that one of `t`'s warnings contains every one of `parts`,
/// showing the warnings when none does.
#[track_caller]
pub fn assert_warned(t: &pinsight_model::Topology, parts: &[&str]) {
    assert!(
        t.warnings
            .iter()
            .any(|w| parts.iter().all(|p| w.contains(p))),
        "no warning with {parts:?}: {:?}",
        t.warnings
    );
}

/// Asserts that none of `t`'s warnings contains `part`, saying `ctx` and
/// showing the warnings when one does.
#[track_caller]
pub fn assert_not_warned(t: &pinsight_model::Topology, part: &str, ctx: &str) {
    assert!(
        !t.warnings.iter().any(|w| w.contains(part)),
        "{ctx}: a warning with {part:?}: {:#?}",
        t.warnings
    );
}

/// Asserts that `text` contains every one of `parts`, naming the one it
/// lacks.
#[track_caller]
pub fn assert_mentions(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} missing from {text}");
    }
}

/// Asserts that every kind of `t` was ranked by `source`, showing the
/// kinds when one was not.
#[track_caller]
pub fn assert_ranked_by(t: &pinsight_model::Topology, source: pinsight_model::RankSource) {
    assert!(
        t.kinds.iter().all(|k| k.rank_source == source),
        "not all ranked by {source:?}: {:#?}",
        t.kinds
    );
}

/// Each kind's name, in rank order.
pub fn kind_names(t: &pinsight_model::Topology) -> Vec<&str> {
    t.kinds.iter().map(|k| k.name.as_str()).collect()
}

/// Each kind's mark, in rank order.
pub fn kind_marks(t: &pinsight_model::Topology) -> Vec<&str> {
    t.kinds.iter().map(|k| k.mark.as_str()).collect()
}

/// Each kind's (name, mark), in rank order.
pub fn kind_labels(t: &pinsight_model::Topology) -> Vec<(&str, &str)> {
    t.kinds
        .iter()
        .map(|k| (k.name.as_str(), k.mark.as_str()))
        .collect()
}

/// A CPU set from a cpulist (`0-3,8`).
pub fn set(s: &str) -> pinsight_cpuset::CpuSet {
    pinsight_cpuset::CpuSet::parse_list(s).unwrap()
}

/// Discovery of a synthetic machine written to a temporary directory.
pub fn discover_machine(m: &synth::Machine) -> pinsight_model::Topology {
    let dir = tempdir();
    m.write(dir.path());
    pinsight_topology::discover(&pinsight_sys::FsRoot::at(dir.path()).unwrap())
}

/// The ids of the NUMA nodes without CPUs (memory-only nodes).
pub fn cpuless_nodes(t: &pinsight_model::Topology) -> Vec<u32> {
    t.numa_nodes
        .iter()
        .filter(|n| n.cpus.is_empty())
        .map(|n| n.id)
        .collect()
}
