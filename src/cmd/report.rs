//! `pinsight report`: the main job. Discovers the machine, measures
//! core-to-core latency and per-CPU speed within a time budget, writes one
//! self-contained HTML page and its JSON, and prints what to do.

//!
//! Thin: flags, then one `pinsight_report::run::run` (loads, checks,
//! measures, assembles), then one `pinsight_report::view::outcome::write`
//! (words the skips, writes the files, draws the summary).

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_report::budget::Skip;
use pinsight_report::run::{hostname, File, Files, Given, Request, RunError};
use pinsight_report::view::{outcome, skip::budget_warnings};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One command for the whole picture: topology with core kinds, measured
/// core-to-core latency and latency domains, measured speed of every CPU and
/// the speedup factor between kinds — as an HTML page, JSON, and a short list
/// of concrete suggestions in the terminal.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight report\n  pinsight report --budget 30s --export-html /tmp/box.html\n  pinsight report --latency measured.csv\n  \
                  # a recorded machine, with what was measured on it\n  \
                  pinsight --fsroot box.tar.gz report --latency lat.csv --speed speed.json"
)]
pub struct Args {
    /// Total time for the whole report (latency and speed share it; too small a
    /// budget skips them and says what --budget would do).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::values::positive_duration)]
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
    /// Use a latency matrix measured elsewhere (core-to-core-latency CSV or pinsight JSON) instead of measuring.
    #[arg(long = "latency", alias = "latency-from", value_name = "FILE")]
    pub latency_from: Option<PathBuf>,
    /// Use a speed measurement made elsewhere (`pinsight speed --json`'s output, or `pinsight
    /// report --json`'s) instead of measuring: how a report of a recorded machine shows speed.
    #[arg(long = "speed", value_name = "FILE", conflicts_with = "no_speed")]
    pub speed_from: Option<PathBuf>,
    /// Skip the latency measurement.
    #[arg(long)]
    pub no_latency: bool,
    /// Skip the speed measurement.
    #[arg(long)]
    pub no_speed: bool,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let started = Instant::now();
    let request = Request {
        topology: g.topology()?,
        budget: args.budget,
        started,
        files: Files::chosen(
            "pinsight-report".as_ref(),
            args.export_html,
            args.export_json,
            args.export_latency,
        ),
        latency_from: args.latency_from,
        speed_from: args.speed_from,
        no_latency: args.no_latency,
        no_speed: args.no_speed,
        hostname: g.fsroot().ok().and_then(|fs| hostname(&fs)),
    };
    let made = pinsight_report::run::run(request, &mut crate::cli::progress(g), &mut |skips| {
        warn(g, skips)
    })
    .map_err(run_error)?;
    let shown = outcome::write(made).map_err(|e| CliError::runtime(e.to_string()))?;
    g.print_json_or(&shown.data, || shown.summary)?;
    Ok(0)
}

/// With `--json` stdout is for the data, so a too-small budget is also
/// said on stderr, before anything is measured.
fn warn(g: &Globals, planned: &[Skip]) {
    if g.json && !g.quiet {
        for w in budget_warnings(planned) {
            eprintln!("pinsight: warning: {w}");
        }
    }
}

/// A report not made, worded with the flag to change.
fn run_error(e: RunError) -> CliError {
    let flag = match e.given() {
        None => "",
        Some(Given::Latency) => "--latency ",
        Some(Given::Speed) => "--speed ",
        Some(Given::Output(File::Html)) => "--export-html ",
        Some(Given::Output(File::Json)) => "--export-json ",
        Some(Given::Output(File::Latency)) => "--export-latency ",
    };
    if e.is_usage() {
        CliError::usage(format!("{flag}{e}"))
    } else {
        CliError::runtime(e.to_string())
    }
}
