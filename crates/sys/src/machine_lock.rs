//! A machine-wide lock held by one process at a time: `pinsight emulate`
//! owns the CPUs it slows, and a second emulation calibrating against the
//! first one's stealers (or caps) would measure the wrong machine.
//!
//! The lock is an exclusive `flock(2)` on a file in the first writable
//! directory of `/run`, `$XDG_RUNTIME_DIR` and the temporary directory:
//! the kernel drops it when its holder dies, however (`kill -9`
//! included), so a stale file never blocks anyone. The holder writes its
//! PID into the file, for the refusal to name it. The descriptor is close
//! on exec, and the stealers close every inherited descriptor, so only
//! pinsight itself holds it.

use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error("{} is held by PID {}", path.display(), pid.map_or("?".to_string(), |p| p.to_string()))]
    Held {
        /// The lock file.
        path: PathBuf,
        /// The holder's PID as it wrote it (`None` if unreadable).
        pid: Option<i32>,
    },
    /// The lock file cannot be opened or locked.
    #[error("{}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: io::Error,
    },
}

/// A held lock: released when dropped (or when the process dies).
#[derive(Debug)]
pub struct MachineLock {
    file: std::fs::File,
    path: PathBuf,
}

impl MachineLock {
    /// Takes the lock named `name` (`pinsight-emulate.lock`) in the first
    /// writable one of `/run`, `$XDG_RUNTIME_DIR` and the temporary
    /// directory, without waiting.
    pub fn acquire(name: &str) -> Result<MachineLock, LockError> {
        let dir = lock_dir();
        MachineLock::acquire_at(&dir.join(name))
    }

    /// Takes the lock on the file `path` (made if missing), without
    /// waiting; on success writes this process's PID into it.
    pub fn acquire_at(path: &Path) -> Result<MachineLock, LockError> {
        let io_err = |source: io::Error| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(io_err)?;
        loop {
            // SAFETY: a descriptor this function owns; integer arguments.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) => {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    return Err(LockError::Held {
                        path: path.to_path_buf(),
                        pid: text.trim().parse().ok(),
                    });
                }
                _ => return Err(io_err(e)),
            }
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(io_err)?;
        Ok(MachineLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        // The PID goes before the lock does: a reader never names a
        // process that let go.
        let _ = self.file.set_len(0);
    }
}

/// The first writable directory of `/run`, `$XDG_RUNTIME_DIR` and the
/// temporary directory.
fn lock_dir() -> PathBuf {
    let writable = |d: &Path| nix::unistd::access(d, nix::unistd::AccessFlags::W_OK).is_ok();
    let run = PathBuf::from("/run");
    if run.is_dir() && writable(&run) {
        return run;
    }
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        if x.is_absolute() && x.is_dir() && writable(&x) {
            return x;
        }
    }
    std::env::temp_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_naming_the_first() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.lock");
        let first = MachineLock::acquire_at(&p).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap().trim(),
            std::process::id().to_string()
        );
        // flock(2) locks belong to the open file description: a second
        // open, even in this process, is refused like another process.
        match MachineLock::acquire_at(&p) {
            Err(LockError::Held { pid, .. }) => {
                assert_eq!(pid, Some(std::process::id() as i32));
            }
            other => panic!("{other:?}"),
        }
        let e = MachineLock::acquire_at(&p).unwrap_err().to_string();
        assert!(
            e.contains("x.lock") && e.contains(&std::process::id().to_string()),
            "{e}"
        );
        drop(first);
        let again = MachineLock::acquire_at(&p).unwrap();
        assert_eq!(again.path(), p);
    }

    #[test]
    fn a_planted_link_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        let p = d.path().join("x.lock");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        assert!(matches!(
            MachineLock::acquire_at(&p),
            Err(LockError::Io { .. })
        ));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
