//! The terminal views of `pinsight load` (per-CPU load against capacity)
//! and `pinsight irq` (which IRQs land where, and a move), within 80
//! columns. `load`'s refreshing view also fits a given height (24 lines
//! on a classic terminal): the most loaded CPUs first, the rest counted.

use crate::irq::{IrqView, Move, PerCpuThread};
use crate::report::{CpuLoad, LoadReport, Suggestion};
use pinsight_sys::text::shown;
use pinsight_term::{fill, wrap, Wrap};
use std::fmt::Write;

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A rate as a short number: `950`, `1.2k`, `45k`, `1.3M`.
pub fn rate(x: f64) -> String {
    if x < 1000.0 {
        format!("{x:.0}")
    } else if x < 10_000.0 {
        format!("{:.1}k", x / 1e3)
    } else if x < 1e6 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{:.1}M", x / 1e6)
    }
}

/// `s` cut to `n` characters.
fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Names from outside (thread names, IRQ handlers and actions) as shown:
/// escaped, joined by commas.
fn joined_names<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| shown(n.as_ref()))
        .collect::<Vec<_>>()
        .join(",")
}

const HEADER: &str =
    "CPU KIND  CAP  USR  SYS  IRQ SIRQ STEAL IDLE BUSY NORM WANT IRQ/s  TOP THREAD";

fn cpu_row(c: &CpuLoad) -> String {
    let top = c
        .top_threads
        .first()
        .map(|t| {
            let name = if t.kernel {
                format!("[{}]", cut(&shown(&t.comm), 6))
            } else {
                cut(&shown(&t.comm), 8)
            };
            format!("{name} {}", pct(t.share))
        })
        .unwrap_or_default();
    let irqs = c.interrupts_per_s.map_or("-".into(), rate);
    format!(
        "{:>3} {:<4} {:>4.2} {:>4} {:>4} {:>4} {:>4} {:>5} {:>4} {:>4} {:>4.2} {:>4} {:>5}  {}",
        c.cpu,
        cut(c.mark.as_deref().unwrap_or("-"), 4),
        c.capacity,
        pct(c.user),
        pct(c.system),
        pct(c.irq),
        pct(c.softirq),
        pct(c.steal),
        pct(c.idle),
        pct(c.busy),
        c.normalised,
        c.demand.map_or("-".into(), |d| format!("{d:.1}")),
        irqs,
        top
    )
    .trim_end()
    .to_string()
}

/// The row of a CPU left out of the interval (its reason is below the
/// view, with what else could not be measured).
fn unavailable_row(cpu: usize) -> String {
    format!("{cpu:>3} -    unavailable this interval: its counters cannot be used (below)")
}

/// One line naming the CPUs left out of the interval and why.
fn unavailable_cpus_line(r: &LoadReport) -> Option<String> {
    let parts: Vec<String> = r
        .unavailable_cpus
        .iter()
        .map(|u| format!("CPU {} ({})", u.cpu, u.reason))
        .collect();
    (!parts.is_empty()).then(|| format!("Unavailable this interval: {}", parts.join("; ")))
}

fn title(r: &LoadReport) -> String {
    format!(
        "pinsight load: {} CPUs over {:.1} s; capacity {}",
        r.cpus.len(),
        r.interval_s,
        r.capacity_source
    )
}

/// Where busy came from, and the emulation's share of the CPUs it slows.
fn source_line(r: &LoadReport) -> String {
    let mut s = format!("Busy: {}", r.busy_source.describe());
    let slowed: Vec<String> = r
        .cpus
        .iter()
        .filter(|c| c.emulated > 0.0)
        .map(|c| format!("CPU {} {}", c.cpu, pct(c.emulated)))
        .collect();
    if !slowed.is_empty() {
        let _ = write!(
            s,
            "; STEAL includes the emulation's stealers ({})",
            slowed.join(", ")
        );
    }
    s.push('.');
    s
}

