//! What every command shares: global flags, the error type with its exit
//! code convention, and loading the machine model.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag, bad
//! input file), and for commands that run a program, that program's status
//! (127 when it cannot be found, 128+N when killed by signal N). A closed
//! stdout pipe (`| head`) is no failure: output stops quietly and the
//! command ends with its own status (see `pinsight_term::out`).

use pinsight_model::declared::{DeclaredError, KindSpec};
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use std::path::PathBuf;

/// Flags accepted by every command (before or after the command name),
/// listed after each command's own under their own heading.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Global options")]
pub struct Globals {
    /// Read /sys and /proc under DIR instead of / (a recorded machine: DIR/sys, DIR/proc,
    /// as made by `pinsight snapshot` or hwloc-gather-topology), or from the .tar.gz
    /// that `pinsight snapshot OUT.tar.gz` writes.
    #[arg(
        long,
        global = true,
        value_name = "DIR|TAR.GZ",
        env = "PINSIGHT_FSROOT"
    )]
    pub fsroot: Option<PathBuf>,
    /// Read the machine from an hwloc XML export (`lstopo machine.xml`) instead of sysfs.
    #[arg(long, global = true, value_name = "FILE")]
    pub hwloc_xml: Option<PathBuf>,
    /// Print machine-readable JSON instead of human output.
    #[arg(long, global = true)]
    pub json: bool,
    /// Hide progress bars and warnings.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// The root [`Globals::fsroot`] opened, kept so a command that asks
    /// twice (the topology, then a file such as the hostname) does not
    /// open it twice: a `.tar.gz` recording would be unpacked again.
    #[arg(skip)]
    pub(crate) opened: std::sync::OnceLock<FsRoot>,
    /// Declare the core kinds and their order instead of discovering them, e.g.
    /// "0-3:P,4-7:E" (a VM whose host pinned vCPUs 0-3 to P-cores). Groups are
    /// CPULIST:NAME; P > E > L are known, other names are listed fastest first
    /// ("0-3:big,4-7:little"). Every usable CPU needs a kind. NAME@SPEED gives a
    /// kind a relative speed in (0, 1] ("0:P,1:E@0.5"): `emulate` slows its CPUs to
    /// it, and on a machine of one discovered kind it is also the kinds' capacity that
    /// topo, plan, slice, load and balance use.
    #[arg(long, global = true, value_name = "SPEC", env = "PINSIGHT_KINDS")]
    pub kinds: Option<String>,
    /// Whether `kinds` came from `$PINSIGHT_KINDS` (set by main; only the
    /// messages care).
    #[arg(skip)]
    pub kinds_from_env: bool,
    /// Whether `fsroot` came from `$PINSIGHT_FSROOT` (set by main from
    /// clap's value source; only the messages care).
    #[arg(skip)]
    pub fsroot_from_env: bool,
}

use crate::errors::{fsroot_usage, CliError};

impl Globals {
    /// The OS window these flags select (usage error if `--fsroot` is bad).
    pub fn fsroot(&self) -> Result<FsRoot, CliError> {
        if let Some(fs) = self.opened.get() {
            return Ok(fs.clone());
        }
        let fs = self.open_fsroot()?;
        Ok(self.opened.get_or_init(|| fs).clone())
    }

    fn open_fsroot(&self) -> Result<FsRoot, CliError> {
        let Some(p) = &self.fsroot else {
            return Ok(FsRoot::live());
        };
        // Say where a bad DIR came from: a stale exported variable is
        // harder to spot than a typo on the command line.
        let name = if self.fsroot_from_env {
            "PINSIGHT_FSROOT"
        } else {
            "--fsroot"
        };
        if p.is_file() {
            // An archive is unpacked into a private directory: the one
            // signal lifecycle removes it on SIGINT, SIGTERM and SIGHUP.
            pinsight_lifecycle::interrupt::install()
                .map_err(|e| CliError::runtime(format!("{name}: {e}")))?;
            pinsight_lifecycle::interrupt::add_restorer(pinsight_sys::archive::remove_unpacked_now);
        }
        let fs = FsRoot::at(p).map_err(|e| fsroot_usage(name, &e))?;
        // A directory without sys/ (a typo, one level too high) is not a
        // recorded machine: refuse it rather than show an empty one.
        if !fs.root().join("sys/devices/system/cpu").is_dir() {
            return Err(CliError::usage(format!(
                "{name} '{}': no sys/devices/system/cpu in it (expected a recorded machine: DIR/sys and DIR/proc, \
                 as `pinsight snapshot` or hwloc-gather-topology write)",
                crate::errors::shown_path(p)
            )));
        }
        Ok(fs)
    }

