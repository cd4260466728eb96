//! The pinning shim (`shim/pinsight_shim.c`), shipped inside the binary and
//! handed to a launched program only while it runs.
//!
//! Where it lives: preferably in an anonymous, sealed memory file
//! (`memfd_create`), which the child inherits as descriptor N and preloads
//! as `/proc/self/fd/N`. That path is valid in every process that holds the
//! descriptor, whether or not pinsight still runs, so a descendant that
//! outlives pinsight never inherits an `LD_PRELOAD` naming a deleted file;
//! and nothing touches the file system, so a `noexec` `$TMPDIR` does not
//! matter. Only the launched program and what it execs in place keep the
//! shim: every other exec or spawn gets an environment without it (the
//! shim wraps the exec calls and cleans the environment each one passes,
//! shells' own copies included), and an exec in place after the program
//! reused or closed the descriptor (`exec 200>lock; flock 200`) drops it
//! too, with a line on stderr, rather than let the loader of the next image
//! print "cannot be preloaded". Processes where the shim turns itself off
//! also keep the descriptor open, for what still names it through paths
//! the shim does not wrap (glibc's `system`, `execl`). Where memfds cannot be executed (kernels before 3.17,
//! or `vm.memfd_noexec = 2`), the shim falls back to a `0500` file in a
//! fresh `0700` directory under `$TMPDIR`, removed when [`ShimFile`] drops.

use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The shim's bytes, built by build.rs.
pub static SHIM_SO: &[u8] = include_bytes!(env!("PINSIGHT_SHIM_SO"));

/// Environment variables the shim reads.
pub const ENV_PLACES: &str = "PINSIGHT_PLACES";
pub const ENV_SKIP: &str = "PINSIGHT_SKIP";
pub const ENV_PROCESS_MASK: &str = "PINSIGHT_PROCESS_MASK";
pub const ENV_LAUNCHER_PID: &str = "PINSIGHT_LAUNCHER_PID";
pub const ENV_VERBOSE: &str = "PINSIGHT_SHIM_VERBOSE";
pub const ENV_PIN_MAIN: &str = "PINSIGHT_PIN_MAIN";
pub const ENV_SHIM_FD: &str = "PINSIGHT_SHIM_FD";

enum Storage {
    /// Sealed memfd; the child inherits it (see [`ShimFile::inherit_fd`]).
    Memfd(OwnedFd),
    /// Fallback file; the directory is removed on drop.
    File { dir: Option<tempfile::TempDir> },
}

/// The shim, ready to preload; removed (memfd closed, or file and
/// directory deleted) on drop.
pub struct ShimFile {
    storage: Storage,
    /// What `LD_PRELOAD` names.
    path: PathBuf,
    /// Why the memfd could not be used, when the file fallback is in use.
    pub fallback_reason: Option<String>,
}

impl ShimFile {
    /// A memfd when the kernel allows it, else a private temporary file.
    pub fn create() -> io::Result<ShimFile> {
        match write_memfd() {
            Ok(fd) => Ok(ShimFile {
                path: PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())),
                storage: Storage::Memfd(fd),
                fallback_reason: None,
            }),
            Err(e) => {
                let mut shim = ShimFile::write()?;
                shim.fallback_reason = Some(format!(
                    "memfd_create failed ({e}): the shim is a file in {}",
                    shim.path()
                        .parent()
                        .map_or("?".into(), |p| p.display().to_string())
                ));
                Ok(shim)
            }
        }
    }

    /// Writes the shim into a new private directory (the fallback of
    /// [`ShimFile::create`]; `$TMPDIR` must not be mounted `noexec`).
    pub fn write() -> io::Result<ShimFile> {
        let dir = tempfile::Builder::new()
            .prefix("pinsight-shim-")
            .tempdir()?;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))?;
        let path = dir.path().join("libpinsight_shim.so");
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o500)
            .open(&path)?;
        // No fsync: the loader reads it through the page cache, and the
        // file never outlives this process's run.
        f.write_all(SHIM_SO)?;
        Ok(ShimFile {
            storage: Storage::File { dir: Some(dir) },
            path,
            fallback_reason: None,
        })
    }

    /// What `LD_PRELOAD` names: `/proc/self/fd/N` for a memfd (valid in the
    /// child, which inherits N), else the file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptor the child must inherit (its close-on-exec flag
    /// cleared in the child only, by
    /// [`pinsight_sys::spawn::Spawn::inherit_fd`]), if any.
    pub fn inherit_fd(&self) -> Option<RawFd> {
        match &self.storage {
            Storage::Memfd(fd) => Some(fd.as_raw_fd()),
            Storage::File { .. } => None,
        }
    }

    /// Whether the shim lives in a memfd.
    pub fn is_memfd(&self) -> bool {
        matches!(self.storage, Storage::Memfd(_))
    }

    /// Removes the shim now, reporting failure (drop ignores it).
    pub fn remove(mut self) -> io::Result<()> {
        match &mut self.storage {
            Storage::File { dir } => match dir.take() {
                Some(d) => d.close(),
                None => Ok(()),
            },
            Storage::Memfd(_) => Ok(()), // closed on drop
        }
    }
}

