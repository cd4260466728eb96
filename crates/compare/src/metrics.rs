//! Which numbers of a [`RunRecord`] are summarised, under what name and
//! unit. One table, so the terminal, CSV, Markdown, HTML and JSON outputs
//! always agree on names.

use crate::program_metric::{Better, MetricSpec};
use pinsight_measure::{Metric, RunRecord};
use serde::Serialize;

/// How a metric's numbers read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Seconds,
    Milliseconds,
    Kibibytes,
    Count,
    /// A ratio such as IPC or a fraction.
    Ratio,
    Gigahertz,
    Joules,
    JouleSeconds,
    /// A program metric: the unit is its own text ([`ProgramDef::unit`]).
    Program,
}

impl Unit {
    /// Suffix for human output.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Kibibytes => "KiB",
            Unit::Count | Unit::Ratio => "",
            Unit::Gigahertz => "GHz",
            Unit::Joules => "J",
            Unit::JouleSeconds => "J·s",
            Unit::Program => "",
        }
    }
}

/// A summarised metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricDef {
    /// JSON/CSV key, e.g. `wall_s`, `cycles@cpu_core`.
    pub key: String,
    /// Human label, e.g. `wall time`.
    pub label: String,
    pub unit: Unit,
    /// A rate (per-unit-of-something): its harmonic mean is the one to quote.
    pub rate: bool,
    /// A figure the program printed (`--metric`): its unit and direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramDef>,
}

/// What a program metric is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgramDef {
    /// The unit as given (`events/s`), possibly empty.
    pub unit: String,
    pub better: Better,
    /// Where it is read: `/REGEX/` or `json:PATH`.
    pub source: String,
    /// A preset's secondary figure: runs without it are not failures.
    pub optional: bool,
}

impl MetricDef {
    /// The definition of a program metric.
    pub fn program(spec: &MetricSpec) -> MetricDef {
        MetricDef {
            key: spec.name.clone(),
            label: spec.name.clone(),
            unit: Unit::Program,
            // Arithmetic mean: runs of a set duration (where these figures
            // come from) weigh alike, so the mean rate is the total rate.
            rate: false,
            program: Some(ProgramDef {
                unit: spec.unit.clone(),
                better: spec.better,
                source: spec.source_text(),
                optional: spec.optional,
            }),
        }
    }

    /// A value of this metric for humans, with its unit.
    pub fn format(&self, v: f64) -> String {
        match &self.program {
            Some(p) if p.unit.is_empty() => sig4(v),
            Some(p) => format!("{} {}", sig4(v), p.unit),
            None => format_value(v, self.unit),
        }
    }

    /// `mean ± σ` for humans, the unit once at the end for a program metric.
    pub fn format_pm(&self, mean: f64, sd: Option<f64>) -> String {
        match (&self.program, sd) {
            (Some(p), Some(sd)) => {
                let t = format!("{} ± {}", sig4(mean), sig4(sd));
                if p.unit.is_empty() {
                    t
                } else {
                    format!("{t} {}", p.unit)
                }
            }
            (_, Some(sd)) => format!("{} ± {}", self.format(mean), self.format(sd)),
            (_, None) => self.format(mean),
        }
    }

    /// Which way is better (wall time and the measured costs: lower).
    pub fn better(&self) -> Better {
        self.program.as_ref().map_or(Better::Lower, |p| p.better)
    }
}

/// Four significant digits, without exponent for everyday magnitudes.
fn sig4(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

/// The fixed metrics, in display order.
const FIXED: &[(&str, &str, Unit, bool)] = &[
    ("wall_s", "wall time", Unit::Seconds, false),
    ("user_s", "user", Unit::Seconds, false),
    ("sys_s", "system", Unit::Seconds, false),
    ("max_rss_kib", "max RSS", Unit::Kibibytes, false),
    ("task_clock_ms", "task-clock", Unit::Milliseconds, false),
    ("context_switches", "context switches", Unit::Count, false),
    ("cpu_migrations", "CPU migrations", Unit::Count, false),
    ("page_faults", "page faults", Unit::Count, false),
    ("cycles", "cycles", Unit::Count, false),
    ("instructions", "instructions", Unit::Count, false),
    ("ipc", "IPC", Unit::Ratio, true),
    ("cache_references", "cache references", Unit::Count, false),
    ("cache_misses", "cache misses", Unit::Count, false),
    ("avg_ghz", "average frequency", Unit::Gigahertz, true),
    ("energy_pkg_j", "energy (package)", Unit::Joules, false),
    ("energy_core_j", "energy (cores)", Unit::Joules, false),
    ("energy_dram_j", "energy (DRAM)", Unit::Joules, false),
    ("energy_psys_j", "energy (platform)", Unit::Joules, false),
    ("edp_js", "energy-delay product", Unit::JouleSeconds, false),
];

/// The keys of the measured metrics (a program metric may not take one).
pub fn measured_keys() -> Vec<&'static str> {
    FIXED.iter().map(|f| f.0).collect()
}

/// Per-PMU fields reported on hybrid machines (`cycles@cpu_atom`, ...).
const PER_PMU: &[(&str, &str, Unit, bool)] = &[
    ("cycles", "cycles", Unit::Count, false),
    ("instructions", "instructions", Unit::Count, false),
    ("ipc", "IPC", Unit::Ratio, true),
    ("cache_misses", "cache misses", Unit::Count, false),
    ("avg_ghz", "average frequency", Unit::Gigahertz, true),
    ("active_fraction", "share of run", Unit::Ratio, true),
];

