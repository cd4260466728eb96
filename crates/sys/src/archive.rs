//! A recorded machine packed as a `.tar.gz` (what `pinsight snapshot
//! OUT.tar.gz` writes: one directory holding `sys/`, `proc/` and
//! `pinsight-snapshot.json`) or a `.tar.bz2` (how hwloc's test suite ships
//! its Linux dumps, `tests/hwloc/linux/*.tar.bz2`), unpacked into a private
//! temporary directory that lives as long as the [`crate::FsRoot`] reading
//! it (and its clones). The compression is told by the file's first bytes
//! (gzip `1f 8b`, bzip2 `BZh`), not by its name.
//!
//! Why unpack rather than serve reads from memory: [`crate::FsRoot`]'s read
//! path works on real files (cached directory resolution, `O_NOFOLLOW`
//! opens, link re-rooting); a directory keeps that one path for both kinds
//! of recording. The archive comes from elsewhere, so it is treated as
//! hostile: absolute paths, `..`, entries below a symlink, symlinks leading
//! out of the tree (an absolute target such as `sys -> /sys` included: it
//! would read the live machine as the recording), hard links, devices and
//! FIFOs are refused, and the unpacked size and entry count are bounded.
//! Refusing, not skipping: a damaged or doctored recording is reported,
//! never half read.
//!
//! The unpack directory is removed when the [`crate::FsRoot`] is dropped,
//! on SIGINT, SIGTERM and SIGHUP ([`remove_unpacked_now`]), and, when its
//! process was killed outright (`kill -9`), by the next unpack under the
//! same parent: the directory is named `pinsight-fsroot-PID-*` and its
//! owner holds an exclusive `flock(2)` on it while it lives, so a
//! directory whose lock is free and whose PID is gone is stale.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

/// Most bytes unpacked from one archive. A snapshot of a 256-CPU machine is
/// a few MiB; this leaves room for `--extra` and hwloc's dumps while a
/// decompression bomb stops early.
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

/// Most entries unpacked from one archive (a 256-CPU snapshot has ~20 000).
pub const MAX_ENTRIES: usize = 1_000_000;

/// Why an archive cannot serve as a recorded machine. Every variant names
/// the archive.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// Not a readable gzip- or bzip2-compressed tar file.
    #[error("{}: not a readable .tar.gz recording (nor .tar.bz2: {source})", path.display())]
    Read {
        /// The archive.
        path: PathBuf,
        /// What failed reading it.
        #[source]
        source: io::Error,
    },
    /// An entry that could lead outside the recording or is no file,
    /// directory or link.
    #[error("{}: refused entry '{}': {reason}", path.display(), crate::text::shown(entry))]
    Hostile {
        /// The archive.
        path: PathBuf,
        /// The entry's path as stored.
        entry: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// More bytes or entries than any recording holds.
    #[error("{}: unpacks to more than {limit} (a recording is a few MiB); refused", path.display())]
    TooBig {
        /// The archive.
        path: PathBuf,
        /// The bound exceeded, in words.
        limit: String,
    },
    /// The private directory to unpack into cannot be made or written.
    #[error("{}: cannot unpack into a temporary directory: {source}", path.display())]
    Unpack {
        /// The archive.
        path: PathBuf,
        /// What failed.
        #[source]
        source: io::Error,
    },
}

/// The unpack directories still on disk, for removal when the process is
/// stopped by SIGINT, SIGTERM or SIGHUP (where no destructor runs). This
/// crate keeps only the registry; the one signal lifecycle
/// (`pinsight_lifecycle::interrupt`, a layer up) calls
/// [`remove_unpacked_now`] among its restorers, so the caller sees the
/// status it would have seen and nothing is left in the temporary
/// directory.
mod on_signal {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    /// Set once a signal came: unpacking stops at the next entry.
    pub static STOPPING: AtomicBool = AtomicBool::new(false);
    /// Held while one entry is written: the removal waits for the entry
    /// in progress, which could otherwise recreate the directory it just
    /// removed (`create_dir_all` of an entry's parents makes the unpack
    /// directory again).
    pub static WRITING: Mutex<()> = Mutex::new(());

