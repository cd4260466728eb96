//! Program metrics: a figure the measured program prints about itself
//! (events per second, MIPS, bogo ops/s, a time it measured), taken from
//! each run's output (stdout and stderr together) and analysed beside
//! wall time. Pure: text in, numbers out, no I/O.
//!
//! A metric is written `NAME=REGEX[,unit=U][,better=higher|lower]` (the
//! regular expression has exactly one capture group, the number; its last
//! match in the output counts), `NAME=json:PATH[,...]` for a program that
//! prints JSON (PATH is a JSON pointer `/results/0/mean` or a dotted path
//! `results.0.mean`), or a preset's name alone ([`PRESETS`]). A run whose
//! output lacks the figure has no value for it, with the reason: it is a
//! failed measurement of that metric, never a zero.

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Which direction is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// A rate: events/s, MIPS, bogo ops/s.
    Higher,
    /// A time or a cost.
    Lower,
}

impl Better {
    pub fn word(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

/// Where the figure is in the output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A regular expression with one capture group; its last match counts.
    Regex(String),
    /// A JSON pointer (`/a/0/b`) or dotted path (`a.0.b`) into the last
    /// JSON document in the output that has it.
    Json(String),
}

/// One program metric (as the journal's header keeps it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Key in the journal, JSON and CSV: letters, digits, `_`, `-`, `.`.
    pub name: String,
    pub source: Source,
    /// Free text shown after the numbers (`events/s`, `MIPS`, `s`).
    #[serde(default)]
    pub unit: String,
    pub better: Better,
    /// The preset this metric came from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// A preset's secondary figure: a run without it is not a failed
    /// measurement (the program's mode may not print it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// Why a metric definition is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("'{0}': expected NAME=REGEX[,unit=U][,better=higher|lower], NAME=json:PATH[,...] or a preset ({1})")]
    Form(String, String),
    #[error("'{0}': the name may hold letters, digits, '_', '-' and '.' only")]
    Name(String),
    #[error("'{name}': the name is taken by a measured metric; choose another")]
    Reserved { name: String },
    #[error("'{0}': {1}")]
    Regex(String, String),
    #[error(
        "'{0}': the regular expression needs exactly one capture group, the number (it has {1})"
    )]
    Groups(String, usize),
    #[error("'{0}': better must be higher or lower")]
    Better(String),
    #[error("'{0}': empty JSON path")]
    Path(String),
    #[error("'{0}': a JSON pointer escapes only ~0 (for ~) and ~1 (for /), not '{1}'")]
    Pointer(String, String),
}

/// A built-in preset: a tool users run, and the figures it prints.
pub struct Preset {
    pub name: &'static str,
    /// What to run for it, e.g. `sysbench cpu run`.
    pub example: &'static str,
    /// (name, regex, unit, better, optional); the first is the headline figure.
    metrics: &'static [(&'static str, &'static str, &'static str, Better, bool)],
    /// Program names (argv\[0\]'s file name) it recognises.
    pub programs: &'static [&'static str],
}

/// The presets, each checked against the real output of the Debian
/// package's program (tests/fixtures/output).
pub const PRESETS: &[Preset] = &[
    // sysbench 1.0 (`sysbench cpu run`): "events per second: N" under
    // "CPU speed:", and the "Latency (ms):" block (avg, 95th percentile).
    Preset {
        name: "sysbench",
        example: "sysbench cpu --threads=2 --time=1 run",
        metrics: &[
            (
                "events_per_s",
                r"events per second:\s*([0-9.]+)",
                "events/s",
                Better::Higher,
                false,
            ),
            (
                "latency_avg_ms",
                r"(?m)^\s*avg:\s*([0-9.]+)\s*$",
                "ms",
                Better::Lower,
                true,
            ),
            (
                "latency_p95_ms",
                r"95th percentile:\s*([0-9.]+)",
                "ms",
                Better::Lower,
                true,
            ),
        ],
        programs: &["sysbench"],
    },
    // 7-Zip's benchmark (`7zz b`): the "Tot:" line's last column is the
    // total rating in MIPS (7-Zip's bench.htm, "Tot" = average of the
    // compression and decompression ratings).
    Preset {
        name: "7zip",
        example: "7zz b",
        metrics: &[(
            "rating_mips",
            r"(?m)^Tot:.*?([0-9]+)\s*$",
            "MIPS",
            Better::Higher,
            false,
        )],
        programs: &["7zz", "7z", "7za", "7zr"],
    },
    // stress-ng with --metrics or --metrics-brief: the first stressor's
    // line, column "bogo ops/s (real time)" (stress-ng(1), --metrics).
    Preset {
        name: "stress-ng",
        example: "stress-ng --cpu 2 --timeout 1s --metrics-brief",
        metrics: &[(
            "bogo_ops_per_s",
            r"(?m)\]\s+[A-Za-z][\w-]*\s+[0-9]+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+[0-9.]+",
            "bogo ops/s",
            Better::Higher,
            false,
        )],
        programs: &["stress-ng"],
    },
    // hyperfine's JSON export written to stdout (`--export-json
    // /dev/stdout --style none`): the first command's mean time.
    Preset {
        name: "hyperfine",
        example: "hyperfine -N --style none --export-json /dev/stdout 'CMD'",
        metrics: &[("mean_s", "json:/results/0/mean", "s", Better::Lower, false)],
        programs: &["hyperfine"],
    },
];

