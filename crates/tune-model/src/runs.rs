//! The runs CSV of `tune --from`: `p,e,smt,time_s[,energy_j]`.

use crate::{Config, Observation};

/// Why a runs CSV was refused. Every message is one line naming the row
/// (1-based line of the text) or column and what is allowed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunsError {
    /// No header line.
    #[error("runs CSV is empty: need a header line p,e,smt,time_s[,energy_j] and one row per run")]
    Empty,
    /// A required column is missing from the header.
    #[error("runs CSV header lacks column '{column}' (need p,e,smt,time_s; energy_j optional)")]
    MissingColumn {
        /// The column.
        column: &'static str,
    },
    /// A header names a column not allowed, or one twice.
    #[error("runs CSV header: column '{column}' is unknown or repeated (allowed once each: p, e, smt, time_s, energy_j)")]
    BadColumn {
        /// The column as written.
        column: String,
    },
    /// A row the CSV reader refused (e.g. a different number of fields).
    #[error("runs CSV line {line}: {message}")]
    Csv {
        /// Line (1-based).
        line: u64,
        /// What the reader said.
        message: String,
    },
    /// A field that is not a number of the allowed form.
    #[error("runs CSV line {line}, column {column}: '{value}' is not {allowed}")]
    BadNumber {
        /// Line (1-based).
        line: u64,
        /// Column name.
        column: &'static str,
        /// The field as written.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// A run on no core.
    #[error("runs CSV line {line}: p + e is 0; a run uses at least one core")]
    NoCore {
        /// Line (1-based).
        line: u64,
    },
    /// A header but no run.
    #[error("runs CSV has a header but no run: need one row per run")]
    NoRuns,
}

/// A field as shown in a one-line message: control characters escaped,
/// long fields cut.
pub(crate) fn shown(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(40)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

const COLUMNS: [&str; 5] = ["p", "e", "smt", "time_s", "energy_j"];

/// Parse the runs CSV: a header naming `p`, `e`, `smt`, `time_s` and
/// optionally `energy_j` (any order, surrounding blanks ignored), one row per
/// run; lines starting with `#` are comments. Counts are non-negative
/// integers, `time_s` a positive finite number, `energy_j` (may be empty) a
/// non-negative finite number.
pub fn parse_runs(text: &str) -> Result<Vec<Observation>, RunsError> {
    let mut rdr = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .has_headers(true)
        .from_reader(text.as_bytes());
    let csv_err = |e: csv::Error| RunsError::Csv {
        line: e.position().map_or(0, |p| p.line()),
        message: match e.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => format!("{len} fields, the header has {expected_len}"),
            csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_owned(),
            _ => e.to_string().replace('\n', " "),
        },
    };
    let header = rdr.headers().map_err(csv_err)?.clone();
    if header.is_empty() || header.iter().all(str::is_empty) {
        return Err(RunsError::Empty);
    }
    let mut index: [Option<usize>; 5] = [None; 5];
    for (i, name) in header.iter().enumerate() {
        match COLUMNS.iter().position(|c| *c == name) {
            Some(k) if index[k].is_none() => index[k] = Some(i),
            _ => {
                return Err(RunsError::BadColumn {
                    column: shown(name),
                })
            }
        }
    }
    let col = |k: usize| index[k].ok_or(RunsError::MissingColumn { column: COLUMNS[k] });
    let (ip, ie, is, it) = (col(0)?, col(1)?, col(2)?, col(3)?);
    let iej = index[4];
    let mut out = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(csv_err)?;
        let line = rec.position().map_or(0, |p| p.line());
        let field = |i: usize| rec.get(i).unwrap_or("");
        let count = |i: usize, column: &'static str| {
            field(i).parse::<u32>().map_err(|_| RunsError::BadNumber {
                line,
                column,
                value: shown(field(i)),
                allowed: "a non-negative integer",
            })
        };
        let p = count(ip, "p")?;
        let e = count(ie, "e")?;
        let smt = count(is, "smt")?;
        if p.checked_add(e).is_none_or(|n| n == 0) {
            return Err(RunsError::NoCore { line });
        }
        let time_s = match field(it).parse::<f64>() {
            Ok(t) if t.is_finite() && t > 0.0 => t,
            _ => {
                return Err(RunsError::BadNumber {
                    line,
                    column: "time_s",
                    value: shown(field(it)),
                    allowed: "a positive number of seconds",
                })
            }
        };
        let energy_j = match iej.map(field) {
            None | Some("") => None,
            Some(v) => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Some(x),
                _ => {
                    return Err(RunsError::BadNumber {
                        line,
                        column: "energy_j",
                        value: shown(v),
                        allowed: "a non-negative number of joules (or empty)",
                    })
                }
            },
        };
        out.push(Observation {
            config: Config { p, e, smt },
            time_s,
            energy_j,
        });
    }
    if out.is_empty() {
        return Err(RunsError::NoRuns);
    }
    Ok(out)
}
