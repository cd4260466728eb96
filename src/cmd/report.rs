//! `pinsight report`: the main job. Discovers the machine, measures
//! core-to-core latency and per-CPU speed within a time budget, writes one
//! self-contained HTML page and its JSON, and prints what to do.

use crate::{
    cli::check_output_file, cli::parse_duration, cli::Globals, errors::CliError, errors::CmdResult,
};
use pinsight_latency::LoadMatrix;
use pinsight_latency_model::LatencyMatrix;
use pinsight_render::report::{html, terminal_summary};
use pinsight_report::budget::{
    secs, split, BudgetInput, NotWanted, Part, Skip, Want, MIN_SPEED_PER_CPU,
};
use pinsight_report::session::{self, Missing};
use pinsight_speed::default_mem_bytes;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One command for the whole picture: topology with core kinds, measured
/// core-to-core latency and latency domains, measured speed of every CPU and
/// the speedup factor between kinds — as an HTML page, JSON, and a short list
/// of concrete suggestions in the terminal.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight report\n  pinsight report --budget 30s --export-html /tmp/box.html\n  pinsight report --latency measured.csv"
)]
pub struct Args {
    /// Total time for the whole report (latency and speed share it; too small a
    /// budget skips them and says what --budget would do).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub budget: Duration,
    /// Write the HTML page to FILE [default: pinsight-report.html]. Every file
    /// is checked before anything is measured: one that cannot be written
    /// (missing directory, no permission) is refused at once (exit 2).
    #[arg(long, value_name = "FILE")]
    pub export_html: Option<PathBuf>,
    /// Write the report as JSON to FILE [default: pinsight-report.json].
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the measured latency matrix to FILE, when latency is measured (for
    /// `pinsight run latency-group --latency FILE`) [default: pinsight-report.latency.json].
    #[arg(long, value_name = "FILE")]
    pub export_latency: Option<PathBuf>,
    /// Deprecated: PREFIX.html, PREFIX.json and PREFIX.latency.json at once.
    #[arg(long, hide = true, value_name = "PREFIX")]
    pub out: Option<PathBuf>,
    /// Use a latency matrix measured elsewhere (core-to-core-latency CSV or pinsight JSON) instead of measuring.
    #[arg(long = "latency", value_name = "FILE")]
    pub latency_from: Option<PathBuf>,
    /// Skip the latency measurement.
    #[arg(long)]
    pub no_latency: bool,
    /// Skip the speed measurement.
    #[arg(long)]
    pub no_speed: bool,
}

fn hostname(g: &Globals) -> Option<String> {
    g.fsroot().ok()?.read_opt("/proc/sys/kernel/hostname")
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let started = Instant::now();
    if args.out.is_some() && !g.quiet {
        eprintln!(
            "pinsight: note: --out is deprecated; use --export-html, --export-json and --export-latency"
        );
    }
    if args.budget.is_zero() {
        return Err(CliError::usage(
            "--budget 0: give a positive duration, e.g. 30s or 2m",
        ));
    }
    let topo = g.topology()?;
    let live = topo.source_is_live();
    let usable = topo.usable();

    // A matrix from a file is loaded first: its errors are the user's, and
    // it takes latency out of the budget.
    let mut latency = latency_from(&args, &topo)?;
    let plan = split(&budget_input(
        &args,
        started,
        usable.len(),
        live,
        latency.is_some(),
    ));
    // Every file this report may write is checked before anything is
    // measured: a typo in --out must not cost the whole budget.
    let (html_path, json_path, matrix_path) = checked_paths(&args, plan.latency.is_some())?;
    let mut skipped: Vec<String> = plan.skipped.iter().map(skip_text).collect();
    // Human output lists what was skipped; with --json stdout is for the
    // data, so a too-small budget is also said on stderr.
    if g.json && !g.quiet {
        for s in plan.skipped.iter().filter(|s| s.is_budget()) {
            eprintln!("pinsight: warning: {}", skip_text(s));
        }
    }

    let measured = session::measure(
        &topo,
        &plan,
        args.budget,
        started,
        default_mem_bytes(&topo),
        &mut crate::cli::progress(g),
    )
    .map_err(|e| CliError::runtime(e.to_string()))?;
    for m in &measured.missing {
        skipped.push(match m {
            Missing::Skip(s) => skip_text(s),
            Missing::LatencyFailed(e) => e.to_string(),
        });
    }
    if measured.latency.is_some() {
        latency = measured.latency;
    }
    // The matrix in a file of its own, for `pinsight run latency-group --latency`:
    // the one given with --latency, else the one just measured.
    let latency_file = match (&args.latency_from, &latency) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(_)) => matrix_path.display().to_string(),
        (None, None) => "FILE".into(),
    };
    let data = session::assemble(
        topo,
        measured.speed,
        latency,
        skipped,
        &latency_file,
        hostname(g),
        args.budget,
        started,
    )
    .with_conditions(measured.virtual_machine, measured.latency_disturbance);
    write_and_show(&args, g, &data, [&html_path, &json_path, &matrix_path])
}

