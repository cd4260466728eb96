//! Rank slices: the CPUs one process may use, split among the ranks a
//! launcher (Slurm, Open MPI, MPICH, ...) starts on this node, so that each
//! rank gets the same *capacity* rather than the same CPU count.
//!
//! Why: on a hybrid CPU, equal-count slices put some ranks on E-cores, and in
//! a bulk-synchronous code the slowest rank sets the pace. The
//! launchers themselves split by count (Slurm assumes uniform threads per
//! core; Open MPI's only hybrid answer is a hand-written `--map-by pe-list`).
//!
//! [`slices`] works on the allowed CPUs in topology order (package, NUMA
//! node, L3, L2, core: the planner's compact order) and cuts that sequence
//! into `size` contiguous slices:
//! 1. the best achievable balance is found first (the largest deviation of
//!    a slice from the mean, D*);
//! 2. among the cuts whose slices are within `max(D*, half a CPU)` of the
//!    mean — so slices differ by at most one CPU's capacity when that is
//!    achievable — the one that splits the fewest cores (SMT siblings),
//!    then NUMA nodes, then L3 groups, then L2 groups and clusters is
//!    chosen (two small dynamic programmes over the cut
//!    positions; hand-written because no crate solves "contiguous partition
//!    with a tie-break on the cut positions", and the sizes are tiny: one
//!    node's cores).
//!
//! Capacity per CPU is [`balance::capacities`](crate::balance::capacities):
//! measured weights first, else the kernel's `cpu_capacity`, kind maximum
//! frequency, kind rank, uniform. Pure: the caller passes the allowed CPUs
//! (its affinity mask ∩ the cgroup).

use crate::balance::{capacities, CapacitySource};
use crate::format::Dialect;
use crate::order::slots;
use crate::weights::{Weights, WeightsError};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// How the allowed CPUs are shared among the ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SliceRule {
    /// Slices of equal total capacity (the default).
    #[default]
    EqualCapacity,
    /// Slices of equal CPU count (what the launchers do).
    EqualCount,
    /// Only the fastest kind's CPUs, in slices of equal capacity; the other
    /// CPUs are left out.
    POnly,
}

impl SliceRule {
    /// The rules, as typed.
    pub const NAMES: &'static str = "equal-capacity, equal-count, p-only";
}

impl fmt::Display for SliceRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SliceRule::EqualCapacity => "equal-capacity",
            SliceRule::EqualCount => "equal-count",
            SliceRule::POnly => "p-only",
        })
    }
}

/// A slice rule that is not one of [`SliceRule::NAMES`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown slice rule '{0}'; rules are: equal-capacity, equal-count, p-only")]
pub struct SliceRuleError(pub String);

impl FromStr for SliceRule {
    type Err = SliceRuleError;
    fn from_str(s: &str) -> Result<SliceRule, SliceRuleError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "equal-capacity" | "capacity" => Ok(SliceRule::EqualCapacity),
            "equal-count" | "count" => Ok(SliceRule::EqualCount),
            "p-only" | "p" => Ok(SliceRule::POnly),
            _ => Err(SliceRuleError(s.to_string())),
        }
    }
}

/// What to slice.
#[derive(Clone, Debug, PartialEq)]
pub struct SliceRequest {
    /// The CPUs this process may use (affinity mask ∩ cgroup, launcher's
    /// binding included); intersected with the topology's usable CPUs.
    pub allowed: CpuSet,
    /// Number of ranks on this node (local size).
    pub size: usize,
    /// How to share.
    pub rule: SliceRule,
    /// Measured per-CPU speed (`--weights`), else the topology's capacity.
    pub weights: Option<Weights>,
}

/// One rank's share.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slice {
    /// Local rank.
    pub rank: usize,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Their total capacity (same unit as [`Slicing::capacity_source`]).
    pub capacity: f64,
}

