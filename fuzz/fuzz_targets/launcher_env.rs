//! Launcher environment (`pinsight run --slice`, `pinsight slice`): the
//! Slurm tasks-per-node list and the local-rank variables. Never panics;
//! an accepted tasks-per-node list re-parses from its expanded form to the
//! same counts; a detected local rank names variables that were set. Input:
//! lines `NAME=value`; the first line alone is also parsed as a list.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_plan::launcher::{detect, parse_tasks_per_node, MAX_NODES};
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(list) = parse_tasks_per_node(text.lines().next().unwrap_or("")) {
        assert!(!list.is_empty() && list.len() <= MAX_NODES);
        let plain: Vec<String> = list.iter().map(|n| n.to_string()).collect();
        assert_eq!(parse_tasks_per_node(&plain.join(",")).unwrap(), list);
    }
    let env: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |k: &str| env.get(k).map(|v| v.to_string());
    if let Ok(r) = detect(&get, None, None) {
        for v in &r.vars {
            let (k, val) = v.split_once('=').expect("NAME=value");
            assert_eq!(env.get(k).copied(), Some(val));
        }
    }
    let _ = detect(&get, Some(0), None);
});
