//! pinsight-sched's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight-sched --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.

mod capacity;
mod counter_sf;
mod parser_props;
mod sf_report;
mod spawned_gone;
mod unreadable_thread;

/// The first two CPUs this process may use, or `None` (the test skipped,
/// saying `why`) with fewer.
pub(crate) fn two_usable_cpus(why: &str) -> Option<(usize, usize)> {
    let cpus: Vec<usize> = pinsight_testkit::allowed_cpus().iter().collect();
    if cpus.len() < 2 {
        pinsight_testkit::skip(why);
        return None;
    }
    Some((cpus[0], cpus[1]))
}

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        include_str!("tests.rs"),
    );
}
