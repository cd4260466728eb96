//! `--fsroot X.tar.gz` (and `PINSIGHT_FSROOT`): the archive `pinsight
//! snapshot` writes is a recorded machine without extracting it first.
//! The model equals the directory's; hostile or broken archives are one
//! usage line naming the file; nothing is left in the temporary directory.

use crate::common_cli;

use common_cli::*;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A scratch directory and the `tmp` directory inside it (the runs'
/// TMPDIR, where unpacked trees go).
fn work_dir() -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let tmp = work.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    (work, tmp)
}

/// [`big_archive`] as `big.tar.gz` in `work`.
fn big_archive_in(work: &tempfile::TempDir) -> PathBuf {
    let archive = work.path().join("big.tar.gz");
    big_archive(&archive);
    archive
}

fn hybrid() -> PathBuf {
    hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t")
}

/// Entries of a private TMPDIR (where the archive is unpacked).
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `pinsight ARGS` with TMPDIR set to `tmp`, which must be empty afterwards.
fn run_clean(args: &[&str], tmp: &Path) -> Out {
    let o = pinsight(args).env("TMPDIR", tmp).run();
    assert!(
        entries(tmp).is_empty(),
        "{}: left {:?} in TMPDIR",
        o.argv,
        entries(tmp)
    );
    o
}

fn without_source(mut v: serde_json::Value) -> serde_json::Value {
    v["source"] = serde_json::Value::Null;
    v
}

#[test]
fn a_snapshot_archive_reads_like_its_directory() {
    let (work, tmp) = work_dir();
    let archive = work.path().join("box.tar.gz");
    let a = archive.to_str().unwrap();
    let root = hybrid();
    let r = root.to_str().unwrap();
    ok(&["--fsroot", r, "snapshot", a]);
    let from_dir = ok(&["--fsroot", r, "topo", "--json", "-q"]).json();
    let o = run_clean(&["--fsroot", a, "topo", "--json", "-q"], &tmp);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let from_archive = o.json();
    // The source names the archive, not where it was unpacked.
    assert_eq!(from_archive["source"]["path"], a);
    assert_eq!(without_source(from_archive), without_source(from_dir));
    // Human output, plans and the environment variable too.
    let o = run_clean(&["--fsroot", a, "topo"], &tmp);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("i7-1370P"), "{}", o.stdout);
    let o = pinsight(&["plan", "p-pinned", "-t", "2", "--json", "-q"])
        .env("PINSIGHT_FSROOT", a)
        .env("TMPDIR", &tmp)
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["places"][0], "0");
    assert!(entries(&tmp).is_empty());
    // Re-snapshotting an archive gives the same machine.
    let again = work.path().join("again");
    let o = run_clean(&["--fsroot", a, "snapshot", again.to_str().unwrap()], &tmp);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = ok(&["--fsroot", again.to_str().unwrap(), "topo", "--json", "-q"]);
    assert_eq!(
        without_source(o.json()),
        without_source(ok(&["--fsroot", r, "topo", "--json", "-q"]).json())
    );
}

/// Writes a gzipped tar whose single entry has a raw (unchecked) path.
fn raw_archive(path: &Path, name: &str, kind: tar::EntryType, link: Option<&str>) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut b = tar::Builder::new(gz);
    let mut h = tar::Header::new_old();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    if let Some(l) = link {
        h.as_old_mut().linkname[..l.len()].copy_from_slice(l.as_bytes());
    }
    h.set_entry_type(kind);
    h.set_size(1);
    h.set_mode(0o644);
    h.set_cksum();
    b.append(&h, &b"x"[..]).unwrap();
    b.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

/// Writes one test archive at the path given.
type Maker = Box<dyn Fn(&Path)>;

#[test]
fn bad_archives_are_one_usage_line_naming_the_file() {
    let (work, tmp) = work_dir();
    let cases: Vec<(&str, Maker, &str)> = vec![
        (
            "escape.tar.gz",
            Box::new(|p| raw_archive(p, "../../etc/evil", tar::EntryType::Regular, None)),
            "leads outside",
        ),
        (
            "absolute.tar.gz",
            Box::new(|p| raw_archive(p, "/tmp/evil", tar::EntryType::Regular, None)),
            "leads outside",
        ),
        (
            "link.tar.gz",
            Box::new(|p| raw_archive(p, "box/l", tar::EntryType::Symlink, Some("../../.."))),
            "symbolic link leading outside",
        ),
        (
            // `s/sys -> /sys` read the live machine as the recording.
            "live-link.tar.gz",
            Box::new(|p| raw_archive(p, "s/sys", tar::EntryType::Symlink, Some("/sys"))),
            "symbolic link leading outside the recording (an absolute target)",
        ),
        (
            "device.tar.gz",
            Box::new(|p| raw_archive(p, "box/null", tar::EntryType::Char, None)),
            "device",
        ),
        (
            "garbage.tar.gz",
            Box::new(|p| std::fs::write(p, "not gzip at all").unwrap()),
            "not a readable .tar.gz recording",
        ),
        (
            "empty-machine.tar.gz",
            Box::new(|p| raw_archive(p, "box/readme", tar::EntryType::Regular, None)),
            "no sys/devices/system/cpu",
        ),
    ];
    for (name, make, want) in cases {
        let p = work.path().join(name);
        make(&p);
        let o = run_clean(&["--fsroot", p.to_str().unwrap(), "topo"], &tmp);
        assert_eq!(o.code, 2, "{name}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{name}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{name}: {}", o.stdout);
        assert!(o.says(name), "{name}: {}", o.stderr);
        assert!(o.says(want), "{name}: {} lacks {want}", o.stderr);
        assert!(o.first_err_line().starts_with("pinsight: error: --fsroot"));
    }
    // From the environment, the variable is named.
    let p = work.path().join("garbage.tar.gz");
    let o = pinsight(&["topo"])
        .env("PINSIGHT_FSROOT", &p)
        .env("TMPDIR", &tmp)
        .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.says("PINSIGHT_FSROOT"), "{}", o.stderr);
    assert!(entries(&tmp).is_empty());
}

