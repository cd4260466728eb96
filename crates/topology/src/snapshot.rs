//! `pinsight snapshot`: record the part of a machine's /sys and /proc that
//! pinsight reads, as a directory (or a `.tar.gz` / `.tar.bz2`) that `--fsroot` accepts.
//!
//! Why record by *watching discovery* rather than by a fixed list of globs
//! (like `hwloc-gather-topology`)? The list would drift from the code. Here
//! discovery runs on a recording [`FsRoot`], and exactly the files it read
//! and the directories it listed are copied, so a snapshot always holds what
//! the running pinsight needs — and `discover` on the snapshot gives the same
//! model as on the machine (tested).
//!
//! Directory listings are reproduced whole: every entry of a listed
//! directory under /sys exists in the snapshot (subdirectories empty unless
//! something below them was read; files with their content), because
//! discovery enumerates `cpuN`, `nodeN`, `indexN` by listing. Symlinked
//! directories read through (`/sys/bus/cpu/devices/cpuN/...`) become plain
//! copies; a link discovery read as a link (`/sys/bus/pci/devices/*`, whose
//! targets say which bridges a device hangs under) stays a link, with the
//! same relative target, when nothing was read through it.
//!
//! Writing defers SIGINT/SIGTERM/SIGHUP, so an interrupted snapshot never
//! leaves half a directory or a partial archive behind; on an error, what
//! was written is removed again.

use crate::discover;
use pinsight_model::Source;
use pinsight_sys::progress::{Progress, Silent};
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The metadata file written at the top of every snapshot.
pub const METADATA_FILE: &str = "pinsight-snapshot.json";

/// Largest file copied to complete a directory listing (a file discovery
/// listed but did not read). sysfs attributes are at most a page.
const LISTING_FILE_CAP: u64 = 64 * 1024;

/// How deep `--extra` walks below `/sys/class/powercap/<zone>`.
const POWERCAP_DEPTH: usize = 4;

/// What to record and how to treat an existing destination.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Also copy `/sys/devices/system/cpu/cpu*/cpufreq/*` and
    /// `/sys/class/powercap/**` (for `compare` and energy readers).
    pub extra: bool,
    /// Replace a previous snapshot at the destination.
    pub force: bool,
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The directory or archive written.
    pub out: String,
    /// Files recorded (the metadata file not counted).
    pub files: usize,
    /// Their total size in bytes.
    pub bytes: u64,
}

impl Report {
    /// The human summary: `recorded 412 files (187.3 KiB) to mybox/`.
    pub fn summary(&self) -> String {
        format!(
            "recorded {} files ({:.1} KiB) to {}",
            self.files,
            self.bytes as f64 / 1024.0,
            self.out
        )
    }
}

/// `pinsight-snapshot.json`: where and when a snapshot was taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Version of the pinsight that recorded it.
    pub pinsight_version: String,
    /// UTC time of recording, RFC 3339 (`2025-01-31T12:00:00Z`).
    pub created: String,
    /// `/proc/sys/kernel/hostname` of the recorded machine, if readable.
    pub hostname: Option<String>,
    /// `/proc/sys/kernel/osrelease`, if readable.
    pub kernel: Option<String>,
    /// What was recorded: the live machine or another recorded tree.
    pub source: Source,
    /// Whether `--extra` files are included.
    pub extra: bool,
    pub files: usize,
    pub bytes: u64,
}

