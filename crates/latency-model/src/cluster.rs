//! Latency domains: groups of CPUs that talk to each other much faster than
//! to the rest, found from the matrix alone (no topology, no per-CPU rules).
//!
//! # Method
//! 1. **Average-linkage clustering** (UPGMA) of the CPUs, latency as the
//!    distance: repeatedly join the two groups with the lowest mean pairwise
//!    latency. Unmeasured (NaN) pairs are left out of the means. Average
//!    linkage is used because it is robust to single noisy pairs (single
//!    linkage chains through them) and its join latencies never decrease, so
//!    the joins form a monotone ladder of latencies.
//! 2. **Gap cuts**: walking up that ladder, a jump of the join latency by at
//!    least [`MIN_GAP_RATIO`] (×1.5) *and* [`MIN_GAP_NS`] (2 ns, above timer
//!    resolution) marks a level: the groups formed just below the jump are
//!    domains. On the recorded matrices real gaps are ×1.7–×6.3 (SMT pair →
//!    core complex → socket), while noise inside a level stays below ×1.3,
//!    so the threshold has margin on both sides. Cuts of one ladder are
//!    nested by construction, coarsest first.
//! 3. **Pair levels**: a level whose domains all hold at most 2 CPUs is
//!    not reported among [`DomainTree::levels`] but kept in
//!    [`DomainTree::pairs`]. Those are SMT siblings (or core pairs sharing a
//!    cache): a "domain" of two is what `thread_siblings` already says, and
//!    reporting it would hide the level users ask about — the core complex
//!    (CCX/CCD) with its SMT siblings inside. So the finest reported level is
//!    the finest cut with a domain larger than 2 CPUs.
//!
//! 4. **Profile levels**: over the finest level, domains whose mean
//!    latencies to every *other* domain are alike are grouped (structural
//!    equivalence), clustered and cut with the same gap rule. This finds a
//!    socket whose own CCDs are as far from each other as from the other
//!    socket (the recorded EPYC 7R13), or a die whose two CCXs are as far
//!    apart as the other die (Threadripper 1950X). Such levels carry
//!    [`Basis::Profile`]; latency and profile levels are merged into one
//!    nested chain.
//!
//! The trivial partitions (every CPU alone, all CPUs together) are never
//! levels. A machine with no gap (one mesh, e.g. Graviton3) has no levels:
//! it is one latency domain.

use std::fmt::Write as _;

use pinsight_cpuset::CpuSet;
use serde::Serialize;

use crate::matrix::LatencyMatrix;

/// A jump in join latency by at least this factor separates two levels.
pub const MIN_GAP_RATIO: f64 = 1.5;
/// ... and by at least this many nanoseconds (timer resolution and noise
/// of the measuring tools are well below).
pub const MIN_GAP_NS: f64 = 2.0;

/// A set of CPUs with low latency among themselves.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Domain {
    /// The CPUs of the domain.
    pub cpus: CpuSet,
    /// Mean latency between two CPUs of the domain (`None` for a single CPU
    /// or when no pair inside was measured).
    pub mean_intra_ns: Option<f64>,
    /// Mean latency from a CPU of the domain to a CPU outside it (`None`
    /// when it is the only domain or nothing outside was measured).
    pub mean_inter_ns: Option<f64>,
}

/// One partition of the CPUs into domains.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Level {
    /// The domains, ordered by their lowest CPU.
    pub domains: Vec<Domain>,
    /// Highest join latency inside the domains (the ladder step below the
    /// gap).
    pub below_ns: f64,
    /// Lowest join latency between domains (the step above the gap).
    pub above_ns: f64,
    /// `above_ns / below_ns`: how clear the level is.
    pub gap_ratio: f64,
    /// How the level was found: `latency` (a jump in join latency; `below_ns`
    /// and `above_ns` are latencies) or `profile` (groups of finer domains
    /// whose latencies to everything else are alike; `below_ns` and
    /// `above_ns` are then mean absolute profile differences in ns).
    pub basis: Basis,
}

/// See [`Level::basis`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    Latency,
    Profile,
}

