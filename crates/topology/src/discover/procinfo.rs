//! CPU model name and architecture from `/proc/cpuinfo`.
//!
//! The field names differ by architecture: x86 `model name`, POWER `cpu`,
//! 32-bit ARM `Processor` (or `model name` on newer kernels); 64-bit ARM
//! often has no name at all. The architecture of a recorded machine is
//! inferred from which fields exist (live discovery uses the build target).

use super::reader::Reader;

#[derive(Default)]
pub(super) struct CpuInfo {
    pub model_name: Option<String>,
    pub arch: Option<String>,
}

pub(super) fn read_cpuinfo(r: &mut Reader) -> CpuInfo {
    let Some(text) = r.text("/proc/cpuinfo") else {
        return CpuInfo {
            model_name: None,
            arch: None,
        };
    };
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key)
                .then(|| v.trim().to_string())
                .filter(|v| !v.is_empty())
        })
    };
    let arch = if field("vendor_id").is_some_and(|v| v.contains("S390")) {
        Some("s390x")
    } else if let Some(flags) = field("flags") {
        Some(if flags.split_whitespace().any(|f| f == "lm") {
            "x86_64"
        } else {
            "x86"
        })
    } else if field("vendor_id").is_some() {
        Some("x86_64")
    } else if let Some(a) = field("CPU architecture") {
        Some(if a.trim() == "8" || a.starts_with("AArch64") {
            "aarch64"
        } else {
            "arm"
        })
    } else if field("isa").is_some_and(|i| i.starts_with("rv64")) {
        Some("riscv64")
    } else if field("cpu")
        .is_some_and(|c| c.starts_with("POWER") || c.starts_with("PPC") || c.contains("altivec"))
    {
        Some("ppc64")
    } else {
        None
    };
    let model_name = match arch {
        Some("ppc64") => field("cpu"),
        Some("arm") | Some("aarch64") => field("model name").or_else(|| field("Processor")),
        _ => field("model name"),
    };
    CpuInfo {
        model_name,
        arch: arch.map(str::to_string),
    }
}
