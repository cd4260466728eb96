//! The only `unsafe` in this crate: thin, documented wrappers over the
//! Linux syscalls std does not offer (perf_event_open, pidfd_open, wait4,
//! process-group kill, pipes for the spawn handshake).

pub mod perf;
pub mod proc;