/// Why a snapshot could not be written (or its metadata read). The first
/// five concern the destination the caller chose ([`Error::is_destination`]);
/// [`Options::force`] lifts [`Error::ArchiveExists`] and
/// [`Error::DirectoryNotEmpty`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A name that asks for an archive format that is not written (nor
    /// read back by `--fsroot`): `.tar`, `.tar.xz`, `.zip`...
    #[error("'{}': cannot write a {ext} archive; an archive name ends in {} (or give a directory)", path.display(), ARCHIVE_SUFFIXES.join(", "))]
    UnsupportedArchive {
        path: PathBuf,
        /// The suffix asked for (`.tar.xz`).
        ext: String,
    },
    /// An archive name (`.tar.gz`) that names an existing directory.
    #[error("'{}' is a directory; an archive name must name a file", path.display())]
    ArchiveIsDirectory { path: PathBuf },
    /// The archive exists and replacing it was not asked for.
    #[error("'{}' exists", path.display())]
    ArchiveExists { path: PathBuf },
    /// The directory holds files and replacing the snapshot in it was not
    /// asked for.
    #[error("'{}' is not empty", path.display())]
    DirectoryNotEmpty { path: PathBuf },
    /// The destination exists and is not a directory.
    #[error("'{}' exists and is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    /// The destination cannot be inspected.
    #[error("'{}': {source}", path.display())]
    Destination {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A recorded file or directory cannot be read back.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Writing the snapshot failed (what was written is removed again).
    #[error("writing '{}': {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The metadata cannot be encoded.
    #[error("snapshot metadata: {0}")]
    EncodeMetadata(#[source] serde_json::Error),
    /// A snapshot's metadata file cannot be decoded.
    #[error("{}: {source}", path.display())]
    Metadata {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// Whether the destination the caller chose is at fault (rather than
    /// reading the machine or writing).
    pub fn is_destination(&self) -> bool {
        matches!(
            self,
            Error::ArchiveIsDirectory { .. }
                | Error::UnsupportedArchive { .. }
                | Error::ArchiveExists { .. }
                | Error::DirectoryNotEmpty { .. }
                | Error::NotADirectory { .. }
                | Error::Destination { .. }
        )
    }
}

/// The archive names written, with their compression: the two `--fsroot`
/// reads (gzip, what `pinsight snapshot` always wrote, and bzip2, how
/// hwloc ships its recorded machines).
const ARCHIVES: [(&str, Compression); 4] = [
    (".tar.gz", Compression::Gzip),
    (".tgz", Compression::Gzip),
    (".tar.bz2", Compression::Bzip2),
    (".tbz2", Compression::Bzip2),
];

/// The suffixes of the archive names a snapshot writes, for messages.
pub const ARCHIVE_SUFFIXES: [&str; 4] = [".tar.gz", ".tgz", ".tar.bz2", ".tbz2"];

/// Archive suffixes that are not written: refused rather than taken for a
/// directory name (`snapshot x.tar.xz` made a directory of that name).
const OTHER_ARCHIVES: [&str; 14] = [
    ".tar",
    ".tar.xz",
    ".txz",
    ".tar.zst",
    ".tzst",
    ".tar.lz4",
    ".tar.lzma",
    ".tlz",
    ".tar.lz",
    ".tar.Z",
    ".tbz",
    ".zip",
    ".7z",
    ".gz",
];

/// How an archive is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// gzip (`.tar.gz`, `.tgz`).
    Gzip,
    /// bzip2 (`.tar.bz2`, `.tbz2`).
    Bzip2,
}

fn file_name(out: &Path) -> String {
    out.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The compression `out`'s name asks for, `None` for a directory name.
pub fn archive_kind(out: &Path) -> Option<Compression> {
    let name = file_name(out);
    ARCHIVES
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|&(_, c)| c)
}

/// Whether `out` names an archive ([`ARCHIVE_SUFFIXES`]) rather than a directory.
pub fn is_archive(out: &Path) -> bool {
    archive_kind(out).is_some()
}

/// The archive suffix of `out` that is not written, if it has one.
fn unsupported_archive(out: &Path) -> Option<&'static str> {
    if is_archive(out) {
        return None;
    }
    let name = file_name(out);
    OTHER_ARCHIVES
        .iter()
        .filter(|s| name.len() > s.len() && name.ends_with(*s))
        .max_by_key(|s| s.len())
        .copied()
}

