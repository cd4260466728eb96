//! Every refusal, with the message users will read.

use crate::common;

use common::*;
use pinsight_plan::{plan, LatencyProblem, PlanError, Policy, Request, Weights, WeightsError};
use pinsight_testkit::topology::*;

fn req(policy: &str, threads: Option<usize>) -> Request {
    Request {
        threads,
        ..Request::new(policy.parse::<Policy>().unwrap())
    }
}

fn err(topo: &pinsight_model::Topology, r: Request) -> (PlanError, String) {
    let e = plan(topo, &r).unwrap_err();
    let m = e.to_string();
    (e, m)
}

#[test]
fn unknown_policy_lists_valid_ones() {
    let e = "fastest-first".parse::<Policy>().unwrap_err().to_string();
    assert!(
        e.starts_with("invalid policy 'fastest-first': unknown policy"),
        "{e}"
    );
    for name in pinsight_plan::policy::POLICY_NAMES {
        assert!(e.contains(name), "{e}");
    }
    let e = "bogus:1".parse::<Policy>().unwrap_err().to_string();
    assert!(e.contains("unknown policy 'bogus:'"), "{e}");
}

#[test]
fn zero_threads() {
    let (e, m) = err(&i7_1370p(), req("p-pinned", Some(0)));
    assert_eq!(e, PlanError::ZeroThreads);
    assert_eq!(m, "0 threads: the number of threads must be at least 1");
    let r = Request {
        tasks: Some(0),
        ..Request::new("balance".parse().unwrap())
    };
    assert_eq!(plan(&i7_1370p(), &r).unwrap_err(), PlanError::ZeroThreads);
}

#[test]
fn threads_and_tasks_must_agree() {
    let r = Request {
        threads: Some(4),
        tasks: Some(5),
        ..Request::new("compact".parse().unwrap())
    };
    assert!(matches!(
        plan(&i7_1370p(), &r),
        Err(PlanError::ThreadsTasksConflict {
            threads: 4,
            tasks: 5
        })
    ));
    let r = Request {
        threads: Some(4),
        tasks: Some(4),
        ..Request::new("compact".parse().unwrap())
    };
    assert_eq!(plan(&i7_1370p(), &r).unwrap().threads, 4);
}

#[test]
fn too_many_threads_without_oversubscribe() {
    let (e, m) = err(&i7_1370p(), req("p-pinned", Some(13)));
    assert!(matches!(e, PlanError::TooManyThreads { threads: 13, .. }));
    assert_eq!(
        m,
        "p-pinned: 13 threads but only 12 CPUs (0-11) to pin them on, one each"
    );
    let (e, m) = err(&i7_1370p(), req("cpus:1,0", Some(3)));
    assert_eq!(
        e,
        PlanError::TooManyThreads {
            policy: "cpus:1,0".into(),
            threads: 3,
            cpus: "0-1".parse().unwrap()
        }
    );
    assert_eq!(
        m,
        "cpus:1,0: 3 threads but only 2 CPUs (0-1) to pin them on, one each"
    );
    // One CPU is said in the singular.
    let (e, m) = err(&i7_1370p(), req("cpus:5", Some(2)));
    assert_eq!(
        e.reason(),
        "2 threads but only 1 CPU (5) to pin them on, one each"
    );
    assert_eq!(
        m,
        "cpus:5: 2 threads but only 1 CPU (5) to pin them on, one each"
    );
    let over = Request {
        oversubscribe: true,
        ..req("p-pinned", Some(13))
    };
    let p = plan(&i7_1370p(), &over).unwrap();
    assert_eq!(p.places.len(), 13);
    assert!(p.notes.iter().any(|n| n.starts_with("oversubscribed")));
}

/// Set policies let threads float, so any number of threads is a plan,
/// not an oversubscription: no error, no --oversubscribe, no warning.
#[test]
fn set_policies_accept_more_threads_than_cpus() {
    for (policy, cpus) in [
        ("os", "0-19"),
        ("p-set", "0-11"),
        ("e-set", "12-19"),
        ("kind-set:0", "12-19"),
        ("cpus-set:2,5", "2,5"),
        ("cpus-set:0x3", "0-1"),
        ("cpus-set:all", "0-19"),
    ] {
        let p = plan(&i7_1370p(), &req(policy, Some(64))).unwrap();
        assert_eq!(p.threads, 64, "{policy}");
        assert!(!p.pinned, "{policy}");
        assert_eq!(p.process_mask.to_string(), cpus, "{policy}");
        let places = if policy == "os" { 0 } else { 64 };
        assert_eq!(p.places.len(), places, "{policy}");
        assert!(p.places.iter().all(|c| *c == p.process_mask), "{policy}");
        assert!(
            p.notes.iter().all(|n| !n.contains("oversubscribed")),
            "{policy}: {:?}",
            p.notes
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("64 threads") && n.contains("time-shared")),
            "{policy}: {:?}",
            p.notes
        );
    }
}

