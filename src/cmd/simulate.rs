//! `pinsight simulate`: the multi-program experiment of Saez and
//! Prieto-Matias (APSys '22, §5) on a simulated
//! big/small machine (pinsight-sched-model), so schedulers can be compared
//! for machines and mixes the user does not have. Thin: parses flags,
//! reads the programs file, runs the pure simulator, prints through
//! `pinsight_sched::view::simulate`.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use pinsight_sched::simulate::simulate_all;
use pinsight_sched_model::{parse_programs, Machine, Policy, SfQuality, SimConfig, SimError};
use std::path::PathBuf;

/// Simulate schedulers (os, aarr, to, acfs) on a big/small machine.
///
/// A seeded, deterministic discrete-time simulation of single-threaded
/// programs described by phases (a CSV with the header
/// name,instructions,sf[,mem]; rows with the same name are consecutive
/// phases; # starts a comment). A big core runs 1e9 instructions/s, a small
/// core 1e9/SF. All programs start together; each one that finishes
/// restarts until every one has completed --runs times; a program's time
/// Tᵢ is the geometric mean of its runs. Policies: os (fair share, idle big
/// cores first, no migration), aarr (big-core time shared equally), to
/// (big cores to the highest estimated SFs), acfs (even out big-core-
/// equivalent progress). Metrics, with Bᵢ and Sᵢ the time alone on a big
/// and on a small core:
///
///   slowdown           Tᵢ / Bᵢ
///   unfairness         max slowdown / min slowdown
///   STP                Σ Bᵢ / Tᵢ (normalised progress)
///   ANTT               mean of Tᵢ / Bᵢ
///   aggregate speedup  Σ (Sᵢ / Tᵢ − 1) (throughput, APSys '22 §5)
///
/// Without --machine the machine is this one (or --fsroot, --hwloc-xml,
/// --kinds): the fastest kind's cores are big, all other kinds' small.
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    after_help = "Examples:\n  pinsight simulate --machine 8P+8E --programs mix.csv\n  \
pinsight simulate --programs mix.csv --sf-estimate classes:1.67,1.97\n  \
pinsight simulate --programs mix.csv --machine 6P+8E+2L --sf-estimate mae:0.38\n  \
pinsight simulate --programs mix.csv --kinds 0-3:P,4-7:E --json"
)]
pub struct Args {
    /// The machine: big cores first, e.g. 8P+8E, 4big+4little, 6P+8E+2L
    /// (every kind after the first is small).
    #[arg(long, value_name = "SPEC", value_parser = crate::values::machine)]
    pub machine: Option<crate::values::MachineSpec>,
    /// The programs: CSV name,instructions,sf[,mem], one row per phase.
    #[arg(long, value_name = "FILE", required = true)]
    pub programs: PathBuf,
    /// Schedulers to simulate, comma-separated: os, aarr, to, acfs.
    #[arg(
        long,
        alias = "policies",
        value_name = "LIST",
        default_value = "os,aarr,to,acfs"
    )]
    pub schedulers: String,
    /// The SF estimates the policies see: exact, classes:V,V,... (one of the
    /// values, uncorrelated with the truth, as Thread Director) or mae:E
    /// (noisy, with that mean absolute error).
    #[arg(long, value_name = "SPEC", default_value = "exact")]
    pub sf_estimate: String,
    /// Seed of every random draw (start order, estimate draws).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Completions of every program before the run ends.
    #[arg(long, alias = "repeat", value_name = "N", default_value = "3", value_parser = crate::values::runs)]
    pub runs: usize,
    /// The schedulers' sampling interval, their period (the simulation step); AARR's and
    /// ACFS's swap threshold is one period.
    #[arg(long, alias = "period", value_name = "DURATION", default_value = "200ms", value_parser = crate::values::interval)]
    pub interval: std::time::Duration,
}

pub fn run(args: Args, g: &Globals) -> CmdResult {
    let quality = SfQuality::parse(&args.sf_estimate)
        .map_err(|e| CliError::usage(format!("--sf-estimate '{}': {e}", args.sf_estimate)))?;
    let period = args.interval.as_secs_f64();
    let policies = Policy::list(args.schedulers.split(','), period)
        .map_err(|e| CliError::usage(format!("--schedulers: {e}")))?;
    let limit = pinsight_sched_model::spec::MAX_PROGRAMS_BYTES;
    let text = crate::errors::read_input("--programs", &args.programs, limit)?;
    let programs = parse_programs(&text)
        .map_err(|e| CliError::usage(format!("--programs {}: {e}", args.programs.display())))?;
    let (machine, source) = match &args.machine {
        Some(spec) => (
            spec.for_simulate()
                .map_err(|e| CliError::usage(format!("--machine {e}")))?,
            "--machine",
        ),
        None => (host_machine(g)?, "topology"),
    };
    let mut cfg = SimConfig::new(machine);
    cfg.quality = quality;
    cfg.seed = args.seed;
    cfg.repeat = u32::try_from(args.runs).unwrap_or(u32::MAX);
    cfg.period_s = period;
    let results = simulate_all(&cfg, &programs, &policies, &mut crate::cli::progress(g)).map_err(
        |e| match e.source {
            // Too long for the step budget: the input's fault (exit 2).
            SimError::TooLong { .. } => CliError::usage(format!(
                "--programs {}: {} ({})",
                args.programs.display(),
                e.policy.name(),
                e.source
            )),
            _ => CliError::runtime(format!("simulate {e}")),
        },
    )?;
    g.print_json_or(&cfg.report(source, &results), || {
        pinsight_sched::view::simulate::render(&cfg, &results)
    })?;
    Ok(0)
}

/// The machine from the topology (the fastest kind's cores big, the
/// others' small), with a note saying so; one kind is refused.
fn host_machine(g: &Globals) -> Result<Machine, CliError> {
    let host = Machine::from_topology(&g.topology()?)
        .map_err(|e| CliError::usage(e.refusal("--machine", "--kinds")))?;
    if !g.quiet {
        eprintln!(
            "{}",
            pinsight_term::wrap80(&format!("pinsight: note: {host}"))
        );
    }
    Ok(host.machine)
}
