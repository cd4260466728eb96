//! The simulator's inputs as users write them: the machine (`8P+8E`), the
//! SF-estimate quality (`exact`, `classes:1.67,1.97`, `mae:0.38`) and the
//! programs CSV (`name,instructions,sf[,mem]`, one row per phase).
//!
//! Every error is one line naming the offending part and what is allowed.

use pinsight_model::machine_spec::{MachineSpec, MachineSpecError};
use serde::Serialize;
use thiserror::Error;

/// Most cores a machine spec may declare.
pub const MAX_CORES: usize = 4096;
/// Most programs a programs file may hold.
pub const MAX_PROGRAMS: usize = 4096;
/// Most phases (rows) a programs file may hold.
pub const MAX_PHASES: usize = 100_000;
/// Largest programs file to read: 16 MiB, over 100 bytes for each of the
/// most phases a file may hold ([`MAX_PHASES`]).
pub const MAX_PROGRAMS_BYTES: u64 = 16 << 20;
/// Largest instruction count of a phase (10^15: days of simulated time).
pub const MAX_INSTRUCTIONS: f64 = 1e15;
/// Largest SF accepted anywhere.
pub const MAX_SF: f64 = 100.0;

/// A simulated machine: big cores and small cores (one thread each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// Cores of the fastest kind.
    pub big: usize,
    /// Cores of every other kind.
    pub small: usize,
}

/// Why a machine spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MachineError {
    /// Nothing given.
    #[error("empty machine spec (expected e.g. 8P+8E: big cores first, then small ones)")]
    Empty,
    /// A term is not `<count><name>`.
    #[error("'{0}' is not <count><kind> (expected e.g. 8P+8E or 4big+4little)")]
    BadTerm(String),
    /// Only one kind.
    #[error("one kind only: a simulation needs big and small cores (e.g. 8P+8E)")]
    OneKind,
    /// A kind with no core.
    #[error("'{0}': a kind needs at least one core")]
    ZeroCores(String),
    /// Two terms with the same name.
    #[error("kind '{0}' given twice")]
    Duplicate(String),
    /// Too many cores.
    #[error("{0} cores: at most {MAX_CORES}")]
    TooMany(usize),
    /// SMT declared: the simulator runs one thread per core.
    #[error("the simulator runs one thread per core (drop +smt)")]
    Smt,
    /// Text the machine grammar refuses otherwise (see [`MachineSpec`]).
    #[error("{0} (expected e.g. 8P+8E or 4big+4little)")]
    Spec(MachineSpecError),
}

impl Machine {
    /// Parses `8P+8E` (also `4big+4little`, `6P+8E+2L`): terms
    /// `<count><name>` joined by `+`, fastest kind first; the first term's
    /// cores are big, all others small. The grammar is [`MachineSpec`]'s.
    pub fn parse(text: &str) -> Result<Machine, MachineError> {
        let spec = MachineSpec::parse(text).map_err(|e| match e {
            MachineSpecError::Empty => MachineError::Empty,
            MachineSpecError::BadTerm(t) => {
                MachineError::BadTerm(t.chars().take(40).flat_map(char::escape_debug).collect())
            }
            MachineSpecError::KindTwice(k) => MachineError::Duplicate(k),
            other => MachineError::Spec(other),
        })?;
        Machine::try_from(&spec)
    }
}

/// A declared machine the simulator cannot run, naming the spec as the
/// user gave it (quoted as given: a caller printing it to a terminal
/// escapes control characters).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("'{text}': {}", match error {
    MachineError::Smt => "the simulator runs one thread per core; drop +smt".to_owned(),
    other => other.to_string(),
})]
pub struct GivenMachineError {
    /// The spec as given.
    pub text: String,
    /// What is wrong.
    pub error: MachineError,
}

impl Machine {
    /// The machine of `spec`, as [`Machine::try_from`], refused naming
    /// `text`, the spec as the user gave it.
    pub fn of_given(spec: &MachineSpec, text: &str) -> Result<Machine, GivenMachineError> {
        Machine::try_from(spec).map_err(|error| GivenMachineError {
            text: text.to_owned(),
            error,
        })
    }
}

