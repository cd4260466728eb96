//! Declared core kinds: the user says which CPUs are which kind, and in
//! which order, instead of discovery finding out.
//!
//! Why: inside a KVM guest every vCPU looks identical even when the host
//! pinned some vCPUs to P-cores and others to E-cores ("To pin or not to
//! pin", §4.3 and §5.3); nothing the guest can read tells them apart. A
//! declaration (`0-3:P,4-7:E`) gives every command the kinds the host
//! arranged, and it makes kind policies testable on uniform machines.
//!
//! # Syntax
//!
//! Comma-separated groups `CPULIST:NAME`. `CPULIST` is the kernel's cpulist
//! syntax (`0-3`, `0-3,8-11`, `0-15:2`, `0-15:2/4`); its own commas are
//! allowed, the group ends at the first element carrying `:NAME`. A `NAME`
//! starts with a letter (so it is never mistaken for a stride) and holds
//! letters, digits, spaces and `-_.+`, at most 24 characters.
//!
//! A name may end with `@SPEED`, the kind's relative speed: the fraction of
//! its own CPUs' full speed it is to run at (`0:P,1:E@0.5`), a decimal in
//! (0, 1] with at most three decimals, 1 when absent. Only `pinsight
//! emulate` acts on it (it slows those CPUs). On a machine discovered as
//! one kind, the speeds (over the fastest kind's) are also the kinds'
//! capacities, which `balance`, `load`, `slice` and `topo` read: what
//! `emulate` makes true of identical CPUs. On a machine with kinds of its
//! own they change nothing else. Speeds may not rise along the order: a
//! slower kind never runs faster than a faster one.
//!
//! # Order (the one rule)
//!
//! - `P`, `E` and `L` (also spelt `P-core`, `E-core`, `LP`, `LP E-core`,
//!   any case) are known kinds, ordered P > E > L by performance. When every
//!   group is a known kind, that order holds whatever order they are listed in.
//! - Otherwise groups are listed from the most to the least performant
//!   (`0-3:big,4-7:little`: big is faster). Known kinds among them must then
//!   be listed in their own order (`0-1:P,2-3:mid,4-7:E` is fine, `0-3:E,4-7:P,8:X`
//!   is an error).
//!
//! Known kinds are named and marked as discovery names them (`P-core`/`P`,
//! `E-core`/`E`, `LP E-core`/`L`); other names are kept verbatim, marked by
//! their first letter (upper case) unless another kind has that mark, else
//! by their rank.
//!
//! # Applying
//!
//! [`apply`] replaces a topology's kinds: every named CPU must exist and be
//! online, and every online CPU this process may use must be declared. The
//! kinds' source and rank source become [`KindSource::Declared`] and
//! [`RankSource::Declared`]; kind capacities are left unknown (a
//! declaration says "faster", not "how much") unless speeds were declared
//! on a one-kind machine (above). Per-CPU `cpu_capacity` and
//! a kind's max frequency are kept only where they agree with the declared
//! order (every CPU of a faster kind above every CPU of a slower one):
//! plan's `balance` reads them as capacity, and a VM's equal values would
//! silently undo the declaration.

use crate::{CoreType, Kind, KindSource, RankSource, Topology};
use pinsight_cpuset::{CpuSet, ParseError};
use std::fmt;
use std::str::FromStr;

/// Longest kind name accepted (keeps `topo`'s kind lines within 80 columns).
pub const MAX_NAME_LEN: usize = 24;