/// The preset that knows `program` (a path or a name), if any.
pub fn preset_for(program: &str) -> Option<&'static Preset> {
    let name = program.rsplit('/').next().unwrap_or(program);
    PRESETS.iter().find(|p| p.programs.contains(&name))
}

impl Preset {
    /// The preset's metrics.
    pub fn specs(&self) -> Vec<MetricSpec> {
        self.metrics
            .iter()
            .map(|&(name, src, unit, better, optional)| MetricSpec {
                name: name.into(),
                source: match src.strip_prefix("json:") {
                    Some(p) => Source::Json(p.into()),
                    None => Source::Regex(src.into()),
                },
                unit: unit.into(),
                better,
                preset: Some(self.name.into()),
                optional,
            })
            .collect()
    }
}

fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses one `--metric` value into its metrics (a preset gives several).
/// `reserved` are names taken by measured metrics (`wall_s`, ...).
pub fn parse(text: &str, reserved: &[&str]) -> Result<Vec<MetricSpec>, SpecError> {
    if let Some(p) = PRESETS.iter().find(|p| p.name == text) {
        return Ok(p.specs());
    }
    let Some((name, rest)) = text.split_once('=') else {
        return Err(SpecError::Form(text.into(), preset_names()));
    };
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(SpecError::Name(text.into()));
    }
    if reserved.contains(&name) {
        return Err(SpecError::Reserved { name: name.into() });
    }
    // Options come last; the expression itself may hold commas.
    let mut body = rest;
    let (mut unit, mut better) = (String::new(), Better::Lower);
    let mut better_given = false;
    while let Some((head, opt)) = body.rsplit_once(',') {
        if let Some(u) = opt.strip_prefix("unit=") {
            unit = u.trim().to_string();
        } else if let Some(b) = opt.strip_prefix("better=") {
            better = match b.trim() {
                "higher" => Better::Higher,
                "lower" => Better::Lower,
                _ => return Err(SpecError::Better(text.into())),
            };
            better_given = true;
        } else {
            break;
        }
        body = head;
    }
    let source = match body.strip_prefix("json:") {
        Some(path) if path.trim().is_empty() => return Err(SpecError::Path(text.into())),
        Some(path) => {
            let path = path.trim();
            if let Some(bad) = bad_escape(path) {
                return Err(SpecError::Pointer(text.into(), bad));
            }
            Source::Json(path.to_string())
        }
        None => {
            let re = Regex::new(body).map_err(|e| SpecError::Regex(text.into(), first_line(&e)))?;
            let groups = re.captures_len() - 1;
            if groups != 1 {
                return Err(SpecError::Groups(text.into(), groups));
            }
            Source::Regex(body.to_string())
        }
    };
    // A rate unit reads "per": events/s, ops/sec, MB/s are better higher.
    if !better_given && unit.contains('/') {
        better = Better::Higher;
    }
    Ok(vec![MetricSpec {
        name: name.into(),
        source,
        unit,
        better,
        preset: None,
        optional: false,
    }])
}

/// The first escape a JSON pointer (`/a/~1b`) may not hold: RFC 6901
/// gives `~` a meaning only before `0` (`~`) and `1` (`/`); anything
/// else (`~2`, a `~` at the end) names no key. A dotted path has no
/// escapes (its `~` is a key's own).
fn bad_escape(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0' | '1') => {}
                Some(other) => return Some(format!("~{other}")),
                None => return Some("~".into()),
            }
        }
    }
    None
}

fn first_line(e: &regex::Error) -> String {
    let t = e.to_string();
    t.lines()
        .filter(|l| l.starts_with("error:"))
        .map(str::to_string)
        .next()
        .unwrap_or_else(|| t.lines().last().unwrap_or("invalid").to_string())
}

