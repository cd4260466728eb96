//! Settling contradictory sharing masks by majority.
//!
//! Packages, dies, clusters, cores and every cache level/type must
//! partition the CPUs they cover. The kernel describes each of them once per
//! CPU (`cpuN/topology/core_siblings`, `cpuN/cache/indexM/shared_cpu_map`,
//! and their `_list` twins), so a hostile or buggy tree can contradict
//! itself: one CPU's mask names another package, or disagrees with its own
//! `_list`, or one L3 map overlaps another L3.
//!
//! Discovery reads one mask per group while the masks agree (that keeps big
//! machines fast). When a mask contradicts what is already placed (it omits
//! its own CPU, or overlaps a group already built), the caller gathers the
//! *zone* of the contradiction — every CPU the masks involved name, closed
//! transitively — reads every mask and list of the zone, and hands the votes
//! here. Each file counts one vote for the set it names, so a mask that
//! disagrees with its own list splits its CPU's two votes, and the set most
//! files agree on wins (ties: the larger set, then the lower first CPU).
//! Hand-written: no crate settles set partitions by vote, and the rule is a
//! dozen lines.

use pinsight_cpuset::CpuSet;
use std::collections::VecDeque;

/// One file's say: `file` (an OS path) puts `cpu` with the CPUs of `set`.
pub(super) struct Vote {
    pub cpu: usize,
    pub file: String,
    pub set: CpuSet,
}

/// The votes of every CPU reachable from `start`: each CPU read adds the
/// CPUs its files name, and `mates` the CPUs already grouped with it.
/// Returns the zone and its votes.
pub(super) fn gather(
    start: &CpuSet,
    online: &CpuSet,
    mut read: impl FnMut(usize) -> Vec<Vote>,
    mates: impl Fn(usize) -> CpuSet,
) -> (CpuSet, Vec<Vote>) {
    let mut zone = CpuSet::new();
    let mut votes = Vec::new();
    let mut queue: VecDeque<usize> = start.iter().collect();
    while let Some(x) = queue.pop_front() {
        if zone.contains(x) || !online.contains(x) {
            continue;
        }
        zone.insert(x);
        let vs = read(x);
        for v in &vs {
            queue.extend(v.set.iter().filter(|&y| !zone.contains(y)));
        }
        queue.extend(mates(x).iter().filter(|&y| !zone.contains(y)));
        votes.extend(vs);
    }
    (zone, votes)
}

/// Splits `zone` into groups by majority of `votes` (see the module doc).
/// Every CPU of the zone ends in exactly one group; a CPU no surviving vote
/// places is a group of its own.
pub(super) fn resolve(zone: &CpuSet, votes: &[Vote]) -> Vec<CpuSet> {
    // Distinct sets (limited to the zone) and their vote counts.
    let mut tally: Vec<(CpuSet, usize)> = Vec::new();
    for v in votes {
        let s = v.set.intersection(zone);
        if s.is_empty() {
            continue;
        }
        match tally.iter_mut().find(|(t, _)| *t == s) {
            Some((_, n)) => *n += 1,
            None => tally.push((s, 1)),
        }
    }
    tally.sort_by(|(a, na), (b, nb)| {
        nb.cmp(na)
            .then(b.len().cmp(&a.len()))
            .then(a.first().cmp(&b.first()))
    });
    let mut groups: Vec<CpuSet> = Vec::new();
    let mut assigned = CpuSet::new();
    // First the winners that do not collide with a stronger set...
    for (s, _) in &tally {
        if !s.intersects(&assigned) {
            assigned.union_with(s);
            groups.push(s.clone());
        }
    }
    // ...then what is left of the others, strongest first.
    for (s, _) in &tally {
        let rest = s.difference(&assigned);
        if !rest.is_empty() {
            assigned.union_with(&rest);
            groups.push(rest);
        }
    }
    for x in zone.difference(&assigned).iter() {
        groups.push(CpuSet::single(x));
    }
    groups.sort_by_key(|g| g.first());
    groups
}

/// The votes that disagree with the group their CPU ended in, as
/// (file, what it said, the group used).
pub(super) fn dissent<'a>(
    groups: &'a [CpuSet],
    votes: &'a [Vote],
    zone: &'a CpuSet,
) -> impl Iterator<Item = (&'a str, CpuSet, &'a CpuSet)> + 'a {
    votes.iter().filter_map(move |v| {
        let g = groups.iter().find(|g| g.contains(v.cpu))?;
        let said = v.set.intersection(zone);
        (said != *g).then_some((v.file.as_str(), said, g))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn vote(cpu: usize, s: &str) -> Vote {
        Vote {
            cpu,
            file: format!("cpu{cpu}"),
            set: set(s),
        }
    }

    #[test]
    fn the_majority_wins_and_the_partition_covers_the_zone() {
        let zone = set("0-7");
        let votes = vec![
            vote(0, "0-3"),
            vote(1, "0-3"),
            vote(2, "0-3"),
            vote(3, "0-3"),
            vote(4, "0-7"),
            vote(5, "4-7"),
            vote(6, "4-7"),
            vote(7, "4-7"),
        ];
        let g = resolve(&zone, &votes);
        assert_eq!(g, vec![set("0-3"), set("4-7")]);
        let d: Vec<_> = dissent(&g, &votes, &zone).collect();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0, "cpu4");
    }

    #[test]
    fn a_mask_against_its_own_list_loses_to_the_agreeing_one() {
        let zone = set("0-3");
        let votes = vec![
            vote(0, "2-3"), // mask
            vote(0, "0-1"), // list
            vote(1, "0-1"),
            vote(1, "0-1"),
            vote(2, "2-3"),
            vote(3, "2-3"),
        ];
        assert_eq!(resolve(&zone, &votes), vec![set("0-1"), set("2-3")]);
    }

    #[test]
    fn unplaced_cpus_stand_alone() {
        let zone = set("0-2");
        let votes = vec![vote(1, "1-2")];
        assert_eq!(resolve(&zone, &votes), vec![set("0"), set("1-2")]);
    }
}