/// Writes the JSON, the matrix (when measured here) and the HTML, then
/// prints the data (`--json`) or the terminal summary.
fn write_and_show(
    args: &Args,
    g: &Globals,
    data: &pinsight_report::ReportData,
    paths: [&PathBuf; 3],
) -> CmdResult {
    let [html_path, json_path, matrix_path] = paths;
    let json =
        serde_json::to_string_pretty(&data).map_err(|e| CliError::runtime(format!("JSON: {e}")))?;
    let write = |path: &std::path::Path, bytes: &[u8]| {
        pinsight_lifecycle::output::write(path, bytes).map_err(|e| CliError::runtime(e.to_string()))
    };
    write(json_path, (json + "\n").as_bytes())?;
    if let (None, Some(m)) = (&args.latency_from, &data.latency) {
        let text =
            serde_json::to_string_pretty(m).map_err(|e| CliError::runtime(format!("JSON: {e}")))?;
        write(matrix_path, (text + "\n").as_bytes())?;
    }
    write(html_path, html(data).as_bytes())?;
    if g.json {
        g.print_json(data)?;
        return Ok(0);
    }
    let written_matrix = (args.latency_from.is_none() && data.latency.is_some())
        .then(|| matrix_path.display().to_string());
    print!(
        "{}",
        terminal_summary(
            data,
            &html_path.display().to_string(),
            &json_path.display().to_string(),
            written_matrix.as_deref(),
            terminal_width()
        )
    );
    Ok(0)
}

/// The matrix of `--latency FILE`, refused when it names CPUs this machine lacks.
fn latency_from(
    args: &Args,
    topo: &pinsight_model::Topology,
) -> Result<Option<LatencyMatrix>, CliError> {
    let Some(path) = &args.latency_from else {
        return Ok(None);
    };
    let m = LatencyMatrix::load(path).map_err(|e| CliError::usage(e.to_string()))?;
    let foreign = m.cpu_set().difference(&topo.online());
    if !foreign.is_empty() {
        return Err(CliError::usage(format!(
            "--latency {}: the matrix has CPU(s) {foreign} that this machine (online {}) lacks: was it measured on another machine?",
            path.display(),
            topo.online()
        )));
    }
    Ok(Some(m))
}

/// What the budget is asked to fit: each part wanted, asked away, given,
/// or impossible on a recorded machine.
fn budget_input(
    args: &Args,
    started: Instant,
    cpus: usize,
    live: bool,
    given_latency: bool,
) -> BudgetInput {
    BudgetInput {
        budget: args.budget,
        spent: started.elapsed(),
        speed_cpus: cpus,
        latency_cpus: cpus,
        speed: if args.no_speed {
            Want::No(NotWanted::Asked)
        } else if !live {
            Want::No(NotWanted::Recorded)
        } else {
            Want::Yes
        },
        latency: if given_latency {
            Want::Given
        } else if args.no_latency {
            Want::No(NotWanted::Asked)
        } else if !live {
            Want::No(NotWanted::Recorded)
        } else {
            Want::Yes
        },
    }
}

/// The files this report writes, each checked before anything is measured.
fn checked_paths(
    args: &Args,
    measures_latency: bool,
) -> Result<(PathBuf, PathBuf, PathBuf), CliError> {
    let prefix = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("pinsight-report"));
    let (html_path, json_path, matrix_path) = output_paths(&prefix);
    let html_path = args.export_html.clone().unwrap_or(html_path);
    let json_path = args.export_json.clone().unwrap_or(json_path);
    let matrix_path = args.export_latency.clone().unwrap_or(matrix_path);
    let flag = |what: &str, p: &std::path::Path| format!("--export-{what} {}", p.display());
    check_output_file(&html_path, &flag("html", &html_path))?;
    check_output_file(&json_path, &flag("json", &json_path))?;
    if args.latency_from.is_none() && measures_latency {
        check_output_file(&matrix_path, &flag("latency", &matrix_path))?;
    }
    Ok((html_path, json_path, matrix_path))
}

