//! `run --json`'s document on stderr: the plan, this rank's slice (`null`
//! without `--slice`) and the run.

use crate::RunOutcome;
use pinsight_plan::slice::RankSlice;
use pinsight_plan::Plan;

/// The document `{ "plan", "slice", "run" }`.
pub fn document(plan: &Plan, slice: Option<&RankSlice>, outcome: &RunOutcome) -> serde_json::Value {
    serde_json::json!({ "plan": plan, "slice": slice, "run": outcome })
}
