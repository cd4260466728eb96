//! The pinning shim (`shim/pinsight_shim.c`), shipped inside the binary and
//! written to a private file only while a launched program runs.
//!
//! The file lives in a fresh `0700` directory under `$TMPDIR` (or `/tmp`)
//! with mode `0500`; [`ShimFile`] removes both when dropped, which
//! [`crate::launch`] does once the child has exited (every path, Ctrl-C
//! included: the launcher forwards signals and waits). Only a SIGKILL of
//! the launcher itself can leave the directory behind. Note that `$TMPDIR`
//! must not be mounted `noexec`, or the loader cannot map the shim.

use std::fs;
use std::io::{self, Write};
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

/// The shim written to disk; removed (file and directory) on drop.
pub struct ShimFile {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl ShimFile {
    /// Writes the shim into a new private directory.
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
            dir: Some(dir),
            path,
        })
    }

    /// Where the shim is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the shim now, reporting failure (drop ignores it).
    pub fn remove(mut self) -> io::Result<()> {
        match self.dir.take() {
            Some(d) => d.close(),
            None => Ok(()),
        }
    }
}

impl Drop for ShimFile {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            let _ = d.close();
        }
    }
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
        let p = shim.path().to_path_buf();
        let dir = p.parent().unwrap().to_path_buf();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o500
        );
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(fs::read(&p).unwrap(), SHIM_SO);
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
    fn preload_keeps_user_entries_after_ours() {
        assert_eq!(preload_value(Path::new("/t/s.so"), None), "/t/s.so");
        assert_eq!(preload_value(Path::new("/t/s.so"), Some("")), "/t/s.so");
        assert_eq!(
            preload_value(Path::new("/t/s.so"), Some("libx.so")),
            "/t/s.so:libx.so"
        );
    }
}
