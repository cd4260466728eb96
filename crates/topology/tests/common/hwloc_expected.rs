//! Reads hwloc's expected outputs — `lstopo -v` console text and hwloc XML —
//! into CPU sets per object type, generically: no per-machine values are
//! typed by hand anywhere in the tests.
//!
//! Console text carries no `cpuset=` attributes, so an object's CPU set is
//! the union of the `PU (P#n)` lines below it (the tree is given by
//! indentation); a NUMA node's set is that of its nearest non-memory
//! ancestor (it hangs off its locality, possibly through a `MemCache`).
//! Kinds come from the `CPU kind #i efficiency e cpuset 0x...` lines.

#![allow(dead_code)]

use pinsight_cpuset::CpuSet;
use std::path::Path;

/// What hwloc shows for one machine.
#[derive(Debug, Default)]
pub struct Expected {
    /// The PUs hwloc shows (online and allowed).
    pub pus: CpuSet,
    pub cores: Vec<CpuSet>,
    pub packages: Vec<CpuSet>,
    pub l2: Vec<CpuSet>,
    pub l3: Vec<CpuSet>,
    /// (OS index, CPU set) of every NUMA node shown.
    pub numa: Vec<(u32, CpuSet)>,
    /// Kinds in efficiency order (least first).
    pub kinds: Vec<CpuSet>,
    /// Every cache as (level, 'd' | 'i' | 'u', CPU set) — XML only.
    pub caches: Vec<(u8, char, CpuSet)>,
    /// Object types that appear at all (to know what a filter removed).
    pub types_seen: Vec<String>,
}

impl Expected {
    pub fn saw(&self, ty: &str) -> bool {
        self.types_seen.iter().any(|t| t == ty)
    }
}

struct Obj {
    ty: String,
    os: Option<u32>,
    parent: Option<usize>,
    cpus: CpuSet,
}

