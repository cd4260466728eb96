//! Renders a [`Plan`] in the dialects users already have.
//!
//! | format          | output                                                                |
//! |-----------------|-----------------------------------------------------------------------|
//! | `table`         | thread → CPU, core, kind mark, package, NUMA node (human)             |
//! | `json`          | the [`Plan`] as JSON                                                  |
//! | `cpulist`       | the process mask as a Linux cpulist: `0,2,4-6`                        |
//! | `taskset`       | `taskset -c 0,2,4` (process mask only: taskset cannot pin threads)    |
//! | `numactl`       | `numactl --physcpubind=0,2,4`                                         |
//! | `omp-places`    | `export OMP_NUM_THREADS/OMP_PLACES/OMP_PROC_BIND` (OpenMP ≥ 4.0)      |
//! | `gomp`          | `export GOMP_CPU_AFFINITY='0 2 4-6'` (libgomp; LLVM libomp reads it too) |
//! | `kmp-affinity`  | `export KMP_AFFINITY='granularity=fine,explicit,proclist=[0,2,4]'`    |
//! | `kmp-hw-subset` | `export KMP_HW_SUBSET='6c:intel_core,1t'` (LLVM/Intel libomp, kind policies) |
//! | `libvirt`       | a `<cputune>` block: one `<vcpupin>` per vCPU plus `<emulatorpin>`     |
//! | `slurm`         | `--cpu-bind=map_cpu:0,2,4` (pinned) or `mask_cpu:0x…` (sets)           |
//! | `taskset-per-task` | `taskset -c 3` per task, line i+1 for task i (processes started one by one) |
//! | `cpulist-per-task` | one cpulist per line, line i+1 for task i (for scripts)            |
//! | `systemd`       | `CPUAffinity=3` per line, line i+1 for task i (one unit per task)      |
//!
//! The per-task formats give task i the plan's place i (every task the
//! process mask when threads float, and for `os` every usable CPU): a
//! `balance` plan's tasks are usually separate processes, each started by
//! its own `taskset -c` or unit (systemd.exec(5): `CPUAffinity=` takes CPU
//! indices and ranges separated by commas or whitespace).
//!
//! A plan's memory policy ([`Plan::memory`]) is spoken by `numactl`
//! (`--membind=`, `--interleave=`, `--preferred=`, `--localalloc`,
//! `--weighted-interleave=` since numactl 2.0.19), `libvirt` (a
//! `<numatune>` block: `strict`, `interleave`, `preferred`) and `slurm`
//! (`--mem-bind=mask_mem:`, `prefer,map_mem:`, `local`). A policy a dialect
//! cannot say is a [`FormatError::Memory`], never dropped; dialects with no
//! memory options at all (taskset, cpulist, OpenMP variables) print the
//! CPUs with a [`Caveat::MemoryNotExpressed`].
//!
//! Environment-variable formats print `export NAME='value'` lines for
//! `eval "$(pinsight plan … --format omp-places)"`: the quotes matter,
//! since bash would brace-expand an unquoted `{0,1,2,3}`.

use crate::mem::{MemMode, MemPlan};
use crate::plan::{cores_of, Plan};
use pinsight_cpuset::CpuSet;
use pinsight_model::{CoreType, Topology};
use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

/// An output dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Cpulist,
    Taskset,
    Numactl,
    OmpPlaces,
    Gomp,
    KmpAffinity,
    KmpHwSubset,
    Libvirt,
    Slurm,
    TasksetPerTask,
    CpulistPerTask,
    Systemd,
}

/// Format names, in help order.
pub const FORMAT_NAMES: &[&str] = &[
    "table",
    "json",
    "cpulist",
    "taskset",
    "numactl",
    "omp-places",
    "gomp",
    "kmp-affinity",
    "kmp-hw-subset",
    "libvirt",
    "slurm",
    "taskset-per-task",
    "cpulist-per-task",
    "systemd",
];

impl Format {
    /// The dialect a caller asked for: `format` when given, else JSON
    /// when `json` is asked, else the table. `None` when both are given
    /// and disagree (a JSON request and a dialect other than JSON).
    pub fn chosen(format: Option<Format>, json: bool) -> Option<Format> {
        match (format, json) {
            (Some(f), true) if f != Format::Json => None,
            (Some(f), _) => Some(f),
            (None, true) => Some(Format::Json),
            (None, false) => Some(Format::Table),
        }
    }

    /// Whether the text carries the plan's notes (the table and JSON do);
    /// a caller of any other dialect says them apart.
    pub fn carries_notes(self) -> bool {
        matches!(self, Format::Table | Format::Json)
    }
}

