//! Invariants every plan keeps, on every test machine, for any policy,
//! thread count and modifier.

use crate::common;

use common::*;
use pinsight_cpuset::CpuSet;
use pinsight_plan::policy::POLICY_NAMES;
use pinsight_plan::{plan, render, Format, FormatError, PlanError, Policy, Request};
use pinsight_testkit::topology::*;
use proptest::prelude::*;

/// Every policy without a parameter (but the latency ones, which need a
/// measured latency matrix), then parameterised ones.
static BASES: std::sync::LazyLock<Vec<&str>> = std::sync::LazyLock::new(|| {
    let plain = POLICY_NAMES
        .iter()
        .copied()
        .filter(|n| !n.contains(':') && !n.starts_with("latency-"));
    plain.chain(PARAMETERISED.iter().copied()).collect()
});

const PARAMETERISED: &[&str] = &[
    "kind:0",
    "kind:1",
    "kind-set:0",
    "cpus:0-3",
    "cpus-set:1-2",
    "cpus:0,2,4-5",
    "cpus:5,1,0",
    "cpus:all",
    "cpus:0xf",
    "cpus-set:0x3",
    "cpus-set:all",
];

fn machines() -> Vec<pinsight_model::Topology> {
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
                Err(e) => prop_assert!(
                    matches!(e, FormatError::Floats { .. } | FormatError::NotOneKind { .. }),
                    "{}",
                    e
                ),
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
            Err(e) => prop_assert!(k == 20 && matches!(e, PlanError::TooManyThreads { threads: 20, .. }), "{}", e),
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

    /// `cpus:LIST` keeps the user's order: thread i on list[i], for any
    /// permutation of any subset of the usable CPUs, and the plan's name
    /// is the text given.
    #[test]
    fn cpus_lists_keep_their_order(
        perm in Just((0usize..20).collect::<Vec<_>>()).prop_shuffle(),
        k in 1usize..=20,
        threads in prop::option::of(1usize..=20),
    ) {
        let list = &perm[..k];
        let text = format!(
            "cpus:{}",
            list.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
        );
        let req = Request { threads, ..Request::new(text.parse().unwrap()) };
        let topo = i7_1370p();
        match plan(&topo, &req) {
            Ok(p) => {
                prop_assert_eq!(&p.policy, &text);
                prop_assert_eq!(p.threads, threads.unwrap_or(k));
                for (i, place) in p.places.iter().enumerate() {
                    prop_assert_eq!(place, &CpuSet::single(list[i]));
                }
                let gomp = render(&p, &topo, Format::Gomp).unwrap().text;
                let want = p.places.iter().map(|c| c.first().unwrap().to_string()).collect::<Vec<_>>();
                // GOMP_CPU_AFFINITY lists CPUs in thread order (ranges only
                // for ascending runs, which expand to the same sequence).
                let value = gomp.trim().strip_prefix("export GOMP_CPU_AFFINITY='").unwrap().strip_suffix('\'').unwrap();
                let mut got = Vec::new();
                for part in value.split(' ') {
                    match part.split_once('-') {
                        Some((a, b)) => got.extend((a.parse::<usize>().unwrap()..=b.parse().unwrap()).map(|c| c.to_string())),
                        None => got.push(part.to_string()),
                    }
                }
                prop_assert_eq!(got, want);
            }
            Err(e) => prop_assert!(threads.unwrap() > k && matches!(e, PlanError::TooManyThreads { .. }), "{}", e),
        }
    }

    /// Set policies take any number of threads without --oversubscribe,
    /// and never call it an oversubscription.
    #[test]
    fn set_policies_take_any_thread_count(m in 0usize..5, base in 0usize..5, threads in 1usize..512) {
        let topo = &machines()[m];
        let policy = ["os", "p-set", "cpus-set:all", "kind-set:0", "cpus-set:0x1"][base];
        let req = Request { threads: Some(threads), ..Request::new(policy.parse().unwrap()) };
        let p = plan(topo, &req).unwrap();
        prop_assert_eq!(p.threads, threads);
        prop_assert!(!p.pinned);
        prop_assert!(p.notes.iter().all(|n| !n.contains("oversubscri")), "{:?}", p.notes);
    }

    /// Every exported thread count is the plan's thread count.
    #[test]
    fn exported_counts_are_the_thread_count(
        m in 0usize..5,
        base in 0usize..BASES.len(),
        threads in prop::option::of(1usize..64),
    ) {
        let topo = &machines()[m];
        let req = Request { threads, oversubscribe: true, ..Request::new(BASES[base].parse().unwrap()) };
        let Ok(p) = plan(topo, &req) else { return Ok(()) };
        let env = pinsight_plan::omp_env(&p);
        for var in ["OMP_NUM_THREADS", "RAYON_NUM_THREADS", "CILK_NWORKERS"] {
            let v = env.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone());
            prop_assert_eq!(v, Some(p.threads.to_string()), "{} for {}", var, p.policy);
        }
        if let Ok(r) = render(&p, topo, Format::OmpPlaces) {
            let want = format!("export OMP_NUM_THREADS='{}'", p.threads);
            prop_assert!(r.text.contains(&want), "{}", r.text);
        }
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
