//! Running the real `pinsight` binary the way a user does, and checking
//! what every invocation owes its caller: the exit status, what went to
//! stdout and stderr, and that nothing was left in the working directory.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root (fixtures live under it).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A recorded machine from hwloc's test suite (`--fsroot` fixture: its
/// tarball unpacked once per build directory by pinsight-testkit).
pub fn hwloc_fixture(name: &str) -> PathBuf {
    pinsight_testkit::fixtures::hwloc(name)
}

/// Every recorded machine directory (`--fsroot` fixtures), by name.
pub fn hwloc_fixtures() -> Vec<PathBuf> {
    pinsight_testkit::fixtures::hwloc_all()
}

/// An hwloc XML export (`--hwloc-xml` fixture).
pub fn xml_fixture(name: &str) -> PathBuf {
    repo().join("crates/topology/tests/fixtures/xml").join(name)
}

/// Every hwloc XML fixture.
pub fn xml_fixtures() -> Vec<PathBuf> {
    let dir = repo().join("crates/topology/tests/fixtures/xml");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    out.sort();
    out
}

/// A latency matrix measured elsewhere (core-to-core-latency's CSV).
pub fn latency_fixture(name: &str) -> PathBuf {
    repo().join("crates/latency/tests/fixtures").join(name)
}

/// A table of runs of tests/data/tune (a `--from` fixture), as an
/// argument.
pub fn tune_data(name: &str) -> String {
    repo()
        .join("tests/data/tune")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

/// What one invocation did. `cwd` is the (fresh, initially empty) working
/// directory it ran in, kept so written files can be read.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub cwd: tempfile::TempDir,
    pub argv: String,
}

impl Out {
    /// The first stderr line (where error messages go).
    pub fn first_err_line(&self) -> &str {
        self.stderr.lines().next().unwrap_or("")
    }

    /// stdout parsed as exactly one JSON document (panics, with the
    /// output, when it is anything else).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "{}: stdout is not one JSON document ({e}):\n{}\n--- stderr:\n{}",
                self.argv, self.stdout, self.stderr
            )
        })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.cwd.path().join(name)
    }

    /// Whether stderr says `phrase`, read as prose: notes are wrapped to
    /// the terminal width with a hanging indent, and where a line breaks
    /// depends on the paths in it (a CI checkout lives deeper than a
    /// developer's), so a phrase may straddle a break. Every line break
    /// with its indentation reads as one space here.
    pub fn says(&self, phrase: &str) -> bool {
        let flat = self
            .stderr
            .lines()
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        flat.contains(phrase)
    }
}

/// One invocation of `pinsight`, built up then [`Call::run`].
pub struct Call {
    args: Vec<OsString>,
    env: Vec<(String, OsString)>,
    may_write: BTreeSet<String>,
}

/// `pinsight ARGS...` with a clean environment (no PINSIGHT_FSROOT, PINSIGHT_KINDS,
/// PINSIGHT_EMULATION_STEALERS).
pub fn pinsight<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Call {
    Call {
        args: args.iter().map(|a| a.as_ref().to_os_string()).collect(),
        env: Vec::new(),
        may_write: BTreeSet::new(),
    }
}

impl Call {
    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Call {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// A file or directory this invocation was asked to create in its
    /// working directory (anything else found there afterwards fails).
    pub fn writes(mut self, name: &str) -> Call {
        self.may_write.insert(name.to_string());
        self
    }

    /// Runs in a fresh empty directory; asserts it holds nothing but the
    /// announced files afterwards.
    pub fn run(self) -> Out {
        let cwd = tempfile::tempdir().unwrap();
        let argv = format!(
            "pinsight {}",
            self.args
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pinsight"));
        cmd.args(&self.args)
            .current_dir(cwd.path())
            .stdin(Stdio::null())
            .env_remove("PINSIGHT_FSROOT")
            .env_remove("PINSIGHT_KINDS")
            .env_remove("PINSIGHT_EMULATION_STEALERS")
            .env("NO_COLOR", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("{argv}: cannot start: {e}"));
        let code = match out.status.code() {
            Some(c) => c,
            None => panic!("{argv}: pinsight itself was killed: {:?}", out.status),
        };
        let left: BTreeSet<String> = std::fs::read_dir(cwd.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let unexpected: Vec<&String> = left.difference(&self.may_write).collect();
        assert!(
            unexpected.is_empty(),
            "{argv}: left {unexpected:?} in the working directory (asked to write only {:?})",
            self.may_write
        );
        Out {
            code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            cwd,
            argv,
        }
    }
}

/// Runs and requires exit 0 (panics with both streams otherwise).
pub fn ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Out {
    pinsight(args).ok()
}

impl Call {
    /// [`Call::run`], which must exit 0 (panics with both streams
    /// otherwise).
    pub fn ok(self) -> Out {
        let o = self.run();
        assert_eq!(
            o.code, 0,
            "{}: exit {}\nstdout:\n{}\nstderr:\n{}",
            o.argv, o.code, o.stdout, o.stderr
        );
        o
    }
}

/// Whether a program is on PATH (for tests comparing with other tools).
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| is_exe(&d.join(program))))
}

fn is_exe(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The commands `pinsight --help` lists (so a newly wired command, e.g.
/// `compare`, is checked without editing this file).
pub fn listed_commands() -> Vec<String> {
    let o = ok(&["--help"]);
    let mut in_list = false;
    let mut out = Vec::new();
    for line in o.stdout.lines() {
        if line.starts_with("Commands:") {
            in_list = true;
            continue;
        }
        if in_list {
            if line.trim().is_empty() || !line.starts_with(' ') {
                break;
            }
            // "  topo      Show ..."; wrapped description lines are indented deeper.
            if line.starts_with("  ") && !line.starts_with("   ") {
                let name = line.split_whitespace().next().unwrap().to_string();
                if name != "help" {
                    out.push(name);
                }
            }
        }
    }
    out
}
