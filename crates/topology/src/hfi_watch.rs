//! Watching HFI capability changes as they arrive (`topo --watch`): the
//! loop that reads batches from a [`Source`] (the live [`HfiWatcher`], or
//! recorded datagrams in tests), keeps the [`CapabilityTable`], writes one
//! line per change ([`view::hfi`](crate::view::hfi): text or JSON Lines)
//! and stops after a count of changes, at a deadline, on a wake-up (a
//! signal's descriptor) or when the reader of the output goes away; and
//! [`performance_feed`], the same changes as a channel for a scheduler
//! (`sched`).

use crate::hfi::{Batch, CapabilityTable, HfiError, HfiWatcher};
use pinsight_model::Topology;
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// When a watch stops, and how it writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    /// Stop after this many CPU changes.
    pub count: Option<u64>,
    /// Stop once this long has passed.
    pub duration: Option<Duration>,
    /// One JSON object per line instead of text.
    pub json: bool,
}

/// Why a watch failed.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The watcher failed (other than one malformed message, a warning).
    #[error(transparent)]
    Hfi(#[from] HfiError),
    /// Writing a line failed (other than a closed pipe, the end).
    #[error("writing standard output: {0}")]
    Write(io::Error),
}

/// Why a watch cannot start ([`open_live`]).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A recorded machine sends no events.
    #[error("{} is a recorded machine: capacity events come only from the live kernel", root.display())]
    Recorded { root: std::path::PathBuf },
    /// No event can ever come on this machine (no HFI), the reason.
    #[error("no capacity event can arrive: {0}")]
    NoEvents(String),
    /// The kernel's thermal events cannot be listened to.
    #[error("HFI unavailable: {0}")]
    Unavailable(HfiError),
}

/// The watcher of this machine's capacity changes, subscribed: refused
/// on a recorded machine, and where no event can ever come (no HFI)
/// rather than waiting forever.
pub fn open_live(root: &pinsight_sys::FsRoot) -> Result<HfiWatcher, OpenError> {
    if !root.is_live() {
        return Err(OpenError::Recorded {
            root: root.root().to_path_buf(),
        });
    }
    if let Some(why) = crate::hfi::no_hfi_flag(root) {
        return Err(OpenError::NoEvents(why));
    }
    HfiWatcher::open(root).map_err(OpenError::Unavailable)
}

/// Where batches come from: the live watcher, or recorded bytes in tests.
pub trait Source {
    /// The next batch, waiting at most `timeout`.
    fn next(&mut self, timeout: Duration) -> Result<Batch, HfiError>;
}

/// The live watcher with the descriptor that ends its wait (readable once
/// a stopping signal arrived).
#[derive(Debug)]
pub struct Live<'a> {
    /// The subscribed watcher.
    pub watcher: HfiWatcher,
    /// The wake-up descriptor.
    pub wake: BorrowedFd<'a>,
}

impl Source for Live<'_> {
    fn next(&mut self, timeout: Duration) -> Result<Batch, HfiError> {
        self.watcher.next_batch(timeout, Some(self.wake))
    }
}

/// The name of `cpu`'s kind, when the model knows it.
pub fn kind_name(topo: &Topology, cpu: u32) -> Option<String> {
    let k = topo.cpu(cpu as usize)?.kind?;
    topo.kinds.get(k).map(|k| k.name.clone())
}

/// The watch loop: writes each change to `out`, stops on count, deadline,
/// wake-up or a closed `out`; lost and malformed messages go to `warn`.
/// True when a wake-up (a signal) ended it.
pub fn watch(
    source: &mut impl Source,
    out: &mut impl Write,
    opts: &WatchOptions,
    kind_of: &dyn Fn(u32) -> Option<String>,
    warn: &mut dyn FnMut(String),
) -> Result<bool, WatchError> {
    let deadline = opts.duration.map(|d| Instant::now() + d);
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
            Err(e) => return Err(e.into()),
        };
        for c in changes {
            let previous = table.apply(c);
            let kind = kind_of(c.cpu);
            let text = if opts.json {
                crate::view::hfi::json(&c, previous.as_ref(), kind.as_deref())
            } else {
                crate::view::hfi::line(&c, previous.as_ref(), kind.as_deref())
            };
            if !print_line(out, &text)? {
                return Ok(false);
            }
            seen += 1;
            if opts.count.is_some_and(|n| seen >= n) {
                return Ok(false);
            }
        }
    }
}

