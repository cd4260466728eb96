//! The machines the suites read, from one place.
//!
//! - Recorded machines: hwloc's test-suite dumps, kept in the repository
//!   as hwloc ships them (`crates/topology/tests/fixtures/hwloc/NAME.tar.bz2`,
//!   beside the expected `NAME.console`/`NAME.xml` and `NAME.test`), are
//!   unpacked through `FsRoot`'s own archive reader
//!   ([`pinsight_sys::archive`]), so the suites read them exactly as
//!   `--fsroot NAME.tar.bz2` would.
//! - Synthetic machines ([`crate::synth::committed`]) are written by the
//!   generator; the hand-made `fake-devices` is a tarball too.
//!
//! Each tree is made once per build directory and kept there
//! (`target/<profile>/pinsight-fixtures/`, or `$PINSIGHT_FIXTURE_CACHE`),
//! under a name carrying a hash of its source (the tarball's bytes, the
//! generated files), so a changed source gets a new tree and no test
//! process pays for unpacking twice. A tree is made in a private directory
//! and renamed into place, so concurrent test processes never see half of
//! one. Suites read these trees and never write them (a test that alters a
//! machine copies it first).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// `crates/topology/tests/fixtures`: the recorded machines' tarballs and
/// expected outputs (`hwloc/`), hwloc XML files (`xml/`), `synthetic/`.
pub fn topology_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topology/tests/fixtures")
}

/// `crates/topology/tests/fixtures/hwloc`: `NAME.tar.bz2`, `NAME.test`,
/// `NAME.console` or `NAME.xml`, and hwloc's licence (`COPYING-hwloc`).
pub fn hwloc_dir() -> PathBuf {
    topology_fixtures().join("hwloc")
}

/// The names of every recorded machine (`NAME` of each `NAME.tar.bz2`),
/// sorted.
pub fn hwloc_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(hwloc_dir())
        .expect("the recorded machines' directory")
        .filter_map(|e| {
            let f = e.ok()?.file_name().to_string_lossy().into_owned();
            f.strip_suffix(".tar.bz2").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// The root (holding `sys/` and `proc/`) of the recorded machine `name`,
/// named after the tarball: four of hwloc's tarballs hold a top directory
/// of another name (`32amd64-4s2n4c-cgroup2.tar.bz2` holds
/// `32amd64-4s2n4c-cgroup/`), as `.test` files name them.
pub fn hwloc(name: &str) -> PathBuf {
    cached(&format!("hwloc/{name}"), || {
        let tarball = hwloc_dir().join(format!("{name}.tar.bz2"));
        let bytes = std::fs::read(&tarball)
            .unwrap_or_else(|e| panic!("recorded machine {}: {e}", tarball.display()));
        (hash(&bytes), Source::Archive(tarball))
    })
}

/// [`hwloc`] when a machine `name` is recorded, else `None`.
pub fn hwloc_if_recorded(name: &str) -> Option<PathBuf> {
    hwloc_dir()
        .join(format!("{name}.tar.bz2"))
        .is_file()
        .then(|| hwloc(name))
}

/// Every recorded machine's root, sorted by name.
pub fn hwloc_all() -> Vec<PathBuf> {
    hwloc_names().iter().map(|n| hwloc(n)).collect()
}

/// The root of the synthetic machine `name`: one of
/// [`crate::synth::committed`], or the hand-made `fake-devices`
/// (`synthetic/fake-devices.tar.gz`, see the README beside it).
pub fn synthetic(name: &str) -> PathBuf {
    cached(&format!("synthetic/{name}"), || {
        let tarball = topology_fixtures().join(format!("synthetic/{name}.tar.gz"));
        if tarball.is_file() {
            let bytes = std::fs::read(&tarball).expect("synthetic machine tarball");
            return (hash(&bytes), Source::Archive(tarball));
        }
        let machine = crate::synth::committed()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| m)
            .unwrap_or_else(|| panic!("no synthetic machine named {name}"));
        let files = machine.files();
        (hash(&files), Source::Files(files))
    })
}

/// Every synthetic machine's name (the generated ones and the tarballs).
pub fn synthetic_names() -> Vec<String> {
    let mut names: Vec<String> = crate::synth::committed()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect();
    if let Ok(rd) = std::fs::read_dir(topology_fixtures().join("synthetic")) {
        for e in rd.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            if let Some(n) = f.strip_suffix(".tar.gz") {
                names.push(n.to_string());
            }
        }
    }
    names.sort();
    names
}

