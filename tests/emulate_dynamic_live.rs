//! The dynamic half of pinsight on the emulated machine: two CPUs, the
//! second slowed to half its speed by `pinsight emulate` (a calibrated
//! SCHED_FIFO duty-cycle stealer). Each test fails when the answer is
//! wrong: `tune` recovers the speed factor and recommends what a
//! brute-force measurement finds fastest; `plan balance` with `speed`'s
//! weights, applied by `pinsight run`, evens out the CPUs' finish times;
//! AARR shares the big CPU equally and `mix` orders the schedulers'
//! unfairness as the literature predicts; `sf` says why it cannot count
//! here and its compare route recovers the SF.
//!
//! Margins. The stealer is calibrated with SCHED_FIFO probes, so its
//! reported ratio is what a real-time thread sees; an ordinary (nice 0)
//! program on a machine loaded by other work sees a narrower gap, because
//! the kernel moves that other load off the slowed CPU onto the fast one
//! (0.68 instead of 0.5 with compilers on both CPUs, 0.9-1.0 at a load
//! average of 8). The tests' programs therefore run at nice -20 (see
//! [`at_high_priority`]), and every test measures the ratio its own
//! programs see (a brute force, or `speed`) and compares pinsight's answer
//! with that, checking the emulation's reported ratio only loosely. When
//! they still see no clear gap (E/P above [`VISIBLE`]) the machine is too
//! busy for the emulation to be visible: a counted skip, never a pass.

use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common_emulation::{median, require_premise, steady, Emulation, Pace};
use crate::common_live::{
    assert_exit, entry, json, named, sample_run_time, spawn_piped, spin, start_on, BIN,
};
use pinsight_testkit::premise::{self, Live};
/// Above this E/P speed ratio, as the tests' programs see it, the slowed CPU
/// is hidden by other load: the test is skipped (counted).
const VISIBLE: f64 = 0.85;

pub(crate) use crate::common_emulation::at_high_priority;

/// A live timing test on the emulated machine: the serial lock and the
/// other-load sampler (refused beside another real-time task), then the
/// emulation, the second usable CPU at 0.5; `None` after a counted skip.
fn begin() -> Option<(Live, Emulation)> {
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip("emulation needs two usable CPUs");
        return None;
    }
    let live = premise::live(&cpus[..2])?;
    let em = Emulation::start(cpus[0], cpus[1], 0.5)?;
    Some((live, em))
}

/// Skips (counted) and returns from the test when its premises failed
/// while it measured: the emulation drifted from 0.5, or other work took
/// more than [`premise::QUIET`] of either CPU. Prints the figures either way.
macro_rules! require_premises {
    ($live:expr, $em:expr) => {
        require_premise!($em.held());
        pinsight_testkit::require_quiet!($live, premise::QUIET);
    };
}

fn ok(o: Output) -> Output {
    assert_exit(&o, 0);
    o
}

