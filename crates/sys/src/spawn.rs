//! Spawning a program without copying this process: [`Spawn`], a
//! description of the child (argv, environment, cwd, stdio, process
//! group, CPU mask, memory policy, inherited descriptors), started with
//! `clone(CLONE_VM | CLONE_VFORK | SIGCHLD)` on a small stack of its own.
//!
//! Why: `std::process::Command` forks (copying the page tables, then
//! taking a copy-on-write fault for every page either side touches) as
//! soon as a `pre_exec` hook is set, and uses `posix_spawn` (a vfork)
//! only without one; the timer's stamp and the placement hooks need one.
//! A vfork-style child shares our memory until its `execve`, so nothing is
//! copied and the page tables are never torn down; the parent (only the
//! calling thread) is suspended until the child execs or exits (clone(2),
//! `CLONE_VFORK`).
//!
//! The model is glibc's `posix_spawn` (sysdeps/unix/sysv/linux/spawni.c):
//! - everything the child needs (argv, envp, the `PATH` candidates, the
//!   kernel masks) is built by the parent beforehand (argv, envp and the
//!   candidates once per command when the caller keeps them: see
//!   [`Prebuilt`]; `/dev/null` opened once per process); the child allocates
//!   nothing, takes no lock and calls only async-signal-safe functions
//!   (signal-safety(7)): `dup2`, `fcntl`, `chdir`, `setpgid`,
//!   `sigaction`, `sigprocmask`, `sched_setaffinity`, `set_mempolicy`,
//!   `clock_gettime`, `execve`, `_exit`;
//! - the parent blocks every signal around the `clone`, and the child
//!   resets every signal that has a handler to `SIG_DFL` before
//!   unblocking: a handler of ours must never run on the child's stack in
//!   our memory (vfork(2), "the child must not ... call any other
//!   function"; spawni.c does the same);
//! - the child reports a failure by writing the errno and the step that
//!   failed ([`Step`]) into memory the parent reads once `clone` returns
//!   (shared: `CLONE_VM`), then `_exit(127)`; the parent reaps it and
//!   returns the error, as std's `Command::spawn` does through its
//!   close-on-exec pipe (which carries the errno only);
//! - success: the child's last step before `execve` stamps
//!   `CLOCK_MONOTONIC` into that memory (see [`Spawned::exec_ns`]).
//!
//! What the child sees is what `Command` (fork path) gives it, in the same
//! order: stdio (`dup2`), cwd, process group, `SIGPIPE` and every handled
//! signal back to `SIG_DFL` and an empty signal mask (std's child does
//! this too), then the hooks (inherited descriptors, CPU mask, memory
//! policy), then `execvp`'s search (glibc posix/execvpe.c: each `PATH`
//! entry of the child's environment, `EACCES` remembered, a file without
//! `#!` run by `/bin/sh`). The environment is std's: the parent's,
//! changed as asked (sorted by name once changed, as `CommandEnv` does).
//!
//! This is pinsight's one way of starting a program (`run`, `compare`,
//! `tune`, `sched`, `sf`, `emulate`): [`Spawn::spawn`] returns the pid and
//! stamp for callers that reap with [`crate::process::wait4`] themselves;
//! [`Spawn::start`] returns a [`Child`] (wait, try_wait, kill, the
//! [`Stdio::Piped`] ends) for callers that used `std::process::Child`, and
//! a failure that names the step of the child's set-up that failed
//! ([`StartError::step`]): a refused CPU mask is not a missing program.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// One of the child's standard streams.
#[derive(Debug, Default)]
pub enum Stdio {
    /// Ours (the default).
    #[default]
    Inherit,
    /// `/dev/null` (read-only for stdin, write-only for the others, as
    /// `std::process::Stdio::null`).
    Null,
    /// This descriptor (duplicated onto the stream in the child).
    Fd(OwnedFd),
    /// This file, shared: several streams may name one (stdout and stderr
    /// on one file, as `>FILE 2>&1`) and the caller keeps it, with no
    /// descriptor duplicated in the parent (duplicated onto the stream in
    /// the child, as [`Stdio::Fd`]).
    Shared(Arc<std::fs::File>),
    /// A new pipe; this process's end is in [`Child::stdin`],
    /// [`Child::stdout`] or [`Child::stderr`] after [`Spawn::start`]
    /// (close-on-exec, as every descriptor we open). [`Spawn::spawn`]
    /// closes it at once.
    Piped,
}

/// A program to start, built like a `std::process::Command`, plus the
/// placement steps that `Command` can only take as `pre_exec` closures.
#[derive(Debug)]
pub struct Spawn {
    program: OsString,
    /// `argv[0]` when it is not `program` ([`Spawn::arg0`]).
    arg0: Option<OsString>,
    args: Vec<OsString>,
    env: BTreeMap<OsString, Option<OsString>>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stdio: [Stdio; 3],
    process_group: Option<libc::pid_t>,
    inherit_fds: Vec<RawFd>,
    affinity: Option<Vec<libc::c_ulong>>,
    mempolicy: Option<(i32, Vec<libc::c_ulong>, usize)>,
    /// What an earlier spawn of the same command built (see
    /// [`Spawn::prebuild`]).
    prebuilt: Option<Arc<Built>>,
}

/// The argv, environment and `PATH` candidates a spawn builds from the
/// program, its arguments, the environment changes and this process's
/// environment, kept to be reused by later spawns of the same command
/// ([`Spawn::prebuild`], [`Spawn::reuse`]): running one program hundreds
/// of times (compare, tune) then copies this process's environment once
/// instead of once per run.
#[derive(Debug)]
pub struct Prebuilt(Arc<Built>);

