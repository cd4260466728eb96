//! Bounded input: every number flag has an upper bound (a huge value is a
//! usage error, exit 2, never an allocator abort or a panic), a duration of
//! 0 is refused where it means nothing, input files are read with a size
//! bound, messages never echo raw control bytes, and the directory an
//! `--fsroot X.tar.gz` is unpacked into is removed on SIGTERM, SIGINT and
//! SIGHUP.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    crate::common_signals::at_default(&mut c);
    c.args(args)
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .stdin(Stdio::null());
    c
}

fn pinsight(args: &[&str]) -> Output {
    cmd(args).output().expect("pinsight runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A usage error: exit 2, an `error:` line naming `flag`, no panic.
fn refused(args: &[&str], flag: &str) {
    let o = pinsight(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    let first = err.lines().next().unwrap_or("");
    assert!(first.contains("error"), "{args:?}: {err}");
    assert!(first.contains(flag), "{args:?}: '{flag}' not in: {first}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

const HUGE: &str = "99999999999999999";

#[test]
fn every_number_flag_has_an_upper_bound() {
    let table: &[(&[&str], &str)] = &[
        (&["plan", "p-set", "-t", "99999999999"], "--threads"),
        (&["plan", "balance", "--tasks", HUGE], "--tasks"),
        (&["run", "compact", "-t", HUGE, "--", "true"], "--threads"),
        (&["pin", "1", "compact", "-t", HUGE], "--threads"),
        (&["compare", "--runs", "4294967295", "--", "true"], "--runs"),
        (&["compare", "--warmup", HUGE, "--", "true"], "--warmup"),
        (&["compare", "-t", HUGE, "--", "true"], "--threads"),
        (
            &["compare", "--timeout", "99999999h", "--", "true"],
            "--timeout",
        ),
        (&["tune", "--runs", HUGE, "--", "true"], "--runs"),
        (&["tune", "--warmup", HUGE, "--", "true"], "--warmup"),
        (&["tune", "--validate", HUGE, "--", "true"], "--validate"),
        (&["tune", "--budget", "99999999h", "--", "true"], "--budget"),
        (&["mix", "--runs", HUGE, "--", "true"], "--runs"),
        (&["mix", "--interval", "99999s", "--", "true"], "--interval"),
        (
            &[
                "sched",
                "--schedulers",
                "os",
                "--interval",
                "99999s",
                "--",
                "true",
            ],
            "--interval",
        ),
        (&["sf", "--interval", "99999s", "--", "true"], "--interval"),
        (
            &["sf", "--duration", "99999999h", "--", "true"],
            "--duration",
        ),
        (
            &["simulate", "--programs", "p.csv", "--runs", HUGE],
            "--runs",
        ),
        (
            &["simulate", "--programs", "p.csv", "--interval", "99999s"],
            "--interval",
        ),
        (&["latency", "--runs", HUGE], "--runs"),
        (
            &["latency", "--latency", "x.csv", "--benchmark", HUGE],
            "--benchmark",
        ),
        (
            &["latency", "--max-time-per-pair", "99999999h"],
            "--max-time-per-pair",
        ),
        (&["latency", "--budget", "99999999h"], "--budget"),
        (&["latency", "--cpus", "0-99999999"], "--cpus"),
        (&["speed", "--per-kind", HUGE], "--per-kind"),
        (&["speed", "--mem-mib", HUGE], "--mem-mib"),
        (&["speed", "--budget", "99999999h"], "--budget"),
        (&["report", "--budget", "99999999h"], "--budget"),
        (&["slice", "--local-rank", HUGE], "--local-rank"),
        (&["slice", "--local-size", HUGE], "--local-size"),
        (&["workload", "pi", "-t", HUGE], "--threads"),
        (&["workload", "pi", "--max-iter", HUGE], "--max-iter"),
        (&["topo", "--watch", "--count", HUGE], "--count"),
        (
            &["topo", "--watch", "--duration", "99999999h"],
            "--duration",
        ),
        (
            &[
                "model",
                "--params",
                "f=0.9",
                "--seed",
                "999999999999999999999999",
            ],
            "--seed",
        ),
    ];
    for (args, flag) in table {
        refused(args, flag);
    }
}

#[test]
fn a_duration_of_zero_is_refused_where_it_means_nothing() {
    refused(&["compare", "--timeout", "0s", "--", "true"], "--timeout");
    refused(&["tune", "--budget", "0", "--", "true"], "--budget");
    refused(&["sf", "--duration", "0ms", "--", "true"], "--duration");
    refused(
        &[
            "sched",
            "--schedulers",
            "os",
            "--interval",
            "0s",
            "--",
            "true",
        ],
        "--interval",
    );
}

/// `/dev/zero` given as any input file ends with exit 2 within a second,
/// naming the file and what it is (a device: never read), in under 100 MB
/// (every file-taking flag, with a FIFO and a sparse file too, in
/// bounded_inputs.rs).
#[test]
fn endless_input_files_are_refused_at_once() {
    let z = "/dev/zero";
    let cases: &[&[&str]] = &[
        &["--hwloc-xml", z, "topo"],
        &["latency", "--latency", z],
        &["report", "--latency", z, "--no-speed"],
        &["plan", "balance", "--weights", z],
        &["plan", "latency-group", "--latency", z],
        &["tune", "--from", z],
        &["model", "--from", z],
        &["simulate", "--machine", "2P+2E", "--programs", z],
    ];
    for args in cases {
        let start = Instant::now();
        let o = pinsight(args);
        let took = start.elapsed();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("/dev/zero"), "{args:?}: {err}");
        assert!(
            err.contains("a character device, not a regular file"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    }
    // The largest resident size of every child waited for so far.
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    assert!(
        ru.ru_maxrss < 100 * 1024,
        "a child used {} KiB",
        ru.ru_maxrss
    );
}

#[test]
fn a_programs_file_over_the_phase_bound_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.csv");
    let mut csv = String::from("name,instructions,sf\n");
    for i in 0..100_001 {
        csv.push_str(&format!("p{},1e9,1.5\n", i % 1000));
    }
    // Rows of one program must be consecutive: sort by name.
    let mut rows: Vec<&str> = csv.lines().skip(1).collect();
    rows.sort_unstable();
    let csv = format!("name,instructions,sf\n{}\n", rows.join("\n"));
    std::fs::write(&path, csv).unwrap();
    let start = Instant::now();
    let o = pinsight(&[
        "simulate",
        "--machine",
        "2P+2E",
        "--programs",
        path.to_str().unwrap(),
    ]);
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("100000 phases"),
        "{}",
        text(&o.stderr)
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn messages_never_echo_control_bytes() {
    let evil = "/nonexistent/\u{1b}[31mred\u{7}";
    for args in [
        vec!["--hwloc-xml", evil, "topo"],
        vec!["--fsroot", evil, "topo"],
        vec!["compare", "--timeout", evil, "--", "true"],
        vec!["simulate", "--machine", evil, "--programs", evil],
        vec!["tune", "--from", evil],
    ] {
        let o = pinsight(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{7}'),
            "{args:?}: raw control bytes in: {err:?}"
        );
    }
    // An archive entry's name, as stored.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("evil.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&archive).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    // Written raw: `set_path` refuses `..`.
    let name = b"../\x1b[31mevil";
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.set_cksum();
    tar.append(&h, &b"x"[..]).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let o = pinsight(&["--fsroot", archive.to_str().unwrap(), "topo"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("refused entry"), "{err}");
    assert!(err.contains("\\u{1b}[31mevil"), "{err:?}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

/// A recording with enough entries that unpacking it takes a while.
fn slow_archive(path: &Path) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    let mut add = |name: &str, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, name, data).unwrap();
    };
    add("m/sys/devices/system/cpu/online", b"0\n");
    for i in 0..20_000 {
        add(&format!("m/proc/junk/d{}/f{i}", i / 500), &[b'0'; 64]);
    }
    tar.into_inner().unwrap().finish().unwrap();
}

#[test]
fn the_fsroot_unpack_directory_is_removed_on_signals() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("slow.tar.gz");
    slow_archive(&archive);
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let tmp = dir.path().join(format!("tmp-{name}"));
        std::fs::create_dir(&tmp).unwrap();
        let mut child = cmd(&["--fsroot", archive.to_str().unwrap(), "topo"])
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the unpacking has begun (its directory exists).
        let start = Instant::now();
        while std::fs::read_dir(&tmp).unwrap().next().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{name}: no unpack directory appeared"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // SAFETY: kill(2) of our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let status = child.wait().unwrap();
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(sig), "{name}: {status:?}");
        assert!(left.is_empty(), "{name}: left {left:?}");
    }
}
