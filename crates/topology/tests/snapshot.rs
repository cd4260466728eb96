//! `pinsight snapshot`: discovery on a snapshot must give the model
//! discovery gives on the machine it was taken from — for a small fake
//! sysfs, for the recorded hwloc test machines, for a re-snapshot of a
//! snapshot, through a .tar.gz, and for this live machine.

use pinsight_model::{KindSource, Source, Topology};
use pinsight_sys::FsRoot;
use pinsight_testkit::put as write;
use pinsight_topology::discover;
use pinsight_topology::snapshot::{self, Error, Options, METADATA_FILE};
use std::path::{Path, PathBuf};

fn symlink(root: &Path, target: &str, link: &str) {
    let l = root.join(link.trim_start_matches('/'));
    std::fs::create_dir_all(l.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, l).unwrap();
}

/// A 4-CPU, 2-core SMT machine with one NUMA node, L1d/L2 per core, a
/// shared L3, cpufreq on every CPU and a RAPL zone — with the sysfs
/// habits that matter here: `\n\0` endings, symlinked bus directories,
/// an absolute `subsystem` link leading back up the tree.
fn fake_machine(root: &Path) {
    let cpu = "/sys/devices/system/cpu";
    for f in ["online", "present", "possible"] {
        write(root, &format!("{cpu}/{f}"), "0-3\n\0");
    }
    for c in 0..4 {
        let core = c / 2;
        let siblings = if core == 0 { "0-1" } else { "2-3" };
        let t = format!("{cpu}/cpu{c}/topology");
        write(root, &format!("{t}/core_id"), &format!("{core}\n"));
        write(root, &format!("{t}/physical_package_id"), "0\n");
        write(
            root,
            &format!("{t}/thread_siblings_list"),
            &format!("{siblings}\n"),
        );
        write(root, &format!("{t}/core_siblings_list"), "0-3\n");
        write(
            root,
            &format!("{t}/thread_siblings"),
            if core == 0 { "3\n" } else { "c\n" },
        );
        write(root, &format!("{t}/core_siblings"), "f\n");
        for (i, (level, ty, size, shared)) in [
            (1, "Data", "32K", siblings),
            (2, "Unified", "512K", siblings),
            (3, "Unified", "8192K", "0-3"),
        ]
        .iter()
        .enumerate()
        {
            let d = format!("{cpu}/cpu{c}/cache/index{i}");
            write(root, &format!("{d}/level"), &format!("{level}\n"));
            write(root, &format!("{d}/type"), &format!("{ty}\n"));
            write(root, &format!("{d}/size"), &format!("{size}\n"));
            write(
                root,
                &format!("{d}/shared_cpu_list"),
                &format!("{shared}\n"),
            );
            write(root, &format!("{d}/coherency_line_size"), "64\n");
            write(root, &format!("{d}/ways_of_associativity"), "8\n");
        }
        let f = format!("{cpu}/cpu{c}/cpufreq");
        write(root, &format!("{f}/cpuinfo_max_freq"), "3600000\n");
        write(root, &format!("{f}/scaling_governor"), "schedutil\n");
        write(root, &format!("{f}/stats/total_trans"), "5\n");
        write(root, &format!("{cpu}/cpu{c}/crash_notes"), "1f000\n");
        symlink(
            root,
            &format!("{cpu}/cpu{c}"),
            &format!("/sys/bus/cpu/devices/cpu{c}"),
        );
    }
    write(root, "/sys/devices/system/node/node0/cpulist", "0-3\n");
    write(root, "/sys/devices/system/node/node0/distance", "10\n");
    write(
        root,
        "/sys/devices/system/node/node0/meminfo",
        "Node 0 MemTotal:       16318668 kB\n",
    );
    write(root, "/sys/devices/system/node/online", "0\n");
    write(root, "/sys/devices/system/node/possible", "0\n");
    write(
        root,
        "/proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Fake CPU 2C4T\n\nprocessor\t: 1\nmodel name\t: Fake CPU 2C4T\n\n\
         processor\t: 2\nmodel name\t: Fake CPU 2C4T\n\nprocessor\t: 3\nmodel name\t: Fake CPU 2C4T\n\n",
    );
    write(root, "/proc/meminfo", "MemTotal:       16318668 kB\n");
    write(root, "/proc/sys/kernel/hostname", "fakebox\n");
    write(root, "/proc/sys/kernel/osrelease", "6.1.0-fake\n");
    let rapl = "/sys/devices/virtual/powercap/intel-rapl/intel-rapl:0";
    write(root, &format!("{rapl}/name"), "package-0\n");
    write(root, &format!("{rapl}/energy_uj"), "123456789\n");
    write(root, &format!("{rapl}/intel-rapl:0:0/name"), "core\n");
    write(root, &format!("{rapl}/intel-rapl:0:0/energy_uj"), "2345\n");
    symlink(root, "/sys/class/powercap", &format!("{rapl}/subsystem"));
    symlink(root, rapl, "/sys/class/powercap/intel-rapl:0");
}

