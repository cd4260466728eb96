//! `pinsight load`'s views fit the terminal: the whole view in 80
//! columns, the refreshing one in 80×24 (and in a taller window, more
//! CPUs) on the recorded 20-CPU hybrid laptop with a hot IRQ CPU.

use pinsight_load::view::{load_full, load_screen};
use std::path::PathBuf;

fn report() -> pinsight_load::LoadReport {
    recorded(&pinsight_load::Parts::default()).unwrap()
}

/// The recorded hot-IRQ readings (before and after) on the laptop, with
/// `parts`.
fn recorded(
    parts: &pinsight_load::Parts,
) -> Result<pinsight_load::LoadReport, pinsight_load::LoadError> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/load/hot-irq");
    let d = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(
        &pinsight_testkit::fixtures::hwloc("20em64t-hybrid-1p6c2t+2ca4co1t"),
        d.path(),
    );
    pinsight_testkit::copy_tree(&data.join("before"), d.path());
    let fs = pinsight_sys::FsRoot::at(d.path()).unwrap();
    let m = pinsight_load::machine(&fs, &pinsight_topology::discover(&fs));
    let after = pinsight_sys::FsRoot::at(data.join("after")).unwrap();
    pinsight_load::recorded(&m, &fs, &after, pinsight_load::Options::default(), parts)
}

#[test]
fn the_screen_fits_80_by_24_most_loaded_first() {
    let r = report();
    let s = load_screen(&r, 24);
    insta::assert_snapshot!(s);
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines.len() <= 24, "{} lines:\n{s}", lines.len());
    for l in &lines {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
    // The E-cores (normalised 1.37) come first, the rest counted.
    assert!(lines[2].trim_start().starts_with("12 E"), "{s}");
    assert!(s.contains("more CPUs, normalised load"), "{s}");
    assert!(s.contains("pinsight irq --off 3"), "{s}");
    assert!(s.contains("Busy: "), "{s}");
    // A taller window shows every CPU.
    let tall = load_screen(&r, 60);
    assert!(!tall.contains("more CPUs"), "{tall}");
    assert_eq!(
        tall.lines()
            .filter(|l| l.contains(" 1.00 ") || l.contains(" 0.58 "))
            .count(),
        20
    );
}

#[test]
fn the_whole_view_fits_80_columns() {
    let s = load_full(&report());
    for l in s.lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
}

/// Saturated CPUs read 100% busy whatever the placement: their run queue
/// (mean tasks waiting, from /proc/schedstat) is shown in both views, and
/// the screen still fits 80x24; an emulation's stealers are named.
#[test]
fn saturated_cpus_show_their_run_queue_within_80_by_24() {
    let mut r = report();
    for (i, c) in r.cpus.iter_mut().enumerate() {
        c.run_queue = Some(0.1 * i as f64);
        if i >= 12 {
            c.busy = 1.0;
            c.normalised = 1.0 / c.capacity;
        }
    }
    r.cpus[19].emulated = 0.5;
    let s = load_screen(&r, 24);
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines.len() <= 24, "{} lines:\n{s}", lines.len());
    for l in &lines {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
    assert!(
        s.contains("Run queue of the saturated CPUs (tasks waiting): CPU 12 1.2, CPU 13 1.3"),
        "{s}"
    );
    let full = load_full(&r);
    let flat = full.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("CPU 19 1.9"), "{full}");
    assert!(!flat.contains("CPU 11 1.1"), "{full}");
    assert!(
        flat.contains("STEAL includes the emulation's stealers (CPU 19 50%)"),
        "{full}"
    );
    for l in full.lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
}

/// The worst a CPU row can hold (a 15-byte name at 100%, millions of
/// IRQs a second, two-digit demand) and a task row still fit 80 columns.
#[test]
fn the_widest_rows_fit_80_columns() {
    let mut r = report();
    for c in &mut r.cpus {
        c.interrupts_per_s = Some(9.99e6);
        c.demand = Some(48.0);
        for t in &mut c.top_threads {
            t.comm = "abcdefghijklmno".into();
            t.share = 1.0;
        }
        if let Some(t) = c.top_threads.first_mut() {
            t.kernel = c.cpu % 2 == 0;
        }
    }
    let text = load_full(&r);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
    for l in load_screen(&r, 24).lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
}

/// An excluded process (an emulation's stealer) on a CPU the machine
/// does not have is refused before anything is read.
#[test]
fn an_excluded_process_on_a_missing_cpu_is_refused() {
    let parts = pinsight_load::Parts {
        threads: true,
        exclude: vec![pinsight_load::Excluded { cpu: 99, pid: 7 }],
    };
    let e = recorded(&parts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "99:7: CPU 99 is not on this machine (its CPUs: 0-19)"
    );
    let r = report();
    let warnings = pinsight_load::view::unavailable_cpus(&r);
    assert_eq!(warnings.lines().count(), r.unavailable_cpus.len());
}

/// Each style writes one reading ending in a newline: JSON pretty or on
/// one line, the same document; the refreshing frame homes the cursor
/// and clears the screen once, then the screen.
#[test]
fn a_reading_in_each_style() {
    use pinsight_load::view::{load_frame, reading, Style};
    let r = report();
    let pretty = reading(&r, Style::Json).unwrap();
    let line = reading(&r, Style::JsonLine).unwrap();
    assert_eq!(line.lines().count(), 1);
    assert!(pretty.ends_with("}\n") && line.ends_with("}\n"));
    let a: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    let b: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(a, b);
    assert_eq!(reading(&r, Style::Text).unwrap(), load_full(&r));
    assert!(reading(&r, Style::OpenMetrics)
        .unwrap()
        .ends_with("# EOF\n"));
    let frame = load_frame(&r, 24);
    assert_eq!(frame.matches('\x1b').count(), 2, "{frame:?}");
    assert_eq!(
        frame.strip_prefix("\x1b[H\x1b[2J"),
        Some(load_screen(&r, 24).as_str())
    );
}