/// All slices of one node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slicing {
    pub rule: SliceRule,
    /// Number of ranks.
    pub size: usize,
    /// The CPUs sliced (allowed and usable; for p-only, the fastest kind's).
    pub cpus: CpuSet,
    /// One slice per local rank, in rank order, contiguous in topology order.
    pub slices: Vec<Slice>,
    /// Where capacity came from.
    pub capacity_source: CapacitySource,
    /// Whether some core's SMT siblings went to two ranks (only when
    /// equal slices need it, or there are more ranks than cores).
    pub cores_split: bool,
    /// Largest minus smallest slice capacity.
    pub spread: f64,
    /// Capacity of the largest single CPU sliced (the yardstick of "equal").
    pub cpu_capacity: f64,
    /// Groups cut between two slices: "NUMA node 0", "L3 (CPUs 0-7)", ...
    pub broken: Vec<String>,
    /// Human explanations.
    pub notes: Vec<String>,
}

impl Slicing {
    /// The slice of local rank `rank`.
    pub fn slice(&self, rank: usize) -> Result<&Slice, SliceError> {
        self.slices.get(rank).ok_or(SliceError::RankOutOfRange {
            rank,
            size: self.size,
        })
    }

    /// Every rank's slice in a launcher's binding syntax
    /// ([`crate::format::launcher_line`]), or why `dialect` cannot
    /// express these slices and what to use instead.
    pub fn launcher_line(&self, dialect: Dialect) -> Result<String, CannotExpress> {
        let cpus: Vec<CpuSet> = self.slices.iter().map(|x| x.cpus.clone()).collect();
        let line = crate::format::launcher_line(dialect, &cpus);
        match line.strip_prefix("# pe-list") {
            Some(why) => Err(CannotExpress(format!("pe-list{}", why.trim_end()))),
            None => Ok(line),
        }
    }
}

/// A launcher binding syntax that cannot express a slicing: why, and
/// which to use instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CannotExpress(pub String);

/// What to do about more ranks than CPUs.
const TOO_MANY_RANKS_HINT: &str = "use fewer ranks per node, or let the launcher not bind each rank (mpirun --bind-to none, srun --cpu-bind=none): the CPUs sliced are those this process may use";

/// Why the CPUs cannot be sliced.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SliceError {
    /// Zero ranks.
    #[error("local size 0: there must be at least one rank")]
    ZeroSize,
    /// Local rank not below local size.
    #[error("local rank {rank} is not below the local size {size} (ranks are 0..{size})")]
    RankOutOfRange { rank: usize, size: usize },
    /// Nothing allowed and usable.
    #[error("no usable CPU to slice (allowed {allowed}, usable {usable})")]
    NoCpus { allowed: CpuSet, usable: CpuSet },
    /// p-only on CPUs without the fastest kind.
    #[error("p-only: none of the CPUs {cpus} is of the fastest kind{}", kind.as_ref().map(|k| format!(" ({k})")).unwrap_or_default())]
    NoFastCpus { cpus: CpuSet, kind: Option<String> },
    /// More ranks than CPUs; the message says the two ways out (fewer
    /// ranks, or a launcher that does not bind each rank: the CPUs sliced
    /// are those the process may use).
    #[error("{size} ranks but only {} ({cpus}) to share: at most {}; {TOO_MANY_RANKS_HINT}", crate::plan::count(cpus.len(), "CPU", "CPUs"), crate::plan::count(cpus.len(), "rank", "ranks"))]
    TooManyRanks { size: usize, cpus: CpuSet },
    /// The best slicing is too unequal.
    #[error("slices cannot be equal: capacities {} (spread {spread:.3}, more than one CPU's capacity {cpu_capacity:.3})", fmt_caps(capacities))]
    Unequal {
        capacities: Vec<f64>,
        spread: f64,
        cpu_capacity: f64,
    },
    /// Weights that do not cover the CPUs.
    #[error("weights: {0}")]
    Weights(#[from] WeightsError),
}

