//! Latency-aware choice of CPUs for a group of communicating threads (the
//! planner's `latency-group` policy).
//!
//! Two shapes of communication, two objectives:
//! - **all-to-all** ([`best_group`]): `k` CPUs with the lowest mean pairwise
//!   latency (threads sharing locks, a work queue, a barrier);
//! - **pipeline** ([`best_pipeline`]): `k` CPUs *in an order* with the
//!   lowest sum of latencies between neighbours (stage `i` hands data to
//!   stage `i+1`).
//!
//! Both are NP-hard in general (min-sum k-clustering, shortest k-path), so
//! the planner uses fast heuristics (multi-start greedy + local search, a
//! few ms for 192 CPUs) and this module also has branch-and-bound searches
//! ([`exhaustive_group`], [`exhaustive_pipeline`]) with node limits that
//! prove how far from optimal a heuristic answer can be. [`autopilot`] is
//! what people do without a matrix — the `k` lowest-numbered CPUs — for
//! comparison.
//!
//! Unmeasured (NaN) pairs cost as much as the slowest measured pair while
//! searching, so a group never looks good because nothing is known about
//! it; the reported latencies use measured pairs only.
//!
//! Only CPUs both in `allowed` and in the matrix are candidates. When there
//! are fewer than `k`, the group holds all of them: callers check
//! `cpus.len()`.

use serde::Serialize;

use crate::matrix::LatencyMatrix;

/// A chosen set of CPUs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// CPU ids. For a pipeline, in stage order; otherwise ascending.
    pub cpus: Vec<usize>,
    /// Mean latency over all pairs of the group (measured pairs only; 0 for
    /// fewer than 2 CPUs, NaN when no pair was measured).
    pub mean_pair_ns: f64,
    /// Sum of the latencies between consecutive CPUs of `cpus` (measured
    /// pairs only; 0 for fewer than 2 CPUs).
    pub path_ns: f64,
}

impl Group {
    /// Scores `cpus` (in this order) on `m`. CPUs missing from the matrix
    /// contribute no pairs.
    pub fn evaluate(m: &LatencyMatrix, cpus: Vec<usize>) -> Group {
        let val = |a: usize, b: usize| m.between(a, b);
        let (mut sum, mut count) = (0.0, 0usize);
        for (i, &a) in cpus.iter().enumerate() {
            for &b in &cpus[..i] {
                if let Some(v) = val(a, b) {
                    sum += v;
                    count += 1;
                }
            }
        }
        let mean_pair_ns = match (cpus.len(), count) {
            (0 | 1, _) => 0.0,
            (_, 0) => f64::NAN,
            _ => sum / count as f64,
        };
        let path_ns = cpus.windows(2).filter_map(|w| val(w[0], w[1])).sum();
        Group {
            cpus,
            mean_pair_ns,
            path_ns,
        }
    }
}

/// How much a branch-and-bound search may do.
#[derive(Clone, Copy, Debug)]
pub struct SearchLimits {
    /// Stop after visiting this many search nodes (the answer is then the
    /// best found, with a proven lower bound).
    pub max_nodes: u64,
    /// Skip branches that cannot beat the best found by more than this
    /// fraction (0.0 = exact). The proven bound accounts for it.
    pub tolerance: f64,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits {
            max_nodes: 20_000_000,
            tolerance: 0.0,
        }
    }
}

/// Result of a branch-and-bound search.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Exact {
    /// The best group found (at least as good as the heuristic's).
    pub group: Group,
    /// Proven: no group of this size has a lower objective (mean pair
    /// latency for groups, path latency for pipelines) than this.
    pub lower_bound_ns: f64,
    /// Whether the search ran to the end (else `max_nodes` stopped it).
    pub complete: bool,
    /// Search nodes visited.
    pub nodes: u64,
}

/// The candidate CPUs and a dense cost matrix between them.
struct Costs {
    /// Candidate CPU ids, ascending.
    cpus: Vec<usize>,
    n: usize,
    /// `d[a * n + b]`: latency, with unmeasured pairs at the slowest
    /// measured value.
    d: Vec<f64>,
}

