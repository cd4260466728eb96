//! Which rank of this node am I? The local rank and local size from the
//! environment a launcher gives each process. Pure: the environment comes
//! in as a getter, so every launcher is tested without one.
//!
//! Variables read (sources checked for this module):
//! - **Slurm** (`srun`): `SLURM_LOCALID` (node-local task id) with the
//!   tasks on this node from `SLURM_STEP_TASKS_PER_NODE` (the step's),
//!   `SLURM_NTASKS_PER_NODE` (only with `--ntasks-per-node`) or
//!   `SLURM_TASKS_PER_NODE`, indexed by `SLURM_NODEID`; the lists use
//!   Slurm's compressed form `2(x3),1` = 2,2,2,1 (srun(1)/sbatch(1), "OUTPUT
//!   ENVIRONMENT VARIABLES", <https://slurm.schedmd.com/srun.html>).
//! - **Open MPI**: `OMPI_COMM_WORLD_LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_SIZE`
//!   (<https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html>).
//! - **MPICH Hydra / Intel MPI**: `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`
//!   (set by `mpiexec.hydra` for each process; the variables distributed
//!   training launchers read for MPICH, e.g. DeepSpeed's multinode runner).
//! - **MVAPICH2**: `MV2_COMM_WORLD_LOCAL_RANK`, `MV2_COMM_WORLD_LOCAL_SIZE`
//!   (MVAPICH2 user guide, "Run time environment variables").
//! - **PMIx** (PRRTE, Open MPI 5, `srun --mpi=pmix`): `PMIX_LOCAL_RANK`,
//!   `PMIX_LOCAL_SIZE`; **PMI** (Cray PMI, `srun --mpi=pmi2`):
//!   `PMI_LOCAL_RANK`, `PMI_LOCAL_SIZE`.
//! - **Flux**: `FLUX_TASK_LOCAL_ID` (flux-environment(7)); Flux exports no
//!   local size, so `--local-size` (or another launcher's size) is needed.
//! - **torchrun**: `LOCAL_RANK`, `LOCAL_WORLD_SIZE`
//!   (<https://docs.pytorch.org/docs/stable/elastic/run.html>, "Environment
//!   Variables").
//!
//! When several launchers' variables are present they must agree, with one
//! exception: an MPI or PMI launcher started *inside* a Slurm or Flux
//! allocation (`mpirun` in an `sbatch` script) inherits the allocation's
//! variables, which describe the launcher's own daemon step, not the rank;
//! the inner launcher then wins and a note says so. Two MPI-level launchers
//! (or Slurm and Flux) that disagree are an error naming both.

use serde::Serialize;
use std::fmt;

/// A launcher whose variables name the local rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    Slurm,
    OpenMpi,
    Hydra,
    Mvapich2,
    Pmix,
    Pmi,
    Flux,
    Torchrun,
    /// `--local-rank` / `--local-size`.
    CommandLine,
}

impl Launcher {
    /// Resource managers: their variables describe the step that started
    /// the launcher when an MPI launcher runs inside their allocation.
    fn outer(self) -> bool {
        matches!(self, Launcher::Slurm | Launcher::Flux)
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Slurm => "Slurm",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Hydra => "MPICH Hydra / Intel MPI",
            Launcher::Mvapich2 => "MVAPICH2",
            Launcher::Pmix => "PMIx",
            Launcher::Pmi => "PMI",
            Launcher::Flux => "Flux",
            Launcher::Torchrun => "torchrun",
            Launcher::CommandLine => "the command line",
        })
    }
}

/// This process's place among the ranks of its node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocalRank {
    /// 0-based index among the ranks of this node.
    pub rank: usize,
    /// Number of ranks on this node.
    pub size: usize,
    /// Where they came from.
    pub launcher: Launcher,
    /// The variables read, `NAME=value`.
    pub vars: Vec<String>,
    /// E.g. which launcher's variables were set aside.
    pub notes: Vec<String>,
}

