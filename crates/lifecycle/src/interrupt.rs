//! One signal lifecycle for every command that runs programs: SIGINT,
//! SIGTERM and SIGHUP stop the experiment, are passed on to the whole
//! program tree, every registered restorer runs (governors, memory
//! policies), the main thread finishes (restores affinities, keeps the
//! journal, prints the resume line) and the process ends with 128 + N.
//!
//! How it works: the handler only writes the signal number to a self-pipe
//! (the one async-signal-safe thing worth doing; signal-safety(7)); a
//! dedicated thread reads it and does the rest with ordinary Rust code:
//!
//! 1. records the signal ([`stopped`], [`wait`] wake up at once, and
//!    [`stopped_fd`] becomes readable);
//! 2. passes it on to every watched program: process groups of their own
//!    ([`watch_group`]; a terminal's Ctrl-C does not reach them), and,
//!    while [`watch_descendants`] is held, every descendant of pinsight
//!    (with `PR_SET_CHILD_SUBREAPER` the orphans of a program are
//!    pinsight's children, so this is the whole tree; prctl(2));
//! 3. SIGKILLs groups registered with a grace once it has passed;
//! 4. runs the registered restorers ([`add_restorer`]) exactly once,
//!    then the hook ([`set_hook`]);
//! 5. if the main thread handles the exit ([`main_handles_exit`]), waits
//!    (bounded) for [`main_finished`]; then dies by the same signal, so a
//!    shell sees 128 + N;
//! 6. unless the main thread owns the exit ([`main_owns_exit`]: a
//!    launcher that waits for its program and exits with the program's
//!    status, as a shell does): then pinsight does not die of the signal,
//!    and every later one is passed on too while the guard lives.
//!
//! A signal ignored when [`install`] is called (SIGHUP under `nohup`, and
//! SIGINT for a background job of a non-interactive shell) stays ignored.

use pinsight_sys::{procfs, signals, FsRoot};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The signals that stop an experiment.
pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How long the main thread may take to finish its report once the
/// cleanup is done.
const MAIN_GRACE: Duration = Duration::from_secs(20);
/// How long the cleanup thread lets a main thread that has finished exit
/// with 128 + N before the signal ends the process (a loaded host can hold
/// a thread off the CPU for a second or more).
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Why the signal lifecycle could not be installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterruptError {
    #[error("signal handling: pipe: {0}")]
    Pipe(String),
    #[error("signal handling: thread: {0}")]
    Thread(String),
    #[error("signal handling: sigaction({signal}): {reason}")]
    Sigaction { signal: i32, reason: String },
}

/// The signal that arrived (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// (cleanup done, main thread done); guards [`CHANGED`].
static STATE: Mutex<(bool, bool)> = Mutex::new((false, false));
static CHANGED: Condvar = Condvar::new();
static GROUPS: Mutex<Vec<(libc::pid_t, Option<Duration>)>> = Mutex::new(Vec::new());
static DESCENDANTS: AtomicUsize = AtomicUsize::new(0);
static MAIN: AtomicUsize = AtomicUsize::new(0);
/// Live [`main_owns_exit`] guards.
static OWNS: AtomicUsize = AtomicUsize::new(0);
static RESTORERS: Mutex<Vec<Restorer>> = Mutex::new(Vec::new());
static HOOK: Mutex<Option<fn(i32)>> = Mutex::new(None);
/// The signal came from the terminal: pinsight's own process group got it.
static FROM_TERMINAL: AtomicBool = AtomicBool::new(false);
static INSTALLED: OnceLock<Result<(), InterruptError>> = OnceLock::new();
/// The pipe behind [`stopped_fd`]: (read end, write end).
static STOPPED_PIPE: OnceLock<Result<(OwnedFd, OwnedFd), InterruptError>> = OnceLock::new();

/// Puts back what an experiment changed; returns one line per failure.
pub type Restorer = fn() -> Vec<String>;

/// Locks ignoring poison: cleanup must work even after a panic elsewhere.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs the handlers and the cleanup thread (once per process; later
/// calls return the first result).
pub fn install() -> Result<(), InterruptError> {
    install_handlers()?;
    THREAD.get_or_init(start_thread).clone()
}

/// Installs the handlers only: a signal waits in the self-pipe until the
/// cleanup thread starts ([`install`], [`start_when_signalled`], or
/// [`wait_exited`] when one arrives). For a launcher that only waits for its
/// program (`run`): a thread that waits for a signal that never comes
/// cost 0.2 ms of a 2.7 ms start-up and exit on a loaded 2-CPU machine
/// (its creation, and the exit that must reap it).
pub fn install_handlers() -> Result<(), InterruptError> {
    INSTALLED.get_or_init(install_once).clone()
}

