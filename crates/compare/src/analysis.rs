//! From journal lines to results: per-arm summaries of every metric, each
//! arm against the baseline, and the verdict. Pure: the same journal always
//! gives the same report, which is what makes `--resume` trustworthy.

use crate::design::Phase;
use crate::fixed;
use crate::journal::{ArmHeader, ArmPlan, Header, NotApplicable, RunLine};
use crate::metrics::{self, MetricDef};
use crate::program_metric::Better;
use crate::verdict::{self, Advice, Caveat, Verdict};
use pinsight_measure::Metric;
use pinsight_stats::{compare, Comparison, Interval, Outliers, Summary};
use serde::Serialize;
use std::collections::BTreeMap;

/// Schema name of the JSON report.
pub const REPORT_SCHEMA: &str = "pinsight-compare-report/1";

/// A relative difference below this (in %) is negligible in practice, even
/// when statistically significant.
pub const NEGLIGIBLE_PERCENT: f64 = 1.0;

/// How the experiment ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    /// Every planned run is in the journal.
    Complete,
    /// Stopped by a signal (Ctrl-C); resume to finish.
    Interrupted { signal: i32 },
    /// A run failed and `--ignore-failure` was not given.
    StoppedOnFailure {
        slot: usize,
        arm: String,
        why: String,
    },
    /// Read back from a journal (`--resume` of a finished journal or a report
    /// of a partial one) without running anything.
    Partial,
}

/// One metric of one arm.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricStats {
    #[serde(flatten)]
    pub def: MetricDef,
    /// Over the runs that have a value; absent when none has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Why there is no value (all runs), or why some runs have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// Runs without a value.
    pub missing_runs: usize,
    /// Caveats (e.g. an RSS that may be the harness's own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl MetricStats {
    /// The value to show: mean, or the reason there is none.
    pub fn mean(&self) -> Result<f64, &str> {
        match &self.summary {
            Some(s) => Ok(s.mean),
            None => Err(self.unavailable.as_deref().unwrap_or("no runs")),
        }
    }
}

/// An arm against the baseline on one metric (smaller is better).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Versus {
    pub baseline: String,
    /// mean(baseline) / mean(arm): > 1 = the arm is better (faster, or
    /// less energy).
    pub ratio: f64,
    /// 95 % Fieller interval of `ratio`, when bounded.
    pub ratio_ci: Option<Interval>,
    /// p-value of the test stats chose (Welch, or Mann-Whitney when runs
    /// are few, skewed or have outliers).
    pub p: Option<f64>,
    pub test: pinsight_stats::TestKind,
    pub test_reason: String,
    /// The test says p < 0.05 AND the ratio's CI excludes 1.
    pub significant: bool,
    /// |difference| < [`NEGLIGIBLE_PERCENT`].
    pub negligible: bool,
    /// Everything stats computed (both tests, summaries, notes).
    pub detail: Comparison,
}

impl Versus {
    /// The same comparison read the other way round: for a metric where
    /// higher is better, `ratio` = mean(arm) / mean(baseline), so > 1
    /// still means the arm is better. The Fieller interval of the inverse
    /// ratio is the inverse of the interval (Fieller 1954, §3: the
    /// confidence set is defined by a quadratic in the ratio, which maps
    /// onto itself under inversion when bounded).
    fn flipped(mut self) -> Versus {
        self.ratio = 1.0 / self.ratio;
        self.ratio_ci = self.ratio_ci.filter(|c| c.lo > 0.0).map(|c| Interval {
            lo: 1.0 / c.hi,
            hi: 1.0 / c.lo,
            ..c
        });
        self
    }

    fn of(baseline: &str, base: &[f64], arm: &[f64]) -> Option<Versus> {
        let c = compare(base, arm).ok()?;
        let s = c.speedup?;
        let ci_excludes_one = s.ci.is_some_and(|ci| !ci.contains(1.0));
        Some(Versus {
            baseline: baseline.to_string(),
            ratio: s.ratio,
            ratio_ci: s.ci,
            p: c.p,
            test: c.test,
            test_reason: c.test_reason.to_string(),
            significant: c.significant && ci_excludes_one,
            negligible: (s.ratio - 1.0).abs() * 100.0 < NEGLIGIBLE_PERCENT
                && (1.0 / s.ratio - 1.0).abs() * 100.0 < NEGLIGIBLE_PERCENT,
            detail: c,
        })
    }
}

