//! hwloc XML import: plan for a machine you are not sitting at, from the
//! file `lstopo machine.xml` wrote on it.
//!
//! Reads the v1 (no `version`), v2 (`version="2.0"`) and v3 (`"3.0"`)
//! formats into the same [`Topology`] model sysfs discovery builds, so every
//! planner works unchanged on an imported machine.
//!
//! How hwloc's vocabulary maps onto the model:
//! - The root object's `cpuset` is the set of online CPUs (hwloc drops
//!   offline PUs from it; v1 also has `online_cpuset`), `complete_cpuset`
//!   adds the offline ones, and `allowed_cpuset` is the cgroup's set.
//!   A CPU in `complete_cpuset` but not in `cpuset` is reported offline,
//!   with a warning: the XML cannot tell "offline" from "removed by the
//!   exporting process's cgroup".
//! - Objects are matched to CPUs by their cpusets (never by nesting), as
//!   discovery does; `Core`, `Package`, `Die`, NUMA nodes and caches become
//!   groups of online CPUs. `Group` objects become clusters when hwloc made
//!   them from Linux clusters, Intel modules/tiles or AMD compute units
//!   (their `kind` attribute) and dies for Intel dies; other groups are
//!   hwloc's own bookkeeping and are ignored, as are I/O and `Misc` objects.
//! - `cpukind` elements become [`Kind`]s, ranked the way hwloc ranks them
//!   (see `rank`); without any, one kind per ARM part the objects name, or
//!   one uniform kind holding every CPU. Kinds are named and marked by
//!   discovery's rule, with discovery's functions (see `name_kinds`): a
//!   machine gets the same kind names from its XML export as from its sysfs.
//! - `CoreType` infos of a cpukind give the kind's and its CPUs' core type;
//!   `CPUImplementer`/`CPUPart`/`CPUVariant`/`CPURevision` infos (on a PU,
//!   a Package or the Machine, hwloc's copy of `/proc/cpuinfo`) give each
//!   PU's `midr_el1`.
//! - v1 `<distances>` are matched to the NUMA nodes by count, as hwloc's
//!   own importer does (see `v1_distances`).
//! - A NUMA node's `cpuset` is its locality (hwloc nests memory-only nodes
//!   under the CPUs that reach them best). Of the nodes sharing one
//!   cpuset, the first that is DRAM (or has no `subtype`) holds those
//!   CPUs, else the first in document order; the others are memory-only
//!   ([`LocalitySource::HwlocXml`]). `subtype` gives the memory kind
//!   ([`MemoryKind::from_hwloc_name`]), the `memorytier` and `DAXDevice`
//!   infos the tier and DAX device, the root's `allowed_nodeset` which
//!   nodes the exporting process's cgroup allowed, and the `Bandwidth`,
//!   `ReadBandwidth`, `WriteBandwidth`, `Latency`, `ReadLatency` and
//!   `WriteLatency` memory attributes one CPU-initiator access class
//!   (initiators: the nodes whose CPUs lie in `initiator_cpuset`).
//!
//! Hostile input: every number is checked, CPU numbers are bounded by
//! [`pinsight_cpuset::MAX_CPU`] and the CPU count by [`MAX_IMPORTED_CPUS`],
//! the object tree is walked without recursion. Errors are one line naming
//! the file and, where it helps, the line and column.

use crate::discover::groups_meaningful;
use crate::discover::kinds::{self, core_type_name, midr_fields, midr_name};
use pinsight_cpuset::{CpuSet, MAX_CPU};
use pinsight_model::*;
use roxmltree::{Document, Node, ParsingOptions};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

/// Why an hwloc XML export was refused: the file, where in it (when an
/// element is to blame) and what. Displayed as one line: `hwloc XML 'FILE'
/// line L, column C: WHAT`, control characters escaped.
#[derive(Debug)]
pub struct HwlocError {
    /// The file (or the `origin` given to [`parse`]).
    pub origin: String,
    /// The 1-based line and column of the element at fault, if any.
    pub position: Option<(u32, u32)>,
    /// What is wrong (boxed: errors stay small on the happy path).
    pub kind: Box<HwlocErrorKind>,
}

impl fmt::Display for HwlocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = match self.position {
            Some((line, column)) => format!(
                "hwloc XML '{}' line {line}, column {column}: {}",
                self.origin, self.kind
            ),
            None => format!("hwloc XML '{}': {}", self.origin, self.kind),
        };
        f.write_str(&pinsight_sys::text::shown(&raw))
    }
}

impl std::error::Error for HwlocError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.kind)
    }
}

