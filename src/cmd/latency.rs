//! `pinsight latency`: core-to-core latency of this machine (or of a matrix
//! recorded elsewhere), its latency domains, and pictures of it.

use crate::cli::{parse_duration, progress_bar, CliError, CmdResult, Globals};
use pinsight_latency::measure::{
    self, choose_cpus, usable_cpus, MeasureConfig, Measurement, Method,
};
use pinsight_latency::render::{self, ChartOptions, KindBand, TableStyle};
use pinsight_latency::{domains, DomainTree, LatencyMatrix};
use pinsight_topology::{CpuSet, FsRoot};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
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
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  pinsight latency\n  pinsight latency --cpus 0-7 --method msg --svg lat.svg\n  \
                        pinsight latency --csv lat.csv && pinsight latency --from-csv lat.csv --png lat.png\n  \
                        pinsight latency --from-csv results/AMD_Ryzen_9_5950X.csv   (core-to-core-latency's CSV)"
)]
pub struct Args {
    /// CPUs to measure (cpulist, e.g. 0-7,16); default: every online CPU this process may use.
    /// With --from-csv: show only these CPUs of the matrix.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
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
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = parse_fraction, conflicts_with = "from_csv")]
    pub target_ci: f64,
    /// Give up on a pair after this long and mark it noisy.
    #[arg(long, value_name = "DUR", default_value = "200ms", value_parser = parse_duration, conflicts_with = "from_csv")]
    pub max_time_per_pair: Duration,
    /// Stop starting new rounds after this long; the pairs left are reported as not measured.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, conflicts_with = "from_csv")]
    pub budget: Option<Duration>,
    /// Show a matrix measured elsewhere instead of measuring: core-to-core-latency's --csv
    /// output, or this command's --csv or --json output.
    #[arg(long, value_name = "FILE")]
    pub from_csv: Option<PathBuf>,
    /// Write the matrix in core-to-core-latency's CSV format (lower triangle, one-way ns; the
    /// per-pair medians, where the tool writes means).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a heatmap as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write a heatmap as PNG.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
}

/// Accepts `1%`, `0.5 %` or `0.01`.
fn parse_fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "'{text}' is not a relative precision between 0 and 100% (examples: 1%, 0.5%, 0.02)"
        )),
    }
}

/// What the matrix came from, for the report.
enum Origin {
    Measured {
        measurement: Box<Measurement>,
        config: MeasureConfig,
    },
    File(PathBuf),
}

/// `--json` output: the matrix itself at the top level (so the file loads
/// back with `--from-csv`), plus how it was obtained and its domains.
#[derive(Serialize)]
struct JsonReport<'a> {
    #[serde(flatten)]
    matrix: &'a LatencyMatrix,
    unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured: Option<JsonMeasured>,
    domains: &'a DomainTree,
}

#[derive(Serialize)]
struct JsonMeasured {
    parallel: bool,
    target_rel_ci: f64,
    max_time_per_pair_s: f64,
    elapsed_s: f64,
    rounds_run: usize,
    rounds_planned: usize,
    /// Pairs (CPU ids) whose interval did not reach the target.
    noisy: Vec<(usize, usize)>,
    /// Pairs (CPU ids) not measured because the budget ran out.
    skipped: Vec<(usize, usize)>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let requested = match &args.cpus {
        Some(list) => {
            Some(CpuSet::parse_list(list).map_err(|e| CliError::usage(format!("--cpus: {e}")))?)
        }
        None => None,
    };
    let (matrix, origin) = match &args.from_csv {
        Some(path) => (load(path, requested.as_ref())?, Origin::File(path.clone())),
        None => {
            let (measurement, config) = measure_here(&args, requested.as_ref(), g)?;
            (
                measurement.matrix.clone(),
                Origin::Measured {
                    measurement: Box::new(measurement),
                    config,
                },
            )
        }
    };
    let tree = domains(&matrix);

    if let Some(path) = &args.csv {
        write_file(path, matrix.to_csv().as_bytes())?;
    }
    if args.svg.is_some() || args.png.is_some() {
        let opts = ChartOptions {
            title: chart_title(&matrix, &origin),
            kinds: kinds(&args, g),
        };
        if let Some(path) = &args.svg {
            render::write_svg(&matrix, &opts, path).map_err(CliError::runtime)?;
        }
        if let Some(path) = &args.png {
            render::write_png(&matrix, &opts, path).map_err(CliError::runtime)?;
        }
    }

    if g.json {
        let measured = match &origin {
            Origin::Measured {
                measurement: m,
                config: c,
            } => Some(JsonMeasured {
                parallel: c.parallel,
                target_rel_ci: c.target_rel_ci,
                max_time_per_pair_s: c.max_time_per_pair.as_secs_f64(),
                elapsed_s: m.elapsed.as_secs_f64(),
                rounds_run: m.rounds_run,
                rounds_planned: m.rounds_planned,
                noisy: m.noisy(),
                skipped: m.skipped.clone(),
            }),
            Origin::File(_) => None,
        };
        g.print_json(&JsonReport {
            matrix: &matrix,
            unit: "ns one-way",
            measured,
            domains: &tree,
        })?;
    } else {
        print!("{}", human(&matrix, &origin, &tree, &args));
    }
    Ok(0)
}

