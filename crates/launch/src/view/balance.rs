//! The terminal view of `balance`: each CPU's capacity, tasks and
//! normalised load before and after, the imbalance, the moves; and the
//! view of a restore. Every line fits 80 columns.

use crate::rebalance::load::LoadView;
use crate::rebalance::select::Task;
use crate::rebalance::state::{RestoreOutcome, RestoreReport};
use crate::rebalance::{Move, Outcome, Report};
use pinsight_cpuset::CpuSet;
use std::fmt::Write as _;

/// Rows of the moves table shown; the JSON output has them all.
pub const MAX_MOVES_SHOWN: usize = 20;

/// Names longer than this are cut (with `…`).
const NAME_WIDTH: usize = 16;

/// A name from outside (a process or thread name), escaped
/// ([`pinsight_sys::text::shown`]) and cut to [`NAME_WIDTH`].
fn cut(name: &str) -> String {
    let name = pinsight_sys::text::shown(name);
    if name.chars().count() <= NAME_WIDTH {
        name.to_string()
    } else {
        let head: String = name.chars().take(NAME_WIDTH - 1).collect();
        format!("{head}…")
    }
}

/// A moving task's first columns: PID, TID (`-` for a whole process) and
/// its name, cut.
fn task_columns(m: &Move) -> String {
    format!(
        "{:>8} {:>8}  {:<NAME_WIDTH$}",
        m.pid,
        m.tid.map_or("-".into(), |t| t.to_string()),
        cut(&m.name)
    )
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

/// Tasks listed by [`selection`]; the report's moves table and the JSON
/// have them all.
pub const MAX_SELECTED_SHOWN: usize = 40;

/// What was selected, printed before anything is measured or moved: the
/// count, then each task as `PID name` (`PID/TID name` per thread),
/// wrapped at 80 columns, the first [`MAX_SELECTED_SHOWN`] of them.
pub fn selection(tasks: &[Task], per_thread: bool, cpus: &CpuSet) -> String {
    let n = tasks.len();
    let what = match (per_thread, n == 1) {
        (true, true) => "thread",
        (true, false) => "threads",
        (false, true) => "process",
        (false, false) => "processes",
    };
    let mut items: Vec<String> = tasks
        .iter()
        .take(MAX_SELECTED_SHOWN)
        .map(|t| match t.tid {
            Some(tid) => format!("{}/{tid} {}", t.pid, cut(&t.name)),
            None => format!("{} {}", t.pid, cut(&t.name)),
        })
        .collect();
    if n > MAX_SELECTED_SHOWN {
        items.push(format!("and {} more", n - MAX_SELECTED_SHOWN));
    }
    format!(
        "{}\n",
        pinsight_term::wrap80(&format!(
            "selected {n} {what}, to spread over CPUs {cpus}: {}",
            items.join(", ")
        ))
    )
}

/// The report of a rebalance (or of a dry run), ending with the state
/// file that puts the previous affinities back.
pub fn report(r: &Report) -> String {
    let mut out = String::new();
    let n = r.moves.len();
    let what = match (r.per_thread, n == 1) {
        (true, true) => "thread",
        (true, false) => "threads",
        (false, true) => "process",
        (false, false) => "processes",
    };
    let _ = writeln!(
        out,
        "pinsight balance: {n} {what} over CPUs {}{}",
        r.cpus,
        if r.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "{}",
        pinsight_term::wrap80(&format!("capacity: {}", r.capacity_source))
    );
    out.push_str(&cpu_table(r));
    let (b, a) = (r.load_before.as_ref(), r.load_after.as_ref());
    out.push_str(&progress_lines(r));
    if b.is_some() || a.is_some() {
        let _ = writeln!(
            out,
            "{}",
            pinsight_term::wrap80(&format!(
                "CPU load imbalance (max/min busy/capacity): {} -> {}; the selected tasks \
                 alone: {} -> {}",
                ratio(b.and_then(|v| v.imbalance)),
                ratio(a.and_then(|v| v.imbalance)),
                ratio(b.and_then(|v| v.tasks_imbalance)),
                ratio(a.and_then(|v| v.tasks_imbalance)),
            ))
        );
        let saturated = |v: Option<&LoadView>| {
            v.is_some_and(|v| v.cpus.len() > 1 && v.cpus.iter().all(|c| c.busy >= 0.95))
        };
        if saturated(b) || saturated(a) {
            let _ = writeln!(
                out,
                "{}",
                pinsight_term::wrap80(
                    "every CPU was busy 95% or more: busy time cannot show the imbalance; the \
                     tasks' progress can"
                )
            );
        }
        if let Some(v) = b.or(a) {
            let slowed: Vec<String> = v
                .cpus
                .iter()
                .filter(|c| c.emulated > 0.0)
                .map(|c| format!("CPU {} {:.0}%", c.cpu, c.emulated * 100.0))
                .collect();
            let mut line = format!("busy: {}", v.busy_source.describe());
            if !slowed.is_empty() {
                let _ = write!(
                    line,
                    "; the emulation's stealers are not counted ({})",
                    slowed.join(", ")
                );
            }
            let _ = writeln!(out, "{}", pinsight_term::wrap80(&line));
        }
    }
    out.push_str(&moves_table(r));
    out.push_str(&task_table(r));
    for note in &r.notes {
        let _ = writeln!(out, "{}", pinsight_term::wrap80(&format!("note: {note}")));
    }
    if let Some(p) = &r.state {
        let _ = writeln!(out, "previous affinities saved to {}", p.display());
        let _ = writeln!(
            out,
            "put them back with: pinsight balance --restore {}",
            p.display()
        );
    }
    out
}

/// The progress imbalance (before, the plan's, after) and the selected
/// tasks' total progress.
fn progress_lines(r: &Report) -> String {
    let mut out = String::new();
    let (b, a) = (r.load_before.as_ref(), r.load_after.as_ref());
    let imb = |v: Option<&LoadView>| {
        ratio(v.and_then(|v| v.progress_imbalance.as_ref().map(|p| p.ratio)))
    };
    let plan = match (r.expected.imbalance, r.expected.measured) {
        (Some(x), true) => format!("; the plan expects {x:.2}"),
        (Some(x), false) => format!("; the plan expects {x:.2} if every task is always busy"),
        (None, _) => String::new(),
    };
    if b.is_some() || a.is_some() {
        let wanting = b
            .or(a)
            .and_then(|v| v.progress_imbalance.as_ref())
            .map_or(0, |p| p.tasks);
        let _ = writeln!(
            out,
            "{}",
            pinsight_term::wrap80(&format!(
                "progress imbalance (max/min over the {wanting} threads that want a whole CPU): \
                 {} -> {}{plan}",
                imb(b),
                imb(a)
            ))
        );
        let total = |v: Option<&LoadView>| {
            v.map_or("-".into(), |v| {
                format!("{:.2}", v.tasks.iter().map(|t| t.progress).sum::<f64>())
            })
        };
        let used = |v: Option<&LoadView>| {
            v.and_then(|v| v.capacity_used)
                .map_or("-".into(), |u| format!("{:.0}%", u * 100.0))
        };
        let _ = writeln!(
            out,
            "{}",
            pinsight_term::wrap80(&format!(
                "total progress of the selected tasks (fastest-CPU seconds per second): {} -> \
                 {}; of the capacity they could use: {} -> {}",
                total(b),
                total(a),
                used(b),
                used(a)
            ))
        );
        if let Some(w) = b.or(a).and_then(|v| v.wait_source.as_ref()) {
            let _ = writeln!(out, "{}", pinsight_term::wrap80(&format!("waits: {w}")));
        }
    } else if r.expected.imbalance.is_some() {
        let _ = writeln!(
            out,
            "{}",
            pinsight_term::wrap80(&format!(
                "progress imbalance{}",
                plan.trim_start_matches(';')
            ))
        );
    }
    out
}

/// Per task: where it ran and its progress before, expected by the plan
/// and after; at most [`MAX_MOVES_SHOWN`] rows, slowest before first.
fn task_table(r: &Report) -> String {
    let mut out = String::new();
    let (b, a) = (r.load_before.as_ref(), r.load_after.as_ref());
    if b.is_none() && a.is_none() {
        return out;
    }
    let _ = writeln!(
        out,
        "{:>8} {:>8}  {:<NAME_WIDTH$} {:>9} {:>7} {:>7} {:>7}",
        "PID", "TID", "NAME", "CPU", "BEFORE", "PLAN", "AFTER"
    );
    fn line(v: Option<&LoadView>, i: usize) -> Option<&crate::rebalance::load::TaskLine> {
        v.and_then(|v| v.tasks.get(i))
    }
    let mut order: Vec<usize> = (0..r.moves.len()).collect();
    order.sort_by(|x, y| {
        let p = |i: usize| line(b, i).map_or(f64::MAX, |l| l.progress);
        p(*x).total_cmp(&p(*y)).then(x.cmp(y))
    });
    let num = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
    let cpu = |x: Option<usize>| x.map_or("-".into(), |c| c.to_string());
    for &i in order.iter().take(MAX_MOVES_SHOWN) {
        let m = &r.moves[i];
        let (lb, la) = (line(b, i), line(a, i));
        let _ = writeln!(
            out,
            "{} {:>9} {:>7} {:>7} {:>7}",
            task_columns(m),
            format!(
                "{}->{}",
                cpu(lb.and_then(|l| l.cpu)),
                cpu(la.and_then(|l| l.cpu))
            ),
            num(lb.map(|l| l.progress)),
            num(r.expected.tasks.get(i).copied()),
            num(la.map(|l| l.progress)),
        );
    }
    if r.moves.len() > MAX_MOVES_SHOWN {
        let _ = writeln!(
            out,
            "… and {} more (all of them in the JSON output)",
            r.moves.len() - MAX_MOVES_SHOWN
        );
    }
    let _ = writeln!(
        out,
        "{}",
        pinsight_term::wrap80(
            "      (progress in fastest-CPU seconds per second: before, expected by the plan, \
             after)"
        )
    );
    out
}

/// Per CPU: capacity, tasks before → after, busy share and normalised
/// load before and after.
fn cpu_table(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5} {:>5} {:>9}  {:>6} {:>6} {:>6}  {:>6} {:>6} {:>6}",
        "CPU", "CAP", "TASKS", "BUSY", "LOAD", "MINE", "BUSY", "LOAD", "MINE"
    );
    let cell = |v: Option<&LoadView>, cpu: usize| -> [String; 3] {
        match v.and_then(|v| v.cpus.iter().find(|c| c.cpu == cpu)) {
            Some(c) => [
                pct(c.busy),
                format!("{:.2}", c.normalised),
                format!("{:.2}", c.tasks_normalised),
            ],
            None => ["-".into(), "-".into(), "-".into()],
        }
    };
    for c in &r.per_cpu {
        let cap = r
            .capacity
            .iter()
            .find(|k| k.cpu == c.cpu)
            .map_or("-".into(), |k| format!("{:.2}", k.capacity));
        let [b1, b2, b3] = cell(r.load_before.as_ref(), c.cpu);
        let [a1, a2, a3] = cell(r.load_after.as_ref(), c.cpu);
        let _ = writeln!(
            out,
            "{:>5} {:>5} {:>9}  {b1:>6} {b2:>6} {b3:>6}  {a1:>6} {a2:>6} {a3:>6}",
            c.cpu,
            cap,
            format!("{} -> {}", c.before, c.after),
        );
    }
    let _ = writeln!(
        out,
        "      (before | after; LOAD = busy / capacity, MINE = the selected tasks')"
    );
    out
}

