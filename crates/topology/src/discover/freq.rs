//! Per-CPU performance facts: maximum and base frequency (cpufreq), AMD's
//! `amd_pstate` preferred-core ranking and highest performance,
//! `cpu_capacity`, ACPI CPPC levels, ARM `midr_el1` (else each processor's
//! MIDR fields in `/proc/cpuinfo`), and the core type
//! (x86 hybrid: the `cpu_core`/`cpu_atom`/`cpu_lowpower` PMU lists, or
//! CPUID leaf 0x1A on the live machine; AMD heterogeneous parts: CPUID
//! leaf 0x80000026 on the live machine).
//!
//! Every value is keyed by the CPU's own number — never by its position in a
//! list of online CPUs (hwloc reads `cpu_capacity` by position and, with
//! low-numbered CPUs offline, swaps an ARM hybrid's big and little cores).
//! A value missing on some CPUs stays missing there (`None`), never zero.

use super::cpus::{Layout, CPU_DIR};
use super::reader::{shorten, Reader};
use pinsight_cpuset::CpuSet;
use pinsight_model::{CoreType, Cppc, KindSource};
use std::collections::BTreeMap;

/// What discovery knows about one online CPU's performance and identity.
#[derive(Clone, Debug, Default)]
pub(super) struct Perf {
    pub capacity: Option<u32>,
    pub max_mhz: Option<u32>,
    pub base_mhz: Option<u32>,
    pub cppc: Option<Cppc>,
    pub core_type: Option<CoreType>,
    pub midr: Option<u64>,
    /// `cpufreq/amd_pstate_prefcore_ranking` (a ranking, not a capacity).
    pub amd_prefcore_ranking: Option<u32>,
    /// `cpufreq/amd_pstate_highest_perf` (read as a ranking).
    pub amd_highest_perf: Option<u32>,
}

/// Performance facts by CPU number, plus where core types came from.
pub(super) struct PerfMap {
    pub by_cpu: BTreeMap<usize, Perf>,
    pub core_type_source: Option<KindSource>,
    /// AMD heterogeneous part seen through CPUID leaf 0x80000026: the Zen
    /// generation ("Zen5"), so kinds are named "Zen5"/"Zen5c".
    pub amd_zen: Option<&'static str>,
    /// The MIDRs came from `/proc/cpuinfo` (no online CPU has a readable
    /// `regs/identification/midr_el1`), not from sysfs.
    pub midr_from_cpuinfo: bool,
}

impl PerfMap {
    /// No fact read: every present CPU with nothing known (discovery
    /// without kinds, [`crate::Needs::kinds`]).
    pub fn unread(layout: &Layout) -> PerfMap {
        PerfMap {
            by_cpu: layout
                .present
                .iter()
                .map(|c| (c, Perf::default()))
                .collect(),
            core_type_source: None,
            amd_zen: None,
            midr_from_cpuinfo: false,
        }
    }

    pub fn get(&self, cpu: usize) -> Option<&Perf> {
        self.by_cpu.get(&cpu)
    }
}

/// The x86 hybrid PMU lists and the core type each names.
const HYBRID_PMUS: &[(&str, CoreType)] = &[
    ("/sys/devices/cpu_core/cpus", CoreType::Core),
    ("/sys/devices/cpu_atom/cpus", CoreType::Atom),
    ("/sys/devices/cpu_lowpower/cpus", CoreType::LowPower),
];

