//! `pin`: apply a plan to a process that is already running, thread by
//! thread.
//!
//! Threads get places in TID order (≈ creation order) or by name then TID.
//! With `qemu`, QEMU's vCPU threads (`CPU n/KVM`, `CPU n/TCG`) get place n —
//! Galante and Oyamada, "To Pin or not to Pin" (§4.3, Table 10 in §5.3),
//! measured 8 vCPUs on P-cores 1.8× faster than on
//! E-cores or mixed — and every other QEMU thread (I/O, emulator) gets the
//! emulator set: the process mask minus the vCPU places, or the whole
//! process mask if that leaves nothing.
//!
//! The assignment is a pure function ([`assign`]); [`pin_process`] reads
//! the threads, applies, and reads back what the kernel now says.
//!
//! Per-CPU kernel threads (`ksoftirqd/N`, `migration/N`, `cpuhp/N`, bound
//! kworkers) carry `PF_NO_SETAFFINITY` in their `stat` flags: the kernel
//! refuses every affinity change with EINVAL. Such threads are reported as
//! such, per thread, by real runs and dry runs alike.

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_plan::{Plan, PlanError, Request};
use pinsight_sys::affinity;
use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::fmt;

/// The order in which threads take places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ThreadOrder {
    /// Ascending TID (≈ creation order).
    #[default]
    Tid,
    /// By thread name, then TID.
    Name,
}

/// Options of [`pin_process`].
#[derive(Clone, Debug, Default)]
pub struct PinOptions {
    pub order: ThreadOrder,
    /// Recognise QEMU vCPU threads.
    pub qemu: bool,
    /// Compute and show, change nothing.
    pub dry_run: bool,
}

/// A thread of the target process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    pub tid: i32,
    pub name: String,
}

/// What a thread is to the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "role", content = "n")]
pub enum Role {
    /// The n-th thread in the chosen order.
    Thread(usize),
    /// QEMU vCPU n.
    Vcpu(usize),
    /// A QEMU thread that is not a vCPU.
    Emulator,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Thread(i) => write!(f, "thread {i}"),
            Role::Vcpu(n) => write!(f, "vCPU {n}"),
            Role::Emulator => f.write_str("emulator"),
        }
    }
}

/// Where one thread should go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub tid: i32,
    pub name: String,
    pub role: Role,
    /// `None`: leave alone (`os` plans).
    pub target: Option<CpuSet>,
}

/// The vCPU number of a QEMU vCPU thread name: `CPU 3/KVM` → 3.
pub fn vcpu_index(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("CPU ")?;
    let (n, accel) = rest.split_once('/')?;
    if accel.is_empty() || !accel.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    n.parse().ok()
}

/// Assigns every thread its target. Pure.
///
/// Pinned plans: thread i (in `order`) gets place i, wrapping around when
/// the process has more threads than the plan has places. Set plans: every
/// thread gets the process mask. `os` plans: no target. With `qemu`, vCPU n
/// gets place n; it is an error if a vCPU has no place (plan for as many
/// threads as there are vCPUs).
pub fn assign(
    tasks: &[TaskInfo],
    plan: &Plan,
    opts: &PinOptions,
) -> Result<Vec<Assignment>, AssignError> {
    let mut tasks = tasks.to_vec();
    match opts.order {
        ThreadOrder::Tid => tasks.sort_by_key(|t| t.tid),
        ThreadOrder::Name => tasks.sort_by(|a, b| a.name.cmp(&b.name).then(a.tid.cmp(&b.tid))),
    }
    if plan.places.is_empty() {
        return Ok(tasks
            .into_iter()
            .enumerate()
            .map(|(i, t)| Assignment {
                tid: t.tid,
                name: t.name,
                role: Role::Thread(i),
                target: None,
            })
            .collect());
    }
    if !opts.qemu {
        return Ok(tasks
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                let target = if plan.pinned {
                    plan.places[i % plan.places.len()].clone()
                } else {
                    plan.process_mask.clone()
                };
                Assignment {
                    tid: t.tid,
                    name: t.name,
                    role: Role::Thread(i),
                    target: Some(target),
                }
            })
            .collect());
    }
    let vcpus: Vec<usize> = tasks.iter().filter_map(|t| vcpu_index(&t.name)).collect();
    if vcpus.is_empty() {
        return Err(AssignError::NoVcpus);
    }
    let place_of_vcpu = |n: usize| -> Result<CpuSet, AssignError> {
        if !plan.pinned {
            return Ok(plan.process_mask.clone());
        }
        plan.places
            .get(n)
            .cloned()
            .ok_or_else(|| AssignError::VcpuWithoutPlace {
                vcpu: n,
                places: plan.places.len(),
                vcpus: vcpus.len(),
                needed: vcpus.iter().max().map_or(0, |m| m + 1),
            })
    };
    let mut vcpu_cpus = CpuSet::new();
    for &n in &vcpus {
        vcpu_cpus.union_with(&place_of_vcpu(n)?);
    }
    let emulator = {
        let rest = plan.process_mask.difference(&vcpu_cpus);
        if rest.is_empty() || !plan.pinned {
            plan.process_mask.clone()
        } else {
            rest
        }
    };
    tasks
        .into_iter()
        .map(|t| {
            Ok(match vcpu_index(&t.name) {
                Some(n) => Assignment {
                    tid: t.tid,
                    role: Role::Vcpu(n),
                    target: Some(place_of_vcpu(n)?),
                    name: t.name,
                },
                None => Assignment {
                    tid: t.tid,
                    role: Role::Emulator,
                    target: Some(emulator.clone()),
                    name: t.name,
                },
            })
        })
        .collect()
}

