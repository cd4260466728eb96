//! Scheduling policies as pure functions: per-thread state + the
//! observations of one period → which threads run on the big cores.
//!
//! One period of the live scheduler (`pinsight sched`) is: sample every
//! managed thread (CPU time on each kind since the last period, from
//! /proc; an SF estimate from [`crate::SfEstimator`] or given by the user)
//! → [`Scheduler::step`] with the usable CPUs ([`Capacity`]) → apply the
//! [`Assignment`] (one big CPU per big-core thread, the small kind's CPUs
//! shared by the rest). The simulator ([`crate::sim`]) drives the same
//! [`Scheduler`].
//!
//! Every policy but [`Policy::Os`] ranks threads by a *merit* (higher =
//! more deserving of a big core) and keeps, after each step, the invariant
//! `merit(s) − merit(b) ≤ threshold` for every small-core thread `s` and
//! big-core thread `b` (see [`decide`]):
//!
//! | policy | merit | threshold |
//! |---|---|---|
//! | AARR | −(big-core time) | `threshold` (s; default one period) |
//! | TO | current SF | `margin` (hysteresis) |
//! | ACFS | −progress | `threshold` (big-core-equivalent s; default one period) |

use serde::Serialize;
use std::collections::BTreeMap;

/// A managed thread (a TID live; an instance of a program in the simulator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ThreadId(pub u64);

/// A core kind as the policies see it: the fastest kind, or any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// The fastest kind's CPUs.
    Big,
    /// Every other kind's CPUs, shared by the threads not on a big core.
    Small,
}

/// A CPU the scheduler may place threads on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cpu {
    /// Its OS id.
    pub id: u32,
    /// Its current performance capability (HFI, 0–255) when known. A CPU
    /// whose performance is `Some(0)` is being vacated by the hardware and
    /// gets no thread.
    pub performance: Option<u32>,
}

impl Cpu {
    /// A CPU of unknown (hence usable) performance.
    pub fn new(id: u32) -> Cpu {
        Cpu {
            id,
            performance: None,
        }
    }
    /// Whether a thread may be placed on it (performance not 0).
    pub fn usable(&self) -> bool {
        self.performance != Some(0)
    }
}

/// The CPUs of each kind this period. It may change between periods (HFI
/// events, CPUs going offline).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capacity {
    /// The fastest kind's CPUs.
    pub big: Vec<Cpu>,
    /// The other kinds' CPUs.
    pub small: Vec<Cpu>,
}

impl Capacity {
    /// `big` big CPUs numbered from 0, then `small` small ones.
    pub fn uniform(big: usize, small: usize) -> Capacity {
        let b = (0..big).map(|i| Cpu::new(i as u32)).collect();
        let s = (big..big + small).map(|i| Cpu::new(i as u32)).collect();
        Capacity { big: b, small: s }
    }
}

/// The ids of the usable CPUs among `cpus`, in order.
fn usable_ids(cpus: &[Cpu]) -> Vec<u32> {
    cpus.iter().filter(|c| c.usable()).map(|c| c.id).collect()
}

/// A policy with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "policy", rename_all = "lowercase")]
pub enum Policy {
    /// Leave placement to the OS: the live scheduler pins nothing
    /// ([`Assignment::managed`] is false); the simulator models the OS as
    /// fair share with idle big cores taken first.
    Os,
    /// Asymmetry-aware round robin: big-core time shared equally; a
    /// big-core and a small-core thread swap when their big-core times
    /// differ by more than `threshold` seconds.
    Aarr {
        /// Seconds of big-core time (default: one period).
        threshold: f64,
    },
    /// Throughput-optimised: big cores to the highest current SFs; a swap
    /// must raise the big-core SF by more than `margin`.
    To {
        /// Hysteresis in SF units (default 0.1).
        margin: f64,
    },
    /// Fairness: a progress counter per thread, +1 per second on a big
    /// core and +1/SF per second on a small one; the most-advanced big-core
    /// thread swaps with the least-advanced small-core thread when they
    /// differ by more than `threshold`.
    Acfs {
        /// Big-core-equivalent seconds (default: one period).
        threshold: f64,
    },
}

/// The default TO hysteresis: 0.1 SF, a quarter of the gap between
/// Thread Director's two common classes (1.67, 1.97) — small enough that
/// a real difference swaps, large enough that estimate noise of a few
/// hundredths does not ping-pong threads every period.
pub const DEFAULT_TO_MARGIN: f64 = 0.1;

