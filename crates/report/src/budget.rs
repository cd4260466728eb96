//! Sharing `pinsight report --budget` between the measurements, and saying
//! plainly what does not fit. Pure: numbers in, a plan and sentences out.
//!
//! The rules, in order:
//! 1. A reserve (5% of the budget, 30 ms to 1 s) is kept for start-up,
//!    analysis and writing the files; what was already spent is subtracted.
//! 2. Each wanted measurement has a floor below which its figures mean
//!    nothing — speed: [`MIN_SPEED_PER_CPU`] per CPU; latency: [`MIN_LATENCY`]
//!    and [`MIN_LATENCY_ROUND`] per round of disjoint pairs — and a ceiling
//!    beyond which more time buys little — speed: [`MAX_SPEED_PER_CPU`] per
//!    CPU (the `speed` default); latency: [`MAX_LATENCY_ROUND`] per round
//!    (the `latency` default cap per pair).
//! 3. Speed takes [`SPEED_SHARE`] of the measuring time (its floor if that is
//!    less, its ceiling if more), latency the rest up to its ceiling; time
//!    latency cannot use goes back to speed.
//! 4. If both floors do not fit, latency is kept (it is what placement of
//!    communicating threads rests on, and is cheaper on small machines) and
//!    speed is skipped; a part that does not fit alone is skipped too. Every
//!    skip ([`Skip`]) carries how much it needed and the least budget that
//!    would do; the command line words it (and names its own flags).

use std::time::Duration;

/// Speed below this per CPU is not worth reporting: 20 ms each for `int`
/// and `fp`, 60 ms for `mem` (whose slot starts with a walk of the whole
/// chase buffer) — split evenly, 33 ms each.
pub const MIN_SPEED_PER_CPU: Duration = Duration::from_millis(100);
/// `pinsight speed`'s default: more adds little precision.
pub const MAX_SPEED_PER_CPU: Duration = Duration::from_secs(1);
/// Share of the measuring time speed gets when latency is measured too.
pub const SPEED_SHARE: f64 = 0.4;
/// Least time for a latency measurement at all.
pub const MIN_LATENCY: Duration = Duration::from_millis(200);
/// Least time per round of disjoint pairs (a few hundred samples of 100 µs).
pub const MIN_LATENCY_ROUND: Duration = Duration::from_millis(10);
/// The latency crate's default cap per pair: more adds nothing.
pub const MAX_LATENCY_ROUND: Duration = Duration::from_millis(200);

/// A part of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Speed,
    Latency,
}

/// Why a part is not wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotWanted {
    /// The user asked to skip it.
    Asked,
    /// The machine is recorded (a file tree or hwloc XML), not this one.
    Recorded,
}

/// Why a part of the report is not measured, or only partly: the data a
/// sentence needs, worded by the caller.
#[derive(Clone, Debug, PartialEq)]
pub enum Skip {
    /// The part is not wanted.
    NotWanted { part: Part, why: NotWanted },
    /// Speed: no usable CPU.
    NoUsableCpu,
    /// Latency: fewer than 2 usable CPUs (`usable` of them).
    TooFewCpus { usable: usize },
    /// Latency does not fit: the `budget` leaves `measuring` time, latency
    /// over `cpus` CPUs `needs` more; `least_budget` would do.
    LatencyBudget {
        budget: Duration,
        measuring: Duration,
        cpus: usize,
        needs: Duration,
        least_budget: Duration,
    },
    /// Speed does not fit: the `budget` leaves `measuring` time, speed needs
    /// `needs` ([`MIN_SPEED_PER_CPU`] x `cpus`); `least_budget` would do,
    /// for both parts when `with_latency`.
    SpeedBudget {
        budget: Duration,
        measuring: Duration,
        cpus: usize,
        needs: Duration,
        least_budget: Duration,
        with_latency: bool,
    },
    /// Speed does not fit beside latency's floor `latency`: `left` remains
    /// for it; `least_budget` would measure both.
    SpeedAfterLatency {
        budget: Duration,
        latency: Duration,
        left: Duration,
        cpus: usize,
        needs: Duration,
        least_budget: Duration,
    },
    /// Latency: speed took `spent` of the `budget` (it may overrun on a busy
    /// machine), `left` is too little to measure.
    LatencyNoTimeLeft {
        spent: Duration,
        budget: Duration,
        left: Duration,
    },
    /// Latency: the budget ran out after `rounds_run` of `rounds_planned`
    /// rounds, `unmeasured` pairs missing (a partial matrix is kept unless
    /// no round ran).
    LatencyPartial {
        rounds_run: usize,
        rounds_planned: usize,
        unmeasured: usize,
    },
}

