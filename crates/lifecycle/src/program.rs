//! Will an LD_PRELOAD shim take effect in this program? Decided before
//! exec, so a program the shim cannot reach is pinned by the `/proc`
//! watcher instead, and the user is told — never silently left unpinned.
//!
//! The dynamic loader (`ld.so`) is what honours `LD_PRELOAD`, so the shim
//! has no effect when:
//! - the program is a statically linked ELF (no `PT_INTERP` program
//!   header: no loader runs; static-pie included);
//! - the loader runs in secure-execution mode (`AT_SECURE`): the exec
//!   changes the effective user or group (set-user-ID file owned by someone
//!   else, set-group-ID file of another group) or grants file capabilities
//!   (`security.capability`). In that mode glibc ignores preload paths that
//!   contain a slash, which ours always does.
//!
//! Scripts are followed through their `#!` line (and `/usr/bin/env NAME`)
//! to the interpreter that will actually be loaded. Anything this module
//! cannot read or parse is assumed to load the shim: the launch itself will
//! then report a missing or unexecutable program as the shell would.

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::ReadCache;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::exit::SpawnError;

/// Why an LD_PRELOAD shim would have no effect in a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreloadBlocker {
    /// A statically linked ELF: no dynamic loader runs.
    Static { path: PathBuf },
    /// Set-user-ID to another user.
    SetUid { path: PathBuf, owner: u32 },
    /// Set-group-ID to another group.
    SetGid { path: PathBuf, group: u32 },
    /// File capabilities put the loader in secure-execution mode.
    FileCaps { path: PathBuf },
}

impl std::fmt::Display for PreloadBlocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PreloadBlocker::Static { path } => write!(
                f,
                "{} is statically linked (no ELF interpreter), so LD_PRELOAD has no effect",
                path.display()
            ),
            PreloadBlocker::SetUid { path, owner } => write!(
                f,
                "{} is set-user-ID (owner uid {owner}), so the loader ignores LD_PRELOAD",
                path.display()
            ),
            PreloadBlocker::SetGid { path, group } => write!(
                f,
                "{} is set-group-ID (group gid {group}), so the loader ignores LD_PRELOAD",
                path.display()
            ),
            PreloadBlocker::FileCaps { path } => write!(
                f,
                "{} has file capabilities, so the loader ignores LD_PRELOAD",
                path.display()
            ),
        }
    }
}

/// Resolves `program` the way `execvp` does: a name with a slash is a
/// path; otherwise the first executable regular file of that name in
/// `path_var` (`PATH`; empty entries mean the current directory).
pub fn resolve(program: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    if program.is_empty() {
        return None;
    }
    let default: &OsStr = OsStr::new("/usr/local/bin:/usr/bin:/bin");
    let dirs = path_var.unwrap_or(default);
    for dir in dirs.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let cand = dir.join(program);
        if let Ok(md) = std::fs::metadata(&cand) {
            if md.is_file() && md.permissions().mode() & 0o111 != 0 {
                return Some(cand);
            }
        }
    }
    None
}

/// A program found the way a shell finds it, before anything runs: a
/// missing program is one clear error (exit 127), not ten failed runs; a
/// non-executable one is refused with 126.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// As the user gave it.
    pub name: String,
    /// Where it was found.
    pub path: PathBuf,
}

impl Program {
    /// Resolves `name` through `PATH` (a name with a slash is a path) and
    /// checks that it is an executable regular file.
    pub fn resolve(name: &OsStr) -> Result<Program, SpawnError> {
        let shown = name.to_string_lossy().into_owned();
        let searched_path = !name.as_bytes().contains(&b'/');
        let path = if searched_path {
            resolve(name, std::env::var_os("PATH").as_deref()).ok_or(SpawnError::NotFound {
                program: shown.clone(),
                searched_path,
            })?
        } else {
            PathBuf::from(name)
        };
        let md = std::fs::metadata(&path).map_err(|e| SpawnError::from_io(shown.clone(), &e))?;
        let errno = if md.is_dir() {
            Some(libc::EISDIR)
        } else if !md.is_file() || md.permissions().mode() & 0o111 == 0 {
            Some(libc::EACCES)
        } else {
            None
        };
        match errno {
            Some(errno) => Err(SpawnError::NotExecutable {
                program: shown,
                errno,
            }),
            None => Ok(Program { name: shown, path }),
        }
    }

    /// Why an LD_PRELOAD shim would have no effect in this program (ELF
    /// interpreter, set-id bits, file capabilities), `None` when it will.
    pub fn preload_blocker(&self) -> Option<PreloadBlocker> {
        blocker_of(&self.path, std::env::var_os("PATH").as_deref(), 0)
    }
}

