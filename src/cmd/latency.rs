//! `pinsight latency`: core-to-core latency of this machine (or of a matrix
//! recorded elsewhere), its latency domains, and pictures of it.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_cpuset::CpuSet;
use pinsight_latency::measure::{self, Method};
use pinsight_latency::report::{self as report, JsonReport, Origin};
use pinsight_latency::request::{setup, Input, Request};
use pinsight_latency::view::export::{Export, Exports};
use pinsight_latency::view::{self as render, KindBand};
use pinsight_latency_model::{domains, DomainTree, LatencyMatrix};
use pinsight_sys::FsRoot;
use pinsight_term::wrap80;
use std::path::PathBuf;
use std::time::Duration;

/// Measure the latency between every pair of CPUs (a cache line bounced
/// between two pinned threads, as core-to-core-latency does), find the
/// latency domains, and draw the matrix.
///
/// Pairs that share no CPU are measured at the same time (N-1 rounds for N
/// CPUs instead of N(N-1)/2 pair measurements); each pair is sampled until
/// the 95% confidence interval of its median is within --target-ci, or
/// --max-time-per-pair runs out (the pair is then marked noisy, `~`).
/// Latency is one-way: half a round trip.
///
/// Precision: a pair's ± "within-run" is the 95% confidence interval of its
/// median from the samples of one run. It does not cover the variation
/// between runs (clock frequency, temperature, other load), which is often
/// several times larger. --runs N measures the whole matrix N times, each
/// run starting at a different round so that slow drifts hit all pairs
/// alike; a pair's value is then the median of its N run medians, and its ±
/// the larger of the within-run CI and the run-to-run spread (the farthest
/// run median), labelled "run-to-run" when that is larger.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight latency\n  pinsight latency --cpus 0-7 --method msg --export-svg lat.svg\n  \
                        pinsight latency --export-csv lat.csv\n  pinsight latency --latency lat.csv --export-png lat.png\n  \
                        pinsight latency --runs 5   (run-to-run spread)\n  \
                        # core-to-core-latency's CSV\n  pinsight latency --latency results/AMD_Ryzen_9_5950X.csv\n  \
                        # from core-to-core-latency -b 1,2 --csv\n  pinsight latency --latency b12.csv --benchmark 2"
)]
// The matrix file, for `--benchmark` to require.
#[command(group(clap::ArgGroup::new("matrix").args(["from_csv"])))]
pub struct Args {
    /// CPUs to measure (cpulist, e.g. 0-7,16); default: every online CPU this process may use.
    /// With --latency: show only these CPUs of the matrix.
    #[arg(long, value_name = "LIST", value_parser = crate::values::cpu_list)]
    pub cpus: Option<CpuSet>,
    /// cas: CAS round trips on one shared cache line (core-to-core-latency -b 1, spinlock-like);
    /// msg: single writer/single reader on two cache lines (-b 2, queue-like).
    #[arg(long, default_value = "cas", value_parser = Method::parse, conflicts_with = "from_csv")]
    pub method: Method,
    /// Measure one pair at a time instead of disjoint pairs in parallel rounds (slower; compare
    /// with the default to see how much pairs running together disturb each other).
    #[arg(long, conflicts_with = "from_csv")]
    pub sequential: bool,
    /// Stop sampling a pair when the 95% confidence interval of its median is within this
    /// (percent of the median, or a fraction).
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = crate::values::precision, conflicts_with = "from_csv")]
    pub target_ci: f64,
    /// Give up on a pair after this long and mark it noisy (a positive duration).
    #[arg(long, value_name = "DUR", default_value = "200ms", value_parser = crate::values::positive_duration, conflicts_with = "from_csv")]
    pub max_time_per_pair: Duration,
    /// Measure the whole matrix N times (runs interleaved: each starts at a different round)
    /// and report the run-to-run spread; the ± shown is then the larger of the within-run CI
    /// and the run-to-run spread. Takes about N times as long. [default: 1; on a virtual
    /// machine 3, started 1 s apart (a third of --budget with one)]
    #[arg(long, alias = "repeat", value_name = "N", value_parser = crate::values::runs, conflicts_with = "from_csv")]
    pub runs: Option<usize>,
    /// Stop starting new rounds after this long (over all --runs runs); the pairs left are
    /// reported as not measured, or as measured in fewer runs (a positive duration).
    #[arg(long, value_name = "DUR", value_parser = crate::values::positive_duration, conflicts_with = "from_csv")]
    pub budget: Option<Duration>,
    /// Show a matrix measured elsewhere instead of measuring: core-to-core-latency's --csv
    /// output (also `-b 1,2 --csv`, one matrix per benchmark: see --benchmark), or this
    /// command's --export-csv or --json output. Lines starting with '#' are skipped.
    #[arg(long = "latency", alias = "from-csv", value_name = "FILE")]
    pub from_csv: Option<PathBuf>,
    /// With --latency: show the N-th matrix of a file holding several (default 1, the first).
    /// core-to-core-latency -b 1,2 --csv writes one per benchmark, in the order given to -b.
    #[arg(long, value_name = "N", requires = "matrix", value_parser = report::matrix_number)]
    pub benchmark: Option<usize>,
    /// Write the matrix in core-to-core-latency's CSV format (lower triangle, one-way ns).
    /// The values are per-pair medians (with --runs: the median of the run medians), where
    /// core-to-core-latency writes means; the file's first line is a '#' comment saying so
    /// (--latency skips it; in pandas use read_csv(..., comment='#')). Checked for
    /// writability before anything is measured, like --export-svg and --export-png.
    #[arg(long = "export-csv", alias = "csv", value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a heatmap as SVG.
    #[arg(long = "export-svg", alias = "svg", value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write a heatmap as PNG.
    #[arg(long = "export-png", alias = "png", value_name = "FILE")]
    pub png: Option<PathBuf>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    // Before anything is measured: a missing directory must not cost a
    // whole measurement.
    exports(&args)
        .check()
        .map_err(|e| CliError::usage(e.named(&flag)))?;
    // Likewise the kind bands of the charts: a bad `--kinds` is refused
    // before measuring, never dropped in silence afterwards.
    let bands = if exports(&args).charts() {
        kinds(&args, g)?
    } else {
        Vec::new()
    };
    let (matrix, origin) = match &args.from_csv {
        // Any problem with the file is the user's input: exit 2.
        Some(path) => report::from_file(path, args.benchmark, args.cpus.as_ref())
            .map_err(|e| CliError::usage(e.named(&flag)))?,
        None => measure_here(&args, g)?,
    };
    let tree = domains(&matrix);
    render::export::export(&matrix, &origin, bands, &exports(&args))
        .map_err(|e| CliError::runtime(e.to_string()))?;
    show(&args, g, &matrix, &origin, &tree)
}

