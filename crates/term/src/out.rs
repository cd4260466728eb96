//! Writing to stdout and stderr without panicking: what the `pinsight`
//! binary's `print!`, `println!`, `eprint!` and `eprintln!` call.
//!
//! std's `print!` panics when the write fails, as it does when the reader
//! of a pipe has gone (`pinsight topo --json | head -1`: EPIPE, since Rust
//! ignores SIGPIPE). Here a closed pipe is not an error: the reader has
//! all it wanted. Output stops quietly, the command finishes its work
//! (journals, restored governors and affinities: no lost work, no trace)
//! and exits with its own status. Any other write failure (a full disk
//! behind `> file`) is remembered and reported once at exit, with exit 1
//! if the command had otherwise succeeded.
//!
//! Both streams carry text only, escaped on the way out: every control
//! character but a line break and a tab (the terminal's escape, BEL, `\r`,
//! C1) is written as a Rust escape (`\u{1b}`) by the one escaper of outside
//! text, `pinsight_sys::text::shown_lines`. A process named
//! `\e]0;PWN\a\e[2J`, a recording's `/proc` text or a spec typed on the
//! command line cannot retitle the terminal or clear it through any view,
//! warning or error. The views that move the cursor on purpose (`load`'s
//! refreshing screen, `latency`'s coloured heatmap on a terminal) say so
//! by printing through [`stdout_terminal`].
//!
//! Children that pinsight runs are not affected: std's `Command` gives them
//! the default SIGPIPE action back, so `run -- yes | head` ends `yes` as a
//! shell would.

use pinsight_sys::text::shown_lines;
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Set once a write to stdout failed; later output is dropped.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
/// The first stdout failure other than a closed pipe.
static STDOUT_ERROR: Mutex<Option<io::Error>> = Mutex::new(None);
/// Set once stderr failed: there is nowhere left to say anything.
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// The text of `args`, escaped (see the module's documentation).
fn escaped(args: fmt::Arguments<'_>) -> String {
    let text = match args.as_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(args.to_string()),
    };
    shown_lines(&text).into_owned()
}

/// `print!`: writes to stdout, escaped, quietly dropping output once it
/// failed.
pub fn stdout(args: fmt::Arguments<'_>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let text = escaped(args);
    if let Err(e) = io::stdout().lock().write_all(text.as_bytes()) {
        stdout_failed(e);
    }
}

/// [`stdout`] without the escaping, for a view whose control sequences are
/// its own (clearing the screen, colours), its outside text already
/// escaped by the caller.
pub fn stdout_terminal(args: fmt::Arguments<'_>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        stdout_failed(e);
    }
}

fn stdout_failed(e: io::Error) {
    STDOUT_GONE.store(true, Ordering::Relaxed);
    if e.kind() != io::ErrorKind::BrokenPipe {
        let mut slot = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
    }
}

/// `eprint!`: writes to stderr, escaped, ignoring failures (nowhere to
/// report them).
pub fn stderr(args: fmt::Arguments<'_>) {
    if STDERR_GONE.load(Ordering::Relaxed) {
        return;
    }
    let text = escaped(args);
    if io::stderr().lock().write_all(text.as_bytes()).is_err() {
        STDERR_GONE.store(true, Ordering::Relaxed);
    }
}

/// Flushes stdout and returns the exit status to use: `code`, or 1 when
/// stdout failed other than by a closed pipe and `code` was 0 (the failure
/// is said on stderr).
pub fn finish(code: i32) -> i32 {
    if !STDOUT_GONE.load(Ordering::Relaxed) {
        if let Err(e) = io::stdout().lock().flush() {
            stdout_failed(e);
        }
    }
    let failure = STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    match failure {
        Some(e) => {
            stderr(format_args!(
                "pinsight: error: writing standard output: {e}\n"
            ));
            if code == 0 {
                1
            } else {
                code
            }
        }
        None => code,
    }
}