/// Why the shim would not take effect in `program` (resolved through
/// `PATH`), or `None` when it will (or when that cannot be known: the
/// launch reports unreadable programs itself).
pub fn preload_blocker(program: &OsStr) -> Option<PreloadBlocker> {
    let path_var = std::env::var_os("PATH");
    let path = resolve(program, path_var.as_deref())?;
    blocker_of(&path, path_var.as_deref(), 0)
}

/// The credentials an exec would compare set-id bits against.
fn ids() -> (u32, u32) {
    (
        pinsight_sys::process::geteuid(),
        pinsight_sys::process::getegid(),
    )
}

fn blocker_of(path: &Path, path_var: Option<&OsStr>, depth: usize) -> Option<PreloadBlocker> {
    let md = std::fs::metadata(path).ok()?;
    let (uid, gid) = ids();
    let mode = md.mode();
    if mode & 0o4000 != 0 && md.uid() != uid {
        return Some(PreloadBlocker::SetUid {
            path: path.to_path_buf(),
            owner: md.uid(),
        });
    }
    // Set-group-ID without group execute is mandatory locking, not set-id.
    if mode & 0o2010 == 0o2010 && md.gid() != gid {
        return Some(PreloadBlocker::SetGid {
            path: path.to_path_buf(),
            group: md.gid(),
        });
    }
    if has_file_caps(path) {
        return Some(PreloadBlocker::FileCaps {
            path: path.to_path_buf(),
        });
    }
    let mut file = File::open(path).ok()?;
    let mut head = [0u8; 256];
    let n = read_up_to(&mut file, &mut head);
    let head = &head[..n];
    if head.starts_with(b"#!") {
        // The kernel loads the interpreter; set-id bits of scripts are ignored
        // by Linux, so only the interpreter's own properties matter.
        if depth >= 4 {
            return None;
        }
        let interp = shebang_program(head, path_var)?;
        return blocker_of(&interp, path_var, depth + 1);
    }
    if head.starts_with(&elf::ELFMAG) && !elf_has_interp(file)? {
        return Some(PreloadBlocker::Static {
            path: path.to_path_buf(),
        });
    }
    None
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    n
}

/// The program a `#!` line runs: the interpreter, or for
/// `#!/usr/bin/env [-S] [VAR=x…] NAME` the NAME found in `PATH`.
fn shebang_program(head: &[u8], path_var: Option<&OsStr>) -> Option<PathBuf> {
    let line = head[2..].split(|&b| b == b'\n').next()?;
    let mut words = line
        .split(|&b| b == b' ' || b == b'\t' || b == b'\r')
        .filter(|w| !w.is_empty());
    let interp = PathBuf::from(OsString::from_vec(words.next()?.to_vec()));
    if interp.file_name() != Some(OsStr::new("env")) {
        return Some(interp);
    }
    for w in words {
        if w.starts_with(b"-") || w.contains(&b'=') {
            continue; // env's options (-S, -i, -u NAME is rare) and assignments
        }
        return resolve(OsStr::from_bytes(w), path_var);
    }
    Some(interp)
}

/// Whether the ELF file has a `PT_INTERP` program header (is dynamically
/// linked). `None` when it cannot be parsed.
fn elf_has_interp(file: File) -> Option<bool> {
    let cache = ReadCache::new(file);
    let data = &cache;
    // e_ident[EI_CLASS] (byte 4) selects the header layout.
    let ident = object::ReadRef::read_bytes_at(data, 0, 16).ok()?;
    match ident[4] {
        elf::ELFCLASS64 => interp_in::<elf::FileHeader64<object::Endianness>>(data),
        elf::ELFCLASS32 => interp_in::<elf::FileHeader32<object::Endianness>>(data),
        _ => None,
    }
}

fn interp_in<H: FileHeader<Endian = object::Endianness>>(data: &ReadCache<File>) -> Option<bool> {
    let header = H::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let phdrs = header.program_headers(endian, data).ok()?;
    Some(phdrs.iter().any(|p| p.p_type(endian) == elf::PT_INTERP))
}