/// What happened to one thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Its affinity was changed.
    Changed,
    /// It already had its target.
    Unchanged,
    /// Dry run: it would be changed.
    WouldChange,
    /// Dry run: the kernel would refuse (see the error).
    WouldFail,
    /// The plan leaves it alone (`os`).
    LeftAlone,
    /// It exited before it could be pinned.
    Exited,
    /// The kernel refused.
    Failed,
}

/// One thread of the report.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadPin {
    pub tid: i32,
    pub name: String,
    #[serde(flatten)]
    pub role: Role,
    pub before: Option<CpuSet>,
    pub target: Option<CpuSet>,
    /// Read back after the change (dry run: the target).
    pub after: Option<CpuSet>,
    pub outcome: Outcome,
    pub error: Option<String>,
}

/// The result of [`pin_process`].
#[derive(Clone, Debug, Serialize)]
pub struct PinReport {
    pub pid: i32,
    pub policy: String,
    pub dry_run: bool,
    pub threads: Vec<ThreadPin>,
    /// The process exited while being pinned: the report is partial.
    pub process_exited: bool,
    pub notes: Vec<String>,
}

/// Why the plan's places cannot be given to a QEMU process's threads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssignError {
    /// QEMU mode, but no thread is named like a vCPU.
    #[error("no QEMU vCPU threads (named 'CPU n/KVM' or 'CPU n/TCG') in this process")]
    NoVcpus,
    /// A vCPU beyond the plan's places ([`AssignError::threads_needed`]
    /// says how many threads to plan for).
    #[error("vCPU {vcpu} has no place: the plan has {places} place(s) for {vcpus} vCPU(s)")]
    VcpuWithoutPlace {
        vcpu: usize,
        places: usize,
        vcpus: usize,
        /// Threads to plan for: the highest vCPU number plus one.
        needed: usize,
    },
}

impl AssignError {
    /// The threads a plan needs so that every vCPU has a place.
    pub fn threads_needed(&self) -> Option<usize> {
        match self {
            AssignError::NoVcpus => None,
            AssignError::VcpuWithoutPlace { needed, .. } => Some(*needed),
        }
    }
}

