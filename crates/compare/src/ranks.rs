//! Compare across ranks: every run starts the user's launcher (`mpirun -np
//! 4 --bind-to none`, `srun -n 4`) on `pinsight run --slice POLICY
//! --slice-rules RULE --report-dir DIR -- COMMAND`, one arm per slicing
//! rule, and is timed as its slowest rank (in a bulk-synchronous code the
//! slowest rank sets the pace). The ranks' wall times come from the
//! `DIR/<host>/rank-<N>.json` files each rank writes; the launcher's own
//! wall time (start-up included) and the slowest/fastest spread are kept
//! in the journal ([`RankTimes`]).

use crate::design::Slot;
use crate::experiment::{Executor, PrepareCommand, SwitchError};
use crate::journal::{RankTime, RankTimes};
use crate::output::{Capture, CaptureError, Kept};
use pinsight_launch::rank_report::read_dir;
use pinsight_measure::{Measurer, RunError, RunRecord};
use pinsight_sys::spawn::{Spawn, Stdio};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// [`crate::Header::kind`] of a compare-across-ranks journal.
pub const KIND: &str = "compare-ranks";

/// What a compare across ranks adds to the journal's identity
/// ([`crate::Header::extension`]): a journal with another launcher line,
/// slice policy or forwarded options is another experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RanksIdentity {
    /// The launcher line, split into words.
    pub launcher: Vec<String>,
    /// The policy each rank applies inside its slice.
    pub slice: String,
    /// The slicing rules, one per arm, the first the baseline.
    pub rules: Vec<String>,
    /// pinsight's global options given to every rank (`--kinds SPEC`).
    pub rank_options: Vec<String>,
}

/// Runs every slot under the launcher.
pub struct RanksExecutor {
    measurer: Measurer,
    identity: RanksIdentity,
    /// The pinsight binary the ranks run.
    pinsight: PathBuf,
    command: Vec<String>,
    /// Where each run's `--report-dir` goes (`<dir>/run-<slot+1>`), known
    /// once the journal is open.
    reports: Rc<std::cell::OnceCell<PathBuf>>,
    show_output: bool,
    prepare: PrepareCommand,
    /// Where each run's launcher output is kept, and the arm ids.
    capture: Option<(Capture, Vec<String>)>,
    /// The output of the run just done.
    kept: Option<Result<Kept, CaptureError>>,
}

impl RanksExecutor {
    /// `rules` are the arms in header order; `reports` is filled before
    /// the first run.
    pub fn new(
        measurer: Measurer,
        identity: RanksIdentity,
        pinsight: PathBuf,
        command: Vec<String>,
        reports: Rc<std::cell::OnceCell<PathBuf>>,
        show_output: bool,
        prepare: Option<(Measurer, String)>,
    ) -> RanksExecutor {
        RanksExecutor {
            measurer,
            identity,
            pinsight,
            command,
            reports,
            show_output,
            prepare: PrepareCommand::new(prepare, show_output),
            capture: None,
            kept: None,
        }
    }

    /// The launcher command of one run of arm `rule`.
    pub fn command(&self, rule: &str, dir: &Path) -> Spawn {
        let id = &self.identity;
        let mut cmd = Spawn::new(&id.launcher[0]);
        cmd.args(&id.launcher[1..])
            .arg(&self.pinsight)
            .args(&id.rank_options)
            .args(["run", "--slice", &id.slice, "--slice-rules", rule])
            .arg("--report-dir")
            .arg(dir)
            .arg("--")
            .args(&self.command)
            .stdin(Stdio::Null);
        if !self.show_output {
            cmd.stdout(Stdio::Null).stderr(Stdio::Null);
        }
        cmd
    }
}

