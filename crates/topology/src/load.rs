//! The machine a command works on: discovered from sysfs (live or
//! recorded) or read from hwloc's XML, with the core kinds a user declared
//! applied on top.

use crate::{hwloc_xml, Needs};
use pinsight_model::declared::{self, DeclaredError, KindSpec};
use pinsight_model::{Source, Topology};
use pinsight_sys::FsRoot;
use std::path::Path;

/// Where the machine is read from.
#[derive(Clone, Copy, Debug)]
pub enum Origin<'a> {
    /// hwloc's XML export of a machine (`lstopo --of xml`).
    HwlocXml(&'a Path),
    /// A sysfs and procfs tree: this machine's, or a recorded one.
    Fs(&'a FsRoot),
}

/// The machine, and what discovery found where a declaration replaced it.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The machine, with the declared kinds applied.
    pub topology: Topology,
    /// The kinds discovery found, fastest first (`P (0-3) > E (4-7)`),
    /// when kinds were declared and discovery found several: said beside
    /// the declaration, so that a contradiction is visible.
    pub discovered_kinds: Option<String>,
}

/// Why the machine cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The hwloc XML file cannot be read or is not a machine.
    #[error("{0}")]
    HwlocXml(#[from] hwloc_xml::HwlocError),
    /// The declared kinds do not fit the machine.
    #[error("{0}")]
    Declared(#[from] DeclaredError),
}

/// The machine of `origin`, read as far as `needs` asks (all of the kinds
/// when some are declared: a declaration is applied to the kinds found),
/// with `declared` applied. A recorded machine unpacked from an archive
/// is named by the archive, not by the private directory it went to.
pub fn load(
    origin: Origin<'_>,
    needs: Needs,
    declared: Option<&KindSpec>,
) -> Result<Loaded, LoadError> {
    let needs = Needs {
        kinds: needs.kinds || declared.is_some(),
        ..needs
    };
    let mut topology = match origin {
        Origin::HwlocXml(path) => hwloc_xml::load(path)?,
        Origin::Fs(fs) => {
            let mut topo = crate::discover_with(fs, needs);
            if let Some(archive) = fs.archive() {
                topo.source = Source::Fsroot(archive.display().to_string());
            }
            topo
        }
    };
    let mut discovered_kinds = None;
    if let Some(spec) = declared {
        if topology.kinds.len() > 1 {
            let kinds: Vec<String> = topology
                .kinds
                .iter()
                .rev()
                .map(|k| format!("{} ({})", k.name, k.cpus))
                .collect();
            discovered_kinds = Some(kinds.join(" > "));
        }
        topology = declared::apply(&topology, spec)?;
    }
    Ok(Loaded {
        topology,
        discovered_kinds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_is_applied_and_what_discovery_found_is_kept_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("sys/devices/system/cpu");
        for n in 0..2 {
            std::fs::create_dir_all(cpu.join(format!("cpu{n}/topology"))).unwrap();
        }
        std::fs::write(cpu.join("online"), "0-1\n").unwrap();
        std::fs::write(cpu.join("possible"), "0-1\n").unwrap();
        let fs = FsRoot::at(dir.path()).unwrap();
        let plain = load(Origin::Fs(&fs), Needs::ALL, None).unwrap();
        assert!(plain.discovered_kinds.is_none());
        let spec = KindSpec::parse("0:P,1:E").unwrap();
        let declared = load(Origin::Fs(&fs), Needs::ALL, Some(&spec)).unwrap();
        assert_eq!(declared.topology.kinds.len(), 2);
        // One kind found: nothing to set beside the declaration.
        assert!(declared.discovered_kinds.is_none());
        let bad = KindSpec::parse("0-5:P").unwrap();
        assert!(matches!(
            load(Origin::Fs(&fs), Needs::ALL, Some(&bad)),
            Err(LoadError::Declared(_))
        ));
    }
}
