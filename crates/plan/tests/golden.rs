//! Golden snapshots (insta, `tests/snapshots/`): every policy on every test
//! machine, and every output dialect on the hybrid laptop. A changed output
//! fails and leaves a `.snap.new`; review the diff and accept it with
//! `cargo insta review` — a snapshot is a claim that its content is right.

use crate::common;

use common::*;
use pinsight_model::Topology;
use pinsight_plan::{plan, render, Format, Request, Weights};
use pinsight_testkit::topology::*;

/// A golden snapshot, its test machine and the cases it adds to
/// `EVERY_POLICY`.
type Machine = (&'static str, fn() -> Topology, &'static [Case]);

const MACHINES: &[Machine] = &[
    (
        "i7-1370p.txt",
        i7_1370p,
        &[
            Case("p-pinned", Some(6), false),
            Case("p-pinned", Some(8), false),
            Case("e-first", Some(10), false),
            Case("p-first", Some(14), false),
            Case("scatter", Some(8), false),
            Case("balance", Some(200), false),
            Case("e-pinned", Some(12), true),
            Case("kind:E-core", Some(2), false),
            Case("kind-set:P", None, false),
            Case("cpus:13,12,1,0", None, false),
            Case("cpus:0x3000", None, false),
            Case("cpus-set:12-13", Some(6), false),
            Case("e-set", Some(12), false),
            Case("os", Some(40), false),
        ],
    ),
    (
        "4s2c2t-numa.txt",
        four_socket_numa,
        &[
            Case("scatter", Some(4), false),
            Case("compact", Some(4), false),
            Case("balance", Some(20), false),
        ],
    ),
    (
        "1s4c2t-smt.txt",
        smt_machine,
        &[
            Case("compact", Some(3), false),
            Case("smt-physical-first", Some(5), false),
            Case("scatter", Some(12), true),
        ],
    ),
    (
        "offline-cgroup.txt",
        offline_and_cgroup,
        &[
            Case("cpus:2-5", None, false),
            Case("cpus:3", None, false),
            Case("cpus-set:6-7", None, false),
            Case("compact", Some(6), false),
        ],
    ),
    (
        "arm-phone.txt",
        arm_phone,
        &[
            Case("kind:1", None, false),
            Case("kind:Cortex-X1", None, false),
            Case("p-first", Some(5), false),
            Case("e-first", Some(6), false),
            Case("balance", Some(50), false),
            Case("p-pinned", Some(3), true),
        ],
    ),
];

/// Every policy and each machine's own cases on each of `MACHINES`, one
/// golden snapshot a machine (insta's failure names the snapshot).
#[test]
fn every_policy_on_every_test_machine() {
    for (golden, machine, extra) in MACHINES {
        pinsight_testkit::golden!(golden, &run_cases(&machine(), extra));
    }
}

/// `r`'s text, then each caveat as the CLI prints it on stderr.
fn push_rendered(out: &mut String, r: pinsight_plan::Rendered) {
    out.push_str(&r.text);
    for c in r.caveats {
        out.push_str(&format!("(stderr) caveat: {c}\n"));
    }
}

/// Every dialect for representative plans on the hybrid laptop.
#[test]
fn formats_on_hybrid() {
    let t = i7_1370p();
    let mut out = String::new();
    let cases: &[(&str, Option<usize>)] = &[
        ("p-pinned", Some(6)),
        ("e-first", Some(10)),
        ("p-set", None),
        ("os", Some(4)),
        ("e-set", None),
        ("balance", Some(40)),
        ("cpus:13,12,1,0", None),
        ("e-set", Some(12)),
    ];
    for (policy, threads) in cases {
        let req = Request {
            threads: *threads,
            ..Request::new(policy.parse().unwrap())
        };
        let p = plan(&t, &req).unwrap();
        for f in pinsight_plan::format::FORMAT_NAMES {
            // The per-task formats have their own golden (per_task_formats).
            if *f == "table" || f.ends_with("-per-task") || *f == "systemd" {
                continue;
            }
            out.push_str(&format!(
                "== pinsight plan {policy}{} --format {f}\n",
                count_flag(policy, *threads)
            ));
            match render(&p, &t, f.parse::<Format>().unwrap()) {
                Ok(r) => push_rendered(&mut out, r),
                Err(e) => out.push_str(&format!("error: {e}\n")),
            }
        }
        out.push_str(&format!("== omp_env({policy})\n"));
        for (k, v) in pinsight_plan::omp_env(&p) {
            out.push_str(&format!("{k}={v}\n"));
        }
        out.push('\n');
    }
    pinsight_testkit::golden!("formats-i7-1370p.txt", &out);
}

