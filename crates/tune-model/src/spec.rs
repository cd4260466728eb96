//! Text specs: a machine (`6P+8E+smt`), a configuration (`4P+8E+2smt`) and
//! given model parameters (`f=0.95,sf=2,model=dynamic`).
//!
//! Hand-written: each grammar is a few `+`- or `,`-separated terms, which a
//! parser-combinator crate would not make shorter or clearer.

use crate::runs::shown;
use crate::{Config, Machine, ModelKind, Theta};
use pinsight_model::machine_spec::MachineSpec;

/// Why a spec was refused. One line, naming the spec and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A machine spec that does not follow the grammar.
    #[error("machine '{spec}': {why} (allowed: NP[+ME][+smt[N]], e.g. 6P+8E, 6P+8E+smt, 8P+smt2)")]
    Machine {
        /// The spec as written (escaped, cut).
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// A configuration spec that does not follow the grammar.
    #[error("configuration '{spec}': {why} (allowed: terms NP, NE, Nsmt joined by +, e.g. 4P+8E+2smt, 4P, 8E)")]
    Config {
        /// The spec as written (escaped, cut).
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// A machine of more than two kinds, which tune and model cannot fit.
    #[error("tune and model know two kinds (P and E), {0} given")]
    Kinds(usize),
    /// [`SpecError::Kinds`] of a spec as the user gave it (quoted as
    /// given: a caller printing it to a terminal escapes control
    /// characters).
    #[error("'{text}': tune and model know two kinds (P and E), {kinds} given")]
    KindsGiven { text: String, kinds: usize },
    /// A parameter spec that does not follow the grammar.
    #[error("model parameters '{spec}': {why} (allowed: f=0..1 (required), sf>0, smt_gain=0..1, t1>0, contention>=0, model=dynamic|static, comma-separated)")]
    Params {
        /// The spec as written (escaped, cut).
        spec: String,
        /// What is wrong.
        why: String,
    },
}

/// Split `NX` into (N, X): leading ASCII digits, then the rest.
fn count_and_unit(term: &str) -> Option<(u32, &str)> {
    let digits = term.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n = term[..digits].parse().ok()?;
    Some((n, &term[digits..]))
}

impl std::str::FromStr for Config {
    type Err = SpecError;
    /// `4P+8E+2smt`, `4P`, `8E`, `4P+2smt`: each of P, E, smt at most once,
    /// any order, case-insensitive; at least one core.
    fn from_str(s: &str) -> Result<Config, SpecError> {
        let err = |why: &str| SpecError::Config {
            spec: shown(s),
            why: why.to_owned(),
        };
        let (mut p, mut e, mut smt) = (None, None, None);
        for term in s.trim().split('+') {
            let term = term.trim();
            let (n, unit) = count_and_unit(term)
                .ok_or_else(|| err(&format!("'{}' is not NP, NE or Nsmt", shown(term))))?;
            let slot = match unit.to_ascii_lowercase().as_str() {
                "p" => &mut p,
                "e" => &mut e,
                "smt" => &mut smt,
                _ => return Err(err(&format!("'{}' is not NP, NE or Nsmt", shown(term)))),
            };
            if slot.replace(n).is_some() {
                return Err(err(&format!(
                    "'{}' is given twice",
                    unit.to_ascii_lowercase()
                )));
            }
        }
        let c = Config::new(p.unwrap_or(0), e.unwrap_or(0), smt.unwrap_or(0));
        if c.p.checked_add(c.e).is_none_or(|n| n == 0) {
            return Err(err("it uses no core (P + E must be at least 1)"));
        }
        if c.p
            .checked_add(c.e)
            .and_then(|n| n.checked_add(c.smt))
            .is_none()
        {
            return Err(err("too many threads"));
        }
        Ok(c)
    }
}

impl std::fmt::Display for Machine {
    /// The spec [`Machine::from_str`](std::str::FromStr) reads: `6P+8E+smt`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}P", self.p_cores)?;
        if self.e_cores > 0 {
            write!(f, "+{}E", self.e_cores)?;
        }
        match self.smt_per_p_core {
            0 => {}
            1 => f.write_str("+smt")?,
            n => write!(f, "+smt{n}")?,
        }
        Ok(())
    }
}

