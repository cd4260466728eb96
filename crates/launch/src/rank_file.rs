//! Where `run --slice` writes this rank's report ([`RankReport`]) in a
//! report directory: `DIR/<host>/rank-<N>.json`, its directory created
//! before the program runs (a bad directory fails first), the file written
//! crash-safe after. The host name is the kernel's
//! (`/proc/sys/kernel/hostname`, read through the one window on /proc).

use crate::launch::RunOutcome;
use crate::rank_report::{RankReport, RankReportError};
use pinsight_lifecycle::output::OutputError;
use pinsight_plan::slice::RankSlice;
use pinsight_plan::Plan;
use pinsight_sys::FsRoot;
use std::path::{Path, PathBuf};

/// This rank's report file in a report directory, its directory made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFile {
    /// The host's name as the directory names it (`unknown-host` when the
    /// kernel's is empty or no file name).
    pub host: String,
    pub path: PathBuf,
}

/// Why this rank's report was not written.
#[derive(Debug, thiserror::Error)]
pub enum RankFileError {
    /// The host's directory could not be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// The report could not be made into text.
    #[error(transparent)]
    Report(#[from] RankReportError),
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] OutputError),
}

/// The host name a report directory uses: the kernel's, trimmed, unless
/// empty or not a plain file name.
pub fn host_name(fs: &FsRoot) -> String {
    fs.read_opt("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty() && !h.contains('/') && h != "." && h != "..")
        .unwrap_or_else(|| "unknown-host".into())
}

impl RankFile {
    /// `dir/<host>/rank-<rank>.json`, with `dir/<host>` created.
    pub fn prepare(fs: &FsRoot, dir: &Path, rank: usize) -> Result<RankFile, RankFileError> {
        let host = host_name(fs);
        let sub = dir.join(&host);
        std::fs::create_dir_all(&sub).map_err(|source| RankFileError::CreateDir {
            dir: sub.clone(),
            source,
        })?;
        Ok(RankFile {
            path: sub.join(format!("rank-{rank}.json")),
            host,
        })
    }

    /// Writes the report of the rank that ran `plan` on `slice`.
    pub fn write(
        &self,
        slice: &RankSlice,
        plan: &Plan,
        outcome: &RunOutcome,
    ) -> Result<(), RankFileError> {
        let text = RankReport::new(&self.host, slice, plan, outcome)?.to_text()?;
        pinsight_lifecycle::output::write(&self.path, text.as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_directory_is_made_and_a_strange_host_name_replaced() {
        let root = tempfile::tempdir().unwrap();
        let proc_dir = root.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&proc_dir).unwrap();
        let fs = FsRoot::at(root.path()).unwrap();
        let out = tempfile::tempdir().unwrap();
        for (written, host) in [
            ("node7\n", "node7"),
            ("a/b\n", "unknown-host"),
            ("..\n", "unknown-host"),
            ("\n", "unknown-host"),
        ] {
            std::fs::write(proc_dir.join("hostname"), written).unwrap();
            let f = RankFile::prepare(&fs, out.path(), 3).unwrap();
            assert_eq!(f.host, host);
            assert_eq!(f.path, out.path().join(host).join("rank-3.json"));
            assert!(out.path().join(host).is_dir());
        }
        let blocked = out.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let e = RankFile::prepare(&fs, &blocked, 0).unwrap_err();
        assert!(e.to_string().starts_with("cannot create "), "{e}");
    }
}
