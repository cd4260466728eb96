//! Package/core/DRAM/platform energy from RAPL through the powercap sysfs
//! interface (`/sys/class/powercap/intel-rapl:N[:M]`).
//!
//! AMD Zen uses the same `intel-rapl` powercap names (Linux 5.8+: package
//! and core domains). Newer Intel parts may expose `intel-rapl-mmio:N`
//! zones that mirror the MSR package counter; they are used only when no
//! `intel-rapl:` zone exists, so nothing is counted twice.
//!
//! RAPL energy is **system-wide**: `energy_pkg_j` is everything the package
//! consumed during the run, including other processes — like perf stat's
//! `power/energy-pkg/`. Counters are sampled before and after the run, and
//! periodically during long runs so that a wrap-around
//! (`max_energy_range_uj`) is never missed twice.

use crate::metric::Metric;
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};
use std::io;
use std::time::Duration;

const POWERCAP: &str = "/sys/class/powercap";

/// Assumed ceiling for one zone's power, to decide how often to sample so
/// a counter cannot wrap twice between samples.
const MAX_ZONE_POWER_W: f64 = 500.0;

/// What a RAPL zone measures (from its `name` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// `package-N` (or `package-N-die-M`): the whole socket.
    Package,
    /// `core` (PP0): the cores only.
    Core,
    /// `uncore` (PP1): integrated GPU on client parts.
    Uncore,
    /// `dram`: memory.
    Dram,
    /// `psys`: the platform (SoC + more, on some laptops).
    Psys,
}

impl Domain {
    fn from_name(name: &str) -> Option<Domain> {
        match name {
            n if n.starts_with("package-") => Some(Domain::Package),
            "core" => Some(Domain::Core),
            "uncore" => Some(Domain::Uncore),
            "dram" => Some(Domain::Dram),
            "psys" => Some(Domain::Psys),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Domain::Package => "package",
            Domain::Core => "core",
            Domain::Uncore => "uncore",
            Domain::Dram => "dram",
            Domain::Psys => "psys",
        }
    }
}

/// One RAPL zone.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    /// OS path of the zone directory, e.g. `/sys/class/powercap/intel-rapl:0`.
    pub dir: String,
    /// Contents of `name`, e.g. `package-0`.
    pub name: String,
    pub domain: Domain,
    /// `max_energy_range_uj`: `energy_uj` wraps to 0 after this. `None` if
    /// unreadable (a wrap then makes the run's value unavailable).
    pub max_range_uj: Option<u64>,
}

/// The RAPL zones of a machine, or why there are none.
#[derive(Clone, Debug, PartialEq)]
pub struct Rapl {
    pub zones: Vec<Zone>,
    /// Set when no zone was found at all.
    pub unavailable: Option<String>,
}

/// Energy of one run, joules per domain (sum over sockets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergyMetrics {
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub energy_pkg_j: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub energy_core_j: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub energy_dram_j: Metric,
    #[serde(
        default = "Metric::omitted",
        skip_serializing_if = "Metric::is_omitted"
    )]
    pub energy_psys_j: Metric,
}

impl EnergyMetrics {
    /// All domains unavailable for `reason`.
    pub fn unavailable(reason: &str) -> EnergyMetrics {
        EnergyMetrics {
            energy_pkg_j: Metric::unavailable(reason),
            energy_core_j: Metric::unavailable(reason),
            energy_dram_j: Metric::unavailable(reason),
            energy_psys_j: Metric::unavailable(reason),
        }
    }
}

/// Energy consumed between two readings of a counter that wraps to 0 after
/// `max_range_uj`. `None` if it went backwards and the range is unknown.
pub fn delta_uj(before: u64, after: u64, max_range_uj: Option<u64>) -> Option<u64> {
    if after >= before {
        Some(after - before)
    } else {
        // Wrapped once: before → max, then 0 → after.
        max_range_uj.map(|max| max.saturating_sub(before) + after)
    }
}

/// Why `energy_uj` could not be read, in words a user can act on.
pub fn read_error_reason(path: &str, e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::PermissionDenied {
        format!("cannot read {path}: permission denied (root only since Linux 5.10, CVE-2020-8694; run as root or chmod o+r)")
    } else {
        format!("cannot read {path}: {e}")
    }
}

