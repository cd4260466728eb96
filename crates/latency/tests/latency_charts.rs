//! Pictures and tables of recorded matrices (fixtures copied from
//! core-to-core-latency's published results, MIT).

use pinsight_cpuset::CpuSet;
use pinsight_latency::view::{self as render, ChartOptions, KindBand, TableStyle};
use pinsight_latency_model::{domains, LatencyMatrix};
use std::path::Path;

/// How plotters writes a text element's content.
fn text(s: &str) -> String {
    format!(">\n{s}\n</text>")
}

fn fixture(name: &str) -> LatencyMatrix {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    LatencyMatrix::parse(&text, &path.display().to_string()).unwrap()
}

/// The i9-12900K: 8 P-cores with SMT (CPUs 0-15), 8 E-cores (16-23).
fn alder_lake_kinds() -> Vec<KindBand> {
    vec![
        KindBand {
            name: "E-core".into(),
            cpus: CpuSet::parse_list("16-23").unwrap(),
        },
        KindBand {
            name: "P-core".into(),
            cpus: CpuSet::parse_list("0-15").unwrap(),
        },
    ]
}

#[test]
fn svg_has_every_cpu_label_and_the_kind_names() {
    let m = fixture("Intel_Core_i9-12900K.csv");
    let opts = ChartOptions {
        title: "i9-12900K (cas)".into(),
        kinds: alder_lake_kinds(),
    };
    let svg = render::svg(&m, &opts).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for cpu in 0..24 {
        // Each id twice: column and row label.
        let n = svg.matches(&text(&cpu.to_string())).count();
        assert!(n >= 2, "CPU {cpu} labelled {n} times");
    }
    assert!(svg.contains(&text("P-core")) && svg.contains(&text("E-core")));
    assert!(svg.contains("i9-12900K (cas)"));
    assert!(svg.contains("sans-serif"));
    // Kind boundaries: the P/E change after CPU 15 gives two lines.
    assert!(
        svg.matches("<polyline").count() >= 2,
        "no kind boundary lines"
    );
}

#[test]
fn large_matrices_thin_out_labels_but_stay_readable() {
    // 72 CPUs (2 sockets); the 192-CPU EPYC takes 0.1 s in release but
    // seconds in debug builds.
    let m = fixture("Intel_R_Xeon_R_CPU_E5-2695_v4_2.10GHz.csv");
    assert_eq!(m.len(), 72);
    let svg = render::svg(
        &m,
        &ChartOptions {
            title: "Xeon E5-2695 v4".into(),
            kinds: vec![],
        },
    )
    .unwrap();
    assert!(svg.contains(&text("0")));
    // Not every one of the ids fits along the top: some are skipped.
    let labelled = (0..m.len())
        .filter(|c| svg.contains(&text(&c.to_string())))
        .count();
    assert!(labelled < m.len() && labelled > 10, "{labelled} labels");
    assert!(svg.len() > 50_000);
}

#[test]
fn png_file_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m1.png");
    let m = fixture("Apple_M1_Pro.csv");
    render::write_png(
        &m,
        &ChartOptions {
            title: "Apple M1 Pro".into(),
            kinds: vec![],
        },
        &path,
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 2000, "{} bytes", bytes.len());
    let svg_path = dir.path().join("m1.svg");
    render::write_svg(&m, &ChartOptions::default(), &svg_path).unwrap();
    assert!(std::fs::metadata(&svg_path).unwrap().len() > 1000);
    let e = render::write_png(
        &m,
        &ChartOptions::default(),
        &dir.path().join("no/such/dir.png"),
    )
    .unwrap_err();
    let e = e.to_string();
    assert!(e.contains("no/such/dir.png"), "{e}");
}

#[test]
fn terminal_summary_of_a_chiplet_machine_uses_its_domains() {
    let m = fixture("AMD_Ryzen_9_5950X_3.40_GHz.csv");
    let tree = domains(&m);
    let t = render::heatmap(
        &m,
        Some(&tree),
        &TableStyle {
            color: false,
            width: 80,
        },
    );
    assert!(t.starts_with("32 CPUs do not fit in 80 columns"), "{t}");
    assert!(t.contains("latency domain"), "{t}");
    // Wide enough: the whole lower triangle, like the tool prints it.
    let full = render::heatmap(
        &m,
        Some(&tree),
        &TableStyle {
            color: false,
            width: 200,
        },
    );
    assert_eq!(full.lines().count(), 33, "{full}");
    assert!(
        full.lines()
            .nth(2)
            .unwrap()
            .trim_start()
            .starts_with("1   18"),
        "{full}"
    );
}
