//! A machine as users declare it: `6P+8E`, `6P+8E+smt`, `8P+smt2`,
//! `4big+4little`, `6P+8E+2L`. The one grammar of `--machine` for `tune`,
//! `model` and `simulate`; each consumer converts the typed
//! [`MachineSpec`] into its own machine (and refuses what it cannot run).
//!
//! Grammar: terms joined by `+`, each `<count><kind>` (1 to 6 digits, then
//! a kind name: an ASCII letter, then letters, digits, `-` or `_`, at most
//! 32 characters), fastest kind first, kinds distinct (case-insensitive);
//! and at most one `smt` or `smtN` (N in 1..=7: N SMT siblings per core of
//! the fastest kind, i.e. (N+1)-way SMT), anywhere. Spaces around terms
//! are allowed.
//!
//! Hand-written: a two-token grammar no parser crate would make shorter.

use thiserror::Error;

/// Most SMT siblings per core a spec may declare.
pub const MAX_SMT: u32 = 7;

/// A declared machine: its kinds, fastest first, and its SMT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSpec {
    /// The kinds, fastest first: (cores, name as written).
    pub kinds: Vec<(u32, String)>,
    /// SMT siblings per core of the fastest kind (0: none).
    pub smt: u32,
}

/// Why a machine spec was refused: what is wrong, without the spec (the
/// caller names it).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MachineSpecError {
    /// Nothing given.
    #[error("empty machine spec")]
    Empty,
    /// A term is neither `<count><kind>` nor `smt[N]` (the term as written).
    #[error("'{}' is not <count><kind> or smt[N]", shown(.0))]
    BadTerm(String),
    /// `smtN` with N outside 1..=7 (the term as written).
    #[error("'{}': smt takes 1 to {MAX_SMT} siblings per core", shown(.0))]
    BadSmt(String),
    /// `smt` twice.
    #[error("smt is given twice")]
    SmtTwice,
    /// A kind named twice (its second spelling as written).
    #[error("kind {} is given twice", shown(.0))]
    KindTwice(String),
    /// Only `smt` terms.
    #[error("no <count><kind> term (e.g. 6P+8E)")]
    NoKind,
}

/// A spec refused as the user gave it: the whole text and what is wrong,
/// in one line that quotes the text as given (a caller printing it to a
/// terminal escapes control characters).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{}", self.words())]
pub struct GivenSpecError {
    /// The spec as given.
    pub text: String,
    /// What is wrong with it.
    pub error: MachineSpecError,
}

impl GivenSpecError {
    fn words(&self) -> String {
        let text = &self.text;
        let bad_term = |term: &str| {
            format!("'{term}' is not <count><kind> or smt[N] (allowed: e.g. 6P+8E, 6P+8E+smt, 4big+4little)")
        };
        match &self.error {
            MachineSpecError::Empty => bad_term(text.trim()),
            MachineSpecError::BadTerm(term) => bad_term(term),
            MachineSpecError::BadSmt(_) => {
                format!("'{text}': smt takes 1 to {MAX_SMT} siblings per core")
            }
            MachineSpecError::SmtTwice => format!("'{text}': smt is given twice"),
            MachineSpecError::KindTwice(name) => format!("'{text}': kind {name} is given twice"),
            MachineSpecError::NoKind => format!("'{text}': no <count><kind> term (e.g. 6P+8E)"),
        }
    }
}

/// `text` safe in a one-line message: control characters escaped, cut
/// at 40 characters.
fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(40).flat_map(char::escape_debug).collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

impl MachineSpec {
    /// Parses a spec (see the [module](self) for the grammar).
    pub fn parse(text: &str) -> Result<MachineSpec, MachineSpecError> {
        if text.trim().is_empty() {
            return Err(MachineSpecError::Empty);
        }
        let mut kinds: Vec<(u32, String)> = Vec::new();
        let mut smt = None;
        for term in text.trim().split('+').map(str::trim) {
            if let Some(rest) = term.to_ascii_lowercase().strip_prefix("smt") {
                let n = if rest.is_empty() {
                    1
                } else {
                    rest.parse::<u32>()
                        .ok()
                        .filter(|n| (1..=MAX_SMT).contains(n))
                        .ok_or_else(|| MachineSpecError::BadSmt(term.to_owned()))?
                };
                if smt.replace(n).is_some() {
                    return Err(MachineSpecError::SmtTwice);
                }
                continue;
            }
            let digits = term.bytes().take_while(u8::is_ascii_digit).count();
            let (n, name) = term.split_at(digits);
            let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name.len() <= 32
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let n = n
                .parse::<u32>()
                .ok()
                .filter(|_| digits <= 6 && name_ok)
                .ok_or_else(|| MachineSpecError::BadTerm(term.to_owned()))?;
            if kinds.iter().any(|(_, k)| k.eq_ignore_ascii_case(name)) {
                return Err(MachineSpecError::KindTwice(name.to_owned()));
            }
            kinds.push((n, name.to_owned()));
        }
        if kinds.is_empty() {
            return Err(MachineSpecError::NoKind);
        }
        Ok(MachineSpec {
            kinds,
            smt: smt.unwrap_or(0),
        })
    }