/// Loads `--from-csv`, restricted to `--cpus` if given. Any problem with
/// the file is the user's input: exit 2.
fn load(path: &Path, requested: Option<&CpuSet>) -> Result<LatencyMatrix, CliError> {
    let m = LatencyMatrix::load(path).map_err(|e| CliError::usage(format!("--from-csv {e}")))?;
    let Some(req) = requested else { return Ok(m) };
    let missing = req.difference(&m.cpu_set());
    if !missing.is_empty() {
        return Err(CliError::usage(format!(
            "--cpus {req}: CPU(s) {missing} are not in {} (it has CPUs {})",
            path.display(),
            m.cpu_set()
        )));
    }
    if req.len() < 2 {
        return Err(CliError::usage(format!(
            "--cpus {req}: a latency matrix needs at least 2 CPUs"
        )));
    }
    let cpus: Vec<usize> = m
        .cpus
        .iter()
        .copied()
        .filter(|c| req.contains(*c))
        .collect();
    Ok(m.submatrix(&cpus)
        .expect("CPUs checked to be in the matrix"))
}

fn measure_here(
    args: &Args,
    requested: Option<&CpuSet>,
    g: &Globals,
) -> Result<(Measurement, MeasureConfig), CliError> {
    if g.fsroot.is_some() || g.hwloc_xml.is_some() {
        return Err(CliError::usage(
            "latency is measured on this machine: --fsroot/--hwloc-xml only go with --from-csv \
             (to draw a matrix recorded on that machine with its core kinds)",
        ));
    }
    let (online, allowed) = usable_cpus(&FsRoot::live()).map_err(CliError::runtime)?;
    let cpus = choose_cpus(requested, &online, &allowed).map_err(|e| CliError {
        code: if e.usage { 2 } else { 1 },
        message: e.message,
    })?;
    let config = MeasureConfig {
        cpus,
        method: args.method,
        parallel: !args.sequential,
        target_rel_ci: args.target_ci,
        max_time_per_pair: args.max_time_per_pair,
        budget: args.budget,
        ..MeasureConfig::default()
    };
    let n = config.cpus.len();
    let pb = progress_bar(g, (n * (n - 1) / 2) as u64, "core-to-core latency");
    let measurement = measure::measure_with_progress(&config, &mut |p| {
        pb.set_position(p.pairs_done as u64);
        pb.set_message(format!(
            "core-to-core latency ({}), round {}/{}",
            config.method,
            p.rounds_done + 1,
            p.rounds_total
        ));
    });
    pb.finish_and_clear();
    Ok((measurement.map_err(CliError::runtime)?, config))
}

/// Core kinds to mark on charts: from this machine when it was measured
/// here, from --fsroot/--hwloc-xml for a file; none when there is only one
/// kind or the machine the file came from is unknown.
fn kinds(args: &Args, g: &Globals) -> Vec<KindBand> {
    if args.from_csv.is_some() && g.fsroot.is_none() && g.hwloc_xml.is_none() {
        return Vec::new();
    }
    let Ok(topo) = g.topology() else {
        return Vec::new();
    };
    if topo.kinds.len() < 2 {
        return Vec::new();
    }
    topo.kinds
        .iter()
        .map(|k| KindBand {
            name: k.name.clone(),
            cpus: k.cpus.clone(),
        })
        .collect()
}

fn chart_title(m: &LatencyMatrix, origin: &Origin) -> String {
    match origin {
        Origin::Measured { config, .. } => {
            format!(
                "Core-to-core latency, one-way ns ({}, median)",
                config.method
            )
        }
        Origin::File(path) => {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into(),
            );
            format!(
                "Core-to-core latency, one-way ns ({name}, {} CPUs)",
                m.len()
            )
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes)
        .map_err(|e| CliError::runtime(format!("{}: cannot write: {e}", path.display())))
}