impl Policy {
    /// AARR with its default threshold, one period (seconds).
    pub fn aarr(period_s: f64) -> Policy {
        Policy::Aarr {
            threshold: period_s,
        }
    }
    /// TO with its default margin ([`DEFAULT_TO_MARGIN`]).
    pub fn to() -> Policy {
        Policy::To {
            margin: DEFAULT_TO_MARGIN,
        }
    }
    /// ACFS with its default threshold, one period.
    pub fn acfs(period_s: f64) -> Policy {
        Policy::Acfs {
            threshold: period_s,
        }
    }
    /// The short name users type: `os`, `aarr`, `to`, `acfs`.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Os => "os",
            Policy::Aarr { .. } => "aarr",
            Policy::To { .. } => "to",
            Policy::Acfs { .. } => "acfs",
        }
    }
    /// The policy named `name` with its defaults for `period_s`.
    pub fn by_name(name: &str, period_s: f64) -> Option<Policy> {
        match name {
            "os" => Some(Policy::Os),
            "aarr" => Some(Policy::aarr(period_s)),
            "to" => Some(Policy::to()),
            "acfs" => Some(Policy::acfs(period_s)),
            _ => None,
        }
    }
    /// The policies named in `names` (each trimmed), with their defaults
    /// for `period_s`: each once, in the order first named.
    pub fn list<'a>(
        names: impl IntoIterator<Item = &'a str>,
        period_s: f64,
    ) -> Result<Vec<Policy>, UnknownScheduler> {
        let mut policies = Vec::new();
        for name in names.into_iter().map(str::trim) {
            let p = Policy::by_name(name, period_s)
                .ok_or_else(|| UnknownScheduler(name.to_string()))?;
            if !policies.contains(&p) {
                policies.push(p);
            }
        }
        Ok(policies)
    }
}

/// A name that is no policy's ([`Policy::list`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a scheduler (allowed: os, aarr, to, acfs)")]
pub struct UnknownScheduler(pub String);

/// What the scheduler keeps per thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadState {
    /// The thread.
    pub id: ThreadId,
    /// Seconds run on a big core while managed (AARR's counter).
    pub big_time: f64,
    /// Seconds run on any core while managed.
    pub cpu_time: f64,
    /// Big-core-equivalent progress (ACFS's counter): +1 per second on a
    /// big core, +1/SF per second on a small one.
    pub progress: f64,
    /// The current SF estimate, if any.
    pub sf: Option<f64>,
    /// Where the last assignment put it (`None`: not placed yet).
    pub on: Option<Kind>,
    /// Its big CPU, when on a big core.
    pub cpu: Option<u32>,
}

/// One thread's observation for the period just ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Observation {
    /// The thread. A thread absent from a period's observations has
    /// exited and is forgotten; an unknown one is new.
    pub id: ThreadId,
    /// CPU seconds on big cores since the last period.
    pub big_time: f64,
    /// CPU seconds on small cores since the last period.
    pub small_time: f64,
    /// Its SF estimate now ([`crate::SfEstimator::estimate`], or given per
    /// program); `None` keeps the previous one.
    pub sf: Option<f64>,
}

/// Where the threads go for the next period.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Assignment {
    /// False for [`Policy::Os`] (and when no CPU is usable): pin nothing,
    /// restore the threads' own affinities.
    pub managed: bool,
    /// Threads on a big core, each with its own big CPU.
    pub big: Vec<(ThreadId, u32)>,
    /// Threads sharing [`Assignment::small_cpus`].
    pub small: Vec<ThreadId>,
    /// The CPUs the small-core threads share (the usable small CPUs; the
    /// big CPUs left over when no small CPU is usable).
    pub small_cpus: Vec<u32>,
}

impl Assignment {
    /// Whether `id` runs on a big core.
    pub fn on_big(&self, id: ThreadId) -> bool {
        self.big.iter().any(|&(t, _)| t == id)
    }
}

/// A policy's merit for a thread (higher deserves a big core more) and
/// its swap threshold; `None` for [`Policy::Os`].
fn merit_fn(policy: &Policy, fallback_sf: f64) -> Option<(impl Fn(&ThreadState) -> f64, f64)> {
    let (which, thr) = match *policy {
        Policy::Os => return None,
        Policy::Aarr { threshold } => (0, threshold),
        Policy::To { margin } => (1, margin),
        Policy::Acfs { threshold } => (2, threshold),
    };
    let f = move |t: &ThreadState| match which {
        0 => -t.big_time,
        1 => t.sf.unwrap_or(fallback_sf),
        _ => -t.progress,
    };
    Some((f, thr.max(0.0)))
}