/// What a declaration gets wrong, against its own syntax or the machine.
/// Messages name the offending group and what is allowed, never a flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclaredError {
    /// An empty element between commas.
    #[error("an empty group (stray comma?); expected CPULIST:NAME groups separated by commas, e.g. 0-3:P,4-7:E")]
    StrayComma,
    /// Nothing declared.
    #[error(
        "no groups declared (expected CPULIST:NAME groups separated by commas, e.g. 0-3:P,4-7:E)"
    )]
    Empty,
    /// CPU-list elements at the end with no `:NAME` after them.
    #[error("'{cpus}' has no :NAME (expected CPULIST:NAME groups separated by commas, e.g. 0-3:P,4-7:E)")]
    MissingName {
        /// The CPU-list text left without a name.
        cpus: String,
    },
    /// A group with a name but no CPUs before it.
    #[error("group '{group}' names no CPUs (expected CPULIST:NAME, e.g. 0-3:P)")]
    NoCpus {
        /// The group as written.
        group: String,
    },
    /// The CPU list of a group does not parse.
    #[error("group '{group}': {source}")]
    BadCpuList {
        /// The group as written.
        group: String,
        /// What the cpulist parser rejected.
        #[source]
        source: ParseError,
    },
    /// A name outside the allowed alphabet or length.
    #[error("kind name '{name}' {reason} (a name starts with a letter and holds letters, digits, spaces and -_.+, at most 24 characters)")]
    BadName {
        /// The name as written.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A relative speed that is not a decimal in (0, 1].
    #[error("group '{group}': speed '{speed}' is not a decimal in (0, 1] with at most three decimals (e.g. {name}@0.5)")]
    BadSpeed {
        /// The group as written.
        group: String,
        /// The speed as written.
        speed: String,
        /// The kind's name as written.
        name: String,
    },
    /// A slower kind declared to run faster than a faster one.
    #[error("'{later}' is a slower kind than '{earlier}' but runs faster; speeds may not rise from the fastest kind to the slowest")]
    SpeedOrder {
        /// The faster kind's group.
        earlier: String,
        /// The slower kind's group.
        later: String,
    },
    /// Two groups name the same kind.
    #[error("kind '{name}' is declared twice (groups '{first}' and '{second}'); give each kind one group")]
    DuplicateName {
        /// The kind's name.
        name: String,
        /// The first group naming it.
        first: String,
        /// The second.
        second: String,
    },
    /// A CPU in two groups.
    #[error("CPU {cpu} is in two groups ('{first}' and '{second}'); each CPU has one kind")]
    Overlap {
        /// The CPU.
        cpu: usize,
        /// The first group holding it.
        first: String,
        /// The second.
        second: String,
    },
    /// Known kinds listed against their order among unknown ones.
    #[error("'{later}' is listed after '{earlier}' but is the faster kind; with names other than P, E, L, groups are listed from most to least performant and P > E > L must hold")]
    Order {
        /// The group listed first.
        earlier: String,
        /// The faster group listed after it.
        later: String,
    },
    /// CPUs the machine does not have.
    #[error("group '{group}': CPU {cpus} not present on this machine (present: {present})")]
    UnknownCpus {
        /// The group as written.
        group: String,
        /// The CPUs not present.
        cpus: CpuSet,
        /// The machine's present CPUs.
        present: CpuSet,
    },
    /// CPUs that are offline.
    #[error("group '{group}': CPU {cpus} offline (online: {online})")]
    OfflineCpus {
        /// The group as written.
        group: String,
        /// The offline CPUs named.
        cpus: CpuSet,
        /// The machine's online CPUs.
        online: CpuSet,
    },
    /// Usable CPUs no group declares.
    #[error("CPU {cpus} not declared; every usable CPU ({usable}) needs a kind")]
    Undeclared {
        /// The usable CPUs left out.
        cpus: CpuSet,
        /// All usable CPUs.
        usable: CpuSet,
    },
}

/// The kinds pinsight knows by name, fastest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Known {
    P,
    E,
    L,
}

impl Known {
    /// `P`, `p-core`, `LP E-core`, ... (case, spaces and hyphens ignored).
    fn from_name(name: &str) -> Option<Known> {
        let squashed: String = name
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '_'))
            .flat_map(char::to_lowercase)
            .collect();
        match squashed.as_str() {
            "p" | "pcore" => Some(Known::P),
            "e" | "ecore" => Some(Known::E),
            "l" | "lp" | "lpe" | "lpecore" => Some(Known::L),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Known::P => "P-core",
            Known::E => "E-core",
            Known::L => "LP E-core",
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Known::P => "P",
            Known::E => "E",
            Known::L => "L",
        }
    }
}

/// One declared kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredKind {
    /// The group as written (`0-3:P`), for messages.
    pub written: String,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Its name (`P-core` for `P`, other names verbatim).
    pub name: String,
    /// Its one-letter (or rank) mark.
    pub mark: String,
    /// Its relative speed in thousandths (`@0.5`: 500); 1000 when not given.
    pub speed_milli: u32,
}

impl DeclaredKind {
    /// Its relative speed, in (0, 1].
    pub fn speed(&self) -> f64 {
        f64::from(self.speed_milli) / 1000.0
    }
}

