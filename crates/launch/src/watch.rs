//! The watcher: a thread that polls `/proc/PID/task` while a launched
//! program runs. It does two jobs:
//!
//! - **follow** (`--follow`): pins each new thread, in order of first sight,
//!   to its place — for static binaries and runtimes that do not go through
//!   `pthread_create`, where the shim cannot reach. TIDs grow, so first
//!   sight approximates creation order; a thread runs unpinned for up to one
//!   poll interval (measured: see [`FollowStats`]).
//! - **report** (`--report`): samples every thread's affinity
//!   (`Cpus_allowed_list`) and last CPU (stat field 39), so the report shows
//!   where threads actually ran — proof, not promise — even though the
//!   threads are gone when the program exits.
//! - **takeover** (with the shim): when the launched program executes in
//!   place an image the shim cannot reach (a 32-bit program exec'd by a
//!   64-bit wrapper such as `sh -c 'exec ./prog32'` or `os.execv`, a static or
//!   set-id one: [`pinsight_lifecycle::program::preload_blocker`]), the loader ignores
//!   the shim and nothing would pin that image's threads. The watcher
//!   looks at `/proc/PID/exe` every poll (at the takeover's pace for the
//!   first [`GUARD_FAST`], where wrappers exec), and from such an exec on pins
//!   the image's threads itself, as `--follow` does, numbering them from
//!   the exec (the new image's first created thread takes place 1); it
//!   hands back to the shim when the program executes one the shim
//!   reaches again. [`Watched::takeovers`] says why, so the report names
//!   the mechanism that actually placed the threads.

use crate::skip::place_of;
use pinsight_cpuset::CpuSet;
use pinsight_sys::affinity;
use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What `--follow` pins new threads to.
#[derive(Clone, Debug)]
pub struct FollowPlan {
    /// Places in creation order; the main thread holds place 0 (from the
    /// start, or from the first created thread on: `pin_main_lazily`).
    pub places: Vec<CpuSet>,
    /// Created-thread indices left on `process_mask`.
    pub skip: Vec<usize>,
    /// The mask for skipped threads.
    pub process_mask: CpuSet,
    /// Move the main thread to place 0 when the first created thread is
    /// seen (it started with the process mask), as the shim does at the
    /// first `pthread_create`.
    pub pin_main_lazily: bool,
}

/// How the watcher runs.
#[derive(Clone, Debug)]
pub struct WatchConfig {
    pub pid: i32,
    pub follow: Option<FollowPlan>,
    /// How often to look for new threads.
    pub poll: Duration,
    /// How often to sample every thread's affinity and CPU (0: never,
    /// only at first sight).
    pub sample_every: Duration,
}

/// The watcher's job beside the shim: pin the threads of an image the
/// shim cannot reach, should the program execute one in place.
#[derive(Clone, Debug)]
pub struct Takeover {
    /// What to pin those threads to (as `--follow` would).
    pub plan: FollowPlan,
    /// How often to look for new threads while pinning them.
    pub poll: Duration,
}

/// What the watcher saw.
#[derive(Clone, Debug, Default)]
pub struct Watched {
    /// Every thread, in order of first sight.
    pub records: Vec<ThreadRecord>,
    /// Why the watcher took over from the shim, once per image it took
    /// over (the reason the shim could not reach it); empty when the shim
    /// placed every thread or no takeover was asked for.
    pub takeovers: Vec<String>,
}

/// A pin done by `--follow`.
#[derive(Clone, Debug, Serialize)]
pub struct FollowPin {
    /// The place it was given (`None`: skipped, given the process mask).
    pub place: Option<usize>,
    /// Upper bound of the wall time from the thread's creation to its
    /// pinning, in ms: the kernel gives creation times in whole clock ticks
    /// (usually 10 ms), rounded down, so this overstates by up to one tick.
    /// `ran_unpinned_us` is the precise figure.
    pub delay_max_ms: Option<f64>,
    /// CPU time the thread had run before it was pinned, in µs
    /// (`schedstat`, ns resolution): the code that ran unpinned.
    pub ran_unpinned_us: Option<f64>,
    /// Why pinning failed (e.g. the thread had already exited).
    pub error: Option<String>,
    /// The kernel refused the pin (`EPERM`: a thread with capabilities
    /// this process lacks, sched_setaffinity(2); `EINVAL`: no CPU of the
    /// place is allowed), as opposed to a thread that had already exited.
    pub refused: bool,
}

