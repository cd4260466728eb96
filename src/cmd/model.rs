//! `pinsight model`: evaluate the asymmetric Amdahl model, fitted from runs
//! (`--from`) or given (`--params`), for one configuration and as speedup
//! curves P-first vs E-first (Adnan, Array 19 (2023), Figs. 3–8), as a
//! table, SVG or JSON.

use crate::{cli::check_output_file, cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_plan::tune::TuneLayout;
use pinsight_render::tune as view;
use pinsight_tune_model::{
    fit, parse_runs, predict, speedup_curve, Config, CurvePoint, FitOptions, Machine, ModelKind,
    ModelSpec, Order, Params, Theta,
};
use serde::Serialize;
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
    #[arg(long = "export-svg", value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Seed of the bootstrap with --from [default: 12].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[derive(Serialize)]
struct One {
    p: u32,
    e: u32,
    smt: u32,
    predicted_s: f64,
    ci: [f64; 2],
    vs_1p: f64,
    vs_1e: Option<f64>,
    allowed: bool,
    /// Predicted beyond what the fitted runs measured (false for given
    /// parameters: nothing was measured, nothing extrapolated from it).
    extrapolated: bool,
}

#[derive(Serialize)]
struct Curves {
    p_first: Vec<CurvePoint>,
    e_first: Vec<CurvePoint>,
}

#[derive(Serialize)]
struct Output {
    model: ModelKind,
    theta: Theta,
    params: Option<Params>,
    machine: Machine,
    machine_source: &'static str,
    config: Option<One>,
    curves: Curves,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let (config, given) = declared(&args)?;
    if let Some(p) = &args.svg {
        check_output_file(p, "--export-svg")?;
    }
    // The model: fitted (with intervals) or given.
    let (model, theta, fitted, runs) = the_model(&args)?;
    let (machine, machine_source) = machine_of(g, given, config, runs.as_deref())?;
    let p_first = speedup_curve(model, &theta, &machine, Order::PFirst);
    let e_first = speedup_curve(model, &theta, &machine, Order::EFirst);
    let one = config.map(|c| one_config(c, model, &theta, fitted.as_ref(), &machine));
    if let Some(o) = &one {
        if !o.allowed && !g.quiet {
            eprintln!(
                "pinsight: warning: --config {}P+{}E+{}smt does not fit the machine ({machine}); predicted anyway",
                o.p, o.e, o.smt
            );
        }
    }
    if let Some(path) = &args.svg {
        let title = format!(
            "Speedup P-first vs E-first on {machine} ({} model)",
            model.name()
        );
        let svg = view::curve_svg(&title, &p_first, &e_first);
        pinsight_lifecycle::output::write(path, svg.as_bytes())
            .map_err(|e| CliError::runtime(format!("--export-svg: {e}")))?;
    }
    if g.json {
        g.print_json(&Output {
            model,
            theta,
            params: fitted.as_ref().map(|f| f.params),
            machine,
            machine_source,
            config: one,
            curves: Curves { p_first, e_first },
        })?;
        return Ok(0);
    }
    print!(
        "{}",
        human(
            &args,
            model,
            &theta,
            fitted.is_some(),
            (&machine, machine_source),
            one.as_ref(),
            &p_first,
            &e_first
        )
    );
    Ok(0)
}

/// The machine of the curves and where it came from: `--machine`
/// (declared, or `live`), a recorded topology, the runs' largest counts,
/// the `--config`; never this machine unless asked.
fn machine_of(
    g: &Globals,
    given: Option<Given>,
    config: Option<Config>,
    runs: Option<&[pinsight_tune_model::Observation]>,
) -> Result<(Machine, &'static str), CliError> {
    let recorded = g.fsroot.is_some() || g.hwloc_xml.is_some() || g.kinds.is_some();
    let topology = || -> Result<Machine, CliError> {
        let topo = g.topology()?;
        Ok(TuneLayout::new(&topo, &topo.usable())
            .map_err(|e| CliError::runtime(e.to_string()))?
            .machine)
    };
    match given {
        Some(Given::Declared(m)) => return Ok((m, "declared")),
        Some(Given::Live) => return Ok((topology()?, "live")),
        None if recorded => return Ok((topology()?, "recorded")),
        None => {}
    }
    if let Some(m) = runs.and_then(Machine::spanned) {
        return Ok((m, "runs"));
    }
    if let Some(m) = config.and_then(|c| {
        Machine::spanned(&[pinsight_tune_model::Observation {
            config: c,
            time_s: 1.0,
            energy_j: None,
        }])
    }) {
        return Ok((m, "config"));
    }
    Err(crate::errors::model_needs_machine())
}

/// `--machine` as given: declared, or `live`.
enum Given {
    Declared(Machine),
    Live,
}

/// The model: fitted from `--from` runs (with intervals, and the runs) or
/// given by `--params`.
#[allow(clippy::type_complexity)]
fn the_model(
    args: &Args,
) -> Result<
    (
        ModelKind,
        Theta,
        Option<pinsight_tune_model::Fit>,
        Option<Vec<pinsight_tune_model::Observation>>,
    ),
    CliError,
> {
    match (&args.from, &args.params) {
        (Some(path), _) => {
            let name = format!("--from '{}'", path.display());
            let text = crate::errors::read_input("--from", path, 16 << 20)?;
            let runs = parse_runs(&text).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
            let opts = FitOptions {
                seed: args.seed.unwrap_or(FitOptions::default().seed),
                ..FitOptions::default()
            };
            let f = fit(&runs, opts).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
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

/// The prediction for one configuration (`--config`).
fn one_config(
    c: Config,
    model: ModelKind,
    theta: &Theta,
    fitted: Option<&pinsight_tune_model::Fit>,
    machine: &Machine,
) -> One {
    let (t, ci, extrapolated) = match fitted {
        Some(f) => {
            let p = predict(f, c);
            (p.predicted_s, p.ci, p.extrapolated)
        }
        None => {
            let t = model.time(theta, c);
            (t, [t, t], false)
        }
    };
    let t1p = model.time(theta, Config::new(1, 0, 0));
    let t1e = model.time(theta, Config::new(0, 1, 0));
    One {
        p: c.p,
        e: c.e,
        smt: c.smt,
        predicted_s: t,
        ci,
        vs_1p: t1p / t,
        vs_1e: (!machine.one_kind() || c.e > 0).then_some(t1e / t),
        allowed: machine.allows(c),
        extrapolated,
    }
}

/// The human output: the model, the machine, the configuration, the curves.
#[allow(clippy::too_many_arguments)]
fn human(
    args: &Args,
    model: ModelKind,
    theta: &Theta,
    fitted: bool,
    (machine, source): (&Machine, &str),
    one: Option<&One>,
    p_first: &[CurvePoint],
    e_first: &[CurvePoint],
) -> String {
    let width =
        pinsight_render::compare::layout::effective_width(pinsight_render::terminal_columns())
            .min(80);
    let mut out = String::new();
    let hang =
        |first: &str, text: &str| pinsight_render::compare::layout::hanging(first, text, 10, width);
    out.push_str(&hang(
        "Model:    ",
        &format!(
            "{} (f {:.4}, sf {:.3}, smt_gain {:.3}, t1 {}, contention {:.4}){}",
            model.name(),
            theta.f,
            theta.sf,
            theta.smt_gain,
            view::seconds(theta.t1),
            theta.contention,
            if fitted { ", fitted" } else { ", given" }
        ),
    ));
    let how = match source {
        "declared" => "declared by --machine",
        "live" => "this machine (--machine live)",
        "recorded" => "the recorded topology",
        "runs" => "inferred from the runs: the largest P, E and SMT counts they used",
        _ => "the --config's; --machine SPEC for another",
    };
    out.push_str(&hang("Machine:  ", &format!("{machine} ({how})")));
    if let Some(o) = one {
        let mut s = format!(
            "{}P+{}E+{}smt: predicted {}",
            o.p,
            o.e,
            o.smt,
            view::seconds(o.predicted_s)
        );
        if o.ci[0] != o.ci[1] {
            s.push_str(&format!(
                " (CI {}–{})",
                view::seconds(o.ci[0]),
                view::seconds(o.ci[1])
            ));
        }
        s.push_str(&format!(", speedup {:.2}x vs 1 P-core", o.vs_1p));
        if let Some(e) = o.vs_1e {
            s.push_str(&format!(", {e:.2}x vs 1 E-core"));
        }
        if o.extrapolated {
            s.push_str("; extrapolated beyond the runs");
        }
        out.push_str(&hang("Config:   ", &s));
    }
    out.push_str("\nSpeedup as cores are added (no SMT)\n");
    out.push_str(&view::curve_table(p_first, e_first, width));
    if let Some(p) = &args.svg {
        out.push_str(&format!("\nSVG chart written to {}\n", p.display()));
    }
    out
}

/// `--config` and `--machine`, checked before any work.
fn declared(args: &Args) -> Result<(Option<Config>, Option<Given>), CliError> {
    let config: Option<Config> = match &args.config {
        Some(s) => Some(
            s.parse()
                .map_err(|e| CliError::usage(format!("--config: {e}")))?,
        ),
        None => None,
    };
    let given = match &args.machine {
        Some(crate::values::TuneMachine::Declared(s)) => Some(Given::Declared(
            s.for_tune()
                .map_err(|e| CliError::usage(format!("--machine {e}")))?,
        )),
        Some(crate::values::TuneMachine::Live) => Some(Given::Live),
        None => None,
    };
    Ok((config, given))
}
