//! The per-rank report: `pinsight run --slice POLICY --report-dir DIR`
//! writes `DIR/<host>/rank-<N>.json` for each rank, and `pinsight gather`
//! and `compare --launcher … --report-dir` read those files back. One
//! typed form, serde both ways, so writer and readers cannot drift.
//!
//! The file holds the rank's whole slice, plan and run outcome. The typed
//! fields are the ones the readers use; every other field is kept as read
//! (`rest`), so a report read and written again is the same document. The
//! text is written with sorted keys, as `serde_json::Value` prints them.

use crate::launch::RunOutcome;
use pinsight_cpuset::CpuSet;
use pinsight_plan::slice::RankSlice;
use pinsight_plan::Plan;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Largest rank report read: a rank's report is a few KiB (its threads'
/// CPUs included); 16 MiB is no real one.
pub const MAX_REPORT_BYTES: u64 = 16 << 20;

/// One rank's report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// The node's host name, as the rank saw it.
    pub host: String,
    pub slice: SliceSeen,
    /// The plan (absent in a report that says only what compare's rank
    /// timing reads: slice and run).
    #[serde(default)]
    pub plan: PlanSeen,
    pub run: RunSeen,
}

/// The rank's slice of the node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SliceSeen {
    pub rank: usize,
    pub size: usize,
    /// The launcher whose variables gave the rank (`slurm`, `openmpi`, …).
    #[serde(default)]
    pub launcher: String,
    /// The slice's CPUs.
    #[serde(default)]
    pub cpus: CpuSet,
    /// The slice's capacity (`null` when unknown).
    #[serde(default)]
    pub capacity: Option<f64>,
    /// Every other field of the slice, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The plan the rank ran under.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSeen {
    /// Canonical policy text (`p-pinned`).
    #[serde(default)]
    pub policy: String,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// What the rank's run did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSeen {
    pub wall_ms: f64,
    /// The exit code handed on: the program's, or 128 + its signal; -1
    /// when the file does not say (counted as a failed rank).
    #[serde(default = "unknown_exit")]
    pub exit_code: i32,
    /// Per-thread observations (with `--report`).
    #[serde(default)]
    pub threads: Vec<ThreadSeen>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

fn unknown_exit() -> i32 {
    -1
}

/// One thread of the rank's program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadSeen {
    /// The CPUs it was seen running on.
    #[serde(default)]
    pub cpus_seen: CpuSet,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Why a rank report cannot be made or read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RankReportError(String);

impl RankReport {
    /// The report of one rank that ran `plan` on its `slice` of `host`.
    pub fn new(
        host: &str,
        slice: &RankSlice,
        plan: &Plan,
        run: &RunOutcome,
    ) -> Result<RankReport, RankReportError> {
        let part = |what: &str, v: Result<Value, serde_json::Error>| {
            v.map_err(|e| RankReportError(format!("rank report: the {what}: {e}")))
        };
        let doc = serde_json::json!({
            "host": host,
            "slice": part("slice", serde_json::to_value(slice))?,
            "plan": part("plan", serde_json::to_value(plan))?,
            "run": part("run", serde_json::to_value(run))?,
        });
        serde_json::from_value(doc).map_err(|e| RankReportError(format!("rank report: {e}")))
    }

    /// The file's text (pretty JSON, keys sorted, a final newline).
    pub fn to_text(&self) -> Result<String, RankReportError> {
        let v = serde_json::to_value(self).map_err(|e| RankReportError(e.to_string()))?;
        serde_json::to_string_pretty(&v)
            .map(|s| s + "\n")
            .map_err(|e| RankReportError(e.to_string()))
    }

    /// A report read from a file's `text`; `host` stands for a host name
    /// the file lacks (the directory it was found in names it).
    pub fn parse(text: &str, host: &str) -> Result<RankReport, RankReportError> {
        let mut v: Value =
            serde_json::from_str(text).map_err(|e| RankReportError(e.to_string()))?;
        if let Some(o) = v.as_object_mut() {
            o.entry("host").or_insert_with(|| Value::from(host));
        }
        serde_json::from_value(v).map_err(|e| RankReportError(e.to_string()))
    }

