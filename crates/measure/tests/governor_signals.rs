//! SIGINT/SIGTERM/SIGHUP restore governors and stop runs in flight. Each
//! case runs in a child process (this test binary again, selected by an
//! environment variable) that sets a governor on a fake cpufreq tree,
//! starts a measured run, then signals itself.

use pinsight_cpuset::CpuSet;
use pinsight_measure::{GovernorGuard, Measurer, Options};
use pinsight_sys::FsRoot;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Only a hang fails on time: a busy CI machine may be slow, never wrong.
const HANG_GUARD: Duration = Duration::from_secs(30);

const MODE: &str = "PINSIGHT_MEASURE_SIGNAL_CHILD";
const TREE: &str = "PINSIGHT_MEASURE_SIGNAL_TREE";

fn gov_file(root: &Path, cpu: usize) -> PathBuf {
    root.join(format!(
        "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
    ))
}

fn fake_tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (cpu, g) in [(0, "schedutil"), (1, "powersave")] {
        let f = gov_file(d.path(), cpu);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, format!("{g}\n")).unwrap();
        std::fs::write(
            f.with_file_name("scaling_available_governors"),
            "performance powersave schedutil\n",
        )
        .unwrap();
    }
    d
}

fn hook(sig: i32) {
    let root = PathBuf::from(std::env::var_os(TREE).unwrap());
    // The hook runs after the restore: record what it saw.
    let seen = std::fs::read_to_string(gov_file(&root, 0)).unwrap();
    std::fs::write(root.join("hook"), format!("{sig} {}", seen.trim())).unwrap();
}

/// The child side: only acts when spawned by a test below (with
/// `--ignored`); not a test of its own.
#[test]
#[ignore = "the spawned child's entry point, not a test"]
fn signal_child() {
    let Ok(sig) = std::env::var(MODE) else { return };
    let sig: i32 = sig.parse().unwrap();
    let root = PathBuf::from(std::env::var_os(TREE).unwrap());
    pinsight_measure::install_signal_cleanup().unwrap();
    pinsight_measure::set_signal_hook(hook);
    let fs = FsRoot::at(&root).unwrap();
    let _guard =
        GovernorGuard::set(&fs, &CpuSet::parse_list("0-1").unwrap(), "performance").unwrap();
    assert_eq!(
        std::fs::read_to_string(gov_file(&root, 1)).unwrap(),
        "performance"
    );
    // A measured run in flight, in its own process group.
    let pidfile = root.join("pid");
    let runner = std::thread::spawn(move || {
        let (m, _) = Measurer::new(
            &FsRoot::live(),
            Options {
                energy: false,
                ..Options::default()
            },
        );
        let mut c = pinsight_sys::spawn::Spawn::new("sh");
        c.arg("-c")
            .arg(format!("echo $$ > {}; exec sleep 30", pidfile.display()));
        let _ = m.run(c);
    });
    let t = Instant::now();
    while !root.join("pid").exists()
        || std::fs::read_to_string(root.join("pid"))
            .unwrap()
            .is_empty()
    {
        assert!(t.elapsed() < HANG_GUARD);
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling ourselves.
    unsafe { libc::kill(libc::getpid(), sig) };
    std::thread::sleep(Duration::from_secs(10));
    drop(runner);
    unreachable!("the signal should have ended this process");
}

fn check(sig: i32) {
    use std::os::unix::process::CommandExt;
    let d = fake_tree();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    // The cleanup keeps an inherited SIG_IGN (nohup ignores SIGHUP, a
    // non-interactive shell's background job SIGINT): the child starts with
    // the signal at its default, as from a terminal, whatever the runner.
    // SAFETY: signal(2) is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(sig, libc::SIG_DFL);
            Ok(())
        });
    }
    let name = pinsight_testkit::test_path(module_path!(), "signal_child");
    let status = cmd
        .args([
            name.as_str(),
            "--exact",
            "--ignored",
            "--test-threads=1",
            "-q",
        ])
        .env(MODE, sig.to_string())
        .env(TREE, d.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        status.signal(),
        Some(sig),
        "child must die by the signal it got: {status:?}"
    );
    assert_eq!(
        std::fs::read_to_string(gov_file(d.path(), 0)).unwrap(),
        "schedutil"
    );
    assert_eq!(
        std::fs::read_to_string(gov_file(d.path(), 1)).unwrap(),
        "powersave"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("hook")).unwrap(),
        format!("{sig} schedutil")
    );
    // The measured `sleep 30` was killed with its group.
    let pid: i32 = std::fs::read_to_string(d.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let t = Instant::now();
    loop {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.rsplit(')').next().unwrap().trim_start().starts_with('Z'))
            .unwrap_or(false);
        if !alive {
            break;
        }
        assert!(
            t.elapsed() < HANG_GUARD,
            "measured process {pid} survived the signal"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigint_restores_governors_and_kills_runs() {
    check(libc::SIGINT);
}

#[test]
fn sigterm_restores_governors_and_kills_runs() {
    check(libc::SIGTERM);
}

#[test]
fn sighup_restores_governors_and_kills_runs() {
    check(libc::SIGHUP);
}