/// Reads the performance facts of every present CPU (offline ones keep
/// what their files say: it is still true of the silicon). `cpuinfo` is
/// the text of `/proc/cpuinfo`, if read: the MIDRs come from it when no
/// online CPU has one in sysfs.
pub(super) fn discover_perf(r: &mut Reader, layout: &Layout, cpuinfo: Option<&str>) -> PerfMap {
    let mut by_cpu: BTreeMap<usize, Perf> = layout
        .present
        .iter()
        .map(|c| (c, Perf::default()))
        .collect();

    read_cpufreq(r, layout, &mut by_cpu);

    for (&c, p) in by_cpu.iter_mut() {
        let base = format!("{CPU_DIR}/cpu{c}");
        if layout.has(c, "cpu_capacity") {
            let path = format!("{base}/cpu_capacity");
            p.capacity = r
                .number(&path, "left the capacity unknown")
                .and_then(|v| u32::try_from(v).ok());
            if p.capacity == Some(0) {
                r.warn(&path, "capacity 0", "left the capacity unknown");
                p.capacity = None;
            }
        }
        if layout.has(c, "acpi_cppc") {
            p.cppc = read_cppc(r, &format!("{base}/acpi_cppc"));
            if p.base_mhz.is_none() {
                // Model doc: base frequency is `base_frequency`, else CPPC's nominal.
                p.base_mhz = p.cppc.as_ref().and_then(|c| c.nominal_freq_mhz);
            }
        }
        if layout.has(c, "regs") {
            let path = format!("{base}/regs/identification/midr_el1");
            if let Some(text) = r.text(&path) {
                let t = text.trim();
                let hex = t
                    .strip_prefix("0x")
                    .or_else(|| t.strip_prefix("0X"))
                    .unwrap_or(t);
                match u64::from_str_radix(hex, 16) {
                    Ok(v) if !hex.starts_with('+') => p.midr = Some(v),
                    _ => r.warn(
                        &path,
                        format_args!("'{}' is not a hex MIDR", shorten(t)),
                        "left the core identity unknown",
                    ),
                }
            }
        }
    }

    let midr_from_cpuinfo = !layout
        .online
        .iter()
        .any(|c| by_cpu.get(&c).is_some_and(|p| p.midr.is_some()))
        && cpuinfo.is_some_and(|text| midrs_from_cpuinfo(r, layout, text, &mut by_cpu));

    let mut core_type_source = None;
    for (path, ty) in HYBRID_PMUS {
        if let Some(set) = r.cpulist(path, "ignored this hybrid core list") {
            core_type_source = Some(KindSource::HybridPmu);
            for c in set.iter() {
                if let Some(p) = by_cpu.get_mut(&c) {
                    p.core_type = Some(*ty);
                }
            }
        }
    }
    let mut amd_zen = None;
    if core_type_source.is_none() && r.fs.is_live() {
        let cpus: CpuSet = layout.online.clone();
        let found = super::cpuid::hybrid_core_types(&cpus).or_else(|| {
            let (zen, types) = super::cpuid::amd_core_types(&cpus)?;
            amd_zen = zen;
            Some(types)
        });
        if let Some(types) = found {
            core_type_source = Some(KindSource::Cpuid);
            for (c, ty) in types {
                if let Some(p) = by_cpu.get_mut(&c) {
                    p.core_type = Some(ty);
                }
            }
        }
    }
    PerfMap {
        by_cpu,
        core_type_source,
        amd_zen,
        midr_from_cpuinfo,
    }
}

/// Gives every online CPU the MIDR its `/proc/cpuinfo` block describes
/// (lscpu and pytorch/cpuinfo read it there too: kernels built without
/// the `regs/identification` directory, Android vendor kernels among
/// them, still print it). All or nothing: a file whose blocks are
/// garbled, or do not describe exactly the online CPUs, leaves every
/// identity unknown with a warning (kinds then come from capacity or
/// clock, as without it). True when the MIDRs were taken.
fn midrs_from_cpuinfo(
    r: &mut Reader,
    layout: &Layout,
    text: &str,
    by_cpu: &mut BTreeMap<usize, Perf>,
) -> bool {
    const PATH: &str = "/proc/cpuinfo";
    const ACTION: &str = "left the core identity unknown (no regs/identification/midr_el1 either)";
    let midrs = match super::procinfo::parse_midrs(text) {
        Ok(Some(m)) => m,
        Ok(None) => return false,
        Err(e) => {
            r.warn(PATH, e, ACTION);
            return false;
        }
    };
    let described: CpuSet = midrs.keys().copied().collect();
    if described != layout.online {
        r.warn(
            PATH,
            format_args!(
                "describes processors {described} but CPUs {} are online",
                layout.online
            ),
            ACTION,
        );
        return false;
    }
    for (c, m) in midrs {
        if let Some(p) = by_cpu.get_mut(&c) {
            p.midr = Some(m);
        }
    }
    true
}

