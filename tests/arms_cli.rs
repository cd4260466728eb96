//! Arms that are what they say, end to end: `run --report` names the
//! mechanism that really placed the threads, and a pin the kernel refuses
//! fails `run` and `compare` with the reason (never a note and exit 0).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn pinsight(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    c.current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("COLUMNS");
    c
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The first two usable CPUs as `cpus:A,B`, or a counted skip.
fn two_cpus() -> Option<String> {
    let u = pinsight_testkit::usable_cpus();
    if u.len() < 2 {
        pinsight_testkit::skip(format!("needs two usable CPUs (have {u:?})"));
        return None;
    }
    Some(format!("cpus:{},{}", u[0], u[1]))
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_32_bit_program_is_reported_as_placed_by_the_watcher() {
    let Some(policy) = two_cpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let prog = pinsight_testkit::elf::write_i386_exit7(dir.path(), "i386");
    let out = pinsight(dir.path())
        .args(["run", &policy, "--report", "--"])
        .arg(&prog)
        .output()
        .unwrap();
    let (_, err) = text(&out);
    if out.status.code() == Some(126) {
        pinsight_testkit::skip(format!("this kernel cannot run 32-bit programs: {err}"));
        return;
    }
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("placed by: the /proc watcher: the shim cannot reach this program"),
        "{err}"
    );
    assert!(!err.contains("LD_PRELOAD shim"), "{err}");
    assert!(err.contains("32-bit i386 program"), "{err}");
}

/// A copy of python3 with a file capability, in a directory anyone may
/// read, for an unprivileged launcher whose pins the kernel refuses
/// (`cap_safe_nice` in security/commoncap.c: the target's permitted
/// capabilities must be a subset of the caller's, or the caller needs
/// CAP_SYS_NICE). `None` (a counted skip) unless root with setcap,
/// setpriv and python3.
fn capability_copy(dir: &Path) -> Option<PathBuf> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        });
    if uid.as_deref() != Some("0") {
        pinsight_testkit::skip("needs root to give a program file capabilities");
        return None;
    }
    let python = Path::new("/usr/bin/python3");
    for tool in ["/usr/sbin/setcap", "/usr/bin/setpriv"] {
        if !Path::new(tool).exists() {
            pinsight_testkit::skip(format!("{tool} is not installed (libcap2-bin, util-linux)"));
            return None;
        }
    }
    if !python.exists() {
        pinsight_testkit::skip("python3 is not installed");
        return None;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let copy = dir.join("python3");
    // Copied by cp, not std::fs::copy: a test thread forking meanwhile
    // would hold our writable descriptor until its exec, and executing the
    // copy then fails with ETXTBSY.
    let cp = Command::new("cp").arg(python).arg(&copy).status().unwrap();
    assert!(cp.success());
    let ok = Command::new("/usr/sbin/setcap")
        .args(["cap_net_raw+ep"])
        .arg(&copy)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        pinsight_testkit::skip("setcap failed (a file system without extended attributes?)");
        return None;
    }
    Some(copy)
}

/// `pinsight ARGS` as user nobody without capabilities.
fn as_nobody(dir: &Path, args: &[&str]) -> Output {
    Command::new("/usr/bin/setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_pinsight"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .output()
        .unwrap()
}

const THREADED: &str = "import threading, time\n\
                        t = threading.Thread(target=time.sleep, args=(0.2,))\n\
                        t.start(); t.join()\n";

#[test]
fn a_pin_the_kernel_refuses_fails_run_and_compare_with_the_reason() {
    let Some(policy) = two_cpus() else { return };
    let _serial = pinsight_testkit::serial();
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = capability_copy(dir.path()) else {
        return;
    };
    let prog = prog.to_str().unwrap();
    let out = as_nobody(dir.path(), &["run", &policy, "--", prog, "-c", THREADED]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("has file capabilities")
            && err.contains("pinsight: error: the kernel refused to pin")
            && err.contains("Operation not permitted")
            && err.contains("the program ran (exit 0) but not as planned"),
        "{err}"
    );
    let out = as_nobody(
        dir.path(),
        &[
            "compare",
            "--policies",
            &format!("os,{policy}"),
            "--runs",
            "2",
            "--warmup",
            "0",
            "--",
            prog,
            "-c",
            THREADED,
        ],
    );
    let (_, err) = text(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("not placed as planned: the kernel refused to pin")
            && err.contains("Operation not permitted"),
        "{err}"
    );
}
