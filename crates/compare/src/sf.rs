//! The speedup factor (SF) of a compare journal's program: mean wall time
//! of its successful measured runs on an arm confined to the small kinds
//! over that on an arm confined to the fastest kind, with the same thread
//! count (`pinsight sf --from-compare`). Kinds are the journal's own
//! (slowest first), not this machine's; arms are matched by their plans.

use crate::journal::{ArmHeader, Journal};
use crate::Phase;
use pinsight_cpuset::CpuSet;
use serde::Serialize;

/// One side of a journal SF: an arm confined to one kind.
#[derive(Serialize, Debug, PartialEq)]
pub struct JournalArm {
    pub arm: String,
    pub cpus: String,
    pub threads: usize,
    pub runs: usize,
    pub mean_wall_s: f64,
}

/// A journal's SF and the arms it rests on.
#[derive(Serialize, Debug, PartialEq)]
pub struct JournalSf {
    pub source: &'static str,
    /// The journal's path (the caller's to fill in).
    pub journal: String,
    pub command: Vec<String>,
    pub sf: f64,
    /// 95% Fieller interval of the ratio of means, when bounded.
    pub ci: Option<(f64, f64)>,
    pub big: JournalArm,
    pub small: JournalArm,
    /// Why the SF is below 1, if it is.
    #[serde(skip)]
    pub note: Option<String>,
}

/// Why a journal gives no SF.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum JournalSfError {
    #[error(
        "its machine has {count} core kind{} ({kinds}): no big and small kind to compare",
        if *.count == 1 { "" } else { "s" }
    )]
    Kinds { count: usize, kinds: String },
    #[error(
        "no pair of arms with the same thread count, one confined to the big kind ({big}) \
         and one to the small kinds ({small}), with two or more successful measured runs \
         each (arms: {arms}); run compare with e.g. p-set and e-set"
    )]
    NoPair {
        big: CpuSet,
        small: CpuSet,
        arms: String,
    },
}

/// The SF of the journal's program (see the module).
pub fn journal_sf(j: &Journal) -> Result<JournalSf, JournalSfError> {
    let kinds = j.header.machine.kind_cpus();
    let Some((big_cpus, slower)) = kinds.split_last().filter(|(_, s)| !s.is_empty()) else {
        return Err(JournalSfError::Kinds {
            count: kinds.len(),
            kinds: j.header.machine.kinds_text(),
        });
    };
    let mut small_cpus = CpuSet::new();
    slower.iter().for_each(|k| small_cpus.union_with(k));
    let arms = &j.header.arms;
    for big in confined(arms, big_cpus) {
        // An arm within both sets counts as big only.
        for small in confined(arms, &small_cpus).filter(|a| !arm_cpus(a).is_subset(big_cpus)) {
            if big.plan.threads != small.plan.threads {
                continue;
            }
            let (tb, ts) = (times(j, &big.id), times(j, &small.id));
            let Ok(s) = pinsight_stats::speedup(&ts, &tb) else {
                continue;
            };
            let note = (s.ratio < 1.0).then(|| {
                format!(
                    "the small-kind arm {} was faster than the big-kind arm {}: SF < 1 \
                     (schedulers clamp it to 1)",
                    small.id, big.id
                )
            });
            return Ok(JournalSf {
                source: "compare",
                journal: String::new(),
                command: j.header.command.clone(),
                sf: s.ratio,
                ci: s.ci.map(|c| (c.lo, c.hi)),
                big: side(big, &tb),
                small: side(small, &ts),
                note,
            });
        }
    }
    let arms: Vec<&str> = j.header.arms.iter().map(|a| a.id.as_str()).collect();
    Err(JournalSfError::NoPair {
        big: big_cpus.clone(),
        small: small_cpus,
        arms: arms.join(", "),
    })
}

/// The arms whose plans confine them to `cpus`.
fn confined<'a>(
    arms: &'a [ArmHeader],
    cpus: &'a CpuSet,
) -> impl Iterator<Item = &'a ArmHeader> + 'a {
    arms.iter().filter(move |a| {
        let c = arm_cpus(a);
        !c.is_empty() && c.is_subset(cpus)
    })
}

/// The CPUs an arm's plan confines it to.
fn arm_cpus(arm: &ArmHeader) -> CpuSet {
    if arm.plan.places.is_empty() {
        return arm.plan.process_mask.clone();
    }
    let mut u = CpuSet::new();
    arm.plan.places.iter().for_each(|p| u.union_with(p));
    u
}

/// Wall times of an arm's successful measured runs.
fn times(j: &Journal, id: &str) -> Vec<f64> {
    j.runs
        .iter()
        .filter(|r| r.arm == id && r.phase == Phase::Measured && r.failure().is_none())
        .map(|r| r.record.wall_s)
        .collect()
}

fn side(a: &ArmHeader, t: &[f64]) -> JournalArm {
    JournalArm {
        arm: a.id.clone(),
        cpus: a.plan.describe(),
        threads: a.plan.threads,
        runs: t.len(),
        mean_wall_s: t.iter().sum::<f64>() / t.len() as f64,
    }
}
