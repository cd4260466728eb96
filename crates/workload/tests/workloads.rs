//! Every workload computes the right answer, and the same answer whatever
//! the thread count or schedule. Sizes are small: these check behaviour,
//! not speed.

use pinsight_workload::{check, info, parse_size, run, Params, Schedule, WorkloadError, WORKLOADS};

fn params(threads: usize, size: u64, schedule: Option<Schedule>) -> Params {
    Params {
        threads: Some(threads),
        size: Some(size),
        schedule,
        max_iter: None,
    }
}

#[test]
fn pi_is_accurate_and_identical_across_schedules() {
    let mut checksums = Vec::new();
    for schedule in Schedule::ALL {
        for threads in [1, 2, 3, 8] {
            let o = run("pi", &params(threads, 1_000_000, Some(schedule))).unwrap();
            assert!(
                (o.checksum - std::f64::consts::PI).abs() < 1e-9,
                "{schedule}/{threads}: {}",
                o.checksum
            );
            assert_eq!(o.per_thread.len(), threads);
            assert_eq!(
                o.per_thread.iter().map(|t| t.work_units).sum::<u64>(),
                1_000_000
            );
            assert!(o.per_thread.iter().enumerate().all(|(i, t)| t.index == i));
            assert!(o.figure_of_merit > 0.0 && o.higher_is_better);
            checksums.push(o.checksum.to_bits());
        }
    }
    assert!(
        checksums.iter().all(|&c| c == checksums[0]),
        "π differs between schedules/thread counts"
    );
}

#[test]
fn pi_static_split_is_equal() {
    let o = run("pi", &params(4, 1 << 20, Some(Schedule::Static))).unwrap();
    assert!(o
        .per_thread
        .iter()
        .all(|t| t.work_units == 1 << 18 && t.steals == 0));
}

/// Straightforward serial reference for the iteration count.
fn mandelbrot_reference(n: usize, max_iter: u32) -> u64 {
    let step = 2.5 / n as f64;
    let mut total = 0;
    for row in 0..n {
        for col in 0..n {
            let (cr, ci) = (
                -2.0 + (col as f64 + 0.5) * step,
                -1.25 + (row as f64 + 0.5) * step,
            );
            let (mut zr, mut zi, mut k) = (0.0f64, 0.0f64, 0);
            while k < max_iter && zr * zr + zi * zi <= 4.0 {
                let t = zr * zr - zi * zi + cr;
                zi = 2.0 * zr * zi + ci;
                zr = t;
                k += 1;
            }
            total += k as u64;
        }
    }
    total
}

#[test]
fn mandelbrot_iteration_count_is_stable() {
    let want = mandelbrot_reference(96, 200) as f64;
    for schedule in Schedule::ALL {
        for threads in [1, 2, 5] {
            let p = Params {
                max_iter: Some(200),
                ..params(threads, 96, Some(schedule))
            };
            let o = run("mandelbrot", &p).unwrap();
            assert_eq!(o.checksum, want, "{schedule}/{threads}");
            assert_eq!(
                o.per_thread.iter().map(|t| t.work_units).sum::<u64>() as f64,
                want
            );
            let area = o
                .details
                .iter()
                .find(|d| d.name == "set area estimate")
                .unwrap()
                .value;
            assert!((1.3..1.8).contains(&area), "area {area}"); // true area ≈ 1.5066
        }
    }
}

#[test]
fn lu_checksum_is_identical_across_thread_counts() {
    let one = run("lu", &params(1, 160, None)).unwrap();
    assert!(one.checksum.is_finite() && one.unit == "GFLOP/s");
    for threads in [2, 3, 7] {
        let o = run("lu", &params(threads, 160, None)).unwrap();
        assert_eq!(
            o.checksum.to_bits(),
            one.checksum.to_bits(),
            "{threads} threads"
        );
        assert_eq!(
            o.per_thread.iter().map(|t| t.work_units).sum::<u64>(),
            160 * 159 / 2
        );
    }
}

