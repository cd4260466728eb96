//! `pinsight generate man [DIR]` and `pinsight generate completions SHELL`:
//! the manual pages (clap_mangen) and shell completions (clap_complete),
//! made from the same flag definitions as `--help`, so neither can drift
//! from the program.

use crate::{cli::Globals, errors::CliError, errors::CmdResult};
use std::path::{Path, PathBuf};

/// Generate the manual pages or a shell's completions from the flag definitions.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  pinsight generate man /usr/local/share/man/man1
  pinsight generate completions bash > /etc/bash_completion.d/pinsight
  pinsight generate completions zsh > ~/.zfunc/_pinsight

docs/src/install.md says where each shell looks for its completions.")]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

/// What to generate.
#[derive(clap::Subcommand, Debug)]
pub enum What {
    /// Write one manual page per command (pinsight.1, pinsight-topo.1, ...) to DIR.
    Man {
        /// The directory to write to (created if missing) [default: the current directory].
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print the completion script of SHELL on stdout.
    Completions {
        /// The shell.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// `command` is the whole command line's definition (every command).
pub fn run(args: Args, g: &Globals, command: clap::Command) -> CmdResult {
    match args.what {
        What::Man { dir } => man(&dir.unwrap_or_else(|| PathBuf::from(".")), g, command),
        What::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut materialized(command), "pinsight", &mut out);
            print!("{}", String::from_utf8_lossy(&out));
            Ok(0)
        }
    }
}

/// `command` with every subcommand's deferred flags and subcommands in
/// place before clap builds it: its `help` subcommand, which completions
/// describe, is made from the subcommands as they stand then, and would
/// lack their descriptions and `generate`'s own subcommands (clap runs a
/// deferred subcommand's definition only when that subcommand is built).
fn materialized(command: clap::Command) -> clap::Command {
    let mut built = command.clone();
    built.build();
    built
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .fold(command, |root, sub| {
            root.mut_subcommand(sub.get_name(), |_| sub.clone())
        })
}

/// Writes the pages, each whole or not at all, and names them.
fn man(dir: &Path, g: &Globals, command: clap::Command) -> CmdResult {
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::usage(format!(
            "generate man: cannot make {}: {e}",
            crate::errors::shown_path(dir)
        ))
    })?;
    let mut written = Vec::new();
    for (name, page) in pages(command) {
        let path = dir.join(format!("{name}.1"));
        pinsight_lifecycle::output::write(&path, &page).map_err(|e| {
            CliError::runtime(format!(
                "generate man: cannot write {}: {}",
                crate::errors::shown_path(&path),
                e.reason()
            ))
        })?;
        written.push(path.display().to_string());
    }
    if g.json {
        g.print_json(&written)?;
    } else if !g.quiet {
        println!(
            "wrote {} manual pages to {} (read one with: man -l {})",
            written.len(),
            crate::errors::shown_path(dir),
            written.first().map_or("", String::as_str)
        );
    }
    Ok(0)
}

/// (file stem, roff text) of the command and of every visible command
/// under it, parents first: `pinsight`, `pinsight-topo`, ...
fn pages(command: clap::Command) -> Vec<(String, Vec<u8>)> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut out = Vec::new();
    let mut todo = vec![command];
    while let Some(cmd) = todo.pop() {
        let name = cmd
            .get_display_name()
            .unwrap_or_else(|| cmd.get_name())
            .to_owned();
        todo.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        let mut page = Vec::new();
        // Rendering into memory cannot fail.
        let _ = clap_mangen::Man::new(cmd).render(&mut page);
        out.push((
            name,
            ascii_roff(&String::from_utf8_lossy(&page)).into_bytes(),
        ));
    }
    out.sort();
    out
}

/// `text` with every character outside ASCII written as groff's `\[uXXXX]`
/// escape: the help's dashes, `×` and `≥` then read the same under `man`
/// (which converts UTF-8 itself) and a plain `groff`/`nroff`, which takes
/// Latin-1 and warns on anything else. clap_mangen writes them as they are.
fn ascii_roff(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_becomes_a_groff_escape() {
        assert_eq!(
            ascii_roff("a \u{2014} b \u{00d7}"),
            "a \\[u2014] b \\[u00D7]"
        );
        assert_eq!(ascii_roff("plain"), "plain");
    }
}
