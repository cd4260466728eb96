//! `mix` with programs that end at once (`echo a`, `echo b`): a program
//! may exit, and be reaped, before the scheduler's manager first looks
//! for it. That is its end, counted like any other, never "no process
//! N" (issue 34: 5 of 7 tries failed so, `--resume` too). Repeated,
//! since it is a race; each mix takes a fraction of a second.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// pinsight on the first two usable CPUs, declared P and E; `None`
/// (a logged skip) with fewer than two.
fn mix(dir: &Path, args: &[&str]) -> Option<Output> {
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip(format!("mix needs two usable CPUs (have {})", cpus.len()));
        return None;
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    let set: pinsight_cpuset::CpuSet = cpus[..2].iter().copied().collect();
    pinsight_sys::affinity::set_affinity_before_exec(&mut c, &set).unwrap();
    let kinds = format!("{}:P,{}:E", cpus[0], cpus[1]);
    Some(
        c.current_dir(dir)
            .stdin(Stdio::null())
            .env_remove("PINSIGHT_FSROOT")
            .env_remove("PINSIGHT_KINDS")
            .args(["--kinds", &kinds, "mix"])
            .args(args)
            .output()
            .unwrap(),
    )
}

/// The report: exit 0, every scheduler, every program counted `runs`
/// times or more.
fn complete(o: &Output, runs: u64) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = r["schedulers"].as_array().unwrap();
    assert_eq!(s.len(), 4, "{r}");
    for x in s {
        let progs = x["programs"].as_array().unwrap();
        assert_eq!(progs.len(), 2, "{x}");
        for p in progs {
            assert!(p["runs"].as_u64().unwrap() >= runs, "{p}");
        }
    }
}

#[test]
fn fast_programs_complete_and_are_counted_and_resume() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..7 {
        let j = format!("m{i}.jsonl");
        let args = [
            "--runs",
            "2",
            "--journal",
            &j,
            "--json",
            "--",
            "echo a",
            "echo b",
        ];
        let Some(o) = mix(d.path(), &args) else {
            return;
        };
        complete(&o, 2);
    }
    // Resumed after the references (every scheduler's mix left to run):
    // the same programs start again under the resume.
    let p = d.path().join("m0.jsonl");
    let text = std::fs::read_to_string(&p).unwrap();
    let kept: String = text
        .lines()
        .take_while(|l| !l.contains(r#""record":"start""#))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(kept.lines().count(), 5, "header and 4 references: {text}");
    for _ in 0..3 {
        std::fs::write(&p, &kept).unwrap();
        let o = mix(d.path(), &["--resume", "m0.jsonl", "--json"]).unwrap();
        complete(&o, 2);
    }
}