    /// [`MachineSpec::parse`], refused with the whole text given.
    pub fn parse_given(text: &str) -> Result<MachineSpec, GivenSpecError> {
        MachineSpec::parse(text).map_err(|error| GivenSpecError {
            text: text.to_owned(),
            error,
        })
    }

    /// Total cores over all kinds.
    pub fn cores(&self) -> u64 {
        self.kinds.iter().map(|(n, _)| u64::from(*n)).sum()
    }
}

impl std::str::FromStr for MachineSpec {
    type Err = MachineSpecError;
    fn from_str(s: &str) -> Result<MachineSpec, MachineSpecError> {
        MachineSpec::parse(s)
    }
}

impl std::fmt::Display for MachineSpec {
    /// The spec [`MachineSpec::parse`] reads back: `6P+8E+smt1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (n, name)) in self.kinds.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{n}{name}")?;
        }
        if self.smt > 0 {
            write!(f, "+smt{}", self.smt)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(kinds: &[(u32, &str)], smt: u32) -> MachineSpec {
        MachineSpec {
            kinds: kinds.iter().map(|(n, k)| (*n, (*k).to_owned())).collect(),
            smt,
        }
    }

    #[test]
    fn examples() {
        let p = |s: &str| MachineSpec::parse(s);
        assert_eq!(p("6P+8E"), Ok(spec(&[(6, "P"), (8, "E")], 0)));
        assert_eq!(p("6P+8E+smt"), Ok(spec(&[(6, "P"), (8, "E")], 1)));
        assert_eq!(p("8P+smt2"), Ok(spec(&[(8, "P")], 2)));
        assert_eq!(p("SMT3 + 8p"), Ok(spec(&[(8, "p")], 3)));
        assert_eq!(
            p(" 4big+4little "),
            Ok(spec(&[(4, "big"), (4, "little")], 0))
        );
        assert_eq!(p("6P+8E+2L"), Ok(spec(&[(6, "P"), (8, "E"), (2, "L")], 0)));
        assert_eq!(p("0P"), Ok(spec(&[(0, "P")], 0)));
    }

    #[test]
    fn refusals() {
        use MachineSpecError as E;
        let p = |s: &str| MachineSpec::parse(s).unwrap_err();
        assert_eq!(p(""), E::Empty);
        assert_eq!(p("  "), E::Empty);
        assert_eq!(p("P+E"), E::BadTerm("P".into()));
        assert_eq!(p("6P+"), E::BadTerm("".into()));
        assert_eq!(p("1234567P"), E::BadTerm("1234567P".into()));
        assert_eq!(p("4_x+4big"), E::BadTerm("4_x".into()));
        assert_eq!(p("6P+smt8"), E::BadSmt("smt8".into()));
        assert_eq!(p("6P+smt0"), E::BadSmt("smt0".into()));
        assert_eq!(p("6P+smt+smt2"), E::SmtTwice);
        assert_eq!(p("6P+6p"), E::KindTwice("p".into()));
        assert_eq!(p("smt"), E::NoKind);
        assert_eq!(
            p("6P+8\nE").to_string(),
            "'8\\nE' is not <count><kind> or smt[N]"
        );
    }

    #[test]
    fn given_specs_are_refused_naming_the_whole_text() {
        let e = |t: &str| MachineSpec::parse_given(t).unwrap_err().to_string();
        assert_eq!(
            e("6P+x"),
            "'x' is not <count><kind> or smt[N] (allowed: e.g. 6P+8E, 6P+8E+smt, 4big+4little)"
        );
        assert!(e("  ").starts_with("'' is not <count><kind>"));
        assert_eq!(
            e("6P+smt9"),
            "'6P+smt9': smt takes 1 to 7 siblings per core"
        );
        assert_eq!(e("6P+smt+smt"), "'6P+smt+smt': smt is given twice");
        assert_eq!(e("6P+6p"), "'6P+6p': kind p is given twice");
        assert_eq!(e("smt"), "'smt': no <count><kind> term (e.g. 6P+8E)");
    }

    proptest! {
        /// Printed specs parse back to themselves.
        #[test]
        fn print_parse_round_trips(
            kinds in proptest::collection::btree_map("[a-z][a-z0-9_-]{0,8}", 0u32..1_000_000, 1..5),
            smt in 0u32..=MAX_SMT,
        ) {
            let m = MachineSpec { kinds: kinds.into_iter().map(|(k, n)| (n, k)).collect(), smt };
            prop_assert_eq!(MachineSpec::parse(&m.to_string()), Ok(m));
        }

        /// Any text: no panic, one-line errors, accepted specs round-trip.
        #[test]
        fn any_text(text in "\\PC{0,40}") {
            match MachineSpec::parse(&text) {
                Ok(m) => prop_assert_eq!(MachineSpec::parse(&m.to_string()), Ok(m)),
                Err(e) => prop_assert!(!e.to_string().contains('\n')),
            }
        }
    }
}
