//! Properties of the parsers of outside input (`/proc/interrupts`,
//! `/proc/softirqs`, `/proc/stat`) and of what is computed from them:
//! well-formed files read back exactly; any text is refused or read
//! without a panic; the load's shares stay in [0, 1] and finite.

use pinsight_load::interrupts::{parse_interrupts, parse_softirqs};
use pinsight_load::report::{analyse, CpuInfo, Machine, Options};
use pinsight_load::sample::{bad_stat_lines, parse_schedstat, parse_uptime, Sample};
use pinsight_sys::cpustat::parse_cpu_fields;
use proptest::prelude::*;

fn header(cpus: &[usize]) -> String {
    let mut h = String::from("          ");
    for c in cpus {
        h.push_str(&format!("CPU{c:<8}"));
    }
    h
}

/// Distinct CPU numbers, ascending (offline CPUs leave gaps).
fn cpu_columns() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::btree_set(0usize..64, 1..8).prop_map(|s| s.into_iter().collect())
}

proptest! {
    #[test]
    fn well_formed_interrupts_read_back(
        cpus in cpu_columns(),
        lines in prop::collection::vec(
            (0u32..4096, prop::collection::vec(any::<u64>(), 8), "[a-z][a-z0-9_]{0,8}(-TxRx-[0-9])?"),
            0..10,
        ),
    ) {
        let mut text = header(&cpus);
        text.push('\n');
        for (n, counts, name) in &lines {
            text.push_str(&format!("{n:>4}:"));
            for c in &counts[..cpus.len()] {
                text.push_str(&format!(" {c:>10}"));
            }
            text.push_str(&format!("   PCI-MSI {n}-edge      {name}\n"));
        }
        let i = parse_interrupts(&text).unwrap();
        prop_assert_eq!(&i.cpus, &cpus);
        prop_assert_eq!(i.lines.len(), lines.len());
        for (l, (n, counts, name)) in i.lines.iter().zip(&lines) {
            prop_assert_eq!(l.number(), Some(*n));
            prop_assert_eq!(&l.counts[..], &counts[..cpus.len()]);
            prop_assert_eq!(l.handlers(), vec![name.clone()]);
            prop_assert_eq!(!l.queues().is_empty(), name.contains("TxRx"));
        }
    }

    #[test]
    fn well_formed_softirqs_read_back(
        cpus in cpu_columns(),
        rows in prop::collection::vec(("[A-Z_]{2,8}", prop::collection::vec(any::<u64>(), 8)), 0..10),
    ) {
        let mut text = header(&cpus);
        text.push('\n');
        for (name, counts) in &rows {
            text.push_str(&format!("{name:>12}:"));
            for c in &counts[..cpus.len()] {
                text.push_str(&format!(" {c:>10}"));
            }
            text.push('\n');
        }
        let s = parse_softirqs(&text).unwrap();
        prop_assert_eq!(&s.cpus, &cpus);
        for (r, (name, counts)) in s.rows.iter().zip(&rows) {
            prop_assert_eq!(&r.0, name);
            prop_assert_eq!(&r.1[..], &counts[..cpus.len()]);
        }
    }

    #[test]
    fn any_text_is_read_or_refused_without_a_panic(text in "(CPU[0-9] |[0-9]{1,3}: |[ a-zA-Z0-9:,.-]|\n){0,200}") {
        if let Some(i) = parse_interrupts(&text) {
            prop_assert!(!i.cpus.is_empty());
            for l in &i.lines {
                prop_assert!(l.counts.len() <= i.cpus.len());
                let _ = (l.handlers(), l.queues(), l.number());
            }
        }
        if let Some(s) = parse_softirqs(&text) {
            for r in &s.rows {
                prop_assert!(r.1.len() <= s.cpus.len());
            }
        }
    }

    #[test]
    fn shares_stay_in_the_unit_interval(
        a in prop::collection::vec(prop::collection::vec(0u64..1_000_000, 8), 1..6),
        d in prop::collection::vec(prop::collection::vec(0u64..1_000, 8), 1..6),
        caps in prop::collection::vec(0.05f64..1.0, 6),
    ) {
        let line = |c: usize, f: &[u64]| format!(
            "cpu{c} {} 0 0\n",
            f.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
        );
        let n = a.len().min(d.len());
        let before: String = (0..n).map(|c| line(c, &a[c])).collect();
        // A counter that goes backwards (a CPU that went offline and came
        // back) leaves that CPU out of the interval, said; never a
        // negative share, never a silent 0 or 100%.
        let after: String = (0..n)
            .map(|c| {
                let f: Vec<u64> = a[c].iter().zip(&d[c]).enumerate()
                    .map(|(k, (x, y))| if k == 2 && c == 0 { x / 2 } else { x + y })
                    .collect();
                line(c, &f)
            })
            .collect();
        let sample = |t: &str| Sample { stat: parse_cpu_fields(t), ..Sample::default() };
        let m = Machine {
            cpus: (0..n).map(|c| CpuInfo::unkinded(c, Some(c), caps[c], caps[c])).collect(),
            capacity_source: "test".into(),
        };
        let r = analyse(&m, &sample(&before), &sample(&after), Options::default());
        prop_assert_eq!(r.cpus.len() + r.unavailable_cpus.len(), n);
        let backwards = a[0][2] > 0;
        prop_assert_eq!(
            r.unavailable_cpus
                .iter()
                .any(|u| u.cpu == 0 && u.reason.contains("system went backwards")),
            backwards
        );
        prop_assert_eq!(r.unavailable_cpus.len(), usize::from(backwards));
        prop_assert!(r.interval_s.is_finite() && r.interval_s >= 0.0);
        for c in &r.cpus {
            for s in [c.user, c.system, c.irq, c.softirq, c.steal, c.idle, c.busy] {
                prop_assert!(s.is_finite() && (0.0..=1.0).contains(&s), "{c:?}");
            }
            prop_assert!(c.normalised.is_finite() && c.normalised >= 0.0);
        }
        if let Some(i) = &r.imbalance {
            prop_assert!(i.ratio.is_finite() && i.ratio >= 1.0);
        }
        prop_assert!(!r.suggestions.is_empty());
    }
}