/// Why the local rank is unknown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LauncherError {
    /// No launcher variables and no override.
    #[error("no launcher found: none of SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, MV2_COMM_WORLD_LOCAL_RANK, PMIX_LOCAL_RANK, PMI_LOCAL_RANK, FLUX_TASK_LOCAL_ID, LOCAL_RANK is set")]
    NotFound,
    /// A variable that is not a number (or list) of the right form.
    #[error("{var}={value:?}: {problem}")]
    BadValue {
        var: String,
        value: String,
        problem: String,
    },
    /// The rank is known but not the size.
    #[error("{launcher}: {have} is set but not {missing}")]
    Incomplete {
        launcher: Launcher,
        have: String,
        missing: String,
    },
    /// Two launchers disagree.
    #[error("{a} says local rank {a_rank} of {a_size} but {b} says {b_rank} of {b_size}; set --local-rank and --local-size")]
    Contradiction {
        a: Launcher,
        a_rank: usize,
        a_size: usize,
        b: Launcher,
        b_rank: usize,
        b_size: usize,
    },
}

/// A Slurm tasks-per-node list that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a Slurm tasks-per-node list like 2(x3),1: {problem}")]
pub struct TasksPerNodeError {
    pub text: String,
    pub problem: String,
}

/// Most nodes a tasks-per-node list may expand to: a bound so that
/// `1(x99999999999)` cannot exhaust memory.
pub const MAX_NODES: usize = 1 << 20;

/// Parses Slurm's compressed tasks-per-node form: comma-separated counts,
/// each optionally `(xN)` repeated (`2(x3),1` → `[2, 2, 2, 1]`).
/// Hand-written: a dozen lines, no crate parses this one Slurm format.
pub fn parse_tasks_per_node(text: &str) -> Result<Vec<usize>, TasksPerNodeError> {
    let err = |problem: &str| TasksPerNodeError {
        text: text.to_string(),
        problem: problem.to_string(),
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(err("empty"));
    }
    let mut out = Vec::new();
    for part in t.split(',') {
        let (count, times) = match part.split_once('(') {
            None => (part, 1),
            Some((c, rest)) => {
                let n = rest
                    .strip_prefix('x')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| err("a repeat is written (xN)"))?;
                let n: usize = number(n).ok_or_else(|| err("a repeat count is a number"))?;
                if n == 0 {
                    return Err(err("a repeat count is at least 1"));
                }
                (c, n)
            }
        };
        let count = number(count).ok_or_else(|| err("each count is a number"))?;
        if out.len().saturating_add(times) > MAX_NODES {
            return Err(err("more than 1048576 nodes"));
        }
        out.extend(std::iter::repeat_n(count, times));
    }
    Ok(out)
}

