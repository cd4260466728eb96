//! `--weights FILE` for the balance policy (JSON object, `{"weights": …}`
//! wrapper, or `cpu,weight` lines): never panics, and accepted weights are
//! finite and non-negative.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_plan::Weights;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(w) = Weights::parse(text, "fuzz") {
        let json = w.to_json();
        let again = Weights::parse(&json, "fuzz").expect("to_json output must parse");
        assert_eq!(again.to_json(), json);
    }
});