/// A fake machine (`fake_machine`) in a new temporary directory, the root
/// discovery reads it through, and a scratch directory for its snapshots.
fn fake_source() -> (tempfile::TempDir, FsRoot, tempfile::TempDir) {
    let src = tempfile::tempdir().unwrap();
    fake_machine(src.path());
    let fs = FsRoot::at(src.path()).unwrap();
    (src, fs, scratch_dir())
}

fn without_source(mut t: Topology) -> Topology {
    t.source = Source::Live;
    t
}

fn assert_same_model(original: &FsRoot, snap: &Path) {
    let a = discover(original);
    let b = discover(&FsRoot::at(snap).unwrap());
    assert_eq!(b.source, Source::Fsroot(snap.display().to_string()));
    assert_eq!(without_source(a), without_source(b));
}

/// The progress is one task that counts every entry written, to its end.
#[test]
fn snapshot_reports_one_task_to_its_total() {
    let (_src, fs, out) = fake_source();
    let mut progress = pinsight_testkit::progress::Recorder::default();
    snapshot::snapshot_with_progress(
        &fs,
        &out.path().join("snap"),
        &Options::default(),
        &mut progress,
    )
    .unwrap();
    let tasks = progress.tasks();
    assert_eq!(tasks.len(), 1, "{progress:?}");
    let t = &tasks[0];
    assert_eq!(t.what, "writing snapshot");
    assert!(t.total > 4, "{t:?}");
    assert_eq!((t.done, t.steps as u64), (t.total, t.total), "{t:?}");
}

