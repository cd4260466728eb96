//! cpufreq governors: read them, and set them for the length of an
//! experiment with a guaranteed restore.
//!
//! Restore happens when the [`GovernorGuard`] is dropped (normal return,
//! `?`, panic unwinding), when [`GovernorGuard::restore_now`] is called, or
//! on SIGINT/SIGTERM/SIGHUP once [`crate::install_signal_cleanup`] is
//! installed (via the global registry, [`restore_all`]). Each original
//! value is written back exactly once, whichever comes first.
//!
//! Note: on most drivers CPUs share a cpufreq *policy* (`related_cpus`);
//! setting the governor of one CPU sets it for its whole policy. Originals
//! are recorded per CPU, so restore is correct either way.

use crate::cleanup::lock;
use crate::error::IoError;
use pinsight_cpuset::CpuSet;
use pinsight_sys::FsRoot;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// The governor state of one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuGovernor {
    pub cpu: usize,
    /// `scaling_governor`.
    pub current: String,
    /// `scaling_available_governors` (empty if that file is absent).
    pub available: Vec<String>,
}

/// Why a governor could not be set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GovernorError {
    /// No cpufreq, CPU absent, file not writable: the machine cannot do it.
    #[error("cannot set the cpufreq governor: {0}")]
    Unavailable(#[source] GovernorUnavailable),
    /// The governor is not offered by a CPU (usage error).
    #[error("governor '{governor}' is not available on CPU {cpu} (available: {})", available.join(", "))]
    UnknownGovernor {
        governor: String,
        cpu: usize,
        available: Vec<String>,
    },
}

/// Why this machine cannot have its governor set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GovernorUnavailable {
    #[error("no CPUs given")]
    NoCpus,
    #[error(transparent)]
    Read(#[from] GovernorReadError),
    /// Writing `scaling_governor` failed (EACCES: needs root).
    #[error("cannot write {path}: {source}{}", if source.io().kind() == std::io::ErrorKind::PermissionDenied { " (needs root)" } else { "" })]
    Write { path: String, source: IoError },
}

/// Why the governor state of a CPU could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GovernorReadError {
    #[error("CPU {cpu} does not exist ({dir} absent)")]
    NoSuchCpu { cpu: usize, dir: String },
    #[error("no cpufreq: {dir} absent (VM, or no cpufreq driver loaded)")]
    NoCpufreq { dir: String },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: IoError },
    #[error("no CPUs listed in {dir}")]
    NoCpusListed { dir: String },
}

/// One governor that could not be written back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("could not restore governor '{governor}' on CPU {cpu} ({path}): {source}")]
pub struct RestoreFailure {
    pub governor: String,
    pub cpu: usize,
    pub path: String,
    pub source: IoError,
}

/// Governors that could not be restored (at least one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct RestoreError {
    pub failures: Vec<RestoreFailure>,
}

fn governor_path(cpu: usize) -> String {
    format!("{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")
}

/// Reads one CPU's governor state.
pub fn read_governor(fs: &FsRoot, cpu: usize) -> Result<CpuGovernor, GovernorReadError> {
    let cpu_dir = format!("{CPU_DIR}/cpu{cpu}");
    if !fs.exists(&cpu_dir) {
        return Err(GovernorReadError::NoSuchCpu { cpu, dir: cpu_dir });
    }
    let freq_dir = format!("{cpu_dir}/cpufreq");
    if !fs.exists(&freq_dir) {
        return Err(GovernorReadError::NoCpufreq { dir: freq_dir });
    }
    let path = governor_path(cpu);
    let current = match fs.read(&path) {
        Ok(c) => c,
        Err(e) => {
            return Err(GovernorReadError::Read {
                path,
                source: e.into(),
            })
        }
    };
    let available = fs
        .read_opt(format!("{freq_dir}/scaling_available_governors"))
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Ok(CpuGovernor {
        cpu,
        current: current.trim().to_string(),
        available,
    })
}

