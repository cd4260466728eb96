//! Crash-safe output files: every file pinsight writes (exports, reports,
//! weights, latency matrices, charts) is written whole to a temporary name
//! in the same directory, synced, and renamed into place (rename(2) is
//! atomic within a file system). A full disk, a crash or Ctrl-C therefore
//! never leaves a half-written file, and the file it replaces stays intact
//! until the new one is complete.
//!
//! Links: rename(2) replaces a symbolic link at the destination with the
//! new file; it never writes through it, so a link planted at an output
//! name cannot redirect pinsight's output to another file. The temporary
//! name is created with `O_CREAT | O_EXCL` (tempfile's `NamedTempFile`),
//! which never follows a link either. [`write_new`] is for names pinsight
//! chooses itself: it claims the name with `O_EXCL | O_NOFOLLOW` first and
//! never replaces anything.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why an output file cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write {}: it is a directory", path.display())]
    Directory { path: PathBuf },
    /// A name pinsight chose is taken (a file or a link planted there).
    #[error("cannot write {}: it already exists", path.display())]
    Exists { path: PathBuf },
    /// The directory it goes in does not exist.
    #[error("cannot write {}: directory {} does not exist", path.display(), dir.display())]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

impl OutputError {
    /// What is wrong, without the path: `it is a directory`, `directory
    /// out does not exist`, `No space left on device` (an OS error's text
    /// without its "(os error N)").
    pub fn reason(&self) -> String {
        match self {
            OutputError::Directory { .. } => "it is a directory".into(),
            OutputError::Exists { .. } => "it already exists".into(),
            OutputError::NoDirectory { dir, .. } => {
                format!("directory {} does not exist", dir.display())
            }
            OutputError::Write { source, .. } => {
                let text = source.to_string();
                match text.find(" (os error") {
                    Some(i) => text[..i].to_string(),
                    None => text,
                }
            }
        }
    }

    /// The file concerned.
    pub fn path(&self) -> &Path {
        match self {
            OutputError::Directory { path }
            | OutputError::Exists { path }
            | OutputError::NoDirectory { path, .. }
            | OutputError::Write { path, .. } => path,
        }
    }
}

/// The directory `path` is in (`.` for a bare name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Checks, before any work, that `path` can be written the way
/// [`write()`] writes it: not a directory, in an existing directory where a
/// file can be created. Nothing is left behind and an existing file (or a
/// link, never followed) is not touched.
pub fn check(path: &Path) -> Result<(), OutputError> {
    let p = || path.to_path_buf();
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(OutputError::Directory { path: p() });
    }
    let dir = dir_of(path);
    if !dir.is_dir() {
        return Err(OutputError::NoDirectory {
            path: p(),
            dir: dir.to_path_buf(),
        });
    }
    temp_in(path)
        .map(drop)
        .map_err(|source| OutputError::Write { path: p(), source })
}

/// A temporary file next to `path`, readable as a plain file would be
/// (0666 less the umask; the mode of the file it replaces when there is
/// one).
fn temp_in(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let mode = match path.symlink_metadata() {
        Ok(m) if m.is_file() => m.permissions().mode() & 0o7777,
        _ => 0o666,
    };
    // The extension is kept last: a library that picks the format by the
    // name (the image crate's PNG encoder) sees the real one.
    let suffix = match path.extension() {
        Some(ext) => format!(".tmp.{}", ext.to_string_lossy()),
        None => ".tmp".into(),
    };
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(&suffix)
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir_of(path))
}

/// Writes `bytes` to `path` whole or not at all, replacing what is there
/// (a link is replaced, never followed).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_with(path, |f| f.write_all(bytes))
}

/// [`write()`] for a writer that streams into the file.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), OutputError> {
    replace(path, |tmp| {
        fill(tmp.as_file_mut())?;
        tmp.as_file().sync_all()
    })
}

/// [`write()`] for a library that writes the file by name (plotters' PNG
/// encoder): `fill` writes the temporary path given to it.
pub fn write_via(
    path: &Path,
    fill: impl FnOnce(&Path) -> io::Result<()>,
) -> Result<(), OutputError> {
    replace(path, |tmp| {
        fill(tmp.path())?;
        // The library may have replaced the file at that name: sync what is
        // there now, by name, without following a link.
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(tmp.path())?
            .sync_all()
    })
}

/// The steps [`write_with`] and [`write_via`] share: refuses a directory,
/// has `fill_and_sync` write and sync a temporary file next to `path`,
/// and renames it into place.
fn replace(
    path: &Path,
    fill_and_sync: impl FnOnce(&mut tempfile::NamedTempFile) -> io::Result<()>,
) -> Result<(), OutputError> {
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        return Err(OutputError::Directory {
            path: path.to_path_buf(),
        });
    }
    let tmp = filled_temp(path, fill_and_sync)?;
    // On failure the temporary file is removed when `tmp` drops.
    tmp.persist(path).map_err(|e| write_error(path, e.error))?;
    sync_dir(path);
    Ok(())
}