/// What is wrong with an hwloc XML export (see [`HwlocError`]). Quoted
/// values are shortened to a readable length when displayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HwlocErrorKind {
    /// The file cannot be read.
    #[error("{0}")]
    Read(#[source] std::io::Error),
    /// The file is larger than [`MAX_XML_BYTES`].
    #[error("larger than {limit} bytes: not an hwloc XML export of one machine")]
    TooLarge { limit: u64 },
    /// The file is not UTF-8; valid up to byte `valid_up_to`.
    #[error("not UTF-8 text (byte {valid_up_to})")]
    NotUtf8 { valid_up_to: usize },
    /// The XML parser refused the text.
    #[error("malformed XML: {0}")]
    Malformed(#[source] roxmltree::Error),
    /// The root element is not `<topology>`.
    #[error("root element is <{found}>, expected <topology> (is this an lstopo XML export?)")]
    WrongRoot { found: String },
    /// A `version` this importer does not know.
    #[error("unsupported format version '{version}' (this reads versions 1, 2 and 3)")]
    UnsupportedVersion { version: String },
    /// No Machine `<object>` under `<topology>`.
    #[error("no root <object> (expected the Machine object)")]
    NoRootObject,
    /// A PU or NUMANode object without `os_index`.
    #[error("{object_type} object without os_index")]
    MissingOsIndex { object_type: &'static str },
    /// The Machine object has no `cpuset`.
    #[error("root object has no cpuset")]
    RootWithoutCpuset,
    /// An object the model needs has no `cpuset`.
    #[error("{object_type} object has no cpuset")]
    ObjectWithoutCpuset { object_type: String },
    /// More CPUs than [`MAX_IMPORTED_CPUS`].
    #[error("describes {cpus} CPUs, more than the {max} this import accepts")]
    TooManyCpus { cpus: usize, max: usize },
    /// A set attribute that does not parse.
    #[error("attribute {attr}='{}': '{}' {reason}", shorten(.value), shorten(.token))]
    BadCpuset {
        attr: String,
        value: String,
        token: String,
        reason: String,
    },
    /// An `os_index` that is not a CPU number.
    #[error("os_index '{}' is not a CPU number from 0 to {max}", shorten(.value))]
    BadOsIndex { value: String, max: usize },
    /// A numeric attribute that does not parse.
    #[error("attribute {attr}='{}' is not a valid number", shorten(.value))]
    BadNumber { attr: String, value: String },
    /// A v1 `Cache` object without `depth` (its level).
    #[error("Cache object without depth")]
    CacheWithoutDepth,
    /// A `cpukind` element without `cpuset`.
    #[error("cpukind without cpuset")]
    CpukindWithoutCpuset,
    /// A `distances2` element without `nbobjs`.
    #[error("distances2 without nbobjs")]
    DistancesWithoutCount,
    /// A `distances2` matrix whose sizes disagree.
    #[error("distances2 nbobjs={nbobjs} but {indexes} indexes and {values} values")]
    DistancesMismatch {
        nbobjs: usize,
        indexes: usize,
        values: usize,
    },
    /// A v1 latency that is not a finite non-negative number.
    #[error("latency value is not a finite non-negative number")]
    BadLatency,
    /// A number list element holding something else.
    #[error("<{element}> holds '{}', not a number", shorten(.token))]
    BadListNumber { element: String, token: String },
    /// Two objects of one type overlap without being equal.
    #[error("two {what} objects share CPUs {shared}")]
    OverlappingObjects { what: String, shared: CpuSet },
    /// Two `cpukind` elements overlap.
    #[error("two cpukind elements share CPUs {shared}")]
    OverlappingKinds { shared: CpuSet },
}

/// The most CPUs an imported machine may have. Real machines stay far below
/// (Linux's NR_CPUS tops out at 8192); the bound keeps a hostile file from
/// making us build millions of CPU records.
pub const MAX_IMPORTED_CPUS: usize = 1 << 16;

/// Largest XML file read: 32 MiB, several times the export of a machine
/// with thousands of CPUs and its PCI devices; the bound keeps a wrong
/// file from filling the memory (a device such as `/dev/zero` or a FIFO
/// is refused unread: only a regular file is read).
pub const MAX_XML_BYTES: u64 = 32 << 20;

/// Reads an hwloc XML export (`lstopo file.xml`).
pub fn load(path: &Path) -> Result<Topology, HwlocError> {
    let origin = path.display().to_string();
    let whole = |kind| HwlocError {
        origin: origin.clone(),
        position: None,
        kind: Box::new(kind),
    };
    let bytes = pinsight_sys::fs::read_bounded(path, MAX_XML_BYTES).map_err(|e| {
        whole(match e {
            pinsight_sys::fs::BoundedReadError::Io(e) => HwlocErrorKind::Read(e),
            pinsight_sys::fs::BoundedReadError::TooLarge { limit } => {
                HwlocErrorKind::TooLarge { limit }
            }
            e @ pinsight_sys::fs::BoundedReadError::NotRegular { .. } => {
                HwlocErrorKind::Read(std::io::Error::other(e))
            }
        })
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        whole(HwlocErrorKind::NotUtf8 {
            valid_up_to: e.utf8_error().valid_up_to(),
        })
    })?;
    parse(&text, &origin)
}

/// Parses the text of an hwloc XML export; `origin` names it in errors and
/// becomes [`Source::HwlocXml`].
pub fn parse(text: &str, origin: &str) -> Result<Topology, HwlocError> {
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text, opts).map_err(|e| HwlocError {
        origin: origin.to_string(),
        position: None,
        kind: Box::new(HwlocErrorKind::Malformed(e)),
    })?;
    Importer {
        origin,
        doc: &doc,
        limit: 0,
        warnings: Vec::new(),
    }
    .run()
}

/// Group `kind` values hwloc gives groups built from Linux clusters, Intel
/// modules and tiles, and AMD compute units and complexes (hwloc's
/// `private/private.h`): all are "cores sharing something below the die".
const GROUP_KINDS_CLUSTER: &[u32] = &[102, 103, 120, 121, 222];
/// Group `kind` for Intel dies found through CPUID leaf 0x1F.
const GROUP_KIND_INTEL_DIE: u32 = 104;

/// What one `<object>` element means to the model.
enum ObjKind {
    Pu,
    Core,
    Package,
    Die,
    Cluster,
    Numa(NumaAttrs),
    Cache(CacheAttrs),
}

/// What a `NUMANode` object says about its memory.
struct NumaAttrs {
    memory: Option<u64>,
    kind: Option<MemoryKind>,
    tier: Option<u32>,
    dax: Option<String>,
}

struct CacheAttrs {
    level: u8,
    cache_type: CacheType,
    size: Option<u64>,
    line: Option<u32>,
    ways: Option<u32>,
}

/// An object relevant to the model, with its parsed sets.
struct Obj {
    kind: ObjKind,
    os_index: Option<u32>,
    cpuset: CpuSet,
}

/// A `cpukind` element.
struct RawKind {
    cpus: CpuSet,
    efficiency: Option<i64>,
    max_mhz: Option<u32>,
    base_mhz: Option<u32>,
    /// hwloc's own scale: 1 = IntelAtom, 2 = IntelCore.
    intel_core_type: Option<u8>,
    capacity: Option<u32>,
    /// ARM identity from the cpukind's own `CPUImplementer`/`CPUPart`.
    midr: Option<u64>,
}

/// What the second pass collects (see `Importer::objects`).
struct Objects {
    objs: Vec<Obj>,
    /// NUMA node `gp_index` → os index (v2/v3 distances may use either).
    numa_gp: HashMap<u64, u32>,
    /// NUMA node os indexes in document order (v1 distances).
    numa_doc_order: Vec<u32>,
}

/// The root's CPU sets (see `Importer::cpu_sets`).
struct CpuSets {
    online: CpuSet,
    present: CpuSet,
    allowed: CpuSet,
}

/// The CPU groups and caches over the online CPUs (see `Importer::groups`).
struct Groups {
    cores: Vec<Group>,
    packages: Vec<Group>,
    dies: Vec<Group>,
    clusters: Vec<Group>,
    caches: Vec<Cache>,
}

struct Importer<'a, 'input> {
    origin: &'a str,
    doc: &'a Document<'input>,
    /// Where an infinite hwloc set (`0xf...f`) is cut: one past the highest
    /// CPU the file names.
    limit: usize,
    warnings: Vec<String>,
}

impl<'a, 'input> Importer<'a, 'input> {
    /// An error naming the file, and the element's position.
    fn err_at(&self, node: Node, kind: HwlocErrorKind) -> HwlocError {
        let p = self.doc.text_pos_at(node.range().start);
        HwlocError {
            origin: self.origin.to_string(),
            position: Some((p.row, p.col)),
            kind: Box::new(kind),
        }
    }

    fn err(&self, kind: HwlocErrorKind) -> HwlocError {
        HwlocError {
            origin: self.origin.to_string(),
            position: None,
            kind: Box::new(kind),
        }
    }

    fn run(mut self) -> Result<Topology, HwlocError> {
        let top = self.doc.root_element();
        let root = self.root_object(top)?;
        self.set_limit(top, root)?;

        let online_root = self
            .cpuset_attr(root, "cpuset")?
            .ok_or_else(|| self.err_at(root, HwlocErrorKind::RootWithoutCpuset))?;
        let complete_root = self.cpuset_attr(root, "complete_cpuset")?;

        let Objects {
            objs,
            numa_gp,
            numa_doc_order,
        } = self.objects(top, root)?;
        let sets = self.cpu_sets(root, &objs, online_root, complete_root)?;
        let online = &sets.online;
        let groups = self.groups(&objs, online)?;

        let mut numa_nodes = make_numa(&objs, online);
        self.allowed_nodes(root, &mut numa_nodes)?;
        self.memattrs(top, &mut numa_nodes, &numa_gp)?;
        let numa_distances =
            self.numa_distances(top, root, &numa_nodes, &numa_gp, &numa_doc_order)?;

        let (named, arch, midrs) = self.kinds(top, root, online)?;
        let cpus = cpu_records(
            &sets.present,
            online,
            &sets.allowed,
            groups.levels(),
            &numa_nodes,
            &named,
            &midrs,
        );
        let Named {
            kinds, identities, ..
        } = named;

        let mut topo = Topology {
            source: Source::HwlocXml(self.origin.to_string()),
            model_name: self.model_name(top, root),
            arch,
            cpus,
            cores: groups.cores,
            packages: groups.packages,
            dies: groups.dies,
            clusters: groups.clusters,
            caches: groups.caches,
            numa_nodes,
            numa_distances,
            kinds,
            provenance: Default::default(),
            devices: Vec::new(),
            warnings: self
                .warnings
                .iter()
                .map(|w| pinsight_sys::text::shown(w).into_owned())
                .collect(),
        };
        name_kinds(&mut topo, &identities);
        Ok(topo)
    }

    /// The online, present and allowed CPUs, from the root's sets and the
    /// PUs the file describes; warns about present CPUs that are offline.
    fn cpu_sets(
        &mut self,
        root: Node,
        objs: &[Obj],
        online_root: CpuSet,
        complete_root: Option<CpuSet>,
    ) -> Result<CpuSets, HwlocError> {
        let pu_ids: CpuSet = objs
            .iter()
            .filter(|o| matches!(o.kind, ObjKind::Pu))
            .filter_map(|o| o.os_index)
            .map(|i| i as usize)
            .collect();

        // Online: the root cpuset; v1 also lists online-but-disallowed CPUs
        // in `online_cpuset`, which count when the file describes them.
        let mut online = online_root;
        if let Some(v1_online) = self.cpuset_attr(root, "online_cpuset")? {
            online.union_with(&v1_online.intersection(&pu_ids));
        }
        let mut present = complete_root.unwrap_or_default();
        present.union_with(&online);
        present.union_with(&pu_ids);
        if present.len() > MAX_IMPORTED_CPUS {
            return Err(self.err(HwlocErrorKind::TooManyCpus {
                cpus: present.len(),
                max: MAX_IMPORTED_CPUS,
            }));
        }
        let absent = present.difference(&online);
        if !absent.is_empty() {
            self.warnings.push(format!(
                "{}: CPUs {} are in the machine's complete_cpuset but not its cpuset (offline, or outside the cgroup of the process that exported the file); they are treated as offline",
                self.origin, absent
            ));
        }
        let allowed = self
            .cpuset_attr(root, "allowed_cpuset")?
            .unwrap_or_else(|| online.clone());
        Ok(CpuSets {
            online,
            present,
            allowed,
        })
    }

    /// Cores, packages, dies, clusters and caches over the online CPUs:
    /// CPUs hwloc left without a core (no core information on that
    /// machine) are each their own core; without a package, one package.
    /// Dies and clusters are kept only where they say something.
    fn groups(&mut self, objs: &[Obj], online: &CpuSet) -> Result<Groups, HwlocError> {
        let groups_of =
            |what: &str, want: fn(&ObjKind) -> bool| -> Result<Vec<Group>, HwlocError> {
                make_groups(
                    what,
                    objs.iter()
                        .filter(|o| want(&o.kind))
                        .map(|o| (o.os_index, o.cpuset.intersection(online))),
                )
                .map_err(|m| self.err(m))
            };
        let mut cores = groups_of("Core", |k| matches!(k, ObjKind::Core))?;
        let mut packages = groups_of("Package", |k| matches!(k, ObjKind::Package))?;
        let dies_all = groups_of("Die", |k| matches!(k, ObjKind::Die))?;
        let clusters_all = groups_of("cluster Group", |k| matches!(k, ObjKind::Cluster))?;

        let coreless = online.difference(&union_of(&cores));
        if !coreless.is_empty() {
            cores.extend(coreless.iter().map(|c| Group {
                id: 0,
                os_id: None,
                cpus: CpuSet::single(c),
            }));
            cores = renumber(cores);
        }
        let packageless = online.difference(&union_of(&packages));
        if !packageless.is_empty() {
            self.warnings.push(format!(
                "{}: CPUs {} are in no Package object; grouped as one package",
                self.origin, packageless
            ));
            packages.push(Group {
                id: 0,
                os_id: None,
                cpus: packageless,
            });
            packages = renumber(packages);
        }

        let caches = make_caches(objs, online);
        let meaningful = |all: Vec<Group>| {
            if groups_meaningful(&all, &packages, &caches, online) {
                all
            } else {
                Vec::new()
            }
        };
        Ok(Groups {
            dies: meaningful(dies_all),
            clusters: meaningful(clusters_all),
            cores,
            packages,
            caches,
        })
    }

    /// The kinds (from the `cpukind`s), the architecture and each CPU's
    /// ARM MIDR.
    fn kinds(
        &mut self,
        top: Node,
        root: Node,
        online: &CpuSet,
    ) -> Result<(Named, Option<String>, Midrs), HwlocError> {
        let raw_kinds = self.raw_kinds(top, online)?;
        let arch = self.topology_info(top, root, "Architecture");
        let midrs = cpu_midrs(top, root);
        let named = build_kinds(
            raw_kinds,
            online,
            &midrs,
            arch.as_deref(),
            &mut self.warnings,
            self.origin,
        )
        .map_err(|m| self.err(m))?;
        Ok((named, arch, midrs))
    }

    /// Marks which NUMA nodes the root's `allowed_nodeset` allows, when it
    /// names any of them.
    fn allowed_nodes(&self, root: Node, numa_nodes: &mut [NumaNode]) -> Result<(), HwlocError> {
        let allowed_nodes = self.cpuset_attr(root, "allowed_nodeset")?;
        if let Some(a) =
            allowed_nodes.filter(|a| numa_nodes.iter().any(|n| a.contains(n.id as usize)))
        {
            for n in numa_nodes {
                n.memory.allowed = a.contains(n.id as usize);
            }
        }
        Ok(())
    }

    /// The root `<object>` (the Machine), after checking the root element
    /// and the format version.
    fn root_object(&self, top: Node<'a, 'input>) -> Result<Node<'a, 'input>, HwlocError> {
        if top.tag_name().name() != "topology" {
            return Err(self.err_at(
                top,
                HwlocErrorKind::WrongRoot {
                    found: top.tag_name().name().to_string(),
                },
            ));
        }
        let version = top.attribute("version");
        if let Some(v) = version {
            let major = v.split('.').next().unwrap_or("");
            if !matches!(major, "1" | "2" | "3") {
                return Err(self.err_at(
                    top,
                    HwlocErrorKind::UnsupportedVersion {
                        version: v.to_string(),
                    },
                ));
            }
        }
        let root = top
            .children()
            .find(|n| n.has_tag_name("object"))
            .ok_or_else(|| self.err_at(top, HwlocErrorKind::NoRootObject))?;
        Ok(root)
    }

    /// First pass: the highest CPU named anywhere finite, so that infinite
    /// sets (`0xf...f`) can be cut there (see `limit`).
    fn set_limit(&mut self, top: Node, root: Node) -> Result<(), HwlocError> {
        let mut highest: Option<usize> = None;
        for node in top.descendants().filter(|n| n.has_tag_name("object")) {
            if node.attribute("type") == Some("PU") {
                let id = self.os_index(node)?.ok_or_else(|| {
                    self.err_at(node, HwlocErrorKind::MissingOsIndex { object_type: "PU" })
                })?;
                highest = highest.max(Some(id as usize));
            }
        }
        for attr in [
            "complete_cpuset",
            "cpuset",
            "online_cpuset",
            "allowed_cpuset",
        ] {
            if let Some(s) = self.cpuset_attr(root, attr)? {
                highest = highest.max(s.last());
            }
        }
        self.limit = highest.map_or(0, |h| h + 1);
        Ok(())
    }

    /// Second pass: the objects the model is built from, and the NUMA
    /// nodes by `gp_index` and in document order (for the distances).
    fn objects(&self, top: Node, root: Node) -> Result<Objects, HwlocError> {
        let mut objs = Vec::new();
        let mut numa_gp: HashMap<u64, u32> = HashMap::new();
        let mut numa_doc_order: Vec<u32> = Vec::new();
        for node in top.descendants().filter(|n| n.has_tag_name("object")) {
            if node == root {
                continue;
            }
            let Some(kind) = self.obj_kind(node)? else {
                continue;
            };
            let os_index = self.os_index(node)?;
            let cpuset = match self.cpuset_attr(node, "cpuset")? {
                Some(s) => s,
                None if matches!(kind, ObjKind::Pu) => {
                    CpuSet::single(os_index.unwrap_or(0) as usize)
                }
                None => {
                    let t = node.attribute("type").unwrap_or("?");
                    return Err(self.err_at(
                        node,
                        HwlocErrorKind::ObjectWithoutCpuset {
                            object_type: t.to_string(),
                        },
                    ));
                }
            };
            if let ObjKind::Numa { .. } = kind {
                let id = os_index.ok_or_else(|| {
                    self.err_at(
                        node,
                        HwlocErrorKind::MissingOsIndex {
                            object_type: "NUMANode",
                        },
                    )
                })?;
                if let Some(gp) = node.attribute("gp_index").and_then(|g| g.parse().ok()) {
                    numa_gp.insert(gp, id);
                }
                numa_doc_order.push(id);
            }
            objs.push(Obj {
                kind,
                os_index,
                cpuset,
            });
        }
        Ok(Objects {
            objs,
            numa_gp,
            numa_doc_order,
        })
    }

    /// Parses a set attribute; `None` when absent.
    fn cpuset_attr(&self, node: Node, attr: &str) -> Result<Option<CpuSet>, HwlocError> {
        match node.attribute(attr) {
            None => Ok(None),
            Some(text) => CpuSet::parse_hwloc(text, self.limit)
                .map(Some)
                .map_err(|e| {
                    self.err_at(
                        node,
                        HwlocErrorKind::BadCpuset {
                            attr: attr.to_string(),
                            value: text.to_string(),
                            token: e.token,
                            reason: e.reason,
                        },
                    )
                }),
        }
    }

    fn os_index(&self, node: Node) -> Result<Option<u32>, HwlocError> {
        match node.attribute("os_index") {
            None => Ok(None),
            Some(t) => match t.trim().parse::<u32>() {
                Ok(v) if (v as usize) <= MAX_CPU || node.attribute("type") != Some("PU") => {
                    Ok(Some(v))
                }
                _ => Err(self.err_at(
                    node,
                    HwlocErrorKind::BadOsIndex {
                        value: t.to_string(),
                        max: MAX_CPU,
                    },
                )),
            },
        }
    }

    /// A numeric attribute; absent is `None`, garbage an error naming it.
    fn num_attr<T: std::str::FromStr>(
        &self,
        node: Node,
        attr: &str,
    ) -> Result<Option<T>, HwlocError> {
        match node.attribute(attr) {
            None => Ok(None),
            Some(t) => t.trim().parse::<T>().map(Some).map_err(|_| {
                self.err_at(
                    node,
                    HwlocErrorKind::BadNumber {
                        attr: attr.to_string(),
                        value: t.to_string(),
                    },
                )
            }),
        }
    }

    /// What an `<object>` is, or `None` for the types the model ignores.
    fn obj_kind(&self, node: Node) -> Result<Option<ObjKind>, HwlocError> {
        let t = node.attribute("type").unwrap_or("");
        Ok(Some(match t {
            "PU" => ObjKind::Pu,
            "Core" => ObjKind::Core,
            "Package" | "Socket" => ObjKind::Package,
            "Die" => ObjKind::Die,
            "Group" => match self.num_attr::<u32>(node, "kind")? {
                Some(k) if GROUP_KINDS_CLUSTER.contains(&k) => ObjKind::Cluster,
                Some(GROUP_KIND_INTEL_DIE) => ObjKind::Die,
                _ => return Ok(None),
            },
            "NUMANode" => ObjKind::Numa(NumaAttrs {
                memory: self.num_attr(node, "local_memory")?,
                kind: node
                    .attribute("subtype")
                    .and_then(MemoryKind::from_hwloc_name),
                tier: info_child(node, "memorytier").and_then(|t| t.trim().parse().ok()),
                dax: info_child(node, "DAXDevice"),
            }),
            "Cache" => {
                // v1: the level is the `depth` attribute.
                let level = self
                    .num_attr::<u8>(node, "depth")?
                    .ok_or_else(|| self.err_at(node, HwlocErrorKind::CacheWithoutDepth))?;
                ObjKind::Cache(self.cache_attrs(node, level, CacheType::Unified)?)
            }
            _ => match cache_level_from_type(t) {
                Some((level, default_type)) => {
                    ObjKind::Cache(self.cache_attrs(node, level, default_type)?)
                }
                None => return Ok(None),
            },
        }))
    }

    fn cache_attrs(
        &self,
        node: Node,
        level: u8,
        default_type: CacheType,
    ) -> Result<CacheAttrs, HwlocError> {
        let cache_type = match self.num_attr::<u8>(node, "cache_type")? {
            Some(0) => CacheType::Unified,
            Some(1) => CacheType::Data,
            Some(2) => CacheType::Instruction,
            _ => default_type,
        };
        // hwloc: associativity -1 = fully associative, 0 = unknown; the
        // model: 0 = fully associative.
        let ways = match self.num_attr::<i64>(node, "cache_associativity")? {
            Some(-1) => Some(0),
            Some(w) if w > 0 => u32::try_from(w).ok(),
            _ => None,
        };
        Ok(CacheAttrs {
            level,
            cache_type,
            size: self.num_attr::<u64>(node, "cache_size")?.filter(|s| *s > 0),
            line: self
                .num_attr::<u32>(node, "cache_linesize")?
                .filter(|s| *s > 0),
            ways,
        })
    }

    /// `info` children of the `<topology>` element (v3 puts machine-wide
    /// infos there) or of the root object (v1, v2).
    fn topology_info(&self, top: Node, root: Node, name: &str) -> Option<String> {
        [top, root].iter().find_map(|n| info_child(*n, name))
    }

    /// The CPU model: a Package's `CPUModel` (x86), else the root's (ARM).
    fn model_name(&self, top: Node, root: Node) -> Option<String> {
        top.descendants()
            .filter(|n| {
                n.has_tag_name("object")
                    && matches!(n.attribute("type"), Some("Package" | "Socket"))
            })
            .find_map(|n| info_child(n, "CPUModel"))
            .or_else(|| info_child(root, "CPUModel"))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    fn raw_kinds(&self, top: Node, online: &CpuSet) -> Result<Vec<RawKind>, HwlocError> {
        let mut out = Vec::new();
        for node in top.descendants().filter(|n| n.has_tag_name("cpukind")) {
            let set = self
                .cpuset_attr(node, "cpuset")?
                .ok_or_else(|| self.err_at(node, HwlocErrorKind::CpukindWithoutCpuset))?;
            let info_num = |name: &str| -> Option<u32> {
                info_child(node, name).and_then(|v| v.trim().parse().ok())
            };
            out.push(RawKind {
                cpus: set.intersection(online),
                efficiency: self.num_attr::<i64>(node, "forced_efficiency")?,
                max_mhz: info_num("FrequencyMaxMHz").filter(|f| *f > 0),
                base_mhz: info_num("FrequencyBaseMHz").filter(|f| *f > 0),
                intel_core_type: match info_child(node, "CoreType").as_deref() {
                    Some("IntelAtom") => Some(1),
                    Some("IntelCore") => Some(2),
                    _ => None,
                },
                capacity: info_num("LinuxCapacity").filter(|c| *c > 0),
                midr: MidrInfo::of(node).midr(),
            });
        }
        Ok(out)
    }

    /// The bandwidth and latency memory attributes (v2/v3 `<memattr>`)
    /// of each node, as one CPU-initiator access class. Values from an
    /// initiator other than the node's locality (a remote view) are
    /// skipped (the model keeps the local view only).
    fn memattrs(
        &self,
        top: Node,
        nodes: &mut [NumaNode],
        numa_gp: &HashMap<u64, u32>,
    ) -> Result<(), HwlocError> {
        for m in top.children().filter(|n| n.has_tag_name("memattr")) {
            let name = m.attribute("name").unwrap_or("");
            if !matches!(
                name,
                "Bandwidth"
                    | "ReadBandwidth"
                    | "WriteBandwidth"
                    | "Latency"
                    | "ReadLatency"
                    | "WriteLatency"
            ) {
                continue;
            }
            for v in m.children().filter(|n| n.has_tag_name("memattr_value")) {
                let id = match self.num_attr::<u64>(v, "target_obj_gp_index")? {
                    Some(gp) => numa_gp.get(&gp).copied(),
                    None => self.num_attr::<u32>(v, "target_obj_os_index")?,
                };
                let Some(value) = self.num_attr::<u64>(v, "value")? else {
                    continue;
                };
                let initiator = self.cpuset_attr(v, "initiator_cpuset")?;
                let Some(i) = id.and_then(|id| nodes.iter().position(|n| n.id == id)) else {
                    continue;
                };
                let loc = &nodes[i].memory.locality;
                if initiator
                    .as_ref()
                    .is_some_and(|c| !loc.is_empty() && !c.intersects(loc))
                {
                    continue;
                }
                let initiators: Vec<u32> = match &initiator {
                    Some(c) => nodes
                        .iter()
                        .filter(|n| !n.cpus.is_empty() && n.cpus.is_subset(c))
                        .map(|n| n.id)
                        .collect(),
                    None => Vec::new(),
                };
                let mem = &mut nodes[i].memory;
                if mem.access.is_empty() {
                    mem.access.push(MemoryAccess {
                        class: 1,
                        initiators,
                        ..Default::default()
                    });
                }
                let a = &mut mem.access[0];
                let value = Some(value).filter(|v| *v > 0);
                match name {
                    "Bandwidth" => {
                        a.read_bandwidth_mbps = a.read_bandwidth_mbps.or(value);
                        a.write_bandwidth_mbps = a.write_bandwidth_mbps.or(value);
                    }
                    "ReadBandwidth" => a.read_bandwidth_mbps = value,
                    "WriteBandwidth" => a.write_bandwidth_mbps = value,
                    "Latency" => {
                        a.read_latency_ns = a.read_latency_ns.or(value);
                        a.write_latency_ns = a.write_latency_ns.or(value);
                    }
                    "ReadLatency" => a.read_latency_ns = value,
                    _ => a.write_latency_ns = value,
                }
            }
        }
        Ok(())
    }

    /// The NUMA latency matrix in `nodes` order, from v2/v3 `distances2`
    /// or v1 `distances`. A matrix that does not cover exactly the nodes
    /// is dropped with a warning rather than guessed at.
    fn numa_distances(
        &mut self,
        top: Node,
        root: Node,
        nodes: &[NumaNode],
        gp_to_os: &HashMap<u64, u32>,
        doc_order: &[u32],
    ) -> Result<Option<Vec<Vec<u32>>>, HwlocError> {
        if nodes.is_empty() {
            return Ok(None);
        }
        let mut candidates: Vec<Node> = top
            .children()
            .filter(|n| n.has_tag_name("distances2") && n.attribute("type") == Some("NUMANode"))
            .collect();
        // Prefer the latency matrix the OS reported.
        candidates.sort_by_key(|n| n.attribute("name") != Some("NUMALatency"));
        if let Some(d) = candidates.first() {
            let n: usize = self
                .num_attr(*d, "nbobjs")?
                .ok_or_else(|| self.err_at(*d, HwlocErrorKind::DistancesWithoutCount))?;
            let indexes = self.u64_list(*d, "indexes")?;
            let values = self.u64_list(*d, "u64values")?;
            if indexes.len() != n || n.checked_mul(n) != Some(values.len()) {
                return Err(self.err_at(
                    *d,
                    HwlocErrorKind::DistancesMismatch {
                        nbobjs: n,
                        indexes: indexes.len(),
                        values: values.len(),
                    },
                ));
            }
            let by_gp = d.attribute("indexing") == Some("gp");
            let ids: Vec<Option<u32>> = indexes
                .iter()
                .map(|&i| {
                    if by_gp {
                        gp_to_os.get(&i).copied()
                    } else {
                        u32::try_from(i).ok()
                    }
                })
                .collect();
            return Ok(self.reorder(&ids, &values, nodes));
        }
        self.v1_distances(top, root, nodes, doc_order)
    }

    /// hwloc 1.x `<distances>`, as hwloc's own v1 importer reads them
    /// (`hwloc__xml_v1import_distances` and the v1 pass of
    /// `hwloc_look_xml` in hwloc's `topology-xml.c`):
    /// - every `<distances>` element of the root object is read (hwloc
    ///   ignores those of other objects; so do we, with a warning);
    /// - a matrix is the NUMA nodes' when its `nbobjs` equals the number
    ///   of NUMA node objects, which it lists in document order. The
    ///   `relative_depth` attribute is not trusted to find them: hwloc 2's
    ///   v1 exporter writes it relative to its own v2 tree, where NUMA
    ///   nodes hang elsewhere. It only breaks ties: of several NUMA-sized
    ///   matrices, the first whose `relative_depth` names the NUMA level of
    ///   this file wins, else the first;
    /// - values are `latency` × `latency_base`; when they are not all whole
    ///   numbers they are scaled by 1000, as hwloc does.
    ///
    /// The model keeps the NUMA matrix only: matrices of other levels are
    /// ignored with a warning.
    fn v1_distances(
        &mut self,
        top: Node,
        root: Node,
        nodes: &[NumaNode],
        doc_order: &[u32],
    ) -> Result<Option<Vec<Vec<u32>>>, HwlocError> {
        let numa_count = doc_order.len();
        let mut levels: Option<Levels> = None;
        // (relative_depth, values) of each NUMA-sized matrix.
        let mut numa_sized: Vec<(usize, Vec<u64>)> = Vec::new();
        for d in top.descendants().filter(|n| n.has_tag_name("distances")) {
            let parent = d.parent_element();
            if parent != Some(root) {
                let what = parent
                    .and_then(|p| p.attribute("type"))
                    .unwrap_or("non-object");
                self.warnings.push(format!(
                    "{}: v1 distances attached to a {what} element, not to the machine, are ignored (as hwloc does)",
                    self.origin
                ));
                continue;
            }
            let n: usize = self.num_attr(d, "nbobjs")?.unwrap_or(0);
            let depth: usize = self.num_attr(d, "relative_depth")?.unwrap_or(0);
            let base: f64 = self.num_attr(d, "latency_base")?.unwrap_or(0.0);
            if n == 0 || depth == 0 || base == 0.0 {
                self.warnings.push(format!(
                    "{}: v1 distances without nbobjs, relative_depth or latency_base ignored (as hwloc does)",
                    self.origin
                ));
                continue;
            }
            let mut floats = Vec::new();
            for l in d.children().filter(|c| c.has_tag_name("latency")) {
                let v: f64 = self.num_attr(l, "value")?.unwrap_or(f64::NAN);
                let scaled = v * base;
                if !(scaled.is_finite() && scaled >= 0.0) {
                    return Err(self.err_at(l, HwlocErrorKind::BadLatency));
                }
                floats.push(scaled);
            }
            if n.checked_mul(n) != Some(floats.len()) {
                self.warnings.push(format!(
                    "{}: v1 distances nbobjs={n} but {} latency values; ignored",
                    self.origin,
                    floats.len()
                ));
                continue;
            }
            if n != numa_count {
                self.warnings.push(format!(
                    "{}: v1 distances between {n} objects ({}) are not between the {numa_count} NUMA nodes; ignored (only NUMA distances are kept)",
                    self.origin,
                    levels.get_or_insert_with(|| Levels::of(root)).describe(depth)
                ));
                continue;
            }
            let Some(values) = v1_distance_values(&floats) else {
                return Err(self.err_at(d, HwlocErrorKind::BadLatency));
            };
            if values.scaled {
                self.warnings.push(format!(
                    "{}: v1 NUMA distances are not whole numbers; scaled by 1000 (as hwloc does)",
                    self.origin
                ));
            }
            numa_sized.push((depth, values.values));
        }
        if numa_sized.is_empty() {
            return Ok(None);
        }
        let levels = levels.unwrap_or_else(|| Levels::of(root));
        let names_numa = |depth: usize| levels.is_numa(depth, numa_count);
        let chosen = numa_sized
            .iter()
            .position(|(depth, _)| names_numa(*depth))
            .unwrap_or(0);
        if numa_sized.len() > 1 {
            self.warnings.push(format!(
                "{}: {} v1 distance matrices have one row per NUMA node; kept the {}, ignored the others",
                self.origin,
                numa_sized.len(),
                if names_numa(numa_sized[chosen].0) {
                    "one whose relative_depth names the NUMA level"
                } else {
                    "first"
                }
            ));
        }
        let (_, values) = numa_sized.swap_remove(chosen);
        let ids: Vec<Option<u32>> = doc_order.iter().map(|id| Some(*id)).collect();
        Ok(self.reorder(&ids, &values, nodes))
    }

    /// Rearranges a row-major matrix over `ids` into `nodes` order.
    fn reorder(
        &mut self,
        ids: &[Option<u32>],
        values: &[u64],
        nodes: &[NumaNode],
    ) -> Option<Vec<Vec<u32>>> {
        let n = ids.len();
        let pos: HashMap<u32, usize> = ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| id.map(|id| (id, i)))
            .collect();
        let mut rows = Vec::with_capacity(nodes.len());
        for a in nodes {
            let Some(&i) = pos.get(&a.id) else {
                self.warnings.push(format!(
                    "{}: NUMA distances do not cover node {}; ignored",
                    self.origin, a.id
                ));
                return None;
            };
            let mut row = Vec::with_capacity(nodes.len());
            for b in nodes {
                let j = *pos.get(&b.id)?;
                row.push(u32::try_from(values[i * n + j]).ok()?);
            }
            rows.push(row);
        }
        Some(rows)
    }

    /// Whitespace-separated numbers of every `child` element of `node`,
    /// concatenated (hwloc splits long lists over several elements).
    fn u64_list(&self, node: Node, child: &str) -> Result<Vec<u64>, HwlocError> {
        let mut out = Vec::new();
        for c in node.children().filter(|c| c.has_tag_name(child)) {
            for tok in c.text().unwrap_or("").split_whitespace() {
                out.push(tok.parse().map_err(|_| {
                    self.err_at(
                        c,
                        HwlocErrorKind::BadListNumber {
                            element: child.to_string(),
                            token: tok.to_string(),
                        },
                    )
                })?);
            }
        }
        Ok(out)
    }
}

/// The object levels of a v1 tree: per depth below the root object (its
/// children are at depth 1), how many objects and of which types. One pass
/// in document order (a parent comes before its children).
struct Levels(BTreeMap<usize, (usize, Vec<String>)>);

impl Levels {
    fn of(root: Node) -> Levels {
        let mut depth_of: HashMap<roxmltree::NodeId, usize> = HashMap::new();
        depth_of.insert(root.id(), 0);
        let mut levels: BTreeMap<usize, (usize, Vec<String>)> = BTreeMap::new();
        for n in root.descendants().skip(1).filter(|n| n.is_element()) {
            let parent = n
                .parent_element()
                .and_then(|p| depth_of.get(&p.id()).copied())
                .unwrap_or(0);
            let depth = parent + usize::from(n.has_tag_name("object"));
            depth_of.insert(n.id(), depth);
            if n.has_tag_name("object") {
                let e = levels.entry(depth).or_default();
                e.0 += 1;
                let t = n.attribute("type").unwrap_or("?");
                if !e.1.iter().any(|x| x == t) {
                    e.1.push(t.to_string());
                }
            }
        }
        Levels(levels)
    }

    /// Whether the objects at `depth` are exactly the `count` NUMA nodes.
    fn is_numa(&self, depth: usize, count: usize) -> bool {
        self.0
            .get(&depth)
            .is_some_and(|(n, types)| *n == count && types.iter().all(|t| t == "NUMANode"))
    }

    /// "relative_depth 2: 8 Socket objects", for warnings.
    fn describe(&self, depth: usize) -> String {
        match self.0.get(&depth) {
            None => format!("relative_depth {depth} names no object"),
            Some((n, types)) if types.len() == 1 => {
                format!("relative_depth {depth}: {n} {} objects", types[0])
            }
            Some((n, _)) => format!("relative_depth {depth}: {n} objects of several types"),
        }
    }
}

/// v1 distance values as the model's integers.
struct V1Values {
    values: Vec<u64>,
    /// Not all whole numbers: multiplied by 1000.
    scaled: bool,
}

/// hwloc's rule (`hwloc_convert_from_v1dist_floats`): whole numbers
/// (within 0.001) are kept, otherwise every value is multiplied by 1000.
/// `None` when a value does not fit the model's `u32`.
fn v1_distance_values(floats: &[f64]) -> Option<V1Values> {
    let whole = floats.iter().all(|f| {
        let frac = f.fract();
        !(0.001..0.999).contains(&frac)
    });
    let (scale, scaled) = if whole { (1.0, false) } else { (1000.0, true) };
    let values = floats
        .iter()
        .map(|f| {
            let v = if whole {
                (f * scale).round()
            } else {
                (f * scale).trunc()
            };
            (v <= f64::from(u32::MAX)).then_some(v as u64)
        })
        .collect::<Option<Vec<u64>>>()?;
    Some(V1Values { values, scaled })
}

/// The ARM identity infos hwloc copies from `/proc/cpuinfo` onto an object
/// (the Machine, a Package or a PU) or a cpukind.
#[derive(Clone, Copy, Debug, Default)]
struct MidrInfo {
    implementer: Option<u32>,
    part: Option<u32>,
    variant: Option<u32>,
    revision: Option<u32>,
}

impl MidrInfo {
    fn of(node: Node) -> MidrInfo {
        // /proc/cpuinfo spells implementer, part and variant in hex
        // ("0x41", "0xd0b"), the revision in decimal; out-of-range values
        // are ignored.
        let field = |name: &str, max: u32| {
            let v = info_child(node, name)?;
            let v = v.trim();
            let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => v.parse().ok()?,
            };
            (n <= max).then_some(n)
        };
        MidrInfo {
            implementer: field("CPUImplementer", 0xff),
            part: field("CPUPart", 0xfff),
            variant: field("CPUVariant", 0xf),
            revision: field("CPURevision", 0xf),
        }
    }

    /// Fields this object does not give are its ancestors'.
    fn over(self, parent: MidrInfo) -> MidrInfo {
        MidrInfo {
            implementer: self.implementer.or(parent.implementer),
            part: self.part.or(parent.part),
            variant: self.variant.or(parent.variant),
            revision: self.revision.or(parent.revision),
        }
    }

    /// `midr_el1` as an arm64 kernel shows it, when implementer and part
    /// are known (the architecture field is 0xf, "by CPUID scheme", on
    /// every core /proc/cpuinfo describes this way).
    fn midr(self) -> Option<u64> {
        let (implementer, part) = (self.implementer?, self.part?);
        Some(
            u64::from(implementer) << 24
                | u64::from(self.variant.unwrap_or(0)) << 20
                | 0xf << 16
                | u64::from(part) << 4
                | u64::from(self.revision.unwrap_or(0)),
        )
    }
}

