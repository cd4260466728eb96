//! The one experiment journal: JSON Lines, the header on line 1 and one
//! record per further line, each appended whole with one write(2) before
//! [`Journal::append`] returns, and synced to disk (`fdatasync`) in
//! batches at most [`SYNC_INTERVAL`] apart: a finished measurement is
//! never lost to Ctrl-C, `kill -9`, a crash of pinsight or a full disk,
//! and at most the records appended in the last [`SYNC_INTERVAL`] (and
//! the batch being synced) to a power cut or a kernel crash.
//!
//! Guarantees (what the docs promise users):
//!
//! * **Written at once, synced in batches.** A record is in the kernel's
//!   page cache when `append` returns, so it survives the death of the
//!   process however it dies (write(2): the data is visible to every later
//!   reader; only the kernel or the machine going down can drop what is not
//!   on disk). `fdatasync` is what makes it survive those, and it costs
//!   from a fraction of a millisecond (an SSD) to tens (a disk, a network
//!   file system) per call: more than a run of a short program. So an
//!   append starts a sync when the previous one started [`SYNC_INTERVAL`]
//!   ago or more (a run as long as that or longer is therefore synced the
//!   moment it is appended; the first interval counts from the journal's
//!   creation or resume), and a resume's truncation is synced at once. The
//!   end of an experiment ([`Journal::finish`], and drop) waits for the
//!   batch in flight and reports a failed one, but starts no new batch:
//!   what is left unsynced then was appended within the last
//!   `SYNC_INTERVAL` (else an append would have started its sync), and
//!   the kernel writes it back on its own within its writeback delay
//!   (`vm.dirty_expire_centisecs`, 30 s by default). So the bound holds
//!   after the experiment too: a power cut or kernel crash, during an
//!   experiment or before that writeback, loses at most the records
//!   appended in the last `SYNC_INTERVAL` of appends plus the one sync in
//!   flight; a short experiment (under `SYNC_INTERVAL` of runs) pays no
//!   sync at all, which is most of what a `compare -- true` used to spend
//!   beyond its runs. [`Journal::sync`] syncs everything and waits, for a
//!   caller that must have it on disk. The batch syncs run on a thread of
//!   the journal's own (`fdatasync` waits for the disk, not the CPU),
//!   started with the first batch, so the runs go on meanwhile. A new
//!   journal's name (its directory entry) is synced with its first batch.
//!   What survives a power cut is whole lines and at most one partial last
//!   line (the "cut last line" rule below), so the journal stays valid and
//!   resumable.
//! * **Created exclusively.** A new journal is opened with `O_CREAT |
//!   O_EXCL | O_NOFOLLOW`: an existing file is never overwritten and a
//!   symbolic link planted at its name is never followed (open(2)). A
//!   journal whose header cannot be written whole (a full disk) is removed.
//! * **Locked while in use.** The writer holds an exclusive `flock(2)` on
//!   the journal for as long as it lives; a second writer, or a second
//!   resume of a live journal, is refused with [`JournalError::Locked`],
//!   naming the holder's pid. The lock dies with the process (even under
//!   `kill -9`), so it is never stale.
//! * **A cut last line, one rule.** A last line without its newline (a
//!   crash or a full disk mid-write, or a file edited by hand) is kept when
//!   it reads as a complete record (the newline is added before the next
//!   append) and dropped otherwise, with a [`Warning`]; on resume the file
//!   is truncated back to its last complete line. An
//!   append that fails part-way is cut back the same way at once.
//! * **Read back before it counts.** Every header and record is parsed
//!   back from the very line about to be written and must equal what was
//!   given (serde_json writes a non-finite float as `null`, which no
//!   record reads back as); one that does not is refused
//!   ([`JournalError::RoundTrip`]) and nothing is written, so a journal
//!   never holds a line its reader cannot take.
//! * **Checked against the design.** Every record is checked against the
//!   header's [`Design`] (the arm or program exists, the slot is in range,
//!   no slot is recorded twice, times are finite and non-negative); a
//!   record that is not is refused naming the file and the line. A
//!   complete line that is not a record at all (written by an older
//!   version, or edited by hand) is skipped with a [`Warning`] naming its
//!   line, and the rest of the journal still reads and resumes (a slot it
//!   held runs again).
//! * **Resumed by identity.** [`Design::mismatch`] says how the journal's
//!   experiment differs from the one asked for now; a caller refuses to
//!   resume a different experiment.
//!
//! Why `flock(2)` and not POSIX record locks (`fcntl(F_SETLK)`): a POSIX
//! lock is released when the process closes *any* descriptor of the file
//! (fcntl(2), "the locks are released when any file descriptor referring
//! to the file is closed"), so reading the journal for a report while the
//! writer lives would silently unlock it. A `flock` lock belongs to the
//! open file description and is released only when that closes; the
//! journal is opened `O_CLOEXEC` (Rust's default), so programs the
//! experiment runs never inherit it. `flock` does not tell who holds a
//! lock, so the holder's pid is looked up in `/proc/locks` (proc(5)) by
//! the file's device and inode.

