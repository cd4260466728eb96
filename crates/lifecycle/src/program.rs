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
//!   contain a slash, which ours always does;
//! - the program's ELF class or machine is not the shim's (a 32-bit
//!   program, or one built for another architecture and run by an
//!   emulator): ld.so refuses a library of the wrong class or machine
//!   ("wrong ELF class: ELFCLASS64 ... ignored", ld.so(8)) and runs the
//!   program without it.
//!
//! [`Program::check`] also refuses, before anything runs, a program whose
//! ELF interpreter (`PT_INTERP`) or `#!` interpreter does not exist: the
//! exec would fail with `ENOENT` (execve(2), ERRORS: "An interpreter ...
//! could not be found"), which a shell reports as the program itself
//! missing.
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
    /// An ELF of another class (32-bit) or machine than the shim, which
    /// the loader cannot preload into it.
    ForeignElf {
        path: PathBuf,
        /// `e_ident[EI_CLASS]`: 1 for 32-bit, 2 for 64-bit.
        class: u8,
        /// `e_machine`.
        machine: u16,
    },
}

/// The ELF class of this build (and so of the shim built with it).
const HOST_CLASS: u8 = if cfg!(target_pointer_width = "64") {
    elf::ELFCLASS64
} else {
    elf::ELFCLASS32
};

/// The ELF machine of this build (and so of the shim built with it), and
/// the 32-bit machine its kernel can also run natively (compat mode).
const HOST_MACHINES: (u16, Option<u16>) = if cfg!(target_arch = "x86_64") {
    (elf::EM_X86_64, Some(elf::EM_386))
} else if cfg!(target_arch = "aarch64") {
    (elf::EM_AARCH64, Some(elf::EM_ARM))
} else if cfg!(target_arch = "powerpc64") {
    (elf::EM_PPC64, Some(elf::EM_PPC))
} else if cfg!(target_arch = "s390x") {
    (elf::EM_S390, None)
} else if cfg!(target_arch = "riscv64") {
    (elf::EM_RISCV, None)
} else if cfg!(target_arch = "loongarch64") {
    (elf::EM_LOONGARCH, None)
} else if cfg!(target_arch = "x86") {
    (elf::EM_386, None)
} else if cfg!(target_arch = "arm") {
    (elf::EM_ARM, None)
} else {
    (elf::EM_NONE, None)
};

