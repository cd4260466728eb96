//! `pinsight run`'s work once the plan is made, as one request: this
//! rank's report directory made before the program starts (a directory
//! that cannot be used fails first), the plan's variables exported, the
//! program run, and this rank's report written after it ends.

use crate::launch::{run, LaunchError, RunOptions, RunOutcome};
use crate::rank_file::{RankFile, RankFileError};
use crate::rank_report::RankReportError;
use pinsight_plan::slice::RankSlice;
use pinsight_plan::Plan;
use pinsight_sys::FsRoot;
use std::path::Path;

/// A planned run.
#[derive(Clone, Debug)]
pub struct RunRequest<'a> {
    pub plan: &'a Plan,
    /// This rank's slice, when the plan was made inside one.
    pub slice: Option<&'a RankSlice>,
    /// With a slice: where this rank's report goes
    /// (`DIR/<host>/rank-<N>.json`, see [`RankFile`]); its threads are
    /// then sampled, as the report shows where they ran.
    pub report_dir: Option<&'a Path>,
    /// Export the plan's variables ([`pinsight_plan::launch_env`]) that
    /// are not already set.
    pub export_env: bool,
    pub options: RunOptions,
}

/// Why a planned run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program could not be run as planned.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The report directory cannot be used: its host directory cannot be
    /// made, or the report file cannot be written there.
    #[error(transparent)]
    ReportDir(RankFileError),
    /// This rank's report could not be made into text.
    #[error(transparent)]
    Report(RankReportError),
}

impl From<RankFileError> for RunError {
    fn from(e: RankFileError) -> RunError {
        match e {
            RankFileError::Report(r) => RunError::Report(r),
            e => RunError::ReportDir(e),
        }
    }
}

impl RunError {
    /// The exit code: a shell's 127 and 126 for a program that cannot
    /// start ([`LaunchError::exit_code`]), else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Launch(e) => e.exit_code(),
            RunError::ReportDir(_) | RunError::Report(_) => 1,
        }
    }
}

/// A run whose report directory is made: [`Ready::run`] starts it.
#[derive(Debug)]
pub struct Ready<'a> {
    request: RunRequest<'a>,
    file: Option<RankFile>,
}

impl<'a> RunRequest<'a> {
    /// Makes this rank's report directory (nothing runs yet) and
    /// completes the options: the variables to export, sampling for the
    /// report.
    pub fn prepare(mut self, fs: &FsRoot) -> Result<Ready<'a>, RunError> {
        let file = match (self.report_dir, self.slice) {
            (Some(dir), Some(s)) => Some(RankFile::prepare(fs, dir, s.rank)?),
            _ => None,
        };
        self.options.report |= file.is_some();
        if self.export_env {
            self.options.env = pinsight_plan::launch_env(self.plan);
        }
        Ok(Ready {
            request: self,
            file,
        })
    }
}

impl Ready<'_> {
    /// The options the program runs with.
    pub fn options(&self) -> &RunOptions {
        &self.request.options
    }

    /// Runs the program, then writes this rank's report.
    pub fn run(self) -> Result<RunOutcome, RunError> {
        let r = &self.request;
        let outcome = run(r.plan, &r.options)?;
        if let (Some(file), Some(slice)) = (&self.file, r.slice) {
            file.write(slice, r.plan, &outcome)?;
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn slice(rank: usize) -> RankSlice {
        RankSlice {
            rank,
            size: 2,
            launcher: "flags".into(),
            vars: Vec::new(),
            cpus: "0-1".parse().unwrap(),
            capacity: 2.0,
            rule: Default::default(),
            capacity_source: pinsight_plan::balance::CapacitySource::Uniform,
            capacities: vec![2.0, 2.0],
            spread: 0.0,
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_report_directory_is_made_first_and_turns_sampling_on() {
        let plan = Plan::pinned_to("compact".into(), vec!["0".parse().unwrap()], Vec::new());
        let out = tempfile::tempdir().unwrap();
        let options = RunOptions::for_command(&[OsString::from("true")]).unwrap();
        let s = slice(1);
        let request = |dir: Option<&'static Path>| RunRequest {
            plan: &plan,
            slice: Some(&s),
            report_dir: dir,
            export_env: false,
            options: options.clone(),
        };
        let ready = request(None).prepare(&FsRoot::live()).unwrap();
        assert!(!ready.options().report && ready.options().env.is_empty());
        let dir: &'static Path = Box::leak(out.path().to_path_buf().into_boxed_path());
        let ready = request(Some(dir)).prepare(&FsRoot::live()).unwrap();
        assert!(
            ready.options().report,
            "the rank file shows where threads ran"
        );
        let host = crate::rank_file::host_name(&FsRoot::live());
        assert!(dir.join(host).is_dir());
        let blocked = out.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let blocked: &'static Path = Box::leak(blocked.into_boxed_path());
        let e = request(Some(blocked)).prepare(&FsRoot::live()).unwrap_err();
        assert!(
            matches!(e, RunError::ReportDir(_)) && e.exit_code() == 1,
            "{e}"
        );
    }

    #[test]
    fn the_plan_s_variables_are_exported_on_request() {
        let plan = Plan::pinned_to("compact".into(), vec!["0".parse().unwrap()], Vec::new());
        let ready = RunRequest {
            plan: &plan,
            slice: None,
            report_dir: None,
            export_env: true,
            options: RunOptions::for_command(&[OsString::from("true")]).unwrap(),
        }
        .prepare(&FsRoot::live())
        .unwrap();
        assert_eq!(ready.options().env, pinsight_plan::launch_env(&plan));
        assert!(!ready.options().env.is_empty());
    }
}
