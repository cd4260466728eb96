//! The experiment journal: JSON lines, one fsync'd line per finished run,
//! so a crash, a power cut or Ctrl-C never loses a measurement.
//!
//! Line 1 is the [`Header`] (`"type": "header"`): everything needed to
//! re-run the experiment and to refuse resuming a different one. Every
//! further line is a [`RunLine`] (`"type": "run"`) holding one
//! [`pinsight_measure::RunRecord`] flattened. The file itself (created
//! exclusively, locked while in use, fsync'd per line, a cut last line
//! handled one way, every run checked against the header's design) is
//! pinsight-lifecycle's [`pinsight_lifecycle::journal::Journal`]; this
//! module says what a compare header and run are ([`Design`] for
//! [`Header`]).

use crate::design::Phase;
use crate::program_metric::MetricSpec;
use crate::request::{Input, Names};
use pinsight_cpuset::CpuSet;
use pinsight_lifecycle::journal::JournalError;
use pinsight_lifecycle::journal::{self as lj, Design, JsonLine};
use pinsight_measure::{Metric, RunRecord};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The journal format's name and version (bumped on incompatible change).
pub const SCHEMA: &str = "pinsight-compare/1";

/// Where one arm's threads go: the planner's [`pinsight_plan::Plan`] in a
/// form that can be read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmPlan {
    /// Canonical policy text.
    pub policy: String,
    pub threads: usize,
    /// Mask of the whole process (every usable CPU for `os`).
    pub process_mask: CpuSet,
    /// One place per thread in creation order; empty for `os`.
    pub places: Vec<CpuSet>,
    /// Threads pinned one by one (LD_PRELOAD shim) rather than a mask.
    pub pinned: bool,
    /// The memory policy, resolved (`bind:0`); absent: the kernel's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

impl ArmPlan {
    pub fn from_plan(p: &pinsight_plan::Plan) -> ArmPlan {
        ArmPlan {
            policy: p.policy.clone(),
            threads: p.threads,
            process_mask: p.process_mask.clone(),
            places: p.places.clone(),
            pinned: p.pinned,
            memory: p.memory.as_ref().map(|m| m.policy.clone()),
        }
    }

    /// "all CPUs (OS decides)", "CPUs 0-3 (threads float)", "0;1;2;3 (pinned)",
    /// followed by ", memory bind:0" when the arm has a memory policy.
    pub fn describe(&self) -> String {
        match &self.memory {
            Some(m) => format!("{}, memory {m}", self.describe_cpus()),
            None => self.describe_cpus(),
        }
    }

    fn describe_cpus(&self) -> String {
        if self.places.is_empty() {
            format!("CPUs {} (OS decides)", self.process_mask)
        } else if self.pinned {
            let p: Vec<String> = self.places.iter().map(|s| s.to_list_string()).collect();
            format!("pinned {}", p.join(" "))
        } else {
            format!("CPUs {} (threads float)", self.process_mask)
        }
    }
}

/// One arm that runs: a policy, optionally under a cpufreq governor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmHeader {
    /// `policy` or `policy@governor`; unique; the key run lines refer to.
    pub id: String,
    pub policy: String,
    pub governor: Option<String>,
    pub plan: ArmPlan,
    /// Variables exported to the program (OpenMP and friends).
    pub env: Vec<(String, String)>,
    /// Planner and launcher notes.
    pub notes: Vec<String>,
}

/// A requested arm (or governor) that this machine cannot run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotApplicable {
    /// What was asked: a policy (`e-set`) or `governor powersave`.
    pub what: String,
    /// Why, in the planner's or the OS's words.
    pub reason: String,
}

/// The machine the experiment ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Machine {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub model_name: Option<String>,
    pub arch: Option<String>,
    /// CPUs this process may use.
    pub usable_cpus: CpuSet,
    /// Core kinds, slowest first. Written typed
    /// (`{"name": "E-core", "cpus": "8-15", "rank": 0}`); journals written
    /// before hold `"E-core: 8-15"` text, read into the same form.
    #[serde(deserialize_with = "kinds_either_form")]
    pub kinds: Vec<MachineKind>,
    /// What can be measured here (`counters: ...`, `energy: ...`, `governors: ...`).
    pub capabilities: Vec<String>,
}

/// A core kind of the machine, as the header stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineKind {
    /// The kind's name (`P-core`, `E-core`, `Cortex-A76`).
    pub name: String,
    /// Its online CPUs, a cpulist (`8-15`).
    pub cpus: CpuSet,
    /// 0 = least performant (the topology's kind rank).
    pub rank: usize,
}

impl std::fmt::Display for MachineKind {
    /// `NAME: CPULIST`, the form messages and reports show.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.cpus)
    }
}

impl MachineKind {
    /// The text form of journals written before kinds were typed:
    /// `NAME: CPULIST`, at position `rank` of a list slowest first.
    /// `None` when it does not parse.
    pub fn from_text(text: &str, rank: usize) -> Option<MachineKind> {
        let (name, list) = text.rsplit_once(": ")?;
        Some(MachineKind {
            name: name.to_string(),
            cpus: CpuSet::parse_list(list).ok()?,
            rank,
        })
    }
}

