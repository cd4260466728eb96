//! Where the scheduler's speedup factors come from: the [`SfSource`] seam.
//!
//! SFs are given per program ([`GivenSf`]: `--sf NAME=1.9`, NAME a
//! program's name or its position `#N`) or measured per thread from
//! counters ([`CounterSf`]: `pinsight sf`'s sampler, one counter group per
//! core-kind PMU, its estimator and phase cache). The manager asks once per
//! thread per period and passes the answer to `Scheduler::step` (`None`
//! keeps the previous estimate; a thread never given one ranks at the mean
//! of the known ones).

use pinsight_sched_model::Policy;
use std::fmt;

/// A managed program as SF sources see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramRef<'a> {
    /// Its position among the managed programs, from 1 (the order of
    /// `--pids`, else the order in which they were first seen).
    pub position: usize,
    /// Its name (basename of `argv[0]`, else comm).
    pub name: &'a str,
    /// Its process id.
    pub pid: i32,
}

/// One period's sample of a thread, for sources that estimate from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadPeriod {
    /// The thread.
    pub tid: i32,
    /// CPU seconds on the big kind this period.
    pub big_s: f64,
    /// CPU seconds on the small kinds this period.
    pub small_s: f64,
}

/// Gives the scheduler an SF per thread each period.
pub trait SfSource {
    /// The SF of `thread` of `program` now; `None`: no new estimate.
    fn sf(&mut self, program: &ProgramRef<'_>, thread: &ThreadPeriod) -> Option<f64>;
}

/// Never knows an SF (AARR and OS do not need one; TO and ACFS then treat
/// every thread alike).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSf;

impl SfSource for NoSf {
    fn sf(&mut self, _: &ProgramRef<'_>, _: &ThreadPeriod) -> Option<f64> {
        None
    }
}

/// Which programs an SF given by the user applies to.
#[derive(Debug, Clone, PartialEq)]
pub enum SfTarget {
    /// Programs with this name.
    Name(String),
    /// The program at this position (from 1).
    Position(usize),
}

impl fmt::Display for SfTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SfTarget::Name(n) => f.write_str(n),
            SfTarget::Position(p) => write!(f, "#{p}"),
        }
    }
}

/// The largest position `#N` a given SF may name: Linux's
/// `PID_MAX_LIMIT` (2^22), more processes than a machine can hold at once;
/// a larger N could never match a program.
pub const MAX_POSITION: usize = 1 << 22;

/// A bad `NAME=SF` pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SfSpecError {
    /// No `=`.
    #[error("expected NAME=SF (NAME a program's name or its position #N, SF a number ≥ 1)")]
    Shape,
    /// An empty name or one with a `/`.
    #[error("'{0}' is not a program name or a position #N (N from 1 to {MAX_POSITION})")]
    Target(String),
    /// `#N` with N not a whole number from 1 to [`MAX_POSITION`].
    #[error("'{0}' is not a position: #N with N from 1 to {MAX_POSITION}")]
    Position(String),
    /// SF not a finite number ≥ 1 (a big core is never slower).
    #[error("SF '{0}' is not a number between 1 and 100")]
    Value(String),
}

/// SFs given per program; the first matching entry wins, a position
/// before a name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GivenSf {
    entries: Vec<(SfTarget, f64)>,
}

impl GivenSf {
    /// No SF given.
    pub fn new() -> GivenSf {
        GivenSf::default()
    }

    /// Parses and adds one `NAME=SF` or `#N=SF`.
    pub fn add_spec(&mut self, spec: &str) -> Result<(), SfSpecError> {
        let (target, value) = spec.rsplit_once('=').ok_or(SfSpecError::Shape)?;
        let target = target.trim();
        let target = if let Some(n) = target.strip_prefix('#') {
            match n.parse::<usize>() {
                Ok(p) if (1..=MAX_POSITION).contains(&p) => SfTarget::Position(p),
                _ => return Err(SfSpecError::Position(target.to_string())),
            }
        } else if target.is_empty() || target.contains('/') {
            return Err(SfSpecError::Target(target.to_string()));
        } else {
            SfTarget::Name(target.to_string())
        };
        let v: f64 = value
            .trim()
            .parse()
            .map_err(|_| SfSpecError::Value(value.to_string()))?;
        if !(v.is_finite() && (1.0..=100.0).contains(&v)) {
            return Err(SfSpecError::Value(value.to_string()));
        }
        self.entries.push((target, v));
        Ok(())
    }

    /// The entries, in the order given.
    pub fn entries(&self) -> &[(SfTarget, f64)] {
        &self.entries
    }