impl Skip {
    /// The part left out (or partly measured).
    pub fn part(&self) -> Part {
        match self {
            Skip::NotWanted { part, .. } => *part,
            Skip::NoUsableCpu | Skip::SpeedBudget { .. } | Skip::SpeedAfterLatency { .. } => {
                Part::Speed
            }
            Skip::TooFewCpus { .. }
            | Skip::LatencyBudget { .. }
            | Skip::LatencyNoTimeLeft { .. }
            | Skip::LatencyPartial { .. } => Part::Latency,
        }
    }

    /// True when a bigger budget would have measured it.
    pub fn is_budget(&self) -> bool {
        matches!(
            self,
            Skip::LatencyBudget { .. }
                | Skip::SpeedBudget { .. }
                | Skip::SpeedAfterLatency { .. }
                | Skip::LatencyNoTimeLeft { .. }
                | Skip::LatencyPartial { .. }
        )
    }
}

/// Whether a part is wanted, or why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    Yes,
    /// Not measured, and why.
    No(NotWanted),
    /// Already known (a latency matrix from a file): nothing to measure and
    /// nothing missing.
    Given,
}

/// What the report may measure.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetInput {
    /// `--budget`.
    pub budget: Duration,
    /// Already spent (discovery, loading files).
    pub spent: Duration,
    /// CPUs speed would measure.
    pub speed_cpus: usize,
    /// CPUs latency would measure (pairs of them).
    pub latency_cpus: usize,
    pub speed: Want,
    pub latency: Want,
}

/// How the budget is spent.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetPlan {
    /// Time kept back for everything but measuring.
    pub reserve: Duration,
    /// Speed: time per CPU, if measured.
    pub speed_per_cpu: Option<Duration>,
    /// Latency: total time, if measured.
    pub latency: Option<Duration>,
    /// One entry per part not measured: what and why.
    pub skipped: Vec<Skip>,
}

/// Rounds of disjoint pairs among `n` CPUs (round-robin tournament).
pub fn latency_rounds(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        n if n % 2 == 0 => n - 1,
        n => n,
    }
}

/// Least budget for latency on `n` CPUs.
pub fn min_latency(n: usize) -> Duration {
    MIN_LATENCY.max(MIN_LATENCY_ROUND * latency_rounds(n) as u32)
}

/// Least budget for speed on `n` CPUs.
pub fn min_speed(n: usize) -> Duration {
    MIN_SPEED_PER_CPU * n as u32
}

fn reserve(budget: Duration) -> Duration {
    budget
        .mul_f64(0.05)
        .clamp(Duration::from_millis(30), Duration::from_secs(1))
}

/// `1.5 s`, `250 ms`.
pub fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 {
        format!("{s:.0} s")
    } else if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1e3)
    }
}

/// Least budget that measures `need`: it plus the reserve, rounded up to
/// a tenth of a second.
fn least_budget(need: Duration) -> Duration {
    // reserve is 5% (>= 30 ms): budget >= need / 0.95 and >= need + 30 ms.
    let b = need.div_f64(0.95).max(need + Duration::from_millis(30));
    Duration::from_millis(((b.as_secs_f64() * 10.0).ceil() as u64) * 100)
}

/// The least and most time each part may measure.
struct Bounds {
    speed_floor: Duration,
    speed_ceiling: Duration,
    lat_floor: Duration,
    lat_ceiling: Duration,
}

