//! The sampling path of `SfSampler` (per-thread groups, group reads,
//! windows, estimator, reports) run live with its software stand-in (this
//! machine may have no PMU): two busy threads, ten periods, every group
//! counting, an SF once each kind has five samples.

use pinsight_measure::{sf::SfOptions, sf::SfPmus, sf::SfSampler, sf::SfUnavailable};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn pmus() -> SfPmus {
    crate::common::two_kind_pmus(0, 1)
}

#[test]
fn busy_threads_get_samples_on_both_groups_and_an_sf() {
    let mut s = SfSampler::software_stand_in(
        pmus(),
        SfOptions {
            min_running: Duration::from_millis(1),
            ..SfOptions::default()
        },
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (stop, tx) = (stop.clone(), tx.clone());
            std::thread::spawn(move || {
                tx.send(pinsight_sys::affinity::gettid()).unwrap();
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            })
        })
        .collect();
    let tids: Vec<i32> = (0..2).map(|_| rx.recv().unwrap()).collect();
    for &t in &tids {
        match s.attach(t) {
            Ok(()) => {}
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                return pinsight_testkit::skip(format!("perf_event_open: {e}"));
            }
        }
        // Twice is a no-op.
        s.attach(t).unwrap();
    }
    assert_eq!(s.tids().len(), 2);
    // Ten periods at least; more while a busy machine starved a worker.
    for i in 0..200 {
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(s.sample_all(), Vec::new());
        let enough = tids.iter().all(|&t| {
            let r = s.report(t).unwrap();
            r.big.samples >= 5 && r.small.samples >= 5
        });
        if i >= 9 && enough {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    for &t in &tids {
        let r = s.report(t).unwrap();
        // The stand-in counts on every CPU: both "kinds" see every window
        // a busy thread ran (under 2 CPUs shared with the test harness,
        // nearly every one).
        assert!(r.big.samples >= 5 && r.small.samples >= 5, "{r:?}");
        // (The two groups are read one after the other: within 1%.)
        assert!(
            (r.big.seconds - r.small.seconds).abs() < 0.01 * r.big.seconds,
            "{r:?}"
        );
        // Same counts on both: SF 1 (task-clock ns per running ns ≈ 1e9).
        let sf = r.sf.get().unwrap();
        assert!((1.0..1.05).contains(&sf), "{r:?}");
        assert_eq!(s.sf(t), r.predicted_sf.get());
        let ips = r.big.ips.get().unwrap();
        assert!((0.5e9..1.5e9).contains(&ips), "{r:?}");
        assert!(r.control_metrics && r.phases >= 1, "{r:?}");
    }
    s.detach(tids[0]);
    assert!(s.report(tids[0]).is_none());
    assert_eq!(
        s.sample(tids[0]).unwrap_err(),
        SfUnavailable::Exited { tid: tids[0] }
    );
}

#[test]
fn too_few_samples_is_unavailable_with_the_counts() {
    let mut s = SfSampler::software_stand_in(pmus(), SfOptions::default());
    if let Err(e) = s.attach(0) {
        return pinsight_testkit::skip(format!("perf_event_open: {e}"));
    }
    let r = s.report(0).unwrap();
    assert_eq!(
        r.sf.reason(),
        Some("0 of 5 samples on the big kind, 0 of 5 samples on the small kind")
    );
    assert!(r.big.ips.reason().unwrap().contains("never ran"));
    assert_eq!(s.sf(0), None);
}