/// Whether a failed `sched_setaffinity` is the kernel's refusal, not a
/// thread that ended before it could be pinned (`ESRCH`).
fn is_refusal(e: &std::io::Error) -> bool {
    e.raw_os_error() != Some(libc::ESRCH)
}

/// What was seen of one thread.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRecord {
    pub tid: i32,
    /// Order of first sight (0 = the main thread).
    pub index: usize,
    /// Thread name (comm) when last seen.
    pub name: String,
    /// Time of first sight after launch, in ms.
    pub first_seen_ms: f64,
    /// Affinity when last sampled.
    pub affinity: Option<CpuSet>,
    /// CPU it was last seen on.
    pub last_cpu: Option<usize>,
    /// Every CPU it was seen on.
    pub cpus_seen: CpuSet,
    /// Number of samples.
    pub samples: u64,
    /// What the plan meant for it, if pinned: matched by tid through the
    /// shim's thread log ([`crate::threadlog`]), else by order of first sight.
    /// `None` with places: the process mask (skipped, or a lazily pinned
    /// main thread that created no thread).
    pub planned: Option<CpuSet>,
    /// The follow pin, when `--follow` pinned it.
    pub follow: Option<FollowPin>,
}

/// Delay figures of `--follow` over all threads it pinned.
#[derive(Clone, Debug, Serialize)]
pub struct FollowStats {
    pub pinned: usize,
    pub failed: usize,
    pub poll_interval_ms: f64,
    /// Over threads, of [`FollowPin::delay_max_ms`] (tick-resolution upper bounds).
    pub median_delay_max_ms: Option<f64>,
    pub max_delay_max_ms: Option<f64>,
    pub median_ran_unpinned_us: Option<f64>,
    pub max_ran_unpinned_us: Option<f64>,
}

/// A running watcher; [`Watcher::finish`] stops it and returns its records.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Watched>,
}

impl Watcher {
    /// Starts watching. `planned` gives the expected place of each thread
    /// by order of first sight (for the report), empty if none.
    pub fn start(fs: FsRoot, cfg: WatchConfig, planned: Vec<CpuSet>, skip: Vec<usize>) -> Watcher {
        Watcher::start_guarded(fs, cfg, None, planned, skip)
    }

    /// [`Watcher::start`], and with `takeover` the watcher also pins the
    /// threads of any image the program executes in place that the shim
    /// cannot reach (see the module documentation). Without sampling
    /// (`cfg.sample_every` zero) and without `cfg.follow`, it then only
    /// reads `/proc/PID/exe` each poll until such an image runs.
    pub fn start_guarded(
        fs: FsRoot,
        cfg: WatchConfig,
        takeover: Option<Takeover>,
        planned: Vec<CpuSet>,
        skip: Vec<usize>,
    ) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("pinsight-watch".into())
            .spawn(move || watch(&fs, &cfg, takeover.as_ref(), &planned, &skip, &flag))
            .expect("spawn watcher thread");
        Watcher { stop, handle }
    }

    /// Stops the watcher (after one last look) and returns what it saw,
    /// in order of first sight. A watcher that crashed is an error, never
    /// an empty list that would read as "the program made no threads".
    pub fn finish(self) -> Result<Vec<ThreadRecord>, WatcherCrashed> {
        self.finish_watched().map(|w| w.records)
    }

    /// [`Watcher::finish`] with the takeovers from the shim.
    pub fn finish_watched(self) -> Result<Watched, WatcherCrashed> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().map_err(|_| WatcherCrashed)
    }
}

/// The /proc watcher's thread panicked: where threads ran is unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the /proc watcher crashed: where threads ran is unknown")]
pub struct WatcherCrashed;

fn planned_for(order: usize, planned: &[CpuSet], skip: &[usize]) -> Option<CpuSet> {
    if planned.is_empty() {
        return None;
    }
    if order == 0 {
        return Some(planned[0].clone());
    }
    place_of(order - 1, skip, planned.len()).map(|p| planned[p].clone())
}