/// Splits the budget (see the module doc). Pure.
pub fn split(input: &BudgetInput) -> BudgetPlan {
    let reserve = reserve(input.budget);
    let measuring = input
        .budget
        .saturating_sub(input.spent)
        .saturating_sub(reserve);
    let mut skipped = Vec::new();
    let n_speed = input.speed_cpus;
    let n_lat = input.latency_cpus;
    let bounds = Bounds {
        speed_floor: min_speed(n_speed),
        speed_ceiling: MAX_SPEED_PER_CPU * n_speed as u32,
        lat_floor: min_latency(n_lat),
        lat_ceiling: MAX_LATENCY_ROUND * latency_rounds(n_lat) as u32,
    };
    let want_speed = wanted(
        &input.speed,
        Part::Speed,
        (n_speed == 0).then_some(Skip::NoUsableCpu),
        &mut skipped,
    );
    let want_latency = wanted(
        &input.latency,
        Part::Latency,
        (n_lat < 2).then_some(Skip::TooFewCpus { usable: n_lat }),
        &mut skipped,
    );
    let (speed_fits, latency_fits) = fits(
        input,
        measuring,
        &bounds,
        (want_speed, want_latency),
        &mut skipped,
    );
    let (speed_total, latency) = allocate(measuring, &bounds, speed_fits, latency_fits);
    BudgetPlan {
        reserve,
        speed_per_cpu: speed_total.map(|t| t / n_speed.max(1) as u32),
        latency,
        skipped,
    }
}

/// Whether a part is to be measured: asked for, and with CPUs enough
/// (`too_few`: the skip when not); a part not wanted is a skip too.
fn wanted(want: &Want, part: Part, too_few: Option<Skip>, skipped: &mut Vec<Skip>) -> bool {
    match want {
        Want::Yes => match too_few {
            Some(skip) => {
                skipped.push(skip);
                false
            }
            None => true,
        },
        Want::No(why) => {
            skipped.push(Skip::NotWanted { part, why: *why });
            false
        }
        Want::Given => false,
    }
}

/// Which wanted parts (speed, latency) fit in `measuring`: latency needs
/// its floor, speed its floor, and both together the sum; each part that
/// does not fit is a skip saying the least budget that would do.
fn fits(
    input: &BudgetInput,
    measuring: Duration,
    bounds: &Bounds,
    (want_speed, want_latency): (bool, bool),
    skipped: &mut Vec<Skip>,
) -> (bool, bool) {
    let Bounds {
        speed_floor,
        lat_floor,
        ..
    } = *bounds;
    let budget = input.budget;
    let mut want_speed = want_speed;
    let latency_fits = want_latency && measuring >= lat_floor;
    if want_latency && !latency_fits {
        skipped.push(Skip::LatencyBudget {
            budget,
            measuring,
            cpus: input.latency_cpus,
            needs: lat_floor,
            least_budget: least_budget(lat_floor + input.spent),
        });
    }
    if want_speed && measuring < speed_floor {
        let least = if want_latency {
            speed_floor + lat_floor + input.spent
        } else {
            speed_floor + input.spent
        };
        skipped.push(Skip::SpeedBudget {
            budget,
            measuring,
            cpus: input.speed_cpus,
            needs: speed_floor,
            least_budget: least_budget(least),
            with_latency: want_latency,
        });
        want_speed = false;
    }
    if want_speed && latency_fits && measuring < speed_floor + lat_floor {
        skipped.push(Skip::SpeedAfterLatency {
            budget,
            latency: lat_floor,
            left: measuring.saturating_sub(lat_floor),
            cpus: input.speed_cpus,
            needs: speed_floor,
            least_budget: least_budget(speed_floor + lat_floor + input.spent),
        });
        want_speed = false;
    }
    (want_speed, latency_fits)
}

