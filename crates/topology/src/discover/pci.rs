//! PCI devices users place threads around (NICs, GPUs, NVMe, InfiniBand),
//! from `/sys/bus/pci/devices/*`, with their locality and OS names.
//!
//! Each entry of `/sys/bus/pci/devices` is a link into the device tree
//! (`../../../devices/pci0000:00/0000:00:03.0/0000:01:00.0`); the link is
//! read so that the upstream bridges are known: a device whose `numa_node`
//! is -1 inherits the node of the closest bridge that knows, as hwloc does.
//! A tree without the links (an old snapshot of plain copies) still works,
//! without that inheritance.
//!
//! OS names are looked up below the device directory the way hwloc's Linux
//! backend finds them: `net/*`, `infiniband/*`, `nvme/nvmeN` and its
//! namespaces, `block/*` (also below `virtioN/` and the SCSI host path
//! `hostN/targetN:C:T/N:C:T:L/block/`, where `sda` lives), `drm/card*`,
//! `drm/renderD*` and `dma/*`.
//!
//! A machine without `/sys/bus/pci` costs one failed listing.

use super::reader::{shorten, Reader};
use pinsight_cpuset::CpuSet;
use pinsight_model::NumaNode;
use pinsight_model::{DeviceClass, DeviceLocalitySource, OsDevice, OsDeviceKind, PciDevice};
use std::collections::HashMap;

const BUS: &str = "/sys/bus/pci/devices";

/// Why a device file's content was not understood.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceFileError {
    /// Not a hexadecimal number of at most `bits` bits (`0x020000`).
    #[error("'{text}' is not a {bits}-bit hexadecimal number")]
    NotHex {
        /// The text, shortened.
        text: String,
        /// The width expected.
        bits: u32,
    },
    /// Not a node number or -1.
    #[error("'{text}' is not a NUMA node number or -1")]
    NotNode {
        /// The text, shortened.
        text: String,
    },
    /// Not a PCI address `dddd:bb:dd.f`.
    #[error("'{text}' is not a PCI address (domain:bus:device.function)")]
    NotAddress {
        /// The text, shortened.
        text: String,
    },
}

/// Parses a `class` file (`0x020000`): a 24-bit class code.
pub fn parse_class(text: &str) -> Result<u32, DeviceFileError> {
    parse_hex(text, 24).map(|v| v as u32)
}

/// Parses a `vendor` or `device` file (`0x8086`).
pub fn parse_id(text: &str) -> Result<u16, DeviceFileError> {
    parse_hex(text, 16).map(|v| v as u16)
}

/// Parses a `numa_node` file: `Some(n)`, or `None` for the kernel's -1
/// ("unknown").
pub fn parse_numa_node(text: &str) -> Result<Option<u32>, DeviceFileError> {
    let t = text.trim();
    if t == "-1" {
        return Ok(None);
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = t.parse::<u32>() {
            return Ok(Some(n));
        }
    }
    Err(DeviceFileError::NotNode { text: shorten(t) })
}

