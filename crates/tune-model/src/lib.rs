//! Pure tuning model behind `pinsight tune`: how many threads on
//! which kinds of core, fitted from a handful of runs.
//!
//! * [`Config`], [`Machine`], [`Observation`]: what was run, what the machine
//!   allows, what was measured.
//! * [`ModelKind`]: the asymmetric Amdahl models of seed
//!   "work-stealing-on-asymmetric-multicore" (eqs. 3–6): work-stealing
//!   ([`ModelKind::Dynamic`]) and an equal static split paced by the slowest
//!   thread ([`ModelKind::Static`]).
//! * [`fit`]: least squares on log time for both models, with and without a
//!   contention term, each to its global optimum (the linear part solved
//!   exactly, sf and γ searched over their whole range), parameters the
//!   runs do not identify held, chosen by AICc, with bootstrap intervals.
//! * [`design`], [`predict`], [`recommend`], [`validation`]: which
//!   configurations to run, and what the fit says about all of them.
//! * [`parse_runs`]: the `p,e,smt,time_s[,energy_j]` CSV of `tune --from`.
//! * Energy and EDP ([`Goal`]): a power model fitted when runs carry energy.
//! * [`analyse`]: the whole analysis as a [`TuneReport`] (the `--json`
//!   contract of `pinsight tune`): configurations predicted by
//!   extrapolation marked and not recommended, quality gates that fall back
//!   to the best measured configuration; [`speedup_curve`] for
//!   `pinsight model`; [`Machine::spanned`] for the machine the runs imply.
//! * Specs: [`Machine`] (`6P+8E+smt`), [`Config`] (`4P+8E+2smt`) and
//!   [`ModelSpec`] (`f=0.95,sf=2,model=static`) parse from text.
//!
//! No I/O, no OS calls: everything here is a pure function of its input.
#![forbid(unsafe_code)]

mod curve;
mod design;
mod evaluation;
mod fit;
mod model;
mod nelder_mead;
mod power;
mod projection;
mod report;
mod runs;
mod spec;

pub use curve::{speedup_curve, CurvePoint, Order};
pub use design::{
    design, extrapolated, predict, ranked, recommend, validation, validation_for, Goal,
    GoalParseError, Prediction, Recommendation,
};
pub use evaluation::{
    choose_machine, evaluate, machine_spanned, ConfigPrediction, Curves, Evaluation, MachineAsked,
    MachineChoice, MachineSource,
};
pub use fit::{
    fit, fit_model, objective, Bound, Candidate, Fit, FitError, FitOptions, Param, ParamStatus,
    Params, SF_MAX,
};
pub use model::{Basis, ModelKind, Theta};
pub use power::{Estimate, PowerFit, PowerParams};
pub use report::{
    analyse, analyse_with, Alternative, Caveat, Change, Choice, Evidence, FitQuality, PowerReport,
    RecommendedBy, TuneReport, ValidationRow, AT_BOUND_CHI2, R2_MIN, RESIDUAL_MAX_RATIO,
};
pub use runs::{parse_runs, RunsError};
pub use spec::{ModelSpec, SpecError};

use serde::Serialize;

/// One configuration: how many cores of each kind a run used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Config {
    /// P-cores (fast cores) used, one thread each.
    pub p: u32,
    /// E-cores (slow cores) used, one thread each.
    pub e: u32,
    /// SMT siblings used beyond one thread per core. The models place them
    /// on the used P-cores first (one per core), then on the used E-cores.
    pub smt: u32,
}

impl Config {
    /// A configuration of `p` P-cores, `e` E-cores and `smt` extra siblings.
    pub const fn new(p: u32, e: u32, smt: u32) -> Self {
        Config { p, e, smt }
    }

    /// Cores used (P + E).
    pub const fn cores(&self) -> u32 {
        self.p + self.e
    }

    /// Threads run (cores + SMT siblings).
    pub const fn threads(&self) -> u32 {
        self.p + self.e + self.smt
    }

    /// SMT siblings on P-cores and on E-cores: P-cores first, one per core,
    /// then E-cores; on a configuration without E-cores all are on P-cores
    /// (and vice versa), whatever the SMT width.
    pub fn smt_split(&self) -> (u32, u32) {
        if self.e == 0 {
            (self.smt, 0)
        } else if self.p == 0 {
            (0, self.smt)
        } else {
            let on_p = self.smt.min(self.p);
            (on_p, self.smt - on_p)
        }
    }
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}P+{}E+{}smt", self.p, self.e, self.smt)
    }
}

/// What a machine allows. A machine of one kind has `e_cores == 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// P-cores (or all cores on a machine of one kind).
    pub p_cores: u32,
    /// E-cores; 0 on a machine of one kind.
    pub e_cores: u32,
    /// SMT siblings per P-core beyond the first thread (1 for 2-way SMT).
    pub smt_per_p_core: u32,
    /// SMT siblings per E-core beyond the first thread.
    pub smt_per_e_core: u32,
}

impl Machine {
    /// True when the machine has one kind of core (no E-cores).
    pub const fn one_kind(&self) -> bool {
        self.e_cores == 0
    }

    /// Whether `config` fits this machine.
    pub fn allows(&self, c: Config) -> bool {
        c.cores() >= 1
            && c.p <= self.p_cores
            && c.e <= self.e_cores
            && c.smt <= c.p * self.smt_per_p_core + c.e * self.smt_per_e_core
    }

    /// The smallest machine that allows every run: the largest P and E
    /// counts seen, and SMT siblings per core as the runs used them.
    /// `None` without runs.
    pub fn spanned(runs: &[Observation]) -> Option<Machine> {
        let first = runs.first()?;
        let mut m = Machine {
            p_cores: first.config.p,
            e_cores: first.config.e,
            smt_per_p_core: 0,
            smt_per_e_core: 0,
        };
        for o in runs {
            let c = o.config;
            let (on_p, on_e) = c.smt_split();
            m.p_cores = m.p_cores.max(c.p);
            m.e_cores = m.e_cores.max(c.e);
            if c.p > 0 {
                m.smt_per_p_core = m.smt_per_p_core.max(on_p.div_ceil(c.p));
            }
            if c.e > 0 {
                m.smt_per_e_core = m.smt_per_e_core.max(on_e.div_ceil(c.e));
            }
        }
        (m.p_cores + m.e_cores > 0).then_some(m)
    }

    /// Every configuration the machine allows (at least one core), ordered
    /// by (p, e, smt).
    pub fn configs(&self) -> Vec<Config> {
        let mut out = Vec::new();
        for p in 0..=self.p_cores {
            for e in 0..=self.e_cores {
                if p + e == 0 {
                    continue;
                }
                let max_smt = p * self.smt_per_p_core + e * self.smt_per_e_core;
                for smt in 0..=max_smt {
                    out.push(Config { p, e, smt });
                }
            }
        }
        out
    }
}

/// One measured run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Observation {
    /// The configuration run.
    pub config: Config,
    /// Wall time in seconds (> 0).
    pub time_s: f64,
    /// Energy in joules, when measured (RAPL).
    pub energy_j: Option<f64>,
}
