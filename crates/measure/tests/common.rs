//! Set-up shared by the test modules, the SF bench and pinsight-sched's
//! counter_sf tests (which include this file by path).

use pinsight_cpuset::CpuSet;
use pinsight_measure::sf::{KindPmu, SfPmus};
use pinsight_sched_model::Kind as SfKind;

/// Two kind PMUs as an x86 hybrid machine names them: `cpu_core` (type 4)
/// on CPU `big`, `cpu_atom` (type 10) on CPU `small`; each kind is named
/// after its PMU ("cpu_core kind").
pub fn two_kind_pmus(big: usize, small: usize) -> SfPmus {
    let pmu = |name: &str, ty, kind, cpu| KindPmu {
        pmu: name.into(),
        type_id: ty,
        kind,
        kind_name: format!("{name} kind"),
        cpus: CpuSet::single(cpu),
    };
    SfPmus {
        pmus: vec![
            pmu("cpu_core", 4, SfKind::Big, big),
            pmu("cpu_atom", 10, SfKind::Small, small),
        ],
        big: CpuSet::single(big),
        small: CpuSet::single(small),
    }
}
