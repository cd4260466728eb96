//! `sched`/`mix --sf NAME=SF` and the `mix` journal (`--resume FILE`):
//! neither parser panics; errors are one line; accepted SFs are finite and
//! in [1, 100]; accepted journals print back (JSON Lines) to the same
//! records. The input is split at its first NUL: SF spec, then journal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_sched::mix::parse;
use pinsight_sched::GivenSf;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (spec, journal) = text.split_once('\0').unwrap_or((text, text));
    let mut g = GivenSf::new();
    match g.add_spec(spec) {
        Ok(()) => {
            let v = g.entries()[0].1;
            assert!(v.is_finite() && (1.0..=100.0).contains(&v));
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
    if let Ok(records) = parse(journal) {
        let again: String = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        assert_eq!(parse(&again).expect("round trip"), records);
    }
});
