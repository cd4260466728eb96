//! A seeded, deterministic discrete-time simulator of a big/small machine
//! running single-threaded programs under one policy.
//!
//! **Machine.** `big` + `small` cores, one thread each at a time. A big
//! core retires [`SimConfig::big_ips`] instructions per second (10⁹ by
//! default) of every program; a small core `big_ips / SF` of a phase whose
//! speedup factor is SF. A phase with memory-boundedness `m` runs at
//! `1 / (1 + m · M)` of that speed, where `M` is the summed
//! memory-boundedness of the other running programs per core (bandwidth
//! contention; 0 when alone).
//!
//! **Time.** Steps of one scheduler period ([`SimConfig::period_s`],
//! 200 ms). In a step each program runs on the kind the policy gave it:
//! a big core to itself, or an equal share of the small cores
//! (`min(1, small / waiting)`). Phases and completions fall inside a step
//! at their exact time.
//!
//! **Policies.** AARR, TO and ACFS are [`crate::Scheduler`] itself, fed
//! each step with the CPU times the simulator accounted and the SF
//! estimate of the chosen [`SfQuality`] (see there for when it is drawn).
//! The OS is modelled as Linux's fair share without asymmetry awareness: a
//! program starting takes an idle big core first, then an idle small one,
//! and stays on its core; with more programs than cores, every program
//! gets `cores / programs` of a CPU, on big cores `big / cores` of it.
//!
//! **Run model** (that of Saez and Prieto-Matias, APSys '22, §5, and
//! `pinsight mix`'s): all programs start
//! together (in a seeded random order, which decides the OS's initial
//! placement); each one that finishes restarts at once, until every
//! program has completed [`SimConfig::repeat`] times. A program's time in
//! the mix is the geometric mean of its completed runs.
//!
//! **Metrics** ([`Metrics`]), with `Tᵢ` program i's time in the mix,
//! `Bᵢ` and `Sᵢ` its time alone on a big and on a small core:
//! slowdown `Tᵢ / Bᵢ`; unfairness `max slowdown / min slowdown`;
//! STP `Σ Bᵢ / Tᵢ` (normalised progress); ANTT `mean of Tᵢ / Bᵢ`;
//! aggregate speedup `Σ (Sᵢ / Tᵢ − 1)` (the throughput metric of Saez and
//! Prieto-Matias, APSys '22, §5).

use crate::policy::{Assignment, Capacity, Observation, Policy, Scheduler, ThreadId};
use crate::spec::{Machine, Program, SfQuality};
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;
use serde::Serialize;
use thiserror::Error;

/// A simulation's settings and every policy's result: `pinsight
/// simulate`'s JSON document.
#[derive(Debug, Clone, Serialize)]
pub struct SimReport<'a> {
    pub machine: Machine,
    /// Where the machine came from, in the caller's words.
    pub machine_source: &'a str,
    /// The SF estimates the policies saw (`exact`, `classes:…`, `mae:…`).
    pub sf_estimate: String,
    pub seed: u64,
    pub repeat: u32,
    pub period_s: f64,
    /// One result per policy, in the order simulated.
    pub policies: &'a [PolicyResult],
}

impl SimConfig {
    /// The report of `policies` simulated under this configuration, on a
    /// machine from `machine_source`.
    pub fn report<'a>(
        &self,
        machine_source: &'a str,
        policies: &'a [PolicyResult],
    ) -> SimReport<'a> {
        SimReport {
            machine: self.machine,
            machine_source,
            sf_estimate: self.quality.to_string(),
            seed: self.seed,
            repeat: self.repeat,
            period_s: self.period_s,
            policies,
        }
    }
}

/// What a simulation runs on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimConfig {
    /// The machine.
    pub machine: Machine,
    /// The SF estimates the policies see.
    pub quality: SfQuality,
    /// Seed of every random draw (start order, class and noise draws).
    pub seed: u64,
    /// Completions of every program before the run ends (default 3).
    pub repeat: u32,
    /// Step = scheduler period, seconds (default 0.2).
    pub period_s: f64,
    /// Instructions per second on a big core (default 10⁹).
    pub big_ips: f64,
    /// Most program-steps (steps × programs) before giving up (default
    /// 5·10⁷, some seconds of computing): bounds the work of any input.
    pub max_work: u64,
}

