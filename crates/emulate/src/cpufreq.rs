//! Per-CPU frequency caps: `scaling_max_freq` of each cpufreq policy
//! (Documentation/admin-guide/pm/cpufreq.rst, "Policy Interface in
//! sysfs"; `intel_pstate` and `amd-pstate` honour it per policy too), read
//! through [`FsRoot`] and written back on every exit path: when the
//! [`Caps`] is dropped, by the signal lifecycle's restorer
//! ([`restore_all`]), and, if pinsight is killed outright, by a
//! [`Watchdog`] child process.

use pinsight_cpuset::CpuSet;
use pinsight_sys::stealer::Watchdog;
use pinsight_sys::FsRoot;
use std::sync::{Mutex, MutexGuard};

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Why caps cannot emulate these kinds here.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CapError {
    /// No cpufreq for a CPU (VMs, no driver loaded).
    #[error("no cpufreq policy for CPU {cpu} ({dir} absent: VM, or no cpufreq driver)")]
    NoCpufreq { cpu: usize, dir: String },
    /// A file of the policy is missing or unreadable.
    #[error("cannot read {path}")]
    Unreadable { path: String },
    /// A policy spans CPUs of different speeds.
    #[error("CPUs {cpus} share one cpufreq policy but are asked different speeds")]
    SharedPolicy { cpus: CpuSet },
    /// The cap would be below the lowest frequency.
    #[error("speed {speed} on CPU {cpu} needs {khz} kHz, below its lowest frequency ({min} kHz)")]
    BelowMin {
        cpu: usize,
        speed: f64,
        khz: u64,
        min: u64,
    },
    /// Writing failed (EACCES: needs root).
    #[error("cannot write {path}: {reason}")]
    Write { path: String, reason: String },
    /// The watchdog could not start.
    #[error("cannot start the watchdog that restores the caps: {0}")]
    Watchdog(String),
}

/// One policy to cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The CPU whose `cpufreq/` directory is written.
    pub cpu: usize,
    /// The policy's CPUs (`related_cpus`).
    pub cpus: CpuSet,
    /// `cpuinfo_min_freq`, kHz.
    pub min_khz: u64,
    /// `cpuinfo_max_freq`, kHz.
    pub max_khz: u64,
    /// `scaling_max_freq` now (the value to restore), as read.
    pub original: String,
}

fn file(cpu: usize, name: &str) -> String {
    format!("{CPU_DIR}/cpu{cpu}/cpufreq/{name}")
}

/// The policies covering `cpus` (each `(cpu, speed)`), one per policy,
/// refused when cpufreq is absent, a policy mixes speeds or a speed is
/// below the lowest frequency.
pub fn policies(fs: &FsRoot, cpus: &[(usize, f64)]) -> Result<Vec<(Policy, f64)>, CapError> {
    let mut out: Vec<(Policy, f64)> = Vec::new();
    for &(cpu, speed) in cpus {
        if out.iter().any(|(p, _)| p.cpus.contains(cpu)) {
            continue;
        }
        let dir = format!("{CPU_DIR}/cpu{cpu}/cpufreq");
        if !fs.exists(&dir) {
            return Err(CapError::NoCpufreq { cpu, dir });
        }
        let read = |name: &str| {
            let path = file(cpu, name);
            fs.read_opt(&path)
                .map(|s| s.trim().to_string())
                .ok_or(CapError::Unreadable { path })
        };
        let num = |name: &str| {
            read(name)?
                .parse::<u64>()
                .map_err(|_| CapError::Unreadable {
                    path: file(cpu, name),
                })
        };
        let related = match fs.read_cpulist(file(cpu, "related_cpus")) {
            Some(Ok(set)) if !set.is_empty() => set,
            _ => [cpu].into_iter().collect(),
        };
        let mixed = related.iter().any(|c| {
            !cpus
                .iter()
                .any(|&(c2, s2)| c2 == c && (s2 - speed).abs() < 1e-9)
        });
        if mixed {
            return Err(CapError::SharedPolicy { cpus: related });
        }
        let (min_khz, max_khz) = (num("cpuinfo_min_freq")?, num("cpuinfo_max_freq")?);
        let original = read("scaling_max_freq")?;
        let khz = khz_for(speed, max_khz);
        if khz < min_khz {
            return Err(CapError::BelowMin {
                cpu,
                speed,
                khz,
                min: min_khz,
            });
        }
        out.push((
            Policy {
                cpu,
                cpus: related,
                min_khz,
                max_khz,
                original,
            },
            speed,
        ));
    }
    Ok(out)
}

