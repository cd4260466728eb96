//! `--kinds SPEC` / `PINSIGHT_KINDS` (declared core kinds): never panics;
//! an accepted spec has disjoint non-empty groups with unique names and
//! marks, parses again from its own groups (speeds included) to the same
//! kinds, and applies to a machine holding exactly its CPUs with every
//! CPU in its kind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_model::{declared::apply, declared::KindSpec, Cpu, Topology};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = KindSpec::parse(text) else {
        return;
    };
    let kinds = spec.kinds();
    assert!(!kinds.is_empty());
    for (i, k) in kinds.iter().enumerate() {
        assert!(!k.cpus.is_empty());
        for o in &kinds[..i] {
            assert!(!o.cpus.intersects(&k.cpus));
            assert!(!o.name.eq_ignore_ascii_case(&k.name));
            assert!(!o.mark.eq_ignore_ascii_case(&k.mark));
        }
    }
    let again: Vec<String> = kinds
        .iter()
        .map(|k| format!("{}:{}@{}", k.cpus, k.name, k.speed()))
        .collect();
    let reparsed = KindSpec::parse(&again.join(",")).expect("a spec's own groups must parse");
    let pairs = |s: &KindSpec| -> Vec<(String, String, String, u32)> {
        s.kinds()
            .iter()
            .map(|k| {
                (
                    k.cpus.to_string(),
                    k.name.clone(),
                    k.mark.clone(),
                    k.speed_milli,
                )
            })
            .collect()
    };
    assert_eq!(pairs(&reparsed), pairs(&spec));
    // Apply to a small machine only (CPU ids reach 2^20).
    let all = spec.cpus();
    if all.last().is_some_and(|l| l < 4096) {
        let topo = Topology::bare(all.iter().map(Cpu::new).collect());
        let out = apply(&topo, &spec).expect("a machine of exactly the declared CPUs accepts it");
        assert_eq!(out.kinds.len(), kinds.len());
        for k in &out.kinds {
            for c in k.cpus.iter() {
                assert_eq!(out.cpu(c).and_then(|c| c.kind), Some(k.rank));
            }
        }
    }
});