#[test]
fn snapshot_of_fake_machine_discovers_the_same() {
    let (src, fs, out) = fake_source();
    let snap = out.path().join("snap");
    let report = snapshot::snapshot(&fs, &snap, &Options::default()).unwrap();
    assert_same_model(&fs, &snap);
    let t = discover(&FsRoot::at(&snap).unwrap());
    assert_eq!(
        (t.cpus.len(), t.cores.len(), t.caches.len()),
        (4, 2, 5),
        "the fake machine is really seen"
    );
    assert_eq!(t.model_name.as_deref(), Some("Fake CPU 2C4T"));

    assert_eq!(report.out, snap.display().to_string());
    let files: Vec<PathBuf> = walk(&snap).into_iter().filter(|p| p.is_file()).collect();
    assert_eq!(
        report.files,
        files.len() - 1,
        "every file but the metadata is counted"
    );
    let bytes: u64 = files
        .iter()
        .filter(|p| !p.ends_with(METADATA_FILE))
        .map(|p| p.metadata().unwrap().len())
        .sum();
    assert_eq!(report.bytes, bytes);

    let meta = snapshot::read_metadata(&snap).unwrap();
    assert_eq!(meta.hostname.as_deref(), Some("fakebox"));
    assert_eq!(meta.kernel.as_deref(), Some("6.1.0-fake"));
    assert_eq!(
        meta.source,
        Source::Fsroot(src.path().display().to_string())
    );
    assert_eq!(
        (meta.files, meta.bytes, meta.extra),
        (report.files, report.bytes, false)
    );
    assert!(
        meta.created.ends_with('Z') && meta.created.len() == 20,
        "{}",
        meta.created
    );

    // Without --extra, files discovery does not read stay out — unless
    // they sit in a directory discovery listed.
    assert!(!snap
        .join("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .exists());
    assert!(!snap.join("sys/class/powercap").exists());
    assert_eq!(
        std::fs::read(snap.join("sys/devices/system/cpu/online")).unwrap(),
        b"0-3\n\0",
        "copied byte for byte"
    );
}

#[test]
fn extra_adds_cpufreq_and_powercap_without_following_loops() {
    let (_src, fs, out) = fake_source();
    let snap = out.path().join("snap");
    let report = snapshot::snapshot(
        &fs,
        &snap,
        &Options {
            extra: true,
            force: false,
        },
    )
    .unwrap();
    assert_same_model(&fs, &snap);
    for c in 0..4 {
        let gov = snap.join(format!(
            "sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
        ));
        assert_eq!(std::fs::read_to_string(gov).unwrap(), "schedutil\n");
    }
    assert!(
        !snap
            .join("sys/devices/system/cpu/cpu0/cpufreq/stats/total_trans")
            .exists(),
        "cpufreq/* means files directly in cpufreq/"
    );
    let zone = snap.join("sys/class/powercap/intel-rapl:0");
    assert_eq!(
        std::fs::read_to_string(zone.join("energy_uj")).unwrap(),
        "123456789\n"
    );
    assert_eq!(
        std::fs::read_to_string(zone.join("intel-rapl:0:0/name")).unwrap(),
        "core\n"
    );
    assert!(
        !zone.join("subsystem/intel-rapl:0").exists(),
        "symlinks back up the tree are not walked"
    );
    assert!(snapshot::read_metadata(&snap).unwrap().extra);
    let plain = snapshot::snapshot(&fs, &out.path().join("plain"), &Options::default()).unwrap();
    assert!(report.files > plain.files);
}

#[test]
fn archive_round_trip_and_resnapshot() {
    let (_src, fs, out) = fake_source();
    let archive = out.path().join("fakebox.tar.gz");
    let report = snapshot::snapshot(&fs, &archive, &Options::default()).unwrap();
    assert_eq!(report.out, archive.display().to_string());
    assert!(
        std::fs::read_dir(out.path()).unwrap().count() == 1,
        "no partial file left behind"
    );

    let unpacked = tempfile::tempdir().unwrap();
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(&archive).unwrap());
    tar::Archive::new(gz).unpack(unpacked.path()).unwrap();
    let top = unpacked.path().join("fakebox");
    assert!(
        top.join(METADATA_FILE).is_file(),
        "one top directory named after the archive"
    );
    assert_same_model(&fs, &top);

    // A snapshot of a snapshot is the same machine (and the same files).
    let again = out.path().join("again");
    let report2 =
        snapshot::snapshot(&FsRoot::at(&top).unwrap(), &again, &Options::default()).unwrap();
    assert_same_model(&fs, &again);
    assert_eq!((report2.files, report2.bytes), (report.files, report.bytes));
    assert_eq!(
        snapshot::read_metadata(&again).unwrap().source,
        Source::Fsroot(top.display().to_string())
    );
}

#[test]
fn refuses_to_overwrite_without_force() {
    let (_src, fs, out) = fake_source();

    let dir = out.path().join("snap");
    std::fs::create_dir_all(dir.join("sys/devices/system/cpu/cpu99")).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let e = snapshot::snapshot(&fs, &dir, &Options::default()).unwrap_err();
    assert!(
        matches!(&e, Error::DirectoryNotEmpty { path } if path == &dir),
        "{e:?}"
    );
    assert!(e.is_destination());
    snapshot::snapshot(
        &fs,
        &dir,
        &Options {
            force: true,
            extra: false,
        },
    )
    .unwrap();
    assert!(
        !dir.join("sys/devices/system/cpu/cpu99").exists(),
        "the old snapshot is replaced"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine",
        "other files are kept"
    );
    assert_same_model(&fs, &dir);

    let empty = out.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    snapshot::snapshot(&fs, &empty, &Options::default()).unwrap();

    let file = out.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let e = snapshot::snapshot(
        &fs,
        &file,
        &Options {
            force: true,
            extra: false,
        },
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::NotADirectory { path } if path == &file),
        "{e:?}"
    );

    let archive = out.path().join("a.tgz");
    std::fs::write(&archive, "old").unwrap();
    let e = snapshot::snapshot(&fs, &archive, &Options::default()).unwrap_err();
    assert!(
        matches!(&e, Error::ArchiveExists { path } if path == &archive),
        "{e:?}"
    );
    snapshot::snapshot(
        &fs,
        &archive,
        &Options {
            force: true,
            extra: false,
        },
    )
    .unwrap();
    assert!(std::fs::metadata(&archive).unwrap().len() > 100);

    let e = snapshot::snapshot(
        &fs,
        Path::new("/proc/no/such/dir/x.tar.gz"),
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::Write { path, .. } if path == Path::new("/proc/no/such/dir/x.tar.gz")),
        "{e:?}"
    );
}

