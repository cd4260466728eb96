//! CPU caches from `cpuN/cache/indexM/`.
//!
//! Each instance is identified by (level, type, CPU set): the same L3 is
//! described once per CPU by the kernel and must appear once. A CPU already
//! covered by an instance read from the same `indexM` of another CPU is not
//! read again, and an SMT sibling whose core-mate's caches all include it is
//! not even listed: this keeps discovery of a 256-CPU machine to a few
//! hundred small reads.
//!
//! The instances of one level and type partition the CPUs they cover: a
//! map that omits its own CPU or overlaps another instance is settled by
//! majority over the maps and lists of the CPUs involved (`partition`),
//! and an all-zero map shares the cache among the core's SMT siblings (see
//! [`share_zero_maps`]); both warn, naming the file.

use super::cpus::{Layout, CPU_DIR};
use super::partition;
use super::reader::{shorten, Reader};
use pinsight_cpuset::CpuSet;
use pinsight_model::{Cache, CacheType};
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
    // Instances whose map is all zeros: (CPU, the file, the instance).
    let mut zeros: Vec<(usize, String, Cache)> = Vec::new();

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
            let Some((cache, zero)) = read_instance(r, &dir, idx, c, online, &mut geometry) else {
                continue;
            };
            if let Some(file) = zero {
                zeros.push((c, file, cache));
                continue;
            }
            let same = |k: &Cache| k.level == cache.level && k.cache_type == cache.cache_type;
            if !cache.cpus.contains(c)
                || caches
                    .iter()
                    .any(|k| same(k) && k.cpus != cache.cpus && k.cpus.intersects(&cache.cpus))
            {
                settle(r, layout, &mut caches, &mut covered, c, cache);
                continue;
            }
            covered
                .entry(idx.clone())
                .or_default()
                .union_with(&cache.cpus);
            if !caches.iter().any(|k| same(k) && k.cpus == cache.cpus) {
                caches.push(cache);
            }
        }
    }
    share_zero_maps(r, layout, &mut caches, zeros);
    sort(&mut caches);
    caches
}

/// Puts caches in the order a topology lists them: by level, then data,
/// instruction and unified, then first CPU.
pub(crate) fn sort(caches: &mut [Cache]) {
    caches.sort_by_key(|k| (k.level, type_order(k.cache_type), k.cpus.first()));
}

fn type_order(t: CacheType) -> u8 {
    match t {
        CacheType::Data => 0,
        CacheType::Instruction => 1,
        CacheType::Unified => 2,
    }
}

/// (index name, level, type, size) → (line size, ways).
type Geometry = HashMap<(String, u8, CacheType, Option<u64>), (Option<u32>, Option<u32>)>;

/// One `indexM` directory; `None` (with a warning if garbled) when it does
/// not describe a usable cache.
fn read_instance(
    r: &mut Reader,
    dir: &str,
    index: &str,
    cpu: usize,
    online: &CpuSet,
    geometry: &mut Geometry,
) -> Option<(Cache, Option<String>)> {
    let level = read_level(r, dir)?;
    let cache_type = read_type(r, dir)?;
    let size_kib = read_size(r, dir);
    let key = (index.to_string(), level, cache_type, size_kib);
    let (line_size, ways) = read_geometry(r, dir, key, geometry);
    let (cpus, zero) = read_shared(r, dir, cpu);
    let cache = Cache {
        level,
        cache_type,
        size_kib,
        line_size,
        ways,
        cpus: cpus.intersection(online),
    };
    Some((cache, zero))
}

/// The cache's `level`, 1 to 255.
fn read_level(r: &mut Reader, dir: &str) -> Option<u8> {
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
    Some(level as u8)
}

/// The cache's `type`.
fn read_type(r: &mut Reader, dir: &str) -> Option<CacheType> {
    let type_path = format!("{dir}/type");
    match r.text(&type_path)?.trim() {
        "Data" => Some(CacheType::Data),
        "Instruction" => Some(CacheType::Instruction),
        "Unified" => Some(CacheType::Unified),
        other => {
            let other = shorten(other);
            r.warn(
                &type_path,
                format_args!("unknown cache type '{other}'"),
                "skipped this cache",
            );
            None
        }
    }
}