/// Each CPU's ARM `midr_el1` value, by CPU.
type Midrs = HashMap<usize, u64>;

/// Each PU's `midr_el1`, from the nearest object carrying ARM identity
/// infos (the PU itself, a Package, the Machine, or the `<topology>`
/// element). One pass in document order: a parent comes before its
/// children.
fn cpu_midrs(top: Node, root: Node) -> HashMap<usize, u64> {
    let mut out = HashMap::new();
    let base = MidrInfo::of(top);
    let mut inherited: HashMap<roxmltree::NodeId, MidrInfo> = HashMap::new();
    for n in root.descendants().filter(|n| n.has_tag_name("object")) {
        let parent = n
            .ancestors()
            .skip(1)
            .find(|a| a.has_tag_name("object"))
            .and_then(|a| inherited.get(&a.id()).copied())
            .unwrap_or(base);
        let info = MidrInfo::of(n).over(parent);
        if n.attribute("type") == Some("PU") {
            let id = n.attribute("os_index").and_then(|i| i.trim().parse().ok());
            if let (Some(id), Some(midr)) = (id, info.midr()) {
                out.insert(id, midr);
            }
        }
        inherited.insert(n.id(), info);
    }
    out
}

/// One [`Cpu`] record per present CPU, from the groups (cores, packages,
/// dies, clusters, in that order), NUMA nodes and kinds built before, and
/// the ARM identity of each PU.
fn cpu_records(
    present: &CpuSet,
    online: &CpuSet,
    allowed: &CpuSet,
    groups: [&[Group]; 4],
    numa_nodes: &[NumaNode],
    named: &Named,
    midrs: &HashMap<usize, u64>,
) -> Vec<Cpu> {
    let (kinds, described) = (&named.kinds, &named.described);
    let index_of = |groups: &[Group]| -> HashMap<usize, usize> {
        groups
            .iter()
            .flat_map(|g| g.cpus.iter().map(move |c| (c, g.id)))
            .collect()
    };
    let [core_of, package_of, die_of, cluster_of] = groups.map(index_of);
    let mut numa_of: HashMap<usize, u32> = HashMap::new();
    for n in numa_nodes.iter().rev() {
        for c in &n.cpus {
            numa_of.insert(c, n.id);
        }
    }
    let mut kind_of: HashMap<usize, usize> = HashMap::new();
    for k in kinds {
        for c in &k.cpus {
            kind_of.insert(c, k.rank);
        }
    }
    present
        .iter()
        .map(|id| {
            let kind = kind_of.get(&id).map(|&r| &kinds[r]);
            // Per-CPU measures only for CPUs the cpukind itself lists.
            let info = kind.filter(|k| described[k.rank].contains(id));
            Cpu {
                id,
                online: online.contains(id),
                allowed: allowed.contains(id),
                core: core_of.get(&id).copied(),
                package: package_of.get(&id).copied(),
                die: die_of.get(&id).copied(),
                cluster: cluster_of.get(&id).copied(),
                numa: numa_of.get(&id).copied(),
                kind: kind.map(|k| k.rank),
                capacity: info.and_then(|k| k.capacity_raw),
                max_mhz: info.and_then(|k| k.max_mhz),
                base_mhz: info.and_then(|k| k.base_mhz),
                cppc: None,
                core_type: info.and_then(|k| k.core_type),
                midr: midrs.get(&id).copied(),
            }
        })
        .collect()
}

