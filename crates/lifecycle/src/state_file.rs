//! Where the state files that undo a change live (`balance`'s saved
//! affinities, `irq`'s saved IRQ affinities), and which ones may be
//! trusted when read back.
//!
//! A state file moves threads or interrupts when it is restored, so it
//! never lives in the shared temporary directory (another user could
//! place or edit it there), and one that another user could have written
//! is refused before it is read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The directory of state files: `$XDG_STATE_HOME/pinsight` when that is
/// set (XDG Base Directory Specification), else `/var/lib/pinsight` for
/// root (the Filesystem Hierarchy Standard's place for a program's
/// variable state), else `$HOME/.local/state/pinsight`; `None` when no
/// variable holds an absolute path (the caller asks for a file). Pure.
pub fn dir_for(
    euid: u32,
    xdg_state_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    // The specification: a relative value is invalid and ignored.
    let absolute = |v: OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(dir) = xdg_state_home.and_then(absolute) {
        return Some(dir.join("pinsight"));
    }
    if euid == 0 {
        return Some(PathBuf::from("/var/lib/pinsight"));
    }
    home.and_then(absolute)
        .map(|h| h.join(".local/state/pinsight"))
}

/// A new state file's path, `PREFIX-SECONDS-PID.json` in [`dir_for`] this
/// process, the directory created (mode 0700) when missing.
pub fn new_path(prefix: &str) -> std::io::Result<PathBuf> {
    let dir = dir_for(
        pinsight_sys::process::geteuid(),
        std::env::var_os("XDG_STATE_HOME"),
        std::env::var_os("HOME"),
    )
    .ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "neither $XDG_STATE_HOME nor $HOME is an absolute path",
        )
    })?;
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&dir)?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(dir.join(format!("{prefix}-{secs}-{}.json", std::process::id())))
}

/// Whether a file of owner `uid` and permission bits `mode` may be
/// trusted by a process of effective uid `euid`: owned by it or by root,
/// and writable by no one else (no group or other write bit); `Err` says
/// why not. Pure.
pub fn trusted(uid: u32, mode: u32, euid: u32) -> Result<(), String> {
    if uid != euid && uid != 0 {
        return Err(format!(
            "it is owned by uid {uid}, not by you (uid {euid}) or root: another user could \
             have written it"
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "others may write it (mode {:04o}): anyone could have edited it (chmod go-w it if \
             you trust what it says)",
            mode & 0o7777
        ));
    }
    Ok(())
}

/// [`trusted`] for the file at `path` (its target, when a link) and this
/// process; `Err` with the reason (or the error of reading its metadata).
pub fn check_trusted(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    trusted(meta.uid(), meta.mode(), pinsight_sys::process::geteuid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_lives_in_the_users_state_directory_never_in_tmp() {
        // (uid, XDG_STATE_HOME, HOME, the directory).
        let cases = [
            (0, None, Some("/root"), Some("/var/lib/pinsight")),
            (0, Some("/x"), Some("/root"), Some("/x/pinsight")),
            (1000, Some("/s"), Some("/h"), Some("/s/pinsight")),
            (1000, None, Some("/h"), Some("/h/.local/state/pinsight")),
            // Relative values are invalid (the XDG specification).
            (
                1000,
                Some("rel"),
                Some("/h"),
                Some("/h/.local/state/pinsight"),
            ),
            (1000, Some(""), Some(""), None),
            (1000, None, None, None),
        ];
        for (uid, state, home, want) in cases {
            assert_eq!(
                dir_for(uid, state.map(OsString::from), home.map(OsString::from)),
                want.map(PathBuf::from),
                "uid {uid}, XDG_STATE_HOME {state:?}, HOME {home:?}"
            );
        }
    }

    #[test]
    fn only_files_no_one_else_could_write_are_trusted() {
        assert!(trusted(1000, 0o100600, 1000).is_ok());
        assert!(trusted(0, 0o100644, 1000).is_ok());
        let e = trusted(65534, 0o100600, 0).unwrap_err();
        assert!(
            e.contains("owned by uid 65534, not by you (uid 0) or root"),
            "{e}"
        );
        let e = trusted(0, 0o100666, 0).unwrap_err();
        assert!(e.contains("others may write it (mode 0666)"), "{e}");
        assert!(trusted(1000, 0o100620, 1000).is_err());
    }
}