fn sample(fs: &FsRoot, pid: i32, rec: &mut ThreadRecord) -> bool {
    let Some(st) = procfs::task_stat(fs, pid, rec.tid) else {
        return false;
    };
    if st.state == 'Z' || st.state == 'X' {
        return false;
    }
    rec.name = st.comm;
    if let Some(c) = st.last_cpu {
        rec.last_cpu = Some(c);
        rec.cpus_seen.insert(c);
    }
    if let Some(a) = procfs::task_allowed(fs, pid, rec.tid) {
        rec.affinity = Some(a);
    }
    rec.samples += 1;
    true
}

fn follow_pin(fs: &FsRoot, pid: i32, tid: i32, created: usize, plan: &FollowPlan) -> FollowPin {
    let place = place_of(created, &plan.skip, plan.places.len());
    let target = match place {
        Some(p) => &plan.places[p],
        None => &plan.process_mask,
    };
    let result = affinity::set_affinity(tid, target);
    let now = procfs::boottime_ns();
    let ran = procfs::task_runtime_ns(fs, pid, tid).map(|ns| ns as f64 / 1e3);
    let delay = procfs::task_stat(fs, pid, tid).map(|st| {
        let start_ns = st.start_ticks as f64 * 1e9 / procfs::clock_ticks() as f64;
        ((now as f64 - start_ns) / 1e6).max(0.0)
    });
    match result {
        Ok(()) => FollowPin {
            place,
            delay_max_ms: delay,
            ran_unpinned_us: ran,
            error: None,
            refused: false,
        },
        Err(e) => FollowPin {
            place,
            delay_max_ms: None,
            ran_unpinned_us: None,
            refused: is_refusal(&e),
            error: Some(e.to_string()),
        },
    }
}

/// Moves the main thread (tid = pid) to place 0.
fn pin_main(pid: i32, plan: &FollowPlan) -> FollowPin {
    let Some(place0) = plan.places.first() else {
        return FollowPin {
            place: None,
            delay_max_ms: None,
            ran_unpinned_us: None,
            error: Some("the plan has no place".into()),
            refused: false,
        };
    };
    match affinity::set_affinity(pid, place0) {
        Ok(()) => FollowPin {
            place: Some(0),
            delay_max_ms: None,
            // Not "unpinned": the main thread ran on the process mask by design.
            ran_unpinned_us: None,
            error: None,
            refused: false,
        },
        Err(e) => FollowPin {
            place: Some(0),
            delay_max_ms: None,
            ran_unpinned_us: None,
            refused: is_refusal(&e),
            error: Some(e.to_string()),
        },
    }
}

/// Makes the calling (watcher) thread wake up ahead of the program's
/// threads: on a busy machine a normal-priority poller waits for a time
/// slice and new threads run unpinned for milliseconds. Tries SCHED_FIFO
/// priority 1 (needs CAP_SYS_NICE), else nice -10, else stays as is. Only
/// this thread changes; it ends with the launch.
fn raise_own_priority() {
    pinsight_sys::sched::raise_own_priority();
}

/// How long after the start a guard looks at the program's image at the
/// takeover's pace (`run --interval`, 1 ms by default); later, at the watcher's own
/// (`--interval` too, 10 ms by default), so a long run is not woken every millisecond.
pub const GUARD_FAST: Duration = Duration::from_millis(100);

/// Which image the launched program runs, for a takeover from the shim.
struct ImageGuard {
    /// This process's own image: what a forked child shows before its exec.
    own: Option<PathBuf>,
    /// The image judged last.
    current: Option<PathBuf>,
    /// Whether the watcher pins the current image's threads.
    taken: bool,
}

/// What looking at the program's image changed.
enum Change {
    None,
    /// The program now runs an image the shim cannot reach: why.
    Take(String),
    /// The program runs one the shim reaches again.
    Release,
}

impl ImageGuard {
    fn new(fs: &FsRoot) -> ImageGuard {
        ImageGuard {
            own: fs.read_link("/proc/self/exe"),
            current: None,
            taken: false,
        }
    }

