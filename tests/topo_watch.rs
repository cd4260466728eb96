//! `pinsight topo --watch`: refusals on recorded machines, what this
//! machine's kernel offers (a typed reason when HFI events cannot be
//! heard), a clean Ctrl-C (exit 130), and the lines printed for recorded bytes.

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_says};
use common_cli::*;
use pinsight_sys::FsRoot;
use pinsight_topology::hfi::{self, CapabilityChange, CapabilityTable, HfiError, HfiWatcher};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn a_recorded_machine_is_refused_as_usage() {
    let fixture = hwloc_fixture("16amd64-8n2c");
    let watch = |flag: &str, path: &std::path::Path| {
        pinsight(&[flag, path.to_str().unwrap(), "topo", "--watch"]).run()
    };
    let o = watch("--fsroot", &fixture);
    assert_says(
        &o,
        2,
        &["topo --watch listens to this machine's kernel: it cannot run with --fsroot"],
    );
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);

    let o = pinsight(&["topo", "--watch"])
        .env("PINSIGHT_FSROOT", fixture.as_os_str())
        .run();
    assert_says(&o, 2, &["cannot run with --fsroot"]);

    let o = watch("--hwloc-xml", &xml_fixture("2arm-2c.hwloc29.xml"));
    assert_says(&o, 2, &["cannot run with --hwloc-xml"]);
    assert!(o.stdout.is_empty());
}

#[test]
fn count_and_for_need_watch() {
    for args in [["topo", "--count", "3"], ["topo", "--duration", "1s"]] {
        assert_exit(&pinsight(&args).run(), 2, &["--watch"]);
    }
    let o = pinsight(&["topo", "--watch", "--count", "0"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// Whether this machine's kernel lets us listen; the reason when not.
fn live_watcher() -> Result<(), HfiError> {
    HfiWatcher::open(&FsRoot::live()).map(drop)
}

#[test]
fn live_watch_is_available_or_says_why() {
    if let Some(why) = hfi::no_hfi_flag(&FsRoot::live()) {
        // No event can come: exit 1 at once with the reason, bounded or not.
        for args in [
            &["topo", "--watch"][..],
            &["topo", "--watch", "--count", "1"],
            &["topo", "--watch", "--duration", "1h"],
        ] {
            let t = std::time::Instant::now();
            let o = pinsight(args).run();
            assert_eq!(o.code, 1, "{args:?}: {}", o.stderr);
            assert_eq!(
                o.first_err_line(),
                format!("pinsight: error: topo --watch: no capacity event can arrive: {why}")
            );
            assert!(t.elapsed() < Duration::from_secs(30), "{args:?} waited");
        }
        return;
    }
    match live_watcher() {
        Err(HfiError::Unavailable(e)) => {
            use pinsight_sys::netlink::NetlinkError::*;
            assert!(
                matches!(
                    e,
                    Unsupported { .. }
                        | PermissionDenied { .. }
                        | FamilyAbsent { .. }
                        | GroupAbsent { .. }
                ),
                "not a documented reason: {e:?}"
            );
            let o = pinsight(&["topo", "--watch", "--duration", "1s"]).run();
            assert_eq!(o.code, 1, "{}", o.stderr);
            assert_eq!(
                o.first_err_line(),
                format!("pinsight: error: topo --watch: HFI unavailable: {e}")
            );
            assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        }
        Err(other) => panic!("live watcher: {other:?}"),
        Ok(()) => {
            // The family and its group exist: a bounded watch ends by
            // itself with 0; whatever it printed (nothing, unless the
            // hardware changed its mind meanwhile) is well-formed.
            let o = pinsight(&["topo", "--watch", "--duration", "300ms", "--json"]).run();
            assert_eq!(o.code, 0, "{}", o.stderr);
            assert!(o.says("listening turns HFI on"), "{}", o.stderr);
            for line in o.stdout.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                assert!(v["cpu"].is_u64() && v["performance"].is_u64(), "{line}");
            }
        }
    }
}

#[test]
fn ctrl_c_ends_a_watch_with_status_130() {
    if let Some(why) = hfi::no_hfi_flag(&FsRoot::live()) {
        pinsight_testkit::skip_test!("no HFI here ({why}): the watch exits 1 at once");
    }
    if let Err(e) = live_watcher() {
        pinsight_testkit::skip_test!("HFI events cannot be heard here ({e}): nothing to interrupt");
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    cmd.args(["topo", "--watch"])
        .env_remove("PINSIGHT_FSROOT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A user's Ctrl-C reaches a program whose SIGINT is at its default.
    crate::common_signals::at_default(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    // Wait until it has subscribed: the status line comes after the
    // signal handlers are in place and the group is joined.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).unwrap();
    assert!(first.starts_with("pinsight: watching HFI"), "{first}");
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("topo --watch did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    // The one signal lifecycle: 128 + SIGINT, by exit, not by dying.
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn recorded_bytes_render_one_line_per_cpu() {
    // A 16+4 burst (the kernel's per-message limit is 16 CPUs), then one
    // CPU throttled to "do not schedule here".
    let first: Vec<CapabilityChange> = (0..20)
        .map(|cpu| CapabilityChange {
            cpu,
            performance: if cpu < 4 { 1020 } else { 612 },
            efficiency: if cpu < 4 { 400 } else { 1020 },
        })
        .collect();
    let burst = hfi::encode(0x13, &first);
    let throttle = hfi::encode(
        0x13,
        &[CapabilityChange {
            cpu: 2,
            performance: 0,
            efficiency: 0,
        }],
    );
    let mut table = CapabilityTable::new();
    let mut lines = Vec::new();
    for datagram in [burst, throttle] {
        for c in hfi::parse_family(&datagram, 0x13).unwrap() {
            let prev = table.apply(c);
            let kind = if c.cpu < 4 { "P-core" } else { "E-core" };
            lines.push(pinsight_topology::view::hfi::line(
                &c,
                prev.as_ref(),
                Some(kind),
            ));
        }
    }
    assert_eq!(lines.len(), 21);
    assert_eq!(lines[0], "cpu 0  perf 1020  eff 400  (kind P-core)");
    assert_eq!(lines[19], "cpu 19  perf 612  eff 1020  (kind E-core)");
    assert_eq!(
        lines[20],
        "cpu 2  perf 1020 → 0  eff 400 → 0  do not schedule here  (kind P-core)"
    );
    assert_eq!(table.unschedulable().collect::<Vec<_>>(), vec![2]);
    assert!(lines.iter().all(|l| l.chars().count() <= 80));
}