#[test]
fn pingpong_completes() {
    let o = run(
        "pingpong",
        &Params {
            size: Some(1_000),
            ..Params::default()
        },
    )
    .unwrap();
    assert_eq!(o.threads, 2);
    assert_eq!(o.checksum, 2_000.0);
    assert!(o.figure_of_merit > 0.0 && !o.higher_is_better);
    assert!(o
        .per_thread
        .iter()
        .all(|t| t.work_units == 1_000 && !t.cpu_seen.is_empty()));
}

#[test]
fn bad_input_is_refused_with_the_allowed_values() {
    let e = run("fib", &Params::default()).unwrap_err();
    assert_eq!(e, WorkloadError::Unknown { name: "fib".into() });
    assert!(
        e.to_string().contains("pi, mandelbrot, lu, pingpong"),
        "{e}"
    );
    assert_eq!(
        run("pi", &params(0, 1000, None)).unwrap_err(),
        WorkloadError::ZeroThreads
    );
    assert!(matches!(
        run("pi", &params(100_000, 1000, None)).unwrap_err(),
        WorkloadError::TooManyThreads {
            threads: 100_000,
            ..
        }
    ));
    assert_eq!(
        run("pingpong", &params(3, 1000, None)).unwrap_err(),
        WorkloadError::PingpongThreads(3)
    );
    match run("lu", &params(2, 100, Some(Schedule::Steal))).unwrap_err() {
        WorkloadError::NoSchedule {
            workload, takers, ..
        } => {
            assert_eq!(workload, "lu");
            assert_eq!(takers, ["pi", "mandelbrot"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        run("lu", &params(2, 100_000, None)).unwrap_err(),
        WorkloadError::SizeOutOfRange { size: 100_000, .. }
    ));
    let p = Params {
        max_iter: Some(10),
        ..params(1, 1000, None)
    };
    assert_eq!(
        run("pi", &p).unwrap_err(),
        WorkloadError::MaxIterNotApplicable { workload: "pi" }
    );
    assert!(parse_size("lots").is_err());
    // `check` gives the same verdicts without running anything.
    assert_eq!(
        check("lu", &params(0, 100, None)),
        Err(WorkloadError::ZeroThreads)
    );
    assert_eq!(
        check(
            "mandelbrot",
            &Params {
                max_iter: Some(0),
                ..Params::default()
            }
        ),
        Err(WorkloadError::ZeroMaxIter)
    );
    assert!(matches!(
        check("pi", &params(2, 1 << 41, None)),
        Err(WorkloadError::SizeOutOfRange { .. })
    ));
    assert_eq!(check("pingpong", &Params::default()), Ok(()));
}

#[test]
fn catalogue_and_json() {
    assert_eq!(WORKLOADS.len(), 4);
    assert_eq!(info("pi").unwrap().default_schedule, Some(Schedule::Steal));
    let o = run("pi", &params(2, 10_000, Some(Schedule::Dynamic))).unwrap();
    let v: serde_json::Value = serde_json::to_value(&o).unwrap();
    assert!(v["elapsed"].is_f64() && v["per_thread"][0]["busy"].is_f64());
    assert_eq!(v["schedule"], "dynamic");
    assert!(o.imbalance().unwrap() >= 1.0);
}

/// Every workload reports one task named after it, sized to its units of
/// work and stepped to the end.
#[test]
fn every_workload_reports_one_task_to_its_end() {
    let sizes = [
        ("pi", 100_000),
        ("mandelbrot", 64),
        ("lu", 32),
        ("pingpong", 1_000),
    ];
    for (name, size) in sizes {
        let mut progress = pinsight_testkit::progress::Recorder::default();
        pinsight_workload::run_with_progress(name, &params(2, size, None), &mut progress).unwrap();
        let tasks = progress.tasks();
        assert_eq!(tasks.len(), 1, "{name}: {progress:?}");
        assert_eq!(tasks[0].what, name);
        assert!(tasks[0].total > 0, "{name}: {tasks:?}");
        assert_eq!(tasks[0].done, tasks[0].total, "{name}: {tasks:?}");
    }
}