proptest! {
    #[test]
    fn any_schedstat_or_uptime_text_is_read_or_refused_without_a_panic(
        text in "(version 1[4-7]\n|cpu[0-9] |[0-9]{1,12} |domain0 |timestamp |\n){0,60}"
    ) {
        if let Some(m) = parse_schedstat(&text) {
            prop_assert!(!m.is_empty());
        }
        if let Some(u) = parse_uptime(&text) {
            prop_assert!(u.is_finite() && u >= 0.0);
        }
    }

    /// With run times, an uptime interval and excluded processes (any
    /// values, counters going backwards included) every share stays in
    /// [0, 1], and busy + steal + idle never pass 1.
    #[test]
    fn schedstat_and_excluded_shares_stay_in_the_unit_interval(
        ticks in prop::collection::vec((0u64..500, 0u64..500, 0u64..500), 1..4),
        run in prop::collection::vec((0u64..10_000_000_000, 0u64..5_000_000_000), 4),
        excluded in prop::collection::vec(0u64..5_000_000_000, 4),
        up in (0.0f64..10.0, 0.0f64..10.0),
        use_sched in any::<bool>(),
    ) {
        let n = ticks.len();
        let stat = |k: u64| -> String {
            (0..n).map(|c| {
                let (u, s, i) = ticks[c];
                format!("cpu{c} {} 0 {} {} 0 0 0 0 0 0\n", u * k, s * k, i * k)
            }).collect()
        };
        let sched = |k: u64| -> String {
            let mut t = String::from("version 15\ntimestamp 1\n");
            for (c, (r, w)) in run.iter().enumerate().take(n) {
                t.push_str(&format!("cpu{c} 0 0 0 0 0 0 {} {} 5\n", r * k, w * k));
            }
            t
        };
        let sample = |k: u64, uptime: f64| Sample {
            stat: parse_cpu_fields(&stat(k)),
            sched: if use_sched { parse_schedstat(&sched(k)) } else { None },
            uptime_s: Some(uptime),
            excluded_ns: (0..n).map(|c| (c, excluded[c] * k)).collect(),
            ..Sample::default()
        };
        let m = Machine {
            cpus: (0..n).map(|c| CpuInfo::unkinded(c, Some(c), 0.5, 0.5)).collect(),
            capacity_source: "test".into(),
        };
        let r = analyse(&m, &sample(1, up.0), &sample(2, up.1), Options::default());
        for c in &r.cpus {
            for s in [c.user, c.system, c.irq, c.softirq, c.steal, c.idle, c.busy, c.emulated] {
                prop_assert!(s.is_finite() && (0.0..=1.0).contains(&s), "{c:?}");
            }
            prop_assert!(c.busy + c.steal + c.idle <= 1.0 + 1e-9, "{c:?}");
            prop_assert!(c.user + c.system + c.irq + c.softirq <= c.busy + 1e-9, "{c:?}");
            if let Some(q) = c.run_queue {
                prop_assert!(q.is_finite() && q >= 0.0);
            }
        }
    }
}

