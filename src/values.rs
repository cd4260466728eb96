//! Typed flag values: clap value parsers, each a call to the grammar of
//! the crate that owns the type ([`pinsight_model::bounded`] holds every
//! count's range), so a bad or huge value is a one-line usage error (exit
//! 2) before any work, never an allocation that aborts or an overflow that
//! panics.

use pinsight_cpuset::CpuSet;
use pinsight_model::bounded::{self, Count};
use pinsight_model::{duration as dur, share as frac};
use std::time::Duration;

/// A refusal that quotes the user's text, safe to print (control
/// characters escaped).
fn said(e: impl std::fmt::Display) -> String {
    crate::errors::shown(&e.to_string())
}

/// One `--metric` value: `NAME=REGEX[,unit=U][,better=higher|lower]`,
/// `NAME=json:PATH[,...]` or a preset name (it may give several metrics).
pub fn metric(text: &str) -> Result<Vec<pinsight_compare::program_metric::MetricSpec>, String> {
    use pinsight_compare::{metrics::measured_keys, program_metric::parse};
    parse(text, &measured_keys()).map_err(|e| e.to_string())
}

/// A duration as users type it ([`pinsight_model::duration`]: `1s`,
/// `500ms`, `2.5s`, `2m`, `1h`, `90` seconds; at most a week) that must be
/// positive: a timeout or a budget of 0 means nothing.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    dur::positive(text).map_err(said)
}

/// `balance --interval`: an [`interval`], or 0 for "do not measure" (a
/// one-shot balance that moves without measuring the load).
pub fn interval_or_off(text: &str) -> Result<Duration, String> {
    dur::interval(text, true).map_err(said)
}

/// `--interval` of every command: the one sampling interval parser
/// ([`pinsight_model::interval`]: 1 ms to 1 h).
pub fn interval(text: &str) -> Result<Duration, String> {
    dur::interval(text, false).map_err(said)
}

/// `text` as a count of `range` ([`bounded::Count`]).
fn count(text: &str, range: Count) -> Result<usize, String> {
    range.parse(text).map_err(said)
}

/// `--threads`: 1 to [`bounded::MAX_THREADS`].
pub fn threads(text: &str) -> Result<usize, String> {
    count(text, bounded::THREADS)
}

/// `--tasks`: 1 to [`bounded::MAX_TASKS`].
pub fn tasks(text: &str) -> Result<usize, String> {
    count(text, bounded::TASKS)
}

/// `--runs` of every command (compare, tune, mix, simulate, latency): 1 to
/// [`bounded::MAX_RUNS`].
pub fn runs(text: &str) -> Result<usize, String> {
    count(text, bounded::RUNS)
}

/// `--count` (topo, load, balance, irq): events or intervals before
/// stopping, 1 to a billion.
pub fn stop_count(text: &str) -> Result<u64, String> {
    count(text, bounded::STOP_COUNT).map(|n| n as u64)
}

/// `--patience` (balance, irq): intervals in a row off before a move, 1
/// to 1000.
pub fn patience(text: &str) -> Result<u32, String> {
    count(text, bounded::PATIENCE).map(|n| n as u32)
}

/// `--max-moves` (balance, irq): moves per interval, 1 to 100000.
pub fn max_moves(text: &str) -> Result<u64, String> {
    count(text, bounded::MOVES).map(|n| n as u64)
}

/// `--warmup`: 0 to [`bounded::MAX_RUNS`].
pub fn warmup(text: &str) -> Result<usize, String> {
    count(text, bounded::WARMUP)
}

/// `--rerun-disturbed`: 0 to 100 extra attempts of a disturbed run.
pub fn reruns(text: &str) -> Result<usize, String> {
    count(text, bounded::RERUNS)
}

/// `balance --threshold`: an imbalance ratio (max/min), a number above 1
/// and at most 100.
pub fn ratio_above_one(text: &str) -> Result<f64, String> {
    frac::imbalance_ratio(text).map_err(|e| e.to_string())
}

/// `latency --target-ci`: a relative precision, above 0 and below 100%
/// (`1%` or `0.01`), as a fraction.
pub fn precision(text: &str) -> Result<f64, String> {
    frac::given_precision(text).map_err(said)
}

/// `--disturbance-threshold`: a share of one CPU's time, `5%` or `0.05`,
/// above 0 and at most 100%. Returned as a fraction (0.05).
pub fn share(text: &str) -> Result<f64, String> {
    frac::given_share(text).map_err(|e| e.to_string())
}

/// `--smt-yield Y|FILE`: what a second busy SMT thread adds to its core's
/// throughput (two busy siblings together give `1 + Y` times one thread
/// alone), a number from 0 (no gain) to 1 (two whole cores); or a file
/// holding one ([`pinsight_speed::smt::given_smt_yield`]: the number, or
/// JSON such as `pinsight speed --json`'s output).
pub fn smt_yield(text: &str) -> Result<f64, String> {
    pinsight_speed::smt::given_smt_yield(text).map_err(|e| e.to_string())
}

