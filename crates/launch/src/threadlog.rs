//! The shim's thread log: which thread (by tid) took which place.
//!
//! With `--report` the watcher samples threads by polling `/proc`, so a
//! thread that ends between two polls is never seen, and numbering the
//! seen threads in order of first sight would give every later thread the
//! place of the one before it (the report would then call a correctly
//! placed thread DIFFERS). The shim therefore appends one record per
//! thread it pins to a memfd the launcher reads after the exit
//! (`PINSIGHT_THREAD_LOG_FD`, see `shim/pinsight_shim.c`), and the report
//! matches the sampled threads to their places by tid.

use crate::skip::place_of;
use crate::watch::ThreadRecord;
use pinsight_cpuset::CpuSet;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;

/// The variable naming the log's descriptor.
pub const ENV_THREAD_LOG_FD: &str = "PINSIGHT_THREAD_LOG_FD";

/// Reading stops here (the shim writes at most 2^20 records per image).
const MAX_BYTES: u64 = 64 << 20;

/// One thread the shim placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedThread {
    pub tid: i32,
    /// Created-thread index; `None`: the main thread moving to place 0.
    pub index: Option<usize>,
    /// The place it was given; `None`: skipped (the process mask).
    pub place: Option<usize>,
    /// The pin's errno (0: pinned).
    pub errno: i32,
}

/// What the shim logged of the program's images (index -2, -3, -4 in
/// the log; see `shim/pinsight_shim.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageEvent {
    /// The shim is active in a new image (the handshake).
    Loaded,
    /// The pinned program is about to execute in place.
    Exec,
    /// That exec failed: the image goes on.
    ExecFailed,
}

/// The records as `[tid, index, place, errno]`; a torn last one ignored.
fn words(bytes: &[u8]) -> impl Iterator<Item = [i32; 4]> + '_ {
    bytes.chunks_exact(16).map(|c| {
        let w = |i: usize| i32::from_ne_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
        [w(0), w(4), w(8), w(12)]
    })
}

/// The image events of the log, in order.
pub fn parse_events(bytes: &[u8]) -> Vec<ImageEvent> {
    words(bytes)
        .filter_map(|[_, index, _, _]| match index {
            -2 => Some(ImageEvent::Loaded),
            -3 => Some(ImageEvent::Exec),
            -4 => Some(ImageEvent::ExecFailed),
            _ => None,
        })
        .collect()
}

/// Why the shim did not place the threads of the program's last image,
/// from its events: it never became active in the program, or the program
/// executed in place an image it was not preloaded into (the loader of a
/// 32-bit or static program ignores it). `None`: it was active in the
/// image that ran last.
pub fn unreached(events: &[ImageEvent]) -> Option<&'static str> {
    let mut loaded = false;
    let mut exec = false;
    for e in events {
        match e {
            ImageEvent::Loaded => (loaded, exec) = (true, false),
            ImageEvent::Exec => exec = true,
            ImageEvent::ExecFailed => exec = false,
        }
    }
    if exec {
        Some("the program executed in place an image the pinning shim was not loaded into")
    } else if !loaded {
        Some("the pinning shim never became active in the program")
    } else {
        None
    }
}

/// The log's thread records, 16 bytes each (native-endian `i32` tid,
/// index, place, errno); a torn last record and image events are ignored.
pub fn parse(bytes: &[u8]) -> Vec<LoggedThread> {
    words(bytes)
        .filter(|&[_, index, _, _]| index >= -1)
        .map(|[tid, index, place, errno]| LoggedThread {
            tid,
            index: usize::try_from(index).ok(),
            place: usize::try_from(place).ok(),
            errno,
        })
        .filter(|t| t.tid > 0)
        .collect()
}

/// The log file, created for one launch.
pub struct ThreadLog(OwnedFd);

impl ThreadLog {
    /// An empty log (a memfd appended to by the shim).
    pub fn create() -> std::io::Result<ThreadLog> {
        pinsight_sys::fs::append_memfd(c"pinsight-threads").map(ThreadLog)
    }

    /// The descriptor the child inherits.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// The threads the shim placed (bounded).
    pub fn read(&self) -> std::io::Result<Vec<LoggedThread>> {
        self.read_all().map(|(threads, _)| threads)
    }

    /// The threads the shim placed and its image events (bounded).
    pub fn read_all(&self) -> std::io::Result<(Vec<LoggedThread>, Vec<ImageEvent>)> {
        let file = std::fs::File::from(self.0.try_clone()?);
        let len = file.metadata()?.len().min(MAX_BYTES);
        let mut buf = vec![0u8; len as usize];
        let mut at = 0;
        while at < buf.len() {
            match file.read_at(&mut buf[at..], at as u64)? {
                0 => break,
                n => at += n,
            }
        }
        buf.truncate(at);
        Ok((parse(&buf), parse_events(&buf)))
    }
}