/// A plain decimal number (no sign, no spaces inside).
fn number(s: &str) -> Option<usize> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The local rank and size: the overrides when given (both, or one
/// completing the environment's), else the launcher's variables.
pub fn detect(
    get: &dyn Fn(&str) -> Option<String>,
    rank_override: Option<usize>,
    size_override: Option<usize>,
) -> Result<LocalRank, LauncherError> {
    if let (Some(rank), Some(size)) = (rank_override, size_override) {
        return Ok(LocalRank {
            rank,
            size,
            launcher: Launcher::CommandLine,
            vars: Vec::new(),
            notes: Vec::new(),
        });
    }
    let found = from_env(get, size_override)?;
    let mut found = found.into_iter();
    let Some(mut best) = found.next() else {
        return match (rank_override, size_override) {
            (Some(_), None) => Err(LauncherError::Incomplete {
                launcher: Launcher::CommandLine,
                have: "--local-rank".into(),
                missing: "--local-size (no launcher tells it)".into(),
            }),
            (None, Some(_)) => Err(LauncherError::Incomplete {
                launcher: Launcher::CommandLine,
                have: "--local-size".into(),
                missing: "--local-rank (no launcher tells it)".into(),
            }),
            _ => Err(LauncherError::NotFound),
        };
    };
    for other in found {
        if (other.rank, other.size) == (best.rank, best.size) {
            best.vars.extend(other.vars);
            continue;
        }
        match (best.launcher.outer(), other.launcher.outer()) {
            (true, false) => {
                let note = set_aside(&best, &other);
                best = LocalRank {
                    notes: vec![note],
                    ..other
                };
            }
            (false, true) => {
                let note = set_aside(&other, &best);
                best.notes.push(note);
            }
            _ => {
                return Err(LauncherError::Contradiction {
                    a: best.launcher,
                    a_rank: best.rank,
                    a_size: best.size,
                    b: other.launcher,
                    b_rank: other.rank,
                    b_size: other.size,
                })
            }
        }
    }
    if let Some(r) = rank_override {
        best.notes.push(format!(
            "--local-rank {r} replaces {}'s {}",
            best.launcher, best.rank
        ));
        best.rank = r;
        best.launcher = Launcher::CommandLine;
    }
    if let Some(s) = size_override {
        if s != best.size {
            best.notes.push(format!(
                "--local-size {s} replaces {}'s {}",
                best.launcher, best.size
            ));
        }
        best.size = s;
    }
    Ok(best)
}

fn set_aside(outer: &LocalRank, inner: &LocalRank) -> String {
    format!(
        "{}'s variables (local rank {} of {}) describe the step that started {}; {}'s are used",
        outer.launcher, outer.rank, outer.size, inner.launcher, inner.launcher
    )
}

/// Every launcher whose variables are set, inner launchers first.
fn from_env(
    get: &dyn Fn(&str) -> Option<String>,
    size_override: Option<usize>,
) -> Result<Vec<LocalRank>, LauncherError> {
    let num = |var: &str| -> Result<Option<(usize, String)>, LauncherError> {
        match get(var) {
            None => Ok(None),
            Some(v) => number(&v)
                .map(|n| Some((n, format!("{var}={v}"))))
                .ok_or_else(|| LauncherError::BadValue {
                    var: var.into(),
                    value: v,
                    problem: "expected a number".into(),
                }),
        }
    };
    let pairs: [(Launcher, &str, &str); 6] = [
        (
            Launcher::OpenMpi,
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "OMPI_COMM_WORLD_LOCAL_SIZE",
        ),
        (Launcher::Hydra, "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        (
            Launcher::Mvapich2,
            "MV2_COMM_WORLD_LOCAL_RANK",
            "MV2_COMM_WORLD_LOCAL_SIZE",
        ),
        (Launcher::Pmix, "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
        (Launcher::Pmi, "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"),
        (Launcher::Torchrun, "LOCAL_RANK", "LOCAL_WORLD_SIZE"),
    ];
    let mut out = Vec::new();
    for (launcher, rv, sv) in pairs {
        match (num(rv)?, num(sv)?) {
            (Some((rank, a)), Some((size, b))) => out.push(LocalRank {
                rank,
                size,
                launcher,
                vars: vec![a, b],
                notes: Vec::new(),
            }),
            (Some((rank, a)), None) => match size_override {
                Some(size) => out.push(LocalRank {
                    rank,
                    size,
                    launcher,
                    vars: vec![a],
                    notes: Vec::new(),
                }),
                None => {
                    return Err(LauncherError::Incomplete {
                        launcher,
                        have: rv.into(),
                        missing: format!("{sv}; give --local-size"),
                    })
                }
            },
            (None, Some(_)) | (None, None) => {}
        }
    }
    if let Some(s) = slurm(get, &num)? {
        out.push(s);
    }
    if let Some((rank, a)) = num("FLUX_TASK_LOCAL_ID")? {
        // Flux exports no local size: another launcher's, or --local-size.
        let size = size_override.or_else(|| out.first().map(|o| o.size));
        match size {
            Some(size) => out.push(LocalRank {
                rank,
                size,
                launcher: Launcher::Flux,
                vars: vec![a],
                notes: Vec::new(),
            }),
            None => {
                return Err(LauncherError::Incomplete {
                    launcher: Launcher::Flux,
                    have: "FLUX_TASK_LOCAL_ID".into(),
                    missing: "a local size (Flux exports none); give --local-size".into(),
                })
            }
        }
    }
    Ok(out)
}

type Num<'a> = dyn Fn(&str) -> Result<Option<(usize, String)>, LauncherError> + 'a;

/// Slurm's local rank and the task count of this node.
fn slurm(
    get: &dyn Fn(&str) -> Option<String>,
    num: &Num<'_>,
) -> Result<Option<LocalRank>, LauncherError> {
    let Some((rank, a)) = num("SLURM_LOCALID")? else {
        return Ok(None);
    };
    let mut vars = vec![a];
    let node = num("SLURM_NODEID")?;
    for var in [
        "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_NTASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE",
    ] {
        let Some(v) = get(var) else { continue };
        let list = parse_tasks_per_node(&v).map_err(|e| LauncherError::BadValue {
            var: var.into(),
            value: v.clone(),
            problem: e.problem,
        })?;
        // SLURM_NTASKS_PER_NODE is one number for every node.
        let index = if list.len() == 1 {
            0
        } else {
            match &node {
                Some((n, _)) => *n,
                None => {
                    return Err(LauncherError::Incomplete {
                        launcher: Launcher::Slurm,
                        have: format!("{var}={v} (several nodes)"),
                        missing: "SLURM_NODEID".into(),
                    })
                }
            }
        };
        let size = *list.get(index).ok_or_else(|| LauncherError::BadValue {
            var: var.into(),
            value: v.clone(),
            problem: format!("lists {} node(s) but SLURM_NODEID is {index}", list.len()),
        })?;
        vars.push(format!("{var}={v}"));
        if let Some((_, n)) = node {
            if list.len() > 1 {
                vars.push(n);
            }
        }
        return Ok(Some(LocalRank {
            rank,
            size,
            launcher: Launcher::Slurm,
            vars,
            notes: Vec::new(),
        }));
    }
    Err(LauncherError::Incomplete {
        launcher: Launcher::Slurm,
        have: "SLURM_LOCALID".into(),
        missing: "SLURM_STEP_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn slurm_tasks_per_node_syntax() {
        assert_eq!(parse_tasks_per_node("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(parse_tasks_per_node("4").unwrap(), [4]);
        assert_eq!(parse_tasks_per_node("1,3(x2)").unwrap(), [1, 3, 3]);
        for bad in ["", "x", "2(3)", "2(x0)", "2(x3", "-1", "1,,2", "2 (x3)x"] {
            assert!(parse_tasks_per_node(bad).is_err(), "{bad}");
        }
        let e = parse_tasks_per_node("1(x9999999999)").unwrap_err();
        assert!(e.to_string().contains("more than 1048576 nodes"));
    }

    #[test]
    fn each_launcher() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Launcher, usize, usize);
        let cases: [Case; 8] = [
            (
                &[
                    ("SLURM_LOCALID", "1"),
                    ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
                    ("SLURM_NODEID", "3"),
                ],
                Launcher::Slurm,
                1,
                1,
            ),
            (
                &[("SLURM_LOCALID", "0"), ("SLURM_TASKS_PER_NODE", "4")],
                Launcher::Slurm,
                0,
                4,
            ),
            (
                &[
                    ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
                    ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
                ],
                Launcher::OpenMpi,
                1,
                2,
            ),
            (
                &[("MPI_LOCALRANKID", "3"), ("MPI_LOCALNRANKS", "4")],
                Launcher::Hydra,
                3,
                4,
            ),
            (
                &[
                    ("MV2_COMM_WORLD_LOCAL_RANK", "0"),
                    ("MV2_COMM_WORLD_LOCAL_SIZE", "8"),
                ],
                Launcher::Mvapich2,
                0,
                8,
            ),
            (
                &[("PMIX_LOCAL_RANK", "2"), ("PMIX_LOCAL_SIZE", "3")],
                Launcher::Pmix,
                2,
                3,
            ),
            (
                &[("PMI_LOCAL_RANK", "2"), ("PMI_LOCAL_SIZE", "3")],
                Launcher::Pmi,
                2,
                3,
            ),
            (
                &[("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "2")],
                Launcher::Torchrun,
                0,
                2,
            ),
        ];
        for (vars, launcher, rank, size) in cases {
            let r = detect(&env(vars), None, None).unwrap();
            assert_eq!(
                (r.launcher, r.rank, r.size),
                (launcher, rank, size),
                "{vars:?}"
            );
        }
    }

    #[test]
    fn agreement_contradiction_and_overrides() {
        // srun --mpi=pmix with Open MPI: all agree.
        let e = env(&[
            ("SLURM_LOCALID", "1"),
            ("SLURM_STEP_TASKS_PER_NODE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("PMIX_LOCAL_RANK", "1"),
            ("PMIX_LOCAL_SIZE", "2"),
        ]);
        let r = detect(&e, None, None).unwrap();
        assert_eq!((r.launcher, r.rank, r.size), (Launcher::OpenMpi, 1, 2));
        assert!(r.notes.is_empty());
        // mpirun inside sbatch: the daemon step's Slurm variables are set aside.
        let e = env(&[
            ("SLURM_LOCALID", "0"),
            ("SLURM_STEP_TASKS_PER_NODE", "1"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ]);
        let r = detect(&e, None, None).unwrap();
        assert_eq!((r.launcher, r.rank, r.size), (Launcher::OpenMpi, 3, 4));
        assert!(r.notes[0].contains("Slurm's variables"), "{:?}", r.notes);
        // Two MPI-level launchers that disagree: an error naming both.
        let e = env(&[
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("MPI_LOCALRANKID", "0"),
            ("MPI_LOCALNRANKS", "2"),
        ]);
        let err = detect(&e, None, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Open MPI says local rank 1 of 2 but MPICH Hydra / Intel MPI says 0 of 2; set --local-rank and --local-size"
        );
        // Overrides.
        let r = detect(&env(&[]), Some(1), Some(3)).unwrap();
        assert_eq!((r.launcher, r.rank, r.size), (Launcher::CommandLine, 1, 3));
        assert_eq!(
            detect(&env(&[]), None, None).unwrap_err(),
            LauncherError::NotFound
        );
        let r = detect(&env(&[("FLUX_TASK_LOCAL_ID", "1")]), None, Some(2)).unwrap();
        assert_eq!((r.launcher, r.rank, r.size), (Launcher::Flux, 1, 2));
        let err = detect(&env(&[("FLUX_TASK_LOCAL_ID", "1")]), None, None).unwrap_err();
        assert!(err.to_string().contains("--local-size"), "{err}");
        let err = detect(
            &env(&[("LOCAL_RANK", "x"), ("LOCAL_WORLD_SIZE", "2")]),
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "LOCAL_RANK=\"x\": expected a number");
        let err = detect(
            &env(&[("SLURM_LOCALID", "0"), ("SLURM_TASKS_PER_NODE", "2,1")]),
            None,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("SLURM_NODEID"), "{err}");
    }

    proptest! {
        #[test]
        fn tasks_per_node_round_trips(groups in prop::collection::vec((0usize..300, 1usize..6), 1..8)) {
            let text: Vec<String> = groups
                .iter()
                .map(|(c, n)| if *n == 1 { c.to_string() } else { format!("{c}(x{n})") })
                .collect();
            let list = parse_tasks_per_node(&text.join(",")).unwrap();
            let want: Vec<usize> = groups.iter().flat_map(|(c, n)| std::iter::repeat_n(*c, *n)).collect();
            prop_assert_eq!(list, want);
        }

        #[test]
        fn tasks_per_node_never_panics(s in "\\PC{0,40}") {
            let _ = parse_tasks_per_node(&s);
        }
    }
}
