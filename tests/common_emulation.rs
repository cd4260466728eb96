//! One running `pinsight emulate` for the live tests on the emulated
//! hybrid (`emulate_dynamic_live`, `balance_emulated_live`), with the
//! premise each test checks before it asserts: the speed the emulation
//! actually took away *during the test*, measured outside pinsight as
//! the stealer's own CPU time over the test's window (`/proc/PID/stat`),
//! beside the speed asked.
//!
//! Why measured: the stealer is calibrated once at the start; a host that
//! moves the vCPUs, or another real-time task, can change what it takes
//! later (a balance test once failed with the "slowed" CPU running faster
//! than the fast one). A test whose emulation drifted beyond
//! [`DRIFT`] is a counted skip with the figures, never a failure or a
//! pass by luck. Another emulation running beside the test is refused
//! before it starts ([`pinsight_testkit::premise::live`]).

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common_live::start_on;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_pinsight");

/// Largest allowed difference between the share of the slowed CPU the
/// stealer took during a test and the share asked (1 − speed).
pub const DRIFT: f64 = 0.05;

/// A running `pinsight emulate --kinds P:P,E:E@SPEED -- sh -c 'echo
/// stealers; exec cat'`. Closing its input (on drop, or when the test
/// process dies, however) ends `cat` and so the emulation: no stealer
/// outlives the test.
pub struct Emulation {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The `--kinds` declaration (`PINSIGHT_KINDS` of the emulated commands).
    pub kinds: String,
    /// `CPU:PID,…` of the stealers (`PINSIGHT_EMULATION_STEALERS`).
    pub stealers: String,
    /// The fast CPU and the slowed one.
    pub p: usize,
    pub e: usize,
    /// The speed asked of `e`.
    pub asked: f64,
    /// The speed ratio the stealer's calibration achieved (SCHED_FIFO
    /// probes), as `emulate --json` reports it.
    pub achieved: f64,
    stealer: u32,
    mark: (Instant, f64),
}

/// The start of a test on the emulated hybrid: two usable CPUs, the
/// live premise on them ([`pinsight_testkit::premise::live`]), then the
/// second slowed to `speed`; `None` after a counted skip.
pub fn begin(speed: f64) -> Option<(pinsight_testkit::premise::Live, Emulation)> {
    let usable = pinsight_testkit::usable_cpus();
    if usable.len() < 2 {
        pinsight_testkit::skip(format!("needs two usable CPUs (have {})", usable.len()));
        return None;
    }
    let (p, e) = (usable[0], usable[1]);
    let live = pinsight_testkit::premise::live(&[p, e])?;
    let em = Emulation::start(p, e, speed)?;
    Some((live, em))
}

/// `emulate`'s stderr up to the end of its JSON report (a line `}`):
/// what it said before the report (the kinds note, or why it refused),
/// and the report; the report is empty when stderr ended without one.
pub fn read_report(err: &mut impl BufRead) -> (String, String) {
    let mut text = String::new();
    let mut said = String::new();
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        if line.starts_with('{') || !text.is_empty() {
            text.push_str(&line);
        } else {
            said.push_str(&line);
        }
        if line.trim_end() == "}" {
            break;
        }
        line.clear();
    }
    (said, text)
}

/// The PID of CPU `e`'s stealer in `PINSIGHT_EMULATION_STEALERS`
/// (`CPU:PID,…`, white space around it ignored).
pub fn stealer_of(stealers: &str, e: usize) -> u32 {
    stealers
        .trim()
        .split(',')
        .find_map(|s| {
            let (cpu, pid) = s.split_once(':')?;
            (cpu.parse::<usize>().ok()? == e).then(|| pid.parse::<u32>().ok())?
        })
        .unwrap_or_else(|| panic!("no stealer of CPU {e} in {stealers:?}"))
}