/// What a thread should be on, given the launch's rules.
pub struct Expected<'a> {
    /// The plan's places (empty: nothing per thread).
    pub places: &'a [CpuSet],
    pub skip: &'a [usize],
    /// The main thread moves to place 0 only when a thread is created.
    pub lazy_main: bool,
    /// The main thread's tid (the pid).
    pub pid: i32,
}

/// Sets each record's `planned` place: the watcher's pin's place for a
/// thread the watcher pinned (`--follow`, or a takeover from the shim of
/// an image it cannot reach), else by tid from `log` when the shim logged
/// anything, else by order of first sight. A lazily pinned main thread that never
/// created a thread keeps the whole mask (`None` here, as for skipped
/// threads: the process mask).
pub fn assign_planned(records: &mut [ThreadRecord], log: &[LoggedThread], e: &Expected) {
    if e.places.is_empty() {
        return;
    }
    let by_tid: BTreeMap<i32, &LoggedThread> = log.iter().map(|t| (t.tid, t)).collect();
    let created = if log.is_empty() {
        records.iter().any(|r| r.tid != e.pid)
    } else {
        log.iter().any(|t| t.index.is_some())
            || records.iter().any(|r| r.tid != e.pid && r.follow.is_some())
    };
    for r in records.iter_mut() {
        r.planned = if let Some(pin) = r.follow.as_ref().filter(|_| r.tid != e.pid) {
            pin.place.and_then(|p| e.places.get(p).cloned())
        } else if r.tid == e.pid {
            (!e.lazy_main || created).then(|| e.places[0].clone())
        } else if log.is_empty() {
            r.index
                .checked_sub(1)
                .and_then(|i| place_of(i, e.skip, e.places.len()))
                .map(|p| e.places[p].clone())
        } else {
            // A thread the shim did not pin (not made by pthread_create)
            // keeps what it inherited: no place.
            by_tid
                .get(&r.tid)
                .and_then(|t| t.place)
                .and_then(|p| e.places.get(p).cloned())
        };
    }
}

