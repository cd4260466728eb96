//! `pinsight latency` (under construction).
use crate::cli::{CliError, CmdResult, Globals};

/// (under construction)
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args, _g: &Globals) -> CmdResult {
    Err(CliError::runtime("'latency' is under construction"))
}
