//! `irq --watch`: keeps interrupts where the rule (`--off CPUS` or
//! `--spread`) puts them, as a daemon. Every interval it reads the IRQs
//! again ([`crate::irq::view`]) and plans the rule ([`crate::irq::plan`]):
//!
//! - an IRQ that appeared since the daemon started (a driver loaded
//!   later, a device hot-plugged: irqbalance's users meet these unbalanced)
//!   is moved at once, as is every IRQ off the rule at the first interval;
//! - an IRQ that drifted off the rule (something wrote its affinity) is
//!   moved back once it has stayed off for `patience` intervals in a row;
//! - with `--spread`, an IRQ already on one CPU the rule allows is in
//!   place: the daemon does not reshuffle IRQs as their counts change;
//! - at most `max_moves` IRQs an interval, the rest in the next ones; an
//!   IRQ the kernel refuses (a managed one) is left alone from then on.
//!
//! Before an IRQ is first moved its affinity is added to the state file
//! (crash-safe), so `irq --restore FILE` undoes a daemon killed by
//! `kill -9`; on SIGINT, SIGTERM or SIGHUP it puts every IRQ it moved
//! back and removes the file. IRQs that vanish are forgotten.

use crate::irq::{self, IrqError, Move, SavedState, Target};
use crate::journal::Journal;
use crate::view;
use pinsight_cpuset::CpuSet;
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the daemon decides.
#[derive(Clone, Debug)]
pub struct Options {
    /// Intervals in a row off the rule before a drifted IRQ moves back.
    pub patience: u32,
    /// IRQs moved at most per interval.
    pub max_moves: usize,
    pub interval: Duration,
    /// Stop after this many intervals (putting everything back).
    pub intervals: Option<u64>,
}

/// One interval's decision: a journal line (the quiet intervals have no
/// moves, no refusal and nothing waiting).
#[derive(Clone, Debug, Serialize)]
pub struct Decision {
    pub interval: u64,
    pub unix_time: f64,
    /// IRQs seen for the first time this interval (after the first).
    pub new: Vec<u32>,
    /// IRQs gone since the last interval.
    pub gone: Vec<u32>,
    /// The moves made.
    pub moved: Vec<Move>,
    /// IRQs off the rule, waiting for `patience` (IRQ → intervals off).
    pub waiting: BTreeMap<u32, u32>,
    /// Moves left for the next intervals.
    pub pending: usize,
    /// A refusal by the kernel (that IRQ is left alone from now on).
    pub error: Option<String>,
}

impl Decision {
    /// Whether anything happened worth a line.
    pub fn is_quiet(&self) -> bool {
        self.moved.is_empty()
            && self.error.is_none()
            && self.new.is_empty()
            && self.gone.is_empty()
            && self.waiting.values().all(|n| *n > 1)
    }
}

/// How the daemon ended.
#[derive(Debug, Serialize)]
pub struct End {
    pub signal: Option<i32>,
    pub intervals: u64,
    /// IRQs put back, and those that could not be (with the reason).
    pub restored: Vec<u32>,
    pub failed: Vec<(u32, String)>,
    pub state_removed: bool,
}

impl End {
    /// The exit code: 128 + the signal that stopped the daemon, else 0.
    pub fn exit_code(&self) -> i32 {
        self.signal.map_or(0, pinsight_lifecycle::exit::signal_code)
    }
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Whether, under `--spread`, IRQ `m` is already in place: on one CPU the
/// rule allows.
fn spread_in_place(target: &Target, m: &Move, online: &CpuSet) -> bool {
    match target {
        Target::Spread { off } => {
            m.before.len() == 1 && m.before.is_subset(online) && !m.before.intersects(off)
        }
        Target::Off(_) => false,
    }
}

struct Saved {
    path: PathBuf,
    irqs: BTreeMap<u32, String>,
}

impl Saved {
    fn write(&self) -> Result<(), IrqError> {
        let state = SavedState {
            format: "pinsight-irq-state".into(),
            irqs: self.irqs.clone(),
        };
        let text = serde_json::to_string_pretty(&state).expect("a state serializes") + "\n";
        pinsight_lifecycle::output::write(&self.path, text.as_bytes()).map_err(|e| {
            IrqError::State {
                path: self.path.clone(),
                reason: e.reason(),
            }
        })
    }

    /// Puts every saved IRQ still there back, one by one.
    fn restore(&self, fs: &FsRoot) -> (Vec<u32>, Vec<(u32, String)>) {
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        for (irq, list) in &self.irqs {
            let path = format!("/proc/irq/{irq}/smp_affinity_list");
            if fs.read_opt(&path).is_none() {
                continue; // gone
            }
            match fs.write(&path, list) {
                Ok(()) => ok.push(*irq),
                Err(e) => failed.push((*irq, e.to_string())),
            }
        }
        (ok, failed)
    }
}

/// What the daemon keeps in place, and how: `irq --watch`'s request.
#[derive(Clone, Copy)]
pub struct Watch<'a> {
    /// The IRQs named (those present at each interval); `None`: every
    /// movable one.
    pub only: Option<&'a [u32]>,
    /// The rule.
    pub target: &'a Target,
    /// The online CPUs' relative capacities.
    pub capacity: &'a BTreeMap<usize, f64>,
    pub options: &'a Options,
    /// The state file (what was moved, to put back).
    pub state_path: &'a Path,
}