/// Records the machine behind `fs` into `out` (a directory, or a gzip- or
/// bzip2-compressed tarball, as its name asks, holding one directory
/// named after the archive).
pub fn snapshot(fs: &FsRoot, out: &Path, opts: &Options) -> Result<Report, Error> {
    snapshot_with_progress(fs, out, opts, &mut Silent)
}

/// [`snapshot`], with `progress` seeing one task, "writing snapshot": of
/// unknown length while the machine is read, then of every entry to write
/// (writing thousands of small files is the slow part on big machines).
pub fn snapshot_with_progress(
    fs: &FsRoot,
    out: &Path,
    opts: &Options,
    progress: &mut dyn Progress,
) -> Result<Report, Error> {
    check_destination(out, opts.force)?;
    progress.begin("writing snapshot", 0, 0);
    let written = record_and_write(fs, out, opts, progress);
    progress.end();
    written
}

/// [`snapshot_with_progress`] between the progress task's begin and end.
fn record_and_write(
    fs: &FsRoot,
    out: &Path,
    opts: &Options,
    progress: &mut dyn Progress,
) -> Result<Report, Error> {
    let recorded = record(fs, opts.extra);
    let tree = collect(fs, &recorded.paths)?;
    let files = tree.files.len() + tree.links.len();
    let bytes: u64 = tree.files.values().map(|c| c.len() as u64).sum();
    let meta = Metadata {
        pinsight_version: env!("CARGO_PKG_VERSION").to_string(),
        created: rfc3339_utc(std::time::SystemTime::now()),
        hostname: recorded.hostname,
        kernel: recorded.kernel,
        source: recorded.source,
        extra: opts.extra,
        files,
        bytes,
    };
    let json = serde_json::to_vec_pretty(&meta).map_err(Error::EncodeMetadata)?;
    {
        // SIGINT/SIGTERM/SIGHUP wait until the archive is written or
        // cleaned up.
        let _deferred =
            pinsight_sys::signals::DeferSignals::new(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
        let dirs = all_dirs(&tree);
        let total = (dirs.len() + tree.files.len() + tree.links.len() + 1) as u64;
        progress.resize(total);
        let mut done = 0u64;
        let mut tick = || {
            done += 1;
            progress.step("", done);
        };
        let entries = Entries {
            dirs: &dirs,
            tree: &tree,
            json: &json,
        };
        if is_archive(out) {
            write_archive(out, &entries, &mut tick)?;
        } else {
            write_dir(out, &entries, &mut tick)?;
        }
    }
    Ok(Report {
        out: out.display().to_string(),
        files,
        bytes,
    })
}

/// Reads the metadata of a snapshot directory.
pub fn read_metadata(dir: &Path) -> Result<Metadata, Error> {
    let path = dir.join(METADATA_FILE);
    // A recorded machine's metadata: a few hundred bytes, never a FIFO.
    let text = match pinsight_sys::fs::read_bounded_string(&path, 1 << 20) {
        Ok(text) => text,
        Err(pinsight_sys::fs::BoundedReadError::Io(source)) => {
            return Err(Error::Read { path, source })
        }
        Err(e) => {
            return Err(Error::Read {
                path,
                source: std::io::Error::other(e),
            })
        }
    };
    serde_json::from_str(&text).map_err(|source| Error::Metadata { path, source })
}

/// Refuses destinations we would clobber.
fn check_destination(out: &Path, force: bool) -> Result<(), Error> {
    let path = out.to_path_buf();
    if let Some(ext) = unsupported_archive(out) {
        return Err(Error::UnsupportedArchive {
            path,
            ext: ext.to_string(),
        });
    }
    if is_archive(out) {
        if out.is_dir() {
            return Err(Error::ArchiveIsDirectory { path });
        }
        if out.exists() && !force {
            return Err(Error::ArchiveExists { path });
        }
        return Ok(());
    }
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() && !force {
                return Err(Error::DirectoryNotEmpty { path });
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) if out.exists() => Err(Error::NotADirectory { path }),
        Err(source) => Err(Error::Destination { path, source }),
    }
}