use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The longest an appended record waits for its `fdatasync` while appends
/// keep coming, and the most a power cut can lose (see the module's
/// guarantees). One second: an `fdatasync` a second costs nothing beside
/// the runs, and losing a second of runs to a power cut costs a second
/// to measure again.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// How a header or a record is written as one JSON line and read back.
///
/// Each journal keeps its own wire form (a tag field, a flattened
/// struct), so existing journals stay readable byte for byte.
pub trait JsonLine: Sized {
    /// The line, without its newline.
    fn to_line(&self) -> Result<String, serde_json::Error>;
    /// Reads one line back; `Err` says why it is not one.
    fn from_line(line: &str) -> Result<Self, String>;
}

/// The experiment a journal's header describes, and what each record
/// must be to belong to it.
pub trait Design<R>: JsonLine {
    /// What the records seen so far imply for the next (the slots done,
    /// to refuse a duplicate).
    type Seen: Default;
    /// One way two experiments differ (see [`Design::mismatch`]).
    type Difference;

    /// Completes a record read back with what its line leaves to the
    /// header (a journal that writes values common to every record once,
    /// in its header); called on every record before [`Design::check`].
    /// Nothing by default.
    fn complete(&self, _record: &mut R) {}

    /// Checks `record` against the design, given what came before it, and
    /// records it in `seen`. `Err` says, in a sentence, what is wrong.
    fn check(&self, seen: &mut Self::Seen, record: &R) -> Result<(), String>;

    /// What makes `now` (built from the current request) a different
    /// experiment from this header's; empty when it is the same one.
    fn mismatch(&self, now: &Self) -> Vec<Self::Difference>;
}

/// Something read that is not an error: a line dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Line number, from 1.
    pub line: usize,
    /// What happened to it.
    pub what: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

/// Why a journal cannot be created, read, resumed or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A new journal would overwrite this file (or a link planted there).
    #[error("journal {} already exists", path.display())]
    Exists { path: PathBuf },
    #[error("cannot create journal {}: {source}", path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot create a journal in {}: {stem}.jsonl and 10000 variants exist", dir.display())]
    NoFreeName { dir: PathBuf, stem: String },
    /// The journal to resume is a symbolic link (never followed).
    #[error("journal {} is a symbolic link; name the journal file itself", path.display())]
    Symlink { path: PathBuf },
    #[error("cannot read journal {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// Another process holds the journal (it is being written).
    #[error("journal {} is in use by {}; wait for it to end or stop it first", path.display(),
        match pid { Some(p) => format!("pid {p}"), None => "another process".to_string() })]
    Locked { path: PathBuf, pid: Option<i32> },
    #[error("cannot lock journal {}: {source}", path.display())]
    Lock { path: PathBuf, source: io::Error },
    #[error("journal {} is empty: no header line", path.display())]
    Empty { path: PathBuf },
    /// Line 1 is not this kind of journal's header.
    #[error("journal {} line 1: {reason}", path.display())]
    Header { path: PathBuf, reason: String },
    /// A record outside the design.
    #[error("journal {} line {line}: {reason}", path.display())]
    Record {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// A header or record that would not read back as it is (a float
    /// that is not finite, which JSON cannot hold): not written.
    #[error("journal {}: a {what} would not read back as written ({reason}); nothing written", path.display())]
    RoundTrip {
        path: PathBuf,
        /// `header` or `record`.
        what: &'static str,
        reason: String,
    },
    #[error("cannot write journal {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// A journal read back: its header, every record in file order, and the
/// lines dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Contents<H, R> {
    pub header: H,
    pub records: Vec<R>,
    pub warnings: Vec<Warning>,
}

/// Parsed text plus where its valid part ends.
struct Parsed<H, R> {
    contents: Contents<H, R>,
    /// Bytes of the text to keep (a dropped fragment excluded).
    keep: usize,
    /// The kept text ends without a newline (a complete last record).
    needs_newline: bool,
}

/// Parses journal text (`path` only names the file in errors).
pub fn parse<H: Design<R>, R: JsonLine>(
    path: &Path,
    text: &str,
) -> Result<Contents<H, R>, JournalError> {
    parse_text(path, text).map(|p| p.contents)
}