/// One line for a part not measured, naming the flags that would change it.
pub fn skip_text(s: &Skip) -> String {
    let part = match s.part() {
        Part::Speed => "speed",
        Part::Latency => "latency",
    };
    let why = match s {
        Skip::NotWanted {
            part: Part::Speed,
            why: NotWanted::Asked,
        } => "skipped (--no-speed)".to_string(),
        Skip::NotWanted {
            part: Part::Latency,
            why: NotWanted::Asked,
        } => "skipped (--no-latency)".to_string(),
        Skip::NotWanted {
            part: Part::Speed,
            why: NotWanted::Recorded,
        } => "not measured (the machine is recorded, not this one)".to_string(),
        Skip::NotWanted {
            part: Part::Latency,
            why: NotWanted::Recorded,
        } => "not measured (the machine is recorded; pass --latency FILE)".to_string(),
        Skip::NoUsableCpu => "not measured (no usable CPU)".to_string(),
        Skip::TooFewCpus { usable } => format!(
            "needs at least 2 usable CPUs, there {}",
            if *usable == 1 { "is 1" } else { "are none" }
        ),
        Skip::LatencyBudget { .. } | Skip::SpeedBudget { .. } | Skip::SpeedAfterLatency { .. } => budget_text(s),
        Skip::LatencyNoTimeLeft {
            spent,
            budget,
            left,
        } => format!(
            "not measured: speed took {:.1} s of the {:.1} s budget, {} ms left (raise --budget)",
            spent.as_secs_f64(),
            budget.as_secs_f64(),
            left.as_millis()
        ),
        Skip::LatencyPartial {
            rounds_run,
            rounds_planned,
            unmeasured,
        } => format!(
            "budget ran out after {rounds_run} of {rounds_planned} rounds; {unmeasured} pairs unmeasured (raise --budget)"
        ),
    };
    format!("{part}: {why}")
}

