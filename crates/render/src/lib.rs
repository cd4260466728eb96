//! One rendering home for pinsight: the HTML/XML escaper ([`escape`]), the
//! binary size units ([`size`]), the terminal width ([`terminal_width`]) and
//! the topology tree ([`tree`]) that `pinsight topo` prints as text
//! ([`topo_text`]) and `pinsight report` draws as SVG, and the latency
//! heatmaps ([`latency`]: terminal table, SVG/PNG charts), and the lines
//! of `topo --watch` ([`hfi`]), and the progress bar every measuring
//! command shows ([`progress`]).
//!
//! Pure except for [`terminal_columns`], which asks the terminal on
//! standard output for its size (through the `terminal_size` crate), the
//! chart writers of [`latency::chart`], which write files, and the
//! progress bar, which draws on standard error.

#![forbid(unsafe_code)]

pub mod balance;
pub mod compare;
pub mod compare_run;
pub mod emulate;
pub mod explain;
pub mod export;
pub mod gather;
pub mod hfi;
pub mod latency;
pub mod load;
pub mod mix;
pub mod pin;
pub mod progress;
pub mod report;
pub mod run;
pub mod run_json;
pub mod sched;
pub mod sf;
pub mod size;
pub mod speed;
pub mod term;
pub mod topo_text;
pub mod tree;
pub mod tune;
pub mod tune_output;
pub mod workload;

pub use size::{format_size, format_size_lstopo, BinarySize, BinaryUnit};
pub use term::{terminal_columns, terminal_width, DEFAULT_WIDTH};
pub use tree::{Object, TreeNode};

/// Escapes text for HTML and SVG/XML, in text and in quoted attributes:
/// `&`, `<`, `>` and `"`.
pub fn escape(s: &str) -> String {
    replace_chars(
        s,
        &[
            ('&', "&amp;"),
            ('<', "&lt;"),
            ('>', "&gt;"),
            ('"', "&quot;"),
        ],
    )
}

/// `s` with every character found in `table` replaced by its text, each
/// character looked at once (so replacements are never replaced again).
pub(crate) fn replace_chars(s: &str, table: &[(char, &str)]) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match table.iter().find(|(from, _)| *from == c) {
            Some((_, to)) => out.push_str(to),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_quotes_once() {
        assert_eq!(
            escape(r#"a & b <c> "d" &amp;"#),
            "a &amp; b &lt;c&gt; &quot;d&quot; &amp;amp;"
        );
        assert_eq!(escape("σ × 1.5 ms"), "σ × 1.5 ms");
        assert_eq!(escape(""), "");
    }
}
