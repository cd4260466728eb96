//! Three ways to hand out chunks of work, to show why the choice matters on
//! CPUs whose cores run at different speeds.
//!
//! - `static`: worker *t* of *T* gets the contiguous chunks
//!   [t·C/T, (t+1)·C/T). No coordination at all, but the run ends when the
//!   slowest core finishes its equal share: on a hybrid CPU the P-cores sit idle.
//! - `dynamic`: one shared atomic counter; each worker takes the next chunk.
//!   Balances perfectly, at the price of one contended cache line.
//! - `steal`: work stealing over ranges (the OpenCilk behaviour measured by
//!   Adnan, Array 19 (2023), §3.2). Each worker owns a range, initially the static split, and
//!   takes chunks from its front; an idle worker steals the back half of the
//!   largest remaining range. Stealing half (Hendler & Shavit) means
//!   O(log C) steals per imbalance instead of one per chunk.
//!
//! The steal deques are lock-free: a range is one `AtomicU64` packing
//! (begin, end) as two u32s, and both the owner (begin += 1) and thieves
//! (end −= half) change it by compare-and-swap, so they can never both get a
//! chunk. ABA cannot happen: chunks only ever move forward out of a range, so
//! a slot never holds the same (begin, end) twice while non-empty.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How chunks of work are handed to workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    Static,
    Dynamic,
    Steal,
}

impl Schedule {
    pub const ALL: [Schedule; 3] = [Schedule::Static, Schedule::Dynamic, Schedule::Steal];

    pub fn name(self) -> &'static str {
        match self {
            Schedule::Static => "static",
            Schedule::Dynamic => "dynamic",
            Schedule::Steal => "steal",
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Schedule {
    type Err = crate::ScheduleError;
    fn from_str(s: &str) -> Result<Self, crate::ScheduleError> {
        Schedule::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| crate::ScheduleError(s.to_string()))
    }
}

/// Largest number of chunks a dispenser handles (ranges pack into u32s).
pub(crate) const MAX_CHUNKS: usize = u32::MAX as usize;

/// Hands out chunk indices 0..chunks, each exactly once, to `threads` workers.
pub(crate) enum Dispenser {
    Static { chunks: usize, threads: usize },
    Dynamic { chunks: usize, next: AtomicUsize },
    Steal { slots: Vec<Slot> },
}

/// One worker's range, on its own cache line so owners do not false-share.
#[repr(align(128))]
pub(crate) struct Slot(AtomicU64);

fn pack(begin: usize, end: usize) -> u64 {
    ((begin as u64) << 32) | end as u64
}

fn unpack(v: u64) -> (usize, usize) {
    ((v >> 32) as usize, (v & 0xffff_ffff) as usize)
}

/// Worker `t`'s share of a static split of `chunks` over `threads`.
pub(crate) fn static_range(chunks: usize, threads: usize, t: usize) -> (usize, usize) {
    (t * chunks / threads, (t + 1) * chunks / threads)
}

impl Dispenser {
    pub(crate) fn new(schedule: Schedule, chunks: usize, threads: usize) -> Dispenser {
        assert!(chunks <= MAX_CHUNKS && threads >= 1);
        match schedule {
            Schedule::Static => Dispenser::Static { chunks, threads },
            Schedule::Dynamic => Dispenser::Dynamic {
                chunks,
                next: AtomicUsize::new(0),
            },
            Schedule::Steal => Dispenser::Steal {
                slots: (0..threads)
                    .map(|t| {
                        let (b, e) = static_range(chunks, threads, t);
                        Slot(AtomicU64::new(pack(b, e)))
                    })
                    .collect(),
            },
        }
    }

    /// The chunk source for worker `t`.
    pub(crate) fn worker(&self, t: usize) -> Chunks<'_> {
        let (next, end) = match self {
            Dispenser::Static { chunks, threads } => static_range(*chunks, *threads, t),
            _ => (0, 0),
        };
        Chunks {
            dispenser: self,
            me: t,
            next,
            end,
            steals: 0,
        }
    }
}

/// A worker's iterator over the chunks it gets.
pub(crate) struct Chunks<'a> {
    dispenser: &'a Dispenser,
    me: usize,
    /// Static only: the rest of this worker's share.
    next: usize,
    end: usize,
    /// Successful steals so far.
    pub steals: u64,
}