/// A failed run, as shown to the user.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedRun {
    pub slot: usize,
    pub phase: Phase,
    pub rep: usize,
    pub why: String,
}

/// Everything about one arm.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmReport {
    pub id: String,
    /// `p-pinned` or `p-pinned (powersave)`.
    pub label: String,
    pub policy: String,
    pub governor: Option<String>,
    pub plan: ArmPlan,
    /// Human placement: `pinned 0 1`, `CPUs 0-1 (OS decides)`.
    pub placement: String,
    /// Threads the program was told to run (the same in every arm).
    pub threads: usize,
    /// Variables exported to the program (`OMP_NUM_THREADS` and friends).
    pub env: Vec<(String, String)>,
    /// Successful measured runs (the statistics' n).
    pub measured: usize,
    pub warmups: usize,
    /// Runs that failed (latest attempt per slot).
    pub failed: Vec<FailedRun>,
    pub metrics: Vec<MetricStats>,
    /// hyperfine-style outlier warning on wall time.
    pub outlier_warning: Option<Caveat>,
    /// Wall time against the baseline (absent for the baseline itself).
    pub time_vs_baseline: Option<Versus>,
    /// Package energy against the baseline, when measured on both.
    pub energy_vs_baseline: Option<Versus>,
    /// EDP change in % of the baseline's mean EDP.
    pub edp_change_percent: Option<f64>,
    /// Runs under a launcher (compare across ranks): the launcher's wall
    /// time and the spread between ranks; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankSummary>,
    /// Each program metric (`--metric`) against the baseline, in the
    /// header's order (absent for the baseline itself and without metrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics_vs_baseline: Vec<MetricVersus>,
}

/// A program metric of an arm against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricVersus {
    /// The metric's key ([`MetricDef::key`]).
    pub key: String,
    pub better: Better,
    /// `ratio` > 1: the arm is better (for a higher-is-better metric,
    /// mean(arm) / mean(baseline); else mean(baseline) / mean(arm)).
    pub versus: Versus,
}

/// The ranks of an arm's successful measured runs under a launcher.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankSummary {
    /// Runs with rank times.
    pub runs: usize,
    /// Ranks per run (the most seen).
    pub ranks: usize,
    /// Median of the launcher's own wall time (start-up included), s.
    pub launcher_wall_median_s: f64,
    /// Median and largest slowest/fastest rank ratio of a run.
    pub spread_median: Option<f64>,
    pub spread_max: Option<f64>,
}

impl RankSummary {
    fn of(runs: &[&RunLine]) -> Option<RankSummary> {
        let ks: Vec<&crate::journal::RankTimes> =
            runs.iter().filter_map(|r| r.ranks.as_ref()).collect();
        if ks.is_empty() {
            return None;
        }
        let median = |mut v: Vec<f64>| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            let n = v.len();
            Some(if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            })
        };
        let spreads: Vec<f64> = ks.iter().filter_map(|k| k.spread).collect();
        Some(RankSummary {
            runs: ks.len(),
            ranks: ks.iter().map(|k| k.ranks.len()).max().unwrap_or(0),
            launcher_wall_median_s: median(ks.iter().map(|k| k.launcher_wall_s).collect())
                .unwrap_or(f64::NAN),
            spread_max: spreads.iter().copied().reduce(f64::max),
            spread_median: median(spreads),
        })
    }
}

impl ArmReport {
    pub fn metric(&self, key: &str) -> Option<&MetricStats> {
        self.metrics.iter().find(|m| m.def.key == key)
    }

    /// Whether this arm is the baseline others are compared with.
    pub fn is_baseline(&self, baseline: Option<&str>) -> bool {
        baseline == Some(self.id.as_str())
    }
}

/// The whole result: what `--json` prints and every export is drawn from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub status: Status,
    /// Measured + warm-up slots done / planned.
    pub runs_done: usize,
    pub runs_planned: usize,
    pub header: Header,
    /// The arm others are compared with (`os` when it ran).
    pub baseline: Option<String>,
    pub arms: Vec<ArmReport>,
    pub not_applicable: Vec<NotApplicable>,
    pub verdict: Verdict,
    /// Every run line of the journal, in order (retries included).
    pub runs: Vec<RunLine>,
    pub warnings: Vec<String>,
    /// Other work on the arms' CPUs during the measured runs (absent when
    /// no run measured it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<DisturbanceReport>,
    /// This machine is a virtual machine: what was seen, and what it means
    /// (set by the session, which reads the machine; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_machine: Option<String>,
    /// One entry per arm in hyperfine's `--export-json` form, so scripts
    /// written for hyperfine read this report unchanged.
    pub results: Vec<HyperfineResult>,
}

