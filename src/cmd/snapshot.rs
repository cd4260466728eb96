//! `pinsight snapshot OUT`: record this machine's /sys and /proc files that
//! pinsight reads, for bug reports and for planning elsewhere with
//! `--fsroot OUT`. The work is in `pinsight_topology::snapshot`; this file
//! is flags, messages and exit codes.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_topology::snapshot::{self, Error, Options};
use std::path::PathBuf;

/// Record the /sys and /proc files pinsight reads into a directory (or a .tar.gz or
/// .tar.bz2) that `--fsroot` accepts.
///
/// Exactly what topology discovery reads is recorded (plus the full listing of
/// each directory it enumerates) and a `pinsight-snapshot.json` with the version,
/// date, host name and source. Works from `--fsroot` too (re-snapshot a recording).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight snapshot mybox/\n  pinsight snapshot mybox.tar.gz --extra\n  \
                        pinsight --fsroot mybox/ topo\n  pinsight --fsroot mybox.tar.gz topo"
)]
pub struct Args {
    /// Directory to write, or a file name ending in .tar.gz/.tgz (gzip) or
    /// .tar.bz2/.tbz2 (bzip2) for an archive (holding one directory named after it);
    /// other archive names (.tar, .tar.xz, .zip...) are refused.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Also record cpufreq (/sys/devices/system/cpu/cpu*/cpufreq/*) and powercap/RAPL
    /// (/sys/class/powercap/**) files, for reading frequencies and energy offline.
    #[arg(long)]
    pub extra: bool,
    /// Replace an existing archive, or the snapshot in a non-empty directory (its sys/,
    /// proc/ and metadata; other files there are kept).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    if let Some(xml) = &g.hwloc_xml {
        return Err(CliError::usage(format!(
            "snapshot records sysfs and procfs; '{}' is already a portable file (use --fsroot DIR to re-snapshot a recording)",
            xml.display()
        )));
    }
    let fs = g.fsroot()?;
    let opts = Options {
        extra: args.extra,
        force: args.force,
    };
    let report =
        snapshot::snapshot_with_progress(&fs, &args.out, &opts, &mut crate::cli::progress(g))
            .map_err(|e| cli_error(&e))?;
    g.print_json_or(&report, || format!("{}\n", report.summary()))?;
    Ok(0)
}

/// The one-line message for a failed snapshot: a bad destination is a usage
/// error (with the advice naming `--force` where it helps), the rest runtime.
fn cli_error(e: &Error) -> CliError {
    let advice = match e {
        Error::ArchiveExists { .. } => "; pass --force to replace it",
        Error::DirectoryNotEmpty { .. } => {
            "; choose a new directory or pass --force to replace the snapshot in it"
        }
        _ => "",
    };
    CliError {
        code: if e.is_destination() { 2 } else { 1 },
        message: format!("snapshot: {e}{advice}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(out: &std::path::Path, force: bool) -> Args {
        Args {
            out: out.to_path_buf(),
            extra: false,
            force,
        }
    }

    #[test]
    fn exit_codes() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("sys/devices/system/cpu/cpu0")).unwrap();
        std::fs::write(src.path().join("sys/devices/system/cpu/online"), "0\n").unwrap();
        let g = Globals {
            fsroot: Some(src.path().to_path_buf()),
            quiet: true,
            json: true,
            ..Globals::default()
        };
        let out = tempfile::tempdir().unwrap();
        let snap = out.path().join("snap");
        assert_eq!(run(args(&snap, false), &g).unwrap(), 0);
        assert!(snap.join("sys/devices/system/cpu/online").is_file());
        assert_eq!(
            run(args(&snap, false), &g).unwrap_err().code,
            2,
            "non-empty OUT is a usage error"
        );
        assert_eq!(run(args(&snap, true), &g).unwrap(), 0);
        let unwritable = std::path::Path::new("/proc/pinsight-no-such-dir/x.tar.gz");
        assert_eq!(
            run(args(unwritable, false), &g).unwrap_err().code,
            1,
            "failing to write is a runtime error"
        );
        let xml = Globals {
            hwloc_xml: Some("box.xml".into()),
            ..Globals::default()
        };
        assert_eq!(
            run(args(&out.path().join("x"), false), &xml)
                .unwrap_err()
                .code,
            2
        );
    }
}
