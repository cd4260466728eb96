//! The live executor on this machine: every configuration's program sees
//! its own thread count (`OMP_NUM_THREADS`) and exactly its CPUs
//! (`Cpus_allowed_list`), on the machine as discovered and with two
//! declared kinds.

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_model::{declared::apply, declared::KindSpec};
use pinsight_sys::progress::Silent;
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use pinsight_tune::{ExecutorKind, TuneConfig, TuneJournal, TuneRequest, TuneSession};
use pinsight_tune_model::Config;
use std::collections::BTreeSet;

/// (threads, CPU list) of runs.
type Seen = BTreeSet<(String, String)>;

/// Runs a tune of a shell probe on `topo`; returns what each run saw as
/// (threads, CPUs) and what the design expected.
fn probe(topo: &Topology) -> (Seen, Seen) {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("seen.txt");
    let script = format!(
        "echo \"$OMP_NUM_THREADS $(grep Cpus_allowed_list /proc/self/status | cut -f2)\" >> '{}'",
        out.display()
    );
    let s = TuneSession::open(TuneConfig {
        request: TuneRequest {
            runs: 1,
            warmup: 0,
            seed: 3,
            validate: 0,
            ..TuneRequest::new(vec!["sh".into(), "-c".into(), script], topo.usable())
        },
        topology: topo,
        measure_fs: FsRoot::live(),
        journal: TuneJournal::New(d.path().join("live.jsonl")),
        show_output: false,
        is_env_set: &|_| false,
        executor: ExecutorKind::Live,
    })
    .unwrap();
    let layout = s.layout().clone();
    let design: Vec<Config> = s.design().to_vec();
    let f = s.run(&mut Silent).unwrap();
    assert!(f.complete, "{:?} {:?}", f.outcome, f.notes);
    assert_eq!(f.design_runs.len(), design.len());
    let text = std::fs::read_to_string(&out).unwrap();
    let seen = text
        .lines()
        .map(|l| {
            let (n, cpus) = l.split_once(' ').unwrap();
            (n.to_string(), cpus.parse::<CpuSet>().unwrap().to_string())
        })
        .collect();
    let want = design
        .iter()
        .map(|c| {
            (
                c.threads().to_string(),
                layout.cpus(*c).unwrap().to_string(),
            )
        })
        .collect();
    (seen, want)
}

#[test]
fn every_configuration_sees_its_threads_and_exactly_its_cpus() {
    let topo = discover(&FsRoot::live());
    let (seen, want) = probe(&topo);
    assert_eq!(seen, want);
}

#[test]
fn declared_kinds_are_tuned_as_p_and_e_cores() {
    let topo = discover(&FsRoot::live());
    let usable: Vec<usize> = topo.usable().iter().collect();
    if usable.len() < 2 {
        pinsight_testkit::skip_test!("one usable CPU: two kinds cannot be declared");
    }
    let rest: CpuSet = usable[1..].iter().copied().collect();
    let spec = KindSpec::parse(&format!("{}:P,{rest}:E", usable[0])).unwrap();
    let declared = match apply(&topo, &spec) {
        Ok(t) => t,
        Err(e) => pinsight_testkit::skip_test!("cannot declare kinds here: {e}"),
    };
    let (seen, want) = probe(&declared);
    assert_eq!(seen, want);
    // 1P, 1E and both were among the configurations run.
    let first = usable[0].to_string();
    let second = usable[1].to_string();
    assert!(want.contains(&("1".to_string(), first)), "{want:?}");
    assert!(want.contains(&("1".to_string(), second)), "{want:?}");
}
