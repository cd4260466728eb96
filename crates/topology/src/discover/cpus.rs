//! Present and online CPUs, and the groups they form: cores (SMT
//! siblings), packages, dies and clusters.
//!
//! Why it is shaped this way:
//! - Online state comes from the global `cpu/online` list when it exists,
//!   else from each CPU's `online` file (missing = online: cpu0 often has
//!   none). Offline CPUs may lack `topology/`, while their siblings' masks
//!   still name them, so every mask is intersected with the online set.
//! - Groups are identified by CPU sets, never ids (`core_id` repeats in every
//!   package, `physical_package_id` is `-1` on POWER). A CPU already placed
//!   in a group of a level is not read again for that level: masks are
//!   symmetric, and skipping them keeps discovery of big machines fast.
//!   When a mask read contradicts the groups built so far (it omits its own
//!   CPU, or names CPUs another group holds), every mask and list of the
//!   CPUs involved is read and the groups are settled by majority
//!   (`partition`), with a warning naming each file that lost: a level
//!   always partitions the online CPUs. A contradicting mask of a CPU whose
//!   group an earlier mask already settled is never read (it could only
//!   lose the vote).
//! - Old (`thread_siblings`, `core_siblings`) and new (`core_cpus`,
//!   `package_cpus`) names, and their `*_list` forms, are all accepted.
//! - AMD Bulldozer compute units: the two threads of a module are listed as
//!   siblings but report different `core_id`s; like hwloc, each thread then
//!   becomes its own core (the module shows up as the shared L2/L1i).

use super::partition;
use super::reader::Reader;
use pinsight_cpuset::CpuSet;
use pinsight_model::Group;
use std::collections::{BTreeMap, HashMap};

pub(super) const CPU_DIR: &str = "/sys/devices/system/cpu";

/// What [`discover_cpus`] found.
pub(super) struct Layout {
    /// Every CPU the OS knows (present), online or not.
    pub present: CpuSet,
    /// Online CPUs.
    pub online: CpuSet,
    /// Entry names of the `cpuN/` directories listed (every offline CPU,
    /// the first and last online ones), so later steps open only files that exist (a
    /// failing open per CPU per file adds up on big machines).
    pub dirs: BTreeMap<usize, Vec<String>>,
    /// The entries of the online CPUs listed (sorted): what an online CPU
    /// not listed is taken to have.
    pub template: Vec<String>,
    pub cores: Vec<Group>,
    pub packages: Vec<Group>,
    /// All die groups found (meaningfulness is decided by the caller).
    pub dies: Vec<Group>,
    /// All cluster groups found (meaningfulness is decided by the caller).
    pub clusters: Vec<Group>,
}

impl Layout {
    /// Whether `cpuN/` has an entry `name`.
    pub fn has(&self, cpu: usize, name: &str) -> bool {
        let entries = match self.dirs.get(&cpu) {
            Some(d) => d,
            None if self.online.contains(cpu) => &self.template,
            None => return false,
        };
        entries.binary_search_by(|e| e.as_str().cmp(name)).is_ok()
    }
}

/// One grouping level and the sysfs files describing it.
struct Level {
    what: &'static str,
    /// (mask file, list file) pairs, preferred first.
    masks: &'static [(&'static str, &'static str)],
    id_file: &'static str,
    /// Whether lacking information deserves a warning (cores, packages) or
    /// is normal on older kernels (dies, clusters).
    required: bool,
}

const CORE: Level = Level {
    what: "core",
    masks: &[
        ("core_cpus", "core_cpus_list"),
        ("thread_siblings", "thread_siblings_list"),
    ],
    id_file: "core_id",
    required: true,
};
const PACKAGE: Level = Level {
    what: "package",
    masks: &[
        ("package_cpus", "package_cpus_list"),
        ("core_siblings", "core_siblings_list"),
    ],
    id_file: "physical_package_id",
    required: true,
};
const DIE: Level = Level {
    what: "die",
    masks: &[("die_cpus", "die_cpus_list")],
    id_file: "die_id",
    required: false,
};
const CLUSTER: Level = Level {
    what: "cluster",
    masks: &[("cluster_cpus", "cluster_cpus_list")],
    id_file: "cluster_id",
    required: false,
};

