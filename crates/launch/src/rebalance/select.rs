//! Which running work to rebalance: processes (or their threads) named by
//! PID, by a regular expression over names, or by a cgroup v2 directory.
//!
//! Everything is read through [`FsRoot`]: `/proc/PID/comm` and `cmdline`
//! (proc(5)), `/proc/PID/task/TID/stat` for thread names, and a cgroup's
//! `cgroup.procs` / `cgroup.threads` (the kernel's cgroup-v2 documentation,
//! "Processes" and "Threads": one PID or TID per line).

use super::RebalanceError;
use pinsight_cpuset::CpuSet;
use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
use serde::Serialize;

/// What to select.
#[derive(Clone, Debug)]
pub enum Selector {
    /// These processes (every one must exist).
    Pids(Vec<i32>),
    /// Processes whose name (`comm`) matches, as `pgrep` matches, or with
    /// `full` whose whole command line does (`pgrep -f`; the name when
    /// the command line is empty); per thread, also threads whose own
    /// name matches.
    Match { pattern: regex::Regex, full: bool },
    /// The members of a cgroup v2 directory: a path under the cgroup mount
    /// (`/sys/fs/cgroup/...`) or relative to it (`system.slice/x.service`).
    Cgroup(String),
}

impl Selector {
    /// The selector of the first criterion given: PIDs, else a pattern
    /// (compiled, see [`pattern`]; `full`: over whole command lines),
    /// else a cgroup; `None` when none is.
    pub fn first_of(
        pids: Option<&[i32]>,
        pattern: Option<&str>,
        full: bool,
        cgroup: Option<&str>,
    ) -> Result<Option<Selector>, RebalanceError> {
        Ok(match (pids, pattern, cgroup) {
            (Some(p), _, _) => Some(Selector::Pids(p.to_vec())),
            (_, Some(re), _) => Some(Selector::Match {
                pattern: self::pattern(re)?,
                full,
            }),
            (_, _, Some(c)) => Some(Selector::Cgroup(c.to_string())),
            _ => None,
        })
    }
}

/// Compiles a `Match` pattern (the regex crate's syntax, unanchored).
pub fn pattern(text: &str) -> Result<regex::Regex, RebalanceError> {
    regex::Regex::new(text).map_err(|e| RebalanceError::BadRegex {
        text: text.to_string(),
        reason: e
            .to_string()
            .lines()
            .last()
            .unwrap_or("invalid")
            .trim()
            .to_string(),
    })
}

/// Where cgroup v2 is mounted (the kernel's cgroup-v2 documentation,
/// "Mounting"; systemd mounts it there).
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// One unit of work the plan places: a whole process (every thread gets
/// the task's CPUs, as `taskset -a -p` does) or one thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Task {
    pub pid: i32,
    /// The thread, when tasks are threads; `None` for a whole process.
    pub tid: Option<i32>,
    /// The process's (or thread's) name.
    pub name: String,
    /// The threads the task's CPUs are given to, ascending.
    pub threads: Vec<i32>,
    /// The affinity before (the union over its threads).
    pub before: CpuSet,
}

/// The tasks `sel` names on `fs`, ascending by PID then TID.
/// `per_thread`: one task per thread.
///
/// Never selected: this pinsight process, its ancestors (the shell,
/// `timeout`, `sudo` or `sh -c` it runs under: moving them would move
/// pinsight's own launcher, and `--match` on whole command lines used to
/// find them) and kernel threads. Named by `--pids`, each is refused;
/// matched by a pattern or found in a cgroup, each is left out.
pub fn select(fs: &FsRoot, sel: &Selector, per_thread: bool) -> Result<Vec<Task>, RebalanceError> {
    let me = std::process::id() as i32;
    let ancestors = ancestors(fs, me);
    let pids = candidates(fs, sel, me, &ancestors)?;
    let cgroup_threads = match sel {
        Selector::Cgroup(path) if per_thread => Some(cgroup_members(fs, path, "cgroup.threads")?),
        _ => None,
    };
    let mut tasks = Vec::new();
    for pid in pids.into_iter().filter(|p| *p != me) {
        let Some(comm) = process_name(fs, pid) else {
            continue; // exited while listing
        };
        let threads: Vec<(i32, String)> = procfs::tids(fs, pid)
            .into_iter()
            .filter_map(|t| procfs::task_stat(fs, pid, t).map(|s| (t, s.comm)))
            .collect();
        let process_matches = match sel {
            Selector::Match {
                pattern,
                full: false,
            } => pattern.is_match(&comm),
            Selector::Match {
                pattern,
                full: true,
            } => pattern.is_match(&cmdline(fs, pid).unwrap_or_else(|| comm.clone())),
            _ => true,
        };
        if per_thread {
            let members = cgroup_threads.as_deref();
            tasks.extend(thread_tasks(
                fs,
                sel,
                pid,
                threads,
                process_matches,
                members,
            ));
        } else {
            tasks.extend(process_task(fs, sel, pid, comm, &threads, process_matches));
        }
    }
    if tasks.is_empty() {
        return Err(match sel {
            Selector::Match { pattern, .. } => {
                RebalanceError::NoMatch(pattern.as_str().to_string())
            }
            Selector::Cgroup(path) => RebalanceError::EmptyCgroup(cgroup_dir(path)),
            Selector::Pids(p) => RebalanceError::UnknownPids(p.clone()),
        });
    }
    Ok(tasks)
}