/// Why nothing could be pinned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PinError {
    /// No such process (exit 1).
    #[error("no process with PID {0}")]
    NoSuchProcess(i32),
    /// Not allowed to change another user's process (exit 1).
    #[error(
        "permission denied changing the affinity of PID {pid} (owned by {}, you are uid {me}): run as its owner or with CAP_SYS_NICE (e.g. sudo)",
        owner.map_or("another user".to_string(), |u| format!("uid {u}"))
    )]
    PermissionDenied {
        pid: i32,
        owner: Option<u32>,
        me: u32,
    },
    /// The plan does not fit the process (usage, exit 2).
    #[error(transparent)]
    Plan(#[from] AssignError),
    /// The planner refused the request (usage, exit 2).
    #[error(transparent)]
    Planner(#[from] PlanError),
    /// The request has a memory policy (`spec`), which only a program's
    /// own threads can set (usage, exit 2).
    #[error("pin moves the threads of a running process and cannot change its memory policy (set_mempolicy acts on the calling thread only)")]
    MemoryPolicy { spec: String },
}

/// `PF_NO_SETAFFINITY` in `/proc/PID/task/TID/stat`'s flags (field 9):
/// the kernel refuses to change the thread's affinity.
pub const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// The `flags` field (9) of a `stat` line. The name sits between the
/// first '(' and the *last* ')'; fields after it start with field 3.
pub fn parse_stat_flags(text: &str) -> Option<u64> {
    let close = text.rfind(')')?;
    text[close + 1..]
        .split_whitespace()
        .nth(9 - 3)?
        .parse()
        .ok()
}

/// Whether the kernel fixes the affinity of thread `tid` of `pid`
/// (`PF_NO_SETAFFINITY`: a per-CPU kernel thread).
pub fn affinity_is_fixed(fs: &FsRoot, pid: i32, tid: i32) -> bool {
    fs.read_opt(format!("/proc/{pid}/task/{tid}/stat"))
        .and_then(|t| parse_stat_flags(&t))
        .is_some_and(|f| f & PF_NO_SETAFFINITY != 0)
}

/// What EINVAL means for a thread whose affinity the kernel fixes.
pub fn fixed_affinity_reason(name: &str) -> String {
    format!(
        "EINVAL: '{name}' is a per-CPU kernel thread (PF_NO_SETAFFINITY); \
         the kernel does not allow changing its affinity"
    )
}

/// The threads of `pid` with their names, ascending TID.
pub fn threads_of(fs: &FsRoot, pid: i32) -> Result<Vec<TaskInfo>, PinError> {
    if pid <= 0 || !procfs::process_exists(fs, pid) {
        return Err(PinError::NoSuchProcess(pid));
    }
    let tasks: Vec<TaskInfo> = procfs::tids(fs, pid)
        .into_iter()
        .filter_map(|tid| procfs::task_stat(fs, pid, tid).map(|st| TaskInfo { tid, name: st.comm }))
        .collect();
    if tasks.is_empty() {
        return Err(PinError::NoSuchProcess(pid));
    }
    Ok(tasks)
}

/// How many threads to plan for when pinning `pid`: its vCPU count with
/// `qemu` (highest vCPU number + 1), else its thread count.
pub fn threads_to_plan(tasks: &[TaskInfo], qemu: bool) -> usize {
    if qemu {
        if let Some(m) = tasks.iter().filter_map(|t| vcpu_index(&t.name)).max() {
            return m + 1;
        }
    }
    tasks.len().max(1)
}

fn my_uid() -> u32 {
    pinsight_sys::process::geteuid()
}

fn process_gone(fs: &FsRoot, pid: i32) -> bool {
    match procfs::task_stat(fs, pid, pid) {
        None => true,
        Some(st) => st.state == 'Z' || st.state == 'X',
    }
}

/// `pin`'s whole work: plans `request` on `topo` for the threads of `pid`
/// and applies the plan ([`pin_process`]). Without a thread or task
/// count the plan has one place per thread found (per vCPU with `qemu`,
/// [`threads_to_plan`]), or, when the process has more threads than the
/// policy has CPUs, every CPU of the policy (places are then reused round
/// robin, as the report notes). A memory policy cannot be applied to a
/// running process: a request with one is refused before anything is read.
pub fn plan_and_pin(
    fs: &FsRoot,
    pid: i32,
    topo: &Topology,
    mut request: Request,
    opts: &PinOptions,
) -> Result<(Plan, PinReport), PinError> {
    if let Some(m) = &request.mem {
        return Err(PinError::MemoryPolicy {
            spec: m.to_string(),
        });
    }
    let tasks = threads_of(fs, pid)?;
    let counted = request.threads.is_none() && request.tasks.is_none();
    if counted {
        request.threads = Some(threads_to_plan(&tasks, opts.qemu));
    }
    let plan = match pinsight_plan::plan(topo, &request) {
        Err(PlanError::TooManyThreads { .. }) if counted => pinsight_plan::plan(
            topo,
            &Request {
                threads: None,
                ..request
            },
        )?,
        other => other?,
    };
    let report = pin_process(fs, pid, &plan, opts)?;
    Ok((plan, report))
}

impl PinReport {
    /// The threads that could not (in a dry run: would not) be pinned.
    pub fn failed(&self) -> Vec<&ThreadPin> {
        self.threads
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Failed | Outcome::WouldFail))
            .collect()
    }
}