/// Checks a PCI address as sysfs names devices (`0000:3b:00.0`, lower-case
/// hex, fixed widths; some platforms use wider domains: `10000:00:02.0`).
pub fn parse_address(text: &str) -> Result<(), DeviceFileError> {
    let bad = || DeviceFileError::NotAddress {
        text: shorten(text),
    };
    let (rest, func) = text.rsplit_once('.').ok_or_else(bad)?;
    let mut parts = rest.split(':');
    let (Some(dom), Some(bus), Some(dev), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let hex = |s: &str, min: usize, max: usize| {
        (min..=max).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if hex(dom, 4, 8) && hex(bus, 2, 2) && hex(dev, 2, 2) && func.len() == 1 && hex(func, 1, 1) {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Parses a local CPU set: the `local_cpulist` text if given, else the
/// `local_cpus` mask.
pub fn parse_local_cpus(
    cpulist: Option<&str>,
    mask: Option<&str>,
) -> Option<Result<CpuSet, pinsight_cpuset::ParseError>> {
    match (cpulist, mask) {
        (Some(l), _) => Some(CpuSet::parse_list(l)),
        (None, Some(m)) => Some(CpuSet::parse_mask(m)),
        (None, None) => None,
    }
}

/// A hex number (`0x` optional) of at most `bits` bits.
fn parse_hex(text: &str, bits: u32) -> Result<u64, DeviceFileError> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let bad = || DeviceFileError::NotHex {
        text: shorten(t),
        bits,
    };
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let v = u64::from_str_radix(digits, 16).map_err(|_| bad())?;
    if v >> bits != 0 {
        return Err(bad());
    }
    Ok(v)
}

/// The PCI devices of placement classes, in address order.
pub(super) fn discover_devices(
    r: &mut Reader,
    online: &CpuSet,
    nodes: &[NumaNode],
) -> Vec<PciDevice> {
    let names = r.list(BUS);
    if names.is_empty() {
        return Vec::new();
    }
    let mut bridges: HashMap<String, Option<u32>> = HashMap::new();
    let mut out = Vec::new();
    for name in names {
        if let Err(e) = parse_address(&name) {
            r.warn(&format!("{BUS}/{name}"), e, "ignored the entry");
            continue;
        }
        let (dir, upstream) = device_dir(r, &name);
        if let Some(d) = read_device(r, &name, &dir, &upstream, &mut bridges, online, nodes) {
            out.push(d);
        }
    }
    out.sort_by(|a, b| a.address.cmp(&b.address));
    out
}

/// The device's real directory and its upstream bridges' directories,
/// closest first.
fn device_dir(r: &mut Reader, name: &str) -> (String, Vec<String>) {
    let link = format!("{BUS}/{name}");
    let Some(real) = r.fs.read_link(&link) else {
        return (link, Vec::new());
    };
    let real = real.to_string_lossy().into_owned();
    let mut upstream = Vec::new();
    let mut cur = real.as_str();
    while let Some((parent, last)) = cur.rsplit_once('/') {
        if parent.is_empty() {
            break;
        }
        if parse_address(last).is_ok() && cur != real {
            upstream.push(cur.to_string());
        }
        cur = parent;
    }
    (real, upstream)
}

/// One device, if it is of a placement class.
fn read_device(
    r: &mut Reader,
    address: &str,
    dir: &str,
    upstream: &[String],
    bridges: &mut HashMap<String, Option<u32>>,
    online: &CpuSet,
    nodes: &[NumaNode],
) -> Option<PciDevice> {
    let class_path = format!("{dir}/class");
    let class_code = match parse_class(&r.text(&class_path)?) {
        Ok(c) => c,
        Err(e) => {
            r.warn(&class_path, e, "ignored the device");
            return None;
        }
    };
    let known = DeviceClass::from_pci_class(class_code);
    // Bridges and the like are skipped before any further read.
    if known.is_none() && !may_have_names(class_code) {
        return None;
    }
    let os_devices = os_devices(r, dir);
    let rdma = os_devices.iter().any(|o| o.kind == OsDeviceKind::Rdma);
    let class = match known {
        Some(_) if rdma => DeviceClass::Infiniband,
        Some(c) => c,
        None => class_from_names(&os_devices)?,
    };
    let vendor = read_id(r, &format!("{dir}/vendor"))?;
    let device = read_id(r, &format!("{dir}/device"))?;
    let own_node = read_node(r, &format!("{dir}/numa_node"));
    let (numa_node, from_bridge) = match own_node {
        Some(n) => (Some(n), false),
        None => {
            let inherited = upstream.iter().find_map(|b| {
                *bridges
                    .entry(b.clone())
                    .or_insert_with(|| read_node(r, &format!("{b}/numa_node")))
            });
            (inherited, inherited.is_some())
        }
    };
    let list_path = format!("{dir}/local_cpulist");
    let mask_path = format!("{dir}/local_cpus");
    // The list when there is one, else the mask (the file read names any
    // warning below); parsed by the fuzzed `parse_local_cpus`.
    let list = r.text(&list_path);
    let (mask_text, own_path) = match list {
        Some(_) => (None, list_path),
        None => (r.text(&mask_path), mask_path),
    };
    let mask = match parse_local_cpus(list.as_deref(), mask_text.as_deref()) {
        Some(Ok(s)) => Some(s.intersection(online)),
        Some(Err(e)) => {
            r.warn(&own_path, e, "took the locality from numa_node");
            None
        }
        None => None,
    };
    let node_cpus = numa_node
        .and_then(|n| nodes.iter().find(|x| x.id == n))
        .map(|x| x.cpus.intersection(online))
        .filter(|c| !c.is_empty());
    let (local_cpus, locality_source) = match (&mask, &node_cpus) {
        (Some(m), _) if !m.is_empty() && m != online => {
            if let (Some(n), Some(c), false) = (numa_node, &node_cpus, from_bridge) {
                if !m.is_subset(c) && !c.is_subset(m) {
                    r.warn(
                        &own_path,
                        format_args!("CPUs {m} are not those of numa_node {n} ({c})"),
                        "kept the device's own CPUs",
                    );
                }
            }
            (m.clone(), DeviceLocalitySource::LocalCpus)
        }
        (_, Some(c)) if from_bridge => (c.clone(), DeviceLocalitySource::Bridge),
        (_, Some(c)) => (c.clone(), DeviceLocalitySource::NumaNode),
        (Some(m), None) if m == online && !m.is_empty() && numa_node.is_some() => {
            (m.clone(), DeviceLocalitySource::LocalCpus)
        }
        _ => (online.clone(), DeviceLocalitySource::Unknown),
    };
    Some(PciDevice {
        address: address.to_string(),
        class,
        class_code,
        vendor,
        device,
        numa_node,
        local_cpus,
        locality_source,
        os_devices,
    })
}

/// Classes outside [`DeviceClass`] whose devices may still carry a
/// placement OS name: system peripherals (DMA engines), unclassified and
/// vendor-specific devices (virtio), serial buses (some InfiniBand HCAs).
fn may_have_names(code: u32) -> bool {
    matches!((code >> 16) & 0xff, 0x00 | 0x08 | 0x0c | 0xff)
}

/// The class a device without a placement class code gets from its names.
fn class_from_names(os: &[OsDevice]) -> Option<DeviceClass> {
    os.iter().find_map(|o| match o.kind {
        OsDeviceKind::Rdma => Some(DeviceClass::Infiniband),
        OsDeviceKind::Net => Some(DeviceClass::Network),
        OsDeviceKind::NvmeController => Some(DeviceClass::Nvme),
        OsDeviceKind::Block => Some(DeviceClass::Storage),
        OsDeviceKind::Drm => Some(DeviceClass::Gpu),
        OsDeviceKind::Other => None,
    })
}

fn read_id(r: &mut Reader, path: &str) -> Option<u16> {
    let Some(text) = r.text(path) else {
        r.warn(path, "missing", "left the device out");
        return None;
    };
    match parse_id(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            r.warn(path, e, "left the device out");
            None
        }
    }
}

/// A `numa_node` file: `None` when absent, -1 or garbage (warned).
fn read_node(r: &mut Reader, path: &str) -> Option<u32> {
    let text = r.text(path)?;
    match parse_numa_node(&text) {
        Ok(n) => n,
        Err(e) => {
            r.warn(path, e, "took the node as unknown");
            None
        }
    }
}

/// The OS names below a device directory, grouped by kind (network,
/// RDMA, NVMe controllers, block, DRM, other) and sorted by name within.
fn os_devices(r: &mut Reader, dir: &str) -> Vec<OsDevice> {
    let mut found: Vec<OsDevice> = Vec::new();
    let mut push = |name: String, kind| found.push(OsDevice { name, kind });
    for entry in r.list(dir) {
        let sub = format!("{dir}/{entry}");
        match entry.as_str() {
            "net" => r
                .list(&sub)
                .into_iter()
                .for_each(|n| push(n, OsDeviceKind::Net)),
            "infiniband" => r
                .list(&sub)
                .into_iter()
                .for_each(|n| push(n, OsDeviceKind::Rdma)),
            "nvme" => {
                for ctrl in r.list(&sub) {
                    let namespaces = r.list(&format!("{sub}/{ctrl}"));
                    // Namespaces: `nvme0n1` below `nvme0`.
                    for ns in namespaces {
                        let is_ns = ns
                            .strip_prefix(ctrl.as_str())
                            .and_then(|s| s.strip_prefix('n'))
                            .is_some_and(|s| {
                                !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
                            });
                        if is_ns {
                            push(ns, OsDeviceKind::Block);
                        }
                    }
                    push(ctrl, OsDeviceKind::NvmeController);
                }
            }
            "block" => r
                .list(&sub)
                .into_iter()
                .for_each(|n| push(n, OsDeviceKind::Block)),
            "drm" => r
                .list(&sub)
                .into_iter()
                .filter(|n| n.starts_with("card") || n.starts_with("renderD"))
                .filter(|n| !n.contains('-'))
                .for_each(|n| push(n, OsDeviceKind::Drm)),
            "dma" => r
                .list(&sub)
                .into_iter()
                .for_each(|n| push(n, OsDeviceKind::Other)),
            e if e.starts_with("virtio") && e[6..].bytes().all(|b| b.is_ascii_digit()) => {
                for inner in r.list(&sub) {
                    let kind = match inner.as_str() {
                        "net" => OsDeviceKind::Net,
                        "block" => OsDeviceKind::Block,
                        _ => continue,
                    };
                    r.list(&format!("{sub}/{inner}"))
                        .into_iter()
                        .for_each(|n| push(n, kind));
                }
            }
            e if is_scsi_step(e) => scsi_blocks(r, &sub, 3, &mut push),
            _ => {}
        }
    }
    found.sort_by(|a, b| {
        kind_rank(a.kind)
            .cmp(&kind_rank(b.kind))
            .then(a.name.cmp(&b.name))
    });
    found.dedup();
    found
}

/// `ataN`, `hostN`, `targetH:C:T` or `H:C:T:L`: steps on the way from a
/// storage controller to its disks.
fn is_scsi_step(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let colons = |s: &str, n: usize| s.split(':').count() == n && s.split(':').all(digits);
    name.strip_prefix("ata").is_some_and(digits)
        || name.strip_prefix("host").is_some_and(digits)
        || name.strip_prefix("target").is_some_and(|s| colons(s, 3))
        || colons(name, 4)
}

/// `block/*` below the SCSI path from `dir`, at most `depth` steps deeper.
fn scsi_blocks(
    r: &mut Reader,
    dir: &str,
    depth: usize,
    push: &mut dyn FnMut(String, OsDeviceKind),
) {
    for entry in r.list(dir) {
        let sub = format!("{dir}/{entry}");
        if entry == "block" {
            r.list(&sub)
                .into_iter()
                .for_each(|n| push(n, OsDeviceKind::Block));
        } else if depth > 0 && is_scsi_step(&entry) {
            scsi_blocks(r, &sub, depth - 1, push);
        }
    }
}

fn kind_rank(k: OsDeviceKind) -> u8 {
    match k {
        OsDeviceKind::Net => 0,
        OsDeviceKind::Rdma => 1,
        OsDeviceKind::NvmeController => 2,
        OsDeviceKind::Block => 3,
        OsDeviceKind::Drm => 4,
        OsDeviceKind::Other => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files() {
        assert_eq!(parse_class("0x020000\n"), Ok(0x020000));
        assert!(parse_class("0x1020000").is_err());
        assert!(parse_class("").is_err());
        assert_eq!(parse_id("0x8086"), Ok(0x8086));
        assert!(parse_id("0x18086").is_err());
        assert_eq!(parse_numa_node("-1"), Ok(None));
        assert_eq!(parse_numa_node("3\n"), Ok(Some(3)));
        assert!(parse_numa_node("-2").is_err());
        assert!(parse_address("0000:3b:00.0").is_ok());
        assert!(parse_address("10000:00:02.0").is_ok());
        assert!(parse_address("0000:3b:00").is_err());
        assert!(parse_address("0000:3B:00.0").is_err());
        assert!(is_scsi_step("host0") && is_scsi_step("target0:2:0") && is_scsi_step("0:2:0:0"));
        assert!(!is_scsi_step("hostx") && !is_scsi_step("power"));
    }
}