/// Why a part did not fit the budget, and the budget that would fit it.
fn budget_text(s: &Skip) -> String {
    let least = |d: &Duration| format!("{:.1}s", d.as_secs_f64());
    match s {
        Skip::LatencyBudget {
            budget,
            measuring,
            cpus,
            needs,
            least_budget,
        } => format!(
            "skipped — the {} budget leaves {} for measuring, latency over {cpus} CPUs needs at least {}; use --budget {} or more",
            secs(*budget),
            secs(*measuring),
            secs(*needs),
            least(least_budget)
        ),
        Skip::SpeedBudget {
            budget,
            measuring,
            cpus,
            needs,
            least_budget,
            with_latency,
        } => format!(
            "skipped — the {} budget leaves {} for measuring, speed needs at least {} ({} per CPU x {cpus} CPUs); use --budget {} or more{}",
            secs(*budget),
            secs(*measuring),
            secs(*needs),
            secs(MIN_SPEED_PER_CPU),
            least(least_budget),
            if *with_latency { " to measure both" } else { "" }
        ),
        Skip::SpeedAfterLatency {
            budget,
            latency,
            left,
            cpus,
            needs,
            least_budget,
        } => format!(
            "skipped — after latency ({}), the {} budget leaves {} for speed, which needs at least {} ({} per CPU x {cpus} CPUs); use --budget {} or more to measure both",
            secs(*latency),
            secs(*budget),
            secs(*left),
            secs(*needs),
            secs(MIN_SPEED_PER_CPU),
            least(least_budget)
        ),
        // skip_text sends only the three above here.
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod skip_tests {
    use super::*;
    use pinsight_report::budget::{split, BudgetInput};

    fn input(budget_ms: u64, cpus: usize) -> BudgetInput {
        BudgetInput {
            budget: Duration::from_millis(budget_ms),
            spent: Duration::ZERO,
            speed_cpus: cpus,
            latency_cpus: cpus,
            speed: Want::Yes,
            latency: Want::Yes,
        }
    }

    fn texts(i: &BudgetInput) -> Vec<String> {
        split(i).skipped.iter().map(skip_text).collect()
    }

    #[test]
    fn budget_skips_name_the_budget_flag() {
        let t = texts(&input(100, 2));
        assert_eq!(t, [
            "latency: skipped — the 100 ms budget leaves 70 ms for measuring, latency over 2 CPUs needs at least 200 ms; use --budget 0.3s or more",
            "speed: skipped — the 100 ms budget leaves 70 ms for measuring, speed needs at least 200 ms (100 ms per CPU x 2 CPUs); use --budget 0.5s or more to measure both",
        ]);
        let mut i = input(100, 2);
        i.latency = Want::No(NotWanted::Asked);
        let t = texts(&i);
        assert_eq!(t[0], "latency: skipped (--no-latency)");
        assert!(t[1].ends_with("use --budget 0.3s or more"), "{t:?}");
        assert_eq!(texts(&input(300, 2)), [
            "speed: skipped — after latency (200 ms), the 300 ms budget leaves 70 ms for speed, which needs at least 200 ms (100 ms per CPU x 2 CPUs); use --budget 0.5s or more to measure both",
        ]);
        let t = texts(&input(10_000, 256));
        assert!(
            t[0].contains("needs at least 26 s (100 ms per CPU x 256 CPUs)"),
            "{t:?}"
        );
        let t = texts(&input(2_000, 256));
        assert!(
            t[0].contains("latency over 256 CPUs needs at least 2.5 s"),
            "{t:?}"
        );
    }

    #[test]
    fn unwanted_parts_say_why() {
        let mut i = input(5_000, 1);
        i.speed = Want::No(NotWanted::Recorded);
        i.latency = Want::No(NotWanted::Recorded);
        assert_eq!(
            texts(&i),
            [
                "speed: not measured (the machine is recorded, not this one)",
                "latency: not measured (the machine is recorded; pass --latency FILE)",
            ]
        );
        let mut i = input(5_000, 1);
        i.speed = Want::No(NotWanted::Asked);
        assert_eq!(
            texts(&i),
            [
                "speed: skipped (--no-speed)",
                "latency: needs at least 2 usable CPUs, there is 1",
            ]
        );
        assert_eq!(
            skip_text(&Skip::LatencyPartial {
                rounds_run: 1,
                rounds_planned: 3,
                unmeasured: 2
            }),
            "latency: budget ran out after 1 of 3 rounds; 2 pairs unmeasured (raise --budget)"
        );
    }
}

/// Columns to wrap the summary at: the terminal's width
/// (`pinsight_render::terminal_width`: `$COLUMNS`, else the terminal, else
/// 80), kept within 40..=120.
fn terminal_width() -> usize {
    summary_width(pinsight_render::terminal_width())
}

fn summary_width(columns: usize) -> usize {
    columns.clamp(40, 120)
}

#[cfg(test)]
mod width_tests {
    #[test]
    fn summary_width_keeps_the_terminal_width_within_bounds() {
        use super::summary_width;
        // Unknown width is 80 (it was 100: wider than the 80-column rule).
        assert_eq!(summary_width(pinsight_render::DEFAULT_WIDTH), 80);
        assert_eq!(summary_width(100), 100);
        assert_eq!(summary_width(20), 40);
        assert_eq!(summary_width(300), 120);
    }
}

/// PREFIX.html, PREFIX.json and PREFIX.latency.json (the measured matrix);
/// a PREFIX already ending in `.html` or `.json` is taken as the stem
/// (`--out box.html` writes box.html and box.json), any other dot is kept
/// (`--out run.2024` writes run.2024.html).
fn output_paths(prefix: &std::path::Path) -> (PathBuf, PathBuf, PathBuf) {
    let text = prefix.as_os_str().to_string_lossy();
    let stem = text
        .strip_suffix(".html")
        .or_else(|| text.strip_suffix(".json"))
        .unwrap_or(&text);
    (
        PathBuf::from(format!("{stem}.html")),
        PathBuf::from(format!("{stem}.json")),
        PathBuf::from(format!("{stem}.latency.json")),
    )
}

#[cfg(test)]
mod tests {
    use super::output_paths;
    use std::path::Path;

    #[test]
    fn output_paths_append_extensions() {
        let p = |s: &str| {
            let (h, j, l) = output_paths(Path::new(s));
            [h, j, l].map(|p| p.display().to_string())
        };
        assert_eq!(
            p("pinsight-report"),
            [
                "pinsight-report.html",
                "pinsight-report.json",
                "pinsight-report.latency.json"
            ]
        );
        assert_eq!(
            p("/tmp/run.2024"),
            [
                "/tmp/run.2024.html",
                "/tmp/run.2024.json",
                "/tmp/run.2024.latency.json"
            ]
        );
        assert_eq!(p("box.html")[..2], ["box.html", "box.json"]);
        assert_eq!(p("box.json")[..2], ["box.html", "box.json"]);
    }
}