impl TryFrom<&MachineSpec> for Machine {
    type Error = MachineError;
    /// The first kind's cores are big, every other kind's small: at least
    /// two kinds, each with a core, at most [`MAX_CORES`] in all, no SMT.
    fn try_from(spec: &MachineSpec) -> Result<Machine, MachineError> {
        if spec.smt > 0 {
            return Err(MachineError::Smt);
        }
        if let Some((n, k)) = spec.kinds.iter().find(|(n, _)| *n == 0) {
            return Err(MachineError::ZeroCores(format!("{n}{k}")));
        }
        let [(big, _), rest @ ..] = spec.kinds.as_slice() else {
            return Err(MachineError::OneKind);
        };
        if rest.is_empty() {
            return Err(MachineError::OneKind);
        }
        let total = spec.cores();
        if total > MAX_CORES as u64 {
            return Err(MachineError::TooMany(
                usize::try_from(total).unwrap_or(usize::MAX),
            ));
        }
        let big = *big as usize;
        Ok(Machine {
            big,
            small: total as usize - big,
        })
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}big+{}small", self.big, self.small)
    }
}

/// How good the simulated schedulers' SF estimates are.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum SfQuality {
    /// The true SF of the thread's current phase.
    Exact,
    /// One of the listed values, drawn uniformly for every thread every
    /// period, independently of the true SF (as Saez and Prieto-Matias,
    /// APSys '22, §3 and Fig. 2, found Thread Director's class readings,
    /// taken every tick, flipping between classes and nearly uncorrelated
    /// with the truth).
    Classes(Vec<f64>),
    /// The true SF plus Gaussian noise drawn per program run and phase
    /// (a model's error is systematic within a phase), with
    /// this mean absolute error (σ = MAE·√(π/2)); floored at 0.1.
    Mae(f64),
}

/// Why an SF-estimate spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SfQualityError {
    /// Not one of the three forms.
    #[error("'{0}' is not an SF estimate (expected exact, classes:1.67,1.97 or mae:0.38)")]
    Unknown(String),
    /// A class value that is not an SF.
    #[error("class '{0}' is not an SF (a number in (0, {MAX_SF}])")]
    BadClass(String),
    /// `classes:` with nothing after it.
    #[error("classes: needs at least one value (e.g. classes:1.67,1.97)")]
    NoClasses,
    /// A bad error size.
    #[error("mae '{0}' is not a mean absolute error (a number in [0, 10])")]
    BadMae(String),
}

impl SfQuality {
    /// Parses `exact`, `classes:V[,V...]` or `mae:E`.
    pub fn parse(text: &str) -> Result<SfQuality, SfQualityError> {
        let t = text.trim();
        let short = || t.chars().take(40).collect::<String>();
        if t == "exact" {
            return Ok(SfQuality::Exact);
        }
        if let Some(list) = t.strip_prefix("classes:") {
            if list.trim().is_empty() {
                return Err(SfQualityError::NoClasses);
            }
            let mut out = Vec::new();
            for v in list.split(',') {
                let v = v.trim();
                match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 && x <= MAX_SF && out.len() < 64 => {
                        out.push(x)
                    }
                    _ => return Err(SfQualityError::BadClass(v.chars().take(40).collect())),
                }
            }
            return Ok(SfQuality::Classes(out));
        }
        if let Some(v) = t.strip_prefix("mae:") {
            let v = v.trim();
            return match v.parse::<f64>() {
                Ok(x) if (0.0..=10.0).contains(&x) => Ok(SfQuality::Mae(x)),
                _ => Err(SfQualityError::BadMae(v.chars().take(40).collect())),
            };
        }
        Err(SfQualityError::Unknown(short()))
    }
}

impl std::fmt::Display for SfQuality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SfQuality::Exact => f.write_str("exact"),
            SfQuality::Classes(v) => {
                let v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                write!(f, "classes:{}", v.join(","))
            }
            SfQuality::Mae(e) => write!(f, "mae:{e}"),
        }
    }
}

/// One phase of a program.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Phase {
    /// Instructions in the phase.
    pub instructions: f64,
    /// Its speedup factor: time on a small core / time on a big core.
    pub sf: f64,
    /// Memory-boundedness in [0, 1]: the share of its time stalled on
    /// memory, which contention with other memory-bound programs stretches.
    pub mem: f64,
}

/// A program: its phases, run in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Program {
    /// Its name (the CSV's `name`).
    pub name: String,
    /// Its phases.
    pub phases: Vec<Phase>,
}