/// Recorded hwloc test machines shipped with the discovery tests, chosen
/// for what trips a snapshot: cgroup trees (legacy, v1, v2 at an unusual
/// mount), offline CPUs, duplicate NUMA nodes, absolute symlinks, a hybrid
/// and an ARM. (All 18 pass; the others only add minutes of file creation
/// on slow disks.)
#[test]
fn recorded_machines_survive_a_snapshot() {
    let names = [
        "16amd64-8n2c-cpusets",
        "32amd64-4s2n4c-cgroup2",
        "16amd64-4n4c-cgroup-distance-merge",
        "offline-cpu0-node0",
        "16em64t-4s2c2t-offlines",
        "8em64t-2s2ca2c-buggynuma",
        "20em64t-hybrid-1p6c2t+2ca4co1t",
        "2arm-2c",
    ];
    let out = scratch_dir();
    for name in names {
        let dir = pinsight_testkit::fixtures::hwloc(name);
        assert!(dir.join("sys").is_dir(), "{} missing", dir.display());
        let snap = out.path().join(name);
        let fs = FsRoot::at(&dir).unwrap();
        snapshot::snapshot(&fs, &snap, &Options::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (a, b) = (discover(&fs), discover(&FsRoot::at(&snap).unwrap()));
        assert_eq!(without_source(a), without_source(b), "{name}");
    }
}

/// A temporary directory, in memory when the system has /dev/shm: these
/// tests create thousands of small files.
fn scratch_dir() -> tempfile::TempDir {
    match tempfile::tempdir_in("/dev/shm") {
        Ok(d) => d,
        Err(_) => tempfile::tempdir().unwrap(),
    }
}

#[test]
fn live_machine_snapshot_discovers_the_same() {
    let out = scratch_dir();
    let snap = out.path().join("live");
    let live = FsRoot::live();
    let report = snapshot::snapshot(
        &live,
        &snap,
        &Options {
            extra: true,
            force: false,
        },
    )
    .unwrap();
    assert!(report.files > 0);
    let mut a = discover(&live);
    let mut b = discover(&FsRoot::at(&snap).unwrap());
    // Live-only sources: the compiled-in architecture and CPUID core types
    // cannot be recorded as files.
    a.arch = None;
    b.arch = None;
    if a.kinds.iter().any(|k| k.source == KindSource::Cpuid) {
        a.kinds.clear();
        b.kinds.clear();
        for c in a.cpus.iter_mut().chain(b.cpus.iter_mut()) {
            c.kind = None;
            c.core_type = None;
        }
    }
    assert_eq!(without_source(a), without_source(b));
    assert_eq!(
        snapshot::read_metadata(&snap).unwrap().hostname,
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
    );
}

/// Every path below `dir`, not following symbolic links (recorded trees
/// hold loops: `node0/cpu0` -> `cpu0`, `cpu0/node0` -> `node0`).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

use pinsight_testkit::copy_tree;
/// Files of the capacity and ranking sources (the capacity chain) present under
/// `root`, as OS paths.
fn capacity_source_files(root: &Path) -> Vec<PathBuf> {
    const NAMES: &[&str] = &[
        "cpu_capacity",
        "highest_perf",
        "nominal_perf",
        "lowest_perf",
        "nominal_freq",
        "cpuinfo_max_freq",
        "base_frequency",
        "amd_pstate_prefcore_ranking",
        "amd_pstate_highest_perf",
    ];
    walk(root)
        .into_iter()
        .filter(|p| p.starts_with(root.join("sys/devices/system/cpu")))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| NAMES.contains(&n.to_string_lossy().as_ref()))
        })
        .map(|p| Path::new("/").join(p.strip_prefix(root).unwrap()))
        .collect()
}

