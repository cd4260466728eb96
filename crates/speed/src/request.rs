//! The `speed` command's work as one request: the CPUs chosen, the chase
//! buffer sized and the budget split, all checked before anything runs
//! ([`Request::session`]); what to say before measuring
//! ([`notes_before`]); and the weights file written crash-safe
//! ([`write_weights`]). The caller measures with
//! [`SpeedSession::run`] and names its own flags in the errors.

use crate::session::{chase_buffer_bytes, SpeedSession, TIME_SHARE_NOTE};
use crate::{
    default_mem_bytes, select_cpus, Choice, Kernel, MemoryError, SelectError, SpeedReport,
};
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::output::OutputError;
use pinsight_model::Topology;
use pinsight_sys::FsRoot;
use std::path::Path;
use std::time::Duration;

/// Each CPU's measuring time when no budget is given.
pub const DEFAULT_PER_CPU: Duration = Duration::from_secs(1);

/// What to measure.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// A cpulist of the CPUs to measure; `None`: every usable CPU.
    pub cpus: Option<String>,
    /// Only this many cores of each kind (their first hardware thread).
    pub per_kind: Option<usize>,
    /// The kernels to run (at least one).
    pub kernels: Vec<Kernel>,
    /// The whole measurement's time, shared equally by the CPUs;
    /// `None`: [`DEFAULT_PER_CPU`] each.
    pub budget: Option<Duration>,
    /// The pointer-chase buffer in MiB; `None`: [`default_mem_bytes`].
    pub mem_mib: Option<usize>,
}

/// A request refused before anything runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// No kernel given.
    #[error("no kernel to run (give at least one of int, fp, mem)")]
    NoKernels,
    /// A chase buffer of 0 MiB.
    #[error("a pointer-chase buffer of 0 MiB (give at least 1 MiB)")]
    ZeroMemory,
    /// The CPUs asked for cannot be measured.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// The chase buffer would not fit in memory.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// An input of a [`Request`], for a front end to name (by its flag) in
/// [`RequestError::named`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// [`Request::cpus`].
    Cpus,
    /// [`Request::per_kind`].
    PerKind,
    /// [`Request::kernels`].
    Kernels,
    /// [`Request::mem_mib`].
    MemMib,
}

impl RequestError {
    /// The input to change.
    pub fn input(&self) -> Input {
        match self {
            RequestError::NoKernels => Input::Kernels,
            RequestError::ZeroMemory | RequestError::Memory(_) => Input::MemMib,
            RequestError::Select(e) => match e.choice() {
                Choice::Cpus => Input::Cpus,
                Choice::PerKind => Input::PerKind,
            },
        }
    }

    /// The refusal worded after the input at fault, as `name` names it:
    /// `--mem-mib 0: give a buffer size of at least 1 MiB`.
    pub fn named(&self, name: &dyn Fn(Input) -> &'static str) -> String {
        let input = name(self.input());
        match self {
            RequestError::NoKernels => format!("{input}: give at least one of int, fp, mem"),
            RequestError::ZeroMemory => format!("{input} 0: give a buffer size of at least 1 MiB"),
            RequestError::Select(e) => format!("{input} {}", e.after_choice()),
            RequestError::Memory(e @ MemoryError::TooBig { mib, .. }) => format!(
                "{input} {mib}: the pointer-chase buffer would not fit in memory: {}; \
                 give a smaller size or leave {input} out (default: 4x the largest L2)",
                e.room()
            ),
        }
    }
}

impl Request {
    /// The session measuring this request on `topo`: CPUs chosen, the
    /// buffer checked against the memory available now under `fs` (only
    /// the mem kernel allocates it), each CPU's share of the budget.
    pub fn session(&self, topo: &Topology, fs: &FsRoot) -> Result<SpeedSession, RequestError> {
        if self.kernels.is_empty() {
            return Err(RequestError::NoKernels);
        }
        if self.mem_mib == Some(0) {
            return Err(RequestError::ZeroMemory);
        }
        let cpus = select_cpus(topo, self.cpus.as_deref(), self.per_kind)?;
        let mem_bytes = match self.mem_mib {
            Some(mib) if self.kernels.contains(&Kernel::Mem) => chase_buffer_bytes(mib, fs)?,
            Some(mib) => mib.saturating_mul(1 << 20),
            None => default_mem_bytes(topo),
        };
        // The budget is the whole measurement's, as report's is: each CPU
        // gets an equal share.
        let per_cpu = self.budget.map_or(DEFAULT_PER_CPU, |b| {
            b / u32::try_from(cpus.len().max(1)).unwrap_or(u32::MAX)
        });
        Ok(SpeedSession::new(
            cpus,
            self.kernels.clone(),
            per_cpu,
            mem_bytes,
        ))
    }
}