impl SimConfig {
    /// The defaults for `machine`: exact SFs, seed 1, 3 completions,
    /// 200 ms period, 10⁹ instructions/s on a big core.
    pub fn new(machine: Machine) -> SimConfig {
        SimConfig {
            machine,
            quality: SfQuality::Exact,
            seed: 1,
            repeat: 3,
            period_s: 0.2,
            big_ips: 1e9,
            max_work: 50_000_000,
        }
    }
}

/// Why a simulation could not run.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SimError {
    /// No program.
    #[error("no program to simulate")]
    NoPrograms,
    /// Bad configuration.
    #[error("{0}")]
    Config(&'static str),
    /// The run would not end within the step limit.
    #[error("the run did not end within {steps} steps ({simulated_s:.0} s simulated): programs too long for the period; use fewer instructions, fewer repeats or a longer period")]
    TooLong {
        /// Steps run.
        steps: u64,
        /// Simulated seconds.
        simulated_s: f64,
    },
}

/// The multi-program metrics (see the module doc) for one policy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metrics {
    /// `Σ (Sᵢ / Tᵢ − 1)`: speedup over each program alone on a small core.
    pub aggregate_speedup: f64,
    /// `Σ Bᵢ / Tᵢ`: system throughput (normalised progress).
    pub stp: f64,
    /// `mean(Tᵢ / Bᵢ)`: average normalised turnaround time.
    pub antt: f64,
    /// `max(Tᵢ / Bᵢ) / min(Tᵢ / Bᵢ)`.
    pub unfairness: f64,
}

/// One program's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramResult {
    /// Its name.
    pub name: String,
    /// Its true mean SF.
    pub mean_sf: f64,
    /// Completed runs.
    pub runs: u32,
    /// Geometric mean of its run times in the mix, seconds.
    pub time_s: f64,
    /// Alone on a big core, seconds.
    pub alone_big_s: f64,
    /// Alone on a small core, seconds.
    pub alone_small_s: f64,
    /// `time_s / alone_big_s`.
    pub slowdown: f64,
    /// Share of its CPU time spent on big cores.
    pub big_share: f64,
}

/// One policy's simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyResult {
    /// The policy's name.
    pub policy: String,
    /// Its metrics.
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Per program, in input order.
    pub programs: Vec<ProgramResult>,
    /// Simulated seconds until the slowest program's last completion.
    pub simulated_s: f64,
    /// Steps taken.
    pub steps: u64,
}

/// A running instance of a program.
#[derive(Debug, Clone)]
struct Inst {
    id: ThreadId,
    phase: usize,
    left: f64,
    start: f64,
    /// The policy's SF estimate per phase, drawn at start.
    estimates: Vec<f64>,
    /// OS model: its core (big cores first), when it holds one.
    core: Option<usize>,
}

struct Draw(XorShiftRng);

impl Draw {
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n.saturating_sub(1))
    }
    /// Standard normal, Box–Muller (hand-written: one line, and rand_distr
    /// is not in the tree).
    fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
    fn estimate(&mut self, quality: &SfQuality, truth: f64) -> f64 {
        match quality {
            SfQuality::Exact => truth,
            SfQuality::Classes(v) => v[self.below(v.len())],
            SfQuality::Mae(e) => {
                let sigma = e * (std::f64::consts::PI / 2.0).sqrt();
                (truth + sigma * self.normal()).max(0.1)
            }
        }
    }
}

/// Time alone on a big core and alone on a small core, seconds.
pub fn alone_times(p: &Program, big_ips: f64) -> (f64, f64) {
    let big: f64 = p.phases.iter().map(|f| f.instructions / big_ips).sum();
    let small: f64 = p
        .phases
        .iter()
        .map(|f| f.instructions * f.sf / big_ips)
        .sum();
    (big, small)
}