/// A value quoted in an error, cut to a readable length.
fn shorten(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

fn info_child(node: Node, name: &str) -> Option<String> {
    node.children()
        .filter(|c| c.has_tag_name("info") && c.attribute("name") == Some(name))
        .find_map(|c| c.attribute("value").map(str::to_string))
}

/// `L2Cache` → (2, Unified); `L1iCache` → (1, Instruction).
fn cache_level_from_type(t: &str) -> Option<(u8, CacheType)> {
    let rest = t.strip_prefix('L')?;
    let (digits, kind) = rest.split_at(rest.find(|c: char| !c.is_ascii_digit())?);
    let level: u8 = digits.parse().ok().filter(|l| (1..=9).contains(l))?;
    match kind {
        "Cache" => Some((level, CacheType::Unified)),
        "iCache" => Some((level, CacheType::Instruction)),
        _ => None,
    }
}

/// Groups from (os id, online cpus): empty ones dropped, repeated ones
/// merged, ordered by first CPU and numbered densely. Objects of one type
/// that overlap without being equal make no sense as a partition of the
/// CPUs: an error naming the shared CPUs.
fn make_groups(
    what: &str,
    items: impl Iterator<Item = (Option<u32>, CpuSet)>,
) -> Result<Vec<Group>, HwlocErrorKind> {
    let mut v: Vec<Group> = Vec::new();
    let mut seen: std::collections::HashSet<CpuSet> = std::collections::HashSet::new();
    let mut covered = CpuSet::new();
    for (os_id, cpus) in items {
        if cpus.is_empty() || seen.contains(&cpus) {
            continue;
        }
        if covered.intersects(&cpus) {
            return Err(HwlocErrorKind::OverlappingObjects {
                what: what.to_string(),
                shared: covered.intersection(&cpus),
            });
        }
        covered.union_with(&cpus);
        seen.insert(cpus.clone());
        v.push(Group { id: 0, os_id, cpus });
    }
    Ok(renumber(v))
}

impl Groups {
    /// Cores, packages, dies and clusters, in `cpu_records`' order.
    fn levels(&self) -> [&[Group]; 4] {
        [&self.cores, &self.packages, &self.dies, &self.clusters]
    }
}

/// The CPUs of all `groups` together.
fn union_of(groups: &[Group]) -> CpuSet {
    groups
        .iter()
        .fold(CpuSet::new(), |acc, g| acc.union(&g.cpus))
}

fn renumber(mut v: Vec<Group>) -> Vec<Group> {
    v.sort_by_key(|g| (g.cpus.first(), g.cpus.len()));
    for (i, g) in v.iter_mut().enumerate() {
        g.id = i;
    }
    v
}

fn make_caches(objs: &[Obj], online: &CpuSet) -> Vec<Cache> {
    let mut caches: Vec<Cache> = Vec::new();
    for o in objs {
        let ObjKind::Cache(a) = &o.kind else { continue };
        let cpus = o.cpuset.intersection(online);
        if cpus.is_empty() {
            continue;
        }
        let cache = Cache {
            level: a.level,
            cache_type: a.cache_type,
            size_kib: a.size.map(|s| s / 1024),
            line_size: a.line,
            ways: a.ways,
            cpus,
        };
        if !caches.contains(&cache) {
            caches.push(cache);
        }
    }
    crate::discover::caches::sort(&mut caches);
    caches
}

/// NUMA nodes by OS id; objects repeating an id are merged. Which node
/// holds the CPUs of a shared cpuset is decided as the module doc says.
fn make_numa(objs: &[Obj], online: &CpuSet) -> Vec<NumaNode> {
    let numa: Vec<(&NumaAttrs, u32, CpuSet)> = objs
        .iter()
        .filter_map(|o| match &o.kind {
            ObjKind::Numa(a) => Some((a, o.os_index?, o.cpuset.intersection(online))),
            _ => None,
        })
        .collect();
    let dram_like = |a: &NumaAttrs| matches!(a.kind, None | Some(MemoryKind::Dram));
    let owner = |set: &CpuSet| {
        numa.iter()
            .find(|(a, _, s)| s == set && dram_like(a))
            .or_else(|| numa.iter().find(|(_, _, s)| s == set))
            .map(|(_, id, _)| *id)
    };
    let mut by_id: BTreeMap<u32, NumaNode> = BTreeMap::new();
    for (a, id, set) in &numa {
        let node = by_id.entry(*id).or_insert_with(|| {
            let mut n = NumaNode::new(*id, CpuSet::new(), None);
            n.memory.locality_source = LocalitySource::HwlocXml;
            n
        });
        if owner(set) == Some(*id) {
            node.cpus.union_with(set);
        }
        node.memory.locality.union_with(set);
        if let Some(m) = a.memory {
            node.memory_mib = Some(m / (1024 * 1024));
        }
        if let Some(k) = a.kind {
            node.memory.kind = Some(k);
            node.memory.kind_source = Some(MemoryKindSource::HwlocXml);
        }
        node.memory.tier = a.tier.or(node.memory.tier);
        if a.dax.is_some() {
            node.memory.dax = a.dax.clone();
        }
        node.memory.has_memory = node.memory_mib != Some(0);
    }
    by_id.into_values().collect()
}

/// The measures [`rank`] looks at, one per `cpukind`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RawKindInfo {
    first_cpu: Option<usize>,
    forced_efficiency: Option<i64>,
    /// 1 = IntelAtom, 2 = IntelCore (hwloc's scale).
    intel_core_type: Option<u8>,
    max_mhz: Option<u32>,
    base_mhz: Option<u32>,
    capacity: Option<u32>,
    /// The Arm part (implementer, part) of the kind's CPUs, when known.
    part: Option<(u32, u32)>,
}