impl Costs {
    fn new(m: &LatencyMatrix, allowed: &[usize]) -> Costs {
        let mut cpus: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|&c| m.index_of(c).is_some())
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        let idx: Vec<usize> = cpus.iter().map(|&c| m.index_of(c).unwrap()).collect();
        let n = cpus.len();
        let worst = m.pair_values().fold(0.0f64, f64::max);
        let mut d = vec![0.0; n * n];
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    let v = m.get(idx[a], idx[b]);
                    d[a * n + b] = if v.is_nan() { worst } else { v };
                }
            }
        }
        Costs { cpus, n, d }
    }

    #[inline]
    fn d(&self, a: usize, b: usize) -> f64 {
        self.d[a * self.n + b]
    }

    fn row(&self, a: usize) -> &[f64] {
        &self.d[a * self.n..(a + 1) * self.n]
    }

    fn ids(&self, members: &[usize]) -> Vec<usize> {
        members.iter().map(|&a| self.cpus[a]).collect()
    }
}

/// Improvements smaller than this (ns) are rounding, not progress.
const EPS: f64 = 1e-9;

/// The `k` lowest-numbered allowed CPUs of the matrix: placement without a
/// latency matrix, for comparison.
pub fn autopilot(m: &LatencyMatrix, allowed: &[usize], k: usize) -> Group {
    let c = Costs::new(m, allowed);
    Group::evaluate(m, c.cpus.into_iter().take(k).collect())
}

/// `k` CPUs with (near-)minimal mean pairwise latency. From every
/// candidate as a seed: grow greedily by the CPU closest to the group, then
/// swap members for outsiders while that lowers the total; keep the best.
/// O(n² k) per pass; a few ms for 192 CPUs.
pub fn best_group(m: &LatencyMatrix, allowed: &[usize], k: usize) -> Group {
    let c = Costs::new(m, allowed);
    let (members, _) = best_group_in(&c, k);
    let mut ids = c.ids(&members);
    ids.sort_unstable();
    Group::evaluate(m, ids)
}

/// Heuristic on candidate indices: (members, total pairwise cost).
fn best_group_in(c: &Costs, k: usize) -> (Vec<usize>, f64) {
    let mut seen: Vec<Vec<usize>> = Vec::new();
    best_of_seeds(c, k, |seed, k| group_from_seed(c, seed, k, &mut seen))
}

/// Multi-start search over the candidates: `k` clamped to their number,
/// then for every seed candidate `from_seed(seed, k)` (`None`: nothing
/// new from it), the cheapest kept (a later one only when cheaper by more
/// than EPS).
fn best_of_seeds(
    c: &Costs,
    k: usize,
    mut from_seed: impl FnMut(usize, usize) -> Option<(Vec<usize>, f64)>,
) -> (Vec<usize>, f64) {
    let n = c.n;
    let k = k.min(n);
    if k == 0 {
        return (Vec::new(), 0.0);
    }
    let mut best: (Vec<usize>, f64) = (Vec::new(), f64::INFINITY);
    for seed in 0..n {
        let Some((found, cost)) = from_seed(seed, k) else {
            continue;
        };
        if cost < best.1 - EPS {
            best = (found, cost);
        }
    }
    best
}

/// The group grown greedily from `seed` (nearest to the members first),
/// then improved by swaps: (members, total pairwise cost); `None` when
/// the greedy start is one `seen` already (same result).
fn group_from_seed(
    c: &Costs,
    seed: usize,
    k: usize,
    seen: &mut Vec<Vec<usize>>,
) -> Option<(Vec<usize>, f64)> {
    let n = c.n;
    let mut inside = vec![false; n];
    let mut members = vec![seed];
    inside[seed] = true;
    // to_group[v]: total latency from v to the current members.
    let mut to_group: Vec<f64> = c.row(seed).to_vec();
    while members.len() < k {
        let v = (0..n)
            .filter(|&v| !inside[v])
            .min_by(|&a, &b| to_group[a].total_cmp(&to_group[b]))
            .expect("a candidate left");
        add(c, &mut to_group, v, 1.0);
        inside[v] = true;
        members.push(v);
    }
    let mut sorted = members.clone();
    sorted.sort_unstable();
    if seen.contains(&sorted) {
        return None; // same greedy start as an earlier seed: same result.
    }
    seen.push(sorted);
    improve_group(c, &mut members, &mut inside, &mut to_group);
    let total: f64 = members.iter().map(|&x| to_group[x]).sum::<f64>() / 2.0;
    Some((members, total))
}