/// `snapshot` records every file the capacity sources read: on the
/// synthetic machines (`cpu_capacity`, cpufreq) and on the hybrid laptop
/// given ACPI CPPC files, each such file is in the snapshot with its
/// content, and the snapshot (directory and `.tar.gz`) replays to the same
/// model.
#[test]
fn capacity_sources_are_recorded_and_replay() {
    use pinsight_testkit::fixtures::{synthetic, synthetic_names};
    let work = scratch_dir();
    let mut machines: Vec<PathBuf> = synthetic_names()
        .iter()
        .map(|n| synthetic(n))
        .filter(|p| p.join("sys").is_dir())
        .collect();
    assert!(!machines.is_empty());
    // The laptop with CPPC levels added (P-cores 0-7 highest 70, the rest 40).
    let laptop = synthetic("intel-hybrid-laptop");
    let cppc = work.path().join("laptop-cppc");
    copy_tree(&laptop, &cppc);
    let cpus = cppc.join("sys/devices/system/cpu");
    for e in std::fs::read_dir(&cpus).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Some(n) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let d = cpus.join(&name).join("acpi_cppc");
        std::fs::create_dir_all(&d).unwrap();
        let highest = if n < 8 { 70 } else { 40 };
        for (f, v) in [
            ("highest_perf", highest),
            ("nominal_perf", 30),
            ("lowest_perf", 1),
            ("nominal_freq", 2400),
        ] {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    }
    machines.push(cppc.clone());
    let mut saw = std::collections::BTreeSet::new();
    for m in &machines {
        let fs = FsRoot::at(m).unwrap();
        let snap = work.path().join("snap");
        let _ = std::fs::remove_dir_all(&snap);
        snapshot::snapshot(&fs, &snap, &Options::default()).unwrap();
        let wanted = capacity_source_files(m);
        for abs in &wanted {
            let rel = abs.strip_prefix("/").unwrap();
            let got = std::fs::read(snap.join(rel));
            assert_eq!(
                got.ok(),
                Some(std::fs::read(m.join(rel)).unwrap()),
                "{}: {} not recorded",
                m.display(),
                abs.display()
            );
            saw.insert(abs.file_name().unwrap().to_string_lossy().into_owned());
        }
        let original = discover(&fs);
        let replayed = discover(&FsRoot::at(&snap).unwrap());
        assert_eq!(
            without_source(original.clone()),
            without_source(replayed),
            "{}",
            m.display()
        );
        // And through a .tar.gz read directly by FsRoot.
        let archive = work.path().join("snap.tar.gz");
        let _ = std::fs::remove_file(&archive);
        snapshot::snapshot(&fs, &archive, &Options::default()).unwrap();
        let packed = FsRoot::at(&archive).unwrap();
        assert_eq!(packed.archive(), Some(archive.as_path()));
        assert_eq!(
            without_source(original),
            without_source(discover(&packed)),
            "{} via .tar.gz",
            m.display()
        );
    }
    for source in ["cpu_capacity", "highest_perf", "cpuinfo_max_freq"] {
        assert!(
            saw.contains(source),
            "no fixture exercised {source}: {saw:?}"
        );
    }
    // The CPPC values were read, not just copied.
    let t = discover(&FsRoot::at(&cppc).unwrap());
    assert_eq!(
        t.cpu(0)
            .and_then(|c| c.cppc.as_ref())
            .and_then(|c| c.highest_perf),
        Some(70)
    );
}