    /// The machine model: from `--hwloc-xml`, else discovered through
    /// [`Globals::fsroot`]; with `--kinds`, its kinds replaced by the
    /// declared ones (and a note saying so). Discovery warnings and the
    /// note go to stderr unless `--quiet`.
    pub fn topology(&self) -> Result<Topology, CliError> {
        self.topology_with(pinsight_topology::Needs::ALL)
    }

    /// [`Globals::topology`], discovering only what `needs` asks for
    /// beyond the CPUs (see [`pinsight_topology::discover_with`]).
    pub fn topology_with(&self, needs: pinsight_topology::Needs) -> Result<Topology, CliError> {
        use pinsight_topology::load::{load, LoadError, Origin};
        let spec = self.declared_kinds()?;
        let fs;
        let origin = match &self.hwloc_xml {
            Some(path) => Origin::HwlocXml(path),
            None => {
                fs = self.fsroot()?;
                Origin::Fs(&fs)
            }
        };
        let loaded = load(origin, needs, spec.as_ref()).map_err(|e| match e {
            LoadError::HwlocXml(e) => CliError::usage(crate::errors::shown(&e.to_string())),
            LoadError::Declared(e) => self.kinds_usage(&e),
        })?;
        let topo = loaded.topology;
        let found = loaded
            .discovered_kinds
            .map(|k| format!(" (discovery found {k})"))
            .unwrap_or_default();
        if !self.quiet {
            for w in &topo.warnings {
                eprintln!("pinsight: warning: {w}");
            }
            if let Some(spec) = &spec {
                eprintln!(
                    "{}",
                    wrap80(&format!(
                        "pinsight: kinds declared by {}, not discovered: {spec}{found}",
                        self.kinds_name()
                    ))
                );
            }
        }
        Ok(topo)
    }

    /// The `--kinds` declaration, parsed; `None` without one (an empty
    /// `$PINSIGHT_KINDS` is none). A bad one is a usage error naming the
    /// flag, or the variable when it came from there.
    pub fn declared_kinds(&self) -> Result<Option<KindSpec>, CliError> {
        match self.kinds.as_deref() {
            None => Ok(None),
            Some(text) if self.kinds_from_env && text.trim().is_empty() => Ok(None),
            Some(text) => KindSpec::parse(text)
                .map(Some)
                .map_err(|e| self.kinds_usage(&e)),
        }
    }