/// Where `--export-csv`, `--export-svg` and `--export-png` write.
fn exports(args: &Args) -> Exports<'_> {
    Exports {
        csv: args.csv.as_deref(),
        svg: args.svg.as_deref(),
        png: args.png.as_deref(),
    }
}

/// The result on stdout: the JSON (`--json`) or the view.
fn show(
    args: &Args,
    g: &Globals,
    matrix: &LatencyMatrix,
    origin: &Origin,
    tree: &DomainTree,
) -> CmdResult {
    if g.json {
        g.print_json(&JsonReport::new(matrix, origin, tree))?;
    } else {
        let written = exports(args).written();
        let style = render::report::stdout_style();
        let text = render::report::human(matrix, origin, tree, &written, &style);
        // The heatmap's colours are its own; the text around it is escaped.
        pinsight_term::out::stdout_terminal(format_args!("{text}"));
    }
    Ok(0)
}

/// The flag of each input.
fn flag(input: Input) -> &'static str {
    match input {
        Input::Cpus => "--cpus",
        Input::Runs => "--runs",
        Input::Matrix => "--latency",
        Input::Benchmark => "--benchmark",
        Input::Export(Export::Csv) => "--export-csv",
        Input::Export(Export::Svg) => "--export-svg",
        Input::Export(Export::Png) => "--export-png",
    }
}