/// Simulates `programs` on `cfg.machine` under `policy` (see the module
/// documentation for the model and the metrics).
pub fn simulate(
    cfg: &SimConfig,
    programs: &[Program],
    policy: Policy,
) -> Result<PolicyResult, SimError> {
    validate(cfg, programs)?;
    let mut sim = Sim::new(cfg, programs, policy);
    sim.start_all();
    loop {
        if sim.steps.saturating_mul(sim.n as u64) >= cfg.max_work {
            return Err(SimError::TooLong {
                steps: sim.steps,
                simulated_s: sim.t,
            });
        }
        if sim.step() {
            break;
        }
    }
    Ok(sim.result(policy))
}

/// Refuses inputs the model cannot run: no program (or one without a
/// phase), a bad period or speed, a machine without both kinds, no repeat.
fn validate(cfg: &SimConfig, programs: &[Program]) -> Result<(), SimError> {
    if programs.is_empty() || programs.iter().any(|p| p.phases.is_empty()) {
        return Err(SimError::NoPrograms);
    }
    if !(cfg.period_s.is_finite() && cfg.period_s > 0.0) {
        return Err(SimError::Config(
            "the period must be a positive number of seconds",
        ));
    }
    if !(cfg.big_ips.is_finite() && cfg.big_ips > 0.0) {
        return Err(SimError::Config("big_ips must be positive"));
    }
    if cfg.machine.big == 0 || cfg.machine.small == 0 {
        return Err(SimError::Config("the machine needs big and small cores"));
    }
    if cfg.repeat == 0 {
        return Err(SimError::Config("repeat must be at least 1"));
    }
    Ok(())
}

/// The state of one simulation run.
struct Sim<'a> {
    cfg: &'a SimConfig,
    programs: &'a [Program],
    /// Big and small cores.
    nb: usize,
    ns: usize,
    /// All cores.
    cores: usize,
    /// Programs.
    n: usize,
    draw: Draw,
    capacity: Capacity,
    sched: Scheduler,
    /// Whether the policy decides the assignment (not the OS model).
    managed: bool,
    next_id: u64,
    /// OS model: which cores are held.
    core_used: Vec<bool>,
    /// Per program, its running instance.
    insts: Vec<Option<Inst>>,
    assignment: Assignment,
    /// Per program, the times of its completed runs.
    runs: Vec<Vec<f64>>,
    big_time: Vec<f64>,
    cpu_time: Vec<f64>,
    t: f64,
    steps: u64,
    last_completion: f64,
}

/// Where one program's step ended: CPU seconds used, and whether its run
/// completed.
struct Progress {
    used: f64,
    done: bool,
}

