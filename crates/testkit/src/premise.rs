//! The premises of live timing tests, measured rather than assumed.
//!
//! A live test asserts a time or a CPU share (AARR's equal big-CPU time,
//! a balanced plan's even finish, tune's recovered speed factor). That
//! assertion means something only while nothing else takes the CPUs the
//! test times: another program, the hypervisor (steal), or a real-time
//! task such as another `pinsight emulate`'s stealer. So a live test
//!
//! 1. starts through [`live`], which takes the binary's [`serial`] lock
//!    (live tests never overlap, so their emulations never do) and
//!    refuses, as a counted skip naming the task, while a real-time task
//!    of anyone else's may run on the test's CPUs: another emulation's
//!    stealer would silently change the speeds under test;
//! 2. keeps the returned [`Live`] while it measures: a background sampler
//!    of `/proc` adds up, per CPU, the CPU time of every task that is not
//!    the test's own (not the test process nor a descendant of it) and
//!    the hypervisor's steal;
//! 3. before asserting, calls [`Live::quiet`]: when other work took more
//!    than the test's tolerance of one of its CPUs, the test is a counted
//!    skip with the figures (which CPU, how much, by whom), never a
//!    failure or a pass by luck.
//!
//! The sampler reads `/proc/PID/stat` of every process every
//! [`PERIOD`], and the threads of the few whose time grew; its own cost
//! is counted as the test's.
//!
//! [`serial`]: crate::serial

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the sampler looks.
pub const PERIOD: Duration = Duration::from_millis(200);

/// Other work above this share of any of a test's CPUs makes its timing
/// meaningless for most tests (each may pass its own tolerance).
pub const QUIET: f64 = 0.05;

/// `/proc/PID/stat` (or a task's) as the sampler needs it.
#[derive(Debug, Clone)]
struct Stat {
    comm: String,
    ppid: u32,
    /// `PF_KTHREAD`: a kernel thread.
    kernel: bool,
    /// utime + stime, in clock ticks.
    ticks: u64,
    threads: u64,
    /// The CPU it last ran on.
    cpu: usize,
    /// Scheduling policy (1 SCHED_FIFO, 2 SCHED_RR) and real-time priority.
    policy: u32,
    rt_priority: u32,
}

/// `PF_KTHREAD` in the `flags` field (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // f[0] is field 3 (state): field N is f[N - 3].
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        comm,
        ppid: num(4)? as u32,
        kernel: num(9)? & PF_KTHREAD != 0,
        ticks: num(14)? + num(15)?,
        threads: num(20)?,
        cpu: num(39)? as usize,
        rt_priority: num(40)? as u32,
        policy: num(41)? as u32,
    })
}

fn read_stat(path: &str) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(path).ok()?)
}

fn pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The threads of `pid` with their stat (none once it is gone).
fn threads(pid: u32) -> Vec<(u32, Stat)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse::<u32>().ok()?;
            Some((tid, read_stat(&format!("/proc/{pid}/task/{tid}/stat"))?))
        })
        .collect()
}

fn clock_ticks() -> f64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(n)) if n > 0 => n as f64,
        _ => 100.0,
    }
}

/// Per-CPU steal ticks (`cpuN` lines of `/proc/stat`, 8th value).
fn steal_ticks() -> BTreeMap<usize, u64> {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let cpu = w.next()?.strip_prefix("cpu")?.parse::<usize>().ok()?;
            let steal = w.nth(7)?.parse::<u64>().ok()?;
            Some((cpu, steal))
        })
        .collect()
}

/// The process tree of the test, and what the others did.
#[derive(Default)]
struct Books {
    /// Processes known to be the test's (sticky: a descendant reparented
    /// to init stays the test's).
    ours: BTreeSet<u32>,
    /// Every other process's ticks at the last look.
    last: HashMap<u32, u64>,
    /// Every other thread's ticks at the last look (by TID).
    last_threads: HashMap<u32, u64>,
    /// Other CPU time per CPU, in ticks.
    per_cpu: BTreeMap<usize, u64>,
    /// Other CPU time per process, in ticks, with its name.
    per_pid: BTreeMap<u32, (String, u64)>,
    steal_start: BTreeMap<usize, u64>,
    steal_now: BTreeMap<usize, u64>,
    looks: u64,
}