impl Program {
    /// Total instructions.
    pub fn instructions(&self) -> f64 {
        self.phases.iter().map(|p| p.instructions).sum()
    }
    /// Its average SF, weighted by each phase's small-core time.
    pub fn mean_sf(&self) -> f64 {
        let small: f64 = self.phases.iter().map(|p| p.instructions * p.sf).sum();
        small / self.instructions()
    }
}

/// Why a programs CSV was refused. Line numbers count from 1 in the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProgramsError {
    /// Not CSV, wrong field count, not UTF-8.
    #[error("line {line}: {message}")]
    Csv {
        /// The line.
        line: u64,
        /// What is wrong, one line.
        message: String,
    },
    /// No header or no data.
    #[error("no programs (expected a header name,instructions,sf[,mem] and one row per phase)")]
    Empty,
    /// The header is not the expected one.
    #[error("header '{0}': expected name,instructions,sf or name,instructions,sf,mem")]
    Header(String),
    /// A bad cell.
    #[error("line {line}, column {column}: '{value}' {allowed}")]
    Cell {
        /// The line.
        line: u64,
        /// The column name.
        column: &'static str,
        /// The cell, shortened.
        value: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// A program's rows are not consecutive.
    #[error("line {line}: program '{name}' again after other programs (its phases must be consecutive rows)")]
    Scattered {
        /// The line.
        line: u64,
        /// The program.
        name: String,
    },
    /// Too big.
    #[error("more than {MAX_PROGRAMS} programs or {MAX_PHASES} phases")]
    TooMany,
}

/// Parses the programs CSV: a header `name,instructions,sf` or
/// `name,instructions,sf,mem`, then one row per phase; rows with the same
/// name are consecutive phases of one program; `#` starts a comment line.
/// `instructions` in (0, 10^15], `sf` in (0, 100], `mem` in [0, 1]
/// (default 0).
pub fn parse_programs(text: &str) -> Result<Vec<Program>, ProgramsError> {
    let blanked = blank_comments(text);
    let text = blanked.as_str();
    let mut rdr = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .has_headers(true)
        .from_reader(text.as_bytes());
    let lines = Lines::new(text);
    let with_mem = header_has_mem(&mut rdr, &lines)?;
    let mut programs = ProgramsBuilder::default();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| lines.csv_err(e))?;
        let line = lines.line_at(rec.position());
        let (name, phase) = parse_row(&rec, line, with_mem)?;
        programs.push(line, name, phase)?;
    }
    if programs.programs.is_empty() {
        return Err(ProgramsError::Empty);
    }
    Ok(programs.programs)
}

/// `text` with every comment line blanked (its newline kept).
///
/// Comment lines are blanked rather than given to the csv crate's
/// `comment` option, and lines are counted from byte offsets: the csv
/// crate's own line numbers skip comment and empty lines, and the
/// numbers in errors must be the file's.
fn blank_comments(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            if l.trim_start().starts_with('#') {
                if l.ends_with('\n') {
                    "\n"
                } else {
                    ""
                }
            } else {
                l
            }
        })
        .collect()
}

/// The file's line numbers, from the byte offsets of its newlines.
struct Lines<'t> {
    text: &'t str,
    newlines: Vec<usize>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Lines<'t> {
        let newlines = text
            .bytes()
            .enumerate()
            .filter_map(|(i, c)| (c == b'\n').then_some(i))
            .collect();
        Lines { text, newlines }
    }

    /// The line (from 1) of a csv position; 0 without one.
    fn line_at(&self, pos: Option<&csv::Position>) -> u64 {
        let text = self.text;
        pos.map_or(0, |p| {
            let mut b = (p.byte() as usize).min(text.len());
            // A record's offset is where the reader stood: before any
            // empty lines it skipped.
            while b < text.len() && matches!(text.as_bytes()[b], b'\n' | b'\r') {
                b += 1;
            }
            // Newlines before b, by binary search: linear time over the
            // whole file, however many rows it has.
            self.newlines.partition_point(|&n| n < b) as u64 + 1
        })
    }

    /// A csv crate error as a one-line [`ProgramsError::Csv`].
    fn csv_err(&self, e: csv::Error) -> ProgramsError {
        ProgramsError::Csv {
            line: self.line_at(e.position()),
            message: match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!("{len} fields, the header has {expected_len}"),
                csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_owned(),
                _ => e.to_string().replace(['\n', '\r'], " "),
            },
        }
    }
}