    /// The same SFs by position only: each name entry becomes one entry
    /// per position whose program is called that (`names[i]` = position
    /// i + 1's name), so they match whatever the process is called.
    pub fn by_position(&self, names: &[String]) -> GivenSf {
        // Positions given first: they win over names, as in `lookup`.
        let mut out = GivenSf::new();
        for (t, v) in &self.entries {
            if let SfTarget::Position(p) = t {
                out.entries.push((SfTarget::Position(*p), *v));
            }
        }
        for (t, v) in &self.entries {
            if let SfTarget::Name(n) = t {
                for (i, name) in names.iter().enumerate() {
                    if name == n {
                        out.entries.push((SfTarget::Position(i + 1), *v));
                    }
                }
            }
        }
        out
    }

    /// The SF given for `program`, if any.
    pub fn lookup(&self, program: &ProgramRef<'_>) -> Option<f64> {
        let by_pos = self.entries.iter().find_map(|(t, v)| match t {
            SfTarget::Position(p) if *p == program.position => Some(*v),
            _ => None,
        });
        by_pos.or_else(|| {
            self.entries.iter().find_map(|(t, v)| match t {
                SfTarget::Name(n) if n == program.name => Some(*v),
                _ => None,
            })
        })
    }
}

impl SfSource for GivenSf {
    fn sf(&mut self, program: &ProgramRef<'_>, _: &ThreadPeriod) -> Option<f64> {
        self.lookup(program)
    }
}

/// Per-thread SFs from counters: `pinsight-measure`'s [`SfSampler`] (one
/// counter group per core-kind PMU, IPS per kind, the running-average
/// estimator with its phase cache). A thread is attached the first time
/// the manager asks about it and sampled at every period after; its SF is
/// the phase cache's prediction once each kind has enough samples. A thread
/// whose counters cannot be opened or read is left without one (and
/// counted in [`CounterSf::failed`]).
///
/// [`SfSampler`]: pinsight_measure::sf::SfSampler
pub struct CounterSf {
    sampler: pinsight_measure::sf::SfSampler,
    failed: std::collections::BTreeSet<i32>,
}

impl CounterSf {
    /// Over an opened sampler (`SfSampler::new`, which says why counters
    /// are unavailable on this machine).
    pub fn new(sampler: pinsight_measure::sf::SfSampler) -> CounterSf {
        CounterSf {
            sampler,
            failed: Default::default(),
        }
    }

    /// Threads whose counters could not be opened or read.
    pub fn failed(&self) -> usize {
        self.failed.len()
    }
}

impl fmt::Debug for CounterSf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterSf")
            .field("threads", &self.sampler.tids().len())
            .field("failed", &self.failed.len())
            .finish()
    }
}

impl SfSource for CounterSf {
    fn sf(&mut self, _: &ProgramRef<'_>, thread: &ThreadPeriod) -> Option<f64> {
        let tid = thread.tid;
        if self.failed.contains(&tid) {
            return None;
        }
        if !self.sampler.is_attached(tid) && self.sampler.attach(tid).is_err() {
            self.failed.insert(tid);
            return None;
        }
        if self.sampler.sample(tid).is_err() {
            self.sampler.detach(tid);
            self.failed.insert(tid);
            return None;
        }
        self.sampler.sf(tid)
    }
}

/// Why TO or ACFS, given no SF, rank threads as they do ([`choose`]).
#[derive(Debug)]
pub enum SfFallback {
    /// Each thread's SF is measured from per-kind counters.
    Counters { policy: &'static str },
    /// Counters cannot be had here: every thread ranks alike.
    Unavailable {
        policy: &'static str,
        why: pinsight_measure::sf::SfUnavailable,
    },
}

impl fmt::Display for SfFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SfFallback::Counters { policy } => write!(
                f,
                "{policy} measures each thread's SF from per-kind counters \
                 (IPS on the big kind / IPS on the small kind)"
            ),
            SfFallback::Unavailable { policy, why } => write!(
                f,
                "counters are unavailable ({why}): {policy} ranks every thread alike"
            ),
        }
    }
}

impl SfFallback {
    /// The note for a run given no SF, with the input that gives SFs named
    /// by `sf` (its flag): what happens instead, and, where every thread
    /// ranks alike, to give them.
    pub fn note(&self, sf: &str) -> String {
        match self {
            SfFallback::Counters { .. } => format!("no {sf} given: {self}"),
            SfFallback::Unavailable { .. } => format!("no {sf} given and {self}; give {sf} NAME=X"),
        }
    }
}

