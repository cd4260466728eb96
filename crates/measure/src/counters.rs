//! Which perf counters to open (a pure plan from sysfs), and what their
//! readings mean (pure derivation: scaling, sums, IPC, GHz).
//!
//! Hybrid machines (Intel P/E cores, some ARM) register one core PMU per
//! core type (`cpu_core`, `cpu_atom`, `armv8_cortex_*`). A generic hardware
//! event opened without naming a PMU counts on one of them only, so we open
//! each hardware event once per core PMU using the kernel's extended type
//! encoding (include/uapi/linux/perf_event.h, Linux 5.13+):
//! `attr.type = PERF_TYPE_HARDWARE`, `attr.config = (pmu_type << 32) | event`,
//! and report each PMU separately and summed.

use crate::error::IoError;
use crate::metric::Metric;
use crate::sys::perf::{self, Reading};
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};

/// The kernel's registry of PMUs (each a symlink into /sys/devices).
const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// A core PMU: one per core type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorePmu {
    /// sysfs name: `cpu` (x86, one core type), `cpu_core`, `cpu_atom`, `armv8_pmuv3_0`, ...
    pub name: String,
    /// Its dynamic PMU type number (`.../<name>/type`).
    pub type_id: u32,
}

/// The events pinsight counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    TaskClock,
    CpuMigrations,
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
}

impl Event {
    /// The software events (always attempted). Context switches and page
    /// faults are not among them: they come from the reaped run's rusage
    /// ([`Usage`]), which counts them without a counter. perf counts
    /// those two through its software-event hooks, each behind a static
    /// key the kernel patches in when the first such counter opens and
    /// out when the last closes (code patched on all CPUs with
    /// inter-processor interrupts: 0.1 to 0.8 ms each way in a VM), and
    /// every inherited counter is copied into each child at its fork and
    /// folded back at its exit.
    pub const SOFTWARE: [Event; 2] = [Event::TaskClock, Event::CpuMigrations];
    /// The hardware events (attempted once per core PMU).
    pub const HARDWARE: [Event; 4] = [
        Event::Cycles,
        Event::Instructions,
        Event::CacheReferences,
        Event::CacheMisses,
    ];

    /// perf's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            Event::TaskClock => "task-clock",
            Event::CpuMigrations => "cpu-migrations",
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::CacheReferences => "cache-references",
            Event::CacheMisses => "cache-misses",
        }
    }

    fn id(self) -> u64 {
        match self {
            Event::TaskClock => perf::PERF_COUNT_SW_TASK_CLOCK,
            Event::CpuMigrations => perf::PERF_COUNT_SW_CPU_MIGRATIONS,
            Event::Cycles => perf::PERF_COUNT_HW_CPU_CYCLES,
            Event::Instructions => perf::PERF_COUNT_HW_INSTRUCTIONS,
            Event::CacheReferences => perf::PERF_COUNT_HW_CACHE_REFERENCES,
            Event::CacheMisses => perf::PERF_COUNT_HW_CACHE_MISSES,
        }
    }

    fn is_hardware(self) -> bool {
        Event::HARDWARE.contains(&self)
    }
}

/// One counter to open: the event, its PMU (hardware only) and the exact
/// `perf_event_attr` type/config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub event: Event,
    pub pmu: Option<String>,
    pub attr_type: u32,
    pub attr_config: u64,
}

impl PlannedEvent {
    /// `cycles`, or `cpu_core/cycles` on hybrid machines (perf's spelling).
    pub fn label(&self, hybrid: bool) -> String {
        match (&self.pmu, hybrid) {
            (Some(p), true) => format!("{p}/{}", self.event.name()),
            _ => self.event.name().to_string(),
        }
    }
}

/// Everything to open, and why hardware is missing if it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventPlan {
    pub events: Vec<PlannedEvent>,
    /// More than one core PMU: hardware events are per core type.
    pub hybrid: bool,
    /// Set when no hardware events are planned.
    pub hardware_unavailable: Option<String>,
}

