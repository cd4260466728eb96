//! CPU model name, architecture and (Arm) each processor's MIDR from
//! `/proc/cpuinfo`.
//!
//! The field names differ by architecture: x86 `model name`, POWER `cpu`,
//! 32-bit ARM `Processor` (or `model name` on newer kernels); 64-bit ARM
//! often has no name at all. The architecture of a recorded machine is
//! inferred from which fields exist (live discovery uses the build target).

use super::reader::shorten;
use std::collections::BTreeMap;

#[derive(Default)]
pub(super) struct CpuInfo {
    pub model_name: Option<String>,
    pub arch: Option<String>,
}

/// The model name and architecture `text` (a `/proc/cpuinfo`) gives.
pub(super) fn read_cpuinfo(text: &str) -> CpuInfo {
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

/// What is wrong with the per-processor identity in a `/proc/cpuinfo`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MidrError {
    /// A `processor` line whose value is not a CPU number.
    #[error("'processor : {0}' is not a CPU number")]
    BadProcessor(String),
    /// Two blocks for one CPU.
    #[error("processor {0} appears twice")]
    DuplicateProcessor(usize),
    /// A field given twice in one processor's block.
    #[error("processor {cpu} gives '{field}' twice")]
    DuplicateField { cpu: usize, field: &'static str },
    /// A field whose value is not a number of its width.
    #[error("processor {cpu}: '{field} : {value}' is not a {what}")]
    BadField {
        cpu: usize,
        field: &'static str,
        value: String,
        what: &'static str,
    },
    /// A processor's block lacks a field others have.
    #[error("processor {cpu} has no '{field}' line")]
    MissingField { cpu: usize, field: &'static str },
}

/// The MIDR fields `/proc/cpuinfo` gives per processor, in the order of
/// the register (implementer, variant, part, revision), with the largest
/// value each may hold.
const MIDR_FIELDS: [(&str, u32); 4] = [
    ("CPU implementer", 0xff),
    ("CPU variant", 0xf),
    ("CPU part", 0xfff),
    ("CPU revision", 0xf),
];

/// Each processor's MIDR as the arm64 (and 32-bit Arm, since Linux 3.8)
/// kernel prints it in `/proc/cpuinfo`: one block per online CPU,
/// `processor : N` then `CPU implementer : 0x41`, `CPU variant : 0x1`,
/// `CPU part : 0xd05`, `CPU revision : 0` (and `CPU architecture: 8`,
/// which is not the register's field), blocks separated by blank lines.
/// The value is rebuilt as `midr_el1` holds it: implementer << 24 |
/// variant << 20 | 0xf << 16 (the "CPUID scheme" architecture of every
/// ARMv7 and ARMv8 core) | part << 4 | revision, so the MIDR path of kind
/// discovery serves both sources.
///
/// `Ok(None)`: no processor block names a `CPU implementer` (x86, POWER,
/// RISC-V, or old 32-bit Arm kernels that print the boot CPU's identity
/// once, after the blocks, for no processor in particular: such lines are
/// ignored). `Err`: some block has the fields and another lacks one, a
/// value is garbled, or a processor or field repeats.
pub fn parse_midrs(text: &str) -> Result<Option<BTreeMap<usize, u64>>, MidrError> {
    // (cpu, fields by MIDR_FIELDS index) per block, in file order.
    let mut blocks: Vec<(usize, [Option<u32>; 4])> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            open = false;
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "processor" {
            let cpu = parse_decimal(value)
                .and_then(|v| usize::try_from(v).ok())
                .filter(|&c| c < MAX_CPU)
                .ok_or_else(|| MidrError::BadProcessor(shorten(value)))?;
            if blocks.iter().any(|(c, _)| *c == cpu) {
                return Err(MidrError::DuplicateProcessor(cpu));
            }
            blocks.push((cpu, [None; 4]));
            open = true;
            continue;
        }
        let Some(i) = MIDR_FIELDS.iter().position(|(name, _)| *name == key) else {
            continue;
        };
        if !open {
            continue;
        }
        let (cpu, fields) = blocks.last_mut().expect("an open block exists");
        let (field, max) = MIDR_FIELDS[i];
        if fields[i].is_some() {
            return Err(MidrError::DuplicateField { cpu: *cpu, field });
        }
        // The kernel prints the revision in decimal, the others in hex.
        let (v, what) = if field == "CPU revision" {
            (parse_decimal(value), "decimal number up to 15")
        } else {
            (
                parse_hex(value),
                match max {
                    0xff => "hex number up to 0xff",
                    0xf => "hex number up to 0xf",
                    _ => "hex number up to 0xfff",
                },
            )
        };
        match v.filter(|&v| v <= u64::from(max)) {
            Some(v) => fields[i] = Some(v as u32),
            None => {
                return Err(MidrError::BadField {
                    cpu: *cpu,
                    field,
                    value: shorten(value),
                    what,
                })
            }
        }
    }
    if !blocks.iter().any(|(_, f)| f.iter().any(Option::is_some)) {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    for (cpu, f) in blocks {
        let get = |i: usize| {
            f[i].ok_or(MidrError::MissingField {
                cpu,
                field: MIDR_FIELDS[i].0,
            })
        };
        let (implementer, variant, part, revision) = (get(0)?, get(1)?, get(2)?, get(3)?);
        let midr = u64::from(implementer) << 24
            | u64::from(variant) << 20
            | 0xf << 16
            | u64::from(part) << 4
            | u64::from(revision);
        out.insert(cpu, midr);
    }
    Ok(Some(out))
}

/// Highest CPU number a `processor` line may name (the kernel's NR_CPUS
/// limit is 8192 on arm64; a little room beyond it).
const MAX_CPU: usize = 1 << 16;

fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_hex(s: &str) -> Option<u64> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}
