//! Why a latency matrix could not be read or is not well formed. The
//! messages are sentences in the terms of the file (origin, line, column,
//! field), so a caller can print them as they are; the data is in the
//! fields for callers that decide something from it.

/// Reading a matrix file's text failed ([`crate::LatencyMatrix::parse_all`]
/// and friends). `origin` is the name the caller gave the input (a path).
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// A `# cpus:` line after data, or a second one.
    #[error("{origin}:{line}: '# cpus:' must come before the matrix, and be given once")]
    CpusLinePlacement { origin: String, line: usize },
    /// A `# cpus:` line that is not a list of distinct CPU ids.
    #[error("{origin}:{line}: {source}")]
    CpusLine {
        origin: String,
        line: usize,
        #[source]
        source: CpuListError,
    },
    /// A benchmark title line (`2) ...`) with no rows after it.
    #[error("{origin}:{line}: benchmark title '{title}' is followed by no matrix")]
    TitleWithoutMatrix {
        origin: String,
        line: usize,
        title: String,
    },
    /// No data line at all.
    #[error(
        "{origin}: found 0 matrix rows, expected at least 2 (one line per CPU, \
         comma-separated nanoseconds as written by core-to-core-latency --csv)"
    )]
    NoRows { origin: String },
    /// A row with another number of fields than the first of its block.
    #[error(
        "{origin}:{line}: row has {fields} fields, expected {expected} (one per CPU, \
         like line {first_line})"
    )]
    RaggedRow {
        origin: String,
        line: usize,
        fields: usize,
        expected: usize,
        first_line: usize,
    },
    /// A block of fewer than 2 rows or fields.
    #[error(
        "{origin}:{line}: found {rows} matrix row(s) of {fields} field(s), expected \
         at least 2 (one line per CPU, comma-separated nanoseconds as written by \
         core-to-core-latency --csv)"
    )]
    TooSmall {
        origin: String,
        line: usize,
        rows: usize,
        fields: usize,
    },
    /// A block whose row count is not a multiple of its field count.
    #[error(
        "{origin}:{first_line}-{last_line}: {rows} rows of {fields} fields: a matrix has one \
         row per CPU ({fields}), or several matrices follow one another \
         (core-to-core-latency -b 1,2 --csv)"
    )]
    NotSquare {
        origin: String,
        first_line: usize,
        last_line: usize,
        rows: usize,
        fields: usize,
    },
    /// The `# cpus:` line lists another number of CPUs than the rows.
    #[error("{origin}: '# cpus:' lists {listed} CPUs but the matrix has {rows} rows")]
    CpuCount {
        origin: String,
        listed: usize,
        rows: usize,
    },
    /// A field that is not a finite non-negative number.
    #[error(
        "{origin}:{line}:{column}: '{field}' is not a number of nanoseconds \
         (expected a finite non-negative number or an empty field)"
    )]
    BadCell {
        origin: String,
        line: usize,
        /// 1-based.
        column: usize,
        field: String,
    },
    /// Text starting with `{` that is not our JSON.
    #[error("{origin}: not a pinsight latency matrix JSON: {source}")]
    Json {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
    /// JSON that parses but breaks an invariant of the matrix.
    #[error("{origin}: {source}")]
    Invalid {
        origin: String,
        #[source]
        source: InvalidMatrix,
    },
}

/// A `# cpus:` line that is not a list of distinct CPU ids.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// An entry that is neither an id nor a range `a-b` with `a <= b`.
    #[error("'# cpus:' entry '{entry}' is not a CPU id or range (like 0,2,4-7)")]
    BadEntry { entry: String },
    /// A CPU listed twice.
    #[error("'# cpus:' lists CPU {cpu} twice")]
    Repeated { cpu: usize },
}

/// An invariant of [`crate::LatencyMatrix`] that does not hold
/// ([`crate::LatencyMatrix::validate`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidMatrix {
    /// A CPU id above [`pinsight_cpuset::MAX_CPU`].
    #[error("CPU id {cpu} in 'cpus' is above the limit of {limit}")]
    CpuAboveLimit { cpu: usize, limit: usize },
    /// The same CPU id twice in `cpus`.
    #[error("CPU ids in 'cpus' are not distinct")]
    RepeatedCpu,
    /// `ns` is not `n` × `n` for `n` CPUs.
    #[error("'ns' must be a {n}x{n} matrix (one row and column per CPU in 'cpus')")]
    NsShape { n: usize },
    /// A non-zero diagonal entry.
    #[error("diagonal entry {index} must be 0")]
    Diagonal { index: usize },
    /// `ns[i][j] != ns[j][i]`.
    #[error("'ns' is not symmetric at ({i},{j})")]
    Asymmetric { i: usize, j: usize },
    /// A negative or infinite latency.
    #[error("'ns' at ({i},{j}) is {value}, expected a finite non-negative latency")]
    BadLatency { i: usize, j: usize, value: f64 },
    /// `stats` is not `n` × `n`.
    #[error("'stats' must be a {n}x{n} matrix like 'ns'")]
    StatsShape { n: usize },
}
