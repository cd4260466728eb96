//! The views of scheduling: `pinsight simulate`'s tables and verdict
//! ([`simulate`], whose program table and verdict `mix` shows too),
//! `pinsight sf`'s report of per-thread speedup factors ([`sf`]), and the
//! live scheduler's and `mix`'s reports and exports ([`mix`]).

pub mod mix;
pub mod sf;
pub mod simulate;

/// Lines for stderr: each of `lines` as `pinsight: LABEL: LINE`, wrapped
/// to 80 columns and ended by a newline (empty when there is none).
pub fn notices<T: std::fmt::Display>(label: &str, lines: &[T]) -> String {
    lines
        .iter()
        .map(|l| pinsight_term::wrap80(&format!("pinsight: {label}: {l}")) + "\n")
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn notices_are_labelled_wrapped_lines() {
        assert_eq!(super::notices::<&str>("warning", &[]), "");
        let long = "word ".repeat(30);
        let text = super::notices("note", &["short", long.trim()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "pinsight: note: short");
        assert!(lines[1].starts_with("pinsight: note: word"));
        assert!(lines.len() > 2 && lines.iter().all(|l| l.chars().count() <= 80));
        assert!(text.ends_with('\n'));
    }
}