/// cpufreq: first the shared `cpufreq/policyN` directories (one read per
/// policy, assigned to the CPUs of `related_cpus` that have a `cpufreq`
/// entry), then per-CPU `cpuN/cpufreq/` for the CPUs no policy covered.
fn read_cpufreq(r: &mut Reader, layout: &Layout, by_cpu: &mut BTreeMap<usize, Perf>) {
    let mut done = CpuSet::new();
    let policy_dir = format!("{CPU_DIR}/cpufreq");
    for name in r.list(&policy_dir) {
        if !name
            .strip_prefix("policy")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let dir = format!("{policy_dir}/{name}");
        let Some(cpus) = read_cpu_words(r, &format!("{dir}/related_cpus"))
            .or_else(|| read_cpu_words(r, &format!("{dir}/affected_cpus")))
        else {
            continue;
        };
        let f = read_freqs(r, &dir);
        for c in cpus.iter() {
            if !layout.has(c, "cpufreq") || done.contains(c) {
                continue;
            }
            if let Some(p) = by_cpu.get_mut(&c) {
                f.apply(p);
                done.insert(c);
            }
        }
    }
    for (&c, p) in by_cpu.iter_mut() {
        if done.contains(c) || !layout.has(c, "cpufreq") {
            continue;
        }
        read_freqs(r, &format!("{CPU_DIR}/cpu{c}/cpufreq")).apply(p);
    }
}

/// What one cpufreq directory says.
struct Freqs {
    max_mhz: Option<u32>,
    base_mhz: Option<u32>,
    prefcore_ranking: Option<u32>,
    highest_perf: Option<u32>,
}

impl Freqs {
    fn apply(&self, p: &mut Perf) {
        p.max_mhz = self.max_mhz;
        p.base_mhz = self.base_mhz;
        p.amd_prefcore_ranking = self.prefcore_ranking;
        p.amd_highest_perf = self.highest_perf;
    }
}

/// `cpuinfo_max_freq`, `base_frequency` (MHz) and, with the `amd_pstate`
/// driver, `amd_pstate_prefcore_ranking` and `amd_pstate_highest_perf` of
/// a cpufreq directory.
fn read_freqs(r: &mut Reader, dir: &str) -> Freqs {
    let mut khz = |name: &str| {
        let v = positive(
            r,
            &format!("{dir}/{name}"),
            "frequency",
            "left the frequency unknown",
        )?;
        u32::try_from(v / 1000).ok()
    };
    let max_mhz = khz("cpuinfo_max_freq");
    let base_mhz = khz("base_frequency");
    // Absent unless the driver is amd_pstate (one failed open each).
    let mut level = |name: &str| {
        let action = "left this AMD ranking unknown";
        let v = positive(r, &format!("{dir}/{name}"), "ranking", action)?;
        u32::try_from(v).ok()
    };
    let prefcore_ranking = level("amd_pstate_prefcore_ranking");
    let highest_perf = level("amd_pstate_highest_perf");
    Freqs {
        max_mhz,
        base_mhz,
        prefcore_ranking,
        highest_perf,
    }
}

/// The number in `path` when it is above 0; a 0 is warned about as
/// "`what` 0" and, like garbage, left unknown (`action`).
fn positive(r: &mut Reader, path: &str, what: &str, action: &str) -> Option<u64> {
    let v = r.number(path, action)?;
    if v == 0 {
        r.warn(path, format_args!("{what} 0"), action);
        return None;
    }
    Some(v)
}

/// `related_cpus`/`affected_cpus`: CPU numbers separated by spaces (some
/// kernels print a cpulist instead; both are accepted).
fn read_cpu_words(r: &mut Reader, path: &str) -> Option<CpuSet> {
    let text = r.text(path)?;
    let mut set = CpuSet::new();
    for w in text.split_whitespace() {
        match CpuSet::parse_list(w) {
            Ok(s) => set.union_with(&s),
            Err(e) => {
                r.warn(path, e, "ignored this cpufreq policy's CPU list");
                return None;
            }
        }
    }
    Some(set)
}

fn read_cppc(r: &mut Reader, dir: &str) -> Option<Cppc> {
    let mut get = |name: &str| {
        r.number(&format!("{dir}/{name}"), "left this CPPC value unknown")
            .and_then(|v| u32::try_from(v).ok())
    };
    let cppc = Cppc {
        highest_perf: get("highest_perf"),
        nominal_perf: get("nominal_perf"),
        lowest_perf: get("lowest_perf"),
        nominal_freq_mhz: get("nominal_freq").filter(|&f| f > 0),
    };
    if cppc.highest_perf.is_none()
        && cppc.nominal_perf.is_none()
        && cppc.lowest_perf.is_none()
        && cppc.nominal_freq_mhz.is_none()
    {
        None
    } else {
        Some(cppc)
    }
}