/// One entry of `machine.kinds`: typed, or the older `NAME: CPULIST` text.
#[derive(Deserialize)]
#[serde(untagged)]
enum KindEntry {
    Typed(MachineKind),
    Text(String),
}

/// Reads `machine.kinds` in either form; a text entry that does not parse
/// is left out (as reading it back always did), never a refused journal.
fn kinds_either_form<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<MachineKind>, D::Error> {
    let entries = Vec::<KindEntry>::deserialize(d)?;
    Ok(entries
        .into_iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            KindEntry::Typed(k) => Some(k),
            KindEntry::Text(t) => MachineKind::from_text(&t, i),
        })
        .collect())
}

impl Machine {
    /// The core kinds' CPU sets, slowest first.
    pub fn kind_cpus(&self) -> Vec<CpuSet> {
        self.kinds.iter().map(|k| k.cpus.clone()).collect()
    }

    /// The kinds as `NAME: CPULIST, ...`, for messages.
    pub fn kinds_text(&self) -> String {
        let texts: Vec<String> = self.kinds.iter().map(ToString::to_string).collect();
        texts.join(", ")
    }
}

/// Line 1 of a journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`SCHEMA`].
    pub schema: String,
    pub pinsight_version: String,
    /// UTC, `2025-01-31T12:00:00Z`.
    pub created: String,
    /// The measured program and its arguments.
    pub command: Vec<String>,
    /// Shell command run before every run (`sh -c`).
    pub prepare: Option<String>,
    /// Policies as requested (applicable or not).
    pub policies: Vec<String>,
    /// Governors as requested (empty: left as they are).
    pub governors: Vec<String>,
    /// Threads of every arm (the user's `--threads`, else the usable CPUs).
    pub threads: Option<usize>,
    /// `--oversubscribe`: pinned policies may place more threads than CPUs.
    #[serde(default)]
    pub oversubscribe: bool,
    /// `--latency FILE`, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    /// `--weights FILE`, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
    /// `--mem SPEC` (every arm without its own `+mem:`), as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<String>,
    /// `--near DEVICE`, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near: Option<String>,
    pub runs: usize,
    pub warmup: usize,
    pub seed: u64,
    pub timeout_s: Option<f64>,
    /// The arms that run, in arm-index order (the design refers to them by index).
    pub arms: Vec<ArmHeader>,
    pub not_applicable: Vec<NotApplicable>,
    pub machine: Machine,
    /// The experiment built on compare's machinery that wrote this journal
    /// (`"tune"`, `"tune-validate"`); absent: a compare experiment. Part of
    /// the identity: one kind never resumes another's journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// That experiment's own identity (tune: the configuration of every
    /// arm), compared as a whole on resume; absent for compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<serde_json::Value>,
    /// Program metrics taken from every run's output (`--metric`), in
    /// the order given; absent: none. Part of the identity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSpec>,
    /// Counter and energy metrics that no run on this machine can have,
    /// by name, with the reason (`{"cycles": "no hardware PMU: ..."}`),
    /// as the measurer knew before the first run: a run line leaves out
    /// each one that is unavailable for exactly this reason, and reads
    /// back with it ([`Design::complete`]). Absent (and every metric in
    /// every line) in journals written before it. Not part of the
    /// identity: a resumed journal keeps its own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: BTreeMap<String, String>,
}

impl Header {
    /// `line` as its journal line holds it: each metric the header gives
    /// for every run ([`Header::unavailable`]) left out; `None` when it
    /// leaves nothing out.
    pub fn compact(&self, line: &RunLine) -> Option<RunLine> {
        compact(&self.unavailable, line)
    }

    /// What makes `other` (built from the current request) a different
    /// experiment from this journal's; empty when it is the same one.
    pub fn mismatch(&self, other: &Header) -> Vec<Difference> {
        let mut diffs = Vec::new();
        let mut cmp = |field: Field, a: String, b: String| {
            if a != b {
                diffs.push(Difference {
                    field,
                    journal: a,
                    now: b,
                });
            }
        };
        if self.kind != other.kind {
            // Nothing else is comparable between two kinds of experiment.
            cmp(Field::Kind, kind_text(self), kind_text(other));
            return diffs;
        }
        for (field, text) in identity_before_arms() {
            cmp(field, text(self), text(other));
        }
        for (a, b) in self.arms.iter().zip(&other.arms) {
            if a.id == b.id && a.plan.threads != b.plan.threads {
                cmp(
                    Field::ArmThreads(a.id.clone()),
                    a.plan.threads.to_string(),
                    b.plan.threads.to_string(),
                );
            } else if a.id == b.id && a.plan != b.plan {
                cmp(
                    Field::Placement(a.id.clone()),
                    a.plan.describe(),
                    b.plan.describe(),
                );
            }
        }
        for (field, text) in identity_after_arms() {
            cmp(field, text(self), text(other));
        }
        diffs
    }
}

/// How a part of a header's identity reads in a [`Difference`].
type IdentityText = fn(&Header) -> String;