impl Iterator for Chunks<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self.dispenser {
            Dispenser::Static { .. } => {
                if self.next < self.end {
                    self.next += 1;
                    Some(self.next - 1)
                } else {
                    None
                }
            }
            Dispenser::Dynamic { chunks, next } => {
                // Relaxed is enough: the counter only partitions indices; results
                // are published by the join at the end of the run.
                let c = next.fetch_add(1, Ordering::Relaxed);
                (c < *chunks).then_some(c)
            }
            Dispenser::Steal { slots } => self.next_stealing(slots),
        }
    }
}

impl Chunks<'_> {
    fn next_stealing(&mut self, slots: &[Slot]) -> Option<usize> {
        let mine = &slots[self.me].0;
        loop {
            let v = mine.load(Ordering::Acquire);
            let (b, e) = unpack(v);
            if b < e {
                if mine
                    .compare_exchange_weak(v, pack(b + 1, e), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Some(b);
                }
                continue;
            }
            // Out of work: steal the back half of the fullest range.
            let (sb, se) = steal(slots, self.me)?;
            self.steals += 1;
            // Our slot is empty, and thieves never CAS from an empty value, so
            // this cannot race; the CAS documents (and checks) that.
            let installed =
                mine.compare_exchange(v, pack(sb + 1, se), Ordering::AcqRel, Ordering::Acquire);
            debug_assert!(installed.is_ok(), "only the owner writes an empty slot");
            return Some(sb);
        }
    }
}

/// Takes the back half (rounded up) of the fullest other range; `None` when
/// every range is empty.
fn steal(slots: &[Slot], me: usize) -> Option<(usize, usize)> {
    loop {
        let victim = slots
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != me)
            .map(|(i, s)| {
                let v = s.0.load(Ordering::Acquire);
                let (b, e) = unpack(v);
                (e.saturating_sub(b), i, v)
            })
            .filter(|&(left, _, _)| left > 0)
            .max_by_key(|&(left, i, _)| (left, std::cmp::Reverse(i)));
        let (left, i, v) = victim?;
        let (b, e) = unpack(v);
        let take = left.div_ceil(2);
        let ok =
            slots[i]
                .0
                .compare_exchange(v, pack(b, e - take), Ordering::AcqRel, Ordering::Acquire);
        if ok.is_ok() {
            return Some((e - take, e));
        }
        // The victim or another thief moved first: look again.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU8;

    /// Every chunk is handed out exactly once, under real contention.
    fn check_exactly_once(schedule: Schedule, chunks: usize, threads: usize) -> Vec<u64> {
        let d = Dispenser::new(schedule, chunks, threads);
        let seen: Vec<AtomicU8> = (0..chunks).map(|_| AtomicU8::new(0)).collect();
        let steals: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let (d, seen) = (&d, &seen);
                    s.spawn(move || {
                        let mut it = d.worker(t);
                        for c in it.by_ref() {
                            seen[c].fetch_add(1, Ordering::Relaxed);
                            if t == 0 {
                                std::hint::black_box((0..200).sum::<u64>()); // a slow worker
                            }
                        }
                        it.steals
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            seen.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "{schedule}: a chunk was lost or duplicated"
        );
        steals
    }

    #[test]
    fn every_schedule_hands_out_each_chunk_once() {
        for s in Schedule::ALL {
            for (chunks, threads) in [(0, 1), (1, 4), (7, 3), (1000, 4), (5000, 8)] {
                check_exactly_once(s, chunks, threads);
            }
        }
    }

    #[test]
    fn thieves_steal_when_a_worker_is_slow() {
        let steals = check_exactly_once(Schedule::Steal, 20_000, 4);
        assert!(steals.iter().sum::<u64>() > 0);
    }

    #[test]
    fn static_split_is_equal_and_contiguous() {
        assert_eq!(static_range(10, 3, 0), (0, 3));
        assert_eq!(static_range(10, 3, 1), (3, 6));
        assert_eq!(static_range(10, 3, 2), (6, 10));
        assert_eq!("steal".parse::<Schedule>(), Ok(Schedule::Steal));
        let e = "guided".parse::<Schedule>().unwrap_err();
        assert_eq!(e, crate::ScheduleError("guided".into()));
        assert!(e.to_string().contains("static, dynamic, steal"));
    }
}
