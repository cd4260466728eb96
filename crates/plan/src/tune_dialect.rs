//! `tune`'s recommendation in the dialects other tools read: OpenMP
//! (`OMP_NUM_THREADS` + `OMP_PLACES`), libomp's `KMP_HW_SUBSET`, `taskset`
//! and a pinsight run line. The configuration is laid out by
//! [`TuneLayout`], planned by [`plan()`](crate::plan()) and said by the
//! planner's own formats ([`render`]); where a dialect
//! cannot say it, the planner's reason stands in its place.

use crate::format::{render, Format};
use crate::plan::{plan, Request};
use crate::policy::Policy;
use crate::tune::TuneLayout;
use pinsight_model::Topology;
use pinsight_tune_model::Config;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// The recommendation in one dialect: its text, or why the dialect cannot
/// say it. As JSON, `{"name", "text"}` or `{"name", "error"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneDialect {
    /// The dialect as `plan --format` spells it, or "pinsight".
    pub name: String,
    /// The text, or the reason it cannot be expressed.
    pub text: Result<String, String>,
}

impl Serialize for TuneDialect {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("TuneDialect", 2)?;
        m.serialize_field("name", &self.name)?;
        match &self.text {
            Ok(t) => m.serialize_field("text", t)?,
            Err(e) => m.serialize_field("error", e)?,
        }
        m.end()
    }
}

/// What the dialects say and of which program.
#[derive(Clone, Copy)]
pub struct TuneDialectRequest<'a> {
    /// The configuration recommended.
    pub config: Config,
    /// Thread i on the i-th CPU (`cpus:LIST`), else threads float in the
    /// configuration's CPUs (`cpus-set:LIST`).
    pub pinned: bool,
    /// The program's command line, as the taskset line ends.
    pub command: &'a str,
    /// The pinsight line from the policy, the thread count and the
    /// command, worded by the caller (the command line owns its flags'
    /// names).
    pub run_line: fn(&str, usize, &str) -> String,
}

/// `req.config` in each dialect: `omp-places`, `kmp-hw-subset`, `taskset`
/// and `pinsight`, in that order; only `pinsight`, with the layout's
/// reason, when the layout cannot place the configuration at all.
pub fn tune_dialects(
    topo: &Topology,
    layout: &TuneLayout,
    req: &TuneDialectRequest<'_>,
) -> Vec<TuneDialect> {
    let c = req.config;
    let threads = c.threads() as usize;
    let policy_text = match layout.policy(c, req.pinned) {
        Ok(p) => p,
        Err(e) => return vec![dialect("pinsight", Err(e.to_string()))],
    };
    let planned = policy_text
        .parse::<Policy>()
        .map_err(|e| e.to_string())
        .and_then(|p| {
            let r = Request {
                threads: Some(threads),
                ..Request::new(p)
            };
            plan(topo, &r).map_err(|e| e.to_string())
        });
    let planner = |format: Format| -> Result<String, String> {
        let p = planned.as_ref().map_err(Clone::clone)?;
        let t = render(p, topo, format).map_err(|e| e.to_string())?;
        Ok(t.text.trim_end().to_owned())
    };
    // The planner says KMP_HW_SUBSET for whole kinds only; the layout
    // says it for a count of cores of each kind.
    let kmp = layout
        .kmp_hw_subset(c)
        .map(|v| format!("export OMP_NUM_THREADS='{threads}'\nexport KMP_HW_SUBSET='{v}'"))
        .map_err(|e| e.to_string());
    vec![
        dialect("omp-places", planner(Format::OmpPlaces)),
        dialect("kmp-hw-subset", kmp),
        dialect(
            "taskset",
            planner(Format::Taskset).map(|t| format!("{t} {}", req.command)),
        ),
        dialect(
            "pinsight",
            Ok((req.run_line)(&policy_text, threads, req.command)),
        ),
    ]
}

fn dialect(name: &str, text: Result<String, String>) -> TuneDialect {
    TuneDialect {
        name: name.into(),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dialect_is_text_or_error_in_json() {
        let ok = dialect("taskset", Ok("taskset -c 0-3 CMD".into()));
        let no = dialect("kmp-hw-subset", Err("cannot".into()));
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"name":"taskset","text":"taskset -c 0-3 CMD"}"#
        );
        assert_eq!(
            serde_json::to_string(&no).unwrap(),
            r#"{"name":"kmp-hw-subset","error":"cannot"}"#
        );
    }
}