/// Applies `plan` to every thread of `pid` (live machine only: affinity
/// is a syscall). Threads that exit meanwhile are noted and skipped.
pub fn pin_process(
    fs: &FsRoot,
    pid: i32,
    plan: &Plan,
    opts: &PinOptions,
) -> Result<PinReport, PinError> {
    let tasks = threads_of(fs, pid)?;
    let assignments = assign(&tasks, plan, opts).map_err(PinError::Plan)?;
    let mut notes = Vec::new();
    if plan.pinned && !opts.qemu && tasks.len() > plan.places.len() && !plan.places.is_empty() {
        notes.push(format!(
            "the process has {} threads but the plan {} places: places were reused round robin",
            tasks.len(),
            plan.places.len()
        ));
    }
    let mut out = Vec::with_capacity(assignments.len());
    for a in assignments {
        let pin = pin_thread(fs, pid, a, opts.dry_run, &out)?;
        out.push(pin);
    }
    let process_exited = note_outcome(fs, pid, opts.dry_run, &tasks, &out, &mut notes);
    Ok(PinReport {
        pid,
        policy: plan.policy.clone(),
        dry_run: opts.dry_run,
        threads: out,
        process_exited,
        notes,
    })
}

/// Applies one assignment (or, with `dry_run`, says what applying would
/// do). `done` are the threads handled so far: a permission refusal before
/// any change is the whole process's error.
fn pin_thread(
    fs: &FsRoot,
    pid: i32,
    a: Assignment,
    dry_run: bool,
    done: &[ThreadPin],
) -> Result<ThreadPin, PinError> {
    let before = affinity::get_affinity(a.tid).ok();
    let mut pin = ThreadPin {
        tid: a.tid,
        name: a.name,
        role: a.role,
        before: before.clone(),
        target: a.target.clone(),
        after: None,
        outcome: Outcome::LeftAlone,
        error: None,
    };
    let Some(target) = a.target else {
        pin.after = before;
        return Ok(pin);
    };
    // A zombie thread still accepts affinity calls: it has exited all the same.
    let gone = !matches!(procfs::task_stat(fs, pid, a.tid), Some(st) if st.state != 'Z' && st.state != 'X');
    if before.is_none() || gone {
        pin.outcome = Outcome::Exited;
        return Ok(pin);
    }
    let fixed = affinity_is_fixed(fs, pid, a.tid);
    if dry_run {
        return Ok(dry_run_pin(pin, target, fixed));
    }
    match affinity::set_affinity(a.tid, &target) {
        Ok(()) => {
            pin.after = affinity::get_affinity(a.tid).ok();
            pin.outcome = if before.as_ref() == Some(&target) {
                Outcome::Unchanged
            } else {
                Outcome::Changed
            };
        }
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => pin.outcome = Outcome::Exited,
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            if done
                .iter()
                .all(|p: &ThreadPin| p.outcome != Outcome::Changed)
            {
                return Err(PinError::PermissionDenied {
                    pid,
                    owner: procfs::process_uid(fs, pid),
                    me: my_uid(),
                });
            }
            pin.outcome = Outcome::Failed;
            pin.error = Some("permission denied".into());
        }
        Err(e) => {
            pin.outcome = Outcome::Failed;
            pin.after = affinity::get_affinity(a.tid).ok();
            pin.error = Some(match e.raw_os_error() {
                Some(libc::EINVAL) if fixed || affinity_is_fixed(fs, pid, a.tid) => {
                    fixed_affinity_reason(&pin.name)
                }
                Some(libc::EINVAL) => {
                    format!("CPUs {target} are not online or not allowed by the cgroup")
                }
                _ => e.to_string(),
            });
        }
    }
    Ok(pin)
}

/// What pinning a live thread to `target` would do, changing nothing.
/// The kernel refuses any change to a `fixed` affinity, even to the same
/// mask: say what a real run would meet.
fn dry_run_pin(mut pin: ThreadPin, target: CpuSet, fixed: bool) -> ThreadPin {
    if fixed {
        pin.outcome = Outcome::WouldFail;
        pin.error = Some(fixed_affinity_reason(&pin.name));
        pin.after = pin.before.clone();
        return pin;
    }
    pin.outcome = if pin.before.as_ref() == Some(&target) {
        Outcome::Unchanged
    } else {
        Outcome::WouldChange
    };
    pin.after = Some(target);
    pin
}