/// Which kind of experiment a header is, as a difference says it.
fn kind_text(h: &Header) -> String {
    match &h.kind {
        Some(k) => format!("a {k} experiment"),
        None => "a compare experiment".to_string(),
    }
}

/// The parts of the identity compared before the arms' placements, in order.
fn identity_before_arms() -> [(Field, IdentityText); 4] {
    [
        (Field::Schema, |h| h.schema.clone()),
        (Field::Command, |h| format!("`{}`", h.command.join(" "))),
        (Field::Prepare, |h| format!("{:?}", h.prepare)),
        (Field::Arms, |h| {
            h.arms
                .iter()
                .map(|a| a.id.as_str())
                .collect::<Vec<_>>()
                .join(",")
        }),
    ]
}

/// The parts of the identity compared after the arms' placements, in order.
fn identity_after_arms() -> [(Field, IdentityText); 10] {
    [
        (Field::Threads, |h| format!("{:?}", h.threads)),
        (Field::Oversubscribe, |h| h.oversubscribe.to_string()),
        (Field::Runs, |h| h.runs.to_string()),
        (Field::Warmup, |h| h.warmup.to_string()),
        (Field::Seed, |h| h.seed.to_string()),
        (Field::Timeout, |h| format!("{:?}", h.timeout_s)),
        (Field::UsableCpus, |h| h.machine.usable_cpus.to_string()),
        (Field::CpuModel, |h| format!("{:?}", h.machine.model_name)),
        (Field::Extension, |h| {
            h.extension
                .as_ref()
                .map_or(String::new(), |v| v.to_string())
        }),
        (Field::Metrics, |h| {
            h.metrics
                .iter()
                .map(|m| format!("{}={}", m.name, m.source_text()))
                .collect::<Vec<_>>()
                .join(" ")
        }),
    ]
}

/// A part of the experiment's identity (see [`Header::mismatch`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// Which kind of experiment (compare, tune, ...).
    Kind,
    Schema,
    Command,
    /// The command run before every run.
    Prepare,
    /// Which arms run.
    Arms,
    /// Where the threads of this arm go.
    Placement(String),
    Threads,
    Oversubscribe,
    /// Measured runs per arm.
    Runs,
    /// Warm-up runs per arm.
    Warmup,
    Seed,
    Timeout,
    UsableCpus,
    CpuModel,
    /// The threads of this arm (experiments whose arms differ in threads).
    ArmThreads(String),
    /// The identity the experiment kind adds ([`Header::extension`]).
    Extension,
    /// The program metrics taken from the output.
    Metrics,
}

impl Field {
    /// The input of a compare that sets this field, if one does.
    pub fn input(&self) -> Option<Input> {
        Some(match self {
            Field::Prepare => Input::Prepare,
            Field::Threads => Input::Threads,
            Field::Oversubscribe => Input::Oversubscribe,
            Field::Runs => Input::Runs,
            Field::Warmup => Input::Warmup,
            Field::Seed => Input::Seed,
            Field::Timeout => Input::Timeout,
            Field::Metrics => Input::Metric,
            _ => return None,
        })
    }
}

impl Difference {
    /// The difference with the input that sets its field named by `name`.
    pub fn named(&self, name: Names<'_>) -> String {
        match self.field.input() {
            Some(i) => format!(
                "{}: journal has {}, now {}",
                name(i),
                self.journal,
                self.now
            ),
            None => self.to_string(),
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Kind => f.write_str("experiment"),
            Field::Schema => f.write_str("schema"),
            Field::Command => f.write_str("command"),
            Field::Prepare => f.write_str("prepare command"),
            Field::Arms => f.write_str("arms"),
            Field::Placement(arm) => write!(f, "placement of {arm}"),
            Field::Threads => f.write_str("threads"),
            Field::Oversubscribe => f.write_str("oversubscribe"),
            Field::Runs => f.write_str("runs per arm"),
            Field::Warmup => f.write_str("warm-up runs per arm"),
            Field::Seed => f.write_str("seed"),
            Field::Timeout => f.write_str("timeout"),
            Field::UsableCpus => f.write_str("usable CPUs"),
            Field::CpuModel => f.write_str("CPU model"),
            Field::ArmThreads(arm) => write!(f, "threads of {arm}"),
            Field::Extension => f.write_str("experiment design"),
            Field::Metrics => f.write_str("program metrics"),
        }
    }
}

/// One way a request differs from a journal's experiment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: journal has {journal}, now {now}")]
pub struct Difference {
    pub field: Field,
    /// The journal's value, as shown.
    pub journal: String,
    /// The current request's value, as shown.
    pub now: String,
}

/// One finished run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLine {
    /// The design slot (position in the run order).
    pub slot: usize,
    /// [`ArmHeader::id`].
    pub arm: String,
    pub phase: Phase,
    /// Block number within the phase.
    pub rep: usize,
    /// Wall-clock start, seconds since the Unix epoch.
    pub started_unix: f64,
    #[serde(flatten)]
    pub record: RunRecord,
    /// A run under a launcher (compare across ranks): each rank's wall
    /// time; `record.wall_s` is then the slowest rank's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankTimes>,
    /// The run's output (stdout and stderr), kept beside the journal:
    /// its path relative to the journal's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<RunOutputRef>,
    /// Program metrics ([`Header::metrics`]) read from the output: a
    /// value, or why the output has none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, Metric>,
}

