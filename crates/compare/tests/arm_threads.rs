//! Per-arm thread counts (what `tune` needs: each configuration runs as
//! many threads as it has CPUs) and the experiment kind in the header,
//! on the recorded i7-1370P; compare's own headers are unchanged.

use pinsight_compare::journal::{Field, Header, Journal, JournalWriter};
use pinsight_compare::setup::{setup, Extension, GovernorProbe, Request, SetupError};
use pinsight_compare::Machine;
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use pinsight_topology::discover;

fn laptop() -> Topology {
    let dir = pinsight_testkit::fixtures::hwloc("20em64t-hybrid-1p6c2t+2ca4co1t");
    discover(&FsRoot::at(&dir).unwrap())
}

fn request(policies: &[&str]) -> Request {
    Request {
        runs: 3,
        warmup: 0,
        seed: 7,
        ..Request::new(
            vec!["true".into()],
            policies.iter().map(|s| s.to_string()).collect(),
        )
    }
}

fn probe() -> GovernorProbe {
    GovernorProbe {
        usable: vec![],
        not_applicable: vec![],
        note: "governors: unavailable".into(),
    }
}

fn tune_ext(threads: Vec<usize>) -> Extension {
    Extension {
        arm_threads: Some(threads),
        kind: Some("tune".into()),
        extension: Some(serde_json::json!({"arms": ["2P", "2P+1E"]})),
        ..Extension::default()
    }
}

fn build(req: &Request, ext: &Extension) -> Result<Header, SetupError> {
    let t = laptop();
    setup(
        &t,
        req,
        &probe(),
        Machine::default(),
        &|_| false,
        "2025-01-01T00:00:00Z".into(),
        ext,
    )
    .map(|s| s.header)
}

fn env<'a>(h: &'a Header, arm: usize, key: &str) -> Option<&'a str> {
    h.arms[arm]
        .env
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn each_arm_runs_its_own_thread_count_and_exports_it() {
    let req = request(&["cpus-set:0,2", "cpus:0,2,12"]);
    let h = build(&req, &tune_ext(vec![2, 3])).unwrap();
    assert_eq!(h.threads, None, "no common thread count");
    assert_eq!(h.kind.as_deref(), Some("tune"));
    let threads: Vec<usize> = h.arms.iter().map(|a| a.plan.threads).collect();
    assert_eq!(threads, [2, 3]);
    assert_eq!(env(&h, 0, "OMP_NUM_THREADS"), Some("2"));
    assert_eq!(env(&h, 1, "OMP_NUM_THREADS"), Some("3"));
    assert_eq!(h.arms[1].plan.places.len(), 3);
    // The header round-trips through a journal with its kind and threads.
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.jsonl");
    JournalWriter::create(&path, &h).unwrap();
    let back = Journal::read(&path).unwrap().header;
    assert_eq!(back, h);
    assert!(back.mismatch(&h).is_empty());
}

#[test]
fn resuming_checks_every_arms_thread_count() {
    let req = request(&["cpus-set:0,2,4", "cpus-set:0,2,12"]);
    let journal = build(&req, &tune_ext(vec![3, 3])).unwrap();
    let now = build(&req, &tune_ext(vec![2, 3])).unwrap();
    let d = journal.mismatch(&now);
    assert!(
        d.iter()
            .any(|d| d.field == Field::ArmThreads("cpus-set:0,2,4".into())
                && d.journal == "3"
                && d.now == "2"),
        "{d:?}"
    );
    let mut other = tune_ext(vec![3, 3]);
    other.extension = Some(serde_json::json!({"arms": ["3P", "2P+1E"]}));
    let d = journal.mismatch(&build(&req, &other).unwrap());
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].field, Field::Extension);
}

#[test]
fn a_compare_journal_and_a_tune_journal_never_resume_each_other() {
    let req = request(&["cpus-set:0,2"]);
    let tune = build(&req, &tune_ext(vec![2])).unwrap();
    let compare = build(&req, &Extension::default()).unwrap();
    for (journal, now, want) in [
        (
            &tune,
            &compare,
            ("a tune experiment", "a compare experiment"),
        ),
        (
            &compare,
            &tune,
            ("a compare experiment", "a tune experiment"),
        ),
    ] {
        let d = journal.mismatch(now);
        assert_eq!(d.len(), 1, "only the kind is reported: {d:?}");
        assert_eq!(d[0].field, Field::Kind);
        assert_eq!((d[0].journal.as_str(), d[0].now.as_str()), want);
        assert_eq!(
            d[0].to_string(),
            format!("experiment: journal has {}, now {}", want.0, want.1)
        );
    }
}

#[test]
fn compare_headers_are_unchanged() {
    let req = request(&["os", "p-set"]);
    let t = laptop();
    let plain = build(&req, &Extension::default()).unwrap();
    assert_eq!(plain.threads, Some(t.usable().len()));
    assert!(plain.arms.iter().all(|a| a.plan.threads == 20));
    let json = serde_json::to_string(&plain).unwrap();
    assert!(!json.contains("\"kind\""), "{json}");
    assert!(!json.contains("\"extension\""), "{json}");
}

#[test]
fn per_arm_threads_are_checked() {
    let req = request(&["cpus-set:0,2", "cpus-set:0,2,4"]);
    assert_eq!(
        build(&req, &tune_ext(vec![2])).unwrap_err(),
        SetupError::ArmThreadsCount {
            threads: 1,
            policies: 2
        }
    );
    assert_eq!(
        build(&req, &tune_ext(vec![2, 0])).unwrap_err(),
        SetupError::ZeroThreads
    );
    let twice = request(&["cpus-set:0,2", "cpus-set:0,2"]);
    assert!(matches!(
        build(&twice, &tune_ext(vec![2, 3])).unwrap_err(),
        SetupError::ArmThreadsConflict {
            first: 2,
            second: 3,
            ..
        }
    ));
    // Pinned arms refuse more threads than CPUs, as in compare.
    let pinned = request(&["cpus:0,2"]);
    assert!(matches!(
        build(&pinned, &tune_ext(vec![3])).unwrap_err(),
        SetupError::Plan(_)
    ));
}