/// Notes what the report cannot show by itself (another user's process
/// in a dry run, threads new since the listing, threads or the process
/// that exited); returns whether the process exited.
fn note_outcome(
    fs: &FsRoot,
    pid: i32,
    dry_run: bool,
    tasks: &[TaskInfo],
    out: &[ThreadPin],
    notes: &mut Vec<String>,
) -> bool {
    if dry_run && my_uid() != 0 && procfs::process_uid(fs, pid).is_some_and(|u| u != my_uid()) {
        notes.push(
            "dry run: the process belongs to another user; applying would need CAP_SYS_NICE".into(),
        );
    }
    if !dry_run {
        let known: std::collections::BTreeSet<i32> = tasks.iter().map(|t| t.tid).collect();
        let new = procfs::tids(fs, pid)
            .into_iter()
            .filter(|t| !known.contains(t))
            .count();
        if new > 0 {
            notes.push(format!("{new} thread(s) appeared while pinning and were not pinned: run again to include them"));
        }
    }
    let exited = out.iter().filter(|p| p.outcome == Outcome::Exited).count();
    let process_exited = exited > 0 && process_gone(fs, pid);
    if exited > 0 && !process_exited {
        notes.push(format!("{exited} thread(s) exited while being pinned"));
    }
    if process_exited {
        notes.push(format!(
            "PID {pid} exited while being pinned: this report is partial"
        ));
    }
    process_exited
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(places: &[usize], pinned: bool) -> Plan {
        let places: Vec<CpuSet> = places.iter().map(|&c| CpuSet::single(c)).collect();
        Plan {
            pinned,
            ..Plan::pinned_to("t".into(), places, vec![])
        }
    }

    fn task(tid: i32, name: &str) -> TaskInfo {
        TaskInfo {
            tid,
            name: name.into(),
        }
    }

    fn targets(a: &[Assignment]) -> Vec<(i32, String)> {
        a.iter()
            .map(|a| {
                (
                    a.tid,
                    a.target.as_ref().map_or("-".into(), |t| t.to_list_string()),
                )
            })
            .collect()
    }

    #[test]
    fn stat_flags_field_nine() {
        let line = "14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat_flags(line), Some(69238848));
        assert_ne!(parse_stat_flags(line).unwrap() & PF_NO_SETAFFINITY, 0);
        // kthreadd itself may be moved.
        let line = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5";
        assert_eq!(parse_stat_flags(line).unwrap() & PF_NO_SETAFFINITY, 0);
        // A name with spaces and parentheses does not shift the fields.
        let line = "7 (a) b (c) S 1 7 7 0 -1 4194560 0 0";
        assert_eq!(parse_stat_flags(line), Some(4194560));
        assert_eq!(parse_stat_flags("7 (short) S 1"), None);
        assert!(fixed_affinity_reason("migration/0").starts_with("EINVAL: 'migration/0'"));
    }

    #[test]
    fn vcpu_names() {
        assert_eq!(vcpu_index("CPU 0/KVM"), Some(0));
        assert_eq!(vcpu_index("CPU 12/TCG"), Some(12));
        assert_eq!(vcpu_index("CPU x/KVM"), None);
        assert_eq!(vcpu_index("CPU 1/"), None);
        assert_eq!(vcpu_index("qemu-system-x86"), None);
        assert_eq!(vcpu_index("worker"), None);
    }

    #[test]
    fn pinned_plans_go_in_tid_order_and_wrap() {
        let tasks = [task(30, "c"), task(10, "a"), task(20, "b")];
        let a = assign(&tasks, &plan(&[4, 5], true), &PinOptions::default()).unwrap();
        assert_eq!(
            targets(&a),
            vec![(10, "4".into()), (20, "5".into()), (30, "4".into())]
        );
        assert_eq!(a[2].role, Role::Thread(2));
    }

    #[test]
    fn name_order_then_tid() {
        let tasks = [task(10, "zeta"), task(20, "alpha"), task(15, "alpha")];
        let opts = PinOptions {
            order: ThreadOrder::Name,
            ..Default::default()
        };
        let a = assign(&tasks, &plan(&[1, 2, 3], true), &opts).unwrap();
        assert_eq!(
            targets(&a),
            vec![(15, "1".into()), (20, "2".into()), (10, "3".into())]
        );
    }

    #[test]
    fn set_and_os_plans() {
        let tasks = [task(1, "a"), task(2, "b")];
        let a = assign(&tasks, &plan(&[4, 5], false), &PinOptions::default()).unwrap();
        assert_eq!(targets(&a), vec![(1, "4-5".into()), (2, "4-5".into())]);
        let mut os = plan(&[], false);
        os.process_mask = CpuSet::first_n(8);
        let a = assign(&tasks, &os, &PinOptions::default()).unwrap();
        assert_eq!(targets(&a), vec![(1, "-".into()), (2, "-".into())]);
    }

    #[test]
    fn qemu_vcpus_by_number_and_emulator_gets_the_rest() {
        // vCPU threads in odd TID order; plan places 0..3 for 2 vCPUs + spare CPUs 2-3.
        let tasks = [
            task(100, "qemu-system-x86"),
            task(103, "CPU 1/KVM"),
            task(102, "CPU 0/KVM"),
            task(101, "IO mon_iothread"),
        ];
        let mut p = plan(&[0, 1], true);
        p.process_mask = CpuSet::first_n(4);
        let opts = PinOptions {
            qemu: true,
            ..Default::default()
        };
        let a = assign(&tasks, &p, &opts).unwrap();
        assert_eq!(
            targets(&a),
            vec![
                (100, "2-3".into()),
                (101, "2-3".into()),
                (102, "0".into()),
                (103, "1".into())
            ]
        );
        assert_eq!(a[2].role, Role::Vcpu(0));
        assert_eq!(a[0].role, Role::Emulator);
        // Nothing left over: the emulator shares the whole mask.
        let a = assign(&tasks, &plan(&[0, 1], true), &opts).unwrap();
        assert_eq!(a[0].target.as_ref().unwrap().to_list_string(), "0-1");
    }

    #[test]
    fn qemu_errors_name_the_problem() {
        let opts = PinOptions {
            qemu: true,
            ..Default::default()
        };
        let e = assign(&[task(1, "bash")], &plan(&[0], true), &opts).unwrap_err();
        assert_eq!(e, AssignError::NoVcpus);
        let e = assign(
            &[task(1, "CPU 0/KVM"), task(2, "CPU 3/KVM")],
            &plan(&[0, 1], true),
            &opts,
        )
        .unwrap_err();
        assert_eq!(
            e,
            AssignError::VcpuWithoutPlace {
                vcpu: 3,
                places: 2,
                vcpus: 2,
                needed: 4
            }
        );
        assert!(e.to_string().contains("vCPU 3 has no place"), "{e}");
        assert_eq!(e.threads_needed(), Some(4));
        assert_eq!(AssignError::NoVcpus.threads_needed(), None);
    }

    /// This test process, its threads planned on a one-CPU machine: more
    /// threads than CPUs reuse the places unless a count was asked for.
    #[test]
    fn plan_and_pin_plans_for_the_threads_found() {
        let fs = FsRoot::live();
        let me = std::process::id() as i32;
        // A second thread, so the process has more threads than CPUs.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let helper = std::thread::spawn(move || rx.recv());
        let one = pinsight_plan::slice::restrict(
            &pinsight_testkit::topology::i7_1370p(),
            &CpuSet::single(0),
        );
        let opts = PinOptions {
            dry_run: true,
            ..Default::default()
        };
        let compact = || Request::new("compact".parse().unwrap());
        let (plan, report) = plan_and_pin(&fs, me, &one, compact(), &opts).unwrap();
        assert_eq!(plan.places.len(), 1, "the policy's whole set");
        assert!(report.threads.len() >= 2 && report.dry_run);
        assert!(
            report.notes.iter().any(|n| n.contains("round robin")),
            "{:?}",
            report.notes
        );
        let asked = Request {
            threads: Some(2),
            ..compact()
        };
        let e = plan_and_pin(&fs, me, &one, asked, &opts).unwrap_err();
        assert!(
            matches!(e, PinError::Planner(PlanError::TooManyThreads { .. })),
            "{e}"
        );
        let e = plan_and_pin(&fs, 999_999_999, &one, compact(), &opts).unwrap_err();
        assert_eq!(e, PinError::NoSuchProcess(999_999_999));
        let bind = Request {
            mem: Some("bind:0".parse().unwrap()),
            ..compact()
        };
        let e = plan_and_pin(&fs, me, &one, bind, &opts).unwrap_err();
        assert_eq!(
            e,
            PinError::MemoryPolicy {
                spec: "bind:0".into()
            }
        );
        assert!(e.to_string().contains("set_mempolicy"), "{e}");
        tx.send(()).unwrap();
        helper.join().unwrap().unwrap();
    }

    #[test]
    fn threads_to_plan_counts_vcpus_or_threads() {
        let tasks = [task(1, "qemu"), task(2, "CPU 0/KVM"), task(3, "CPU 1/KVM")];
        assert_eq!(threads_to_plan(&tasks, true), 2);
        assert_eq!(threads_to_plan(&tasks, false), 3);
        assert_eq!(threads_to_plan(&[task(1, "x")], true), 1);
    }
}
