//! The cost of `pinsight load` on a machine with 10,000 more threads: a
//! child process (this bench binary again, `PINSIGHT_BENCH_HOLDER=1`)
//! holds 10,000 sleeping (parked) threads besides whatever runs, then
//! 1. criterion: one full reading (`/proc/stat`, `/proc/interrupts`,
//!    `/proc/softirqs` and every thread's `stat`, as the first reading of
//!    a view is) and one analysis;
//! 2. the share of one CPU the live view uses at its default 1 s interval:
//!    this process's CPU time (getrusage, user + system) over five
//!    intervals of `Watch::next`, divided by the wall time. Target: under
//!    1% (0.01). Later readings skip the threads of processes that did
//!    not run (`ThreadReader`); the full reading's cost is the bound when
//!    every process runs;
//! 3. beside `top -b -n 1` (procps, one batch screen: what an operator
//!    runs to see the same machine): the CPU time (user + system, from
//!    getrusage) of one full reading of every thread, of one later
//!    reading (the readings within an interval: processes that did not
//!    run are not re-read) and of top's run (its child CPU time), and
//!    the ratios. Target: one reading at most top's. No assertion: the
//!    machine is shared; read the figures.

use criterion::{criterion_group, Criterion};
use pinsight_load::report::{CpuInfo, Machine};
use pinsight_load::{analyse, sample, Options, Parts, Watch};
use pinsight_sys::FsRoot;
use std::hint::black_box;
use std::time::{Duration, Instant};

const THREADS: usize = 10_000;

fn cpu_seconds() -> f64 {
    usage(libc::RUSAGE_SELF)
}

/// getrusage(2) of `who` (RUSAGE_SELF: every thread of the process;
/// RUSAGE_CHILDREN: the children waited for), user + system seconds.
fn usage(who: libc::c_int) -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage to fill in.
    unsafe { libc::getrusage(who, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn machine(fs: &FsRoot) -> Machine {
    let s = sample::read(
        fs,
        &Parts {
            threads: false,
            exclude: Vec::new(),
        },
    )
    .expect("/proc/stat");
    Machine {
        cpus: s
            .stat
            .keys()
            .map(|c| CpuInfo::unkinded(*c, Some(*c), 1.0, 1.0))
            .collect(),
        capacity_source: "bench".into(),
    }
}

/// The child: 10,000 parked threads, until killed.
fn hold() -> ! {
    // Dies with the bench (killed, or ended by a closed pipe) rather than
    // holding its threads on the machine for ever.
    // SAFETY: prctl(2) with PR_SET_PDEATHSIG and a signal number.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    let _threads: Vec<_> = (0..THREADS)
        .map(|_| {
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(|| loop {
                    std::thread::park();
                })
                .expect("thread")
        })
        .collect();
    println!("ready");
    loop {
        std::thread::park();
    }
}

fn bench(c: &mut Criterion) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().expect("bench binary"))
        .env("PINSIGHT_BENCH_HOLDER", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("thread holder");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("pipe"))
        .read_line(&mut line)
        .expect("holder ready");
    let fs = FsRoot::live();
    let n = sample::read_threads(&fs).len();
    println!("threads on this machine: {n} ({THREADS} of them parked in the bench's child)");
    let m = machine(&fs);
    c.bench_function("one_reading", |b| {
        b.iter(|| black_box(sample::read(&fs, &Parts::default())))
    });
    let a = sample::read(&fs, &Parts::default()).unwrap();
    let z = sample::read(&fs, &Parts::default()).unwrap();
    c.bench_function("one_analysis", |b| {
        b.iter(|| black_box(analyse(&m, &a, &z, Options::default())))
    });

    let mut w = Watch::start(fs.clone(), m, Options::default(), Parts::default()).unwrap();
    let mut silent = pinsight_sys::progress::Silent;
    let intervals = 5;
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    for _ in 0..intervals {
        black_box(w.next(Duration::from_secs(1), &mut silent).unwrap());
    }
    let (cpu, wall) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    println!(
        "load at a 1 s interval with {n} threads: {:.2} ms of CPU per interval, {:.4} of one CPU (target < 0.01)",
        cpu / intervals as f64 * 1e3,
        cpu / wall
    );
    beside_top(&fs, n);
    let _ = child.kill();
    let _ = child.wait();
}

/// The CPU seconds `f` takes, the median of `runs`.
fn cpu_of(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let a = cpu_seconds();
            f();
            cpu_seconds() - a
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[runs / 2]
}

/// One reading of every thread (the first of an interval), one later
/// reading (threads of processes that did not run taken from the one
/// before, as within an interval), and `top -b -n 1`, by CPU time.
fn beside_top(fs: &FsRoot, n: usize) {
    let runs = 7;
    let full = cpu_of(runs, || {
        black_box(sample::read(fs, &Parts::default()));
    });
    let mut reader = sample::ThreadReader::default();
    black_box(reader.read(fs));
    let later = cpu_of(runs, || {
        black_box(reader.read(fs));
    });
    let Some(top) = top_cpu(runs, &["-b", "-n", "1"]) else {
        println!("top -b -n 1 did not run here (procps missing): no comparison");
        return;
    };
    // top's thread view reads every thread, as the first reading does.
    let threads = top_cpu(runs, &["-H", "-b", "-n", "1"]).unwrap_or(f64::NAN);
    println!(
        "with {n} threads, CPU time of one reading: every thread {:.1} ms, a later one \
         {:.1} ms; top -b -n 1 {:.1} ms, top -H -b -n 1 {:.1} ms; ratios to top {:.2} and \
         {:.2} (target <= 1), the first to top -H {:.2}",
        full * 1e3,
        later * 1e3,
        top * 1e3,
        threads * 1e3,
        full / top.max(1e-9),
        later / top.max(1e-9),
        full / threads.max(1e-9)
    );
}

/// The median CPU time of `top ARGS` (its child CPU time), `None` when
/// it does not run.
fn top_cpu(runs: usize, args: &[&str]) -> Option<f64> {
    let mut top = Vec::new();
    for _ in 0..runs {
        let a = usage(libc::RUSAGE_CHILDREN);
        let ok = std::process::Command::new("top")
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        top.push(usage(libc::RUSAGE_CHILDREN) - a);
    }
    top.sort_by(f64::total_cmp);
    Some(top[runs / 2])
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
fn main() {
    if std::env::var_os("PINSIGHT_BENCH_HOLDER").is_some() {
        hold();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