/// Why one planned counter has no reading.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CounterError {
    /// The probe could not open it on this process (`hardware`: a PMU
    /// event; `paranoid`: `perf_event_paranoid` when known).
    #[error("{}", crate::run::describe_open_error(label, *hardware, source.io(), *paranoid))]
    Open {
        label: String,
        hardware: bool,
        source: IoError,
        paranoid: Option<i64>,
    },
    /// Opened on the child but reading it failed.
    #[error("{label}: read failed: {source}")]
    Read { label: String, source: IoError },
    /// Opening it on the child failed.
    #[error("{label}: perf_event_open on the child failed: {source}")]
    Attach { label: String, source: IoError },
    /// Never opened (the spawner thread could not open it).
    #[error("not opened")]
    NotOpened,
}

/// Why hardware counters cannot be counted here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CountersError {
    /// No core PMU under `dir`; `found` lists what is there.
    #[error(
        "no hardware PMU: no core PMU (cpu, cpu_core, cpu_atom, armv*) in {dir} (found: {}); \
         VMs often expose none",
        if found.is_empty() { "none".to_string() } else { found.join(", ") }
    )]
    NoCorePmu { dir: String, found: Vec<String> },
}

/// The core PMUs the kernel registered, ordered by type number (so
/// `cpu_core` comes before `cpu_atom`, as perf lists them). Err with the
/// reason when there is none (VMs without a virtual PMU, containers).
///
/// A PMU is a core PMU when named `cpu`, `cpu_*` (x86 hybrid) or `cpum_cf`
/// (s390), or when it has a `cpus` file (ARM core PMUs; uncore PMUs have
/// `cpumask` instead) — the rule the perf tool uses.
pub fn discover_core_pmus(fs: &FsRoot) -> Result<Vec<CorePmu>, CountersError> {
    let mut dir = EVENT_SOURCES;
    let mut names = fs.list_dir(dir);
    if names.is_empty() {
        // Older dumps record /sys/devices only.
        dir = "/sys/devices";
        names = fs.list_dir(dir);
    }
    let mut pmus: Vec<CorePmu> = names
        .iter()
        .filter(|n| {
            n.as_str() == "cpu"
                || n.starts_with("cpu_")
                || n.as_str() == "cpum_cf"
                || fs.exists(format!("{dir}/{n}/cpus"))
        })
        .filter_map(|n| {
            let t = fs.read_u64(format!("{dir}/{n}/type"))?;
            Some(CorePmu {
                name: n.clone(),
                type_id: u32::try_from(t).ok()?,
            })
        })
        .collect();
    pmus.sort_by_key(|p| p.type_id);
    if pmus.is_empty() {
        return Err(CountersError::NoCorePmu {
            dir: EVENT_SOURCES.to_string(),
            found: fs.list_dir(EVENT_SOURCES),
        });
    }
    Ok(pmus)
}

/// The counters to open for `pmus` (from [`discover_core_pmus`]). Pure.
///
/// - software events: `PERF_TYPE_SOFTWARE`, always;
/// - one core PMU: `PERF_TYPE_HARDWARE`, config = generic id (works on every
///   kernel, no extended type needed);
/// - several core PMUs (hybrid): each hardware event once per PMU with
///   `config = (pmu_type << 32) | id`.
pub fn plan(pmus: &Result<Vec<CorePmu>, CountersError>) -> EventPlan {
    let mut events: Vec<PlannedEvent> = Event::SOFTWARE
        .iter()
        .map(|&e| PlannedEvent {
            event: e,
            pmu: None,
            attr_type: perf::PERF_TYPE_SOFTWARE,
            attr_config: e.id(),
        })
        .collect();
    let (hybrid, hardware_unavailable) = match pmus {
        Err(reason) => (false, Some(reason.to_string())),
        Ok(p) if p.is_empty() => (false, Some("no hardware PMU".to_string())),
        Ok(p) => {
            let hybrid = p.len() > 1;
            for pmu in p {
                for &e in &Event::HARDWARE {
                    let config = if hybrid {
                        (u64::from(pmu.type_id) << perf::PERF_PMU_TYPE_SHIFT) | e.id()
                    } else {
                        e.id()
                    };
                    events.push(PlannedEvent {
                        event: e,
                        pmu: Some(pmu.name.clone()),
                        attr_type: perf::PERF_TYPE_HARDWARE,
                        attr_config: config,
                    });
                }
            }
            (hybrid, None)
        }
    };
    EventPlan {
        events,
        hybrid,
        hardware_unavailable,
    }
}

