//! File-descriptor and file-attribute calls: sealed memfds, close-on-exec,
//! file capabilities.
//!
//! `memfd_create` and `fcntl` go through nix. Hand-written, and why:
//! - the exec-mapping probe (`mmap`/`munmap`): nix's `mmap` is `unsafe`
//!   as well and adds nothing for one map-and-unmap;
//! - `getxattr`: not in nix 0.31, and the `xattr`/`rustix` crates would be
//!   a dependency for one size query;
//! - adopting the descriptor `F_DUPFD_CLOEXEC` returns (nix gives a raw
//!   number).

use nix::fcntl::{fcntl, FcntlArg, FdFlag, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use std::ffi::CStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Why [`read_bounded`] or [`open_regular`] gave no file.
#[derive(Debug, thiserror::Error)]
pub enum BoundedReadError {
    /// Opening or reading failed.
    #[error("cannot read it: {0}")]
    Io(#[from] io::Error),
    /// The file holds more than the limit (or never ends: `/dev/zero`).
    #[error("larger than {limit} bytes (is it the right file?)")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Not a regular file: a FIFO (whose open or read would wait for a
    /// writer forever), a device (`/dev/zero` never ends), a directory,
    /// a socket.
    #[error("{kind}, not a regular file")]
    NotRegular {
        /// What it is, in words: "a FIFO", "a character device", ...
        kind: &'static str,
    },
}

/// What a file that is not a regular one is, in words ("a FIFO").
pub fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// How [`open_regular_with`] opens a file.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenHow {
    /// Open for writing as well as reading (a journal resumed in place).
    pub write: bool,
    /// Refuse a symbolic link as the last component (`O_NOFOLLOW`: the
    /// open fails with `ELOOP`).
    pub no_follow: bool,
}

/// `path` opened for reading, only if it is a regular file of at most
/// `limit` bytes: [`open_regular_with`] with the default [`OpenHow`].
pub fn open_regular(path: &Path, limit: u64) -> Result<std::fs::File, BoundedReadError> {
    open_regular_with(path, limit, OpenHow::default())
}

/// The one way a file a user names is opened: refused with
/// [`BoundedReadError::NotRegular`] unless it is a regular file (checked
/// before the open, so no device is opened, and again on the descriptor),
/// and with [`BoundedReadError::TooLarge`] when its size passes `limit`
/// (a sparse file is refused by its size, before a byte is read). The
/// open itself is non-blocking (a FIFO swapped in after the check cannot
/// hang it) and close-on-exec; the returned file blocks as usual. Reading
/// it still needs a bound (`Read::take(limit + 1)`): a regular file may
/// grow.
pub fn open_regular_with(
    path: &Path,
    limit: u64,
    how: OpenHow,
) -> Result<std::fs::File, BoundedReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let before = if how.no_follow {
        std::fs::symlink_metadata(path)
    } else {
        std::fs::metadata(path)
    };
    // A link is left to the open's O_NOFOLLOW, which says ELOOP.
    if let Ok(meta) = before {
        let t = meta.file_type();
        let left_to_open = t.is_file() || (how.no_follow && t.is_symlink());
        if !left_to_open {
            return Err(BoundedReadError::NotRegular { kind: kind_of(t) });
        }
    }
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if how.no_follow {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(how.write)
        .custom_flags(flags)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(BoundedReadError::NotRegular {
            kind: kind_of(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(BoundedReadError::TooLarge { limit });
    }
    let status = fcntl(file.as_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?;
    let status = nix::fcntl::OFlag::from_bits_retain(status) & !nix::fcntl::OFlag::O_NONBLOCK;
    fcntl(file.as_fd(), FcntlArg::F_SETFL(status)).map_err(io::Error::from)?;
    Ok(file)
}

/// The rest of `file` (opened by [`open_regular`]), refused once it passes
/// `limit` bytes: reads at most `limit + 1`.
pub fn read_to_end_bounded(
    file: &mut std::fs::File,
    limit: u64,
) -> Result<Vec<u8>, BoundedReadError> {
    use std::io::Read;
    // Room for the whole file at once, so growing never copies (and never
    // holds two buffers): its size, at most the limit.
    let room = file.metadata()?.len().min(limit);
    let mut bytes = Vec::with_capacity(
        usize::try_from(room)
            .unwrap_or(usize::MAX)
            .saturating_add(1),
    );
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(BoundedReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// The whole of the regular file at `path`, of at most `limit` bytes
/// ([`open_regular`], then at most `limit + 1` bytes read): a FIFO, a
/// device such as `/dev/zero` or a directory is refused before a byte is
/// read, and a file over the limit (a sparse one too) by its size, so no
/// input costs more than the limit in memory or any time waiting.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, BoundedReadError> {
    let mut file = open_regular(path, limit)?;
    read_to_end_bounded(&mut file, limit)
}

/// [`read_bounded`] as UTF-8 text (invalid UTF-8 is an
/// [`io::ErrorKind::InvalidData`] error).
pub fn read_bounded_string(path: &Path, limit: u64) -> Result<String, BoundedReadError> {
    let bytes = read_bounded(path, limit)?;
    String::from_utf8(bytes).map_err(|_| {
        BoundedReadError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

/// A close-on-exec memfd named `name` holding `bytes`, sealed against
/// writes, growth and shrinking, moved to a descriptor number of 200 or
/// more when the limit allows (shell scripts freely redirect 3–9), and
/// checked to be mappable executable (`vm.memfd_noexec = 2` forbids it) so
/// the loader of a child will not find out first.
pub fn sealed_exec_memfd(name: &CStr, bytes: &[u8]) -> io::Result<OwnedFd> {
    let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING)
        .map_err(io::Error::from)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    let seals = SealFlag::F_SEAL_SEAL
        | SealFlag::F_SEAL_SHRINK
        | SealFlag::F_SEAL_GROW
        | SealFlag::F_SEAL_WRITE;
    fcntl(file.as_fd(), FcntlArg::F_ADD_SEALS(seals)).map_err(io::Error::from)?;
    let fd = high_fd(OwnedFd::from(file));
    // SAFETY: a read-only, private, executable mapping of a file we own,
    // unmapped at once; no Rust reference is created to it.
    unsafe {
        let len = bytes.len();
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_EXEC,
            libc::MAP_PRIVATE,
            fd.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        libc::munmap(p, len);
    }
    Ok(fd)
}

/// An empty, close-on-exec memfd named `name` whose writes append (a
/// log a child writes with `write(2)`, one record per call, read back
/// with `pread`), at descriptor 200 or more like the shim's.
pub fn append_memfd(name: &CStr) -> io::Result<OwnedFd> {
    let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?;
    fcntl(fd.as_fd(), FcntlArg::F_SETFL(nix::fcntl::OFlag::O_APPEND)).map_err(io::Error::from)?;
    Ok(high_fd(fd))
}

/// A plain memfd (close-on-exec, not appending, not sealed) named `name`:
/// a scratch file in memory that a child can be given as its stdout.
pub fn scratch_memfd(name: &CStr) -> io::Result<std::fs::File> {
    let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?;
    Ok(std::fs::File::from(fd))
}

/// Moves `fd` to a descriptor number of 200 or more (close-on-exec kept);
/// keeps `fd` when the limit leaves no such room.
fn high_fd(fd: OwnedFd) -> OwnedFd {
    match fcntl(fd.as_fd(), FcntlArg::F_DUPFD_CLOEXEC(200)) {
        // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that we own.
        Ok(raw) => unsafe { OwnedFd::from_raw_fd(raw) },
        Err(_) => fd,
    }
}

/// Clears close-on-exec on `fd` (one `fcntl`, async-signal-safe). The
/// descriptor must be open for the duration of the call.
pub fn clear_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller keeps the descriptor open; this borrow lasts for
    // one fcntl.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty()))
        .map(|_| ())
        .map_err(io::Error::from)
}

/// Whether `fd` is close-on-exec (`false` if it is not open).
pub fn is_cloexec(fd: impl AsFd) -> bool {
    fcntl(fd.as_fd(), FcntlArg::F_GETFD)
        .is_ok_and(|f| FdFlag::from_bits_retain(f).contains(FdFlag::FD_CLOEXEC))
}

/// Whether `path` carries a `security.capability` extended attribute.
pub fn has_file_caps(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: size query (null buffer, length 0) on a NUL-terminated path.
    let r = unsafe {
        libc::getxattr(
            c.as_ptr(),
            c"security.capability".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    r > 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn bounded_reads_stop_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(super::read_bounded(&p, 5).unwrap(), b"12345");
        assert!(matches!(
            super::read_bounded(&p, 4),
            Err(super::BoundedReadError::TooLarge { limit: 4 })
        ));
        let t = std::time::Instant::now();
        assert!(matches!(
            super::read_bounded(std::path::Path::new("/dev/zero"), 1 << 20),
            Err(super::BoundedReadError::NotRegular {
                kind: "a character device"
            })
        ));
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert!(matches!(
            super::read_bounded(&dir.path().join("none"), 4),
            Err(super::BoundedReadError::Io(_))
        ));
    }

    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let t = std::time::Instant::now();
        // No writer: a blocking open would wait forever.
        assert!(matches!(
            read_bounded(&fifo, 1 << 20),
            Err(BoundedReadError::NotRegular { kind: "a FIFO" })
        ));
        assert!(matches!(
            read_bounded(dir.path(), 1 << 20),
            Err(BoundedReadError::NotRegular {
                kind: "a directory"
            })
        ));
        // A 1 GiB sparse file is refused by its size, before any read.
        let sparse = dir.path().join("sparse");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        assert!(matches!(
            read_bounded(&sparse, 1 << 20),
            Err(BoundedReadError::TooLarge { limit }) if limit == 1 << 20
        ));
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        // Writing and O_NOFOLLOW: a link is ELOOP, the file itself opens
        // blocking again.
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let how = OpenHow {
            write: true,
            no_follow: true,
        };
        match open_regular_with(&link, 10, how) {
            Err(BoundedReadError::Io(e)) => assert_eq!(e.raw_os_error(), Some(libc::ELOOP)),
            other => panic!("{other:?}"),
        }
        let file = open_regular_with(&f, 10, how).unwrap();
        let fl = fcntl(file.as_fd(), FcntlArg::F_GETFL).unwrap();
        assert!(!nix::fcntl::OFlag::from_bits_retain(fl).contains(nix::fcntl::OFlag::O_NONBLOCK));
        assert!(is_cloexec(&file));
        assert_eq!(read_bounded_string(&link, 10).unwrap(), "x");
    }

    #[test]
    fn memfd_is_sealed_high_and_cloexec_until_cleared() {
        let fd = match sealed_exec_memfd(c"pinsight-sys-test", b"\x7fELF") {
            Ok(fd) => fd,
            Err(e) => return eprintln!("SKIP: memfd: {e}"),
        };
        assert!(is_cloexec(&fd));
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        assert_eq!(std::fs::read(&path).unwrap(), b"\x7fELF");
        assert!(std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"x"))
            .is_err());
        clear_cloexec(fd.as_raw_fd()).unwrap();
        assert!(!is_cloexec(&fd));
    }

    #[test]
    fn a_plain_file_has_no_capabilities() {
        assert!(!has_file_caps(Path::new("Cargo.toml")));
        assert!(!has_file_caps(Path::new("no/such/file")));
    }
}