/// Where `policy` gets its SFs: `given` when it names any program; else,
/// for TO and ACFS (which rank by SF), per-thread counters of the kinds of
/// `topo` (`pinsight sf`'s sampler under the measurement root) when this
/// machine has them, else none — with the [`SfFallback`] that says which.
pub fn choose(
    given: GivenSf,
    policy: &Policy,
    topo: &pinsight_model::Topology,
) -> Result<(Box<dyn SfSource>, Option<SfFallback>), pinsight_measure::MeasureRootError> {
    if !given.entries().is_empty() {
        return Ok((Box::new(given), None));
    }
    if !matches!(policy, Policy::To { .. } | Policy::Acfs { .. }) {
        return Ok((Box::new(NoSf), None));
    }
    use pinsight_measure::sf::{KindCpus, SfSampler};
    let kinds: Vec<KindCpus> = topo.kinds.iter().map(Into::into).collect();
    let root = pinsight_measure::measurement_root()?;
    let policy = policy.name();
    Ok(match SfSampler::new(&root, &kinds, Default::default()) {
        Ok(s) => (
            Box::new(CounterSf::new(s)),
            Some(SfFallback::Counters { policy }),
        ),
        Err(why) => (
            Box::new(NoSf),
            Some(SfFallback::Unavailable { policy, why }),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_sfs_win_and_only_to_and_acfs_fall_back() {
        let topo = pinsight_testkit::topology::i7_1370p();
        let mut given = GivenSf::new();
        given.add_spec("a=2").unwrap();
        let (_, why) = choose(given, &Policy::to(), &topo).unwrap();
        assert!(why.is_none());
        for p in [Policy::Os, Policy::aarr(0.2)] {
            let (_, why) = choose(GivenSf::new(), &p, &topo).unwrap();
            assert!(why.is_none(), "{p:?}");
        }
        let (_, why) = choose(GivenSf::new(), &Policy::acfs(0.2), &topo).unwrap();
        let why = why.expect("ACFS without SFs says how it ranks");
        assert!(why.to_string().contains("acfs"), "{why}");
        let note = why.note("-s");
        assert!(note.starts_with("no -s given"), "{note}");
        if let SfFallback::Unavailable { .. } = why {
            assert!(note.ends_with("; give -s NAME=X"), "{note}");
        }
    }

    fn prog(position: usize, name: &str) -> ProgramRef<'_> {
        ProgramRef {
            position,
            name,
            pid: 1,
        }
    }

    #[test]
    fn specs_parse_and_match() {
        let mut g = GivenSf::new();
        g.add_spec("a=2.5").unwrap();
        g.add_spec("#2=1.2").unwrap();
        g.add_spec("a.out=1.9").unwrap();
        assert_eq!(g.lookup(&prog(1, "a")), Some(2.5));
        assert_eq!(g.lookup(&prog(2, "a")), Some(1.2), "a position wins");
        assert_eq!(g.lookup(&prog(3, "a.out")), Some(1.9));
        assert_eq!(g.lookup(&prog(3, "b")), None);
        let p = g.by_position(&["x".into(), "a".into(), "a.out".into()]);
        assert_eq!(p.lookup(&prog(2, "sh")), Some(1.2), "#2 given first");
        assert_eq!(p.lookup(&prog(3, "sh")), Some(1.9));
        assert_eq!(p.lookup(&prog(1, "a")), None, "names no longer match");
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut g = GivenSf::new();
        assert_eq!(g.add_spec("a"), Err(SfSpecError::Shape));
        assert!(matches!(g.add_spec("=2"), Err(SfSpecError::Target(_))));
        assert!(matches!(g.add_spec("#0=2"), Err(SfSpecError::Position(_))));
        assert!(matches!(g.add_spec("#x=2"), Err(SfSpecError::Position(_))));
        // Issue 34: a position no program can have, and one past usize.
        for big in [
            "#999999999999=2",
            "#4194305=2",
            "#99999999999999999999999=2",
        ] {
            let e = g.add_spec(big).unwrap_err();
            assert!(matches!(e, SfSpecError::Position(_)), "{big}: {e:?}");
            assert!(e.to_string().contains("from 1 to 4194304"), "{e}");
        }
        g.add_spec("#4194304=2").unwrap();
        g.add_spec("#1=2").unwrap();
        assert_eq!(g.entries().len(), 2);
        let mut g = GivenSf::new();
        assert!(matches!(g.add_spec("a=0.5"), Err(SfSpecError::Value(_))));
        assert!(matches!(g.add_spec("a=NaN"), Err(SfSpecError::Value(_))));
        assert!(matches!(g.add_spec("a=x"), Err(SfSpecError::Value(_))));
        assert!(g.entries().is_empty());
    }
}
