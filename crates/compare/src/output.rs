//! Every run's output kept, labelled by arm and run: the program's stdout
//! and stderr both go to one file, `JOURNAL.out/arm-<ARM>-run-<SLOT>.txt`
//! beside the journal (the run line names it), in the order written (the
//! two descriptors share one open file, as `>FILE 2>&1` does).
//!
//! What the program sees: stdin is /dev/null as before, stdout and stderr
//! are a regular file (a memfd, `/memfd:pinsight-run-output`) instead of
//! the terminal (a program that checks isatty(3) notices, e.g. it may
//! buffer its output or drop colours). The program writes that file
//! itself: no reader thread competes with it for the CPUs being measured.
//!
//! After the run the memfd's content is copied into the named file, cut
//! to its first and last [`LIMIT`]/2 bytes with a line saying how much
//! was cut when it is longer than [`LIMIT`]. A run that wrote nothing gets
//! no file (its run line records 0 bytes and no path): creating and
//! journalling an inode per run was the largest part of pinsight's own
//! cost per run of a short program (`compare --runs 200 -- true`). The
//! output lives in memory (or swap) while the program runs, as on a tmpfs
//! /tmp; each run has its own memfd, so a process the run left behind
//! cannot write into a later run's output.
//!
//! Files are created with `O_EXCL | O_NOFOLLOW`
//! ([`pinsight_lifecycle::output::create_new`]): a retried slot gets
//! `-2`, `-3`, ...; a link planted at a name is never followed.

use crate::journal::RunOutputRef;
use pinsight_lifecycle::output::{self, OutputError};
use pinsight_sys::spawn::{Spawn, Stdio};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Most bytes kept of one run's output (half from its start, half from its end).
pub const LIMIT: u64 = 1024 * 1024;

/// The output directory of a journal: `JOURNAL.out` (the journal's file
/// name with `.out` appended).
pub fn dir_for(journal: &Path) -> PathBuf {
    let mut name = journal.file_name().unwrap_or_default().to_os_string();
    name.push(".out");
    journal.with_file_name(name)
}

/// Why a run's output cannot be kept.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("cannot keep the runs' output in {}: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file or a symbolic link (never followed) where the directory goes.
    #[error("cannot keep the runs' output in {}: it is not a directory (a link is never followed)", path.display())]
    NotDir { path: PathBuf },
}

/// Where the runs' output files go.
#[derive(Clone, Debug)]
pub struct Capture {
    dir: PathBuf,
    /// Prefix of the recorded paths (the directory's name, relative to
    /// the journal's directory).
    rel: String,
}

/// One run's output, open for the program to write (a memfd), and the
/// file it will be kept in.
pub struct Open {
    /// What the program writes to (shared with the run's spawn, which
    /// points both stdout and stderr at it).
    pub file: std::sync::Arc<File>,
    /// The file the output will be kept in (its name may get `-2`, ...
    /// if it is taken when the run ends).
    pub path: PathBuf,
    capture: Capture,
    stem: String,
}

/// One run's output, once the program has exited.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    /// What the run line records.
    pub reference: RunOutputRef,
    /// The file's path.
    pub path: PathBuf,
    /// The kept text (UTF-8, invalid bytes replaced), cut as the file is.
    pub text: String,
}