/// Best-improvement swaps until none helps: replacing x by y changes the
/// total by to_group[y] - d(y, x) - to_group[x].
fn improve_group(c: &Costs, members: &mut [usize], inside: &mut [bool], to_group: &mut [f64]) {
    loop {
        let mut best_swap = (-EPS, usize::MAX, usize::MAX);
        for (pos, &x) in members.iter().enumerate() {
            for y in 0..c.n {
                if !inside[y] {
                    let delta = to_group[y] - c.d(y, x) - to_group[x];
                    if delta < best_swap.0 {
                        best_swap = (delta, pos, y);
                    }
                }
            }
        }
        if best_swap.1 == usize::MAX {
            break;
        }
        let (_, pos, y) = best_swap;
        let x = members[pos];
        add(c, to_group, x, -1.0);
        add(c, to_group, y, 1.0);
        inside[x] = false;
        inside[y] = true;
        members[pos] = y;
    }
}

fn add(c: &Costs, to_group: &mut [f64], v: usize, sign: f64) {
    for (t, d) in to_group.iter_mut().zip(c.row(v)) {
        *t += sign * d;
    }
}

/// Branch and bound for the minimal mean pairwise latency of `k` allowed
/// CPUs, started from [`best_group`]'s answer. Members are chosen in a
/// fixed candidate order; a branch with members `P` and `r` more to pick is
/// cut when `cost(P) + Σ_{r smallest} (to_P(y) + ½·(r-1 smallest latencies
/// of y))` cannot beat the best found — each of the `r` new CPUs pays its
/// latencies to `P` and half of those to the other new ones, at least its
/// `r-1` smallest.
pub fn exhaustive_group(
    m: &LatencyMatrix,
    allowed: &[usize],
    k: usize,
    limits: SearchLimits,
) -> Exact {
    let c = Costs::new(m, allowed);
    let k = k.min(c.n);
    let (start, start_total) = best_group_in(&c, k);
    let pairs = (k * k.saturating_sub(1) / 2).max(1) as f64;
    if k <= 1 {
        let mut ids = c.ids(&start);
        ids.sort_unstable();
        return Exact {
            group: Group::evaluate(m, ids),
            lower_bound_ns: start_total / pairs,
            complete: true,
            nodes: 0,
        };
    }
    // Candidates ordered by how promising they are alone: the sum of their
    // k-1 smallest latencies. Good groups are found and bounded early.
    let n = c.n;
    let mut sorted_rows: Vec<Vec<f64>> = (0..n)
        .map(|a| {
            let mut r: Vec<f64> = (0..n).filter(|&b| b != a).map(|b| c.d(a, b)).collect();
            r.sort_by(f64::total_cmp);
            r
        })
        .collect();
    // prefix[a][j]: sum of the j smallest latencies of a.
    let prefix: Vec<Vec<f64>> = sorted_rows
        .iter_mut()
        .map(|r| {
            let mut p = vec![0.0];
            for v in r.iter() {
                p.push(p.last().unwrap() + v);
            }
            p
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| prefix[a][k - 1].total_cmp(&prefix[b][k - 1]));
    let mut s = GroupSearch {
        c: &c,
        k,
        order,
        prefix,
        inc: Incumbent::new(start.clone(), start_total, limits),
        to_p: vec![0.0; n],
        members: Vec::with_capacity(k),
        scratch: Vec::with_capacity(n),
    };
    s.dfs(0, 0.0);
    let mut ids = c.ids(&s.inc.best);
    ids.sort_unstable();
    Exact {
        group: Group::evaluate(m, ids),
        lower_bound_ns: s.inc.lower_bound() / pairs,
        complete: s.inc.complete(),
        nodes: s.inc.nodes,
    }
}

/// What both branch-and-bound searches keep: the best answer found, the
/// tolerance and node limit, and what the limit left unexplored.
struct Incumbent {
    best: Vec<usize>,
    cost: f64,
    tol: f64,
    max_nodes: u64,
    nodes: u64,
    /// Smallest bound among branches skipped for the node limit.
    unexplored_lb: f64,
}

impl Incumbent {
    /// Starting from the heuristic's `best` at `cost`.
    fn new(best: Vec<usize>, cost: f64, limits: SearchLimits) -> Incumbent {
        Incumbent {
            best,
            cost,
            tol: limits.tolerance,
            max_nodes: limits.max_nodes,
            nodes: 0,
            unexplored_lb: f64::INFINITY,
        }
    }

    /// Keeps `found` when it beats the best by more than EPS.
    fn offer(&mut self, found: &[usize], cost: f64) {
        if cost < self.cost - EPS {
            self.cost = cost;
            self.best = found.to_vec();
        }
    }

    /// Whether `x` cannot beat the best by more than the tolerance.
    fn cut(&self, x: f64) -> bool {
        x * (1.0 + self.tol) >= self.cost - EPS
    }

    /// Whether to explore a branch whose cost is at least `lb`: not when
    /// it is cut, nor past the node limit (its bound then kept).
    fn explore(&mut self, lb: f64) -> bool {
        if self.cut(lb) {
            return false;
        }
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            self.unexplored_lb = self.unexplored_lb.min(lb);
            return false;
        }
        true
    }

    /// Whether the search ran to its end (no branch left for the limit).
    fn complete(&self) -> bool {
        self.unexplored_lb.is_infinite()
    }

    /// A lower bound of the optimum: everything not explored was cut by a
    /// bound ≥ best/(1+tol), or is counted in unexplored_lb.
    fn lower_bound(&self) -> f64 {
        (self.cost / (1.0 + self.tol))
            .min(self.unexplored_lb)
            .min(self.cost)
    }
}

