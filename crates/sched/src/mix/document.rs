//! `pinsight mix`'s JSON document: the machine's kinds, the settings, each
//! program's times alone on each kind, every scheduler's results, the
//! verdict and the notes.

use super::{cpu_sets, MixResult, MixSpec, SchedulerResult};
use serde::Serialize;
use std::path::Path;

/// One program's reference times.
#[derive(Debug, Clone, Serialize)]
pub struct Reference<'a> {
    /// Its name (the command's basename, numbered when shared).
    pub name: String,
    pub command: &'a str,
    /// Alone on a big CPU (s).
    pub alone_big_s: f64,
    /// Alone on a small CPU (s).
    pub alone_small_s: f64,
}

/// The document of a finished mix.
#[derive(Debug, Clone, Serialize)]
pub struct MixDocument<'a> {
    pub big_cpus: String,
    pub small_cpus: String,
    pub repeat: u32,
    pub period_s: f64,
    /// The journal's path.
    pub journal: String,
    pub references: Vec<Reference<'a>>,
    pub schedulers: &'a [SchedulerResult],
    /// The verdict in words (the caller's).
    pub verdict: String,
    /// Measurements disturbed by other work or the hypervisor.
    pub notes: &'a [String],
}

/// The document of `result`, the experiment `spec` journaled at `journal`,
/// with its `verdict`.
pub fn document<'a>(
    spec: &'a MixSpec,
    result: &'a MixResult,
    journal: &Path,
    verdict: String,
) -> MixDocument<'a> {
    let (big, small) = cpu_sets(&spec.capacity);
    MixDocument {
        big_cpus: big.to_string(),
        small_cpus: small.to_string(),
        repeat: spec.repeat,
        period_s: spec.period.as_secs_f64(),
        journal: journal.display().to_string(),
        references: result
            .references
            .iter()
            .enumerate()
            .map(|(i, &(b, s))| Reference {
                name: spec.name(i),
                command: &spec.commands[i],
                alone_big_s: b,
                alone_small_s: s,
            })
            .collect(),
        schedulers: &result.schedulers,
        verdict,
        notes: &result.notes,
    }
}
