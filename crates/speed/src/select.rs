//! Which CPUs to measure, and how big the pointer-chase buffer must be.
//! Pure: topology in, choice out.

use crate::error::SelectError;
use pinsight_cpuset::CpuSet;
use pinsight_model::{CacheType, Topology};
use pinsight_sys::FsRoot;

/// The CPUs `pinsight speed` measures.
///
/// - `cpus`: a cpulist the user gave (each must be online and allowed),
///   else every usable CPU.
/// - `per_kind = Some(n)`: of those, only the first hardware thread of the
///   first `n` cores (lowest CPU numbers) of each core kind — enough for the
///   speedup factor on a big machine, and SMT siblings never measured twice
///   per core. A kind with fewer cores gives all it has. A machine whose
///   kinds are unknown keeps the first hardware thread of its first `n` cores.
///
/// Errors say what is wrong and carry the choice and what is allowed.
pub fn select_cpus(
    topo: &Topology,
    cpus: Option<&str>,
    per_kind: Option<usize>,
) -> Result<CpuSet, SelectError> {
    let usable = topo.usable();
    let chosen = match cpus {
        Some(list) => {
            let want = CpuSet::parse_list(list).map_err(|error| SelectError::BadList {
                list: list.to_string(),
                error,
            })?;
            if want.is_empty() {
                return Err(SelectError::NoCpu {
                    list: list.to_string(),
                    usable,
                });
            }
            let bad = want.difference(&usable);
            if !bad.is_empty() {
                return Err(SelectError::Unusable {
                    list: list.to_string(),
                    bad,
                    usable,
                });
            }
            want
        }
        None => usable,
    };
    let Some(n) = per_kind else { return Ok(chosen) };
    if n == 0 {
        return Err(SelectError::ZeroPerKind);
    }
    let all = topo.online().union(&chosen);
    let kinds: Vec<CpuSet> = if topo.kinds.is_empty() {
        vec![all]
    } else {
        topo.kinds.iter().map(|k| k.cpus.clone()).collect()
    };
    let mut cores: Vec<CpuSet> = topo.cores.iter().map(|c| c.cpus.clone()).collect();
    cores.sort_by_key(|c| c.first());
    let mut out = CpuSet::new();
    for kind in &kinds {
        let firsts = cores
            .iter()
            .filter_map(|core| core.intersection(kind).intersection(&chosen).first());
        for pu in firsts.take(n) {
            out.insert(pu);
        }
    }
    // A tree without cores has nothing to pick from: measure what was chosen
    // rather than nothing.
    if cores.is_empty() {
        return Ok(chosen);
    }
    Ok(out)
}

/// Default chase buffer: 4x the largest L2 (so the chase misses L2 on every
/// core), at least 8 MiB.
pub fn default_mem_bytes(topo: &Topology) -> usize {
    let l2 = topo
        .caches
        .iter()
        .filter(|c| c.level == 2 && c.cache_type != CacheType::Instruction)
        .filter_map(|c| c.size_kib)
        .max()
        .unwrap_or(0) as usize
        * 1024;
    (4 * l2).max(8 << 20)
}

