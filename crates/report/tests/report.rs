//! The report on recorded machines: the i7-1370P hybrid laptop (topology)
//! and real measured latency matrices.

use pinsight_latency::LoadMatrix;
use pinsight_latency_model::{domains, LatencyMatrix};
use pinsight_model::Topology;
use pinsight_report::view::{html, topology_svg};
use pinsight_report::{suggestions, ReportData};
use pinsight_speed::run::{CpuSpeed, KernelResult};
use pinsight_speed::{speedups, Kernel};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use std::path::PathBuf;

fn fixture_topology(name: &str) -> Topology {
    discover(&FsRoot::at(pinsight_testkit::fixtures::hwloc(name)).unwrap())
}

/// Asserts that `text` contains each of `wants`, naming the one it lacks.
pub(crate) fn assert_all_in(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "no {want:?} in: {text}");
    }
}

/// The report of `topology` made at time 0 by version "test" on an
/// unnamed host in 1 s of a 1 s budget, with nothing measured, skipped
/// or suggested.
pub(crate) fn report_data(topology: Topology) -> ReportData {
    ReportData {
        pinsight_version: "test".into(),
        generated_unix: 0,
        hostname: None,
        budget_s: 1.0,
        elapsed_s: 1.0,
        domains: None,
        latency: None,
        speed: None,
        skipped: vec![],
        suggestions: vec![],
        virtual_machine: None,
        latency_disturbance: vec![],
        conditions: vec![],
        topology,
    }
}

fn matrix(name: &str) -> LatencyMatrix {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../latency/tests/fixtures")
        .join(name);
    LatencyMatrix::load(&p).unwrap()
}

/// The suggestions from the recorded matrix `name` and its domains, on a
/// flat machine of as many CPUs.
fn latency_suggestions(name: &str) -> Vec<String> {
    let m = matrix(name);
    let topo = synthetic_flat(m.cpus.len());
    let tree = domains(&m);
    suggestions(&topo, Some(&m), Some(&tree), None)
}

/// Fake but plausible per-CPU speeds: P-cores twice as fast on int.
pub(crate) fn speeds(topo: &Topology) -> Vec<CpuSpeed> {
    let fast = topo.kinds.len() - 1;
    let mut v: Vec<CpuSpeed> = topo
        .usable()
        .iter()
        .map(|cpu| {
            let kind = topo.cpu(cpu).unwrap().kind;
            let m = if kind == Some(fast) { 200.0 } else { 100.0 };
            CpuSpeed {
                cpu,
                kind,
                results: vec![KernelResult {
                    kernel: Kernel::Int,
                    median: m,
                    ci_low: m,
                    ci_high: m,
                    samples: 9,
                    chunks: 9,
                    disturbed: 0,
                    disturbed_included: false,
                    relative: f64::NAN,
                }],
                relative: f64::NAN,
                misplaced_chunks: 0,
            }
        })
        .collect();
    pinsight_speed::run::fill_relative(&mut v);
    v
}

/// A speed report of the int kernel over [`speeds`], with `disturbance`.
pub(crate) fn speed_report(
    topo: &Topology,
    disturbance: Option<pinsight_measure::Disturbance>,
) -> pinsight_speed::SpeedReport {
    let cpus = speeds(topo);
    let (kinds, pairs) = speedups(topo, &cpus, &[Kernel::Int]);
    pinsight_speed::SpeedReport {
        kernels: vec![Kernel::Int],
        budget_per_cpu_s: 1.0,
        passes: 8,
        slots: vec![],
        elapsed_s: 20.0,
        mem_bytes: 1 << 23,
        time_share: false,
        cpus,
        kinds,
        speedups: pairs,
        disturbance,
        smt_yield: None,
    }
}

#[test]
fn hybrid_laptop_suggests_the_measured_speedup_and_smt() {
    let topo = fixture_topology("20em64t-hybrid-1p6c2t+2ca4co1t");
    assert_eq!(topo.kinds.len(), 2);
    let report = speed_report(&topo, None);
    let s = suggestions(&topo, None, None, Some(&report));
    let text = s.join("\n");
    assert_all_in(
        &text,
        &["speedup factor ≈ 2.00", "0-11", "6 cores have SMT siblings"],
    );
}