/// The first pin the kernel refused, in words: from the watcher's pins
/// (`records`) or the shim's log. A thread that had already exited is no
/// refusal. `None`: every pin the plan asked for was made.
pub fn refusal(
    records: &[ThreadRecord],
    log: &[LoggedThread],
    places: &[CpuSet],
    process_mask: &CpuSet,
) -> Option<String> {
    let target = |place: Option<usize>| {
        place
            .and_then(|p| places.get(p))
            .unwrap_or(process_mask)
            .to_list_string()
    };
    let who = |tid: i32, index: Option<usize>| match index {
        None => format!("the main thread (tid {tid})"),
        Some(i) => format!("created thread #{i} (tid {tid})"),
    };
    if let Some((r, pin)) = records
        .iter()
        .find_map(|r| r.follow.as_ref().filter(|p| p.refused).map(|p| (r, p)))
    {
        let index = (r.index > 0).then(|| r.index - 1);
        return Some(format!(
            "the kernel refused to pin {} to CPUs {}: {}",
            who(r.tid, index),
            target(pin.place),
            pin.error.as_deref().unwrap_or("unknown error")
        ));
    }
    log.iter()
        .find(|t| t.errno != 0 && t.errno != libc::ESRCH)
        .map(|t| {
            format!(
                "the kernel refused to pin {} to CPUs {}: {}",
                who(t.tid, t.index),
                target(t.place),
                std::io::Error::from_raw_os_error(t.errno)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tid: i32, index: usize) -> ThreadRecord {
        ThreadRecord {
            tid,
            index,
            name: String::new(),
            first_seen_ms: 0.0,
            affinity: None,
            last_cpu: None,
            cpus_seen: CpuSet::new(),
            samples: 1,
            planned: None,
            follow: None,
        }
    }

    fn bytes(recs: &[[i32; 4]]) -> Vec<u8> {
        recs.iter()
            .flat_map(|r| r.iter().flat_map(|w| w.to_ne_bytes()))
            .collect()
    }

    #[test]
    fn refusals_are_named_and_exited_threads_are_not_refusals() {
        let places: Vec<CpuSet> = (0..2).map(CpuSet::single).collect();
        let mask = CpuSet::parse_list("0-1").unwrap();
        let mut r = rec(11, 1);
        r.follow = Some(crate::watch::FollowPin {
            place: Some(1),
            delay_max_ms: None,
            ran_unpinned_us: None,
            error: Some("No such process (os error 3)".into()),
            refused: false,
        });
        assert_eq!(refusal(std::slice::from_ref(&r), &[], &places, &mask), None);
        r.follow.as_mut().unwrap().refused = true;
        r.follow.as_mut().unwrap().error = Some("Operation not permitted (os error 1)".into());
        let why = refusal(&[r], &[], &places, &mask).unwrap();
        assert_eq!(
            why,
            "the kernel refused to pin created thread #0 (tid 11) to CPUs 1: Operation not permitted (os error 1)"
        );
        let log = parse(&bytes(&[
            [12, 0, 1, libc::ESRCH],
            [13, 1, -1, libc::EINVAL],
        ]));
        let why = refusal(&[], &log, &places, &mask).unwrap();
        assert!(
            why.starts_with("the kernel refused to pin created thread #1 (tid 13) to CPUs 0-1: "),
            "{why}"
        );
    }

    /// `places` for the program `pid`, nothing skipped, the main thread
    /// pinned lazily.
    fn lazy(places: &[CpuSet], pid: i32) -> Expected<'_> {
        Expected {
            places,
            skip: &[],
            lazy_main: true,
            pid,
        }
    }

    #[test]
    fn records_parse_and_a_torn_tail_is_ignored() {
        let mut b = bytes(&[[100, -1, 0, 0], [101, 0, 1, 0], [102, 1, -1, 1]]);
        b.extend_from_slice(&[1, 2, 3]);
        let log = parse(&b);
        assert_eq!(log.len(), 3);
        assert_eq!(log[0].index, None);
        assert_eq!((log[1].index, log[1].place), (Some(0), Some(1)));
        assert_eq!((log[2].place, log[2].errno), (None, 1));
    }

    #[test]
    fn threads_are_matched_by_tid_when_one_was_never_sampled() {
        // Created thread 0 (tid 101, place 1) exited before the first
        // sample: the watcher saw main (100) and tid 102 as #1.
        let places: Vec<CpuSet> = (0..3).map(CpuSet::single).collect();
        let log = parse(&bytes(&[[100, -1, 0, 0], [101, 0, 1, 0], [102, 1, 2, 0]]));
        let mut seen = vec![rec(100, 0), rec(102, 1)];
        let e = lazy(&places, 100);
        assert_eq!(seen[1].planned, None);
        assign_planned(&mut seen, &log, &e);
        assert_eq!(seen[0].planned, Some(CpuSet::single(0)), "main moved");
        assert_eq!(
            seen[1].planned,
            Some(CpuSet::single(2)),
            "by tid, not order"
        );
        // Without a log: order of first sight (what the watcher pinned).
        assign_planned(&mut seen, &[], &e);
        assert_eq!(seen[1].planned, Some(CpuSet::single(1)));
    }

    #[test]
    fn a_lazy_main_keeps_the_mask_until_a_thread_is_created() {
        let places: Vec<CpuSet> = (0..2).map(CpuSet::single).collect();
        let e = lazy(&places, 7);
        let mut only_main = vec![rec(7, 0)];
        assign_planned(&mut only_main, &[], &e);
        assert_eq!(only_main[0].planned, None, "no thread: the whole mask");
        // A thread was created and ended unseen: the main thread moved.
        let log = parse(&bytes(&[[7, -1, 0, 0], [8, 0, 1, 0]]));
        assign_planned(&mut only_main, &log, &e);
        assert_eq!(only_main[0].planned, Some(CpuSet::single(0)));
    }

    #[test]
    fn image_events_tell_an_image_the_shim_never_reached() {
        use ImageEvent::*;
        // Records as the shim writes them: a thread, then image events.
        let raw = bytes(&[
            [7, -2, -1, 0],
            [8, 0, 1, 0],
            [7, -3, -1, 0],
            [7, -4, -1, libc::ENOENT],
            [7, -3, -1, 0],
        ]);
        assert_eq!(parse(&raw).len(), 1, "events are not threads");
        let events = parse_events(&raw);
        assert_eq!(events, vec![Loaded, Exec, ExecFailed, Exec]);
        assert!(unreached(&events).unwrap().contains("executed in place"));
        assert_eq!(unreached(&[Loaded, Exec, Loaded]), None);
        assert_eq!(unreached(&[Loaded, Exec, ExecFailed]), None);
        assert!(unreached(&[]).unwrap().contains("never became active"));
    }

    #[test]
    fn a_thread_the_watcher_took_over_is_planned_where_it_was_pinned() {
        let places: Vec<CpuSet> = (0..2).map(CpuSet::single).collect();
        let e = lazy(&places, 7);
        // The shim placed tid 8 before an exec; the watcher pinned tid 9
        // of the image after it (its created thread #0, place 1).
        let mut recs = vec![rec(7, 0), rec(8, 1), rec(9, 2)];
        recs[2].follow = Some(crate::watch::FollowPin {
            place: Some(1),
            delay_max_ms: None,
            ran_unpinned_us: None,
            error: None,
            refused: false,
        });
        let log = parse(&bytes(&[[7, -1, 0, 0], [8, 0, 1, 0], [7, -3, -1, 0]]));
        assign_planned(&mut recs, &log, &e);
        assert_eq!(recs[0].planned, Some(CpuSet::single(0)));
        assert_eq!(recs[1].planned, Some(CpuSet::single(1)));
        assert_eq!(recs[2].planned, Some(CpuSet::single(1)));
    }
}
