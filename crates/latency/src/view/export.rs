//! The files `latency` writes besides its output: the matrix as CSV (with
//! a comment line saying where it came from) and as SVG/PNG heatmaps
//! ([`chart`](super::chart)), each written crash-safe.

use super::chart::{write_png, write_svg, ChartError, ChartOptions, KindBand};
use crate::report::{chart_title, csv_comment, Origin};
use pinsight_latency_model::LatencyMatrix;
use pinsight_lifecycle::output::OutputError;
use std::path::Path;

/// Where the matrix is written, each when given.
#[derive(Clone, Copy, Debug, Default)]
pub struct Exports<'a> {
    /// The matrix as CSV.
    pub csv: Option<&'a Path>,
    /// The SVG heatmap.
    pub svg: Option<&'a Path>,
    /// The PNG heatmap.
    pub png: Option<&'a Path>,
}

impl<'a> Exports<'a> {
    /// The files written, in the order CSV, SVG, PNG.
    pub fn written(&self) -> Vec<&'a Path> {
        [self.csv, self.svg, self.png]
            .into_iter()
            .flatten()
            .collect()
    }

    /// Whether a chart (SVG or PNG) is asked for.
    pub fn charts(&self) -> bool {
        self.svg.is_some() || self.png.is_some()
    }
}

/// Why a file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The CSV file.
    #[error(transparent)]
    Csv(OutputError),
    /// A chart.
    #[error(transparent)]
    Chart(#[from] ChartError),
}

/// Writes `matrix` (from `origin`) to each file of `to`; the charts mark
/// the core kinds `kinds`.
pub fn export(
    matrix: &LatencyMatrix,
    origin: &Origin,
    kinds: Vec<KindBand>,
    to: &Exports<'_>,
) -> Result<(), ExportError> {
    if let Some(path) = to.csv {
        let text = format!("{}\n{}", csv_comment(matrix, origin), matrix.to_csv());
        pinsight_lifecycle::output::write(path, text.as_bytes()).map_err(ExportError::Csv)?;
    }
    if to.charts() {
        let opts = ChartOptions {
            title: chart_title(matrix, origin),
            kinds,
        };
        if let Some(path) = to.svg {
            write_svg(matrix, &opts, path)?;
        }
        if let Some(path) = to.png {
            write_png(matrix, &opts, path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_written_are_listed_csv_svg_png() {
        let (csv, png) = (Path::new("m.csv"), Path::new("m.png"));
        let to = Exports {
            csv: Some(csv),
            svg: None,
            png: Some(png),
        };
        assert_eq!(to.written(), vec![csv, png]);
        assert!(to.charts());
        assert!(!Exports::default().charts() && Exports::default().written().is_empty());
    }
}