/// What a recording discovery saw.
struct Recorded {
    paths: Vec<PathBuf>,
    hostname: Option<String>,
    kernel: Option<String>,
    source: Source,
}

/// Runs discovery (and the `--extra` readers) on a recording view of `fs`.
fn record(fs: &FsRoot, extra: bool) -> Recorded {
    let rec = fs.clone().recording();
    let mut topo = discover(&rec);
    if let Some(archive) = fs.archive() {
        // Re-recording a `.tar.gz`: name it, not where it was unpacked.
        topo.source = Source::Fsroot(archive.display().to_string());
    }
    let hostname = rec.read_opt("/proc/sys/kernel/hostname");
    let kernel = rec.read_opt("/proc/sys/kernel/osrelease");
    if extra {
        read_extra(&rec);
    }
    Recorded {
        paths: rec.recorded(),
        hostname,
        kernel,
        source: topo.source,
    }
}

/// Touches the files `--extra` adds, so the recorder notes the readable ones.
fn read_extra(rec: &FsRoot) {
    let cpu_dir = Path::new("/sys/devices/system/cpu");
    for cpu in rec.list_dir(cpu_dir) {
        if !(cpu.starts_with("cpu")
            && cpu[3..].bytes().all(|b| b.is_ascii_digit())
            && cpu.len() > 3)
        {
            continue;
        }
        let freq = cpu_dir.join(&cpu).join("cpufreq");
        for name in rec.list_dir(&freq) {
            let p = freq.join(name);
            if is_regular_file(rec, &p) {
                let _ = rec.read_opt(&p);
            }
        }
    }
    let powercap = Path::new("/sys/class/powercap");
    for zone in rec.list_dir(powercap) {
        walk_files(rec, &powercap.join(zone), POWERCAP_DEPTH);
    }
}

/// Reads every regular file below `dir`, descending into real (not
/// symlinked) subdirectories only: sysfs links such as `subsystem` and
/// `device` lead back up the tree and would never end.
fn walk_files(rec: &FsRoot, dir: &Path, depth: usize) {
    let real_dir = rec.path(dir);
    for name in rec.list_dir(dir) {
        let p = dir.join(&name);
        // The entry itself, not where FsRoot would lead (it follows
        // absolute links of recorded trees).
        match std::fs::symlink_metadata(real_dir.join(&name)) {
            Ok(m) if m.is_dir() && depth > 0 => walk_files(rec, &p, depth - 1),
            Ok(m) if m.is_file() => {
                let _ = rec.read_opt(&p);
            }
            _ => {}
        }
    }
}

fn is_regular_file(fs: &FsRoot, abs: &Path) -> bool {
    std::fs::metadata(fs.path(abs)).is_ok_and(|m| m.is_file())
}

/// The snapshot's content: OS paths (`/sys/...`) of directories, files and
/// symbolic links (with their targets as written).
#[derive(Default)]
struct Tree {
    dirs: BTreeSet<PathBuf>,
    files: BTreeMap<PathBuf, Vec<u8>>,
    links: BTreeMap<PathBuf, PathBuf>,
}

/// Copies the recorded paths' current content, completing listings.
fn collect(fs: &FsRoot, recorded: &[PathBuf]) -> Result<Tree, Error> {
    let mut tree = Tree::default();
    let recorded_set: BTreeSet<&PathBuf> = recorded.iter().collect();
    for abs in recorded {
        if let Some(target) = kept_link(fs, abs, &recorded_set) {
            tree.links.insert(abs.clone(), target);
            continue;
        }
        let src = fs.path(abs);
        let meta = std::fs::metadata(&src).map_err(|source| Error::Read {
            path: src.clone(),
            source,
        })?;
        if meta.is_dir() {
            tree.dirs.insert(abs.clone());
            if abs.starts_with("/sys") {
                complete_listing(fs, abs, &recorded_set, &mut tree);
            }
        } else {
            let content = std::fs::read(&src).map_err(|source| Error::Read {
                path: src.clone(),
                source,
            })?;
            tree.files.insert(abs.clone(), content);
        }
    }
    Ok(tree)
}