fn parse_text<H: Design<R>, R: JsonLine>(
    path: &Path,
    text: &str,
) -> Result<Parsed<H, R>, JournalError> {
    let p = || path.to_path_buf();
    let mut lines = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        lines.push((at, l));
        at += l.len();
    }
    let complete = |l: &str| l.ends_with('\n');
    let Some(&(_, first)) = lines.iter().find(|(_, l)| !l.trim().is_empty()) else {
        return Err(JournalError::Empty { path: p() });
    };
    if lines[0].1.trim().is_empty() {
        return Err(JournalError::Header {
            path: p(),
            reason: "empty; the header must be the first line".into(),
        });
    }
    let header = H::from_line(first.trim_end())
        .map_err(|reason| JournalError::Header { path: p(), reason })?;
    let mut seen = H::Seen::default();
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    let mut keep = text.len();
    let mut needs_newline = !text.ends_with('\n');
    let n = lines.len();
    for (i, &(start, l)) in lines.iter().enumerate().skip(1) {
        let body = l.trim_end_matches('\n');
        if body.trim().is_empty() {
            continue;
        }
        let last_cut = i + 1 == n && !complete(l);
        // A fragment is a last line without its newline that does not
        // read as a record; a record that reads but breaks the design is
        // refused wherever it is.
        let checked = match R::from_line(body).map(|mut r| {
            header.complete(&mut r);
            r
        }) {
            Ok(r) => header
                .check(&mut seen, &r)
                .map(|()| r)
                .map_err(|reason| (reason, false)),
            Err(e) => Err((format!("not a record: {e}"), true)),
        };
        match checked {
            Ok(r) => records.push(r),
            Err((_, true)) if last_cut => {
                warnings.push(Warning {
                    line: i + 1,
                    what: "cut short (written when the experiment was stopped or the disk \
                           was full), dropped"
                        .into(),
                });
                keep = start;
                needs_newline = false;
            }
            // A complete line that is no record: skipped, named, kept in
            // the file as it is (one bad line never costs the others).
            Err((reason, true)) => warnings.push(Warning {
                line: i + 1,
                what: format!("{reason}; skipped"),
            }),
            Err((reason, _)) => {
                return Err(JournalError::Record {
                    path: p(),
                    line: i + 1,
                    reason,
                })
            }
        }
    }
    Ok(Parsed {
        contents: Contents {
            header,
            records,
            warnings,
        },
        keep,
        needs_newline,
    })
}

/// An open, locked journal, appending records of type `R` under header `H`.
#[derive(Debug)]
pub struct Journal<H, R> {
    file: Flock<File>,
    path: PathBuf,
    /// The file ends with a complete record but no newline.
    needs_newline: bool,
    /// The file's length: where the next line goes, and where a failed
    /// append is cut back to (kept here: no seek per append).
    len: u64,
    /// Records written since the last `fdatasync` was started.
    unsynced: bool,
    /// When the last `fdatasync` was started.
    last_sync: Instant,
    /// The file is new: its directory entry is synced with the next batch.
    new_name: bool,
    /// The thread that syncs batches, started with the first one.
    syncer: Option<Syncer>,
    _types: PhantomData<fn() -> (H, R)>,
}

/// `value`'s line, once it has read back equal to `value`
/// ([`JournalError::RoundTrip`] names `what` when it does not).
fn checked_line<T: JsonLine + PartialEq>(
    path: &Path,
    what: &'static str,
    value: &T,
) -> Result<String, JournalError> {
    let line = value.to_line().map_err(|e| JournalError::Write {
        path: path.to_path_buf(),
        source: io::Error::other(e),
    })?;
    let refused = |reason: String| JournalError::RoundTrip {
        path: path.to_path_buf(),
        what,
        reason,
    };
    match T::from_line(&line) {
        Ok(back) if back == *value => Ok(line),
        Ok(_) => Err(refused(
            "it reads back different (a number that is not finite?)".into(),
        )),
        Err(e) => Err(refused(e)),
    }
}

