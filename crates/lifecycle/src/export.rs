//! The export files of an experiment (`compare`, `mix`) behind one
//! interface, as hyperfine's `ExportManager`: the caller lists the files
//! asked for ([`ExportManager::add`]), the experiment's result implements
//! [`Exportable`] once, and [`ExportManager::write_results`] writes every
//! file crash-safe through `pinsight_lifecycle::output` (a temporary name
//! in the same directory, synced and renamed; a link at the name is
//! replaced, never followed).

use crate::output;
use std::path::{Path, PathBuf};

/// The formats every experiment exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// The whole result as pretty JSON (what `--json` prints).
    Json,
    /// One row per arm (compare) or per scheduler and metric (mix).
    Csv,
    /// A Markdown report.
    Markdown,
    /// A self-contained HTML report.
    Html,
}

impl ExportFormat {
    /// Every format, in the order the files are written.
    pub const ALL: [ExportFormat; 4] = [
        ExportFormat::Json,
        ExportFormat::Csv,
        ExportFormat::Markdown,
        ExportFormat::Html,
    ];
}

/// Why an export file was not written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The result could not be put in that format.
    #[error("{format:?} export: {reason}")]
    Serialize {
        /// The format.
        format: ExportFormat,
        /// Why.
        reason: String,
    },
    /// The file could not be written (the old file, if any, is whole).
    #[error(transparent)]
    Write(#[from] output::OutputError),
}

/// An experiment's result, in every export format.
pub trait Exportable {
    /// The file's contents in `format`.
    fn serialize(&self, format: ExportFormat) -> Result<Vec<u8>, ExportError>;
}

/// The export files asked for.
#[derive(Clone, Debug, Default)]
pub struct ExportManager {
    targets: Vec<(ExportFormat, PathBuf)>,
}

impl ExportManager {
    /// No files.
    pub fn new() -> ExportManager {
        ExportManager::default()
    }

    /// Asks for `path` in `format`.
    pub fn add(&mut self, format: ExportFormat, path: impl Into<PathBuf>) {
        self.targets.push((format, path.into()));
    }

    /// The files asked for, in the order given.
    pub fn targets(&self) -> impl Iterator<Item = (ExportFormat, &Path)> {
        self.targets.iter().map(|(f, p)| (*f, p.as_path()))
    }

    /// Whether no file was asked for.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Writes every file asked for; stops at the first that fails.
    pub fn write_results(&self, result: &dyn Exportable) -> Result<(), ExportError> {
        for (format, path) in &self.targets {
            let bytes = result.serialize(*format)?;
            output::write(path, &bytes)?;
        }
        Ok(())
    }
}

/// `value` as pretty JSON with a final newline (the JSON export of every
/// experiment).
pub fn json_bytes(value: &impl serde::Serialize) -> Result<Vec<u8>, ExportError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| ExportError::Serialize {
        format: ExportFormat::Json,
        reason: e.to_string(),
    })?;
    text.push('\n');
    Ok(text.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Two;
    impl Exportable for Two {
        fn serialize(&self, format: ExportFormat) -> Result<Vec<u8>, ExportError> {
            match format {
                ExportFormat::Json => json_bytes(&serde_json::json!({"a": 1})),
                ExportFormat::Csv => Ok(b"a\n1\n".to_vec()),
                other => Err(ExportError::Serialize {
                    format: other,
                    reason: "not offered".into(),
                }),
            }
        }
    }

    #[test]
    fn every_file_asked_for_is_written_and_a_failure_names_its_format() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = ExportManager::new();
        m.add(ExportFormat::Json, dir.path().join("r.json"));
        m.add(ExportFormat::Csv, dir.path().join("r.csv"));
        m.write_results(&Two).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("r.json")).unwrap(),
            "{\n  \"a\": 1\n}\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("r.csv")).unwrap(),
            "a\n1\n"
        );
        m.add(ExportFormat::Html, dir.path().join("r.html"));
        let e = m.write_results(&Two).unwrap_err();
        assert!(e.to_string().contains("Html"), "{e}");
        assert!(!dir.path().join("r.html").exists());
    }
}