    /// Where the declaration came from, for messages.
    pub fn kinds_name(&self) -> &'static str {
        if self.kinds_from_env {
            "PINSIGHT_KINDS"
        } else {
            "--kinds"
        }
    }

    fn kinds_usage(&self, e: &DeclaredError) -> CliError {
        CliError::usage(format!(
            "{} '{}': {e}",
            self.kinds_name(),
            self.kinds.as_deref().unwrap_or_default()
        ))
    }

    /// The one refusal of work done on this machine only (running,
    /// pinning, measuring) when `--fsroot`, `$PINSIGHT_FSROOT` or
    /// `--hwloc-xml` describes another: `what` says the work ("sched
    /// re-pins threads"), `instead` what to do (may be empty).
    /// A recorded machine was given (`--fsroot`, `--hwloc-xml`, `--kinds`).
    pub fn recorded(&self) -> bool {
        self.fsroot.is_some() || self.hwloc_xml.is_some() || self.kinds.is_some()
    }

    pub fn require_live(&self, what: &str, instead: &str) -> Result<(), CliError> {
        let source = if self.hwloc_xml.is_some() {
            "--hwloc-xml"
        } else if self.fsroot_from_env {
            "PINSIGHT_FSROOT"
        } else if self.fsroot.is_some() {
            "--fsroot"
        } else {
            return Ok(());
        };
        Err(crate::errors::live_only(what, source, instead))
    }

    /// The big/small CPUs of this machine (those this process may use),
    /// refusing a recorded machine and a machine of one kind (exit 2).
    pub fn live_capacity(&self, what: &str) -> Result<pinsight_sched_model::Capacity, CliError> {
        self.require_live(
            &format!("'{what}' re-pins threads"),
            "use `pinsight simulate` to compare schedulers there",
        )?;
        let topo = self.topology()?;
        pinsight_sched::own_capacity(&topo).map_err(|e| crate::errors::capacity_error(what, e))
    }

    /// Prints a value as pretty JSON on stdout.
    pub fn print_json<T: serde::Serialize>(&self, value: &T) -> Result<(), CliError> {
        let s = serde_json::to_string_pretty(value)
            .map_err(|e| CliError::runtime(format!("JSON output: {e}")))?;
        println!("{s}");
        Ok(())
    }

    /// A command's result on stdout: `value` as pretty JSON with `--json`,
    /// else the text view `text` makes of it.
    pub fn print_json_or<T: serde::Serialize>(
        &self,
        value: &T,
        text: impl FnOnce() -> String,
    ) -> Result<(), CliError> {
        if self.json {
            return self.print_json(value);
        }
        print!("{}", text());
        Ok(())
    }
}

/// Checks, before any work, that `path` can be written, so a missing
/// directory, a directory in the way, a read-only file system or missing
/// permission is found now rather than after minutes of measuring. An
/// existing file is left untouched. `what` names the flag in the message.
pub fn check_output_file(path: &std::path::Path, what: &str) -> Result<(), CliError> {
    // As the write itself will be: a temporary file in the same directory
    // (never following a link at `path`, leaving nothing behind).
    pinsight_lifecycle::output::check(path).map_err(|e| unwritable(what, path, &e))
}

/// The usage error of an output file found unwritable before any work;
/// `what` names the flag.
pub fn unwritable(
    what: &str,
    path: &std::path::Path,
    e: &pinsight_lifecycle::output::OutputError,
) -> CliError {
    CliError::usage(format!(
        "{what}: cannot write {}: {} (nothing was measured)",
        path.display(),
        e.reason()
    ))
}

/// The progress bar on stderr (the one terminal drawing of
/// `pinsight_sys::progress::Progress`): shown past one second,
/// hidden with `--quiet` and when stderr is not a terminal; `--json`-only
/// runs still show it (it goes to stderr).
pub fn progress(g: &Globals) -> pinsight_term::progress::Bar {
    pinsight_term::progress::Bar::new(g.quiet)
}

use pinsight_term::wrap80;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_files_are_probed_without_a_trace() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // New file: accepted, not left behind.
        check_output_file(&d.join("new.html"), "--out new").unwrap();
        assert!(!d.join("new.html").exists());
        // Existing file: accepted, untouched.
        std::fs::write(d.join("old.json"), "keep").unwrap();
        check_output_file(&d.join("old.json"), "--out old").unwrap();
        assert_eq!(std::fs::read_to_string(d.join("old.json")).unwrap(), "keep");
        // A dangling link: its target is not left behind, the link stays.
        std::os::unix::fs::symlink(d.join("target.html"), d.join("link.html")).unwrap();
        check_output_file(&d.join("link.html"), "--out link").unwrap();
        assert!(!d.join("target.html").exists());
        assert!(d.join("link.html").symlink_metadata().is_ok());
        // A missing directory: usage error naming the path and the flag.
        let e = check_output_file(&d.join("no/x.html"), "--out no/x").unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.starts_with("--out no/x: cannot write "),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("no/x.html: directory ") && e.message.contains("does not exist"),
            "{}",
            e.message
        );
        // A directory in the way.
        std::fs::create_dir(d.join("dir.json")).unwrap();
        let e = check_output_file(&d.join("dir.json"), "--out dir").unwrap_err();
        assert!(
            e.message.contains("dir.json: it is a directory"),
            "{}",
            e.message
        );
    }
}