/// `0.5` as 500 thousandths; `None` unless a decimal in (0, 1] with at most
/// three decimals.
fn parse_speed(text: &str) -> Option<u32> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if (int.is_empty() && frac.is_empty())
        || frac.len() > 3
        || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
        || int.len() > 4
    {
        return None;
    }
    let int: u32 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut milli = int.checked_mul(1000)?;
    let mut scale = 100;
    for c in frac.chars() {
        milli += c.to_digit(10)? * scale;
        scale /= 10;
    }
    (1..=1000).contains(&milli).then_some(milli)
}

/// One group while parsing.
struct Group {
    written: String,
    cpus: CpuSet,
    name: String,
    known: Option<Known>,
    speed_milli: u32,
}

/// A parsed declaration: kinds from the most to the least performant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindSpec {
    kinds: Vec<DeclaredKind>,
}

impl KindSpec {
    /// Parses `0-3:P,4-7:E` (see the module documentation for the syntax
    /// and the order rule).
    pub fn parse(text: &str) -> Result<KindSpec, DeclaredError> {
        // Hand-written: the grammar is a cpulist (pinsight-cpuset parses
        // it) with a name after each group; no crate parses that.
        if text.trim().is_empty() {
            return Err(DeclaredError::Empty);
        }
        let mut groups = parse_groups(text)?;
        check_distinct(&groups)?;
        order_groups(&mut groups)?;
        // Speeds never rise from the fastest kind to the slowest.
        for pair in groups.windows(2) {
            if pair[1].speed_milli > pair[0].speed_milli {
                return Err(DeclaredError::SpeedOrder {
                    earlier: pair[0].written.clone(),
                    later: pair[1].written.clone(),
                });
            }
        }
        let marks = marks(&groups);
        let kinds = groups
            .into_iter()
            .zip(marks)
            .map(|(g, mark)| DeclaredKind {
                written: g.written,
                cpus: g.cpus,
                name: g.known.map_or(g.name, |k| k.name().to_string()),
                mark,
                speed_milli: g.speed_milli,
            })
            .collect();
        Ok(KindSpec { kinds })
    }

    /// The declared kinds, most performant first.
    pub fn kinds(&self) -> &[DeclaredKind] {
        &self.kinds
    }

    /// Whether any kind runs below full speed (`@SPEED` under 1).
    pub fn slows(&self) -> bool {
        self.kinds.iter().any(|k| k.speed_milli < 1000)
    }

    /// All declared CPUs.
    pub fn cpus(&self) -> CpuSet {
        let mut all = CpuSet::new();
        for k in &self.kinds {
            all.union_with(&k.cpus);
        }
        all
    }
}

impl FromStr for KindSpec {
    type Err = DeclaredError;
    fn from_str(s: &str) -> Result<KindSpec, DeclaredError> {
        KindSpec::parse(s)
    }
}

/// `P-core (0-3) > E-core (4-7)`: the declaration in its order.
impl fmt::Display for KindSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, k) in self.kinds.iter().enumerate() {
            if i > 0 {
                f.write_str(" > ")?;
            }
            write!(f, "{} ({})", k.name, k.cpus)?;
            if k.speed_milli < 1000 {
                write!(f, " @{}", k.speed())?;
            }
        }
        Ok(())
    }
}

/// The groups of a declaration in the order written: comma-separated
/// elements, each group's CPU list running until an element with a name.
fn parse_groups(text: &str) -> Result<Vec<Group>, DeclaredError> {
    let mut groups: Vec<Group> = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    for element in text.split(',') {
        let element = element.trim();
        if element.is_empty() {
            return Err(DeclaredError::StrayComma);
        }
        match element.rsplit_once(':') {
            Some((list, name)) if name.trim_start().starts_with(|c: char| c.is_alphabetic()) => {
                pending.push(list.trim());
                let cpus_text = pending.join(",");
                pending.clear();
                groups.push(parse_group(&cpus_text, name)?);
            }
            _ => pending.push(element),
        }
    }
    if !pending.is_empty() {
        return Err(DeclaredError::MissingName {
            cpus: pending.join(","),
        });
    }
    Ok(groups)
}