    /// Makes a directory with `make` and adds it to the directories
    /// removed on a signal, both under the registry's lock: a signal's
    /// cleanup, handled on any thread, waits for the two to be done, so
    /// no directory exists unregistered.
    pub fn make_registered<E>(
        make: impl FnOnce() -> Result<tempfile::TempDir, E>,
    ) -> Result<tempfile::TempDir, E> {
        let mut dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner());
        let dir = make()?;
        dirs.push(dir.path().to_path_buf());
        Ok(dir)
    }

    pub fn unregister(dir: &Path) {
        DIRS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| d != dir);
    }

    /// Stops unpacking and removes every registered directory; returns
    /// the ones that could not be removed, in words.
    pub fn remove_all() -> Vec<String> {
        STOPPING.store(true, Ordering::SeqCst);
        // Kept until the process ends: no entry is written after this.
        let writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::forget(writing);
        let dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut failed = Vec::new();
        for d in dirs {
            // The unpacking thread may still be adding an entry.
            let mut last = None;
            for _ in 0..50 {
                match std::fs::remove_dir_all(&d) {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(_) if !d.exists() => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            if let Some(e) = last {
                failed.push(format!("{}: not removed: {e}", d.display()));
            }
        }
        failed
    }
}

/// Removes every archive unpack directory still on disk and stops any
/// unpacking in progress: the restorer the signal lifecycle runs on
/// SIGINT, SIGTERM and SIGHUP. Returns what could not be removed.
pub fn remove_unpacked_now() -> Vec<String> {
    on_signal::remove_all()
}

/// Waits for the end a signal's cleanup is bringing (it ends the process).
fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// An unpacked archive: removed from disk when dropped.
#[derive(Debug)]
pub struct Unpacked {
    dir: tempfile::TempDir,
    root: PathBuf,
    archive: PathBuf,
    /// The directory, open and `flock`ed while this lives: what tells a
    /// later sweep ([`remove_stale`]) that its owner is alive.
    _lock: std::os::fd::OwnedFd,
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        // The directory goes with `dir` now; no signal must race for it.
        on_signal::unregister(self.dir.path());
    }
}

impl Unpacked {
    /// The recorded machine's root (holding `sys/`): the archive's single
    /// top directory, or the unpack directory when the archive has `sys/`
    /// at its top or several top entries.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The archive it came from.
    pub fn archive(&self) -> &Path {
        &self.archive
    }

    /// The private directory everything was unpacked into.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Whether `path` is a regular file (so `--fsroot` means an archive).
pub fn is_archive_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Unpacks `archive` (gzip- or bzip2-compressed tar) into a new private temporary
/// directory (under `$TMPDIR`), with the default bounds.
pub fn unpack(archive: &Path) -> Result<Unpacked, ArchiveError> {
    unpack_bounded(archive, MAX_TOTAL_BYTES, MAX_ENTRIES)
}

/// [`unpack`] with explicit bounds (tests use small ones).
pub fn unpack_bounded(
    archive: &Path,
    max_bytes: u64,
    max_entries: usize,
) -> Result<Unpacked, ArchiveError> {
    unpack_in(archive, &std::env::temp_dir(), max_bytes, max_entries)
}

/// [`unpack`] into a new private directory under `parent` rather than
/// `$TMPDIR` (so the caller can rename the unpacked tree within one file
/// system, as the test kit's fixture cache does).
pub fn unpack_under(archive: &Path, parent: &Path) -> Result<Unpacked, ArchiveError> {
    unpack_in(archive, parent, MAX_TOTAL_BYTES, MAX_ENTRIES)
}

/// [`unpack_bounded`] into a new directory under `parent`.
fn unpack_in(
    archive: &Path,
    parent: &Path,
    max_bytes: u64,
    max_entries: usize,
) -> Result<Unpacked, ArchiveError> {
    let path = archive.to_path_buf();
    let read_err = |source: io::Error| ArchiveError::Read {
        path: path.clone(),
        source,
    };
    let file = File::open(archive).map_err(read_err)?;
    remove_stale(parent);
    let unpack_err = |source: io::Error| ArchiveError::Unpack {
        path: path.clone(),
        source,
    };
    let dir = on_signal::make_registered(|| {
        tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir_in(parent)
            .map_err(unpack_err)
    })?;
    let lock = match lock_dir(dir.path(), false) {
        Ok(Some(fd)) => fd,
        Ok(None) => {
            on_signal::unregister(dir.path());
            return Err(unpack_err(io::Error::from_raw_os_error(libc::EWOULDBLOCK)));
        }
        Err(e) => {
            on_signal::unregister(dir.path());
            return Err(unpack_err(e));
        }
    };
    // On any error `dir` is dropped, removing what was unpacked; on a
    // signal, the cleanup thread removes it.
    let extracted = extract(file, dir.path(), &path, max_bytes, max_entries);
    if on_signal::STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
        // A signal's cleanup removed the directory under us (an entry may
        // have failed half-written): the process is about to die by that
        // signal; reporting the removal as an error would end it first,
        // with another status.
        park_forever();
    }
    if let Err(e) = extracted {
        on_signal::unregister(dir.path());
        return Err(e);
    }
    let root = choose_root(dir.path());
    Ok(Unpacked {
        dir,
        root,
        archive: path,
        _lock: lock,
    })
}