use crate::report::SATURATED;

/// The run queues of the saturated CPUs (`None` when none is saturated
/// or the run queue was not measured).
fn run_queue_line(r: &LoadReport) -> Option<String> {
    let q: Vec<String> = r
        .cpus
        .iter()
        .filter(|c| c.busy >= SATURATED)
        .filter_map(|c| c.run_queue.map(|q| format!("CPU {} {q:.1}", c.cpu)))
        .collect();
    (!q.is_empty()).then(|| {
        format!(
            "Run queue of the saturated CPUs (tasks waiting): {}",
            q.join(", ")
        )
    })
}

fn imbalance_line(r: &LoadReport) -> String {
    match &r.imbalance {
        Some(i) => format!(
            "Imbalance {:.2} (max/min normalised load over {} busy CPUs: CPU {} {:.2}, CPU {} {:.2})",
            i.ratio, i.busy_cpus, i.max_cpu, i.max, i.min_cpu, i.min
        ),
        None => "Imbalance: fewer than two busy CPUs".into(),
    }
}

fn kind_lines(r: &LoadReport) -> Vec<String> {
    r.kinds
        .iter()
        .map(|k| {
            let progress = k
                .progress
                .map_or(String::new(), |p| format!(", progress {p:.2}"));
            format!(
                "{} ({}) CPUs {}: capacity {:.2}, busy {}, normalised {:.2}{progress}",
                k.kind,
                k.mark,
                k.cpus.to_list_string(),
                k.capacity,
                pct(k.busy),
                k.normalised
            )
        })
        .collect()
}

/// The progress imbalance over the tasks that want a whole CPU.
fn progress_line(r: &LoadReport) -> Option<String> {
    let p = r.progress_imbalance.as_ref()?;
    let side = |t: &crate::progress::TaskRef| {
        let on = t.cpu.map_or(String::new(), |c| format!(" on CPU {c}"));
        format!("{} {}{on} {:.2}", shown(&t.comm), t.pid, t.progress)
    };
    let used = r.capacity_used.map_or(String::new(), |u| {
        format!("; they get {} of the capacity they could use", pct(u))
    });
    Some(format!(
        "Progress imbalance {:.2} (max/min over {} tasks that want a whole CPU: {}, {}){used}",
        p.ratio,
        p.tasks,
        side(&p.max),
        side(&p.min)
    ))
}

/// Task rows of the whole view.
pub const MAX_TASKS_SHOWN: usize = 12;

/// The tasks that want a whole CPU (or ran at least 5%), slowest first:
/// their run and wait shares, and progress in fastest-CPU seconds per
/// second; at most [`MAX_TASKS_SHOWN`] rows.
fn task_rows(r: &LoadReport) -> String {
    let mut out = String::new();
    if r.tasks.is_empty() {
        return out;
    }
    out.push_str("\nTasks, slowest first (PROGRESS = fastest-CPU seconds per second):\n");
    let _ = writeln!(
        out,
        "{:>8} {:>8}  {:<16} {:>4} {:>5} {:>5} {:>5} {:>8}",
        "PID", "TID", "NAME", "CPU", "RUN", "WAIT", "WANT", "PROGRESS"
    );
    for t in r.tasks.iter().take(MAX_TASKS_SHOWN) {
        let _ = writeln!(
            out,
            "{:>8} {:>8}  {:<16} {:>4} {:>5} {:>5} {:>5} {:>8.3}",
            t.pid,
            t.tid,
            cut(&shown(&t.comm), 16),
            t.cpu.map_or("-".into(), |c| c.to_string()),
            pct(t.run),
            pct(t.wait),
            format!("{:.2}", t.demand),
            t.progress
        );
    }
    if r.tasks.len() > MAX_TASKS_SHOWN {
        let _ = writeln!(
            out,
            "... and {} more (all of them in the JSON output)",
            r.tasks.len() - MAX_TASKS_SHOWN
        );
    }
    if let Some(w) = &r.wait_source {
        out.push_str(&fill(
            &format!("WAIT: {w}; WANT = run + wait (1.00 = a whole CPU)."),
            Wrap::new(80).indent("", "  "),
        ));
    }
    out
}