/// The nested latency domains of a matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DomainTree {
    /// All CPUs of the matrix.
    pub cpus: CpuSet,
    /// Levels from coarsest (fewest domains) to finest; each level's domains
    /// are unions of the next level's. Empty: one uniform domain.
    pub levels: Vec<Level>,
    /// The coarsest level whose domains hold at most 2 CPUs (SMT siblings,
    /// cache-sharing pairs), if the matrix shows one; see the module doc.
    pub pairs: Option<Level>,
    /// Median of the measured pair latencies, for context.
    pub median_pair_ns: Option<f64>,
}

impl DomainTree {
    /// The finest reported level (the core complexes on chiplet CPUs).
    pub fn finest(&self) -> Option<&Level> {
        self.levels.last()
    }

    /// Human-readable summary, one line per domain.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let median = self
            .median_pair_ns
            .map_or("unknown".to_string(), |v| format!("{v:.1} ns"));
        if self.levels.is_empty() {
            let _ = writeln!(
                out,
                "one latency domain: no jump of ×{MIN_GAP_RATIO} between groups of CPUs \
                 (median pair latency {median})"
            );
        }
        let n = self.levels.len();
        for (i, level) in self.levels.iter().enumerate() {
            let name = match (i, n) {
                (_, 1) => "level 1 of 1",
                (0, _) => "coarsest",
                (i, n) if i + 1 == n => "finest",
                _ => "middle",
            };
            let _ = match level.basis {
                Basis::Latency => writeln!(
                    out,
                    "{name}: {} domains, joined at ≤{:.1} ns inside, ≥{:.1} ns between (×{:.2})",
                    level.domains.len(),
                    level.below_ns,
                    level.above_ns,
                    level.gap_ratio
                ),
                Basis::Profile => writeln!(
                    out,
                    "{name}: {} domains of finer domains that see the rest alike \
                     (latency profiles differ ≤{:.1} ns inside, ≥{:.1} ns between, ×{:.2})",
                    level.domains.len(),
                    level.below_ns,
                    level.above_ns,
                    level.gap_ratio
                ),
            };
            write_domains(&mut out, &level.domains);
        }
        if let Some(p) = &self.pairs {
            let n_pairs = p.domains.iter().filter(|d| d.cpus.len() == 2).count();
            let _ =
                writeln!(
                out,
                "pairs: {n_pairs} CPU pairs at ≤{:.1} ns (SMT siblings or cache-sharing cores), \
                 ≥{:.1} ns to the others (×{:.2}){}",
                p.below_ns,
                p.above_ns,
                p.gap_ratio,
                if self.levels.is_empty() { "" } else { "; inside the domains above" }
            );
        }
        out
    }
}

fn write_domains(out: &mut String, domains: &[Domain]) {
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} ns"));
    let width = domains
        .iter()
        .map(|d| d.cpus.to_string().len())
        .max()
        .unwrap_or(0);
    for d in domains {
        let _ = writeln!(
            out,
            "  {:<width$}  {:>3} CPUs  inside {:>9}  to others {:>9}",
            d.cpus.to_string(),
            d.cpus.len(),
            fmt(d.mean_intra_ns),
            fmt(d.mean_inter_ns)
        );
    }
}

/// One join of the average-linkage ladder: clusters (by representative
/// index) `a` and `b` joined at mean latency `height`.
#[derive(Clone, Copy, Debug)]
struct Join {
    a: usize,
    b: usize,
    height: f64,
}