/// Finds present/online CPUs and their groups; the die and cluster levels
/// only when `levels` (they are judged beside the caches, and a plan that
/// reads no caches keeps neither: two to four files fewer per CPU).
pub(super) fn discover_cpus(r: &mut Reader, levels: bool) -> Layout {
    let mut present = present_cpus(r);
    let global = format!("{CPU_DIR}/online");
    let mut dirs = BTreeMap::new();
    let online = match r.cpulist(&global, "used each CPU's own online file instead") {
        Some(s) if present.is_empty() => {
            // No cpuN directories at all: the online list is all we have.
            present = s.clone();
            s
        }
        Some(s) => {
            let stray = s.difference(&present);
            if !stray.is_empty() {
                // Never trust a list over the directories: a garbled
                // `0-1048575` must not conjure a million CPUs.
                r.warn(
                    &global,
                    format_args!("lists CPUs {stray} that have no cpuN directory"),
                    "ignored them",
                );
            }
            s.intersection(&present)
        }
        None => per_cpu_online(r, &present),
    };
    // The online CPUs' directories hold the same entries (the kernel makes
    // each CPU's attributes alike; offline ones lack `cache/` and
    // `topology/`): list the first and the last online CPU and every
    // offline one, not all 256 of a big machine (a listing costs as much
    // as reading two files). An entry in the sample is then looked for on
    // every online CPU: where it is missing the read finds nothing, as it
    // would have without the listing.
    let offline = present.difference(&online);
    let sample: Vec<usize> = online
        .first()
        .into_iter()
        .chain(online.last())
        .chain(offline.iter())
        .collect();
    for c in sample {
        dirs.entry(c)
            .or_insert_with(|| r.list(&format!("{CPU_DIR}/cpu{c}")));
    }
    let mut template: Vec<String> = online
        .iter()
        .filter_map(|c| dirs.get(&c))
        .flatten()
        .cloned()
        .collect();
    template.sort();
    template.dedup();

    if present.is_empty() {
        r.warn(
            CPU_DIR,
            "no CPUs found (no cpuN directories, no present or online list)",
            "the model is empty",
        );
    } else if online.is_empty() {
        r.warn(&global, "no CPU is online", "the model has no usable CPUs");
    }

    let mut topo_dirs: HashMap<usize, Vec<String>> = HashMap::new();
    let cores = build_level(r, &CORE, &online, &mut topo_dirs);
    let packages = build_level(r, &PACKAGE, &online, &mut topo_dirs);
    let (dies, mut clusters) = if levels {
        die_and_cluster_levels(r, &online, &mut topo_dirs)
    } else {
        (Vec::new(), Vec::new())
    };
    let packages = merge_cluster_packages(r, packages, &mut clusters, levels);

    Layout {
        present,
        online,
        dirs,
        template,
        cores,
        packages,
        dies,
        clusters,
    }
}