fn hot_lines(r: &LoadReport) -> Vec<String> {
    r.hot_cpus
        .iter()
        .map(|h| {
            let mut s = format!(
                "CPU {}: {} of its time in interrupts, {} IRQ/s",
                h.cpu,
                pct(h.irq_share),
                rate(h.interrupts_per_s)
            );
            for i in &h.irqs {
                let names = if i.handlers.is_empty() || i.irq.parse::<u32>().is_err() {
                    String::new()
                } else {
                    format!(" {}", joined_names(&i.handlers))
                };
                let what = if i.irq.parse::<u32>().is_ok() {
                    "IRQ "
                } else {
                    ""
                };
                let _ = write!(s, "; {what}{}{} {}", shown(&i.irq), names, pct(i.share));
                if let Some(a) = &i.affinity {
                    let _ = write!(s, " (affinity {a}");
                    if let Some(e) = &i.effective {
                        let _ = write!(s, ", effective {e}");
                    }
                    s.push(')');
                }
            }
            for (name, v) in &h.softirqs {
                let _ = write!(s, "; {} {}/s", shown(name), rate(*v));
            }
            s
        })
        .collect()
}

/// The suggestions' texts, escaped: they quote process and handler
/// names from outside.
fn suggestion_texts(r: &LoadReport) -> Vec<String> {
    r.suggestions
        .iter()
        .map(|s| match s {
            Suggestion::MoveIrqs { text, .. }
            | Suggestion::Rebalance { text }
            | Suggestion::None { text } => shown(text).into_owned(),
        })
        .collect()
}

/// How one reading is written ([`reading`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// The whole view ([`load_full`]).
    Text,
    /// One pretty JSON document.
    Json,
    /// One JSON object on one line (a series of readings: JSON Lines).
    JsonLine,
    /// The OpenMetrics text format ([`openmetrics`]).
    OpenMetrics,
}

/// One reading as `style` writes it, ending in a newline.
pub fn reading(r: &LoadReport, style: Style) -> Result<String, serde_json::Error> {
    Ok(match style {
        Style::Text => load_full(r),
        Style::Json => serde_json::to_string_pretty(r)? + "\n",
        Style::JsonLine => serde_json::to_string(r)? + "\n",
        Style::OpenMetrics => openmetrics(r),
    })
}

/// The refreshing view's frame: the cursor homed and the screen cleared
/// (ECMA-48 CUP, ED: the one control sequence of the view), then
/// [`load_screen`] for a window of `height` rows, its text escaped.
pub fn load_frame(r: &LoadReport, height: usize) -> String {
    let view = load_screen(r, height);
    format!("\x1b[H\x1b[2J{}", pinsight_sys::text::shown_lines(&view))
}

/// The warnings of the CPUs left out of an interval (counters that went
/// backwards, overflowed or could not be read), one line each.
pub fn unavailable_cpus(r: &LoadReport) -> String {
    let mut out = String::new();
    for u in &r.unavailable_cpus {
        let _ = writeln!(
            out,
            "pinsight: warning: CPU {}: {}; left out of this interval",
            u.cpu, u.reason
        );
    }
    out
}

