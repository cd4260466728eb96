//! One `pinsight report` from a typed request: the matrix of a file loaded
//! and checked against the machine, the budget split, every file the
//! report writes checked before anything is measured, speed and latency
//! measured ([`crate::session`]), and the report's data assembled.
//!
//! Nothing here prints, writes the report's files or words a skip: what
//! was not measured comes back typed ([`Outcome::planned`],
//! [`Outcome::missing`]) and [`crate::view`] words it, writes the files
//! and draws the summary. Errors are typed ([`RunError`]); the command
//! line names the flag to change.

use crate::budget::{split, BudgetInput, NotWanted, Skip, Want};
use crate::session::{self, Missing};
use crate::ReportData;
use pinsight_cpuset::CpuSet;
use pinsight_latency::{LoadError, LoadMatrix};
use pinsight_latency_model::LatencyMatrix;
use pinsight_lifecycle::output::OutputError;
use pinsight_model::Topology;
use pinsight_speed::{default_mem_bytes, SpeedError, SpeedFileError, SpeedReport};
use pinsight_sys::progress::Progress;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The files a report writes: the page, its JSON and the matrix measured
/// here (for `pinsight run latency-group`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Files {
    pub html: PathBuf,
    pub json: PathBuf,
    pub latency: PathBuf,
}

impl Files {
    /// PREFIX.html, PREFIX.json and PREFIX.latency.json; a PREFIX already
    /// ending in `.html` or `.json` is taken as the stem (`box.html` gives
    /// box.html and box.json), any other dot is kept (`run.2024` gives
    /// run.2024.html).
    pub fn with_prefix(prefix: &Path) -> Files {
        Files::chosen(prefix, None, None, None)
    }

    /// The files chosen one by one, each else as [`Files::with_prefix`]
    /// names it.
    pub fn chosen(
        prefix: &Path,
        html: Option<PathBuf>,
        json: Option<PathBuf>,
        latency: Option<PathBuf>,
    ) -> Files {
        let text = prefix.as_os_str().to_string_lossy();
        let stem = text
            .strip_suffix(".html")
            .or_else(|| text.strip_suffix(".json"))
            .unwrap_or(&text);
        Files {
            html: html.unwrap_or_else(|| PathBuf::from(format!("{stem}.html"))),
            json: json.unwrap_or_else(|| PathBuf::from(format!("{stem}.json"))),
            latency: latency.unwrap_or_else(|| PathBuf::from(format!("{stem}.latency.json"))),
        }
    }
}

/// Which of the report's [`Files`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum File {
    Html,
    Json,
    Latency,
}

/// The host name of the machine under `fs` (live or recorded), as the
/// report names it; `None` when it cannot be read.
pub fn hostname(fs: &pinsight_sys::FsRoot) -> Option<String> {
    fs.read_opt("/proc/sys/kernel/hostname")
}

/// One report to make.
#[derive(Debug)]
pub struct Request {
    /// The machine reported (live, or recorded: then nothing is measured).
    pub topology: Topology,
    /// The whole report's time, counted from `started`.
    pub budget: Duration,
    pub started: Instant,
    pub files: Files,
    /// A matrix measured elsewhere, shown instead of measuring latency.
    pub latency_from: Option<PathBuf>,
    /// A speed measurement made elsewhere (`pinsight speed --json`),
    /// shown instead of measuring speed.
    pub speed_from: Option<PathBuf>,
    /// Parts asked away.
    pub no_latency: bool,
    pub no_speed: bool,
    pub hostname: Option<String>,
}

/// Why no report was made. The words follow the flag that gave the file
/// at fault ([`RunError::given`]), which the caller names.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The matrix file could not be loaded (it names its path).
    #[error("{0}")]
    LatencyFile(LoadError),
    /// The matrix file names CPUs this machine lacks.
    #[error("{}: the matrix has CPU(s) {foreign} that this machine (online {online}) lacks: was it measured on another machine?", path.display())]
    ForeignCpus {
        path: PathBuf,
        foreign: CpuSet,
        online: CpuSet,
    },
    /// The speed file could not be read (it names its path).
    #[error("{0}")]
    SpeedFile(SpeedFileError),
    /// The speed file measured CPUs this machine lacks.
    #[error("{}: it measured CPU(s) {foreign} that this machine (online {online}) lacks: was it measured on another machine?", path.display())]
    ForeignSpeedCpus {
        path: PathBuf,
        foreign: CpuSet,
        online: CpuSet,
    },
    /// A file the report would write cannot be written (nothing measured).
    #[error("{}: cannot write {}: {} (nothing was measured)", path.display(), path.display(), error.reason())]
    Unwritable {
        file: File,
        path: PathBuf,
        error: OutputError,
    },
    /// Speed could not be measured (the plan's skips were already handed
    /// to `run`'s `planned`).
    #[error("{error}")]
    Speed { error: SpeedError },
}