/// How a set of kinds was ordered.
struct Ranking {
    /// Indexes into the raw kinds, least performant first.
    order: Vec<usize>,
    source: RankSource,
}

/// Orders kinds as hwloc does, stopping at the first measure every kind
/// has and no two kinds share:
/// 1. `forced_efficiency` (set by the user or the OS, e.g. Windows);
/// 2. Intel core type (Core above Atom), then base (else max) frequency —
///    not on ARM, where hwloc goes straight to frequency;
/// 3. Arm parts the core table knows (discovery's [`RankSource::MicroarchTable`]),
///    when not every kind has a kernel capacity: class factor times maximum
///    clock, so the XML and sysfs of one machine rank alike (hwloc 2.14
///    ranks Arm kinds by MIDR part too);
/// 4. maximum frequency;
/// 5. Linux `cpu_capacity` (`LinuxCapacity`, written by hwloc 3).
///
/// hwloc itself prefers base to max frequency in step 4; we rank by max
/// frequency, the measure the model has a name for ([`RankSource`]), and
/// report kinds that only base frequency separates as unranked.
/// Kinds nothing separates keep their order by first CPU, unranked.
fn rank(kinds: &[RawKindInfo], arch: Option<&str>) -> Ranking {
    let by_first = || {
        let mut o: Vec<usize> = (0..kinds.len()).collect();
        o.sort_by_key(|&i| kinds[i].first_cpu);
        o
    };
    if kinds.len() <= 1 {
        return Ranking {
            order: by_first(),
            source: RankSource::Uniform,
        };
    }
    // Ranks by `key` when every kind has one and all differ.
    let try_key = |key: &dyn Fn(&RawKindInfo) -> Option<i128>| -> Option<Vec<usize>> {
        let keys: Vec<i128> = kinds.iter().map(key).collect::<Option<Vec<_>>>()?;
        let mut order: Vec<usize> = (0..kinds.len()).collect();
        order.sort_by_key(|&i| keys[i]);
        order
            .windows(2)
            .all(|w| keys[w[0]] != keys[w[1]])
            .then_some(order)
    };
    if let Some(order) = try_key(&|k| k.forced_efficiency.map(i128::from)) {
        return Ranking {
            order,
            source: RankSource::HwlocEfficiency,
        };
    }
    let is_arm = arch.is_some_and(|a| a.starts_with("arm") || a.starts_with("aarch"));
    if !is_arm {
        let all_base = kinds.iter().all(|k| k.base_mhz.is_some());
        if let Some(order) = try_key(&|k| {
            let freq = if all_base { k.base_mhz } else { k.max_mhz };
            Some((i128::from(k.intel_core_type?) << 20) + i128::from(freq.unwrap_or(0)))
        }) {
            return Ranking {
                order,
                source: RankSource::CoreType,
            };
        }
    }
    // Arm parts the core table knows, without a kernel capacity on every
    // kind: the table's class factor times the maximum clock (the factor
    // alone without a clock on every kind), as discovery ranks them
    // (`kinds::microarch_class`): two parts at one clock rank by class.
    if kinds.iter().any(|k| k.capacity.is_none()) {
        let clocks = kinds.iter().all(|k| k.max_mhz.is_some());
        if let Some(order) = try_key(&|k| {
            let (implementer, part) = k.part?;
            let (_, factor, pos) = kinds::microarch_class(implementer, part)?;
            let mhz = if clocks { k.max_mhz? } else { 1000 };
            // Score to a thousandth, then the table position.
            Some(((factor * f64::from(mhz) * 1000.0).round() as i128) * 1000 + pos as i128)
        }) {
            return Ranking {
                order,
                source: RankSource::MicroarchTable,
            };
        }
    }
    if let Some(order) = try_key(&|k| k.max_mhz.map(i128::from)) {
        return Ranking {
            order,
            source: RankSource::MaxFrequency,
        };
    }
    if let Some(order) = try_key(&|k| k.capacity.map(i128::from)) {
        return Ranking {
            order,
            source: RankSource::Capacity,
        };
    }
    Ranking {
        order: by_first(),
        source: RankSource::Unranked,
    }
}

