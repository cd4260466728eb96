//! The OS calls this crate makes live in `pinsight-sys` (perf_event_open,
//! wait4 with rusage, waitid, pidfds, process-group kill, the one spawn
//! path); these are the names it uses for them.

pub(crate) use pinsight_sys::{perf, process as proc, spawn};