/// The file a [`RunError`] is about, as the request gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Given {
    /// [`Request::latency_from`].
    Latency,
    /// [`Request::speed_from`].
    Speed,
    /// One of the [`Files`] to write.
    Output(File),
}

impl RunError {
    /// The file given in the request whose name goes before the words:
    /// `None` when the words need none (a matrix file's own error names its
    /// path; a measurement that failed is no input's fault).
    pub fn given(&self) -> Option<Given> {
        match self {
            RunError::LatencyFile(_) | RunError::Speed { .. } => None,
            RunError::ForeignCpus { .. } => Some(Given::Latency),
            RunError::SpeedFile(_) | RunError::ForeignSpeedCpus { .. } => Some(Given::Speed),
            RunError::Unwritable { file, .. } => Some(Given::Output(*file)),
        }
    }

    /// Whether the request is at fault (else measuring failed).
    pub fn is_usage(&self) -> bool {
        !matches!(self, RunError::Speed { .. })
    }
}

/// A report made: its data (`skipped` left to the words of the view),
/// what was not measured, typed, and where the files go.
#[derive(Debug)]
pub struct Outcome {
    pub data: ReportData,
    /// The budget plan's skips, decided before measuring, in order.
    pub planned: Vec<Skip>,
    /// What measuring could not do, in the order it happened.
    pub missing: Vec<Missing>,
    pub files: Files,
    /// The matrix was measured here: written to [`Files::latency`].
    pub measured_latency: bool,
}

/// Makes one report: loads and checks a given matrix, splits the budget,
/// checks every file to write, hands the budget plan's skips to `planned`
/// (before anything is measured, so that what will not be done is said
/// first), measures (through `progress`) and assembles the data.
pub fn run(
    request: Request,
    progress: &mut dyn Progress,
    planned: &mut dyn FnMut(&[Skip]),
) -> Result<Outcome, RunError> {
    let Request {
        topology,
        budget,
        started,
        files,
        latency_from,
        speed_from,
        hostname,
        ..
    } = &request;
    // A matrix and a speed measurement from files are loaded first: their
    // errors are the user's, and each takes its part out of the budget.
    let mut latency = given_matrix(latency_from.as_deref(), topology)?;
    let given_speed = given_speed(speed_from.as_deref(), topology)?;
    let plan = split(&budget_input(
        &request,
        latency.is_some(),
        given_speed.is_some(),
    ));
    check_files(files, latency_from.is_none() && plan.latency.is_some())?;
    planned(&plan.skipped);
    let measured = session::measure(
        topology,
        &plan,
        *budget,
        *started,
        default_mem_bytes(topology),
        progress,
    )
    .map_err(|error| RunError::Speed { error })?;
    let measured_latency = measured.latency.is_some();
    if measured_latency {
        latency = measured.latency;
    }
    // The matrix file suggestions point to: the one given, else the one
    // just measured.
    let latency_file = match (latency_from, &latency) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(_)) => files.latency.display().to_string(),
        (None, None) => "FILE".into(),
    };
    let data = session::assemble(
        request.topology.clone(),
        given_speed.or(measured.speed),
        latency,
        Vec::new(),
        &latency_file,
        hostname.clone(),
        *budget,
        *started,
    )
    .with_conditions(measured.virtual_machine, measured.latency_disturbance);
    Ok(Outcome {
        data,
        planned: plan.skipped,
        missing: measured.missing,
        files: request.files,
        measured_latency: measured_latency && request.latency_from.is_none(),
    })
}

/// The matrix of a file, refused when it names CPUs this machine lacks.
fn given_matrix(path: Option<&Path>, topo: &Topology) -> Result<Option<LatencyMatrix>, RunError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let m = LatencyMatrix::load(path).map_err(RunError::LatencyFile)?;
    let foreign = m.cpu_set().difference(&topo.online());
    if !foreign.is_empty() {
        return Err(RunError::ForeignCpus {
            path: path.to_path_buf(),
            foreign,
            online: topo.online(),
        });
    }
    Ok(Some(m))
}

