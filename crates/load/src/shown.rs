//! `pinsight load`'s readings as it shows them on stdout (through
//! [`pinsight_term::out`]): how many readings a live series takes, the
//! format of each, the refreshing screen on a terminal, and the CPUs left
//! out of an interval said on stderr.

use crate::view::{self, Style};
use crate::{LoadError, LoadReport, Watch};
use pinsight_sys::progress::{Progress, Silent};
use pinsight_term::out;
use std::io::IsTerminal;
use std::time::Duration;

/// The format asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The whole view (a refreshing screen for a series on a terminal).
    Text,
    /// JSON: one document, or one line per reading of a series.
    Json,
    /// The OpenMetrics text format.
    OpenMetrics,
}

impl Format {
    /// How one reading is written: a series of JSON readings is JSON
    /// Lines, one reading (`whole`) a pretty document.
    pub fn style(self, whole: bool) -> Style {
        match self {
            Format::Text => Style::Text,
            Format::Json if whole => Style::Json,
            Format::Json => Style::JsonLine,
            Format::OpenMetrics => Style::OpenMetrics,
        }
    }
}

/// A live series of readings, one per interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series {
    pub format: Format,
    /// Readings to take (`u64::MAX`: until a signal).
    pub count: u64,
    /// One whole reading, with a progress bar while it measures.
    pub once: bool,
    /// A refreshing screen instead of one reading after another.
    pub screen: bool,
    /// The CPUs left out of an interval are not said on stderr.
    pub quiet: bool,
}

impl Series {
    /// `once` (one reading) or `count` readings, else until a signal. An
    /// OpenMetrics series is one exposition unless `count` is given (a
    /// scraper's file holds one, ending in `# EOF`); a text series
    /// refreshes the screen when `terminal` (stdout is one).
    pub fn new(
        format: Format,
        once: bool,
        count: Option<u64>,
        quiet: bool,
        terminal: bool,
    ) -> Series {
        let once = once || (format == Format::OpenMetrics && count.is_none());
        Series {
            format,
            count: if once { 1 } else { count.unwrap_or(u64::MAX) },
            once,
            screen: !once && format == Format::Text && terminal,
            quiet,
        }
    }

    /// [`Series::new`] for this process's stdout.
    pub fn on_stdout(format: Format, once: bool, count: Option<u64>, quiet: bool) -> Series {
        Series::new(format, once, count, quiet, std::io::stdout().is_terminal())
    }
}

/// One reading said: the CPUs left out of it on stderr (a CPU whose
/// counters went backwards, overflowed or could not be read; whatever the
/// format, unless `quiet`), then the reading on stdout in `style`.
pub fn say(r: &LoadReport, style: Style, quiet: bool) {
    if !quiet {
        out::stderr(format_args!("{}", view::unavailable_cpus(r)));
    }
    let text = view::reading(r, style).expect("a reading serializes");
    out::stdout(format_args!("{text}"));
}

impl Watch {
    /// Takes and shows the readings of `series`, one per `interval`
    /// ([`Watch::next`]; `bar` shows a single reading's progress): a
    /// terminal's screen refreshed, else each reading said in turn (text
    /// readings a blank line apart). A signal ends the series with
    /// [`LoadError::Interrupted`].
    pub fn show(
        &mut self,
        interval: Duration,
        series: &Series,
        bar: &mut dyn Progress,
    ) -> Result<(), LoadError> {
        let mut silent = Silent;
        for n in 0..series.count {
            let progress: &mut dyn Progress = if series.once { &mut *bar } else { &mut silent };
            let r = self.next(interval, progress)?;
            if series.screen {
                let frame = view::load_frame(&r, pinsight_term::terminal_rows());
                out::stdout_terminal(format_args!("{frame}"));
            } else {
                if n > 0 && series.format == Format::Text {
                    out::stdout(format_args!("\n"));
                }
                say(&r, series.format.style(series.once), series.quiet);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_counts_its_readings_and_refreshes_text_on_a_terminal() {
        let s = Series::new(Format::Text, false, None, false, true);
        assert_eq!((s.count, s.once, s.screen), (u64::MAX, false, true));
        let s = Series::new(Format::Text, false, Some(3), false, false);
        assert_eq!((s.count, s.once, s.screen), (3, false, false));
        let s = Series::new(Format::Json, true, None, false, true);
        assert_eq!((s.count, s.once, s.screen), (1, true, false));
        // One OpenMetrics exposition unless a count is given.
        let s = Series::new(Format::OpenMetrics, false, None, false, true);
        assert_eq!((s.count, s.once, s.screen), (1, true, false));
        let s = Series::new(Format::OpenMetrics, false, Some(2), false, true);
        assert_eq!((s.count, s.once, s.screen), (2, false, false));
    }

    #[test]
    fn json_is_a_document_alone_and_lines_in_a_series() {
        assert_eq!(Format::Json.style(true), Style::Json);
        assert_eq!(Format::Json.style(false), Style::JsonLine);
        assert_eq!(Format::Text.style(false), Style::Text);
        assert_eq!(Format::OpenMetrics.style(true), Style::OpenMetrics);
    }
}