/// The tasks that move (or would), at most [`MAX_MOVES_SHOWN`].
fn moves_table(r: &Report) -> String {
    let mut out = String::new();
    let moving: Vec<_> = r
        .moves
        .iter()
        .filter(|m| m.outcome != Outcome::Unchanged)
        .collect();
    if moving.is_empty() {
        let _ = writeln!(out, "no task needs to move");
        return out;
    }
    let _ = writeln!(
        out,
        "{:>8} {:>8}  {:<NAME_WIDTH$} {:<12} {:<12} result",
        "PID", "TID", "NAME", "FROM", "TO"
    );
    for m in moving.iter().take(MAX_MOVES_SHOWN) {
        let result = match m.outcome {
            Outcome::Moved => "moved",
            Outcome::WouldMove => "would move",
            Outcome::Exited => "exited",
            Outcome::Unchanged => "unchanged",
        };
        let _ = writeln!(
            out,
            "{} {:<12} {:<12} {result}",
            task_columns(m),
            cut12(&m.before.to_string()),
            cut12(&m.target.to_string()),
        );
    }
    if moving.len() > MAX_MOVES_SHOWN {
        let _ = writeln!(
            out,
            "… and {} more (all of them in the JSON output)",
            moving.len() - MAX_MOVES_SHOWN
        );
    }
    out
}

