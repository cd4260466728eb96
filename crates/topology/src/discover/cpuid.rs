//! x86 hybrid core types from CPUID leaf 0x1A, on the live machine only.
//!
//! Used when the kernel does not expose the `cpu_core`/`cpu_atom` PMU lists
//! (old kernels, some VMs). CPUID answers for the CPU it runs on, so a
//! short-lived helper thread pins itself to each CPU in turn: the caller's
//! own affinity is never touched, and the thread's affinity dies with it.
//! Cheap (one migration per CPU) and only attempted when CPUID leaf 7 says
//! the processor is hybrid. CPUs the process may not run on stay unknown.

use crate::{CoreType, CpuSet};

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
                // SAFETY: CPUID is available on every x86_64 CPU (safe
                // since Rust 1.87; the block is kept for older compilers).
                #[allow(unused_unsafe)]
                let eax = unsafe { __cpuid_count(0x1a, 0).eax };
                match eax >> 24 {
                    0x40 => out.push((c, CoreType::Core)),
                    0x20 => out.push((c, CoreType::Atom)),
                    _ => {}
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