/// Where a run's output is kept, and how much of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutputRef {
    /// Relative to the journal's directory: `JOURNAL.out/arm-os-run-3.txt`;
    /// empty (and left out) when the run wrote nothing: no file is made.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// Bytes the program wrote.
    pub bytes: u64,
    /// Bytes left out of the middle of the file to keep it bounded (its
    /// head and tail are kept); 0 when it is whole.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_bytes: u64,
    /// The last numbers the run printed, labelled
    /// ([`crate::program_metric::figures_in`]): what the fixed-duration
    /// check compares between runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<crate::program_metric::Figure>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The ranks of one run under a launcher, from their `--report-dir` files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankTimes {
    /// The launcher's own wall time (its start-up and wind-down included).
    pub launcher_wall_s: f64,
    /// Where the ranks wrote their reports.
    pub report_dir: String,
    /// Every rank that wrote a report, by host then rank.
    pub ranks: Vec<RankTime>,
    /// Slowest / fastest rank wall time (absent without two ranks).
    pub spread: Option<f64>,
    /// Why the run fails although the launcher may have exited 0: a rank
    /// that failed (named, with its exit code) or wrote no report.
    pub failure: Option<String>,
}

/// One rank of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankTime {
    pub host: String,
    /// Local rank on its host.
    pub rank: usize,
    /// Local ranks on its host.
    pub size: usize,
    pub wall_s: f64,
    pub exit_code: i32,
}

impl RunLine {
    /// Why this run counts as failed (non-zero exit, signal, timeout).
    pub fn failure(&self) -> Option<String> {
        let r = &self.record;
        if r.timed_out {
            Some("timed out".to_string())
        } else if let Some(why) = self.ranks.as_ref().and_then(|k| k.failure.clone()) {
            Some(why)
        } else if let Some(s) = r.exit.signal {
            Some(format!("killed by signal {s} ({})", signal_name(s)))
        } else if r.exit.code != Some(0) {
            Some(format!("exited with code {}", r.exit.shell_code()))
        } else {
            None
        }
    }
}

/// `SIGKILL` for 9, ...
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => "signal",
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Header(Header),
    Run(RunLine),
}

/// [`Line`] for writing, without a copy.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum LineRef<'a> {
    Header(&'a Header),
    Run(&'a RunLine),
}

impl JsonLine for Header {
    fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&LineRef::Header(self))
    }

    fn from_line(line: &str) -> Result<Header, String> {
        let header = match serde_json::from_str::<Line>(line) {
            Ok(Line::Header(h)) => h,
            Ok(Line::Run(_)) => return Err("a run, not the header".into()),
            Err(e) => {
                return Err(format!(
                    "not a pinsight compare header ({e}); expected \
                     {{\"type\":\"header\",\"schema\":\"{SCHEMA}\",...}}"
                ))
            }
        };
        if header.schema != SCHEMA {
            return Err(format!(
                "schema '{}' is not supported (this pinsight reads {SCHEMA})",
                header.schema
            ));
        }
        Ok(header)
    }
}