fn cut12(s: &str) -> String {
    if s.chars().count() <= 12 {
        s.to_string()
    } else {
        let head: String = s.chars().take(11).collect();
        format!("{head}…")
    }
}

/// What a restore put back.
pub fn restore(r: &RestoreReport) -> String {
    let mut out = String::new();
    let count = |o: RestoreOutcome| r.threads.iter().filter(|t| t.outcome == o).count();
    let refused = match count(RestoreOutcome::Refused) {
        0 => String::new(),
        n => format!(", {n} refused"),
    };
    let line = format!(
        "pinsight balance: restored {} thread(s) from {}; {} unchanged, {} gone, {} failed{refused}",
        count(RestoreOutcome::Restored),
        pinsight_sys::text::shown(&r.state.display().to_string()),
        count(RestoreOutcome::Unchanged),
        count(RestoreOutcome::Gone),
        count(RestoreOutcome::Failed),
    );
    let _ = writeln!(out, "{}", pinsight_term::wrap80(&line));
    for t in r
        .threads
        .iter()
        .filter(|t| matches!(t.outcome, RestoreOutcome::Failed | RestoreOutcome::Refused))
    {
        let _ = writeln!(
            out,
            "  thread {} ('{}') of PID {}: {}",
            t.tid,
            cut(&t.name),
            t.pid,
            t.error.as_deref().unwrap_or("refused")
        );
    }
    out
}