/// What to say before `session` measures on the machine under `fs`: that
/// it is virtual (its note), that the session counts descheduled time
/// (under `pinsight emulate`'s duty-cycle stealers). One line each,
/// unwrapped.
pub fn notes_before(session: &SpeedSession, fs: &FsRoot) -> Vec<String> {
    let vm = pinsight_topology::vm::detect(fs).map(|vm| vm.note());
    let share = session
        .time_share()
        .then(|| format!("note: {TIME_SHARE_NOTE}"));
    vm.into_iter().chain(share).collect()
}

/// Writes `report`'s per-CPU weights ([`crate::weights_file`]) to `path`,
/// crash-safe (a whole file or none); returns a warning naming the CPUs
/// left out (no valid measurement), if any.
pub fn write_weights(path: &Path, report: &SpeedReport) -> Result<Option<String>, OutputError> {
    let text = serde_json::to_string_pretty(&crate::weights_file(&report.cpus))
        .expect("weights serialise");
    pinsight_lifecycle::output::write(path, (text + "\n").as_bytes())?;
    let missing: CpuSet = crate::unweighted(&report.cpus).into_iter().collect();
    Ok((!missing.is_empty()).then(|| {
        format!(
            "CPU(s) {missing} have no valid measurement and are left out of {}",
            path.display()
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::CpuSpeed;

    #[test]
    fn a_request_is_refused_before_anything_runs() {
        let topo = pinsight_topology::discover(
            &FsRoot::at(pinsight_testkit::fixtures::hwloc(
                "20em64t-hybrid-1p6c2t+2ca4co1t",
            ))
            .unwrap(),
        );
        let fs = FsRoot::live();
        let ask = |r: Request| r.session(&topo, &fs).err();
        let all = || Request {
            kernels: Kernel::ALL.to_vec(),
            ..Request::default()
        };
        assert_eq!(ask(Request::default()), Some(RequestError::NoKernels));
        let zero = Request {
            mem_mib: Some(0),
            ..all()
        };
        assert_eq!(ask(zero), Some(RequestError::ZeroMemory));
        let per_kind = Request {
            per_kind: Some(0),
            ..all()
        };
        assert_eq!(
            ask(per_kind),
            Some(RequestError::Select(SelectError::ZeroPerKind))
        );
        let huge = Request {
            mem_mib: Some(usize::MAX),
            ..all()
        };
        let refused = ask(huge).unwrap();
        assert!(matches!(refused, RequestError::Memory(_)));
        let flag = |i: Input| match i {
            Input::MemMib => "-m",
            _ => "?",
        };
        let named = refused.named(&flag);
        assert!(
            named.starts_with(&format!("-m {}: the pointer-chase buffer", usize::MAX))
                && named.contains("leave -m out (default: 4x the largest L2)"),
            "{named}"
        );
        assert_eq!(
            RequestError::ZeroMemory.named(&flag),
            "-m 0: give a buffer size of at least 1 MiB"
        );
        assert_eq!(
            RequestError::Select(SelectError::ZeroPerKind).input(),
            Input::PerKind
        );
        let s = Request {
            per_kind: Some(1),
            budget: Some(Duration::from_secs(4)),
            ..all()
        };
        let s = s.session(&topo, &fs).unwrap();
        assert_eq!(s.cpus(), 2);
    }

    #[test]
    fn weights_are_written_and_cpus_without_a_figure_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let cpu = |cpu: usize, relative: f64| CpuSpeed {
            cpu,
            kind: None,
            results: Vec::new(),
            relative,
            misplaced_chunks: 0,
        };
        let report = SpeedReport {
            kernels: Vec::new(),
            budget_per_cpu_s: 1.0,
            passes: 1,
            slots: Vec::new(),
            elapsed_s: 1.0,
            mem_bytes: 0,
            time_share: false,
            cpus: vec![cpu(0, 1.0), cpu(1, f64::NAN)],
            kinds: Vec::new(),
            speedups: Vec::new(),
            disturbance: None,
            smt_yield: None,
        };
        let warning = write_weights(&path, &report).unwrap().unwrap();
        assert!(warning.starts_with("CPU(s) 1 have no valid measurement and are left out of "));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.ends_with("}\n") && text.contains("\"0\": 1.0"),
            "{text}"
        );
    }
}