/// One group: its CPU list and what follows the colon (`NAME[@SPEED]`).
fn parse_group(cpus_text: &str, name: &str) -> Result<Group, DeclaredError> {
    let (name, speed) = match name.split_once('@') {
        Some((n, s)) => (n.trim(), Some(s.trim())),
        None => (name.trim(), None),
    };
    let written = match speed {
        Some(s) => format!("{cpus_text}:{name}@{s}"),
        None => format!("{cpus_text}:{name}"),
    };
    check_name(name)?;
    let speed_milli = match speed {
        None => 1000,
        Some(s) => parse_speed(s).ok_or_else(|| DeclaredError::BadSpeed {
            group: written.clone(),
            speed: s.to_string(),
            name: name.to_string(),
        })?,
    };
    if cpus_text.trim().is_empty() {
        return Err(DeclaredError::NoCpus { group: written });
    }
    let cpus = CpuSet::parse_list(cpus_text).map_err(|source| DeclaredError::BadCpuList {
        group: written.clone(),
        source,
    })?;
    if cpus.is_empty() {
        return Err(DeclaredError::NoCpus { group: written });
    }
    Ok(Group {
        written,
        cpus,
        name: name.to_string(),
        known: Known::from_name(name),
        speed_milli,
    })
}

/// Refuses two groups of one kind and two groups sharing a CPU.
fn check_distinct(groups: &[Group]) -> Result<(), DeclaredError> {
    for (i, g2) in groups.iter().enumerate() {
        for g1 in &groups[..i] {
            let same = match (g1.known, g2.known) {
                (Some(a), Some(b)) => a == b,
                _ => g1.name.eq_ignore_ascii_case(&g2.name),
            };
            if same {
                return Err(DeclaredError::DuplicateName {
                    name: g2
                        .known
                        .map_or_else(|| g2.name.clone(), |k| k.name().to_string()),
                    first: g1.written.clone(),
                    second: g2.written.clone(),
                });
            }
            if let Some(cpu) = g1.cpus.intersection(&g2.cpus).first() {
                return Err(DeclaredError::Overlap {
                    cpu,
                    first: g1.written.clone(),
                    second: g2.written.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The order rule: known kinds only are sorted by performance; with a
/// custom name among them, the known kinds must already be in order.
fn order_groups(groups: &mut [Group]) -> Result<(), DeclaredError> {
    if groups.iter().all(|g| g.known.is_some()) {
        groups.sort_by_key(|g| g.known);
        return Ok(());
    }
    let mut last: Option<&Group> = None;
    for g in groups.iter() {
        if let Some(k) = g.known {
            if let Some(prev) = last {
                if prev.known.is_some_and(|p| p > k) {
                    return Err(DeclaredError::Order {
                        earlier: prev.written.clone(),
                        later: g.written.clone(),
                    });
                }
            }
            last = Some(g);
        }
    }
    Ok(())
}

/// Each group's mark: known kinds' own marks first, so they are taken;
/// others the first letter of their name, or their rank when another
/// kind holds that letter.
fn marks(groups: &[Group]) -> Vec<String> {
    let n = groups.len();
    let mut marks: Vec<Option<String>> = groups
        .iter()
        .map(|g| g.known.map(|k| k.mark().to_string()))
        .collect();
    for (i, g) in groups.iter().enumerate() {
        if marks[i].is_some() {
            continue;
        }
        let letter: String = g
            .name
            .chars()
            .take(1)
            .flat_map(char::to_uppercase)
            .collect();
        let taken = marks
            .iter()
            .flatten()
            .any(|m| m.eq_ignore_ascii_case(&letter));
        marks[i] = Some(if taken {
            // Its rank: unique, and never a letter another kind holds.
            (n - 1 - i).to_string()
        } else {
            letter
        });
    }
    marks.into_iter().map(Option::unwrap_or_default).collect()
}

fn check_name(name: &str) -> Result<(), DeclaredError> {
    let bad = |reason| {
        Err(DeclaredError::BadName {
            name: name.to_string(),
            reason,
        })
    };
    if name.chars().count() > MAX_NAME_LEN {
        return bad("is too long");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return bad("does not start with a letter");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | '+'))
    {
        return bad("holds a character that is not allowed");
    }
    Ok(())
}

/// `topo` with its kinds replaced by `spec`'s (see the module documentation).
pub fn apply(topo: &Topology, spec: &KindSpec) -> Result<Topology, DeclaredError> {
    check_cpus(topo, spec)?;
    let n = spec.kinds.len();
    let mut out = topo.clone();
    // The capacity chain's evidence describes the discovered kinds; it
    // does not line up with declared ones (`topo --explain` then says the
    // kinds were not ranked from sysfs).
    out.provenance = Default::default();
    out.kinds = declared_kinds(topo, spec);
    // A kind's max frequency is read as its capacity when nothing better is
    // known (plan's `balance`); keep it only where it agrees with the
    // declared order, so equal frequencies (a VM, firmware reporting one
    // max everywhere) never flatten what the user declared.
    let ordered = out.kinds.iter().all(|k| k.max_mhz.is_some())
        && out.kinds.windows(2).all(|w| w[0].max_mhz < w[1].max_mhz);
    if !ordered {
        for k in &mut out.kinds {
            k.max_mhz = None;
        }
    }
    for cpu in &mut out.cpus {
        cpu.kind = out.kinds.iter().position(|k| k.cpus.contains(cpu.id));
    }
    if !capacity_agrees(&out) {
        for cpu in &mut out.cpus {
            cpu.capacity = None;
        }
    }
    debug_assert_eq!(out.kinds.len(), n);
    Ok(out)
}

/// Refuses a declaration naming CPUs the machine lacks or has offline, or
/// leaving usable CPUs out.
fn check_cpus(topo: &Topology, spec: &KindSpec) -> Result<(), DeclaredError> {
    let present: CpuSet = topo.cpus.iter().map(|c| c.id).collect();
    let online = topo.online();
    for k in &spec.kinds {
        let missing = k.cpus.difference(&present);
        if !missing.is_empty() {
            return Err(DeclaredError::UnknownCpus {
                group: k.written.clone(),
                cpus: missing,
                present,
            });
        }
        let offline = k.cpus.difference(&online);
        if !offline.is_empty() {
            return Err(DeclaredError::OfflineCpus {
                group: k.written.clone(),
                cpus: offline,
                online,
            });
        }
    }
    let usable = topo.usable();
    let left = usable.difference(&spec.cpus());
    if !left.is_empty() {
        return Err(DeclaredError::Undeclared { cpus: left, usable });
    }
    Ok(())
}

/// The declared kinds as model kinds, rank 0 (the least performant) the
/// declaration's last kind, with the measures of their CPUs.
fn declared_kinds(topo: &Topology, spec: &KindSpec) -> Vec<Kind> {
    // On a machine discovered as one kind, declared speeds are the kinds'
    // capacities: the CPUs are alike, and `pinsight emulate` slows each
    // kind's CPUs to its speed. On a machine with kinds of its own the
    // speed multiplies a native capacity the declaration has replaced, so
    // the rank default stays (see `Topology::capacity`).
    let top_speed = spec
        .kinds
        .iter()
        .map(DeclaredKind::speed)
        .fold(0.0, f64::max);
    let speeds_are_capacity = topo.kinds.len() <= 1 && spec.slows() && top_speed > 0.0;
    spec.kinds
        .iter()
        .rev()
        .enumerate()
        .map(|(rank, d)| {
            let cpus: Vec<_> = d.cpus.iter().filter_map(|c| topo.cpu(c)).collect();
            let core_type = common(cpus.iter().map(|c| c.core_type));
            Kind {
                rank,
                name: d.name.clone(),
                mark: d.mark.clone(),
                cpus: d.cpus.clone(),
                source: KindSource::Declared,
                rank_source: RankSource::Declared,
                capacity: speeds_are_capacity.then(|| d.speed() / top_speed),
                capacity_raw: None,
                max_mhz: cpus.iter().filter_map(|c| c.max_mhz).max(),
                base_mhz: cpus.iter().filter_map(|c| c.base_mhz).max(),
                core_type: core_type.flatten(),
            }
        })
        .collect()
}

/// Whether per-CPU `cpu_capacity`, which `balance` prefers to anything,
/// agrees with the declared kinds: every CPU of a faster kind has more
/// than every CPU of a slower one (a VM's 1024 everywhere would undo the
/// declaration).
fn capacity_agrees(out: &Topology) -> bool {
    let range = |k: &Kind| -> Option<(u32, u32)> {
        let caps: Option<Vec<u32>> = k
            .cpus
            .iter()
            .map(|c| out.cpu(c).and_then(|c| c.capacity))
            .collect();
        let caps = caps?;
        Some((*caps.iter().min()?, *caps.iter().max()?))
    };
    let ranges: Option<Vec<(u32, u32)>> = out.kinds.iter().map(range).collect();
    ranges.is_some_and(|r| r.windows(2).all(|w| w[0].1 < w[1].0) && r.len() > 1)
}

/// The value every item shares, `None` when they differ or there are none.
fn common(mut items: impl Iterator<Item = Option<CoreType>>) -> Option<Option<CoreType>> {
    let first = items.next()?;
    items.all(|t| t == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cpu;
    use proptest::prelude::*;

    fn names(spec: &str) -> Vec<(String, String, String)> {
        KindSpec::parse(spec)
            .unwrap()
            .kinds()
            .iter()
            .map(|k| (k.name.clone(), k.mark.clone(), k.cpus.to_list_string()))
            .collect()
    }

    fn t(v: [&str; 3]) -> (String, String, String) {
        (v[0].into(), v[1].into(), v[2].into())
    }

    #[test]
    fn known_kinds_are_ordered_p_e_l_whatever_the_listing() {
        let want = vec![t(["P-core", "P", "0-3"]), t(["E-core", "E", "4-7"])];
        assert_eq!(names("0-3:P,4-7:E"), want);
        assert_eq!(names("4-7:e-core, 0-3:p"), want);
        assert_eq!(
            names("8:LP,0-1:E,2-3:P"),
            vec![
                t(["P-core", "P", "2-3"]),
                t(["E-core", "E", "0-1"]),
                t(["LP E-core", "L", "8"])
            ]
        );
    }

    #[test]
    fn other_names_are_listed_fastest_first() {
        assert_eq!(
            names("0-3:big,4-7:little"),
            vec![t(["big", "B", "0-3"]), t(["little", "L", "4-7"])]
        );
        // Known marks are taken first: a name starting with E gets its rank.
        assert_eq!(
            names("0:P,1:eco,2:E"),
            vec![
                t(["P-core", "P", "0"]),
                t(["eco", "1", "1"]),
                t(["E-core", "E", "2"])
            ]
        );
    }

    #[test]
    fn speeds_are_thousandths_and_follow_their_kind() {
        let spec = KindSpec::parse("1:E@0.5, 0:P").unwrap();
        let speeds: Vec<u32> = spec.kinds().iter().map(|k| k.speed_milli).collect();
        assert_eq!(speeds, [1000, 500]);
        assert_eq!(spec.kinds()[1].written, "1:E@0.5");
        assert!(spec.slows());
        assert_eq!(spec.to_string(), "P-core (0) > E-core (1) @0.5");
        for (text, milli) in [
            ("1", 1000),
            ("0.25", 250),
            (".75", 750),
            ("0.001", 1),
            ("1.000", 1000),
        ] {
            assert_eq!(parse_speed(text), Some(milli), "{text}");
        }
        assert!(!KindSpec::parse("0:P,1:E@1").unwrap().slows());
        assert_eq!(
            KindSpec::parse("0-1:big@0.8,2:little@0.4").unwrap().kinds()[0].speed(),
            0.8
        );
    }

    #[test]
    fn cpulists_keep_their_commas_and_strides() {
        assert_eq!(
            names("0-3,8-11:P,4-7,12-15:2:E"),
            vec![
                t(["P-core", "P", "0-3,8-11"]),
                t(["E-core", "E", "4-7,12,14"])
            ]
        );
    }

    #[test]
    fn errors_name_the_group() {
        let e = |s: &str| KindSpec::parse(s).unwrap_err();
        assert_eq!(e(""), DeclaredError::Empty);
        assert!(matches!(e("0-3"), DeclaredError::MissingName { cpus } if cpus == "0-3"));
        assert!(matches!(e("0-3:P,4-7"), DeclaredError::MissingName { cpus } if cpus == "4-7"));
        assert!(matches!(e(":P"), DeclaredError::NoCpus { .. }));
        assert!(matches!(e("3-1:P"), DeclaredError::BadCpuList { group, .. } if group == "3-1:P"));
        assert!(
            matches!(e("0:P,1:p-core"), DeclaredError::DuplicateName { name, .. } if name == "P-core")
        );
        assert!(matches!(e("0:x,1:X"), DeclaredError::DuplicateName { .. }));
        assert!(matches!(
            e("0-3:P,3-4:E"),
            DeclaredError::Overlap { cpu: 3, first, second } if first == "0-3:P" && second == "3-4:E"
        ));
        assert!(matches!(
            e("0:E,1:P,2:mid"),
            DeclaredError::Order { earlier, later } if earlier == "0:E" && later == "1:P"
        ));
        assert!(matches!(e("0:a?"), DeclaredError::BadName { .. }));
        assert!(matches!(
            e(&format!("0:{}", "a".repeat(25))),
            DeclaredError::BadName { .. }
        ));
        assert!(matches!(e("0:P,1:E@0"), DeclaredError::BadSpeed { .. }));
        assert!(matches!(e("0:P,1:E@1.5"), DeclaredError::BadSpeed { .. }));
        assert!(matches!(
            e("0:P,1:E@0.1234"),
            DeclaredError::BadSpeed { .. }
        ));
        assert!(matches!(e("0:P,1:E@x"), DeclaredError::BadSpeed { .. }));
        assert!(matches!(e("0:P,1:E@"), DeclaredError::BadSpeed { .. }));
        assert!(matches!(
            e("0:P@0.5,1:E@0.6"),
            DeclaredError::SpeedOrder { earlier, later } if earlier == "0:P@0.5" && later == "1:E@0.6"
        ));
        assert!(matches!(
            e("0:big@0.5,1:little"),
            DeclaredError::SpeedOrder { .. }
        ));
        assert_eq!(e("0:P,,1:E"), DeclaredError::StrayComma);
        assert_eq!(e("0:P,1:E,"), DeclaredError::StrayComma);
        assert!(e("0-3:P,4:E,5").to_string().contains("CPULIST:NAME"));
    }

    fn machine(n: usize) -> Topology {
        Topology::bare(
            (0..n)
                .map(|id| Cpu {
                    online: id != n - 1,
                    kind: Some(0),
                    max_mhz: Some(3000),
                    ..Cpu::new(id)
                })
                .collect(),
        )
    }

    #[test]
    fn declared_speeds_are_capacities_on_a_one_kind_machine() {
        use crate::CapacityOrigin;
        let topo = machine(5); // CPUs 0-3 online, one (empty) kind
        let out = apply(&topo, &KindSpec::parse("0-1:P,2:mid@0.8,3:E@0.25").unwrap()).unwrap();
        let cap = |cpu| out.capacity(cpu).unwrap();
        assert_eq!(cap(0).value, 1.0);
        assert_eq!(cap(2).value, 0.8);
        assert_eq!(cap(3).value, 0.25);
        assert_eq!(cap(3).source, CapacityOrigin::DeclaredSpeed);
        // Without speeds: the rank default, as before.
        let out = apply(&topo, &KindSpec::parse("0-1:P,2-3:E").unwrap()).unwrap();
        assert_eq!(out.capacity(3).unwrap().source, CapacityOrigin::RankDefault);
        assert_eq!(out.capacity(3).unwrap().value, 0.5);
        // A top kind below full speed: relative to it.
        let out = apply(&topo, &KindSpec::parse("0-1:P@0.8,2-3:E@0.4").unwrap()).unwrap();
        assert_eq!(out.capacity(0).unwrap().value, 1.0);
        assert_eq!(out.capacity(2).unwrap().value, 0.5);
    }

    #[test]
    fn declared_speeds_leave_a_hybrid_machines_capacity_alone() {
        use crate::CapacityOrigin;
        let mut topo = machine(5);
        let mut big = Kind {
            rank: 1,
            name: "P-core".into(),
            mark: "P".into(),
            cpus: "0-1".parse().unwrap(),
            source: KindSource::Capacity,
            rank_source: RankSource::Capacity,
            capacity: Some(1.0),
            capacity_raw: None,
            max_mhz: None,
            base_mhz: None,
            core_type: None,
        };
        let mut little = big.clone();
        little.rank = 0;
        little.cpus = "2-3".parse().unwrap();
        little.capacity = Some(0.6);
        big.name = "P-core".into();
        topo.kinds = vec![little, big];
        let out = apply(&topo, &KindSpec::parse("0-1:P,2-3:E@0.5").unwrap()).unwrap();
        assert_eq!(out.capacity(3).unwrap().source, CapacityOrigin::RankDefault);
    }

    #[test]
    fn apply_replaces_kinds_and_ranks_least_first() {
        let topo = machine(5); // CPUs 0-3 online, 4 offline
        let out = apply(&topo, &KindSpec::parse("2-3:E,0-1:P").unwrap()).unwrap();
        assert_eq!(out.kinds.len(), 2);
        assert_eq!(
            (out.kinds[0].name.as_str(), out.kinds[0].rank),
            ("E-core", 0)
        );
        assert_eq!(out.kinds[1].cpus.to_list_string(), "0-1");
        assert!(out.kinds.iter().all(|k| k.source == KindSource::Declared
            && k.rank_source == RankSource::Declared
            && k.capacity.is_none()));
        // Equal max frequencies would contradict the order: dropped.
        assert!(out.kinds.iter().all(|k| k.max_mhz.is_none()));
        let kinds: Vec<_> = out.cpus.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [Some(1), Some(1), Some(0), Some(0), None]);
        assert_eq!(out.fastest_kind().unwrap().name, "P-core");
    }

    #[test]
    fn frequencies_that_agree_with_the_order_are_kept() {
        let mut topo = machine(3);
        topo.cpus[0].max_mhz = Some(5000);
        for (c, cap) in [(0, 1024), (1, 600)] {
            topo.cpus[c].capacity = Some(cap);
        }
        let out = apply(&topo, &KindSpec::parse("0:P,1:E").unwrap()).unwrap();
        assert_eq!(out.kinds[1].max_mhz, Some(5000));
        assert_eq!(out.kinds[0].max_mhz, Some(3000));
        assert_eq!(out.cpus[0].capacity, Some(1024));
        // Declared against the kernel's capacities: they are not used.
        let out = apply(&topo, &KindSpec::parse("0:E,1:P").unwrap()).unwrap();
        assert!(out.cpus.iter().all(|c| c.capacity.is_none()));
    }

    #[test]
    fn apply_checks_the_machine() {
        let topo = machine(5);
        let e = |s: &str| apply(&topo, &KindSpec::parse(s).unwrap()).unwrap_err();
        assert!(
            matches!(e("0-3:P,9:E"), DeclaredError::UnknownCpus { cpus, .. } if cpus.to_list_string() == "9")
        );
        assert!(
            matches!(e("0-3:P,4:E"), DeclaredError::OfflineCpus { cpus, .. } if cpus.to_list_string() == "4")
        );
        assert!(
            matches!(e("0:P,1:E"), DeclaredError::Undeclared { cpus, .. } if cpus.to_list_string() == "2-3")
        );
        // Online CPUs this process may not use need no kind.
        let mut t2 = topo.clone();
        t2.cpus[3].allowed = false;
        let out = apply(&t2, &KindSpec::parse("0:P,1-2:E").unwrap()).unwrap();
        assert_eq!(out.cpus[3].kind, None);
    }

    proptest! {
        /// Any text: no panic; accepted specs are disjoint, non-empty,
        /// uniquely named and marked, and parse again from their own groups.
        #[test]
        fn parse_never_panics_and_accepts_consistent_specs(text in "[0-9PpEeLlxbig:,/ @.-]{0,24}") {
            if let Ok(spec) = KindSpec::parse(&text) {
                let kinds = spec.kinds();
                prop_assert!(!kinds.is_empty());
                let mut seen = CpuSet::new();
                for (i, k) in kinds.iter().enumerate() {
                    prop_assert!(!k.cpus.is_empty());
                    prop_assert!(!seen.intersects(&k.cpus));
                    seen.union_with(&k.cpus);
                    for o in &kinds[..i] {
                        prop_assert!(!o.name.eq_ignore_ascii_case(&k.name));
                        prop_assert!(!o.mark.eq_ignore_ascii_case(&k.mark));
                    }
                }
                let written = |k: &DeclaredKind| format!("{}:{}@{}", k.cpus, k.name, k.speed());
                let again = kinds.iter().map(written).collect::<Vec<_>>().join(",");
                let reparsed = KindSpec::parse(&again).unwrap();
                let want: Vec<DeclaredKind> = kinds
                    .iter()
                    .map(|k| DeclaredKind { written: written(k), ..k.clone() })
                    .collect();
                prop_assert_eq!(reparsed.kinds(), want.as_slice());
            }
        }

        /// Declared groups built from disjoint CPU ranges always parse, in
        /// the declared order, and apply to a machine holding those CPUs.
        #[test]
        fn well_formed_specs_apply(sizes in proptest::collection::vec(1usize..5, 1..5)) {
            let names = ["alpha", "beta", "gamma", "delta"];
            let mut start = 0;
            let mut groups = Vec::new();
            for (i, s) in sizes.iter().enumerate() {
                groups.push(format!("{}-{}:{}", start, start + s - 1, names[i]));
                start += s;
            }
            let spec = KindSpec::parse(&groups.join(",")).unwrap();
            let topo = machine(start + 1);
            let out = apply(&topo, &spec).unwrap();
            prop_assert_eq!(out.kinds.len(), sizes.len());
            prop_assert_eq!(&out.fastest_kind().unwrap().name, "alpha");
            for k in &out.kinds {
                for c in k.cpus.iter() {
                    prop_assert_eq!(out.cpu(c).unwrap().kind, Some(k.rank));
                }
            }
        }
    }
}