/// The start of every unpack directory's name (`pinsight-fsroot-PID-`
/// and a random part).
const PREFIX: &str = "pinsight-fsroot-";

/// Opens directory `dir` and takes an exclusive `flock(2)` on it (held as
/// long as the descriptor lives, and not passed to programs: close on
/// exec). `Ok(None)` when another process holds it (only with
/// `nonblocking`; else it is waited for).
fn lock_dir(dir: &Path, nonblocking: bool) -> io::Result<Option<std::os::fd::OwnedFd>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)?;
    let op = libc::LOCK_EX | if nonblocking { libc::LOCK_NB } else { 0 };
    loop {
        // SAFETY: a descriptor this function owns; plain integer arguments.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(Some(f.into()));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// The PID in an unpack directory's name (`pinsight-fsroot-PID-xxxx`).
fn owner_pid(name: &str) -> Option<libc::pid_t> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok().filter(|&p: &libc::pid_t| p > 0)
}

/// Removes the unpack directories under `parent` that a killed process
/// left (`kill -9`, where nothing of its own could run): this user's,
/// named after a PID that no longer runs, and whose `flock` nobody holds
/// (a live owner, even in another PID namespace, holds it). Best effort:
/// what cannot be removed is left for the next time. Returns the
/// directories removed.
pub fn remove_stale(parent: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let me = crate::process::geteuid();
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        let path = e.path();
        let Ok(md) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !md.is_dir() || md.uid() != me || pid_alive(pid) {
            continue;
        }
        // Held while removing, so two sweeps do not race each other.
        if let Ok(Some(_held)) = lock_dir(&path, true) {
            if std::fs::remove_dir_all(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed
}

/// Whether process `pid` exists (`kill(pid, 0)`: EPERM means it does).
fn pid_alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks; plain integer arguments.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The recording's root inside the unpack directory.
fn choose_root(dir: &Path) -> PathBuf {
    if dir.join("sys").is_dir() {
        return dir.to_path_buf();
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    match entries.as_slice() {
        [only] if std::fs::symlink_metadata(only).is_ok_and(|m| m.is_dir()) => only.clone(),
        _ => dir.to_path_buf(),
    }
}

fn extract(
    file: File,
    dest: &Path,
    archive: &Path,
    max_bytes: u64,
    max_entries: usize,
) -> Result<(), ArchiveError> {
    let mut u = Unpack {
        dest,
        archive,
        max_bytes,
        max_entries,
        links: BTreeSet::new(),
        relative_links: Vec::new(),
        total: 0,
        count: 0,
    };
    let mut input = io::BufReader::new(file);
    let magic = io::BufRead::fill_buf(&mut input).map_err(|e| u.read_err(e))?;
    let decoder: Box<dyn Read> = if magic.starts_with(b"BZh") {
        Box::new(bzip2::read::MultiBzDecoder::new(input))
    } else {
        Box::new(flate2::read::GzDecoder::new(input))
    };
    let mut tar = tar::Archive::new(decoder);
    for entry in tar.entries().map_err(|e| u.read_err(e))? {
        // Held while the entry is written.
        let _writing = writing_or_park();
        let mut entry = entry.map_err(|e| u.read_err(e))?;
        let raw = entry.path().map_err(|e| u.read_err(e))?.into_owned();
        let shown = raw.display().to_string();
        let Some(rel) = u.entry_path(&raw, &shown)? else {
            continue; // "./"
        };
        u.write_entry(&mut entry, rel, shown)?;
    }
    u.check_links()
}

/// The lock the cleanup thread takes before removing the directory, held
/// while one entry is written. When the process is being stopped by a
/// signal, waits here instead, adding nothing, while the cleanup thread
/// removes the directory and ends the process.
fn writing_or_park() -> std::sync::MutexGuard<'static, ()> {
    let writing = on_signal::WRITING.lock().unwrap_or_else(|e| e.into_inner());
    if on_signal::STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
        drop(writing);
        park_forever();
    }
    writing
}

/// One archive being unpacked: where to, its limits, and what it has
/// written so far.
struct Unpack<'a> {
    dest: &'a Path,
    archive: &'a Path,
    max_bytes: u64,
    max_entries: usize,
    /// Relative paths of the links made so far: nothing may be written
    /// through one (a link to / followed by `link/etc/passwd`).
    links: BTreeSet<PathBuf>,
    /// Each relative link made and its entry as shown, resolved for real
    /// once the tree is complete.
    relative_links: Vec<(PathBuf, String)>,
    /// Bytes of file contents written.
    total: u64,
    /// Entries read.
    count: usize,
}