/// The empty report directory of run `n`: `run-N`. A retried slot starts
/// from an empty directory (old reports would pass for this run's
/// ranks). Ranks of an interrupted attempt may still be writing there
/// for a moment (a launcher's daemons outlive it briefly), so removing it
/// is tried for up to a second; if it still fills, the run gets
/// `run-N-2`, `run-N-3`, ... instead.
fn fresh_dir(base: &Path, n: usize) -> Result<PathBuf, RunError> {
    let dir = base.join(format!("run-{n}"));
    if !dir.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| dir_error(&dir, e))?;
        return Ok(dir);
    }
    let mut last = None;
    for _ in 0..20 {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {
                std::fs::create_dir_all(&dir).map_err(|e| dir_error(&dir, e))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&dir).map_err(|e| dir_error(&dir, e))?;
                return Ok(dir);
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for k in 2..1000 {
        let other = base.join(format!("run-{n}-{k}"));
        match std::fs::create_dir(&other) {
            Ok(()) => return Ok(other),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(dir_error(&other, e)),
        }
    }
    Err(dir_error(
        &dir,
        last.unwrap_or_else(|| std::io::Error::other("no free report directory")),
    ))
}

fn dir_error(dir: &Path, source: std::io::Error) -> RunError {
    RunError::Spawn {
        program: format!("the report directory {}", dir.display()),
        source,
    }
}

impl Executor for RanksExecutor {
    fn run(&mut self, slot: &Slot) -> Result<RunRecord, RunError> {
        self.run_ranks(slot).map(|(r, _)| r)
    }

    fn run_ranks(&mut self, slot: &Slot) -> Result<(RunRecord, Option<RankTimes>), RunError> {
        let base = self
            .reports
            .get()
            .cloned()
            .unwrap_or_else(|| PathBuf::from("pinsight-ranks"));
        let dir = fresh_dir(&base, slot.index + 1)?;
        let rule = self
            .identity
            .rules
            .get(slot.arm)
            .cloned()
            .unwrap_or_default();
        let mut cmd = self.command(&rule, &dir);
        // The launcher's output (every rank's, as the launcher forwards
        // it) kept like a run's, in a file named by arm and run.
        self.kept = None;
        let mut open = None;
        if let Some((capture, ids)) = &self.capture {
            let id = ids.get(slot.arm).map_or("arm", String::as_str);
            match capture
                .open(id, slot.index)
                .inspect(|o| o.redirect(&mut cmd))
            {
                Ok(o) => open = Some(o),
                Err(e) => self.kept = Some(Err(e)),
            }
        }
        let record = self.measurer.run(cmd);
        if let Some(o) = open {
            self.kept = Some(o.finish());
        }
        let mut record = record?;
        let launcher_failed = !record.exit.success() || record.timed_out;
        let times = rank_times(&dir, record.wall_s, launcher_failed);
        if times.failure.is_none() {
            if let Some(slowest) = times.ranks.iter().map(|r| r.wall_s).reduce(f64::max) {
                record.wall_s = slowest;
            }
        }
        Ok((record, Some(times)))
    }

    fn prepare(&mut self) -> Result<(), RunError> {
        self.prepare.run()
    }

    fn prepare_for(&mut self, slot: &Slot) -> Result<(), RunError> {
        let capture = self.capture.as_ref().map(|c| &c.0);
        self.prepare.run_for(slot, capture)
    }

    fn take_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        self.kept.take()
    }

    fn take_prepare_output(&mut self) -> Option<Result<Kept, CaptureError>> {
        self.prepare.take_output()
    }

    fn keep_output_in(&mut self, journal: &Path, arm_ids: Vec<String>) -> Result<(), CaptureError> {
        self.capture = Some((Capture::for_journal(journal)?, arm_ids));
        Ok(())
    }

    /// Governors are not a dimension of a compare across ranks (the
    /// command line refuses `--governors` with `--launcher`).
    fn set_governor(&mut self, _governor: Option<&str>) -> Result<(), SwitchError> {
        Ok(())
    }
}