/// Waits until process `pid` has exited (leaving it to be reaped),
/// starting the cleanup thread as soon as a signal arrives meanwhile
/// (after [`install_handlers`] alone): the thread then handles the
/// waiting signal and every later one as [`install`]'s would have, and
/// the wait goes on. Without a pidfd (Linux before 5.3) the thread is
/// started first.
pub fn wait_exited(pid: libc::pid_t) {
    if THREAD.get().is_none() {
        let watch = READ_END
            .get()
            .and_then(|m| lock(m).as_ref().and_then(|fd| fd.try_clone().ok()));
        let pidfd = pinsight_sys::process::pidfd_open(pid).ok();
        match (watch, pidfd) {
            (Some(watch), Some(pidfd)) => loop {
                match pinsight_sys::process::poll_first_readable(&[pidfd.as_fd(), watch.as_fd()]) {
                    Some(0) => break,
                    Some(_) => {
                        let _ = start_when_signalled();
                        break;
                    }
                    None => continue,
                }
            },
            _ => {
                let _ = start_when_signalled();
            }
        }
    }
    pinsight_sys::process::wait_exited_keep(pid);
}

/// Starts the cleanup thread if it has not started: it then handles a
/// signal waiting in the self-pipe as [`install`]'s thread would have.
pub fn start_when_signalled() -> Result<(), InterruptError> {
    THREAD.get_or_init(start_thread).clone()
}

/// The cleanup thread, once.
static THREAD: OnceLock<Result<(), InterruptError>> = OnceLock::new();
/// The self-pipe's read end until the cleanup thread takes it.
static READ_END: OnceLock<Mutex<Option<OwnedFd>>> = OnceLock::new();

fn start_thread() -> Result<(), InterruptError> {
    let Some(r) = READ_END.get().and_then(|m| lock(m).take()) else {
        return Err(InterruptError::Pipe("no self-pipe".into()));
    };
    std::thread::Builder::new()
        .name("pinsight-interrupt".into())
        .spawn(move || cleanup_thread(r))
        .map(|_| ())
        .map_err(|e| InterruptError::Thread(e.to_string()))
}

fn install_once() -> Result<(), InterruptError> {
    let r = signals::self_pipe().map_err(|e| InterruptError::Pipe(e.to_string()))?;
    let _ = READ_END.set(Mutex::new(Some(r)));
    for sig in SIGNALS {
        signals::write_to_self_pipe_on(sig).map_err(|e| InterruptError::Sigaction {
            signal: sig,
            reason: e.to_string(),
        })?;
    }
    Ok(())
}

