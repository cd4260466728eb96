//! CPU caches from `cpuN/cache/indexM/`.
//!
//! Each instance is identified by (level, type, CPU set): the same L3 is
//! described once per CPU by the kernel and must appear once. A CPU already
//! covered by an instance read from the same `indexM` of another CPU is not
//! read again, and an SMT sibling whose core-mate's caches all include it is
//! not even listed: this keeps discovery of a 256-CPU machine to a few
//! hundred small reads.

use super::cpus::{Layout, CPU_DIR};
use super::reader::{shorten, Reader};
use crate::{Cache, CacheType, CpuSet};
use std::collections::HashMap;

/// Reads every cache instance of the online CPUs, sorted by level, type and
/// first CPU.
pub(super) fn discover_caches(r: &mut Reader, layout: &Layout) -> Vec<Cache> {
    let online = &layout.online;
    let mut caches: Vec<Cache> = Vec::new();
    // indexM → union of the CPU sets read from it.
    let mut covered: HashMap<String, CpuSet> = HashMap::new();
    // core (by first CPU) → the index names its first CPU had.
    let mut core_indexes: HashMap<usize, Vec<String>> = HashMap::new();
    let mut geometry = Geometry::new();

    for c in online.iter() {
        let core_first = layout
            .cores
            .iter()
            .find(|g| g.cpus.contains(c))
            .and_then(|g| g.cpus.first());
        if let Some(first) = core_first.filter(|&f| f != c) {
            if let Some(idx) = core_indexes.get(&first) {
                if idx
                    .iter()
                    .all(|i| covered.get(i).is_some_and(|s| s.contains(c)))
                {
                    continue;
                }
            }
        }
        if !layout.has(c, "cache") {
            continue;
        }
        let base = format!("{CPU_DIR}/cpu{c}/cache");
        let indexes: Vec<String> = r
            .list(&base)
            .into_iter()
            .filter(|n| {
                n.strip_prefix("index")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect();
        if core_first == Some(c) {
            core_indexes.insert(c, indexes.clone());
        }
        for idx in &indexes {
            if covered.get(idx).is_some_and(|s| s.contains(c)) {
                continue;
            }
            let dir = format!("{base}/{idx}");
            let Some(cache) = read_instance(r, &dir, idx, c, online, &mut geometry) else {
                continue;
            };
            covered
                .entry(idx.clone())
                .or_default()
                .union_with(&cache.cpus);
            if !caches.iter().any(|k| {
                k.level == cache.level && k.cache_type == cache.cache_type && k.cpus == cache.cpus
            }) {
                caches.push(cache);
            }
        }
    }
    caches.sort_by_key(|k| (k.level, type_order(k.cache_type), k.cpus.first()));
    caches
}

fn type_order(t: CacheType) -> u8 {
    match t {
        CacheType::Data => 0,
        CacheType::Instruction => 1,
        CacheType::Unified => 2,
    }
}

/// One `indexM` directory; `None` (with a warning if garbled) when it does
/// not describe a usable cache.
/// (index name, level, type, size) → (line size, ways).
type Geometry = HashMap<(String, u8, CacheType, Option<u64>), (Option<u32>, Option<u32>)>;

fn read_instance(
    r: &mut Reader,
    dir: &str,
    index: &str,
    cpu: usize,
    online: &CpuSet,
    geometry: &mut Geometry,
) -> Option<Cache> {
    let level_path = format!("{dir}/level");
    let level = r.number(&level_path, "skipped this cache")?;
    if level == 0 || level > 255 {
        r.warn(
            &level_path,
            format_args!("level {level} is out of range"),
            "skipped this cache",
        );
        return None;
    }
    let type_path = format!("{dir}/type");
    let cache_type = match r.text(&type_path)?.trim() {
        "Data" => CacheType::Data,
        "Instruction" => CacheType::Instruction,
        "Unified" => CacheType::Unified,
        other => {
            let other = shorten(other);
            r.warn(
                &type_path,
                format_args!("unknown cache type '{other}'"),
                "skipped this cache",
            );
            return None;
        }
    };
    let size_path = format!("{dir}/size");
    let size_kib = r.text(&size_path).and_then(|t| match parse_size_kib(&t) {
        Some(s) => Some(s),
        None => {
            r.warn(
                &size_path,
                format_args!("'{}' is not a size", shorten(&t)),
                "left the size unknown",
            );
            None
        }
    });
    // Line size and associativity are the same for every instance of one
    // index with the same level, type and size (they describe the cache
    // design, not the instance): read them once, saving a third of the
    // reads on machines with many private caches.
    let key = (index.to_string(), level as u8, cache_type, size_kib);
    let (line_size, ways) = match geometry.get(&key) {
        Some(g) => *g,
        None => {
            let line = r
                .number(
                    &format!("{dir}/coherency_line_size"),
                    "left the line size unknown",
                )
                .and_then(|v| u32::try_from(v).ok());
            let ways = r
                .number(
                    &format!("{dir}/ways_of_associativity"),
                    "left the associativity unknown",
                )
                .and_then(|v| u32::try_from(v).ok());
            geometry.insert(key, (line, ways));
            (line, ways)
        }
    };
    let shared = r.cpuset(
        &format!("{dir}/shared_cpu_map"),
        &format!("{dir}/shared_cpu_list"),
        "assumed the cache is private to this CPU",
    );
    let mut cpus = shared.unwrap_or_default().intersection(online);
    cpus.insert(cpu);
    Some(Cache {
        level: level as u8,
        cache_type,
        size_kib,
        line_size,
        ways,
        cpus,
    })
}

/// `32K` → 32, `16M` → 16384, `1G` → 1048576; a bare number is KiB (the
/// kernel always prints `K`; hwloc reads the number the same way).
fn parse_size_kib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.as_bytes().last()? {
        b'K' | b'k' => (&t[..t.len() - 1], 1),
        b'M' | b'm' => (&t[..t.len() - 1], 1024),
        b'G' | b'g' => (&t[..t.len() - 1], 1024 * 1024),
        _ => (t, 1),
    };
    super::reader::parse_number(num)?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::parse_size_kib;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_kib("32K"), Some(32));
        assert_eq!(parse_size_kib("16M"), Some(16384));
        assert_eq!(parse_size_kib("512"), Some(512));
        assert_eq!(parse_size_kib("K"), None);
        assert_eq!(parse_size_kib("x"), None);
        assert_eq!(parse_size_kib(""), None);
    }
}
