//! What the `/proc` readers of `pinsight load` share in their targets
//! (`proc_schedstat`, `proc_interrupts`): the fuzzed readings analysed on a
//! two-CPU machine between two `/proc/stat` readings, and the check that
//! every share of the load lies in [0, 1] whatever the readings say.

use pinsight_load::report::{analyse, CpuInfo, LoadReport, Machine, Options};
use pinsight_load::sample::Sample;
use pinsight_sys::cpustat::parse_cpu_fields;

/// `before` and `after` (their `/proc/stat` set here: CPU 0 50 ticks
/// busier after, `steal` ticks stolen from it) through `analyse`, every
/// CPU's shares checked.
pub fn analysed(steal: u64, mut before: Sample, mut after: Sample) -> LoadReport {
    let stat = |busy: u64| {
        parse_cpu_fields(&format!(
            "cpu0 {busy} 0 0 100 0 5 5 {steal}\ncpu1 1 0 0 100 0 0 0 0\n"
        ))
    };
    before.stat = stat(10);
    after.stat = stat(60);
    let m = Machine {
        cpus: (0..2)
            .map(|c| {
                let capacity = 0.5 + c as f64 * 0.5;
                CpuInfo::unkinded(c, Some(c), capacity, capacity)
            })
            .collect(),
        capacity_source: "fuzz".into(),
    };
    let r = analyse(&m, &before, &after, Options::default());
    for c in &r.cpus {
        for s in [c.user, c.system, c.irq, c.softirq, c.steal, c.idle, c.busy] {
            assert!(s.is_finite() && (0.0..=1.0).contains(&s), "{c:?}");
        }
    }
    r
}