/// The per-task formats (one line per task) for a balance plan and for a
/// pinned, a set and an `os` plan on the hybrid laptop and on the SMT
/// machine.
#[test]
fn per_task_formats() {
    let mut out = String::new();
    let machines = [("i7-1370p", i7_1370p()), ("1s4c2t-smt", smt_machine())];
    let cases: &[(&str, Option<usize>, Option<&str>)] = &[
        ("balance", Some(30), None),
        ("balance", Some(5), Some("bind:0")),
        ("compact", Some(3), None),
        ("cpus-set:0-3", Some(2), None),
        ("os", Some(2), None),
    ];
    for (name, t) in &machines {
        for (policy, n, mem) in cases {
            let req = Request {
                tasks: *n,
                mem: mem.map(|m| m.parse().unwrap()),
                ..Request::new(policy.parse().unwrap())
            };
            let p = plan(t, &req).unwrap();
            for f in ["taskset-per-task", "cpulist-per-task", "systemd"] {
                out.push_str(&format!(
                    "== {name}: pinsight plan {policy} --tasks {}{} --format {f}\n",
                    n.unwrap_or(0),
                    mem.map(|m| format!(" --mem {m}")).unwrap_or_default()
                ));
                let r = render(&p, t, f.parse::<Format>().unwrap()).unwrap();
                assert_eq!(r.text.lines().count(), p.threads.max(1), "{f}");
                push_rendered(&mut out, r);
            }
        }
    }
    pinsight_testkit::golden!("per-task-formats.txt", &out);
}

/// `balance` with a weights file on the hybrid laptop.
#[test]
fn balance_with_weights() {
    let t = i7_1370p();
    // P-CPUs (SMT siblings each) 0.6, E-CPUs 0.5: measured-looking values.
    let mut csv = String::from("cpu,weight\n");
    for c in 0..12 {
        csv.push_str(&format!("{c},0.6\n"));
    }
    for c in 12..20 {
        csv.push_str(&format!("{c},0.5\n"));
    }
    let w = Weights::parse(&csv, "weights.csv").unwrap();
    let req = Request {
        tasks: Some(200),
        weights: Some(w),
        ..Request::new("balance".parse().unwrap())
    };
    let p = plan(&t, &req).unwrap();
    pinsight_testkit::golden!(
        "balance-weights-i7-1370p.txt",
        &render(&p, &t, Format::Table).unwrap().text,
    );
}

/// `latency-group` and `latency-pipeline` on the hybrid laptop with a
/// synthetic matrix (see `i7_latency`).
#[test]
fn latency_policies() {
    let t = i7_1370p();
    let mut out = String::new();
    for (policy, k) in [
        ("latency-group", 4),
        ("latency-pipeline", 4),
        ("latency-group", 8),
        ("latency-pipeline", 3),
    ] {
        out.push_str(&format!(
            "== pinsight plan {policy} --threads {k} --latency i7.csv\n"
        ));
        let req = Request {
            threads: Some(k),
            latency: Some(i7_latency()),
            ..Request::new(policy.parse().unwrap())
        };
        match plan(&t, &req) {
            Ok(p) => out.push_str(&render(&p, &t, Format::Table).unwrap().text),
            Err(e) => out.push_str(&format!("error: {e}\n")),
        }
        out.push('\n');
    }
    pinsight_testkit::golden!("latency-i7-1370p.txt", &out);
}