/// Memory the kernel says can be allocated without swapping
/// (`MemAvailable` of `/proc/meminfo`), in bytes. `None` when the file or
/// the line is missing or unreadable (very old kernels, odd dumps).
pub fn memory_available_bytes(fs: &FsRoot) -> Option<u64> {
    let text = fs.read_opt("/proc/meminfo")?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line["MemAvailable:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    let scale = match words.next() {
        Some("kB") | Some("KB") | Some("kb") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(scale)
}

/// Bytes a chase buffer of `bytes` takes while being built: the buffer
/// itself and the permutation laid out into it (one `usize` per line).
pub fn chase_footprint_bytes(bytes: usize) -> u64 {
    let lines = (bytes / 64).max(2) as u64;
    lines * (64 + std::mem::size_of::<usize>() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_sys::FsRoot;
    use pinsight_topology::discover;

    fn fixture(name: &str) -> Topology {
        discover(&FsRoot::at(pinsight_testkit::fixtures::hwloc(name)).unwrap())
    }

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    #[test]
    fn hybrid_laptop_per_kind() {
        // i7-1370P: P-cores 0-11 (6 cores, SMT pairs 0-1, 2-3, ...), E-cores 12-19.
        let t = fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
        assert_eq!(t.kinds.len(), 2);
        assert_eq!(select_cpus(&t, None, None).unwrap(), set("0-19"));
        assert_eq!(select_cpus(&t, None, Some(1)).unwrap(), set("0,12"));
        assert_eq!(select_cpus(&t, None, Some(2)).unwrap(), set("0,2,12-13"));
        // More than a kind has: all its cores, one thread each.
        assert_eq!(
            select_cpus(&t, None, Some(7)).unwrap(),
            set("0,2,4,6,8,10,12-18")
        );
        assert_eq!(
            select_cpus(&t, None, Some(100)).unwrap(),
            set("0,2,4,6,8,10,12-19")
        );
        // Within --cpus: the second sibling stands in for its core.
        assert_eq!(
            select_cpus(&t, Some("1,3,15-19"), Some(1)).unwrap(),
            set("1,15")
        );
        assert_eq!(
            select_cpus(&t, Some("13-19"), Some(2)).unwrap(),
            set("13-14")
        );
    }

    #[test]
    fn bad_choices_carry_what_is_wrong() {
        let t = fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
        assert_eq!(
            select_cpus(&t, None, Some(0)),
            Err(SelectError::ZeroPerKind)
        );
        assert_eq!(
            select_cpus(&t, Some("18-23"), None),
            Err(SelectError::Unusable {
                list: "18-23".into(),
                bad: set("20-23"),
                usable: set("0-19"),
            })
        );
        let e = select_cpus(&t, Some("18-23"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("20-23") && e.contains("usable: 0-19"), "{e}");
        assert!(
            matches!(select_cpus(&t, Some("x"), None), Err(SelectError::BadList { list, .. }) if list == "x")
        );
        assert!(!e.contains("--"), "no flag names in the library: {e}");
    }

    #[test]
    fn one_kind_machine_takes_first_cores() {
        // 256 CPUs, 4 threads per core: --per-kind 2 is the first thread of cores 0 and 1.
        let t = fixture("256ppc-8n8s4t");
        let all = select_cpus(&t, None, None).unwrap();
        assert_eq!(all.len(), t.usable().len());
        let two = select_cpus(&t, None, Some(2)).unwrap();
        assert_eq!(two.len(), 2);
        for cpu in two.iter() {
            let core = t.cores.iter().find(|c| c.cpus.contains(cpu)).unwrap();
            assert_eq!(core.cpus.first(), Some(cpu));
        }
    }

    #[test]
    fn buffer_exceeds_every_l2() {
        let t = fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
        let l2 = t.caches_at(2).filter_map(|c| c.size_kib).max().unwrap() as usize * 1024;
        assert!(default_mem_bytes(&t) >= 4 * l2 && default_mem_bytes(&t) >= 8 << 20);
    }

    fn meminfo_root(text: &str) -> (tempfile::TempDir, FsRoot) {
        pinsight_testkit::fake_root(&[("proc/meminfo", text)])
    }

    #[test]
    fn memory_available_reads_meminfo() {
        let (_d, fs) = meminfo_root(
            "MemTotal:       24683656 kB\nMemFree:  100 kB\nMemAvailable:   23929712 kB\n",
        );
        assert_eq!(memory_available_bytes(&fs), Some(23929712 * 1024));
        let (_d, fs) = meminfo_root("MemTotal:       24683656 kB\n");
        assert_eq!(memory_available_bytes(&fs), None);
        let (_d, fs) = meminfo_root("MemAvailable: lots kB\n");
        assert_eq!(memory_available_bytes(&fs), None);
    }

    #[test]
    fn footprint_counts_buffer_and_permutation() {
        assert_eq!(chase_footprint_bytes(64 << 20), (1 << 20) * 72);
        assert!(chase_footprint_bytes(0) > 0);
    }
}