#[test]
fn schedstat_versions_before_15_and_short_lines_are_refused() {
    let v15 = "version 15\ntimestamp 4295\ncpu0 0 0 10 2 8 4 1000 200 30\ndomain0 3 0 0\n";
    let m = parse_schedstat(v15).unwrap();
    assert_eq!(m[&0].running_ns, 1000);
    assert_eq!(m[&0].waiting_ns, 200);
    assert_eq!(m[&0].timeslices, 30);
    // Version 14 put other counters in those places.
    assert!(parse_schedstat(&v15.replace("version 15", "version 14")).is_none());
    assert!(parse_schedstat("version 15\ncpu0 1 2 3\n").is_none());
    assert!(parse_schedstat("").is_none());
    assert_eq!(parse_uptime("1002.37 3000.10\n"), Some(1002.37));
    assert_eq!(parse_uptime("-1 0"), None);
}

/// A two-CPU reading: `/proc/stat` text, run times (ns) of
/// `/proc/schedstat`, uptime.
fn reading(stat: &str, run_ns: [u64; 2], uptime: f64) -> Sample {
    let sched = format!(
        "version 15\ntimestamp 1\ncpu0 0 0 0 0 0 0 {} 0 5\ncpu1 0 0 0 0 0 0 {} 0 5\n",
        run_ns[0], run_ns[1]
    );
    Sample {
        stat: parse_cpu_fields(stat),
        stat_bad: bad_stat_lines(stat),
        sched: parse_schedstat(&sched),
        uptime_s: Some(uptime),
        ..Sample::default()
    }
}

fn two_cpus() -> Machine {
    Machine {
        cpus: (0..2)
            .map(|c| CpuInfo::unkinded(c, Some(c), 1.0, 1.0))
            .collect(),
        capacity_source: "test".into(),
    }
}

/// Counters that went backwards, that are negative, past 2^64 - 1 or
/// not numbers, that grow past what a sum can hold, or a CPU in one
/// reading only: that CPU is left out of the interval with its reason,
/// never dropped silently, never read as idle or as 100% busy; the
/// other CPU is measured as ever.
#[test]
fn counters_that_cannot_be_used_leave_the_cpu_out_said() {
    let before = "cpu0 100 0 100 800 0 0 0 0\ncpu1 100 0 100 800 0 0 0 0\n";
    let good0 = "cpu0 150 0 150 900 0 0 0 0\n";
    // Half a second of run time on each CPU.
    let half = [500_000_000; 2];
    let huge = format!("cpu1 {m} {m} 150 900 0 0 0 0\n", m = u64::MAX);
    // CPU 1's line in the second reading (none: not in it).
    let cases: Vec<(&str, [u64; 2], &str)> = vec![
        (
            "cpu1 150 0 150 700 0 0 0 0\n",
            half,
            "idle went backwards (800 to 700)",
        ),
        (
            "cpu1 -5 0 150 900 0 0 0 0\n",
            half,
            "user reads '-5' (negative)",
        ),
        (
            "cpu1 150 0 150 99999999999999999999999 0 0 0 0\n",
            half,
            "idle reads '99999999999999999999999' (past the largest counter",
        ),
        (
            "cpu1 150 0 x 900 0 0 0 0\n",
            half,
            "system reads 'x' (not a number)",
        ),
        ("cpu1 150 0\n", half, "has 2 of its counters"),
        (huge.as_str(), half, "grew past 2^64 - 1"),
        (
            "cpu1 150 0 150 900 0 0 0 0\n",
            [5e8 as u64, 1],
            "run time went backwards",
        ),
        ("", half, "not in the second reading"),
    ];
    for (cpu1, run, why) in cases {
        let after = format!("{good0}{cpu1}");
        let r = analyse(
            &two_cpus(),
            &reading(before, [0, 1_000_000_000], 10.0),
            &reading(&after, run, 11.0),
            Options::default(),
        );
        assert_eq!(r.cpus.len(), 1, "{after}: {:?}", r.cpus);
        assert_eq!(r.cpus[0].cpu, 0);
        assert!((r.cpus[0].busy - 0.5).abs() < 1e-9, "{:?}", r.cpus[0]);
        assert_eq!(r.unavailable_cpus.len(), 1, "{after}");
        let u = &r.unavailable_cpus[0];
        assert_eq!(u.cpu, 1);
        assert!(u.reason.contains(why), "{after}: {}", u.reason);
        assert!(
            r.unavailable
                .iter()
                .any(|l| l.starts_with("CPU 1: ") && l.contains(why)),
            "{:?}",
            r.unavailable
        );
    }
    // A CPU new in the second reading (it came online) likewise.
    let r = analyse(
        &two_cpus(),
        &reading(good0, [0, 0], 10.0),
        &reading(
            &format!("{good0}cpu1 1 0 1 1 0 0 0 0\n"),
            [5e8 as u64, 0],
            11.0,
        ),
        Options::default(),
    );
    assert_eq!(r.unavailable_cpus[0].cpu, 1);
    assert!(r.unavailable_cpus[0]
        .reason
        .contains("not in the first reading"));
}