    /// Every CPU the rank's threads were seen on.
    pub fn ran_on(&self) -> CpuSet {
        let mut all = CpuSet::new();
        for t in &self.run.threads {
            all.union_with(&t.cpus_seen);
        }
        all
    }

    /// The wall time in seconds.
    pub fn wall_s(&self) -> f64 {
        self.run.wall_ms / 1e3
    }
}

/// One node's reports, by rank.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeReports {
    /// The node's directory name (its host name).
    pub host: String,
    pub ranks: Vec<RankReport>,
}

/// What a report directory holds: `DIR/<host>/rank-<N>.json`, node by
/// node (sorted by host, then rank), and the files that could not be read
/// (left out, never guessed), each with why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportDir {
    pub nodes: Vec<NodeReports>,
    pub unreadable: Vec<(PathBuf, String)>,
}

impl ReportDir {
    /// One line per unreadable file: why, and that it was skipped.
    pub fn warnings(&self) -> Vec<String> {
        self.unreadable
            .iter()
            .map(|(_, why)| format!("{why}; skipped"))
            .collect()
    }
}

/// Every `rank-<N>.json` under the node directories of `dir`. Only `dir`
/// itself failing to open is an error; a node without a readable report
/// is left out.
pub fn read_dir(dir: &Path) -> std::io::Result<ReportDir> {
    let mut hosts: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    hosts.sort();
    let mut out = ReportDir::default();
    for h in hosts {
        let host = h
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&h)
            .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rank-") && n.ends_with(".json"))
        });
        files.sort();
        let mut ranks = Vec::new();
        for f in files {
            match read_file(&f, &host) {
                Ok(r) => ranks.push(r),
                Err(why) => out.unreadable.push((f, why)),
            }
        }
        if ranks.is_empty() {
            continue;
        }
        ranks.sort_by_key(|r| r.slice.rank);
        out.nodes.push(NodeReports { host, ranks });
    }
    Ok(out)
}

/// Why a report directory has nothing to merge.
#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    /// The directory itself cannot be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// No node directory holds a readable report.
    #[error("no DIR/<host>/rank-<N>.json report")]
    Empty,
}

/// [`read_dir`], refusing a directory in which no node holds a readable
/// report (the ranks' reports are what there is to merge).
pub fn gather(dir: &Path) -> Result<ReportDir, GatherError> {
    let found = read_dir(dir)?;
    if found.nodes.is_empty() {
        return Err(GatherError::Empty);
    }
    Ok(found)
}

