//! The CPUs and memory nodes this process's cpuset cgroup allows.
//!
//! Containers and batch schedulers (Slurm, Kubernetes) confine a process
//! with a cpuset cgroup; planning on CPUs we may not use would be wrong.
//! The hierarchy can be:
//! - cgroup v2, at any mount point (`/sys/fs/cgroup`, `/cgroup/unified`,
//!   ...) whose `cgroup.controllers` lists `cpuset`: `cpuset.cpus.effective`;
//! - cgroup v1 with the `cpuset` option: `cpuset.effective_cpus`, else
//!   `cpuset.cpus` — or, when mounted with `noprefix`, the same names
//!   without the `cpuset.` prefix;
//! - the legacy `cpuset` filesystem (`/dev/cpuset`): `effective_cpus`, else
//!   `cpus`.
//!
//! The memory nodes come from the same group: `cpuset.mems.effective` (v2),
//! `cpuset.effective_mems`, else `cpuset.mems` (v1; `effective_mems`,
//! `mems` without the prefix and on the legacy filesystem).
//!
//! Mount points come from `/proc/mounts` (like hwloc), the process's group
//! from `/proc/self/cgroup` (the `0::` line for v2, the line naming
//! `cpuset` for v1), else from `/proc/self/cpuset`.

use super::reader::Reader;
use pinsight_cpuset::CpuSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    V2,
    V1 { prefix: bool },
    Legacy,
}

/// The process's cpuset cgroup directory and its hierarchy's flavor.
pub(super) struct Group {
    flavor: Flavor,
    dir: String,
}

/// The cpuset cgroup this process is in, `None` when no cpuset hierarchy
/// is mounted (the normal case outside containers).
pub(super) fn locate(r: &mut Reader) -> Option<Group> {
    let mounts = r
        .text("/proc/mounts")
        .or_else(|| r.text("/proc/self/mounts"))?;
    let mut found: Vec<(Flavor, String)> = Vec::new();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (mnt, fstype, opts) = (unescape(f[1]), f[2], f[3]);
        let opts: Vec<&str> = opts.split(',').collect();
        match fstype {
            "cgroup2" => {
                let controllers =
                    r.text(&format!("{}/cgroup.controllers", mnt.trim_end_matches('/')));
                if controllers.is_some_and(|c| c.split_whitespace().any(|w| w == "cpuset")) {
                    found.push((Flavor::V2, mnt));
                }
            }
            "cgroup" if opts.contains(&"cpuset") => {
                found.push((
                    Flavor::V1 {
                        prefix: !opts.contains(&"noprefix"),
                    },
                    mnt,
                ));
            }
            "cpuset" => found.push((Flavor::Legacy, mnt)),
            _ => {}
        }
    }
    // Prefer v2, then v1, then legacy, like hwloc.
    found.sort_by_key(|(f, _)| match f {
        Flavor::V2 => 0,
        Flavor::V1 { .. } => 1,
        Flavor::Legacy => 2,
    });
    let (flavor, mnt) = found.into_iter().next()?;
    let group = group_path(r, flavor)?;
    let dir = format!(
        "{}{}",
        mnt.trim_end_matches('/'),
        if group == "/" { "" } else { group.as_str() }
    );
    Some(Group { flavor, dir })
}

/// The allowed CPUs and the file that said so, `None` when no cpuset
/// restriction could be found.
pub(super) fn allowed_cpus(r: &mut Reader, g: &Group) -> Option<(CpuSet, String)> {
    first_set(r, g, "cpus")
}

/// The allowed memory nodes (as a set of node ids) and the file that said
/// so, `None` when no cpuset restriction could be found.
pub(super) fn allowed_mems(r: &mut Reader, g: &Group) -> Option<(CpuSet, String)> {
    first_set(r, g, "mems")
}

/// The first cpuset file of the group's directory holding a non-empty
/// list of `what` (`cpus` or `mems`), the effective one first:
/// `cpuset.WHAT.effective` (v2), `cpuset.effective_WHAT` then
/// `cpuset.WHAT` (v1 with the prefix), `effective_WHAT` then `WHAT` (v1
/// without it, and the legacy cpuset file system).
fn first_set(r: &mut Reader, g: &Group, what: &str) -> Option<(CpuSet, String)> {
    let names = match g.flavor {
        Flavor::V2 => vec![format!("cpuset.{what}.effective")],
        Flavor::V1 { prefix: true } => {
            vec![format!("cpuset.effective_{what}"), format!("cpuset.{what}")]
        }
        Flavor::V1 { prefix: false } | Flavor::Legacy => {
            vec![format!("effective_{what}"), what.to_string()]
        }
    };
    for name in names {
        let path = format!("{}/{name}", g.dir);
        if let Some(set) = r.cpulist(&path, "ignored the cgroup restriction") {
            if set.is_empty() {
                // v1 effective files may be empty on cgroups that inherit;
                // try the next name, never confine to nothing.
                continue;
            }
            return Some((set, path));
        }
    }
    None
}

/// The process's cgroup path for this hierarchy (`/` for the root).
fn group_path(r: &mut Reader, flavor: Flavor) -> Option<String> {
    if let Some(text) = r.text("/proc/self/cgroup") {
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let matches = match flavor {
                Flavor::V2 => ctrls.is_empty(),
                _ => ctrls.split(',').any(|c| c == "cpuset"),
            };
            if matches && path.starts_with('/') {
                return Some(path.to_string());
            }
        }
    }
    r.text("/proc/self/cpuset")
        .map(|p| p.trim().to_string())
        .filter(|p| p.starts_with('/'))
}

/// `/proc/mounts` escapes spaces and the like as `\040` octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn mount_escapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/end\\04"), "/end\\04");
    }
}