impl Books {
    /// One look at `/proc`.
    fn look(&mut self, me: u32) {
        let all: Vec<(u32, Stat)> = pids()
            .into_iter()
            .filter_map(|p| Some((p, read_stat(&format!("/proc/{p}/stat"))?)))
            .collect();
        let parent: HashMap<u32, u32> = all.iter().map(|(p, s)| (*p, s.ppid)).collect();
        let first = self.looks == 0;
        for (pid, stat) in &all {
            if self.is_ours(*pid, me, &parent) {
                continue;
            }
            let before = self.last.insert(*pid, stat.ticks);
            // A process first seen after the first look was born since:
            // all its time is new.
            let grew = match before {
                Some(b) => stat.ticks.saturating_sub(b),
                None if first => 0,
                None => stat.ticks,
            };
            if grew == 0 && !first {
                continue;
            }
            if stat.threads <= 1 {
                if grew > 0 {
                    self.charge(*pid, &stat.comm, stat.cpu, grew);
                }
                continue;
            }
            // Several threads: each thread's growth on the CPU it is on.
            for (tid, ts) in threads(*pid) {
                let tb = self.last_threads.insert(tid, ts.ticks);
                let tg = match tb {
                    Some(b) => ts.ticks.saturating_sub(b),
                    None if first => 0,
                    None => ts.ticks,
                };
                if tg > 0 {
                    self.charge(*pid, &stat.comm, ts.cpu, tg);
                }
            }
        }
        let steal = steal_ticks();
        if first {
            self.steal_start = steal.clone();
        }
        self.steal_now = steal;
        self.looks += 1;
    }

    fn charge(&mut self, pid: u32, comm: &str, cpu: usize, ticks: u64) {
        *self.per_cpu.entry(cpu).or_default() += ticks;
        let e = self
            .per_pid
            .entry(pid)
            .or_insert_with(|| (comm.to_string(), 0));
        e.1 += ticks;
    }

    /// Whether `pid` is the test process or one of its descendants.
    fn is_ours(&mut self, pid: u32, me: u32, parent: &HashMap<u32, u32>) -> bool {
        let mut chain = Vec::new();
        let mut p = pid;
        let ours = loop {
            if p == me || self.ours.contains(&p) {
                break true;
            }
            if p <= 1 || chain.len() > 64 {
                break false;
            }
            chain.push(p);
            match parent.get(&p) {
                Some(&pp) => p = pp,
                None => break false,
            }
        };
        if ours {
            self.ours.extend(chain);
        }
        ours
    }
}

/// What other work took of each CPU while a test measured.
#[derive(Debug, Clone)]
pub struct Other {
    /// How long the sampler watched.
    pub window: Duration,
    /// Share of each CPU (0–1) taken by others' tasks, and by steal.
    pub per_cpu: BTreeMap<usize, f64>,
    /// The hypervisor's steal alone, per CPU (0–1).
    pub steal: BTreeMap<usize, f64>,
    /// The others that took the most, with their CPU seconds.
    pub top: Vec<(u32, String, f64)>,
}

impl Other {
    /// The largest share of any of `cpus` that other work took.
    pub fn worst(&self, cpus: &[usize]) -> (usize, f64) {
        cpus.iter()
            .map(|&c| (c, self.per_cpu.get(&c).copied().unwrap_or(0.0)))
            .fold((cpus.first().copied().unwrap_or(0), 0.0), |a, b| {
                if b.1 > a.1 {
                    b
                } else {
                    a
                }
            })
    }

    /// One line: the shares of `cpus` and who took them.
    pub fn describe(&self, cpus: &[usize]) -> String {
        let shares: Vec<String> = cpus
            .iter()
            .map(|c| {
                let s = self.per_cpu.get(c).copied().unwrap_or(0.0);
                let st = self.steal.get(c).copied().unwrap_or(0.0);
                format!("CPU {c} {:.1}% (steal {:.1}%)", 100.0 * s, 100.0 * st)
            })
            .collect();
        let top: Vec<String> = self
            .top
            .iter()
            .take(3)
            .map(|(pid, comm, s)| format!("{comm} {pid} {s:.2} s"))
            .collect();
        format!(
            "other work over {:.1} s: {}{}",
            self.window.as_secs_f64(),
            shares.join(", "),
            if top.is_empty() {
                String::new()
            } else {
                format!("; by {}", top.join(", "))
            }
        )
    }
}

/// A background sampler of what others run (see the module doc).
pub struct OtherLoad {
    books: Arc<Mutex<Books>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    started: Instant,
}

