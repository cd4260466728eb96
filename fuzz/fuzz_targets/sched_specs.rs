//! `simulate --machine SPEC` and `--sf-estimate SPEC`: the two parsers
//! never panic, errors are one line, accepted machines have both kinds,
//! accepted estimates round-trip through their printed form. The input is
//! split at its first NUL: machine spec, then estimate spec.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_sched_model::{Machine, SfQuality};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (machine, estimate) = text.split_once('\0').unwrap_or((text, text));
    match Machine::parse(machine) {
        Ok(m) => assert!(m.big >= 1 && m.small >= 1 && m.big + m.small <= 4096),
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
    match SfQuality::parse(estimate) {
        Ok(q) => assert_eq!(SfQuality::parse(&q.to_string()).expect("round trip"), q),
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