/// Why `balance --restore` failed, if threads could not be put back.
pub fn restore_failure(r: &RestoreReport) -> Option<String> {
    match r.failed() {
        0 => None,
        n => Some(format!("{n} thread(s) could not be put back (see above)")),
    }
}

/// One decision of `balance --watch`, one line for the journal:
/// `interval 12: rebalanced 16 tasks: progress imbalance 2.01 over 24
/// tasks for 3 intervals; plan expects 1.00; per CPU 0:16 1:8`.
pub fn decision(d: &crate::rebalance::watch::Decision) -> String {
    use crate::rebalance::watch::Action;
    let imb = match d.progress_imbalance {
        Some(r) => format!("progress imbalance {r:.2} over {} tasks", d.wanting),
        None => "progress imbalance -".into(),
    };
    let per_cpu = if d.per_cpu.is_empty() {
        String::new()
    } else {
        let cells: Vec<String> = d.per_cpu.iter().map(|(c, n)| format!("{c}:{n}")).collect();
        format!("; pinned per CPU {}", cells.join(" "))
    };
    let expected = d
        .expected
        .map_or(String::new(), |e| format!("; plan expects {e:.2}"));
    let pending = if d.pending > 0 {
        format!(" ({} more next intervals)", d.pending)
    } else {
        String::new()
    };
    let churn = match (d.new, d.exited) {
        (0, 0) => String::new(),
        (n, 0) => format!("; {n} new"),
        (0, x) => format!("; {x} exited"),
        (n, x) => format!("; {n} new, {x} exited"),
    };
    let what = match d.action {
        _ if !d.is_news() => return String::new(),
        Action::Steady => format!("{imb}; nothing to move"),
        Action::Placed => format!("placed {} new task(s){pending}: {imb}", d.moved),
        Action::Rebalanced => format!(
            "rebalanced {} task(s){pending}: {imb}, over the threshold for {} intervals",
            d.moved, d.over
        ),
        Action::Waiting => format!("{imb}, over the threshold for {} interval(s)", d.over),
        Action::Settled => format!("{imb}: back under the threshold, nothing moved"),
        Action::Refused => format!(
            "refused: {}; left alone from now on",
            d.error.as_deref().unwrap_or("the kernel refused a move")
        ),
    };
    pinsight_sys::text::shown(&format!(
        "interval {}: {what}{churn}{expected}{per_cpu}",
        d.interval
    ))
    .into_owned()
}

/// The line `balance --watch` starts with: how often it measures, when
/// it moves, and where the affinities before each move are saved.
pub fn watch_start(o: &crate::rebalance::watch::Options, state: &std::path::Path) -> String {
    pinsight_term::wrap80(&format!(
        "pinsight balance --watch: every {:?}, move when the progress imbalance stays \
         over {:.2} for {} intervals, at most {} tasks an interval; affinities before \
         each move are saved to {} (pinsight balance --restore puts them back)",
        o.interval,
        o.threshold,
        o.patience,
        o.max_moves,
        pinsight_sys::text::shown(&state.to_string_lossy())
    ))
}

/// How `balance --watch` ended: the signal (or the intervals run), what
/// was put back and whether the state file was removed.
pub fn watch_end(e: &crate::rebalance::watch::End, state: &std::path::Path) -> String {
    let count = |o: RestoreOutcome| e.restored.threads.iter().filter(|t| t.outcome == o).count();
    let why = match e.signal {
        Some(s) => format!("stopped by signal {s}"),
        None => "done".into(),
    };
    let file = if e.state_removed {
        "the state file was removed".to_string()
    } else if e.restored.threads.is_empty() {
        "nothing was moved".to_string()
    } else {
        format!(
            "the state file stays: {}",
            pinsight_sys::text::shown(&state.display().to_string())
        )
    };
    let line = format!(
        "pinsight balance --watch: {why} after {} intervals; put back {} thread(s) ({} unchanged, \
         {} gone, {} failed); {file}",
        e.intervals,
        count(RestoreOutcome::Restored),
        count(RestoreOutcome::Unchanged),
        count(RestoreOutcome::Gone),
        count(RestoreOutcome::Failed),
    );
    format!("{}\n", pinsight_term::wrap80(&line))
}
