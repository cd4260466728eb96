//! The report page in a real browser: headless Chromium (Debian's
//! `chromium`, installed by `.ci/deps`) shows the page of a recorded
//! hybrid machine, the i7-1370P laptop, at 1280 px (a laptop) and 390 px
//! (a phone). No element may reach past the viewport's edge (a wide table
//! scrolls inside its own box), the page may not scroll sideways, and the
//! console stays free of errors. The screenshots, the pages and the
//! verdicts are kept in `target/test-artefacts/report-browser/`.
//!
//! How it is measured: Chromium's window is at least 500 px wide, so the
//! page is shown in an iframe of the width under test inside a harness
//! page. A copy of the page with `tests/data/report/probe.js` injected
//! finds the elements past the edge and the errors, and posts its verdict
//! to the harness, whose DOM `--dump-dom` prints. The screenshot is of the
//! page as written (no script), with Chromium's console log on stderr:
//! any console line from a page that runs no script is an error.

use pinsight_latency::LoadMatrix;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HYBRID: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";
/// A laptop's and a phone's CSS width.
const WIDTHS: [u32; 2] = [1280, 390];
/// Longest one Chromium run may take before it counts as hung (it is
/// killed, with its whole process group). Never a performance assertion.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);
/// The tallest screenshot taken (a longer page is cut there).
const MAX_SHOT_HEIGHT: u32 = 12_000;
const PROBE: &str = include_str!("data/report/probe.js");

/// Where the screenshots, pages and verdicts are kept:
/// `target/test-artefacts/report-browser/`.
fn artefacts() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp
        .parent()
        .unwrap_or(tmp)
        .join("test-artefacts/report-browser");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The first 20 CPUs of the recorded i9-12900K matrix, standing in for a
/// matrix measured on the 20-CPU laptop, written to `dir/m.csv`.
fn latency_file(dir: &Path) -> PathBuf {
    let csv = repo("crates/latency/tests/fixtures/Intel_Core_i9-12900K.csv");
    let m = pinsight_latency_model::LatencyMatrix::load(&csv).unwrap();
    let sub = m.submatrix(&(0..20).collect::<Vec<_>>()).unwrap();
    let path = dir.join("m.csv");
    std::fs::write(&path, sub.to_csv()).unwrap();
    path
}