impl FromStr for Format {
    type Err = FormatError;
    fn from_str(s: &str) -> Result<Format, FormatError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "table" => Format::Table,
            "json" => Format::Json,
            "cpulist" => Format::Cpulist,
            "taskset" => Format::Taskset,
            "numactl" => Format::Numactl,
            "omp-places" | "omp" => Format::OmpPlaces,
            "gomp" => Format::Gomp,
            "kmp-affinity" => Format::KmpAffinity,
            "kmp-hw-subset" => Format::KmpHwSubset,
            "libvirt" => Format::Libvirt,
            "slurm" => Format::Slurm,
            "taskset-per-task" => Format::TasksetPerTask,
            "cpulist-per-task" => Format::CpulistPerTask,
            "systemd" => Format::Systemd,
            other => return Err(FormatError::Unknown(other.to_string())),
        })
    }
}

/// Why a plan cannot be rendered in a dialect (or the dialect is unknown).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// A format name that is not one of [`FORMAT_NAMES`].
    #[error("unknown format '{0}'; valid formats: {list}", list = FORMAT_NAMES.join(", "))]
    Unknown(String),
    /// A per-thread dialect asked to express threads that float over a set.
    #[error("format {format} cannot express {policy}: {why}, but this plan lets threads float over {mask}")]
    Floats {
        format: &'static str,
        policy: String,
        why: &'static str,
        mask: CpuSet,
    },
    /// `kmp-hw-subset` for a policy that is not one core kind.
    #[error("format kmp-hw-subset describes one core kind (p-set, e-set, p-pinned, e-pinned, kind:, kind-set:); {policy} is not one")]
    NotOneKind { policy: String },
    /// A memory policy the dialect has no form for.
    #[error("format {format} cannot express memory policy {memory}: {why}")]
    Memory {
        format: &'static str,
        memory: String,
        why: &'static str,
    },
}

/// How a dialect falls short of the plan (printed on stderr).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caveat {
    /// `taskset`/`numactl` set one mask: pinned threads will float over it.
    OneMask { tool: &'static str, mask: CpuSet },
    /// `omp-places` with places reused: OpenMP 'close' does not round robin.
    ClosePlacesShared,
    /// `kmp-hw-subset` with threads sharing cores.
    SharedCores,
    /// `kmp-hw-subset` when only part of the kind is usable.
    PartOfKind { usable: CpuSet, kind: CpuSet },
    /// The dialect has no memory options: the plan's memory policy is not
    /// in the output.
    MemoryNotExpressed {
        format: &'static str,
        memory: String,
    },
    /// `numactl --weighted-interleave` needs numactl 2.0.19 and Linux 6.9.
    WeightedInterleaveVersions,
    /// `systemd`: the memory policy is the same for every unit, so it is
    /// given once (stderr) rather than on each task's line.
    SystemdMemory { settings: String },
}

impl fmt::Display for Caveat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caveat::OneMask { tool, mask } => write!(
                f,
                "{tool} sets one mask for the whole process: threads will float over {mask} instead of one CPU each; use `pinsight run` or an OpenMP format to pin threads"
            ),
            Caveat::ClosePlacesShared => f.write_str(
                "OpenMP 'close' puts consecutive threads on a shared place, not round robin; the gomp format gives the exact per-thread order",
            ),
            Caveat::SharedCores => {
                f.write_str("threads share cores: libomp orders SMT siblings itself")
            }
            Caveat::PartOfKind { usable, kind } => write!(
                f,
                "only {usable} of the kind's CPUs {kind} are usable; libomp counts cores within the process mask"
            ),
            Caveat::MemoryNotExpressed { format, memory } => write!(
                f,
                "{format} has no memory policy: memory policy {memory} is not in this output (numactl, libvirt and slurm formats carry it; pinsight run applies it)"
            ),
            Caveat::SystemdMemory { settings } => write!(
                f,
                "memory: add {settings} beside every unit's CPUAffinity= (systemd.exec(5), systemd 243 or later)"
            ),
            Caveat::WeightedInterleaveVersions => f.write_str(
                "--weighted-interleave needs numactl 2.0.19 or later and Linux 6.9 or later (older kernels refuse it)",
            ),
        }
    }
}

/// Text to print, plus caveats about how faithfully the dialect can
/// express the plan (for stderr: they must not pollute `$(…)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub caveats: Vec<Caveat>,
}

fn ok(text: String) -> Result<Rendered, FormatError> {
    Ok(Rendered {
        text,
        caveats: Vec::new(),
    })
}