/// The whole view (`load --once`): every CPU in order, the kinds, the
/// cores, the imbalance, the interrupt-hot CPUs, the top threads per
/// busy CPU and the suggestion.
pub fn load_full(r: &LoadReport) -> String {
    let mut out = String::new();
    let w = Wrap::new(80).indent("", "  ");
    out.push_str(&fill(&title(r), w));
    out.push_str(&fill(&source_line(r), w));
    let _ = writeln!(out, "{HEADER}");
    // Every CPU in order, those whose counters could not be used included.
    let mut rows: Vec<(usize, String)> = r.cpus.iter().map(|c| (c.cpu, cpu_row(c))).collect();
    rows.extend(
        r.unavailable_cpus
            .iter()
            .map(|u| (u.cpu, unavailable_row(u.cpu))),
    );
    rows.sort_by_key(|(cpu, _)| *cpu);
    for (_, row) in rows {
        let _ = writeln!(out, "{row}");
    }
    if !r.kinds.is_empty() {
        out.push_str("\nKinds:\n");
        for k in kind_lines(r) {
            out.push_str(&fill(&k, Wrap::new(80).indent("  ", "    ")));
        }
    }
    if r.cores.iter().any(|c| c.cpus.len() > 1) {
        let cores: Vec<String> = r
            .cores
            .iter()
            .map(|c| {
                format!(
                    "{}[{}]={:.2}",
                    c.core,
                    c.cpus.to_list_string(),
                    c.normalised
                )
            })
            .collect();
        out.push_str("\nCores (core[CPUs]=mean normalised load):\n");
        out.push_str(&fill(&cores.join(", "), Wrap::new(80).indent("  ", "  ")));
    }
    out.push('\n');
    out.push_str(&fill(&imbalance_line(r), w));
    if let Some(p) = progress_line(r) {
        out.push_str(&fill(&p, w));
    }
    if let Some(s) = &r.saturated {
        out.push_str(&fill(s, w));
    }
    if let Some(q) = run_queue_line(r) {
        out.push_str(&fill(&q, w));
    }
    out.push_str(&task_rows(r));
    let hot = hot_lines(r);
    if !hot.is_empty() {
        out.push_str("\nInterrupt-hot CPUs:\n");
        for h in hot {
            out.push_str(&fill(
                &h,
                Wrap::new(80).indent("  ", "    ").break_long_words(),
            ));
        }
    }
    let busy: Vec<&CpuLoad> = r
        .cpus
        .iter()
        .filter(|c| c.top_threads.iter().any(|t| t.share >= 0.01))
        .collect();
    if !busy.is_empty() {
        out.push_str("\nTop threads (by the CPU they last ran on):\n");
        for c in busy {
            let ts: Vec<String> = c
                .top_threads
                .iter()
                .map(|t| {
                    let name = if t.kernel {
                        format!("[{}]", shown(&t.comm))
                    } else {
                        shown(&t.comm).into_owned()
                    };
                    format!("{name} {} {}", t.tid, pct(t.share))
                })
                .collect();
            let first = format!("  CPU {:>3}: ", c.cpu);
            out.push_str(&fill(
                &ts.join(", "),
                Wrap::new(80)
                    .indent(&first, "             ")
                    .break_long_words(),
            ));
        }
    }
    for u in &r.unavailable {
        out.push_str(&fill(&format!("unavailable: {u}"), w));
    }
    out.push('\n');
    for t in suggestion_texts(r) {
        out.push_str(&fill(&t, w));
    }
    out
}

