//! pinsight's live timing tests: schedulers, mixes and tune runs whose
//! assertions are about time or CPU shares on this machine's CPUs. Each
//! test starts through `pinsight_testkit::premise::live` (the binary's
//! serial lock, refused beside a foreign real-time task such as another
//! emulation's stealer, and a sampler of what others run) and the binary
//! runs after the other suites (cargo runs test binaries one at a time),
//! so nothing else of the suite competes for the CPUs they measure; a
//! timing test checks its measured premise before it asserts and counts a
//! skip with the figures when it failed (docs/src/testing.md, "Live tests
//! measure their premise"). A new file is one `mod` line here;
//! `tests.rs`' `every_test_file_is_compiled` covers it.

// Shared helpers of the live tests.
mod common_emulation;
mod common_live;
mod common_operator;
mod common_signals;

mod balance_emulated_live;
mod balance_live;
mod compare_metrics_live;
mod disturbance_live;
mod emulate_dynamic_live;
mod emulate_live;
mod mix_live;
mod progress_live;
mod report_emulated_live;
mod sched_live;
mod sched_signals_live;
mod tune_live;
