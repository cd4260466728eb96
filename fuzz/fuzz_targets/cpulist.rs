//! CPU set text parsers on arbitrary UTF-8: never panic, and every set one
//! of them accepts survives a round trip through both output formats.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_cpuset::CpuSet;

/// Where `0xf...f` (hwloc's "all the rest") is cut; the size of a big machine.
const HWLOC_LIMIT: usize = 4096;

fn round_trips(set: &CpuSet, from: &str, text: &str) {
    let list = set.to_list_string();
    let again = CpuSet::parse_list(&list)
        .unwrap_or_else(|e| panic!("{from}({text:?}) -> list {list:?} does not parse: {e}"));
    assert_eq!(&again, set, "{from}({text:?}) -> list {list:?}");
    let mask = set.to_mask_string();
    let again = CpuSet::parse_mask(&mask)
        .unwrap_or_else(|e| panic!("{from}({text:?}) -> mask {mask:?} does not parse: {e}"));
    assert_eq!(&again, set, "{from}({text:?}) -> mask {mask:?}");
    assert_eq!(set.iter().count(), set.len());
    assert_eq!(set.first(), set.iter().next());
    assert_eq!(set.last(), set.iter().last());
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(s) = CpuSet::parse_list(text) {
        round_trips(&s, "parse_list", text);
    }
    if let Ok(s) = CpuSet::parse_mask(text) {
        round_trips(&s, "parse_mask", text);
    }
    if let Ok(s) = CpuSet::parse_hwloc(text, HWLOC_LIMIT) {
        round_trips(&s, "parse_hwloc", text);
    }
});
