//! The cost of `pinsight load` on a machine with 1,000 more threads: a
//! child process (this bench binary again, `PINSIGHT_BENCH_HOLDER=1`)
//! holds 1,000 sleeping (parked) threads besides whatever runs, then
//! 1. criterion: one full reading (`/proc/stat`, `/proc/interrupts`,
//!    `/proc/softirqs` and every thread's `stat`, as the first reading of
//!    a view is) and one analysis;
//! 2. the share of one CPU the live view uses at its default 1 s interval:
//!    this process's CPU time (getrusage, user + system) over five
//!    intervals of `Watch::next`, divided by the wall time. Target: under
//!    1% (0.01). Later readings skip the threads of processes that did
//!    not run (`ThreadReader`); the full reading's cost is the bound when
//!    every process runs. No assertion: the machine is shared; read the
//!    figures.

use criterion::{criterion_group, Criterion};
use pinsight_load::report::{CpuInfo, Machine};
use pinsight_load::{analyse, sample, Options, Parts, Watch};
use pinsight_sys::FsRoot;
use std::hint::black_box;
use std::time::{Duration, Instant};

const THREADS: usize = 1000;

fn cpu_seconds() -> f64 {
    // getrusage(2): RUSAGE_SELF, every thread of the process.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage to fill in.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
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
            .map(|c| CpuInfo {
                cpu: *c,
                kind: None,
                mark: None,
                core: Some(*c),
                capacity: 1.0,
                speed: 1.0,
            })
            .collect(),
        capacity_source: "bench".into(),
    }
}

/// The child: 1,000 parked threads, until killed.
fn hold() -> ! {
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
    let _ = child.kill();
    let _ = child.wait();
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