    /// Judges the image `exe` (`None`: gone or unreadable, no change).
    fn judge(&mut self, exe: Option<PathBuf>) -> Change {
        let Some(exe) = exe else {
            return Change::None;
        };
        if Some(&exe) == self.own.as_ref() || Some(&exe) == self.current.as_ref() {
            return Change::None;
        }
        let blocker = pinsight_lifecycle::program::preload_blocker(exe.as_os_str());
        self.current = Some(exe);
        match (blocker, self.taken) {
            (Some(b), false) => {
                self.taken = true;
                Change::Take(b.to_string())
            }
            (None, true) => {
                self.taken = false;
                Change::Release
            }
            _ => Change::None,
        }
    }
}

fn watch(
    fs: &FsRoot,
    cfg: &WatchConfig,
    takeover: Option<&Takeover>,
    planned: &[CpuSet],
    skip: &[usize],
    stop: &AtomicBool,
) -> Watched {
    if cfg.follow.is_some() {
        raise_own_priority();
    }
    let mut w = Watch {
        fs,
        cfg,
        planned,
        skip,
        t0: Instant::now(),
        records: BTreeMap::new(),
        main_pinned: false,
        created: 0,
        guard: takeover.map(|_| ImageGuard::new(fs)),
        takeovers: Vec::new(),
        exe: format!("/proc/{}/exe", cfg.pid),
    };
    let mut last_sample = Instant::now();
    let sampling = !cfg.sample_every.is_zero();
    let mut first = true;
    loop {
        // Read the flag before looking, so the last look happens after it was set.
        let stopping = stop.load(Ordering::SeqCst);
        // With a guard the loop turns at the takeover's pace; threads are
        // listed at the sampling pace (or every turn, when pinning them).
        let due = first || stopping || (sampling && last_sample.elapsed() >= cfg.sample_every);
        first = false;
        let tids = w.list(sampling && due);
        let taken = w.guard.as_ref().is_some_and(|g| g.taken);
        let follow = match takeover {
            Some(t) if taken => Some(&t.plan),
            _ => cfg.follow.as_ref(),
        };
        for &tid in &tids {
            if !w.records.contains_key(&tid) {
                w.record_new(tid, follow);
            }
        }
        if sampling && due && last_sample.elapsed() >= cfg.sample_every {
            last_sample = Instant::now();
            for tid in &tids {
                if let Some(rec) = w.records.get_mut(tid) {
                    sample(fs, cfg.pid, rec);
                }
            }
        }
        if stopping {
            break;
        }
        // A guard looks at the takeover's pace while wrappers usually exec
        // (the first [`GUARD_FAST`]), then at the watcher's own.
        std::thread::sleep(match takeover {
            Some(t) if taken || w.t0.elapsed() < GUARD_FAST => t.poll.min(cfg.poll),
            _ => cfg.poll,
        });
    }
    let mut out: Vec<ThreadRecord> = w.records.into_values().collect();
    out.sort_by_key(|r| r.index);
    Watched {
        records: out,
        takeovers: w.takeovers,
    }
}

/// The watcher's state between looks.
struct Watch<'a> {
    fs: &'a FsRoot,
    cfg: &'a WatchConfig,
    planned: &'a [CpuSet],
    skip: &'a [usize],
    t0: Instant,
    records: BTreeMap<i32, ThreadRecord>,
    main_pinned: bool,
    /// Threads created since the pinning began: the follow plan's
    /// numbering (from the exec, after a takeover).
    created: usize,
    guard: Option<ImageGuard>,
    takeovers: Vec<String>,
    /// `/proc/PID/exe` of the program.
    exe: String,
}