/// The cache's `size` in KiB, unknown when missing or garbled.
fn read_size(r: &mut Reader, dir: &str) -> Option<u64> {
    let size_path = format!("{dir}/size");
    r.text(&size_path).and_then(|t| match parse_size_kib(&t) {
        Some(s) => Some(s),
        None => {
            r.warn(
                &size_path,
                format_args!("'{}' is not a size", shorten(&t)),
                "left the size unknown",
            );
            None
        }
    })
}

/// Line size and associativity. They are the same for every instance of
/// one index with the same level, type and size (they describe the cache
/// design, not the instance): read once per `key`, saving a third of the
/// reads on machines with many private caches.
fn read_geometry(
    r: &mut Reader,
    dir: &str,
    key: (String, u8, CacheType, Option<u64>),
    geometry: &mut Geometry,
) -> (Option<u32>, Option<u32>) {
    if let Some(g) = geometry.get(&key) {
        return *g;
    }
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

/// The CPUs sharing the cache, from `shared_cpu_map` or `shared_cpu_list`,
/// and the file to name when both say no CPU at all (an all-zero map).
fn read_shared(r: &mut Reader, dir: &str, cpu: usize) -> (CpuSet, Option<String>) {
    let (map, list) = (
        format!("{dir}/shared_cpu_map"),
        format!("{dir}/shared_cpu_list"),
    );
    match r.cpuset(&map, &list, "assumed the cache is private to this CPU") {
        // Neither file, or garbage: private to the CPU that reads it.
        None => (CpuSet::single(cpu), None),
        Some(s) if s.is_empty() => {
            // An all-zero map: its list may still say more.
            match r.cpulist(&list, "ignored it").filter(|l| !l.is_empty()) {
                Some(l) => (l, None),
                None => {
                    let named = if r.fs.exists(&map) { map } else { list };
                    (CpuSet::new(), Some(named))
                }
            }
        }
        Some(s) => (s, None),
    }
}

/// Settles cpu`c`'s instance `cache`, whose map omits `c` or overlaps
/// another instance of its level and type: reads the maps and lists of
/// that level and type of every CPU involved, regroups them by majority
/// (see `partition`) and warns about each file that lost.
fn settle(
    r: &mut Reader,
    layout: &Layout,
    caches: &mut Vec<Cache>,
    covered: &mut HashMap<String, CpuSet>,
    c: usize,
    cache: Cache,
) {
    let same = |k: &Cache| k.level == cache.level && k.cache_type == cache.cache_type;
    let mut start = cache.cpus.clone();
    start.insert(c);
    let mut index_of: HashMap<usize, String> = HashMap::new();
    let (zone, votes) = partition::gather(
        &start,
        &layout.online,
        |x| {
            let (votes, idx) = cache_votes(r, layout, x, &cache);
            if let Some(i) = idx {
                index_of.insert(x, i);
            }
            votes
        },
        |x| {
            caches
                .iter()
                .find(|k| same(k) && k.cpus.contains(x))
                .map(|k| k.cpus.clone())
                .unwrap_or_default()
        },
    );
    let settled = partition::resolve(&zone, &votes);
    let what = format!("L{} {}", cache.level, type_name(cache.cache_type));
    for (file, said, used) in partition::dissent(&settled, &votes, &zone) {
        r.warn(
            file,
            format_args!(
                "says CPUs {said} share this {what}, against the other {what} maps of CPUs {zone}"
            ),
            &format!("used the majority's {what} {used}"),
        );
    }
    // Take the zone out of the instances it touched, keeping their
    // geometry for the settled ones.
    let mut templates: Vec<Cache> = Vec::new();
    caches.retain_mut(|k| {
        if same(k) && k.cpus.intersects(&zone) {
            templates.push(k.clone());
            k.cpus = k.cpus.difference(&zone);
        }
        !k.cpus.is_empty()
    });
    for set in settled {
        let mut inst = templates
            .iter()
            .find(|t| set.first().is_some_and(|f| t.cpus.contains(f)))
            .cloned()
            .unwrap_or_else(|| cache.clone());
        inst.cpus = set;
        caches.push(inst);
    }
    for (x, idx) in index_of {
        covered.entry(idx).or_default().insert(x);
    }
}

/// What cpu`x`'s map and list of `like`'s level and type say (one vote
/// each), and the index they are under.
fn cache_votes(
    r: &mut Reader,
    layout: &Layout,
    x: usize,
    like: &Cache,
) -> (Vec<partition::Vote>, Option<String>) {
    if !layout.has(x, "cache") {
        return (Vec::new(), None);
    }
    let base = format!("{CPU_DIR}/cpu{x}/cache");
    for idx in r.list(&base) {
        let dir = format!("{base}/{idx}");
        let level = r.text(&format!("{dir}/level"));
        let ty = r.text(&format!("{dir}/type"));
        if level.as_deref().map(str::trim) != Some(like.level.to_string().as_str())
            || ty.as_deref().map(str::trim) != Some(type_name(like.cache_type))
        {
            continue;
        }
        let mut votes = Vec::new();
        for (name, is_map) in [("shared_cpu_map", true), ("shared_cpu_list", false)] {
            votes.extend(r.vote(x, format!("{dir}/{name}"), is_map, &layout.online));
        }
        return (votes, Some(idx));
    }
    (Vec::new(), None)
}

/// Instances whose `shared_cpu_map` is all zeros (and list empty): the
/// CPU joins the instance of that level and type another CPU's map puts it
/// in, else the cache is shared among its core's SMT siblings, as hwloc
/// does (topology-linux.c falls back to `thread_siblings`) and as the
/// hardware does; either way with a warning naming the file.
fn share_zero_maps(
    r: &mut Reader,
    layout: &Layout,
    caches: &mut Vec<Cache>,
    zeros: Vec<(usize, String, Cache)>,
) {
    // Instances made here, by (level, type, CPUs).
    let mut made: Vec<(u8, CacheType, CpuSet)> = Vec::new();
    for (c, file, mut cache) in zeros {
        let same = |k: &Cache| k.level == cache.level && k.cache_type == cache.cache_type;
        let what = format!("L{} {}", cache.level, type_name(cache.cache_type));
        if let Some(k) = caches.iter().find(|k| same(k) && k.cpus.contains(c)) {
            let by = if made.contains(&(k.level, k.cache_type, k.cpus.clone())) {
                "already shared with its core"
            } else {
                "as other CPUs' maps say"
            };
            let action = format!("kept cpu{c} in the {what} of CPUs {}, {by}", k.cpus);
            r.warn(
                &file,
                "is all zeros (no CPU would share this cache)",
                &action,
            );
            continue;
        }
        let taken = caches
            .iter()
            .filter(|k| same(k))
            .fold(CpuSet::new(), |acc, k| acc.union(&k.cpus));
        let mut cpus = layout
            .cores
            .iter()
            .find(|g| g.cpus.contains(c))
            .map_or_else(|| CpuSet::single(c), |g| g.cpus.difference(&taken));
        cpus.insert(c);
        let action = format!("shared the {what} among cpu{c}'s core (CPUs {cpus}), as hwloc does");
        r.warn(
            &file,
            "is all zeros (no CPU would share this cache)",
            &action,
        );
        made.push((cache.level, cache.cache_type, cpus.clone()));
        cache.cpus = cpus;
        caches.push(cache);
    }
}

/// The kernel's name of a cache type (`type` file).
fn type_name(t: CacheType) -> &'static str {
    match t {
        CacheType::Data => "Data",
        CacheType::Instruction => "Instruction",
        CacheType::Unified => "Unified",
    }
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