/// How disturbed the measured runs were.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DisturbanceReport {
    /// Over the runs the statistics use (the latest attempt of each
    /// measured slot).
    #[serde(flatten)]
    pub summary: pinsight_measure::disturbance::Summary,
    /// Disturbed runs that were run again (`--rerun-disturbed`): they stay
    /// in the journal, their slot's latest attempt replaces them.
    pub rerun: usize,
}

impl DisturbanceReport {
    /// Of `runs` (every journal line), `latest` being each slot's latest.
    fn of(runs: &[RunLine], latest: &BTreeMap<usize, &RunLine>) -> Option<DisturbanceReport> {
        let summary = pinsight_measure::disturbance::Summary::of(
            latest
                .values()
                .filter(|r| r.phase == Phase::Measured)
                .filter_map(|r| r.record.disturbance.as_ref()),
        );
        let rerun = runs
            .iter()
            .filter(|r| !std::ptr::eq(*r, latest[&r.slot]))
            .filter(|r| r.record.disturbed())
            .count();
        (summary.measured > 0).then_some(DisturbanceReport { summary, rerun })
    }

    /// The sentence for the verdict's caveats, when runs were disturbed.
    pub fn note(&self) -> Option<String> {
        let mut n = self.summary.note()?;
        if self.rerun > 0 {
            n.push_str(&format!(
                "; {} disturbed run{} rerun",
                self.rerun,
                if self.rerun == 1 { " was" } else { "s were" }
            ));
        }
        Some(n)
    }
}

/// An arm as hyperfine exports a command (hyperfine's
/// `src/export/json.rs` and `BenchmarkResult` in
/// `src/benchmark/benchmark_result.rs`): times in seconds over the
/// successful measured runs; `times` and `exit_codes` are parallel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HyperfineResult {
    /// `ARM: COMMAND`.
    pub command: String,
    pub mean: f64,
    /// Absent (null) with fewer than two runs, as hyperfine writes it.
    pub stddev: Option<f64>,
    pub median: f64,
    /// Mean user and system CPU time.
    pub user: f64,
    pub system: f64,
    pub min: f64,
    pub max: f64,
    pub times: Vec<f64>,
    /// Null for a run ended by a signal.
    pub exit_codes: Vec<Option<i32>>,
    /// pinsight's own: the arm's id and its program metrics' means.
    pub arm: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
}

/// `os` (first governor) if it ran, else the first arm.
pub fn baseline_arm(arms: &[ArmHeader]) -> Option<&ArmHeader> {
    arms.iter().find(|a| a.policy == "os").or(arms.first())
}

/// `p-pinned` / `p-pinned (powersave)`.
pub fn arm_label(a: &ArmHeader) -> String {
    match &a.governor {
        Some(g) => format!("{} ({g})", a.policy),
        None => a.policy.clone(),
    }
}

/// Analyses a journal. `status` says how the experiment ended.
pub fn analyse(header: &Header, runs: &[RunLine], status: Status, warnings: Vec<String>) -> Report {
    // The latest attempt of each slot wins (a resumed experiment retries
    // failed slots); slots are chronological within an uninterrupted run.
    let latest = latest_attempts(runs);
    let planned = header.arms.len() * (header.runs + header.warmup);
    let mut defs = metrics::metric_defs(latest.values().map(|r| &r.record));
    defs.extend(header.metrics.iter().map(MetricDef::program));
    let base = baseline_arm(&header.arms);
    let base_id = base.map(|b| b.id.clone());

    let mut arms: Vec<ArmReport> = header
        .arms
        .iter()
        .map(|a| arm_report(a, &latest, &defs))
        .collect();
    if let Some(b) = base {
        against_baseline(header, &latest, b, &mut arms);
    }

    let measured: Vec<&RunLine> = latest
        .values()
        .copied()
        .filter(|r| r.phase == Phase::Measured && r.failure().is_none())
        .collect();
    let mut verdict = decide(header, &arms, base_id.as_deref(), &measured);
    let disturbance = DisturbanceReport::of(runs, &latest);
    if let Some(note) = disturbance.as_ref().and_then(DisturbanceReport::note) {
        verdict.caveats.push(Caveat::new(note));
    }
    let results = header
        .arms
        .iter()
        .zip(&arms)
        .map(|(h, a)| hyperfine_result(header, h, a, &measured))
        .collect();
    Report {
        schema: REPORT_SCHEMA,
        status,
        runs_done: latest.len(),
        runs_planned: planned,
        header: header.clone(),
        baseline: base_id,
        arms,
        not_applicable: header.not_applicable.clone(),
        verdict,
        runs: runs.to_vec(),
        warnings,
        disturbance,
        virtual_machine: None,
        results,
    }
}