/// The cap for `fraction` of `max_khz`.
pub fn khz_for(fraction: f64, max_khz: u64) -> u64 {
    (fraction.clamp(0.0, 1.0) * max_khz as f64).round() as u64
}

/// One value to put back.
struct Saved {
    fs: FsRoot,
    path: String,
    original: String,
}

static SAVED: Mutex<Vec<Saved>> = Mutex::new(Vec::new());
static WATCHDOG: Mutex<Option<Watchdog>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes every saved original back (idempotent), then ends the watchdog.
/// One line per failure: the signal lifecycle's restorer.
pub fn restore_all() -> Vec<String> {
    let saved = std::mem::take(&mut *lock(&SAVED));
    let mut failures = Vec::new();
    for s in saved.into_iter().rev() {
        if let Err(e) = s.fs.write(&s.path, &s.original) {
            failures.push(format!(
                "could not restore {} to {}: {e}",
                s.path, s.original
            ));
        }
    }
    if let Some(mut w) = lock(&WATCHDOG).take() {
        if failures.is_empty() {
            w.disarm();
        }
        // Otherwise dropping the pipe lets the watchdog try once more.
        drop(w);
    }
    failures
}

/// Caps held on some policies; restored when dropped.
#[derive(Debug)]
pub struct Caps {
    policies: Vec<Policy>,
}

impl Caps {
    /// Saves every policy's `scaling_max_freq`, arms the watchdog and the
    /// restorer, then caps each policy at its speed's share of its max.
    /// On a failed write every cap already made is undone.
    pub fn apply(fs: &FsRoot, policies: &[(Policy, f64)]) -> Result<Caps, CapError> {
        pinsight_lifecycle::interrupt::add_restorer(restore_all);
        {
            let mut saved = lock(&SAVED);
            for (p, _) in policies {
                saved.push(Saved {
                    fs: fs.clone(),
                    path: file(p.cpu, "scaling_max_freq"),
                    original: p.original.clone(),
                });
            }
            let writes: Vec<_> = saved
                .iter()
                .rev()
                .map(|s| (s.fs.path(&s.path), s.original.clone()))
                .collect();
            let w = Watchdog::spawn(&writes).map_err(|e| CapError::Watchdog(e.to_string()));
            match w {
                Ok(w) => *lock(&WATCHDOG) = Some(w),
                Err(e) => {
                    saved.clear();
                    return Err(e);
                }
            }
        }
        let caps = Caps {
            policies: policies.iter().map(|(p, _)| p.clone()).collect(),
        };
        for (p, speed) in policies {
            caps.set(fs, p.cpu, *speed)?;
        }
        Ok(caps)
    }

    /// Caps `cpu`'s policy at `fraction` of its max (kept above its min).
    pub fn set(&self, fs: &FsRoot, cpu: usize, fraction: f64) -> Result<u64, CapError> {
        let Some(p) = self.policies.iter().find(|p| p.cpus.contains(cpu)) else {
            return Ok(0);
        };
        let khz = khz_for(fraction, p.max_khz).max(p.min_khz);
        let path = file(p.cpu, "scaling_max_freq");
        fs.write(&path, &khz.to_string()).map_err(|e| {
            let needs_root = e.kind() == std::io::ErrorKind::PermissionDenied;
            CapError::Write {
                path,
                reason: format!("{e}{}", if needs_root { " (needs root)" } else { "" }),
            }
        })?;
        Ok(khz)
    }

    /// The capped policies.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }
}

impl Drop for Caps {
    fn drop(&mut self) {
        for f in restore_all() {
            eprintln!("pinsight: {f}");
        }
    }
}
