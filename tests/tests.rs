//! pinsight's integration tests: one binary, a module per subject
//! (`cargo test -p pinsight --test integration`; one process links
//! once and runs them all in parallel). A new test file is one `mod` line
//! here; `every_test_file_is_compiled` fails for a file left out.
//!
//! Own binaries (a `[[test]]` each in Cargo.toml):
//! - `live.rs`: the live tests whose assertions are about time or CPU
//!   shares (sched, mix, tune on this machine's CPUs), run one at a time
//!   (`pinsight_testkit::serial`) in a binary of their own, so that no
//!   other test's busy program competes for the CPUs they measure.
//! - `layering.rs`: .ci/run runs it first, alone (`cargo test --release --test layering`): the crate layering gate.

// Shared helpers.
mod common_cli;
mod common_cmd;
mod common_launch;
mod common_signals;

mod arms_cli;
mod balance_cli;
mod bounded_inputs;
mod bounds;
mod cli_contract;
mod compare_cli;
mod compare_errors;
mod compare_ranks;
mod compare_workload;
mod conflicts;
mod doc_examples;
mod errors_topology;
mod escape_injection;
mod fsroot_archive;
mod generate_cli;
mod help_examples;
mod help_wrap;
mod journal_safety;
mod kinds_cli;
mod latency_cli;
mod launchers;
mod load_cli;
mod mem_policy;
mod mix_fast;
mod model_cli;
mod near;
mod no_lost_work;
mod numbers_roundtrip;
mod plan_cli;
mod program_sees_plan;
mod report_browser;
mod run_balance_env;
mod sf_cli;
mod simulate_cli;
mod slice_cli;
mod speed_report;
mod thin_binary;
mod topo_devices;
mod topo_explain;
mod topo_memory;
mod topo_watch;
mod tune_cli;
mod tune_run;
mod vocabulary;

#[test]
fn every_test_file_is_compiled() {
    pinsight_testkit::assert_every_test_file_compiled(
        env!("CARGO_MANIFEST_DIR"),
        &[include_str!("tests.rs"), include_str!("live.rs")].concat(),
    );
}

/// A test file's name says which binary runs it: the live binary's files
/// end in `_live` (its shared helpers start with `common_`), and no file
/// of this binary does.
#[test]
fn test_files_say_their_binary() {
    let mods = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
            .map(str::to_owned)
            .collect()
    };
    let live = mods(include_str!("live.rs"));
    let here = mods(include_str!("tests.rs"));
    assert!(live.len() > 5 && here.len() > 20, "{live:?} {here:?}");
    let wrong: Vec<&String> = live
        .iter()
        .filter(|m| !(m.ends_with("_live") || m.starts_with("common_")))
        .chain(here.iter().filter(|m| m.ends_with("_live")))
        .collect();
    assert!(
        wrong.is_empty(),
        "rename these test files (live: NAME_live.rs, helpers common_NAME; integration: no _live): {wrong:?}"
    );
}