impl Drop for ShimFile {
    fn drop(&mut self) {
        if let Storage::File { dir } = &mut self.storage {
            if let Some(d) = dir.take() {
                let _ = d.close();
            }
        }
    }
}

/// A sealed, close-on-exec memfd holding the shim. Sealed against writes,
/// growth and shrinking, so the program cannot alter what its own exec'd
/// images or siblings will load; at descriptor 200 or more, since shell
/// scripts freely redirect descriptors 3–9 (`exec 3>log`), which would make
/// `/proc/self/fd/3` name their log instead of the shim in an image they
/// exec; checked to be mappable executable (`vm.memfd_noexec = 2`).
fn write_memfd() -> io::Result<OwnedFd> {
    pinsight_sys::fs::sealed_exec_memfd(c"pinsight-shim", SHIM_SO)
}

/// `LD_PRELOAD` with the shim in front of what the user already preloads.
pub fn preload_value(shim: &Path, existing: Option<&str>) -> String {
    match existing {
        Some(e) if !e.trim().is_empty() => format!("{}:{}", shim.display(), e),
        _ => shim.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_private_and_removed() {
        let shim = ShimFile::write().unwrap();
        let p = shim.path();
        let dir = p.parent().unwrap().to_path_buf();
        assert_eq!(fs::metadata(p).unwrap().permissions().mode() & 0o777, 0o500);
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(fs::read(p).unwrap(), SHIM_SO);
        assert!(SHIM_SO.starts_with(b"\x7fELF"));
        shim.remove().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn dropped_shim_leaves_nothing() {
        let shim = ShimFile::write().unwrap();
        let dir = shim.path().parent().unwrap().to_path_buf();
        drop(shim);
        assert!(!dir.exists());
    }

    #[test]
    fn memfd_holds_the_shim_sealed_and_closes_on_drop() {
        let shim = ShimFile::create().unwrap();
        if !shim.is_memfd() {
            eprintln!(
                "SKIP memfd test: {}",
                shim.fallback_reason.as_deref().unwrap_or("?")
            );
            return;
        }
        let fd = shim.inherit_fd().unwrap();
        assert_eq!(fs::read(shim.path()).unwrap(), SHIM_SO);
        // Sealed: cannot be written through /proc either.
        assert!(fs::OpenOptions::new()
            .write(true)
            .open(shim.path())
            .and_then(|mut f| f.write_all(b"x"))
            .is_err());
        // Close-on-exec until the spawn clears it.
        let Storage::Memfd(owned) = &shim.storage else {
            unreachable!("checked is_memfd above")
        };
        assert!(pinsight_sys::fs::is_cloexec(owned));
        drop(shim);
        assert!(
            !Path::new(&format!("/proc/self/fd/{fd}")).exists() || {
                // The number may have been reused by another test's file.
                fs::read(format!("/proc/self/fd/{fd}")).ok().as_deref() != Some(SHIM_SO)
            }
        );
    }

    #[test]
    fn preload_keeps_user_entries_after_ours() {
        assert_eq!(preload_value(Path::new("/t/s.so"), None), "/t/s.so");
        assert_eq!(preload_value(Path::new("/t/s.so"), Some("")), "/t/s.so");
        assert_eq!(
            preload_value(Path::new("/t/s.so"), Some("libx.so")),
            "/t/s.so:libx.so"
        );
    }
}