impl Clone for Prebuilt {
    fn clone(&self) -> Prebuilt {
        Prebuilt(Arc::clone(&self.0))
    }
}

/// What [`Prebuilt`] holds.
#[derive(Debug)]
struct Built {
    /// The command it was built for: a spawn reuses it only if its own
    /// program, arguments and environment changes are these.
    program: OsString,
    arg0: Option<OsString>,
    args: Vec<OsString>,
    env: BTreeMap<OsString, Option<OsString>>,
    env_clear: bool,
    /// The program as named (before the `PATH` search).
    prog: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    /// The child's `PATH` (`None`: unset).
    path: Option<OsString>,
    /// `execve` paths to try in order (one when the program has a `/`).
    candidates: Vec<CString>,
}

/// A started child: it has called `execve` successfully.
#[derive(Clone, Copy, Debug)]
pub struct Spawned {
    pub pid: libc::pid_t,
    /// `CLOCK_MONOTONIC` (as [`crate::process::monotonic_ns`]) read by the
    /// child as its very last step before `execve`.
    pub exec_ns: u64,
}

impl Spawn {
    /// `program` (searched in `PATH` when it has no `/`), as `argv[0]`.
    pub fn new(program: impl AsRef<OsStr>) -> Spawn {
        Spawn {
            program: program.as_ref().to_owned(),
            arg0: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            env_clear: false,
            cwd: None,
            stdio: Default::default(),
            process_group: None,
            inherit_fds: Vec::new(),
            affinity: None,
            mempolicy: None,
            prebuilt: None,
        }
    }
    /// `argv[0]` as `name` instead of the program (a shell's `exec -a`):
    /// a caller that resolved the program's path itself still passes the
    /// name as typed, as `execvp` would.
    pub fn arg0(&mut self, name: impl AsRef<OsStr>) -> &mut Spawn {
        self.arg0 = Some(name.as_ref().to_owned());
        self
    }
    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Spawn {
        self.args.push(a.as_ref().to_owned());
        self
    }
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Spawn {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }
    pub fn env(&mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> &mut Spawn {
        self.env
            .insert(k.as_ref().to_owned(), Some(v.as_ref().to_owned()));
        self
    }
    pub fn env_remove(&mut self, k: impl AsRef<OsStr>) -> &mut Spawn {
        self.env.insert(k.as_ref().to_owned(), None);
        self
    }
    /// Starts from an empty environment instead of ours.
    pub fn env_clear(&mut self) -> &mut Spawn {
        self.env.clear();
        self.env_clear = true;
        self
    }
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Spawn {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }
    pub fn stdin(&mut self, s: Stdio) -> &mut Spawn {
        self.stdio[0] = s;
        self
    }
    pub fn stdout(&mut self, s: Stdio) -> &mut Spawn {
        self.stdio[1] = s;
        self
    }
    pub fn stderr(&mut self, s: Stdio) -> &mut Spawn {
        self.stdio[2] = s;
        self
    }
    /// `setpgid(0, pgid)` in the child (0: a group of its own).
    pub fn process_group(&mut self, pgid: libc::pid_t) -> &mut Spawn {
        self.process_group = Some(pgid);
        self
    }
    /// Clears close-on-exec on `fd` in the child only; `fd` must stay open
    /// until [`Spawn::spawn`] returns.
    pub fn inherit_fd(&mut self, fd: RawFd) -> &mut Spawn {
        self.inherit_fds.push(fd);
        self
    }
    /// The child's CPU mask (kernel words, see
    /// [`crate::affinity::to_kernel_words`]), set before `execve`.
    pub fn affinity_words(&mut self, words: Vec<libc::c_ulong>) -> &mut Spawn {
        self.affinity = Some(words);
        self
    }
    /// The child's memory policy (`MPOL_*` on `nodes`), set before
    /// `execve` and inherited across it, as under numactl.
    pub fn mempolicy(&mut self, mode: i32, nodes: &pinsight_cpuset::CpuSet) -> &mut Spawn {
        let (words, maxnode) = crate::mempolicy::kernel_mask(mode, nodes);
        self.mempolicy = Some((mode, words, maxnode));
        self
    }
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }
    pub fn get_args(&self) -> impl Iterator<Item = &OsStr> {
        self.args.iter().map(OsString::as_os_str)
    }
    /// The explicit changes to the environment (`None`: removed).
    pub fn get_envs(&self) -> impl Iterator<Item = (&OsStr, Option<&OsStr>)> {
        self.env.iter().map(|(k, v)| (k.as_os_str(), v.as_deref()))
    }
    pub fn get_current_dir(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// Builds what a spawn of this command needs from the program, the
    /// arguments and the environment (this process's, changed as asked),
    /// to be given to later spawns of the same command with
    /// [`Spawn::reuse`]. It holds this process's environment as it is
    /// now: a spawn reusing it does not see later changes to it (the
    /// experiments change none while they run programs).
    pub fn prebuild(&self) -> io::Result<Prebuilt> {
        build(self).map(|b| Prebuilt(Arc::new(b)))
    }

    /// Spawns with `p` when it was built for this same program, arguments
    /// and environment changes (else builds them afresh, as without it).
    pub fn reuse(&mut self, p: &Prebuilt) -> &mut Spawn {
        self.prebuilt = Some(Arc::clone(&p.0));
        self
    }

    /// Starts the program; returns once it has called `execve` (or failed
    /// to). Errors: the errno of the step that failed (`ENOENT`: not
    /// found, `EACCES`: not executable, ...), as `Command::spawn`; see
    /// [`Spawn::start`] for which step it was. The ends of
    /// [`Stdio::Piped`] streams are closed at once.
    pub fn spawn(&self) -> io::Result<Spawned> {
        self.start().map(|c| c.spawned()).map_err(io::Error::from)
    }

    /// [`Spawn::spawn`] with a [`Child`] to wait for, signal, and read
    /// through (the ends of its [`Stdio::Piped`] streams); a failure
    /// says which step of the start failed ([`StartError::step`]).
    pub fn start(&self) -> Result<Child, StartError> {
        let parent = |error| StartError {
            step: Step::Parent,
            error,
        };
        let mut prepared = Prepared::new(self).map_err(parent)?;
        // This thread's stack for its children, mapped once: a fresh
        // mapping per spawn cost three system calls and a page fault per
        // page the child touches.
        let stack = match SPARE_STACK.with(|s| s.take()) {
            Some(s) => s,
            None => Stack::new(STACK_BYTES).map_err(parent)?,
        };
        // SAFETY: sigset_t is plain old data; sigfillset/sigemptyset
        // initialise it.
        let (mut all, mut old): (libc::sigset_t, libc::sigset_t) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        // SAFETY: valid pointers to the sets above.
        unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        }
        // SAFETY: `child` runs on `stack` (ours, unused by anything else,
        // the top passed as the stack grows down on every Linux target we
        // build for) and reads `prepared`, which outlives the call: with
        // CLONE_VFORK this thread is suspended until the child has called
        // execve or _exit (clone(2)), and only then does clone return. The
        // child follows the vfork(2) rules (see the module's doc).
        let pid = unsafe {
            libc::clone(
                child,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (&prepared as *const Prepared).cast_mut().cast(),
            )
        };
        let clone_err = io::Error::last_os_error();
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        // Free again: the child has exec'd or exited (CLONE_VFORK).
        SPARE_STACK.with(|s| s.set(Some(stack)));
        if pid < 0 {
            return Err(parent(clone_err));
        }
        let err = prepared.err.load(Ordering::Acquire);
        if err != 0 {
            // The child _exit()ed: reap it so no zombie is left.
            let _ = crate::process::wait4(pid);
            return Err(StartError {
                step: Step::from_u8(prepared.step.load(Ordering::Acquire)),
                error: io::Error::from_raw_os_error(err),
            });
        }
        remember_found(&prepared);
        let [stdin, stdout, stderr] =
            std::mem::take(&mut prepared.piped).map(|end| end.map(std::fs::File::from));
        Ok(Child {
            pid,
            exec_ns: prepared.stamp.load(Ordering::Acquire),
            status: None,
            stdin,
            stdout,
            stderr,
        })
    }
}