struct GroupSearch<'a> {
    c: &'a Costs,
    k: usize,
    order: Vec<usize>,
    prefix: Vec<Vec<f64>>,
    inc: Incumbent,
    /// to_p[y]: total latency from candidate y to the current members.
    to_p: Vec<f64>,
    members: Vec<usize>,
    scratch: Vec<f64>,
}

impl GroupSearch<'_> {
    /// Members chosen so far have total internal cost `cost`; the next may
    /// come from `order[from..]`.
    fn dfs(&mut self, from: usize, cost: f64) {
        let r = self.k - self.members.len();
        if r == 0 {
            self.inc.offer(&self.members, cost);
            return;
        }
        let lb = cost + self.bound(from, r);
        if !self.inc.explore(lb) {
            return;
        }
        for pos in from..self.order.len() {
            if self.order.len() - pos < r {
                break;
            }
            let y = self.order[pos];
            let added = self.to_p[y];
            add(self.c, &mut self.to_p, y, 1.0);
            self.members.push(y);
            self.dfs(pos + 1, cost + added);
            self.members.pop();
            add(self.c, &mut self.to_p, y, -1.0);
        }
    }

    fn bound(&mut self, from: usize, r: usize) -> f64 {
        let cand = &self.order[from..];
        if cand.len() < r {
            return f64::INFINITY;
        }
        self.scratch.clear();
        self.scratch.extend(
            cand.iter()
                .map(|&y| self.to_p[y] + 0.5 * self.prefix[y][r - 1]),
        );
        if r < self.scratch.len() {
            self.scratch.select_nth_unstable_by(r - 1, f64::total_cmp);
        }
        self.scratch[..r].iter().sum()
    }
}

/// `k` CPUs in an order with (near-)minimal sum of latencies between
/// consecutive CPUs. From every candidate as a seed: grow the path at
/// whichever end has the closer unused CPU, then improve by segment
/// reversal (2-opt), moving a CPU elsewhere in the path, and replacing a
/// CPU with an unused one, until nothing helps; keep the best.
pub fn best_pipeline(m: &LatencyMatrix, allowed: &[usize], k: usize) -> Group {
    let c = Costs::new(m, allowed);
    let (path, _) = best_pipeline_in(&c, k);
    Group::evaluate(m, c.ids(&path))
}