impl Rapl {
    /// Finds the RAPL zones under `fs` (no energy is read yet).
    pub fn discover(fs: &FsRoot) -> Rapl {
        let entries = fs.list_dir(POWERCAP);
        if entries.is_empty() {
            return Rapl {
                zones: Vec::new(),
                unavailable: Some(format!(
                    "no RAPL: {POWERCAP} absent or empty (needs the intel_rapl_msr driver; VMs have none)"
                )),
            };
        }
        let msr: Vec<&String> = entries
            .iter()
            .filter(|e| e.starts_with("intel-rapl:"))
            .collect();
        let chosen = if msr.is_empty() {
            entries
                .iter()
                .filter(|e| e.starts_with("intel-rapl-mmio:"))
                .collect()
        } else {
            msr
        };
        let zones: Vec<Zone> = chosen
            .into_iter()
            .filter_map(|e| {
                let dir = format!("{POWERCAP}/{e}");
                let name = fs.read_opt(format!("{dir}/name"))?;
                let domain = Domain::from_name(name.trim())?;
                let max_range_uj = fs.read_u64(format!("{dir}/max_energy_range_uj"));
                Some(Zone {
                    dir,
                    name: name.trim().to_string(),
                    domain,
                    max_range_uj,
                })
            })
            .collect();
        let unavailable = zones.is_empty().then(|| {
            format!(
                "no RAPL: no intel-rapl zone in {POWERCAP} (found: {})",
                entries.join(", ")
            )
        });
        Rapl { zones, unavailable }
    }

    /// How often to sample during a run so no counter wraps twice between
    /// samples (at up to 500 W per zone), within [10 ms, 60 s].
    pub fn sample_interval(&self) -> Duration {
        let secs = self
            .zones
            .iter()
            .filter_map(|z| z.max_range_uj)
            .map(|max| max as f64 / 1e6 / MAX_ZONE_POWER_W / 2.0)
            .fold(60.0_f64, f64::min);
        Duration::from_secs_f64(secs.clamp(0.01, 60.0))
    }

    /// Reads every zone now: the start of a measurement.
    pub fn start(&self, fs: &FsRoot) -> EnergySession {
        let mut s = EnergySession {
            last: vec![None; self.zones.len()],
            total_uj: vec![0; self.zones.len()],
            error: vec![None; self.zones.len()],
        };
        s.sample(fs, self);
        s
    }

    /// Availability notes for the probe: one line per domain.
    pub fn notes(&self, fs: &FsRoot) -> Vec<String> {
        if let Some(r) = &self.unavailable {
            return vec![format!("energy: {r}")];
        }
        let s = self.start(fs);
        self.zones
            .iter()
            .zip(&s.error)
            .map(|(z, err)| match err {
                None => format!(
                    "energy: {} ({}) from {}/energy_uj",
                    z.domain.label(),
                    z.name,
                    z.dir
                ),
                Some(e) => format!("energy: {} ({}) unavailable: {e}", z.domain.label(), z.name),
            })
            .collect()
    }
}

/// Running accumulation of each zone's energy during one run.
#[derive(Clone, Debug)]
pub struct EnergySession {
    last: Vec<Option<u64>>,
    total_uj: Vec<u128>,
    /// The first error per zone; once set, that zone is unavailable.
    error: Vec<Option<String>>,
}

impl EnergySession {
    /// Reads every zone and adds what was consumed since the last sample.
    pub fn sample(&mut self, fs: &FsRoot, rapl: &Rapl) {
        for (i, z) in rapl.zones.iter().enumerate() {
            if self.error[i].is_some() {
                continue;
            }
            let path = format!("{}/energy_uj", z.dir);
            let now = match fs.read(&path) {
                Ok(t) => match t.trim().parse::<u64>() {
                    Ok(v) => v,
                    Err(_) => {
                        self.error[i] = Some(format!("{path}: not a number: {t:?}"));
                        continue;
                    }
                },
                Err(e) => {
                    self.error[i] = Some(read_error_reason(&path, &e));
                    continue;
                }
            };
            if let Some(before) = self.last[i] {
                match delta_uj(before, now, z.max_range_uj) {
                    Some(d) => self.total_uj[i] += u128::from(d),
                    None => {
                        self.error[i] = Some(format!(
                            "{path} wrapped around and {}/max_energy_range_uj is unreadable",
                            z.dir
                        ))
                    }
                }
            }
            self.last[i] = Some(now);
        }
    }