impl MetricSpec {
    /// The figure in `output`, or why there is none (named: the metric
    /// and what was looked for).
    pub fn extract(&self, output: &str) -> Result<f64, String> {
        match &self.source {
            Source::Regex(re) => {
                let re = Regex::new(re).map_err(|e| first_line(&e))?;
                let Some(c) = re.captures_iter(output).last() else {
                    return Err(format!("no match for /{re}/ in the output"));
                };
                let text = c.get(1).map_or("", |m| m.as_str()).trim();
                number(text).map_err(|why| format!("/{re}/ matched '{text}', {why}"))
            }
            Source::Json(path) => json_figure(output, path),
        }
    }

    /// How the source reads for humans: `/regex/` or `json:/a/b`.
    pub fn source_text(&self) -> String {
        match &self.source {
            Source::Regex(r) => format!("/{r}/"),
            Source::Json(p) => format!("json:{p}"),
        }
    }
}

/// A number as programs print it: `1234`, `12.5`, `1e3`, `1,234.5`;
/// finite (`1e999` reads as infinity, which no figure is and JSON cannot
/// hold), else why not, in words that follow the text.
fn number(text: &str) -> Result<f64, String> {
    let t: String = text.chars().filter(|&c| c != ',' && c != '_').collect();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!("not finite: {text}")),
        Err(_) => Err("not a number".into()),
    }
}

