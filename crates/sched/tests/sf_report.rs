//! `pinsight sf`'s human report: a golden of a hybrid machine's run (a
//! measured thread, one still short of samples, one that exited, one whose
//! counters could not be opened), and the 80-column limit.

use pinsight_cpuset::CpuSet;
use pinsight_measure::Metric;
use pinsight_measure::{
    sf::KindFigures, sf::KindPmu, sf::SfPmus, sf::ThreadEntry, sf::ThreadSfReport,
};
use pinsight_sched::view::sf::{render, SfRun};
use pinsight_sched_model::ControlMetrics;
use pinsight_sched_model::Kind as SfKind;

fn figures(samples: u32, seconds: f64, ips: Option<f64>) -> KindFigures {
    KindFigures {
        samples,
        seconds,
        ips: ips.map_or_else(
            || Metric::unavailable("never ran on this kind while sampled"),
            Metric::value,
        ),
    }
}

fn entry(tid: i32, name: &str, exited: bool, report: Option<ThreadSfReport>) -> ThreadEntry {
    ThreadEntry {
        pid: 1,
        tid,
        name: name.into(),
        exited,
        error: report.is_none().then(|| {
            format!(
                "perf_event_paranoid=3: counting another thread is forbidden (Permission \
                 denied (os error 13)) [thread {tid}]"
            )
        }),
        report,
    }
}

#[test]
fn report_of_a_hybrid_run() {
    let pmus = SfPmus {
        pmus: vec![
            KindPmu {
                pmu: "cpu_core".into(),
                type_id: 4,
                kind: SfKind::Big,
                kind_name: "P-core".into(),
                cpus: CpuSet::parse_list("0-11").unwrap(),
            },
            KindPmu {
                pmu: "cpu_atom".into(),
                type_id: 10,
                kind: SfKind::Small,
                kind_name: "E-core".into(),
                cpus: CpuSet::parse_list("12-19").unwrap(),
            },
        ],
        big: CpuSet::parse_list("0-11").unwrap(),
        small: CpuSet::parse_list("12-19").unwrap(),
    };
    let measured = ThreadSfReport {
        tid: 4242,
        sf: Metric::value(1.934),
        predicted_sf: Metric::value(2.41),
        on: Some(SfKind::Small),
        big: figures(14, 1.4, Some(4.12e9)),
        small: figures(12, 1.2, Some(2.13e9)),
        phase: Some(ControlMetrics {
            l1_per_kilo_instr: 312.0,
            branch_fraction: 0.18,
        }),
        phases: 3,
        control_metrics: true,
    };
    let short = ThreadSfReport {
        tid: 4243,
        sf: Metric::unavailable("3 of 5 samples on the small kind"),
        predicted_sf: Metric::unavailable("3 of 5 samples on the small kind"),
        on: Some(SfKind::Big),
        big: figures(9, 0.9, Some(3.9e9)),
        small: figures(3, 0.3, Some(2.0e9)),
        phase: None,
        phases: 0,
        control_metrics: false,
    };
    let idle = ThreadSfReport {
        tid: 4250,
        sf: Metric::unavailable("0 of 5 samples on the big kind, 0 of 5 samples on the small kind"),
        predicted_sf: Metric::unavailable(
            "0 of 5 samples on the big kind, 0 of 5 samples on the small kind",
        ),
        on: None,
        big: figures(0, 0.0, None),
        small: figures(0, 0.0, None),
        phase: None,
        phases: 0,
        control_metrics: true,
    };
    let threads = vec![
        entry(4242, "render-main", false, Some(measured)),
        entry(4243, "render-worker-with-a-long-name", false, Some(short)),
        entry(4250, "io", true, Some(idle)),
        entry(4251, "helper", false, None),
    ];
    let run = SfRun {
        target: "./render scene.txt (PID 4242)",
        period_s: 0.2,
        periods: 26,
        elapsed_s: 5.2,
        probe: true,
        interrupted: true,
        min_samples: 5,
    };
    let text = render(&run, &pmus, &threads);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "over 80 columns: {l}");
    }
    insta::assert_snapshot!(text);
}