impl Capture {
    /// Makes (or reuses, on resume) `JOURNAL.out`; a link there is refused.
    pub fn for_journal(journal: &Path) -> Result<Capture, CaptureError> {
        let dir = dir_for(journal);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let is_dir = dir.symlink_metadata().is_ok_and(|m| m.is_dir());
                if !is_dir {
                    return Err(CaptureError::NotDir { path: dir });
                }
            }
            Err(source) => return Err(CaptureError::Dir { path: dir, source }),
        }
        let rel = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        Ok(Capture { dir, rel })
    }

    /// Whether [`Capture::for_journal`] can keep `journal`'s runs' output,
    /// changing nothing: `JOURNAL.out` is a directory this process may
    /// write (not a link, nor a file), or is absent from a directory it
    /// may write. Checked before the journal is made, so a journal is
    /// never created for output that cannot be kept.
    pub fn check(journal: &Path) -> Result<(), CaptureError> {
        let dir = dir_for(journal);
        // `output::check` makes (and removes) a temporary file where a
        // file would go: the one test of "may write here" that holds.
        let probe = match dir.symlink_metadata() {
            Ok(m) if m.is_dir() => output::check(&dir.join("arm-check.txt")),
            Ok(_) => return Err(CaptureError::NotDir { path: dir }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => output::check(&dir),
            Err(source) => return Err(CaptureError::Dir { path: dir, source }),
        };
        probe.map_err(|e| match e {
            OutputError::Write { source, .. } => CaptureError::Dir { path: dir, source },
            e => CaptureError::Output(e),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the output file of `slot` (arm `arm`): `arm-ARM-run-SLOT.txt`,
    /// or `-2`, `-3`, ... when a retry of the slot finds it taken.
    pub fn open(&self, arm: &str, slot: usize) -> Result<Open, CaptureError> {
        self.open_stem(&format!("arm-{}-run-{slot}", safe(arm)))
    }

    /// Creates the output file of the `--prepare` command run before
    /// `slot`: `prepare-before-run-SLOT.txt` (`-2`, ... on a retry).
    pub fn open_prepare(&self, slot: usize) -> Result<Open, CaptureError> {
        self.open_stem(&format!("prepare-before-run-{slot}"))
    }

    fn open_stem(&self, stem: &str) -> Result<Open, CaptureError> {
        let path = self.dir.join(format!("{stem}.txt"));
        let file = pinsight_sys::fs::scratch_memfd(c"pinsight-run-output").map_err(|source| {
            OutputError::Write {
                path: path.clone(),
                source,
            }
        })?;
        Ok(Open {
            file: std::sync::Arc::new(file),
            path,
            capture: self.clone(),
            stem: stem.to_string(),
        })
    }

    /// Creates the kept file of `stem` (`-2`, `-3`, ... when taken):
    /// its path and its path relative to the journal's directory.
    fn create(&self, stem: &str) -> Result<(File, PathBuf, String), CaptureError> {
        for n in 1.. {
            let name = if n == 1 {
                format!("{stem}.txt")
            } else {
                format!("{stem}-{n}.txt")
            };
            let path = self.dir.join(&name);
            match output::create_new(&path) {
                Ok(file) => return Ok((file, path, format!("{}/{name}", self.rel))),
                Err(OutputError::Exists { .. }) if n < 1000 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        unreachable!("the loop returns")
    }
}

/// `p-pinned@powersave` → `p-pinned_powersave`: letters, digits, `-`,
/// `.`, `_` kept, anything else `_`.
fn safe(arm: &str) -> String {
    arm.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Open {
    /// Points `cmd`'s stdout and stderr at this file (one open file, as
    /// `>FILE 2>&1`, shared with the spawn: no descriptor duplicated for a
    /// run).
    pub fn redirect(&self, cmd: &mut Spawn) {
        cmd.stdout(Stdio::Shared(self.file.clone()))
            .stderr(Stdio::Shared(self.file.clone()));
    }

    /// Keeps what the program wrote (bounded, see [`LIMIT`]) in the named
    /// file, and returns it. Nothing is created for a run that wrote
    /// nothing.
    pub fn finish(self) -> Result<Kept, CaptureError> {
        let werr = |path: &Path, source| OutputError::Write {
            path: path.to_path_buf(),
            source,
        };
        let f = self.file;
        let bytes = f.metadata().map_err(|e| werr(&self.path, e))?.len();
        if bytes == 0 {
            return Ok(Kept {
                reference: RunOutputRef {
                    path: String::new(),
                    bytes: 0,
                    cut_bytes: 0,
                    figures: Vec::new(),
                },
                path: PathBuf::new(),
                text: String::new(),
            });
        }
        let cut = bytes.saturating_sub(LIMIT);
        let read = |offset: u64, len: u64| -> Result<Vec<u8>, CaptureError> {
            let mut buf = vec![0u8; len as usize];
            f.read_exact_at(&mut buf, offset)
                .map_err(|e| werr(&self.path, e))?;
            Ok(buf)
        };
        let kept = if cut == 0 {
            read(0, bytes)?
        } else {
            let half = LIMIT / 2;
            let mut kept = read(0, half)?;
            kept.extend_from_slice(
                format!(
                    "\n[pinsight: {cut} bytes cut here to keep the file under {LIMIT} bytes; the run wrote {bytes}]\n"
                )
                .as_bytes(),
            );
            kept.extend(read(bytes - half, half)?);
            kept
        };
        drop(f);
        let (mut file, path, rel) = self.capture.create(&self.stem)?;
        file.write_all(&kept).map_err(|e| werr(&path, e))?;
        let text = String::from_utf8_lossy(&kept).into_owned();
        Ok(Kept {
            reference: RunOutputRef {
                path: rel,
                bytes,
                cut_bytes: cut,
                figures: crate::program_metric::figures_in(&text),
            },
            text,
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn files_are_named_by_arm_and_run_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let j = d.path().join("j.jsonl");
        let c = Capture::for_journal(&j).unwrap();
        assert!(c.dir().ends_with("j.jsonl.out"));
        let o = c.open("p-pinned@powersave", 3).unwrap();
        assert!(o.path.ends_with("arm-p-pinned_powersave-run-3.txt"));
        (&*o.file).write_all(b"hello\n").unwrap();
        let k = o.finish().unwrap();
        assert_eq!(k.text, "hello\n");
        assert_eq!(
            k.reference.path,
            "j.jsonl.out/arm-p-pinned_powersave-run-3.txt"
        );
        // A retry of the slot (resume) keeps the first attempt's file.
        let o = c.open("p-pinned@powersave", 3).unwrap();
        (&*o.file).write_all(b"again\n").unwrap();
        let k = o.finish().unwrap();
        assert!(k.path.ends_with("arm-p-pinned_powersave-run-3-2.txt"));
        assert_eq!(std::fs::read_to_string(&k.path).unwrap(), "again\n");
        // A run that wrote nothing gets no file.
        let o = c.open("os", 5).unwrap();
        let k = o.finish().unwrap();
        assert_eq!((k.reference.bytes, k.reference.path.as_str()), (0, ""));
        assert!(!c.dir().join("arm-os-run-5.txt").exists());
        // Too long: head and tail kept.
        let o = c.open("os", 4).unwrap();
        let big = vec![b'x'; (LIMIT + 10) as usize];
        (&*o.file).write_all(b"START").unwrap();
        (&*o.file).write_all(&big).unwrap();
        (&*o.file).write_all(b"END").unwrap();
        let k = o.finish().unwrap();
        assert_eq!(k.reference.cut_bytes, 18);
        assert!(k.text.starts_with("START") && k.text.ends_with("END"));
        assert!(k.text.contains("18 bytes cut here"));
        assert!(std::fs::metadata(&k.path).unwrap().len() < LIMIT + 200);
        // Resume reuses the directory; a link in its place is refused.
        Capture::for_journal(&j).unwrap();
        let l = d.path().join("k.jsonl");
        std::os::unix::fs::symlink(d.path(), dir_for(&l)).unwrap();
        assert!(matches!(
            Capture::for_journal(&l),
            Err(CaptureError::NotDir { .. })
        ));
    }
}
