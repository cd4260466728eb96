//! `pinsight topo --watch`: Intel HFI capability changes as they arrive
//! (thermal generic netlink, `pinsight_topology::hfi`), one line per CPU
//! (`pinsight_topology::view::hfi`), or JSON Lines with `--json`.
//!
//! Stops after `--count N` changes or after `--duration DURATION` (exit 0), on
//! SIGINT, SIGTERM or SIGHUP through the one signal lifecycle
//! (`pinsight_lifecycle::interrupt`: output flushed, exit 128 + N, 130
//! for Ctrl-C), or when the reader of stdout goes away (`| head`: exit 0,
//! as a closed pipe is no failure).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_lifecycle::interrupt;
use pinsight_model::Topology;
use pinsight_term::wrap80;
use pinsight_topology::hfi::{Batch, CapabilityTable, HfiError, HfiWatcher};
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

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
    let fs = live_root(g)?;
    let topo = g.topology()?;
    // The one signal lifecycle: this thread ends the watch and the process
    // (128 + N) once the signal's descriptor wakes the netlink wait.
    let wake = interrupt::stopped_fd().map_err(|e| {
        CliError::runtime(format!("topo --watch: cannot set up Ctrl-C handling: {e}"))
    })?;
    let _main = interrupt::main_handles_exit();
    let watcher = match HfiWatcher::open(&fs) {
        Ok(w) => w,
        Err(HfiError::Recorded { .. }) => return Err(refuse("--fsroot")),
        Err(e) => {
            return Err(CliError::runtime(format!(
                "topo --watch: HFI unavailable: {e}"
            )))
        }
    };
    if !g.quiet {
        let fam = watcher.family();
        eprintln!(
            "{}",
            wrap80(&format!(
                "pinsight: watching HFI capability changes (netlink family \"thermal\", id {}, \
                 group \"event\"; listening turns HFI on where the CPU has it). Ctrl-C stops.",
                fam.id
            ))
        );
    }
    let mut source = Live { watcher, wake };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let kind_of = |cpu: u32| kind_name(&topo, cpu);
    let woken = watch(&mut source, &mut out, args, g.json, &kind_of, &mut |w| {
        if !g.quiet {
            eprintln!(
                "{}",
                wrap80(&format!("pinsight: warning: topo --watch: {w}"))
            );
        }
    })?;
    drop(out);
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

/// This machine's root, where capacity events can arrive (else the
/// reason none ever will: a recording, or no HFI).
fn live_root(g: &Globals) -> Result<pinsight_sys::FsRoot, CliError> {
    if g.hwloc_xml.is_some() {
        return Err(refuse("--hwloc-xml"));
    }
    let fs = g.fsroot()?;
    if !fs.is_live() {
        return Err(refuse("--fsroot"));
    }
    // No event can ever come (no HFI): say so and stop at once, rather
    // than wait forever (`--count 1` would never be reached).
    if let Some(why) = pinsight_topology::hfi::no_hfi_flag(&fs) {
        return Err(CliError::runtime(format!(
            "topo --watch: no capacity event can arrive: {why}"
        )));
    }
    Ok(fs)
}

/// Where batches come from: the live watcher, or recorded bytes in tests.
trait Source {
    fn next(&mut self, timeout: Duration) -> Result<Batch, HfiError>;
}

struct Live {
    watcher: HfiWatcher,
    /// Readable once a stopping signal arrived ([`interrupt::stopped_fd`]).
    wake: BorrowedFd<'static>,
}

impl Source for Live {
    fn next(&mut self, timeout: Duration) -> Result<Batch, HfiError> {
        self.watcher.next_batch(timeout, Some(self.wake))
    }
}

/// The name of `cpu`'s kind, when the model knows it.
fn kind_name(topo: &Topology, cpu: u32) -> Option<String> {
    let k = topo.cpu(cpu as usize)?.kind?;
    topo.kinds.get(k).map(|k| k.name.clone())
}

/// The watch loop: prints each change, stops on count, deadline, wake-up
/// or a closed stdout. True when a wake-up (a signal) ended it.
fn watch(
    source: &mut impl Source,
    out: &mut impl Write,
    args: &WatchArgs,
    json: bool,
    kind_of: &dyn Fn(u32) -> Option<String>,
    warn: &mut dyn FnMut(String),
) -> Result<bool, CliError> {
    let deadline = args.duration.map(|d| Instant::now() + d);
    let mut table = CapabilityTable::new();
    let mut seen = 0u64;
    loop {
        let Some(timeout) = time_left(deadline) else {
            return Ok(false);
        };
        let changes = match source.next(timeout) {
            Ok(Batch::Changes(c)) => c,
            Ok(Batch::TimedOut) => continue,
            Ok(Batch::Woken) => return Ok(true),
            Ok(Batch::Lost) => {
                warn(
                    "the kernel dropped events (receive buffer full): some changes were missed"
                        .into(),
                );
                continue;
            }
            Err(HfiError::Parse(e)) => {
                warn(format!("skipped a malformed thermal message: {e}"));
                continue;
            }
            Err(e) => return Err(CliError::runtime(format!("topo --watch: {e}"))),
        };
        for c in changes {
            let previous = table.apply(c);
            let kind = kind_of(c.cpu);
            let text = if json {
                pinsight_topology::view::hfi::json(&c, previous.as_ref(), kind.as_deref())
            } else {
                pinsight_topology::view::hfi::line(&c, previous.as_ref(), kind.as_deref())
            };
            if !print_line(out, &text)? {
                return Ok(false);
            }
            seen += 1;
            if args.count.is_some_and(|n| seen >= n) {
                return Ok(false);
            }
        }
    }
}

