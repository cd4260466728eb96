//! Machine topology for pinsight: CPUs, cores, packages, dies, clusters,
//! caches, NUMA nodes and — the heart — core kinds, discovered from sysfs
//! (live or a recorded machine through `pinsight_sys::FsRoot`) or imported
//! from hwloc XML.
//!
//! The object model itself (`Topology` and its parts) is the pure
//! `pinsight-model` crate (import its types from there: this crate
//! re-exports nothing of another crate's); this crate fills it in: [`discover`](mod@discover) (sysfs), [`hwloc_xml`]
//! (hwloc XML import) and [`snapshot`] (recorded machines); [`hfi`] parses
//! and streams the kernel's dynamic capacity events (Intel HFI), and
//! [`hfi_watch`] is `topo --watch`'s loop over them; [`view`]
//! lays the machine out for `topo` (tree, `--explain`, `--watch`).

pub mod discover;
pub mod hfi;
pub mod hfi_watch;
pub mod hwloc_xml;
pub mod load;
pub mod snapshot;
pub mod view;
pub mod vm;

pub use discover::{discover, discover_with, Needs};