#[test]
fn bad_stat_lines_name_the_field_and_why() {
    let text = "cpu  1 2 3 4\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpu1 1 -2 3 4\ncpu2 1 2 3\nintr 5\n";
    let bad = bad_stat_lines(text);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert_eq!(bad[&1], "/proc/stat's nice reads '-2' (negative)");
    assert!(bad[&2].contains("3 of its counters"), "{}", bad[&2]);
}

proptest! {
    /// Any sequence of looks (run time that never goes backwards, any
    /// states, CPUs and waits): every task's run, wait and demand lie in
    /// [0, 1], its progress is at most its run time (no CPU faster than
    /// the fastest), the imbalance is at least 1, and the capacity used
    /// at most 1 (the threads' progress cannot exceed what the CPUs
    /// have when each runs on one CPU at a time).
    #[test]
    fn progress_stays_within_its_bounds(
        steps in proptest::collection::vec(
            proptest::collection::vec((0u64..400_000_000, 0usize..3, any::<bool>(), 0u64..400_000_000), 1..5),
            2..8,
        ),
        ticks_only in any::<bool>(),
    ) {
        use pinsight_load::progress::{self, Speeds, Trace};
        use pinsight_load::sample::ThreadTick;
        let mut tr = Trace::new(100);
        let mut run = [0u64; 4];
        let mut wait = [0u64; 4];
        let secs = steps.len() as f64 * 0.4;
        for look in &steps {
            let ticks: Vec<ThreadTick> = look
                .iter()
                .enumerate()
                .map(|(i, (d, cpu, r, w))| {
                    // At most 0.4 s of run and wait per look of 0.4 s.
                    let d = (*d).min(400_000_000 - (*w).min(400_000_000));
                    run[i] += d;
                    wait[i] += w;
                    ThreadTick {
                        pid: i as i32 + 1,
                        tid: i as i32 + 1,
                        comm: "t".into(),
                        last_cpu: Some(*cpu),
                        ticks: run[i] / 10_000_000,
                        flags: 0,
                        state: if *r { 'R' } else { 'S' },
                        run_ns: (!ticks_only).then_some(run[i]),
                        wait_ns: (!ticks_only).then_some(wait[i]),
                    }
                })
                .collect();
            tr.look(&ticks);
        }
        let speeds: Speeds = [(0, 1.0), (1, 0.5), (2, 0.25)].into_iter().collect();
        let tasks = progress::tasks(&tr, secs, &speeds);
        for t in &tasks {
            for v in [t.run, t.wait, t.demand] {
                prop_assert!(v.is_finite() && (0.0..=1.0).contains(&v), "{:?}", t);
            }
            prop_assert!(t.progress <= t.run + 1e-9, "{:?}", t);
        }
        if let Some(i) = progress::imbalance(&tasks) {
            prop_assert!(i.ratio >= 1.0);
        }
        if let Some(u) = progress::capacity_used(&tasks, &[1.0, 0.5, 0.25]) {
            prop_assert!(u.is_finite() && u >= 0.0);
        }
    }
}
