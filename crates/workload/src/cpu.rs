//! Which CPUs a worker actually ran on, sampled with sched_getcpu(3).
//!
//! Sampling (not tracing) is enough to show whether a thread stayed where
//! it was pinned or migrated; sched_getcpu is a vDSO/rseq read, tens of
//! nanoseconds, so workloads sample once per chunk of work.

/// The distinct CPUs seen so far, in ascending order.
#[derive(Debug, Default, Clone)]
pub(crate) struct CpuSeen {
    cpus: Vec<usize>,
    last: Option<usize>,
}

impl CpuSeen {
    /// Records the CPU the calling thread is on right now.
    pub(crate) fn sample(&mut self) {
        let Some(cpu) = pinsight_sys::sched::current_cpu() else {
            return; // unavailable (very old kernel): report nothing rather than a fake CPU
        };
        if self.last == Some(cpu) {
            return;
        }
        self.last = Some(cpu);
        if let Err(at) = self.cpus.binary_search(&cpu) {
            self.cpus.insert(at, cpu);
        }
    }

    pub(crate) fn into_vec(self) -> Vec<usize> {
        self.cpus
    }
}