/// The mean of the known SF estimates, 1 when none is known: what a
/// thread without an estimate is taken to have (TO's rank, ACFS's
/// progress on a small core).
pub fn fallback_sf(threads: &[ThreadState]) -> f64 {
    let known: Vec<f64> = threads.iter().filter_map(|t| t.sf).collect();
    if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    }
}

/// The pure decision: which of `threads` run on the `big_slots` big cores
/// next period (`None` for [`Policy::Os`], which places nothing).
///
/// 1. Threads already on a big core stay there; if there are more than
///    `big_slots` (capacity fell), the lowest-merit ones leave; if fewer,
///    the highest-merit others fill the free slots (every slot is used
///    while threads wait).
/// 2. Then the lowest-merit big-core thread and the highest-merit
///    small-core thread swap while `merit(small) − merit(big) > threshold`,
///    pairing the next ones, each thread moving at most once a step.
///
/// Afterwards `merit(s) − merit(b) ≤ threshold` for every small-core `s`
/// and big-core `b` (property-tested). Ties keep placement, then go by id.
pub fn decide(policy: &Policy, threads: &[ThreadState], big_slots: usize) -> Option<Vec<ThreadId>> {
    let (merit, thr) = merit_fn(policy, fallback_sf(threads))?;
    let slots = big_slots.min(threads.len());
    // Best first: higher merit, then currently big, then lower id.
    let better = |a: &&ThreadState, b: &&ThreadState| {
        merit(b)
            .total_cmp(&merit(a))
            .then_with(|| (b.on == Some(Kind::Big)).cmp(&(a.on == Some(Kind::Big))))
            .then_with(|| a.id.cmp(&b.id))
    };
    let mut big: Vec<&ThreadState> = threads.iter().filter(|t| t.on == Some(Kind::Big)).collect();
    let mut small: Vec<&ThreadState> = threads.iter().filter(|t| t.on != Some(Kind::Big)).collect();
    big.sort_by(better);
    small.sort_by(better);
    if big.len() > slots {
        small.extend(big.drain(slots..));
        small.sort_by(better);
    } else if big.len() < slots {
        let n = slots - big.len();
        big.extend(small.drain(..n));
        big.sort_by(better);
    }
    // Worst big first against best small first.
    big.reverse();
    let mut swaps = 0;
    while swaps < big.len() && swaps < small.len() && merit(small[swaps]) - merit(big[swaps]) > thr
    {
        swaps += 1;
    }
    let mut out: Vec<ThreadId> = big[swaps..].iter().map(|t| t.id).collect();
    out.extend(small[..swaps].iter().map(|t| t.id));
    out.sort();
    Some(out)
}

/// The scheduler's memory between periods: the per-thread states and the
/// policy. Pure: [`Scheduler::step`] is a function of its inputs and the
/// previous steps.
#[derive(Debug, Clone)]
pub struct Scheduler {
    policy: Policy,
    threads: BTreeMap<ThreadId, ThreadState>,
}

impl Scheduler {
    /// A scheduler with no thread yet.
    pub fn new(policy: Policy) -> Scheduler {
        Scheduler {
            policy,
            threads: BTreeMap::new(),
        }
    }

    /// The policy it runs.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The threads it manages, by id.
    pub fn threads(&self) -> impl Iterator<Item = &ThreadState> {
        self.threads.values()
    }

    /// Folds one period's observations into the states: adds the CPU times
    /// and the progress (+big + small/SF), takes the new SF estimates,
    /// forgets threads absent from `obs` (they exited) and admits new ones
    /// at the current minimum big-core time and progress (as CFS starts a
    /// new task at `min_vruntime`: a restarted program neither jumps the
    /// queue nor waits for its predecessor's debt).
    pub fn observe(&mut self, obs: &[Observation]) {
        let current: Vec<ThreadState> = self.threads.values().cloned().collect();
        let fallback = fallback_sf(&current);
        let min_big = current
            .iter()
            .map(|t| t.big_time)
            .reduce(f64::min)
            .unwrap_or(0.0);
        let min_progress = current
            .iter()
            .map(|t| t.progress)
            .reduce(f64::min)
            .unwrap_or(0.0);
        let mut next = BTreeMap::new();
        for o in obs {
            let mut t = self.threads.remove(&o.id).unwrap_or(ThreadState {
                id: o.id,
                big_time: min_big,
                cpu_time: 0.0,
                progress: min_progress,
                sf: None,
                on: None,
                cpu: None,
            });
            let big = finite_non_negative(o.big_time);
            let small = finite_non_negative(o.small_time);
            if let Some(sf) = o.sf.filter(|s| s.is_finite() && *s > 0.0) {
                t.sf = Some(sf);
            }
            t.big_time += big;
            t.cpu_time += big + small;
            t.progress += big + small / t.sf.unwrap_or(fallback);
            next.insert(o.id, t);
        }
        self.threads = next;
    }