/// [`watch`] on this machine: the changes `watcher` hears written to
/// stdout, each CPU named by its kind in `topo`, until `wake` (a
/// signal's descriptor) is readable, the count or the deadline; lost and
/// malformed messages go to `warn`. True when a wake-up ended it.
pub fn watch_live(
    watcher: HfiWatcher,
    wake: BorrowedFd<'_>,
    topo: &Topology,
    opts: &WatchOptions,
    warn: &mut dyn FnMut(String),
) -> Result<bool, WatchError> {
    let kind_of = |cpu: u32| kind_name(topo, cpu);
    let mut source = Live { watcher, wake };
    watch(&mut source, &mut io::stdout().lock(), opts, &kind_of, warn)
}

/// What the hardware says a CPU can do, as a stream for a scheduler:
/// `(cpu, performance)` for each HFI change, sent from a thread of its own
/// that ends at the first error or once the receiver is dropped (nobody
/// waits for it). Where no change can come (a CPU without HFI, a VM, a
/// kernel or machine that cannot be listened to), the reason.
pub fn performance_feed(
    root: &pinsight_sys::FsRoot,
) -> Result<std::sync::mpsc::Receiver<(u32, u32)>, String> {
    if let Some(why) = crate::hfi::no_hfi_flag(root) {
        return Err(why);
    }
    let mut w = HfiWatcher::open(root).map_err(|e| e.to_string())?;
    let (tx, rx) = std::sync::mpsc::channel::<(u32, u32)>();
    std::thread::spawn(move || loop {
        match w.next_batch(Duration::from_secs(1), None) {
            Ok(Batch::Changes(changes)) => {
                for c in changes {
                    if tx.send((c.cpu, c.performance)).is_err() {
                        return;
                    }
                }
            }
            Ok(Batch::TimedOut | Batch::Woken | Batch::Lost) => {}
            Err(_) => return,
        }
    });
    Ok(rx)
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
fn print_line(out: &mut impl Write, text: &str) -> Result<bool, WatchError> {
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(WatchError::Write(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hfi::{self, CapabilityChange};
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

    fn until(duration: Duration) -> WatchOptions {
        WatchOptions {
            duration: Some(duration),
            ..WatchOptions::default()
        }
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
            &WatchOptions::default(),
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
        let opts = WatchOptions {
            count: Some(2),
            duration: None,
            json: true,
        };
        assert!(!watch(&mut src, &mut out, &opts, &|_| None, &mut |_| {}).unwrap());
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
        let opts = until(Duration::from_millis(30));
        watch(&mut src, &mut Vec::new(), &opts, &|_| None, &mut |_| {}).unwrap();
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
            &WatchOptions::default(),
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
        let opts = until(Duration::from_millis(5));
        watch(&mut src, &mut Vec::new(), &opts, &|_| None, &mut |w| {
            warnings.push(w)
        })
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
            &WatchOptions::default(),
            &|_| None,
            &mut |_| {},
        )
        .unwrap();
        assert!(!woken);
        assert_eq!(src.waits, 1, "stopped at the first failed write");
    }

    #[test]
    fn no_feed_where_no_change_can_come() {
        let (d, root) = pinsight_testkit::fake_root(&[("proc/cpuinfo", "flags\t\t: fpu sse2\n")]);
        let why = performance_feed(&root).unwrap_err();
        assert!(why.contains("no 'hfi' flag"), "{why}");
        std::fs::write(d.path().join("proc/cpuinfo"), "flags\t\t: fpu hfi\n").unwrap();
        let why = performance_feed(&root).unwrap_err();
        assert!(why.contains("is a recorded machine"), "{why}");
    }

    #[test]
    fn a_watch_opens_only_on_the_live_machine() {
        let (_d, root) = pinsight_testkit::fake_root(&[("proc/cpuinfo", "flags\t\t: fpu hfi\n")]);
        let e = open_live(&root).unwrap_err();
        assert!(matches!(e, OpenError::Recorded { .. }), "{e:?}");
        assert!(e.to_string().contains("is a recorded machine"), "{e}");
        let line = crate::view::hfi::watching(27);
        assert!(line.contains("id 27,"), "{line}");
        assert!(line.lines().all(|l| l.chars().count() <= 80), "{line}");
    }
}