/// The refreshing view within `height` lines (at least 12) and 80
/// columns: the CPUs most loaded first (normalised), as many as fit, the
/// others counted on one line; kinds, imbalance, the hottest interrupt
/// CPU and the suggestion below.
pub fn load_screen(r: &LoadReport, height: usize) -> String {
    let height = height.max(12);
    let w = Wrap::new(80).indent("", "  ");
    let mut tail: Vec<String> = Vec::new();
    tail.extend(kind_lines(r).into_iter().map(|k| cut(&k, 80)));
    tail.push(match &r.imbalance {
        Some(i) => format!(
            "Imbalance {:.2}: CPU {} {:.2} / CPU {} {:.2} ({} busy CPUs)",
            i.ratio, i.max_cpu, i.max, i.min_cpu, i.min, i.busy_cpus
        ),
        None => "Imbalance: fewer than two busy CPUs".into(),
    });
    if let Some(p) = &r.progress_imbalance {
        tail.push(format!(
            "Progress imbalance {:.2}: {} {:.2} / {} {:.2} ({} tasks want a CPU)",
            p.ratio, p.max.pid, p.max.progress, p.min.pid, p.min.progress, p.tasks
        ));
    }
    if let Some(q) = run_queue_line(r) {
        tail.push(cut(&q, 80));
    }
    if let Some(u) = unavailable_cpus_line(r) {
        tail.push(cut(&u, 80));
    }
    // Where busy came from (and the emulation's stealers): one line, as
    // the whole view says it.
    tail.push(cut(&source_line(r), 80));
    if let Some(h) = hot_lines(r).first() {
        tail.extend(
            wrap(h, Wrap::new(80).indent("", "  ").break_long_words())
                .into_iter()
                .take(2),
        );
    }
    for t in suggestion_texts(r) {
        tail.extend(wrap(&t, w).into_iter().take(3));
    }
    let head = [
        format!(
            "pinsight load: {} CPUs over {:.1} s (NORM = busy / capacity)",
            r.cpus.len(),
            r.interval_s
        ),
        HEADER.to_string(),
    ];
    let room = height.saturating_sub(head.len() + tail.len() + 1).max(1);
    let mut order: Vec<&CpuLoad> = r.cpus.iter().collect();
    order.sort_by(|a, b| {
        b.normalised
            .total_cmp(&a.normalised)
            .then(a.cpu.cmp(&b.cpu))
    });
    let mut out = String::new();
    for l in head {
        let _ = writeln!(out, "{l}");
    }
    let shown = if order.len() > room {
        room - 1
    } else {
        order.len()
    };
    for c in &order[..shown] {
        let _ = writeln!(out, "{}", cpu_row(c));
    }
    if shown < order.len() {
        let rest = &order[shown..];
        let max = rest.first().map_or(0.0, |c| c.normalised);
        let _ = writeln!(
            out,
            "... {} more CPUs, normalised load {:.2} or less",
            rest.len(),
            max
        );
    }
    for l in tail {
        let _ = writeln!(out, "{l}");
    }
    out
}