/// Governor state of every CPU listed in `/sys/devices/system/cpu`
/// (`cpuN` directories), or why there is none.
pub fn read_governors(fs: &FsRoot) -> Result<Vec<CpuGovernor>, GovernorReadError> {
    let mut cpus: Vec<usize> = fs
        .list_dir(CPU_DIR)
        .iter()
        .filter_map(|n| n.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    if cpus.is_empty() {
        return Err(GovernorReadError::NoCpusListed {
            dir: CPU_DIR.to_string(),
        });
    }
    cpus.into_iter().map(|c| read_governor(fs, c)).collect()
}

/// One original value to write back.
struct Saved {
    guard: u64,
    fs: FsRoot,
    cpu: usize,
    original: String,
}

static REGISTRY: Mutex<Vec<Saved>> = Mutex::new(Vec::new());
static NEXT_GUARD: AtomicU64 = AtomicU64::new(1);

fn restore(entries: Vec<Saved>) -> Vec<RestoreFailure> {
    let mut failures = Vec::new();
    // Reverse order: undo the last change first.
    for s in entries.into_iter().rev() {
        let path = governor_path(s.cpu);
        if s.fs.read_opt(&path).as_deref().map(str::trim) == Some(s.original.as_str()) {
            continue;
        }
        if let Err(e) = s.fs.write(&path, &s.original) {
            failures.push(RestoreFailure {
                governor: s.original,
                cpu: s.cpu,
                path,
                source: e.into(),
            });
        }
    }
    failures
}

/// Restores every governor changed by a live guard. Idempotent; guards
/// dropped afterwards have nothing left to do. Returns failures.
pub fn restore_all() -> Vec<RestoreFailure> {
    let mut reg = lock(&REGISTRY);
    let all = std::mem::take(&mut *reg);
    restore(all)
}

/// Holds a governor on a set of CPUs; restores the originals when dropped.
#[must_use = "the governor is restored as soon as the guard is dropped"]
pub struct GovernorGuard {
    id: u64,
    cpus: CpuSet,
    governor: String,
}

impl fmt::Debug for GovernorGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GovernorGuard({} on CPUs {})", self.governor, self.cpus)
    }
}

impl GovernorGuard {
    /// Sets `governor` on every CPU of `cpus`. All-or-nothing: on failure,
    /// CPUs already changed are restored before returning the error.
    pub fn set(fs: &FsRoot, cpus: &CpuSet, governor: &str) -> Result<GovernorGuard, GovernorError> {
        if cpus.is_empty() {
            return Err(GovernorError::Unavailable(GovernorUnavailable::NoCpus));
        }
        let mut states = Vec::new();
        for cpu in cpus.iter() {
            let st = read_governor(fs, cpu)
                .map_err(|e| GovernorError::Unavailable(GovernorUnavailable::Read(e)))?;
            if !st.available.is_empty() && !st.available.iter().any(|g| g == governor) {
                return Err(GovernorError::UnknownGovernor {
                    governor: governor.to_string(),
                    cpu,
                    available: st.available,
                });
            }
            states.push(st);
        }
        let id = NEXT_GUARD.fetch_add(1, Ordering::Relaxed);
        let guard = GovernorGuard {
            id,
            cpus: cpus.clone(),
            governor: governor.to_string(),
        };
        // Register every original before the first write, so a signal at
        // any point restores what was changed so far.
        {
            let mut reg = lock(&REGISTRY);
            for st in &states {
                reg.push(Saved {
                    guard: id,
                    fs: fs.clone(),
                    cpu: st.cpu,
                    original: st.current.clone(),
                });
            }
        }
        for st in &states {
            if st.current == governor {
                continue;
            }
            let path = governor_path(st.cpu);
            if let Err(e) = fs.write(&path, governor) {
                drop(guard); // restores the CPUs changed so far
                return Err(GovernorError::Unavailable(GovernorUnavailable::Write {
                    path,
                    source: e.into(),
                }));
            }
        }
        Ok(guard)
    }

    /// The CPUs this guard holds.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// The governor this guard set.
    pub fn governor(&self) -> &str {
        &self.governor
    }

    /// Restores the originals now (idempotent); dropping afterwards does
    /// nothing. Returns the failures.
    pub fn restore_now(&mut self) -> Result<(), RestoreError> {
        let mine: Vec<Saved> = {
            let mut reg = lock(&REGISTRY);
            let (mine, rest): (Vec<Saved>, Vec<Saved>) = std::mem::take(&mut *reg)
                .into_iter()
                .partition(|s| s.guard == self.id);
            *reg = rest;
            mine
        };
        let failures = restore(mine);
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RestoreError { failures })
        }
    }
}

