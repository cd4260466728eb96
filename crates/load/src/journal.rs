//! The journal a daemon keeps on stdout (`irq --watch` here, and
//! `balance --watch`, built on this crate's measurement): its opening
//! line, one line per decision and its ending. With JSON, one object per
//! line (JSON Lines, for a journal reader); else the text views' lines,
//! wrapped at 80 columns when stdout is a terminal (one line each for
//! the system journal otherwise). Each call returns the text to print,
//! line end included, or nothing.

use serde::Serialize;
use std::io::IsTerminal;

/// How a daemon's journal is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Journal {
    /// JSON Lines instead of text.
    pub json: bool,
    /// No opening line and no text ending (JSON and decisions stay).
    pub quiet: bool,
    /// Text lines are wrapped at 80 columns.
    pub terminal: bool,
}

impl Journal {
    /// The journal on this process's stdout (wrapped when it is a
    /// terminal).
    pub fn stdout(json: bool, quiet: bool) -> Journal {
        let terminal = std::io::stdout().is_terminal();
        Journal {
            json,
            quiet,
            terminal,
        }
    }

    /// The opening line `text` makes (what the daemon does, where it
    /// saves its state): text only, nothing with JSON or quiet.
    pub fn start(&self, text: impl FnOnce() -> String) -> String {
        if self.json || self.quiet {
            String::new()
        } else {
            format!("{}\n", text())
        }
    }

    /// One decision: its JSON object, else `text`'s line (an empty one
    /// says nothing).
    pub fn line<T: Serialize>(&self, decision: &T, text: impl FnOnce() -> String) -> String {
        let line = if self.json {
            serde_json::to_string(decision).unwrap_or_default()
        } else if self.terminal {
            pinsight_term::wrap80(&text())
        } else {
            text()
        };
        if line.is_empty() {
            line
        } else {
            line + "\n"
        }
    }

    /// How the daemon ended: its JSON object, else the text view `text`
    /// makes (nothing when quiet).
    pub fn end<T: Serialize>(&self, end: &T, text: impl FnOnce() -> String) -> String {
        if self.json {
            serde_json::to_string(end).unwrap_or_default() + "\n"
        } else if self.quiet {
            String::new()
        } else {
            text()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Decision {
        interval: u64,
    }

    fn journal(json: bool, quiet: bool, terminal: bool) -> Journal {
        Journal {
            json,
            quiet,
            terminal,
        }
    }

    #[test]
    fn json_lines_or_text_lines_wrapped_on_a_terminal() {
        let d = Decision { interval: 2 };
        let long = || "word ".repeat(30).trim_end().to_string();
        for quiet in [false, true] {
            let j = journal(true, quiet, true);
            assert_eq!(j.start(long), "");
            assert_eq!(j.line(&d, long), "{\"interval\":2}\n");
            assert_eq!(j.end(&d, long), "{\"interval\":2}\n");
        }
        let text = journal(false, false, false);
        assert_eq!(text.start(|| "watching".into()), "watching\n");
        assert_eq!(text.line(&d, long), long() + "\n");
        assert_eq!(text.line(&d, String::new), "");
        assert_eq!(text.end(&d, || "ended\n".into()), "ended\n");
        let wrapped = journal(false, false, true).line(&d, long);
        assert!(wrapped.lines().count() > 1, "{wrapped}");
        assert!(wrapped.lines().all(|l| l.len() <= 80), "{wrapped}");
        let quiet = journal(false, true, false);
        assert_eq!(quiet.start(long), "");
        assert_eq!(quiet.line(&d, long), long() + "\n");
        assert_eq!(quiet.end(&d, long), "");
    }
}