/// `pinsight irq`'s list: each numbered IRQ that has fired, its CPUs,
/// affinity and names; then the per-CPU lines and irqbalance.
pub fn irq_table(v: &IrqView, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5} {:>10}  {:<10} {:<10} {:<10} NAMES",
        "IRQ", "COUNT", "LANDS ON", "AFFINITY", "EFFECTIVE"
    );
    let mut quiet = 0;
    for i in &v.irqs {
        if !all && i.total == 0 {
            quiet += 1;
            continue;
        }
        let set = |s: &Option<pinsight_cpuset::CpuSet>| {
            s.as_ref()
                .map_or("-".to_string(), |s| cut(&s.to_list_string(), 10))
        };
        let names = if i.handlers.is_empty() {
            "-".to_string()
        } else {
            joined_names(&i.handlers)
        };
        let line = format!(
            "{:>5} {:>10}  {:<10} {:<10} {:<10} {}",
            i.irq,
            i.total,
            cut(&i.lands_on().to_list_string(), 10),
            set(&i.affinity),
            set(&i.effective),
            names
        );
        let _ = writeln!(out, "{}", cut(&line, 80));
    }
    let w = Wrap::new(80).indent("", "  ");
    if quiet > 0 {
        out.push_str(&fill(
            &format!("({quiet} IRQs that never fired not shown)"),
            w,
        ));
    }
    if !v.per_cpu.is_empty() {
        out.push_str(&fill(
            &format!(
                "Per-CPU interrupts, never moved: {}",
                v.per_cpu
                    .iter()
                    .map(|n| shown(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            w,
        ));
    }
    match v.irqbalance {
        Some(pid) => out.push_str(&fill(
            &format!("irqbalance runs (PID {pid}): it may move IRQs back"),
            w,
        )),
        None => out.push_str("irqbalance: not running\n"),
    }
    out
}

/// A move (planned or made): one line per IRQ, then the per-CPU kernel
/// threads left on the CPUs moved off.
pub fn irq_moves(moves: &[Move], dry_run: bool, kept: &[PerCpuThread]) -> String {
    let mut out = String::new();
    let w = Wrap::new(80).indent("", "  ");
    if moves.is_empty() {
        out.push_str("Nothing to move: every IRQ is already in place.\n");
    } else {
        let verb = if dry_run { "would move" } else { "moved" };
        let _ = writeln!(
            out,
            "{:>5}  {:<14} {:<14} NAMES ({verb})",
            "IRQ", "BEFORE", "AFTER"
        );
        for m in moves {
            let line = format!(
                "{:>5}  {:<14} {:<14} {}",
                m.irq,
                cut(&m.before.to_list_string(), 14),
                cut(&m.after.to_list_string(), 14),
                if m.handlers.is_empty() {
                    "-".into()
                } else {
                    joined_names(&m.handlers)
                }
            );
            let _ = writeln!(out, "{}", cut(&line, 80));
        }
    }
    if !kept.is_empty() {
        // Per CPU: how many, and the first few names (the JSON has all).
        let mut by: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
        for t in kept {
            by.entry(t.cpu)
                .or_default()
                .push(shown(&t.comm).into_owned());
        }
        let parts: Vec<String> = by
            .iter()
            .map(|(cpu, names)| {
                let more = if names.len() > 3 {
                    format!(", {} more", names.len() - 3)
                } else {
                    String::new()
                };
                let first: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
                format!("CPU {cpu}: {}{more}", first.join(", "))
            })
            .collect();
        out.push_str(&fill(
            &format!(
                "Per-CPU kernel threads stay (never moved): {}",
                parts.join("; ")
            ),
            w,
        ));
    }
    out
}

/// A label value in the OpenMetrics text format: backslash, double quote
/// and line feed escaped (the only escapes the format has).
fn om_label(v: &str) -> String {
    pinsight_term::replace_chars(v, &[('\\', "\\\\"), ('"', "\\\""), ('\n', "\\n")])
}

/// A number as OpenMetrics writes it: Rust's shortest round-trip form.
fn om_number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// One gauge family: `# HELP`, `# TYPE` and its samples (labels, value).
fn om_gauge(out: &mut String, name: &str, help: &str, samples: &[Sample]) {
    if samples.is_empty() {
        return;
    }
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (labels, v) in samples {
        let l: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", om_label(v)))
            .collect();
        let labels = if l.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", l.join(","))
        };
        let _ = writeln!(out, "{name}{labels} {}", om_number(*v));
    }
}

/// One sample of a gauge: its labels and its value.
type Sample<'a> = (Vec<(&'a str, String)>, f64);

/// A figure of a CPU, none when it could not be measured.
type CpuFigure = fn(&CpuLoad) -> Option<f64>;

/// The per-CPU gauges: name, help and figure.
const CPU_GAUGES: [(&str, &str, CpuFigure); 6] = [
    (
        "pinsight_load_cpu_busy_ratio",
        "Share of the interval the CPU ran tasks (an emulation's stealers excluded).",
        |c| Some(c.busy),
    ),
    (
        "pinsight_load_cpu_capacity_ratio",
        "Capacity relative to the most capable CPU.",
        |c| Some(c.capacity),
    ),
    (
        "pinsight_load_cpu_normalised_load",
        "Busy share divided by capacity.",
        |c| Some(c.normalised),
    ),
    (
        "pinsight_load_cpu_demand_tasks",
        "Mean number of tasks running or waiting to run on the CPU.",
        |c| c.demand,
    ),
    (
        "pinsight_load_cpu_interrupts_per_second",
        "Hardware interrupts per second handled by the CPU.",
        |c| c.interrupts_per_s,
    ),
    (
        "pinsight_load_cpu_softirqs_per_second",
        "Softirqs per second run on the CPU.",
        |c| c.softirqs_per_s,
    ),
];

