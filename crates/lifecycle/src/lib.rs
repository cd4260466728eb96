//! One program lifecycle for every measuring command (`compare`, `tune`,
//! `mix`, `sched`, `sf`, `speed`, `latency`): the job "run a program,
//! measure it, journal it, stop on a signal" written once.
//!
//! * [`exit`]: the one table from spawn error, exit status and signal to
//!   the shell's exit code (126, 127, 128 + N).
//! * [`program`]: resolving a program like a shell ([`program::Program`])
//!   and whether an LD_PRELOAD shim can reach it.
//! * [`interrupt`]: one signal lifecycle (SIGINT, SIGTERM, SIGHUP).
//! * [`journal`]: `Journal<Header, Record>`, fsync'd JSON Lines, created
//!   exclusively, locked while in use, a cut last line handled one way,
//!   every record checked against the header's design.
//! * [`output`]: every file pinsight writes goes to a temporary name in
//!   the same directory and is renamed into place; default names are
//!   created with `O_EXCL | O_NOFOLLOW`.
//! * [`export`]: an experiment's export files (`compare`, `mix`: JSON,
//!   CSV, Markdown, HTML) behind one interface, each written through
//!   [`output`].
#![forbid(unsafe_code)]

pub mod exit;
pub mod export;
pub mod interrupt;
pub mod journal;
pub mod output;
pub mod program;
pub mod state_file;