/// Total speed time and latency time out of `measuring` for the parts
/// that fit: both share it, latency keeping at least its floor.
fn allocate(
    measuring: Duration,
    bounds: &Bounds,
    speed: bool,
    latency: bool,
) -> (Option<Duration>, Option<Duration>) {
    let Bounds {
        speed_floor,
        speed_ceiling,
        lat_floor,
        lat_ceiling,
    } = *bounds;
    match (speed, latency) {
        (true, true) => {
            let lat_cap = lat_ceiling.max(lat_floor);
            let mut speed = measuring
                .mul_f64(SPEED_SHARE)
                .clamp(speed_floor, speed_ceiling.max(speed_floor));
            // Leave latency its floor; give speed what latency cannot use.
            speed = speed.min(measuring - lat_floor);
            let lat = (measuring - speed).min(lat_cap);
            speed = (measuring - lat).min(speed_ceiling.max(speed_floor));
            (Some(speed), Some(lat))
        }
        (true, false) => (Some(measuring.min(speed_ceiling)), None),
        (false, true) => (None, Some(measuring.min(lat_ceiling.max(lat_floor)))),
        (false, false) => (None, None),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `budget_ms` from nothing spent, speed and latency both wanted on
    /// `cpus` CPUs (also the skip texts' tests).
    pub(crate) fn input(budget_ms: u64, cpus: usize) -> BudgetInput {
        BudgetInput {
            budget: Duration::from_millis(budget_ms),
            spent: Duration::ZERO,
            speed_cpus: cpus,
            latency_cpus: cpus,
            speed: Want::Yes,
            latency: Want::Yes,
        }
    }

    fn ms(d: Option<Duration>) -> Option<u128> {
        d.map(|d| d.as_millis())
    }

    #[test]
    fn tiny_budget_skips_both_and_says_so() {
        let p = split(&input(100, 2));
        assert_eq!((p.speed_per_cpu, p.latency), (None, None));
        let d = Duration::from_millis;
        assert_eq!(
            p.skipped,
            [
                Skip::LatencyBudget {
                    budget: d(100),
                    measuring: d(70),
                    cpus: 2,
                    needs: d(200),
                    least_budget: d(300),
                },
                Skip::SpeedBudget {
                    budget: d(100),
                    measuring: d(70),
                    cpus: 2,
                    needs: d(200),
                    least_budget: d(500),
                    with_latency: true,
                }
            ]
        );
        assert!(p.skipped.iter().all(Skip::is_budget));
        // Without latency, speed alone needs less.
        let mut i = input(100, 2);
        i.latency = Want::No(NotWanted::Asked);
        let p = split(&i);
        assert!(
            matches!(
                p.skipped[1],
                Skip::SpeedBudget { least_budget, with_latency: false, .. } if least_budget == d(300)
            ),
            "{:?}",
            p.skipped
        );
        assert!(!p.skipped[0].is_budget());
    }

    #[test]
    fn small_budget_keeps_latency_and_drops_speed() {
        // 2 CPUs, 300 ms: 270 ms to measure, latency needs 200, speed 200.
        let p = split(&input(300, 2));
        assert_eq!(p.speed_per_cpu, None);
        assert_eq!(ms(p.latency), Some(200));
        let d = Duration::from_millis;
        assert_eq!(
            p.skipped,
            [Skip::SpeedAfterLatency {
                budget: d(300),
                latency: d(200),
                left: d(70),
                cpus: 2,
                needs: d(200),
                least_budget: d(500),
            }]
        );
        // ... and that advice holds.
        let p = split(&input(500, 2));
        assert!(
            p.speed_per_cpu.is_some() && p.latency.is_some() && p.skipped.is_empty(),
            "{p:?}"
        );
    }

    #[test]
    fn two_cpus_default_budget_uses_the_ceilings() {
        let p = split(&input(60_000, 2));
        assert_eq!(ms(p.speed_per_cpu), Some(1000));
        assert_eq!(
            ms(p.latency),
            Some(200),
            "one round of one pair, capped at 200 ms"
        );
        assert!(p.skipped.is_empty());
    }

    #[test]
    fn five_seconds_on_two_cpus() {
        let p = split(&input(5_000, 2));
        // 4750 ms to measure: 40% = 1900 ms of speed, latency capped at 200 ms,
        // the rest back to speed up to 1 s per CPU.
        assert_eq!(ms(p.speed_per_cpu), Some(1000));
        assert_eq!(ms(p.latency), Some(200));
        let total = p.speed_per_cpu.unwrap() * 2 + p.latency.unwrap() + p.reserve;
        assert!(total <= Duration::from_secs(5));
    }

    #[test]
    fn big_machine_shares_the_budget() {
        // 256 CPUs, 60 s: 59 s to measure (1 s reserve); speed 40% = 23.6 s
        // is below its floor (100 ms per CPU = 25.6 s), so the floor;
        // latency 33.4 s over 255 rounds (131 ms each).
        let p = split(&input(60_000, 256));
        assert_eq!(ms(p.speed_per_cpu), Some(100));
        assert_eq!(ms(p.latency), Some(33_400));
        // 120 s: latency is capped at 255 rounds x 200 ms = 51 s; speed gets
        // the other 68 s of the 119 (265 ms per CPU), more than its 40%.
        let p = split(&input(120_000, 256));
        assert_eq!(
            (ms(p.speed_per_cpu), ms(p.latency)),
            (Some(265), Some(51_000))
        );
        // 10 s: speed's floor (25.6 s) does not fit beside latency: skipped.
        let p = split(&input(10_000, 256));
        assert_eq!(p.speed_per_cpu, None);
        assert!(p.latency.is_some());
        assert!(
            matches!(p.skipped[0], Skip::SpeedBudget { cpus: 256, needs, with_latency: true, .. } if needs == Duration::from_millis(25_600)),
            "{:?}",
            p.skipped
        );
        // 2 s: not even latency (2.55 s for 255 rounds).
        let p = split(&input(2_000, 256));
        assert_eq!((p.speed_per_cpu, p.latency), (None, None));
        assert!(
            matches!(p.skipped[0], Skip::LatencyBudget { cpus: 256, needs, .. } if needs == Duration::from_millis(2_550)),
            "{:?}",
            p.skipped
        );
    }

    #[test]
    fn never_more_than_the_budget() {
        for cpus in [1usize, 2, 3, 8, 20, 64, 256] {
            for budget_ms in [
                0u64, 50, 100, 250, 400, 1000, 3000, 5000, 20_000, 60_000, 600_000,
            ] {
                for spent_ms in [0u64, 20, 500] {
                    let mut i = input(budget_ms, cpus);
                    i.spent = Duration::from_millis(spent_ms);
                    let p = split(&i);
                    let speed = p.speed_per_cpu.map_or(Duration::ZERO, |d| d * cpus as u32);
                    let used = i.spent + p.reserve + speed + p.latency.unwrap_or_default();
                    let limit = i.budget.max(i.spent + p.reserve);
                    assert!(
                        used <= limit,
                        "{cpus} CPUs, {budget_ms} ms, spent {spent_ms}: {p:?}"
                    );
                    if let Some(s) = p.speed_per_cpu {
                        assert!(
                            (MIN_SPEED_PER_CPU..=MAX_SPEED_PER_CPU).contains(&s),
                            "{p:?}"
                        );
                    }
                    if let Some(l) = p.latency {
                        assert!(l >= min_latency(cpus), "{p:?}");
                    }
                    // Whatever is not measured is explained (nothing is Given here).
                    assert_eq!(
                        p.skipped.len(),
                        p.speed_per_cpu.is_none() as usize + p.latency.is_none() as usize,
                        "{p:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn unwanted_parts_give_their_reason_and_their_time_away() {
        let mut i = input(5_000, 2);
        i.latency = Want::No(NotWanted::Recorded);
        let p = split(&i);
        assert_eq!(p.latency, None);
        assert_eq!(ms(p.speed_per_cpu), Some(1000));
        assert_eq!(
            p.skipped,
            [Skip::NotWanted {
                part: Part::Latency,
                why: NotWanted::Recorded
            }]
        );
        let mut i = input(5_000, 1);
        i.speed = Want::No(NotWanted::Asked);
        let p = split(&i);
        assert_eq!(
            p.skipped,
            [
                Skip::NotWanted {
                    part: Part::Speed,
                    why: NotWanted::Asked
                },
                Skip::TooFewCpus { usable: 1 }
            ]
        );
        assert_eq!(
            p.skipped.iter().map(Skip::part).collect::<Vec<_>>(),
            [Part::Speed, Part::Latency]
        );
        // A matrix from a file: all the time goes to speed, nothing is missing.
        let mut i = input(5_000, 2);
        i.latency = Want::Given;
        let p = split(&i);
        assert_eq!(
            (ms(p.speed_per_cpu), p.latency, p.skipped.len()),
            (Some(1000), None, 0)
        );
    }
}