/// The speed measurement of a file, refused when it names CPUs this
/// machine lacks.
fn given_speed(path: Option<&Path>, topo: &Topology) -> Result<Option<SpeedReport>, RunError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let report = pinsight_speed::load_report(path).map_err(RunError::SpeedFile)?;
    let measured: CpuSet = report.cpus.iter().map(|c| c.cpu).collect();
    let foreign = measured.difference(&topo.online());
    if !foreign.is_empty() {
        return Err(RunError::ForeignSpeedCpus {
            path: path.to_path_buf(),
            foreign,
            online: topo.online(),
        });
    }
    Ok(Some(report))
}

/// What the budget is asked to fit: each part wanted, asked away, given,
/// or impossible on a recorded machine.
fn budget_input(r: &Request, given_latency: bool, given_speed: bool) -> BudgetInput {
    let cpus = r.topology.usable().len();
    let live = r.topology.source_is_live();
    let want = |asked_away: bool| {
        if asked_away {
            Want::No(NotWanted::Asked)
        } else if !live {
            Want::No(NotWanted::Recorded)
        } else {
            Want::Yes
        }
    };
    BudgetInput {
        budget: r.budget,
        spent: r.started.elapsed(),
        speed_cpus: cpus,
        latency_cpus: cpus,
        speed: if given_speed {
            Want::Given
        } else {
            want(r.no_speed)
        },
        latency: if given_latency {
            Want::Given
        } else {
            want(r.no_latency)
        },
    }
}

/// Every file this report may write, checked before anything is measured:
/// a typo in a directory must not cost the whole budget.
fn check_files(files: &Files, measures_latency: bool) -> Result<(), RunError> {
    let mut to_check = vec![(File::Html, &files.html), (File::Json, &files.json)];
    if measures_latency {
        to_check.push((File::Latency, &files.latency));
    }
    for (file, path) in to_check {
        pinsight_lifecycle::output::check(path).map_err(|error| RunError::Unwritable {
            file,
            path: path.clone(),
            error,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{File, Files, Given, RunError};
    use std::path::{Path, PathBuf};

    #[test]
    fn the_host_name_is_the_recorded_machines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(dir.path().join("sys")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/hostname"), "box\n").unwrap();
        let fs = pinsight_sys::FsRoot::at(dir.path()).unwrap();
        assert_eq!(super::hostname(&fs).as_deref().map(str::trim), Some("box"));
    }

    #[test]
    fn files_chosen_one_by_one_keep_the_others_default() {
        let f = Files::chosen("r".as_ref(), None, Some(PathBuf::from("x.json")), None);
        assert_eq!(f.html, Path::new("r.html"));
        assert_eq!(f.json, Path::new("x.json"));
        assert_eq!(f.latency, Path::new("r.latency.json"));
    }

    #[test]
    fn errors_say_what_follows_the_file_given() {
        let e = RunError::ForeignCpus {
            path: PathBuf::from("m.csv"),
            foreign: "8-9".parse().unwrap(),
            online: "0-7".parse().unwrap(),
        };
        assert_eq!(e.given(), Some(Given::Latency));
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            "m.csv: the matrix has CPU(s) 8-9 that this machine (online 0-7) lacks: \
             was it measured on another machine?"
        );
        let e = RunError::Unwritable {
            file: File::Json,
            path: PathBuf::from("/no/r.json"),
            error: pinsight_lifecycle::output::OutputError::Directory {
                path: PathBuf::from("/no/r.json"),
            },
        };
        assert_eq!(e.given(), Some(Given::Output(File::Json)));
        assert!(e
            .to_string()
            .starts_with("/no/r.json: cannot write /no/r.json: "));
    }

    #[test]
    fn files_with_a_prefix_append_extensions() {
        let p = |s: &str| {
            let f = Files::with_prefix(Path::new(s));
            [f.html, f.json, f.latency].map(|p| p.display().to_string())
        };
        assert_eq!(
            p("pinsight-report"),
            [
                "pinsight-report.html",
                "pinsight-report.json",
                "pinsight-report.latency.json"
            ]
        );
        assert_eq!(
            p("/tmp/run.2024"),
            [
                "/tmp/run.2024.html",
                "/tmp/run.2024.json",
                "/tmp/run.2024.latency.json"
            ]
        );
        assert_eq!(p("box.html")[..2], ["box.html", "box.json"]);
        assert_eq!(p("box.json")[..2], ["box.html", "box.json"]);
    }
}
