//! The terminal mechanics every pinsight view shares, with no domain
//! knowledge: the terminal width ([`terminal_width`]), the one wrapper
//! ([`wrap`], [`fill`], [`wrap80`]), display widths, binary size units
//! ([`size`]), the HTML/XML escaper ([`escape`]), the one terminal
//! progress bar ([`progress::Bar`]) and writing to stdout and stderr
//! without panicking on a closed pipe, escaped ([`out`]). Each feature's
//! views live in the feature's own crate and use these.
//!
//! The one terminal width: `$COLUMNS` when it holds a positive number (the
//! user's override), else the width of the terminal on standard output
//! (asked through the `terminal_size` crate), else [`DEFAULT_WIDTH`].
//! Text from outside (process and thread names, /proc and /sys text, file
//! contents, specs, the environment) is escaped where it enters a view by
//! the one escaper, `pinsight_sys::text::shown` and `shown_lines`.

#![forbid(unsafe_code)]

pub mod out;
pub mod progress;
pub mod size;

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

/// Lines a full-screen view may use: `$LINES` when it holds a positive
/// number, else the height of the terminal on standard output, else 24
/// (the classic terminal's).
pub fn terminal_rows() -> usize {
    let env = std::env::var("LINES").ok();
    let tty = terminal_size::terminal_size_of(std::io::stdout()).map(|(_, h)| h.0);
    columns_from(env.as_deref(), tty).unwrap_or(24)
}

/// The rule of [`terminal_columns`] given what `$COLUMNS` holds and what
/// the terminal reports: a positive `$COLUMNS` wins; 0 means unknown.
pub fn columns_from(columns_env: Option<&str>, terminal: Option<u16>) -> Option<usize> {
    columns_env
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| terminal.map(usize::from).filter(|&c| c > 0))
}

/// How [`wrap`] lays text out: `width` columns in all (indent included),
/// the first line starting with `first` and every other line with `rest`
/// (a hanging indent), and what to do with a word wider than a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wrap<'a> {
    /// Columns per line, the indent included (display width).
    pub width: usize,
    /// What the first line of the text starts with.
    pub first: &'a str,
    /// What every other line starts with.
    pub rest: &'a str,
    /// A word wider than a line is broken after one of `,;:/=` or before
    /// `(` (at the width only when it has no such place); when `false` it
    /// stays whole on a line of its own (a path, a URL, a command line).
    pub break_long_words: bool,
}

impl<'a> Wrap<'a> {
    /// `width` columns, no indent, long words kept whole.
    pub const fn new(width: usize) -> Self {
        Wrap {
            width,
            first: "",
            rest: "",
            break_long_words: false,
        }
    }

    /// The first line starts with `first`, the others with `rest`.
    pub const fn indent(self, first: &'a str, rest: &'a str) -> Self {
        Wrap {
            first,
            rest,
            ..self
        }
    }

    /// Break words wider than a line at punctuation (see
    /// [`Wrap::break_long_words`]).
    pub const fn break_long_words(self) -> Self {
        Wrap {
            break_long_words: true,
            ..self
        }
    }
}

/// The one word wrapper of pinsight: `text` as lines of at most
/// `how.width` display columns (textwrap's first-fit algorithm). Lines
/// break at spaces; a unit stays on the line of its number ("1.77 ms"
/// never becomes "1.77" / "ms"); newlines in `text` are kept. A word wider
/// than a line is broken at punctuation or kept whole, as `how` says.
/// Lines carry no trailing spaces and no newline; an empty text gives one
/// line holding the first indent.
pub fn wrap(text: &str, how: Wrap<'_>) -> Vec<String> {
    use textwrap::core::Word;
    let first_w = how.width.saturating_sub(display_width(how.first)).max(1);
    let rest_w = how.width.saturating_sub(display_width(how.rest)).max(1);
    let mut out: Vec<String> = Vec::new();
    for para in text.split('\n') {
        let words = glued_words(para);
        let piece_w = if out.is_empty() {
            first_w.min(rest_w)
        } else {
            rest_w
        };
        let mut frags: Vec<Word<'_>> = Vec::new();
        for w in &words {
            let pieces = if how.break_long_words {
                split_word(w, piece_w)
            } else {
                vec![w.as_str()]
            };
            let last = pieces.len() - 1;
            for (i, p) in pieces.into_iter().enumerate() {
                frags.push(Word {
                    word: p,
                    // The pieces of one word are joined without a space.
                    whitespace: if i == last { " " } else { "" },
                    penalty: "",
                    width: display_width(p),
                });
            }
        }
        let widths = if out.is_empty() {
            [first_w as f64, rest_w as f64]
        } else {
            [rest_w as f64, rest_w as f64]
        };
        for line in textwrap::wrap_algorithms::wrap_first_fit(&frags, &widths) {
            let mut s = String::from(if out.is_empty() { how.first } else { how.rest });
            for (i, f) in line.iter().enumerate() {
                s.push_str(f.word);
                if i + 1 < line.len() {
                    s.push_str(f.whitespace);
                }
            }
            out.push(s.trim_end().to_string());
        }
    }
    out
}