impl JsonLine for RunLine {
    fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&LineRef::Run(self))
    }

    fn from_line(line: &str) -> Result<RunLine, String> {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Run(r)) => Ok(r),
            Ok(Line::Header(_)) => Err("a second header".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// [`Header::compact`] with the header's `unavailable` table.
fn compact(unavailable: &BTreeMap<String, String>, line: &RunLine) -> Option<RunLine> {
    let same = |line: &RunLine| {
        let mut line = line.clone();
        let mut any = false;
        for (name, m) in line.record.metrics_mut() {
            if m.reason().is_some() && unavailable.get(name).map(String::as_str) == m.reason() {
                *m = Metric::omitted();
                any = true;
            }
        }
        any.then_some(line)
    };
    if unavailable.is_empty() {
        None
    } else {
        same(line)
    }
}

/// The design's view of the runs read so far: per slot, whether its latest
/// attempt succeeded (a failed slot is retried on resume; a slot that
/// succeeded never runs again).
#[derive(Default)]
pub struct SlotsDone(HashMap<usize, bool>);

impl Design<RunLine> for Header {
    type Seen = SlotsDone;
    type Difference = Difference;

    /// A run belongs to this experiment when its arm is one of the
    /// header's, its slot is in the design (`arms × (warmup + runs)`
    /// slots, warm-up blocks first: phase and block follow from the slot),
    /// the slot has no successful run yet (a disturbed one may be rerun),
    /// and its times are durations.
    /// A metric the line leaves out takes the header's reason
    /// ([`Header::unavailable`]); one the header does not give either (a
    /// line edited by hand) is unavailable, saying so.
    fn complete(&self, r: &mut RunLine) {
        for (name, m) in r.record.metrics_mut() {
            if m.is_omitted() {
                *m = Metric::unavailable(match self.unavailable.get(name) {
                    Some(reason) => reason.as_str(),
                    None => "not in the journal's run line",
                });
            }
        }
    }

    fn check(&self, seen: &mut SlotsDone, r: &RunLine) -> Result<(), String> {
        let arms = self.arms.len();
        if !self.arms.iter().any(|a| a.id == r.arm) {
            let ids: Vec<&str> = self.arms.iter().map(|a| a.id.as_str()).collect();
            return Err(format!(
                "arm '{}' is not in the experiment (its arms: {})",
                r.arm,
                ids.join(", ")
            ));
        }
        let slots = self
            .runs
            .checked_add(self.warmup)
            .and_then(|n| n.checked_mul(arms))
            .unwrap_or(usize::MAX);
        if r.slot >= slots {
            return Err(format!(
                "slot {} is out of range (the design has slots 0-{})",
                r.slot,
                slots.saturating_sub(1)
            ));
        }
        let block = r.slot / arms;
        let (phase, rep) = if block < self.warmup {
            (Phase::Warmup, block)
        } else {
            (Phase::Measured, block - self.warmup)
        };
        if r.phase != phase || r.rep != rep {
            return Err(format!(
                "slot {} is {phase:?} block {rep} in the design, the run says {:?} block {}",
                r.slot, r.phase, r.rep
            ));
        }
        let rec = &r.record;
        let mut times = vec![
            ("wall_s", rec.wall_s),
            ("user_s", rec.user_s),
            ("sys_s", rec.sys_s),
        ];
        if let Some(k) = &r.ranks {
            times.push(("launcher_wall_s", k.launcher_wall_s));
            times.extend(k.ranks.iter().map(|x| ("ranks wall_s", x.wall_s)));
        }
        if let Some((name, t)) = times.iter().find(|(_, t)| !(t.is_finite() && *t >= 0.0)) {
            return Err(format!("{name} {t} is not a duration (finite, 0 or more)"));
        }
        if !r.started_unix.is_finite() {
            return Err(format!("started_unix {} is not a time", r.started_unix));
        }
        if seen.0.get(&r.slot) == Some(&true) {
            return Err(format!(
                "slot {} ({}) is recorded twice: it already has a successful, undisturbed run",
                r.slot, r.arm
            ));
        }
        // A disturbed run may be followed by its rerun (`--rerun-disturbed`).
        let disturbed = r.record.disturbed();
        seen.0.insert(r.slot, r.failure().is_none() && !disturbed);
        Ok(())
    }

    fn mismatch(&self, now: &Header) -> Vec<Difference> {
        Header::mismatch(self, now)
    }
}

/// A journal read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Journal {
    pub header: Header,
    /// Every run line in file order (a retried slot appears more than once).
    pub runs: Vec<RunLine>,
    /// Lines that could not be read (a line cut by a crash), as sentences.
    pub warnings: Vec<String>,
}

impl Journal {
    /// Reads `path` without locking it. Errors (as one sentence naming the
    /// file and line) when it cannot be read, its first line is not a
    /// pinsight-compare header, or a run is not of its design.
    pub fn read(path: &Path) -> Result<Journal, JournalError> {
        lj::Journal::<Header, RunLine>::read(path).map(Journal::from)
    }
}

impl From<lj::Contents<Header, RunLine>> for Journal {
    fn from(c: lj::Contents<Header, RunLine>) -> Journal {
        Journal {
            header: c.header,
            runs: c.records,
            warnings: c.warnings.iter().map(ToString::to_string).collect(),
        }
    }
}

/// Appends run lines to a locked journal, each written whole before
/// [`JournalWriter::append`] returns and synced to disk in batches (see
/// [`pinsight_lifecycle::journal`]'s guarantees).
#[derive(Debug)]
pub struct JournalWriter(lj::Journal<Header, RunLine>, BTreeMap<String, String>);

impl JournalWriter {
    /// Creates a new journal with `header`; refuses to overwrite a file.
    pub fn create(path: &Path, header: &Header) -> Result<JournalWriter, JournalError> {
        lj::Journal::create(path, header).map(|j| JournalWriter(j, header.unavailable.clone()))
    }

    /// Creates a new journal named `{stem}.jsonl` in `dir`, or
    /// `{stem}-2.jsonl`, `{stem}-3.jsonl`, ... when that exists: each
    /// name is claimed atomically (`O_EXCL`), so two experiments started
    /// in the same second never share (or fail on) a journal.
    pub fn create_unique(
        dir: &Path,
        stem: &str,
        header: &Header,
    ) -> Result<JournalWriter, JournalError> {
        lj::Journal::create_unique(dir, stem, header)
            .map(|j| JournalWriter(j, header.unavailable.clone()))
    }

    /// Continues an existing journal: locks it (refusing one another
    /// process is writing, naming its pid), reads it under the lock and
    /// cuts a fragment off its end.
    pub fn resume(path: &Path) -> Result<(JournalWriter, Journal), JournalError> {
        lj::Journal::resume(path).map(|(w, c)| {
            let j = Journal::from(c);
            (JournalWriter(w, j.header.unavailable.clone()), j)
        })
    }

