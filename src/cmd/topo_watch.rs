//! `pinsight topo --watch`: Intel HFI capability changes as they arrive
//! (thermal generic netlink, `pinsight_topology::hfi`), one line per CPU
//! (`pinsight_topology::view::hfi`), or JSON Lines with `--json`; the
//! loop is `pinsight_topology::hfi_watch`.
//!
//! Stops after `--count N` changes or after `--duration DURATION` (exit 0), on
//! SIGINT, SIGTERM or SIGHUP through the one signal lifecycle
//! (`pinsight_lifecycle::interrupt`: output flushed, exit 128 + N, 130
//! for Ctrl-C), or when the reader of stdout goes away (`| head`: exit 0,
//! as a closed pipe is no failure).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_lifecycle::interrupt;
use pinsight_term::wrap80;
use pinsight_topology::hfi_watch::{self, OpenError, WatchOptions};
use pinsight_topology::view::hfi;
use std::time::Duration;

/// The `--watch` flags of `pinsight topo`.
#[derive(clap::Args, Debug, Default)]
// `--count` and `--duration` require this group, not `--watch` itself: clap
// lets a required flag be missing when it conflicts with one given
// (`--explain`), a group it holds to.
#[command(group(clap::ArgGroup::new("watching").args(["watch"])))]
pub struct WatchArgs {
    /// Watch this machine's dynamic capacity (Intel HFI): print each CPU's
    /// performance and efficiency capability change (0-1020; performance 0:
    /// do not schedule here) as the kernel announces it, until Ctrl-C.
    /// Listening turns HFI on (Linux 6.9+ enables it only while someone
    /// listens). Needs the live machine and the kernel's "thermal" netlink
    /// family.
    #[arg(long)]
    pub watch: bool,
    /// With --watch: stop after N CPU changes.
    #[arg(long, value_name = "N", requires = "watching", value_parser = crate::values::stop_count)]
    pub count: Option<u64>,
    /// With --watch: stop after DURATION (e.g. 30s, 5m).
    #[arg(long, alias = "for", value_name = "DURATION", requires = "watching", value_parser = crate::values::positive_duration)]
    pub duration: Option<Duration>,
}

/// Runs `topo --watch`.
pub fn run(args: &WatchArgs, g: &Globals) -> CmdResult {
    if g.hwloc_xml.is_some() {
        return Err(refuse("--hwloc-xml"));
    }
    // No event can ever come on a recording or without HFI: say so and
    // stop at once, rather than wait forever (`--count 1` would never be
    // reached).
    let watcher = hfi_watch::open_live(&g.fsroot()?).map_err(|e| match e {
        OpenError::Recorded { .. } => refuse("--fsroot"),
        e => CliError::runtime(format!("topo --watch: {e}")),
    })?;
    let topo = g.topology()?;
    // The one signal lifecycle: this thread ends the watch and the process
    // (128 + N) once the signal's descriptor wakes the netlink wait (the
    // guard taken before the handlers: a signal between them would end
    // the process before this thread could).
    let _main = interrupt::main_handles_exit();
    let wake = interrupt::stopped_fd().map_err(|e| {
        CliError::runtime(format!("topo --watch: cannot set up Ctrl-C handling: {e}"))
    })?;
    if !g.quiet {
        eprintln!("{}", hfi::watching(watcher.family().id));
    }
    let opts = WatchOptions {
        count: args.count,
        duration: args.duration,
        json: g.json,
    };
    let mut warn = |w: String| {
        if !g.quiet {
            eprintln!(
                "{}",
                wrap80(&format!("pinsight: warning: topo --watch: {w}"))
            );
        }
    };
    let woken = hfi_watch::watch_live(watcher, wake, &topo, &opts, &mut warn)
        .map_err(|e| CliError::runtime(format!("topo --watch: {e}")))?;
    Ok(match interrupt::stopped() {
        Some(sig) if woken => pinsight_lifecycle::exit::signal_code(sig),
        _ => 0,
    })
}

/// `--watch` on a recorded machine: refused, naming the flag to drop.
fn refuse(flag: &str) -> CliError {
    CliError::usage(format!(
        "topo --watch listens to this machine's kernel: it cannot run with {flag} \
         (a recorded machine sends no events; drop {flag})"
    ))
}