impl OtherLoad {
    /// Starts sampling now (the first look is taken before it returns).
    pub fn start() -> OtherLoad {
        let me = std::process::id();
        let books = Arc::new(Mutex::new(Books::default()));
        books.lock().unwrap_or_else(|e| e.into_inner()).look(me);
        let stop = Arc::new(AtomicBool::new(false));
        let (b, s) = (books.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("premise-sampler".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    std::thread::sleep(PERIOD);
                    b.lock().unwrap_or_else(|e| e.into_inner()).look(me);
                }
            })
            .ok();
        OtherLoad {
            books,
            stop,
            thread,
            started: Instant::now(),
        }
    }

    /// What others took so far (one more look first).
    pub fn so_far(&self) -> Other {
        let mut b = self.books.lock().unwrap_or_else(|e| e.into_inner());
        b.look(std::process::id());
        let window = self.started.elapsed();
        let hz = clock_ticks();
        let secs = window.as_secs_f64().max(1e-3);
        let steal: BTreeMap<usize, f64> = b
            .steal_now
            .iter()
            .map(|(&c, &now)| {
                let was = b.steal_start.get(&c).copied().unwrap_or(now);
                (c, now.saturating_sub(was) as f64 / hz / secs)
            })
            .collect();
        let mut per_cpu: BTreeMap<usize, f64> = steal.clone();
        for (&c, &t) in &b.per_cpu {
            *per_cpu.entry(c).or_default() += t as f64 / hz / secs;
        }
        let mut top: Vec<(u32, String, f64)> = b
            .per_pid
            .iter()
            .map(|(&p, (n, t))| (p, n.clone(), *t as f64 / hz))
            .collect();
        top.sort_by(|a, b| b.2.total_cmp(&a.2));
        top.truncate(5);
        Other {
            window,
            per_cpu,
            steal,
            top,
        }
    }
}

impl Drop for OtherLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Real-time tasks (SCHED_FIFO, SCHED_RR) of anyone but this test, not
/// kernel threads, allowed on any of `cpus`, that ran during a look of
/// `over` (an idle one, such as an audio server waiting, disturbs
/// nothing): `PID/TID comm (policy prio, CPU seconds in the look)`.
pub fn foreign_realtime(cpus: &[usize], over: Duration) -> Vec<String> {
    let first = realtime_tasks(cpus);
    if first.is_empty() {
        return Vec::new();
    }
    std::thread::sleep(over);
    let hz = clock_ticks();
    realtime_tasks(cpus)
        .into_iter()
        .filter_map(|(tid, (name, ticks))| {
            let before = first.get(&tid)?.1;
            (ticks > before).then(|| {
                format!(
                    "{name}, {:.2} s in {:.1} s",
                    (ticks - before) as f64 / hz,
                    over.as_secs_f64()
                )
            })
        })
        .collect()
}

/// The foreign real-time tasks on `cpus` by TID: their description and
/// CPU ticks.
fn realtime_tasks(cpus: &[usize]) -> BTreeMap<u32, (String, u64)> {
    let me = std::process::id();
    let all: Vec<(u32, Stat)> = pids()
        .into_iter()
        .filter_map(|p| Some((p, read_stat(&format!("/proc/{p}/stat"))?)))
        .collect();
    let parent: HashMap<u32, u32> = all.iter().map(|(p, s)| (*p, s.ppid)).collect();
    let mut books = Books::default();
    let mut found = BTreeMap::new();
    for (pid, stat) in &all {
        if stat.kernel || books.is_ours(*pid, me, &parent) {
            continue;
        }
        for (tid, ts) in threads(*pid) {
            if ts.policy != 1 && ts.policy != 2 {
                continue;
            }
            let allowed = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .and_then(|l| pinsight_cpuset::CpuSet::parse_list(l.trim()).ok())
                });
            let on_ours = allowed.is_none_or(|a| cpus.iter().any(|&c| a.contains(c)));
            if on_ours {
                let policy = if ts.policy == 1 {
                    "SCHED_FIFO"
                } else {
                    "SCHED_RR"
                };
                let name = format!(
                    "{pid}/{tid} {} ({policy} {})",
                    ts.comm.escape_debug(),
                    ts.rt_priority
                );
                found.insert(tid, (name, ts.ticks));
            }
        }
    }
    found
}

/// A live timing test under way: holds the binary's serial lock and
/// samples what others run (see the module doc).
pub struct Live {
    cpus: Vec<usize>,
    watch: OtherLoad,
    _serial: std::sync::MutexGuard<'static, ()>,
}

/// Starts a live timing test on `cpus`: the serial lock, then the
/// refusal of foreign real-time tasks (a counted skip naming them:
/// `None`), then the sampler.
pub fn live(cpus: &[usize]) -> Option<Live> {
    let serial = crate::serial();
    let rt = foreign_realtime(cpus, Duration::from_millis(250));
    if !rt.is_empty() {
        crate::skip(format!(
            "another real-time task runs on CPUs {cpus:?} (another pinsight \
             emulate?): {}; live timing tests refuse to start beside it",
            rt.join("; ")
        ));
        return None;
    }
    Some(Live {
        cpus: cpus.to_vec(),
        watch: OtherLoad::start(),
        _serial: serial,
    })
}