/// [`wrap`], each line ending in a newline.
pub fn fill(text: &str, how: Wrap<'_>) -> String {
    let mut out = String::new();
    for l in wrap(text, how) {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Wraps a line of human output (a note, a warning) at 80 columns, at
/// spaces only, continuation lines indented by two: the rule of
/// pinsight's notes ([`wrap`] at [`DEFAULT_WIDTH`]).
pub fn wrap80(text: &str) -> String {
    wrap(text, Wrap::new(DEFAULT_WIDTH).indent("", "  ")).join("\n")
}

/// Display width of `s` in terminal columns (`σ`, `…`, `×` count as one).
pub fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Units that stay on the line of their number.
const UNITS: &[&str] = &[
    "ns", "µs", "us", "ms", "s", "min", "h", "B", "KiB", "MiB", "GiB", "TiB", "kB", "MB", "GB",
    "Hz", "kHz", "MHz", "GHz", "J", "mJ", "kJ", "W", "mW", "%",
];

/// The words of `para` (split at spaces), a unit glued to the number before
/// it by one space.
fn glued_words(para: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in para.split(' ').filter(|w| !w.is_empty()) {
        let unit = UNITS.contains(&word.trim_end_matches([',', ';', ')']));
        let after_number = out
            .last()
            .and_then(|w| w.chars().last())
            .is_some_and(|c| c.is_ascii_digit());
        match out.last_mut() {
            Some(last) if unit && after_number => {
                last.push(' ');
                last.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// Splits a word wider than `max` at punctuation (see
/// [`Wrap::break_long_words`]); every piece but the last fills a line.
fn split_word(word: &str, max: usize) -> Vec<&str> {
    let char_w = |c: char| display_width(c.encode_utf8(&mut [0; 4]));
    let mut pieces = Vec::new();
    let mut rest = word;
    while display_width(rest) > max {
        // The last allowed break within `max` columns.
        let mut cut = None;
        let mut w = 0;
        for (i, c) in rest.char_indices() {
            if w + char_w(c) > max {
                break;
            }
            w += char_w(c);
            let end = i + c.len_utf8();
            if ",;:/=".contains(c) && end < rest.len() {
                cut = Some(end);
            } else if c == '(' && i > 0 {
                cut = Some(i);
            }
        }
        let end = cut.unwrap_or_else(|| {
            // No place to break: only then cut at the width.
            let mut w = 0;
            let mut end = 0;
            for (i, c) in rest.char_indices() {
                if w + char_w(c) > max {
                    break;
                }
                w += char_w(c);
                end = i + c.len_utf8();
            }
            end.max(rest.chars().next().map_or(1, char::len_utf8))
        });
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// The widest piece of `text` that [`wrap`] with
/// [`Wrap::break_long_words`] cannot break (a word, its unit included, up
/// to its last allowed break): the narrowest column it fits without a cut.
pub fn longest_unbreakable(text: &str) -> usize {
    let mut longest = 0;
    for word in text.split('\n').flat_map(glued_words) {
        let mut piece = 0;
        let mut chars = word.chars().peekable();
        let mut first = true;
        while let Some(c) = chars.next() {
            // A break before '(' (not at the start of the word).
            if c == '(' && !first {
                longest = longest.max(piece);
                piece = 0;
            }
            piece += display_width(c.encode_utf8(&mut [0; 4]));
            // A break after ",;:/=" (not at the end of the word).
            if ",;:/=".contains(c) && chars.peek().is_some() {
                longest = longest.max(piece);
                piece = 0;
            }
            first = false;
        }
        longest = longest.max(piece);
    }
    longest
}

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
pub fn replace_chars(s: &str, table: &[(char, &str)]) -> String {
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

    #[test]
    fn wraps_with_a_hanging_indent() {
        let w = Wrap::new(9).indent("  * ", "    ");
        assert_eq!(
            fill("aaa bbb ccc ddd", w),
            "  * aaa\n    bbb\n    ccc\n    ddd\n"
        );
        assert_eq!(
            fill("one two", Wrap::new(80).indent("- ", "  ")),
            "- one two\n"
        );
        assert_eq!(
            fill("a bb ccc dddd", Wrap::new(6).indent("", "  ")),
            "a bb\n  ccc\n  dddd\n"
        );
    }

    #[test]
    fn long_words_stay_whole_unless_asked() {
        let w = Wrap::new(8);
        assert_eq!(
            wrap("averyveryverylongword x", w),
            ["averyveryverylongword", "x"]
        );
        assert_eq!(
            wrap("OMP_PLACES={0},{1},{2}", Wrap::new(14).break_long_words()),
            ["OMP_PLACES=", "{0},{1},{2}"]
        );
        // No place to break: cut at the width, only when asked.
        assert_eq!(
            wrap("abcdefgh", Wrap::new(3).break_long_words()),
            ["abc", "def", "gh"]
        );
    }

    #[test]
    fn units_newlines_and_empty_text() {
        assert_eq!(wrap("took 3.16 ms", Wrap::new(10)), ["took", "3.16 ms"]);
        assert_eq!(
            wrap("a\n\nb", Wrap::new(10).indent("", "  ")),
            ["a", "", "  b"]
        );
        assert_eq!(wrap("", Wrap::new(10).indent("  ", "  ")), [""]);
        assert_eq!(wrap80("x"), "x");
        let long = "word ".repeat(30);
        assert!(wrap80(&long).lines().all(|l| l.len() <= 80));
        assert!(wrap80(&long).lines().skip(1).all(|l| l.starts_with("  w")));
    }

    #[test]
    fn display_widths_count_columns_not_bytes() {
        assert_eq!(display_width("1.07× σ…"), 8);
        assert_eq!(wrap("ab ×× cd", Wrap::new(5)), ["ab ××", "cd"]);
    }

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