/// A machine by the path it had under `crates/topology/tests/fixtures`:
/// `hwloc/NAME[/more]` or `synthetic/NAME[/more]`.
pub fn machine(rel: &str) -> PathBuf {
    let rel = rel.trim_matches('/');
    let mut parts = rel.splitn(3, '/');
    let (kind, name, rest) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next(),
    );
    let root = match kind {
        "hwloc" => hwloc(name),
        "synthetic" => synthetic(name),
        _ => panic!("{rel}: not hwloc/NAME or synthetic/NAME"),
    };
    match rest {
        Some(r) => root.join(r),
        None => root,
    }
}

enum Source {
    Archive(PathBuf),
    Files(crate::synth::Files),
}

fn hash(v: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// Where the trees are kept: `$PINSIGHT_FIXTURE_CACHE`, else
/// `pinsight-fixtures` in the profile directory of the running test
/// binary (as [`crate::skip_log`] finds it), else under `$TMPDIR`.
pub fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("PINSIGHT_FIXTURE_CACHE") {
        return PathBuf::from(p);
    }
    crate::skip_log()
        .and_then(|log| log.parent().map(|p| p.join("pinsight-fixtures")))
        .unwrap_or_else(|| std::env::temp_dir().join("pinsight-fixtures"))
}

/// The tree for `key` (`hwloc/NAME`, `synthetic/NAME`), made on first use.
fn cached(key: &str, source: impl FnOnce() -> (u64, Source)) -> PathBuf {
    static MADE: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let made = MADE.get_or_init(Default::default);
    // One lock for the whole making: two threads of one process wanting
    // the same tree make it once.
    let mut made = made.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = made.get(key) {
        return p.clone();
    }
    let (digest, source) = source();
    let (kind, name) = key.split_once('/').expect("kind/name");
    let parent = cache_dir().join(kind);
    let dest = parent.join(format!("{name}-{digest:016x}"));
    if !dest.is_dir() {
        std::fs::create_dir_all(&parent)
            .unwrap_or_else(|e| panic!("fixture cache {}: {e}", parent.display()));
        make(&source, &parent, &dest);
    }
    made.insert(key.to_string(), dest.clone());
    dest
}

/// Makes the tree privately under `parent`, then renames it to `dest`; a
/// process that lost the race to another keeps the other's tree.
fn make(source: &Source, parent: &Path, dest: &Path) {
    let made = match source {
        Source::Archive(tarball) => {
            let unpacked = pinsight_sys::archive::unpack_under(tarball, parent)
                .unwrap_or_else(|e| panic!("{e}"));
            let r = std::fs::rename(unpacked.root(), dest);
            // `unpacked` removes what is left of its private directory.
            drop(unpacked);
            r
        }
        Source::Files(files) => {
            let tmp = tempfile::Builder::new()
                .prefix(".making-")
                .tempdir_in(parent)
                .unwrap_or_else(|e| panic!("fixture cache {}: {e}", parent.display()));
            for (rel, text) in files {
                let p = tmp.path().join(rel);
                std::fs::create_dir_all(p.parent().expect("relative path"))
                    .and_then(|()| std::fs::write(&p, text))
                    .unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
            }
            std::fs::rename(tmp.path(), dest)
        }
    };
    if let Err(e) = made {
        assert!(
            dest.is_dir(),
            "cannot put a fixture tree at {}: {e}",
            dest.display()
        );
    }
}