/// Renders `plan` (made on `topo`) in `format`. Errors when the dialect
/// cannot express the plan at all (e.g. `gomp` for a floating set, or a
/// memory policy the dialect has no form for).
pub fn render(plan: &Plan, topo: &Topology, format: Format) -> Result<Rendered, FormatError> {
    let Some(mem) = &plan.memory else {
        return render_cpus(plan, topo, format);
    };
    match format {
        Format::Table | Format::Json => render_cpus(plan, topo, format),
        Format::Numactl => {
            let mut r = render_cpus(plan, topo, format)?;
            let (opt, weighted) = numactl_mem(mem);
            r.text = r.text.replacen("numactl ", &format!("numactl {opt} "), 1);
            if weighted {
                r.caveats.push(Caveat::WeightedInterleaveVersions);
            }
            Ok(r)
        }
        Format::Libvirt => {
            let mut r = render_cpus(plan, topo, format)?;
            r.text.push_str(&libvirt_mem(mem)?);
            Ok(r)
        }
        Format::Slurm => {
            let mut r = render_cpus(plan, topo, format)?;
            let line = r.text.trim_end().to_string();
            r.text = format!("{line} {}\n", slurm_mem(mem)?);
            Ok(r)
        }
        Format::Systemd => {
            let mut r = render_cpus(plan, topo, format)?;
            r.caveats.push(Caveat::SystemdMemory {
                settings: systemd_mem(mem)?,
            });
            Ok(r)
        }
        Format::Cpulist
        | Format::Taskset
        | Format::OmpPlaces
        | Format::Gomp
        | Format::KmpAffinity
        | Format::KmpHwSubset
        | Format::TasksetPerTask
        | Format::CpulistPerTask => {
            let mut r = render_cpus(plan, topo, format)?;
            r.caveats.push(Caveat::MemoryNotExpressed {
                format: format_name(format),
                memory: mem.policy.clone(),
            });
            Ok(r)
        }
    }
}

/// The name a format is written with.
fn format_name(format: Format) -> &'static str {
    match format {
        Format::Table => "table",
        Format::Json => "json",
        Format::Cpulist => "cpulist",
        Format::Taskset => "taskset",
        Format::Numactl => "numactl",
        Format::OmpPlaces => "omp-places",
        Format::Gomp => "gomp",
        Format::KmpAffinity => "kmp-affinity",
        Format::KmpHwSubset => "kmp-hw-subset",
        Format::Libvirt => "libvirt",
        Format::Slurm => "slurm",
        Format::TasksetPerTask => "taskset-per-task",
        Format::CpulistPerTask => "cpulist-per-task",
        Format::Systemd => "systemd",
    }
}

/// Node ids as numactl and libvirt write them (`0-1,3`).
fn nodes_text(mem: &MemPlan) -> String {
    crate::mem::node_list(&mem.nodes)
}

/// numactl's memory option, and whether it is the weighted one.
fn numactl_mem(mem: &MemPlan) -> (String, bool) {
    let n = nodes_text(mem);
    match mem.mode {
        MemMode::Local => ("--localalloc".into(), false),
        MemMode::Bind => (format!("--membind={n}"), false),
        MemMode::Interleave => (format!("--interleave={n}"), false),
        MemMode::Preferred => (format!("--preferred={n}"), false),
        MemMode::WeightedInterleave => (format!("--weighted-interleave={n}"), true),
    }
}

/// libvirt `<numatune>` (modes strict, interleave, preferred; the host's
/// default, local allocation, needs no block).
fn libvirt_mem(mem: &MemPlan) -> Result<String, FormatError> {
    let mode = match mem.mode {
        MemMode::Local => {
            return Ok(
                "<!-- memory: local (the host's default policy): no <numatune> needed -->\n"
                    .into(),
            )
        }
        MemMode::Bind => "strict",
        MemMode::Interleave => "interleave",
        MemMode::Preferred => "preferred",
        MemMode::WeightedInterleave => {
            return Err(FormatError::Memory {
                format: "libvirt",
                memory: mem.policy.clone(),
                why: "libvirt's <numatune> modes are strict, interleave, preferred and restrictive; none is weighted",
            })
        }
    };
    Ok(format!(
        "<numatune>\n  <memory mode='{mode}' nodeset='{}'/>\n</numatune>\n",
        nodes_text(mem)
    ))
}

/// Slurm's `--mem-bind=` (srun): `local`, `mask_mem:` (one mask, every
/// task), `prefer,map_mem:` (the first node preferred).
fn slurm_mem(mem: &MemPlan) -> Result<String, FormatError> {
    Ok(match mem.mode {
        MemMode::Local => "--mem-bind=local".into(),
        MemMode::Bind => {
            let set: CpuSet = mem.nodes.iter().map(|n| *n as usize).collect();
            format!("--mem-bind=mask_mem:{}", hex_mask(&set))
        }
        MemMode::Preferred => format!("--mem-bind=prefer,map_mem:{}", nodes_text(mem)),
        MemMode::Interleave | MemMode::WeightedInterleave => {
            return Err(FormatError::Memory {
                format: "slurm",
                memory: mem.policy.clone(),
                why: "srun --mem-bind has no interleave type (local, map_mem, mask_mem, prefer, rank only)",
            })
        }
    })
}

/// systemd's `NUMAPolicy=` and `NUMAMask=` (systemd.exec(5): default,
/// preferred, bind, interleave, local; no weighted interleave).
fn systemd_mem(mem: &MemPlan) -> Result<String, FormatError> {
    let mode = match mem.mode {
        MemMode::Local => return Ok("NUMAPolicy=local".into()),
        MemMode::Bind => "bind",
        MemMode::Interleave => "interleave",
        MemMode::Preferred => "preferred",
        MemMode::WeightedInterleave => {
            return Err(FormatError::Memory {
                format: "systemd",
                memory: mem.policy.clone(),
                why: "systemd's NUMAPolicy= has default, preferred, bind, interleave and local; none is weighted",
            })
        }
    };
    Ok(format!(
        "NUMAPolicy={mode} and NUMAMask={}",
        nodes_text(mem)
    ))
}