/// The matrix measured here, as `args` ask.
fn measure_here(args: &Args, g: &Globals) -> Result<(LatencyMatrix, Origin), CliError> {
    g.require_live(
        "latency is measured",
        "--fsroot and --hwloc-xml go with --latency FILE only (to draw a matrix recorded there with its core kinds)",
    )?;
    let request = Request {
        cpus: args.cpus.clone(),
        method: args.method,
        parallel: !args.sequential,
        target_rel_ci: args.target_ci,
        max_time_per_pair: args.max_time_per_pair,
        budget: args.budget,
        runs: args.runs,
        virtual_machine: pinsight_topology::vm::detect(&FsRoot::live()).map(|vm| vm.note()),
    };
    // The request at fault: the user's --cpus (exit 2); else the machine or
    // the process (exit 1).
    let setup = setup(&request, &FsRoot::live()).map_err(|e| match e.named(&flag) {
        Some(message) => CliError::usage(message),
        None => CliError::runtime(e.to_string()),
    })?;
    if !g.quiet {
        for note in setup.notes(&flag) {
            eprintln!("{}", wrap80(&format!("pinsight: {note}")));
        }
    }
    let measurement = measure::measure_with_progress(&setup.config, &mut crate::cli::progress(g))
        .map_err(|e| CliError::runtime(e.to_string()))?;
    Ok(Origin::measured(measurement, setup.config))
}