/// A step of starting a program, in the order they are taken: the one
/// that failed ([`StartError::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// In this process, before the child existed: the command's strings
    /// (a NUL byte), `/dev/null`, a pipe, the child's stack, or `clone`
    /// itself (`EAGAIN`: too many processes).
    Parent,
    /// Putting a descriptor on a standard stream (`dup2`).
    Stdio,
    /// Entering the working directory (`chdir`).
    Cwd,
    /// Joining the process group (`setpgid`).
    ProcessGroup,
    /// Resetting the signal dispositions and mask.
    Signals,
    /// Keeping an inherited descriptor open across `execve`.
    InheritFd,
    /// The CPU mask (`sched_setaffinity`).
    Affinity,
    /// The memory policy (`set_mempolicy`).
    MemPolicy,
    /// `execve` itself: the program not found, not executable, ...
    Exec,
}

impl Step {
    /// Every step, in order (its `u8` is its position).
    const ALL: [Step; 9] = [
        Step::Parent,
        Step::Stdio,
        Step::Cwd,
        Step::ProcessGroup,
        Step::Signals,
        Step::InheritFd,
        Step::Affinity,
        Step::MemPolicy,
        Step::Exec,
    ];

    fn from_u8(n: u8) -> Step {
        Step::ALL.get(usize::from(n)).copied().unwrap_or(Step::Exec)
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Parent => "cannot start a child",
            Step::Stdio => "dup2",
            Step::Cwd => "chdir",
            Step::ProcessGroup => "setpgid",
            Step::Signals => "sigaction",
            Step::InheritFd => "fcntl",
            Step::Affinity => "sched_setaffinity",
            Step::MemPolicy => "set_mempolicy",
            Step::Exec => "execve",
        })
    }
}

/// Why [`Spawn::start`] failed: the step and its error (as an
/// `io::Error`, the step is dropped: what [`Spawn::spawn`] returns).
#[derive(Debug, thiserror::Error)]
#[error("{step}: {error}")]
pub struct StartError {
    pub step: Step,
    #[source]
    pub error: io::Error,
}

impl From<StartError> for io::Error {
    fn from(e: StartError) -> io::Error {
        e.error
    }
}

/// A started program, as `std::process::Child`: waited for, polled,
/// signalled, read through its pipes. Dropping it neither waits nor
/// kills (as std's): reap it with [`Child::wait`], or with
/// [`crate::process::wait4`] on [`Child::id`] for its resource usage.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    exec_ns: u64,
    /// Once reaped.
    status: Option<std::process::ExitStatus>,
    /// This process's end of a [`Stdio::Piped`] stdin (write).
    pub stdin: Option<std::fs::File>,
    /// This process's end of a [`Stdio::Piped`] stdout (read).
    pub stdout: Option<std::fs::File>,
    /// This process's end of a [`Stdio::Piped`] stderr (read).
    pub stderr: Option<std::fs::File>,
}

impl Child {
    pub fn id(&self) -> libc::pid_t {
        self.pid
    }