impl<'a> Sim<'a> {
    /// A run not started yet, its draws seeded from `cfg.seed`.
    fn new(cfg: &'a SimConfig, programs: &'a [Program], policy: Policy) -> Sim<'a> {
        let (nb, ns) = (cfg.machine.big, cfg.machine.small);
        let n = programs.len();
        Sim {
            cfg,
            programs,
            nb,
            ns,
            cores: nb + ns,
            n,
            draw: Draw(XorShiftRng::seed_from_u64(cfg.seed)),
            capacity: Capacity::uniform(nb, ns),
            sched: Scheduler::new(policy),
            managed: policy != Policy::Os,
            next_id: 0,
            core_used: vec![false; nb + ns],
            insts: vec![None; n],
            assignment: Assignment::default(),
            runs: vec![Vec::new(); n],
            big_time: vec![0.0; n],
            cpu_time: vec![0.0; n],
            t: 0.0,
            steps: 0,
            last_completion: 0.0,
        }
    }

    /// Starts program `p` at time `t`: draws its SF estimates and, in the
    /// OS model, gives it an idle big core first, then an idle small one.
    fn start(&mut self, p: usize, t: f64) -> Inst {
        let estimates = self.programs[p]
            .phases
            .iter()
            .map(|f| self.draw.estimate(&self.cfg.quality, f.sf))
            .collect();
        let core = if self.n <= self.cores {
            self.core_used.iter().position(|u| !u)
        } else {
            None
        };
        if let Some(c) = core {
            self.core_used[c] = true;
        }
        self.next_id += 1;
        Inst {
            id: ThreadId(self.next_id),
            phase: 0,
            left: self.programs[p].phases[0].instructions,
            start: t,
            estimates,
            core,
        }
    }

    /// Starts every program together, in a seeded random order
    /// (Fisher–Yates), and takes the policy's first assignment.
    fn start_all(&mut self) {
        let mut order: Vec<usize> = (0..self.n).collect();
        for i in (1..self.n).rev() {
            let j = self.draw.below(i + 1);
            order.swap(i, j);
        }
        for &p in &order {
            self.insts[p] = Some(self.start(p, 0.0));
        }
        if self.managed {
            let obs: Vec<Observation> = self
                .insts
                .iter()
                .flatten()
                .map(|i| Observation {
                    id: i.id,
                    big_time: 0.0,
                    small_time: 0.0,
                    sf: Some(i.estimates[i.phase]),
                })
                .collect();
            self.assignment = self.sched.step(&obs, &self.capacity);
        }
    }

    /// One period; true when every program has completed its runs.
    fn step(&mut self) -> bool {
        self.steps += 1;
        let shares = self.shares();
        // Memory contention: others' memory-boundedness per core.
        let mems: Vec<f64> = self
            .insts
            .iter()
            .zip(&shares)
            .enumerate()
            .map(|(p, (i, s))| match i {
                Some(i) => self.programs[p].phases[i.phase].mem * (s.0 + s.1),
                None => 0.0,
            })
            .collect();
        let mem_total: f64 = mems.iter().sum();
        let mut obs = Vec::with_capacity(self.n);
        let mut finished = Vec::new();
        for p in 0..self.n {
            if self.insts[p].is_none() {
                continue;
            }
            let (b, s) = shares[p];
            let others = (mem_total - mems[p]) / self.cores as f64;
            let progress = self.advance(p, b, s, others);
            self.account(p, b, s, progress, &mut obs, &mut finished);
        }
        self.t += self.cfg.period_s;
        if self
            .runs
            .iter()
            .all(|r| r.len() >= self.cfg.repeat as usize)
        {
            return true;
        }
        self.restart(&finished, &mut obs);
        if self.managed {
            self.assignment = self.sched.step(&obs, &self.capacity);
        }
        false
    }

    /// Each program's share of this step on a big and on a small core.
    fn shares(&self) -> Vec<(f64, f64)> {
        let (nb, ns, cores, n) = (self.nb, self.ns, self.cores, self.n);
        if self.managed {
            let waiting = self
                .insts
                .iter()
                .flatten()
                .filter(|i| !self.assignment.on_big(i.id))
                .count();
            let small_share = if waiting == 0 {
                0.0
            } else {
                (ns as f64 / waiting as f64).min(1.0)
            };
            self.insts
                .iter()
                .map(|i| match i {
                    Some(i) if self.assignment.on_big(i.id) => (1.0, 0.0),
                    Some(_) => (0.0, small_share),
                    None => (0.0, 0.0),
                })
                .collect()
        } else if n <= cores {
            self.insts
                .iter()
                .map(|i| match i.as_ref().and_then(|i| i.core) {
                    Some(c) if c < nb => (1.0, 0.0),
                    Some(_) => (0.0, 1.0),
                    None => (0.0, 0.0),
                })
                .collect()
        } else {
            let share = cores as f64 / n as f64;
            let b = share * nb as f64 / cores as f64;
            vec![(b, share - b); n]
        }
    }

    /// Runs program `p` for one period with shares `b` (big) and `s`
    /// (small), `others` the others' memory-boundedness per core, through
    /// as many phases as fit.
    fn advance(&mut self, p: usize, b: f64, s: f64, others: f64) -> Progress {
        let dt = self.cfg.period_s;
        let phases = &self.programs[p].phases;
        let inst = self.insts[p].as_mut().expect("a running program");
        let mut remaining = dt;
        let mut done = false;
        while remaining > 0.0 {
            let phase = &phases[inst.phase];
            let c = 1.0 / (1.0 + phase.mem * others);
            let rate = self.cfg.big_ips * c * (b + s / phase.sf);
            if rate <= 0.0 {
                break;
            }
            let need = inst.left / rate;
            if need > remaining {
                inst.left -= rate * remaining;
                remaining = 0.0;
            } else {
                remaining -= need;
                inst.phase += 1;
                if inst.phase == phases.len() {
                    done = true;
                    break;
                }
                inst.left = phases[inst.phase].instructions;
            }
        }
        Progress {
            used: dt - remaining,
            done,
        }
    }

    /// Books program `p`'s step: its CPU times, and either its completed
    /// run (into `finished`) or its observation for the policy.
    fn account(
        &mut self,
        p: usize,
        b: f64,
        s: f64,
        progress: Progress,
        obs: &mut Vec<Observation>,
        finished: &mut Vec<usize>,
    ) {
        let used = progress.used;
        self.big_time[p] += b * used;
        self.cpu_time[p] += (b + s) * used;
        let inst = self.insts[p].as_ref().expect("a running program");
        if progress.done {
            let end = self.t + used;
            self.runs[p].push(end - inst.start);
            self.last_completion = self.last_completion.max(end);
            finished.push(p);
        } else {
            // Class estimates are read afresh every period, as Thread
            // Director's class is read every tick; the others hold
            // for the phase.
            let sf = match &self.cfg.quality {
                SfQuality::Classes(_) => self
                    .draw
                    .estimate(&self.cfg.quality, self.programs[p].phases[inst.phase].sf),
                _ => inst.estimates[inst.phase],
            };
            obs.push(Observation {
                id: inst.id,
                big_time: b * used,
                small_time: s * used,
                sf: Some(sf),
            });
        }
    }

    /// Frees the cores of the `finished` programs, then starts each again
    /// at once, telling the policy about the new threads.
    fn restart(&mut self, finished: &[usize], obs: &mut Vec<Observation>) {
        for &p in finished {
            if let Some(c) = self.insts[p].take().and_then(|i| i.core) {
                self.core_used[c] = false;
            }
        }
        for &p in finished {
            let inst = self.start(p, self.t);
            obs.push(Observation {
                id: inst.id,
                big_time: 0.0,
                small_time: 0.0,
                sf: Some(inst.estimates[0]),
            });
            self.insts[p] = Some(inst);
        }
    }

    /// The per-program results and the metrics of the finished run.
    fn result(self, policy: Policy) -> PolicyResult {
        let mut results = Vec::with_capacity(self.n);
        for (p, prog) in self.programs.iter().enumerate() {
            let (alone_big_s, alone_small_s) = alone_times(prog, self.cfg.big_ips);
            let r = &self.runs[p];
            let time_s = (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp();
            results.push(ProgramResult {
                name: prog.name.clone(),
                mean_sf: prog.mean_sf(),
                runs: r.len() as u32,
                time_s,
                alone_big_s,
                alone_small_s,
                slowdown: time_s / alone_big_s,
                big_share: if self.cpu_time[p] > 0.0 {
                    self.big_time[p] / self.cpu_time[p]
                } else {
                    0.0
                },
            });
        }
        PolicyResult {
            policy: policy.name().to_string(),
            metrics: metrics(&results),
            programs: results,
            simulated_s: self.last_completion,
            steps: self.steps,
        }
    }
}