/// `tune -- pinsight workload pi --schedule SCHEDULE` on the emulated
/// machine against a brute force: every configuration this machine
/// allows (1P, 1E, 1P+1E) timed directly, 5 runs each, interleaved.
///
/// Runs of about a second (1e9 steps on a P CPU): on a shared VM single
/// runs of a quarter second come out bimodal (0.23 or 0.30 s on the same
/// CPU, the slow ones in episodes of several seconds, after the other
/// CPU was busy), so two medians of a few such runs taken a minute apart
/// differed by 15-20% (tune's sf 2.10 against the brute force's 1.81
/// while the emulation held 0.505). A run of a second spans several
/// episodes: interleaved E/P ratios of 1e9-step runs stayed within
/// 1.96-2.01 where 3e8-step ones spread over 1.83-2.01.
/// Margins: tune's sf within 10% of the brute force's own 1E/1P time
/// ratio (what these nice-0 runs see, tune's runs being the same program
/// under the same load), and between 1.3 and 1.15/achieved of the
/// emulation's ratio; the recommendation is the brute force's fastest,
/// unless its best two are within 10% of each other (a tie under noise:
/// either is right).
fn tune_against_brute_force(schedule: &str) {
    let Some((live, em)) = begin() else { return };
    let d = tempfile::tempdir().unwrap();
    let size = "1e9";
    let configs: [(u64, u64, Vec<usize>); 3] = [
        (1, 0, vec![em.p]),
        (0, 1, vec![em.e]),
        (1, 1, vec![em.p, em.e]),
    ];
    let mut times = vec![Vec::new(); 3];
    for _ in 0..5 {
        for (i, (_, _, cpus)) in configs.iter().enumerate() {
            times[i].push(em.time_pi(d.path(), cpus, schedule, size));
        }
    }
    let measured: Vec<f64> = times.into_iter().map(median).collect();
    let seen = measured[0] / measured[1]; // E/P speed as nice-0 runs see it
    if seen > VISIBLE {
        pinsight_testkit::skip(format!(
            "tune {schedule}: machine too busy, nice-0 runs see E/P {seen:.2} \
             (emulation achieved {:.2})",
            em.achieved
        ));
        return;
    }
    let o = ok(em
        .pinsight(d.path())
        .args(["tune", "--quiet", "--json", "--runs", "3", "--"])
        .args([
            BIN,
            "workload",
            "pi",
            "--schedule",
            schedule,
            "--size",
            size,
        ])
        .output()
        .unwrap());
    let v = json(&o);
    let sf = v["params"]["sf"]["value"].as_f64().unwrap();
    let rec = (
        v["recommended"]["p"].as_u64().unwrap(),
        v["recommended"]["e"].as_u64().unwrap(),
    );
    // The pace after tune, as the brute force timed it before.
    let before = Pace {
        p: measured[0],
        e: measured[1],
    };
    let after = em.pace(d.path(), 3, size);
    let tune_time = |p: u64, e: u64| {
        v["predictions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["p"] == p && c["e"] == e && c["smt"] == 0)
            .and_then(|c| c["measured_s"].as_f64())
            .unwrap_or_else(|| panic!("no measured {p}P+{e}E in {v}"))
    };
    let (tune_p, tune_e) = (tune_time(1, 0), tune_time(0, 1));
    eprintln!(
        "{schedule}: achieved {:.3}, brute force 1P {:.3} s 1E {:.3} s 1P+1E {:.3} s \
         (E/P {seen:.3}), after tune 1P {:.3} s 1E {:.3} s; tune measured 1P {tune_p:.3} s \
         1E {tune_e:.3} s, sf {sf:.3}, recommends {rec:?}",
        em.achieved, measured[0], measured[1], measured[2], after.p, after.e
    );
    require_premises!(live, em);
    // The same machine throughout: the pace before and after tune, and
    // tune's own runs of 1P and 1E beside both (a slow episode of the
    // host's in the middle shows there).
    require_premise!(schedule, steady(before, after));
    let mean = |a: f64, b: f64| (a + b) / 2.0;
    for (what, t, bracket) in [
        ("1P", tune_p, mean(before.p, after.p)),
        ("1E", tune_e, mean(before.e, after.e)),
    ] {
        if (t / bracket - 1.0).abs() > 0.10 {
            pinsight_testkit::skip_test!(
                "{schedule}: premise failed: the host changed a CPU's pace while tune ran: \
                 tune's {what} runs took {t:.3} s, the same program {:.3} s before and \
                 after (timed directly)",
                bracket
            );
        }
    }
    let seen = mean(before.ratio(), after.ratio()).recip();
    let sf_seen = 1.0 / seen;
    assert!(
        (sf / sf_seen - 1.0).abs() <= 0.10,
        "{schedule}: tune sf {sf:.3}, the brute force's 1E/1P {sf_seen:.3}"
    );
    assert!(
        sf > 1.3 && sf < 1.15 / em.achieved,
        "{schedule}: tune sf {sf:.3}, emulation achieved {:.3}",
        em.achieved
    );
    let mut order: Vec<usize> = (0..3).collect();
    order.sort_by(|&a, &b| measured[a].total_cmp(&measured[b]));
    let at = |i: usize| (configs[i].0, configs[i].1);
    let tie = measured[order[1]] <= measured[order[0]] * 1.10;
    assert!(
        rec == at(order[0]) || (tie && rec == at(order[1])),
        "{schedule}: tune recommends {rec:?}, the brute force's fastest is {:?} \
         ({measured:?} s for 1P, 1E, 1P+1E)",
        at(order[0])
    );
}

#[test]
fn tune_static_recovers_sf_and_recommends_the_brute_force_best() {
    tune_against_brute_force("static");
}

#[test]
fn tune_dynamic_recovers_sf_and_recommends_the_brute_force_best() {
    tune_against_brute_force("dynamic");
}

/// `speed --export-weights` on the emulated machine, then `pinsight run
/// balance --weights` of a 12-thread static `workload pi` (12 equal
/// single-threaded tasks, each pinned to its planned CPU): each CPU's busy
/// time (until its last task ended: the longest per-thread busy time of
/// the threads seen only on it) is within 15% of the other's, where the
/// equal split (6 and 6) leaves the slowed CPU busy 30% or more longer.
/// 15% rather than 10%: 12 tasks round the weights' split to whole tasks
/// (up to 1/12 of a CPU's load), and the machine is shared. Each CPU is
/// busy two to four seconds and speed measures each CPU for two: runs of
/// well under a second on a shared VM catch one slow episode of the host
/// or miss it (a weighted run once left P busy 0.81 s and E 0.62 s, with
/// the emulation held at 0.503 and nothing else running).
#[test]
fn balance_with_speed_weights_applied_evens_the_cpus_busy_time() {
    // `run balance` plans over the usable CPUs (the cgroup's, as hwloc's
    // allowed set), not over pinsight's own affinity: on a bigger machine
    // the other CPUs would take tasks too.
    let usable = pinsight_testkit::usable_cpus().len();
    if usable > 2 {
        pinsight_testkit::skip(format!(
            "balance: the experiment needs exactly two usable CPUs (have {usable})"
        ));
        return;
    }
    let Some((live, em)) = begin() else { return };
    let d = tempfile::tempdir().unwrap();
    // The pace of each CPU before the weights are measured and after the
    // weighted run: a weight measured before a slow episode of the host's
    // fills a CPU for the pace it no longer has.
    let pace_before = em.pace(d.path(), 2, "6e8");
    let weights = d.path().join("w.json");
    // 2 s on each CPU (speed's budget is the total).
    let budget = format!("{}s", 2 * pinsight_testkit::allowed_cpus().len());
    ok(em
        .pinsight(d.path())
        .args(["speed", "--quiet", "--kernels", "int", "--budget", &budget])
        .arg("--export-weights")
        .arg(&weights)
        .output()
        .unwrap());
    let w: Value = serde_json::from_str(&std::fs::read_to_string(&weights).unwrap()).unwrap();
    let weight = |cpu: usize| {
        w["weights"][cpu.to_string()]
            .as_f64()
            .unwrap_or_else(|| panic!("no weight for CPU {cpu}: {w}"))
    };
    let seen = weight(em.e) / weight(em.p);
    if seen > VISIBLE {
        pinsight_testkit::skip(format!(
            "balance: machine too busy, speed sees E/P {seen:.2}"
        ));
        return;
    }
    // Per-CPU busy time of a 12-task run placed by `balance`.
    // `balance` without weights and without the declared kinds (which
    // would tilt it by kind) splits equally.
    let busy = |extra: &[&std::ffi::OsStr]| -> (f64, f64) {
        let mut c = em.pinsight(d.path());
        if extra.is_empty() {
            c.env_remove("PINSIGHT_KINDS");
        }
        let o = ok(c
            .args(["run", "balance", "--tasks", "12"])
            .args(extra)
            .args(["--", BIN, "workload", "pi", "--json", "-t", "12"])
            .args(["--schedule", "static", "--size", "4.8e9"])
            .output()
            .unwrap());
        let v = json(&o);
        let (mut p, mut e) = (0.0f64, 0.0f64);
        for t in v["per_thread"].as_array().unwrap() {
            let seen: Vec<u64> = t["cpu_seen"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect();
            let b = t["busy"].as_f64().unwrap();
            match seen[..] {
                [c] if c as usize == em.p => p = p.max(b),
                [c] if c as usize == em.e => e = e.max(b),
                _ => panic!("a task not pinned to one planned CPU: {t}"),
            }
        }
        (p, e)
    };
    let even = busy(&[]);
    let weighted = busy(&["--weights".as_ref(), weights.as_os_str()]);
    let pace_after = em.pace(d.path(), 2, "6e8");
    eprintln!(
        "speed's E/P {seen:.3} (achieved {:.3}); busy P/E: equal split {even:?}, \
         weighted {weighted:?}",
        em.achieved
    );
    require_premises!(live, em);
    require_premise!("balance", steady(pace_before, pace_after));
    let off = |(p, e): (f64, f64)| p.max(e) / p.min(e) - 1.0;
    assert!(
        off(weighted) <= 0.15,
        "weighted plan leaves the CPUs' busy times {weighted:?} apart by {:.0}%",
        100.0 * off(weighted)
    );
    assert!(
        even.1 > even.0 * 1.3,
        "the equal split should leave the slowed CPU busier: {even:?}"
    );
}

/// Two spinners named `a` and `b` restricted to the two CPUs.
fn spinners(em: &Emulation, dir: &std::path::Path) -> (Child, Child) {
    let spinner = |name: &str| {
        let mut c = Command::new(named(dir, name));
        start_on(&mut c, &[em.p, em.e]);
        at_high_priority(&mut c);
        spin(c)
    };
    (spinner("a"), spinner("b"))
}

/// Run time (schedstat) of each process's threads on `cpu` over
/// `window`, sampled every 5 ms: the time since the last look counts on
/// `cpu` when the thread's stat reports it there now.
///
/// The sampler runs as a SCHED_FIFO thread at priority 1 (below the
/// emulation's stealers, 2), so it looks every 5 ms however busy the
/// CPUs are. At nice 0 beside the nice -20 spinners it ran rarely, and
/// a look long after a swap gave the whole interval to the CPU the
/// thread had just moved to: up to 0.57 s of 4.5 s misattributed over a
/// 10 s window (the test failed with 4.21 against 4.78 s while sched's
/// own accounting, from the same schedstat, had them within 3%). Its
/// looks take ~0.1 ms each, from both spinners alike.
fn time_on(pids: [u32; 2], cpu: usize, window: Duration) -> [f64; 2] {
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = pinsight_sys::stealer::fifo_calling_thread(1);
            sample_time_on(pids, cpu, window)
        })
        .join()
        .unwrap()
    })
}

