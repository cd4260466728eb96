//! Test support shared by every suite of the workspace (a dev-dependency
//! only; the layering check keeps it out of normal dependencies).
//!
//! A test that cannot check what it is about on this machine must not
//! pass in silence. [`skip`] prints the reason to stderr *and* appends it
//! to a log next to the test binaries (`target/<profile>/pinsight-skips.log`);
//! `.ci/test` (README's test command) empties the log before the suite
//! and prints the count and the reasons after it, so a skip is visible in
//! every run, not only in captured output.
#![forbid(unsafe_code)]

pub mod fixtures;
pub mod synth;

use std::io::Write;
use std::path::PathBuf;

/// The log every skip is appended to: `pinsight-skips.log` in the profile
/// directory of the running test binary (`target/release/deps/x-HASH` →
/// `target/release/`), or `$PINSIGHT_SKIP_LOG` when set.
pub fn skip_log() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PINSIGHT_SKIP_LOG") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    let profile = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent()?
    } else {
        deps
    };
    Some(profile.join("pinsight-skips.log"))
}

/// Records that the calling test did not check what it is about, and why:
/// one line on stderr (`skipped: REASON`) and one in [`skip_log`]
/// (`BINARY TEST: REASON`). The caller then returns from the test.
///
/// Writing the log is best effort (a read-only target directory must not
/// fail the test a second time); stderr always gets the reason.
pub fn skip(reason: impl std::fmt::Display) {
    let reason = reason.to_string().replace('\n', " ");
    eprintln!("skipped: {reason}");
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|n| strip_hash(&n).to_string())
        .unwrap_or_else(|| "?".into());
    if let Some(log) = skip_log() {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            // One write per line: lines of parallel tests do not interleave
            // (O_APPEND writes of a few hundred bytes are atomic on Linux).
            let _ = f.write_all(format!("{binary} {test}: {reason}\n").as_bytes());
        }
    }
}

/// `layering-0123abcd` → `layering`.
fn strip_hash(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem
        }
        _ => name,
    }
}

/// Skips the calling test (see [`skip`]) and returns from it.
///
/// ```
/// fn needs_two_cpus(usable: usize) {
///     if usable < 2 {
///         pinsight_testkit::skip_test!("needs two usable CPUs (have {usable})");
///     }
///     // ...
/// }
/// # needs_two_cpus(4);
/// ```
#[macro_export]
macro_rules! skip_test {
    ($($arg:tt)*) => {{
        $crate::skip(format!($($arg)*));
        return;
    }};
}

/// Copies the directory tree `from` into `to` (created if missing), links
/// kept as links with their targets unchanged: recorded sysfs trees are
/// full of relative links that discovery must see as links. Tests copy a
/// recorded machine into a temporary directory with it and alter files.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for e in entries {
        let e = e.expect("directory entry");
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ty = e.file_type().expect("file type");
        if ty.is_symlink() {
            let target = std::fs::read_link(&src).expect("link target");
            std::os::unix::fs::symlink(target, &dst)
                .unwrap_or_else(|e| panic!("{}: {e}", dst.display()));
        } else if ty.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
    }
}

/// CPU time the hypervisor took from this machine so far (all CPUs: the
/// `steal` column of /proc/stat), in ms; 0 where there is none. perf's
/// task-clock counts a task's stolen time and the kernel's CPU-time
/// accounting does not (paravirt steal accounting), so in a VM under host
/// load the two differ by at most the steal accrued meanwhile: tests that
/// cross-check them allow that much.
pub fn steal_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: f64 = stat
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let hz = match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(n)) if n > 0 => n as f64,
        _ => 100.0,
    };
    ticks * 1000.0 / hz
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stripped_from_binary_names() {
        assert_eq!(strip_hash("layering-0123456789abcdef"), "layering");
        assert_eq!(strip_hash("run-live"), "run-live");
        assert_eq!(strip_hash("pinsight"), "pinsight");
    }

    #[test]
    fn a_skip_reaches_the_log() {
        let dir = tempfile_dir();
        let log = dir.join("skips.log");
        // Only this test sets the variable; the other test does not read it.
        std::env::set_var("PINSIGHT_SKIP_LOG", &log);
        skip("line one\nand two");
        std::env::remove_var("PINSIGHT_SKIP_LOG");
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // The test's name when the harness runs it on its own thread.
        assert!(text.ends_with(": line one and two\n"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pinsight-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