/// The latest attempt of each slot, by slot.
pub(crate) fn latest_attempts(runs: &[RunLine]) -> BTreeMap<usize, &RunLine> {
    let mut latest: BTreeMap<usize, &RunLine> = BTreeMap::new();
    for r in runs {
        latest.insert(r.slot, r);
    }
    latest
}

/// The values of `key` in arm `id`'s successful measured runs.
fn series(latest: &BTreeMap<usize, &RunLine>, id: &str, key: &str) -> Vec<f64> {
    latest
        .values()
        .filter(|r| r.arm == id && r.phase == Phase::Measured && r.failure().is_none())
        .filter_map(|r| line_value(r, key).get())
        .collect()
}

/// The mean energy-delay product of an arm, when measured.
fn mean_edp(a: &ArmReport) -> Option<f64> {
    a.metric("edp_js")
        .and_then(|m| m.summary.as_ref().map(|s| s.mean))
}

/// Fills every other arm's comparisons against the baseline arm `base`
/// (time, energy, energy-delay product, program metrics).
fn against_baseline(
    header: &Header,
    latest: &BTreeMap<usize, &RunLine>,
    base: &ArmHeader,
    arms: &mut [ArmReport],
) {
    let b = &base.id;
    let series = |id: &str, key: &str| series(latest, id, key);
    let base_time = series(b, "wall_s");
    let base_energy = series(b, "energy_pkg_j");
    let base_label = arm_label(base);
    let base_edp = arms.iter().find(|a| &a.id == b).and_then(mean_edp);
    for a in arms.iter_mut().filter(|a| &a.id != b) {
        a.time_vs_baseline = Versus::of(&base_label, &base_time, &series(&a.id, "wall_s"));
        if let Some(v) = &mut a.time_vs_baseline {
            after_warmups(
                &mut v.detail.notes,
                header.warmup,
                [
                    ("baseline", &base_time[..]),
                    ("candidate", &series(&a.id, "wall_s")[..]),
                ],
            );
        }
        a.energy_vs_baseline =
            Versus::of(&base_label, &base_energy, &series(&a.id, "energy_pkg_j"));
        a.edp_change_percent = match (mean_edp(a), base_edp) {
            (Some(e), Some(be)) if be > 0.0 => Some((e / be - 1.0) * 100.0),
            _ => None,
        };
        a.metrics_vs_baseline = header
            .metrics
            .iter()
            .filter_map(|m| {
                let v = Versus::of(&base_label, &series(b, &m.name), &series(&a.id, &m.name))?;
                Some(MetricVersus {
                    key: m.name.clone(),
                    better: m.better,
                    versus: match m.better {
                        Better::Higher => v.flipped(),
                        Better::Lower => v,
                    },
                })
            })
            .collect();
    }
}

/// The verdict on the arms: the first required program metric is the
/// objective; a fixed cost found in the `measured` runs is taken into account.
fn decide(
    header: &Header,
    arms: &[ArmReport],
    base_id: Option<&str>,
    measured: &[&RunLine],
) -> Verdict {
    let fixed = fixed::detect(header, arms, base_id, measured);
    let objective = header
        .metrics
        .iter()
        .find(|m| !m.optional)
        .map(|m| m.name.as_str());
    verdict::decide(
        arms,
        base_id,
        &header.not_applicable,
        header.runs,
        objective,
        fixed,
    )
}

