//! Test support shared by every suite of the workspace (a dev-dependency
//! only; the layering check keeps it out of normal dependencies).
//!
//! Layout of the suites: each package has one integration-test binary,
//! `tests/tests.rs`, declaring every test file as a module (`autotests =
//! false`, a `[[test]] name = "integration"`); a file that must run alone
//! (it changes process-wide state) is a `[[test]]` of its own, with the
//! reason beside it in `Cargo.toml`. [`assert_every_test_file_compiled`]
//! fails for a test file no target compiles. The machines the suites read
//! come from [`fixtures`] (recorded ones unpacked from hwloc's tarballs,
//! synthetic ones written by [`synth`]); the CPUs a live test may use from
//! [`usable_cpus`].
//!
//! A test that cannot check what it is about on this machine must not
//! pass in silence. [`skip`] prints the reason to stderr *and* appends it
//! to a log next to the test binaries (`target/<profile>/pinsight-skips.log`);
//! `.ci/test` (README's test command) empties the log before the suite
//! and prints the count and the reasons after it, so a skip is visible in
//! every run, not only in captured output.
#![forbid(unsafe_code)]

pub mod elf;
pub mod fixtures;
pub mod premise;
pub mod progress;
pub mod synth;
pub mod topology;

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
/// (`PACKAGE/BINARY TEST: REASON`, the package as `cargo test` names it in
/// `CARGO_PKG_NAME`: every package's suite binary is `integration`). The
/// caller then returns from the test.
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
    let binary = match std::env::var("CARGO_PKG_NAME") {
        Ok(package) => format!("{package}/{binary}"),
        Err(_) => binary,
    };
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

/// Compares `actual` with the insta snapshot `tests/snapshots/<name>.snap`
/// of the calling package (`name` without a `.txt` ending). A changed
/// output fails the test and leaves a `.snap.new` beside it; accept it
/// with `cargo insta review` after reading the diff: a snapshot is a
/// claim that its content is right. The caller has `insta` among its
/// dev-dependencies.
#[macro_export]
macro_rules! golden {
    ($name:expr, $actual:expr $(,)?) => {{
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        let name: &str = $name;
        let name = name.trim_end_matches(".txt");
        settings.bind(|| insta::assert_snapshot!(name, $actual));
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

/// Writes the file `rel` (relative to `root`, a leading `/` allowed) with
/// `text`, making its directories: one file of a fake /sys or /proc.
pub fn put(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().expect("a file under the root"))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

/// A fresh directory holding `files` (relative path, text: see [`put`]),
/// and the [`pinsight_sys::FsRoot`] at it.
pub fn fake_root(files: &[(&str, &str)]) -> (tempfile::TempDir, pinsight_sys::FsRoot) {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (rel, text) in files {
        put(dir.path(), rel, text);
    }
    let fs = pinsight_sys::FsRoot::at(dir.path()).expect("a root at a directory");
    (dir, fs)
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

/// The CPUs `pid` may run on, as the kernel lists them
/// (`Cpus_allowed_list:` of `/proc/PID/status`, trimmed); `pid` may be
/// `"self"`.
pub fn allowed_list_of(pid: impl std::fmt::Display) -> String {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_else(|| panic!("no Cpus_allowed_list in {path}"))
        .trim()
        .to_string()
}

/// The CPUs this test process may run on (its affinity mask).
pub fn allowed_cpus() -> pinsight_cpuset::CpuSet {
    let list = allowed_list_of("self");
    pinsight_cpuset::CpuSet::parse_list(&list).unwrap_or_else(|e| panic!("{list}: {e}"))
}

/// The online CPUs (`/sys/devices/system/cpu/online`), `None` where the
/// file is missing or unreadable.
pub fn online_cpus() -> Option<pinsight_cpuset::CpuSet> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| pinsight_cpuset::CpuSet::parse_list(t.trim()).ok())
}

/// The CPUs this test may use, ascending: its affinity mask ∩ the online
/// CPUs (the mask alone where the online list cannot be read). Live tests
/// pin to these, never to hard-coded ids.
pub fn usable_cpus() -> Vec<usize> {
    let allowed = allowed_cpus();
    let online = online_cpus().unwrap_or_else(|| allowed.clone());
    allowed.intersection(&online).iter().collect()
}

/// The name libtest knows a test by, for re-running it alone
/// (`current_exe() NAME --exact`): `module` is the caller's
/// `module_path!()`, whose first segment is the test crate, so a test in a
/// module of a suite's one binary (`tests/tests.rs`) and one in a binary of
/// its own are both found.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, rest)) => format!("{rest}::{name}"),
        None => name.to_string(),
    }
}

/// Processes a test started, killed and reaped on every exit path (a
/// failed assertion included), so that no test leaves one behind.
pub struct Children(pub Vec<std::process::Child>);

impl Children {
    /// Their PIDs, in start order.
    pub fn pids(&self) -> Vec<u32> {
        self.0.iter().map(std::process::Child::id).collect()
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A process-wide lock for tests whose assertions are about time or CPU
/// shares (fair shares, prompt exits, speedups): holding it, a test runs
/// alone in its binary, so its sibling tests' busy programs never compete
/// for the CPUs it measures. A test that panicked while holding it does
/// not poison the others.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fails unless every `tests/*.rs` of the package at `manifest_dir` is
/// compiled: a module of the suite's binary (`mod NAME;` in `tests_rs`,
/// the text of `tests/tests.rs`) or a `[[test]]` target of its own (a
/// `path = "tests/NAME.rs"` line in `Cargo.toml`). With `autotests =
/// false`, a test file nobody declared would otherwise never run.
pub fn assert_every_test_file_compiled(manifest_dir: &str, tests_rs: &str) {
    let root = std::path::Path::new(manifest_dir);
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let targets: Vec<String> = manifest
        .lines()
        .filter_map(|l| l.trim().strip_prefix("path"))
        .filter_map(|l| l.trim().strip_prefix('='))
        .map(|l| l.trim().trim_matches('"').to_string())
        .collect();
    let modules: Vec<&str> = tests_rs
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .collect();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(root.join("tests")).expect("tests/") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        if name == "tests.rs"
            || modules.contains(&stem)
            || targets.iter().any(|t| *t == format!("tests/{name}"))
        {
            continue;
        }
        missing.push(name);
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "tests/{missing:?} compiled by no target: add `mod NAME;` to tests/tests.rs \
         (or a [[test]] with its path to Cargo.toml when it must run alone)"
    );
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