/// What a kind is, beyond its measures: the evidence discovery names kinds
/// by (see [`name_kinds`]).
#[derive(Clone, Debug, PartialEq)]
enum Identity {
    /// An Intel core type (`CoreType` info of the cpukind).
    CoreType(CoreType),
    /// An ARM part (`CPUImplementer`/`CPUPart`), by discovery's name.
    Midr(String),
    /// Nothing but measures.
    Unknown,
}

/// The kinds with the CPUs each `cpukind` itself lists (the per-CPU
/// measures are theirs only) and each kind's identity, all in rank order.
struct Named {
    kinds: Vec<Kind>,
    described: Vec<CpuSet>,
    identities: Vec<Identity>,
}

/// The common ARM part of `cpus`, when every one of them has one and it is
/// the same.
fn common_part(cpus: &CpuSet, midrs: &HashMap<usize, u64>) -> Option<(u32, u32)> {
    let mut parts = cpus.iter().map(|c| midrs.get(&c).map(|m| midr_fields(*m)));
    let first = parts.next()??;
    parts.all(|p| p == Some(first)).then_some(first)
}

/// Kinds without any `cpukind`: one per ARM part when the objects name
/// parts (CPUs without one join the only part, else form a kind of their
/// own, as discovery does), else one uniform kind. Nothing ranks them.
fn kinds_without_cpukinds(online: &CpuSet, midrs: &HashMap<usize, u64>) -> Named {
    let blank = |cpus: CpuSet, source: KindSource| Kind {
        rank: 0,
        name: String::new(),
        mark: String::new(),
        cpus,
        source,
        rank_source: RankSource::Uniform,
        capacity: None,
        capacity_raw: None,
        max_mhz: None,
        base_mhz: None,
        core_type: None,
    };
    let mut by_part: BTreeMap<(u32, u32), CpuSet> = BTreeMap::new();
    let mut unknown = CpuSet::new();
    for c in online.iter() {
        match midrs.get(&c) {
            Some(m) => {
                by_part.entry(midr_fields(*m)).or_default().insert(c);
            }
            None => {
                unknown.insert(c);
            }
        }
    }
    // Each part's place in the Arm core table (its class factor, then its
    // position), when the table knows it.
    let mut table: Vec<Option<(f64, usize)>> = Vec::new();
    let mut found: Vec<(CpuSet, Identity, KindSource)> = by_part
        .into_iter()
        .map(|((implementer, part), cpus)| {
            let name = midr_name(implementer, part);
            table.push(kinds::microarch_class(implementer, part).map(|(_, f, pos)| (f, pos)));
            (cpus, Identity::Midr(name), KindSource::Midr)
        })
        .collect();
    // Several parts the Arm core table all knows, and no CPU left without
    // a part: ranked by the table, as discovery ranks them without a
    // kernel capacity (no clock here: the class factor alone).
    let by_table = found.len() >= 2 && unknown.is_empty() && table.iter().all(Option::is_some);
    match found.len() {
        0 => found.push((unknown, Identity::Unknown, KindSource::Uniform)),
        1 => found[0].0.union_with(&unknown),
        // Discovery's name for the CPUs no part was found for.
        _ if !unknown.is_empty() => found.push((
            unknown,
            Identity::Midr("unidentified".to_string()),
            KindSource::Uniform,
        )),
        _ => {}
    }
    if by_table {
        let keys: Vec<(f64, usize)> = table.into_iter().map(|t| t.unwrap_or((0.0, 0))).collect();
        let mut order: Vec<usize> = (0..found.len()).collect();
        order.sort_by(|&a, &b| {
            keys[a]
                .0
                .total_cmp(&keys[b].0)
                .then(keys[a].1.cmp(&keys[b].1))
        });
        let mut slots: Vec<Option<(CpuSet, Identity, KindSource)>> =
            found.into_iter().map(Some).collect();
        found = order.iter().filter_map(|&i| slots[i].take()).collect();
    } else {
        found.sort_by_key(|(cpus, _, _)| cpus.first());
    }
    let n = found.len();
    let mut named = Named {
        kinds: Vec::new(),
        described: Vec::new(),
        identities: Vec::new(),
    };
    for (rank, (cpus, identity, source)) in found.into_iter().enumerate() {
        let mut k = blank(cpus, source);
        k.rank = rank;
        k.rank_source = if n == 1 {
            RankSource::Uniform
        } else if by_table {
            RankSource::MicroarchTable
        } else {
            RankSource::Unranked
        };
        named.kinds.push(k);
        named.described.push(CpuSet::new());
        named.identities.push(identity);
    }
    named
}