/// A gauge family of one sample without labels.
fn om_value(out: &mut String, name: &str, help: &str, v: f64) {
    om_gauge(out, name, help, &[(vec![], v)]);
}

/// The samples of `figure` for every CPU that has it, labelled with the
/// CPU and, with kinds, its kind.
fn per_cpu(r: &LoadReport, figure: CpuFigure) -> Vec<Sample<'static>> {
    r.cpus
        .iter()
        .filter_map(|c| {
            figure(c).map(|v| {
                let mut l = vec![("cpu", c.cpu.to_string())];
                if let Some(k) = &c.kind {
                    l.push(("kind", k.clone()));
                }
                (l, v)
            })
        })
        .collect()
}

/// `load --format openmetrics`: the interval's figures in the OpenMetrics
/// text format (every family a gauge, with `# HELP` and `# TYPE`, ending
/// in `# EOF`), for node_exporter's textfile collector or any scraper.
/// Per CPU (labels `cpu` and, with kinds, `kind`): busy share, capacity,
/// normalised load, demand, interrupts and softirqs per second; per kind:
/// the progress of its tasks that want a whole CPU; for the machine: the
/// CPU imbalance, the progress imbalance and how many tasks want a whole
/// CPU. A figure that could not be measured is left out, never written
/// as 0.
pub fn openmetrics(r: &LoadReport) -> String {
    let mut out = String::new();
    om_value(
        &mut out,
        "pinsight_load_interval_seconds",
        "Length of the interval measured.",
        r.interval_s,
    );
    for (name, help, figure) in CPU_GAUGES {
        om_gauge(&mut out, name, help, &per_cpu(r, figure));
    }
    let kinds: Vec<Sample> = r
        .kinds
        .iter()
        .filter_map(|k| k.progress.map(|p| (vec![("kind", k.kind.clone())], p)))
        .collect();
    om_gauge(
        &mut out,
        "pinsight_load_kind_progress",
        "Mean progress, in fastest-CPU seconds per second, of the tasks that want a whole CPU \
         and ran mostly on CPUs of this kind.",
        &kinds,
    );
    machine_gauges(&mut out, r);
    out.push_str("# EOF\n");
    out
}

/// The machine's gauges: CPU imbalance, tasks wanting a whole CPU, the
/// capacity they got and their progress imbalance.
fn machine_gauges(out: &mut String, r: &LoadReport) {
    if let Some(i) = &r.imbalance {
        om_value(
            out,
            "pinsight_load_imbalance_ratio",
            "Largest over smallest normalised load among the CPUs busy at least 5%.",
            i.ratio,
        );
    }
    om_value(
        out,
        "pinsight_load_tasks_wanting_cpu",
        "Tasks that wanted a whole CPU (ran or waited to run 90% of the interval or more).",
        r.progress_imbalance.as_ref().map_or_else(
            || r.tasks.iter().filter(|t| t.wants_cpu()).count() as f64,
            |p| p.tasks as f64,
        ),
    );
    if let Some(u) = r.capacity_used {
        om_value(
            out,
            "pinsight_load_capacity_used_ratio",
            "Share of the capacity they could use that the tasks wanting a whole CPU got.",
            u,
        );
    }
    if let Some(p) = &r.progress_imbalance {
        om_value(
            out,
            "pinsight_load_progress_imbalance_ratio",
            "Largest over smallest progress among the tasks that want a whole CPU.",
            p.ratio,
        );
    }
}

