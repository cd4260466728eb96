//! This process's share of its node's CPUs, as `pinsight slice` and
//! `run --slice` find it: the CPUs it may use (on the live machine its
//! affinity mask, so the launcher's own binding counts), its local rank
//! (given, else from the launcher's environment variables,
//! [`pinsight_plan::launcher::detect`]) and the slicing of those CPUs
//! ([`pinsight_plan::slice::slices`]).

use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_plan::launcher::{detect, LauncherError, LocalRank};
use pinsight_plan::slice::{rank_slice, slices, RankSlice, SliceError, SliceRule, Slicing};
use pinsight_plan::Weights;

/// How to slice the node, and which rank this process is.
#[derive(Clone, Debug, Default)]
pub struct RankRequest {
    /// This process's local rank, when given (else the launcher's).
    pub rank: Option<usize>,
    /// The number of ranks on this node, when given (else the launcher's).
    pub size: Option<usize>,
    /// How to share the CPUs.
    pub rule: SliceRule,
    /// Measured per-CPU speed as the slices' capacity.
    pub weights: Option<Weights>,
}

/// Why this process's slice cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    /// This thread's affinity mask cannot be read.
    #[error("sched_getaffinity: {0}")]
    Affinity(std::io::Error),
    /// The local rank is unknown or contradictory.
    #[error(transparent)]
    Launcher(#[from] LauncherError),
    /// The CPUs cannot be sliced as asked.
    #[error(transparent)]
    Slice(#[from] SliceError),
}

/// This process's slice, with where its rank came from and every rank's
/// slice.
#[derive(Clone, Debug)]
pub struct Mine {
    /// The local rank and size, and the launcher that told them.
    pub local: LocalRank,
    /// Every rank's slice.
    pub slicing: Slicing,
    /// This rank's.
    pub slice: RankSlice,
}

/// The CPUs this process may use: `topo`'s usable CPUs, and when `topo`
/// is the live machine also this thread's affinity mask (the launcher's
/// binding and the cgroup).
pub fn allowed_cpus(topo: &Topology) -> Result<CpuSet, RankError> {
    let usable = topo.usable();
    if !topo.source_is_live() {
        return Ok(usable);
    }
    let mask = pinsight_sys::affinity::get_affinity(0).map_err(RankError::Affinity)?;
    Ok(mask.intersection(&usable))
}

impl RankRequest {
    /// Every rank's slice of the CPUs this process may use, for `size`
    /// ranks.
    pub fn slicing(&self, topo: &Topology, size: usize) -> Result<Slicing, RankError> {
        let request = pinsight_plan::SliceRequest {
            allowed: allowed_cpus(topo)?,
            size,
            rule: self.rule,
            weights: self.weights.clone(),
        };
        Ok(slices(topo, &request)?)
    }

    /// This process's slice, its rank from the request or else from this
    /// process's environment.
    pub fn mine(&self, topo: &Topology) -> Result<Mine, RankError> {
        self.mine_in(topo, &|k| std::env::var(k).ok())
    }

    /// [`RankRequest::mine`] with the environment read through `env`.
    pub fn mine_in(
        &self,
        topo: &Topology,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Mine, RankError> {
        let local = detect(env, self.rank, self.size)?;
        let slicing = self.slicing(topo, local.size)?;
        let slice = rank_slice(&local, &slicing)?;
        Ok(Mine {
            local,
            slicing,
            slice,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn laptop() -> Topology {
        let root = pinsight_testkit::fixtures::hwloc("20em64t-hybrid-1p6c2t+2ca4co1t");
        pinsight_topology::discover(&pinsight_sys::FsRoot::at(root).unwrap())
    }

    #[test]
    fn the_rank_comes_from_the_request_else_the_launcher() {
        let topo = laptop();
        let no_env = |_: &str| None;
        let given = RankRequest {
            rank: Some(1),
            size: Some(2),
            ..RankRequest::default()
        };
        let mine = given.mine_in(&topo, &no_env).unwrap();
        assert_eq!((mine.slice.rank, mine.slice.size), (1, 2));
        assert_eq!(mine.slicing.slices.len(), 2);
        assert_eq!(mine.slice.cpus, mine.slicing.slices[1].cpus);
        let ompi = |k: &str| match k {
            "OMPI_COMM_WORLD_LOCAL_RANK" => Some("0".to_string()),
            "OMPI_COMM_WORLD_LOCAL_SIZE" => Some("4".to_string()),
            _ => None,
        };
        let mine = RankRequest::default().mine_in(&topo, &ompi).unwrap();
        assert_eq!((mine.local.rank, mine.local.size), (0, 4));
        assert_eq!(mine.slicing.slices.len(), 4);
    }

    #[test]
    fn refusals_are_typed() {
        let topo = laptop();
        let e = RankRequest::default()
            .mine_in(&topo, &|_| None)
            .unwrap_err();
        assert!(
            matches!(e, RankError::Launcher(LauncherError::NotFound)),
            "{e}"
        );
        let out_of_range = RankRequest {
            rank: Some(2),
            size: Some(2),
            ..RankRequest::default()
        };
        let e = out_of_range.mine_in(&topo, &|_| None).unwrap_err();
        assert!(
            matches!(e, RankError::Slice(SliceError::RankOutOfRange { .. })),
            "{e}"
        );
        let e = RankRequest::default().slicing(&topo, 0).unwrap_err();
        assert!(matches!(e, RankError::Slice(SliceError::ZeroSize)), "{e}");
    }
}