#[test]
fn chiplet_matrix_names_the_better_pair_than_autopilot() {
    // Threadripper 1950X: CPUs 0 and 1 are in one CCX on the measured box,
    // but the best 4-group must come from one CCX too; the suggestion must
    // name figures and never be worse than autopilot.
    let s = latency_suggestions("AMD_Ryzen_Threadripper_1950X.csv");
    let text = s.join("\n");
    assert_all_in(
        &text,
        &[
            "latency domains",
            "For 2 chatty threads",
            "For 4 communicating threads",
            " ns",
        ],
    );
}

#[test]
fn apple_m1_pro_domains_appear_in_the_sentence() {
    let s = latency_suggestions("Apple_M1_Pro.csv");
    assert!(
        s[0].contains("{0-1}") && s[0].contains("{2-4}") && s[0].contains("{5-7}"),
        "{}",
        s[0]
    );
}

/// A machine of `n` identical single-thread cores (only what suggestions need).
fn synthetic_flat(n: usize) -> Topology {
    // Removed when the topology has been read from it.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    for c in 0..n {
        let t = dir.join(format!("sys/devices/system/cpu/cpu{c}/topology"));
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("core_cpus_list"), c.to_string()).unwrap();
        std::fs::write(t.join("package_cpus_list"), format!("0-{}", n - 1)).unwrap();
        std::fs::write(t.join("physical_package_id"), "0").unwrap();
        std::fs::write(t.join("core_id"), c.to_string()).unwrap();
    }
    std::fs::write(
        dir.join("sys/devices/system/cpu/online"),
        format!("0-{}", n - 1),
    )
    .unwrap();
    std::fs::write(
        dir.join("sys/devices/system/cpu/present"),
        format!("0-{}", n - 1),
    )
    .unwrap();
    discover(&FsRoot::at(&dir).unwrap())
}

#[test]
fn html_is_self_contained_and_escaped() {
    let mut topo = fixture_topology("20em64t-hybrid-1p6c2t+2ca4co1t");
    topo.model_name = Some("Evil <script>alert(1)</script>".into());
    let m = matrix("Apple_M1_Pro.csv");
    let data = ReportData {
        hostname: Some("box".into()),
        budget_s: 60.0,
        domains: Some(domains(&m)),
        latency: Some(m),
        skipped: vec!["speed: skipped (--no-speed)".into()],
        suggestions: vec!["use <CPUs> 0,1".into()],
        ..report_data(topo)
    };
    let page = html(&data);
    assert!(!page.contains("<script>"), "model name must be escaped");
    assert!(page.contains("&lt;CPUs&gt;"));
    assert_eq!(
        page.matches("<svg").count(),
        2,
        "topology picture and heatmap are embedded"
    );
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "no external resources"
    );
    assert!(page.contains("speed: skipped"));
}

#[test]
fn topology_picture_shows_every_online_cpu_and_kind_legend() {
    let topo = fixture_topology("20em64t-hybrid-1p6c2t+2ca4co1t");
    let svg = topology_svg(&topo);
    for cpu in topo.online().iter() {
        assert!(
            svg.contains(&format!(">{cpu}</text><title>CPU {cpu}, ")),
            "CPU {cpu} missing"
        );
    }
    for k in &topo.kinds {
        assert!(svg.contains(&k.name), "legend lacks {}", k.name);
    }
}

/// Prints the suggestions for every recorded matrix (run with --nocapture to read them).
#[test]
fn every_recorded_matrix_gives_consistent_suggestions() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../latency/tests/fixtures");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for name in names.iter().filter(|n| n.ends_with(".csv")) {
        let m = matrix(name);
        let topo = synthetic_flat(m.cpus.iter().max().unwrap() + 1);
        let tree = domains(&m);
        let s = suggestions(&topo, Some(&m), Some(&tree), None);
        println!("== {name}\n{}", s.join("\n"));
        let text = s.join("\n");
        // Never "uniform, matters little" beside "use CPUs a,b not 0,1".
        assert!(
            !(text.contains("matters little") && text.contains(" use CPUs ")),
            "{name}: {text}"
        );
    }
}