/// An arm in hyperfine's export form.
fn hyperfine_result(
    header: &Header,
    h: &ArmHeader,
    a: &ArmReport,
    measured: &[&RunLine],
) -> HyperfineResult {
    let mine: Vec<&&RunLine> = measured.iter().filter(|r| r.arm == h.id).collect();
    let times: Vec<f64> = mine.iter().map(|r| r.record.wall_s).collect();
    let mean = |xs: &[f64]| {
        if xs.is_empty() {
            f64::NAN
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };
    let user: Vec<f64> = mine.iter().map(|r| r.record.user_s).collect();
    let system: Vec<f64> = mine.iter().map(|r| r.record.sys_s).collect();
    let wall = a.metric("wall_s").and_then(|m| m.summary.as_ref());
    HyperfineResult {
        command: format!("{}: {}", a.label, header.command.join(" ")),
        mean: wall.map_or(f64::NAN, |s| s.mean),
        stddev: wall.and_then(|s| s.stddev),
        median: wall.map_or(f64::NAN, |s| s.median),
        user: mean(&user),
        system: mean(&system),
        min: wall.map_or(f64::NAN, |s| s.min),
        max: wall.map_or(f64::NAN, |s| s.max),
        times,
        exit_codes: mine.iter().map(|r| r.record.exit.code).collect(),
        arm: h.id.clone(),
        metrics: header
            .metrics
            .iter()
            .filter_map(|m| {
                let s = a.metric(&m.name)?.summary.as_ref()?;
                Some((m.name.clone(), s.mean))
            })
            .collect(),
    }
}

/// The value of metric `key` in one run: a program metric from the run
/// line, a measured one from its record.
pub fn line_value(line: &RunLine, key: &str) -> Metric {
    match line.metrics.get(key) {
        Some(m) => m.clone(),
        None => metrics::value(&line.record, key),
    }
}

/// The stats crate advises warm-up runs when a side's first run is slow
/// (its note is `"{side}: {Outliers::warning}"`); after warm-ups that
/// advice is wrong, so the note is replaced by what it means then. The
/// note is found by recomputing it from the side's runs, not by reading
/// its words.
fn after_warmups(notes: &mut [String], warmups: usize, sides: [(&str, &[f64]); 2]) {
    if warmups == 0 {
        return;
    }
    for (side, xs) in sides {
        let Some(o) = Outliers::detect(xs).ok().filter(|o| o.slow_first_run) else {
            continue;
        };
        let Some(w) = o.warning() else { continue };
        let stats_note = format!("{side}: {w}");
        for n in notes.iter_mut().filter(|n| **n == stats_note) {
            *n = format!("{side}: {}", slow_first_after_warmups(warmups));
        }
    }
}

/// The wall-time outlier caveat of an arm, from its successful runs.
fn outlier_caveat(walls: &[f64], warmups: usize) -> Option<Caveat> {
    let o = Outliers::detect(walls).ok()?;
    if o.slow_first_run {
        return Some(if warmups > 0 {
            // Advising warm-ups would be wrong: there were warm-ups.
            Caveat::new(slow_first_after_warmups(warmups))
        } else {
            Caveat {
                text: "the first run was significantly slower than the rest: caches were probably cold"
                    .into(),
                advice: Some(Advice::WarmUp),
            }
        });
    }
    (!o.severe_z.is_empty()).then(|| {
        Caveat::new(format!(
            "statistical outliers were detected ({} of {} runs); consider re-running on a quiet \
             system without interference from other programs",
            o.severe_z.len(),
            o.modified_z.len()
        ))
    })
}

fn slow_first_after_warmups(warmups: usize) -> String {
    format!(
        "the first measured run was significantly slower than the rest even after {warmups} warm-up run{}: \
         something else probably ran at the time; consider re-running on a quiet system",
        if warmups == 1 { "" } else { "s" }
    )
}

fn arm_report(a: &ArmHeader, latest: &BTreeMap<usize, &RunLine>, defs: &[MetricDef]) -> ArmReport {
    let mine: Vec<&RunLine> = latest.values().copied().filter(|r| r.arm == a.id).collect();
    let failed: Vec<FailedRun> = mine
        .iter()
        .filter_map(|r| {
            r.failure().map(|why| FailedRun {
                slot: r.slot,
                phase: r.phase,
                rep: r.rep,
                why,
            })
        })
        .collect();
    let ok: Vec<&RunLine> = mine
        .iter()
        .copied()
        .filter(|r| r.phase == Phase::Measured && r.failure().is_none())
        .collect();
    let warmups = mine.iter().filter(|r| r.phase == Phase::Warmup).count();
    let metrics: Vec<MetricStats> = defs.iter().map(|d| metric_stats(d, &ok)).collect();
    let walls: Vec<f64> = ok.iter().map(|r| r.record.wall_s).collect();
    let outlier_warning = outlier_caveat(&walls, warmups);
    ArmReport {
        id: a.id.clone(),
        label: arm_label(a),
        policy: a.policy.clone(),
        governor: a.governor.clone(),
        plan: a.plan.clone(),
        placement: a.plan.describe(),
        threads: a.plan.threads,
        env: a.env.clone(),
        measured: ok.len(),
        warmups,
        failed,
        metrics,
        outlier_warning,
        time_vs_baseline: None,
        energy_vs_baseline: None,
        edp_change_percent: None,
        ranks: RankSummary::of(&ok),
        metrics_vs_baseline: Vec::new(),
    }
}

fn metric_stats(def: &MetricDef, runs: &[&RunLine]) -> MetricStats {
    let vals: Vec<Metric> = runs
        .iter()
        .map(|r| match (&def.program, r.metrics.get(&def.key)) {
            (_, Some(m)) => m.clone(),
            (Some(_), None) => Metric::unavailable("not read from this run's output"),
            (None, None) => metrics::value(&r.record, &def.key),
        })
        .collect();
    let xs: Vec<f64> = vals.iter().filter_map(Metric::get).collect();
    let reason = most_common_reason(&vals);
    let missing = vals.len() - xs.len();
    let mut notes = Vec::new();
    if def.key == "max_rss_kib" {
        let floor = runs
            .iter()
            .map(|r| r.record.max_rss_floor_kib)
            .max()
            .unwrap_or(0);
        if runs
            .iter()
            .any(|r| r.record.max_rss_kib <= r.record.max_rss_floor_kib)
        {
            notes.push(format!(
                "at or below the harness's own peak RSS ({floor} KiB): Linux folds the pre-exec image into ru_maxrss, so this may be pinsight's size, not the program's"
            ));
        }
    }
    let (summary, unavailable) = if vals.is_empty() {
        (None, Some("no successful measured run".to_string()))
    } else if xs.is_empty() {
        (None, reason)
    } else {
        let s = Summary::of(&xs).ok();
        let u = reason.map(|r| format!("{missing} of {} runs without a value: {r}", vals.len()));
        (s, u)
    };
    MetricStats {
        def: def.clone(),
        summary,
        unavailable,
        missing_runs: missing,
        notes,
    }
}

fn most_common_reason(vals: &[Metric]) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in vals.iter().filter_map(Metric::reason) {
        match counts.iter_mut().find(|(x, _)| *x == r) {
            Some(c) => c.1 += 1,
            None => counts.push((r, 1)),
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map(|(r, _)| r.to_string())
}

/// Whether a metric has no value in any arm: the renderers then print one
/// "unavailable (reason)" line instead of a column of them.
pub fn unavailable_everywhere<'a>(arms: &'a [ArmReport], key: &str) -> Option<&'a str> {
    let mut reason = None;
    for a in arms {
        let m = a.metric(key)?;
        if m.summary.is_some() {
            return None;
        }
        reason = reason.or(m.unavailable.as_deref());
    }
    reason
}

/// Formats a metric's mean (± σ) or "unavailable (reason)".
pub fn show_mean(m: &MetricStats, with_sd: bool) -> String {
    match &m.summary {
        Some(s) => {
            let v = if m.def.rate {
                s.harmonic_mean.unwrap_or(s.mean)
            } else {
                s.mean
            };
            m.def.format_pm(v, if with_sd { s.stddev } else { None })
        }
        None => format!(
            "unavailable ({})",
            m.unavailable.as_deref().unwrap_or("no value")
        ),
    }
}

/// Values of metric `key` over the successful measured runs of `arm`, in
/// run order (latest attempt per slot): what the statistics were computed from.
pub fn measured_values(r: &Report, arm: &str, key: &str) -> Vec<f64> {
    series(&latest_attempts(&r.runs), arm, key)
}