/// The processes `sel` names, before their threads are read: named PIDs
/// (each checked), else every process or the cgroup's, less those off
/// limits (`me`, its `ancestors`, kernel threads).
fn candidates(
    fs: &FsRoot,
    sel: &Selector,
    me: i32,
    ancestors: &std::collections::BTreeSet<i32>,
) -> Result<Vec<i32>, RebalanceError> {
    let off_limits = |p: i32| p == me || ancestors.contains(&p) || is_kernel_thread(fs, p);
    Ok(match sel {
        Selector::Pids(pids) => named_pids(fs, pids, me, ancestors)?,
        Selector::Match { .. } => {
            let mut v: Vec<i32> = fs
                .list_dir("/proc")
                .iter()
                .filter_map(|n| n.parse::<i32>().ok())
                .filter(|&p| !off_limits(p))
                .collect();
            v.sort_unstable();
            v
        }
        Selector::Cgroup(path) => cgroup_members(fs, path, "cgroup.procs")?
            .into_iter()
            .filter(|&p| !off_limits(p))
            .collect(),
    })
}

/// PIDs named by `--pids`, ascending and once each: every one must be a
/// live process other than `me`, its `ancestors` and kernel threads.
fn named_pids(
    fs: &FsRoot,
    pids: &[i32],
    me: i32,
    ancestors: &std::collections::BTreeSet<i32>,
) -> Result<Vec<i32>, RebalanceError> {
    let missing: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|p| *p <= 0 || !alive(fs, *p))
        .collect();
    if !missing.is_empty() {
        return Err(RebalanceError::UnknownPids(missing));
    }
    if pids.contains(&me) {
        return Err(RebalanceError::OwnProcess(me));
    }
    let name = |p: i32| process_name(fs, p).unwrap_or_default();
    if let Some(&p) = pids.iter().find(|p| ancestors.contains(*p)) {
        return Err(RebalanceError::Ancestor {
            pid: p,
            name: name(p),
        });
    }
    if let Some(&p) = pids.iter().find(|&&p| is_kernel_thread(fs, p)) {
        return Err(RebalanceError::KernelThread {
            pid: p,
            name: name(p),
        });
    }
    let mut v = pids.to_vec();
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// One task per thread of `pid` that `sel` keeps (by its own name with a
/// pattern, by `members` of the cgroup) and whose affinity is readable.
fn thread_tasks(
    fs: &FsRoot,
    sel: &Selector,
    pid: i32,
    threads: Vec<(i32, String)>,
    process_matches: bool,
    members: Option<&[i32]>,
) -> Vec<Task> {
    let mut tasks = Vec::new();
    for (tid, name) in threads {
        let keep = match (sel, members) {
            (Selector::Match { pattern, .. }, _) => process_matches || pattern.is_match(&name),
            (_, Some(members)) => members.contains(&tid),
            _ => true,
        };
        if let (true, Some(before)) = (keep, procfs::task_allowed(fs, pid, tid)) {
            tasks.push(Task {
                pid,
                tid: Some(tid),
                name,
                threads: vec![tid],
                before,
            });
        }
    }
    tasks
}

/// The whole process `pid` as one task, when `sel` keeps it (with a
/// pattern: it or one of its threads matches) and its threads and
/// affinity are readable.
fn process_task(
    fs: &FsRoot,
    sel: &Selector,
    pid: i32,
    comm: String,
    threads: &[(i32, String)],
    process_matches: bool,
) -> Option<Task> {
    let keep = match sel {
        Selector::Match { pattern, .. } => {
            process_matches || threads.iter().any(|(_, n)| pattern.is_match(n))
        }
        _ => true,
    };
    let tids: Vec<i32> = threads.iter().map(|(t, _)| *t).collect();
    let before = tids
        .iter()
        .filter_map(|t| procfs::task_allowed(fs, pid, *t))
        .fold(CpuSet::new(), |a, s| a.union(&s));
    (keep && !tids.is_empty() && !before.is_empty()).then_some(Task {
        pid,
        tid: None,
        name: comm,
        threads: tids,
        before,
    })
}

/// A cgroup path as an absolute directory under [`CGROUP_ROOT`].
pub fn cgroup_dir(path: &str) -> String {
    let rel = path
        .strip_prefix(CGROUP_ROOT)
        .unwrap_or(path)
        .trim_matches('/');
    if rel.is_empty() {
        CGROUP_ROOT.to_string()
    } else {
        format!("{CGROUP_ROOT}/{rel}")
    }
}

