//! A made report ([`crate::run::Outcome`]) written and shown:
//! what was not measured worded ([`super::skip`]), the JSON, the matrix
//! measured here and the HTML page written crash-safe, and the terminal
//! summary drawn at the terminal's width.

use super::skip::skipped;
use super::{html, terminal_summary};
use crate::run::Outcome;
use crate::ReportData;
use pinsight_lifecycle::output::{self, OutputError};

/// What `pinsight report` prints once its files are written: the data
/// (`--json`) or the summary.
#[derive(Debug)]
pub struct Shown {
    pub data: ReportData,
    pub summary: String,
}

/// Why a report's files were not all written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// Words the skips into the data, writes the JSON, the matrix (when
/// measured here) and the HTML page, in that order, and draws the summary.
pub fn write(outcome: Outcome) -> Result<Shown, WriteError> {
    let Outcome {
        mut data,
        planned,
        missing,
        files,
        measured_latency,
    } = outcome;
    data.skipped = skipped(&planned, &missing);
    let json = serde_json::to_string_pretty(&data)?;
    output::write(&files.json, (json + "\n").as_bytes())?;
    let matrix = data.latency.as_ref().filter(|_| measured_latency);
    if let Some(m) = matrix {
        let text = serde_json::to_string_pretty(m)?;
        output::write(&files.latency, (text + "\n").as_bytes())?;
    }
    output::write(&files.html, html(&data).as_bytes())?;
    let written_matrix = matrix.map(|_| files.latency.display().to_string());
    let summary = terminal_summary(
        &data,
        &files.html.display().to_string(),
        &files.json.display().to_string(),
        written_matrix.as_deref(),
        summary_width(pinsight_term::terminal_width()),
    );
    Ok(Shown { data, summary })
}

/// Columns to wrap the summary at: the terminal's width
/// ([`pinsight_term::terminal_width`]: `$COLUMNS`, else the terminal, else 80),
/// kept within 40..=120.
pub fn summary_width(columns: usize) -> usize {
    columns.clamp(40, 120)
}

#[cfg(test)]
mod tests {
    use super::summary_width;

    #[test]
    fn summary_width_keeps_the_terminal_width_within_bounds() {
        // Unknown width is 80 (it was 100: wider than the 80-column rule).
        assert_eq!(summary_width(pinsight_term::DEFAULT_WIDTH), 80);
        assert_eq!(summary_width(100), 100);
        assert_eq!(summary_width(20), 40);
        assert_eq!(summary_width(300), 120);
    }
}