    /// The pid and the child's own stamp ([`Spawned::exec_ns`]).
    pub fn spawned(&self) -> Spawned {
        Spawned {
            pid: self.pid,
            exec_ns: self.exec_ns,
        }
    }

    /// Waits for the program to exit and reaps it (`EINTR` retried),
    /// closing its piped stdin first (as std); once reaped, the same
    /// status again. A status as std's (`ExitStatusExt::from_raw`).
    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        if let Some(s) = self.status {
            return Ok(s);
        }
        let r = crate::process::wait4(self.pid)?;
        Ok(*self.status.insert(exit_status(r.status)))
    }

    /// Reaps the program if it has exited (`None` while it runs).
    pub fn try_wait(&mut self) -> io::Result<Option<std::process::ExitStatus>> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        Ok(crate::process::try_reap(self.pid)?.map(|raw| *self.status.insert(exit_status(raw))))
    }

    /// Sends `sig` (see [`crate::process::kill`]); `Ok(false)` once it
    /// is reaped (its pid may be another process's by then) or gone.
    pub fn signal(&self, sig: libc::c_int) -> io::Result<bool> {
        if self.status.is_some() {
            return Ok(false);
        }
        crate::process::kill(self.pid, sig)
    }

    /// `SIGKILL`, unless already reaped (then nothing, as std's).
    pub fn kill(&mut self) -> io::Result<()> {
        self.signal(libc::SIGKILL).map(drop)
    }
}

/// A raw wait status as std's type.
fn exit_status(raw: libc::c_int) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(raw)
}

thread_local! {
    /// The stack this thread's last child ran on, for the next one.
    static SPARE_STACK: std::cell::Cell<Option<Stack>> = const { std::cell::Cell::new(None) };
}

/// The child's stack: argv/envp live in the parent's heap, so the child
/// only needs frames for a few libc calls.
const STACK_BYTES: usize = 64 * 1024;

/// An anonymous mapping with a guard page below it (an overflow faults
/// instead of writing over our memory).
struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    fn new(bytes: usize) -> io::Result<Stack> {
        // SAFETY: sysconf has no preconditions.
        let page = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as usize;
        let len = bytes.div_ceil(page) * page + page;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: the lowest page of our own mapping becomes the guard.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }
    fn top(&self) -> *mut libc::c_void {
        // 16-byte aligned: the mapping's end is page aligned.
        self.base.wrapping_byte_add(self.len)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used (the child has exec'd or
        // exited before clone returned).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Everything the child reads, built before the clone.
struct Prepared {
    /// `execve` paths to try in order (pointers into `built`).
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// `/bin/sh FILE args...` for a file without `#!` (ENOEXEC); slot 1
    /// is written by the child (a pointer into `candidates`).
    sh_argv: std::cell::UnsafeCell<Vec<*const libc::c_char>>,
    cwd: Option<CString>,
    /// Descriptor to put on stdin/stdout/stderr (`None`: inherited).
    stdio: [Option<RawFd>; 3],
    process_group: Option<libc::pid_t>,
    inherit_fds: Vec<RawFd>,
    affinity: Option<Vec<libc::c_ulong>>,
    mempolicy: Option<(i32, Vec<libc::c_ulong>, usize)>,
    /// Signals 1..nsig are reset.
    nsig: libc::c_int,
    /// Written by the child: the errno of a failed step (0: exec'd).
    err: AtomicI32,
    /// Written by the child with `err`: which step failed ([`Step`]).
    step: AtomicU8,
    /// This process's ends of the [`Stdio::Piped`] streams.
    piped: [Option<OwnedFd>; 3],
    /// The child's ends, open until `clone` returns.
    _piped_child: Vec<OwnedFd>,
    /// Written by the child just before `execve`.
    stamp: AtomicU64,
    /// Written by the child: the index in `candidates` it execs last
    /// (after a successful spawn, the one that ran).
    tried: AtomicUsize,
    /// `candidates[0]` was moved there from this index (see
    /// [`found_first`]).
    found_first: usize,
    /// The owner of every string the pointers above point at (but `cwd`).
    built: Arc<Built>,
}

const SH: &CStr = c"/bin/sh";
use std::ffi::CStr;

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

/// Builds argv, envp and the `PATH` candidates of `s`.
fn build(s: &Spawn) -> io::Result<Built> {
    let prog = cstring(&s.program)?;
    let mut argv = vec![match &s.arg0 {
        Some(a) => cstring(a)?,
        None => prog.clone(),
    }];
    for a in &s.args {
        argv.push(cstring(a)?);
    }
    // The environment as std builds it: ours in order when unchanged,
    // else ours changed as asked, sorted by name (CommandEnv).
    let env: Vec<(OsString, OsString)> = if s.env.is_empty() && !s.env_clear {
        std::env::vars_os().collect()
    } else {
        let mut m: BTreeMap<OsString, OsString> = if s.env_clear {
            BTreeMap::new()
        } else {
            std::env::vars_os().collect()
        };
        for (k, v) in &s.env {
            match v {
                Some(v) => m.insert(k.clone(), v.clone()),
                None => m.remove(k),
            };
        }
        m.into_iter().collect()
    };
    let mut path = None;
    let mut envp = Vec::with_capacity(env.len());
    for (k, v) in &env {
        if k == "PATH" {
            path = Some(v.clone());
        }
        let mut kv = k.clone().into_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        // A variable with a NUL cannot be passed: std skips nothing
        // but fails the spawn the same way.
        envp.push(CString::new(kv).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "nul byte found in provided data",
            )
        })?);
    }
    let candidates = candidates(&prog, path.as_deref())?;
    Ok(Built {
        program: s.program.clone(),
        arg0: s.arg0.clone(),
        args: s.args.clone(),
        env: s.env.clone(),
        env_clear: s.env_clear,
        prog,
        argv,
        envp,
        path,
        candidates,
    })
}