/// [`run`] with its journal on stdout (through [`pinsight_term::out`]):
/// the opening line, a line per decision that is not quiet
/// ([`Decision::is_quiet`]) and the ending, as `journal` writes them.
pub fn run_journaled(fs: &FsRoot, watch: &Watch, journal: Journal) -> Result<End, IrqError> {
    let (interval, state_path) = (watch.options.interval, watch.state_path);
    let say = |text: String| pinsight_term::out::stdout(format_args!("{text}"));
    say(journal.start(|| view::irq_watch_start(interval, state_path)));
    let mut line = |d: &Decision| {
        if !d.is_quiet() {
            say(journal.line(d, || view::irq_decision(d)));
        }
    };
    let end = run(fs, watch, &mut line)?;
    say(journal.end(&end, || view::irq_watch_end(&end, state_path)));
    Ok(end)
}

/// Runs the daemon of `watch` until a signal (or `options.intervals`),
/// telling `on_decision` each interval's decision. Errors: a rule
/// that leaves no CPU (bad input, before anything moves) or a state file
/// that cannot be written (what was moved is put back first).
pub fn run(
    fs: &FsRoot,
    watch: &Watch,
    on_decision: &mut dyn FnMut(&Decision),
) -> Result<End, IrqError> {
    let (opts, target) = (watch.options, watch.target);
    let online: CpuSet = watch.capacity.keys().copied().collect();
    let mut saved = Saved {
        path: watch.state_path.to_path_buf(),
        irqs: BTreeMap::new(),
    };
    let mut known: BTreeSet<u32> = BTreeSet::new();
    let mut off_for: BTreeMap<u32, u32> = BTreeMap::new();
    let mut refused: BTreeSet<u32> = BTreeSet::new();
    let mut n = 0u64;
    let signal = loop {
        if let Some(sig) = pinsight_lifecycle::interrupt::stopped() {
            break Some(sig);
        }
        if opts.intervals.is_some_and(|k| n >= k) {
            break None;
        }
        n += 1;
        let view = irq::view(fs).map_err(|e| finish_with(fs, &saved, e))?;
        let present: BTreeSet<u32> = view.irqs.iter().map(|i| i.irq).collect();
        let only_now: Option<Vec<u32>> = watch
            .only
            .map(|l| l.iter().copied().filter(|i| present.contains(i)).collect());
        let mut moves = irq::plan(&view, only_now.as_deref(), target, watch.capacity)
            .map_err(|e| finish_with(fs, &saved, e))?;
        moves.retain(|m| !refused.contains(&m.irq) && !spread_in_place(target, m, &online));
        let new: Vec<u32> = if n == 1 {
            Vec::new()
        } else {
            present.difference(&known).copied().collect()
        };
        let gone: Vec<u32> = known.difference(&present).copied().collect();
        saved.irqs.retain(|irq, _| present.contains(irq));
        known = present;
        let off_now: BTreeSet<u32> = moves.iter().map(|m| m.irq).collect();
        off_for.retain(|irq, _| off_now.contains(irq));
        for irq in &off_now {
            *off_for.entry(*irq).or_default() += 1;
        }
        let due = |m: &Move| n == 1 || new.contains(&m.irq) || off_for[&m.irq] >= opts.patience;
        let mut batch: Vec<Move> = moves.iter().filter(|m| due(m)).cloned().collect();
        let pending = batch.len().saturating_sub(opts.max_moves);
        batch.truncate(opts.max_moves);
        let mut d = Decision {
            interval: n,
            unix_time: now_s(),
            new,
            gone,
            moved: Vec::new(),
            waiting: BTreeMap::new(),
            pending,
            error: None,
        };
        if !batch.is_empty() {
            for m in &batch {
                saved
                    .irqs
                    .entry(m.irq)
                    .or_insert_with(|| m.before.to_list_string());
            }
            saved.write().map_err(|e| finish_with(fs, &saved, e))?;
            match irq::apply(fs, &batch) {
                Ok(()) => {
                    for m in &batch {
                        off_for.remove(&m.irq);
                    }
                    d.moved = batch;
                }
                Err(IrqError::Write { irq, to, reason }) => {
                    refused.insert(irq);
                    off_for.remove(&irq);
                    d.error = Some(format!("IRQ {irq} to CPUs {to}: {reason}"));
                }
                Err(e) => return Err(finish_with(fs, &saved, e)),
            }
        }
        d.waiting = off_for.clone();
        on_decision(&d);
        if let Some(sig) = pinsight_lifecycle::interrupt::wait(opts.interval) {
            break Some(sig);
        }
    };
    let (restored, failed) = saved.restore(fs);
    let state_removed =
        failed.is_empty() && !saved.irqs.is_empty() && std::fs::remove_file(&saved.path).is_ok();
    Ok(End {
        signal,
        intervals: n,
        restored,
        failed,
        state_removed,
    })
}

/// Puts back what was moved before returning `e`.
fn finish_with(fs: &FsRoot, saved: &Saved, e: IrqError) -> IrqError {
    let (_, failed) = saved.restore(fs);
    if failed.is_empty() {
        let _ = std::fs::remove_file(&saved.path);
    }
    e
}