/// The export files of an experiment (`compare`, `mix`), spelled as
/// hyperfine spells them. One definition, flattened into each command, so
/// the flags, their checks and the resume line agree everywhere.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExportArgs {
    /// Write the whole result as JSON (what --json prints: every raw run, the summaries and the
    /// verdict) to FILE.
    #[arg(long = "export-json", value_name = "FILE")]
    pub export_json: Option<std::path::PathBuf>,
    /// Write a CSV summary to FILE (compare: one row per arm, `#` lines first naming metrics
    /// unavailable everywhere; mix: scheduler, metric or program slowdown, value, 95% interval).
    #[arg(long = "export-csv", alias = "csv", value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Write a Markdown report to FILE.
    #[arg(long = "export-markdown", alias = "markdown", value_name = "FILE")]
    pub markdown: Option<std::path::PathBuf>,
    /// Write a self-contained HTML report (compare: box plots, CI bars, verdict) to FILE.
    #[arg(long = "export-html", alias = "html", value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

impl ExportArgs {
    /// The files asked for, each with its flag and format, in the order
    /// they are written.
    pub fn files(
        &self,
    ) -> Vec<(
        &'static str,
        pinsight_lifecycle::export::ExportFormat,
        &std::path::Path,
    )> {
        use pinsight_lifecycle::export::ExportFormat as F;
        [
            ("--export-json", F::Json, &self.export_json),
            ("--export-csv", F::Csv, &self.csv),
            ("--export-markdown", F::Markdown, &self.markdown),
            ("--export-html", F::Html, &self.html),
        ]
        .into_iter()
        .filter_map(|(flag, f, p)| p.as_deref().map(|p| (flag, f, p)))
        .collect()
    }

    /// The flags and paths, as the resume line repeats them.
    pub fn resume_words(&self) -> Vec<String> {
        self.files()
            .into_iter()
            .flat_map(|(flag, _, p)| {
                [
                    flag.to_string(),
                    pinsight_lifecycle::interrupt::shell_quote(&p.display().to_string()),
                ]
            })
            .collect()
    }

    /// Writes every file asked for, crash-safe; a failure is a runtime
    /// error naming the file.
    pub fn write(
        &self,
        result: &dyn pinsight_lifecycle::export::Exportable,
    ) -> Result<(), CliError> {
        let mut m = pinsight_lifecycle::export::ExportManager::new();
        for (_, format, path) in self.files() {
            m.add(format, path);
        }
        m.write_results(result)
            .map_err(|e| CliError::runtime(e.to_string()))
    }
}

/// The machine-wide lock of `pinsight COMMAND` (`pinsight-COMMAND.lock`,
/// see [`pinsight_sys::machine_lock`]): a second one that changes the
/// machine is refused at once, naming the first's PID (exit 1). Held
/// until dropped; the kernel drops it when its holder dies. A lock file
/// that cannot be opened at all (another user's, in a shared temporary
/// directory) is a warning, not a refusal: no one can block the command
/// by leaving a file there.
pub(crate) fn one_at_a_time(
    command: &str,
) -> Result<Option<pinsight_sys::machine_lock::MachineLock>, CliError> {
    match pinsight_sys::machine_lock::MachineLock::acquire(&format!("pinsight-{command}.lock")) {
        Ok(lock) => Ok(Some(lock)),
        Err(pinsight_sys::machine_lock::LockError::Held { pid, .. }) => {
            Err(CliError::runtime(format!(
            "another pinsight {command} runs (PID {}); one at a time on a machine: wait for it \
             to end",
            pid.map_or("unknown".to_string(), |p| p.to_string())
        )))
        }
        Err(e) => {
            eprintln!(
                "pinsight: warning: {command}: cannot take the machine-wide lock ({e}); \
                 another {command} could run at the same time"
            );
            Ok(None)
        }
    }
}
