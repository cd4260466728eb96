//! What `/proc` says about a process's threads, read through
//! [`FsRoot`](pinsight_topology::FsRoot): the parsers and readers live in
//! `pinsight-sys` ([`pinsight_sys::procfs`]), re-exported here for existing
//! callers.

pub use pinsight_sys::procfs::*;