/// Reads the header: whether it has the `mem` column, or why it is refused.
fn header_has_mem(rdr: &mut csv::Reader<&[u8]>, lines: &Lines<'_>) -> Result<bool, ProgramsError> {
    let header = rdr.headers().map_err(|e| lines.csv_err(e))?.clone();
    if header.is_empty() || header.iter().all(str::is_empty) {
        return Err(ProgramsError::Empty);
    }
    let cols: Vec<String> = header.iter().map(|h| h.to_ascii_lowercase()).collect();
    match cols.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["name", "instructions", "sf"] => Ok(false),
        ["name", "instructions", "sf", "mem"] => Ok(true),
        _ => {
            let h: String = cols.join(",").chars().take(60).collect();
            Err(ProgramsError::Header(h.replace(['\n', '\r'], " ")))
        }
    }
}

/// One data row at `line`: the program's name and the phase it describes.
fn parse_row(
    rec: &csv::StringRecord,
    line: u64,
    with_mem: bool,
) -> Result<(&str, Phase), ProgramsError> {
    let cell = |i: usize| rec.get(i).unwrap_or("");
    let bad = |column: &'static str, value: &str, allowed: &'static str| ProgramsError::Cell {
        line,
        column,
        value: value
            .chars()
            .take(40)
            .collect::<String>()
            .replace(['\n', '\r'], " "),
        allowed,
    };
    let name = cell(0);
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(bad(
            "name",
            name,
            "is not a name (1-64 printable characters)",
        ));
    }
    let num = |i: usize| cell(i).parse::<f64>().ok().filter(|x| x.is_finite());
    let instructions = match num(1) {
        Some(x) if x > 0.0 && x <= MAX_INSTRUCTIONS => x,
        _ => {
            return Err(bad(
                "instructions",
                cell(1),
                "is not an instruction count in (0, 1e15]",
            ))
        }
    };
    let sf = match num(2) {
        Some(x) if x > 0.0 && x <= MAX_SF => x,
        _ => return Err(bad("sf", cell(2), "is not a speedup factor in (0, 100]")),
    };
    let mem = if with_mem && !cell(3).is_empty() {
        match num(3) {
            Some(x) if (0.0..=1.0).contains(&x) => x,
            _ => return Err(bad("mem", cell(3), "is not a memory-boundedness in [0, 1]")),
        }
    } else {
        0.0
    };
    let phase = Phase {
        instructions,
        sf,
        mem,
    };
    Ok((name, phase))
}

/// The programs read so far, with the names seen and the phases counted.
#[derive(Default)]
struct ProgramsBuilder {
    programs: Vec<Program>,
    seen: std::collections::HashSet<String>,
    phases: usize,
}