#[test]
fn cpus_lists_keep_their_order() {
    let t = i7_1370p();
    let p = plan(&t, &req("cpus:1,0", None)).unwrap();
    assert_eq!(p.policy, "cpus:1,0");
    let cpus: Vec<usize> = p.places.iter().map(|c| c.first().unwrap()).collect();
    assert_eq!(cpus, vec![1, 0]);
    assert_eq!(p.process_mask.to_string(), "0-1");
    let p = plan(&t, &req("cpus:12-13,0", Some(2))).unwrap();
    let cpus: Vec<usize> = p.places.iter().map(|c| c.first().unwrap()).collect();
    assert_eq!(cpus, vec![12, 13]);
    // A hex mask has no order: ascending; `all` is every usable CPU.
    let p = plan(&t, &req("cpus:0x3000", None)).unwrap();
    assert_eq!(p.policy, "cpus:0x3000");
    let cpus: Vec<usize> = p.places.iter().map(|c| c.first().unwrap()).collect();
    assert_eq!(cpus, vec![12, 13]);
    let off = offline_and_cgroup();
    let p = plan(&off, &req("cpus:all", None)).unwrap();
    assert_eq!(p.policy, "cpus:all");
    let cpus: Vec<usize> = p.places.iter().map(|c| c.first().unwrap()).collect();
    assert_eq!(cpus, vec![0, 1, 2, 4, 5]);
    let p = plan(&off, &req("cpus-set:all", None)).unwrap();
    assert_eq!(p.process_mask.to_string(), "0-2,4-5");
    // Unusable CPUs in a mask are named as in a list.
    let (_, m) = err(&off, req("cpus:0x40", None));
    assert_eq!(
        m,
        "cpus:0x40: CPU 6 is not allowed by the cgroup; usable CPUs are 0-2,4-5"
    );
}

#[test]
fn cpus_not_allowed_or_offline() {
    let t = offline_and_cgroup();
    let (e, m) = err(&t, req("cpus:6", None));
    assert!(matches!(e, PlanError::CpusUnusable { .. }));
    assert_eq!(
        m,
        "cpus:6: CPU 6 is not allowed by the cgroup; usable CPUs are 0-2,4-5"
    );
    let (_, m) = err(&t, req("cpus:3", None));
    assert_eq!(m, "cpus:3: CPU 3 is offline; usable CPUs are 0-2,4-5");
    let (_, m) = err(&t, req("cpus-set:2-9", None));
    assert_eq!(
        m,
        "cpus-set:2-9: CPUs 8-9 are not present on this machine, CPU 3 is offline, CPUs 6-7 are not allowed by the cgroup; usable CPUs are 0-2,4-5"
    );
}

#[test]
fn kind_that_does_not_exist() {
    let (e, m) = err(&i7_1370p(), req("kind:Cortex-A55", None));
    assert!(matches!(e, PlanError::NoSuchKind { .. }));
    assert_eq!(m, "no core kind 'Cortex-A55' on this machine; kinds are: 0 = E-core (12-19), 1 = P-core (0-11)");
    let (_, m) = err(&i7_1370p(), req("kind-set:2", None));
    assert!(m.starts_with("no core kind '2'"), "{m}");
    // p-/e- policies on a machine with one kind.
    let (e, m) = err(&smt_machine(), req("e-set", None));
    assert!(matches!(e, PlanError::NeedsKinds { .. }));
    assert_eq!(
        m,
        "e-set needs at least two core kinds; this machine has one kind: Core (0-7); use compact, scatter, smt-physical-first or cpus:LIST"
    );
}

#[test]
fn kind_with_no_usable_cpu() {
    let mut t = i7_1370p();
    for c in &mut t.cpus {
        if c.id >= 12 {
            c.allowed = false;
        }
    }
    let (e, m) = err(&t, req("e-pinned", None));
    assert!(matches!(e, PlanError::KindUnusable { .. }));
    assert_eq!(m, "e-pinned: no usable CPU of kind E-core (its CPUs 12-19 are offline or not allowed by the cgroup)");
    // p-first still works and simply has no E-cores to fill.
    assert_eq!(
        plan(&t, &req("p-first", None))
            .unwrap()
            .process_mask
            .to_string(),
        "0-11"
    );
}