/// The multi-program metrics over per-program results (see the module doc).
pub fn metrics(programs: &[ProgramResult]) -> Metrics {
    let sd: Vec<f64> = programs.iter().map(|p| p.slowdown).collect();
    let max = sd.iter().copied().fold(f64::MIN, f64::max);
    let min = sd.iter().copied().fold(f64::MAX, f64::min);
    Metrics {
        aggregate_speedup: programs
            .iter()
            .map(|p| p.alone_small_s / p.time_s - 1.0)
            .sum(),
        stp: sd.iter().map(|s| 1.0 / s).sum(),
        antt: sd.iter().sum::<f64>() / sd.len().max(1) as f64,
        unfairness: max / min,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Phase;

    fn prog(name: &str, instr: f64, sf: f64) -> Program {
        Program {
            name: name.into(),
            phases: vec![Phase {
                instructions: instr,
                sf,
                mem: 0.0,
            }],
        }
    }

    #[test]
    fn alone_on_a_big_core_is_the_reference() {
        // One program, a machine with a free big core: slowdown 1 under
        // every policy (completion inside a step at its exact time).
        let cfg = SimConfig::new(Machine { big: 1, small: 1 });
        for policy in [
            Policy::Os,
            Policy::aarr(0.2),
            Policy::to(),
            Policy::acfs(0.2),
        ] {
            let r = simulate(&cfg, &[prog("a", 1.05e9, 2.0)], policy).unwrap();
            assert!(
                (r.programs[0].slowdown - 1.0).abs() < 1e-9,
                "{policy:?}: {r:?}"
            );
            assert_eq!(r.programs[0].runs, 3);
            assert!((r.metrics.aggregate_speedup - 1.0).abs() < 1e-9);
            assert!((r.metrics.stp - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn deterministic_per_seed() {
        let mut cfg = SimConfig::new(Machine { big: 1, small: 1 });
        cfg.quality = SfQuality::Mae(0.3);
        let ps = [
            prog("a", 2e9, 2.0),
            prog("b", 3e9, 1.5),
            prog("c", 1e9, 1.2),
        ];
        let a = simulate(&cfg, &ps, Policy::to()).unwrap();
        let b = simulate(&cfg, &ps, Policy::to()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn two_programs_one_big_core_aarr_shares_it() {
        // Same program twice, SF 2, 1 big + 1 small: AARR alternates, each
        // gets half the big core: rate 0.5 + 0.5/2 = 0.75 → slowdown 4/3.
        let cfg = SimConfig::new(Machine { big: 1, small: 1 });
        let ps = [prog("a", 40e9, 2.0), prog("b", 40e9, 2.0)];
        let r = simulate(&cfg, &ps, Policy::aarr(0.2)).unwrap();
        for p in &r.programs {
            assert!((p.slowdown - 4.0 / 3.0).abs() < 0.02, "{p:?}");
            assert!((p.big_share - 0.5).abs() < 0.02, "{p:?}");
        }
        assert!(r.metrics.unfairness < 1.02);
    }

    #[test]
    fn more_programs_than_cores() {
        let cfg = SimConfig::new(Machine { big: 1, small: 1 });
        let ps: Vec<Program> = (0..4).map(|i| prog(&format!("p{i}"), 2e9, 2.0)).collect();
        for policy in [
            Policy::Os,
            Policy::aarr(0.2),
            Policy::to(),
            Policy::acfs(0.2),
        ] {
            let r = simulate(&cfg, &ps, policy).unwrap();
            assert!(r.programs.iter().all(|p| p.runs >= 3));
            // Four programs on two cores: the fair policies give each
            // 0.5 × (0.5 + 0.5 / 2) = 0.375 of a big core.
            if policy != Policy::to() {
                for p in &r.programs {
                    assert!((p.slowdown - 1.0 / 0.375).abs() < 0.35, "{policy:?}: {p:?}");
                }
            }
        }
    }

    #[test]
    fn too_long_is_an_error() {
        let mut cfg = SimConfig::new(Machine { big: 1, small: 1 });
        cfg.max_work = 20;
        let ps = [prog("a", 1e12, 2.0), prog("b", 1e12, 2.0)];
        let e = simulate(&cfg, &ps, Policy::Os).unwrap_err();
        assert!(matches!(e, SimError::TooLong { steps: 10, .. }), "{e:?}");
    }
}
