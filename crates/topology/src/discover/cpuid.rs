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
    let cpus: Vec<usize> = cpus
        .iter()
        .filter(|&c| c < libc::CPU_SETSIZE as usize)
        .collect();
    let handle = std::thread::Builder::new()
        .name("pinsight-cpuid".into())
        .spawn(move || {
            let mut out = Vec::new();
            for c in cpus {
                // SAFETY: cpu_set_t is plain data; CPU_SET is bounded by the
                // filter above; sched_setaffinity(0) affects this thread only.
                #[allow(unused_unsafe)]
                let eax = unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(c, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
                    {
                        continue;
                    }
                    __cpuid_count(0x1a, 0).eax
                };
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