/// The target of `abs` if it is a relative symbolic link under /sys that
/// nothing was read through (no recorded path lies below it): such a link
/// is kept as a link. Others (a link read through, an absolute target) are
/// copied as what they lead to.
fn kept_link(fs: &FsRoot, abs: &Path, recorded: &BTreeSet<&PathBuf>) -> Option<PathBuf> {
    if !abs.starts_with("/sys") {
        return None;
    }
    let at = if fs.is_live() {
        abs.to_path_buf()
    } else {
        fs.path(abs.parent()?).join(abs.file_name()?)
    };
    let target = std::fs::read_link(at).ok()?;
    if target.is_absolute() {
        return None;
    }
    let below = recorded
        .range::<PathBuf, _>((
            std::ops::Bound::Excluded(abs.to_path_buf()),
            std::ops::Bound::Unbounded,
        ))
        .next()
        .is_some_and(|p| p.starts_with(abs));
    (!below).then_some(target)
}

/// Adds every entry of a listed directory that nothing read: directories
/// empty, small readable files with their content.
fn complete_listing(fs: &FsRoot, dir: &Path, recorded: &BTreeSet<&PathBuf>, tree: &mut Tree) {
    for name in fs.list_dir(dir) {
        let abs = dir.join(&name);
        if recorded.contains(&abs) {
            continue;
        }
        let src = fs.path(&abs);
        match std::fs::metadata(&src) {
            Ok(m) if m.is_dir() => {
                tree.dirs.insert(abs);
            }
            Ok(m) if m.is_file() => {
                let mut content = Vec::new();
                let read = File::open(&src)
                    .and_then(|f| f.take(LISTING_FILE_CAP + 1).read_to_end(&mut content));
                if read.is_ok() && content.len() as u64 <= LISTING_FILE_CAP {
                    tree.files.insert(abs, content);
                }
            }
            _ => {}
        }
    }
}

/// `/sys/a/b` → `sys/a/b`.
fn relative(abs: &Path) -> PathBuf {
    abs.components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
}

/// Every directory the tree needs, parents first.
fn all_dirs(tree: &Tree) -> BTreeSet<PathBuf> {
    let mut dirs = BTreeSet::new();
    let parents = tree
        .files
        .keys()
        .chain(tree.links.keys())
        .filter_map(|f| f.parent());
    for d in tree.dirs.iter().map(PathBuf::as_path).chain(parents) {
        let rel = relative(d);
        for a in rel.ancestors() {
            if !a.as_os_str().is_empty() {
                dirs.insert(a.to_path_buf());
            }
        }
    }
    dirs
}

/// What a snapshot writes, in the order it writes it: its directories
/// (parents first), its files, its links, and last its metadata.
struct Entries<'a> {
    dirs: &'a BTreeSet<PathBuf>,
    tree: &'a Tree,
    json: &'a [u8],
}

/// Where a snapshot's entries go (a directory or an archive), each named
/// by its path below the snapshot's top.
trait Sink {
    fn dir(&mut self, rel: &Path) -> io::Result<()>;
    fn file(&mut self, rel: &Path, content: &[u8]) -> io::Result<()>;
    fn link(&mut self, rel: &Path, target: &Path) -> io::Result<()>;
}