/// The picture's width attribute.
fn svg_width(svg: &str) -> usize {
    let at = svg.find("width=\"").unwrap() + 7;
    svg[at..].split('"').next().unwrap().parse().unwrap()
}

#[test]
fn hybrid_picture_shows_the_e_core_clusters_and_their_l2() {
    let topo = fixture_topology("20em64t-hybrid-1p6c2t+2ca4co1t");
    let svg = topology_svg(&topo);
    // P-cores have private L2s (not drawn); the E-cores share one L2 per 4.
    assert!(svg.contains("L2 2 MiB · CPUs 12-15"), "{svg}");
    assert!(svg.contains("L2 2 MiB · CPUs 16-19"));
    assert_eq!(svg.matches(">L2 ").count(), 2);
    assert!(svg.contains("Package 0 · L3 24 MiB · CPUs 0-19"));
    assert!(svg.contains("CPU 0, P-core") && svg.contains("CPU 19, E-core"));
    assert!(svg_width(&svg) <= pinsight_report::view::topo_svg::MAX_WIDTH + 2);
}

#[test]
fn power7_picture_nests_one_core_packages_in_numa_nodes() {
    let topo = fixture_topology("256ppc-8n8s4t");
    let svg = topology_svg(&topo);
    assert_eq!(svg.matches(">NUMA node ").count(), 8, "one box per node");
    assert_eq!(svg.matches(">Package ").count(), 64);
    // A one-core package needs no CPU list; a node lists its CPUs.
    assert!(
        svg.contains(">Package 0 · L3 4 MiB</text>"),
        "{}",
        &svg[..3000]
    );
    assert!(svg.contains("NUMA node 0 (56 GiB DRAM) · CPUs 0-31"));
    for cpu in topo.online().iter() {
        assert!(
            svg.contains(&format!(">{cpu}</text><title>CPU {cpu}")),
            "CPU {cpu} missing"
        );
    }
    assert!(svg_width(&svg) <= pinsight_report::view::topo_svg::MAX_WIDTH + 2);
}

#[test]
fn numa_nodes_outside_the_cgroup_are_not_counted() {
    // Opteron 6134 box: 4 packages x 2 nodes, this process confined to 6 CPUs of 2 nodes.
    let xml = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../topology/tests/fixtures/hwloc/32amd64-4s2n4c-cgroup2.xml");
    let topo = pinsight_topology::hwloc_xml::load(&xml).unwrap();
    let s = suggestions(&topo, None, None, None).join("\n");
    assert!(
        s.contains("2 NUMA nodes: keep a thread near its memory"),
        "{s}"
    );
    assert!(pinsight_report::view::html::machine_line(&topo).contains("2 NUMA nodes"));
}

#[test]
fn picture_and_topo_text_name_cache_sizes_alike() {
    // A 27.5 MiB L3: one binary-unit rule for both, exact, never rounded.
    let topo = fixture_topology("memorysidecaches");
    let svg = topology_svg(&topo);
    let text = pinsight_topology::view::topo_text::render(&topo, false);
    assert!(svg.contains("Package 0 · L3 28160 KiB · CPUs "), "{svg}");
    assert!(!svg.contains("27.5 MiB"));
    assert!(text.contains("L3 (28160KB)"), "{text}");
    // Whole MiB stay MiB in both.
    let topo = fixture_topology("20em64t-hybrid-1p6c2t+2ca4co1t");
    assert!(topology_svg(&topo).contains("L3 24 MiB"));
    assert!(pinsight_topology::view::topo_text::render(&topo, false).contains("L3 (24MB)"));
}

/// A disturbance on `cpu` of `share` of the run (none when 0).
fn disturbance(cpu: usize, share: f64) -> pinsight_measure::Disturbance {
    use pinsight_measure::disturbance::CpuDisturbance;
    pinsight_measure::Disturbance {
        threshold: 0.05,
        disturbed: share > 0.05,
        plan_cpus: "0-11".into(),
        interval_s: 2.0,
        other_s: 2.0 * share,
        steal_s: 0.0,
        emulation_s: 0.0,
        resolution_s: 0.01,
        runnable_before: Some(1),
        runnable_after: Some(2),
        cpus: (share > 0.0)
            .then_some(CpuDisturbance {
                cpu,
                share,
                share_min: share - 0.005,
                steal_share: 0.0,
            })
            .into_iter()
            .collect(),
    }
}