/// The ranks' reports in `dir` (`<host>/rank-<N>.json`), their spread and
/// why the run fails if it does: a rank that exited non-zero, a rank
/// without a report, or no report at all.
pub fn rank_times(dir: &Path, launcher_wall_s: f64, launcher_failed: bool) -> RankTimes {
    // A directory that cannot be opened holds no report: `failure` says so.
    let found = read_dir(dir).unwrap_or_default();
    let mut ranks: Vec<RankTime> = found
        .nodes
        .iter()
        .flat_map(|n| &n.ranks)
        .map(|r| RankTime {
            wall_s: r.wall_s(),
            rank: r.slice.rank,
            size: r.slice.size,
            exit_code: r.run.exit_code,
            host: r.host.clone(),
        })
        .collect();
    let unreadable: Vec<String> = found
        .unreadable
        .iter()
        .map(|(f, _)| f.display().to_string())
        .collect();
    ranks.sort_by(|a, b| (&a.host, a.rank).cmp(&(&b.host, b.rank)));
    let failure = failure(&ranks, &unreadable, dir, launcher_failed);
    let spread = if ranks.len() >= 2 {
        let slowest = ranks.iter().map(|r| r.wall_s).fold(f64::MIN, f64::max);
        let fastest = ranks.iter().map(|r| r.wall_s).fold(f64::MAX, f64::min);
        (fastest > 0.0).then(|| slowest / fastest)
    } else {
        None
    };
    RankTimes {
        launcher_wall_s,
        report_dir: dir.display().to_string(),
        ranks,
        spread,
        failure,
    }
}

fn failure(
    ranks: &[RankTime],
    unreadable: &[String],
    dir: &Path,
    launcher_failed: bool,
) -> Option<String> {
    if let Some(r) = ranks.iter().find(|r| r.exit_code != 0) {
        return Some(format!(
            "rank {} on {} exited with code {}",
            r.rank, r.host, r.exit_code
        ));
    }
    if let Some(f) = unreadable.first() {
        return Some(format!("rank report {f} cannot be read"));
    }
    if ranks.is_empty() {
        // The launcher's own failure says more (its exit code) than this.
        return (!launcher_failed).then(|| format!("no rank wrote a report to {}", dir.display()));
    }
    let mut missing: Vec<String> = Vec::new();
    let mut hosts: Vec<&str> = ranks.iter().map(|r| r.host.as_str()).collect();
    hosts.dedup();
    for h in hosts {
        let on: Vec<&RankTime> = ranks.iter().filter(|r| r.host == h).collect();
        let size = on.iter().map(|r| r.size).max().unwrap_or(0);
        for i in 0..size {
            if !on.iter().any(|r| r.rank == i) {
                missing.push(format!("{i} on {h}"));
            }
        }
    }
    if !missing.is_empty() {
        return Some(format!(
            "rank {} wrote no report to {} (it failed before its program ran)",
            missing.join(", rank "),
            dir.display()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, host: &str, rank: usize, size: usize, wall_ms: f64, code: i32) {
        let d = dir.join(host);
        std::fs::create_dir_all(&d).unwrap();
        let v = serde_json::json!({
            "host": host,
            "slice": {"rank": rank, "size": size},
            "run": {"wall_ms": wall_ms, "exit_code": code},
        });
        std::fs::write(d.join(format!("rank-{rank}.json")), v.to_string()).unwrap();
    }

    #[test]
    fn slowest_rank_spread_and_failures() {
        let t = tempfile::tempdir().unwrap();
        write(t.path(), "n1", 0, 2, 100.0, 0);
        write(t.path(), "n1", 1, 2, 250.0, 0);
        let k = rank_times(t.path(), 0.5, false);
        assert_eq!(k.ranks.len(), 2);
        assert_eq!(k.failure, None);
        assert!((k.spread.unwrap() - 2.5).abs() < 1e-12);
        assert!((k.ranks[1].wall_s - 0.25).abs() < 1e-12);

        write(t.path(), "n1", 1, 2, 250.0, 3);
        let k = rank_times(t.path(), 0.5, true);
        assert_eq!(
            k.failure.as_deref(),
            Some("rank 1 on n1 exited with code 3")
        );

        std::fs::remove_file(t.path().join("n1/rank-1.json")).unwrap();
        let k = rank_times(t.path(), 0.5, true);
        assert!(
            k.failure
                .as_deref()
                .unwrap()
                .starts_with("rank 1 on n1 wrote no report"),
            "{k:?}"
        );

        let empty = tempfile::tempdir().unwrap();
        assert_eq!(rank_times(empty.path(), 0.5, true).failure, None);
        assert!(rank_times(empty.path(), 0.5, false)
            .failure
            .unwrap()
            .starts_with("no rank wrote a report"));
    }
}