/// A recording of many small files, slow enough to unpack (a few tenths of
/// a second) that a signal lands mid-way.
fn big_archive(path: &Path) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut b = tar::Builder::new(gz);
    for i in 0..30_000 {
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, format!("box/sys/f/{}/{i}", i % 100), &b"x\n"[..])
            .unwrap();
    }
    b.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

/// `pinsight --fsroot ARCHIVE topo` started with TMPDIR `tmp`.
fn spawn_topo(archive: &Path, tmp: &Path) -> std::process::Child {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_pinsight"));
    crate::common_signals::at_default(&mut c)
        .args(["--fsroot", archive.to_str().unwrap(), "topo"])
        .env("TMPDIR", tmp)
        .env_remove("PINSIGHT_FSROOT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGTERM, SIGINT or SIGHUP at any moment of the unpacking leaves nothing
/// in TMPDIR (an empty unpack directory was left 4 times in 44 when the
/// signal came 0.1-0.2 s in: the entry being written made it again after
/// its removal).
#[test]
fn a_signal_during_unpacking_leaves_nothing() {
    let (work, tmp) = work_dir();
    let archive = big_archive_in(&work);
    let signals = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];
    for i in 0..24u64 {
        let mut child = spawn_topo(&archive, &tmp);
        std::thread::sleep(std::time::Duration::from_millis(20 + i * 12));
        let sig = signals[i as usize % 3];
        pinsight_sys::process::kill(child.id() as i32, sig).unwrap();
        let status = child.wait().unwrap();
        assert!(
            entries(&tmp).is_empty(),
            "signal {sig} after {} ms ({status:?}) left {:?}",
            20 + i * 12,
            entries(&tmp)
        );
    }
}

/// `kill -9` leaves the unpacked tree (nothing of pinsight runs); the next
/// unpack removes it, since its owner is gone.
#[test]
fn a_tree_left_by_kill_9_is_removed_by_the_next_run() {
    let (work, tmp) = work_dir();
    let archive = big_archive_in(&work);
    let mut child = spawn_topo(&archive, &tmp);
    let t = std::time::Instant::now();
    while entries(&tmp).is_empty() && t.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = entries(&tmp);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with(&format!("pinsight-fsroot-{}-", child.id())));
    // The next run, on another archive, sweeps it and leaves nothing.
    let small = work.path().join("box.tar.gz");
    ok(&[
        "--fsroot",
        hybrid().to_str().unwrap(),
        "snapshot",
        small.to_str().unwrap(),
    ]);
    let o = run_clean(&["--fsroot", small.to_str().unwrap(), "topo", "-q"], &tmp);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// `snapshot x.tar.bz2` writes a bzip2 archive (it wrote a directory of
/// that name), which `--fsroot` reads like the gzip one; an archive name
/// of a format not written is one usage line naming the allowed ones.
#[test]
fn snapshot_writes_the_compression_the_name_asks_for() {
    let work = tempfile::tempdir().unwrap();
    let r = hybrid();
    let r = r.to_str().unwrap();
    let gz = work.path().join("box.tar.gz");
    ok(&["--fsroot", r, "snapshot", gz.to_str().unwrap()]);
    for name in ["box.tar.bz2", "box.tbz2"] {
        let bz = work.path().join(name);
        ok(&["--fsroot", r, "snapshot", bz.to_str().unwrap()]);
        assert!(bz.is_file(), "{name}: not a file");
        let head = std::fs::read(&bz).unwrap();
        assert!(head.starts_with(b"BZh"), "{name}: not bzip2");
        let a = ok(&["--fsroot", bz.to_str().unwrap(), "topo", "--json", "-q"]).json();
        let b = ok(&["--fsroot", gz.to_str().unwrap(), "topo", "--json", "-q"]).json();
        assert_eq!(without_source(a), without_source(b), "{name}");
    }
    for name in ["box.tar.xz", "box.tar", "box.zip", "box.tar.zst"] {
        let out = work.path().join(name);
        let o = pinsight(&["--fsroot", r, "snapshot", out.to_str().unwrap()]).run();
        assert_eq!(o.code, 2, "{name}: {}", o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{name}: {}", o.stderr);
        assert!(
            o.says(name) && o.says(".tar.gz, .tgz, .tar.bz2, .tbz2"),
            "{name}: {}",
            o.stderr
        );
        assert!(!out.exists(), "{name}: written anyway");
    }
}
