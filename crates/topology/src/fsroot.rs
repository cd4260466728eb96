//! The one window on the OS, [`FsRoot`], now lives in `pinsight-sys`
//! ([`pinsight_sys::fsroot`]); re-exported here so existing callers keep
//! `pinsight_topology::FsRoot`.

pub use pinsight_sys::fsroot::*;
