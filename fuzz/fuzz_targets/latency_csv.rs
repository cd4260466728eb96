//! Latency matrices from outside (`--from-csv`, `--latency`, `report
//! --latency-from`): the core-to-core-latency CSV parser never panics, and
//! what it accepts survives a round trip (checked inside `fuzz_parse`).
//! The JSON form is loaded through serde and validated too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_latency_model::LatencyMatrix;

fuzz_target!(|data: &[u8]| {
    pinsight_latency_model::matrix::fuzz_parse(data);
    if let Ok(m) = serde_json::from_slice::<LatencyMatrix>(data) {
        let _ = m.validate();
    }
});