/// Counts of one core PMU (hybrid machines have several).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PmuCounts {
    pub pmu: String,
    pub cycles: Metric,
    pub instructions: Metric,
    pub ipc: Metric,
    pub cache_references: Metric,
    pub cache_misses: Metric,
    /// cycles / time the cycles counter was running: the average frequency
    /// while on this core type.
    pub avg_ghz: Metric,
    /// time_running / time_enabled of this PMU's cycles counter. On hybrid
    /// machines this is (about) the share of the run spent on this core type:
    /// the kernel only runs a PMU's counters while the task is on one of its
    /// CPUs, so these counts are NOT scaled (scaling would extrapolate P-core
    /// counts over E-core time). On single-PMU machines, < 1 means
    /// multiplexing and the counts are scaled.
    pub active_fraction: Metric,
}

/// An event whose counter shared the PMU with others (multiplexing) and was
/// scaled by time_enabled / time_running.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Multiplexed {
    pub event: String,
    /// time_running / time_enabled (1 = counted all the time).
    pub running_fraction: f64,
}

/// Everything the counters say about one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterMetrics {
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub task_clock_ms: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub context_switches: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub cpu_migrations: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub page_faults: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub cycles: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub instructions: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub ipc: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub cache_references: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub cache_misses: Metric,
    /// cycles / task-clock, as perf stat's "GHz" column.
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub avg_ghz: Metric,
    pub per_pmu: Vec<PmuCounts>,
    pub multiplexed: Vec<Multiplexed>,
}

impl CounterMetrics {
    /// All metrics unavailable for `reason` (counters off or failed).
    pub fn unavailable(reason: &str) -> CounterMetrics {
        let u = || Metric::unavailable(reason);
        CounterMetrics {
            task_clock_ms: u(),
            context_switches: u(),
            cpu_migrations: u(),
            page_faults: u(),
            cycles: u(),
            instructions: u(),
            ipc: u(),
            cache_references: u(),
            cache_misses: u(),
            avg_ghz: u(),
            per_pmu: Vec::new(),
            multiplexed: Vec::new(),
        }
    }
}

/// What the kernel's resource usage of a reaped run says (wait4(2), the
/// figures `/usr/bin/time -v` prints): the context switches (voluntary and
/// involuntary) and page faults (minor and major) of the program and of
/// the children it waited for, counted from its fork (the exec included)
/// on every run, with or without perf counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub context_switches: u64,
    pub page_faults: u64,
}

impl CounterMetrics {
    /// These metrics with the context switches and page faults of `usage`.
    pub fn with_usage(mut self, usage: Usage) -> CounterMetrics {
        self.context_switches = Metric::value(usage.context_switches as f64);
        self.page_faults = Metric::value(usage.page_faults as f64);
        self
    }
}

/// Turns readings into metrics. Pure.
///
/// `readings` holds every planned event with its reading or the reason it
/// has none; `hardware_unavailable` explains absent hardware events.
pub fn derive(
    readings: &[(PlannedEvent, Result<Reading, CounterError>)],
    hybrid: bool,
    hardware_unavailable: Option<&str>,
) -> CounterMetrics {
    let mut multiplexed = Vec::new();
    let mut value_of = |p: &PlannedEvent, r: &Result<Reading, CounterError>| -> Metric {
        let r = match r {
            Ok(r) => r,
            Err(reason) => return Metric::unavailable(reason.to_string()),
        };
        if hybrid && p.event.is_hardware() {
            return Metric::value(r.value as f64);
        }
        scale(r, &p.label(hybrid), &mut multiplexed)
    };
    let mut values = Values {
        events: Vec::new(),
        hardware_unavailable,
    };
    for (p, r) in readings {
        let m = value_of(p, r);
        values.events.push((p.clone(), m, r.as_ref().ok().copied()));
    }
    let task_clock_ns = values.total(Event::TaskClock);
    let cycles = values.total(Event::Cycles);
    let instructions = values.total(Event::Instructions);
    let per_pmu = values
        .pmus()
        .into_iter()
        .map(|name| values.pmu_counts(name))
        .collect();

    CounterMetrics {
        task_clock_ms: task_clock_ns.map(|ns| ns / 1e6),
        context_switches: Metric::unavailable("not counted"),
        cpu_migrations: values.total(Event::CpuMigrations),
        page_faults: Metric::unavailable("not counted"),
        ipc: instructions.ratio(&cycles, "cycles"),
        avg_ghz: cycles.ratio(&task_clock_ns, "task-clock"),
        cycles,
        instructions,
        cache_references: values.total(Event::CacheReferences),
        cache_misses: values.total(Event::CacheMisses),
        per_pmu,
        multiplexed,
    }
}