    /// Decides the next period's placement on `capacity` and records it.
    pub fn assign(&mut self, capacity: &Capacity) -> Assignment {
        let big_cpus = usable_ids(&capacity.big);
        let small_cpus = usable_ids(&capacity.small);
        let states: Vec<ThreadState> = self.threads.values().cloned().collect();
        let chosen = if big_cpus.is_empty() && small_cpus.is_empty() {
            None
        } else {
            decide(&self.policy, &states, big_cpus.len())
        };
        let Some(chosen) = chosen else {
            for t in self.threads.values_mut() {
                t.on = None;
                t.cpu = None;
            }
            return Assignment {
                managed: false,
                small: self.threads.keys().copied().collect(),
                ..Assignment::default()
            };
        };
        // Big-core threads keep their CPU when it is still usable.
        let mut free: Vec<u32> = big_cpus.clone();
        let mut big = Vec::new();
        let mut need_cpu = Vec::new();
        for id in &chosen {
            let t = &self.threads[id];
            match t
                .cpu
                .filter(|c| t.on == Some(Kind::Big) && free.contains(c))
            {
                Some(c) => {
                    free.retain(|&f| f != c);
                    big.push((*id, c));
                }
                None => need_cpu.push(*id),
            }
        }
        for (id, c) in need_cpu.into_iter().zip(free.to_vec()) {
            free.retain(|&f| f != c);
            big.push((id, c));
        }
        big.sort();
        let small: Vec<ThreadId> = self
            .threads
            .keys()
            .filter(|id| chosen.binary_search(id).is_err())
            .copied()
            .collect();
        for t in self.threads.values_mut() {
            match big.iter().find(|(id, _)| *id == t.id) {
                Some(&(_, c)) => {
                    t.on = Some(Kind::Big);
                    t.cpu = Some(c);
                }
                None => {
                    t.on = Some(Kind::Small);
                    t.cpu = None;
                }
            }
        }
        let small_cpus = if small_cpus.is_empty() {
            free
        } else {
            small_cpus
        };
        Assignment {
            managed: true,
            big,
            small,
            small_cpus,
        }
    }

    /// One period: [`Scheduler::observe`] then [`Scheduler::assign`].
    pub fn step(&mut self, obs: &[Observation], capacity: &Capacity) -> Assignment {
        self.observe(obs);
        self.assign(capacity)
    }
}