/// The model's kinds from the XML's `cpukind`s (or, without any, from the
/// objects' ARM parts or one uniform kind), ranked, not yet named.
fn build_kinds(
    raw: Vec<RawKind>,
    online: &CpuSet,
    midrs: &HashMap<usize, u64>,
    arch: Option<&str>,
    warnings: &mut Vec<String>,
    origin: &str,
) -> Result<Named, HwlocErrorKind> {
    let mut raw: Vec<RawKind> = raw.into_iter().filter(|k| !k.cpus.is_empty()).collect();
    if raw.is_empty() {
        if online.is_empty() {
            return Ok(Named {
                kinds: Vec::new(),
                described: Vec::new(),
                identities: Vec::new(),
            });
        }
        return Ok(kinds_without_cpukinds(online, midrs));
    }
    let mut described = cover_online(&mut raw, online, warnings, origin)?;
    let infos: Vec<RawKindInfo> = raw
        .iter()
        .map(|k| RawKindInfo {
            first_cpu: k.cpus.first(),
            forced_efficiency: k.efficiency,
            intel_core_type: k.intel_core_type,
            max_mhz: k.max_mhz,
            base_mhz: k.base_mhz,
            capacity: k.capacity,
            part: k
                .midr
                .map(midr_fields)
                .or_else(|| common_part(&k.cpus, midrs)),
        })
        .collect();
    let Ranking { order, source } = rank(&infos, arch);
    let (kinds, identities) = ranked_kinds(&raw, &order, source, &described, midrs);
    let described = order
        .iter()
        .map(|&i| std::mem::take(&mut described[i]))
        .collect();
    Ok(Named {
        kinds,
        described,
        identities,
    })
}

