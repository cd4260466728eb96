//! NUMA memory policy of the calling thread: `set_mempolicy(2)` and
//! `get_mempolicy(2)`, and the kernel's weighted-interleave weights.
//!
//! Hand-written FFI on purpose: neither nix (no NUMA module) nor rustix
//! (lists `set_mempolicy`/`get_mempolicy` in its `not_implemented` module)
//! wraps these calls, and libnuma would add a C library for two syscalls.
//! Masks are `unsigned long` arrays like affinity masks
//! ([`crate::affinity::to_kernel_words`]), sized by the nodes named.

use crate::affinity::{from_kernel_words, to_kernel_words};
use crate::FsRoot;
use pinsight_cpuset::CpuSet;
use std::io;

/// `MPOL_DEFAULT`.
pub const MPOL_DEFAULT: i32 = libc::MPOL_DEFAULT;
/// `MPOL_PREFERRED`.
pub const MPOL_PREFERRED: i32 = libc::MPOL_PREFERRED;
/// `MPOL_BIND`.
pub const MPOL_BIND: i32 = libc::MPOL_BIND;
/// `MPOL_INTERLEAVE`.
pub const MPOL_INTERLEAVE: i32 = libc::MPOL_INTERLEAVE;
/// `MPOL_LOCAL`.
pub const MPOL_LOCAL: i32 = libc::MPOL_LOCAL;
/// `MPOL_WEIGHTED_INTERLEAVE` (Linux 6.9; not in libc 0.2 yet).
pub const MPOL_WEIGHTED_INTERLEAVE: i32 = 6;

/// Bits of the mask `get_mempolicy` reads into: more than the kernel's
/// largest `MAX_NUMNODES` (1024), which it requires to be covered.
const GET_BITS: usize = 1024 + 64;

const WORD_BITS: usize = 8 * std::mem::size_of::<libc::c_ulong>();

/// A thread's memory policy as the kernel holds it: the mode (with any
/// `MPOL_F_*` mode flags) and the node mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadPolicy {
    /// `MPOL_*`, possibly or-ed with mode flags.
    pub mode: i32,
    /// The nodes (empty for default/local).
    pub nodes: CpuSet,
}

/// Why a policy could not be set.
#[derive(Debug, thiserror::Error)]
pub enum MemPolicyError {
    /// This kernel does not know the mode (weighted interleave before
    /// Linux 6.9: `EINVAL`).
    #[error("this kernel does not support {mode} (set_mempolicy: {source})")]
    Unsupported {
        /// The mode's name.
        mode: &'static str,
        #[source]
        source: io::Error,
    },
    /// The kernel was built without NUMA (`ENOSYS`).
    #[error("this kernel has no NUMA memory policies (set_mempolicy: {0})")]
    NoNuma(#[source] io::Error),
    /// Any other refusal (nodes outside the cgroup's `cpuset.mems`: EINVAL).
    #[error("set_mempolicy({mode}, nodes {nodes}): {source}")]
    Refused {
        /// The mode's name.
        mode: &'static str,
        /// The nodes asked for.
        nodes: String,
        #[source]
        source: io::Error,
    },
    /// The current policy could not be read (to restore it).
    #[error("get_mempolicy: {0}")]
    Get(#[source] io::Error),
}

/// The name of a mode (without flags).
pub fn mode_name(mode: i32) -> &'static str {
    match mode & 0xff {
        MPOL_DEFAULT => "MPOL_DEFAULT",
        MPOL_PREFERRED => "MPOL_PREFERRED",
        MPOL_BIND => "MPOL_BIND",
        MPOL_INTERLEAVE => "MPOL_INTERLEAVE",
        MPOL_LOCAL => "MPOL_LOCAL",
        MPOL_WEIGHTED_INTERLEAVE => "MPOL_WEIGHTED_INTERLEAVE",
        _ => "an unknown MPOL mode",
    }
}

/// Words and `maxnode` for a node set: one spare bit beyond the highest
/// node, since the kernel reads `maxnode - 1` bits.
/// The node mask and `maxnode` that `set_mempolicy(2)` takes for `mode`
/// on `nodes` (none for `MPOL_DEFAULT` and `MPOL_LOCAL`).
pub(crate) fn kernel_mask(mode: i32, nodes: &CpuSet) -> (Vec<libc::c_ulong>, usize) {
    if takes_no_nodes(mode) {
        (Vec::new(), 0)
    } else {
        mask_for(nodes)
    }
}

/// `MPOL_DEFAULT` and `MPOL_LOCAL` take no node set: one given is ignored.
fn takes_no_nodes(mode: i32) -> bool {
    matches!(mode & 0xff, MPOL_DEFAULT | MPOL_LOCAL)
}

fn mask_for(nodes: &CpuSet) -> (Vec<libc::c_ulong>, usize) {
    if nodes.is_empty() {
        return (Vec::new(), 0);
    }
    let mut words = to_kernel_words(nodes);
    if nodes
        .last()
        .is_some_and(|l| l + 1 >= words.len() * WORD_BITS)
    {
        words.push(0);
    }
    let maxnode = words.len() * WORD_BITS;
    (words, maxnode)
}

pub(crate) fn raw_set(mode: i32, words: &[libc::c_ulong], maxnode: usize) -> io::Result<()> {
    let ptr = if words.is_empty() {
        std::ptr::null()
    } else {
        words.as_ptr()
    };
    // SAFETY: `ptr` is null with maxnode 0, or points at `words`, which
    // holds `maxnode` bits and outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_long,
            ptr,
            maxnode as libc::c_ulong,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the calling thread's policy (inherited by children across fork
/// and exec). `nodes` is ignored for `MPOL_DEFAULT` and `MPOL_LOCAL`.
pub fn set_mempolicy(mode: i32, nodes: &CpuSet) -> Result<(), MemPolicyError> {
    let (words, maxnode) = kernel_mask(mode, nodes);
    raw_set(mode, &words, maxnode).map_err(|e| refusal(mode, nodes, e))
}

/// The error for the kernel's refusal `e` of `mode` on `nodes` (by
/// [`set_mempolicy`], or in a child before exec:
/// [`crate::spawn::Spawn::mempolicy`]).
pub fn refusal(mode: i32, nodes: &CpuSet, e: io::Error) -> MemPolicyError {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => MemPolicyError::NoNuma(e),
        Some(libc::EINVAL) if mode & 0xff == MPOL_WEIGHTED_INTERLEAVE => {
            MemPolicyError::Unsupported {
                mode: mode_name(mode),
                source: e,
            }
        }
        _ => MemPolicyError::Refused {
            mode: mode_name(mode),
            nodes: if takes_no_nodes(mode) || nodes.is_empty() {
                "none".into()
            } else {
                nodes.to_list_string()
            },
            source: e,
        },
    }
}

/// Whether the kernel accepts `mode` on `nodes`, tried on a scratch thread
/// (whose policy dies with it), so an unsupported mode (weighted
/// interleave before Linux 6.9) is reported before any program runs.
pub fn probe(mode: i32, nodes: &CpuSet) -> Result<(), MemPolicyError> {
    let nodes = nodes.clone();
    std::thread::spawn(move || set_mempolicy(mode, &nodes))
        .join()
        .unwrap_or_else(|_| {
            Err(MemPolicyError::Get(io::Error::other(
                "the probe thread panicked",
            )))
        })
}

/// The calling thread's policy.
pub fn get_mempolicy() -> io::Result<ThreadPolicy> {
    let mut words = vec![0 as libc::c_ulong; GET_BITS / WORD_BITS];
    let mut mode: libc::c_int = 0;
    // SAFETY: `mode` and `words` outlive the call; `words` holds GET_BITS
    // bits; addr is null with flags 0 (the thread's policy).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            words.as_mut_ptr(),
            GET_BITS as libc::c_ulong,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ThreadPolicy {
        mode,
        nodes: from_kernel_words(&words),
    })
}