/// The speed of the laptop's 20 CPUs from a file
/// (`tests/data/report/i7-1370P.speed.json`: made-up but plausible figures
/// of the three kernels, P-cores 1.3-1.7 times the E-cores), checked to
/// agree with what `pinsight speed` derives from its per-CPU figures.
fn speed_file(topo: &pinsight_model::Topology) -> pinsight_speed::SpeedReport {
    let path = repo("tests/data/report/i7-1370P.speed.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let sp: pinsight_speed::SpeedReport = serde_json::from_str(&text).unwrap();
    let (kinds, pairs) = pinsight_speed::speedups(topo, &sp.cpus, &sp.kernels);
    assert_eq!(kinds.len(), sp.kinds.len(), "{}", path.display());
    for (k, f) in kinds.iter().zip(&sp.kinds) {
        assert_eq!(
            (k.rank, &k.name, k.cpus_measured),
            (f.rank, &f.name, f.cpus_measured)
        );
    }
    assert_eq!(pairs.len(), sp.speedups.len());
    for (p, f) in pairs.iter().zip(&sp.speedups) {
        assert!((p.measured - f.measured).abs() < 1e-9, "{p:?} {f:?}");
    }
    sp
}

/// The page `pinsight report` writes for the recorded laptop with its
/// latency matrix from a file (`--latency`) and, with `speed`, its speed
/// from `tests/data/report/i7-1370P.speed.json` (`--speed`; checked first
/// to agree with what `pinsight speed` derives from its per-CPU figures);
/// without it speed is "not measured", said in a list.
fn page_of_the_command(work: &Path, out: &Path, name: &str, speed: bool) -> PathBuf {
    let root = pinsight_testkit::fixtures::hwloc(HYBRID);
    latency_file(work);
    let html = out.join(format!("{name}.html"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    cmd.current_dir(work)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .args(["report", "--fsroot"])
        .arg(&root)
        .args(["--latency", "m.csv", "--export-json", "r.json"]);
    if speed {
        let topo = pinsight_topology::discover(&pinsight_sys::FsRoot::at(&root).unwrap());
        assert_eq!(topo.kinds.len(), 2, "a hybrid machine");
        speed_file(&topo);
        cmd.arg("--speed")
            .arg(repo("tests/data/report/i7-1370P.speed.json"));
    }
    let o = cmd.arg("--export-html").arg(&html).output().unwrap();
    assert!(
        o.status.success(),
        "pinsight report: {o:?}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    html
}

/// Output of one Chromium run.
struct Run {
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium with `args` in a profile of its own under
/// `work`, its output in files (a full pipe cannot stall it), killed with
/// its process group past [`CHROMIUM_TIMEOUT`].
fn chromium(work: &Path, name: &str, args: &[String]) -> Run {
    use std::os::unix::process::CommandExt;
    let profile = work.join(format!("profile-{name}"));
    let out_path = work.join(format!("{name}.stdout"));
    let err_path = work.join(format!("{name}.stderr"));
    let mut child = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--mute-audio",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .expect("chromium");
    let pgid = child.id() as i32;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Whatever it left behind (its renderer and utility processes) goes
    // with it: the group is the one it was started in.
    // SAFETY: kill(2) on a process group this test created.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let run = Run {
        stdout: read(&out_path),
        stderr: read(&err_path),
    };
    match status {
        None => panic!(
            "chromium {name}: still running after {CHROMIUM_TIMEOUT:?}, killed\nstderr:\n{}",
            run.stderr
        ),
        Some(s) if !s.success() => panic!("chromium {name}: {s}\nstderr:\n{}", run.stderr),
        Some(_) => run,
    }
}

/// A page showing `page` (a file beside it) in an iframe `width` px wide
/// and `height` tall; with `listen`, it writes what the page posts into
/// `<pre id="pinsight-verdict">`.
fn harness(page: &str, width: u32, height: u32, listen: bool) -> String {
    let script = if listen {
        "<script>addEventListener('message',function(e){var p=document.createElement('pre');p.id='pinsight-verdict';p.textContent=e.data;document.body.appendChild(p);});</script>"
    } else {
        ""
    };
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{{margin:0}}iframe{{border:0;display:block}}</style>{script}</head><body><iframe src=\"{page}\" width=\"{width}\" height=\"{height}\"></iframe></body></html>"
    )
}

/// The probe's verdict out of the harness's dumped DOM.
fn verdict(dom: &str) -> Value {
    let open = "<pre id=\"pinsight-verdict\">";
    let Some(start) = dom.find(open) else {
        panic!("no verdict in the dumped DOM (the page did not load?):\n{dom}");
    };
    let rest = &dom[start + open.len()..];
    let text = &rest[..rest.find("</pre>").expect("</pre>")];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("verdict {text}: {e}"))
}

/// Width and height of a PNG (its IHDR).
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 24,
        "{}",
        path.display()
    );
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    (be(16), be(20))
}