/// One report file, `host` standing for a host name it lacks; the error
/// names the file (escaped for a terminal).
pub fn read_file(path: &Path, host: &str) -> Result<RankReport, String> {
    let shown = pinsight_sys::text::shown(&path.to_string_lossy()).into_owned();
    let text = pinsight_sys::fs::read_bounded_string(path, MAX_REPORT_BYTES)
        .map_err(|e| format!("rank report '{shown}': {e}"))?;
    RankReport::parse(&text, host).map_err(|e| format!("{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_refuses_a_directory_without_reports() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("n1")).unwrap();
        std::fs::write(d.path().join("n1/rank-0.json"), "{").unwrap();
        let e = gather(d.path()).unwrap_err();
        assert!(matches!(e, GatherError::Empty), "{e}");
        assert_eq!(e.to_string(), "no DIR/<host>/rank-<N>.json report");
        let e = gather(&d.path().join("missing")).unwrap_err();
        assert!(matches!(e, GatherError::Read(_)), "{e}");
        std::fs::write(d.path().join("n1/rank-0.json"), FILE).unwrap();
        assert_eq!(gather(d.path()).unwrap().nodes.len(), 1);
    }

    const FILE: &str = r#"{
  "host": "n1",
  "plan": {
    "cpus": "0-3",
    "policy": "p-pinned"
  },
  "run": {
    "exit_code": 0,
    "notes": [],
    "threads": [
      {
        "cpus_seen": "0-1",
        "tid": 7
      },
      {
        "cpus_seen": "3",
        "tid": 8
      }
    ],
    "wall_ms": 1250.5
  },
  "slice": {
    "capacity": 2.5,
    "cpus": "0-3",
    "launcher": "slurm",
    "rank": 1,
    "size": 4,
    "rule": "equal-capacity"
  }
}
"#;

    #[test]
    fn a_report_reads_its_typed_fields_and_writes_back_the_same_document() {
        let r = RankReport::parse(FILE, "dir-name").unwrap();
        assert_eq!(r.host, "n1");
        assert_eq!((r.slice.rank, r.slice.size), (1, 4));
        assert_eq!(r.slice.launcher, "slurm");
        assert_eq!(r.slice.capacity, Some(2.5));
        assert_eq!(r.plan.policy, "p-pinned");
        assert_eq!(r.run.exit_code, 0);
        assert_eq!(r.wall_s(), 1.2505);
        assert_eq!(r.ran_on().to_list_string(), "0-1,3");
        let back: Value = serde_json::from_str(&r.to_text().unwrap()).unwrap();
        let orig: Value = serde_json::from_str(FILE).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn a_report_of_slice_and_run_alone_is_read() {
        let r = RankReport::parse(
            r#"{"slice": {"rank": 0, "size": 2}, "run": {"wall_ms": 100.0, "exit_code": 3}}"#,
            "n1",
        )
        .unwrap();
        assert_eq!(
            (r.slice.rank, r.run.exit_code, r.plan.policy.as_str()),
            (0, 3, "")
        );
    }

    #[test]
    fn a_file_without_a_host_takes_the_directory_s_name() {
        let no_host = FILE.replace("\"host\": \"n1\",", "");
        let r = RankReport::parse(&no_host, "dir-name").unwrap();
        assert_eq!(r.host, "dir-name");
    }

    #[test]
    fn a_report_dir_is_read_node_by_node_and_a_bad_file_is_a_warning() {
        let d = tempfile::tempdir().unwrap();
        for (host, rank) in [("n2", 0), ("n1", 1), ("n1", 0)] {
            let dir = d.path().join(host);
            std::fs::create_dir_all(&dir).unwrap();
            let text = FILE
                .replace("\"rank\": 1", &format!("\"rank\": {rank}"))
                .replace("\"host\": \"n1\",", "");
            std::fs::write(dir.join(format!("rank-{rank}.json")), text).unwrap();
        }
        std::fs::write(d.path().join("n2/rank-9.json"), "{").unwrap();
        std::fs::write(d.path().join("n2/notes.txt"), "not a report").unwrap();
        std::fs::create_dir_all(d.path().join("empty")).unwrap();
        let r = read_dir(d.path()).unwrap();
        assert_eq!(r.unreadable.len(), 1);
        assert_eq!(r.unreadable[0].0, d.path().join("n2/rank-9.json"));
        let seen: Vec<(&str, Vec<usize>)> = r
            .nodes
            .iter()
            .map(|n| {
                (
                    n.host.as_str(),
                    n.ranks.iter().map(|r| r.slice.rank).collect(),
                )
            })
            .collect();
        assert_eq!(seen, vec![("n1", vec![0, 1]), ("n2", vec![0])]);
        assert_eq!(r.nodes[1].ranks[0].host, "n2");
        let w = r.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("rank-9.json") && w[0].ends_with("; skipped"));
        assert!(read_dir(&d.path().join("none")).is_err());
    }

    #[test]
    fn a_file_missing_a_needed_field_names_it() {
        let e = RankReport::parse(&FILE.replace("\"wall_ms\"", "\"wall\""), "h").unwrap_err();
        assert!(e.to_string().contains("wall_ms"), "{e}");
        assert!(RankReport::parse("not json", "h").is_err());
    }
}
