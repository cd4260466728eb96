//! PCI devices users place threads around: NICs, GPUs, NVMe drives,
//! InfiniBand/RDMA adapters, with where they sit (`local_cpulist`,
//! `numa_node`) and the names the OS gives them (`eth0`, `nvme0n1`,
//! `mlx5_0`, `card0`).
//!
//! Like hwloc's I/O objects: a PCI device (`PCIDev`) carries OS devices
//! (`OSDev`). pinsight keeps only the classes placement cares about, plus
//! any device that has an OS name of such a class.

use pinsight_cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What a device is for, from its PCI class code (and OS names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceClass {
    /// Ethernet and other network controllers (class 0x02, except
    /// InfiniBand).
    Network,
    /// InfiniBand (0x0207, 0x0c06) or any device with an RDMA name.
    Infiniband,
    /// Display controllers and 3D/compute GPUs (class 0x03).
    Gpu,
    /// NVMe controllers (0x0108).
    Nvme,
    /// Other mass storage (SAS, SATA, RAID: class 0x01).
    Storage,
    /// Processing accelerators and co-processors (0x12, 0x0b40).
    Accelerator,
}

impl DeviceClass {
    /// The serde name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceClass::Network => "network",
            DeviceClass::Infiniband => "infiniband",
            DeviceClass::Gpu => "gpu",
            DeviceClass::Nvme => "nvme",
            DeviceClass::Storage => "storage",
            DeviceClass::Accelerator => "accelerator",
        }
    }

    /// The class a 24-bit PCI class code (`class` file, `0x020000`) names,
    /// if placement cares about it.
    pub fn from_pci_class(code: u32) -> Option<DeviceClass> {
        let class = (code >> 16) & 0xff;
        let sub = (code >> 8) & 0xff;
        match (class, sub) {
            (0x02, 0x07) | (0x0c, 0x06) => Some(DeviceClass::Infiniband),
            (0x02, _) => Some(DeviceClass::Network),
            (0x03, _) => Some(DeviceClass::Gpu),
            (0x01, 0x08) => Some(DeviceClass::Nvme),
            (0x01, _) => Some(DeviceClass::Storage),
            (0x12, _) | (0x0b, 0x40) => Some(DeviceClass::Accelerator),
            _ => None,
        }
    }
}

/// What kind of name the OS gives a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OsDeviceKind {
    /// A network interface (`net/eth0`).
    Net,
    /// A block device (`nvme0n1`, `sda`).
    Block,
    /// A DRM card or render node (`drm/card0`, `renderD128`).
    Drm,
    /// An RDMA device (`infiniband/mlx5_0`).
    Rdma,
    /// An NVMe controller (`nvme/nvme0`).
    NvmeController,
    /// A DMA engine or other character device (`dma/`, `accel/`).
    Other,
}

/// One name the OS gives a device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsDevice {
    /// The name users type (`eth0`, `nvme0n1`, `mlx5_0`, `card0`).
    pub name: String,
    /// What it is.
    pub kind: OsDeviceKind,
}

/// Where a device's [`local_cpus`](PciDevice::local_cpus) came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceLocalitySource {
    /// The device's own `local_cpulist` (or `local_cpus` mask).
    #[default]
    LocalCpus,
    /// The CPUs of its `numa_node`.
    NumaNode,
    /// The closest upstream bridge that knows.
    Bridge,
    /// An hwloc XML export's nesting.
    HwlocXml,
    /// Nothing tells (`numa_node` -1 and a full or missing mask): the whole
    /// machine.
    Unknown,
}

/// One PCI device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciDevice {
    /// The PCI address, `domain:bus:device.function` (`0000:3b:00.0`).
    pub address: String,
    /// What it is for.
    pub class: DeviceClass,
    /// The 24-bit PCI class code.
    pub class_code: u32,
    /// PCI vendor id (0x8086, 0x10de, ...).
    pub vendor: u16,
    /// PCI device id.
    pub device: u16,
    /// The NUMA node the kernel puts it on; `None` when the kernel says -1
    /// and no bridge tells.
    pub numa_node: Option<u32>,
    /// The online CPUs local to it; the whole machine when unknown.
    pub local_cpus: CpuSet,
    /// Where `local_cpus` came from.
    pub locality_source: DeviceLocalitySource,
    /// Its OS names (possibly none: a GPU without a driver).
    pub os_devices: Vec<OsDevice>,
}

impl PciDevice {
    /// A short name for humans: its first OS name, else its address.
    pub fn label(&self) -> &str {
        self.os_devices
            .first()
            .map(|o| o.name.as_str())
            .unwrap_or(&self.address)
    }
}

/// Why a device name did not resolve.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DeviceLookupError {
    /// No device answers to the name; `known` lists the names that do.
    #[error("no device '{name}' (known: {})", if known.is_empty() { "none: no PCI device of a placement class was found".to_string() } else { known.join(", ") })]
    Unknown {
        /// The name asked for.
        name: String,
        /// Every name that would resolve.
        known: Vec<String>,
    },
}