/// The signal that stopped the experiment, if one did.
pub fn stopped() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// A descriptor that becomes readable once a stopping signal has arrived
/// (at once if one already did), for a wait on other descriptors too
/// (`poll(2)` on a socket and this): the one lifecycle's signal, seen by
/// code that cannot wait on [`wait`]'s condition variable. Installs the
/// lifecycle first. Nothing reads it: it stays readable.
pub fn stopped_fd() -> Result<BorrowedFd<'static>, InterruptError> {
    install()?;
    let pipe = STOPPED_PIPE
        .get_or_init(|| {
            pinsight_sys::process::pipe().map_err(|e| InterruptError::Pipe(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)?;
    if stopped().is_some() {
        mark_stopped_fd();
    }
    Ok(pipe.0.as_fd())
}

/// Makes [`stopped_fd`] readable, if it was asked for (one byte, once).
fn mark_stopped_fd() {
    static MARKED: AtomicBool = AtomicBool::new(false);
    if let Some(Ok((_, write))) = STOPPED_PIPE.get() {
        if !MARKED.swap(true, Ordering::SeqCst) {
            let _ = nix::unistd::write(write, &[1]);
        }
    }
}

/// Sleeps up to `timeout`, returning early with the signal when one
/// arrives (or at once when one already did).
pub fn wait(timeout: Duration) -> Option<i32> {
    wait_for_state(timeout, |_| stopped())
}

/// Main thread: waits until the cleanup thread has passed the signal on,
/// killed what had to be killed and run the restorers. False on timeout.
pub fn wait_for_cleanup(timeout: Duration) -> bool {
    wait_for_state(timeout, |st| st.0.then_some(())).is_some()
}

/// Waits up to `timeout` for `ready` to give a value, asking it again
/// each time [`STATE`] changes ([`CHANGED`]), with the state locked;
/// `None` when the time is up first.
fn wait_for_state<T>(
    timeout: Duration,
    mut ready: impl FnMut(&(bool, bool)) -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    let mut st = lock(&STATE);
    loop {
        if let Some(v) = ready(&st) {
            return Some(v);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        st = CHANGED
            .wait_timeout(st, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// Registers a restorer, run once by the cleanup thread on a signal.
pub fn add_restorer(r: Restorer) {
    let mut rs = lock(&RESTORERS);
    if !rs.contains(&r) {
        rs.push(r);
    }
}

/// A function the cleanup thread runs after the restorers and before the
/// process ends (e.g. flush a journal, or hand over to the main thread).
/// Replaces any previous hook.
pub fn set_hook(hook: fn(signal: i32)) {
    *lock(&HOOK) = Some(hook);
}

/// A program's own process group, watched while this lives.
#[must_use = "the group is watched only while the guard lives"]
pub struct GroupWatch(libc::pid_t);

/// Watches process group `pgid`: a signal is passed on to it and, with
/// `kill_after`, the group is SIGKILLed once that grace has passed. If a
/// signal already arrived (it raced with the spawn), the group gets it now.
pub fn watch_group(pgid: libc::pid_t, kill_after: Option<Duration>) -> GroupWatch {
    lock(&GROUPS).push((pgid, kill_after));
    if let Some(sig) = stopped() {
        let _ = pinsight_sys::process::kill_group(pgid, sig);
        if kill_after.is_some() {
            let _ = pinsight_sys::process::kill_group(pgid, libc::SIGKILL);
        }
    }
    GroupWatch(pgid)
}

impl Drop for GroupWatch {
    fn drop(&mut self) {
        let mut g = lock(&GROUPS);
        if let Some(i) = g.iter().position(|&(p, _)| p == self.0) {
            g.remove(i);
        }
    }
}

/// Every descendant of pinsight watched while this lives.
#[must_use = "descendants are watched only while the guard lives"]
pub struct DescendantsWatch(());

/// Watches every descendant of this process: a signal is passed on to
/// each (found through `/proc/PID/task/TID/children`). Make this process
/// a child subreaper first so orphans stay in the tree.
pub fn watch_descendants() -> DescendantsWatch {
    DESCENDANTS.fetch_add(1, Ordering::SeqCst);
    if let Some(sig) = stopped() {
        signal_descendants(sig);
    }
    DescendantsWatch(())
}

impl Drop for DescendantsWatch {
    fn drop(&mut self) {
        DESCENDANTS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The main thread finishes the experiment itself after a signal (its
/// report, the resume line, its exit code); the cleanup thread waits for
/// [`main_finished`] (at most 20 s; dropping the guard counts as
/// finished) before the process dies by the signal. Take the guard before
/// [`install`]: a signal that comes between the two finds no guard, and
/// the process dies of it before the main thread can say anything.
#[must_use = "the main thread handles the exit only while the guard lives"]
pub struct MainExit {
    /// From [`main_owns_exit`].
    owns: bool,
}

/// See [`MainExit`].
pub fn main_handles_exit() -> MainExit {
    MAIN.fetch_add(1, Ordering::SeqCst);
    MainExit { owns: false }
}

/// The main thread waits for its program and ends with the program's
/// status (`pinsight run`, as a shell runs a command): a signal is passed
/// on to the watched programs (every one while the guard lives, not only
/// the first) and the restorers run, but pinsight does not die of it; its
/// program decides. After the guard is dropped a signal ends pinsight as
/// usual.
pub fn main_owns_exit() -> MainExit {
    OWNS.fetch_add(1, Ordering::SeqCst);
    MAIN.fetch_add(1, Ordering::SeqCst);
    MainExit { owns: true }
}

impl Drop for MainExit {
    /// The main thread is done (also on an error path): see [`main_finished`].
    fn drop(&mut self) {
        if self.owns {
            OWNS.fetch_sub(1, Ordering::SeqCst);
        } else {
            main_finished();
        }
        MAIN.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Main thread: the report is out; the process may end.
pub fn main_finished() {
    lock(&STATE).1 = true;
    CHANGED.notify_all();
}

/// Every live descendant of this process (children first).
pub fn descendants() -> Vec<i32> {
    let fs = FsRoot::live();
    let mut out: Vec<i32> = Vec::new();
    let mut queue = vec![pinsight_sys::process::getpid()];
    while let Some(pid) = queue.pop() {
        for tid in procfs::tids(&fs, pid) {
            for c in procfs::task_children(&fs, pid, tid).unwrap_or_default() {
                if !out.contains(&c) && out.len() < 1 << 16 {
                    out.push(c);
                    queue.push(c);
                }
            }
        }
    }
    out
}

/// Sends `sig` to every descendant, but not twice: after a terminal's
/// signal (Ctrl-C), those in pinsight's own process group got it already.
fn signal_descendants(sig: i32) {
    let own = pinsight_sys::process::getpgid(pinsight_sys::process::getpid());
    let from_terminal = FROM_TERMINAL.load(Ordering::SeqCst);
    for pid in descendants() {
        if from_terminal && own.is_some() && pinsight_sys::process::getpgid(pid) == own {
            continue;
        }
        let _ = pinsight_sys::process::kill(pid, sig);
    }
}

/// Stops the experiment now, as if `sig` had arrived, from ordinary code
/// (never from a signal handler): passes it on, runs the restorers once.
/// Returns the restore failures.
pub fn stop_now(sig: i32) -> Vec<String> {
    let first = SIGNAL
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    // Taking the lock orders this after a waiter's check of the signal.
    drop(lock(&STATE));
    CHANGED.notify_all();
    let sig = stopped().unwrap_or(sig);
    if first {
        mark_stopped_fd();
        pass_on(sig);
    }
    let restorers: Vec<Restorer> = std::mem::take(&mut *lock(&RESTORERS));
    restorers.into_iter().flat_map(|r| r()).collect()
}

/// Passes `sig` on to the watched groups and descendants, then SIGKILLs
/// the groups registered with a grace once it has passed.
fn pass_on(sig: i32) {
    let groups: Vec<(libc::pid_t, Option<Duration>)> = lock(&GROUPS).clone();
    for &(g, _) in &groups {
        let _ = pinsight_sys::process::kill_group(g, sig);
    }
    if DESCENDANTS.load(Ordering::SeqCst) > 0 {
        signal_descendants(sig);
    }
    let Some(grace) = groups.iter().filter_map(|&(_, k)| k).max() else {
        return;
    };
    let start = Instant::now();
    loop {
        // A group's registration ends once its run is reaped.
        let live: Vec<(libc::pid_t, Option<Duration>)> = lock(&GROUPS)
            .iter()
            .copied()
            .filter(|g| g.1.is_some() && groups.contains(g))
            .collect();
        for &(g, k) in &live {
            if k.is_some_and(|k| start.elapsed() >= k) {
                let _ = pinsight_sys::process::kill_group(g, libc::SIGKILL);
            }
        }
        if live.is_empty() || start.elapsed() >= grace {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn cleanup_thread(read: OwnedFd) {
    // Blocks until the first signal; EOF or an error means the pipe is
    // gone and there is nothing to do.
    let Some((sig, from_terminal)) = signals::next_signal_origin(&read) else {
        return;
    };
    FROM_TERMINAL.store(from_terminal, Ordering::SeqCst);
    for failure in stop_now(sig) {
        eprintln!("pinsight: {failure}");
    }
    lock(&STATE).0 = true;
    CHANGED.notify_all();
    let hook = *lock(&HOOK);
    if let Some(h) = hook {
        h(sig);
    }
    if OWNS.load(Ordering::SeqCst) > 0 {
        // The main thread ends the process with its program's status; pass
        // later signals on while it waits, and die of one that comes after.
        while let Some((sig, from_terminal)) = signals::next_signal_origin(&read) {
            if OWNS.load(Ordering::SeqCst) == 0 {
                signals::die_by(sig);
                std::process::exit(crate::exit::signal_code(sig));
            }
            FROM_TERMINAL.store(from_terminal, Ordering::SeqCst);
            pass_on(sig);
        }
        return;
    }
    // The main thread may have finished already (it sees the signal at
    // once, the flag being set by the handler, while this thread was
    // still running the restorers): its guard is gone then, but it has
    // marked itself finished, and it is exiting with 128 + N. Dying now
    // would race that exit (seen: the report printed, then the process
    // killed by the signal), so that counts as done too.
    let grace = if MAIN.load(Ordering::SeqCst) > 0 {
        MAIN_GRACE
    } else {
        Duration::ZERO
    };
    let main_done = wait_for_state(grace, |st| st.1.then_some(())).is_some();
    if main_done {
        // The main thread now exits with 128 + N; give it time to do so
        // rather than racing it with the re-raised signal (the fallback
        // for a main thread that never exits: it costs nothing otherwise,
        // the exit ends this thread too).
        std::thread::sleep(EXIT_GRACE);
    }
    signals::die_by(sig);
    // Only reached if the signal could not kill the process.
    std::thread::sleep(Duration::from_secs(1));
    std::process::exit(crate::exit::signal_code(sig));
}

/// `s` as one word for a POSIX shell (XCU 2.2.2, single quotes), for the
/// resume line printed after a stop: as is when it has only characters no
/// shell treats specially.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("pinsight-x.jsonl"), "pinsight-x.jsonl");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$HOME;rm"), "'$HOME;rm'");
    }

    /// The child side of [`a_signal_makes_stopped_fd_readable`]: in a
    /// process of its own, since the signal ends the process.
    const STOPPED_FD_CHILD: &str = "PINSIGHT_TEST_STOPPED_FD_CHILD";

    #[test]
    fn a_signal_makes_stopped_fd_readable() {
        if std::env::var_os(STOPPED_FD_CHILD).is_some() {
            let _main = main_handles_exit();
            let fd = stopped_fd().unwrap();
            let early = pinsight_sys::process::poll_readable(fd, Some(Duration::ZERO)).unwrap();
            pinsight_sys::process::kill(pinsight_sys::process::getpid(), libc::SIGTERM).unwrap();
            let woken =
                pinsight_sys::process::poll_readable(fd, Some(Duration::from_secs(20))).unwrap();
            println!(
                "STOPPED_FD early={early} woken={woken} signal={:?}",
                stopped()
            );
            // Still readable for a second look (nothing consumes it).
            let again = pinsight_sys::process::poll_readable(fd, Some(Duration::ZERO)).unwrap();
            println!("STOPPED_FD again={again}");
            std::process::exit(crate::exit::signal_code(stopped().unwrap_or(0)));
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "interrupt::tests::a_signal_makes_stopped_fd_readable",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(STOPPED_FD_CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("STOPPED_FD early=false woken=true signal=Some(15)"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("STOPPED_FD again=true"), "{stdout}");
        assert_eq!(out.status.code(), Some(143), "{stdout}");
    }

    /// The child side of [`a_main_thread_done_before_the_cleanup_thread_looks_still_exits_128_plus_n`].
    const DONE_FIRST_CHILD: &str = "PINSIGHT_TEST_MAIN_DONE_FIRST_CHILD";

    /// Holds the cleanup thread in its restorers while the main thread
    /// sees the signal, finishes and drops its guard.
    fn slow_restorer() -> Vec<String> {
        std::thread::sleep(Duration::from_millis(300));
        Vec::new()
    }

    #[test]
    fn a_main_thread_done_before_the_cleanup_thread_looks_still_exits_128_plus_n() {
        if std::env::var_os(DONE_FIRST_CHILD).is_some() {
            let main = main_handles_exit();
            install().unwrap();
            add_restorer(slow_restorer);
            pinsight_sys::process::kill(pinsight_sys::process::getpid(), libc::SIGTERM).unwrap();
            while stopped().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Finished while the cleanup thread is still restoring; then
            // slow to exit, as a main thread printing on a loaded host.
            drop(main);
            std::thread::sleep(Duration::from_millis(600));
            println!("MAIN_EXITS");
            std::process::exit(crate::exit::signal_code(libc::SIGTERM));
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "interrupt::tests::a_main_thread_done_before_the_cleanup_thread_looks_still_exits_128_plus_n",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DONE_FIRST_CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(143),
            "{:?}: {stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("MAIN_EXITS"), "{stdout}");
    }

    #[test]
    fn descendants_are_found_through_proc() {
        use std::os::unix::process::CommandExt;
        let mut c = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let me = c.id() as i32;
        let fs = FsRoot::live();
        let t0 = Instant::now();
        let mut grandchildren = Vec::new();
        while grandchildren.is_empty() && t0.elapsed() < Duration::from_secs(5) {
            grandchildren = procfs::task_children(&fs, me, me).unwrap_or_default();
            std::thread::sleep(Duration::from_millis(10));
        }
        let found = descendants();
        // Only this test's group: other tests' children are not ours to kill.
        let _ = pinsight_sys::process::kill_group(me, libc::SIGKILL);
        let _ = c.wait();
        assert!(found.contains(&me), "{found:?}");
        assert!(!grandchildren.is_empty(), "sh never started sleep");
        for g in &grandchildren {
            assert!(found.contains(g), "{g} not in {found:?}");
        }
    }
}