/// Average-linkage joins in ascending height, by the nearest-neighbour
/// chain algorithm: O(n²) time and memory, so 1000-CPU matrices are fine.
/// Unmeasured pairs are left out of the averages; groups with no measured
/// pair between them are `f64::INFINITY` apart.
// Index loops: the algorithm is about pairs of cluster indices.
#[allow(clippy::needless_range_loop)]
fn average_linkage(m: &LatencyMatrix) -> Vec<Join> {
    let n = m.len();
    // sum[i][j], cnt[i][j]: total and number of measured CPU pairs between
    // the clusters represented by i and j (the lowest index in it).
    let mut sum = vec![vec![0.0f64; n]; n];
    let mut cnt = vec![vec![0.0f64; n]; n];
    for i in 0..n {
        for j in 0..n {
            let v = m.get(i, j);
            if i != j && !v.is_nan() {
                sum[i][j] = v;
                cnt[i][j] = 1.0;
            }
        }
    }
    let dist = |sum: &Vec<Vec<f64>>, cnt: &Vec<Vec<f64>>, i: usize, j: usize| {
        if cnt[i][j] > 0.0 {
            sum[i][j] / cnt[i][j]
        } else {
            f64::INFINITY
        }
    };
    let mut active = vec![true; n];
    let mut joins = Vec::with_capacity(n.saturating_sub(1));
    let mut chain: Vec<usize> = Vec::new();
    let mut remaining = n;
    while remaining > 1 {
        if chain.is_empty() {
            chain.push(active.iter().position(|&a| a).expect("an active cluster"));
        }
        let top = *chain.last().unwrap();
        let prev = chain.len().checked_sub(2).map(|i| chain[i]);
        // Nearest active neighbour of `top`, preferring `prev` on ties so
        // the chain cannot cycle.
        let mut best = prev;
        let mut best_d = prev.map_or(f64::INFINITY, |p| dist(&sum, &cnt, top, p));
        for c in 0..n {
            if c != top && active[c] {
                let d = dist(&sum, &cnt, top, c);
                if d < best_d || best.is_none() {
                    best = Some(c);
                    best_d = d;
                }
            }
        }
        let best = best.expect("two active clusters");
        if Some(best) == prev {
            chain.pop();
            chain.pop();
            let (keep, gone) = (top.min(best), top.max(best));
            joins.push(Join {
                a: keep,
                b: gone,
                height: best_d,
            });
            for c in 0..n {
                if active[c] && c != keep && c != gone {
                    sum[keep][c] += sum[gone][c];
                    cnt[keep][c] += cnt[gone][c];
                    sum[c][keep] = sum[keep][c];
                    cnt[c][keep] = cnt[keep][c];
                }
            }
            active[gone] = false;
            remaining -= 1;
        } else {
            chain.push(best);
        }
    }
    // The chain finds joins out of order; average linkage is reducible, so
    // sorting by height gives the same ladder as the greedy algorithm.
    joins.sort_by(|x, y| x.height.total_cmp(&y.height));
    joins
}

/// Union-find over matrix indices.
struct Partition {
    parent: Vec<usize>,
}

