//! The thermal netlink (Intel HFI) event parser on arbitrary bytes: never
//! panics, errors are one line, and whatever it accepts survives a round
//! trip through the kernel-layout encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_topology::hfi;

fuzz_target!(|data: &[u8]| {
    match hfi::parse(data) {
        Ok(changes) => {
            let again = hfi::encode(0x1c, &changes);
            assert_eq!(hfi::parse(&again).unwrap(), changes);
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
    let _ = hfi::parse_family(data, 0x1c);
});