/// Every planned event's metric (and reading, when it has one), for [`derive`].
struct Values<'a> {
    events: Vec<(PlannedEvent, Metric, Option<Reading>)>,
    /// Why hardware events are absent.
    hardware_unavailable: Option<&'a str>,
}

impl Values<'_> {
    /// Why event `e` has no reading at all.
    fn missing_reason(&self, e: Event) -> String {
        if e.is_hardware() {
            self.hardware_unavailable
                .unwrap_or("not counted")
                .to_string()
        } else {
            "not counted".to_string()
        }
    }

    /// The total of event `e`: software events appear once; hardware
    /// events are summed over PMUs (all must be measured, else the sum
    /// would be a lie).
    fn total(&self, e: Event) -> Metric {
        let ms: Vec<&Metric> = self
            .events
            .iter()
            .filter(|(p, _, _)| p.event == e)
            .map(|(_, m, _)| m)
            .collect();
        if ms.is_empty() {
            return Metric::unavailable(self.missing_reason(e));
        }
        let mut sum = 0.0;
        for m in ms {
            match m {
                Metric::Value(v) => sum += v,
                u => return u.clone(),
            }
        }
        Metric::value(sum)
    }

    /// The PMUs counted, each once, in planned order.
    fn pmus(&self) -> Vec<String> {
        let mut pmus: Vec<String> = Vec::new();
        for (p, _, _) in &self.events {
            if let Some(n) = &p.pmu {
                if !pmus.contains(n) {
                    pmus.push(n.clone());
                }
            }
        }
        pmus
    }

    /// Event `e` on PMU `pmu`: its metric and reading.
    fn on_pmu(&self, e: Event, pmu: &str) -> (Metric, Option<Reading>) {
        self.events
            .iter()
            .find(|(p, _, _)| p.event == e && p.pmu.as_deref() == Some(pmu))
            .map(|(_, m, r)| (m.clone(), *r))
            .unwrap_or_else(|| (Metric::unavailable(self.missing_reason(e)), None))
    }

    /// The counts of PMU `name`.
    fn pmu_counts(&self, name: String) -> PmuCounts {
        let (c, c_reading) = self.on_pmu(Event::Cycles, &name);
        let (i, _) = self.on_pmu(Event::Instructions, &name);
        let (avg_ghz, active_fraction) = match c_reading {
            Some(r) if r.time_enabled_ns > 0 => (
                if r.time_running_ns > 0 {
                    Metric::value(r.value as f64 / r.time_running_ns as f64)
                } else {
                    Metric::unavailable(format!("{name}/cycles never ran"))
                },
                Metric::value(r.time_running_ns as f64 / r.time_enabled_ns as f64),
            ),
            Some(_) => (
                Metric::unavailable("counter never enabled"),
                Metric::unavailable("counter never enabled"),
            ),
            None => (c.clone(), c.clone()),
        };
        PmuCounts {
            ipc: i.ratio(&c, "cycles"),
            cycles: c,
            instructions: i,
            cache_references: self.on_pmu(Event::CacheReferences, &name).0,
            cache_misses: self.on_pmu(Event::CacheMisses, &name).0,
            avg_ghz,
            active_fraction,
            pmu: name,
        }
    }
}

