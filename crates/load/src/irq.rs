//! Interrupt placement (`pinsight irq`): which IRQs land on which CPUs,
//! a plan that moves them off a CPU set or spreads them by capacity, and
//! its application through `/proc/irq/N/smp_affinity_list` (kernel
//! Documentation/core-api/irq/irq-affinity.rst) with a saved state, all
//! or nothing.
//!
//! What is never moved: the architecture's per-CPU interrupts (`LOC`,
//! `NMI`, IPIs: lines without a number, no `/proc/irq/N`), numbered IRQs
//! without an `smp_affinity_list` file, and per-CPU kernel threads
//! (`ksoftirqd/N`, `kworker/N`: `PF_NO_SETAFFINITY`), which are reported.
//! Managed IRQs (multi-queue drivers whose vectors the kernel spreads
//! itself, `IRQD_AFFINITY_MANAGED`) refuse a write with EIO
//! (`irq_set_affinity` in kernel/irq/manage.c): the whole move is then
//! rolled back.

use crate::interrupts::{parse_interrupts, Interrupts};
use crate::sample::{read_threads, ThreadTick};
use pinsight_cpuset::CpuSet;
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One numbered IRQ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Irq {
    pub irq: u32,
    /// Handler names (`virtio0-input.0`).
    pub handlers: Vec<String>,
    /// Those that look like NIC queues.
    pub queues: Vec<String>,
    /// The chip and trigger part of the line (`IO-APIC 2-edge`).
    pub chip: String,
    /// Counts since boot per CPU (CPUs with none left out).
    pub counts: BTreeMap<usize, u64>,
    pub total: u64,
    /// `smp_affinity_list`; `None` when the IRQ has none (not movable).
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`, where the kernel has it.
    pub effective: Option<CpuSet>,
}

impl Irq {
    /// Whether it can be asked to move (it has an `smp_affinity_list`).
    pub fn movable(&self) -> bool {
        self.affinity.is_some()
    }

    /// The CPUs it lands on: the effective affinity, else the CPUs that
    /// counted it, else its affinity.
    pub fn lands_on(&self) -> CpuSet {
        if let Some(e) = &self.effective {
            return e.clone();
        }
        let counted: CpuSet = self.counts.keys().copied().collect();
        if !counted.is_empty() {
            return counted;
        }
        self.affinity.clone().unwrap_or_default()
    }
}

/// A per-CPU kernel thread, reported, never moved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerCpuThread {
    pub cpu: usize,
    pub pid: i32,
    pub comm: String,
}

/// What `irq` shows: the IRQs, the architecture's per-CPU lines, and
/// whether irqbalance runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IrqView {
    pub irqs: Vec<Irq>,
    /// Lines without a number (`LOC`, `NMI`, `IPI0`): per-CPU, not movable.
    pub per_cpu: Vec<String>,
    /// The PID of a running irqbalance, if any.
    pub irqbalance: Option<i32>,
}

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum IrqError {
    #[error("/proc/interrupts: unreadable or not in the kernel's format")]
    NoInterrupts,
    #[error("no IRQ {irq} in /proc/interrupts")]
    Unknown { irq: u32 },
    #[error("IRQ {irq} cannot be moved: it has no smp_affinity_list (a per-CPU interrupt)")]
    NotMovable { irq: u32 },
    #[error("no CPU left for the IRQs: every online CPU ({online}) is in the set to move off")]
    NoCpuLeft { online: CpuSet },
    #[error("IRQ {irq} cannot be moved to {to}: {reason}")]
    Write {
        irq: u32,
        to: CpuSet,
        reason: String,
    },
    #[error("{}: {reason}", path.display())]
    State { path: PathBuf, reason: String },
    #[error("CPU {missing} is not online (online: {online})")]
    Offline { missing: CpuSet, online: CpuSet },
    /// A saved state file someone other than its reader (or root) could
    /// have written: it would move interrupts, so it is not restored.
    #[error("{}: not restored: {why}", path.display())]
    Untrusted { path: PathBuf, why: String },
    /// No directory for a new state file could be made.
    #[error("cannot make a directory for the state file: {0}")]
    StateDir(std::io::Error),
}

impl IrqError {
    /// Whether the input is at fault (an unknown IRQ, a CPU that is not
    /// online, a bad or untrusted state file, a rule that leaves no CPU)
    /// rather than the machine (unreadable interrupts, a refused write).
    pub fn is_input(&self) -> bool {
        match self {
            IrqError::Unknown { .. }
            | IrqError::NoCpuLeft { .. }
            | IrqError::State { .. }
            | IrqError::Offline { .. }
            | IrqError::Untrusted { .. } => true,
            IrqError::NoInterrupts
            | IrqError::NotMovable { .. }
            | IrqError::Write { .. }
            | IrqError::StateDir(_) => false,
        }
    }
}

/// Reads the IRQs under `fs` (with their affinities) and whether
/// irqbalance runs.
pub fn view(fs: &FsRoot) -> Result<IrqView, IrqError> {
    let text = fs
        .read_opt("/proc/interrupts")
        .ok_or(IrqError::NoInterrupts)?;
    let ints = parse_interrupts(&text).ok_or(IrqError::NoInterrupts)?;
    Ok(view_of(fs, &ints))
}

fn read_set(fs: &FsRoot, path: String) -> Option<CpuSet> {
    fs.read_cpulist(path)?.ok()
}

/// [`view`] from parsed interrupts.
pub fn view_of(fs: &FsRoot, ints: &Interrupts) -> IrqView {
    let mut irqs = Vec::new();
    let mut per_cpu = Vec::new();
    for l in &ints.lines {
        let Some(n) = l.number() else {
            per_cpu.push(l.name.clone());
            continue;
        };
        let counts: BTreeMap<usize, u64> = ints
            .cpus
            .iter()
            .enumerate()
            .map(|(col, cpu)| (*cpu, l.count(col)))
            .filter(|(_, v)| *v > 0)
            .collect();
        let handlers = l.handlers();
        let chip = chip_part(&l.desc, &handlers);
        irqs.push(Irq {
            irq: n,
            queues: l.queues(),
            handlers,
            chip,
            total: counts.values().sum(),
            counts,
            affinity: read_set(fs, format!("/proc/irq/{n}/smp_affinity_list")),
            effective: read_set(fs, format!("/proc/irq/{n}/effective_affinity_list")),
        });
    }
    IrqView {
        irqs,
        per_cpu,
        irqbalance: irqbalance_pid(fs),
    }
}

/// The description without its handler names.
fn chip_part(desc: &str, handlers: &[String]) -> String {
    let joined = handlers.join(", ");
    desc.strip_suffix(joined.as_str())
        .unwrap_or(desc)
        .trim()
        .to_string()
}

/// The PID of a process whose `comm` is `irqbalance`, if one runs.
pub fn irqbalance_pid(fs: &FsRoot) -> Option<i32> {
    fs.list_dir("/proc").iter().find_map(|p| {
        let pid: i32 = p.parse().ok()?;
        let comm = fs.read_opt(format!("/proc/{pid}/comm"))?;
        (comm.trim() == "irqbalance").then_some(pid)
    })
}

/// The per-CPU kernel threads on `cpus` (never moved; reported).
pub fn per_cpu_threads(fs: &FsRoot, cpus: &CpuSet) -> Vec<PerCpuThread> {
    let mut v: Vec<PerCpuThread> = read_threads(fs)
        .into_iter()
        .filter(ThreadTick::is_percpu_kernel)
        .filter_map(|t| {
            let cpu = t.last_cpu.filter(|c| cpus.contains(*c))?;
            Some(PerCpuThread {
                cpu,
                pid: t.pid,
                comm: t.comm,
            })
        })
        .collect();
    v.sort_by(|a, b| a.cpu.cmp(&b.cpu).then(a.pid.cmp(&b.pid)));
    v
}

/// Where the IRQs should go.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Off these CPUs: each IRQ keeps the rest of its affinity, or gets
    /// every other online CPU when nothing of it is left.
    Off(CpuSet),
    /// One CPU each, over the online CPUs minus `off`, greedily by count
    /// per unit of capacity (largest count first).
    Spread { off: CpuSet },
}

/// One IRQ's move.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Move {
    pub irq: u32,
    pub handlers: Vec<String>,
    pub before: CpuSet,
    pub after: CpuSet,
}

impl Move {
    /// IRQ `i`'s move from `before` to `after`; `None` when they are the same.
    fn of(i: &Irq, before: CpuSet, after: CpuSet) -> Option<Move> {
        (after != before).then(|| Move {
            irq: i.irq,
            handlers: i.handlers.clone(),
            before,
            after,
        })
    }
}

/// The moves that bring `irqs` (those of `only`, when given: every one
/// must exist and be movable) to `target` on a machine whose online CPUs
/// have `capacity` (relative, CPU → capacity). IRQs already in place are
/// left out.
pub fn plan(
    view: &IrqView,
    only: Option<&[u32]>,
    target: &Target,
    capacity: &BTreeMap<usize, f64>,
) -> Result<Vec<Move>, IrqError> {
    let online: CpuSet = capacity.keys().copied().collect();
    let chosen: Vec<&Irq> = match only {
        Some(list) => list
            .iter()
            .map(|n| {
                let irq = view
                    .irqs
                    .iter()
                    .find(|i| i.irq == *n)
                    .ok_or(IrqError::Unknown { irq: *n })?;
                if irq.movable() {
                    Ok(irq)
                } else {
                    Err(IrqError::NotMovable { irq: *n })
                }
            })
            .collect::<Result<_, _>>()?,
        None => view.irqs.iter().filter(|i| i.movable()).collect(),
    };
    let off = match target {
        Target::Off(s) | Target::Spread { off: s } => s,
    };
    let rest = online.difference(off);
    if rest.is_empty() {
        return Err(IrqError::NoCpuLeft { online });
    }
    let mut moves = Vec::new();
    match target {
        Target::Off(off) => {
            for i in chosen {
                let before = i.affinity.clone().unwrap_or_default();
                if !before.intersects(off) && !i.lands_on().intersects(off) {
                    continue;
                }
                let kept = before.difference(off).intersection(&online);
                let after = if kept.is_empty() { rest.clone() } else { kept };
                moves.extend(Move::of(i, before, after));
            }
        }
        Target::Spread { .. } => {
            let mut order = chosen;
            order.sort_by(|a, b| b.total.cmp(&a.total).then(a.irq.cmp(&b.irq)));
            let mut load: BTreeMap<usize, f64> = rest.iter().map(|c| (c, 0.0)).collect();
            for i in order {
                let cap = |c: usize| capacity.get(&c).copied().unwrap_or(1.0).max(1e-9);
                // The CPU whose load per unit of capacity stays lowest
                // with this IRQ (LPT over capacities); ties: fewest IRQs
                // by weight of one, then the lowest number.
                let weight = (i.total as f64).max(1.0);
                let Some(cpu) = load
                    .iter()
                    .map(|(c, l)| (*c, (l + weight) / cap(*c)))
                    .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
                    .map(|(c, _)| c)
                else {
                    continue;
                };
                *load.entry(cpu).or_default() += weight;
                let before = i.affinity.clone().unwrap_or_default();
                let after = CpuSet::single(cpu);
                moves.extend(Move::of(i, before, after));
            }
        }
    }
    Ok(moves)
}

/// The saved state of a move: each IRQ's `smp_affinity_list` as it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedState {
    /// `pinsight-irq-state`, to recognise the file.
    pub format: String,
    /// IRQ number → its affinity before (a cpulist).
    pub irqs: BTreeMap<u32, String>,
}

const STATE_FORMAT: &str = "pinsight-irq-state";

/// The largest saved IRQ state read: a few bytes an IRQ, 4 MiB is far
/// more than any machine's.
const MAX_STATE_BYTES: u64 = 4 << 20;

impl SavedState {
    /// The state to save before `moves`.
    pub fn of(moves: &[Move]) -> SavedState {
        SavedState {
            format: STATE_FORMAT.into(),
            irqs: moves
                .iter()
                .map(|m| (m.irq, m.before.to_list_string()))
                .collect(),
        }
    }

    /// Reads a saved state file.
    pub fn load(path: &Path) -> Result<SavedState, IrqError> {
        let bad = |reason: String| IrqError::State {
            path: path.to_path_buf(),
            reason,
        };
        // A regular file of at most MAX_STATE_BYTES, read only if it is
        // one (a FIFO or `/dev/zero` is refused unread).
        let text =
            pinsight_sys::fs::read_bounded_string(path, MAX_STATE_BYTES).map_err(|e| match e {
                pinsight_sys::fs::BoundedReadError::Io(e) => bad(e.to_string()),
                e => bad(e.to_string()),
            })?;
        let s: SavedState =
            serde_json::from_str(&text).map_err(|e| bad(format!("not a saved IRQ state ({e})")))?;
        if s.format != STATE_FORMAT {
            return Err(bad(format!(
                "not a saved IRQ state (format '{}')",
                s.format
            )));
        }
        for (irq, list) in &s.irqs {
            let set = CpuSet::parse_list(list).map_err(|e| bad(format!("IRQ {irq}: {e}")))?;
            // An affinity is never empty (the kernel refuses one): an
            // empty list was not saved by a move.
            if set.is_empty() {
                return Err(bad(format!(
                    "IRQ {irq}: an empty CPU list; a saved affinity names at least one CPU"
                )));
            }
        }
        Ok(s)
    }

    /// The moves that bring the IRQs back to this state; IRQs already
    /// there are left out (nothing to move).
    pub fn moves(&self, view: &IrqView) -> Result<Vec<Move>, IrqError> {
        let mut moves = Vec::new();
        for (irq, list) in &self.irqs {
            let now = view
                .irqs
                .iter()
                .find(|i| i.irq == *irq)
                .ok_or(IrqError::Unknown { irq: *irq })?;
            let before = now
                .affinity
                .clone()
                .ok_or(IrqError::NotMovable { irq: *irq })?;
            // `load` refuses a bad or empty list; a state built otherwise
            // moves nothing for one.
            let after = CpuSet::parse_list(list).unwrap_or_default();
            if after.is_empty() || after == before {
                continue;
            }
            moves.push(Move {
                irq: *irq,
                handlers: now.handlers.clone(),
                before,
                after,
            });
        }
        Ok(moves)
    }
}

/// The moves that put back the affinities saved in `path` (see
/// [`SavedState::moves`]): the file is read, then refused unless nobody
/// but its reader (or root) could have written it
/// ([`IrqError::Untrusted`]), as it moves interrupts.
pub fn restore_moves(path: &Path, view: &IrqView) -> Result<Vec<Move>, IrqError> {
    let state = SavedState::load(path)?;
    pinsight_lifecycle::state_file::check_trusted(path).map_err(|why| IrqError::Untrusted {
        path: path.to_path_buf(),
        why,
    })?;
    state.moves(view)
}

/// Writes the state to `path` crash-safe, refusing to replace a file
/// (`O_EXCL`: a second move must not overwrite the first one's undo).
pub fn save_state(state: &SavedState, path: &Path) -> Result<(), IrqError> {
    let text = serde_json::to_string_pretty(state).map_err(|e| IrqError::State {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    pinsight_lifecycle::output::write_new(path, format!("{text}\n").as_bytes()).map_err(|e| {
        IrqError::State {
            path: path.to_path_buf(),
            reason: e.reason(),
        }
    })
}

/// Why a write of `smp_affinity_list` failed, in words. `read_only`: the
/// file has no write permission at all, which is how the kernel makes it
/// for an IRQ whose affinity it manages (`register_irq_proc` in
/// kernel/irq/proc.c gives `S_IWUSR` only where user space may set it);
/// `root`: the writer is root, so a refusal is no missing privilege.
fn write_reason(e: &std::io::Error, read_only: bool, root: bool) -> String {
    const MANAGED: &str = "kernel-managed, cannot be moved";
    match e.raw_os_error() {
        Some(libc::EIO) => {
            format!("{MANAGED} (EIO: the kernel sets its affinity itself, a managed or per-CPU interrupt)")
        }
        Some(libc::EPERM) | Some(libc::EACCES) if read_only => format!(
            "{MANAGED} ({e}: its smp_affinity_list is read-only, as the kernel makes it for interrupts whose affinity it manages)"
        ),
        Some(libc::EPERM) | Some(libc::EACCES) if root => {
            format!("{e} (refused to root: a container or a security policy forbids it)")
        }
        Some(libc::EPERM) | Some(libc::EACCES) => format!("{e} (writing IRQ affinity needs root)"),
        Some(libc::EINVAL) => format!("{e} (the CPUs are not valid targets for it)"),
        Some(libc::ENOSPC) => format!("{e} (no interrupt vector left on those CPUs)"),
        _ => e.to_string(),
    }
}

/// Applies `moves` through `fs`, all or nothing: on the first refusal the
/// IRQs already moved are written back and the error names the refused
/// one. Returns the moves made.
pub fn apply(fs: &FsRoot, moves: &[Move]) -> Result<(), IrqError> {
    for (k, m) in moves.iter().enumerate() {
        let path = format!("/proc/irq/{}/smp_affinity_list", m.irq);
        if let Err(e) = fs.write(&path, &m.after.to_list_string()) {
            let read_only = std::fs::metadata(fs.path(&path)).is_ok_and(|md| {
                std::os::unix::fs::PermissionsExt::mode(&md.permissions()) & 0o222 == 0
            });
            let root = pinsight_sys::process::geteuid() == 0;
            for done in moves[..k].iter().rev() {
                let _ = fs.write(
                    format!("/proc/irq/{}/smp_affinity_list", done.irq),
                    &done.before.to_list_string(),
                );
            }
            return Err(IrqError::Write {
                irq: m.irq,
                to: m.after.clone(),
                reason: write_reason(&e, read_only, root),
            });
        }
    }
    Ok(())
}

/// The moves a rule (`target`: move off, or spread) asks for on the
/// machine `topo` describes (IRQs of `only`, when given), and the per-CPU
/// kernel threads left on the CPUs moved off. Every CPU to move off must
/// be online ([`IrqError::Offline`]).
pub fn plan_rule(
    fs: &FsRoot,
    topo: &pinsight_model::Topology,
    view: &IrqView,
    only: Option<&[u32]>,
    target: &Target,
) -> Result<(Vec<Move>, Vec<PerCpuThread>), IrqError> {
    let caps = crate::capacities(&crate::machine(fs, topo));
    let online: CpuSet = caps.keys().copied().collect();
    let off = match target {
        Target::Off(s) | Target::Spread { off: s } => s,
    };
    let missing = off.difference(&online);
    if !missing.is_empty() {
        return Err(IrqError::Offline { missing, online });
    }
    let moves = plan(view, only, target, &caps)?;
    Ok((moves, per_cpu_threads(fs, off)))
}

/// Saves the affinities `moves` change to `save_to` (when given), then
/// applies them ([`apply`]); the saved file is removed again when the
/// kernel refuses, as nothing changed.
pub fn save_and_apply(fs: &FsRoot, moves: &[Move], save_to: Option<&Path>) -> Result<(), IrqError> {
    if let Some(path) = save_to {
        save_state(&SavedState::of(moves), path)?;
    }
    apply(fs, moves).inspect_err(|_| {
        if let Some(p) = save_to {
            let _ = std::fs::remove_file(p);
        }
    })
}

/// What a move (or its dry run, or a restore) did: `irq --json`'s
/// document.
#[derive(Debug, Serialize)]
pub struct MovesReport {
    /// Nothing was written.
    pub dry_run: bool,
    /// The moves (made, or planned in a dry run).
    pub moves: Vec<Move>,
    /// The per-CPU kernel threads left on the CPUs moved off.
    pub per_cpu_threads: Vec<PerCpuThread>,
    /// The moves put saved affinities back.
    pub restore: bool,
    /// Where the affinities before the move were saved.
    pub state_file: Option<PathBuf>,
}

/// How to carry out moves ([`carry_out`]).
#[derive(Clone, Debug, Default)]
pub struct Carry {
    /// Show the moves, write nothing.
    pub dry_run: bool,
    /// The moves put a saved state back (nothing is saved before them).
    pub restore: bool,
    /// Where to save the affinities before a move (a new file); `None`:
    /// a new file in the state directory ([`state_path`]).
    pub state: Option<PathBuf>,
}

/// `given`, else a new `irq-SECONDS-PID.json` in the state directory
/// (`$XDG_STATE_HOME/pinsight`, else `/var/lib/pinsight` for root: see
/// [`pinsight_lifecycle::state_file`]), never the shared temporary
/// directory ([`IrqError::StateDir`] when it cannot be made).
pub fn state_path(given: Option<&Path>) -> Result<PathBuf, IrqError> {
    match given {
        Some(p) => Ok(p.to_path_buf()),
        None => pinsight_lifecycle::state_file::new_path("irq").map_err(IrqError::StateDir),
    }
}

/// Makes `moves` (unless a dry run): the affinities they change saved
/// first ([`save_and_apply`]; not for a restore or nothing to move), and
/// returns what was done, with `kept`, the per-CPU kernel threads left.
pub fn carry_out(
    fs: &FsRoot,
    moves: Vec<Move>,
    kept: Vec<PerCpuThread>,
    how: &Carry,
) -> Result<MovesReport, IrqError> {
    let state_file = if how.dry_run || how.restore || moves.is_empty() {
        None
    } else {
        Some(state_path(how.state.as_deref())?)
    };
    if !how.dry_run {
        save_and_apply(fs, &moves, state_file.as_deref())?;
    }
    Ok(MovesReport {
        dry_run: how.dry_run,
        moves,
        per_cpu_threads: kept,
        restore: how.restore,
        state_file,
    })
}

#[cfg(test)]
mod tests {
    use super::write_reason;
    use std::io::Error;

    #[test]
    fn a_kernel_managed_irq_is_no_permission_problem() {
        let eio = Error::from_raw_os_error(libc::EIO);
        let eacces = Error::from_raw_os_error(libc::EACCES);
        let eperm = Error::from_raw_os_error(libc::EPERM);
        for (e, read_only, root) in [
            (&eio, false, true),
            (&eacces, true, true),
            (&eperm, true, false),
        ] {
            let r = write_reason(e, read_only, root);
            assert!(r.starts_with("kernel-managed, cannot be moved"), "{r}");
            assert!(!r.contains("needs root"), "{r}");
        }
        // Root refused a writable file: not a missing privilege either.
        assert!(!write_reason(&eacces, false, true).contains("needs root"));
        assert!(write_reason(&eacces, false, false).contains("needs root"));
    }
}
