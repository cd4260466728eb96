//! The few lines `pinsight report` prints: what the machine is, what to do,
//! what was not measured, and where the page is.

use super::html::machine_line;
use crate::ReportData;
use pinsight_term::{fill, Wrap};
use std::fmt::Write;

/// `text` wrapped to `width` columns by the one wrapper; the first line
/// starts with `first`, the others with `rest` (hanging indent). Words
/// longer than a line stay whole.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    fill(text, Wrap::new(width).indent(first, rest))
}

/// The terminal summary, `width` columns wide.
/// `latency_path` is the matrix file written beside the report, if any.
pub fn terminal_summary(
    r: &ReportData,
    html_path: &str,
    json_path: &str,
    latency_path: Option<&str>,
    width: usize,
) -> String {
    let t = &r.topology;
    let mut out = String::new();
    writeln!(out, "{}", t.model_name.as_deref().unwrap_or("unknown CPU")).ok();
    out.push_str(&wrap(&machine_line(t), width, "  ", "  "));
    if !r.suggestions.is_empty() {
        out.push_str("\nWhat to do:\n");
        for s in &r.suggestions {
            out.push_str(&wrap(s, width, "  * ", "    "));
        }
    }
    if !r.skipped.is_empty() {
        out.push_str("\nNot measured:\n");
        for s in &r.skipped {
            out.push_str(&wrap(s, width, "  - ", "    "));
        }
    }
    if !r.conditions.is_empty() {
        out.push_str("\nMeasured under:\n");
        for s in &r.conditions {
            out.push_str(&wrap(s, width, "  ! ", "    "));
        }
    }
    out.push('\n');
    out.push_str(&wrap(
        &format!(
            "Report: {html_path} (open it in a browser), {json_path}{}; took {:.1} s of the {} budget.",
            latency_path.map(|p| format!(", latency matrix {p}")).unwrap_or_default(),
            r.elapsed_s,
            crate::budget::secs(std::time::Duration::from_secs_f64(r.budget_s))
        ),
        width,
        "",
        "  ",
    ));
    out
}