impl Emulation {
    /// Slows `e` to `speed` (`p` stays fast) and waits for the report
    /// (printed once the stealers run); `None` after a counted skip (not
    /// root: the stealers are SCHED_FIFO).
    pub fn start(p: usize, e: usize, speed: f64) -> Option<Emulation> {
        if pinsight_sys::process::geteuid() != 0 {
            pinsight_testkit::skip("duty-cycle stealers need root (SCHED_FIFO)");
            return None;
        }
        let kinds = format!("{p}:P,{e}:E@{speed}");
        let mut child = Command::new(BIN)
            .args(["emulate", "--json", "--kinds", &kinds])
            .args(["--mechanism", "duty-cycle", "--", "sh", "-c"])
            .arg("echo \"stealers=$PINSIGHT_EMULATION_STEALERS\"; exec cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        // With a CMD the report is on stderr, after the kinds note; the
        // command's first line, on stdout, names the stealers.
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let (said, text) = read_report(&mut err);
        if text.is_empty() {
            // emulate refused before calibrating: another emulation holds
            // the machine, or a real-time task would share its CPUs. The
            // premise of every test on it failed: a counted skip.
            let status = child.wait().unwrap();
            if status.code() == Some(1) {
                pinsight_testkit::skip(format!(
                    "premise failed: emulate refused to start: {}",
                    said.trim()
                ));
                return None;
            }
            panic!("emulate ended with {status} before its report: {said}");
        }
        // Keep draining stderr, so a late warning never blocks emulate.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut err, &mut sink);
        });
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("emulate's report: {e}: {text:?}"));
        let achieved = v["kinds"][0]["achieved"]["median"].as_f64().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let stealers = first
            .trim()
            .strip_prefix("stealers=")
            .unwrap_or_else(|| panic!("no stealers line from the emulated command: {first:?}"))
            .to_string();
        let stealer = stealer_of(&stealers, e);
        let mark = (Instant::now(), cpu_seconds(stealer));
        Some(Emulation {
            child,
            stdin,
            kinds,
            stealers,
            p,
            e,
            asked: speed,
            achieved,
            stealer,
            mark,
        })
    }

    /// The share of the slowed CPU the stealer took since the emulation
    /// started: its own CPU seconds over the wall time.
    pub fn taken(&self) -> f64 {
        let secs = self.mark.0.elapsed().as_secs_f64().max(1e-3);
        (cpu_seconds(self.stealer) - self.mark.1) / secs
    }

    /// The speed the slowed CPU had since it started (1 − [`Self::taken`]).
    pub fn speed_seen(&self) -> f64 {
        1.0 - self.taken()
    }

    /// `Err(reason)` when the emulation drifted more than [`DRIFT`] from
    /// the speed asked since it started; `Ok` with a line of the figures.
    pub fn held(&self) -> Result<String, String> {
        let seen = self.speed_seen();
        let figures = format!(
            "emulated speed of CPU {}: asked {:.2}, calibrated {:.3}, held {:.3} \
             over {:.1} s (the stealer's own CPU time)",
            self.e,
            self.asked,
            self.achieved,
            seen,
            self.mark.0.elapsed().as_secs_f64()
        );
        // A stealer that is gone reads NaN: the premise failed.
        let off = (seen - self.asked).abs();
        if off.is_nan() || off > DRIFT {
            Err(format!("premise failed: {figures}, beyond {DRIFT}"))
        } else {
            Ok(figures)
        }
    }

    /// `c` with the emulation's kinds and stealers exported
    /// (`PINSIGHT_KINDS`, `PINSIGHT_EMULATION_STEALERS`), as `emulate --
    /// CMD` exports them.
    pub fn export<'c>(&self, c: &'c mut Command) -> &'c mut Command {
        c.env("PINSIGHT_KINDS", &self.kinds)
            .env("PINSIGHT_EMULATION_STEALERS", &self.stealers)
    }

    /// A pinsight command on the emulated machine (the kinds and stealers
    /// exported as `emulate -- CMD` does), in `dir`, restricted to the two
    /// emulated CPUs and at nice -20 ([`at_high_priority`]).
    pub fn pinsight(&self, dir: &std::path::Path) -> Command {
        let mut c = Command::new(BIN);
        self.export(&mut c)
            .current_dir(dir)
            .stdin(Stdio::null())
            .env("PINSIGHT_EMULATING", "duty-cycle")
            .env_remove("PINSIGHT_FSROOT")
            .env_remove("COLUMNS");
        // Only the two emulated CPUs: the experiments are designed for
        // one P and one E CPU, and on a bigger machine the other CPUs
        // (declared P) would take tasks and configurations too.
        start_on(&mut c, &[self.p, self.e]);
        at_high_priority(&mut c);
        c
    }
}

/// Skips (counted) and returns from the calling test when a premise
/// check (`Ok` or `Err` with its figures) failed, its reason after
/// `LABEL: ` where a label is given; prints the figures either way.
macro_rules! require_premise {
    ($result:expr) => {
        match $result {
            Ok(figures) => eprintln!("premise held: {figures}"),
            Err(why) => pinsight_testkit::skip_test!("{why}"),
        }
    };
    ($label:expr, $result:expr) => {
        match $result {
            Ok(figures) => eprintln!("premise held: {figures}"),
            Err(why) => pinsight_testkit::skip_test!("{}: {why}", $label),
        }
    };
}
pub(crate) use require_premise;

/// The pace of the two emulated CPUs as a program sees it, timed directly
/// (outside pinsight's measurements): the median elapsed seconds of
/// `pinsight workload pi -t 1 --size SIZE` pinned to the fast CPU and to
/// the slowed one, runs interleaved.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    pub p: f64,
    pub e: f64,
}

impl Pace {
    /// E/P time ratio: the speed factor the emulated machine really has.
    pub fn ratio(&self) -> f64 {
        self.e / self.p
    }
}

/// Most a CPU's time for the same program may move between the timings
/// before and after a test's measured part (see [`steady`]).
pub const STEADY: f64 = 0.08;