/// Whether `path` carries a `security.capability` extended attribute.
fn has_file_caps(path: &Path) -> bool {
    pinsight_sys::fs::has_file_caps(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh directory, removed when the returned guard drops.
    fn tmpdir(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("pinsight-program-{tag}-"))
            .tempdir()
            .unwrap()
    }

    fn exe(path: &Path, body: &[u8], mode: u32) {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn dynamic_programs_take_the_shim() {
        // The test binary itself is dynamically linked (Rust's default on glibc).
        let me = std::env::current_exe().unwrap();
        assert_eq!(preload_blocker(me.as_os_str()), None);
        assert_eq!(preload_blocker(OsStr::new("sh")), None);
    }

    #[test]
    fn programs_are_found_like_a_shell_finds_them() {
        assert!(Program::resolve(OsStr::new("sh")).is_ok());
        let e = Program::resolve(OsStr::new("pinsight-no-such-program")).unwrap_err();
        assert_eq!(e.exit_code(), 127);
        assert!(e.to_string().contains("command not found"), "{e}");
        let e = Program::resolve(OsStr::new("/no/such/file")).unwrap_err();
        assert!(
            matches!(
                e,
                SpawnError::NotFound {
                    searched_path: false,
                    ..
                }
            ),
            "{e}"
        );
        let d = tmpdir("program");
        let f = d.path().join("data.txt");
        std::fs::write(&f, "x").unwrap();
        assert_eq!(
            Program::resolve(f.as_os_str()).unwrap_err().exit_code(),
            126
        );
        assert_eq!(
            Program::resolve(d.path().as_os_str())
                .unwrap_err()
                .exit_code(),
            126
        );
    }

    #[test]
    fn resolve_searches_path_like_execvp() {
        let d = tmpdir("resolve");
        let d = d.path();
        exe(&d.join("tool"), b"#!/bin/sh\n", 0o755);
        exe(&d.join("data"), b"x", 0o644);
        let pv = OsString::from(format!("/nonexistent:{}", d.display()));
        assert_eq!(resolve(OsStr::new("tool"), Some(&pv)), Some(d.join("tool")));
        assert_eq!(resolve(OsStr::new("data"), Some(&pv)), None);
        assert_eq!(
            resolve(OsStr::new("./x/y"), Some(&pv)),
            Some(PathBuf::from("./x/y"))
        );
        assert_eq!(resolve(OsStr::new(""), Some(&pv)), None);
    }

    #[test]
    fn setuid_of_another_user_blocks_and_own_does_not() {
        let d = tmpdir("setuid");
        let d = d.path();
        let p = d.join("suid");
        std::fs::copy("/bin/true", &p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4755)).unwrap();
        // Owned by us: the exec keeps our euid, the loader stays normal.
        assert_eq!(blocker_of(&p, None, 0), None);
        if pinsight_sys::process::geteuid() == 0 {
            std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4755)).unwrap();
            assert_eq!(
                blocker_of(&p, None, 0),
                Some(PreloadBlocker::SetUid {
                    path: p.clone(),
                    owner: 65534
                })
            );
            std::os::unix::fs::chown(&p, Some(0), Some(65534)).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o2755)).unwrap();
            assert!(matches!(
                blocker_of(&p, None, 0),
                Some(PreloadBlocker::SetGid { group: 65534, .. })
            ));
            // g+s without g+x is mandatory locking, not set-group-ID.
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o2745)).unwrap();
            assert_eq!(blocker_of(&p, None, 0), None);
        }
    }

    #[test]
    fn shebang_lines_lead_to_the_interpreter() {
        let d = tmpdir("shebang");
        let d = d.path();
        // A fake "static" interpreter: an ELF header without program headers.
        let mut fake = vec![0u8; 64];
        fake[..4].copy_from_slice(&elf::ELFMAG);
        fake[4] = elf::ELFCLASS64;
        fake[5] = elf::ELFDATA2LSB;
        fake[6] = 1;
        fake[16] = 2; // ET_EXEC
        fake[18] = 62; // x86-64
        fake[20] = 1; // e_version
        fake[52] = 64; // e_ehsize
        fake[54] = 56; // e_phentsize
        exe(&d.join("interp"), &fake, 0o755);
        let script = d.join("script");
        exe(
            &script,
            format!("#!{} -x\necho\n", d.join("interp").display()).as_bytes(),
            0o755,
        );
        assert_eq!(
            blocker_of(&script, None, 0),
            Some(PreloadBlocker::Static {
                path: d.join("interp")
            })
        );
        let via_env = d.join("via-env");
        exe(&via_env, b"#!/usr/bin/env -S interp --flag\n", 0o755);
        let pv = d.as_os_str().to_owned();
        assert_eq!(
            blocker_of(&via_env, Some(&pv), 0),
            Some(PreloadBlocker::Static {
                path: d.join("interp")
            })
        );
        // A loop of scripts ends without an answer rather than recursing forever.
        let lp = d.join("loop");
        exe(&lp, format!("#!{}\n", lp.display()).as_bytes(), 0o755);
        assert_eq!(blocker_of(&lp, None, 0), None);
        // A plain shell script runs the dynamic /bin/sh.
        let sh = d.join("sh-script");
        exe(&sh, b"#!/bin/sh\ntrue\n", 0o755);
        assert_eq!(blocker_of(&sh, None, 0), None);
    }

    #[test]
    fn garbage_is_not_a_verdict() {
        let d = tmpdir("garbage");
        let d = d.path();
        let p = d.join("junk");
        let mut junk = elf::ELFMAG.to_vec();
        junk.extend_from_slice(&[9; 40]);
        exe(&p, &junk, 0o755);
        assert_eq!(blocker_of(&p, None, 0), None);
        assert_eq!(blocker_of(&d.join("missing"), None, 0), None);
    }
}