/// Waits (up to 3 s) until every busy thread of `pids` is pinned to one
/// CPU: `sched` has placed them, and its accounting has begun. The
/// spinners start before sched does; their time until then is the
/// kernel's placement, not AARR's, and is left out of the window.
fn wait_until_managed(pids: [u32; 2]) {
    let t = Instant::now();
    let pinned = |pid: u32| {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return true;
        };
        dir.flatten().all(|e| {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            if !comm.trim_end().ends_with("-w0") {
                return true; // the main thread waits; only the worker spins
            }
            std::fs::read_to_string(e.path().join("status"))
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .is_some_and(|l| !l.contains([',', '-']))
        })
    };
    while !pids.iter().all(|&p| pinned(p)) && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn sample_time_on(pids: [u32; 2], cpu: usize, window: Duration) -> [f64; 2] {
    let mut out = [0.0; 2];
    sample_run_time(&pids, window, |i, now, secs| {
        if now == cpu {
            out[i] += secs;
        }
    });
    out
}

/// `sched --policies aarr` on the emulated machine: two equal spinners get
/// big-CPU (the fast CPU's) time within 10% of each other, over 10 s,
/// measured from /proc, not from pinsight's report.
#[test]
fn aarr_shares_the_fast_cpu_equally_on_the_emulated_machine() {
    let Some((live, em)) = begin() else { return };
    let d = tempfile::tempdir().unwrap();
    let (mut a, mut b) = spinners(&em, d.path());
    let pids = format!("{},{}", a.id(), b.id());
    let mut c = em.pinsight(d.path());
    start_on(&mut c, &[em.p, em.e]);
    c.args([
        "sched",
        "--schedulers",
        "aarr",
        "--interval",
        "100ms",
        "--json",
    ])
    .args(["--pids", &pids]);
    let sched = spawn_piped(&mut c);
    wait_until_managed([a.id(), b.id()]);
    let on_big = time_on([a.id(), b.id()], em.p, Duration::from_secs(10));
    for s in [&mut a, &mut b] {
        let _ = s.kill();
        let _ = s.wait();
    }
    let o = ok(sched.wait_with_output().unwrap());
    eprintln!("fast CPU: a {:.2} s, b {:.2} s", on_big[0], on_big[1]);
    require_premises!(live, em);
    let (hi, lo) = (on_big[0].max(on_big[1]), on_big[0].min(on_big[1]));
    assert!(lo > 1.0, "{on_big:?}");
    assert!(
        hi - lo <= 0.1 * hi,
        "fast-CPU time not equal within 10%: {on_big:?}"
    );
    let r = json(&o);
    assert!(
        r["programs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["swaps"].as_u64().unwrap() >= 2),
        "{r}"
    );
}

/// `mix` of two equal programs under os, aarr and acfs on the emulated
/// machine. Expected order of unfairness (max slowdown / min slowdown):
/// os highest — the kernel leaves one program on the slowed CPU
/// (slowdowns about 1 and 1/ratio); AARR (equal big-core time, Van
/// Craeynest et al., "Fairness-aware scheduling on single-ISA
/// heterogeneous multi-cores", PACT 2013) and ACFS (equal progress, Saez
/// et al., "ACFS: a completely fair scheduler for asymmetric single-ISA
/// multicore systems", SAC 2015) near 1, ACFS no less fair than AARR
/// (both papers, and crates/sched-model's simulator). Here every program
/// has the same SF (a duty-cycled core slows all alike), so equal progress
/// is equal big-core time and the two tie. Margins (one completion per
/// program is noisy: AARR 1.00-1.12 and ACFS 1.01-1.25 over eight runs,
/// os 1.09-1.97): AARR and ACFS at most 1.3 and within 30% of each other
/// (the tie); os at least 1.25 and 20% above both.
/// os with one completion per program (--runs 1): with restarts, the
/// kernel's placement of each new process (which counts the stealer's
/// real-time share as lost capacity, scale_rt_capacity in
/// kernel/sched/fair.c) spreads the programs over both CPUs and evens out
/// os (1.01 with --runs 3). If os still shows no unfairness, its part is a
/// counted skip. AARR and ACFS place every process themselves, so they are
/// measured apart with two completions each (--runs 2: unfairness from
/// each program's geometric-mean time, as mix reports it): one
/// completion's ACFS of 1.23 beside an os of 1.30 once failed the order
/// on noise alone.
#[test]
fn mix_finds_os_less_fair_than_aarr_and_acfs() {
    let Some((live, em)) = begin() else { return };
    let d = tempfile::tempdir().unwrap();
    let sf = format!("{:.2}", 1.0 / em.achieved);
    let prog = format!("{BIN} workload pi -t 1 -s 1.5e9");
    let mix = |policies: &str, runs: &str| {
        // Each mix its own directory: its journal has the default name.
        let dir = d.path().join(policies.replace(',', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = em.pinsight(&dir);
        start_on(&mut c, &[em.p, em.e]);
        json(&ok(c
            .args(["mix", "--quiet", "--json", "--schedulers", policies])
            .args(["--runs", runs, "--interval", "100ms"])
            .args(["--sf", &format!("#1={sf}"), "--sf", &format!("#2={sf}")])
            .args(["--", &prog, &prog])
            .output()
            .unwrap()))
    };
    let u = |r: &serde_json::Value, policy: &str| {
        entry(&r["schedulers"], "policy", policy)
            .and_then(|s| s["unfairness"].as_f64())
            .unwrap_or_else(|| panic!("no {policy}: {r}"))
    };
    // The programs' times follow the host's pace of each CPU, which a
    // shared VM changes for seconds at a time: timed directly before and
    // after, a pace that moved is a counted skip.
    let before = em.pace(d.path(), 2, "6e8");
    let (fair, kernel) = (mix("aarr,acfs", "2"), mix("os", "1"));
    let after = em.pace(d.path(), 2, "6e8");
    let (os, aarr, acfs) = (u(&kernel, "os"), u(&fair, "aarr"), u(&fair, "acfs"));
    eprintln!(
        "unfairness: os {os:.3}, aarr {aarr:.3}, acfs {acfs:.3} (achieved {:.3})",
        em.achieved
    );
    require_premises!(live, em);
    require_premise!("mix", steady(before, after));
    assert!(aarr <= 1.3 && acfs <= 1.3, "aarr {aarr}, acfs {acfs}");
    assert!(
        (acfs / aarr - 1.0).abs() <= 0.3,
        "acfs {acfs} vs aarr {aarr}: equal SFs, they should tie"
    );
    // The os part's premise is the kernel's placement, measured: each
    // program's share of its run time on the fast CPU (mix's `big_share`)
    // makes its average speed b + (1 - b) x achieved, so the placement
    // alone predicts os's unfairness. Only a placement that left one
    // program mostly on the slowed CPU (predicted 1.4 or more) makes the
    // order checkable; a spread placement is a skip. (Judged on os's own
    // figure, a 1.25 skip threshold let through an os of 1.251 that the
    // kernel's placement could not separate from AARR's 1.07.)
    let shares: Vec<f64> = entry(&kernel["schedulers"], "policy", "os")
        .and_then(|s| s["programs"].as_array())
        .map(|ps| ps.iter().filter_map(|p| p["big_share"].as_f64()).collect())
        .unwrap_or_default();
    assert_eq!(shares.len(), 2, "no os big_share per program: {kernel}");
    let speed = |b: f64| b + (1.0 - b) * em.achieved;
    let (fast, slow) = (
        speed(shares[0].max(shares[1])),
        speed(shares[0].min(shares[1])),
    );
    let predicted = fast / slow;
    eprintln!("os: fast-CPU shares {shares:?}, unfairness the placement predicts {predicted:.2}");
    if predicted < 1.4 {
        pinsight_testkit::skip(format!(
            "mix: under os the kernel spread the programs over both CPUs (fast-CPU shares \
             {:.2} and {:.2}: unfairness {predicted:.2} predicted, {os:.2} measured); the os \
             part of the order not checked",
            shares[0], shares[1]
        ));
        return;
    }
    assert!(
        os > 1.2 * aarr.max(acfs),
        "os {os}, aarr {aarr}, acfs {acfs}; the placement predicts {predicted:.2}"
    );
}

/// `sf` on the emulated machine: without a core PMU (VMs) it says why,
/// runs nothing, and names the routes that work; the compare route
/// (`compare --policies p-set,e-set`, then `sf --from-compare`) recovers
/// the SF within 20% of the program's E/P time ratio measured directly
/// (3 runs on each CPU before compare and 3 after, the pace steady
/// between them: [`steady`]) and no more than 15% beyond the emulation's
/// ratio. With a core PMU the counters run instead (--probe).
#[test]
fn sf_says_why_without_a_pmu_and_its_compare_route_recovers_the_sf() {
    let Some((live, em)) = begin() else { return };
    let d = tempfile::tempdir().unwrap();
    let has_pmu = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|r| {
            r.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n == "cpu" || n.starts_with("cpu_") || n.starts_with("armv")
            })
        })
        .unwrap_or(false);
    let o = em
        .pinsight(d.path())
        .args(["sf", "--json", "--probe", "--duration", "2s", "--"])
        .args([BIN, "workload", "pi", "-t", "1", "-s", "1e12"])
        .output()
        .unwrap();
    // The message as words (the human output wraps at 80 columns).
    let err = String::from_utf8_lossy(&o.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let v = json(&o);
    if has_pmu {
        assert_eq!(v["available"], true, "{err}");
        assert!(!v["threads"].as_array().unwrap().is_empty(), "{v}");
    } else {
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(v["available"], false);
        let reason = v["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("no hardware PMU: no core PMU"),
            "{reason}"
        );
        assert!(
            err.contains("speedup factors unavailable: no hardware PMU"),
            "{err}"
        );
        assert!(err.contains("(the program was not started)"), "{err}");
        for route in ["--sf NAME=X", "pinsight sf --from-compare"] {
            assert!(err.contains(route), "{route}: {err}");
        }
    }
    // The compare route, against the same program timed directly before
    // and after it (the host's pace must not move in between).
    let size = "6e8";
    let before = em.pace(d.path(), 3, size);
    let direct = before.ratio();
    if direct < 1.0 / VISIBLE {
        pinsight_testkit::skip(format!(
            "sf: machine too busy, E/P time {direct:.2} for nice-0 runs"
        ));
        return;
    }
    ok(em
        .pinsight(d.path())
        .args(["compare", "--quiet", "--json", "--policies", "p-set,e-set"])
        .args(["--runs", "5", "--journal", "j.jsonl", "--"])
        .args([BIN, "workload", "pi", "-t", "1", "--size", size])
        .output()
        .unwrap());
    let after = em.pace(d.path(), 3, size);
    let o = ok(em
        .pinsight(d.path())
        .args(["sf", "--json", "--from-compare", "j.jsonl"])
        .output()
        .unwrap());
    let s = json(&o);
    let direct = (before.ratio() + after.ratio()) / 2.0;
    eprintln!("sf --from-compare: {s}; timed directly {direct:.3}");
    let sf = s["sf"].as_f64().unwrap_or_else(|| panic!("{s}"));
    require_premises!(live, em);
    require_premise!("sf", steady(before, after));
    assert!(
        (sf / direct - 1.0).abs() <= 0.2 && sf < 1.15 / em.achieved,
        "sf --from-compare {sf:.3}, timed directly {direct:.3}, emulation {:.3}",
        em.achieved
    );
}

/// `compare --policies p-set,e-set` on the emulated machine: the stealer's
/// half of the E CPU is the emulated machine, not other work. Every run's
/// disturbance takes the stealer's run time off (`emulation_s`, about
/// half of an E run's interval) and flags no run disturbed, where before
/// every E run read "other work took 50% of CPU 1" (and
/// `--rerun-disturbed` would have rerun each one).
#[test]
fn compare_on_the_emulated_machine_does_not_call_the_stealer_other_work() {
    let Some((live, em)) = begin() else { return };
    let d = tempfile::tempdir().unwrap();
    ok(em
        .pinsight(d.path())
        .args(["compare", "--quiet", "--json", "--policies", "p-set,e-set"])
        .args(["--runs", "3", "--warmup", "0", "--journal", "j.jsonl", "--"])
        .args([BIN, "workload", "pi", "-t", "1", "--size", "3e8"])
        .output()
        .unwrap());
    let text = std::fs::read_to_string(d.path().join("j.jsonl")).unwrap();
    let runs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "run")
        .collect();
    assert_eq!(runs.len(), 6, "{text}");
    eprintln!(
        "{}",
        runs.iter()
            .map(|r| format!("{} {}", r["arm"], r["disturbance"]))
            .collect::<Vec<_>>()
            .join("\n")
    );
    require_premises!(live, em);
    for r in &runs {
        let dist = &r["disturbance"];
        let share = dist["emulation_s"].as_f64().unwrap() / dist["interval_s"].as_f64().unwrap();
        if r["arm"].as_str().unwrap().starts_with("e-set") {
            assert!(
                (0.3..=0.7).contains(&share),
                "the stealer's share of an E run {share:.2}: {r}"
            );
        }
        assert_eq!(dist["disturbed"], false, "{r}");
    }
}