/// A temporary file next to `path` ([`temp_in`]), written and synced by
/// `fill_and_sync`; removed again when it drops unnamed.
fn filled_temp(
    path: &Path,
    fill_and_sync: impl FnOnce(&mut tempfile::NamedTempFile) -> io::Result<()>,
) -> Result<tempfile::NamedTempFile, OutputError> {
    let mut tmp = temp_in(path).map_err(|source| write_error(path, source))?;
    fill_and_sync(&mut tmp).map_err(|source| write_error(path, source))?;
    Ok(tmp)
}

/// [`OutputError::Write`] for `path`.
fn write_error(path: &Path, source: io::Error) -> OutputError {
    OutputError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path`, a new file that must not replace anything
/// (a name pinsight chose itself, an undo file): written whole to a
/// temporary name in the same directory, synced, and then given its name
/// only if the name is free (`link(2)`, or `renameat2(RENAME_NOREPLACE)`:
/// never replacing a file or a link, never following one). The name
/// therefore never holds a partial file, even when the process is killed
/// (`kill -9`) midway: it is absent or complete.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    if path.symlink_metadata().is_ok() {
        return Err(OutputError::Exists {
            path: path.to_path_buf(),
        });
    }
    let tmp = filled_temp(path, |tmp| {
        tmp.as_file_mut().write_all(bytes)?;
        tmp.as_file().sync_all()
    })?;
    // On failure the temporary file is removed when it drops.
    tmp.persist_noclobber(path)
        .map_err(|e| match e.error.kind() {
            io::ErrorKind::AlreadyExists => OutputError::Exists {
                path: path.to_path_buf(),
            },
            _ => write_error(path, e.error),
        })?;
    sync_dir(path);
    Ok(())
}

/// Creates `path`, a name pinsight chose itself, and opens it for
/// writing: `O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC` (never replacing a
/// file, never following a link). For a file filled as it goes (a run's
/// output written by the program itself), where [`write_new`] cannot be
/// used.
pub fn create_new(path: &Path) -> Result<File, OutputError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| match source.kind() {
            io::ErrorKind::AlreadyExists => OutputError::Exists {
                path: path.to_path_buf(),
            },
            _ => OutputError::Write {
                path: path.to_path_buf(),
                source,
            },
        })
}

/// Syncs the directory entry of a renamed file (fsync(2): syncing a file
/// does not sync the directory that names it). Best effort: the data is
/// already safe under one name or the other.
fn sync_dir(path: &Path) {
    if let Ok(d) = File::open(dir_of(path)) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While a new file is written its name is absent or holds the whole
    /// file: never an empty or partial one (what `kill -9` would leave).
    #[test]
    fn a_new_file_is_never_seen_partial() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        let bytes = vec![b'x'; 32 << 20];
        let writer = {
            let p = p.clone();
            let bytes = bytes.clone();
            std::thread::spawn(move || write_new(&p, &bytes))
        };
        let mut seen_partial = None;
        while !writer.is_finished() {
            if let Ok(m) = p.symlink_metadata() {
                if m.len() != bytes.len() as u64 {
                    seen_partial = Some(m.len());
                }
            }
        }
        writer.join().unwrap().unwrap();
        assert_eq!(seen_partial, None, "the name held a partial file");
        assert_eq!(std::fs::read(&p).unwrap().len(), bytes.len());
        // Never replaced, never followed, nothing left behind.
        assert!(matches!(
            write_new(&p, b"again"),
            Err(OutputError::Exists { .. })
        ));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(d.path().join("target"), &link).unwrap();
        assert!(matches!(
            write_new(&link, b"x"),
            Err(OutputError::Exists { .. })
        ));
        assert!(!d.path().join("target").exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }
    use std::os::unix::fs::symlink;

    #[test]
    fn replaces_whole_and_keeps_the_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.csv");
        write(&p, b"one").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        std::fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        write(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // Nothing else is left in the directory.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        write(&p, b"old").unwrap();
        let e = write_with(&p, |f| {
            f.write_all(b"half")?;
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with(&format!("cannot write {}", p.display())));
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn links_are_replaced_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("precious");
        std::fs::write(&target, "keep").unwrap();
        let link = d.path().join("out.html");
        symlink(&target, &link).unwrap();
        check(&link).unwrap();
        assert!(matches!(
            write_new(&link, b"x"),
            Err(OutputError::Exists { .. })
        ));
        write(&link, b"new").unwrap();
        assert!(!link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        // A dangling link: its target is never created.
        let dangling = d.path().join("d.svg");
        symlink(d.path().join("nowhere"), &dangling).unwrap();
        check(&dangling).unwrap();
        assert!(write_new(&dangling, b"x").is_err());
        write_via(&dangling, |p| std::fs::write(p, "png")).unwrap();
        assert!(!d.path().join("nowhere").exists());
        assert_eq!(std::fs::read(&dangling).unwrap(), b"png");
    }

    #[test]
    fn checks_name_the_problem() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            check(d.path()),
            Err(OutputError::Directory { .. })
        ));
        let missing = d.path().join("no/such/x.csv");
        let e = check(&missing).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert_eq!(e.path(), missing);
        let fresh = d.path().join("new.csv");
        write_new(&fresh, b"1").unwrap();
        assert!(matches!(
            write_new(&fresh, b"2"),
            Err(OutputError::Exists { .. })
        ));
        assert_eq!(std::fs::read(&fresh).unwrap(), b"1");
    }
}