    /// Appends one run (synced with the batch it belongs to), leaving out
    /// what the header gives for every run ([`Header::compact`]).
    pub fn append(&mut self, run: &RunLine) -> Result<(), JournalError> {
        match compact(&self.1, run) {
            Some(line) => self.0.append(&line),
            None => self.0.append(run),
        }
    }

    /// The end of the experiment: waits for the batch of runs being
    /// synced, starts none ([`pinsight_lifecycle::journal::Journal::finish`]: what is left was
    /// appended within the last `SYNC_INTERVAL`).
    pub fn finish(&mut self) -> Result<(), JournalError> {
        self.0.finish()
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_measure::CounterMetrics;

    #[test]
    fn a_difference_names_the_input_that_sets_it() {
        let d = |field| Difference {
            field,
            journal: "3".into(),
            now: "5".into(),
        };
        let name = |i: Input| if i == Input::Runs { "RUNS" } else { "OTHER" };
        assert_eq!(d(Field::Runs).named(&name), "RUNS: journal has 3, now 5");
        // The command is no input to name: the difference says it.
        let command = d(Field::Command);
        assert_eq!(command.named(&name), command.to_string());
    }

    pub(crate) fn header() -> Header {
        Header {
            schema: SCHEMA.into(),
            pinsight_version: "0.1.0".into(),
            created: "2025-01-01T00:00:00Z".into(),
            command: vec!["true".into()],
            prepare: None,
            policies: vec!["os".into(), "e-set".into()],
            governors: vec![],
            threads: Some(2),
            oversubscribe: false,
            latency: None,
            weights: None,
            mem: None,
            near: None,
            runs: 3,
            warmup: 1,
            seed: 1,
            timeout_s: None,
            arms: vec![ArmHeader {
                id: "os".into(),
                policy: "os".into(),
                governor: None,
                plan: ArmPlan {
                    policy: "os".into(),
                    threads: 2,
                    process_mask: CpuSet::parse_list("0-1").unwrap(),
                    places: vec![],
                    pinned: false,
                    memory: None,
                },
                env: vec![("OMP_NUM_THREADS".into(), "2".into())],
                notes: vec![],
            }],
            not_applicable: vec![NotApplicable {
                what: "e-set".into(),
                reason: "one kind".into(),
            }],
            machine: Machine::default(),
            kind: None,
            extension: None,
            metrics: Vec::new(),
            unavailable: BTreeMap::new(),
        }
    }

    #[test]
    fn a_different_memory_policy_is_a_different_placement() {
        let a = header();
        let mut b = header();
        b.arms[0].plan.memory = Some("bind:0".into());
        assert_eq!(
            b.arms[0].plan.describe(),
            "CPUs 0-1 (OS decides), memory bind:0"
        );
        let d = a.mismatch(&b);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].field, Field::Placement("os".into()));
        assert!(d[0].now.ends_with("memory bind:0"));
        // Journals written before memory policies existed still load.
        let line = serde_json::to_string(&a).unwrap();
        assert!(!line.contains("\"memory\""));
        let back: Header = serde_json::from_str(&line).unwrap();
        assert_eq!(back.arms[0].plan.memory, None);
    }

    #[test]
    fn default_names_never_collide() {
        let d = tempfile::tempdir().unwrap();
        let h = header();
        let a = JournalWriter::create_unique(d.path(), "pinsight-compare-x", &h).unwrap();
        let b = JournalWriter::create_unique(d.path(), "pinsight-compare-x", &h).unwrap();
        assert_ne!(a.path(), b.path());
        assert!(b.path().ends_with("pinsight-compare-x-2.jsonl"));
        assert_eq!(Journal::read(b.path()).unwrap().header, h);
    }

    fn run(slot: usize, wall: f64) -> RunLine {
        let mut counters = CounterMetrics::unavailable("no PMU");
        counters.task_clock_ms = Metric::Value(1.5);
        RunLine {
            slot,
            arm: "os".into(),
            // One arm, one warm-up block: slot 0 warms up.
            phase: if slot == 0 {
                Phase::Warmup
            } else {
                Phase::Measured
            },
            rep: slot.saturating_sub(1),
            started_unix: 1.0,
            ranks: None,
            output: None,
            metrics: BTreeMap::new(),
            record: RunRecord {
                user_s: 0.001,
                max_rss_kib: 1000,
                max_rss_floor_kib: 900,
                counters,
                ..RunRecord::exited_ok(wall, "no RAPL")
            },
        }
    }

    #[test]
    fn round_trip_and_cut_last_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        let mut w = JournalWriter::create(&p, &header()).unwrap();
        w.append(&run(0, 0.5)).unwrap();
        w.append(&run(1, 0.6)).unwrap();
        // Locked while written.
        assert!(matches!(
            JournalWriter::resume(&p),
            Err(JournalError::Locked { pid: Some(_), .. })
        ));
        drop(w);
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.header, header());
        assert_eq!(j.runs, vec![run(0, 0.5), run(1, 0.6)]);
        assert!(j.warnings.is_empty());
        // A crash mid-line.
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("{\"type\":\"run\",\"slot\":2,\"ar");
        std::fs::write(&p, &text).unwrap();
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.runs.len(), 2);
        assert!(
            j.warnings[0].contains("line 4: cut short"),
            "{:?}",
            j.warnings
        );
        let (mut w, j) = JournalWriter::resume(&p).unwrap();
        assert_eq!(j.warnings.len(), 1);
        w.append(&run(2, 0.7)).unwrap();
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.runs.len(), 3);
        assert!(j.warnings.is_empty());
        // Never overwritten.
        let e = JournalWriter::create(&p, &header()).unwrap_err();
        assert!(matches!(e, JournalError::Exists { .. }), "{e}");
    }

    /// The `unavailable` table a measurer without PMU or RAPL gives
    /// (the reasons of [`run`]'s record).
    fn no_pmu_no_rapl() -> BTreeMap<String, String> {
        let mut t = BTreeMap::new();
        for k in pinsight_measure::PMU_METRICS {
            t.insert(k.to_string(), "no PMU".to_string());
        }
        for k in pinsight_measure::ENERGY_METRICS {
            t.insert(k.to_string(), "no RAPL".to_string());
        }
        t
    }

    #[test]
    fn run_lines_leave_the_headers_reasons_out_and_read_back_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        let mut h = header();
        h.unavailable = no_pmu_no_rapl();
        // A reason the table does not give stays in the line.
        h.unavailable
            .insert("task_clock_ms".into(), "counters off".into());
        let mut w = JournalWriter::create(&p, &h).unwrap();
        let mut odd = run(2, 0.7);
        odd.record.counters.cycles = Metric::unavailable("read failed");
        for r in [run(0, 0.5), run(1, 0.6), odd.clone()] {
            w.append(&r).unwrap();
        }
        drop(w);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains(r#""unavailable":{"avg_ghz":"no PMU""#),
            "{}",
            lines[0]
        );
        assert!(!lines[1].contains("no RAPL"), "{}", lines[1]);
        assert!(!lines[1].contains("\"cycles\""), "{}", lines[1]);
        // Measured values are always written.
        assert!(lines[1].contains(r#""task_clock_ms":1.5"#), "{}", lines[1]);
        assert!(
            lines[3].contains(r#""cycles":{"unavailable":"read failed"}"#),
            "{}",
            lines[3]
        );
        assert!(
            lines[1].len() * 2
                < serde_json::to_string(&Line::Run(run(0, 0.5)))
                    .unwrap()
                    .len()
        );
        // Read back: every record exactly as measured.
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.runs, vec![run(0, 0.5), run(1, 0.6), odd]);
        // Resumed, the journal's own table is used.
        let (mut w, j) = JournalWriter::resume(&p).unwrap();
        assert_eq!(j.header.unavailable, h.unavailable);
        w.append(&run(3, 0.8)).unwrap();
        drop(w);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.lines().last().unwrap().contains("\"cycles\""));
        assert_eq!(Journal::read(&p).unwrap().runs[3], run(3, 0.8));
    }

    #[test]
    fn journals_without_the_table_keep_and_read_every_metric() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        // A journal written before the table: full lines, read as ever.
        let full = serde_json::to_string(&Line::Run(run(0, 0.5))).unwrap();
        let old_header = header().to_line().unwrap();
        assert!(!old_header.contains("\"unavailable\""));
        std::fs::write(&p, format!("{old_header}\n{full}\n")).unwrap();
        assert_eq!(Journal::read(&p).unwrap().runs, vec![run(0, 0.5)]);
        // Appending to it writes full lines too.
        let (mut w, _) = JournalWriter::resume(&p).unwrap();
        w.append(&run(1, 0.6)).unwrap();
        drop(w);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text
            .lines()
            .nth(2)
            .unwrap()
            .contains(r#""cycles":{"unavailable":"no PMU"}"#));
        // A metric missing from a line with no table entry is said to be
        // missing, never a number.
        let cut = full.replace(r#""cycles":{"unavailable":"no PMU"},"#, "");
        std::fs::write(&p, format!("{old_header}\n{cut}\n")).unwrap();
        let j = Journal::read(&p).unwrap();
        assert_eq!(
            j.runs[0].record.counters.cycles,
            Metric::unavailable("not in the journal's run line")
        );
    }

    #[test]
    fn runs_outside_the_design_are_refused() {
        let h = header();
        let mut seen = SlotsDone::default();
        h.check(&mut seen, &run(0, 0.5)).unwrap();
        let e = h.check(&mut seen, &run(0, 0.5)).unwrap_err();
        assert!(e.contains("slot 0 (os) is recorded twice"), "{e}");
        // A failed attempt may be retried.
        let mut failed = run(1, 0.5);
        failed.record.exit.code = Some(1);
        h.check(&mut seen, &failed).unwrap();
        h.check(&mut seen, &run(1, 0.5)).unwrap();
        let mut other = run(2, 0.5);
        other.arm = "p-set".into();
        let e = h.check(&mut seen, &other).unwrap_err();
        assert!(e.contains("arm 'p-set' is not in the experiment"), "{e}");
        // 1 arm x (3 runs + 1 warm-up): slots 0-3.
        let e = h.check(&mut seen, &run(4, 0.5)).unwrap_err();
        assert!(e.contains("slot 4 is out of range"), "{e}");
        let e = h.check(&mut seen, &run(2, -0.5)).unwrap_err();
        assert!(e.contains("wall_s -0.5"), "{e}");
        let e = h.check(&mut seen, &run(2, f64::NAN)).unwrap_err();
        assert!(e.contains("wall_s NaN"), "{e}");
    }

    #[test]
    fn unavailable_metrics_keep_their_reason_in_the_journal() {
        let line = serde_json::to_string(&Line::Run(run(0, 0.5))).unwrap();
        assert!(
            line.contains(r#""cycles":{"unavailable":"no PMU"}"#),
            "{line}"
        );
        assert!(line.contains(r#""task_clock_ms":1.5"#), "{line}");
        assert!(line.starts_with(r#"{"type":"run","slot":0"#), "{line}");
    }

    #[test]
    fn bad_journals_are_refused_with_the_reason() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        let read = |text: &str| {
            std::fs::write(&p, text).unwrap();
            Journal::read(&p).unwrap_err()
        };
        assert!(matches!(read(""), JournalError::Empty { .. }));
        assert!(read("{\"a\":1}\n")
            .to_string()
            .contains("line 1: not a pinsight compare header"));
        let mut h = header();
        h.schema = "pinsight-compare/99".into();
        assert!(read(&(h.to_line().unwrap() + "\n"))
            .to_string()
            .contains("schema 'pinsight-compare/99' is not supported"));
        // A run outside the design is refused, naming its line.
        let mut other = run(1, 0.5);
        other.arm = "p-set".into();
        let text = format!(
            "{}\n{}\n",
            header().to_line().unwrap(),
            other.to_line().unwrap()
        );
        assert!(matches!(read(&text), JournalError::Record { line: 2, .. }));
    }

    #[test]
    fn a_run_line_that_does_not_read_is_skipped_and_the_rest_reports() {
        // What a pinsight that wrote `1e999` from a run's output as a
        // figure left: `null`, which no f64 reads.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k1.jsonl");
        let mut bad = run(1, 0.6);
        bad.output = Some(RunOutputRef {
            path: "k1.jsonl.out/arm-os-run-1.txt".into(),
            bytes: 13,
            cut_bytes: 0,
            figures: vec![crate::program_metric::Figure("took".into(), 7.0)],
        });
        let bad = serde_json::to_string(&Line::Run(bad))
            .unwrap()
            .replace(r#"["took",7.0]"#, r#"["took",null]"#);
        assert!(bad.contains("null"), "{bad}");
        let text = format!(
            "{}\n{}\n{bad}\ngarbage\n{}\n",
            header().to_line().unwrap(),
            serde_json::to_string(&Line::Run(run(0, 0.5))).unwrap(),
            serde_json::to_string(&Line::Run(run(2, 0.7))).unwrap(),
        );
        std::fs::write(&p, &text).unwrap();
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.runs, vec![run(0, 0.5), run(2, 0.7)]);
        assert_eq!(j.warnings.len(), 2, "{:?}", j.warnings);
        assert!(
            j.warnings[0].starts_with("line 3: not a record: invalid type: null, expected f64"),
            "{:?}",
            j.warnings
        );
        assert!(j.warnings[1].starts_with("line 4: not a record"));
        // Resumed: slot 1 may run again, and reads back.
        let (mut w, j) = JournalWriter::resume(&p).unwrap();
        assert_eq!(j.runs.len(), 2);
        w.append(&run(1, 0.6)).unwrap();
        drop(w);
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.runs, vec![run(0, 0.5), run(2, 0.7), run(1, 0.6)]);
    }

    #[test]
    fn a_run_that_would_not_read_back_is_not_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        let mut w = JournalWriter::create(&p, &header()).unwrap();
        let mut bad = run(0, 0.5);
        bad.output = Some(RunOutputRef {
            path: String::new(),
            bytes: 0,
            cut_bytes: 0,
            figures: vec![crate::program_metric::Figure("took".into(), f64::INFINITY)],
        });
        let e = w.append(&bad).unwrap_err();
        assert!(matches!(e, JournalError::RoundTrip { .. }), "{e}");
        bad.output = None;
        bad.record.counters.ipc = Metric::Value(f64::NAN);
        assert!(matches!(
            w.append(&bad).unwrap_err(),
            JournalError::RoundTrip { .. }
        ));
        w.append(&run(0, 0.5)).unwrap();
        drop(w);
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.runs, vec![run(0, 0.5)]);
        assert!(j.warnings.is_empty());
    }

    #[test]
    fn mismatch_names_what_differs() {
        let a = header();
        assert_eq!(a.mismatch(&a.clone()), vec![]);
        let mut b = a.clone();
        b.command = vec!["false".into()];
        b.runs = 5;
        let m = a.mismatch(&b);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m[0].to_string(), "command: journal has `true`, now `false`");
        assert_eq!(
            m[1],
            Difference {
                field: Field::Runs,
                journal: "3".into(),
                now: "5".into()
            }
        );
    }
}
