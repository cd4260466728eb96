//! What several live tests share: pinsight restricted to two CPUs declared
//! P and E (`sched_live`, `mix_live`), a program that spins for longer than
//! any test, waiting for a child within a hang guard, the exit-status
//! check, and where a program's threads ran, sampled from /proc.

use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_pinsight");

/// Fails unless `o` exited with `code`, with its stderr as the message.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// What `o` printed on stdout as JSON; a failure shows both streams.
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {} stderr {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// The element of the JSON array `list` whose `field` is `value`; a
/// `list` that is no array fails the test.
#[track_caller]
pub fn entry<'a, T>(list: &'a Value, field: &str, value: T) -> Option<&'a Value>
where
    Value: PartialEq<T>,
{
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .find(|x| x[field] == value)
}

/// `c` started with stdout and stderr piped (for [`wait_with_guard`]).
pub fn spawn_piped(c: &mut Command) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `child`'s output once it ended; killed, and a panic "`what` did not
/// end", after `guard` (a bound that catches hangs and measures nothing).
pub fn wait_with_guard(mut child: Child, guard: Duration, what: &str) -> Output {
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if t.elapsed() > guard {
            let _ = child.kill();
            panic!("{what} did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first two usable CPUs, or `None` after a logged skip ("`what`
/// needs two usable CPUs").
pub fn two_usable_cpus(what: &str) -> Option<[usize; 2]> {
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip(format!(
            "{what} needs two usable CPUs (have {})",
            cpus.len()
        ));
        return None;
    }
    Some([cpus[0], cpus[1]])
}

/// Makes `c`'s child start on `cpus`: the kernel mask is prepared now and
/// set between `fork` and `exec` with one allocation-free call.
pub fn start_on(c: &mut Command, cpus: &[usize]) {
    let set: pinsight_cpuset::CpuSet = cpus.iter().copied().collect();
    assert!(!set.is_empty(), "no CPU to start on");
    let words = pinsight_sys::affinity::to_kernel_words(&set);
    // SAFETY: one raw syscall on a buffer allocated before the fork;
    // nothing is allocated or locked in the child.
    unsafe {
        c.pre_exec(move || pinsight_sys::affinity::set_affinity_words(0, &words));
    }
}

/// A command restricted to `cpus` from its start, with no input, none of
/// pinsight's variables from the test's environment, and the signals a
/// test delivers at their default
/// ([`crate::common_signals::at_default`]).
pub fn on_cpus(program: impl AsRef<std::ffi::OsStr>, cpus: &[usize]) -> Command {
    let mut c = Command::new(program);
    start_on(&mut c, cpus);
    c.stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .env_remove("COLUMNS");
    crate::common_signals::at_default(&mut c);
    c
}

/// pinsight on `cpus` (see [`on_cpus`]) with `--kinds` declaring the
/// first of them a P-core and every other CPU of `online` an E-core
/// (every online CPU needs a declared kind; pinsight schedules within its
/// own affinity: here `cpus`).
pub fn pinsight_p_e(cpus: &[usize], mut online: pinsight_cpuset::CpuSet) -> Command {
    let mut c = on_cpus(BIN, cpus);
    online.remove(cpus[0]);
    c.args(["--kinds", &format!("{}:P,{online}:E", cpus[0])]);
    c
}

/// Links `name` → the pinsight binary in `dir`, so a program's argv[0]
/// basename (and comm) is `name`.
pub fn named(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::os::unix::fs::symlink(BIN, &p).unwrap();
    p
}

/// `c` (pinsight, or a link to it) as a single-threaded CPU-bound program
/// that runs far longer than any test (killed by the test), started.
pub fn spin(mut c: Command) -> Child {
    c.args(["workload", "pi", "-t", "1", "-s", "1e12"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Where the threads of `pids` run, from /proc, over `window`: every 5 ms
/// each thread's schedstat run time since the last look is handed to
/// `count(index of its process in pids, CPU, seconds)` with the CPU its
/// stat reports now.
pub fn sample_run_time(pids: &[u32], window: Duration, mut count: impl FnMut(usize, usize, f64)) {
    let mut last: BTreeMap<(usize, String), u64> = BTreeMap::new();
    let t = Instant::now();
    while t.elapsed() < window {
        for (i, pid) in pids.iter().enumerate() {
            let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for e in dir.flatten() {
                let tid = e.file_name().to_string_lossy().into_owned();
                let (Ok(ss), Ok(stat)) = (
                    std::fs::read_to_string(e.path().join("schedstat")),
                    std::fs::read_to_string(e.path().join("stat")),
                ) else {
                    continue;
                };
                let run: u64 = ss.split_whitespace().next().unwrap().parse().unwrap();
                let after = &stat[stat.rfind(')').unwrap() + 1..];
                // Field 39 (processor) is the 37th after the name.
                let cpu: usize = after.split_whitespace().nth(36).unwrap().parse().unwrap();
                if let Some(prev) = last.insert((i, tid), run) {
                    count(i, cpu, (run - prev) as f64 / 1e9);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
