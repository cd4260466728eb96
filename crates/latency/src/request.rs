//! One `pinsight latency` measurement set up from a typed request: the
//! CPUs chosen among those online and allowed to this process (a CPU list
//! asked for is checked against them), the runs (a virtual machine gets
//! [`crate::report::VM_RUNS`] spaced runs unless the user chose), and the
//! [`MeasureConfig`] to measure with. Errors are typed; the command line
//! names the flag.

use crate::measure::{
    choose_cpus, usable_cpus, CpuChoiceError, MeasureConfig, MeasureError, Method,
};
use crate::report::{runs_for, Runs};
use pinsight_cpuset::CpuSet;
use pinsight_sys::FsRoot;
use std::time::Duration;

/// What the user asked to measure, and on what machine.
#[derive(Clone, Debug)]
pub struct Request {
    /// CPUs asked for; `None`: every online CPU this process may use.
    pub cpus: Option<CpuSet>,
    pub method: Method,
    /// Disjoint pairs measured side by side (else one pair at a time).
    pub parallel: bool,
    pub target_rel_ci: f64,
    pub max_time_per_pair: Duration,
    pub budget: Option<Duration>,
    /// Runs asked for; `None`: the user did not choose (one, or
    /// [`crate::report::VM_RUNS`] on a virtual machine).
    pub runs: Option<usize>,
    /// This machine is virtual.
    pub virtual_machine: bool,
}

/// Why no measurement could be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// This process's CPUs could not be read.
    #[error(transparent)]
    Machine(#[from] MeasureError),
    /// The CPUs asked for (or those usable) do not make a measurement;
    /// [`CpuChoiceError::requested`] tells whether the request is at fault.
    #[error(transparent)]
    Cpus(#[from] CpuChoiceError),
}

impl SetupError {
    /// The CPUs asked for, when the request is at fault (the user should
    /// change it); `None` when the machine or the process is.
    pub fn requested(&self) -> Option<&CpuSet> {
        match self {
            SetupError::Cpus(c) => c.requested(),
            SetupError::Machine(_) => None,
        }
    }
}

/// The configuration to measure `request` with on the machine of `fs`,
/// and the runs chosen (spaced when chosen for a virtual machine).
pub fn setup(request: &Request, fs: &FsRoot) -> Result<(MeasureConfig, Runs), SetupError> {
    let (online, allowed) = usable_cpus(fs)?;
    let cpus = choose_cpus(request.cpus.as_ref(), &online, &allowed)?;
    let runs = runs_for(
        request.runs.unwrap_or(1),
        request.runs.is_some(),
        request.virtual_machine,
        request.budget,
    );
    let config = MeasureConfig {
        cpus,
        method: request.method,
        parallel: request.parallel,
        target_rel_ci: request.target_rel_ci,
        max_time_per_pair: request.max_time_per_pair,
        budget: request.budget,
        repeats: runs.repeats,
        spacing: runs.spacing,
        virtual_machine: request.virtual_machine,
        ..MeasureConfig::default()
    };
    Ok((config, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cpus: Option<CpuSet>, vm: bool, runs_given: bool) -> Request {
        Request {
            cpus,
            method: Method::default(),
            parallel: true,
            target_rel_ci: 0.01,
            max_time_per_pair: Duration::from_millis(5),
            budget: Some(Duration::from_secs(6)),
            runs: runs_given.then_some(1),
            virtual_machine: vm,
        }
    }

    #[test]
    fn a_request_sets_up_its_cpus_and_runs_or_says_who_is_at_fault() {
        let fs = FsRoot::live();
        let far = CpuSet::parse_list("0,100000").unwrap();
        match setup(&request(Some(far.clone()), false, false), &fs) {
            Err(e @ SetupError::Cpus(_)) => assert_eq!(e.requested(), Some(&far)),
            other => panic!("{other:?}"),
        }
        let (online, allowed) = usable_cpus(&fs).unwrap();
        if choose_cpus(None, &online, &allowed).is_err() {
            return;
        }
        let (config, runs) = setup(&request(None, true, false), &fs).unwrap();
        assert_eq!(
            (config.repeats, runs.spacing),
            (3, Some(Duration::from_secs(2)))
        );
        assert!(config.virtual_machine && config.cpus.len() >= 2);
        let (config, runs) = setup(&request(None, true, true), &fs).unwrap();
        assert_eq!((config.repeats, runs.spacing), (1, None));
    }
}
