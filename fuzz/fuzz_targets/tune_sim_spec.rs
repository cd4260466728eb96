//! The simulated executor's spec (`PINSIGHT_TEST_TUNE_SIM`, read by the
//! `tune` command): never panics, errors are one line, an accepted spec
//! prints in a form that parses back to itself and simulates positive,
//! finite times for one core and for every core of a 6P+8E machine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_tune::sim::SimSpec;
use pinsight_tune_model::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let spec = match text.parse::<SimSpec>() {
        Ok(s) => s,
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
            return;
        }
    };
    assert_eq!(spec.to_string().parse::<SimSpec>(), Ok(spec));
    for c in [
        Config::new(1, 0, 0),
        Config::new(0, 1, 0),
        Config::new(6, 8, 6),
    ] {
        let t = spec.model.time(&spec.theta, c);
        assert!(t.is_finite() && t > 0.0, "{spec}: {c} takes {t}");
    }
});
