//! Frequency caps on fake sysfs trees: chosen, written, and put back on
//! every exit path, `kill -9` included (the watchdog).

use pinsight_emulate::cpufreq::{self, CapError, Caps};
use pinsight_sys::FsRoot;
use std::path::Path;
use std::time::{Duration, Instant};

/// A machine of `n` CPUs, each its own policy (400-4000 MHz), or CPUs
/// 0-1 sharing one when `shared`.
fn tree(dir: &Path, n: usize, shared: bool) {
    for cpu in 0..n {
        let d = dir.join(format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
        std::fs::create_dir_all(&d).unwrap();
        let related = if shared && cpu < 2 {
            "0-1".to_string()
        } else {
            cpu.to_string()
        };
        for (f, v) in [
            ("related_cpus", related.as_str()),
            ("cpuinfo_min_freq", "400000"),
            ("cpuinfo_max_freq", "4000000"),
            ("scaling_max_freq", "3900000"),
        ] {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    }
}

/// [`tree`] in a fresh directory, and its root.
fn machine(n: usize, shared: bool) -> (tempfile::TempDir, FsRoot) {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), n, shared);
    let fs = FsRoot::at(dir.path()).unwrap();
    (dir, fs)
}

fn max_freq(dir: &Path, cpu: usize) -> String {
    std::fs::read_to_string(dir.join(format!(
        "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_max_freq"
    )))
    .unwrap()
    .trim()
    .to_string()
}

#[test]
fn caps_are_chosen_per_policy_and_refused_where_impossible() {
    let _g = pinsight_testkit::serial();
    let (_dir, fs) = machine(4, true);
    let p = cpufreq::policies(&fs, &[(2, 0.5), (3, 0.5)]).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!(
        (p[0].0.max_khz, p[0].0.min_khz, p[0].0.original.as_str()),
        (4_000_000, 400_000, "3900000")
    );
    // CPUs 0-1 share a policy: both must be asked the same speed.
    assert!(matches!(
        cpufreq::policies(&fs, &[(1, 0.5)]),
        Err(CapError::SharedPolicy { .. })
    ));
    assert_eq!(
        cpufreq::policies(&fs, &[(0, 0.5), (1, 0.5)]).unwrap().len(),
        1
    );
    assert!(matches!(
        cpufreq::policies(&fs, &[(2, 0.05)]),
        Err(CapError::BelowMin { khz: 200_000, .. })
    ));
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(empty.path().join("sys/devices/system/cpu/cpu0")).unwrap();
    let bare = FsRoot::at(empty.path()).unwrap();
    assert!(matches!(
        cpufreq::policies(&bare, &[(0, 0.5)]),
        Err(CapError::NoCpufreq { .. })
    ));
}

#[test]
fn caps_are_written_and_restored_on_drop_and_by_the_restorer() {
    let _g = pinsight_testkit::serial();
    let (dir, fs) = machine(4, false);
    let p = cpufreq::policies(&fs, &[(2, 0.5), (3, 0.25)]).unwrap();
    let caps = Caps::apply(&fs, &p).unwrap();
    assert_eq!(
        (max_freq(dir.path(), 2), max_freq(dir.path(), 3)),
        ("2000000".into(), "1000000".into())
    );
    assert_eq!(
        caps.set(&fs, 3, 0.01).unwrap(),
        400_000,
        "kept above the lowest frequency"
    );
    drop(caps);
    assert_eq!(
        (max_freq(dir.path(), 2), max_freq(dir.path(), 3)),
        ("3900000".into(), "3900000".into())
    );
    // The signal lifecycle's restorer, then a drop that has nothing left.
    let caps = Caps::apply(&fs, &p).unwrap();
    assert!(cpufreq::restore_all().is_empty());
    assert_eq!(max_freq(dir.path(), 2), "3900000");
    drop(caps);
    assert_eq!(max_freq(dir.path(), 3), "3900000");
}

/// Not a test on its own: run by `kill_9_restores_every_cap` in a child
/// process (this binary again) to cap a fake tree and wait to be killed.
#[test]
fn hold_caps_until_killed() {
    let Some(root) = std::env::var_os("PINSIGHT_EMULATE_TEST_HOLD") else {
        return;
    };
    let root = Path::new(&root);
    let fs = FsRoot::at(root).unwrap();
    let p = cpufreq::policies(&fs, &[(1, 0.5), (2, 0.5), (3, 0.75)]).unwrap();
    let _caps = Caps::apply(&fs, &p).unwrap();
    std::fs::write(root.join("ready"), "").unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn kill_9_restores_every_cap() {
    let _g = pinsight_testkit::serial();
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 4, false);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "cpufreq::hold_caps_until_killed",
            "--test-threads=1",
        ])
        .env("PINSIGHT_EMULATE_TEST_HOLD", dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.path().join("ready").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the holder never capped the tree"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(max_freq(dir.path(), 1), "2000000");
    assert_eq!(max_freq(dir.path(), 3), "3000000");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = Instant::now();
    let restored = || (1..4).all(|c| max_freq(dir.path(), c) == "3900000");
    while !restored() && killed.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        restored(),
        "caps left after kill -9: {:?}",
        (0..4).map(|c| max_freq(dir.path(), c)).collect::<Vec<_>>()
    );
    assert_eq!(
        max_freq(dir.path(), 0),
        "3900000",
        "an uncapped CPU is untouched"
    );
}

/// `start` picks caps where every slowed CPU has a policy of its own,
/// names the mechanism, writes a cap per CPU and restores it on stop. (On a
/// fake tree the caps slow nothing: the calibration ends at its round limit
/// and says the speed was not reached.)
#[test]
fn start_prefers_caps_and_stop_restores_them() {
    let _g = pinsight_testkit::serial();
    let Some((cpus, targets)) =
        crate::common::second_cpu_at_half_speed("needs two usable CPUs for the probes")
    else {
        return;
    };
    let (dir, fs) = machine(cpus[1] + 1, false);
    let opts = pinsight_emulate::Options {
        window: Duration::from_millis(20),
        confirm: 1,
        max_rounds: 2,
        ..Default::default()
    };
    let mut progress = pinsight_testkit::progress::Recorder::default();
    let em = pinsight_emulate::start(&fs, &targets, &opts, &mut progress).unwrap();
    let r = em.report().clone();
    assert_eq!(r.mechanism, pinsight_emulate::Mechanism::Cpufreq);
    // One task that counts every window: both rounds, then the confirmation.
    let tasks = progress.tasks();
    assert_eq!(tasks.len(), 1, "{progress:?}");
    assert!(
        tasks[0].what.starts_with("calibrating cpufreq"),
        "{tasks:?}"
    );
    assert_eq!((tasks[0].done, tasks[0].total), (3, 3), "{tasks:?}");
    assert_eq!(r.windows, 3);
    assert!(tasks[0].labels[2].ends_with(": confirming"), "{tasks:?}");
    assert!(r.why_not_cpufreq.is_none() && r.period_us.is_none());
    let khz = r.kinds[0].settings[0].max_khz.unwrap();
    assert_eq!(max_freq(dir.path(), cpus[1]), khz.to_string());
    assert!(r.limits[0].contains("memory-bound programs slow less"));
    assert!(em.stealer_pids().is_empty());
    assert!(em.stop().is_empty());
    assert_eq!(max_freq(dir.path(), cpus[1]), "3900000");
    assert_eq!(
        max_freq(dir.path(), cpus[0]),
        "3900000",
        "the reference CPU is never capped"
    );
}