/// Speed's disturbance, the latency matrices' and the virtual machine are
/// said in the terminal summary, the page and the JSON.
#[test]
fn the_report_says_what_disturbed_speed_and_latency_and_the_vm() {
    let topo = fixture_topology("20em64t-hybrid-1p6c2t+2ca4co1t");
    let speed = speed_report(&topo, Some(disturbance(3, 0.4)));
    let m = matrix("Apple_M1_Pro.csv");
    let data = pinsight_report::session::assemble(
        topo,
        Some(speed),
        Some(m),
        vec![],
        "m.json",
        None,
        std::time::Duration::from_secs(20),
        std::time::Instant::now(),
    )
    .with_conditions(
        Some("virtual machine (test): the host may move the virtual CPUs".into()),
        vec![Some(disturbance(0, 0.0)), None, Some(disturbance(1, 0.3))],
    );
    let c = data.conditions.join("\n");
    assert!(c.contains("virtual machine (test)"), "{c}");
    assert!(
        c.contains("speed: disturbance: other work took 40% of CPU 3"),
        "{c}"
    );
    assert!(
        c.contains("latency matrices: disturbance: 1 of 2 matrices disturbed")
            && c.contains("CPU 1, 30%"),
        "{c}"
    );
    let text = pinsight_report::view::terminal_summary(&data, "r.html", "r.json", None, 80);
    assert_all_in(&text, &["Measured under:", "! speed: disturbance"]);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(html(&data).contains("Measured under:"));
    let json = serde_json::to_value(&data).unwrap();
    assert_eq!(json["speed"]["disturbance"]["cpus"][0]["cpu"], 3);
    assert_eq!(json["latency_disturbance"].as_array().unwrap().len(), 3);
    assert!(json["latency_disturbance"][1].is_null());
    assert_eq!(json["latency_disturbance"][2]["disturbed"], true);
    assert!(json["virtual_machine"].as_str().unwrap().contains("test"));
    assert_eq!(json["conditions"].as_array().unwrap().len(), 3);
}

/// What the budget leaves out is handed over before anything is measured:
/// the callback runs before the first progress task begins (`report`
/// says it on stderr first, never after minutes of measuring).
#[test]
fn the_budget_plan_is_told_before_measuring() {
    use pinsight_report::run::{run, Files, Request};
    use pinsight_sys::progress::Progress;
    use std::time::{Duration, Instant};
    struct FirstBegin<'a>(&'a std::cell::Cell<Option<bool>>, &'a std::cell::Cell<bool>);
    impl Progress for FirstBegin<'_> {
        fn begin(&mut self, _what: &str, _total: u64, _done: u64) {
            if self.0.get().is_none() {
                self.0.set(Some(self.1.get()));
            }
        }
    }
    let told = std::cell::Cell::new(false);
    let told_at_begin = std::cell::Cell::new(None);
    let dir = tempfile::tempdir().unwrap();
    let request = Request {
        topology: pinsight_topology::discover(&pinsight_sys::FsRoot::live()),
        budget: Duration::from_secs(3),
        started: Instant::now(),
        files: Files::with_prefix(&dir.path().join("r")),
        latency_from: None,
        speed_from: None,
        // Speed asked away: the plan has a skip to tell, latency runs.
        no_latency: false,
        no_speed: true,
        hostname: None,
    };
    let made = run(
        request,
        &mut FirstBegin(&told_at_begin, &told),
        &mut |skips| {
            assert!(!skips.is_empty());
            told.set(true);
        },
    )
    .unwrap();
    assert!(told.get());
    if made.data.latency.is_some() {
        assert_eq!(
            told_at_begin.get(),
            Some(true),
            "measured before the plan was told"
        );
    } else {
        pinsight_testkit::skip(
            "latency was not measured here (one usable CPU?): the order is unseen",
        );
    }
}