fn fmt_caps(c: &[f64]) -> String {
    c.iter()
        .map(|v| format!("{v:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One rank's slice and how it was found: the rank from the launcher, its
/// CPUs and capacity, and every rank's capacity for the spread.
#[derive(Clone, Debug, Serialize)]
pub struct RankSlice {
    pub rank: usize,
    pub size: usize,
    pub launcher: String,
    pub vars: Vec<String>,
    pub cpus: CpuSet,
    pub capacity: f64,
    pub rule: SliceRule,
    pub capacity_source: CapacitySource,
    /// Every rank's capacity, for the spread.
    pub capacities: Vec<f64>,
    pub spread: f64,
    pub notes: Vec<String>,
}

/// The slice of `local.rank` in `s`, with the launcher's and the slicing's notes.
pub fn rank_slice(
    local: &crate::launcher::LocalRank,
    s: &Slicing,
) -> Result<RankSlice, SliceError> {
    let mine = s.slice(local.rank)?;
    let mut notes = local.notes.clone();
    notes.extend(s.notes.iter().cloned());
    Ok(RankSlice {
        rank: local.rank,
        size: local.size,
        launcher: local.launcher.to_string(),
        vars: local.vars.clone(),
        cpus: mine.cpus.clone(),
        capacity: mine.capacity,
        rule: s.rule,
        capacity_source: s.capacity_source,
        capacities: s.slices.iter().map(|x| x.capacity).collect(),
        spread: s.spread,
        notes,
    })
}

/// One CPU, with where it sits.
struct Item {
    cpu: usize,
    /// Capacity used for balancing (real, or 1 per CPU for equal-count).
    weight: f64,
    /// Real capacity.
    capacity: f64,
    /// (NUMA position, L3, L2, cluster, core first CPU).
    key: [usize; 5],
}

/// Splits the allowed CPUs into `req.size` slices.
pub fn slices(topo: &Topology, req: &SliceRequest) -> Result<Slicing, SliceError> {
    if req.size == 0 {
        return Err(SliceError::ZeroSize);
    }
    let usable = topo.usable();
    let cpus = req.allowed.intersection(&usable);
    if cpus.is_empty() {
        return Err(SliceError::NoCpus {
            allowed: req.allowed.clone(),
            usable,
        });
    }
    let mut notes = Vec::new();
    let cpus = rule_cpus(topo, req.rule, cpus, &mut notes)?;
    if req.size > cpus.len() {
        return Err(SliceError::TooManyRanks {
            size: req.size,
            cpus,
        });
    }
    let (caps, source) = capacities(topo, &cpus, req.weights.as_ref())?;
    let items = items_of(topo, &cpus, &caps, req.rule);
    let cuts = partition(&items, req.size);
    let (out, broken) = cut_slices(topo, &items, &cuts);
    let measure: Vec<f64> = cuts
        .windows(2)
        .map(|w| items[w[0]..w[1]].iter().map(|i| i.weight).sum())
        .collect();
    let spread_of = |v: &[f64]| {
        v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
    };
    let cpu_capacity = match req.rule {
        SliceRule::EqualCount => 1.0,
        _ => caps.iter().map(|(_, v)| *v).fold(0.0, f64::max),
    };
    check_equal(measure, cpu_capacity)?;
    let real: Vec<f64> = out.iter().map(|s| s.capacity).collect();
    let split = broken.iter().filter(|b| b.starts_with("core")).count();
    if split > 0 {
        notes.push(format!(
            "{split} core(s) shared by two ranks: whole cores could not give equal slices"
        ));
    }
    Ok(Slicing {
        rule: req.rule,
        size: req.size,
        cpus,
        spread: spread_of(&real),
        slices: out,
        capacity_source: source,
        cores_split: broken.iter().any(|b| b.starts_with("core")),
        cpu_capacity: caps.iter().map(|(_, v)| *v).fold(0.0, f64::max),
        broken,
        notes,
    })
}

/// The CPUs the rule slices: for p-only on a heterogeneous machine only the
/// fastest kind's (noting those left out), otherwise all of `cpus`.
fn rule_cpus(
    topo: &Topology,
    rule: SliceRule,
    cpus: CpuSet,
    notes: &mut Vec<String>,
) -> Result<CpuSet, SliceError> {
    if rule == SliceRule::POnly && topo.is_heterogeneous() {
        let fast = topo.fastest_kind().expect("heterogeneous");
        let p = cpus.intersection(&fast.cpus);
        if p.is_empty() {
            return Err(SliceError::NoFastCpus {
                cpus,
                kind: Some(fast.name.clone()),
            });
        }
        let left = cpus.difference(&p);
        if !left.is_empty() {
            notes.push(format!(
                "p-only: CPUs {left} ({}) left out",
                kinds_of(topo, &left)
            ));
        }
        return Ok(p);
    } else if rule == SliceRule::POnly {
        notes.push("p-only: one core kind here, every CPU is of the fastest kind".into());
    }
    Ok(cpus)
}

/// The CPUs in slot order, each with its balancing weight, capacity and place.
fn items_of(topo: &Topology, cpus: &CpuSet, caps: &[(usize, f64)], rule: SliceRule) -> Vec<Item> {
    let cap_of = |c: usize| caps.iter().find(|(x, _)| *x == c).map_or(0.0, |(_, v)| *v);
    let cluster = |c: usize| topo.cpu(c).and_then(|i| i.cluster).unwrap_or(usize::MAX);
    let mut items = Vec::new();
    for s in slots(topo, cpus) {
        for c in &s.pus {
            let capacity = cap_of(*c);
            items.push(Item {
                key: [s.key[1], s.key[2], s.key[3], cluster(*c), s.pus[0]],
                cpu: *c,
                weight: match rule {
                    SliceRule::EqualCount => 1.0,
                    _ => capacity,
                },
                capacity,
            });
        }
    }
    items
}

/// The slices between the cuts, and the shared units each cut breaks
/// (each named once, in order of first break).
fn cut_slices(topo: &Topology, items: &[Item], cuts: &[usize]) -> (Vec<Slice>, Vec<String>) {
    let mut out = Vec::new();
    let mut broken = Vec::new();
    for (rank, w) in cuts.windows(2).enumerate() {
        let part = &items[w[0]..w[1]];
        out.push(Slice {
            rank,
            cpus: part.iter().map(|i| i.cpu).collect(),
            capacity: part.iter().map(|i| i.capacity).sum(),
        });
        if w[0] > 0 {
            for b in broken_at(topo, &items[w[0] - 1], &items[w[0]]) {
                if !broken.contains(&b) {
                    broken.push(b);
                }
            }
        }
    }
    (out, broken)
}

/// Slices whose balance measure (capacity, or CPU count for equal-count)
/// differs by more than one CPU's are refused, naming each slice's value.
fn check_equal(measure: Vec<f64>, cpu_capacity: f64) -> Result<(), SliceError> {
    let max = measure.iter().cloned().fold(f64::MIN, f64::max);
    let min = measure.iter().cloned().fold(f64::MAX, f64::min);
    let spread = max - min;
    if spread > cpu_capacity * (1.0 + 1e-9) {
        return Err(SliceError::Unequal {
            capacities: measure,
            spread,
            cpu_capacity,
        });
    }
    Ok(())
}

fn kinds_of(topo: &Topology, cpus: &CpuSet) -> String {
    let names: Vec<&str> = topo
        .kinds
        .iter()
        .filter(|k| k.cpus.intersects(cpus))
        .map(|k| k.name.as_str())
        .collect();
    if names.is_empty() {
        "kind unknown".into()
    } else {
        names.join(", ")
    }
}

/// The groups a cut between items `a` and `b` breaks.
fn broken_at(topo: &Topology, a: &Item, b: &Item) -> Vec<String> {
    let mut out = Vec::new();
    let (ca, cb) = (a.cpu, b.cpu);
    if a.key[4] == b.key[4] {
        out.push(format!("core (CPUs {})", topo.siblings(ca)));
    }
    if a.key[0] == b.key[0] && a.key[0] != usize::MAX {
        if let Some(n) = topo.cpu(ca).and_then(|c| c.numa) {
            out.push(format!("NUMA node {n}"));
        }
    }
    for level in [3u8, 2] {
        if let Some(c) = topo
            .caches_at(level)
            .find(|c| c.cpus.contains(ca) && c.cpus.contains(cb))
        {
            out.push(format!("L{level} (CPUs {})", c.cpus));
        }
    }
    if a.key[3] == b.key[3] && a.key[3] != usize::MAX {
        out.push(format!("cluster {}", a.key[3]));
    }
    out
}

/// Penalty of cutting between two neighbouring items: what the cut breaks.
fn penalty(a: &Item, b: &Item) -> u64 {
    let same = |i: usize| a.key[i] == b.key[i] && a.key[i] != usize::MAX;
    let mut p = 0;
    if a.key[4] == b.key[4] {
        p += 100_000; // a core: SMT siblings on two ranks
    }
    if same(0) {
        p += 1000; // NUMA node
    }
    if same(1) {
        p += 100; // L3
    }
    if same(2) || same(3) {
        p += 10; // L2 or cluster
    }
    p
}

/// Cut positions `0 = c0 < c1 < ... < cn = items.len()`.
///
/// First the smallest achievable largest deviation from the mean (D*);
/// then, among cuts within `max(D*, half the largest CPU)` of the mean (so
/// slices stay within one CPU's capacity of each other whenever D* allows),
/// the one with the smallest total [`penalty`]: cores, then NUMA nodes,
/// L3, L2 and clusters kept whole.
fn partition(items: &[Item], n: usize) -> Vec<usize> {
    let m = items.len();
    let mut prefix = vec![0.0; m + 1];
    for (i, it) in items.iter().enumerate() {
        prefix[i + 1] = prefix[i] + it.weight;
    }
    let target = prefix[m] / n as f64;
    let dev = |i: usize, j: usize| (prefix[j] - prefix[i] - target).abs();
    // dp[k][j]: best largest deviation splitting items[..j] into k parts.
    let inf = f64::INFINITY;
    let mut dp = vec![vec![inf; m + 1]; n + 1];
    dp[0][0] = 0.0;
    for k in 1..=n {
        for j in k..=m - (n - k) {
            for i in (k - 1)..j {
                if dp[k - 1][i] < inf {
                    let v = dp[k - 1][i].max(dev(i, j));
                    if v < dp[k][j] {
                        dp[k][j] = v;
                    }
                }
            }
        }
    }
    let largest = items.iter().map(|i| i.weight).fold(0.0, f64::max);
    let eps = 1e-9 * prefix[m].abs().max(1.0);
    let allowed = dp[n][m].max(largest / 2.0) + eps;
    // pen[k][j]: least total penalty with every part within `allowed`.
    let mut pen = vec![vec![u64::MAX; m + 1]; n + 1];
    let mut from = vec![vec![0usize; m + 1]; n + 1];
    pen[0][0] = 0;
    for k in 1..=n {
        for j in k..=m - (n - k) {
            for i in (k - 1)..j {
                if pen[k - 1][i] == u64::MAX || dev(i, j) > allowed {
                    continue;
                }
                // The cut before this part.
                let cut = if i > 0 {
                    penalty(&items[i - 1], &items[i])
                } else {
                    0
                };
                let v = pen[k - 1][i].saturating_add(cut);
                if v < pen[k][j] {
                    pen[k][j] = v;
                    from[k][j] = i;
                }
            }
        }
    }
    let mut cuts = vec![m];
    let mut j = m;
    for k in (1..=n).rev() {
        j = from[k][j];
        cuts.push(j);
    }
    cuts.reverse();
    cuts
}

/// `topo` as seen from inside one slice: CPUs outside `cpus` are not
/// allowed, and only the kinds with a CPU in the slice remain (re-ranked),
/// so `p-pinned` means "the fastest kind of this slice" — a rank whose
/// slice holds E-cores only still gets one thread per core. Pure.
pub fn restrict(topo: &Topology, cpus: &CpuSet) -> Topology {
    let mut t = topo.clone();
    for c in &mut t.cpus {
        if !cpus.contains(c.id) {
            c.allowed = false;
        }
    }
    let keep: Vec<bool> = topo.kinds.iter().map(|k| k.cpus.intersects(cpus)).collect();
    if keep.iter().all(|k| *k) {
        return t;
    }
    let mut index = vec![None; keep.len()];
    let mut next = 0;
    for (i, k) in keep.iter().enumerate() {
        if *k {
            index[i] = Some(next);
            next += 1;
        }
    }
    t.kinds = topo
        .kinds
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .enumerate()
        .map(|(r, (kind, _))| {
            let mut kind = kind.clone();
            kind.rank = r;
            kind
        })
        .collect();
    for c in &mut t.cpus {
        c.kind = c.kind.and_then(|k| index.get(k).copied().flatten());
    }
    for s in &mut t.provenance.sources {
        if s.kinds.len() == keep.len() {
            s.kinds = s
                .kinds
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(v, _)| *v)
                .collect();
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_line_or_why_the_dialect_cannot_say_it() {
        let topo = pinsight_testkit::topology::i7_1370p();
        let req = |size| SliceRequest {
            allowed: topo.usable(),
            size,
            rule: SliceRule::EqualCount,
            weights: None,
        };
        let two = slices(&topo, &req(2)).unwrap();
        let e = two.launcher_line(Dialect::OpenMpi).unwrap_err();
        assert!(
            e.to_string().starts_with("pe-list gives each rank one CPU"),
            "{e}"
        );
        assert!(!e.to_string().ends_with('\n'), "{e}");
        let line = two.launcher_line(Dialect::Slurm).unwrap();
        assert!(line.starts_with("--cpu-bind=mask_cpu:"), "{line}");
        let each = slices(&topo, &req(topo.usable().len())).unwrap();
        let line = each.launcher_line(Dialect::OpenMpi).unwrap();
        assert!(line.starts_with("--map-by pe-list="), "{line}");
    }

    #[test]
    fn too_many_ranks_counts_in_words() {
        let e = |size, cpus: &str| {
            SliceError::TooManyRanks {
                size,
                cpus: cpus.parse().unwrap(),
            }
            .to_string()
        };
        assert_eq!(
            e(2, "3"),
            format!("2 ranks but only 1 CPU (3) to share: at most 1 rank; {TOO_MANY_RANKS_HINT}")
        );
        assert_eq!(
            e(5, "0-3"),
            format!(
                "5 ranks but only 4 CPUs (0-3) to share: at most 4 ranks; {TOO_MANY_RANKS_HINT}"
            )
        );
        assert!(TOO_MANY_RANKS_HINT.contains("srun --cpu-bind=none"));
    }

    #[test]
    fn rules_parse_and_print() {
        for r in [
            SliceRule::EqualCapacity,
            SliceRule::EqualCount,
            SliceRule::POnly,
        ] {
            assert_eq!(r.to_string().parse::<SliceRule>().unwrap(), r);
        }
        let e = "fair".parse::<SliceRule>().unwrap_err();
        assert!(check_equal(vec![10.0, 5.0], 5.0).is_ok());
        let u = check_equal(vec![10.0, 4.0, 7.0], 5.0).unwrap_err();
        assert_eq!(
            u.to_string(),
            "slices cannot be equal: capacities 10.000, 4.000, 7.000 (spread 6.000, more than one CPU's capacity 5.000)"
        );
        assert!(e.to_string().contains("'fair'") && e.to_string().contains("p-only"));
    }
}
