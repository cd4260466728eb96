//! The report's speed measurement is `pinsight speed`'s: one
//! [`SpeedSession`] planned alike (only the budget differs), with the one
//! method the session picks for the machine, and said among the report's
//! conditions when that method counts an emulation's time share.

use pinsight_model::Topology;
use pinsight_report::session::speed_session;
use pinsight_speed::{default_mem_bytes, select_cpus, Kernel, SpeedSession};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use std::time::{Duration, Instant};

fn hybrid() -> Topology {
    discover(
        &FsRoot::at(pinsight_testkit::fixtures::hwloc(
            "20em64t-hybrid-1p6c2t+2ca4co1t",
        ))
        .unwrap(),
    )
}

/// `report`'s session and `speed`'s with no flags (every usable CPU,
/// kernels int,fp,mem, the default chase buffer) at the same budget are
/// the same session: same CPUs, slots, passes and method.
#[test]
fn report_plans_the_speed_session_speed_plans() {
    let topo = hybrid();
    let mem = default_mem_bytes(&topo);
    for per_cpu in [Duration::from_millis(100), Duration::from_secs(1)] {
        let report = speed_session(&topo, per_cpu, mem);
        let speed = SpeedSession::new(
            select_cpus(&topo, None, None).unwrap(),
            // `speed --kernels`' default.
            vec![Kernel::Int, Kernel::Fp, Kernel::Mem],
            per_cpu,
            mem,
        );
        assert_eq!(format!("{report:?}"), format!("{speed:?}"));
        assert_eq!(
            (report.cpus(), report.slots(), report.time_share()),
            (speed.cpus(), speed.slots(), speed.time_share())
        );
        assert_eq!(report.cpus(), topo.usable().len());
    }
}

/// The report tests' speed report over 2 s, measured by time share or not.
fn speed_report(topo: &Topology, time_share: bool) -> pinsight_speed::SpeedReport {
    pinsight_speed::SpeedReport {
        elapsed_s: 2.0,
        time_share,
        ..crate::report::speed_report(topo, None)
    }
}

/// Measured by time share (an emulated machine), the report says so in
/// its conditions and JSON; measured as usual, neither mentions it.
#[test]
fn the_report_says_when_speed_counted_an_emulations_time_share() {
    let topo = hybrid();
    for time_share in [true, false] {
        let data = pinsight_report::session::assemble(
            topo.clone(),
            Some(speed_report(&topo, time_share)),
            None,
            vec![],
            "FILE",
            None,
            Duration::from_secs(5),
            Instant::now(),
        )
        .with_conditions(None, vec![]);
        let said = data
            .conditions
            .iter()
            .any(|c| c == &format!("speed: {}", pinsight_speed::TIME_SHARE_NOTE));
        assert_eq!(said, time_share, "{:?}", data.conditions);
        let json = serde_json::to_value(&data).unwrap();
        assert_eq!(
            json["speed"].get("time_share").and_then(|v| v.as_bool()),
            time_share.then_some(true)
        );
        // The same speedup factor either way: the figures are speed's.
        assert!(
            data.suggestions
                .iter()
                .any(|s| s.contains("speedup factor ≈ 2.00")),
            "{:?}",
            data.suggestions
        );
    }
}
