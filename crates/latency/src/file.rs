//! Loading latency matrix files: the one place this family of crates reads
//! a matrix from disk. Parsing itself is pure and lives in
//! `pinsight-latency-model` ([`LatencyMatrix::parse_all`]).

use std::path::{Path, PathBuf};

use pinsight_latency_model::{matrix::CsvMatrix, matrix::LatencyMatrix, MatrixError};

/// Why a matrix file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_MATRIX_BYTES`] (or never ends).
    #[error("{}: larger than {limit} bytes: not a latency matrix", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    /// The text is not a matrix; the error names the path as its origin.
    #[error(transparent)]
    Parse(#[from] MatrixError),
}

/// Largest matrix file read: 32 MiB, a full 2048-CPU matrix in
/// core-to-core-latency's CSV (only a regular file is read: `/dev/zero`
/// or a FIFO is refused unread).
pub const MAX_MATRIX_BYTES: u64 = 32 << 20;

/// `LatencyMatrix::load(path)` / `LatencyMatrix::load_all(path)`: read a
/// matrix file (our JSON or `core-to-core-latency --csv`) and parse it.
/// Bring it into scope with `use pinsight_latency::LoadMatrix;`.
pub trait LoadMatrix: Sized {
    /// Loads a matrix file: our JSON (first non-blank character `{`) or
    /// CSV otherwise; the first matrix of a CSV holding several (see
    /// [`LoadMatrix::load_all`]). Errors name the path.
    fn load(path: &Path) -> Result<Self, LoadError>;

    /// Every matrix of a file, in file order: one for our JSON, one per
    /// benchmark for `core-to-core-latency -b 1,2 --csv` output (see
    /// [`LatencyMatrix::parse_csv_all`]). Never empty. Errors name the path.
    fn load_all(path: &Path) -> Result<Vec<CsvMatrix>, LoadError>;
}

impl LoadMatrix for LatencyMatrix {
    fn load(path: &Path) -> Result<Self, LoadError> {
        let mut all = LatencyMatrix::load_all(path)?;
        Ok(all.swap_remove(0).matrix)
    }

    fn load_all(path: &Path) -> Result<Vec<CsvMatrix>, LoadError> {
        use pinsight_sys::fs::{read_bounded, BoundedReadError};
        let bytes = read_bounded(path, MAX_MATRIX_BYTES).map_err(|e| match e {
            BoundedReadError::Io(source) => LoadError::Read {
                path: path.to_path_buf(),
                source,
            },
            BoundedReadError::TooLarge { limit } => LoadError::TooLarge {
                path: path.to_path_buf(),
                limit,
            },
            e @ BoundedReadError::NotRegular { .. } => LoadError::Read {
                path: path.to_path_buf(),
                source: std::io::Error::other(e),
            },
        })?;
        let text = String::from_utf8(bytes).map_err(|_| LoadError::Read {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
        })?;
        Ok(LatencyMatrix::parse_all(
            &text,
            &path.display().to_string(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_sniffs_json_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = LatencyMatrix::new(vec![2, 3]);
        m.set(0, 1, 7.0);
        let json = dir.path().join("m.json");
        std::fs::write(&json, serde_json::to_string(&m).unwrap()).unwrap();
        let csv = dir.path().join("m.txt");
        std::fs::write(&csv, m.to_csv()).unwrap();
        let a = LatencyMatrix::load(&json).unwrap();
        let b = LatencyMatrix::load(&csv).unwrap();
        assert_eq!((a.cpus.clone(), a.get(0, 1)), (vec![2, 3], 7.0));
        assert_eq!((b.cpus.clone(), b.get(1, 0)), (vec![2, 3], 7.0));
        assert_eq!(
            b.source.as_deref(),
            Some(csv.display().to_string().as_str())
        );
        assert_eq!(LatencyMatrix::load_all(&csv).unwrap().len(), 1);
        std::fs::write(&json, "{\"cpus\":[0,1],\"ns\":[[0,1],[2,0]]}").unwrap();
        let e = LatencyMatrix::load(&json).unwrap_err();
        assert!(
            matches!(e, LoadError::Parse(MatrixError::Invalid { .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("not symmetric"), "{e}");
        let e = LatencyMatrix::load(&dir.path().join("missing.csv")).unwrap_err();
        assert!(matches!(e, LoadError::Read { .. }), "{e:?}");
        assert!(e.to_string().contains("missing.csv: cannot read"), "{e}");
    }
}