    /// Takes the final sample and sums zones per domain.
    pub fn finish(mut self, fs: &FsRoot, rapl: &Rapl) -> EnergyMetrics {
        if let Some(r) = &rapl.unavailable {
            return EnergyMetrics::unavailable(r);
        }
        self.sample(fs, rapl);
        let domain = |d: Domain| -> Metric {
            let idx: Vec<usize> = (0..rapl.zones.len())
                .filter(|&i| rapl.zones[i].domain == d)
                .collect();
            if idx.is_empty() {
                let found: Vec<&str> = rapl.zones.iter().map(|z| z.name.as_str()).collect();
                return Metric::unavailable(format!(
                    "no {} RAPL zone (found: {})",
                    d.label(),
                    found.join(", ")
                ));
            }
            let mut uj: u128 = 0;
            for i in idx {
                if let Some(e) = &self.error[i] {
                    return Metric::unavailable(e.clone());
                }
                uj += self.total_uj[i];
            }
            Metric::value(uj as f64 / 1e6)
        };
        EnergyMetrics {
            energy_pkg_j: domain(Domain::Package),
            energy_core_j: domain(Domain::Core),
            energy_dram_j: domain(Domain::Dram),
            energy_psys_j: domain(Domain::Psys),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    const MAX: u64 = 262_143_328_850;

    fn zone(root: &Path, id: &str, name: &str, energy: u64, max: Option<u64>) {
        let d = root.join("sys/class/powercap").join(id);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("name"), format!("{name}\n")).unwrap();
        fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        if let Some(m) = max {
            fs::write(d.join("max_energy_range_uj"), format!("{m}\n")).unwrap();
        }
    }

    fn set(root: &Path, id: &str, energy: u64) {
        fs::write(
            root.join("sys/class/powercap").join(id).join("energy_uj"),
            format!("{energy}\n"),
        )
        .unwrap();
    }

    /// Two sockets, core + dram on socket 0, the control-type directory
    /// (`intel-rapl`, no energy) and an mmio mirror that must be ignored.
    fn machine() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("sys/class/powercap/intel-rapl")).unwrap();
        zone(r, "intel-rapl:0", "package-0", 1_000_000, Some(MAX));
        zone(r, "intel-rapl:0:0", "core", 500_000, Some(MAX));
        zone(r, "intel-rapl:0:1", "dram", 10, Some(65_712_999_613));
        zone(r, "intel-rapl:1", "package-1", MAX - 1_000_000, Some(MAX));
        zone(r, "intel-rapl-mmio:0", "package-0", 0, Some(MAX));
        d
    }

    #[test]
    fn sums_sockets_and_handles_wrap_around() {
        let d = machine();
        let fs = FsRoot::at(d.path()).unwrap();
        let rapl = Rapl::discover(&fs);
        assert_eq!(rapl.zones.len(), 4, "{rapl:?}");
        let s = rapl.start(&fs);
        set(d.path(), "intel-rapl:0", 3_500_000); // +2.5 J
        set(d.path(), "intel-rapl:1", 2_000_000); // wrapped: +1 J to max, +2 J after
        set(d.path(), "intel-rapl:0:0", 1_500_000); // +1 J
        set(d.path(), "intel-rapl:0:1", 250_010); // +0.25 J
        let e = s.finish(&fs, &rapl);
        assert_eq!(e.energy_pkg_j, Metric::Value(5.5));
        assert_eq!(e.energy_core_j, Metric::Value(1.0));
        assert_eq!(e.energy_dram_j, Metric::Value(0.25));
        assert_eq!(
            e.energy_psys_j.reason(),
            Some("no psys RAPL zone (found: package-0, core, dram, package-1)")
        );
    }

    #[test]
    fn periodic_samples_catch_more_than_one_wrap() {
        let d = tempfile::tempdir().unwrap();
        // A tiny range (1 J) so a long run wraps several times.
        zone(
            d.path(),
            "intel-rapl:0",
            "package-0",
            900_000,
            Some(1_000_000),
        );
        let fs = FsRoot::at(d.path()).unwrap();
        let rapl = Rapl::discover(&fs);
        assert_eq!(rapl.sample_interval(), Duration::from_millis(10));
        let mut s = rapl.start(&fs);
        for v in [400_000, 800_000, 100_000] {
            set(d.path(), "intel-rapl:0", v);
            s.sample(&fs, &rapl);
        }
        set(d.path(), "intel-rapl:0", 600_000);
        // 0.5 + 0.4 + 0.3 + 0.5 = 1.7 J through two wraps.
        let e = s.finish(&fs, &rapl);
        assert!((e.energy_pkg_j.get().unwrap() - 1.7).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn wrap_without_known_range_is_unavailable_not_negative() {
        let d = tempfile::tempdir().unwrap();
        zone(d.path(), "intel-rapl:0", "package-0", 900, None);
        let fs = FsRoot::at(d.path()).unwrap();
        let rapl = Rapl::discover(&fs);
        let s = rapl.start(&fs);
        set(d.path(), "intel-rapl:0", 100);
        let r = s.finish(&fs, &rapl).energy_pkg_j;
        assert!(r.reason().unwrap().contains("wrapped around"), "{r:?}");
    }

    #[test]
    fn unreadable_energy_is_unavailable_with_the_path() {
        let d = tempfile::tempdir().unwrap();
        zone(d.path(), "intel-rapl:0", "package-0", 1, Some(MAX));
        zone(d.path(), "intel-rapl:0:0", "core", 1, Some(MAX));
        // We run as root in CI, so chmod cannot deny a read: make the file
        // unreadable as a file instead. The EACCES wording is tested below.
        let f = d.path().join("sys/class/powercap/intel-rapl:0/energy_uj");
        fs::remove_file(&f).unwrap();
        fs::create_dir(&f).unwrap();
        let fs = FsRoot::at(d.path()).unwrap();
        let rapl = Rapl::discover(&fs);
        let e = rapl.start(&fs).finish(&fs, &rapl);
        let r = e.energy_pkg_j.reason().unwrap();
        assert!(
            r.starts_with("cannot read /sys/class/powercap/intel-rapl:0/energy_uj"),
            "{r}"
        );
        assert_eq!(e.energy_core_j, Metric::Value(0.0));
        assert!(
            rapl.notes(&fs)[0].contains("unavailable: cannot read"),
            "{:?}",
            rapl.notes(&fs)
        );
        let eacces = read_error_reason("/x/energy_uj", &io::Error::from_raw_os_error(libc::EACCES));
        assert!(
            eacces.contains("permission denied (root only since Linux 5.10, CVE-2020-8694"),
            "{eacces}"
        );
    }

    #[test]
    fn machines_without_rapl_say_why() {
        let d = tempfile::tempdir().unwrap();
        let fs = FsRoot::at(d.path()).unwrap();
        let rapl = Rapl::discover(&fs);
        assert!(rapl
            .unavailable
            .as_ref()
            .unwrap()
            .contains("/sys/class/powercap absent"));
        fs::create_dir_all(d.path().join("sys/class/powercap/dtpm")).unwrap();
        let rapl = Rapl::discover(&fs);
        assert_eq!(
            rapl.unavailable.as_deref(),
            Some("no RAPL: no intel-rapl zone in /sys/class/powercap (found: dtpm)")
        );
        assert!(rapl.notes(&fs)[0].starts_with("energy: no RAPL"));
    }

    #[test]
    fn mmio_zones_are_used_only_without_msr_zones() {
        let d = tempfile::tempdir().unwrap();
        zone(d.path(), "intel-rapl-mmio:0", "package-0", 5, Some(MAX));
        let fs = FsRoot::at(d.path()).unwrap();
        let rapl = Rapl::discover(&fs);
        assert_eq!(rapl.zones.len(), 1);
        assert_eq!(rapl.zones[0].dir, "/sys/class/powercap/intel-rapl-mmio:0");
        assert_eq!(rapl.sample_interval(), Duration::from_secs(60));
    }

    #[test]
    fn delta_is_exact_across_one_wrap() {
        assert_eq!(delta_uj(5, 9, None), Some(4));
        assert_eq!(delta_uj(90, 10, Some(100)), Some(20));
        assert_eq!(delta_uj(90, 10, None), None);
    }
}
