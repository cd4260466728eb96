//! `--mem SPEC` (local, bind:NODES, interleave:NODES, preferred:NODE,
//! weighted-interleave[:NODES]): never panics, never allocates for a huge
//! node id, and an accepted spec prints canonically and parses back to
//! the same policy.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_plan::MemPolicy;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = text.parse::<MemPolicy>() {
        let canon = p.to_string();
        let again: MemPolicy = canon.parse().expect("canonical text must parse");
        assert_eq!(again, p);
        assert_eq!(again.to_string(), canon);
    }
});