/// The JSON documents in `output`: the whole of it, else every line that
/// is one, else the text from the first `{` to the last `}`.
fn json_docs(output: &str) -> Vec<serde_json::Value> {
    if let Ok(v) = serde_json::from_str(output.trim()) {
        return vec![v];
    }
    let mut docs: Vec<serde_json::Value> = output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{') || l.starts_with('['))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if docs.is_empty() {
        if let (Some(a), Some(b)) = (output.find('{'), output.rfind('}')) {
            if a < b {
                docs.extend(serde_json::from_str(&output[a..=b]).ok());
            }
        }
    }
    docs
}

/// `results.0.mean` → `/results/0/mean` (a pointer stays as it is).
fn pointer(path: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    path.split('.')
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn json_figure(output: &str, path: &str) -> Result<f64, String> {
    let docs = json_docs(output);
    if docs.is_empty() {
        // Say why text that looks like JSON is none (`1e999` is out of
        // range for JSON's numbers).
        let why = match (output.find('{'), output.rfind('}')) {
            (Some(a), Some(b)) if a < b => {
                serde_json::from_str::<serde_json::Value>(&output[a..=b])
                    .err()
                    .map_or(String::new(), |e| format!(": {e}"))
            }
            _ => String::new(),
        };
        return Err(format!("no JSON in the output (looked for {path}){why}"));
    }
    let ptr = pointer(path);
    let Some(v) = docs.iter().rev().find_map(|d| d.pointer(&ptr)) else {
        return Err(format!("no {path} in the output's JSON"));
    };
    match v {
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(v) if v.is_finite() => Ok(v),
            _ => Err(format!("{path} is {n}, not finite")),
        },
        serde_json::Value::String(s) => {
            number(s).map_err(|why| format!("{path} is \"{s}\", {why}"))
        }
        other => Err(format!("{path} is {other}, not a number")),
    }
}

/// Most figures kept per run by [`figures_in`].
pub const MAX_FIGURES: usize = 48;

/// One number a run printed, with what precedes it on its line (numbers
/// there written `#`, spaces collapsed, at most 48 characters):
/// `("events per second:", 10305.51)`. The same label in two runs is the
/// same figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure(pub String, pub f64);

/// The last [`MAX_FIGURES`] numbers of `output`, labelled (see
/// [`Figure`]); a label that repeats gets ` (2)`, ` (3)`, .... Numbers in
/// square brackets (process ids in log prefixes) are left out.
pub fn figures_in(output: &str) -> Vec<Figure> {
    // Compiled once per process: this runs on every run's output.
    static NUM: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"[-+]?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?").expect("valid")
    });
    let num = &*NUM;
    let mut out: Vec<Figure> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for line in output.lines() {
        for m in num.find_iter(line) {
            let before = &line[..m.start()];
            if before.ends_with('[') {
                continue;
            }
            // `1e999` parses as infinity: not a figure (JSON cannot hold
            // it, and no run's figure compares with it).
            let Some(v) = m.as_str().parse::<f64>().ok().filter(|v| v.is_finite()) else {
                continue;
            };
            let label = num.replace_all(before, "#");
            let label = label.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut = label.char_indices().rev().nth(47).map_or(0, |(i, _)| i);
            let mut label = label[cut..].to_string();
            let n = seen.entry(label.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                label = format!("{label} ({n})");
            }
            out.push(Figure(label, v));
        }
    }
    let skip = out.len().saturating_sub(MAX_FIGURES);
    out.split_off(skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        let m = parse(r"ops=ops: ([0-9]+),unit=op/s", &[]).unwrap();
        assert_eq!(m[0].name, "ops");
        assert_eq!(m[0].unit, "op/s");
        assert_eq!(
            m[0].better,
            Better::Higher,
            "a rate unit defaults to higher"
        );
        let m = parse(r"t=took (\d{1,3}) ms,better=lower,unit=ms", &[]).unwrap();
        assert_eq!(m[0].source, Source::Regex(r"took (\d{1,3}) ms".into()));
        assert_eq!(m[0].better, Better::Lower);
        let m = parse("mean=json:results.0.mean,unit=s", &[]).unwrap();
        assert_eq!(m[0].source, Source::Json("results.0.mean".into()));
        assert_eq!(parse("sysbench", &[]).unwrap().len(), 3);
        assert!(matches!(parse("x", &[]), Err(SpecError::Form(..))));
        assert!(matches!(parse("a b=x(1)", &[]), Err(SpecError::Name(_))));
        assert!(matches!(
            parse("wall_s=(1)", &["wall_s"]),
            Err(SpecError::Reserved { .. })
        ));
        assert!(matches!(
            parse("x=(1)(2)", &[]),
            Err(SpecError::Groups(_, 2))
        ));
        assert!(matches!(parse("x=abc", &[]), Err(SpecError::Groups(_, 0))));
        assert!(matches!(parse("x=(", &[]), Err(SpecError::Regex(..))));
        assert!(matches!(
            parse("x=(1),better=up", &[]),
            Err(SpecError::Better(_))
        ));
        assert!(matches!(parse("x=json:", &[]), Err(SpecError::Path(_))));
    }

    #[test]
    fn extraction_names_what_is_missing() {
        let m = &parse(r"x=x=([0-9.]+)", &[]).unwrap()[0];
        assert_eq!(m.extract("x=1\nx=2.5\n"), Ok(2.5), "the last match counts");
        let e = m.extract("nothing").unwrap_err();
        assert!(e.contains("no match for /x=([0-9.]+)/"), "{e}");
        let j = &parse("m=json:/a/1", &[]).unwrap()[0];
        assert_eq!(j.extract("log line\n{\"a\":[1,2]}\n"), Ok(2.0));
        assert!(j.extract("{\"a\":[1]}").unwrap_err().contains("no /a/1"));
        assert!(j.extract("plain").unwrap_err().contains("no JSON"));
        assert_eq!(number("1,234.5"), Ok(1234.5));
    }

    #[test]
    fn a_figure_that_is_not_finite_is_a_failed_measurement() {
        let m = &parse(r"x=v=([\d.e+-]+)", &[]).unwrap()[0];
        for out in ["v=1e999", "v=-1e400"] {
            let e = m.extract(out).unwrap_err();
            let text = &out[2..];
            assert!(
                e.ends_with(&format!("matched '{text}', not finite: {text}")),
                "{e}"
            );
        }
        let j = &parse("m=json:/a", &[]).unwrap()[0];
        let e = j.extract(r#"{"a": "1e999"}"#).unwrap_err();
        assert_eq!(e, r#"/a is "1e999", not finite: 1e999"#);
        let e = j.extract(r#"{"a": 1e999}"#).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        // The labelled figures leave it out; the finite ones stay.
        let f = figures_in("took 1e999 s\nx -1e400 y 2.5\n");
        assert_eq!(f, vec![Figure("x # y".into(), 2.5)]);
        assert!(f.iter().all(|f| f.1.is_finite()));
    }

    #[test]
    fn a_json_pointer_escapes_only_tilde_0_and_1() {
        for bad in ["x=json:/a/~2", "x=json:/a~", "x=json:/~x/b,unit=s"] {
            let e = parse(bad, &[]).unwrap_err();
            assert!(matches!(e, SpecError::Pointer(..)), "{bad}: {e}");
            assert_eq!(e.to_string().lines().count(), 1);
        }
        assert!(parse("x=json:/a/~2", &[])
            .unwrap_err()
            .to_string()
            .contains("not '~2'"));
        let ok = &parse("x=json:/a~1b/~0c", &[]).unwrap()[0];
        assert_eq!(ok.extract(r#"{"a/b": {"~c": 3}}"#), Ok(3.0));
        // A dotted path has no escapes: `~` is part of a key.
        let dotted = &parse("x=json:a~2.b", &[]).unwrap()[0];
        assert_eq!(dotted.extract(r#"{"a~2": {"b": 4}}"#), Ok(4.0));
    }

    #[test]
    fn presets_know_their_programs() {
        assert_eq!(preset_for("/usr/bin/sysbench").unwrap().name, "sysbench");
        assert_eq!(preset_for("7zz").unwrap().name, "7zip");
        assert!(preset_for("true").is_none());
    }
}
