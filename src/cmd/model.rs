//! `pinsight model`: evaluate the asymmetric Amdahl model, fitted from runs
//! (`--from`) or given (`--params`), for one configuration and as speedup
//! curves P-first vs E-first (Adnan, Array 19 (2023), Figs. 3–8), as a
//! table, SVG or JSON.

use crate::values::TuneMachine;
use crate::{cli::check_output_file, cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_plan::tune::TuneLayout;
use pinsight_tune::view::output as tune_output;
use pinsight_tune_model::{
    choose_machine, evaluate, fit, parse_runs, Config, Fit, FitOptions, MachineChoice,
    MachineSource, ModelKind, ModelSpec, Observation, Theta,
};
use std::path::PathBuf;

const AFTER_HELP: &str = "\
The models (seed \"work-stealing-on-asymmetric-multicore\"; see `pinsight tune --help`):
  dynamic  T = T1 (1 - f + f sf/(sf P + E)): speedup vs 1 P-core 1/(1 - f + sf
           f/(sf P + E)), vs 1 E-core 1/((1 - f)/sf + f/(sf P + E))
  static   equal split paced by the slowest thread
--params f=0.95,sf=2,smt_gain=0.3,t1=10,contention=0,model=dynamic (f required; defaults sf=1, smt_gain=0, t1=1, contention=0, model=dynamic; contention c: each core beyond the first adds c T1 of time, the coherency term of Gunther's Universal Scalability Law). --config 4P+8E+2smt (terms NP, NE, Nsmt). The machine, said on the Machine line: --machine 6P+8E+smt (or live for this machine); else a recorded topology (--fsroot, --hwloc-xml, --kinds); else with --from the largest P, E and SMT counts the runs used; else the --config. Never this machine unless asked.

JSON (--json): model, theta {t1, f, sf, smt_gain, contention}, params (with CIs and bound, when fitted), machine, machine_source (declared|live|recorded|runs|config), config {p, e, smt, predicted_s, ci, vs_1p, vs_1e, allowed, extrapolated} (with --config), curves {p_first, e_first: [{cores, config, time_s, vs_p, vs_e}]}.

Examples:
  pinsight model --params f=0.99,sf=2 --machine 4P+8E --export-svg curve.svg
  pinsight model --from runs.csv --config 6P+0E+0smt";

/// Evaluate the tuning model (fitted or given) for a configuration, and its speedup curves.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from", "params"])))]
pub struct Args {
    /// Fit the model to runs (CSV p,e,smt,time_s[,energy_j], as `tune --from`).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Given parameters: f=0.95,sf=2,smt_gain=0.3,t1=10,model=dynamic.
    #[arg(long, value_name = "SPEC")]
    pub params: Option<String>,
    /// One configuration to predict: 4P+8E+2smt, 4P, 8E.
    #[arg(long, value_name = "CONFIG")]
    pub config: Option<String>,
    /// The machine for the curves: 6P+8E, 6P+8E+smt, 8P+smt, or live for this one [default: a
    /// recorded topology, else the runs' largest counts (--from), else the --config].
    #[arg(long, value_name = "SPEC", value_parser = crate::values::tune_machine,
          conflicts_with_all = ["fsroot", "hwloc_xml", "kinds"])]
    pub machine: Option<crate::values::TuneMachine>,
    /// Write the speedup curves (P-first, E-first) as an SVG line chart to FILE.
    #[arg(long = "export-svg", alias = "svg", value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Seed of the bootstrap with --from [default: 12].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let config = args.config.as_deref().map(str::parse::<Config>).transpose();
    let config = config.map_err(|e| CliError::usage(format!("--config: {e}")))?;
    let asked = TuneMachine::asked(&args.machine)?;
    if let Some(p) = &args.svg {
        check_output_file(p, "--export-svg")?;
    }
    // The model: fitted (with intervals) or given.
    let (model, theta, fitted, runs) = the_model(&args)?;
    let chosen = choose_machine(asked, g.recorded(), runs.as_deref(), config)
        .ok_or_else(crate::errors::model_needs_machine)?;
    let machine = match chosen {
        MachineChoice::Unplaced(m, source) => (m, source),
        MachineChoice::Topology(source) => {
            let topo = g.topology()?;
            let layout = TuneLayout::new(&topo, &topo.usable());
            (
                layout
                    .map_err(|e| CliError::runtime(e.to_string()))?
                    .machine,
                source,
            )
        }
    };
    let ev = evaluate(model, theta, fitted.as_ref(), machine, config);
    if let Some(o) = &ev.config {
        if !o.allowed && !g.quiet {
            eprintln!(
                "pinsight: warning: --config {}P+{}E+{}smt does not fit the machine ({}); predicted anyway",
                o.p, o.e, o.smt, ev.machine
            );
        }
    }
    if let Some(path) = &args.svg {
        let svg = tune_output::model_svg(&ev);
        pinsight_lifecycle::output::write(path, svg.as_bytes())
            .map_err(|e| CliError::runtime(format!("--export-svg: {e}")))?;
    }
    if g.json {
        g.print_json(&ev)?;
        return Ok(0);
    }
    let how = how_words(ev.machine_source);
    let text = tune_output::model_text(&ev, fitted.is_some(), how, args.svg.as_deref());
    print!("{text}");
    Ok(0)
}

/// Where the machine came from, in the words of the Machine line.
fn how_words(source: MachineSource) -> &'static str {
    match source {
        MachineSource::Declared => "declared by --machine",
        MachineSource::Live => "this machine (--machine live)",
        MachineSource::Recorded => "the recorded topology",
        MachineSource::Runs => "inferred from the runs: the largest P, E and SMT counts they used",
        MachineSource::Config => "the --config's; --machine SPEC for another",
    }
}

/// The model: fitted from `--from` runs (with intervals, and the runs) or
/// given by `--params`.
#[allow(clippy::type_complexity)]
fn the_model(
    args: &Args,
) -> Result<(ModelKind, Theta, Option<Fit>, Option<Vec<Observation>>), CliError> {
    match (&args.from, &args.params) {
        (Some(path), _) => {
            let name = format!("--from '{}'", path.display());
            let text = crate::errors::read_input("--from", path, 16 << 20)?;
            let runs = parse_runs(&text).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
            let f = fit(&runs, FitOptions::seeded(args.seed))
                .map_err(|e| CliError::usage(format!("{name}: {e}")))?;
            Ok((f.model, f.theta, Some(f), Some(runs)))
        }
        (None, Some(spec)) => {
            let s: ModelSpec = spec
                .parse()
                .map_err(|e| CliError::usage(format!("--params: {e}")))?;
            Ok((s.model, s.theta, None, None))
        }
        (None, None) => Err(CliError::usage("give --from RUNS.csv or --params SPEC")),
    }
}