impl Unpack<'_> {
    /// The archive could not be read.
    fn read_err(&self, source: io::Error) -> ArchiveError {
        ArchiveError::Read {
            path: self.archive.to_path_buf(),
            source,
        }
    }

    /// An entry could not be written.
    fn unpack_err(&self, source: io::Error) -> ArchiveError {
        ArchiveError::Unpack {
            path: self.archive.to_path_buf(),
            source,
        }
    }

    /// An entry no recording holds.
    fn hostile(&self, entry: &str, reason: &'static str) -> ArchiveError {
        ArchiveError::Hostile {
            path: self.archive.to_path_buf(),
            entry: entry.to_string(),
            reason,
        }
    }

    /// The archive is over one of its limits.
    fn too_big(&self, limit: String) -> ArchiveError {
        ArchiveError::TooBig {
            path: self.archive.to_path_buf(),
            limit,
        }
    }

    /// Counts one entry and checks its path: relative, without `..`, and
    /// neither below nor in place of a link made before. `None` for the
    /// archive's own `./`.
    fn entry_path(&mut self, raw: &Path, shown: &str) -> Result<Option<PathBuf>, ArchiveError> {
        self.count += 1;
        if self.count > self.max_entries {
            return Err(self.too_big(format!("{} entries", self.max_entries)));
        }
        let rel = safe_relative(raw).ok_or_else(|| {
            self.hostile(
                shown,
                "an absolute path or one with '..' leads outside the recording",
            )
        })?;
        if rel.as_os_str().is_empty() {
            return Ok(None);
        }
        if rel.ancestors().skip(1).any(|a| self.links.contains(a)) {
            return Err(self.hostile(shown, "it lies below a symbolic link"));
        }
        if self.links.contains(&rel) {
            return Err(self.hostile(shown, "it replaces a symbolic link"));
        }
        Ok(Some(rel))
    }

    /// Writes one entry at `rel` under the destination: directories, files
    /// and symbolic links only.
    fn write_entry<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        rel: PathBuf,
        shown: String,
    ) -> Result<(), ArchiveError> {
        let out = self.dest.join(&rel);
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&out).map_err(|e| self.unpack_err(e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                self.write_file(entry, &out)?;
            }
            tar::EntryType::Symlink => {
                self.write_symlink(entry, rel, &out, shown)?;
            }
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            tar::EntryType::Link => {
                return Err(self.hostile(
                    &shown,
                    "a hard link (recordings hold files, directories and symbolic links only)",
                ));
            }
            _ => {
                return Err(self.hostile(&shown, "a device, FIFO or other special file (recordings hold files, directories and symbolic links only)"));
            }
        }
        Ok(())
    }

    /// Writes a file's contents at `out`, within what is left of the byte
    /// limit, never through a link.
    fn write_file<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        out: &Path,
    ) -> Result<(), ArchiveError> {
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| self.unpack_err(e))?;
        }
        let left = self.max_bytes - self.total;
        let mut f = create_nofollow(out).map_err(|e| self.unpack_err(e))?;
        let copied =
            io::copy(&mut (&mut *entry).take(left + 1), &mut f).map_err(|e| self.read_err(e))?;
        self.total += copied;
        if copied > left {
            return Err(self.too_big(format!("{} bytes", self.max_bytes)));
        }
        Ok(())
    }

    /// Makes a symbolic link at `out` whose relative target stays inside
    /// the recording, and remembers it.
    fn write_symlink<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        rel: PathBuf,
        out: &Path,
        shown: String,
    ) -> Result<(), ArchiveError> {
        let target = entry
            .link_name()
            .map_err(|e| self.read_err(e))?
            .ok_or_else(|| self.hostile(&shown, "a symbolic link without a target"))?
            .into_owned();
        // An absolute target names the reading machine's files
        // (`sys -> /sys` would show the live machine as the
        // recording): neither `pinsight snapshot` nor hwloc's
        // dumps hold one. Relative ones must stay inside.
        if target.is_absolute() {
            return Err(self.hostile(
                &shown,
                "a symbolic link leading outside the recording (an absolute target)",
            ));
        }
        if !stays_inside(&rel, &target) {
            return Err(self.hostile(&shown, "a symbolic link leading outside the recording"));
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| self.unpack_err(e))?;
        }
        std::os::unix::fs::symlink(&target, out).map_err(|e| self.unpack_err(e))?;
        self.relative_links.push((rel.clone(), shown));
        self.links.insert(rel);
        Ok(())
    }

    /// The lexical check cannot see chains (`a -> .`, `b -> a/../..`): now
    /// that the tree is complete, resolves every relative link for real.
    fn check_links(self) -> Result<(), ArchiveError> {
        let inside = self.dest.canonicalize().map_err(|e| self.unpack_err(e))?;
        for (rel, shown) in &self.relative_links {
            if let Ok(real) = self.dest.join(rel).canonicalize() {
                if !real.starts_with(&inside) {
                    return Err(
                        self.hostile(shown, "a symbolic link leading outside the recording")
                    );
                }
            }
        }
        Ok(())
    }
}

