//! The PCI device file parsers (`class`, `vendor`/`device`, `numa_node`,
//! device addresses, `local_cpulist`/`local_cpus`) on arbitrary UTF-8, the
//! input split at NUL bytes into one text per file: never panic, errors are
//! one line, and accepted values are in range and round-trip.
#![no_main]

#[path = "nul_texts.rs"]
mod nul_texts;

use libfuzzer_sys::fuzz_target;
use pinsight_topology::discover::pci;

fuzz_target!(|data: &[u8]| {
    let Some([class, id, node, addr, list, mask]) = nul_texts::texts(data) else {
        return;
    };
    match pci::parse_class(class) {
        Ok(c) => {
            assert!(c <= 0xff_ffff);
            assert_eq!(pci::parse_class(&format!("0x{c:06x}")), Ok(c));
        }
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
    match pci::parse_id(id) {
        Ok(v) => assert_eq!(pci::parse_id(&format!("0x{v:04x}")), Ok(v)),
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
    match pci::parse_numa_node(node) {
        Ok(Some(n)) => assert_eq!(pci::parse_numa_node(&n.to_string()), Ok(Some(n))),
        Ok(None) => assert_eq!(node.trim(), "-1"),
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
    if let Err(e) = pci::parse_address(addr) {
        assert!(!e.to_string().contains('\n'));
    }
    for (l, m) in [(Some(list), Some(mask)), (None, Some(mask))] {
        if let Some(Ok(set)) = pci::parse_local_cpus(l, m) {
            let again = pci::parse_local_cpus(Some(&set.to_list_string()), None);
            assert_eq!(again, Some(Ok(set)));
        }
    }
});