/// Parses `lstopo -v` text.
pub fn parse_console(text: &str) -> Expected {
    let mut objs: Vec<Obj> = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (indent, obj index)
    let mut kinds: Vec<(u64, String)> = Vec::new();
    let mut in_tree = true;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("depth ") || trimmed.starts_with("Special depth") {
            in_tree = false;
        }
        if let Some(rest) = trimmed.strip_prefix("CPU kind #") {
            // "0 efficiency 0 cpuset 0x000ff000"
            let w: Vec<&str> = rest.split_whitespace().collect();
            let eff: u64 = w[2].parse().expect("efficiency");
            kinds.push((eff, w[4].to_string()));
            continue;
        }
        if !in_tree || trimmed.is_empty() {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let ty = trimmed.split([' ', '(']).next().unwrap_or("").to_string();
        let os = trimmed.find("(P#").and_then(|i| {
            let d: String = trimmed[i + 3..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            d.parse().ok()
        });
        while stack.last().is_some_and(|&(ind, _)| ind >= indent) {
            stack.pop();
        }
        let parent = stack.last().map(|&(_, i)| i);
        let idx = objs.len();
        objs.push(Obj {
            ty: ty.clone(),
            os,
            parent,
            cpus: CpuSet::new(),
        });
        stack.push((indent, idx));
        if ty == "PU" {
            let cpu = os.expect("PU without P#") as usize;
            let mut cur = Some(idx);
            while let Some(i) = cur {
                objs[i].cpus.insert(cpu);
                cur = objs[i].parent;
            }
        }
    }
    let mut e = Expected::default();
    let limit = objs
        .iter()
        .filter(|o| o.ty == "PU")
        .filter_map(|o| o.os)
        .max()
        .map_or(64, |m| m as usize + 1);
    for o in &objs {
        if !e.types_seen.contains(&o.ty) {
            e.types_seen.push(o.ty.clone());
        }
        match o.ty.as_str() {
            "PU" => {
                e.pus.insert(o.os.unwrap() as usize);
            }
            "Core" => e.cores.push(o.cpus.clone()),
            "Package" => e.packages.push(o.cpus.clone()),
            "L2Cache" => e.l2.push(o.cpus.clone()),
            "L3Cache" => e.l3.push(o.cpus.clone()),
            "NUMANode" => {
                let mut cur = o.parent;
                while let Some(i) = cur {
                    if objs[i].ty != "MemCache" {
                        break;
                    }
                    cur = objs[i].parent;
                }
                let cpus = cur.map(|i| objs[i].cpus.clone()).unwrap_or_default();
                e.numa.push((o.os.expect("NUMANode without P#"), cpus));
            }
            _ => {}
        }
    }
    kinds.sort_by_key(|(eff, _)| *eff);
    e.kinds = kinds
        .into_iter()
        .map(|(_, s)| CpuSet::parse_hwloc(&s, limit).expect("kind cpuset"))
        .collect();
    e
}

/// Parses hwloc XML (v2 `L2Cache` types and v1 `Cache` + `depth`). Uses the
/// `cpuset` attribute (online and allowed CPUs, what hwloc shows).
pub fn parse_xml(text: &str) -> Expected {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts).expect("expected XML parses");
    let mut e = Expected::default();
    let limit = 1 << 16;
    for n in doc.descendants().filter(|n| n.has_tag_name("object")) {
        let ty = n.attribute("type").unwrap_or("");
        let cpus = n
            .attribute("cpuset")
            .map(|s| CpuSet::parse_hwloc(s, limit).expect("cpuset"))
            .unwrap_or_default();
        let level = match ty {
            "L2Cache" => Some(2),
            "L3Cache" => Some(3),
            "Cache" => n.attribute("depth").and_then(|d| d.parse::<u32>().ok()),
            _ => None,
        };
        if !e.types_seen.iter().any(|t| t == ty) {
            e.types_seen.push(ty.to_string());
        }
        if let Some(lv) = ty.strip_prefix('L').and_then(|r| r.strip_suffix("Cache")) {
            let (digits, icache) = match lv.strip_suffix('i') {
                Some(d) => (d, true),
                None => (lv, false),
            };
            if let Ok(level) = digits.parse::<u8>() {
                let kind = match (icache, n.attribute("cache_type")) {
                    (true, _) | (_, Some("2")) => 'i',
                    (_, Some("1")) => 'd',
                    _ => 'u',
                };
                e.caches.push((level, kind, cpus.clone()));
            }
        }
        match (ty, level) {
            ("PU", _) => {
                e.pus.insert(
                    n.attribute("os_index")
                        .expect("PU os_index")
                        .parse()
                        .unwrap(),
                );
            }
            ("Core", _) => e.cores.push(cpus),
            ("Package", _) => e.packages.push(cpus),
            ("NUMANode", _) => e
                .numa
                .push((n.attribute("os_index").unwrap().parse().unwrap(), cpus)),
            (_, Some(2)) => e.l2.push(cpus),
            (_, Some(3)) => e.l3.push(cpus),
            _ => {}
        }
    }
    let mut kinds: Vec<(i64, CpuSet)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("cpukind"))
        .map(|n| {
            let eff = n
                .attribute("forced_efficiency")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            (
                eff,
                CpuSet::parse_hwloc(n.attribute("cpuset").unwrap(), limit).unwrap(),
            )
        })
        .collect();
    kinds.sort_by_key(|(e, _)| *e);
    // cpukind sets in XML span the complete (not only allowed) CPUs.
    e.kinds = kinds
        .into_iter()
        .map(|(_, s)| s.intersection(&e.pus))
        .collect();
    e
}

/// The expected output named by a `.test` file, and its lstopo options.
pub fn load(dir: &Path, name: &str) -> (Expected, String) {
    let test = std::fs::read_to_string(dir.join(format!("{name}.test"))).expect(".test file");
    let target = test
        .lines()
        .find_map(|l| l.strip_prefix("target:"))
        .map(|t| t.trim().to_string())
        .expect("target: line");
    let options = test
        .lines()
        .find_map(|l| l.strip_prefix("options:"))
        .unwrap_or("")
        .trim()
        .to_string();
    let text = std::fs::read_to_string(dir.join(&target)).expect("expected output");
    let exp = if target.ends_with(".xml") {
        parse_xml(&text)
    } else {
        parse_console(&text)
    };
    (exp, options)
}