impl Built {
    /// Built for `s`'s program, arguments and environment changes.
    fn fits(&self, s: &Spawn) -> bool {
        self.program == s.program
            && self.arg0 == s.arg0
            && self.args == s.args
            && self.env_clear == s.env_clear
            && self.env == s.env
    }
}

/// `/dev/null` open for reading (`write` false) or for writing, opened
/// once and kept open for every later spawn (close-on-exec; the child
/// gets a `dup2` of it).
fn dev_null(write: bool) -> io::Result<RawFd> {
    static NULLS: std::sync::Mutex<[Option<OwnedFd>; 2]> = std::sync::Mutex::new([None, None]);
    let mut nulls = NULLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let slot = &mut nulls[usize::from(write)];
    if let Some(fd) = slot {
        return Ok(fd.as_raw_fd());
    }
    let f = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .open("/dev/null")?;
    Ok(slot.insert(OwnedFd::from(f)).as_raw_fd())
}

impl Prepared {
    fn new(s: &Spawn) -> io::Result<Prepared> {
        let built = match &s.prebuilt {
            Some(b) if b.fits(s) => Arc::clone(b),
            _ => Arc::new(build(s)?),
        };
        let mut candidates: Vec<*const libc::c_char> =
            built.candidates.iter().map(|c| c.as_ptr()).collect();
        let found_first = found_first(&built.prog, built.path.as_deref(), &mut candidates);
        let cwd = s
            .cwd
            .as_deref()
            .map(|d| cstring(d.as_os_str()))
            .transpose()?;
        let mut stdio = [None; 3];
        let mut piped: [Option<OwnedFd>; 3] = Default::default();
        let mut piped_child = Vec::new();
        for (i, st) in s.stdio.iter().enumerate() {
            stdio[i] = match st {
                Stdio::Inherit => None,
                Stdio::Fd(fd) => Some(fd.as_raw_fd()),
                Stdio::Shared(f) => Some(f.as_raw_fd()),
                Stdio::Null => Some(dev_null(i != 0)?),
                Stdio::Piped => {
                    let (r, w) = crate::process::pipe()?;
                    // stdin: the child reads; stdout, stderr: it writes.
                    let (ours, its) = if i == 0 { (w, r) } else { (r, w) };
                    let fd = its.as_raw_fd();
                    piped[i] = Some(ours);
                    piped_child.push(its);
                    Some(fd)
                }
            };
        }
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let argv = ptrs(&built.argv);
        let envp = ptrs(&built.envp);
        let mut sh_argv = Vec::with_capacity(built.argv.len() + 2);
        sh_argv.extend([SH.as_ptr(), std::ptr::null()]);
        sh_argv.extend(built.argv[1..].iter().map(|c| c.as_ptr()));
        sh_argv.push(std::ptr::null());
        Ok(Prepared {
            candidates,
            argv,
            envp,
            sh_argv: std::cell::UnsafeCell::new(sh_argv),
            cwd,
            stdio,
            process_group: s.process_group,
            inherit_fds: s.inherit_fds.clone(),
            affinity: s.affinity.clone(),
            mempolicy: s.mempolicy.clone(),
            nsig: (libc::SIGRTMAX() + 1).max(32),
            err: AtomicI32::new(0),
            step: AtomicU8::new(0),
            piped,
            _piped_child: piped_child,
            stamp: AtomicU64::new(0),
            tried: AtomicUsize::new(0),
            found_first,
            built,
        })
    }
}

/// The paths `execvp` tries for `prog` (glibc posix/execvpe.c): `prog`
/// itself if it has a `/`, else each `PATH` entry (default
/// `/bin:/usr/bin`, an empty entry meaning the current directory)
/// joined with it. An empty name is ENOENT, as there.
fn candidates(prog: &CStr, path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    let bytes = prog.to_bytes();
    if bytes.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if bytes.contains(&b'/') {
        return Ok(vec![prog.to_owned()]);
    }
    let path = path.map_or(&b"/bin:/usr/bin"[..], |p| p.as_bytes());
    let mut out = Vec::new();
    for dir in path.split(|b| *b == b':') {
        let mut p = dir.to_vec();
        if !dir.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(bytes);
        // PATH entries with a NUL cannot come from an environment string.
        if let Ok(c) = CString::new(p) {
            out.push(c);
        }
    }
    Ok(out)
}

/// The program a `PATH` search last found: (name, `PATH`, index among
/// the candidates).
type Found = (CString, Option<OsString>, usize);
static FOUND: std::sync::Mutex<Option<Found>> = std::sync::Mutex::new(None);

/// Moves the candidate that the last spawn of the same name under the
/// same `PATH` executed to the front, and returns where it was (0: no
/// move). Running one program many times (compare, tune) then costs one
/// `execve` per run instead of one per `PATH` entry before it (each
/// failed one is a path lookup inside the timed interval). The others are
/// still tried, in order, if it fails; what is lost is only `execvp`'s
/// first-match rule for a program of that name added to an earlier
/// `PATH` entry while the runs go on.
fn found_first(prog: &CStr, path: Option<&OsStr>, candidates: &mut [*const libc::c_char]) -> usize {
    let found = FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match &*found {
        Some((p, pa, i))
            if p.as_c_str() == prog && pa.as_deref() == path && *i < candidates.len() =>
        {
            candidates[..=*i].rotate_right(1);
            *i
        }
        _ => 0,
    }
}

