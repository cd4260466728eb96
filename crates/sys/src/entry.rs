//! The process's entry point without std's runtime set-up: the `main`
//! that C's start-up code calls, for a binary built `#![no_main]`.
//!
//! Why: before a Rust `fn main` runs, std's runtime (`std::rt`) installs
//! a stack-overflow handler, which reads and parses `/proc/self/maps`
//! (through glibc's `pthread_getattr_np`: `fopen`, `getline`, `sscanf`),
//! maps an alternate signal stack and installs `SIGSEGV`/`SIGBUS`
//! handlers. On the 2-vCPU test VM that is about 0.09 ms of every start
//! (a hello-world: 0.667 ms with it, 0.578 ms without; `/usr/bin/true`
//! 0.575 ms), and `pinsight run cpus:0 -- true` is measured against
//! `taskset -c 0 true` (`.ci/bench-start`). [`run`] does the rest of what
//! std's start does, in the same way:
//!
//! - standard input, output and error that the parent left closed are
//!   opened on `/dev/null` (one `poll` finds them), so that no file
//!   pinsight opens later becomes its standard output;
//! - `SIGPIPE` is ignored, so that a write to a closed pipe is an error
//!   pinsight handles (it prints through `pinsight_term::out`) instead of
//!   a death that skips its clean-up; std's `Command` and [`crate::spawn`]
//!   restore the default in every program pinsight starts;
//! - a panic ends the process with status 101 after the panic message,
//!   and the end flushes std's buffered standard output
//!   ([`std::process::exit`] does).
//!
//! What is given up: a stack overflow ends in a plain `SIGSEGV` without
//! std's "has overflowed its stack" line, and a panic on the main thread
//! names it `<unnamed>` rather than `main`.
//!
//! Arguments and environment need nothing: on glibc std reads them from
//! the loader's `.init_array` call, before `main`.

use std::ffi::c_int;

/// Defines the process's C `main` (the binary is `#![no_main]`), which
/// calls [`run`] with `body`. The unsafe attribute (`no_mangle`) is
/// written here, in the one crate that may hold unsafe code, and reviewed
/// with it; it expands in the binary, whose `forbid(unsafe_code)` does not
/// look inside another crate's macro (rustc's lints skip external macro
/// expansions), so the binary's own source stays free of unsafe.
#[macro_export]
macro_rules! entry_point {
    ($body:path) => {
        #[unsafe(no_mangle)]
        extern "C" fn main(
            _argc: ::std::ffi::c_int,
            _argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            $crate::entry::run($body)
        }
    };
}

/// Prepares the process as std's start does (see the module), runs
/// `body`, and exits: with 0 when `body` returns, 101 when it panics.
pub fn run(body: fn()) -> c_int {
    open_closed_stdio();
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory
    // effect; no handler is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let code = match std::panic::catch_unwind(body) {
        Ok(()) => 0,
        Err(_) => 101,
    };
    std::process::exit(code)
}

/// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed, as
/// std's start does (`sanitize_standard_fds`): one `poll` reports a
/// closed one as `POLLNVAL`; where `poll` itself fails, `fcntl(F_GETFD)`
/// asks each.
fn open_closed_stdio() {
    let mut fds: [libc::pollfd; 3] = std::array::from_fn(|fd| libc::pollfd {
        fd: fd as c_int,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd for the call's length.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0;
    for (fd, p) in fds.iter().enumerate() {
        let fd = fd as c_int;
        let closed = if polled {
            p.revents & libc::POLLNVAL != 0
        } else {
            // SAFETY: F_GETFD reads a descriptor's flags; no memory is passed.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            flags == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        };
        if closed {
            // The lowest free descriptor is `fd` itself (the ones below it
            // are open or were opened in this loop).
            // SAFETY: a NUL-terminated path literal.
            let opened = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if opened != fd {
                // No /dev/null, or not the descriptor expected: std aborts
                // here; a process whose standard streams cannot be made
                // safe must not go on.
                std::process::abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the environment of this test binary started again by
    /// [`run_exits_101_on_a_panic_and_ignores_sigpipe`]: which body
    /// [`child`] runs through [`run`].
    const CHILD: &str = "PINSIGHT_ENTRY_TEST_CHILD";

    /// Runs only in the started copy: [`run`] with a body that panics, or
    /// that exits 0 when SIGPIPE is ignored (3 when it is not).
    #[test]
    fn child() {
        match std::env::var(CHILD).as_deref() {
            Ok("panic") => {
                run(|| panic!("a panic in the entry test"));
            }
            Ok("sigpipe") => {
                // The harness's own start (std's) ignored it: back to the
                // default, so that only `run` can ignore it again.
                // SAFETY: setting a disposition to SIG_DFL.
                unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
                run(|| {
                    // SAFETY: reads the disposition (a null new action).
                    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                    unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) };
                    std::process::exit(if old.sa_sigaction == libc::SIG_IGN {
                        0
                    } else {
                        3
                    })
                });
            }
            _ => {}
        }
    }

    #[test]
    fn run_exits_101_on_a_panic_and_ignores_sigpipe() {
        // The status, and whether the harness got to its summary (it does
        // not when `run` ends the process itself).
        let status = |body: &str| {
            let o = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "entry::tests::child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, body)
                .stderr(std::process::Stdio::null())
                .output()
                .unwrap();
            let summary = String::from_utf8_lossy(&o.stdout).contains("test result");
            (o.status.code(), summary)
        };
        assert_eq!(
            status("panic"),
            (Some(101), false),
            "a panic ends the process with std's status, from run"
        );
        assert_eq!(
            status("sigpipe"),
            (Some(0), false),
            "SIGPIPE is ignored, as under std's start"
        );
    }

    #[test]
    fn open_descriptors_are_left_as_they_are() {
        // The test process has its standard streams open: nothing opened.
        // SAFETY: F_GETFD only reads flags.
        let before: Vec<c_int> = (0..3)
            .map(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) })
            .collect();
        open_closed_stdio();
        let after: Vec<c_int> = (0..3)
            .map(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) })
            .collect();
        assert_eq!(before, after);
    }
}
