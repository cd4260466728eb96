//! The specs of `tune --machine`, `model --config` and `model --params`:
//! the parsers never panic, errors are one line, accepted specs are valid
//! and round-trip through their Display form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_tune_model::{Config, Machine, ModelSpec};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match text.parse::<Machine>() {
        Ok(m) => {
            assert!(m.p_cores >= 1);
            assert_eq!(m.to_string().parse::<Machine>().expect("round trip"), m);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
    match text.parse::<Config>() {
        Ok(c) => {
            assert!(c.p + c.e >= 1);
            assert_eq!(c.to_string().parse::<Config>().expect("round trip"), c);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
    match text.parse::<ModelSpec>() {
        Ok(s) => {
            let t = s.theta;
            assert!((0.0..=1.0).contains(&t.f) && t.sf > 0.0 && t.t1 > 0.0);
            assert_eq!(s.to_string().parse::<ModelSpec>().expect("round trip"), s);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
