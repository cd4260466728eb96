//! The one window on the OS: every read (and the few writes) of `/sys` and
//! `/proc` goes through [`FsRoot`].
//!
//! Why: most machines our users own we will never sit at. Pointing the root
//! at a recorded machine (`DIR/sys`, `DIR/proc`, the layout of
//! `hwloc-gather-topology` dumps) lets every feature run, and be tested, on
//! that machine. Live, the root is `/`.

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use pinsight_cpuset::{CpuSet, ParseError};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::io;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Environment variable naming a recorded machine (the CLI's `--fsroot`
/// flag names one too).
pub const FSROOT_ENV: &str = "PINSIGHT_FSROOT";

/// What can go wrong opening a root or parsing a CPU file under it.
#[derive(Debug, thiserror::Error)]
pub enum FsRootError {
    /// The recorded machine's directory cannot be listed.
    #[error("recorded machine '{}': {source} (expected a directory holding sys/ and proc/)", dir.display())]
    NotADirectory {
        /// The directory given.
        dir: PathBuf,
        /// Why listing it failed.
        #[source]
        source: io::Error,
    },
    /// A cpulist file (`0-3,8`) holds garbage.
    #[error("{}: {source}", path.display())]
    BadCpuList {
        /// The OS path of the file (`/sys/...`).
        path: PathBuf,
        /// What the parser rejected.
        #[source]
        source: ParseError,
    },
    /// A `.tar.gz` recording that cannot be used (see [`crate::archive`]).
    #[error(transparent)]
    Archive(#[from] crate::archive::ArchiveError),
    /// A hex CPU mask file (`ff,00000000`) holds garbage.
    #[error("{}: {source}", path.display())]
    BadMask {
        /// The OS path of the file (`/sys/...`).
        path: PathBuf,
        /// What the parser rejected.
        #[source]
        source: ParseError,
    },
}

/// What a loop of absolute links in a recording resolves to: a name that
/// does not exist in it, so the read fails as for a missing file.
const LINK_LOOP: &str = ".pinsight-absolute-link-loop/missing";

/// A root-relative view of the OS files pinsight reads.
#[derive(Clone, Debug)]
pub struct FsRoot {
    root: PathBuf,
    /// `root == "/"`, computed once (comparing paths walks components,
    /// and this is asked on every read).
    live: bool,
    /// When set, every OS path read or listed successfully is noted here, so
    /// `pinsight snapshot` records exactly what discovery needs.
    recorder: Option<Arc<Mutex<BTreeSet<PathBuf>>>>,
    /// OS directory → its resolved place under the root. Discovery reads
    /// tens of thousands of files in a few hundred directories; resolving
    /// each path component by component (one `readlink` per component)
    /// dominated its cost on big recorded machines.
    dirs: Arc<Mutex<HashMap<OsString, PathBuf>>>,
    /// A `.tar.gz` recording unpacked for this root; removed from disk
    /// when the last clone drops.
    unpacked: Option<Arc<crate::archive::Unpacked>>,
    /// OS directory listed so far → the names of its entries that are
    /// symlinks (from the listing's entry types, free with `getdents`). A
    /// child of a listed directory that is no link needs no `readlink` to
    /// be resolved: that saved a third of discovery's system calls on the
    /// 256-CPU recorded machine.
    links: Arc<Mutex<HashMap<PathBuf, Vec<std::ffi::OsString>>>>,
    /// Resolved directory → an open `O_PATH` descriptor of it, at most
    /// [`DIR_FDS`] of them. Files and listings are opened relative to the
    /// nearest such ancestor (`openat`), so the kernel walks one or a few
    /// path components instead of the whole root-prefixed path (a recorded
    /// machine's path is 15 components deep under a checkout): path walks
    /// were a quarter of discovery's time on the 256-CPU recorded machine.
    fds: Arc<Mutex<HashMap<PathBuf, Arc<std::os::fd::OwnedFd>>>>,
    /// Resolved directory → what [`FsRoot::anchor`] found for it. Maps
    /// here are keyed by the path's bytes: hashing a `Path` walks its
    /// components, which showed in profiles.
    anchors: Arc<Mutex<HashMap<OsString, Anchor>>>,
}

/// A directory descriptor and a path relative to it.
type Anchor = (Arc<OwnedFd>, PathBuf);

/// Directory descriptors one recorded root keeps open: few, so that many
/// roots open at once (parallel tests) stay far from the descriptor limit.
const DIR_FDS: usize = 32;

impl PartialEq for FsRoot {
    fn eq(&self, other: &FsRoot) -> bool {
        self.root == other.root
    }
}

impl FsRoot {
    /// The running machine (`/`).
    pub fn live() -> FsRoot {
        FsRoot::rooted(PathBuf::from("/"), None)
    }

    /// A machine at `root` (live when that is `/`), with nothing read yet;
    /// `unpacked` keeps an unpacked recording's directory while in use.
    fn rooted(root: PathBuf, unpacked: Option<Arc<crate::archive::Unpacked>>) -> FsRoot {
        FsRoot {
            live: root == Path::new("/"),
            root,
            recorder: None,
            dirs: Arc::default(),
            unpacked,
            links: Arc::default(),
            fds: Arc::default(),
            anchors: Arc::default(),
        }
    }

    /// A recorded machine at `dir`. Fails if `dir` is not a readable
    /// directory, naming it; an empty directory is accepted (discovery will
    /// warn about what is missing). A file is read as a `.tar.gz` recording
    /// (`pinsight snapshot OUT.tar.gz`), unpacked into a private temporary
    /// directory (see [`crate::archive`]).
    pub fn at(dir: impl AsRef<Path>) -> Result<FsRoot, FsRootError> {
        let dir = dir.as_ref();
        if crate::archive::is_archive_file(dir) {
            let unpacked = crate::archive::unpack(dir)?;
            return Ok(FsRoot::rooted(
                unpacked.root().to_path_buf(),
                Some(Arc::new(unpacked)),
            ));
        }
        match std::fs::read_dir(dir) {
            Ok(_) => Ok(FsRoot::rooted(dir.to_path_buf(), None)),
            Err(source) => Err(FsRootError::NotADirectory {
                dir: dir.to_path_buf(),
                source,
            }),
        }
    }

    /// `flag` if given, else `$PINSIGHT_FSROOT` if set and non-empty, else live.
    pub fn from_flag_or_env(flag: Option<&Path>) -> Result<FsRoot, FsRootError> {
        if let Some(p) = flag {
            return FsRoot::at(p);
        }
        match std::env::var_os(FSROOT_ENV) {
            Some(v) if !v.is_empty() => FsRoot::at(PathBuf::from(v)),
            _ => Ok(FsRoot::live()),
        }
    }

    /// The same root, noting every OS path successfully read or listed from
    /// now on (see [`FsRoot::recorded`]).
    pub fn recording(mut self) -> FsRoot {
        self.recorder = Some(Arc::new(Mutex::new(BTreeSet::new())));
        self
    }

    /// The OS paths (`/sys/...`) read or listed since [`FsRoot::recording`],
    /// sorted; empty when not recording.
    /// Whether reads are being recorded ([`FsRoot::recording`]).
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    pub fn recorded(&self) -> Vec<PathBuf> {
        match &self.recorder {
            Some(r) => r
                .lock()
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }

    fn note(&self, abs: &Path) {
        if let Some(r) = &self.recorder {
            if let Ok(mut s) = r.lock() {
                s.insert(abs.to_path_buf());
            }
        }
    }

    /// Whether this is the running machine (so syscalls and CPUID agree with
    /// the files).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The `.tar.gz` this root was unpacked from, if any (name it to the
    /// user: [`FsRoot::root`] is a private directory that vanishes).
    pub fn archive(&self) -> Option<&Path> {
        self.unpacked
            .as_deref()
            .map(crate::archive::Unpacked::archive)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Maps an absolute OS path (`/sys/...`) under the root. Absolute
    /// symlinks inside a recorded tree are re-rooted too, so a dump never
    /// leaks reads onto the live machine.
    pub fn path(&self, abs: impl AsRef<Path>) -> PathBuf {
        let abs = abs.as_ref();
        if self.is_live() {
            return abs.to_path_buf();
        }
        let plain = is_plain(abs);
        match (plain, abs.parent(), abs.file_name()) {
            (true, Some(parent), Some(name)) => self.child(abs, &self.dir(parent), name),
            _ => self.resolve(abs, 0),
        }
    }

    /// Full component-by-component resolution, re-rooting absolute links
    /// (the slow path, taken only where such a link was seen).
    fn resolve(&self, abs: &Path, depth: usize) -> PathBuf {
        let mut out = self.root.clone();
        let comps: Vec<Component> = abs.components().collect();
        for (i, c) in comps.iter().enumerate() {
            match c {
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => {
                    if out != self.root {
                        out.pop();
                    }
                }
                Component::Normal(n) => {
                    out.push(n);
                    if let Ok(target) = std::fs::read_link(&out) {
                        if target.is_absolute() {
                            // A loop of absolute links (`sys -> /sys`):
                            // the link itself must never be opened, the
                            // kernel would follow it onto the live
                            // machine. A name that does not exist reads as
                            // a missing file.
                            if depth >= 16 {
                                return self.root.join(LINK_LOOP);
                            }
                            let mut rest = target.clone();
                            for c in &comps[i + 1..] {
                                rest.push(c.as_os_str());
                            }
                            return self.resolve(&rest, depth + 1);
                        }
                    }
                }
            }
        }
        out
    }

    /// `name` inside the resolved directory `parent` (`abs` is its OS path):
    /// a plain join unless that entry is an absolute link to re-root.
    fn child(&self, abs: &Path, parent: &Path, name: &std::ffi::OsStr) -> PathBuf {
        let candidate = parent.join(name);
        let known_plain = abs.parent().is_some_and(|p| {
            self.links
                .lock()
                .ok()
                .and_then(|m| m.get(p).map(|l| !l.iter().any(|n| n == name)))
                .unwrap_or(false)
        });
        if known_plain {
            return candidate;
        }
        if std::fs::read_link(&candidate).is_ok_and(|t| t.is_absolute()) {
            self.resolve(abs, 0)
        } else {
            candidate
        }
    }

    /// The resolved place of an OS directory, memoised (see `dirs`).
    fn dir(&self, abs: &Path) -> PathBuf {
        if let Some(d) = self
            .dirs
            .lock()
            .ok()
            .and_then(|m| m.get(abs.as_os_str()).cloned())
        {
            return d;
        }
        let resolved = match (abs.parent(), abs.file_name()) {
            (Some(parent), Some(name)) => self.child(abs, &self.dir(parent), name),
            _ => self.root.clone(),
        };
        if let Ok(mut m) = self.dirs.lock() {
            m.insert(abs.as_os_str().to_os_string(), resolved.clone());
        }
        resolved
    }

    /// Reads a file as text with trailing whitespace and NULs removed
    /// (dumps often end files in `\n\0`).
    pub fn read(&self, abs: impl AsRef<Path>) -> io::Result<String> {
        let abs = abs.as_ref();
        let bytes = self.read_bytes(abs)?;
        self.note(abs);
        let s = String::from_utf8_lossy(&bytes);
        Ok(s.trim_end_matches(|c: char| c.is_whitespace() || c == '\0')
            .to_string())
    }

    /// Opens a file for reading. On a recorded machine the file is opened
    /// with `O_NOFOLLOW` under its cached parent directory, so the common
    /// case (a plain file) costs no `readlink`; a link (ELOOP) takes the
    /// full re-rooting path. A recorded machine's files are regular files
    /// of at most [`RECORDED_FILE_CAP`] bytes: they are opened without
    /// blocking and anything else (a FIFO, a device such as `/dev/zero`,
    /// a sparse giant) is refused by its `fstat` before a byte is read
    /// (see [`read_recorded`]). Live files are read as they are.
    fn read_bytes(&self, abs: &Path) -> io::Result<Vec<u8>> {
        if self.is_live() {
            return read_small(std::fs::File::open(self.path(abs))?);
        }
        self.read_recorded_bytes(abs)
    }

    fn read_recorded_bytes(&self, abs: &Path) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::OpenOptionsExt;
        let plain = is_plain(abs);
        match (!plain, abs.parent(), abs.file_name()) {
            (false, Some(parent), Some(name)) => {
                let dir = self.dir(parent);
                let opened = match self.anchor(&dir, true) {
                    Some((fd, rel)) => nix::fcntl::openat(
                        &*fd,
                        &rel.join(name),
                        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
                        Mode::empty(),
                    )
                    .map(std::fs::File::from)
                    .map_err(io::Error::from),
                    None => std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                        .open(dir.join(name)),
                };
                match opened {
                    Ok(f) => read_recorded(f),
                    Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                        read_recorded(open_nonblocking(&self.resolve(abs, 0))?)
                    }
                    Err(e) => Err(e),
                }
            }
            _ => read_recorded(open_nonblocking(&self.path(abs))?),
        }
    }

    /// The nearest directory descriptor above (or at) the resolved
    /// directory `dir`, and `dir` relative to it; `None` when not even the
    /// root opens. With `keep`, `dir` itself is opened and kept while
    /// fewer than [`DIR_FDS`] are (it is about to serve several files).
    fn anchor(&self, dir: &Path, keep: bool) -> Option<Anchor> {
        let mut anchors = self.anchors.lock().ok()?;
        if let Some(a) = anchors.get(dir.as_os_str()) {
            return Some(a.clone());
        }
        let a = self.find_anchor(dir, keep)?;
        // A listing's anchor (no `keep`) may be bettered by a later read.
        if keep {
            anchors.insert(dir.as_os_str().to_os_string(), a.clone());
        }
        Some(a)
    }

    fn find_anchor(&self, dir: &Path, keep: bool) -> Option<Anchor> {
        let mut fds = self.fds.lock().ok()?;
        if let Some(fd) = fds.get(dir) {
            return Some((fd.clone(), PathBuf::new()));
        }
        let root = match fds.get(&self.root) {
            Some(fd) => fd.clone(),
            None => {
                let fd = nix::fcntl::open(&self.root, DIR_FLAGS, Mode::empty()).ok()?;
                let fd = Arc::new(fd);
                fds.insert(self.root.clone(), fd.clone());
                fd
            }
        };
        let (base, rel) = dir
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&self.root))
            .find_map(|a| Some((fds.get(a)?.clone(), dir.strip_prefix(a).ok()?)))
            .unwrap_or_else(|| (root, dir.strip_prefix(&self.root).unwrap_or(dir)));
        let rel = rel.to_path_buf();
        if keep && fds.len() < DIR_FDS {
            if let Ok(fd) = nix::fcntl::openat(&*base, &rel, DIR_FLAGS, Mode::empty()) {
                let fd = Arc::new(fd);
                fds.insert(dir.to_path_buf(), fd.clone());
                return Some((fd, PathBuf::new()));
            }
        }
        Some((base, rel))
    }

    /// Reads a file, `None` if it is absent or unreadable.
    pub fn read_opt(&self, abs: impl AsRef<Path>) -> Option<String> {
        self.read(abs).ok()
    }

    /// Reads a file holding one unsigned integer.
    pub fn read_u64(&self, abs: impl AsRef<Path>) -> Option<u64> {
        self.read_opt(abs)?.trim().parse().ok()
    }

    /// Reads a cpulist file (`0-3,8`). `None` if absent; `Some(Err)` if
    /// garbage, naming the file.
    pub fn read_cpulist(&self, abs: impl AsRef<Path>) -> Option<Result<CpuSet, FsRootError>> {
        self.read_set(abs.as_ref(), CpuSet::parse_list, |path, source| {
            FsRootError::BadCpuList { path, source }
        })
    }

    /// Reads a kernel hex-mask file (`ff,00000000`). `None` if absent;
    /// `Some(Err)` if garbage, naming the file.
    pub fn read_mask(&self, abs: impl AsRef<Path>) -> Option<Result<CpuSet, FsRootError>> {
        self.read_set(abs.as_ref(), CpuSet::parse_mask, |path, source| {
            FsRootError::BadMask { path, source }
        })
    }

    /// Reads a CPU set file with `parse`. `None` if absent; `Some(Err)`,
    /// made by `bad` from the path and the parse error, if garbage.
    fn read_set<E>(
        &self,
        abs: &Path,
        parse: fn(&str) -> Result<CpuSet, E>,
        bad: impl FnOnce(PathBuf, E) -> FsRootError,
    ) -> Option<Result<CpuSet, FsRootError>> {
        let text = self.read_opt(abs)?;
        Some(parse(&text).map_err(|source| bad(abs.to_path_buf(), source)))
    }

    /// Names of the entries of a directory, sorted; empty if absent.
    pub fn list_dir(&self, abs: impl AsRef<Path>) -> Vec<String> {
        let abs = abs.as_ref();
        let dir = if self.is_live() {
            abs.to_path_buf()
        } else {
            self.dir(abs)
        };
        let mut links = Vec::new();
        if !self.is_live() {
            // rustix's `RawDir` is `getdents64` and nothing else: `opendir`
            // adds an `fstat`, an `fcntl` and a rewinding `lseek` per listing.
            let Some(fd) = self.anchor(&dir, false).and_then(|(fd, rel)| {
                let rel = if rel.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    rel
                };
                rustix::fs::openat(
                    &*fd,
                    &rel,
                    rustix::fs::OFlags::RDONLY
                        | rustix::fs::OFlags::DIRECTORY
                        | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )
                .ok()
            }) else {
                return Vec::new();
            };
            self.note(abs);
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16384];
            let mut entries = rustix::fs::RawDir::new(fd, &mut buf);
            let mut v: Vec<String> = Vec::new();
            while let Some(Ok(e)) = entries.next() {
                let name = e.file_name().to_bytes();
                if name == b"." || name == b".." {
                    continue;
                }
                let name = std::ffi::OsStr::from_bytes(name);
                // Unknown entry type: count it as a link (the careful path).
                let t = e.file_type();
                if t == rustix::fs::FileType::Symlink || t == rustix::fs::FileType::Unknown {
                    links.push(name.to_os_string());
                }
                v.push(name.to_string_lossy().into_owned());
            }
            if is_plain(abs) {
                if let Ok(mut m) = self.links.lock() {
                    m.insert(abs.to_path_buf(), links);
                }
            }
            v.sort();
            return v;
        }
        let mut v: Vec<String> = match std::fs::read_dir(dir) {
            Ok(rd) => {
                self.note(abs);
                rd.filter_map(|e| e.ok())
                    .map(|e| {
                        // Unknown entry type: count it as a link (the
                        // careful path).
                        if e.file_type().map_or(true, |t| t.is_symlink()) {
                            links.push(e.file_name());
                        }
                        e.file_name().to_string_lossy().into_owned()
                    })
                    .collect()
            }
            Err(_) => return Vec::new(),
        };
        if !self.is_live() && is_plain(abs) {
            if let Ok(mut m) = self.links.lock() {
                m.insert(abs.to_path_buf(), links);
            }
        }
        v.sort();
        v
    }

    /// Where the symbolic link `abs` points, as an OS path (a relative
    /// target is resolved against the link's directory, `..` lexically, as
    /// sysfs links mean it); `None` if it is not a link. sysfs says what a
    /// device hangs off only through such links (`/sys/bus/dax/devices/`).
    pub fn read_link(&self, abs: impl AsRef<Path>) -> Option<PathBuf> {
        let abs = abs.as_ref();
        let at = if self.is_live() {
            abs.to_path_buf()
        } else {
            match (abs.parent(), abs.file_name()) {
                (Some(parent), Some(name)) => self.dir(parent).join(name),
                _ => return None,
            }
        };
        let target = std::fs::read_link(at).ok()?;
        self.note(abs);
        let mut out = PathBuf::from("/");
        let base = if target.is_absolute() {
            target
        } else {
            abs.parent()?.join(target)
        };
        for c in base.components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
        Some(out)
    }

    /// Whether the path exists (following links).
    pub fn exists(&self, abs: impl AsRef<Path>) -> bool {
        let abs = abs.as_ref();
        let e = self.path(abs).exists();
        if e {
            self.note(abs);
        }
        e
    }

    /// Writes a file (cpufreq governors and the like). Goes through the
    /// root so that restore paths can be tested on a fake tree.
    pub fn write(&self, abs: impl AsRef<Path>, contents: &str) -> io::Result<()> {
        std::fs::write(self.path(abs), contents)
    }
}

