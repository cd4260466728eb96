//! The few lines `pinsight report` prints: what the machine is, what to do,
//! what was not measured, and where the page is.

use crate::html::machine_line;
use crate::ReportData;
use std::fmt::Write;

/// Wraps `text` to `width` columns; the first line starts with `first`,
/// the others with `rest` (hanging indent). Words longer than a line stay whole.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
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

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_with_hanging_indent() {
        let w = wrap("aaa bbb ccc ddd", 9, "  * ", "    ");
        assert_eq!(w, "  * aaa\n    bbb\n    ccc\n    ddd\n");
        assert_eq!(wrap("one two", 80, "- ", "  "), "- one two\n");
        assert_eq!(
            wrap("averyveryverylongword x", 8, "", ""),
            "averyveryverylongword\nx\n"
        );
    }
}
