//! Discovery from sysfs/procfs (under construction).
use crate::{FsRoot, Source, Topology};

/// Builds the model of the machine behind `fs`.
pub fn discover(fs: &FsRoot) -> Topology {
    Topology {
        source: if fs.is_live() { Source::Live } else { Source::Fsroot(fs.root().display().to_string()) },
        model_name: None,
        arch: None,
        cpus: vec![],
        cores: vec![],
        packages: vec![],
        dies: vec![],
        clusters: vec![],
        caches: vec![],
        numa_nodes: vec![],
        numa_distances: None,
        kinds: vec![],
        warnings: vec![],
    }
}