impl Drop for GovernorGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restore_now() {
            eprintln!("pinsight: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A fake tree: 4 CPUs with cpufreq (cpu3 without available list),
    /// and its root.
    fn tree() -> (tempfile::TempDir, FsRoot) {
        let d = tempfile::tempdir().unwrap();
        for cpu in 0..4 {
            let f = d
                .path()
                .join(format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
            std::fs::create_dir_all(&f).unwrap();
            std::fs::write(f.join("scaling_governor"), "schedutil\n").unwrap();
            if cpu != 3 {
                std::fs::write(
                    f.join("scaling_available_governors"),
                    "conservative ondemand userspace powersave performance schedutil \n",
                )
                .unwrap();
            }
        }
        let fs = FsRoot::at(d.path()).unwrap();
        (d, fs)
    }

    /// CPU `cpu`'s governor file in the tree at `root`.
    fn gov_file(root: &Path, cpu: usize) -> PathBuf {
        root.join(format!(
            "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        ))
    }

    fn gov(root: &Path, cpu: usize) -> String {
        std::fs::read_to_string(gov_file(root, cpu))
            .unwrap()
            .trim()
            .to_string()
    }

    // The registry is global: tests touching it use distinct trees, and no
    // test here calls restore_all (that one lives in the signal test, in its
    // own process).

    #[test]
    fn reads_current_and_available() {
        let (_d, fs) = tree();
        let g = read_governors(&fs).unwrap();
        assert_eq!(g.len(), 4);
        assert_eq!(g[0].current, "schedutil");
        assert_eq!(g[0].available.len(), 6);
        assert!(g[3].available.is_empty());
    }

    #[test]
    fn sets_and_restores_on_drop_and_restore_now() {
        let (d, fs) = tree();
        std::fs::write(gov_file(d.path(), 1), "powersave\n").unwrap();
        {
            let g = GovernorGuard::set(&fs, &CpuSet::parse_list("0-2").unwrap(), "performance")
                .unwrap();
            assert_eq!(g.governor(), "performance");
            assert_eq!(
                (
                    gov(d.path(), 0),
                    gov(d.path(), 1),
                    gov(d.path(), 2),
                    gov(d.path(), 3)
                ),
                (
                    "performance".into(),
                    "performance".into(),
                    "performance".into(),
                    "schedutil".into()
                )
            );
        }
        assert_eq!(
            (gov(d.path(), 0), gov(d.path(), 1), gov(d.path(), 2)),
            ("schedutil".into(), "powersave".into(), "schedutil".into())
        );

        let mut g = GovernorGuard::set(&fs, &CpuSet::single(3), "performance").unwrap();
        assert_eq!(gov(d.path(), 3), "performance");
        g.restore_now().unwrap();
        assert_eq!(gov(d.path(), 3), "schedutil");
        // Somebody else changes it afterwards: dropping must not touch it.
        std::fs::write(gov_file(d.path(), 3), "ondemand").unwrap();
        drop(g);
        assert_eq!(gov(d.path(), 3), "ondemand");
    }

    #[test]
    fn restores_when_a_panic_unwinds() {
        let (d, fs) = tree();
        let r = std::panic::catch_unwind(|| {
            let _g =
                GovernorGuard::set(&fs, &CpuSet::parse_list("0,2").unwrap(), "powersave").unwrap();
            assert_eq!(gov(d.path(), 2), "powersave");
            panic!("experiment failed");
        });
        assert!(r.is_err());
        assert_eq!(gov(d.path(), 0), "schedutil");
        assert_eq!(gov(d.path(), 2), "schedutil");
    }

    #[test]
    fn unknown_governor_is_a_usage_error_listing_choices() {
        let (d, fs) = tree();
        let e = GovernorGuard::set(&fs, &CpuSet::single(0), "turbo").unwrap_err();
        assert!(matches!(e, GovernorError::UnknownGovernor { cpu: 0, .. }));
        assert!(
            e.to_string()
                .contains("available: conservative, ondemand, userspace"),
            "{e}"
        );
        assert_eq!(gov(d.path(), 0), "schedutil");
    }

    #[test]
    fn unreadable_governor_fails_before_any_write() {
        let (d, fs) = tree();
        let p = gov_file(d.path(), 2);
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        let e = GovernorGuard::set(&fs, &CpuSet::parse_list("0-2").unwrap(), "performance")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot read /sys/devices/system/cpu/cpu2/cpufreq/scaling_governor"),
            "{e}"
        );
        assert_eq!(gov(d.path(), 0), "schedutil");
        assert_eq!(gov(d.path(), 1), "schedutil");
    }

    #[test]
    fn failed_write_restores_cpus_already_changed() {
        let (d, fs) = tree();
        // We run as root, so permissions cannot make a write fail. A file
        // that reads fine but refuses writes (EIO) even for root:
        // /proc/version, through a relative link (FsRoot re-roots absolute
        // links into the fake tree).
        let p = gov_file(d.path(), 1);
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(format!("{}proc/version", "../".repeat(40)), &p).unwrap();
        let e = GovernorGuard::set(&fs, &CpuSet::parse_list("0-1").unwrap(), "performance")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot write /sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"),
            "{e}"
        );
        assert_eq!(gov(d.path(), 0), "schedutil");
    }

    #[test]
    fn no_cpufreq_says_why() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/devices/system/cpu/cpu0")).unwrap();
        let fs = FsRoot::at(d.path()).unwrap();
        let e = GovernorGuard::set(&fs, &CpuSet::single(0), "performance").unwrap_err();
        assert_eq!(
            e,
            GovernorError::Unavailable(GovernorUnavailable::Read(GovernorReadError::NoCpufreq {
                dir: "/sys/devices/system/cpu/cpu0/cpufreq".into()
            }))
        );
        assert_eq!(
            e.to_string(),
            "cannot set the cpufreq governor: no cpufreq: /sys/devices/system/cpu/cpu0/cpufreq absent (VM, or no cpufreq driver loaded)"
        );
        assert!(matches!(
            read_governors(&fs).unwrap_err(),
            GovernorReadError::NoCpufreq { .. }
        ));
        let e = GovernorGuard::set(&fs, &CpuSet::single(7), "performance").unwrap_err();
        assert!(e.to_string().contains("CPU 7 does not exist"), "{e}");
    }
}
