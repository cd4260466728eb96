//! Which pairs are measured together.
//!
//! Measuring all `N(N-1)/2` pairs one after the other takes `N²/2` pair
//! times; disjoint pairs do not share a CPU, so they can run at the same
//! time. The round-robin tournament (circle method) splits the pairs into
//! `N-1` rounds of `N/2` disjoint pairs (`N` rounds of `(N-1)/2` when `N` is
//! odd: each CPU sits out one round, its "bye"), which brings the wall time
//! down to `N` pair times. Pairs running together do share the interconnect,
//! which is why `--sequential` exists to compare.
//!
//! Pairs are `(a, b)` matrix indices with `a > b`: the "ping" side (the one
//! that times) is the larger index, as in `core-to-core-latency`, so both
//! schedules measure each pair in the same orientation.

/// The rounds of the circle method for `n` participants: every unordered
/// pair exactly once, the pairs of one round disjoint. Empty for `n < 2`.
pub fn round_robin(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return Vec::new();
    }
    // With an odd count, a phantom participant `n` stands in for the bye.
    let m = n + (n & 1);
    let ring = m - 1; // participants 0..ring rotate; `ring` stays fixed.
    (0..ring)
        .map(|r| {
            let mut pairs = Vec::with_capacity(m / 2);
            pairs.push((ring, r));
            for k in 1..m / 2 {
                pairs.push(((r + k) % ring, (r + ring - k) % ring));
            }
            pairs
                .into_iter()
                .filter(|&(a, b)| a < n && b < n)
                .map(|(a, b)| (a.max(b), a.min(b)))
                .collect()
        })
        .collect()
}

/// One pair per round, in `core-to-core-latency`'s order (row by row of the
/// lower triangle).
pub fn sequential(n: usize) -> Vec<Vec<(usize, usize)>> {
    (0..n)
        .flat_map(|a| (0..a).map(move |b| vec![(a, b)]))
        .collect()
}

/// The order in which run `run` of `runs` visits `rounds` rounds: all of
/// them, starting `run * rounds / runs` rounds in and wrapping around. The
/// runs thus start at evenly spaced points of the schedule, so a slow drift
/// during a run falls on different pairs in each run instead of always on
/// the last rounds. Run 0 is the plain order.
pub fn rotated(rounds: usize, run: usize, runs: usize) -> Vec<usize> {
    let start = if runs == 0 || rounds == 0 {
        0
    } else {
        (run % runs) * rounds / runs
    };
    (0..rounds).map(|k| (start + k) % rounds.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check_covers_all_pairs_once(n: usize, rounds: &[Vec<(usize, usize)>]) {
        let mut seen = HashSet::new();
        for round in rounds {
            let mut used = HashSet::new();
            for &(a, b) in round {
                assert!(a > b && a < n, "n={n}: bad pair ({a},{b})");
                assert!(
                    used.insert(a) && used.insert(b),
                    "n={n}: round {round:?} is not disjoint"
                );
                assert!(seen.insert((a, b)), "n={n}: pair ({a},{b}) measured twice");
            }
        }
        assert_eq!(
            seen.len(),
            n * (n - 1) / 2,
            "n={n}: not every pair measured"
        );
    }

    #[test]
    fn round_robin_measures_every_pair_once_in_disjoint_rounds() {
        for n in 2..=17 {
            let rounds = round_robin(n);
            check_covers_all_pairs_once(n, &rounds);
            let (want_rounds, want_pairs) = if n % 2 == 0 {
                (n - 1, n / 2)
            } else {
                (n, (n - 1) / 2)
            };
            assert_eq!(rounds.len(), want_rounds, "n={n}");
            assert!(
                rounds.iter().all(|r| r.len() == want_pairs),
                "n={n}: {rounds:?}"
            );
        }
    }

    #[test]
    fn odd_counts_give_each_participant_exactly_one_bye() {
        for n in (3..=17).step_by(2) {
            let mut byes = vec![0; n];
            for round in round_robin(n) {
                let busy: HashSet<usize> = round.iter().flat_map(|&(a, b)| [a, b]).collect();
                for (p, count) in byes.iter_mut().enumerate() {
                    if !busy.contains(&p) {
                        *count += 1;
                    }
                }
            }
            assert!(byes.iter().all(|&b| b == 1), "n={n}: byes {byes:?}");
        }
    }

    #[test]
    fn repeated_runs_visit_every_round_once_from_spread_out_starts() {
        assert_eq!(rotated(4, 0, 1), vec![0, 1, 2, 3]);
        assert_eq!(rotated(4, 1, 2), vec![2, 3, 0, 1]);
        assert_eq!(rotated(7, 2, 3), vec![4, 5, 6, 0, 1, 2, 3]);
        for rounds in 1..=9 {
            for runs in 1..=5 {
                let firsts: HashSet<usize> =
                    (0..runs).map(|r| rotated(rounds, r, runs)[0]).collect();
                assert_eq!(
                    firsts.len(),
                    runs.min(rounds),
                    "{rounds} rounds, {runs} runs"
                );
                for run in 0..runs {
                    let mut o = rotated(rounds, run, runs);
                    o.sort();
                    assert_eq!(o, (0..rounds).collect::<Vec<_>>());
                }
            }
        }
        assert!(rotated(0, 0, 3).is_empty());
    }

    #[test]
    fn sequential_is_the_lower_triangle_row_by_row() {
        assert_eq!(
            sequential(3),
            vec![vec![(1, 0)], vec![(2, 0)], vec![(2, 1)]]
        );
        for n in 2..=17 {
            check_covers_all_pairs_once(n, &sequential(n));
        }
        assert!(round_robin(1).is_empty() && sequential(1).is_empty() && round_robin(0).is_empty());
    }
}