fn path_cost(c: &Costs, p: &[usize]) -> f64 {
    p.windows(2).map(|w| c.d(w[0], w[1])).sum()
}

fn best_pipeline_in(c: &Costs, k: usize) -> (Vec<usize>, f64) {
    best_of_seeds(c, k, |seed, k| Some(pipeline_from_seed(c, seed, k)))
}

/// The path grown greedily from `seed` (the nearest unused CPU joins
/// whichever end it is nearer), then improved by local search: (path,
/// cost).
fn pipeline_from_seed(c: &Costs, seed: usize, k: usize) -> (Vec<usize>, f64) {
    let n = c.n;
    let mut used = vec![false; n];
    used[seed] = true;
    let mut path = std::collections::VecDeque::from([seed]);
    while path.len() < k {
        let (front, back) = (*path.front().unwrap(), *path.back().unwrap());
        let mut pick = (f64::INFINITY, usize::MAX, false);
        for v in (0..n).filter(|&v| !used[v]) {
            if c.d(back, v) < pick.0 {
                pick = (c.d(back, v), v, false);
            }
            if c.d(front, v) < pick.0 {
                pick = (c.d(front, v), v, true);
            }
        }
        used[pick.1] = true;
        if pick.2 {
            path.push_front(pick.1);
        } else {
            path.push_back(pick.1);
        }
    }
    let mut path: Vec<usize> = path.into();
    improve_path(c, &mut path, &mut used);
    let cost = path_cost(c, &path);
    (path, cost)
}

/// Local search on an open path until no move lowers its cost.
fn improve_path(c: &Costs, path: &mut Vec<usize>, used: &mut [bool]) {
    let k = path.len();
    if k < 2 {
        return;
    }
    let mut cost = path_cost(c, path);
    loop {
        let mut improved = false;
        // Replace path[i] by an unused CPU.
        for i in 0..k {
            let x = path[i];
            let link = |v: usize| {
                (if i > 0 { c.d(path[i - 1], v) } else { 0.0 })
                    + (if i + 1 < k { c.d(v, path[i + 1]) } else { 0.0 })
            };
            let here = link(x);
            let mut pick = (here - EPS, usize::MAX);
            for v in (0..c.n).filter(|&v| !used[v]) {
                let l = link(v);
                if l < pick.0 {
                    pick = (l, v);
                }
            }
            if pick.1 != usize::MAX {
                used[x] = false;
                used[pick.1] = true;
                path[i] = pick.1;
                improved = true;
            }
        }
        // 2-opt: reverse path[i..=j]; only the edges at both ends change.
        for i in 0..k {
            for j in i + 1..k {
                // Latency from the CPU before i to `v`, and from `v` to the
                // CPU after j (0 past either end of the path).
                let left = |v: usize| if i > 0 { c.d(path[i - 1], v) } else { 0.0 };
                let right = |v: usize| if j + 1 < k { c.d(v, path[j + 1]) } else { 0.0 };
                let before = left(path[i]) + right(path[j]);
                let after = left(path[j]) + right(path[i]);
                if after < before - EPS {
                    path[i..=j].reverse();
                    improved = true;
                }
            }
        }
        // Move one CPU to another position.
        for i in 0..k {
            let x = path[i];
            let mut rest = path.clone();
            rest.remove(i);
            let base = path_cost(c, &rest);
            let mut pick = (cost - EPS, usize::MAX);
            for pos in 0..=rest.len() {
                let l = (if pos > 0 { c.d(rest[pos - 1], x) } else { 0.0 })
                    + (if pos < rest.len() {
                        c.d(x, rest[pos])
                    } else {
                        0.0
                    })
                    - (if pos > 0 && pos < rest.len() {
                        c.d(rest[pos - 1], rest[pos])
                    } else {
                        0.0
                    });
                if base + l < pick.0 {
                    pick = (base + l, pos);
                }
            }
            if pick.1 != usize::MAX {
                rest.insert(pick.1, x);
                *path = rest;
                improved = true;
            }
            cost = path_cost(c, path);
        }
        let new_cost = path_cost(c, path);
        if !improved || new_cost >= cost + EPS {
            break;
        }
        cost = new_cost;
    }
}