/// The PIDs (or TIDs) listed in a cgroup's `file`.
fn cgroup_members(fs: &FsRoot, path: &str, file: &str) -> Result<Vec<i32>, RebalanceError> {
    let dir = cgroup_dir(path);
    let missing = || RebalanceError::NoCgroup {
        dir: dir.clone(),
        file: file.to_string(),
    };
    if path.split('/').any(|part| part == "..") {
        return Err(missing());
    }
    let text = fs.read_opt(format!("{dir}/{file}")).ok_or_else(missing)?;
    let mut v: Vec<i32> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Whether the process exists and is not a zombie.
fn alive(fs: &FsRoot, pid: i32) -> bool {
    procfs::task_stat(fs, pid, pid).is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

/// The process's name (`comm`); `None` when it is gone.
fn process_name(fs: &FsRoot, pid: i32) -> Option<String> {
    procfs::task_stat(fs, pid, pid)
        .filter(|s| s.state != 'Z' && s.state != 'X')
        .map(|s| s.comm)
}

/// The command line, arguments joined by spaces; `None` when empty.
fn cmdline(fs: &FsRoot, pid: i32) -> Option<String> {
    let text = fs.read_opt(format!("/proc/{pid}/cmdline"))?;
    let words: Vec<&str> = text.split('\0').filter(|w| !w.is_empty()).collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The ancestors of process `pid` (its parent, the parent's parent, up
/// to and including PID 1), from `/proc/PID/stat`'s `ppid`; a loop or a
/// process gone on the way ends the walk.
pub fn ancestors(fs: &FsRoot, pid: i32) -> std::collections::BTreeSet<i32> {
    let mut out = std::collections::BTreeSet::new();
    let mut at = pid;
    while let Some(parent) = ppid(fs, at) {
        if parent <= 0 || !out.insert(parent) || parent == 1 {
            break;
        }
        at = parent;
    }
    out
}

/// The parent's PID from `/proc/PID/stat` (field 4).
fn ppid(fs: &FsRoot, pid: i32) -> Option<i32> {
    let t = fs.read_opt(format!("/proc/{pid}/stat"))?;
    let close = t.rfind(')')?;
    t[close + 1..].split_whitespace().nth(1)?.parse().ok()
}

/// Kernel threads have an empty command line and are children of
/// kthreadd (PID 2) or kthreadd itself; `--match` never selects them.
pub(crate) fn is_kernel_thread(fs: &FsRoot, pid: i32) -> bool {
    pid == 2 || ppid(fs, pid) == Some(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_criterion_given_selects() {
        let s = Selector::first_of(Some(&[4, 2]), Some("x"), false, Some("a")).unwrap();
        assert!(matches!(s, Some(Selector::Pids(p)) if p == [4, 2]));
        let s = Selector::first_of(None, Some("^w"), true, Some("a")).unwrap();
        assert!(matches!(s, Some(Selector::Match { full: true, .. })));
        let s = Selector::first_of(None, None, false, Some("a.slice")).unwrap();
        assert!(matches!(s, Some(Selector::Cgroup(c)) if c == "a.slice"));
        assert!(Selector::first_of(None, None, false, None)
            .unwrap()
            .is_none());
        let e = Selector::first_of(None, Some("(\u{1b}"), false, None).unwrap_err();
        assert_eq!(e.input(), Some(crate::rebalance::Input::Pattern));
        let text = e.to_string();
        assert!(
            text.starts_with("'(\\u{1b}' is not a regular expression"),
            "{text}"
        );
    }

    #[test]
    fn cgroup_paths_are_under_the_mount() {
        assert_eq!(
            cgroup_dir("system.slice/x.service"),
            "/sys/fs/cgroup/system.slice/x.service"
        );
        assert_eq!(cgroup_dir("/sys/fs/cgroup/a/b/"), "/sys/fs/cgroup/a/b");
        assert_eq!(cgroup_dir("/a"), "/sys/fs/cgroup/a");
        assert_eq!(cgroup_dir("/"), "/sys/fs/cgroup");
    }

    #[test]
    fn selection_errors_name_the_input() {
        let fs = FsRoot::live();
        let e = select(&fs, &Selector::Pids(vec![999_999_999]), false).unwrap_err();
        assert!(
            matches!(e, RebalanceError::UnknownPids(ref p) if p == &[999_999_999]),
            "{e}"
        );
        let pattern = regex::Regex::new("^no-such-process-name-xyz$").unwrap();
        let e = select(
            &fs,
            &Selector::Match {
                pattern,
                full: false,
            },
            false,
        )
        .unwrap_err();
        assert!(matches!(e, RebalanceError::NoMatch(_)), "{e}");
        let e = select(&fs, &Selector::Cgroup("no/such/cgroup-xyz".into()), false).unwrap_err();
        assert!(matches!(e, RebalanceError::NoCgroup { .. }), "{e}");
        let e = select(&fs, &Selector::Cgroup("../etc".into()), false).unwrap_err();
        assert!(matches!(e, RebalanceError::NoCgroup { .. }), "{e}");
    }

    #[test]
    fn own_process_is_never_selected() {
        let fs = FsRoot::live();
        let me = std::process::id() as i32;
        let e = select(&fs, &Selector::Pids(vec![me]), true).unwrap_err();
        assert!(matches!(e, RebalanceError::OwnProcess(_)), "{e}");
    }
}