/// [`live`] on every usable CPU: for live tests that use the machine as
/// a whole (every CPU they may run on is one a foreign real-time task
/// would disturb).
pub fn live_on_usable() -> Option<Live> {
    live(&crate::usable_cpus())
}

impl Live {
    /// What others took of the test's CPUs so far.
    pub fn other(&self) -> Other {
        self.watch.so_far()
    }

    /// `Err(reason)` when other work took more than `tolerance` (a share,
    /// 0–1) of one of the test's CPUs since the start: the caller skips
    /// (counted) with the reason instead of asserting.
    pub fn quiet(&self, tolerance: f64) -> Result<Other, String> {
        let other = self.other();
        let (cpu, share) = other.worst(&self.cpus);
        if share > tolerance {
            return Err(format!(
                "premise failed: other work took {:.1}% of CPU {cpu} (tolerance {:.1}%); {}",
                100.0 * share,
                100.0 * tolerance,
                other.describe(&self.cpus)
            ));
        }
        Ok(other)
    }

    /// The CPUs the test times.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }
}

/// Skips (counted) and returns from the calling test when other work took
/// more than `tolerance` of the live test's CPUs; prints the figures
/// either way.
#[macro_export]
macro_rules! require_quiet {
    ($live:expr, $tolerance:expr) => {
        match $live.quiet($tolerance) {
            Ok(other) => eprintln!("premise held: {}", other.describe($live.cpus())),
            Err(why) => $crate::skip_test!("{why}"),
        }
    };
}

/// CPU seconds (utime + stime) `pid` has used, from `/proc/PID/stat`;
/// `None` once it is gone. Tests measure an emulation's stealer with it:
/// its share of the slowed CPU over a window is the speed taken away,
/// measured outside pinsight.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    read_stat(&format!("/proc/{pid}/stat")).map(|s| s.ticks as f64 / clock_ticks())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_with_spaces_and_parens_in_the_name() {
        let line = "1234 (a (b) c) R 1 1234 1234 0 -1 4194304 100 0 0 0 \
                    250 50 0 0 20 0 3 0 12345 1000 100 18446744073709551615 \
                    1 1 0 0 0 0 0 0 0 0 0 0 17 1 2 1 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "a (b) c");
        assert_eq!(s.ppid, 1);
        assert_eq!(s.ticks, 300);
        assert_eq!(s.threads, 3);
        assert_eq!(s.cpu, 1);
        assert_eq!(s.rt_priority, 2);
        assert_eq!(s.policy, 1);
        assert!(!s.kernel);
    }

    #[test]
    fn a_foreign_real_time_spinner_is_named_and_an_idle_one_is_not() {
        let chrt = std::process::Command::new("chrt")
            .args(["-f", "1", "true"])
            .status()
            .is_ok_and(|s| s.success());
        if !chrt {
            crate::skip_test!("cannot start a SCHED_FIFO task here (not root, or no chrt)");
        }
        let cpu = *crate::usable_cpus().last().unwrap();
        // Detached (its parent exits at once): not the test's own. One
        // spins for 1.5 s, one sleeps.
        let script = format!(
            "(timeout 1.5 taskset -c {cpu} chrt -f 1 sh -c 'while :; do :; done' &); \
             (timeout 1.5 taskset -c {cpu} chrt -f 2 sleep 5 &)"
        );
        std::process::Command::new("sh")
            .args(["-c", &script])
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let found = foreign_realtime(&[cpu], Duration::from_millis(250));
        assert!(
            found.iter().any(|f| f.contains("(SCHED_FIFO 1)")),
            "{found:?}"
        );
        assert!(
            !found.iter().any(|f| f.contains("(SCHED_FIFO 2)")),
            "an idle real-time task was named: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(1500));
    }

    #[test]
    fn a_busy_child_of_the_test_is_not_other_work() {
        // Our own child spins: not other work.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let w = OtherLoad::start();
        std::thread::sleep(Duration::from_millis(600));
        let other = w.so_far();
        let _ = child.kill();
        let _ = child.wait();
        let all: f64 = other
            .top
            .iter()
            .filter(|t| t.0 == child.id())
            .map(|t| t.2)
            .sum();
        assert_eq!(all, 0.0, "{other:?}");
    }
}
