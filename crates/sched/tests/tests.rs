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

/// `sleep SECONDS` started with no input.
pub(crate) fn sleep(seconds: &str) -> std::process::Child {
    std::process::Command::new("sleep")
        .arg(seconds)
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// AARR (5% swaps) every 50 ms, CPU 0 big and CPU 1 small, following and
/// grouping the programs' children, no orphans taken in.
pub(crate) fn aarr_on_cpus_0_and_1() -> pinsight_sched::Config {
    use pinsight_sched_model::{Capacity, Cpu, Policy};
    pinsight_sched::Config {
        policy: Policy::aarr(0.05),
        period: std::time::Duration::from_millis(50),
        capacity: Capacity {
            big: vec![Cpu::new(0)],
            small: vec![Cpu::new(1)],
        },
        follow_children: true,
        group_children: true,
        orphans_of: None,
    }
}

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
