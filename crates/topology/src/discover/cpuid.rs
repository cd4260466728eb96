//! Core types from CPUID, on the live machine only: x86 hybrid (Intel)
//! from leaf 0x1A, AMD heterogeneous parts (Zen 5 + Zen 5c, Zen 4 + Zen 4c)
//! from leaf 0x80000026.
//!
//! Used when the kernel does not expose the `cpu_core`/`cpu_atom` PMU lists
//! (old kernels, some VMs, every AMD part). CPUID answers for the CPU it
//! runs on, so a short-lived helper thread pins itself to each CPU in turn:
//! the caller's own affinity is never touched, and the thread's affinity
//! dies with it. Cheap (one migration per CPU) and only attempted when
//! CPUID says the processor is hybrid (leaf 7 EDX bit 15) or heterogeneous
//! (AMD: leaf 0x80000021 EAX bit 30). CPUs the process may not run on stay
//! unknown.

use pinsight_cpuset::CpuSet;
use pinsight_model::CoreType;

/// The Zen generation ("Zen5"), if known, and the core type per CPU.
pub(super) type AmdCoreTypes = (Option<&'static str>, Vec<(usize, CoreType)>);

/// Core type per CPU, or `None` when the processor is not hybrid, CPUID is
/// unavailable, or no CPU could be queried.
#[cfg(target_arch = "x86_64")]
pub(super) fn hybrid_core_types(cpus: &CpuSet) -> Option<Vec<(usize, CoreType)>> {
    use std::arch::x86_64::__cpuid_count;

    #[allow(unused_unsafe)]
    let (max_leaf, hybrid) = unsafe {
        let max_leaf = __cpuid_count(0, 0).eax;
        let hybrid = max_leaf >= 7 && (__cpuid_count(7, 0).edx >> 15) & 1 == 1;
        (max_leaf, hybrid)
    };
    if !hybrid || max_leaf < 0x1a {
        return None;
    }
    on_each_cpu(cpus, || {
        // SAFETY: CPUID is available on every x86_64 CPU (safe since Rust
        // 1.87; the block is kept for older compilers).
        #[allow(unused_unsafe)]
        let eax = unsafe { __cpuid_count(0x1a, 0).eax };
        match eax >> 24 {
            0x40 => Some(CoreType::Core),
            0x20 => Some(CoreType::Atom),
            _ => None,
        }
    })
}

/// AMD heterogeneous parts: the core type of each CPU from CPUID leaf
/// 0x80000026 (sub-leaf 0) EBX, laid out as in Linux's
/// `cpuid_0x80000026_ebx` (AMD APM vol. 3): bits 31:28 core type (0 =
/// performance, 1 = efficiency), 27:24 native model id, 23:16 power
/// efficiency ranking, 15:0 number of logical processors. Performance
/// cores are reported as [`CoreType::Core`], efficiency cores as
/// [`CoreType::Atom`] (the model's names for "performance" and
/// "efficiency"). Also returns the Zen generation from the family (0x19 =
/// Zen 4, 0x1A = Zen 5) so the kinds can be named "Zen5"/"Zen5c".
#[cfg(target_arch = "x86_64")]
pub(super) fn amd_core_types(cpus: &CpuSet) -> Option<AmdCoreTypes> {
    use std::arch::x86_64::__cpuid_count;

    // SAFETY: as above.
    #[allow(unused_unsafe)]
    let (amd, max_ext, family, hetero) = unsafe {
        let l0 = __cpuid_count(0, 0);
        // "AuthenticAMD" in EBX, EDX, ECX.
        let amd = l0.ebx == 0x6874_7541 && l0.edx == 0x6974_6e65 && l0.ecx == 0x444d_4163;
        let max_ext = __cpuid_count(0x8000_0000, 0).eax;
        let f = __cpuid_count(1, 0).eax;
        let base = (f >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((f >> 20) & 0xff)
        } else {
            base
        };
        let hetero = max_ext >= 0x8000_0021 && (__cpuid_count(0x8000_0021, 0).eax >> 30) & 1 == 1;
        (amd, max_ext, family, hetero)
    };
    if !amd || !hetero || max_ext < 0x8000_0026 {
        return None;
    }
    let types = on_each_cpu(cpus, || {
        // SAFETY: as above; the leaf exists (checked against max_ext).
        #[allow(unused_unsafe)]
        let ebx = unsafe { __cpuid_count(0x8000_0026, 0).ebx };
        amd_core_type(ebx)
    })?;
    Some((zen_generation(family), types))
}

/// The core type in CPUID 0x80000026 EBX (bits 31:28).
pub(super) fn amd_core_type(ebx: u32) -> Option<CoreType> {
    match ebx >> 28 {
        0 => Some(CoreType::Core),
        1 => Some(CoreType::Atom),
        _ => None,
    }
}

/// Zen generation of an AMD family with heterogeneous parts.
pub(super) fn zen_generation(family: u32) -> Option<&'static str> {
    match family {
        0x19 => Some("Zen4"),
        0x1a => Some("Zen5"),
        _ => None,
    }
}

/// Runs `query` pinned to each CPU of `cpus` in a helper thread; `None`
/// when no CPU answered.
#[cfg(target_arch = "x86_64")]
fn on_each_cpu(cpus: &CpuSet, query: fn() -> Option<CoreType>) -> Option<Vec<(usize, CoreType)>> {
    // Any CPU id: pinsight-sys sizes the mask to the set (no 1024 limit).
    let cpus: Vec<usize> = cpus.iter().collect();
    let handle = std::thread::Builder::new()
        .name("pinsight-cpuid".into())
        .spawn(move || {
            let mut out = Vec::new();
            for c in cpus {
                // Affects this helper thread only.
                if pinsight_sys::affinity::pin_current_thread(c).is_err() {
                    continue;
                }
                if let Some(t) = query() {
                    out.push((c, t));
                }
            }
            out
        })
        .ok()?;
    let types = handle.join().ok()?;
    if types.is_empty() {
        None
    } else {
        Some(types)
    }
}

/// Not an x86_64 build: no CPUID.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn hybrid_core_types(_cpus: &CpuSet) -> Option<Vec<(usize, CoreType)>> {
    None
}

/// Not an x86_64 build: no CPUID.
#[cfg(not(target_arch = "x86_64"))]
pub(super) fn amd_core_types(_cpus: &CpuSet) -> Option<AmdCoreTypes> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_leaf_0x80000026_ebx_fields() {
        // Zen 5c efficiency core: type 1, model id 0, ranking 0x80, 2 CPUs.
        assert_eq!(amd_core_type(0x1080_0002), Some(CoreType::Atom));
        assert_eq!(amd_core_type(0x00ff_0002), Some(CoreType::Core));
        assert_eq!(amd_core_type(0xf000_0000), None);
        assert_eq!(zen_generation(0x1a), Some("Zen5"));
        assert_eq!(zen_generation(0x19), Some("Zen4"));
        assert_eq!(zen_generation(0x17), None);
    }

    /// Live: querying every CPU leaves the caller's affinity alone, and
    /// whatever CPUID answers covers only CPUs that were asked about.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn amd_query_keeps_the_callers_affinity() {
        let tid = pinsight_sys::affinity::gettid();
        let before = pinsight_sys::affinity::get_affinity(tid).unwrap();
        let got = amd_core_types(&before);
        assert_eq!(pinsight_sys::affinity::get_affinity(tid).unwrap(), before);
        if let Some((_, types)) = got {
            assert!(types.iter().all(|(c, _)| before.contains(*c)));
        }
    }
}