impl Partition {
    fn new(n: usize) -> Self {
        Partition {
            parent: (0..n).collect(),
        }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
    /// Groups of matrix indices, ordered by their first index.
    fn groups(&mut self) -> Vec<Vec<usize>> {
        let n = self.parent.len();
        let mut by_root: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in 0..n {
            let r = self.find(i);
            by_root[r].push(i);
        }
        by_root.into_iter().filter(|g| !g.is_empty()).collect()
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, c) = values
        .filter(|v| !v.is_nan())
        .fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    (c > 0).then(|| s / c as f64)
}

fn make_level(m: &LatencyMatrix, groups: &[Vec<usize>], below: f64, above: f64) -> Level {
    let mut owner = vec![0usize; m.len()];
    for (g, members) in groups.iter().enumerate() {
        for &i in members {
            owner[i] = g;
        }
    }
    let mut domains: Vec<Domain> = groups
        .iter()
        .enumerate()
        .map(|(g, members)| {
            let intra = mean(members.iter().flat_map(|&i| {
                members
                    .iter()
                    .filter(move |&&j| j < i)
                    .map(move |&j| m.get(i, j))
            }));
            let owner = &owner;
            let inter = mean(members.iter().flat_map(|&i| {
                (0..m.len())
                    .filter(move |&j| owner[j] != g)
                    .map(move |j| m.get(i, j))
            }));
            Domain {
                cpus: members.iter().map(|&i| m.cpus[i]).collect(),
                mean_intra_ns: intra,
                mean_inter_ns: inter,
            }
        })
        .collect();
    domains.sort_by_key(|d| d.cpus.first());
    Level {
        domains,
        below_ns: below,
        above_ns: above,
        gap_ratio: above / below,
        basis: Basis::Latency,
    }
}

/// Whether a jump from `below` to `above` separates two levels.
fn is_gap(below: f64, above: f64) -> bool {
    below.is_finite()
        && above.is_finite()
        && above >= below * MIN_GAP_RATIO
        && above - below >= MIN_GAP_NS
}

/// Coarser partitions of `base` (groups of matrix indices) by structural
/// equivalence: two domains belong together when their mean latencies to
/// every *other* domain are alike, even if they are far from each other.
///
/// Why: on some machines the direct latency between two parts of one
/// socket is as high as across sockets (the recorded EPYC 7R13's second
/// socket: its CCDs are ~200 ns from each other and from socket 0), so no
/// latency jump shows the socket — but each of its CCDs sees socket 0 the
/// same way, and differently from how socket 0's CCDs see it. The profile
/// distance of domains a and b is the mean over the other domains c of
/// |L(a,c) − L(b,c)|; those distances are clustered and cut with the same
/// gap rule as latencies. Returns (groups, below, above), coarsest first.
fn profile_levels(m: &LatencyMatrix, base: &[Vec<usize>]) -> Vec<(Vec<Vec<usize>>, f64, f64)> {
    let g = base.len();
    // With 3 domains each comparison rests on a single other domain: too
    // little evidence (it split the recorded M1 Pro's clusters at random).
    if g < 4 {
        return Vec::new();
    }
    let between = |a: usize, b: usize| {
        mean(
            base[a]
                .iter()
                .flat_map(|&i| base[b].iter().map(move |&j| m.get(i, j))),
        )
    };
    let l: Vec<Vec<Option<f64>>> = (0..g)
        .map(|a| {
            (0..g)
                .map(|b| if a == b { None } else { between(a, b) })
                .collect()
        })
        .collect();
    let mut profile = LatencyMatrix::new((0..g).collect());
    for a in 0..g {
        for b in 0..a {
            let diffs =
                (0..g)
                    .filter(|&c| c != a && c != b)
                    .filter_map(|c| match (l[a][c], l[b][c]) {
                        (Some(x), Some(y)) => Some((x - y).abs()),
                        _ => None,
                    });
            if let Some(d) = mean(diffs) {
                profile.set(a, b, d);
            }
        }
    }
    let joins = average_linkage(&profile);
    let mut out = Vec::new();
    for k in 1..g.saturating_sub(1) {
        let (below, above) = (joins[k - 1].height, joins[k].height);
        if is_gap(below, above) {
            let mut p = Partition::new(g);
            for j in &joins[..k] {
                p.union(j.a, j.b);
            }
            let groups: Vec<Vec<usize>> = p
                .groups()
                .into_iter()
                .map(|gs| gs.iter().flat_map(|&d| base[d].iter().copied()).collect())
                .collect();
            out.push((groups, below, above));
        }
    }
    out.reverse();
    out
}

/// Whether every domain of `fine` lies inside one domain of `coarse`.
fn nested_in(fine: &Level, coarse: &Level) -> bool {
    fine.domains
        .iter()
        .all(|f| coarse.domains.iter().any(|c| f.cpus.is_subset(&c.cpus)))
}

/// Derives the nested latency domains of `m`; see the module doc for the
/// rule. Pure, O(n²): fine for thousands of CPUs.
pub fn domains(m: &LatencyMatrix) -> DomainTree {
    let n = m.len();
    let values: Vec<f64> = m.pair_values().collect();
    let median_pair_ns = pinsight_stats::median(&values);
    let joins = average_linkage(m);
    // cut after `k` joins (1 ≤ k ≤ n-2): the groups then are domains when
    // the next join jumps.
    let mut cuts: Vec<Level> = Vec::new();
    for k in 1..n.saturating_sub(1) {
        let (below, above) = (joins[k - 1].height, joins[k].height);
        if !below.is_finite() || !above.is_finite() {
            continue;
        }
        if above >= below * MIN_GAP_RATIO && above - below >= MIN_GAP_NS {
            let mut p = Partition::new(n);
            for j in &joins[..k] {
                p.union(j.a, j.b);
            }
            cuts.push(make_level(m, &p.groups(), below, above));
        }
    }
    // `cuts` runs finest → coarsest.
    let is_pairs = |l: &Level| l.domains.iter().all(|d| d.cpus.len() <= 2);
    let pairs = cuts.iter().rev().find(|l| is_pairs(l)).cloned();
    let mut levels: Vec<Level> = cuts.into_iter().rev().filter(|l| !is_pairs(l)).collect();
    // Coarser levels by latency profile, over the finest latency level.
    // (Not over the SMT pair level: on the recorded i9-12900K that splits a
    // lone P-core pair off on noise, so it is not trusted.)
    if let Some(finest) = levels.last() {
        let index: Vec<Vec<usize>> = finest
            .domains
            .iter()
            .map(|d| d.cpus.iter().filter_map(|c| m.index_of(c)).collect())
            .collect();
        let mut all = levels.clone();
        for (groups, below, above) in profile_levels(m, &index) {
            let mut level = make_level(m, &groups, below, above);
            level.basis = Basis::Profile;
            all.push(level);
        }
        // Keep one chain of nested, distinct levels, from the finest up.
        all.sort_by_key(|l| std::cmp::Reverse(l.domains.len()));
        let mut chain: Vec<Level> = Vec::new();
        for l in all {
            let fits = match chain.last() {
                None => true,
                Some(finer) => l.domains.len() < finer.domains.len() && nested_in(finer, &l),
            };
            if fits && l.domains.len() > 1 {
                chain.push(l);
            }
        }
        chain.reverse();
        levels = chain;
    }
    DomainTree {
        cpus: m.cpu_set(),
        levels,
        pairs,
        median_pair_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic machine: `groups` of `per` CPUs, `inner` ns inside a
    /// group, `outer` between groups.
    fn blocks(groups: usize, per: usize, inner: f64, outer: f64) -> LatencyMatrix {
        let n = groups * per;
        let mut m = LatencyMatrix::new((0..n).collect());
        for i in 0..n {
            for j in 0..i {
                m.set(i, j, if i / per == j / per { inner } else { outer });
            }
        }
        m
    }

    fn sets(level: &Level) -> Vec<String> {
        level.domains.iter().map(|d| d.cpus.to_string()).collect()
    }

    #[test]
    fn uniform_matrix_is_one_domain() {
        let t = domains(&blocks(1, 8, 40.0, 40.0));
        assert!(t.levels.is_empty() && t.pairs.is_none());
        assert!(
            t.describe().starts_with("one latency domain"),
            "{}",
            t.describe()
        );
    }

    #[test]
    fn two_blocks() {
        let t = domains(&blocks(2, 4, 20.0, 80.0));
        assert_eq!(t.levels.len(), 1);
        let l = &t.levels[0];
        assert_eq!(sets(l), ["0-3", "4-7"]);
        assert_eq!(l.domains[0].mean_intra_ns, Some(20.0));
        assert_eq!(l.domains[0].mean_inter_ns, Some(80.0));
        assert_eq!(l.gap_ratio, 4.0);
    }

    #[test]
    fn pairs_are_kept_apart() {
        let mut m = blocks(2, 4, 20.0, 80.0);
        for i in (0..8).step_by(2) {
            m.set(i, i + 1, 5.0);
        }
        let t = domains(&m);
        assert_eq!(t.levels.len(), 1);
        assert_eq!(sets(&t.levels[0]), ["0-3", "4-7"]);
        let p = t.pairs.as_ref().unwrap();
        assert_eq!(sets(p), ["0-1", "2-3", "4-5", "6-7"]);
        assert!(
            t.describe().contains("pairs: 4 CPU pairs"),
            "{}",
            t.describe()
        );
    }

    #[test]
    fn small_gaps_are_noise() {
        let t = domains(&blocks(2, 4, 40.0, 55.0));
        assert!(t.levels.is_empty());
    }

    #[test]
    fn unmeasured_pairs_are_tolerated() {
        let mut m = blocks(2, 3, 20.0, 90.0);
        m.set(0, 1, f64::NAN);
        m.set(0, 5, f64::NAN);
        let t = domains(&m);
        assert_eq!(sets(&t.levels[0]), ["0-2", "3-5"]);
        // A CPU measured against nobody: never a crash, never a fake value.
        let mut lone = LatencyMatrix::new(vec![0, 1, 2]);
        lone.set(0, 1, 10.0);
        let t = domains(&lone);
        assert!(t.levels.is_empty());
        assert!(domains(&LatencyMatrix::new(vec![])).levels.is_empty());
        assert!(domains(&LatencyMatrix::new(vec![7])).levels.is_empty());
    }
}
