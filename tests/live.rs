//! pinsight's live timing tests: schedulers, mixes and tune runs whose
//! assertions are about time or CPU shares on this machine's CPUs. Each
//! test holds `pinsight_testkit::serial()`, and the binary runs after the
//! other suites (cargo runs test binaries one at a time), so nothing else
//! of the suite competes for the CPUs they measure. A new file is one
//! `mod` line here; `tests.rs`' `every_test_file_is_compiled` covers it.

mod balance_emulated_live;
mod balance_live;
mod compare_metrics;
mod disturbance_live;
mod emulate_dynamic_live;
mod emulate_live;
mod emulation;
mod mix_cli;
mod operator_tasks;
mod sched_live;
mod sched_signals;
mod tune_live;