/// Refuses `cpukind`s that share CPUs and deals with online CPUs in none:
/// a single kind takes them (hwloc registers a kind from what it measured,
/// cpufreq present on some CPUs only, NOTES #8), else they are warned
/// about. Returns the CPUs each kind itself lists.
fn cover_online(
    raw: &mut [RawKind],
    online: &CpuSet,
    warnings: &mut Vec<String>,
    origin: &str,
) -> Result<Vec<CpuSet>, HwlocErrorKind> {
    let mut covered = CpuSet::new();
    for k in raw.iter() {
        if covered.intersects(&k.cpus) {
            return Err(HwlocErrorKind::OverlappingKinds {
                shared: covered.intersection(&k.cpus),
            });
        }
        covered.union_with(&k.cpus);
    }
    let missing = online.difference(&covered);
    let described: Vec<CpuSet> = raw.iter().map(|k| k.cpus.clone()).collect();
    if raw.len() == 1 && !missing.is_empty() {
        // One kind means no evidence of a second.
        warnings.push(format!(
            "{origin}: the only cpukind lists CPUs {}; CPUs {missing} have no kind information and are taken to be of the same kind",
            raw[0].cpus
        ));
        raw[0].cpus = online.clone();
    } else if !missing.is_empty() {
        warnings.push(format!(
            "{origin}: CPUs {missing} are in no cpukind; their kind is unknown"
        ));
    }
    Ok(described)
}

/// The kinds in rank `order` (indexes into `raw`), each with its identity:
/// core type from hwloc's Intel core type (with two Atom kinds, the lower
/// is the low-power island), else the ARM part of the CPUs it describes.
fn ranked_kinds(
    raw: &[RawKind],
    order: &[usize],
    source: RankSource,
    described: &[CpuSet],
    midrs: &HashMap<usize, u64>,
) -> (Vec<Kind>, Vec<Identity>) {
    let max_capacity = raw.iter().filter_map(|k| k.capacity).max();
    let atoms = raw.iter().filter(|k| k.intel_core_type == Some(1)).count();
    let mut seen_atom = false;
    let mut identities = Vec::with_capacity(raw.len());
    let kinds = order
        .iter()
        .enumerate()
        .map(|(rank, &i)| {
            let k = &raw[i];
            let core_type = match k.intel_core_type {
                Some(2) => Some(CoreType::Core),
                // With two Atom kinds (Meteor Lake), the lower one is the
                // low-power island.
                Some(1) if atoms > 1 && !seen_atom && source != RankSource::Unranked => {
                    seen_atom = true;
                    Some(CoreType::LowPower)
                }
                Some(1) => Some(CoreType::Atom),
                _ => None,
            };
            let part = k
                .midr
                .map(midr_fields)
                .or_else(|| common_part(&described[i], midrs));
            identities.push(match (core_type, part) {
                (Some(t), _) => Identity::CoreType(t),
                (None, Some((implementer, part))) => Identity::Midr(midr_name(implementer, part)),
                (None, None) => Identity::Unknown,
            });
            Kind {
                rank,
                name: String::new(),
                mark: String::new(),
                cpus: k.cpus.clone(),
                source: KindSource::HwlocXml,
                rank_source: source,
                capacity: match (k.capacity, max_capacity) {
                    (Some(c), Some(m)) => Some(c as f64 / m as f64),
                    _ => None,
                },
                capacity_raw: k.capacity,
                max_mhz: k.max_mhz,
                base_mhz: k.base_mhz,
                core_type,
            }
        })
        .collect();
    (kinds, identities)
}

/// Names and marks kinds by discovery's rule, with discovery's own
/// functions (`discover::kinds`), so that a machine read from its XML
/// export and from its sysfs gets the same names: "P-core"/"E-core" (and
/// "LP E-core") from core types, the ARM part's name ("Cortex-A76"), and
/// for kinds known by their measures only, big/little — or, on x86 with
/// two ranked kinds, P-core/E-core.
///
/// Discovery's functions decide by a kind's source, so each kind is shown
/// to them with the source discovery would have found the same evidence
/// in (core type: the hybrid PMU lists; ARM part: `midr_el1`; otherwise
/// capacity or frequency, by what ranked it), then given its own back.
/// One difference is ours: kinds that nothing ranks (equal frequencies)
/// are numbered ("kind 1"), not called big or little; discovery never has
/// unranked kinds without an identity.
fn name_kinds(topo: &mut Topology, identities: &[Identity]) {
    let n = topo.kinds.len();
    let own: Vec<KindSource> = topo.kinds.iter().map(|k| k.source).collect();
    for (k, identity) in topo.kinds.iter_mut().zip(identities) {
        let measured = if k.rank_source == RankSource::Capacity {
            KindSource::Capacity
        } else {
            KindSource::Frequency
        };
        (k.name, k.source) = match identity {
            Identity::CoreType(t) => (core_type_name(*t).to_string(), KindSource::HybridPmu),
            Identity::Midr(name) => (name.clone(), KindSource::Midr),
            Identity::Unknown if n > 1 && k.rank_source == RankSource::Unranked => {
                (format!("kind {}", k.rank), measured)
            }
            Identity::Unknown => (String::new(), measured),
        };
    }
    kinds::name(&mut topo.kinds);
    kinds::name_x86_hybrid(topo);
    for (k, source) in topo.kinds.iter_mut().zip(own) {
        k.source = source;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank_kinds(kinds: &[RawKindInfo], arch: Option<&str>) -> (Vec<usize>, RankSource) {
        let r = rank(kinds, arch);
        (r.order, r.source)
    }

    fn info(first: usize) -> RawKindInfo {
        RawKindInfo {
            first_cpu: Some(first),
            ..Default::default()
        }
    }

    #[test]
    fn cache_type_names() {
        assert_eq!(
            cache_level_from_type("L3Cache"),
            Some((3, CacheType::Unified))
        );
        assert_eq!(
            cache_level_from_type("L1iCache"),
            Some((1, CacheType::Instruction))
        );
        assert_eq!(cache_level_from_type("MemCache"), None);
        assert_eq!(cache_level_from_type("L"), None);
        assert_eq!(cache_level_from_type("LCache"), None);
        assert_eq!(cache_level_from_type("L0Cache"), None);
        assert_eq!(cache_level_from_type("L999Cache"), None);
    }

    #[test]
    fn forced_efficiency_wins() {
        let a = RawKindInfo {
            forced_efficiency: Some(1),
            max_mhz: Some(1000),
            ..info(0)
        };
        let b = RawKindInfo {
            forced_efficiency: Some(0),
            max_mhz: Some(2000),
            ..info(8)
        };
        assert_eq!(
            rank_kinds(&[a, b], Some("x86_64")),
            (vec![1, 0], RankSource::HwlocEfficiency)
        );
    }

    #[test]
    fn core_type_then_frequency() {
        let p = RawKindInfo {
            intel_core_type: Some(2),
            base_mhz: Some(1900),
            max_mhz: Some(5000),
            ..info(0)
        };
        let e = RawKindInfo {
            intel_core_type: Some(1),
            base_mhz: Some(1400),
            max_mhz: Some(3900),
            ..info(12)
        };
        assert_eq!(
            rank_kinds(&[p.clone(), e.clone()], None),
            (vec![1, 0], RankSource::CoreType)
        );
        // On ARM hwloc ignores core types and ranks by frequency.
        assert_eq!(
            rank_kinds(&[p, e], Some("aarch64")),
            (vec![1, 0], RankSource::MaxFrequency)
        );
    }

    #[test]
    fn ties_are_unranked() {
        let a = RawKindInfo {
            max_mhz: Some(3000),
            ..info(4)
        };
        let b = RawKindInfo {
            max_mhz: Some(3000),
            ..info(0)
        };
        assert_eq!(
            rank_kinds(&[a, b], None),
            (vec![1, 0], RankSource::Unranked)
        );
        let a = RawKindInfo {
            forced_efficiency: Some(0),
            ..info(0)
        };
        let b = RawKindInfo {
            forced_efficiency: Some(0),
            capacity: Some(512),
            ..info(4)
        };
        assert_eq!(rank_kinds(&[a, b], None).1, RankSource::Unranked);
    }

    #[test]
    fn capacity_ranks_last() {
        let a = RawKindInfo {
            capacity: Some(1024),
            ..info(0)
        };
        let b = RawKindInfo {
            capacity: Some(446),
            ..info(4)
        };
        assert_eq!(
            rank_kinds(&[a, b], Some("aarch64")),
            (vec![1, 0], RankSource::Capacity)
        );
    }

    #[test]
    fn single_kind_is_uniform() {
        assert_eq!(rank_kinds(&[info(0)], None), (vec![0], RankSource::Uniform));
    }
}
