//! Text from outside (arguments, archive entry names, file contents)
//! made safe to print in a one-line message.

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

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(shown("plain é"), "plain é");
        assert_eq!(shown("a\nb\u{1b}[31m\u{9b}"), "a\\nb\\u{1b}[31m\\u{9b}");
        assert!(matches!(shown("x"), std::borrow::Cow::Borrowed(_)));
    }
}
