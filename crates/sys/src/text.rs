//! Text from outside (arguments, archive entry names, file contents,
//! process and thread names, /proc and /sys text, the environment) made
//! safe to print: the one escaper of terminal text. `shown` for a value
//! quoted in a one-line message or a table cell, [`shown_lines`] for a
//! whole view or message whose line breaks are its own.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL, C1 — newlines and the
/// terminal's escape included) written as a Rust escape (`\u{1b}`, `\n`),
/// the rest unchanged: a message quoting outside text stays on one line
/// and never writes raw control bytes to a terminal.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// `text` safe to print as it is laid out: [`shown`] on each line, the
/// line breaks (`\n`) and tabs kept. Every other control character (the
/// terminal's escape, `\r`, BEL, C1) is written as a Rust escape, so no
/// view, however its text came in, moves the cursor, retitles the window
/// or clears the screen.
pub fn shown_lines(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{shown, shown_lines};

    #[test]
    fn whole_views_keep_line_breaks_and_tabs_only() {
        assert_eq!(
            shown_lines("a\tb\n\u{1b}]0;PWN\u{7}\u{1b}[2J\r\u{9b}x\n"),
            "a\tb\n\\u{1b}]0;PWN\\u{7}\\u{1b}[2J\\r\\u{9b}x\n"
        );
        assert!(matches!(shown_lines("a\nb"), std::borrow::Cow::Borrowed(_)));
        // Escaping twice changes nothing more: a backslash is not a control.
        let once = shown_lines("\u{1b}[31m").into_owned();
        assert_eq!(shown_lines(&once), once);
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(shown("plain é"), "plain é");
        assert_eq!(shown("a\nb\u{1b}[31m\u{9b}"), "a\\nb\\u{1b}[31m\\u{9b}");
        assert!(matches!(shown("x"), std::borrow::Cow::Borrowed(_)));
    }
}