/// The metrics to summarise for these runs: the fixed ones, plus per-PMU
/// ones when any run counted on more than one core PMU (hybrid machines).
pub fn metric_defs<'a>(records: impl IntoIterator<Item = &'a RunRecord>) -> Vec<MetricDef> {
    let mut defs: Vec<MetricDef> = FIXED
        .iter()
        .map(|&(k, l, u, r)| MetricDef {
            key: k.into(),
            label: l.into(),
            unit: u,
            rate: r,
            program: None,
        })
        .collect();
    let mut pmus: Vec<String> = Vec::new();
    for rec in records {
        if rec.counters.per_pmu.len() > 1 {
            for p in &rec.counters.per_pmu {
                if !pmus.contains(&p.pmu) {
                    pmus.push(p.pmu.clone());
                }
            }
        }
    }
    for pmu in pmus {
        for &(k, l, u, r) in PER_PMU {
            defs.push(MetricDef {
                key: format!("{k}@{pmu}"),
                label: format!("{l} on {pmu}"),
                unit: u,
                rate: r,
                program: None,
            });
        }
    }
    defs
}

/// The value of metric `key` in one run.
pub fn value(rec: &RunRecord, key: &str) -> Metric {
    let c = &rec.counters;
    let e = &rec.energy;
    match key {
        "wall_s" => Metric::value(rec.wall_s),
        "user_s" => Metric::value(rec.user_s),
        "sys_s" => Metric::value(rec.sys_s),
        "max_rss_kib" => Metric::value(rec.max_rss_kib as f64),
        "task_clock_ms" => c.task_clock_ms.clone(),
        "context_switches" => c.context_switches.clone(),
        "cpu_migrations" => c.cpu_migrations.clone(),
        "page_faults" => c.page_faults.clone(),
        "cycles" => c.cycles.clone(),
        "instructions" => c.instructions.clone(),
        "ipc" => c.ipc.clone(),
        "cache_references" => c.cache_references.clone(),
        "cache_misses" => c.cache_misses.clone(),
        "avg_ghz" => c.avg_ghz.clone(),
        "energy_pkg_j" => e.energy_pkg_j.clone(),
        "energy_core_j" => e.energy_core_j.clone(),
        "energy_dram_j" => e.energy_dram_j.clone(),
        "energy_psys_j" => e.energy_psys_j.clone(),
        // EDP of the run: package energy × its wall time.
        "edp_js" => e.energy_pkg_j.map(|j| j * rec.wall_s),
        other => match other.split_once('@') {
            Some((field, pmu)) => match c.per_pmu.iter().find(|p| p.pmu == pmu) {
                Some(p) => match field {
                    "cycles" => p.cycles.clone(),
                    "instructions" => p.instructions.clone(),
                    "ipc" => p.ipc.clone(),
                    "cache_misses" => p.cache_misses.clone(),
                    "avg_ghz" => p.avg_ghz.clone(),
                    "active_fraction" => p.active_fraction.clone(),
                    _ => Metric::unavailable(format!("unknown metric {other}")),
                },
                None => Metric::unavailable(format!("no {pmu} counts in this run")),
            },
            None => Metric::unavailable(format!("unknown metric {other}")),
        },
    }
}

/// A number for humans: 3 significant digits with a thousands-friendly
/// form for counts (`1.23 M`), plain seconds as `12.3 ms` / `1.234 s`.
pub fn format_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Seconds => format_seconds(v),
        Unit::Milliseconds => format_seconds(v / 1e3),
        Unit::Kibibytes => {
            if v >= 1024.0 * 1024.0 {
                format!("{:.2} GiB", v / 1024.0 / 1024.0)
            } else if v >= 1024.0 {
                format!("{:.1} MiB", v / 1024.0)
            } else {
                format!("{v:.0} KiB")
            }
        }
        Unit::Count => format_count(v),
        Unit::Ratio => format!("{v:.3}"),
        Unit::Gigahertz => format!("{v:.3} GHz"),
        Unit::Joules => format!("{} J", sig3(v)),
        Unit::JouleSeconds => format!("{} J·s", sig3(v)),
        Unit::Program => sig4(v),
    }
}

/// `1.234 s`, `12.3 ms`, `456 µs`.
pub fn format_seconds(s: f64) -> String {
    let a = s.abs();
    if a == 0.0 {
        "0 s".to_string()
    } else if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 {
        format!("{} ms", sig3(s * 1e3))
    } else {
        format!("{} µs", sig3(s * 1e6))
    }
}

fn format_count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{} G", sig3(v / 1e9))
    } else if a >= 1e6 {
        format!("{} M", sig3(v / 1e6))
    } else if a >= 1e4 {
        format!("{} k", sig3(v / 1e3))
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Three significant digits without exponent: 1.23, 12.3, 123, 1234.
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_numbers() {
        assert_eq!(format_seconds(1.23456), "1.235 s");
        assert_eq!(format_seconds(0.0123), "12.3 ms");
        assert_eq!(format_seconds(0.000456), "456 µs");
        assert_eq!(format_value(1_234_567.0, Unit::Count), "1.23 M");
        assert_eq!(format_value(42.0, Unit::Count), "42");
        assert_eq!(format_value(2048.0, Unit::Kibibytes), "2.0 MiB");
        assert_eq!(format_value(12.5, Unit::Joules), "12.5 J");
        assert_eq!(format_value(1500.0, Unit::Milliseconds), "1.500 s");
    }
}
