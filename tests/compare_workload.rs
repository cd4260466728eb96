//! `pinsight compare` over a built-in workload (`pinsight workload pi`):
//! a real multithreaded program, pinned through the LD_PRELOAD shim.

use crate::common_cli::pinsight;
use crate::common_cmd::words;

#[test]
fn compare_runs_the_pi_workload_under_os_and_pinned_placements() {
    let exe = env!("CARGO_BIN_EXE_pinsight");
    let mut args = words(
        "compare --runs 3 --warmup 0 --policies os,compact,e-pinned --journal j.jsonl --json -q --",
    );
    args.push(exe);
    args.extend(words("workload pi --threads 2 --size 2000000"));
    let r = pinsight(&args)
        .writes("j.jsonl")
        .writes("j.jsonl.out")
        .ok()
        .json();
    assert_eq!(r["status"]["state"], "complete");
    let arms = r["arms"].as_array().unwrap();
    // e-pinned runs on hybrid machines and is "not applicable" elsewhere.
    let na = r["not_applicable"].as_array().unwrap();
    assert_eq!(arms.len() + na.len(), 3);
    assert!(na.iter().all(|n| n["what"] == "e-pinned"));
    assert!(arms
        .iter()
        .all(|a| a["measured"] == 3 && a["failed"].as_array().unwrap().is_empty()));
    // Two workers (and the main thread) ran: task-clock was measured.
    let tc = arms[0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "task_clock_ms")
        .unwrap();
    assert!(tc["summary"]["mean"].as_f64().unwrap() > 0.0, "{tc}");
    // Every arm runs the same number of threads (the usable CPUs) and
    // tells the program the same count.
    let n = r["header"]["threads"].as_u64().unwrap();
    for a in arms {
        assert_eq!(a["threads"], n, "{a}");
        let env: Vec<(String, String)> = serde_json::from_value(a["env"].clone()).unwrap();
        assert!(
            env.contains(&("OMP_NUM_THREADS".to_string(), n.to_string())),
            "{env:?}"
        );
    }
    assert_eq!(
        arms[1]["plan"]["places"].as_array().unwrap().len() as u64,
        n,
        "compact pins one place per thread"
    );
}
