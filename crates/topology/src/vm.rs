//! Is this machine a virtual machine? Read through [`FsRoot`], so a
//! recorded machine answers for itself.
//!
//! Evidence, strongest first:
//! - `/sys/hypervisor/type` (Xen, and some others, name themselves there;
//!   kernel `Documentation/ABI/testing/sysfs-hypervisor`);
//! - the `hypervisor` flag of `/proc/cpuinfo` (x86: CPUID leaf 1, ECX bit
//!   31, set by every mainstream hypervisor; Intel SDM vol. 2A, CPUID);
//! - the DMI vendor and product (`/sys/class/dmi/id/sys_vendor`,
//!   `product_name`): QEMU, KVM, VMware, VirtualBox, Xen, Microsoft's
//!   "Virtual Machine", Amazon EC2, Google Compute Engine...

use pinsight_sys::FsRoot;
use serde::Serialize;

/// DMI vendor/product words that name a hypervisor or a cloud VM.
const DMI_VM_WORDS: &[&str] = &[
    "qemu",
    "kvm",
    "vmware",
    "virtualbox",
    "innotek",
    "xen",
    "bochs",
    "parallels",
    "virtual machine",
    "amazon ec2",
    "google compute engine",
    "cloud hypervisor",
    "firecracker",
    "bhyve",
];

/// What the machine says about being virtual.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VirtualMachine {
    /// Each piece of evidence, e.g. `cpuinfo: hypervisor flag`.
    pub evidence: Vec<String>,
}

/// What a VM means for pinsight's measurements, in one sentence.
pub const VM_MEANING: &str = "the host may move or pause the virtual CPUs at any time, so \
core-to-core latency and per-CPU speed can drift between runs and placements act on virtual \
CPUs only";

impl VirtualMachine {
    /// One human line: the evidence and what it means.
    pub fn note(&self) -> String {
        format!(
            "virtual machine ({}): {VM_MEANING}",
            self.evidence.join(", ")
        )
    }
}

/// Pure: the evidence in the texts of the files (each `None` when absent).
pub fn judge(
    hypervisor_type: Option<&str>,
    cpuinfo: Option<&str>,
    sys_vendor: Option<&str>,
    product_name: Option<&str>,
) -> Option<VirtualMachine> {
    let mut evidence = Vec::new();
    if let Some(t) = hypervisor_type.map(str::trim).filter(|t| !t.is_empty()) {
        evidence.push(format!("/sys/hypervisor/type: {t}"));
    }
    let flagged = cpuinfo.is_some_and(|c| {
        c.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_ascii_whitespace().any(|w| w == "hypervisor"))
    });
    if flagged {
        evidence.push("cpuinfo: hypervisor flag".to_string());
    }
    for (file, text) in [("sys_vendor", sys_vendor), ("product_name", product_name)] {
        let Some(t) = text.map(str::trim).filter(|t| !t.is_empty()) else {
            continue;
        };
        let lower = t.to_ascii_lowercase();
        if DMI_VM_WORDS.iter().any(|w| lower.contains(w)) {
            evidence.push(format!("DMI {file}: {t}"));
        }
    }
    (!evidence.is_empty()).then_some(VirtualMachine { evidence })
}

/// Reads the evidence under `fs`.
pub fn detect(fs: &FsRoot) -> Option<VirtualMachine> {
    judge(
        fs.read_opt("/sys/hypervisor/type").as_deref(),
        fs.read_opt("/proc/cpuinfo").as_deref(),
        fs.read_opt("/sys/class/dmi/id/sys_vendor").as_deref(),
        fs.read_opt("/sys/class/dmi/id/product_name").as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_evidence_is_named() {
        let cpuinfo = "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n";
        let vm = judge(
            None,
            Some(cpuinfo),
            Some("QEMU\n"),
            Some("Standard PC (Q35)\n"),
        )
        .unwrap();
        assert_eq!(
            vm.evidence,
            ["cpuinfo: hypervisor flag", "DMI sys_vendor: QEMU"]
        );
        assert!(vm.note().contains("latency and per-CPU speed can drift"));
        let vm = judge(Some("xen\n"), None, None, Some("Virtual Machine")).unwrap();
        assert_eq!(vm.evidence.len(), 2);
    }

    #[test]
    fn bare_metal_says_nothing() {
        let cpuinfo = "flags\t\t: fpu vme hypervisor_x\nmodel name: hypervisor\n";
        assert_eq!(
            judge(None, Some(cpuinfo), Some("Dell Inc."), Some("PowerEdge")),
            None
        );
        assert_eq!(judge(Some(" \n"), None, None, None), None);
    }

    #[test]
    fn read_through_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/class/dmi/id")).unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("sys/class/dmi/id/sys_vendor"),
            "VMware, Inc.\n",
        )
        .unwrap();
        let fs = FsRoot::at(dir.path()).unwrap();
        let vm = detect(&fs).unwrap();
        assert_eq!(vm.evidence, ["DMI sys_vendor: VMware, Inc."]);
    }
}