impl<H: Design<R> + PartialEq, R: JsonLine + PartialEq> Journal<H, R> {
    /// Creates a new journal at `path` with `header`; never overwrites a
    /// file or follows a link.
    pub fn create(path: &Path, header: &H) -> Result<Self, JournalError> {
        let line = checked_line(path, "header", header)?;
        let file = create_exclusive(path).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => JournalError::Exists {
                path: path.to_path_buf(),
            },
            _ => JournalError::Create {
                path: path.to_path_buf(),
                source: e,
            },
        })?;
        Self::start(file, path.to_path_buf(), &line)
    }

    /// Creates a new journal named `{stem}.jsonl` in `dir`, or
    /// `{stem}-2.jsonl`, `{stem}-3.jsonl`, ... when that exists: each
    /// name is claimed atomically (`O_EXCL`), so two experiments started
    /// in the same second never share (or fail on) a journal.
    pub fn create_unique(dir: &Path, stem: &str, header: &H) -> Result<Self, JournalError> {
        let line = checked_line(&dir.join(format!("{stem}.jsonl")), "header", header)?;
        for n in 1..=10_000u32 {
            let name = if n == 1 {
                format!("{stem}.jsonl")
            } else {
                format!("{stem}-{n}.jsonl")
            };
            let path = dir.join(name);
            match create_exclusive(&path) {
                Ok(file) => return Self::start(file, path, &line),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(JournalError::Create { path, source }),
            }
        }
        Err(JournalError::NoFreeName {
            dir: dir.to_path_buf(),
            stem: stem.to_string(),
        })
    }

    /// Locks the new `file` and writes its header line.
    fn start(file: File, path: PathBuf, header: &str) -> Result<Self, JournalError> {
        let file = lock(file, &path)?;
        let mut j = Journal {
            file,
            path,
            needs_newline: false,
            len: 0,
            unsynced: false,
            last_sync: Instant::now(),
            new_name: false,
            syncer: None,
            _types: PhantomData,
        };
        if let Err(source) = j.write_line(header) {
            // Leave no trace: the file is ours and holds nothing.
            let _ = std::fs::remove_file(&j.path);
            // Nothing left to sync in a file that is gone.
            j.unsynced = false;
            return Err(JournalError::Write {
                path: j.path.clone(),
                source,
            });
        }
        // The header and the new name are synced with the first batch.
        j.new_name = true;
        Ok(j)
    }

    /// Opens an existing journal to continue it: locks it (refusing one
    /// in use), reads it through the locked descriptor, checks every
    /// record, and cuts a fragment off its end.
    pub fn resume(path: &Path) -> Result<(Self, Contents<H, R>), JournalError> {
        use pinsight_sys::fs::{open_regular_with, OpenHow};
        let how = OpenHow {
            write: true,
            no_follow: true,
        };
        // A regular file of at most MAX_JOURNAL_BYTES, opened without
        // blocking: a FIFO or a device is refused unread.
        let file = open_regular_with(path, MAX_JOURNAL_BYTES, how).map_err(|e| match e {
            pinsight_sys::fs::BoundedReadError::Io(source)
                if source.raw_os_error() == Some(libc::ELOOP) =>
            {
                JournalError::Symlink {
                    path: path.to_path_buf(),
                }
            }
            e => read_error(path, e),
        })?;
        let mut file = lock(file, path)?;
        let rerr = |source| JournalError::Read {
            path: path.to_path_buf(),
            source,
        };
        let bytes = pinsight_sys::fs::read_to_end_bounded(&mut file, MAX_JOURNAL_BYTES)
            .map_err(|e| read_error(path, e))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            rerr(io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ))
        })?;
        let parsed = parse_text::<H, R>(path, &text)?;
        let werr = |source| JournalError::Write {
            path: path.to_path_buf(),
            source,
        };
        if parsed.keep < text.len() {
            file.set_len(parsed.keep as u64).map_err(werr)?;
            file.sync_data().map_err(werr)?;
        }
        let len = file.seek(SeekFrom::End(0)).map_err(werr)?;
        Ok((
            Journal {
                file,
                path: path.to_path_buf(),
                needs_newline: parsed.needs_newline,
                len,
                unsynced: false,
                last_sync: Instant::now(),
                new_name: false,
                syncer: None,
                _types: PhantomData,
            },
            parsed.contents,
        ))
    }

    /// Reads a journal without locking or changing it (a report of a
    /// journal being written, or before resuming it).
    pub fn read(path: &Path) -> Result<Contents<H, R>, JournalError> {
        // A regular file of at most MAX_JOURNAL_BYTES: a FIFO or a device
        // is refused unread, a larger file by its size.
        let text = pinsight_sys::fs::read_bounded_string(path, MAX_JOURNAL_BYTES)
            .map_err(|e| read_error(path, e))?;
        parse(path, &text)
    }

    /// Appends one record (one write(2)), and syncs it to disk with those
    /// before it when the last sync is [`SYNC_INTERVAL`] old. A record
    /// that would not read back as it is is refused, nothing written
    /// ([`JournalError::RoundTrip`]). On a failed write (a full disk) the
    /// file is cut back to its last complete line.
    pub fn append(&mut self, record: &R) -> Result<(), JournalError> {
        let line = checked_line(&self.path, "record", record)?;
        self.write_line(&line)
            .and_then(|()| {
                if self.last_sync.elapsed() >= SYNC_INTERVAL {
                    self.start_sync_now()
                } else {
                    Ok(())
                }
            })
            .map_err(|source| JournalError::Write {
                path: self.path.clone(),
                source,
            })
    }

    /// Syncs to disk every record not synced yet (nothing to do when all
    /// are) and waits for it: for a caller that must have every record
    /// on disk now. Experiments end with [`Journal::finish`] instead.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.sync_now().map_err(|source| JournalError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// The end of an experiment (by a signal too): waits for the batch
    /// being synced and reports its failure (or an earlier one), and
    /// starts none, per the module's bounded policy (what is left was
    /// appended within the last [`SYNC_INTERVAL`]). Drop does the same,
    /// ignoring a failure it could not report.
    pub fn finish(&mut self) -> Result<(), JournalError> {
        self.wait_in_flight().map_err(|source| JournalError::Write {
            path: self.path.clone(),
            source,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_line(&mut self, line: &str) -> io::Result<()> {
        let before = self.len;
        let mut s = String::with_capacity(line.len() + 2);
        if self.needs_newline {
            s.push('\n');
        }
        s.push_str(line);
        s.push('\n');
        // One write call per line: a crash leaves whole lines plus at
        // most one partial last line, which a reader drops.
        match self.file.write_all(s.as_bytes()) {
            Ok(()) => {
                self.needs_newline = false;
                self.unsynced = true;
                self.len += s.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut the partial line off so the journal stays whole.
                let _ = self.file.set_len(before);
                let _ = self.file.seek(SeekFrom::Start(before));
                let _ = self.file.sync_data();
                Err(e)
            }
        }
    }
}

impl<H, R> Journal<H, R> {
    /// Hands the records written so far to the syncer (started on first
    /// use) and returns at once; the error of an earlier sync, if any.
    fn start_sync_now(&mut self) -> io::Result<()> {
        if !self.unsynced {
            return self.syncer.as_ref().map_or(Ok(()), Syncer::take_error);
        }
        if self.syncer.is_none() {
            // A descriptor of its own on the same open file: syncing
            // either syncs the file (fsync(2)); the lock is the open
            // file's and stays with it (flock(2)).
            self.syncer = Some(Syncer::start(self.file.try_clone()?)?);
        }
        let dir = std::mem::take(&mut self.new_name).then(|| dir_of(&self.path));
        self.unsynced = false;
        self.last_sync = Instant::now();
        match &self.syncer {
            Some(s) => s.request(dir),
            None => Ok(()),
        }
    }

    /// Waits for the batch in flight, if any; the error of it or of an
    /// earlier one.
    fn wait_in_flight(&self) -> io::Result<()> {
        match &self.syncer {
            Some(s) => s.wait(),
            None => Ok(()),
        }
    }

    /// Syncs everything written so far and waits until it is on disk.
    fn sync_now(&mut self) -> io::Result<()> {
        self.start_sync_now()?;
        match &self.syncer {
            Some(s) => s.wait(),
            None => Ok(()),
        }
    }
}

/// The directory holding `path` (`.` for a bare name).
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

impl<H, R> Drop for Journal<H, R> {
    fn drop(&mut self) {
        let _ = self.wait_in_flight();
    }
}

/// The thread that runs a journal's `fdatasync`s, one batch at a time.
#[derive(Debug)]
struct Syncer {
    shared: std::sync::Arc<(std::sync::Mutex<SyncState>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct SyncState {
    /// Batches asked for, and synced (or failed), so far.
    requested: u64,
    done: u64,
    /// A directory whose entry is to be synced with the next batch.
    dir: Option<PathBuf>,
    /// The first failure not yet reported.
    error: Option<io::Error>,
    stop: bool,
}

impl Syncer {
    fn start(file: File) -> io::Result<Syncer> {
        let shared = std::sync::Arc::new((
            std::sync::Mutex::new(SyncState::default()),
            std::sync::Condvar::new(),
        ));
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pinsight-jsync".into())
            .spawn(move || sync_loop(&file, &theirs))?;
        Ok(Syncer {
            shared,
            thread: Some(thread),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SyncState> {
        self.shared
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Asks for one more batch (and `dir`'s entry with it).
    fn request(&self, dir: Option<PathBuf>) -> io::Result<()> {
        let mut st = self.state();
        st.requested += 1;
        if dir.is_some() {
            st.dir = dir;
        }
        self.shared.1.notify_all();
        st.error.take().map_or(Ok(()), Err)
    }

    /// Waits until every batch asked for is synced.
    fn wait(&self) -> io::Result<()> {
        let mut st = self.state();
        while st.done < st.requested {
            st = self
                .shared
                .1
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        st.error.take().map_or(Ok(()), Err)
    }

    /// The failure of an earlier batch, once.
    fn take_error(&self) -> io::Result<()> {
        self.state().error.take().map_or(Ok(()), Err)
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let _ = self.wait();
        self.state().stop = true;
        self.shared.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The syncer thread: each wake-up syncs everything written before it
/// (one `fdatasync` covers every batch asked for meanwhile).
fn sync_loop(file: &File, shared: &(std::sync::Mutex<SyncState>, std::sync::Condvar)) {
    let (lock, cv) = shared;
    let mut st = lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        while st.done == st.requested && !st.stop {
            st = cv
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if st.done == st.requested && st.stop {
            return;
        }
        let upto = st.requested;
        let dir = st.dir.take();
        drop(st);
        let r = file.sync_data();
        if let (Ok(()), Some(dir)) = (&r, dir) {
            // The new name itself survives a crash (fsync(2): syncing a
            // file does not sync its directory entry); a file system that
            // cannot sync a directory is no reason to fail the journal.
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        st = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = r {
            st.error.get_or_insert(e);
        }
        st.done = upto;
        cv.notify_all();
    }
}

/// `O_CREAT | O_EXCL | O_NOFOLLOW`, read-write (read: resume's checks).
fn create_exclusive(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The largest journal read back: 256 MiB, hundreds of thousands of
/// runs. A file over it (a sparse one too) is refused by its size.
pub const MAX_JOURNAL_BYTES: u64 = 256 << 20;

/// A journal that cannot be read: the OS's error as it is, and a FIFO, a
/// device or a file over [`MAX_JOURNAL_BYTES`] in words.
fn read_error(path: &Path, e: pinsight_sys::fs::BoundedReadError) -> JournalError {
    let source = match e {
        pinsight_sys::fs::BoundedReadError::Io(source) => source,
        e => io::Error::new(io::ErrorKind::InvalidData, e),
    };
    JournalError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// Takes the journal's exclusive lock without waiting.
fn lock(file: File, path: &Path) -> Result<Flock<File>, JournalError> {
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(f) => Ok(f),
        Err((file, nix::errno::Errno::EWOULDBLOCK)) => Err(JournalError::Locked {
            path: path.to_path_buf(),
            pid: file.metadata().ok().and_then(|m| lock_holder(&m)),
        }),
        Err((_, errno)) => Err(JournalError::Lock {
            path: path.to_path_buf(),
            source: io::Error::from(errno),
        }),
    }
}

/// The pid holding a `flock` on this file, from `/proc/locks` (proc(5):
/// `1: FLOCK  ADVISORY  WRITE 4242 08:01:131090 0 EOF`, the device as hex
/// major:minor and the inode in decimal).
fn lock_holder(m: &std::fs::Metadata) -> Option<i32> {
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    holder_in(&text, m.dev(), m.ino())
}

fn holder_in(text: &str, dev: u64, ino: u64) -> Option<i32> {
    let want = format!(
        "{:02x}:{:02x}:{ino}",
        nix::sys::stat::major(dev),
        nix::sys::stat::minor(dev)
    );
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // Waiters are listed as `1: -> FLOCK ...`: skip them.
        match f.as_slice() {
            [_, "FLOCK", _, "WRITE", pid, id, ..] if *id == want => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{de::DeserializeOwned, Deserialize, Serialize};

    /// The test headers and records are their plain JSON, each on a line.
    impl<T: Serialize + DeserializeOwned> JsonLine for T {
        fn to_line(&self) -> Result<String, serde_json::Error> {
            serde_json::to_string(self)
        }
        fn from_line(line: &str) -> Result<Self, String> {
            serde_json::from_str(line).map_err(|e| e.to_string())
        }
    }

    /// A design of `slots` slots over named arms.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct H {
        arms: Vec<String>,
        slots: usize,
        seed: u64,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct R {
        slot: usize,
        arm: String,
        time: f64,
    }

    impl Design<R> for H {
        type Seen = std::collections::BTreeSet<usize>;
        type Difference = String;
        fn check(&self, seen: &mut Self::Seen, r: &R) -> Result<(), String> {
            if !self.arms.contains(&r.arm) {
                return Err(format!("arm {} is not in the design", r.arm));
            }
            if r.slot >= self.slots {
                return Err(format!("slot {} is out of range", r.slot));
            }
            if !(r.time.is_finite() && r.time >= 0.0) {
                return Err(format!("time {} is not a duration", r.time));
            }
            if !seen.insert(r.slot) {
                return Err(format!("slot {} is recorded twice", r.slot));
            }
            Ok(())
        }
        fn mismatch(&self, now: &Self) -> Vec<String> {
            let mut d = Vec::new();
            if self.seed != now.seed {
                d.push(format!("seed: journal has {}, now {}", self.seed, now.seed));
            }
            d
        }
    }

    type J = Journal<H, R>;

    /// A fresh temporary directory and the journal path `j.jsonl` in it
    /// (the directory lives as long as the first).
    fn journal_path() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        (d, p)
    }

    fn h() -> H {
        H {
            arms: vec!["a".into(), "b".into()],
            slots: 4,
            seed: 1,
        }
    }
    fn r(slot: usize, arm: &str) -> R {
        R {
            slot,
            arm: arm.into(),
            time: 0.5,
        }
    }

    #[test]
    fn round_trip_lock_and_resume() {
        let (_d, p) = journal_path();
        let mut w = J::create(&p, &h()).unwrap();
        w.append(&r(0, "a")).unwrap();
        // A second writer of a live journal is refused, naming this pid.
        match J::resume(&p).unwrap_err() {
            JournalError::Locked { pid, .. } => assert_eq!(pid, Some(std::process::id() as i32)),
            e => panic!("{e}"),
        }
        // Reading it (a report) neither blocks nor unlocks it.
        assert_eq!(J::read(&p).unwrap().records, vec![r(0, "a")]);
        assert!(matches!(J::resume(&p), Err(JournalError::Locked { .. })));
        drop(w);
        let (mut w, c) = J::resume(&p).unwrap();
        assert_eq!(c.header, h());
        assert_eq!(c.records, vec![r(0, "a")]);
        assert!(c.warnings.is_empty());
        assert!(c.header.mismatch(&h()).is_empty());
        w.append(&r(1, "b")).unwrap();
        drop(w);
        assert_eq!(J::read(&p).unwrap().records.len(), 2);
        assert!(matches!(
            J::create(&p, &h()),
            Err(JournalError::Exists { .. })
        ));
    }

    #[test]
    fn batches_sync_in_the_background_and_the_end_waits() {
        let (_d, p) = journal_path();
        let mut w = J::create(&p, &h()).unwrap();
        assert!(w.syncer.is_none(), "nothing to sync before the first batch");
        w.append(&r(0, "a")).unwrap();
        assert!(
            w.syncer.is_none() && w.unsynced,
            "within the interval, an append starts no sync"
        );
        // An append once the interval has passed starts a batch and
        // returns without waiting for the disk.
        w.last_sync -= SYNC_INTERVAL;
        w.append(&r(1, "b")).unwrap();
        assert!(w.syncer.is_some());
        assert!(
            !w.unsynced && !w.new_name,
            "the batch (and the name) handed over"
        );
        // Every record is readable at once, synced or not.
        assert_eq!(J::read(&p).unwrap().records.len(), 2);
        w.append(&r(2, "a")).unwrap();
        assert!(w.unsynced);
        // The end waits for the batch in flight and starts none: the
        // record of this interval is left to the kernel's writeback.
        w.finish().unwrap();
        {
            let st = w.syncer.as_ref().unwrap().state();
            assert_eq!(st.done, st.requested, "finish waits for every batch");
            assert_eq!(st.requested, 1, "finish started no batch");
            assert!(st.error.is_none());
        }
        assert!(w.unsynced);
        // An explicit sync takes the rest and waits.
        w.sync().unwrap();
        assert!(!w.unsynced);
        assert_eq!(w.syncer.as_ref().unwrap().state().done, 2);
        // A failure of a background batch is reported by the next call,
        // the end of the experiment included.
        w.syncer.as_ref().unwrap().state().error = Some(io::Error::other("disk gone"));
        w.append(&r(3, "b")).unwrap();
        let e = w.finish().unwrap_err();
        assert!(e.to_string().contains("disk gone"), "{e}");
        w.finish().unwrap();
        drop(w);
        assert_eq!(J::read(&p).unwrap().records.len(), 4);
    }

    #[test]
    fn a_short_journal_never_syncs() {
        let (_d, p) = journal_path();
        let mut w = J::create(&p, &H { slots: 50, ..h() }).unwrap();
        for i in 0..50 {
            w.append(&r(i, if i % 2 == 0 { "a" } else { "b" })).unwrap();
        }
        w.finish().unwrap();
        assert!(w.syncer.is_none(), "no sync thread for a short journal");
        // The tracked length is the file's: the next line goes at its end.
        assert_eq!(w.len, std::fs::metadata(&p).unwrap().len());
        drop(w);
        assert_eq!(J::read(&p).unwrap().records.len(), 50);
    }

    #[test]
    fn a_cut_and_a_newline_less_last_line_are_one_rule() {
        let (_d, p) = journal_path();
        let mut w = J::create(&p, &h()).unwrap();
        w.append(&r(0, "a")).unwrap();
        drop(w);
        let base = std::fs::read_to_string(&p).unwrap();
        // A complete record without its newline is kept; the newline comes
        // before the next append.
        let whole = r(1, "b").to_line().unwrap();
        std::fs::write(&p, format!("{base}{whole}")).unwrap();
        let (mut w, c) = J::resume(&p).unwrap();
        assert_eq!(c.records.len(), 2);
        assert!(c.warnings.is_empty());
        w.append(&r(2, "a")).unwrap();
        drop(w);
        let c = J::read(&p).unwrap();
        assert_eq!(c.records, vec![r(0, "a"), r(1, "b"), r(2, "a")]);
        // A fragment is dropped with a warning and cut off on resume.
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{text}{}", &whole[..9])).unwrap();
        let c = J::read(&p).unwrap();
        assert_eq!(c.records.len(), 3);
        assert_eq!(c.warnings[0].line, 5);
        let (mut w, c) = J::resume(&p).unwrap();
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        w.append(&r(3, "b")).unwrap();
        assert_eq!(J::read(&p).unwrap().records.len(), 4);
    }

    #[test]
    fn records_outside_the_design_are_refused_naming_the_line() {
        let (_d, p) = journal_path();
        let head = h().to_line().unwrap();
        for (bad, why) in [
            (r#"{"slot":1,"arm":"zz","time":1}"#, "arm zz"),
            (r#"{"slot":9,"arm":"a","time":1}"#, "slot 9 is out of range"),
            (
                r#"{"slot":0,"arm":"a","time":1}"#,
                "slot 0 is recorded twice",
            ),
            (r#"{"slot":1,"arm":"a","time":-1}"#, "time -1"),
        ] {
            let text = format!("{head}\n{}\n{bad}\n", r(0, "a").to_line().unwrap());
            std::fs::write(&p, &text).unwrap();
            let e = J::resume(&p).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, JournalError::Record { line: 3, .. }), "{msg}");
            assert!(
                msg.contains("j.jsonl line 3: ") && msg.contains(why),
                "{msg}"
            );
            // Refused: untouched.
            assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        }
        // A last line without its newline that reads as a record is checked
        // like any other.
        let text = format!("{head}\n{}", r#"{"slot":1,"arm":"zz","time":1}"#);
        std::fs::write(&p, &text).unwrap();
        assert!(matches!(
            J::read(&p),
            Err(JournalError::Record { line: 2, .. })
        ));
        std::fs::write(&p, "").unwrap();
        assert!(matches!(J::read(&p), Err(JournalError::Empty { .. })));
        std::fs::write(&p, "{\"x\":1}\n").unwrap();
        assert!(J::read(&p).unwrap_err().to_string().contains("line 1"));
    }

    #[test]
    fn a_line_that_is_no_record_is_skipped_naming_it_and_the_rest_resumes() {
        let (_d, p) = journal_path();
        let head = h().to_line().unwrap();
        let line = |x: &R| x.to_line().unwrap();
        // What an older writer left: a float written as null, a line
        // that is not JSON, a record of no known shape.
        let text = format!(
            "{head}\n{}\n{}\n{}\nnot json\n{}\n",
            line(&r(0, "a")),
            r#"{"slot":1,"arm":"b","time":null}"#,
            r#"{"slot":1}"#,
            line(&r(2, "a")),
        );
        std::fs::write(&p, &text).unwrap();
        let c = J::read(&p).unwrap();
        assert_eq!(c.records, vec![r(0, "a"), r(2, "a")]);
        let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].starts_with("line 3: not a record: invalid type: null, expected f64")
                && w[0].ends_with("; skipped"),
            "{w:?}"
        );
        assert!(w[1].starts_with("line 4: not a record"), "{w:?}");
        assert!(w[2].starts_with("line 5: not a record"), "{w:?}");
        // Resumed: the file is left as it is, the skipped slot can run
        // again, and what is appended reads back after the bad lines.
        let (mut w, c) = J::resume(&p).unwrap();
        assert_eq!(c.warnings.len(), 3);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        w.append(&r(1, "b")).unwrap();
        drop(w);
        let c = J::read(&p).unwrap();
        assert_eq!(c.records, vec![r(0, "a"), r(2, "a"), r(1, "b")]);
        assert_eq!(c.warnings.len(), 3);
    }

    #[test]
    fn what_would_not_read_back_is_never_written() {
        let (_d, p) = journal_path();
        let mut w = J::create(&p, &h()).unwrap();
        w.append(&r(0, "a")).unwrap();
        let before = std::fs::read_to_string(&p).unwrap();
        for bad in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let e = w
                .append(&R {
                    time: bad,
                    ..r(1, "b")
                })
                .unwrap_err();
            assert!(
                matches!(e, JournalError::RoundTrip { what: "record", .. }),
                "{e}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains("j.jsonl: a record would not read back as written")
                    && msg.contains("null")
                    && msg.ends_with("nothing written"),
                "{msg}"
            );
            assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
        }
        // The journal goes on: the next record is written and reads back.
        w.append(&r(1, "b")).unwrap();
        drop(w);
        assert_eq!(J::read(&p).unwrap().records, vec![r(0, "a"), r(1, "b")]);
        assert!(J::read(&p).unwrap().warnings.is_empty());
    }

    /// A header holding a float (a period, a timeout).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct FH {
        period: f64,
    }
    impl Design<R> for FH {
        type Seen = ();
        type Difference = String;
        fn check(&self, _: &mut (), _: &R) -> Result<(), String> {
            Ok(())
        }
        fn mismatch(&self, _: &Self) -> Vec<String> {
            Vec::new()
        }
    }

    #[test]
    fn a_header_that_would_not_read_back_creates_no_file() {
        let (d, p) = journal_path();
        let inf = FH {
            period: f64::INFINITY,
        };
        let e = Journal::<FH, R>::create(&p, &inf).unwrap_err();
        assert!(
            matches!(e, JournalError::RoundTrip { what: "header", .. }),
            "{e}"
        );
        assert!(!p.exists());
        let e = Journal::<FH, R>::create_unique(d.path(), "j", &inf).unwrap_err();
        assert!(matches!(e, JournalError::RoundTrip { .. }), "{e}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        Journal::<FH, R>::create(&p, &FH { period: 0.1 }).unwrap();
    }

    #[test]
    fn never_follows_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = d.path().join("j.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            J::create(&link, &h()),
            Err(JournalError::Exists { .. })
        ));
        assert!(matches!(
            J::resume(&link),
            Err(JournalError::Symlink { .. })
        ));
        // A dangling link too.
        let dangling = d.path().join("d.jsonl");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &dangling).unwrap();
        assert!(J::create(&dangling, &h()).is_err());
        assert!(!d.path().join("nowhere").exists());
        let w = J::create_unique(d.path(), "j", &h()).unwrap();
        assert!(w.path().ends_with("j-2.jsonl"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn the_holder_is_found_in_proc_locks() {
        let text = "1: POSIX  ADVISORY  WRITE 11 08:01:77 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 4242 fd:01:131090 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 5 fd:01:131090 0 EOF\n";
        let dev = nix::sys::stat::makedev(0xfd, 1);
        assert_eq!(holder_in(text, dev, 131090), Some(4242));
        assert_eq!(holder_in(text, dev, 77), None);
    }
}