/// [`render`] without the memory policy.
fn render_cpus(plan: &Plan, topo: &Topology, format: Format) -> Result<Rendered, FormatError> {
    let mask = &plan.process_mask;
    match format {
        Format::Table => ok(table(plan, topo)),
        Format::Json => ok(serde_json::to_string_pretty(plan).expect("plan serializes") + "\n"),
        Format::Cpulist => ok(format!("{mask}\n")),
        Format::Taskset => with_mask_caveat(plan, "taskset", format!("taskset -c {mask}\n")),
        Format::Numactl => {
            with_mask_caveat(plan, "numactl", format!("numactl --physcpubind={mask}\n"))
        }
        Format::OmpPlaces => {
            let mut r = Rendered {
                text: exports(&omp_vars(plan)),
                caveats: Vec::new(),
            };
            if plan.pinned
                && plan.tasks_per_cpu.is_none()
                && distinct_in_order(&plan.places).len() < plan.places.len()
            {
                r.caveats.push(Caveat::ClosePlacesShared);
            }
            Ok(r)
        }
        Format::Gomp => {
            if !plan.pinned {
                return Err(float_error(
                    plan,
                    "gomp",
                    "GOMP_CPU_AFFINITY binds each thread to one CPU",
                ));
            }
            let cpus: Vec<usize> = plan.places.iter().filter_map(CpuSet::first).collect();
            ok(exports(&[("GOMP_CPU_AFFINITY".into(), gomp_list(&cpus))]))
        }
        Format::KmpAffinity => {
            let value = if plan.places.is_empty() {
                "disabled".to_string()
            } else if plan.pinned {
                format!("granularity=fine,explicit,proclist=[{}]", place_cpus(plan))
            } else {
                format!(
                    "granularity=fine,explicit,proclist=[{{{}}}]",
                    comma_list(mask)
                )
            };
            ok(exports(&[("KMP_AFFINITY".into(), value)]))
        }
        Format::KmpHwSubset => kmp_hw_subset(plan, topo),
        Format::TasksetPerTask => ok(per_task(plan, "taskset -c ")),
        Format::CpulistPerTask => ok(per_task(plan, "")),
        Format::Systemd => ok(per_task(plan, "CPUAffinity=")),
        Format::Libvirt => ok(libvirt(plan, topo)),
        Format::Slurm => ok(if plan.places.is_empty() {
            "--cpu-bind=none\n".into()
        } else if plan.pinned {
            format!("--cpu-bind=map_cpu:{}\n", place_cpus(plan))
        } else {
            format!("--cpu-bind=mask_cpu:{}\n", hex_mask(mask))
        }),
    }
}

/// Each place's first CPU, comma-separated: a pinned plan's CPU list.
fn place_cpus(plan: &Plan) -> String {
    let list: Vec<String> = plan
        .places
        .iter()
        .filter_map(CpuSet::first)
        .map(|c| c.to_string())
        .collect();
    list.join(",")
}

fn with_mask_caveat(
    plan: &Plan,
    tool: &'static str,
    text: String,
) -> Result<Rendered, FormatError> {
    let mut caveats = Vec::new();
    if plan.pinned && plan.process_mask.len() > 1 {
        caveats.push(Caveat::OneMask {
            tool,
            mask: plan.process_mask.clone(),
        });
    }
    Ok(Rendered { text, caveats })
}

fn float_error(plan: &Plan, format: &'static str, why: &'static str) -> FormatError {
    FormatError::Floats {
        format,
        policy: plan.policy.clone(),
        why,
        mask: plan.process_mask.clone(),
    }
}

