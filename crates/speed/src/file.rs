//! A speed measurement read back from a file: `pinsight speed --json`'s
//! document, or the `speed` object of `pinsight report --json`'s, so that
//! a report of a recorded machine (or of this one, without measuring
//! again) can show the speed measured where it was.

use crate::summary::SpeedReport;
use pinsight_sys::fs::{read_bounded_string, BoundedReadError};
use std::path::{Path, PathBuf};

/// Largest speed file read: a measurement of 8192 CPUs with three kernels
/// is about 5 MiB of pretty JSON.
pub const MAX_SPEED_FILE_BYTES: u64 = 16 << 20;

/// Why a speed file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SpeedFileError {
    /// The file could not be read (missing, not a regular file, too large).
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: BoundedReadError,
    },
    /// It is not a speed measurement.
    #[error(
        "{}: not a speed measurement (`pinsight speed --json`'s output, or \
         `pinsight report --json`'s with a speed part): {reason}",
        path.display()
    )]
    Format { path: PathBuf, reason: String },
    /// It holds no CPU.
    #[error("{}: the speed measurement holds no CPU", path.display())]
    Empty { path: PathBuf },
}

/// Reads the speed measurement in `path` (see the module documentation).
pub fn load_report(path: &Path) -> Result<SpeedReport, SpeedFileError> {
    let text =
        read_bounded_string(path, MAX_SPEED_FILE_BYTES).map_err(|source| SpeedFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let report = parse_report(&text).map_err(|reason| SpeedFileError::Format {
        path: path.to_path_buf(),
        reason,
    })?;
    if report.cpus.is_empty() {
        return Err(SpeedFileError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(report)
}

/// The measurement in `text`: a speed document, or a report document's
/// `speed` part. Pure.
pub fn parse_report(text: &str) -> Result<SpeedReport, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let doc = match value.get("speed") {
        // A report's document: its speed part (null when it measured none).
        Some(serde_json::Value::Null) => {
            return Err("the report measured no speed".to_owned());
        }
        Some(speed) if value.get("cpus").is_none() => speed.clone(),
        _ => value,
    };
    serde_json::from_value(doc).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_speed_document_is_refused_with_its_reason() {
        assert!(parse_report("not json").is_err());
        assert!(parse_report("{}").unwrap_err().contains("missing field"));
        assert_eq!(
            parse_report(r#"{"speed": null}"#).unwrap_err(),
            "the report measured no speed"
        );
    }
}