/// Restores a policy read by [`get_mempolicy`].
pub fn restore(p: &ThreadPolicy) -> io::Result<()> {
    let (words, maxnode) = mask_for(&p.nodes);
    raw_set(p.mode, &words, maxnode)
}

/// The kernel's weighted-interleave weights, `(node, weight)` ascending
/// by node, from `/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`
/// (Linux 6.9+; auto-derived from HMAT bandwidth since 6.13). `None` when
/// the directory is absent or holds no readable weight. Read only: pinsight
/// never writes them.
pub fn interleave_weights(root: &FsRoot) -> Option<Vec<(u32, u32)>> {
    let dir = "/sys/kernel/mm/mempolicy/weighted_interleave";
    let mut out: Vec<(u32, u32)> = root
        .list_dir(dir)
        .iter()
        .filter_map(|name| {
            let node = name.strip_prefix("node")?.parse::<u32>().ok()?;
            let w = root.read_u64(format!("{dir}/{name}"))?;
            Some((node, u32::try_from(w).ok()?))
        })
        .collect();
    out.sort_unstable();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_keep_a_spare_bit() {
        let (w, m) = mask_for(&CpuSet::single(0));
        assert_eq!((w.len(), m), (1, WORD_BITS));
        let (w, m) = mask_for(&CpuSet::single(WORD_BITS - 1));
        assert_eq!((w.len(), m), (2, 2 * WORD_BITS));
        assert_eq!(mask_for(&CpuSet::new()), (Vec::new(), 0));
    }

    #[test]
    fn weights_are_read_through_the_fsroot() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("sys/kernel/mm/mempolicy/weighted_interleave");
        std::fs::create_dir_all(&dir).unwrap();
        for (f, v) in [
            ("node1", "1\n"),
            ("node0", "3\n"),
            ("auto", "true\n"),
            ("node2", "x\n"),
        ] {
            std::fs::write(dir.join(f), v).unwrap();
        }
        let root = FsRoot::at(d.path()).unwrap();
        // node2's unreadable weight is left out (the kernel default applies).
        assert_eq!(interleave_weights(&root), Some(vec![(0, 3), (1, 1)]));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(interleave_weights(&FsRoot::at(empty.path()).unwrap()), None);
    }

    #[test]
    fn set_then_restore_round_trips() {
        let before = match get_mempolicy() {
            Ok(p) => p,
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                return pinsight_testkit::skip("kernel without NUMA: get_mempolicy is ENOSYS")
            }
            Err(e) => panic!("get_mempolicy: {e}"),
        };
        // Node 0 exists on every NUMA kernel; run on a scratch thread so
        // the test thread's policy never changes.
        std::thread::spawn(move || {
            set_mempolicy(MPOL_PREFERRED, &CpuSet::single(0)).unwrap();
            let now = get_mempolicy().unwrap();
            assert_eq!(now.mode & 0xff, MPOL_PREFERRED);
            assert_eq!(now.nodes, CpuSet::single(0));
            restore(&before).unwrap();
            assert_eq!(get_mempolicy().unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
