//! Invariants every plan keeps, on every test machine, for any policy,
//! thread count and modifier.

mod common;

use common::*;
use pinsight_cpuset::CpuSet;
use pinsight_plan::{plan, render, Format, Policy, Request};
use proptest::prelude::*;

const BASES: &[&str] = &[
    "os",
    "p-set",
    "e-set",
    "p-pinned",
    "e-pinned",
    "p-first",
    "e-first",
    "smt-physical-first",
    "compact",
    "scatter",
    "kind:0",
    "kind:1",
    "kind-set:0",
    "cpus:0-3",
    "cpus-set:1-2",
    "cpus:0,2,4-5",
    "balance",
];

fn machines() -> Vec<pinsight_topology::Topology> {
    vec![
        i7_1370p(),
        four_socket_numa(),
        smt_machine(),
        offline_and_cgroup(),
        arm_phone(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn plans_keep_their_promises(
        m in 0usize..5,
        base in 0usize..BASES.len(),
        smt in any::<bool>(),
        threads in prop::option::of(1usize..64),
        over in any::<bool>(),
    ) {
        let topo = &machines()[m];
        let mut policy: Policy = BASES[base].parse().unwrap();
        policy.smt_physical_first = smt;
        let req = Request { threads, oversubscribe: over, ..Request::new(policy.clone()) };
        let Ok(p) = plan(topo, &req) else { return Ok(()) };
        let usable = topo.usable();
        // Only usable CPUs, ever.
        prop_assert!(p.process_mask.is_subset(&usable), "{} uses {} outside {}", p.policy, p.process_mask, usable);
        for place in &p.places {
            prop_assert!(!place.is_empty() && place.is_subset(&p.process_mask));
        }
        // One place per thread (none for os).
        if p.policy == "os" {
            prop_assert!(p.places.is_empty());
        } else {
            prop_assert_eq!(p.places.len(), p.threads);
        }
        if let Some(n) = threads { prop_assert_eq!(p.threads, n); }
        if p.pinned {
            prop_assert!(p.places.iter().all(|c| c.len() == 1));
            let union = p.places.iter().fold(CpuSet::new(), |a, c| a.union(c));
            prop_assert_eq!(&union, &p.process_mask);
            // Pinned without oversubscription never shares a CPU.
            if !over && p.tasks_per_cpu.is_none() {
                prop_assert_eq!(union.len(), p.places.len(), "{} shares a CPU", p.policy);
            }
        }
        if let Some(per) = &p.tasks_per_cpu {
            prop_assert_eq!(per.iter().map(|(_, n)| n).sum::<usize>(), p.threads);
            for (cpu, n) in per {
                prop_assert_eq!(p.places.iter().filter(|c| c.contains(*cpu)).count(), *n);
            }
        }
        // Physical first: once some core holds two threads, no thread
        // opens a new core — for the policies that promise it.
        let promises_physical = smt || ["p-pinned", "e-pinned", "scatter", "kind:0", "kind:1"].contains(&BASES[base]);
        if p.pinned && p.tasks_per_cpu.is_none() && promises_physical && !over {
            let mut cores_used = std::collections::BTreeSet::new();
            let mut doubled = false;
            for place in &p.places {
                let core = topo.cpu(place.first().unwrap()).unwrap().core.unwrap();
                if cores_used.insert(core) {
                    prop_assert!(!doubled, "{}: a new core after a sibling", p.policy);
                } else {
                    doubled = true;
                }
            }
        }
        // Every dialect renders or refuses with a message; never panics.
        for f in pinsight_plan::format::FORMAT_NAMES {
            match render(&p, topo, f.parse::<Format>().unwrap()) {
                Ok(r) => prop_assert!(!r.text.is_empty()),
                Err(e) => prop_assert!(e.contains("--format")),
            }
        }
        // Same input, same plan.
        prop_assert_eq!(plan(topo, &req).unwrap(), p);
    }

    #[test]
    fn latency_groups_are_distinct_usable_cpus(k in 1usize..=20, pipeline in any::<bool>(), forbid in 0usize..20) {
        let mut t = i7_1370p();
        t.cpus[forbid].allowed = false;
        let policy = if pipeline { "latency-pipeline" } else { "latency-group" };
        let req = Request { threads: Some(k), latency: Some(i7_latency()), ..Request::new(policy.parse().unwrap()) };
        match plan(&t, &req) {
            Ok(p) => {
                prop_assert_eq!(p.places.len(), k);
                prop_assert_eq!(p.process_mask.len(), k);
                prop_assert!(p.process_mask.is_subset(&t.usable()));
            }
            Err(e) => prop_assert!(k == 20 && e.to_string().contains("--oversubscribe"), "{}", e),
        }
    }

    #[test]
    fn balance_sums_to_m(m in 0usize..5, tasks in 1usize..2000) {
        let topo = &machines()[m];
        let req = Request { tasks: Some(tasks), ..Request::new("balance".parse().unwrap()) };
        let p = plan(topo, &req).unwrap();
        let per = p.tasks_per_cpu.unwrap();
        prop_assert_eq!(per.iter().map(|(_, n)| n).sum::<usize>(), tasks);
        prop_assert_eq!(p.places.len(), tasks);
    }

    #[test]
    fn policy_text_never_panics(s in "\\PC{0,40}") {
        let _ = s.parse::<Policy>();
    }

    #[test]
    fn canonical_text_round_trips(base in 0usize..BASES.len(), smt in any::<bool>()) {
        let mut p: Policy = BASES[base].parse().unwrap();
        p.smt_physical_first = smt;
        prop_assert_eq!(p.to_string().parse::<Policy>().unwrap().to_string(), p.to_string());
    }
}
