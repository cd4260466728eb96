//! `run --json`'s document on stderr: the plan, this rank's slice (`null`
//! without `--slice`) and the run, pretty-printed.

use crate::RunOutcome;
use pinsight_plan::slice::RankSlice;
use pinsight_plan::Plan;

/// The document `{ "plan", "slice", "run" }`, pretty JSON.
pub fn document(
    plan: &Plan,
    slice: Option<&RankSlice>,
    outcome: &RunOutcome,
) -> Result<String, serde_json::Error> {
    let doc = serde_json::json!({ "plan": plan, "slice": slice, "run": outcome });
    serde_json::to_string_pretty(&doc)
}