impl Watch<'_> {
    /// The program's threads now. With a guard, the image is judged before
    /// and after the listing, so the threads listed are the judged image's
    /// (an exec ends every other thread before /proc/PID/exe changes);
    /// without pinning, threads are listed only when `sample_due`.
    fn list(&mut self, sample_due: bool) -> Vec<i32> {
        let (fs, pid) = (self.fs, self.cfg.pid);
        let Some(g) = &mut self.guard else {
            return procfs::tids(fs, pid);
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let before = fs.read_link(&self.exe);
            let listed = if g.taken || self.cfg.follow.is_some() || sample_due {
                procfs::tids(fs, pid)
            } else {
                Vec::new()
            };
            let after = fs.read_link(&self.exe);
            if before != after && tries < 8 {
                continue;
            }
            match g.judge(after) {
                Change::None => break listed,
                Change::Take(why) => {
                    self.takeovers.push(why);
                    self.created = 0;
                    self.main_pinned = false;
                    raise_own_priority();
                }
                Change::Release => {}
            }
            // List again under the new state.
        }
    }

    /// Records a thread seen for the first time; with a `follow` plan,
    /// pins it (and, lazily, the main thread, when the first other thread
    /// appears).
    fn record_new(&mut self, tid: i32, follow: Option<&FollowPlan>) {
        let (fs, pid) = (self.fs, self.cfg.pid);
        let order = self.records.len();
        let mut rec = ThreadRecord {
            tid,
            index: order,
            name: String::new(),
            first_seen_ms: self.t0.elapsed().as_secs_f64() * 1e3,
            affinity: None,
            last_cpu: None,
            cpus_seen: CpuSet::new(),
            samples: 0,
            planned: planned_for(order, self.planned, self.skip),
            follow: None,
        };
        // The main thread was placed at spawn; others are pinned now.
        if let (Some(plan), true) = (follow, tid != pid) {
            if plan.pin_main_lazily && !self.main_pinned {
                self.main_pinned = true;
                let pin = pin_main(pid, plan);
                if let Some(main) = self.records.get_mut(&pid) {
                    main.follow = Some(pin);
                    sample(fs, pid, main);
                }
            }
            rec.follow = Some(follow_pin(fs, pid, tid, self.created, plan));
            self.created += 1;
        }
        sample(fs, pid, &mut rec);
        self.records.insert(tid, rec);
    }
}

/// Summarises the follow pins in `records`.
pub fn follow_stats(records: &[ThreadRecord], poll: Duration) -> FollowStats {
    let pins: Vec<&FollowPin> = records.iter().filter_map(|r| r.follow.as_ref()).collect();
    let delays: Vec<f64> = pins.iter().filter_map(|p| p.delay_max_ms).collect();
    let ran: Vec<f64> = pins.iter().filter_map(|p| p.ran_unpinned_us).collect();
    let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
    FollowStats {
        pinned: pins.iter().filter(|p| p.error.is_none()).count(),
        failed: pins.iter().filter(|p| p.error.is_some()).count(),
        poll_interval_ms: poll.as_secs_f64() * 1e3,
        max_delay_max_ms: max(&delays),
        median_delay_max_ms: pinsight_stats::median(&delays),
        max_ran_unpinned_us: max(&ran),
        median_ran_unpinned_us: pinsight_stats::median(&ran),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_matches_shim_order() {
        let places: Vec<CpuSet> = (0..3).map(CpuSet::single).collect();
        assert_eq!(planned_for(0, &places, &[]), Some(CpuSet::single(0)));
        assert_eq!(planned_for(1, &places, &[]), Some(CpuSet::single(1)));
        assert_eq!(planned_for(3, &places, &[]), Some(CpuSet::single(0)));
        assert_eq!(planned_for(1, &places, &[0]), None);
        assert_eq!(planned_for(2, &places, &[0]), Some(CpuSet::single(1)));
        assert_eq!(planned_for(5, &[], &[]), None);
    }

    #[test]
    fn watches_own_threads() {
        let fs = FsRoot::live();
        let pid = std::process::id() as i32;
        let w = Watcher::start(
            fs,
            WatchConfig {
                pid,
                follow: None,
                poll: Duration::from_millis(1),
                sample_every: Duration::from_millis(2),
            },
            vec![],
            vec![],
        );
        let t = std::thread::Builder::new()
            .name("probe-x".into())
            .spawn(|| std::thread::sleep(Duration::from_millis(30)))
            .unwrap();
        t.join().unwrap();
        let recs = w.finish().unwrap();
        assert!(
            recs.iter()
                .any(|r| r.name == "probe-x" && r.samples > 0 && r.affinity.is_some()),
            "{recs:?}"
        );
        assert_eq!(recs[0].index, 0);
    }
}