/// Finds a device by OS name (`eth0`, `nvme0n1`, `mlx5_0`, `card0`), PCI
/// address (`0000:3b:00.0`, or `3b:00.0` in domain 0), or class alias with
/// an index in address order (`gpu0`, `nic1`, `nvme0` when no controller is
/// named so, `ib0`).
pub fn find_device<'a>(
    devices: &'a [PciDevice],
    name: &str,
) -> Result<&'a PciDevice, DeviceLookupError> {
    if let Some(d) = devices
        .iter()
        .find(|d| d.os_devices.iter().any(|o| o.name == name))
    {
        return Ok(d);
    }
    let lower = name.to_ascii_lowercase();
    if let Some(d) = devices.iter().find(|d| {
        d.address.eq_ignore_ascii_case(&lower)
            || (d.address.starts_with("0000:") && d.address[5..].eq_ignore_ascii_case(&lower))
    }) {
        return Ok(d);
    }
    for (alias, class) in ALIASES {
        if let Some(idx) = lower
            .strip_prefix(alias)
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<usize>().ok())
        {
            if let Some(d) = devices.iter().filter(|d| d.class == *class).nth(idx) {
                return Ok(d);
            }
        }
    }
    Err(DeviceLookupError::Unknown {
        name: name.to_string(),
        known: known_names(devices),
    })
}

/// Class aliases `find_device` accepts, each followed by an index.
const ALIASES: &[(&str, DeviceClass)] = &[
    ("gpu", DeviceClass::Gpu),
    ("nic", DeviceClass::Network),
    ("nvme", DeviceClass::Nvme),
    ("ib", DeviceClass::Infiniband),
    ("accel", DeviceClass::Accelerator),
];

/// The names users can pass to [`find_device`]: every OS name, else the
/// address of devices without one.
pub fn known_names(devices: &[PciDevice]) -> Vec<String> {
    devices
        .iter()
        .flat_map(|d| {
            if d.os_devices.is_empty() {
                vec![d.address.clone()]
            } else {
                d.os_devices.iter().map(|o| o.name.clone()).collect()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(addr: &str, class: DeviceClass, names: &[&str]) -> PciDevice {
        PciDevice {
            address: addr.into(),
            class,
            class_code: 0,
            vendor: 0,
            device: 0,
            numa_node: None,
            local_cpus: CpuSet::new(),
            locality_source: DeviceLocalitySource::Unknown,
            os_devices: names
                .iter()
                .map(|n| OsDevice {
                    name: n.to_string(),
                    kind: OsDeviceKind::Net,
                })
                .collect(),
        }
    }

    #[test]
    fn class_codes() {
        assert_eq!(
            DeviceClass::from_pci_class(0x020000),
            Some(DeviceClass::Network)
        );
        assert_eq!(
            DeviceClass::from_pci_class(0x020700),
            Some(DeviceClass::Infiniband)
        );
        assert_eq!(
            DeviceClass::from_pci_class(0x0c0600),
            Some(DeviceClass::Infiniband)
        );
        assert_eq!(
            DeviceClass::from_pci_class(0x030200),
            Some(DeviceClass::Gpu)
        );
        assert_eq!(
            DeviceClass::from_pci_class(0x010802),
            Some(DeviceClass::Nvme)
        );
        assert_eq!(
            DeviceClass::from_pci_class(0x010400),
            Some(DeviceClass::Storage)
        );
        assert_eq!(
            DeviceClass::from_pci_class(0x120000),
            Some(DeviceClass::Accelerator)
        );
        assert_eq!(DeviceClass::from_pci_class(0x060400), None);
        assert_eq!(DeviceClass::from_pci_class(0x0c0300), None);
    }

    #[test]
    fn lookup_by_name_address_and_alias() {
        let devs = vec![
            dev("0000:02:00.0", DeviceClass::Network, &["eth0"]),
            dev("0000:03:00.0", DeviceClass::Gpu, &["card0", "renderD128"]),
            dev("0000:04:00.0", DeviceClass::Gpu, &[]),
        ];
        assert_eq!(find_device(&devs, "eth0").unwrap().address, "0000:02:00.0");
        assert_eq!(
            find_device(&devs, "renderD128").unwrap().address,
            "0000:03:00.0"
        );
        assert_eq!(
            find_device(&devs, "0000:04:00.0").unwrap().class,
            DeviceClass::Gpu
        );
        assert_eq!(
            find_device(&devs, "04:00.0").unwrap().address,
            "0000:04:00.0"
        );
        assert_eq!(find_device(&devs, "gpu1").unwrap().address, "0000:04:00.0");
        assert_eq!(find_device(&devs, "nic0").unwrap().address, "0000:02:00.0");
        let err = find_device(&devs, "eth9").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no device 'eth9' (known: eth0, card0, renderD128, 0000:04:00.0)"
        );
        assert!(find_device(&[], "gpu0")
            .unwrap_err()
            .to_string()
            .contains("none"));
    }
}