/// A rank or rank count of one node: 0 to [`bounded::MAX_THREADS`].
pub fn rank(text: &str) -> Result<usize, String> {
    count(text, bounded::RANKS)
}

/// `--validate`: configurations to validate, 0 to 1000.
pub fn validate(text: &str) -> Result<usize, String> {
    count(text, bounded::VALIDATE)
}

/// `--per-kind`: CPUs per kind, 1 to 8192.
pub fn per_kind(text: &str) -> Result<usize, String> {
    count(text, bounded::PER_KIND)
}

/// A CPU list (`0-3,8`, strides `0-15:2`), at most [`bounded::MAX_THREADS`] CPUs.
pub fn cpu_list(text: &str) -> Result<CpuSet, String> {
    bounded::cpu_list(text).map_err(said)
}

/// `--stealers` (env `PINSIGHT_EMULATION_STEALERS`): `CPU:PID,...`, the
/// processes whose run time on CPU is not load (an emulation's stealers);
/// empty for none.
pub fn stealers(text: &str) -> Result<Stealers, String> {
    let v = pinsight_emulate::parse_stealers_strict(text, bounded::MAX_THREADS)
        .map_err(|e| e.to_string())?;
    let excluded = v
        .into_iter()
        .map(|(cpu, pid)| pinsight_load::Excluded { cpu, pid });
    Ok(Stealers(excluded.collect()))
}

/// The processes `--stealers` names.
#[derive(Clone, Debug, Default)]
pub struct Stealers(pub Vec<pinsight_load::Excluded>);

/// One process id of `--pids LIST` (`sched`, `sf`, `balance`; clap splits
/// the list at commas): a whole number from 1.
pub fn pid(text: &str) -> Result<i32, String> {
    bounded::pid(text).map_err(said)
}

/// `sched --schedulers`: one scheduler (sched runs one at a time; `mix`
/// compares several).
pub fn one_scheduler(text: &str) -> Result<String, String> {
    if text.contains(',') {
        return Err(
            "sched runs one scheduler at a time (os, aarr, to or acfs); `pinsight mix` compares several"
                .to_owned(),
        );
    }
    Ok(text.trim().to_owned())
}

/// A machine as `--machine` declares it, one grammar for `tune`, `model`
/// and `simulate` ([`MachineSpec`](pinsight_model::machine_spec::MachineSpec)):
/// terms joined by `+`, each `<count><kind>` (a kind name: `P`, `E`, `L`,
/// `big`, `little`, ...), fastest kind first, and optionally `smt` or
/// `smtN` (N SMT siblings per core of the fastest kind, i.e. (N+1)-way
/// SMT). Examples: `6P+8E`, `6P+8E+smt`, `8P+smt2`, `4big+4little`,
/// `6P+8E+2L`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSpec {
    /// The spec, typed.
    pub spec: pinsight_model::machine_spec::MachineSpec,
    /// The text as given (for messages).
    pub text: String,
}

/// `--machine`: see [`MachineSpec`].
pub fn machine(text: &str) -> Result<MachineSpec, String> {
    let spec = pinsight_model::machine_spec::MachineSpec::parse_given(text).map_err(said)?;
    Ok(MachineSpec {
        spec,
        text: text.to_owned(),
    })
}

/// `--machine` of `tune --from` and `model`: a declared machine, or `live`
/// for this one.
#[derive(Clone, Debug)]
pub enum TuneMachine {
    /// This machine's topology (`--machine live`).
    Live,
    /// A declared machine (`6P+8E+smt`).
    Declared(MachineSpec),
}

/// `--machine` of `tune --from` and `model`: `live`, or a machine spec
/// (see [`machine`]).
pub fn tune_machine(text: &str) -> Result<TuneMachine, String> {
    if text.trim().eq_ignore_ascii_case("live") {
        return Ok(TuneMachine::Live);
    }
    machine(text)
        .map(TuneMachine::Declared)
        .map_err(|e| format!("{e}; or live for this machine"))
}

impl TuneMachine {
    /// The machine `--machine` asks `tune --from` and `model` for, if given.
    pub fn asked(
        machine: &Option<TuneMachine>,
    ) -> Result<Option<pinsight_tune_model::MachineAsked>, crate::errors::CliError> {
        use pinsight_tune_model::MachineAsked;
        Ok(match machine {
            Some(TuneMachine::Declared(s)) => {
                Some(MachineAsked::Declared(s.for_tune().map_err(|e| {
                    crate::errors::CliError::usage(format!("--machine {e}"))
                })?))
            }
            Some(TuneMachine::Live) => Some(MachineAsked::Live),
            None => None,
        })
    }
}

impl MachineSpec {
    /// The machine `tune` and `model` fit on: the first kind is the P-cores,
    /// a second the E-cores (named `P` and `E` they may come in any order).
    pub fn for_tune(&self) -> Result<pinsight_tune_model::Machine, String> {
        pinsight_tune_model::Machine::of_given(&self.spec, &self.text).map_err(said)
    }

