//! What every command shares: global flags, the error type with its exit
//! code convention, and loading the machine model.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag, bad
//! input file), and for commands that run a program, that program's status
//! (127 when it cannot be found, 128+N when killed by signal N).

use pinsight_topology::{FsRoot, Topology};
use std::fmt;
use std::path::PathBuf;

/// Flags accepted by every command (before or after the command name).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Globals {
    /// Read /sys and /proc under DIR instead of / (a recorded machine: DIR/sys, DIR/proc,
    /// as made by `pinsight snapshot` or hwloc-gather-topology).
    #[arg(long, global = true, value_name = "DIR", env = "PINSIGHT_FSROOT")]
    pub fsroot: Option<PathBuf>,
    /// Read the machine from an hwloc XML export (`lstopo machine.xml`) instead of sysfs.
    #[arg(long, global = true, value_name = "FILE", conflicts_with = "fsroot")]
    pub hwloc_xml: Option<PathBuf>,
    /// Print machine-readable JSON instead of human output.
    #[arg(long, global = true)]
    pub json: bool,
    /// Hide progress bars and warnings.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// An error with the exit code it deserves.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

impl CliError {
    /// Bad input from the user: exit 2.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError { code: 2, message: message.into() }
    }
    /// Something failed while working: exit 1.
    pub fn runtime(message: impl Into<String>) -> CliError {
        CliError { code: 1, message: message.into() }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// What a command returns: the process exit code, or an error.
pub type CmdResult = Result<i32, CliError>;

impl Globals {
    /// The OS window these flags select (usage error if `--fsroot` is bad).
    pub fn fsroot(&self) -> Result<FsRoot, CliError> {
        match &self.fsroot {
            Some(p) => FsRoot::at(p).map_err(CliError::usage),
            None => Ok(FsRoot::live()),
        }
    }

    /// The machine model: from `--hwloc-xml`, else discovered through
    /// [`Globals::fsroot`]. Discovery warnings go to stderr unless `--quiet`.
    pub fn topology(&self) -> Result<Topology, CliError> {
        let topo = match &self.hwloc_xml {
            Some(path) => pinsight_topology::hwloc_xml::load(path).map_err(CliError::usage)?,
            None => pinsight_topology::discover(&self.fsroot()?),
        };
        if !self.quiet {
            for w in &topo.warnings {
                eprintln!("pinsight: warning: {w}");
            }
        }
        Ok(topo)
    }

    /// Prints a value as pretty JSON on stdout.
    pub fn print_json<T: serde::Serialize>(&self, value: &T) -> Result<(), CliError> {
        let s = serde_json::to_string_pretty(value).map_err(|e| CliError::runtime(format!("JSON output: {e}")))?;
        println!("{s}");
        Ok(())
    }
}