impl std::str::FromStr for Machine {
    type Err = SpecError;
    /// `NP[+ME][+smt[N]]`: N P-cores (all cores on a machine of one kind),
    /// M E-cores, and `smt` for one SMT sibling per P-core (`smtN`: N
    /// siblings, i.e. (N+1)-way SMT). E-cores have no SMT in a spec.
    /// Case-insensitive; at least one P-core. The grammar is
    /// [`MachineSpec`]'s; the kinds must be named P and E.
    fn from_str(s: &str) -> Result<Machine, SpecError> {
        let spec = MachineSpec::parse(s).map_err(|e| SpecError::Machine {
            spec: shown(s),
            why: e.to_string(),
        })?;
        Machine::try_from(&spec).map_err(|e| match e {
            SpecError::Machine { why, .. } => SpecError::Machine {
                spec: shown(s),
                why,
            },
            other => other,
        })
    }
}

impl TryFrom<&MachineSpec> for Machine {
    type Error = SpecError;
    /// The machine of a spec whose kinds are named P and E (any order,
    /// case-insensitive): at least one P-core, at most 4096 of a kind;
    /// the spec's SMT is the P-cores'.
    fn try_from(spec: &MachineSpec) -> Result<Machine, SpecError> {
        let err = |why: String| SpecError::Machine {
            spec: shown(&spec.to_string()),
            why,
        };
        let (mut p, mut e) = (None, None);
        for (n, name) in &spec.kinds {
            let slot = match name.to_ascii_lowercase().as_str() {
                "p" => &mut p,
                "e" => &mut e,
                _ => {
                    return Err(err(format!(
                        "'{}' is not NP, ME or smt[N]",
                        shown(&format!("{n}{name}"))
                    )))
                }
            };
            // MachineSpec refuses a kind named twice.
            *slot = Some(*n);
        }
        let p = p.ok_or_else(|| err("no P-core count (NP)".to_owned()))?;
        let e = e.unwrap_or(0);
        if p == 0 {
            return Err(err("at least one P-core is needed".to_owned()));
        }
        if p > 4096 || e > 4096 {
            return Err(err("more than 4096 cores of a kind".to_owned()));
        }
        Ok(Machine {
            p_cores: p,
            e_cores: e,
            smt_per_p_core: spec.smt,
            smt_per_e_core: 0,
        })
    }
}

impl Machine {
    /// The machine tune and model fit on from a spec of one or two kinds
    /// of any names: the first kind is the P-cores, a second the E-cores
    /// (named `P` and `E` they may come in either order); then as
    /// [`Machine::try_from`]. More kinds: [`SpecError::Kinds`].
    pub fn of_kinds(spec: &MachineSpec) -> Result<Machine, SpecError> {
        let (p, e) = match spec.kinds.as_slice() {
            [(p, _)] => (*p, 0),
            [(a, an), (b, _)] if an.eq_ignore_ascii_case("e") => (*b, *a),
            [(a, _), (b, _)] => (*a, *b),
            more => return Err(SpecError::Kinds(more.len())),
        };
        let named = MachineSpec {
            kinds: vec![(p, "P".to_owned()), (e, "E".to_owned())],
            smt: spec.smt,
        };
        Machine::try_from(&named)
    }

    /// [`Machine::of_kinds`], where a machine of more than two kinds is
    /// [`SpecError::KindsGiven`], naming `text`, the spec as the user gave
    /// it.
    pub fn of_given(spec: &MachineSpec, text: &str) -> Result<Machine, SpecError> {
        Machine::of_kinds(spec).map_err(|e| match e {
            SpecError::Kinds(kinds) => SpecError::KindsGiven {
                text: text.to_owned(),
                kinds,
            },
            e => e,
        })
    }
}

/// Given model parameters (`pinsight model --params`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSpec {
    /// The model.
    pub model: ModelKind,
    /// Its parameters.
    pub theta: Theta,
}

impl std::fmt::Display for ModelSpec {
    /// The spec [`ModelSpec::from_str`](std::str::FromStr) reads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.theta;
        write!(
            f,
            "f={},sf={},smt_gain={},t1={},contention={},model={}",
            t.f,
            t.sf,
            t.smt_gain,
            t.t1,
            t.contention,
            self.model.name()
        )
    }
}

