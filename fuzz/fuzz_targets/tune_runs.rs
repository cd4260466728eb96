//! Runs measured elsewhere (`tune --from FILE`): the runs CSV parser never
//! panics, errors are one line, accepted runs are valid (p + e >= 1,
//! positive finite times, non-negative energy) and survive a round trip
//! through CSV; small accepted sets are fitted without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_tune_model::{fit, parse_runs, FitOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let runs = match parse_runs(text) {
        Ok(r) => r,
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
            return;
        }
    };
    let mut csv = String::from("p,e,smt,time_s,energy_j\n");
    for r in &runs {
        assert!(r.config.p + r.config.e >= 1);
        assert!(r.time_s.is_finite() && r.time_s > 0.0);
        assert!(r.energy_j.is_none_or(|j| j.is_finite() && j >= 0.0));
        let j = r.energy_j.map(|j| j.to_string()).unwrap_or_default();
        csv.push_str(&format!(
            "{},{},{},{},{}\n",
            r.config.p, r.config.e, r.config.smt, r.time_s, j
        ));
    }
    assert_eq!(parse_runs(&csv).expect("round trip"), runs);
    if runs.len() <= 32 {
        let opts = FitOptions {
            bootstrap: 2,
            seed: 1,
        };
        if let Err(e) = fit(&runs, opts) {
            assert!(!e.to_string().contains('\n'));
        }
    }
});