#[test]
fn unranked_kinds_refuse_p_and_e() {
    let mut t = i7_1370p();
    for k in &mut t.kinds {
        k.rank_source = pinsight_model::RankSource::Unranked;
    }
    let (_, m) = err(&t, req("p-set", None));
    assert!(
        m.contains("cannot be ranked") && m.contains("kind:RANK|NAME"),
        "{m}"
    );
    assert!(plan(&t, &req("kind:P-core", None)).is_ok());
}

#[test]
fn modifier_where_threads_float() {
    let (e, m) = err(&i7_1370p(), req("p-set+smt-physical-first", None));
    assert!(matches!(e, PlanError::Modifier { .. }));
    assert!(m.contains("drop the modifier"), "{m}");
    let r = Request {
        smt_physical_first: true,
        ..req("os", None)
    };
    assert!(matches!(
        plan(&i7_1370p(), &r),
        Err(PlanError::Modifier { .. })
    ));
}

#[test]
fn weights_must_cover_usable_cpus() {
    let w = Weights::parse("0,1\n1,1", "w.csv").unwrap();
    let r = Request {
        tasks: Some(10),
        weights: Some(w),
        ..Request::new("balance".parse().unwrap())
    };
    let e = plan(&smt_machine(), &r).unwrap_err();
    assert!(
        matches!(&e, PlanError::Weights(WeightsError::Missing { missing, .. }) if missing.to_string() == "2-7"),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(
        m.starts_with("weights: the weights file has no weight for usable CPU(s) 2-7"),
        "{m}"
    );
    let zero =
        Weights::parse(&(0..8).map(|c| format!("{c},0\n")).collect::<String>(), "w").unwrap();
    let r = Request {
        tasks: Some(10),
        weights: Some(zero),
        ..Request::new("balance".parse().unwrap())
    };
    assert_eq!(
        plan(&smt_machine(), &r).unwrap_err(),
        PlanError::Weights(WeightsError::AllZero)
    );
}

/// The brief's acceptance checks on the i7-1370P.
#[test]
fn i7_acceptance() {
    let t = i7_1370p();
    let p = plan(&t, &req("p-pinned", Some(6))).unwrap();
    let cpus: Vec<usize> = p.places.iter().map(|c| c.first().unwrap()).collect();
    assert_eq!(
        cpus,
        [0, 2, 4, 6, 8, 10],
        "one PU per P-core before any sibling"
    );
    let p = plan(&t, &req("e-first", Some(10))).unwrap();
    let cpus: Vec<usize> = p.places.iter().map(|c| c.first().unwrap()).collect();
    assert_eq!(
        cpus,
        [12, 13, 14, 15, 16, 17, 18, 19, 0, 2],
        "8 E-cores then 2 P-cores"
    );

    // balance --tasks 200, fallback capacity (kind max frequency 5200 vs
    // 3900 MHz: E = 0.75), SMT-aware: the two siblings of a P-core share
    // 1.25 of its capacity (default SMT yield), so tasks per PHYSICAL
    // core follow 1.25 (P-core) vs 0.75 (E-core).
    let r = Request {
        tasks: Some(200),
        ..Request::new("balance".parse().unwrap())
    };
    let p = plan(&t, &r).unwrap();
    let per = p.tasks_per_cpu.unwrap();
    let p_tasks: Vec<usize> = per
        .iter()
        .filter(|(c, _)| *c < 12)
        .map(|(_, n)| *n)
        .collect();
    let e_tasks: Vec<usize> = per
        .iter()
        .filter(|(c, _)| *c >= 12)
        .map(|(_, n)| *n)
        .collect();
    // Quotas: 200 x 0.625 / 13.5 = 9.26 per P sibling, 11.1 per E-core.
    assert!(p_tasks.iter().all(|n| *n == 9 || *n == 10), "{p_tasks:?}");
    assert!(e_tasks.iter().all(|n| *n == 11 || *n == 12), "{e_tasks:?}");
    let per_p_core = p_tasks.iter().sum::<usize>() as f64 / 6.0;
    let per_e_core = e_tasks.iter().sum::<usize>() as f64 / 8.0;
    assert!(
        (per_e_core / per_p_core - 0.75 / 1.25).abs() < 0.03,
        "{per_p_core} {per_e_core}"
    );
    assert!(p.notes.iter().any(|n| n.contains("SMT")), "{:?}", p.notes);

    // With a weights file saying E-CPUs are half as fast.
    let w = Weights::parse(
        &(0..20)
            .map(|c| format!("{c},{}\n", if c < 12 { 1.0 } else { 0.5 }))
            .collect::<String>(),
        "w",
    )
    .unwrap();
    let r = Request {
        tasks: Some(200),
        weights: Some(w),
        ..Request::new("balance".parse().unwrap())
    };
    let per = plan(&t, &r).unwrap().tasks_per_cpu.unwrap();
    // 12 + 4 = 16 units: P quota 12.5, E quota 6.25 → P 12 or 13, E 6 or 7.
    assert_eq!(per.iter().map(|(_, n)| n).sum::<usize>(), 200);
    assert!(
        per.iter().all(|(c, n)| if *c < 12 {
            *n == 12 || *n == 13
        } else {
            *n == 6 || *n == 7
        }),
        "{per:?}"
    );
}

/// ARM: cpu_capacity is used when present.
#[test]
fn arm_balance_uses_cpu_capacity() {
    let r = Request {
        tasks: Some(2384),
        ..Request::new("balance".parse().unwrap())
    };
    let p = plan(&arm_phone(), &r).unwrap();
    // Total capacity 4*414 + 3*946 + 1024 = 5518; 2384 tasks → quota = cap * 2384/5518.
    let per = p.tasks_per_cpu.unwrap();
    assert_eq!(per[0].1, 179); // 414 * 0.43204 = 178.9
    assert_eq!(per[7].1, 442); // 1024 * 0.43204 = 442.4
    assert!(p.notes.iter().any(|n| n.contains("cpu_capacity")));
}

#[test]
fn latency_policies_need_a_matrix_and_k() {
    let t = i7_1370p();
    let (e, m) = err(&t, req("latency-group", Some(4)));
    assert_eq!(
        e,
        PlanError::Latency {
            policy: "latency-group".into(),
            problem: LatencyProblem::NoMatrix
        }
    );
    assert!(
        m.starts_with("latency-group: needs a core-to-core latency matrix"),
        "{m}"
    );
    let r = Request {
        latency: Some(i7_latency()),
        ..req("latency-pipeline", None)
    };
    assert_eq!(
        plan(&t, &r).unwrap_err(),
        PlanError::Latency {
            policy: "latency-pipeline".into(),
            problem: LatencyProblem::NoThreadCount
        }
    );
    let r = Request {
        latency: Some(i7_latency()),
        ..req("latency-group", Some(21))
    };
    assert!(matches!(
        plan(&t, &r),
        Err(PlanError::TooManyThreads { threads: 21, .. })
    ));
    // A matrix from another machine: CPUs 100-101 only.
    let mut other = pinsight_latency_model::LatencyMatrix::new(vec![100, 101]);
    other.set(0, 1, 30.0);
    let r = Request {
        latency: Some(other),
        ..req("latency-group", Some(2))
    };
    let e = plan(&t, &r).unwrap_err();
    assert!(
        matches!(&e, PlanError::Latency { problem: LatencyProblem::TooFewCovered { covered, .. }, .. } if covered.is_empty()),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(m.contains("but only 0 of them are usable here"), "{m}");
}

#[test]
fn a_latency_matrix_not_covering_the_plan_is_refused_unless_partial() {
    let t = i7_1370p();
    // Another machine's matrix: CPUs 0-23 on the 20-CPU laptop.
    let mut other = pinsight_latency_model::LatencyMatrix::new((0..24).collect());
    for a in 0..24 {
        for b in 0..a {
            other.set(a, b, 30.0 + (a + b) as f64);
        }
    }
    let r = Request {
        latency: Some(other.clone()),
        ..req("latency-group", Some(4))
    };
    let e = plan(&t, &r).unwrap_err();
    assert!(
        matches!(
            &e,
            PlanError::Latency {
                problem: LatencyProblem::Partial { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("CPUs 20-23 are not online here"),
        "{e}"
    );
    // A matrix missing usable CPUs 16-19.
    let mut part = pinsight_latency_model::LatencyMatrix::new((0..16).collect());
    for a in 0..16 {
        for b in 0..a {
            part.set(a, b, 30.0);
        }
    }
    let r = Request {
        latency: Some(part),
        ..req("latency-group", Some(4))
    };
    let e = plan(&t, &r).unwrap_err().to_string();
    assert!(e.contains("(missing 16-19)"), "{e}");
    // Accepted explicitly: only covered CPUs are chosen, said in the notes.
    let r = Request {
        latency: Some(other),
        latency_partial: true,
        ..req("latency-group", Some(4))
    };
    let p = plan(&t, &r).unwrap();
    assert!(
        p.notes.iter().any(|n| n.contains("20-23 ignored")),
        "{:?}",
        p.notes
    );
}