impl ProgramsBuilder {
    /// Adds the phase of row `line`: to the last program when it has that
    /// name, else as a new program (refused when the name came before).
    fn push(&mut self, line: u64, name: &str, phase: Phase) -> Result<(), ProgramsError> {
        self.phases += 1;
        if self.phases > MAX_PHASES {
            return Err(ProgramsError::TooMany);
        }
        match self.programs.last_mut() {
            Some(p) if p.name == name => p.phases.push(phase),
            _ => {
                if !self.seen.insert(name.to_string()) {
                    return Err(ProgramsError::Scattered {
                        line,
                        name: name.chars().take(40).collect(),
                    });
                }
                if self.programs.len() >= MAX_PROGRAMS {
                    return Err(ProgramsError::TooMany);
                }
                self.programs.push(Program {
                    name: name.to_string(),
                    phases: vec![phase],
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_machine_is_refused_naming_its_text() {
        let given = |t: &str| Machine::of_given(&MachineSpec::parse(t).unwrap(), t);
        assert_eq!(given("4big+4little").unwrap().big, 4);
        assert_eq!(
            given("6P+8E+smt").unwrap_err().to_string(),
            "'6P+8E+smt': the simulator runs one thread per core; drop +smt"
        );
        assert_eq!(
            given("8P").unwrap_err().to_string(),
            format!("'8P': {}", MachineError::OneKind)
        );
    }

    #[test]
    fn machines() {
        for (text, want) in [
            ("8P+8E", Ok(Machine { big: 8, small: 8 })),
            (" 6P + 8E + 2L ", Ok(Machine { big: 6, small: 10 })),
            ("4big+4little", Ok(Machine { big: 4, small: 4 })),
            ("8P", Err(MachineError::OneKind)),
            ("", Err(MachineError::Empty)),
            ("0P+8E", Err(MachineError::ZeroCores("0P".into()))),
            ("8P+8P", Err(MachineError::Duplicate("P".into()))),
            ("4000P+4000E", Err(MachineError::TooMany(8000))),
        ] {
            assert_eq!(Machine::parse(text), want, "{text:?}");
        }
        assert!(matches!(
            Machine::parse("P8+E8"),
            Err(MachineError::BadTerm(_))
        ));
    }

    #[test]
    fn machines_read_the_one_grammar() {
        use pinsight_model::machine_spec::MachineSpec;
        assert_eq!(Machine::parse("8P+8E+smt"), Err(MachineError::Smt));
        assert!(matches!(
            Machine::parse("8P+8E+smt9"),
            Err(MachineError::Spec(MachineSpecError::BadSmt(_)))
        ));
        for text in ["8P+8E", "4big+4little", "6P+8E+2L", "0P+1E", "8P", "8P+smt"] {
            let spec = MachineSpec::parse(text).unwrap();
            assert_eq!(Machine::parse(text), Machine::try_from(&spec), "{text}");
            assert_eq!(
                Machine::parse(&spec.to_string()),
                Machine::parse(text),
                "{text}"
            );
        }
    }

    #[test]
    fn qualities() {
        for (text, want) in [
            ("exact", Ok(SfQuality::Exact)),
            (
                "classes:1.67,1.97",
                Ok(SfQuality::Classes(vec![1.67, 1.97])),
            ),
            ("mae:0.38", Ok(SfQuality::Mae(0.38))),
            ("classes:", Err(SfQualityError::NoClasses)),
            ("classes:1.6,x", Err(SfQualityError::BadClass("x".into()))),
            ("mae:-1", Err(SfQualityError::BadMae("-1".into()))),
        ] {
            assert_eq!(SfQuality::parse(text), want, "{text:?}");
        }
        assert!(matches!(
            SfQuality::parse("td"),
            Err(SfQualityError::Unknown(_))
        ));
        for s in ["exact", "classes:1.67,1.97", "mae:0.38"] {
            assert_eq!(SfQuality::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn programs() {
        let p = parse_programs(
            "# a mix\nname,instructions,sf,mem\na,1e9,2.0,0.1\na,2e9,1.5,\nb,5e8,1.3,0\n",
        )
        .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].phases.len(), 2);
        assert_eq!(p[0].phases[1].mem, 0.0);
        assert!((p[0].mean_sf() - (2.0 + 3.0) / 3.0).abs() < 1e-12);
        let p = parse_programs("name,instructions,sf\nx,1,1\n").unwrap();
        assert_eq!(p[0].name, "x");
    }

    #[test]
    fn program_errors_name_line_and_column() {
        let e = |t: &str| parse_programs(t).unwrap_err().to_string();
        assert_eq!(
            e("name,instructions,sf\na,1e9,0\n"),
            "line 2, column sf: '0' is not a speedup factor in (0, 100]"
        );
        assert_eq!(
            e("name,instructions,sf\n# c\na,x,2\n"),
            "line 3, column instructions: 'x' is not an instruction count in (0, 1e15]"
        );
        assert_eq!(
            e("name,instructions,sf\na,1,2\nb,1,2\na,1,2\n"),
            "line 4: program 'a' again after other programs (its phases must be consecutive rows)"
        );
        assert_eq!(
            e("name,instructions,sf\na,1,2,3\n"),
            "line 2: 4 fields, the header has 3"
        );
        assert_eq!(
            e("a,1,2\n"),
            "header 'a,1,2': expected name,instructions,sf or name,instructions,sf,mem"
        );
        assert!(e("").starts_with("no programs"));
        assert!(e("name,instructions,sf\n").starts_with("no programs"));
        assert!(e("name,instructions,sf,mem\na,1,2,1.5\n").contains("column mem"));
    }
}