impl Entries<'_> {
    /// Puts every entry into `sink`, calling `tick` after each but the
    /// metadata (the caller ticks once the snapshot is complete).
    fn put(&self, sink: &mut dyn Sink, tick: &mut dyn FnMut()) -> io::Result<()> {
        for d in self.dirs {
            sink.dir(d)?;
            tick();
        }
        for (abs, content) in &self.tree.files {
            sink.file(&relative(abs), content)?;
            tick();
        }
        for (abs, target) in &self.tree.links {
            sink.link(&relative(abs), target)?;
            tick();
        }
        sink.file(Path::new(METADATA_FILE), self.json)
    }
}

/// A snapshot directory's entries, below `out`.
struct DirSink<'a>(&'a Path);

impl Sink for DirSink<'_> {
    fn dir(&mut self, rel: &Path) -> io::Result<()> {
        std::fs::create_dir_all(self.0.join(rel))
    }

    fn file(&mut self, rel: &Path, content: &[u8]) -> io::Result<()> {
        std::fs::write(self.0.join(rel), content)
    }

    fn link(&mut self, rel: &Path, target: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, self.0.join(rel))
    }
}

fn write_dir(out: &Path, entries: &Entries<'_>, tick: &mut dyn FnMut()) -> Result<(), Error> {
    let created = !out.exists();
    let result = (|| -> io::Result<()> {
        // A forced rewrite replaces exactly what a snapshot consists of and
        // leaves anything else the user keeps there alone.
        for old in ["sys", "proc"] {
            let p = out.join(old);
            if p.symlink_metadata().is_ok() {
                std::fs::remove_dir_all(&p)?;
            }
        }
        std::fs::create_dir_all(out)?;
        entries.put(&mut DirSink(out), tick)?;
        tick();
        Ok(())
    })();
    result.map_err(|e| {
        if created {
            let _ = std::fs::remove_dir_all(out);
        } else {
            for p in ["sys", "proc"] {
                let _ = std::fs::remove_dir_all(out.join(p));
            }
            let _ = std::fs::remove_file(out.join(METADATA_FILE));
        }
        Error::Write {
            path: out.to_path_buf(),
            source: e,
        }
    })
}

/// The directory name inside an archive: its file name without `.tar.gz`
/// (or the other archive suffix).
fn archive_top(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = ARCHIVE_SUFFIXES
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(&name);
    PathBuf::from(if stem.is_empty() { "snapshot" } else { stem })
}

/// An archive's entries, below its top directory `top`, each stamped
/// with the time `mtime` (seconds since the epoch).
struct ArchiveSink {
    tar: tar::Builder<Box<dyn Finish>>,
    top: PathBuf,
    mtime: u64,
}

impl ArchiveSink {
    fn header(&self, kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_mtime(self.mtime);
        h
    }
}

impl Sink for ArchiveSink {
    fn dir(&mut self, rel: &Path) -> io::Result<()> {
        let mut h = self.header(tar::EntryType::Directory, 0o755, 0);
        self.tar
            .append_data(&mut h, self.top.join(rel), io::empty())
    }

    fn file(&mut self, rel: &Path, content: &[u8]) -> io::Result<()> {
        let mut h = self.header(tar::EntryType::Regular, 0o644, content.len() as u64);
        self.tar.append_data(&mut h, self.top.join(rel), content)
    }

    fn link(&mut self, rel: &Path, target: &Path) -> io::Result<()> {
        let mut h = self.header(tar::EntryType::Symlink, 0o777, 0);
        self.tar.append_link(&mut h, self.top.join(rel), target)
    }
}