    /// The machine `simulate` runs: the first kind big, every other small.
    pub fn for_simulate(&self) -> Result<pinsight_sched_model::Machine, String> {
        pinsight_sched_model::Machine::of_given(&self.spec, &self.text).map_err(said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_percentages_or_fractions() {
        assert_eq!(share("5%"), Ok(0.05));
        assert_eq!(share("0.2"), Ok(0.2));
        assert_eq!(share("100%"), Ok(1.0));
        for bad in ["0", "0%", "101%", "1.5", "-1%", "x", "nan", ""] {
            let e = share(bad).unwrap_err();
            assert!(e.contains("not a share of a CPU's time"), "{bad}: {e}");
        }
        assert_eq!(reruns("3"), Ok(3));
        assert!(reruns("101").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(positive_duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(
            positive_duration("500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(positive_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(
            positive_duration("1.5").unwrap(),
            Duration::from_millis(1500)
        );
        assert!(positive_duration("fast").unwrap_err().contains("'fast'"));
        assert!(positive_duration("-1s").is_err());
        assert!(positive_duration("99999999999999999").is_err());
        assert!(positive_duration("0s").is_err());
        assert!(interval("0.5ms").is_err() && interval("61m").is_err());
        assert!(interval("1ms").is_ok() && interval("1h").is_ok());
        assert_eq!(interval_or_off("0"), Ok(Duration::ZERO));
        assert!(interval_or_off("2h").is_err());
        assert!(precision("1%").is_ok() && share("100%").is_ok() && precision("100%").is_err());
        assert_eq!(pid("42"), Ok(42));
        assert!(pid("0").is_err() && pid("x").is_err());
    }

    #[test]
    fn counts_are_bounded() {
        assert_eq!(threads("8"), Ok(8));
        assert!(threads("0").is_err());
        assert!(threads("99999999999").is_err());
        assert!(runs("4294967295").is_err());
        assert!(warmup("99999999999999999999999").is_err());
        assert_eq!(warmup("0"), Ok(0));
    }

    #[test]
    fn one_machine_grammar() {
        let t = |s: &str| machine(s).unwrap().for_tune().map(|m| m.to_string());
        assert_eq!(t("6P+8E+smt").unwrap(), "6P+8E+smt");
        assert_eq!(t("8E+6P").unwrap(), "6P+8E");
        assert_eq!(t("4big+4little").unwrap(), "4P+4E");
        assert_eq!(t("8P+smt2").unwrap(), "8P+smt2");
        assert!(t("6P+8E+2L").is_err());
        let s = |s: &str| machine(s).unwrap().for_simulate();
        assert_eq!(s("6P+8E+2L").unwrap().small, 10);
        assert_eq!(s("4big+4little").unwrap().big, 4);
        assert!(s("6P+8E+smt").is_err());
        assert!(s("8P").is_err());
        assert!(machine("P+E").is_err());
        assert!(machine("6P+6p").is_err());
    }

    /// The three consumers of `--machine` (the CLI, tune-model's
    /// `Machine::from_str`, sched-model's `Machine::parse`) refuse exactly
    /// the texts the one grammar refuses, agree with each other on what
    /// they accept, and printed specs parse back: over every join of up to
    /// three of these pieces.
    #[test]
    fn the_consumers_share_one_grammar() {
        use pinsight_model::machine_spec::MachineSpec as Spec;
        let pieces = [
            "6P", "8E", "2L", "4big", "4little", "0P", "6p", " 8e ", "smt", "SMT2", "smt9", "P",
            "", "1234567P", "4_x", "5000P",
        ];
        let mut texts = vec![String::new()];
        for a in pieces {
            texts.push(a.to_owned());
            for b in pieces {
                texts.push(format!("{a}+{b}"));
                for c in pieces {
                    texts.push(format!("{a}+{b}+{c}"));
                }
            }
        }
        let mut accepted = [0usize; 3];
        for text in &texts {
            let grammar = Spec::parse(text);
            let cli = machine(text);
            let tune = text.parse::<pinsight_tune_model::Machine>();
            let sched = pinsight_sched_model::Machine::parse(text);
            assert_eq!(cli.is_ok(), grammar.is_ok(), "{text:?}");
            if let Ok(g) = &grammar {
                assert_eq!(Spec::parse(&g.to_string()).as_ref(), Ok(g), "{text:?}");
            } else {
                assert!(tune.is_err() && sched.is_err(), "{text:?}");
            }
            if let Ok(m) = &tune {
                let via_cli = cli.as_ref().unwrap().for_tune();
                assert_eq!(via_cli.as_ref(), Ok(m), "{text:?}");
                accepted[0] += 1;
            }
            let via_cli = cli.as_ref().ok().and_then(|m| m.for_simulate().ok());
            assert_eq!(sched.as_ref().ok(), via_cli.as_ref(), "{text:?}");
            accepted[1] += usize::from(sched.is_ok());
            accepted[2] += usize::from(grammar.is_ok());
        }
        assert!(accepted.iter().all(|&n| n > 20), "{accepted:?}");
    }
}