/// Human output: what was measured, the matrix, min/max/mean, problems,
/// latency domains, files written.
fn human(m: &LatencyMatrix, origin: &Origin, tree: &DomainTree, args: &Args) -> String {
    let mut out = String::new();
    match origin {
        Origin::Measured {
            measurement: r,
            config: c,
        } => {
            let rounds = match (c.parallel, r.rounds_run) {
                (true, 1) => "1 round".to_string(),
                (true, k) => format!("{k} parallel rounds of disjoint pairs"),
                (false, k) => format!("{k} pair(s) one at a time"),
            };
            out.push_str(&format!(
                "{} ({}): one-way latency in ns, median per pair (sampled to ±{}% at 95% or {} ms per pair)\n\
                 {} CPUs, {rounds}, {}\n\n",
                c.method.describe(),
                c.method,
                c.target_rel_ci * 100.0,
                c.max_time_per_pair.as_millis(),
                c.cpus.len(),
                seconds(r.elapsed)
            ));
        }
        Origin::File(path) => {
            out.push_str(&format!(
                "{}: one-way latency in ns ({} CPUs{})\n\n",
                path.display(),
                m.len(),
                m.method
                    .as_deref()
                    .filter(|m| *m != "csv")
                    .map(|m| format!(", method {m}"))
                    .unwrap_or_default()
            ));
        }
    }
    let stdout_tty = std::io::stdout().is_terminal();
    let style = TableStyle {
        color: stdout_tty && std::env::var_os("NO_COLOR").is_none(),
        width: if stdout_tty {
            render::terminal_width().unwrap_or(100)
        } else {
            200
        },
    };
    out.push_str(&render::heatmap(m, Some(tree), &style));
    out.push('\n');
    out.push_str(&render::summary(m));
    if let Origin::Measured {
        measurement: r,
        config: c,
    } = origin
    {
        let noisy = r.noisy();
        if !noisy.is_empty() {
            out.push_str(&format!(
                "{} noisy pair(s) (interval wider than ±{}% after {} ms; busy or virtualised machine?): {}\n",
                noisy.len(),
                c.target_rel_ci * 100.0,
                c.max_time_per_pair.as_millis(),
                pair_list(&noisy)
            ));
        }
        if !r.skipped.is_empty() {
            out.push_str(&format!(
                "{} pair(s) not measured: the --budget ran out after {} of {} rounds: {}\n",
                r.skipped.len(),
                r.rounds_run,
                r.rounds_planned,
                pair_list(&r.skipped)
            ));
        }
    }
    out.push_str("\nLatency domains:\n");
    for line in tree.describe().lines() {
        out.push_str(&format!("  {line}\n"));
    }
    let written: Vec<String> = [&args.csv, &args.svg, &args.png]
        .iter()
        .filter_map(|p| p.as_ref())
        .map(|p| p.display().to_string())
        .collect();
    if !written.is_empty() {
        out.push_str(&format!("\nWrote {}\n", written.join(", ")));
    }
    out
}

/// "12 ms" / "3.4 s".
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// "(1,0) (3,2) ..." — at most 12, then a count.
fn pair_list(pairs: &[(usize, usize)]) -> String {
    let mut s: Vec<String> = pairs
        .iter()
        .take(12)
        .map(|(a, b)| format!("({a},{b})"))
        .collect();
    if pairs.len() > 12 {
        s.push(format!("and {} more", pairs.len() - 12));
    }
    s.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.02"), Ok(0.02));
        assert!(parse_fraction("0%").is_err());
        assert!(parse_fraction("150%").unwrap_err().contains("'150%'"));
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
            "--from-csv",
            &fixture("Apple_M1_Pro.csv"),
            "--csv",
            csv.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
            "--png",
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
        let m = load(
            Path::new(&fixture("Apple_M1_Pro.csv")),
            Some(&CpuSet::parse_list("2-4").unwrap()),
        )
        .unwrap();
        assert_eq!(m.cpus, vec![2, 3, 4]);
        let e =
            run_with(&["--from-csv", &fixture("Apple_M1_Pro.csv"), "--cpus", "6-9"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("CPU(s) 8-9 are not in"), "{}", e.message);
    }

    #[test]
    fn malformed_csv_is_a_usage_error_with_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.csv");
        std::fs::write(&bad, ",,\n12.5,,\n13,x7,\n").unwrap();
        let e = run_with(&["--from-csv", bad.to_str().unwrap()]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.contains("bad.csv:3:2: 'x7' is not a number"),
            "{}",
            e.message
        );
        let e = run_with(&[
            "--from-csv",
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
        let e = run_with(&["--cpus", "0-x"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message.starts_with("--cpus: invalid CPU set '0-x'"),
            "{}",
            e.message
        );
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
    fn measuring_flags_do_not_go_with_a_file_nor_a_recorded_machine() {
        assert!(parse(&["--from-csv", "x.csv", "--sequential"]).is_err());
        let e = run_with(&["--fsroot", "/", "--max-time-per-pair", "1ms"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(
            e.message
                .contains("--fsroot/--hwloc-xml only go with --from-csv"),
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
        let doc = JsonReport {
            matrix: &r.matrix,
            unit: "ns one-way",
            measured: None,
            domains: &tree,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let back = LatencyMatrix::load(&path).unwrap();
        assert_eq!(back.cpus, r.matrix.cpus);
        assert_eq!(back.method.as_deref(), Some("cas"));
        let text = human(
            &r.matrix,
            &Origin::Measured {
                measurement: Box::new(r.clone()),
                config,
            },
            &tree,
            &parse(&[]).unwrap().0,
        );
        assert!(
            text.starts_with("CAS latency on a single shared cache line (cas)"),
            "{text}"
        );
        assert!(
            text.contains("Min  latency:") && text.contains("Latency domains:"),
            "{text}"
        );
    }
}