/// Comma-separated CPU numbers, no ranges (OpenMP place members).
fn comma_list(set: &CpuSet) -> String {
    set.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Places in first-appearance order, duplicates dropped.
fn distinct_in_order(places: &[CpuSet]) -> Vec<CpuSet> {
    let mut out: Vec<CpuSet> = Vec::new();
    for p in places {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// GOMP_CPU_AFFINITY list: space separated, ascending runs of 3 or more
/// written `M-N` (libgomp accepts ranges; order is thread order).
fn gomp_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if j - i >= 2 {
            parts.push(format!("{}-{}", cpus[i], cpus[j]));
        } else {
            parts.extend(cpus[i..=j].iter().map(|c| c.to_string()));
        }
        i = j + 1;
    }
    parts.join(" ")
}

/// The CPUs of each task, in task order: place i for pinned plans, the
/// process mask for every task of a plan whose threads float (`os`: every
/// usable CPU, which is its mask).
pub fn task_places(plan: &Plan) -> Vec<CpuSet> {
    if plan.pinned && !plan.places.is_empty() {
        plan.places.clone()
    } else {
        vec![plan.process_mask.clone(); plan.threads.max(1)]
    }
}

/// One line per task: `prefix` and the task's cpulist.
fn per_task(plan: &Plan, prefix: &str) -> String {
    task_places(plan)
        .iter()
        .map(|p| format!("{prefix}{p}\n"))
        .collect()
}

/// `export NAME='value'` lines.
fn exports(vars: &[(String, String)]) -> String {
    vars.iter()
        .map(|(k, v)| format!("export {k}='{v}'\n"))
        .collect()
}

/// The OpenMP standard variables for a plan.
fn omp_vars(plan: &Plan) -> Vec<(String, String)> {
    let mut v = vec![("OMP_NUM_THREADS".to_string(), plan.threads.to_string())];
    if plan.places.is_empty() {
        v.push(("OMP_PROC_BIND".into(), "false".into()));
    } else if plan.tasks_per_cpu.is_some() {
        // balance: one place per task, in task order, CPUs repeated as
        // often as they get tasks; with as many threads as places, `close`
        // binds thread i to place i (libgomp accepts repeated places).
        let places: Vec<String> = plan
            .places
            .iter()
            .map(|p| format!("{{{}}}", comma_list(p)))
            .collect();
        v.push(("OMP_PLACES".into(), places.join(",")));
        v.push(("OMP_PROC_BIND".into(), "close".into()));
    } else if plan.pinned {
        let places: Vec<String> = distinct_in_order(&plan.places)
            .iter()
            .map(|p| format!("{{{}}}", comma_list(p)))
            .collect();
        v.push(("OMP_PLACES".into(), places.join(",")));
        v.push(("OMP_PROC_BIND".into(), "close".into()));
    } else {
        v.push((
            "OMP_PLACES".into(),
            format!("{{{}}}", comma_list(&plan.process_mask)),
        ));
        v.push(("OMP_PROC_BIND".into(), "true".into()));
    }
    v
}

/// Environment variables a launcher should export so that common
/// threading runtimes create the planned number of threads on the
/// planned places:
///
/// - `OMP_NUM_THREADS`, `OMP_PLACES`, `OMP_PROC_BIND`: the OpenMP
///   standard, honoured by libgomp, LLVM/Intel libomp and others. Pinned
///   plans get one place per CPU in thread order with `close` binding
///   (thread i on place i); set plans one place holding the whole set
///   with `true`; `os` gets `OMP_PROC_BIND=false`.
/// - `RAYON_NUM_THREADS` (Rust rayon) and `CILK_NWORKERS` (OpenCilk):
///   thread counts only; the launcher's per-thread pinning places them.
///
/// Deliberately absent: `GOMP_CPU_AFFINITY` and `KMP_AFFINITY` (LLVM
/// libomp treats them as overriding `OMP_PLACES`/`OMP_PROC_BIND` and warns;
/// the standard variables say the same thing portably) and oneTBB, which
/// has no environment variable for its thread count.
///
/// Every count is the plan's thread count, for every policy: `balance`
/// runs one thread per task (its places repeat CPUs in proportion to
/// capacity, one place per task in task order).
pub fn omp_env(plan: &Plan) -> Vec<(String, String)> {
    let mut v = omp_vars(plan);
    let n = plan.threads.to_string();
    v.push(("RAYON_NUM_THREADS".into(), n.clone()));
    v.push(("CILK_NWORKERS".into(), n));
    v
}

/// The thread-count variables of [`omp_env`]: each names how many threads
/// one process should start.
pub const THREAD_COUNT_VARS: &[&str] = &["OMP_NUM_THREADS", "RAYON_NUM_THREADS", "CILK_NWORKERS"];

/// The environment a launcher of one command (`pinsight run`) exports:
/// [`omp_env`], except that a `balance` plan gets no thread count.
///
/// A balance plan's tasks are usually processes that the command starts
/// (a launcher script forking one worker per task), and every child
/// inherits the environment (execve(2): the environment passes to the new
/// program unchanged): `OMP_NUM_THREADS=N` would ask each of the N tasks
/// for N threads. Each task's place is one CPU; a count for all of them
/// cannot be said in one variable, so none is exported and each task's
/// runtime sizes itself from its own affinity.
pub fn launch_env(plan: &Plan) -> Vec<(String, String)> {
    let mut v = omp_env(plan);
    if plan.tasks_per_cpu.is_some() {
        v.retain(|(k, _)| !THREAD_COUNT_VARS.contains(&k.as_str()));
    }
    v
}

/// `0x…` hex mask without separators (Slurm `mask_cpu`).
fn hex_mask(set: &CpuSet) -> String {
    let words = set.as_words();
    if words.is_empty() {
        return "0x0".into();
    }
    let mut out = format!("0x{:x}", words[words.len() - 1]);
    for w in words[..words.len() - 1].iter().rev() {
        let _ = write!(out, "{w:016x}");
    }
    out
}

/// `KMP_HW_SUBSET` for kind policies: `Nc:ATTR[,1t]`, where ATTR is
/// `intel_core`/`intel_atom` when the kind's x86 core type is known (and
/// unambiguous), else `effR` (libomp's efficiency index = our rank).
fn kmp_hw_subset(plan: &Plan, topo: &Topology) -> Result<Rendered, FormatError> {
    let unsupported = || FormatError::NotOneKind {
        policy: plan.policy.clone(),
    };
    let kind_policy = [
        "p-set",
        "e-set",
        "p-pinned",
        "e-pinned",
        "kind:",
        "kind-set:",
    ]
    .iter()
    .any(|p| {
        plan.policy
            .strip_suffix("+smt-physical-first")
            .unwrap_or(&plan.policy)
            .starts_with(p)
    });
    if !kind_policy || !topo.is_heterogeneous() {
        return Err(unsupported());
    }
    let first = plan.process_mask.first().ok_or_else(unsupported)?;
    let rank = topo
        .cpu(first)
        .and_then(|c| c.kind)
        .ok_or_else(unsupported)?;
    let kind = &topo.kinds[rank];
    let same_type =
        |t: Option<CoreType>| topo.kinds.iter().filter(|k| k.core_type == t).count() == 1;
    let attr = match kind.core_type {
        Some(CoreType::Core) if same_type(Some(CoreType::Core)) => "intel_core".to_string(),
        Some(CoreType::Atom)
            if same_type(Some(CoreType::Atom))
                && !topo
                    .kinds
                    .iter()
                    .any(|k| k.core_type == Some(CoreType::LowPower)) =>
        {
            "intel_atom".to_string()
        }
        _ => format!("eff{rank}"),
    };
    let usable_kind = kind.cpus.intersection(&topo.usable());
    let kind_cores = cores_of(topo, &usable_kind).len();
    let used_cores = cores_of(topo, &plan.process_mask).len();
    let mut caveats = Vec::new();
    let value = if !plan.pinned {
        format!("{kind_cores}c:{attr}")
    } else if plan.process_mask.len() == used_cores {
        format!("{used_cores}c:{attr},1t")
    } else {
        caveats.push(Caveat::SharedCores);
        format!("{used_cores}c:{attr}")
    };
    let mut vars = vec![
        ("KMP_HW_SUBSET".to_string(), value),
        ("OMP_NUM_THREADS".into(), plan.threads.to_string()),
    ];
    if plan.pinned {
        vars.push(("OMP_PLACES".into(), "threads".into()));
        vars.push(("OMP_PROC_BIND".into(), "close".into()));
    }
    if usable_kind != kind.cpus {
        caveats.push(Caveat::PartOfKind {
            usable: usable_kind.clone(),
            kind: kind.cpus.clone(),
        });
    }
    Ok(Rendered {
        text: exports(&vars),
        caveats,
    })
}

/// libvirt `<cputune>`: vCPU i pinned to place i; the emulator threads go
/// to usable CPUs on cores no vCPU uses, else to usable CPUs no vCPU uses,
/// else share the vCPUs' CPUs.
fn libvirt(plan: &Plan, topo: &Topology) -> String {
    let usable = topo.usable();
    let places: Vec<CpuSet> = if plan.places.is_empty() {
        vec![usable.clone(); plan.threads]
    } else {
        plan.places.clone()
    };
    let used: CpuSet = places.iter().fold(CpuSet::new(), |a, p| a.union(p));
    let used_cores: CpuSet = used
        .iter()
        .fold(CpuSet::new(), |a, c| a.union(&topo.siblings(c)));
    let free_cores = usable.difference(&used_cores);
    let free_cpus = usable.difference(&used);
    let emulator = if !free_cores.is_empty() {
        free_cores
    } else if !free_cpus.is_empty() {
        free_cpus
    } else {
        used
    };
    let mut out = format!(
        "<!-- pinsight plan {}: <vcpu placement='static'>{}</vcpu> -->\n<cputune>\n",
        plan.policy,
        places.len()
    );
    for (i, p) in places.iter().enumerate() {
        let _ = writeln!(out, "  <vcpupin vcpu='{i}' cpuset='{p}'/>");
    }
    let _ = writeln!(out, "  <emulatorpin cpuset='{emulator}'/>");
    out.push_str("</cputune>\n");
    out
}

/// What to show for a CPU in the table.
fn cpu_cols(topo: &Topology, cpu: usize) -> [String; 4] {
    let info = topo.cpu(cpu);
    let opt = |v: Option<usize>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
    let kind = info
        .and_then(|c| c.kind)
        .and_then(|k| topo.kinds.get(k))
        .map(|k| k.mark.clone());
    [
        opt(info.and_then(|c| c.core)),
        kind.unwrap_or_else(|| "-".into()),
        opt(info.and_then(|c| c.package)),
        opt(info.and_then(|c| c.numa).map(|n| n as usize)),
    ]
}

/// Left-aligned columns separated by two spaces.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{s:<w$}", w = widths[i]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The human table.
fn table(plan: &Plan, topo: &Topology) -> String {
    let mut out = table_head(plan);
    let rows = if let Some(per) = &plan.tasks_per_cpu {
        task_rows(per, topo)
    } else if plan.pinned {
        thread_rows(&plan.places, topo)
    } else {
        kind_rows(&plan.process_mask, topo)
    };
    out.push_str(&columns(&rows));
    for n in &plan.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if let Some(m) = &plan.memory {
        let _ = writeln!(out, "memory: {}", m.policy);
        for n in &m.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    out
}

/// The table's first line: policy, count, pinning mode and process mask.
fn table_head(plan: &Plan) -> String {
    let mode = if plan.tasks_per_cpu.is_some() {
        "tasks pinned one CPU each"
    } else if plan.pinned {
        "one CPU per thread"
    } else if plan.places.is_empty() {
        "not pinned"
    } else {
        "threads float in the mask"
    };
    let unit = if plan.tasks_per_cpu.is_some() {
        "tasks"
    } else {
        "threads"
    };
    let unit_one = &unit[..unit.len() - 1];
    format!(
        "policy {}: {}, {mode}; process mask {} ({})\n",
        plan.policy,
        crate::plan::count(plan.threads, unit_one, unit),
        plan.process_mask,
        crate::plan::count(plan.process_mask.len(), "CPU", "CPUs")
    )
}

/// A header row: the two leading columns, then the CPU's place columns.
fn place_header(first: &str, second: &str) -> Vec<String> {
    [first, second, "core", "kind", "package", "numa"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Rows of tasks per CPU (balance plans).
fn task_rows(per: &[(usize, usize)], topo: &Topology) -> Vec<Vec<String>> {
    let mut rows = vec![place_header("cpu", "tasks")];
    for (cpu, n) in per {
        let mut r = vec![cpu.to_string(), n.to_string()];
        r.extend(cpu_cols(topo, *cpu));
        rows.push(r);
    }
    rows
}

/// Rows of the CPU each thread is pinned to.
fn thread_rows(places: &[CpuSet], topo: &Topology) -> Vec<Vec<String>> {
    let mut rows = vec![place_header("thread", "cpu")];
    for (i, p) in places.iter().enumerate() {
        let cpu = p.first().expect("pinned places are single CPUs");
        let mut r = vec![i.to_string(), cpu.to_string()];
        r.extend(cpu_cols(topo, cpu));
        rows.push(r);
    }
    rows
}

/// Summarises an unpinned mask by kind: CPUs, core count, packages and nodes.
fn kind_rows(mask: &CpuSet, topo: &Topology) -> Vec<Vec<String>> {
    let mut rows = vec![["kind", "cpus", "cores", "packages", "numa"]
        .iter()
        .map(|s| s.to_string())
        .collect()];
    let mut marks: Vec<Option<usize>> = mask
        .iter()
        .map(|c| topo.cpu(c).and_then(|i| i.kind))
        .collect();
    marks.sort();
    marks.dedup();
    marks.reverse();
    for k in marks {
        let cpus: CpuSet = mask
            .iter()
            .filter(|c| topo.cpu(*c).and_then(|i| i.kind) == k)
            .collect();
        let distinct = |f: &dyn Fn(usize) -> Option<usize>| {
            let s: CpuSet = cpus.iter().filter_map(f).collect();
            if s.is_empty() {
                "-".to_string()
            } else {
                s.to_list_string()
            }
        };
        let cores: CpuSet = cpus
            .iter()
            .filter_map(|c| topo.cpu(c).and_then(|i| i.core))
            .collect();
        rows.push(vec![
            k.and_then(|k| topo.kinds.get(k))
                .map(|k| k.mark.clone())
                .unwrap_or_else(|| "-".into()),
            cpus.to_list_string(),
            cores.len().to_string(),
            distinct(&|c| topo.cpu(c).and_then(|i| i.package)),
            distinct(&|c| topo.cpu(c).and_then(|i| i.numa).map(|n| n as usize)),
        ]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_chosen_from_a_format_and_json() {
        assert_eq!(Format::chosen(None, false), Some(Format::Table));
        assert_eq!(Format::chosen(None, true), Some(Format::Json));
        assert_eq!(
            Format::chosen(Some(Format::Gomp), false),
            Some(Format::Gomp)
        );
        assert_eq!(Format::chosen(Some(Format::Json), true), Some(Format::Json));
        assert_eq!(Format::chosen(Some(Format::Cpulist), true), None);
        assert!(Format::Table.carries_notes() && !Format::Taskset.carries_notes());
    }

    #[test]
    fn gomp_ranges() {
        assert_eq!(gomp_list(&[0, 2, 4]), "0 2 4");
        assert_eq!(gomp_list(&[12, 13, 14, 15, 0, 1, 2]), "12-15 0-2");
        assert_eq!(gomp_list(&[3, 4, 9]), "3 4 9");
        assert_eq!(gomp_list(&[0, 0, 1]), "0 0 1");
    }

    #[test]
    fn hex_masks() {
        assert_eq!(hex_mask(&CpuSet::parse_list("0-3").unwrap()), "0xf");
        assert_eq!(
            hex_mask(&CpuSet::parse_list("64").unwrap()),
            "0x10000000000000000"
        );
        assert_eq!(hex_mask(&CpuSet::new()), "0x0");
    }

    #[test]
    fn format_names_parse() {
        for n in FORMAT_NAMES {
            assert!(n.parse::<Format>().is_ok(), "{n}");
        }
        assert!("xml"
            .parse::<Format>()
            .unwrap_err()
            .to_string()
            .contains("valid formats: table"));
    }
}

/// A launcher's way of binding every rank of a node to its slice
/// (`pinsight slice --all --size N --format ...`), for users who keep the
/// launcher doing the binding. Syntax, per launcher:
/// - `slurm`: `srun --cpu-bind=mask_cpu:0x..,0x..`, one hex mask per task
///   of the node, in local rank order (srun(1), `--cpu-bind`,
///   <https://slurm.schedmd.com/srun.html#OPT_cpu-bind>);
/// - `openmpi`: `--map-by pe-list=a,b:ordered --bind-to hwthread` when every
///   slice is one CPU (Open MPI 5 mpirun(1), "pe-list"; the answer to Open
///   MPI's "P vs E cores" question); larger slices need the rankfile;
/// - `openmpi-rankfile`: `rank N=+n0 slot=LIST` lines (relative node `+n0`,
///   so the same file serves every node), kernel CPU numbers: Open MPI 4.x
///   reads them as such with `--mca rmaps_rank_file_physical 1`;
/// - `hydra`: MPICH `mpiexec -bind-to user:0+1+2,3+4`: ranks separated by
///   commas, a rank's CPUs joined by `+` (Hydra's user binding);
/// - `intel-mpi`: `I_MPI_PIN_PROCESSOR_LIST=a,b` (the i-th rank on the
///   i-th processor) when every slice is one CPU, else explicit domains
///   `I_MPI_PIN_DOMAIN=[0x..,0x..]` (Intel MPI Developer Reference,
///   "Environment Variables for Process Pinning").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Slurm,
    OpenMpi,
    OpenMpiRankfile,
    Hydra,
    IntelMpi,
}

/// A launcher dialect name that is not one of [`DIALECT_NAMES`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown launcher format '{0}'; formats are: slurm, openmpi, openmpi-rankfile, hydra, intel-mpi")]
pub struct DialectError(pub String);

/// The launcher dialects, as typed.
pub const DIALECT_NAMES: &[&str] = &["slurm", "openmpi", "openmpi-rankfile", "hydra", "intel-mpi"];

impl FromStr for Dialect {
    type Err = DialectError;
    fn from_str(s: &str) -> Result<Dialect, DialectError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "slurm" | "srun" => Dialect::Slurm,
            "openmpi" | "ompi" | "open-mpi" => Dialect::OpenMpi,
            "openmpi-rankfile" | "rankfile" => Dialect::OpenMpiRankfile,
            "hydra" | "mpich" => Dialect::Hydra,
            "intel-mpi" | "impi" => Dialect::IntelMpi,
            _ => return Err(DialectError(s.to_string())),
        })
    }
}

/// Every rank's slice (`slices[rank]`) in a launcher's binding syntax,
/// ending with a newline; a line that the dialect cannot express for these
/// slices starts with `#` and says which dialect to use instead.
pub fn launcher_line(dialect: Dialect, slices: &[CpuSet]) -> String {
    let single = slices.iter().all(|s| s.len() == 1);
    let firsts = || {
        slices
            .iter()
            .map(|s| s.first().map_or("-".into(), |c| c.to_string()))
            .collect::<Vec<_>>()
            .join(",")
    };
    match dialect {
        Dialect::Slurm => format!(
            "--cpu-bind=mask_cpu:{}\n",
            slices.iter().map(hex_mask).collect::<Vec<_>>().join(",")
        ),
        Dialect::OpenMpi if single => {
            format!("--map-by pe-list={}:ordered --bind-to hwthread\n", firsts())
        }
        Dialect::OpenMpi => "# pe-list gives each rank one CPU; these slices hold several: use --format openmpi-rankfile\n".into(),
        Dialect::OpenMpiRankfile => {
            let mut out = String::from(
                "# mpirun --map-by rankfile:file=FILE (Open MPI 5) or --rankfile FILE --mca rmaps_rank_file_physical 1 (4.x)\n",
            );
            for (rank, s) in slices.iter().enumerate() {
                let _ = writeln!(out, "rank {rank}=+n0 slot={}", s.to_list_string());
            }
            out
        }
        Dialect::Hydra => format!(
            "-bind-to user:{}\n",
            slices
                .iter()
                .map(|s| s.to_list_string().replace(',', "+"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Dialect::IntelMpi if single => format!("I_MPI_PIN_PROCESSOR_LIST={}\n", firsts()),
        Dialect::IntelMpi => format!(
            "I_MPI_PIN_DOMAIN=[{}]\n",
            slices.iter().map(hex_mask).collect::<Vec<_>>().join(",")
        ),
    }
}
