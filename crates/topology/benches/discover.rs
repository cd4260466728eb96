//! Discovery speed on every recorded machine and the committed synthetic
//! ones; target: the 256-CPU POWER7 (`256ppc-8n8s4t`) under 10 ms.
//!
//! After the criterion runs (`cargo bench -p pinsight-topology`), prints the
//! ratio against hwloc on the same recorded trees, when `lstopo-no-graphics`
//! is installed: `HWLOC_FSROOT=DIR HWLOC_COMPONENTS=linux,stop
//! lstopo-no-graphics --of xml -`, timed over N runs each. lstopo's figure
//! includes its process start-up and XML output (that is what a user waits
//! for); pinsight's is the in-process `discover()` call.

use criterion::Criterion;
use pinsight_topology::{discover, FsRoot};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// (name, directory) of every fixture machine, hwloc ones first.
fn machines() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for sub in ["hwloc", "synthetic"] {
        let dir = fixtures().join(sub);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        out.extend(
            names
                .into_iter()
                .map(|n| (format!("{sub}/{n}"), dir.join(&n))),
        );
    }
    out
}

fn bench_discovery(c: &mut Criterion) {
    let mut g = c.benchmark_group("discover");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for (name, dir) in machines() {
        let fs = FsRoot::at(&dir).expect("fixture");
        g.bench_function(name.as_str(), |b| {
            b.iter(|| black_box(discover(black_box(&fs))))
        });
    }
    g.finish();
}

/// Mean wall time of `runs` calls of `f`, in milliseconds.
fn mean_ms(runs: u32, mut f: impl FnMut()) -> f64 {
    f();
    let t = Instant::now();
    for _ in 0..runs {
        f();
    }
    t.elapsed().as_secs_f64() * 1000.0 / runs as f64
}

fn lstopo_ok(dir: &Path) -> bool {
    Command::new("lstopo-no-graphics")
        .args(["--of", "xml", "-"])
        .env("HWLOC_FSROOT", dir)
        .env("HWLOC_COMPONENTS", "linux,stop")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn print_ratios() {
    const RUNS: u32 = 20;
    let have_lstopo = Command::new("lstopo-no-graphics")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_lstopo {
        println!(
            "lstopo-no-graphics not installed (apt-get install hwloc): no ratio against hwloc"
        );
    }
    println!("\nDiscovery time, mean of {RUNS} runs:");
    for (name, dir) in machines()
        .into_iter()
        .filter(|(n, _)| n.starts_with("hwloc/"))
    {
        let fs = FsRoot::at(&dir).expect("fixture");
        let ours = mean_ms(RUNS, || {
            black_box(discover(&fs));
        });
        let target = if name.ends_with("256ppc-8n8s4t") {
            format!(
                " (target < 10 ms: {})",
                if ours < 10.0 { "met" } else { "MISSED" }
            )
        } else {
            String::new()
        };
        if have_lstopo && lstopo_ok(&dir) {
            let theirs = mean_ms(RUNS, || {
                let _ = lstopo_ok(&dir);
            });
            println!(
                "{name}: pinsight {ours:.2} ms vs lstopo {theirs:.2} ms: ratio {:.2}{target}",
                ours / theirs
            );
        } else {
            println!("{name}: pinsight {ours:.2} ms{target}");
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_discovery(&mut c);
    c.final_summary();
    // `cargo bench` passes --bench; `cargo test --benches` does not: keep
    // test runs quick.
    if std::env::args().any(|a| a == "--bench") {
        print_ratios();
    }
}