/// `a/./b` → `a/b`; `None` for absolute paths and any `..`.
fn safe_relative(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::ParentDir => return None,
        }
    }
    Some(out)
}

/// Whether the relative link at `link` (a path inside the tree) pointing
/// at `target` stays inside the tree, read lexically.
fn stays_inside(link: &Path, target: &Path) -> bool {
    let mut depth: usize = link.components().count().saturating_sub(1);
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Creates (or truncates) a file without following a link in its place.
fn create_nofollow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// One raw entry: path bytes written as is (the tar crate's own path
    /// setter refuses `..` and absolute paths, which is what we test).
    struct E<'a> {
        path: &'a str,
        kind: tar::EntryType,
        data: &'a [u8],
        link: Option<&'a str>,
    }

    fn file<'a>(path: &'a str, data: &'a [u8]) -> E<'a> {
        E {
            path,
            kind: tar::EntryType::Regular,
            data,
            link: None,
        }
    }

    /// An entry of `kind` at `path` without data, linking to `link`.
    fn entry<'a>(path: &'a str, kind: tar::EntryType, link: Option<&'a str>) -> E<'a> {
        E {
            path,
            kind,
            data: b"",
            link,
        }
    }

    fn dir(path: &str) -> E<'_> {
        entry(path, tar::EntryType::Directory, None)
    }

    fn link<'a>(path: &'a str, target: &'a str) -> E<'a> {
        entry(path, tar::EntryType::Symlink, Some(target))
    }

    fn archive(at: &Path, entries: &[E]) -> PathBuf {
        let p = at.join("x.tar.gz");
        let gz =
            flate2::write::GzEncoder::new(File::create(&p).unwrap(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for e in entries {
            let mut h = tar::Header::new_old();
            h.as_old_mut().name[..e.path.len()].copy_from_slice(e.path.as_bytes());
            if let Some(l) = e.link {
                h.as_old_mut().linkname[..l.len()].copy_from_slice(l.as_bytes());
            }
            h.set_entry_type(e.kind);
            h.set_size(e.data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, e.data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap().flush().unwrap();
        p
    }

    /// Unpacks under a private parent directory (returned, holding the
    /// archive), so a test can check nothing was left behind there.
    fn try_unpack(
        entries: &[E],
        max_bytes: u64,
    ) -> (Result<Unpacked, ArchiveError>, tempfile::TempDir) {
        let d = tempfile::tempdir().unwrap();
        let a = archive(d.path(), entries);
        (unpack_in(&a, d.path(), max_bytes, 100), d)
    }

    fn refused(entries: &[E], want: &str) {
        let (r, d) = try_unpack(entries, 1 << 20);
        let e = r.unwrap_err();
        assert!(
            matches!(
                e,
                ArchiveError::Hostile { .. } | ArchiveError::TooBig { .. }
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(text.contains("x.tar.gz") && text.contains(want), "{text}");
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["x.tar.gz"], "unpack directory left behind");
    }

    #[test]
    fn a_recording_unpacks_to_its_top_directory() {
        let (r, _d) = try_unpack(
            &[
                dir("box/"),
                dir("box/sys/"),
                file("box/sys/online", b"0-3\n"),
                link("box/sys/l", "online"),
            ],
            1 << 20,
        );
        let u = r.unwrap();
        assert!(u.root().ends_with("box"));
        assert_eq!(std::fs::read(u.root().join("sys/l")).unwrap(), b"0-3\n");
        let dir = u.dir().to_path_buf();
        drop(u);
        assert!(!dir.exists(), "removed on drop");
        // sys/ at the top: the unpack directory is the root.
        let (r, _d) = try_unpack(&[file("sys/online", b"0")], 1 << 20);
        let u = r.unwrap();
        assert_eq!(u.root(), u.dir());
    }

    /// hwloc ships its recorded machines as `.tar.bz2`: the same reader
    /// takes them, told apart by the first bytes, whatever the name.
    #[test]
    fn a_bzip2_recording_unpacks_like_a_gzip_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.tar.bz2");
        let bz =
            bzip2::write::BzEncoder::new(File::create(&p).unwrap(), bzip2::Compression::fast());
        let mut b = tar::Builder::new(bz);
        let mut h = tar::Header::new_gnu();
        h.set_size(4);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "m/sys/online", &b"0-3\n"[..])
            .unwrap();
        b.into_inner().unwrap().finish().unwrap();
        let u = unpack(&p).unwrap();
        assert!(u.root().ends_with("m"));
        assert_eq!(
            std::fs::read(u.root().join("sys/online")).unwrap(),
            b"0-3\n"
        );
        // Neither gzip nor bzip2 nor tar: refused naming the file.
        let junk = d.path().join("junk.tar.bz2");
        std::fs::write(&junk, b"BZh9 not really").unwrap();
        let e = unpack(&junk).unwrap_err().to_string();
        assert!(
            e.contains("junk.tar.bz2")
                && e.contains("not a readable .tar.gz recording (nor .tar.bz2"),
            "{e}"
        );
    }

    #[test]
    fn hostile_entries_are_refused() {
        refused(&[file("/etc/evil", b"x")], "leads outside");
        refused(&[file("box/../../evil", b"x")], "leads outside");
        refused(&[link("box/l", "../../etc")], "leading outside");
        // A chain the lexical check cannot see: a -> ., b -> a/../..
        refused(
            &[dir("box/"), link("box/a", "."), link("box/b", "a/../..")],
            "leading outside",
        );
        refused(
            &[
                dir("box/sys/"),
                link("box/l", "sys"),
                file("box/l/passwd", b"x"),
            ],
            "below a symbolic link",
        );
        // An absolute target would read the reading machine's own files:
        // `s/sys -> /sys` showed the live machine as the recording.
        refused(&[dir("s/"), link("s/sys", "/sys")], "an absolute target");
        refused(&[link("box/l", "/etc")], "leading outside the recording");
        refused(
            &[link("box/l", "sys"), file("box/l", b"x")],
            "replaces a symbolic link",
        );
        let hard = entry("box/h", tar::EntryType::Link, Some("box/f"));
        refused(&[file("box/f", b"x"), hard], "hard link");
        refused(&[entry("box/null", tar::EntryType::Char, None)], "device");
        refused(&[entry("box/p", tar::EntryType::Fifo, None)], "FIFO");
    }

    /// A tree left by a process killed outright (`kill -9`): removed by
    /// the next unpack under the same parent once its PID is gone; a live
    /// owner's tree (its flock held) and other names are kept.
    #[test]
    fn trees_of_dead_owners_are_removed_by_the_next_unpack() {
        let d = tempfile::tempdir().unwrap();
        // A PID that ran and is gone: a reaped child's.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = d.path().join(format!("{PREFIX}{dead}-abc123"));
        std::fs::create_dir_all(stale.join("box/sys/devices")).unwrap();
        std::fs::write(stale.join("box/sys/online"), "0").unwrap();
        let other = d.path().join("pinsight-fsroot-notapid-x");
        std::fs::create_dir(&other).unwrap();
        // This process is alive: its tree stays, and so does a dead PID's
        // tree whose lock a live process holds.
        let mine = d
            .path()
            .join(format!("{PREFIX}{}-live", std::process::id()));
        std::fs::create_dir(&mine).unwrap();
        let held = d.path().join(format!("{PREFIX}{dead}-held"));
        std::fs::create_dir(&held).unwrap();
        let lock = lock_dir(&held, true).unwrap().expect("free lock");
        let a = archive(d.path(), &[file("box/sys/online", b"0")]);
        let u = unpack_in(&a, d.path(), 1 << 20, 100).unwrap();
        assert!(!stale.exists(), "a dead owner's tree is left");
        assert!(other.exists() && mine.exists() && held.exists());
        // The new tree is named after this process and locked.
        let name = u.dir().file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(owner_pid(&name), Some(std::process::id() as libc::pid_t));
        assert!(lock_dir(u.dir(), true).unwrap().is_none(), "not locked");
        drop(lock);
        assert_eq!(remove_stale(d.path()), [held]);
        assert_eq!(owner_pid("pinsight-fsroot-12-x"), Some(12));
        assert_eq!(owner_pid("pinsight-fsroot-x"), None);
        assert_eq!(owner_pid("pinsight-fsroot-0-x"), None);
    }

    #[test]
    fn size_and_entry_count_are_bounded() {
        let big = vec![b'x'; 5000];
        let (r, _d) = try_unpack(&[file("a", &big[..3000]), file("b", &big[..3000])], 4096);
        let e = r.unwrap_err();
        assert!(matches!(e, ArchiveError::TooBig { .. }), "{e:?}");
        assert!(e.to_string().contains("4096 bytes"), "{e}");
        let many: Vec<String> = (0..101).map(|i| format!("f{i}")).collect();
        let entries: Vec<E> = many.iter().map(|n| file(n, b"")).collect();
        let (r, _d) = try_unpack(&entries, 1 << 20);
        assert!(r.unwrap_err().to_string().contains("100 entries"));
    }

    #[test]
    fn not_an_archive_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("notes.txt");
        std::fs::write(&p, "hello").unwrap();
        let e = unpack(&p).unwrap_err();
        assert!(matches!(e, ArchiveError::Read { .. }), "{e:?}");
        assert!(e.to_string().contains("notes.txt"), "{e}");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            safe_relative(Path::new("a/./b")),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(safe_relative(Path::new("/etc/passwd")), None);
        assert_eq!(safe_relative(Path::new("a/../../b")), None);
        assert!(stays_inside(
            Path::new("top/sys/bus/cpu0"),
            Path::new("../../devices/cpu0")
        ));
        assert!(stays_inside(Path::new("top/a"), Path::new("../b")));
        assert!(!stays_inside(Path::new("top/a"), Path::new("../../b")));
        assert!(!stays_inside(Path::new("a"), Path::new("../b")));
    }
}
