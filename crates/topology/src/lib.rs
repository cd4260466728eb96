//! Machine topology for pinsight: CPUs, cores, packages, dies, clusters,
//! caches, NUMA nodes and — the heart — core kinds, discovered from sysfs
//! (live or a recorded machine through [`FsRoot`]) or imported from hwloc XML.

pub mod discover;
pub mod fsroot;
pub mod hwloc_xml;
pub mod model;
pub mod snapshot;

pub use discover::discover;
pub use fsroot::{FsRoot, FSROOT_ENV};
pub use model::*;
pub use pinsight_cpuset::CpuSet;
