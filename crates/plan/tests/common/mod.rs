//! The planner tests' policy cases (their golden files go through
//! `pinsight_testkit::golden!`). The hand-built machines they plan on are `pinsight_testkit::topology`'s (one builder
//! for every suite); the recorded fixtures are used too.
#![allow(dead_code)]

use pinsight_model::*;
use pinsight_plan::{plan, render, Format, Policy, Request};
use pinsight_testkit::topology::i7_1370p;

/// One invocation: policy text, threads/tasks, oversubscribe.
pub struct Case(pub &'static str, pub Option<usize>, pub bool);

pub const EVERY_POLICY: &[Case] = &[
    Case("os", None, false),
    Case("p-set", None, false),
    Case("e-set", None, false),
    Case("p-pinned", None, false),
    Case("e-pinned", None, false),
    Case("p-first", None, false),
    Case("e-first", None, false),
    Case("p-first+smt-physical-first", None, false),
    Case("e-first+smt-physical-first", None, false),
    Case("smt-physical-first", None, false),
    Case("compact", None, false),
    Case("compact+smt-physical-first", None, false),
    Case("scatter", None, false),
    Case("kind:0", None, false),
    Case("kind-set:0", None, false),
    Case("cpus:0-3", None, false),
    Case("cpus-set:0-3", None, false),
    Case("cpus:0-3+smt-physical-first", None, false),
    Case("balance", Some(100), false),
];

/// The command line's count: ` --tasks N` for `balance`, else
/// ` --threads N`; nothing without a count.
pub fn count_flag(policy: &str, n: Option<usize>) -> String {
    let flag = if policy.starts_with("balance") {
        "tasks"
    } else {
        "threads"
    };
    n.map(|n| format!(" --{flag} {n}")).unwrap_or_default()
}

pub fn run_cases(topo: &Topology, extra: &[Case]) -> String {
    let mut out = String::new();
    for Case(policy, threads, over) in EVERY_POLICY.iter().chain(extra) {
        let cmd = format!(
            "pinsight plan {policy}{}{}",
            count_flag(policy, *threads),
            if *over { " --oversubscribe" } else { "" }
        );
        out.push_str(&format!("== {cmd}\n"));
        let req = Request {
            threads: *threads,
            oversubscribe: *over,
            ..Request::new(policy.parse::<Policy>().unwrap())
        };
        match plan(topo, &req) {
            Ok(p) => {
                out.push_str(&render(&p, topo, Format::Table).unwrap().text);
                if p.pinned && p.tasks_per_cpu.is_none() {
                    out.push_str(&render(&p, topo, Format::Gomp).unwrap().text);
                }
            }
            Err(e) => out.push_str(&format!("error: {e}\n")),
        }
        out.push('\n');
    }
    out
}

/// A latency matrix for the i7-1370P shaped like measured ones: SMT
/// siblings 5 ns, E-cores sharing an L2 20 ns, P to P 40 ns, E to E across
/// clusters 50 ns, P to E 60 ns.
pub fn i7_latency() -> pinsight_latency_model::LatencyMatrix {
    let t = i7_1370p();
    let mut m = pinsight_latency_model::LatencyMatrix::new((0..20).collect());
    let l2 = |c: usize| t.caches_at(2).position(|x| x.cpus.contains(c));
    for a in 0..20 {
        for b in 0..a {
            let ns = if t.siblings(a).contains(b) {
                5.0
            } else if a >= 12 && b >= 12 {
                if l2(a) == l2(b) {
                    20.0
                } else {
                    50.0
                }
            } else if a < 12 && b < 12 {
                40.0
            } else {
                60.0
            };
            m.set(a, b, ns);
        }
    }
    m
}
