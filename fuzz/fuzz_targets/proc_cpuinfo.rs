//! The per-processor MIDR reader of `/proc/cpuinfo`
//! (`pinsight_topology::discover::procinfo::parse_midrs`: Arm kinds when
//! the kernel has no `regs/identification/midr_el1`) on arbitrary UTF-8:
//! never panics, errors are one line, and every accepted MIDR has the
//! architecture field 0xf and prints back, in the kernel's format, to a
//! file that parses to the same map.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_topology::discover::procinfo::parse_midrs;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_midrs(text) {
        Err(e) => assert!(!e.to_string().contains('\n')),
        Ok(None) => {}
        Ok(Some(map)) => {
            assert!(!map.is_empty());
            let mut again = String::new();
            for (cpu, m) in &map {
                assert_eq!((m >> 16) & 0xf, 0xf, "architecture field of {m:#x}");
                assert!(*m <= 0xffff_ffff);
                again.push_str(&format!(
                    "processor\t: {cpu}\nCPU implementer\t: 0x{:02x}\nCPU architecture: 8\n\
                     CPU variant\t: 0x{:x}\nCPU part\t: 0x{:03x}\nCPU revision\t: {}\n\n",
                    (m >> 24) & 0xff,
                    (m >> 20) & 0xf,
                    (m >> 4) & 0xfff,
                    m & 0xf
                ));
            }
            assert_eq!(parse_midrs(&again), Ok(Some(map)));
        }
    }
});