/// The kind bands drawn beside a chart: none for a matrix loaded from a
/// file with no machine named (it may come from another machine), else the
/// kinds of the machine read (declared ones included; a bad declaration is
/// an error).
fn kinds(args: &Args, g: &Globals) -> Result<Vec<KindBand>, CliError> {
    if args.from_csv.is_some() && g.fsroot.is_none() && g.hwloc_xml.is_none() {
        return Ok(Vec::new());
    }
    Ok(KindBand::of(&g.topology()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use pinsight_latency::measure::{choose_cpus, usable_cpus, MeasureConfig, Measurement};
    use pinsight_latency::report::from_file as load;
    use pinsight_latency::LoadMatrix;
    use pinsight_latency_model::DomainTree;
    use std::path::Path;

    /// The view `run` prints, as into a file (no colour, 200 columns).
    fn human(m: &LatencyMatrix, origin: &Origin, tree: &DomainTree) -> String {
        let style = render::TableStyle {
            color: false,
            width: 200,
        };
        render::report::human(m, origin, tree, &[], &style)
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        g: Globals,
        #[command(flatten)]
        args: Args,
    }

    fn parse(argv: &[&str]) -> Result<(Args, Globals), clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("latency").chain(argv.iter().copied()))?;
        Ok((cli.args, cli.g))
    }

    fn run_with(argv: &[&str]) -> CmdResult {
        let (args, mut g) = parse(argv).unwrap();
        g.quiet = true;
        run(args, &g)
    }

    fn fixture(name: &str) -> String {
        format!(
            "{}/crates/latency/tests/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    #[test]
    fn target_ci_accepts_percent_or_fraction() {
        use crate::values::precision;
        assert_eq!(precision("1%"), Ok(0.01));
        assert_eq!(precision("0.02"), Ok(0.02));
        assert!(precision("0%").is_err());
        assert!(precision("150%").unwrap_err().contains("'150%'"));
    }

    #[test]
    fn from_csv_draws_and_exports_a_recorded_matrix() {
        let dir = tempfile::tempdir().unwrap();
        let (csv, svg, png) = (
            dir.path().join("m.csv"),
            dir.path().join("m.svg"),
            dir.path().join("m.png"),
        );
        let code = run_with(&[
            "--latency",
            &fixture("Apple_M1_Pro.csv"),
            "--export-csv",
            csv.to_str().unwrap(),
            "--export-svg",
            svg.to_str().unwrap(),
            "--export-png",
            png.to_str().unwrap(),
        ])
        .unwrap();
        assert_eq!(code, 0);
        let original = std::fs::read_to_string(fixture("Apple_M1_Pro.csv")).unwrap();
        let a = LatencyMatrix::parse_csv(&original, "a").unwrap();
        let b = LatencyMatrix::load(&csv).unwrap();
        assert_eq!(a.ns, b.ns);
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        assert!(svg_text.contains(">\n7\n</text>") && svg_text.contains("Apple_M1_Pro.csv"));
        assert!(std::fs::metadata(&png).unwrap().len() > 1000);
    }

    #[test]
    fn from_csv_with_cpus_takes_a_submatrix_and_refuses_unknown_cpus() {
        let (m, _) = load(
            Path::new(&fixture("Apple_M1_Pro.csv")),
            None,
            Some(&CpuSet::parse_list("2-4").unwrap()),
        )
        .unwrap();
        assert_eq!(m.cpus, vec![2, 3, 4]);
        let e =
            run_with(&["--latency", &fixture("Apple_M1_Pro.csv"), "--cpus", "6-9"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("CPU(s) 8-9 are not in"), "{}", e.message);
    }

    #[test]
    fn malformed_csv_is_a_usage_error_with_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.csv");
        std::fs::write(&bad, ",,\n12.5,,\n13,x7,\n").unwrap();
        let e = run_with(&["--latency", bad.to_str().unwrap()]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("bad.csv:3:2: 'x7' is not a number"),
            "{}",
            e.message
        );
        let e = run_with(&[
            "--latency",
            dir.path().join("missing.csv").to_str().unwrap(),
        ])
        .unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("missing.csv: cannot read"),
            "{}",
            e.message
        );
    }

    #[test]
    fn bad_cpu_lists_are_usage_errors() {
        // A list that is no CPU list is refused while parsing.
        let e = parse(&["--cpus", "0-x"]).err().unwrap().to_string();
        assert!(e.contains("'--cpus <LIST>'") && e.contains("'0-x'"), "{e}");
        let e = run_with(&["--cpus", "0,4000"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("CPU 4000 is offline"), "{}", e.message);
        let e = run_with(&["--cpus", "0"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("needs at least 2 CPUs"), "{}", e.message);
    }

    #[test]
    fn a_process_confined_to_one_cpu_gets_a_runtime_error() {
        // Confine a fresh thread (the test harness's threads are shared).
        let e = std::thread::spawn(|| {
            let first = pinsight_latency::measure::affinity::current()
                .unwrap()
                .first()
                .unwrap();
            pinsight_latency::measure::affinity::pin_current_thread(first).unwrap();
            run_with(&[]).unwrap_err()
        })
        .join()
        .unwrap();
        assert_eq!(e.code, 1);
        assert!(
            e.message
                .contains("needs at least 2 CPUs, but this process may run only on CPU"),
            "{}",
            e.message
        );
    }

    #[test]
    fn json_of_a_measurement_loads_back() {
        let (online, allowed) = usable_cpus(&FsRoot::live()).unwrap();
        let Ok(cpus) = choose_cpus(None, &online, &allowed) else {
            return;
        };
        let config = MeasureConfig {
            cpus: cpus[..2].to_vec(),
            max_time_per_pair: Duration::from_millis(30),
            ..MeasureConfig::default()
        };
        let r = measure::measure(&config).unwrap();
        let tree = domains(&r.matrix);
        let origin = Origin::Measured {
            measurement: Box::new(r.clone()),
            config,
        };
        let doc = JsonReport::new(&r.matrix, &origin, &tree);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let back = LatencyMatrix::load(&path).unwrap();
        assert_eq!(back.cpus, r.matrix.cpus);
        assert_eq!(back.method.as_deref(), Some("cas"));
        let text = human(&r.matrix, &origin, &tree);
        assert!(
            text.starts_with("CAS latency on a single shared cache line (cas)\n"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(
            text.contains("± within-run: the 95% CI of the median from this one run's"),
            "{text}"
        );
        assert!(
            text.contains("Min  latency:") && text.contains("Latency domains:"),
            "{text}"
        );
    }

    /// core-to-core-latency -b 1,2 --csv on 3 CPUs: two matrices, one
    /// after the other, no separator (its titles go to stderr).
    const TWO_BENCHMARKS: &str = ",,\n50,,\n60,70,\n,,\n80,,\n90,100,\n";

    #[test]
    fn benchmark_picks_a_matrix_of_a_multi_benchmark_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b12.csv");
        std::fs::write(&path, TWO_BENCHMARKS).unwrap();
        let (m, origin) = load(&path, None, None).unwrap();
        assert_eq!(m.between(1, 0), Some(50.0));
        let (m2, _) = load(&path, Some(2), None).unwrap();
        assert_eq!(m2.between(2, 1), Some(100.0));
        let text = human(&m, &origin, &domains(&m));
        assert!(
            text.contains("Showing matrix 1 of 2 in the file (--benchmark N picks another)")
                && text.contains("  *1: lines 1-3, 3 CPUs")
                && text.contains("   2: lines 4-6, 3 CPUs"),
            "{text}"
        );
        let e = run_with(&["--latency", path.to_str().unwrap(), "--benchmark", "3"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.starts_with("--benchmark 3: ")
                && e.message.ends_with(
                    "b12.csv holds 2 matrices: 1 (lines 1-3, 3 CPUs); 2 (lines 4-6, 3 CPUs)"
                ),
            "{}",
            e.message
        );
        assert!(
            parse(&["--benchmark", "2"]).is_err(),
            "--benchmark needs --latency"
        );
        assert!(parse(&["--latency", "x", "--benchmark", "0"]).is_err());
    }

    #[test]
    fn csv_export_says_the_values_are_medians_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.csv");
        run_with(&[
            "--latency",
            &fixture("Apple_M1_Pro.csv"),
            "--export-csv",
            out.to_str().unwrap(),
        ])
        .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with("# pinsight latency: one-way ns as read from Apple_M1_Pro.csv")
                && first.contains("core-to-core-latency --csv writes means"),
            "{first}"
        );
        let back = LatencyMatrix::load(&out).unwrap();
        assert_eq!(back.len(), 8);
        // A measured matrix: medians, and of how many runs.
        let config = MeasureConfig {
            cpus: vec![0, 1],
            repeats: 5,
            ..MeasureConfig::default()
        };
        let r = Measurement {
            matrix: LatencyMatrix::new(vec![0, 1]),
            skipped: Vec::new(),
            fewer_runs: Vec::new(),
            rounds_run: 5,
            rounds_planned: 5,
            runs_planned: 5,
            runs_completed: 5,
            elapsed: Duration::from_millis(5),
            disturbance: Vec::new(),
        };
        let c = report::csv_comment(
            &r.matrix.clone(),
            &Origin::Measured {
                measurement: Box::new(r),
                config,
            },
        );
        assert_eq!(
            c,
            "# pinsight latency (cas): one-way ns, per-pair median of 5 run medians \
             (core-to-core-latency --csv writes means)"
        );
    }

    #[test]
    fn runs_must_be_at_least_one() {
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--latency", "x.csv", "--runs", "2"]).is_err());
        assert_eq!(parse(&[]).unwrap().0.runs, None);
        assert_eq!(parse(&["--runs", "3"]).unwrap().0.runs, Some(3));
    }
}