/// Branch and bound for the minimal path latency through `k` allowed CPUs,
/// started from [`best_pipeline`]'s answer. Paths grow from one end; a
/// branch ending at `e` with `r` CPUs to add is cut when
/// `cost + ½·(nn1(e) + Σ_{r smallest} (nn1(y) + nn2(y)) − max nn2)` cannot
/// beat the best found, `nn1`/`nn2` being a CPU's two smallest latencies:
/// each new edge is counted from both ends, the inner new CPUs have two
/// edges and the last one one.
pub fn exhaustive_pipeline(
    m: &LatencyMatrix,
    allowed: &[usize],
    k: usize,
    limits: SearchLimits,
) -> Exact {
    let c = Costs::new(m, allowed);
    let n = c.n;
    let k = k.min(n);
    let (start, start_cost) = best_pipeline_in(&c, k);
    if k <= 2 {
        // k = 2 is the closest pair, which the multi-start heuristic always
        // finds (every CPU is a seed and takes its nearest neighbour).
        return Exact {
            group: Group::evaluate(m, c.ids(&start)),
            lower_bound_ns: start_cost,
            complete: true,
            nodes: 0,
        };
    }
    let nn: Vec<(f64, f64)> = (0..n)
        .map(|a| {
            let mut r: Vec<f64> = (0..n).filter(|&b| b != a).map(|b| c.d(a, b)).collect();
            r.sort_by(f64::total_cmp);
            (r[0], r.get(1).copied().unwrap_or(r[0]))
        })
        .collect();
    let mut by_ends: Vec<(f64, usize)> =
        nn.iter().enumerate().map(|(y, p)| (p.0 + p.1, y)).collect();
    by_ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    // near[a]: the other candidates, nearest first.
    let near: Vec<Vec<usize>> = (0..n)
        .map(|a| {
            let mut r: Vec<usize> = (0..n).filter(|&b| b != a).collect();
            r.sort_by(|&x, &y| c.d(a, x).total_cmp(&c.d(a, y)));
            r
        })
        .collect();
    let mut s = PathSearch {
        c: &c,
        k,
        nn,
        near,
        by_ends,
        inc: Incumbent::new(start, start_cost, limits),
        used: vec![false; n],
        path: Vec::with_capacity(k),
        max_nn2: 0.0,
    };
    s.max_nn2 = s.nn.iter().map(|p| p.1).fold(0.0, f64::max);
    for first in 0..n {
        s.used[first] = true;
        s.path.push(first);
        s.dfs(0.0);
        s.path.pop();
        s.used[first] = false;
    }
    Exact {
        group: Group::evaluate(m, c.ids(&s.inc.best)),
        lower_bound_ns: s.inc.lower_bound(),
        complete: s.inc.complete(),
        nodes: s.inc.nodes,
    }
}

struct PathSearch<'a> {
    c: &'a Costs,
    k: usize,
    nn: Vec<(f64, f64)>,
    near: Vec<Vec<usize>>,
    /// (nn1 + nn2, CPU), ascending.
    by_ends: Vec<(f64, usize)>,
    inc: Incumbent,
    used: Vec<bool>,
    path: Vec<usize>,
    max_nn2: f64,
}