/// The premise of a test that compares figures measured at different
/// moments: the host ran each CPU at the same pace before and after the
/// measured part (each CPU's time within [`STEADY`]). On a shared VM it
/// does not always: with the emulation held and nothing else running,
/// the fast CPU ran a program 25% slower for tens of seconds (tune's sf
/// 2.07 against a brute force's 1.76 taken a minute before). `Err` with
/// the figures when it moved; `Ok` with them when it held.
pub fn steady(before: Pace, after: Pace) -> Result<String, String> {
    let moved = |a: f64, b: f64| (b / a - 1.0).abs();
    let figures = pace_figures(before, after);
    if moved(before.p, after.p) > STEADY || moved(before.e, after.e) > STEADY {
        Err(format!(
            "premise failed: the host changed a CPU's pace during the test: {figures}, \
             beyond {:.0}%",
            STEADY * 100.0
        ))
    } else {
        Ok(figures)
    }
}

/// Both timings of both CPUs, and their E/P ratios, in words.
fn pace_figures(before: Pace, after: Pace) -> String {
    format!(
        "the CPUs' pace timed directly: P {:.3} s then {:.3} s, E {:.3} s then {:.3} s \
         (E/P {:.2} then {:.2})",
        before.p,
        after.p,
        before.e,
        after.e,
        before.ratio(),
        after.ratio()
    )
}

/// [`steady`] for a test whose figures are ratios between the CPUs (how
/// evenly tasks on both progress): a pace both CPUs lost or gained alike
/// changes no such ratio, so only the E/P ratio must hold within
/// [`STEADY`].
pub fn steady_ratio(before: Pace, after: Pace) -> Result<String, String> {
    let figures = pace_figures(before, after);
    if (after.ratio() / before.ratio() - 1.0).abs() > STEADY {
        Err(format!(
            "premise failed: the host changed one CPU's pace against the other's during the \
             test: {figures}, E/P moved beyond {:.0}%",
            STEADY * 100.0
        ))
    } else {
        Ok(figures)
    }
}

impl Emulation {
    /// [`Pace`] over `reps` interleaved pairs of runs of `size` steps.
    pub fn pace(&self, dir: &std::path::Path, reps: usize, size: &str) -> Pace {
        let mut p = Vec::new();
        let mut e = Vec::new();
        for _ in 0..reps {
            p.push(self.time_pi(dir, &[self.p], "static", size));
            e.push(self.time_pi(dir, &[self.e], "static", size));
        }
        Pace {
            p: median(p),
            e: median(e),
        }
    }

    /// `pinsight workload pi --schedule SCHEDULE --size SIZE` with one
    /// thread per CPU of `cpus`, restricted to them: its own elapsed
    /// seconds (the one direct timing of every emulated-hybrid test).
    pub fn time_pi(
        &self,
        dir: &std::path::Path,
        cpus: &[usize],
        schedule: &str,
        size: &str,
    ) -> f64 {
        let mut c = self.pinsight(dir);
        start_on(&mut c, cpus);
        let threads = cpus.len().to_string();
        let o = c
            .args(["workload", "pi", "--json", "-t", &threads])
            .args(["--schedule", schedule, "--size", size])
            .output()
            .unwrap();
        crate::common_live::assert_exit(&o, 0);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["elapsed"].as_f64().unwrap()
    }
}

/// The middle value (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The stealer's CPU seconds; a stealer that is gone took nothing more,
/// and the drift check then fails the premise.
fn cpu_seconds(pid: u32) -> f64 {
    pinsight_testkit::premise::cpu_seconds(pid).unwrap_or(f64::NAN)
}

impl Drop for Emulation {
    /// End of input ends `cat`, and with it the emulation.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let t = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The program and all it starts run at nice -20, in an autogroup of
/// their own at nice -20 where the kernel groups by session
/// (CONFIG_SCHED_AUTOGROUP: nice then only orders tasks within a session,
/// and the autogroup's own nice, /proc/PID/autogroup, orders the groups;
/// sched(7), "The autogroup feature"). Other nice-0 work on a shared
/// machine (compilers) then takes next to nothing from them on either
/// CPU, so they see the slowed CPU as the stealer's calibration does
/// (SCHED_FIFO probes). At nice 0 the kernel moves that other load off the
/// slowed CPU onto the fast one and the gap they see narrows or vanishes
/// (E/P 0.9-1.0 for 0.5 at a load average of 8 on two CPUs). Root is
/// needed for the emulation anyway.
pub(crate) fn at_high_priority(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid(2), open(2), write(2), close(2) and setpriority(2)
    // are async-signal-safe; the path and value are static C strings.
    unsafe {
        c.pre_exec(|| {
            let group = c"/proc/self/autogroup";
            if libc::access(group.as_ptr(), libc::W_OK) == 0 {
                libc::setsid();
                let fd = libc::open(group.as_ptr(), libc::O_WRONLY);
                if fd >= 0 {
                    libc::write(fd, c"-20".as_ptr().cast(), 3);
                    libc::close(fd);
                }
            }
            if libc::setpriority(libc::PRIO_PROCESS, 0, -20) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