impl std::str::FromStr for ModelSpec {
    type Err = SpecError;
    /// `f=0.95,sf=2,smt_gain=0.3,t1=10,contention=0,model=dynamic`: `f`
    /// required; defaults sf=1, smt_gain=0, t1=1, contention=0,
    /// model=dynamic; each key at most once.
    fn from_str(s: &str) -> Result<ModelSpec, SpecError> {
        let err = |why: String| SpecError::Params {
            spec: shown(s),
            why,
        };
        let mut seen: Vec<String> = Vec::new();
        let mut f = None;
        let mut th = Theta::amdahl(1.0, 0.0, 1.0);
        let mut model = ModelKind::Dynamic;
        for item in s.split(',') {
            let item = item.trim();
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| err(format!("'{}' is not KEY=VALUE", shown(item))))?;
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim();
            if seen.contains(&key) {
                return Err(err(format!("{} is given twice", shown(&key))));
            }
            seen.push(key.clone());
            if key == "model" {
                model = match value.to_ascii_lowercase().as_str() {
                    "dynamic" => ModelKind::Dynamic,
                    "static" => ModelKind::Static,
                    _ => {
                        return Err(err(format!(
                            "model '{}' is not dynamic or static",
                            shown(value)
                        )))
                    }
                };
                continue;
            }
            let x: f64 = value
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| err(format!("{key}='{}' is not a number", shown(value))))?;
            // Each key: where its value goes, whether `x` is in its range,
            // and the range in words.
            let share = (0.0..=1.0).contains(&x);
            let (slot, ok, allowed): (&mut f64, bool, &str) = match key.as_str() {
                "f" => (f.insert(x), share, "0 to 1"),
                "sf" => (&mut th.sf, x > 0.0 && x <= 1e6, "above 0"),
                "smt_gain" => (&mut th.smt_gain, share, "0 to 1"),
                "t1" => (&mut th.t1, x > 0.0 && x <= 1e12, "above 0 seconds"),
                "contention" => (&mut th.contention, share, "0 to 1"),
                _ => return Err(err(format!("unknown key '{}'", shown(&key)))),
            };
            if !ok {
                return Err(err(format!("{key}={x} is out of range ({allowed})")));
            }
            *slot = x;
        }
        th.f = f.ok_or_else(|| err("f (the parallel fraction) is required".to_owned()))?;
        Ok(ModelSpec { model, theta: th })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_given_machine_of_three_kinds_is_named() {
        let given = |t: &str| Machine::of_given(&MachineSpec::parse(t).unwrap(), t);
        assert_eq!(given("8E+6P").unwrap().to_string(), "6P+8E");
        assert_eq!(
            given("6P+8E+2L").unwrap_err().to_string(),
            "'6P+8E+2L': tune and model know two kinds (P and E), 3 given"
        );
    }

    proptest! {
        /// `Machine::from_str` is `MachineSpec::parse` then the conversion:
        /// no text the grammar refuses is accepted, and the spec's own
        /// printed form gives the same machine.
        #[test]
        fn machine_is_the_one_grammar(text in "( ?([0-9]{1,3}|1234567)(P|p|E|e|L|big)?|smt[0-9]?) ?(\\+( ?([0-9]{1,3})(P|E|e|L|x)|smt[0-9]?)){0,3}") {
            let via_spec = MachineSpec::parse(&text).ok().and_then(|s| Machine::try_from(&s).ok());
            prop_assert_eq!(text.parse::<Machine>().ok(), via_spec);
            if let Ok(s) = MachineSpec::parse(&text) {
                prop_assert_eq!(
                    s.to_string().parse::<Machine>().ok(),
                    text.parse::<Machine>().ok()
                );
            }
        }
    }

    #[test]
    fn kinds_other_than_p_and_e_are_refused() {
        let e = "4big+4little".parse::<Machine>().unwrap_err().to_string();
        assert!(e.contains("'4big' is not NP, ME"), "{e}");
        let e = "6P+8E+smt+smt".parse::<Machine>().unwrap_err().to_string();
        assert!(
            e.starts_with("machine '6P+8E+smt+smt': smt is given twice"),
            "{e}"
        );
    }

    #[test]
    fn any_two_kinds_are_p_then_e_unless_named_e_first() {
        let m = |t: &str| Machine::of_kinds(&MachineSpec::parse(t).unwrap());
        assert_eq!(m("4big+4little+smt").unwrap().to_string(), "4P+4E+smt");
        assert_eq!(m("8E+6P").unwrap().to_string(), "6P+8E");
        assert_eq!(m("8P").unwrap().to_string(), "8P");
        assert_eq!(m("6P+8E+2L"), Err(SpecError::Kinds(3)));
        assert_eq!(
            SpecError::Kinds(3).to_string(),
            "tune and model know two kinds (P and E), 3 given"
        );
        assert!(m("0P+4E").is_err());
    }
}