/// How long the next wait may last: until the deadline (`None` once it
/// passed), else an hour.
fn time_left(deadline: Option<Instant>) -> Option<Duration> {
    match deadline {
        Some(d) => Some(d.saturating_duration_since(Instant::now())).filter(|l| !l.is_zero()),
        None => Some(Duration::from_secs(3600)),
    }
}

/// Writes one line at once; `false` when the reader has all it wanted
/// (a closed pipe: `| head`).
fn print_line(out: &mut impl Write, text: &str) -> Result<bool, CliError> {
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(CliError::runtime(format!(
            "topo --watch: writing standard output: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_topology::hfi::{self, CapabilityChange};
    use std::collections::VecDeque;

    /// Replays recorded datagrams, then reports `then` forever.
    struct Replay {
        datagrams: VecDeque<Vec<u8>>,
        then: Batch,
        waits: usize,
    }

    impl Source for Replay {
        fn next(&mut self, _timeout: Duration) -> Result<Batch, HfiError> {
            self.waits += 1;
            match self.datagrams.pop_front() {
                Some(d) => Ok(Batch::Changes(hfi::parse(&d)?)),
                None => Ok(self.then.clone()),
            }
        }
    }

    fn c(cpu: u32, performance: u32, efficiency: u32) -> CapabilityChange {
        CapabilityChange {
            cpu,
            performance,
            efficiency,
        }
    }

    fn replay(datagrams: Vec<Vec<u8>>, then: Batch) -> Replay {
        Replay {
            datagrams: datagrams.into(),
            then,
            waits: 0,
        }
    }

    fn kinds(cpu: u32) -> Option<String> {
        Some(if cpu < 2 { "P-core" } else { "E-core" }.to_string())
    }

    #[test]
    fn prints_each_change_with_what_it_replaced_until_woken() {
        let mut src = replay(
            vec![
                hfi::encode(0x1c, &[c(0, 1020, 400), c(2, 512, 1020)]),
                hfi::encode(0x1c, &[c(0, 0, 0)]),
            ],
            Batch::Woken,
        );
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        let woken = watch(
            &mut src,
            &mut out,
            &WatchArgs::default(),
            false,
            &kinds,
            &mut |w| warnings.push(w),
        )
        .unwrap();
        assert!(woken, "a wake-up (a signal) ended it");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "cpu 0  perf 1020  eff 400  (kind P-core)\n\
             cpu 2  perf 512  eff 1020  (kind E-core)\n\
             cpu 0  perf 1020 → 0  eff 400 → 0  do not schedule here  (kind P-core)\n"
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn count_stops_mid_datagram_and_json_is_one_object_per_line() {
        let mut src = replay(
            vec![hfi::encode(0x1c, &[c(0, 8, 8), c(1, 12, 12), c(2, 16, 16)])],
            Batch::Woken,
        );
        let mut out = Vec::new();
        let args = WatchArgs {
            watch: true,
            count: Some(2),
            duration: None,
        };
        assert!(!watch(&mut src, &mut out, &args, true, &|_| None, &mut |_| {}).unwrap());
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["cpu"], 1);
        assert_eq!(lines[1]["performance"], 12);
        assert!(lines[1]["previous"].is_null());
    }

    #[test]
    fn a_deadline_ends_a_quiet_watch() {
        let mut src = replay(vec![], Batch::TimedOut);
        let args = WatchArgs {
            watch: true,
            count: None,
            duration: Some(Duration::from_millis(30)),
        };
        watch(
            &mut src,
            &mut Vec::new(),
            &args,
            false,
            &|_| None,
            &mut |_| {},
        )
        .unwrap();
        assert!(src.waits >= 1);
    }

    #[test]
    fn lost_and_malformed_messages_are_warnings_not_the_end() {
        let mut garbage = hfi::encode(0x1c, &[c(0, 8, 8)]);
        garbage.truncate(garbage.len() - 3);
        let mut src = replay(
            vec![garbage, hfi::encode(0x1c, &[c(1, 4, 4)])],
            Batch::Woken,
        );
        src.datagrams.push_front(Vec::new());
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        watch(
            &mut src,
            &mut out,
            &WatchArgs::default(),
            false,
            &|_| None,
            &mut |w| warnings.push(w),
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "cpu 1  perf 4  eff 4\n");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0]
                .starts_with("skipped a malformed thermal message: netlink message at byte 0"),
            "{warnings:?}"
        );

        let mut src = replay(vec![], Batch::Lost);
        src.datagrams.push_back(Vec::new());
        let mut warnings = Vec::new();
        let args = WatchArgs {
            watch: true,
            count: None,
            duration: Some(Duration::from_millis(5)),
        };
        watch(
            &mut src,
            &mut Vec::new(),
            &args,
            false,
            &|_| None,
            &mut |w| warnings.push(w),
        )
        .unwrap();
        assert!(warnings.iter().all(|w| w.contains("dropped events")) && !warnings.is_empty());
    }

    /// A writer whose reader has gone.
    struct ClosedPipe;
    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_the_watch_quietly() {
        let mut src = replay(
            vec![hfi::encode(0x1c, &[c(0, 8, 8)])],
            Batch::Changes(vec![c(1, 1, 1)]),
        );
        let woken = watch(
            &mut src,
            &mut ClosedPipe,
            &WatchArgs::default(),
            false,
            &|_| None,
            &mut |_| {},
        )
        .unwrap();
        assert!(!woken);
        assert_eq!(src.waits, 1, "stopped at the first failed write");
    }
}