/// Shows `page` at each of [`WIDTHS`]: its verdict must name no element
/// past the edge, no sideways scroll and no error, and its screenshot must
/// come with no console line. Returns the verdicts (by width) for the
/// caller's own checks; each is also kept beside the screenshots.
fn check_in_browser(page: &Path, stem: &str) -> Vec<(u32, Value)> {
    let work = tempfile::tempdir().unwrap();
    let out = artefacts();
    let html = std::fs::read_to_string(page).unwrap();
    assert!(!html.contains("<script"), "the page runs no script");
    std::fs::copy(page, work.path().join("page.html")).unwrap();
    let probed = html.replacen("<head>", &format!("<head><script>{PROBE}</script>"), 1);
    assert_ne!(probed, html, "no <head> in {}", page.display());
    std::fs::write(work.path().join("probed.html"), probed).unwrap();
    let mut verdicts = Vec::new();
    let mut failures = Vec::new();
    for width in WIDTHS {
        let name = format!("{stem}-{width}");
        let probe_page = work.path().join(format!("{name}-probe.html"));
        std::fs::write(&probe_page, harness("probed.html", width, 900, true)).unwrap();
        let run = chromium(
            work.path(),
            &format!("{name}-probe"),
            &[
                format!("--window-size={width},900"),
                "--virtual-time-budget=5000".into(),
                "--dump-dom".into(),
                format!("file://{}", probe_page.display()),
            ],
        );
        let v = verdict(&run.stdout);
        std::fs::write(
            out.join(format!("{name}.verdict.json")),
            serde_json::to_string_pretty(&v).unwrap() + "\n",
        )
        .unwrap();
        assert_eq!(v["viewport"], width, "the iframe is the viewport: {v}");
        let scroll = v["scroll_width"].as_u64().unwrap();
        if scroll > u64::from(width) {
            failures.push(format!(
                "{width} px: the page scrolls sideways ({scroll} px wide)"
            ));
        }
        for el in v["wide"].as_array().unwrap() {
            failures.push(format!(
                "{width} px: past the edge: {}",
                el.as_str().unwrap()
            ));
        }
        for e in v["errors"].as_array().unwrap() {
            failures.push(format!("{width} px: console: {}", e.as_str().unwrap()));
        }

        // The screenshot: the page as written, whole (the iframe as tall
        // as the page), with Chromium's console log on stderr.
        let height = (v["scroll_height"].as_u64().unwrap() as u32).clamp(600, MAX_SHOT_HEIGHT);
        let shot_page = work.path().join(format!("{name}-shot.html"));
        std::fs::write(&shot_page, harness("page.html", width, height, false)).unwrap();
        let png = out.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&png);
        let run = chromium(
            work.path(),
            &format!("{name}-shot"),
            &[
                format!("--window-size={width},{height}"),
                "--enable-logging=stderr".into(),
                "--v=0".into(),
                format!("--screenshot={}", png.display()),
                format!("file://{}", shot_page.display()),
            ],
        );
        assert_eq!(png_size(&png), (width, height), "{}", png.display());
        for line in run.stderr.lines().filter(|l| l.contains(":CONSOLE")) {
            failures.push(format!("{width} px: console: {line}"));
        }
        verdicts.push((width, v));
    }
    assert!(
        failures.is_empty(),
        "{} in Chromium (screenshots and verdicts in {}):\n{}",
        page.display(),
        out.display(),
        failures.join("\n")
    );
    verdicts
}

fn skip_without_chromium() -> bool {
    if crate::common_cli::on_path("chromium") {
        return false;
    }
    pinsight_testkit::skip(
        "chromium not installed (.ci/deps installs it): the report page in a browser",
    );
    true
}

#[test]
fn report_with_speed_and_latency_fits_a_laptop_and_a_phone() {
    if skip_without_chromium() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let page = page_of_the_command(work.path(), &artefacts(), "pinsight-report", true);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2>Speed per CPU</h2>") && html.contains("loaded from "));
    let verdicts = check_in_browser(&page, "report");
    // On the phone the wide tables are still whole: they scroll in their
    // own box instead of being squeezed or cut.
    let (_, phone) = &verdicts[1];
    let scrolling = phone["scrolling"].to_string();
    assert!(
        scrolling.contains("CPUkindint (Mops/s)"),
        "the per-CPU speed table scrolls in its box at 390 px: {phone}"
    );
}

#[test]
fn report_command_page_fits_a_laptop_and_a_phone() {
    if skip_without_chromium() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let page = page_of_the_command(work.path(), &artefacts(), "pinsight-report-command", false);
    check_in_browser(&page, "report-command");
}