impl PathSearch<'_> {
    fn dfs(&mut self, cost: f64) {
        let r = self.k - self.path.len();
        let end = *self.path.last().unwrap();
        if r == 0 {
            self.inc.offer(&self.path, cost);
            return;
        }
        // The r smallest nn1 + nn2 of unused CPUs: walk the presorted list
        // past the (at most k) used ones.
        let ends: f64 = self
            .by_ends
            .iter()
            .filter(|&&(_, y)| !self.used[y])
            .take(r)
            .map(|&(e, _)| e)
            .sum();
        let lb = cost + 0.5 * (self.nn[end].0 + ends - self.max_nn2).max(0.0);
        if !self.inc.explore(lb) {
            return;
        }
        // Nearest next CPUs first: good paths early, tighter cuts.
        for pos in 0..self.c.n - 1 {
            let y = self.near[end][pos];
            if self.used[y] {
                continue;
            }
            let step = self.c.d(end, y);
            if self.inc.cut(cost + step) {
                break; // sorted: the rest step even further.
            }
            self.used[y] = true;
            self.path.push(y);
            self.dfs(cost + step);
            self.path.pop();
            self.used[y] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two 4-CPU clusters (10 ns inside, 50 between), CPU ids 0-7, plus a
    /// slow link inside the first cluster.
    fn machine() -> LatencyMatrix {
        let mut m = LatencyMatrix::new((0..8).collect());
        for i in 0..8 {
            for j in 0..i {
                m.set(i, j, if i / 4 == j / 4 { 10.0 } else { 50.0 });
            }
        }
        m.set(0, 1, 30.0);
        m
    }

    #[test]
    fn group_avoids_the_slow_pair_and_the_other_cluster() {
        let m = machine();
        let all: Vec<usize> = (0..8).collect();
        let g = best_group(&m, &all, 4);
        assert_eq!(g.cpus, vec![4, 5, 6, 7]);
        assert_eq!(g.mean_pair_ns, 10.0);
        let a = autopilot(&m, &all, 4);
        assert_eq!(a.cpus, vec![0, 1, 2, 3]);
        assert!((a.mean_pair_ns - 80.0 / 6.0).abs() < 1e-9);
        let e = exhaustive_group(&m, &all, 4, SearchLimits::default());
        assert!(e.complete);
        assert_eq!(e.group.mean_pair_ns, 10.0);
        assert!((e.lower_bound_ns - 10.0).abs() < 1e-9);
    }

    #[test]
    fn respects_allowed_and_small_requests() {
        let m = machine();
        let g = best_group(&m, &[0, 1, 2, 5, 99], 2);
        assert!(g.cpus == vec![0, 2] || g.cpus == vec![1, 2], "{:?}", g.cpus);
        assert_eq!(best_group(&m, &[3, 6], 5).cpus, vec![3, 6]);
        assert!(best_group(&m, &[], 3).cpus.is_empty());
        let one = best_group(&m, &[7], 1);
        assert_eq!(
            (one.cpus, one.mean_pair_ns, one.path_ns),
            (vec![7], 0.0, 0.0)
        );
        assert!(best_pipeline(&m, &[1, 2], 0).cpus.is_empty());
    }

    #[test]
    fn pipeline_orders_stages_along_cheap_links() {
        // A ring 0-1-2-3-4-5 of 10 ns neighbours, 40 ns otherwise.
        let mut m = LatencyMatrix::new((0..6).collect());
        for i in 0..6 {
            for j in 0..i {
                let ring = (i + 6 - j) % 6 == 1 || (j + 6 - i) % 6 == 1;
                m.set(i, j, if ring { 10.0 } else { 40.0 });
            }
        }
        let all: Vec<usize> = (0..6).collect();
        let p = best_pipeline(&m, &all, 6);
        assert_eq!(p.path_ns, 50.0, "{:?}", p.cpus);
        let e = exhaustive_pipeline(&m, &all, 4, SearchLimits::default());
        assert!(e.complete);
        assert_eq!(e.group.path_ns, 30.0);
        assert_eq!(best_pipeline(&m, &all, 4).path_ns, 30.0);
    }

    #[test]
    fn unmeasured_pairs_are_never_attractive() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2, 3]);
        m.set(1, 0, 20.0);
        m.set(2, 0, 25.0);
        m.set(2, 1, 25.0);
        m.set(3, 0, 30.0);
        m.set(3, 1, 30.0);
        // (2, 3) unmeasured.
        let g = best_group(&m, &[0, 1, 2, 3], 2);
        assert_eq!(g.cpus, vec![0, 1]);
        let g = Group::evaluate(&m, vec![2, 3]);
        assert!(g.mean_pair_ns.is_nan());
        assert_eq!(g.path_ns, 0.0);
    }
}