/// The CPUs that have a `cpuN` directory, else the `present` list.
fn present_cpus(r: &mut Reader) -> CpuSet {
    let present: CpuSet = r
        .list(CPU_DIR)
        .iter()
        .filter_map(|n| {
            n.strip_prefix("cpu").and_then(|d| {
                d.parse::<usize>()
                    .ok()
                    .filter(|_| d.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .filter(|&n| n <= pinsight_cpuset::MAX_CPU)
        .collect();
    if present.is_empty() {
        let p = format!("{CPU_DIR}/present");
        if let Some(s) = r.cpulist(&p, "ignored it") {
            return s;
        }
    }
    present
}

/// The die and the cluster groups of the `online` CPUs.
fn die_and_cluster_levels(
    r: &mut Reader,
    online: &CpuSet,
    topo_dirs: &mut HashMap<usize, Vec<String>>,
) -> (Vec<Group>, Vec<Group>) {
    (
        build_level(r, &DIE, online, topo_dirs),
        build_level(r, &CLUSTER, online, topo_dirs),
    )
}

/// Online CPUs from each CPU's `online` file; missing means online.
/// (Read directly: a missing file costs one failed open, less than the
/// listing that would say it is missing.)
fn per_cpu_online(r: &mut Reader, present: &CpuSet) -> CpuSet {
    let mut online = CpuSet::new();
    for c in present.iter() {
        let path = format!("{CPU_DIR}/cpu{c}/online");
        match r.text(&path).as_deref().map(str::trim) {
            Some("0") => {}
            Some("1") | None => {
                online.insert(c);
            }
            Some(other) => {
                let other = super::reader::shorten(other);
                r.warn(
                    &path,
                    format_args!("'{other}' is neither 0 nor 1"),
                    "treated the CPU as online",
                );
                online.insert(c);
            }
        }
    }
    online
}

/// The groups of one level as they are built, CPU by CPU.
struct LevelBuild {
    /// Per CPU: the index of the group that holds it.
    owner: Vec<Option<usize>>,
    groups: Vec<(CpuSet, Option<u32>)>,
    /// Groups built from ids alone (no mask file): (package id, level id) → group.
    by_id: HashMap<(Option<u32>, u32), usize>,
    /// CPUs with neither mask nor id for a required level.
    lacking: CpuSet,
    /// The one package for every CPU nothing is known about.
    fallback: Option<usize>,
}

impl LevelBuild {
    /// Adds a group and makes its CPUs its own.
    fn push(&mut self, set: CpuSet, id: Option<u32>) {
        for x in set.iter() {
            self.owner[x] = Some(self.groups.len());
        }
        self.groups.push((set, id));
    }

    /// Adds CPU `c` to group `g`.
    fn join(&mut self, g: usize, c: usize) {
        self.groups[g].0.insert(c);
        self.owner[c] = Some(g);
    }
}

/// Builds the groups of one level over the online CPUs.
fn build_level(
    r: &mut Reader,
    level: &Level,
    online: &CpuSet,
    topo_dirs: &mut HashMap<usize, Vec<String>>,
) -> Vec<Group> {
    if !level.required && level_unlisted(level, online, topo_dirs) {
        return Vec::new();
    }
    let size = online.last().map_or(0, |l| l + 1);
    let mut b = LevelBuild {
        owner: vec![None; size],
        groups: Vec::new(),
        by_id: HashMap::new(),
        lacking: CpuSet::new(),
        fallback: None,
    };
    for c in online.iter() {
        if b.owner[c].is_none() {
            place_cpu(r, level, online, c, &mut b, topo_dirs);
        }
    }
    finish_level(r, level, b.groups, &b.lacking)
}

/// Dies and clusters: a kernel gives every CPU the same topology files,
/// so when the CPUs listed so far have none of this level's, the others
/// are not listed just to find that out (192 directory listings on the
/// 256-CPU POWER7).
fn level_unlisted(level: &Level, online: &CpuSet, topo_dirs: &HashMap<usize, Vec<String>>) -> bool {
    let names = level
        .masks
        .iter()
        .flat_map(|(m, l)| [*m, *l])
        .chain([level.id_file]);
    let listed: Vec<&Vec<String>> = online.iter().filter_map(|c| topo_dirs.get(&c)).collect();
    let names: Vec<&str> = names.collect();
    !listed.is_empty()
        && !listed
            .iter()
            .any(|l| names.iter().any(|n| l.iter().any(|e| e == n)))
}

/// Places CPU `c`, not yet in a group, in the group of `level` its mask
/// names (settling contradictions by majority), else by its id, else alone.
fn place_cpu(
    r: &mut Reader,
    level: &Level,
    online: &CpuSet,
    c: usize,
    b: &mut LevelBuild,
    topo_dirs: &mut HashMap<usize, Vec<String>>,
) {
    let base = format!("{CPU_DIR}/cpu{c}/topology");
    let listing = topo_dirs.entry(c).or_insert_with(|| r.list(&base)).clone();
    let has = |name: &str| listing.binary_search_by(|e| e.as_str().cmp(name)).is_ok();

    let mask = read_mask(r, level, &base, &has);
    let id = if has(level.id_file) {
        r.os_id(&format!("{base}/{}", level.id_file))
    } else {
        None
    };

    let members: CpuSet = match mask {
        Some(m) => {
            let m = m.intersection(online);
            if !m.contains(c) || m.iter().any(|x| b.owner[x].is_some()) {
                // The mask contradicts what is placed: settle the
                // whole neighbourhood by majority.
                let settled = settle(
                    r,
                    level,
                    online,
                    c,
                    &m,
                    &mut b.owner,
                    &mut b.groups,
                    topo_dirs,
                );
                for (set, id) in settled {
                    b.push(set, id);
                }
                return;
            }
            m
        }
        None => match maskless_members(r, level, &base, &has, c, id, b) {
            Some(m) => m,
            None => return,
        },
    };

    let split = if level.what == CORE.what {
        split_compute_unit(r, c, id, &members)
    } else {
        None
    };
    for (set, os_id) in split.unwrap_or_else(|| vec![(members, id)]) {
        b.push(set, os_id);
    }
}

/// The members of CPU `c`'s new group when `level` has no mask for it:
/// grouped by id within the package (ids repeat across packages), else
/// alone, or for packages in the one fallback package. `None` when `c`
/// joined an existing group or stays out of the level.
fn maskless_members(
    r: &mut Reader,
    level: &Level,
    base: &str,
    has: &dyn Fn(&str) -> bool,
    c: usize,
    id: Option<u32>,
    b: &mut LevelBuild,
) -> Option<CpuSet> {
    let Some(id) = id else {
        if !level.required {
            return None;
        }
        b.lacking.insert(c);
        if level.what == PACKAGE.what {
            // One package for every CPU we know nothing about.
            if let Some(g) = b.fallback {
                b.join(g, c);
                return None;
            }
            b.fallback = Some(b.groups.len());
        }
        return Some(CpuSet::single(c));
    };
    let pkg = if level.id_file == PACKAGE.id_file {
        None
    } else if has(PACKAGE.id_file) {
        r.os_id(&format!("{base}/{}", PACKAGE.id_file))
    } else {
        None
    };
    if let Some(&g) = b.by_id.get(&(pkg, id)) {
        b.join(g, c);
        return None;
    }
    b.by_id.insert((pkg, id), b.groups.len());
    Some(CpuSet::single(c))
}

/// The first readable (mask, list) pair of `level` under `base`
/// (`cpuN/topology`), among the files `has` says exist.
fn read_mask(
    r: &mut Reader,
    level: &Level,
    base: &str,
    has: &dyn Fn(&str) -> bool,
) -> Option<CpuSet> {
    for (m, l) in level.masks {
        if has(m) || has(l) {
            let mask = r.cpuset(
                &format!("{base}/{m}"),
                &format!("{base}/{l}"),
                "used the other files of this CPU",
            );
            if mask.is_some() {
                return mask;
            }
        }
    }
    None
}

/// Regroups the CPUs around cpu`c`, whose `level` mask (`mask`, already
/// limited to online CPUs) omits `c` or overlaps groups already built: reads
/// every mask and list of the CPUs involved, groups them by majority (see
/// `partition`), and warns about each file that lost, naming it.
#[allow(clippy::too_many_arguments)]
fn settle(
    r: &mut Reader,
    level: &Level,
    online: &CpuSet,
    c: usize,
    mask: &CpuSet,
    owner: &mut [Option<usize>],
    groups: &mut [(CpuSet, Option<u32>)],
    topo_dirs: &mut HashMap<usize, Vec<String>>,
) -> Vec<(CpuSet, Option<u32>)> {
    let mut start = mask.clone();
    start.insert(c);
    let (zone, votes) = {
        let (own, grp) = (&*owner, &*groups);
        partition::gather(
            &start,
            online,
            |x| level_votes(r, level, x, online, topo_dirs),
            |x| own[x].map(|g| grp[g].0.clone()).unwrap_or_default(),
        )
    };
    for x in zone.iter() {
        if let Some(g) = owner[x].take() {
            groups[g].0.remove(x);
        }
    }
    let settled = partition::resolve(&zone, &votes);
    for (file, said, used) in partition::dissent(&settled, &votes, &zone) {
        r.warn(
            file,
            format_args!(
                "names CPUs {said} as one {}, against the other {} masks of CPUs {zone}",
                level.what, level.what
            ),
            &format!("used the majority's {} {used}", level.what),
        );
    }
    settled
        .into_iter()
        .map(|set| {
            let id = set.first().and_then(|f| {
                let has = topo_dirs
                    .get(&f)
                    .is_some_and(|l| l.iter().any(|e| e == level.id_file));
                has.then(|| r.os_id(&format!("{CPU_DIR}/cpu{f}/topology/{}", level.id_file)))
                    .flatten()
            });
            (set, id)
        })
        .collect()
}

/// What cpu`x`'s files of `level` say (mask and list, each one vote).
fn level_votes(
    r: &mut Reader,
    level: &Level,
    x: usize,
    online: &CpuSet,
    topo_dirs: &mut HashMap<usize, Vec<String>>,
) -> Vec<partition::Vote> {
    let base = format!("{CPU_DIR}/cpu{x}/topology");
    let listing = topo_dirs.entry(x).or_insert_with(|| r.list(&base)).clone();
    let has = |name: &str| listing.binary_search_by(|e| e.as_str().cmp(name)).is_ok();
    let Some((m, l)) = level.masks.iter().find(|(m, l)| has(m) || has(l)) else {
        return Vec::new();
    };
    let mut votes = Vec::new();
    for (name, is_mask) in [(m, true), (l, false)] {
        if !has(name) {
            continue;
        }
        votes.extend(r.vote(x, format!("{base}/{name}"), is_mask, online));
    }
    votes
}

/// AMD Bulldozer compute units: SMT siblings with different core ids are
/// separate cores (hwloc's rule: compare cpu`c` with the next sibling).
/// Returns one single-CPU core per member then, `None` for a real core.
fn split_compute_unit(
    r: &mut Reader,
    c: usize,
    id: Option<u32>,
    members: &CpuSet,
) -> Option<Vec<(CpuSet, Option<u32>)>> {
    if members.len() <= 1 {
        return None;
    }
    let other = members.iter().find(|&x| x != c)?;
    let other_id = r.os_id(&format!("{CPU_DIR}/cpu{other}/topology/core_id"));
    if id? == other_id? {
        return None;
    }
    let cores = members
        .iter()
        .map(|x| {
            let xid = if x == c {
                id
            } else if x == other {
                other_id
            } else {
                r.os_id(&format!("{CPU_DIR}/cpu{x}/topology/core_id"))
            };
            (CpuSet::single(x), xid)
        })
        .collect();
    Some(cores)
}

/// Warns about the online CPUs no file placed at `level`, then numbers the
/// non-empty groups in order of their first CPU.
/// Android-style kernels report each cluster as its own package: every
/// CPU has the same `physical_package_id` but a `core_siblings_list`
/// (`package_cpus_list`) naming only its cluster. The ids and the masks
/// contradict; lstopo shows no package per cluster there, and neither does
/// pinsight: the groups sharing an id become one package, and their masks
/// become clusters when `cluster_cpus` gave none. Warns naming the files
/// (and the clusters only when `clusters_read`).
fn merge_cluster_packages(
    r: &mut Reader,
    packages: Vec<Group>,
    clusters: &mut Vec<Group>,
    clusters_read: bool,
) -> Vec<Group> {
    let mut by_id: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, g) in packages.iter().enumerate() {
        if let Some(id) = g.os_id {
            by_id.entry(id).or_default().push(i);
        }
    }
    if by_id.values().all(|v| v.len() < 2) {
        return packages;
    }
    let mut merged: Vec<(CpuSet, Option<u32>)> = Vec::new();
    let mut taken = vec![false; packages.len()];
    for (id, members) in &by_id {
        if members.len() < 2 {
            continue;
        }
        let sets: Vec<String> = members
            .iter()
            .map(|&i| packages[i].cpus.to_list_string())
            .collect();
        let first = packages[members[0]].cpus.first().unwrap_or(0);
        let second = packages[members[1]].cpus.first().unwrap_or(0);
        let action = if !clusters_read {
            "built one package of them (as lstopo shows clusters, not one package per cluster)"
        } else if clusters.is_empty() {
            "built one package of them, with those sets as clusters (as lstopo shows clusters, \
             not one package per cluster)"
        } else {
            "built one package of them, with clusters from cluster_cpus (as lstopo shows \
             clusters, not one package per cluster)"
        };
        r.warn(
            &format!("{CPU_DIR}/cpu{first}/topology/physical_package_id"),
            format_args!(
                "reports package {id} as cpu{second}/topology/physical_package_id does, but their \
                 core_siblings_list (package_cpus_list) name different CPU sets ({})",
                sets.join(" | ")
            ),
            action,
        );
        let mut all = CpuSet::new();
        for &i in members {
            all.union_with(&packages[i].cpus);
            taken[i] = true;
        }
        merged.push((all, Some(*id)));
        if clusters.is_empty()
            || members.iter().all(|&i| {
                !clusters
                    .iter()
                    .any(|c| c.cpus.intersects(&packages[i].cpus))
            })
        {
            for &i in members {
                clusters.push(Group {
                    id: 0,
                    os_id: None,
                    cpus: packages[i].cpus.clone(),
                });
            }
        }
    }
    for (i, g) in packages.into_iter().enumerate() {
        if !taken[i] {
            merged.push((g.cpus, g.os_id));
        }
    }
    merged.sort_by_key(|(s, _)| s.first());
    clusters.sort_by_key(|g| g.cpus.first());
    for (i, g) in clusters.iter_mut().enumerate() {
        g.id = i;
    }
    merged
        .into_iter()
        .enumerate()
        .map(|(i, (cpus, os_id))| Group { id: i, os_id, cpus })
        .collect()
}

fn finish_level(
    r: &mut Reader,
    level: &Level,
    groups: Vec<(CpuSet, Option<u32>)>,
    lacking: &CpuSet,
) -> Vec<Group> {
    if !lacking.is_empty() {
        let what = if level.what == PACKAGE.what {
            "put them together in one package"
        } else {
            "made each its own core"
        };
        r.warn(
            &format!("{CPU_DIR}/cpu{}/topology", lacking.first().unwrap_or(0)),
            format_args!("no {} information for online CPUs {lacking}", level.what),
            what,
        );
    }

    let mut groups: Vec<(CpuSet, Option<u32>)> =
        groups.into_iter().filter(|(s, _)| !s.is_empty()).collect();
    groups.sort_by_key(|(s, _)| s.first());
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (cpus, os_id))| Group { id: i, os_id, cpus })
        .collect()
}