/// One decision of `irq --watch`, one line for the journal.
pub fn irq_decision(d: &crate::irq_watch::Decision) -> String {
    let mut parts = Vec::new();
    let list = |v: &[u32]| {
        v.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    if !d.new.is_empty() {
        parts.push(format!("new IRQs {}", list(&d.new)));
    }
    if !d.gone.is_empty() {
        parts.push(format!("gone IRQs {}", list(&d.gone)));
    }
    for m in &d.moved {
        parts.push(format!(
            "moved IRQ {} {} -> {}",
            m.irq,
            m.before.to_list_string(),
            m.after.to_list_string()
        ));
    }
    if d.pending > 0 {
        parts.push(format!("{} more next intervals", d.pending));
    }
    let waiting: Vec<String> = d
        .waiting
        .iter()
        .filter(|(_, n)| **n == 1)
        .map(|(i, _)| i.to_string())
        .collect();
    if !waiting.is_empty() {
        parts.push(format!(
            "IRQs {} off the rule (moved back if they stay)",
            waiting.join(",")
        ));
    }
    if let Some(e) = &d.error {
        parts.push(format!("refused: {e}; left alone from now on"));
    }
    shown(&format!("interval {}: {}", d.interval, parts.join("; "))).into_owned()
}

/// A move carried out (or its dry run, or a restore): [`irq_moves`],
/// then where the affinities before it were saved and the command that
/// puts them back.
pub fn irq_moved(r: &crate::irq::MovesReport) -> String {
    let mut out = irq_moves(&r.moves, r.dry_run, &r.per_cpu_threads);
    if let Some(saved) = &r.state_file {
        let path = saved.to_string_lossy();
        let p = shown(&path);
        let _ = writeln!(
            out,
            "{}",
            pinsight_term::wrap80(&format!(
                "Saved the affinities before the move in {p}; undo with: pinsight irq --restore {p}"
            ))
        );
    }
    out
}

/// The warning of a move made (or planned) while irqbalance runs.
pub fn irqbalance_warning(pid: i32) -> String {
    pinsight_term::wrap80(&format!(
        "pinsight: warning: irqbalance runs (PID {pid}): it may move these IRQs back"
    ))
}

/// The line `irq --watch` starts with: how often it looks, and where
/// the affinities before each move are saved.
pub fn irq_watch_start(interval: std::time::Duration, state: &std::path::Path) -> String {
    pinsight_term::wrap80(&format!(
        "pinsight irq --watch: every {interval:?}; IRQs before each move are saved to {} \
         (pinsight irq --restore puts them back)",
        shown(&state.to_string_lossy())
    ))
}

/// How `irq --watch` ended.
pub fn irq_watch_end(e: &crate::irq_watch::End, state: &std::path::Path) -> String {
    let why = match e.signal {
        Some(s) => format!("stopped by signal {s}"),
        None => "done".into(),
    };
    let mut line = format!(
        "pinsight irq --watch: {why} after {} intervals; put back {} IRQ(s)",
        e.intervals,
        e.restored.len()
    );
    for (irq, why) in &e.failed {
        let _ = write!(line, "; IRQ {irq} not put back: {why}");
    }
    if e.state_removed {
        line.push_str("; the state file was removed");
    } else if !e.failed.is_empty() {
        let _ = write!(line, "; the state file stays: {}", state.display());
    }
    fill(&shown(&line), Wrap::new(80).indent("", "  "))
}

#[cfg(test)]
mod tests {
    use super::om_label;

    #[test]
    fn label_values_escape_backslash_quote_and_line_feed_only() {
        assert_eq!(om_label("a\\b\"c\nd&<e>"), "a\\\\b\\\"c\\nd&<e>");
        assert_eq!(om_label("E-core"), "E-core");
    }

    #[test]
    fn the_irq_watch_starts_by_naming_its_interval_and_undo_file_escaped() {
        let line = super::irq_watch_start(
            std::time::Duration::from_secs(2),
            std::path::Path::new("/tmp/irq\u{1b}.json"),
        );
        let words = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.starts_with("pinsight irq --watch: every 2s; IRQs before each move are saved to /tmp/irq\\u{1b}.json"), "{line}");
        assert!(line.lines().all(|l| l.chars().count() <= 80), "{line}");
    }
}
