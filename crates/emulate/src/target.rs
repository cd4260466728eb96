//! What to slow: the declared kinds below full speed, and the reference
//! CPU they are measured against.

use pinsight_cpuset::CpuSet;
use pinsight_model::declared::KindSpec;
use serde::Serialize;

/// One kind to emulate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindTarget {
    /// Its name (`E-core`).
    pub name: String,
    /// Its mark (`E`).
    pub mark: String,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// The relative speed asked, in (0, 1].
    pub asked: f64,
}

/// The kinds to slow and the reference CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Targets {
    /// Kinds below full speed, fastest first.
    pub slowed: Vec<KindTarget>,
    /// A CPU of a kind at full speed: achieved speeds are measured
    /// against it.
    pub reference: usize,
}

/// Why a declaration cannot be emulated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// No kind is below full speed.
    #[error("no kind has a speed below 1 (give one as NAME@SPEED, e.g. 0:P,1:E@0.5)")]
    NothingSlowed,
    /// Every kind is slowed: nothing to measure against.
    #[error("every kind is slowed; leave the fastest kind at full speed (no @SPEED): speeds are measured against it")]
    NoReference,
}

impl Targets {
    /// The targets of `spec`.
    pub fn of(spec: &KindSpec) -> Result<Targets, TargetError> {
        if !spec.slows() {
            return Err(TargetError::NothingSlowed);
        }
        let reference = spec
            .kinds()
            .iter()
            .find(|k| k.speed_milli == 1000)
            .and_then(|k| k.cpus.first())
            .ok_or(TargetError::NoReference)?;
        let slowed = spec
            .kinds()
            .iter()
            .filter(|k| k.speed_milli < 1000)
            .map(|k| KindTarget {
                name: k.name.clone(),
                mark: k.mark.clone(),
                cpus: k.cpus.clone(),
                asked: k.speed(),
            })
            .collect();
        Ok(Targets { slowed, reference })
    }

    /// Every slowed CPU with its asked speed, in CPU order.
    pub fn cpus(&self) -> Vec<(usize, f64)> {
        let mut v: Vec<(usize, f64)> = self
            .slowed
            .iter()
            .flat_map(|k| k.cpus.iter().map(move |c| (c, k.asked)))
            .collect();
        v.sort_by_key(|&(c, _)| c);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_keep_slowed_kinds_and_pick_a_full_speed_reference() {
        let t = Targets::of(&KindSpec::parse("2-3:E@0.5,0-1:P").unwrap()).unwrap();
        assert_eq!(t.reference, 0);
        assert_eq!(t.slowed.len(), 1);
        assert_eq!(t.cpus(), [(2, 0.5), (3, 0.5)]);
        let e = |s: &str| Targets::of(&KindSpec::parse(s).unwrap()).unwrap_err();
        assert_eq!(e("0:P,1:E"), TargetError::NothingSlowed);
        assert_eq!(e("0:P@0.9,1:E@0.5"), TargetError::NoReference);
    }
}
