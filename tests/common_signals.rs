//! The signals a test delivers, at their default in the program it starts.

use std::process::Command;

/// Puts SIGINT, SIGQUIT, SIGHUP and SIGTERM at their default in the
/// program `c` starts, whatever this test process inherited.
///
/// pinsight, like a shell, keeps a signal ignored when it was ignored at
/// its start, and a test suite may be started with some ignored: a
/// background job of a non-interactive shell (`.ci/run &`) ignores SIGINT
/// and SIGQUIT (POSIX XCU 2.11), `nohup` ignores SIGHUP. A test of what a
/// signal does delivers it as `kill` or a terminal would to a program
/// started in the foreground.
pub fn at_default(c: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe; nothing else runs in the
    // child between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}