/// Records which candidate a successful spawn executed (see
/// [`found_first`]).
fn remember_found(p: &Prepared) {
    if p.candidates.len() < 2 {
        return;
    }
    let tried = p.tried.load(Ordering::Acquire);
    // Undo found_first's rotation: the original index.
    let original = match tried {
        0 => p.found_first,
        t if t <= p.found_first => t - 1,
        t => t,
    };
    let mut found = FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let b = &p.built;
    if !matches!(&*found, Some((pr, pa, i)) if *i == original && *pr == b.prog && *pa == b.path) {
        *found = Some((b.prog.clone(), b.path.clone(), original));
    }
}

/// The errno of the last failed call (glibc keeps it per thread; the
/// child runs on the parent thread's TLS, which is suspended, as in
/// spawni.c's child).
fn errno() -> libc::c_int {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The child: runs on its own stack in our memory until `execve`.
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Prepared`, alive and unchanged until
    // this child execs or exits (the parent is suspended: CLONE_VFORK).
    let p = unsafe { &*(arg as *const Prepared) };
    let (step, e) = match prepare(p) {
        Ok(()) => (Step::Exec, exec_candidates(p)),
        Err(failed) => failed,
    };
    p.step.store(step as u8, Ordering::Release);
    p.err
        .store(if e == 0 { libc::EIO } else { e }, Ordering::Release);
    // SAFETY: _exit is async-signal-safe and never returns; 127 as std's
    // child when its exec fails.
    unsafe { libc::_exit(127) }
}

/// A failed step of the child and its errno.
type Failed = (Step, libc::c_int);

/// The steps before `execve`, in std's order; `Err` holds the one that
/// failed and its errno. Everything from here to `execve` runs in the
/// child on borrowed memory: async-signal-safe calls only, and no
/// allocation.
fn prepare(p: &Prepared) -> Result<(), Failed> {
    redirect_stdio(p)?;
    enter_dir_and_group(p)?;
    reset_signals(p.nsig)?;
    keep_inherited_fds(p)?;
    set_placement(p)
}

/// Puts each redirected descriptor on its standard stream.
fn redirect_stdio(p: &Prepared) -> Result<(), Failed> {
    // SAFETY (every block here): async-signal-safe libc calls on
    // descriptors the parent prepared, which stay open until execve.
    for (target, src) in p.stdio.iter().enumerate() {
        let Some(src) = *src else { continue };
        let target = target as RawFd;
        let r = if src == target {
            // dup2 onto itself keeps close-on-exec set: clear it.
            unsafe { libc::fcntl(src, libc::F_SETFD, 0) }
        } else {
            unsafe { libc::dup2(src, target) }
        };
        if r < 0 {
            return Err((Step::Stdio, errno()));
        }
    }
    Ok(())
}

/// Changes to the working directory and joins the process group, where
/// asked.
fn enter_dir_and_group(p: &Prepared) -> Result<(), Failed> {
    if let Some(cwd) = &p.cwd {
        // SAFETY: async-signal-safe; `cwd` is the parent's NUL-terminated
        // string, valid until execve.
        if unsafe { libc::chdir(cwd.as_ptr()) } != 0 {
            return Err((Step::Cwd, errno()));
        }
    }
    if let Some(pgid) = p.process_group {
        // SAFETY: async-signal-safe; plain integer arguments.
        if unsafe { libc::setpgid(0, pgid) } != 0 {
            return Err((Step::ProcessGroup, errno()));
        }
    }
    Ok(())
}

/// Every handled signal below `nsig` back to the default (our handlers
/// must not run here, spawni.c), SIGPIPE too (std's child: Rust ignores it
/// in the parent), then an empty mask (std's child).
fn reset_signals(nsig: libc::c_int) -> Result<(), Failed> {
    // SAFETY (every block here): async-signal-safe libc calls on sigaction
    // and sigset_t values on this stack; all-zero is a valid value of both.
    for sig in 1..nsig {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue; // glibc's reserved signals: not ours to touch
        }
        if sig != libc::SIGPIPE
            && (old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN)
        {
            continue;
        }
        let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
        dfl.sa_sigaction = libc::SIG_DFL;
        if unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) } != 0 {
            return Err((Step::Signals, errno()));
        }
    }
    let mut empty: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigemptyset(&mut empty) };
    if unsafe { libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) } != 0 {
        return Err((Step::Signals, errno()));
    }
    Ok(())
}

/// Clears close-on-exec on the descriptors the program inherits.
fn keep_inherited_fds(p: &Prepared) -> Result<(), Failed> {
    for &fd in &p.inherit_fds {
        // SAFETY: async-signal-safe; plain integer arguments.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
            return Err((Step::InheritFd, errno()));
        }
    }
    Ok(())
}

/// Sets the CPU affinity and memory policy, where asked.
fn set_placement(p: &Prepared) -> Result<(), Failed> {
    if let Some(words) = &p.affinity {
        if crate::affinity::set_affinity_words(0, words).is_err() {
            return Err((Step::Affinity, errno()));
        }
    }
    if let Some((mode, words, maxnode)) = &p.mempolicy {
        if crate::mempolicy::raw_set(*mode, words, *maxnode).is_err() {
            return Err((Step::MemPolicy, errno()));
        }
    }
    Ok(())
}

/// Executes the candidates in order (a file without `#!` through the
/// shell, as execvp); returns the errno to report when none ran: EACCES
/// if any was refused, else the last.
fn exec_candidates(p: &Prepared) -> libc::c_int {
    let envp = p.envp.as_ptr();
    let mut eacces = false;
    let mut last = libc::ENOENT;
    for (i, &cand) in p.candidates.iter().enumerate() {
        p.tried.store(i, Ordering::Relaxed);
        // Last of all: the start of the timed interval.
        p.stamp
            .store(crate::process::monotonic_ns(), Ordering::Release);
        // SAFETY: async-signal-safe; `cand`, argv and envp are the parent's
        // NUL-terminated strings and arrays, valid until execve.
        unsafe { libc::execve(cand, p.argv.as_ptr(), envp) };
        let mut e = errno();
        if e == libc::ENOEXEC {
            // A file without `#!`: run it with the shell, as execvp.
            // SAFETY: only this child touches sh_argv (the parent is
            // suspended); slot 1 exists (built with two entries first).
            let sh = unsafe { &mut *p.sh_argv.get() };
            if let Some(slot) = sh.get_mut(1) {
                *slot = cand;
            }
            p.stamp
                .store(crate::process::monotonic_ns(), Ordering::Release);
            // SAFETY: as the execve above; SH is a static C string.
            unsafe { libc::execve(SH.as_ptr(), sh.as_ptr(), envp) };
            e = errno();
        }
        match e {
            libc::EACCES => eacces = true,
            libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT => {}
            _ => return e,
        }
        last = e;
    }
    if eacces {
        libc::EACCES
    } else {
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{decode_status, monotonic_ns, wait4};

    fn output(mut s: Spawn) -> (String, i32) {
        let (r, w) = crate::process::pipe().unwrap();
        s.stdout(Stdio::Fd(w));
        let sp = s.spawn().unwrap();
        drop(s);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(r), &mut out).unwrap();
        let code = decode_status(wait4(sp.pid).unwrap().status).0.unwrap();
        (out, code)
    }

    #[test]
    fn a_path_search_remembers_its_find_and_still_finds_the_others() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let write = |dir: &Path, says: &str| {
            let f = dir.join("pinsight-found-prog");
            std::fs::write(&f, format!("#!/bin/sh\necho {says}\n")).unwrap();
            std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        };
        let path = std::env::join_paths([&a, &b]).unwrap();
        let run = || {
            let mut s = Spawn::new("pinsight-found-prog");
            s.env("PATH", &path);
            output(s).0
        };
        write(&b, "b");
        assert_eq!(run(), "b\n");
        assert_eq!(run(), "b\n"); // from the remembered candidate
        std::fs::remove_file(b.join("pinsight-found-prog")).unwrap();
        write(&a, "a");
        assert_eq!(run(), "a\n"); // the remembered one is gone: searched
        assert_eq!(run(), "a\n");
    }

    #[test]
    fn a_prebuilt_command_is_reused_only_for_the_same_command() {
        let make = |word: &str, var: &str| {
            let mut s = Spawn::new("sh");
            s.args(["-c", &format!("echo {word} $PINSIGHT_PREBUILT_TEST")])
                .env("PINSIGHT_PREBUILT_TEST", var)
                .stdin(Stdio::Null);
            s
        };
        let p = make("one", "x").prebuild().unwrap();
        for _ in 0..3 {
            let mut s = make("one", "x");
            s.reuse(&p);
            assert_eq!(output(s), ("one x\n".to_string(), 0));
        }
        // Another argument or another variable: built afresh, never the
        // prebuilt command.
        let mut s = make("two", "x");
        s.reuse(&p);
        assert_eq!(output(s).0, "two x\n");
        let mut s = make("one", "y");
        s.reuse(&p);
        assert_eq!(output(s).0, "one y\n");
        assert!(Arc::ptr_eq(&p.clone().0, &p.0));
    }

    #[test]
    fn runs_with_args_env_cwd_and_group() {
        let mut s = Spawn::new("sh");
        s.arg("-c")
            .arg("echo \"$1 $FOO $(pwd) $(ps -o pgid= $$ | tr -d ' ') $$\"; exit 3")
            .arg("x")
            .arg("one")
            .env("FOO", "bar")
            .current_dir("/tmp")
            .process_group(0);
        let before = monotonic_ns();
        let (out, code) = output(s);
        assert_eq!(code, 3);
        let f: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(&f[..3], &["one", "bar", "/tmp"], "{out}");
        assert_eq!(f[3], f[4], "own process group: {out}");
        assert!(before > 0);
    }

    #[test]
    fn environment_changes_apply() {
        std::env::set_var("PINSIGHT_SPAWN_TEST_GONE", "1");
        let mut s = Spawn::new("sh");
        s.arg("-c")
            .arg("echo ${PINSIGHT_SPAWN_TEST_GONE:-unset} ${A:-none}")
            .env_remove("PINSIGHT_SPAWN_TEST_GONE")
            .env("A", "a");
        assert_eq!(output(s).0.trim(), "unset a");
        let mut s = Spawn::new("/bin/sh");
        s.arg("-c").arg("env | wc -l").env_clear().env("ONLY", "1");
        // sh may add PWD/SHLVL/_ itself; far fewer than ours.
        assert!(output(s).0.trim().parse::<usize>().unwrap() <= 4);
    }

    #[test]
    fn errors_map_like_command() {
        let e = Spawn::new("pinsight-no-such-program").spawn().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        // Not executable (mode 0644): EACCES, for root too (execve(2)).
        let f = std::env::temp_dir().join(format!("pinsight-spawn-x-{}", std::process::id()));
        std::fs::write(&f, "true\n").unwrap();
        let e = Spawn::new(&f).spawn().unwrap_err();
        let std_e = std::process::Command::new(&f).spawn().unwrap_err();
        std::fs::remove_file(&f).unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        assert_eq!(e.raw_os_error(), std_e.raw_os_error());
        let e = Spawn::new("/nonexistent/x").spawn().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let mut s = Spawn::new("true");
        s.current_dir("/nonexistent-dir");
        assert_eq!(s.spawn().unwrap_err().raw_os_error(), Some(libc::ENOENT));
        assert!(Spawn::new("a\0b").spawn().is_err());
    }

    #[test]
    fn a_failure_names_its_step() {
        let step = |s: &Spawn| s.start().unwrap_err();
        let e = step(&Spawn::new("pinsight-no-such-program"));
        assert_eq!(
            (e.step, e.error.raw_os_error()),
            (Step::Exec, Some(libc::ENOENT))
        );
        assert_eq!(
            e.to_string(),
            format!("execve: {}", io::Error::from_raw_os_error(libc::ENOENT))
        );
        let mut s = Spawn::new("true");
        s.current_dir("/nonexistent-dir");
        assert_eq!(step(&s).step, Step::Cwd);
        // A mask of CPUs this machine does not have: refused by the
        // kernel in the child, reported as the mask's failure (EINVAL),
        // not as a program that cannot be found.
        let mut s = Spawn::new("true");
        s.affinity_words(crate::affinity::to_kernel_words(
            &pinsight_cpuset::CpuSet::single(4000),
        ));
        let e = step(&s);
        assert_eq!(
            (e.step, e.error.raw_os_error()),
            (Step::Affinity, Some(libc::EINVAL))
        );
        let mut s = Spawn::new("true");
        s.mempolicy(
            crate::mempolicy::MPOL_BIND,
            &pinsight_cpuset::CpuSet::single(1000),
        );
        let e = step(&s);
        assert_eq!(e.step, Step::MemPolicy, "{e}");
        assert!(Spawn::new("true").affinity_words(vec![1]).start().is_ok());
        assert_eq!(step(&Spawn::new("a\0b")).step, Step::Parent);
        // As an io::Error: the errno alone, as before.
        let io: io::Error = step(&Spawn::new("pinsight-no-such-program")).into();
        assert_eq!(io.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn arg0_names_the_program_as_typed() {
        let mut s = Spawn::new("/bin/sh");
        s.arg0("typed-name").args(["-c", "echo $0"]);
        assert_eq!(output(s).0, "typed-name\n");
        // A prebuilt command is not reused for another argv[0].
        let mut plain = Spawn::new("/bin/sh");
        plain.args(["-c", "echo $0"]);
        let p = plain.prebuild().unwrap();
        let mut s = Spawn::new("/bin/sh");
        s.arg0("other").args(["-c", "echo $0"]).reuse(&p);
        assert_eq!(output(s).0, "other\n");
    }

    #[test]
    fn a_child_is_waited_for_polled_killed_and_read_through_pipes() {
        use std::io::{Read, Write};
        let mut s = Spawn::new("sh");
        s.args(["-c", "read x; echo out $x; echo err >&2; exit 7"])
            .stdin(Stdio::Piped)
            .stdout(Stdio::Piped)
            .stderr(Stdio::Piped);
        let mut c = s.start().unwrap();
        c.stdin.as_mut().unwrap().write_all(b"in\n").unwrap();
        let (mut out, mut err) = (String::new(), String::new());
        // wait closes stdin first (as std's); the pipes read to the end
        // without dropping the Spawn: its ends closed once started.
        let status = c.wait().unwrap();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!((out.as_str(), err.as_str()), ("out in\n", "err\n"));
        assert_eq!(status.code(), Some(7));
        assert_eq!(c.wait().unwrap().code(), Some(7), "the same status again");
        assert_eq!(c.try_wait().unwrap().and_then(|s| s.code()), Some(7));
        assert!(!c.signal(libc::SIGTERM).unwrap(), "reaped: never signalled");
        c.kill().unwrap();

        let mut c = Spawn::new("sleep").arg("30").start().unwrap();
        assert!(c.id() > 0 && c.spawned().exec_ns > 0);
        assert_eq!(c.try_wait().unwrap(), None);
        c.kill().unwrap();
        let status = c.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            (status.code(), status.signal()),
            (None, Some(libc::SIGKILL))
        );
    }

    #[test]
    fn a_script_without_shebang_runs_with_sh() {
        let dir = std::env::temp_dir().join(format!("pinsight-spawn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("script");
        std::fs::write(&f, "echo from-sh \"$1\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut s = Spawn::new(&f);
        s.arg("z");
        assert_eq!(output(s).0.trim(), "from-sh z");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stamp_mask_and_inherited_fd() {
        let (r, w) = crate::process::pipe().unwrap();
        let keep = crate::process::pipe().unwrap();
        let mut s = Spawn::new("sh");
        s.arg("-c")
            .arg(format!(
                "grep Cpus_allowed_list /proc/self/status | cut -f2; [ -e /proc/self/fd/{} ] && echo kept",
                keep.1.as_raw_fd()
            ))
            .affinity_words(vec![1])
            .inherit_fd(keep.1.as_raw_fd())
            .stdout(Stdio::Fd(w));
        let before = monotonic_ns();
        let sp = s.spawn().unwrap();
        let after = monotonic_ns();
        drop(s);
        assert!(before <= sp.exec_ns && sp.exec_ns <= after);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(r), &mut out).unwrap();
        wait4(sp.pid).unwrap();
        assert_eq!(out.lines().next(), Some("0"), "{out}");
        assert!(out.contains("kept"), "{out}");
        // Our descriptor is still close-on-exec here.
        assert!(crate::fs::is_cloexec(&keep.1));
    }
}