/// The private directory a `.tar.gz` is unpacked into goes when the last
/// clone of its root drops, and re-snapshotting names the archive.
#[test]
fn archive_roots_clean_up_after_themselves() {
    let (_src, source, out) = fake_source();
    let archive = out.path().join("box.tar.gz");
    snapshot::snapshot(&source, &archive, &Options::default()).unwrap();
    let fs = FsRoot::at(&archive).unwrap();
    let unpacked = fs.root().to_path_buf();
    assert!(unpacked.join("sys/devices/system/cpu/online").is_file());
    assert!(unpacked.ends_with("box"), "{}", unpacked.display());
    let again = out.path().join("again");
    let clone = fs.clone();
    drop(fs);
    assert!(unpacked.is_dir(), "a clone still holds it");
    snapshot::snapshot(&clone, &again, &Options::default()).unwrap();
    assert_eq!(
        snapshot::read_metadata(&again).unwrap().source,
        Source::Fsroot(archive.display().to_string())
    );
    drop(clone);
    assert!(!unpacked.exists(), "{} left behind", unpacked.display());
    assert!(!unpacked.parent().unwrap().exists());
}

/// PCI devices: a snapshot keeps `/sys/bus/pci/devices/*` as
/// links (their targets name the upstream bridges a device inherits its
/// node from) and rediscovers the same devices, as a directory and as a
/// `.tar.gz`.
#[test]
fn devices_survive_a_snapshot_links_included() {
    let out = scratch_dir();
    for (name, devices) in [
        ("synthetic/fake-devices", 4),
        ("hwloc/fakepcilocalities", 8),
        ("hwloc/32em64t-2n8c+dax+nvme+mic+dimms", 7),
    ] {
        let fs = FsRoot::at(pinsight_testkit::fixtures::machine(name)).unwrap();
        let original = discover(&fs);
        assert_eq!(original.devices.len(), devices, "{name}");
        let stem = name.replace('/', "-");
        for snap in [
            out.path().join(&stem),
            out.path().join(format!("{stem}.tar.gz")),
        ] {
            snapshot::snapshot(&fs, &snap, &Options::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let again = discover(&FsRoot::at(&snap).unwrap());
            assert_eq!(again.devices, original.devices, "{}", snap.display());
            assert_eq!(again.warnings, original.warnings, "{}", snap.display());
        }
        let first = &original.devices[0].address;
        let link = out
            .path()
            .join(&stem)
            .join("sys/bus/pci/devices")
            .join(first);
        let target = std::fs::read_link(&link)
            .unwrap_or_else(|e| panic!("{}: not a link: {e}", link.display()));
        assert!(
            target.to_string_lossy().starts_with("../../../devices/pci"),
            "{target:?}"
        );
    }
    // The inherited node needs the bridge: the InfiniBand card of the fake
    // tree says -1 and gets node 3 from 0000:80:01.0 in the snapshot too.
    let snap = FsRoot::at(out.path().join("synthetic-fake-devices")).unwrap();
    let ib = discover(&snap)
        .devices
        .into_iter()
        .find(|d| d.address == "0000:81:00.0");
    assert_eq!(ib.and_then(|d| d.numa_node), Some(3));
}