fn finite_non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 {
        x
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_name_each_policy_once_in_order() {
        let got = Policy::list("to, os,to,acfs".split(','), 0.5).unwrap();
        assert_eq!(got, [Policy::to(), Policy::Os, Policy::acfs(0.5)]);
        let e = Policy::list(["os", " fifo "], 0.2).unwrap_err();
        assert_eq!(e, UnknownScheduler("fifo".into()));
        assert_eq!(
            e.to_string(),
            "'fifo' is not a scheduler (allowed: os, aarr, to, acfs)"
        );
    }

    fn obs(id: u64, big: f64, small: f64, sf: Option<f64>) -> Observation {
        Observation {
            id: ThreadId(id),
            big_time: big,
            small_time: small,
            sf,
        }
    }

    #[test]
    fn os_pins_nothing() {
        let mut s = Scheduler::new(Policy::Os);
        let a = s.step(&[obs(1, 0.0, 0.0, None)], &Capacity::uniform(1, 1));
        assert!(!a.managed);
        assert!(a.big.is_empty());
    }

    #[test]
    fn aarr_swaps_after_threshold() {
        let cap = Capacity::uniform(1, 1);
        let mut s = Scheduler::new(Policy::aarr(0.2));
        let a = s.step(&[obs(1, 0.0, 0.0, None), obs(2, 0.0, 0.0, None)], &cap);
        assert_eq!(a.big, vec![(ThreadId(1), 0)]);
        // One period: difference 0.2, not above the threshold.
        let a = s.step(&[obs(1, 0.2, 0.0, None), obs(2, 0.0, 0.2, None)], &cap);
        assert!(a.on_big(ThreadId(1)));
        let a = s.step(&[obs(1, 0.2, 0.0, None), obs(2, 0.0, 0.2, None)], &cap);
        assert!(a.on_big(ThreadId(2)));
        assert_eq!(a.small, vec![ThreadId(1)]);
        assert_eq!(a.small_cpus, vec![1]);
    }

    #[test]
    fn to_keeps_high_sf_and_respects_margin() {
        let cap = Capacity::uniform(1, 1);
        let mut s = Scheduler::new(Policy::To { margin: 0.1 });
        let a = s.step(
            &[obs(1, 0.0, 0.0, Some(1.5)), obs(2, 0.0, 0.0, Some(2.0))],
            &cap,
        );
        assert!(a.on_big(ThreadId(2)));
        // 2.05 vs 2.0: inside the margin, no swap.
        let a = s.step(
            &[obs(1, 0.0, 0.2, Some(2.05)), obs(2, 0.2, 0.0, Some(2.0))],
            &cap,
        );
        assert!(a.on_big(ThreadId(2)));
        let a = s.step(
            &[obs(1, 0.0, 0.2, Some(2.2)), obs(2, 0.2, 0.0, Some(2.0))],
            &cap,
        );
        assert!(a.on_big(ThreadId(1)));
    }

    #[test]
    fn acfs_counts_small_time_at_one_over_sf() {
        let cap = Capacity::uniform(1, 1);
        let mut s = Scheduler::new(Policy::acfs(0.2));
        s.step(
            &[obs(1, 0.0, 0.0, Some(2.0)), obs(2, 0.0, 0.0, Some(2.0))],
            &cap,
        );
        s.observe(&[obs(1, 1.0, 0.0, None), obs(2, 0.0, 1.0, None)]);
        let p: Vec<f64> = s.threads().map(|t| t.progress).collect();
        assert_eq!(p, vec![1.0, 0.5]);
        let a = s.assign(&cap);
        assert!(a.on_big(ThreadId(2)));
    }

    #[test]
    fn zero_performance_cpu_gets_no_thread_and_capacity_changes() {
        let mut cap = Capacity::uniform(2, 2);
        let mut s = Scheduler::new(Policy::aarr(0.2));
        let o: Vec<Observation> = (1..=4).map(|i| obs(i, 0.0, 0.0, None)).collect();
        let a = s.step(&o, &cap);
        assert_eq!(a.big.len(), 2);
        cap.big[0].performance = Some(0);
        let a = s.assign(&cap);
        assert_eq!(a.big.len(), 1);
        assert!(a.big.iter().all(|&(_, c)| c == 1));
        // Thread 1 kept CPU 1? Whoever is on CPU 1 stayed.
        cap.big[0].performance = Some(200);
        let a = s.assign(&cap);
        assert_eq!(a.big.len(), 2);
        // All small CPUs at 0: small threads share the free big CPUs.
        cap.small[0].performance = Some(0);
        cap.small[1].performance = Some(0);
        let o: Vec<Observation> = (1..=3).map(|i| obs(i, 0.0, 0.0, None)).collect();
        let a = s.step(&o, &cap);
        assert_eq!(a.big.len(), 2);
        assert!(a.small_cpus.is_empty());
    }

    #[test]
    fn threads_come_and_go() {
        let cap = Capacity::uniform(1, 1);
        let mut s = Scheduler::new(Policy::aarr(0.2));
        s.step(&[obs(1, 0.0, 0.0, None)], &cap);
        s.step(&[obs(1, 5.0, 0.0, None)], &cap);
        // Thread 2 arrives at the minimum big time (5.0), not 0.
        let a = s.step(&[obs(1, 0.1, 0.0, None), obs(2, 0.0, 0.0, None)], &cap);
        let t2 = s.threads().find(|t| t.id == ThreadId(2)).unwrap();
        assert_eq!(t2.big_time, 5.0);
        assert!(a.on_big(ThreadId(1)));
        // Thread 1 exits: thread 2 gets the big core.
        let a = s.step(&[obs(2, 0.0, 0.2, None)], &cap);
        assert_eq!(a.big, vec![(ThreadId(2), 0)]);
        assert_eq!(s.threads().count(), 1);
    }

    #[test]
    fn fewer_threads_than_big_cores_all_big() {
        let mut s = Scheduler::new(Policy::to());
        let a = s.step(
            &[obs(1, 0.0, 0.0, None), obs(2, 0.0, 0.0, None)],
            &Capacity::uniform(4, 4),
        );
        assert_eq!(a.big.len(), 2);
        assert!(a.small.is_empty());
    }
}
