//! The one terminal width: `$COLUMNS` when it holds a positive number (the
//! user's override), else the width of the terminal on standard output
//! (asked through the `terminal_size` crate), else [`DEFAULT_WIDTH`].

/// The width used when the terminal's is unknown (not a terminal, or a
/// terminal reporting 0 columns).
pub const DEFAULT_WIDTH: usize = 80;

/// Columns to lay text out in, when known: `$COLUMNS` if it is a positive
/// number, else the size of the terminal on standard output; `None` when
/// neither says (stdout is not a terminal, or it reports 0 columns).
pub fn terminal_columns() -> Option<usize> {
    let env = std::env::var("COLUMNS").ok();
    let tty = terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0);
    columns_from(env.as_deref(), tty)
}

/// [`terminal_columns`], or [`DEFAULT_WIDTH`] when unknown.
pub fn terminal_width() -> usize {
    terminal_columns().unwrap_or(DEFAULT_WIDTH)
}

/// The rule of [`terminal_columns`] given what `$COLUMNS` holds and what
/// the terminal reports: a positive `$COLUMNS` wins; 0 means unknown.
pub fn columns_from(columns_env: Option<&str>, terminal: Option<u16>) -> Option<usize> {
    columns_env
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| terminal.map(usize::from).filter(|&c| c > 0))
}

/// Wraps a line of human output (a note, a warning) at 80 columns, at
/// spaces only, continuation lines indented by two: the one wrapping rule
/// of pinsight's notes.
pub fn wrap80(text: &str) -> String {
    textwrap::fill(
        text,
        textwrap::Options::new(80)
            .subsequent_indent("  ")
            .break_words(false)
            .word_splitter(textwrap::WordSplitter::NoHyphenation),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_env_overrides_the_terminal() {
        assert_eq!(columns_from(Some("120"), Some(200)), Some(120));
        assert_eq!(columns_from(Some(" 90 "), None), Some(90));
        assert_eq!(columns_from(None, Some(132)), Some(132));
    }

    #[test]
    fn zero_and_garbage_mean_unknown() {
        assert_eq!(columns_from(Some("0"), None), None);
        assert_eq!(columns_from(Some("wide"), Some(100)), Some(100));
        assert_eq!(columns_from(None, Some(0)), None);
        assert_eq!(columns_from(Some("0"), Some(0)), None);
        assert_eq!(columns_from(None, None).unwrap_or(DEFAULT_WIDTH), 80);
    }
}
