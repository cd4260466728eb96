//! One `pinsight latency` measurement set up from a typed request: the
//! CPUs chosen among those online and allowed to this process (a CPU list
//! asked for is checked against them), the runs (a virtual machine gets
//! [`crate::report::VM_RUNS`] spaced runs unless the user chose), and the
//! [`MeasureConfig`] to measure with. Errors are typed; the command line
//! names the flag.

use crate::measure::{
    choose_cpus, list_or_none, usable_cpus, CpuChoiceError, MeasureConfig, MeasureError, Method,
};
use crate::report::{runs_for, Runs};
use crate::view::export::Export;
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
    /// When this machine is virtual, the note saying so
    /// (`pinsight_topology::vm::VmInfo::note`); `None`: not virtual.
    pub virtual_machine: Option<String>,
}

/// An input of the `latency` command, for a front end to name (by its
/// flag) in the errors' `named`: [`SetupError::named`],
/// [`FromFileError::named`](crate::report::FromFileError::named),
/// [`Unwritable::named`](crate::view::export::Unwritable::named), and in
/// [`Setup::notes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The CPUs asked for ([`Request::cpus`]).
    Cpus,
    /// The runs asked for ([`Request::runs`]).
    Runs,
    /// A matrix file shown instead of measuring.
    Matrix,
    /// Which matrix of that file.
    Benchmark,
    /// A file written besides the output.
    Export(Export),
}

/// How a front end names an input (its flag).
pub type Names<'a> = &'a dyn Fn(Input) -> &'static str;

/// A measurement set up by [`setup`]: what to measure with, and what to
/// say first.
#[derive(Clone, Debug)]
pub struct Setup {
    /// What to measure with.
    pub config: MeasureConfig,
    /// The runs chosen (spaced when chosen for a virtual machine).
    pub runs: Runs,
    /// The virtual machine's note, as the request gave it.
    vm_note: Option<String>,
}

impl Setup {
    /// What to say before measuring, one line each, unwrapped: that the
    /// machine is virtual (its note), and the spaced runs chosen for it,
    /// with the input that chooses them named by `name`.
    pub fn notes(&self, name: Names<'_>) -> Vec<String> {
        let spaced = self.runs.spacing.map(|gap| {
            format!(
                "virtual machine: {} runs, {:.1} s apart, to show the drift ({} N)",
                self.runs.repeats,
                gap.as_secs_f64(),
                name(Input::Runs)
            )
        });
        self.vm_note.iter().cloned().chain(spaced).collect()
    }
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

    /// The message after the CPUs asked for, named by `name`, when the
    /// request is at fault ([`SetupError::requested`]); `None` when the
    /// machine or the process is (the message is the error's own).
    pub fn named(&self, name: Names<'_>) -> Option<String> {
        let asked = self.requested()?;
        Some(format!(
            "{} {}: {self}",
            name(Input::Cpus),
            list_or_none(asked)
        ))
    }
}

/// The configuration to measure `request` with on the machine of `fs`,
/// the runs chosen (spaced when chosen for a virtual machine) and what to
/// say about them.
pub fn setup(request: &Request, fs: &FsRoot) -> Result<Setup, SetupError> {
    let (online, allowed) = usable_cpus(fs)?;
    let cpus = choose_cpus(request.cpus.as_ref(), &online, &allowed)?;
    let virtual_machine = request.virtual_machine.is_some();
    let runs = runs_for(
        request.runs.unwrap_or(1),
        request.runs.is_some(),
        virtual_machine,
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
        virtual_machine,
        ..MeasureConfig::default()
    };
    Ok(Setup {
        config,
        runs,
        vm_note: request.virtual_machine.clone(),
    })
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
            virtual_machine: vm.then(|| "virtual machine (test)".to_string()),
        }
    }

    #[test]
    fn a_request_sets_up_its_cpus_and_runs_or_says_who_is_at_fault() {
        let fs = FsRoot::live();
        let far = CpuSet::parse_list("0,100000").unwrap();
        match setup(&request(Some(far.clone()), false, false), &fs) {
            Err(e @ SetupError::Cpus(_)) => {
                assert_eq!(e.requested(), Some(&far));
                let named = e.named(&|_| "-c").unwrap();
                assert!(named.starts_with("-c 0,100000: "), "{named}");
            }
            other => panic!("{other:?}"),
        }
        let (online, allowed) = usable_cpus(&fs).unwrap();
        if choose_cpus(None, &online, &allowed).is_err() {
            return;
        }
        let s = setup(&request(None, true, false), &fs).unwrap();
        assert_eq!(
            (s.config.repeats, s.runs.spacing),
            (3, Some(Duration::from_secs(2)))
        );
        assert!(s.config.virtual_machine && s.config.cpus.len() >= 2);
        let flag = |i: Input| if i == Input::Runs { "-r" } else { "?" };
        assert_eq!(
            s.notes(&flag),
            [
                "virtual machine (test)",
                "virtual machine: 3 runs, 2.0 s apart, to show the drift (-r N)"
            ]
        );
        let s = setup(&request(None, true, true), &fs).unwrap();
        assert_eq!((s.config.repeats, s.runs.spacing), (1, None));
        assert_eq!(s.notes(&flag), ["virtual machine (test)"]);
        let s = setup(&request(None, false, false), &fs).unwrap();
        assert!(s.notes(&flag).is_empty() && !s.config.virtual_machine);
    }
}