/// How directory descriptors are opened: for lookups only.
const DIR_FLAGS: OFlag = OFlag::O_PATH
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_CLOEXEC);

/// Whether `abs` is `/a/b/c` with no `.` or `..`: the only paths the
/// directory cache may resolve piecewise.
fn is_plain(abs: &Path) -> bool {
    abs.components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// The largest file of a recorded machine read: 64 MiB (`/proc/cpuinfo`
/// of a machine with thousands of CPUs is a few MiB).
pub const RECORDED_FILE_CAP: u64 = 64 << 20;

/// `path` opened for reading without blocking (a FIFO's open waits for a
/// writer otherwise), close-on-exec.
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// A recorded machine's file, read whole only if it is a regular file of
/// at most [`RECORDED_FILE_CAP`] bytes; else an [`io::ErrorKind::InvalidData`]
/// error saying what it is.
fn read_recorded(f: std::fs::File) -> io::Result<Vec<u8>> {
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            crate::fs::BoundedReadError::NotRegular {
                kind: crate::fs::kind_of(meta.file_type()),
            },
        ));
    }
    if meta.len() > RECORDED_FILE_CAP {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            crate::fs::BoundedReadError::TooLarge {
                limit: RECORDED_FILE_CAP,
            },
        ));
    }
    let bytes = read_small(f)?;
    if bytes.len() as u64 > RECORDED_FILE_CAP {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            crate::fs::BoundedReadError::TooLarge {
                limit: RECORDED_FILE_CAP,
            },
        ));
    }
    Ok(bytes)
}