/// A readable name for an ELF `e_machine` (elf(5); the values are the
/// System V gABI's).
fn machine_name(machine: u16) -> String {
    match machine {
        elf::EM_386 => "i386".into(),
        elf::EM_X86_64 => "x86-64".into(),
        elf::EM_ARM => "32-bit Arm".into(),
        elf::EM_AARCH64 => "AArch64".into(),
        elf::EM_PPC => "PowerPC".into(),
        elf::EM_PPC64 => "PowerPC64".into(),
        elf::EM_S390 => "s390".into(),
        elf::EM_RISCV => "RISC-V".into(),
        elf::EM_LOONGARCH => "LoongArch".into(),
        elf::EM_MIPS => "MIPS".into(),
        elf::EM_SPARCV9 => "SPARC V9".into(),
        m => format!("e_machine {m}"),
    }
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
            PreloadBlocker::ForeignElf {
                path,
                class,
                machine,
            } => {
                let bits = if *class == elf::ELFCLASS32 { 32 } else { 64 };
                let shim_bits = if HOST_CLASS == elf::ELFCLASS32 {
                    32
                } else {
                    64
                };
                write!(
                    f,
                    "{} is a {bits}-bit {} program and the pinning shim is a {shim_bits}-bit {} library, so the loader cannot preload it",
                    path.display(),
                    machine_name(*machine),
                    machine_name(HOST_MACHINES.0)
                )
            }
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
    /// class and machine, interpreter, set-id bits, file capabilities),
    /// `None` when it will.
    pub fn preload_blocker(&self) -> Option<PreloadBlocker> {
        match inspect(&self.path, std::env::var_os("PATH").as_deref(), 0) {
            Verdict::Blocked(b) => Some(b),
            Verdict::Takes | Verdict::NoInterpreter(_) => None,
        }
    }

    /// Checks the program before it starts: an error when it cannot start
    /// at all (its ELF or `#!` interpreter is missing:
    /// [`SpawnError::NoInterpreter`], exit 127), else why an LD_PRELOAD
    /// shim would not take effect in it (`Ok(None)`: it will, or this
    /// cannot be known and the exec will tell).
    /// The file to start instead of the name, when the name was searched
    /// in `PATH` and this process may execute what the search found
    /// (access(2), `X_OK`): what `execvp` would execute (posix/execvpe.c
    /// takes the first entry whose `execve` succeeds), without the failed
    /// `execve` per `PATH` entry before it that the child would otherwise
    /// repeat inside the start-up. `None` (start the name) for a path as
    /// typed, or a file whose execution `execvp` may skip for a later one.
    pub fn exec_path(&self) -> Option<&Path> {
        let searched = !self.name.as_bytes().contains(&b'/');
        (searched && nix::unistd::access(&self.path, nix::unistd::AccessFlags::X_OK).is_ok())
            .then_some(self.path.as_path())
    }

    pub fn check(&self) -> Result<Option<PreloadBlocker>, SpawnError> {
        match inspect(&self.path, std::env::var_os("PATH").as_deref(), 0) {
            Verdict::Takes => Ok(None),
            Verdict::Blocked(b) => Ok(Some(b)),
            Verdict::NoInterpreter(interpreter) => Err(SpawnError::NoInterpreter {
                program: self.name.clone(),
                interpreter: interpreter.display().to_string(),
            }),
        }
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

/// What [`inspect`] found out about a program.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    /// The shim will take effect (or nothing could be read to say otherwise).
    Takes,
    /// The shim will not take effect.
    Blocked(PreloadBlocker),
    /// The exec will fail: this interpreter does not exist.
    NoInterpreter(PathBuf),
}

/// [`inspect`] without the interpreter's presence.
fn blocker_of(path: &Path, path_var: Option<&OsStr>, depth: usize) -> Option<PreloadBlocker> {
    match inspect(path, path_var, depth) {
        Verdict::Blocked(b) => Some(b),
        Verdict::Takes | Verdict::NoInterpreter(_) => None,
    }
}

/// The credentials an exec would compare set-id bits against.
fn ids() -> (u32, u32) {
    (
        pinsight_sys::process::geteuid(),
        pinsight_sys::process::getegid(),
    )
}

fn inspect(path: &Path, path_var: Option<&OsStr>, depth: usize) -> Verdict {
    let Ok(md) = std::fs::metadata(path) else {
        return Verdict::Takes;
    };
    let (uid, gid) = ids();
    let mode = md.mode();
    if mode & 0o4000 != 0 && md.uid() != uid {
        return Verdict::Blocked(PreloadBlocker::SetUid {
            path: path.to_path_buf(),
            owner: md.uid(),
        });
    }
    // Set-group-ID without group execute is mandatory locking, not set-id.
    if mode & 0o2010 == 0o2010 && md.gid() != gid {
        return Verdict::Blocked(PreloadBlocker::SetGid {
            path: path.to_path_buf(),
            group: md.gid(),
        });
    }
    if has_file_caps(path) {
        return Verdict::Blocked(PreloadBlocker::FileCaps {
            path: path.to_path_buf(),
        });
    }
    let Ok(mut file) = File::open(path) else {
        return Verdict::Takes;
    };
    let mut head = [0u8; 256];
    let n = read_up_to(&mut file, &mut head);
    let head = &head[..n];
    if head.starts_with(b"#!") {
        // The kernel loads the interpreter; set-id bits of scripts are ignored
        // by Linux, so only the interpreter's own properties matter.
        if depth >= 4 {
            return Verdict::Takes;
        }
        return match shebang_program(head, path_var) {
            Shebang::Program(interp) if !interp.exists() => Verdict::NoInterpreter(interp),
            Shebang::Program(interp) => inspect(&interp, path_var, depth + 1),
            Shebang::Unknown => Verdict::Takes,
        };
    }
    if !head.starts_with(&elf::ELFMAG) {
        return Verdict::Takes;
    }
    let Some(facts) = elf_facts(file) else {
        return Verdict::Takes;
    };
    let (machine, compat) = HOST_MACHINES;
    let native = facts.machine == machine || Some(facts.machine) == compat;
    // The kernel opens PT_INTERP only for ELFs it loads itself; one for
    // another machine runs (if at all) under a binfmt_misc emulator, which
    // finds its loader elsewhere.
    if let Some(interp) = facts.interp.as_ref().filter(|_| native) {
        if !interp.exists() {
            return Verdict::NoInterpreter(interp.clone());
        }
    }
    if facts.class != HOST_CLASS || facts.machine != machine {
        return Verdict::Blocked(PreloadBlocker::ForeignElf {
            path: path.to_path_buf(),
            class: facts.class,
            machine: facts.machine,
        });
    }
    if facts.interp.is_none() {
        return Verdict::Blocked(PreloadBlocker::Static {
            path: path.to_path_buf(),
        });
    }
    Verdict::Takes
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

/// What a `#!` line runs.
enum Shebang {
    /// This program (which may not exist).
    Program(PathBuf),
    /// Not known here: an empty line, or `env NAME` with NAME not in
    /// `PATH` (env itself reports that, with its own exit code).
    Unknown,
}

/// The program a `#!` line runs: the interpreter, or for
/// `#!/usr/bin/env [-S] [VAR=x…] NAME` the NAME found in `PATH`.
fn shebang_program(head: &[u8], path_var: Option<&OsStr>) -> Shebang {
    let line = head[2..].split(|&b| b == b'\n').next().unwrap_or_default();
    let mut words = line
        .split(|&b| b == b' ' || b == b'\t' || b == b'\r')
        .filter(|w| !w.is_empty());
    let Some(first) = words.next() else {
        return Shebang::Unknown;
    };
    let interp = PathBuf::from(OsString::from_vec(first.to_vec()));
    if interp.file_name() != Some(OsStr::new("env")) || !interp.exists() {
        return Shebang::Program(interp);
    }
    for w in words {
        if w.starts_with(b"-") || w.contains(&b'=') {
            continue; // env's options (-S, -i, -u NAME is rare) and assignments
        }
        return match resolve(OsStr::from_bytes(w), path_var) {
            Some(p) => Shebang::Program(p),
            None => Shebang::Unknown,
        };
    }
    Shebang::Program(interp)
}

/// What the loader needs to know of an ELF file.
struct ElfFacts {
    /// `e_ident[EI_CLASS]`.
    class: u8,
    /// `e_machine`.
    machine: u16,
    /// The `PT_INTERP` path (`None`: statically linked).
    interp: Option<PathBuf>,
}

/// Class, machine and interpreter of an ELF file; `None` when it cannot be
/// parsed.
fn elf_facts(file: File) -> Option<ElfFacts> {
    let cache = ReadCache::new(file);
    let data = &cache;
    // e_ident[EI_CLASS] (byte 4) selects the header layout.
    let ident = object::ReadRef::read_bytes_at(data, 0, 16).ok()?;
    match ident[4] {
        elf::ELFCLASS64 => facts_of::<elf::FileHeader64<object::Endianness>>(data),
        elf::ELFCLASS32 => facts_of::<elf::FileHeader32<object::Endianness>>(data),
        _ => None,
    }
}

fn facts_of<H: FileHeader<Endian = object::Endianness>>(
    data: &ReadCache<File>,
) -> Option<ElfFacts> {
    let header = H::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let phdrs = header.program_headers(endian, data).ok()?;
    let interp = match phdrs.iter().find(|p| p.p_type(endian) == elf::PT_INTERP) {
        None => None,
        Some(p) => {
            let bytes = p.data(endian, data).ok()?;
            let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
            Some(PathBuf::from(OsStr::from_bytes(bytes)))
        }
    };
    Some(ElfFacts {
        class: header.e_ident().class,
        machine: header.e_machine(endian),
        interp,
    })
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

    /// A minimal little-endian ELF executable header of `class` for
    /// `machine`, with one `PT_INTERP` program header naming `interp`
    /// (none: a static program). Layouts from elf(5).
    fn elf_file(class: u8, machine: u16, interp: Option<&str>) -> Vec<u8> {
        let wide = class == elf::ELFCLASS64;
        let (ehsize, phentsize) = if wide { (64usize, 56usize) } else { (52, 32) };
        let mut f = vec![0u8; ehsize];
        f[..4].copy_from_slice(&elf::ELFMAG);
        f[4] = class;
        f[5] = elf::ELFDATA2LSB;
        f[6] = 1; // EI_VERSION
        f[16..18].copy_from_slice(&elf::ET_EXEC.to_le_bytes());
        f[18..20].copy_from_slice(&machine.to_le_bytes());
        f[20..24].copy_from_slice(&1u32.to_le_bytes()); // e_version
        let phnum = u16::from(interp.is_some());
        let text = interp.map(|i| format!("{i}\0")).unwrap_or_default();
        let text_at = ehsize + phentsize;
        if wide {
            f[32..40].copy_from_slice(&(ehsize as u64).to_le_bytes()); // e_phoff
            f[52..54].copy_from_slice(&(ehsize as u16).to_le_bytes());
            f[54..56].copy_from_slice(&(phentsize as u16).to_le_bytes());
            f[56..58].copy_from_slice(&phnum.to_le_bytes());
        } else {
            f[28..32].copy_from_slice(&(ehsize as u32).to_le_bytes()); // e_phoff
            f[40..42].copy_from_slice(&(ehsize as u16).to_le_bytes());
            f[42..44].copy_from_slice(&(phentsize as u16).to_le_bytes());
            f[44..46].copy_from_slice(&phnum.to_le_bytes());
        }
        if interp.is_some() {
            let mut ph = vec![0u8; phentsize];
            ph[..4].copy_from_slice(&elf::PT_INTERP.to_le_bytes());
            let (off, len) = (text_at as u64, text.len() as u64);
            if wide {
                ph[8..16].copy_from_slice(&off.to_le_bytes()); // p_offset
                ph[32..40].copy_from_slice(&len.to_le_bytes()); // p_filesz
                ph[40..48].copy_from_slice(&len.to_le_bytes()); // p_memsz
            } else {
                ph[4..8].copy_from_slice(&(off as u32).to_le_bytes());
                ph[16..20].copy_from_slice(&(len as u32).to_le_bytes());
                ph[20..24].copy_from_slice(&(len as u32).to_le_bytes());
            }
            f.extend_from_slice(&ph);
            f.extend_from_slice(text.as_bytes());
        }
        f
    }

    /// A program at `path` holding `body`, as [`Program::resolve`] finds it.
    fn program_at(path: &Path, body: &[u8]) -> Program {
        exe(path, body, 0o755);
        Program::resolve(path.as_os_str()).unwrap()
    }

    /// An ELF program of this machine's class and architecture at `dir/name`,
    /// with the interpreter `interp` (none: static).
    fn host_program(dir: &Path, name: &str, interp: Option<&str>) -> Program {
        program_at(
            &dir.join(name),
            &elf_file(HOST_CLASS, HOST_MACHINES.0, interp),
        )
    }

    /// The loader this test binary runs under: an interpreter that exists.
    fn host_loader() -> String {
        let me = std::fs::File::open(std::env::current_exe().unwrap()).unwrap();
        let facts = elf_facts(me).expect("the test binary is an ELF");
        let interp = facts.interp.expect("the test binary is dynamically linked");
        interp.display().to_string()
    }

    #[test]
    fn elf_facts_read_class_machine_and_interpreter() {
        let me = std::fs::File::open(std::env::current_exe().unwrap()).unwrap();
        let facts = elf_facts(me).unwrap();
        assert_eq!(facts.class, HOST_CLASS);
        assert_eq!(facts.machine, HOST_MACHINES.0);
        assert!(facts.interp.unwrap().exists());
        let d = tmpdir("facts");
        let p = d.path().join("p32");
        exe(
            &p,
            &elf_file(elf::ELFCLASS32, elf::EM_386, Some("/x/ld.so")),
            0o755,
        );
        let facts = elf_facts(File::open(&p).unwrap()).unwrap();
        assert_eq!(facts.class, elf::ELFCLASS32);
        assert_eq!(facts.machine, elf::EM_386);
        assert_eq!(facts.interp, Some(PathBuf::from("/x/ld.so")));
    }

    #[test]
    fn a_dynamic_program_of_this_machine_takes_the_shim() {
        let d = tmpdir("native");
        let prog = host_program(d.path(), "native", Some(&host_loader()));
        assert_eq!(prog.check(), Ok(None));
        assert_eq!(prog.preload_blocker(), None);
        // The same without an interpreter is static.
        let prog = host_program(d.path(), "static", None);
        assert_eq!(
            prog.check(),
            Ok(Some(PreloadBlocker::Static {
                path: d.path().join("static")
            }))
        );
    }

    #[test]
    fn a_32_bit_program_cannot_take_the_64_bit_shim() {
        let d = tmpdir("class32");
        let path = d.path().join("prog32");
        // Its loader exists (we name one that does), so it would run; the
        // 64-bit shim would be ignored by the 32-bit ld.so.
        let prog = program_at(
            &path,
            &elf_file(elf::ELFCLASS32, elf::EM_386, Some(&host_loader())),
        );
        let blocker = prog.check().unwrap().unwrap();
        assert_eq!(
            blocker,
            PreloadBlocker::ForeignElf {
                path: path.clone(),
                class: elf::ELFCLASS32,
                machine: elf::EM_386
            }
        );
        let text = blocker.to_string();
        assert!(text.contains("32-bit i386 program"), "{text}");
        if HOST_CLASS == elf::ELFCLASS64 {
            assert!(text.contains("64-bit"), "{text}");
        }
        // Static 32-bit programs are foreign first: the more useful reason.
        let stat = program_at(&path, &elf_file(elf::ELFCLASS32, elf::EM_386, None));
        assert!(matches!(
            stat.check(),
            Ok(Some(PreloadBlocker::ForeignElf { .. }))
        ));
    }

    #[test]
    fn a_program_for_another_machine_cannot_take_the_shim() {
        let d = tmpdir("foreign");
        let other = if HOST_MACHINES.0 == elf::EM_AARCH64 {
            elf::EM_RISCV
        } else {
            elf::EM_AARCH64
        };
        let path = d.path().join("foreign");
        // A loader that does not exist here: an emulator would bring its
        // own, so that is no reason to refuse.
        let prog = program_at(
            &path,
            &elf_file(elf::ELFCLASS64, other, Some("/nonexistent/ld-foreign.so")),
        );
        assert_eq!(
            prog.check(),
            Ok(Some(PreloadBlocker::ForeignElf {
                path,
                class: elf::ELFCLASS64,
                machine: other
            }))
        );
        let text = prog.preload_blocker().unwrap().to_string();
        assert!(text.contains(&machine_name(other)), "{text}");
    }

    #[test]
    fn a_missing_interpreter_is_refused_before_the_start() {
        let d = tmpdir("nointerp");
        let (_, compat) = HOST_MACHINES;
        let prog = host_program(d.path(), "dyn", Some("/nonexistent/ld-linux.so"));
        let e = prog.check().unwrap_err();
        assert_eq!(
            e,
            SpawnError::NoInterpreter {
                program: prog.name.clone(),
                interpreter: "/nonexistent/ld-linux.so".into()
            }
        );
        assert_eq!(e.exit_code(), 127);
        assert!(
            e.to_string().ends_with(
                "cannot execute: its interpreter /nonexistent/ld-linux.so does not exist"
            ),
            "{e}"
        );
        // preload_blocker has no verdict on it: the exec will fail anyway.
        assert_eq!(prog.preload_blocker(), None);
        // A 32-bit program this kernel runs natively needs its loader too.
        if let Some(compat) = compat {
            let p32 = program_at(
                &d.path().join("p32"),
                &elf_file(elf::ELFCLASS32, compat, Some("/nonexistent/ld-linux.so.2")),
            );
            assert!(matches!(p32.check(), Err(SpawnError::NoInterpreter { .. })));
        }
        // A script whose #! program is missing, directly or through env.
        let script = program_at(&d.path().join("script"), b"#!/nonexistent/sh\ntrue\n");
        assert!(matches!(
            script.check(),
            Err(SpawnError::NoInterpreter { ref interpreter, .. }) if interpreter == "/nonexistent/sh"
        ));
        let env = program_at(
            &d.path().join("env-script"),
            b"#!/usr/bin/env pinsight-no-such-tool\n",
        );
        // env reports a NAME it cannot find itself (exit 127): no verdict here.
        assert_eq!(env.check(), Ok(None));
    }

    #[test]
    fn set_id_programs_are_reported_by_check() {
        let d = tmpdir("check-setid");
        let p = d.path().join("suid");
        let prog = host_program(d.path(), "suid", Some(&host_loader()));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4755)).unwrap();
        // Owned by us: no change of credentials, the shim is loaded.
        assert_eq!(prog.check(), Ok(None));
        if pinsight_sys::process::geteuid() == 0 {
            std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4755)).unwrap();
            assert_eq!(
                prog.check(),
                Ok(Some(PreloadBlocker::SetUid {
                    path: p.clone(),
                    owner: 65534
                }))
            );
        } else {
            pinsight_testkit::skip("chown to another user needs root");
        }
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
