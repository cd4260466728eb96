//! `tune`'s live runner on this machine over a real program, `pinsight
//! workload pi`: every design configuration is journaled with its thread
//! count, and the program ran exactly that many threads on exactly the
//! configuration's CPUs (its own report: threads, and the CPUs each
//! thread was seen on) — on the machine as discovered, and with two
//! declared kinds.

use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use pinsight_testkit::topology::declared_first_p;
use pinsight_topology::discover;
use pinsight_tune::{
    ExecutorKind, Identity, TuneConfig, TuneJournal, TuneRequest, TuneSession, KIND_DESIGN,
};
use pinsight_tune_model::Config;
use serde_json::Value;

fn tune_pi(topo: &Topology) {
    let d = tempfile::tempdir().unwrap();
    // The workload's JSON report goes to a file named after what the
    // process was given: its thread count and its CPUs.
    let script = format!(
        "cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2); \
         exec '{}' workload pi --size 1e6 --json > \"{}/seen-$OMP_NUM_THREADS-$cpus.json\"",
        env!("CARGO_BIN_EXE_pinsight"),
        d.path().display()
    );
    let journal = d.path().join("tune.jsonl");
    let s = TuneSession::open(TuneConfig {
        request: TuneRequest {
            runs: 1,
            warmup: 0,
            seed: 5,
            ..TuneRequest::new(vec!["sh".into(), "-c".into(), script], topo.usable())
        },
        topology: topo,
        measure_fs: FsRoot::live(),
        journal: TuneJournal::New(journal.clone()),
        show_output: false,
        is_env_set: &|_| false,
        executor: ExecutorKind::Live,
    })
    .unwrap();
    let layout = s.layout().clone();
    let f = s.run(&mut pinsight_sys::progress::Silent).unwrap();
    assert!(
        matches!(f.outcome, pinsight_compare::Outcome::Complete),
        "{:?}",
        f.outcome
    );
    assert_eq!(f.design_runs.len(), f.design.len());
    // Validation configurations (when any) ran once each as well.
    assert_eq!(f.validation_runs.len(), f.validation.len(), "{:?}", f.notes);
    let j = pinsight_compare::Journal::read(&journal).unwrap();
    assert_eq!(j.header.kind.as_deref(), Some(KIND_DESIGN));
    let id = Identity::of(&j.header).unwrap();
    for (arm, (_, c)) in j.header.arms.iter().zip(&id.arms) {
        let c = Config::from(*c);
        assert_eq!(arm.plan.threads, c.threads() as usize);
    }
    for c in f.design.iter().chain(&f.validation) {
        let cpus = layout.cpus(*c).unwrap();
        let file = d.path().join(format!("seen-{}-{}.json", c.threads(), cpus));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{c}: {}: {e}", file.display()));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["threads"], c.threads(), "{c}: {text}");
        for t in v["per_thread"].as_array().unwrap() {
            for cpu in t["cpu_seen"].as_array().unwrap() {
                let cpu = cpu.as_u64().unwrap() as usize;
                assert!(
                    cpus.contains(cpu),
                    "{c}: thread on CPU {cpu}, not in {cpus}"
                );
            }
        }
    }
}

#[test]
fn tune_runs_the_pi_workload_with_each_configurations_threads_and_cpus() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    tune_pi(&discover(&FsRoot::live()));
}

#[test]
fn tune_runs_the_pi_workload_on_two_declared_kinds() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    match declared_first_p(&discover(&FsRoot::live())) {
        Ok(t) => tune_pi(&t),
        Err(why) => pinsight_testkit::skip_test!("{why}"),
    }
}