/// Reads a whole file with as few system calls as sysfs allows: open, one
/// read into a page-sized buffer (sysfs hands a whole attribute over in one
/// read), close. A full buffer means there may be more, so reading goes on
/// to EOF. `std::fs::read` would add a `statx` and a final empty read per
/// file, a third of discovery's system calls on big machines.
fn read_small(mut f: std::fs::File) -> io::Result<Vec<u8>> {
    const FIRST: usize = 8192;
    // Read into the vector's spare capacity (rustix): no zeroing of a
    // buffer that sysfs files fill a few bytes of.
    let mut buf = Vec::with_capacity(FIRST);
    let n = loop {
        match rustix::io::read(&f, rustix::buffer::spare_capacity(&mut buf)) {
            Ok(n) => break n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    if n < FIRST {
        return Ok(buf);
    }
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_under_root_and_reroots_absolute_links() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/devices/system/cpu/cpu0")).unwrap();
        std::fs::write(d.path().join("sys/devices/system/cpu/online"), "0-3\n\0").unwrap();
        std::fs::create_dir_all(d.path().join("sys/bus/cpu/devices")).unwrap();
        std::os::unix::fs::symlink(
            "/sys/devices/system/cpu/cpu0",
            d.path().join("sys/bus/cpu/devices/cpu0"),
        )
        .unwrap();
        std::fs::write(d.path().join("sys/devices/system/cpu/cpu0/x"), "7").unwrap();
        let r = FsRoot::at(d.path()).unwrap();
        assert_eq!(r.read("/sys/devices/system/cpu/online").unwrap(), "0-3");
        assert_eq!(
            r.read_cpulist("/sys/devices/system/cpu/online")
                .unwrap()
                .unwrap()
                .len(),
            4
        );
        assert_eq!(r.read_u64("/sys/bus/cpu/devices/cpu0/x"), Some(7));
        assert!(r.read_opt("/sys/nothing").is_none());
        assert_eq!(r.list_dir("/sys/bus/cpu/devices"), vec!["cpu0"]);
    }

    #[test]
    fn a_loop_of_absolute_links_never_reads_the_live_machine() {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/sys", d.path().join("sys")).unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::os::unix::fs::symlink("/proc/self", d.path().join("proc/self")).unwrap();
        let r = FsRoot::at(d.path()).unwrap();
        for p in ["/sys/devices/system/cpu/online", "/sys/devices/system/cpu"] {
            assert!(!r.exists(p), "{p} read through the loop");
            assert!(r.read_opt(p).is_none(), "{p} read through the loop");
            assert!(r.list_dir(p).is_empty(), "{p} listed through the loop");
        }
        assert!(r.read_opt("/proc/self/status").is_none());
    }

    #[test]
    fn recording_notes_successful_reads_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/a")).unwrap();
        std::fs::write(d.path().join("sys/a/b"), "1").unwrap();
        let r = FsRoot::at(d.path()).unwrap().recording();
        r.read_opt("/sys/a/b");
        r.read_opt("/sys/a/missing");
        r.list_dir("/sys/a");
        assert_eq!(
            r.recorded(),
            vec![PathBuf::from("/sys/a"), PathBuf::from("/sys/a/b")]
        );
    }

    #[test]
    fn symlinked_files_are_followed_inside_the_root() {
        let d = tempfile::tempdir().unwrap();
        let cpu = d.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu).unwrap();
        std::fs::write(cpu.join("online"), "0-7").unwrap();
        std::os::unix::fs::symlink("online", cpu.join("relative")).unwrap();
        // Absolute: must be re-rooted, never read from the live machine.
        std::os::unix::fs::symlink("/sys/devices/system/cpu/online", cpu.join("absolute")).unwrap();
        let r = FsRoot::at(d.path()).unwrap();
        assert_eq!(r.read("/sys/devices/system/cpu/relative").unwrap(), "0-7");
        assert_eq!(r.read("/sys/devices/system/cpu/absolute").unwrap(), "0-7");
        assert!(r.read("/sys/devices/system/cpu/missing").is_err());
    }

    #[test]
    fn links_in_listed_directories_are_still_rerooted() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        std::fs::create_dir_all(sys.join("devices/cpu0")).unwrap();
        std::fs::write(sys.join("devices/cpu0/x"), "5").unwrap();
        std::fs::create_dir_all(sys.join("bus")).unwrap();
        std::os::unix::fs::symlink("/sys/devices/cpu0", sys.join("bus/cpu0")).unwrap();
        std::os::unix::fs::symlink("../devices/cpu0", sys.join("bus/rel0")).unwrap();
        let r = FsRoot::at(d.path()).unwrap();
        // Listing first takes the no-readlink path for plain entries.
        assert_eq!(r.list_dir("/sys/bus"), vec!["cpu0", "rel0"]);
        assert_eq!(r.list_dir("/sys/devices"), vec!["cpu0"]);
        assert_eq!(r.read("/sys/bus/cpu0/x").unwrap(), "5");
        assert_eq!(r.read("/sys/bus/rel0/x").unwrap(), "5");
        assert_eq!(r.read("/sys/devices/cpu0/x").unwrap(), "5");
        assert_eq!(r.list_dir("/sys/bus/cpu0"), vec!["x"]);
    }

    #[test]
    fn more_directories_than_kept_descriptors_read_and_list_right() {
        let d = tempfile::tempdir().unwrap();
        let n = DIR_FDS * 2 + 3;
        for i in 0..n {
            let dir = d.path().join(format!("sys/cpu/cpu{i}/cache"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("level"), format!("{i}\n")).unwrap();
        }
        let r = FsRoot::at(d.path()).unwrap();
        for i in 0..n {
            assert_eq!(
                r.read_u64(format!("/sys/cpu/cpu{i}/cache/level")),
                Some(i as u64)
            );
            assert_eq!(r.list_dir(format!("/sys/cpu/cpu{i}")), vec!["cache"]);
            assert_eq!(r.list_dir(format!("/sys/cpu/cpu{i}/cache")), vec!["level"]);
        }
        assert!(r.fds.lock().unwrap().len() <= DIR_FDS);
        assert!(r.read_opt("/sys/cpu/cpu0/cache/missing").is_none());
        assert!(r.list_dir("/sys/cpu/missing").is_empty());
    }

    #[test]
    fn a_recorded_machine_reads_regular_files_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::fs::create_dir_all(d.path().join("sys/x")).unwrap();
        nix::unistd::mkfifo(
            &d.path().join("proc/cpuinfo"),
            Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.path().join("sys/x/zero")).unwrap();
        std::fs::File::create(d.path().join("sys/x/sparse"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let r = FsRoot::at(d.path()).unwrap();
        let t = std::time::Instant::now();
        let e = r.read("/proc/cpuinfo").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(r.read("/proc/../proc/cpuinfo").is_err());
        // An absolute link is re-rooted (no dev/zero under the root); a
        // device reached in the root is refused by its kind.
        assert!(r.read("/sys/x/zero").is_err());
        let e = r.read("/sys/x/sparse").unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        // A device named directly (not through the root's links).
        let e = read_recorded(open_nonblocking(Path::new("/dev/zero")).unwrap()).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
    }

    #[test]
    fn large_files_are_read_whole() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        let big = "x".repeat(100_000);
        std::fs::write(d.path().join("proc/cpuinfo"), &big).unwrap();
        std::fs::write(d.path().join("proc/exact"), "y".repeat(8192)).unwrap();
        let r = FsRoot::at(d.path()).unwrap();
        assert_eq!(r.read("/proc/cpuinfo").unwrap().len(), 100_000);
        assert_eq!(r.read("/proc/exact").unwrap().len(), 8192);
    }

    #[test]
    fn missing_root_is_an_error_naming_it() {
        let e = FsRoot::at("/definitely/not/here").unwrap_err();
        assert!(
            matches!(&e, FsRootError::NotADirectory { dir, .. } if dir == Path::new("/definitely/not/here")),
            "{e:?}"
        );
        assert!(e.to_string().contains("/definitely/not/here"), "{e}");
    }
}