/// value × enabled / running, noting multiplexing; a counter that never
/// ran while enabled has no value (the PMU was fully taken by others).
fn scale(r: &Reading, label: &str, multiplexed: &mut Vec<Multiplexed>) -> Metric {
    if r.time_running_ns >= r.time_enabled_ns || r.time_enabled_ns == 0 {
        return Metric::value(r.value as f64);
    }
    if r.time_running_ns == 0 {
        return Metric::unavailable(format!(
            "{label}: counter never ran (PMU fully multiplexed out by other counters)"
        ));
    }
    let fraction = r.time_running_ns as f64 / r.time_enabled_ns as f64;
    multiplexed.push(Multiplexed {
        event: label.to_string(),
        running_fraction: fraction,
    });
    Metric::value(r.value as f64 / fraction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("sys/bus/event_source/devices");
        fs::create_dir_all(&src).unwrap();
        for (n, t) in [
            ("software", "1"),
            ("tracepoint", "2"),
            ("breakpoint", "5"),
            ("msr", "9"),
        ] {
            fs::create_dir_all(d.path().join("sys/devices").join(n)).unwrap();
            fs::write(d.path().join("sys/devices").join(n).join("type"), t).unwrap();
            std::os::unix::fs::symlink(format!("../../../devices/{n}"), src.join(n)).unwrap();
        }
        d
    }

    fn add_pmu(d: &tempfile::TempDir, name: &str, ty: u32, cpus: Option<&str>) {
        let dev = d.path().join("sys/devices").join(name);
        fs::create_dir_all(&dev).unwrap();
        fs::write(dev.join("type"), format!("{ty}\n")).unwrap();
        if let Some(c) = cpus {
            fs::write(dev.join("cpus"), c).unwrap();
        }
        std::os::unix::fs::symlink(
            format!("../../../devices/{name}"),
            d.path().join("sys/bus/event_source/devices").join(name),
        )
        .unwrap();
    }

    fn hw(plan: &EventPlan) -> Vec<(Option<String>, Event, u32, u64)> {
        plan.events
            .iter()
            .filter(|e| e.event.is_hardware())
            .map(|e| (e.pmu.clone(), e.event, e.attr_type, e.attr_config))
            .collect()
    }

    #[test]
    fn pmu_less_machine_plans_software_only_with_a_reason() {
        let d = tree();
        let fs = FsRoot::at(d.path()).unwrap();
        let pmus = discover_core_pmus(&fs);
        let reason = pmus.clone().unwrap_err().to_string();
        assert!(reason.starts_with("no hardware PMU"), "{reason}");
        assert!(reason.contains("software"), "{reason}");
        let p = plan(&pmus);
        assert_eq!(p.events.len(), Event::SOFTWARE.len());
        assert!(p
            .events
            .iter()
            .all(|e| e.attr_type == perf::PERF_TYPE_SOFTWARE));
        assert!(!p.hybrid);
        assert_eq!(p.hardware_unavailable.as_deref(), Some(reason.as_str()));
        // An empty root (no /sys at all) says so too.
        let empty = tempfile::tempdir().unwrap();
        let e = discover_core_pmus(&FsRoot::at(empty.path()).unwrap()).unwrap_err();
        assert!(matches!(&e, CountersError::NoCorePmu { found, .. } if found.is_empty()));
        assert!(e.to_string().contains("found: none"), "{e}");
    }

    #[test]
    fn single_pmu_uses_plain_generic_events() {
        let d = tree();
        add_pmu(&d, "cpu", 4, None);
        let p = plan(&discover_core_pmus(&FsRoot::at(d.path()).unwrap()));
        assert!(!p.hybrid);
        let cpu = Some("cpu".to_string());
        assert_eq!(
            hw(&p),
            vec![
                (cpu.clone(), Event::Cycles, 0, 0),
                (cpu.clone(), Event::Instructions, 0, 1),
                (cpu.clone(), Event::CacheReferences, 0, 2),
                (cpu, Event::CacheMisses, 0, 3),
            ]
        );
    }

    #[test]
    fn intel_hybrid_opens_each_hardware_event_per_pmu_with_extended_type() {
        let d = tree();
        add_pmu(&d, "cpu_atom", 8, Some("16-31"));
        add_pmu(&d, "cpu_core", 4, Some("0-15"));
        let fs = FsRoot::at(d.path()).unwrap();
        let pmus = discover_core_pmus(&fs).unwrap();
        assert_eq!(
            pmus,
            vec![
                CorePmu {
                    name: "cpu_core".into(),
                    type_id: 4
                },
                CorePmu {
                    name: "cpu_atom".into(),
                    type_id: 8
                }
            ]
        );
        let p = plan(&Ok(pmus));
        assert!(p.hybrid);
        let core = Some("cpu_core".to_string());
        let atom = Some("cpu_atom".to_string());
        assert_eq!(
            hw(&p),
            vec![
                (core.clone(), Event::Cycles, 0, 0x4_0000_0000),
                (core.clone(), Event::Instructions, 0, 0x4_0000_0001),
                (core.clone(), Event::CacheReferences, 0, 0x4_0000_0002),
                (core, Event::CacheMisses, 0, 0x4_0000_0003),
                (atom.clone(), Event::Cycles, 0, 0x8_0000_0000),
                (atom.clone(), Event::Instructions, 0, 0x8_0000_0001),
                (atom.clone(), Event::CacheReferences, 0, 0x8_0000_0002),
                (atom, Event::CacheMisses, 0, 0x8_0000_0003),
            ]
        );
        assert_eq!(
            p.events.iter().filter(|e| !e.event.is_hardware()).count(),
            Event::SOFTWARE.len()
        );
    }

    #[test]
    fn arm_core_pmus_are_found_by_their_cpus_file_and_uncore_ignored() {
        let d = tree();
        add_pmu(&d, "armv8_cortex_a53", 10, Some("0-3"));
        add_pmu(&d, "armv8_cortex_a72", 11, Some("4-5"));
        // An uncore PMU: cpumask, not cpus.
        add_pmu(&d, "arm_dsu_0", 12, None);
        fs::write(d.path().join("sys/devices/arm_dsu_0/cpumask"), "0").unwrap();
        let pmus = discover_core_pmus(&FsRoot::at(d.path()).unwrap()).unwrap();
        let names: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["armv8_cortex_a53", "armv8_cortex_a72"]);
    }

    #[test]
    fn dumps_without_the_bus_directory_fall_back_to_sys_devices() {
        let d = tempfile::tempdir().unwrap();
        for (n, t) in [("cpu_core", 4), ("cpu_atom", 10)] {
            fs::create_dir_all(d.path().join("sys/devices").join(n)).unwrap();
            fs::write(
                d.path().join("sys/devices").join(n).join("type"),
                t.to_string(),
            )
            .unwrap();
        }
        let pmus = discover_core_pmus(&FsRoot::at(d.path()).unwrap()).unwrap();
        assert_eq!(
            pmus[1],
            CorePmu {
                name: "cpu_atom".into(),
                type_id: 10
            }
        );
    }

    fn reading(value: u64, enabled: u64, running: u64) -> Result<Reading, CounterError> {
        Ok(Reading {
            value,
            time_enabled_ns: enabled,
            time_running_ns: running,
        })
    }

    fn find(p: &EventPlan, e: Event, pmu: Option<&str>) -> PlannedEvent {
        p.events
            .iter()
            .find(|x| x.event == e && x.pmu.as_deref() == pmu)
            .unwrap()
            .clone()
    }

    #[test]
    fn derives_sums_ipc_ghz_and_keeps_hybrid_counts_unscaled() {
        let pmus = Ok(vec![
            CorePmu {
                name: "cpu_core".into(),
                type_id: 4,
            },
            CorePmu {
                name: "cpu_atom".into(),
                type_id: 8,
            },
        ]);
        let p = plan(&pmus);
        let busy = CounterError::Read {
            label: "cpu_atom/cache-misses".into(),
            source: std::io::Error::from_raw_os_error(libc::EBUSY).into(),
        };
        let rs = vec![
            (
                find(&p, Event::TaskClock, None),
                reading(1_000_000_000, 1_000_000_000, 1_000_000_000),
            ),
            (find(&p, Event::CpuMigrations, None), reading(3, 1, 1)),
            // 0.75 s on P cores at 5 GHz, 0.25 s on E cores at 3 GHz.
            (
                find(&p, Event::Cycles, Some("cpu_core")),
                reading(3_750_000_000, 1_000_000_000, 750_000_000),
            ),
            (
                find(&p, Event::Instructions, Some("cpu_core")),
                reading(7_500_000_000, 1_000_000_000, 750_000_000),
            ),
            (
                find(&p, Event::CacheReferences, Some("cpu_core")),
                reading(1000, 1, 1),
            ),
            (
                find(&p, Event::CacheMisses, Some("cpu_core")),
                reading(10, 1, 1),
            ),
            (
                find(&p, Event::Cycles, Some("cpu_atom")),
                reading(750_000_000, 1_000_000_000, 250_000_000),
            ),
            (
                find(&p, Event::Instructions, Some("cpu_atom")),
                reading(750_000_000, 1_000_000_000, 250_000_000),
            ),
            (
                find(&p, Event::CacheReferences, Some("cpu_atom")),
                reading(500, 1, 1),
            ),
            (
                find(&p, Event::CacheMisses, Some("cpu_atom")),
                Err(busy.clone()),
            ),
        ];
        let m = derive(&rs, true, None);
        assert_eq!(m.task_clock_ms, Metric::Value(1000.0));
        assert_eq!(m.cpu_migrations, Metric::Value(3.0));
        assert_eq!(m.cycles, Metric::Value(4_500_000_000.0));
        assert_eq!(m.instructions, Metric::Value(8_250_000_000.0));
        assert!((m.ipc.get().unwrap() - 8.25 / 4.5).abs() < 1e-12);
        assert!((m.avg_ghz.get().unwrap() - 4.5).abs() < 1e-12);
        assert_eq!(m.cache_references, Metric::Value(1500.0));
        assert_eq!(m.cache_misses.reason(), Some(busy.to_string().as_str()));
        assert!(busy
            .to_string()
            .starts_with("cpu_atom/cache-misses: read failed: "));
        assert!(m.multiplexed.is_empty());
        assert_eq!(m.per_pmu.len(), 2);
        let core = &m.per_pmu[0];
        assert_eq!(core.pmu, "cpu_core");
        assert_eq!(core.ipc, Metric::Value(2.0));
        assert!((core.avg_ghz.get().unwrap() - 5.0).abs() < 1e-12);
        assert_eq!(core.active_fraction, Metric::Value(0.75));
        let atom = &m.per_pmu[1];
        assert!((atom.avg_ghz.get().unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(atom.cache_misses.reason(), Some(busy.to_string().as_str()));
    }

    #[test]
    fn single_pmu_counts_are_scaled_for_multiplexing_and_reported() {
        let p = plan(&Ok(vec![CorePmu {
            name: "cpu".into(),
            type_id: 4,
        }]));
        let rs = vec![
            (
                find(&p, Event::TaskClock, None),
                reading(2_000_000, 2_000_000, 2_000_000),
            ),
            (
                find(&p, Event::Cycles, Some("cpu")),
                reading(3_000_000, 2_000_000, 1_000_000),
            ),
            (
                find(&p, Event::Instructions, Some("cpu")),
                reading(1, 2_000_000, 0),
            ),
        ];
        let m = derive(&rs, false, None);
        assert_eq!(m.cycles, Metric::Value(6_000_000.0));
        assert_eq!(m.avg_ghz, Metric::Value(3.0));
        assert_eq!(
            m.multiplexed,
            vec![Multiplexed {
                event: "cycles".into(),
                running_fraction: 0.5
            }]
        );
        assert!(m.instructions.reason().unwrap().contains("never ran"));
        assert!(m.ipc.reason().unwrap().contains("never ran"));
        assert_eq!(m.context_switches.reason(), Some("not counted"));
    }

    #[test]
    fn without_pmu_hardware_metrics_carry_the_discovery_reason() {
        let err = CountersError::NoCorePmu {
            dir: "/test".into(),
            found: Vec::new(),
        };
        let p = plan(&Err(err.clone()));
        let rs: Vec<_> = p
            .events
            .iter()
            .map(|e| (e.clone(), reading(5, 1, 1)))
            .collect();
        let m = derive(&rs, false, p.hardware_unavailable.as_deref());
        assert_eq!(m.cpu_migrations, Metric::Value(5.0));
        // Context switches and page faults are the run's rusage, counters
        // or not.
        assert_eq!(m.page_faults.reason(), Some("not counted"));
        let usage = Usage {
            context_switches: 7,
            page_faults: 812,
        };
        let m = m.with_usage(usage);
        assert_eq!(
            (m.context_switches, m.page_faults),
            (Metric::Value(7.0), Metric::Value(812.0))
        );
        let off = CounterMetrics::unavailable("counters off").with_usage(usage);
        assert_eq!(off.page_faults, Metric::Value(812.0));
        assert_eq!(off.task_clock_ms.reason(), Some("counters off"));
        for hwm in [
            &m.cycles,
            &m.instructions,
            &m.ipc,
            &m.cache_misses,
            &m.avg_ghz,
        ] {
            assert_eq!(hwm.reason(), Some(err.to_string().as_str()));
        }
        assert!(m.per_pmu.is_empty());
    }
}