fn write_archive(out: &Path, entries: &Entries<'_>, tick: &mut dyn FnMut()) -> Result<(), Error> {
    let mut partial = out.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = PathBuf::from(partial);
    let result = (|| -> io::Result<()> {
        // A name of its own, never a link planted there (O_EXCL |
        // O_NOFOLLOW), renamed into place once whole and synced.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&partial)?;
        let compressed: Box<dyn Finish> = match archive_kind(out) {
            Some(Compression::Bzip2) => Box::new(bzip2::write::BzEncoder::new(
                file,
                bzip2::Compression::default(),
            )),
            _ => Box::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
        };
        let mut sink = ArchiveSink {
            tar: tar::Builder::new(compressed),
            top: archive_top(out),
            mtime: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let mut h = sink.header(tar::EntryType::Directory, 0o755, 0);
        sink.tar.append_data(&mut h, &sink.top, io::empty())?;
        entries.put(&mut sink, tick)?;
        let mut file = sink.tar.into_inner()?.finish_file()?;
        file.flush()?;
        file.sync_all()?;
        std::fs::rename(&partial, out)?;
        tick();
        Ok(())
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        Error::Write {
            path: out.to_path_buf(),
            source: e,
        }
    })
}

/// A compressing writer over the archive file, finished explicitly (the
/// trailer written, the file handed back to be synced).
trait Finish: io::Write {
    fn finish_file(self: Box<Self>) -> io::Result<std::fs::File>;
}

impl Finish for flate2::write::GzEncoder<std::fs::File> {
    fn finish_file(self: Box<Self>) -> io::Result<std::fs::File> {
        (*self).finish()
    }
}

impl Finish for bzip2::write::BzEncoder<std::fs::File> {
    fn finish_file(self: Box<Self>) -> io::Result<std::fs::File> {
        (*self).finish()
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a system time (civil-from-days, proleptic
/// Gregorian; no date crate needed for one timestamp).
pub fn rfc3339_utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn summaries_give_sizes_in_kib() {
        let r = |bytes| Report {
            out: "mybox/".into(),
            files: 412,
            bytes,
        };
        assert_eq!(r(0).summary(), "recorded 412 files (0.0 KiB) to mybox/");
        assert_eq!(
            r(191_795).summary(),
            "recorded 412 files (187.3 KiB) to mybox/"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(1_735_689_599)),
            "2024-12-31T23:59:59Z"
        );
    }

    #[test]
    fn archive_names() {
        assert!(is_archive(Path::new("x/box.tar.gz")) && is_archive(Path::new("box.tgz")));
        assert!(!is_archive(Path::new("box.tar")) && !is_archive(Path::new("box")));
        assert_eq!(
            archive_kind(Path::new("box.tar.bz2")),
            Some(Compression::Bzip2)
        );
        assert_eq!(
            archive_kind(Path::new("box.tbz2")),
            Some(Compression::Bzip2)
        );
        assert_eq!(archive_kind(Path::new("box.tgz")), Some(Compression::Gzip));
        assert_eq!(archive_top(Path::new("b.tar.bz2")), PathBuf::from("b"));
        assert_eq!(unsupported_archive(Path::new("b.tar.xz")), Some(".tar.xz"));
        assert_eq!(unsupported_archive(Path::new("b.tar")), Some(".tar"));
        assert_eq!(unsupported_archive(Path::new("b.zip")), Some(".zip"));
        assert_eq!(unsupported_archive(Path::new("b.tar.gz")), None);
        assert_eq!(unsupported_archive(Path::new("mybox")), None);
        assert_eq!(unsupported_archive(Path::new(".tar")), None);
        assert_eq!(
            archive_top(Path::new("/tmp/box.tar.gz")),
            PathBuf::from("box")
        );
        assert_eq!(archive_top(Path::new("a.tgz")), PathBuf::from("a"));
    }

    #[test]
    fn relative_and_dirs() {
        assert_eq!(relative(Path::new("/sys/a/b")), PathBuf::from("sys/a/b"));
        let mut t = Tree::default();
        t.files.insert("/sys/a/b/c".into(), vec![]);
        t.dirs.insert("/proc".into());
        let d: Vec<PathBuf> = all_dirs(&t).into_iter().collect();
        assert_eq!(d, ["proc", "sys", "sys/a", "sys/a/b"].map(PathBuf::from));
    }
}
