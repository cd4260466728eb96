//! The files `latency` writes besides its output: the matrix as CSV (with
//! a comment line saying where it came from) and as SVG/PNG heatmaps
//! ([`chart`](super::chart)), each written crash-safe.

use super::chart::{write_png, write_svg, ChartError, ChartOptions, KindBand};
use crate::report::{chart_title, csv_comment, Origin};
use crate::request::{Input, Names};
use pinsight_latency_model::LatencyMatrix;
use pinsight_lifecycle::output::OutputError;
use std::path::{Path, PathBuf};

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

    /// Whether each file can be written, by the one check of the write
    /// itself ([`pinsight_lifecycle::output::check`]): made before
    /// measuring, so a typo in a directory name fails at once instead of
    /// after the whole measurement. The first that cannot, in the order
    /// CSV, SVG, PNG.
    pub fn check(&self) -> Result<(), Unwritable> {
        let files = [
            (Export::Csv, self.csv),
            (Export::Svg, self.svg),
            (Export::Png, self.png),
        ];
        for (file, path) in files {
            if let Some(path) = path {
                pinsight_lifecycle::output::check(path).map_err(|error| Unwritable {
                    file,
                    path: path.to_owned(),
                    error,
                })?;
            }
        }
        Ok(())
    }

    /// Whether a chart (SVG or PNG) is asked for.
    pub fn charts(&self) -> bool {
        self.svg.is_some() || self.png.is_some()
    }
}

/// One of the files [`Exports`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    Csv,
    Svg,
    Png,
}

/// A file [`Exports::check`] found that cannot be written: which, where,
/// and why, in words that follow the path.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path.display(), match error {
    OutputError::Directory { .. } => "is a directory (expected a file name)".to_string(),
    OutputError::NoDirectory { dir, .. } => format!(
        "cannot write there: directory {} does not exist",
        dir.display()
    ),
    other => format!("cannot write: {}", other.reason()),
})]
pub struct Unwritable {
    pub file: Export,
    pub path: PathBuf,
    pub error: OutputError,
}

impl Unwritable {
    /// The message after the file's input, named by `name`.
    pub fn named(&self, name: Names<'_>) -> String {
        format!("{} {self}", name(Input::Export(self.file)))
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

    #[test]
    fn unwritable_files_are_found_before_measuring() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/m.svg");
        let to = Exports {
            csv: Some(dir.path()),
            svg: Some(&missing),
            png: None,
        };
        let e = to.check().unwrap_err();
        assert_eq!(e.file, Export::Csv);
        assert!(
            e.to_string()
                .ends_with(": is a directory (expected a file name)"),
            "{e}"
        );
        let to = Exports {
            svg: Some(&missing),
            ..Exports::default()
        };
        let e = to.check().unwrap_err();
        assert_eq!(e.file, Export::Svg);
        let flag = |i: Input| match i {
            Input::Export(Export::Svg) => "--svg",
            _ => "?",
        };
        assert!(e.named(&flag).starts_with("--svg "), "{e}");
        assert!(
            e.to_string()
                .contains("m.svg: cannot write there: directory "),
            "{e}"
        );
        assert!(Exports::default().check().is_ok());
    }

    #[test]
    fn a_machine_of_two_kinds_has_a_band_each_and_one_kind_none() {
        let bands = KindBand::of(&pinsight_testkit::topology::i7_1370p());
        assert_eq!(bands.len(), 2, "{bands:?}");
        assert_eq!(bands[0].cpus.len() + bands[1].cpus.len(), 20);
        assert!(KindBand::of(&pinsight_testkit::topology::smt_machine()).is_empty());
    }
}
