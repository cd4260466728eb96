//! The `pinsight` command line. Each command lives in `cmd/<name>.rs`.
#![forbid(unsafe_code)]
// The entry point is pinsight_sys's (`entry_point!`): std's start-up
// without its stack-overflow handler, which reads /proc/self/maps at each
// start (see pinsight_sys::entry). Tests keep the harness's own main.
#![cfg_attr(not(test), no_main)]

// Every command prints through these, never through std's macros, which
// panic when stdout is a closed pipe (`pinsight topo --json | head -1`).
// Defined before the modules so that they shadow std's in all of them.
macro_rules! print {
    ($($arg:tt)*) => {
        pinsight_term::out::stdout(format_args!($($arg)*))
    };
}
macro_rules! println {
    () => {
        pinsight_term::out::stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        pinsight_term::out::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
macro_rules! eprint {
    ($($arg:tt)*) => {
        pinsight_term::out::stderr(format_args!($($arg)*))
    };
}
macro_rules! eprintln {
    () => {
        pinsight_term::out::stderr(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        pinsight_term::out::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod cli;
mod cmd;
// The binary's own tests that need its flag definitions, kept out of src/
// (tests/unit/, not a test target of its own).
#[cfg(test)]
#[path = "../tests/unit/docs_tests.rs"]
mod docs_tests;
mod errors;
mod values;

use clap::{FromArgMatches, Parser, Subcommand};
use cli::Globals;

/// Where should my threads run? Topology, placement and measured evidence
/// for hybrid (P/E-core) and chiplet CPUs.
// The root without its commands: `full_command` adds them all, `parse`
// only the one typed (see there).
#[derive(Parser, Debug)]
#[command(name = "pinsight", version, propagate_version = true)]
#[command(subcommand_required = true, arg_required_else_help = true)]
#[command(after_help = "Run `pinsight report` for a one-command overview of this machine.")]
struct Root {
    #[command(flatten)]
    globals: Globals,
}

/// The parsed command line: the global flags and the one command.
#[derive(Debug)]
struct Cli {
    globals: Globals,
    command: Command,
}

/// The whole command line's definition: the root and every command.
fn full_command() -> clap::Command {
    Command::augment_subcommands(<Root as clap::CommandFactory>::command())
}

// Deferred: clap builds a subcommand's flags only when that subcommand is
// parsed or described; building all of them (every flag of every command,
// the global flags copied into each) took 0.7 ms of a 3 ms `pinsight run
// cpus:0 -- true`.
#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum Command {
    Topo(cmd::topo::Args),
    Snapshot(cmd::snapshot::Args),
    Plan(cmd::plan::Args),
    Run(cmd::run::Args),
    Pin(cmd::pin::Args),
    Balance(cmd::balance::Args),
    Latency(cmd::latency::Args),
    Speed(cmd::speed::Args),
    Report(cmd::report::Args),
    // Boxed: compare has the most flags, and the enum is as large as its
    // largest variant (clippy::large_enum_variant).
    Compare(Box<cmd::compare::Args>),
    Workload(cmd::workload::Args),
    Simulate(cmd::simulate::Args),
    Tune(cmd::tune::Args),
    Model(cmd::model::Args),
    Slice(cmd::slice::Args),
    Gather(cmd::gather::Args),
    Sched(cmd::sched::Args),
    Mix(cmd::mix::Args),
    Sf(cmd::sf::Args),
    Emulate(cmd::emulate::Args),
    Load(cmd::load::Args),
    Irq(cmd::irq::Args),
    Generate(cmd::generate::Args),
}

#[cfg(not(test))]
pinsight_sys::entry_point!(pinsight);

#[cfg_attr(test, allow(dead_code))]
fn pinsight() {
    // An empty PINSIGHT_FSROOT means "this machine", as FsRoot::from_flag_or_env
    // reads it; likewise an empty PINSIGHT_KINDS declares nothing.
    for name in ["PINSIGHT_FSROOT", "PINSIGHT_KINDS"] {
        if std::env::var_os(name).is_some_and(|v| v.is_empty()) {
            std::env::remove_var(name);
        }
    }
    let cli = parse();
    let g = &cli.globals;
    // A bad --kinds is refused before any work, whatever the command.
    let declared = match g.declared_kinds() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("pinsight: error: {}", e.message);
            std::process::exit(pinsight_term::out::finish(e.code));
        }
    };
    if declared.is_some() && matches!(cli.command, Command::Snapshot(_)) && !g.quiet {
        eprintln!(
            "{}",
            pinsight_term::wrap80(&format!(
                "pinsight: note: {} is not recorded in a snapshot (it records files); \
                 give it again when reading the snapshot",
                g.kinds_name()
            ))
        );
    }
    let result = dispatch(cli.command, g);
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pinsight: error: {}", errors::safe_message(&e.message));
            e.code
        }
    };
    // The root the command opened may hold an unpacked `.tar.gz` recording:
    // remove it now, as `process::exit` runs no destructors.
    drop(cli.globals);
    std::process::exit(pinsight_term::out::finish(code))
}

/// The command line, parsed (a usage error ends the process with 2): only
/// the typed subcommand built, and where `--fsroot` and `--kinds` came from recorded.
fn parse() -> Cli {
    // Help wraps at pinsight's one terminal width ($COLUMNS first), the
    // epilogues' paragraphs filling it.
    let width = pinsight_term::terminal_width();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut parsed = typed_command(&argv)
        .unwrap_or_else(full_command)
        .term_width(width);
    let matches = parsed.try_get_matches_from_mut(&argv).unwrap_or_else(|e| {
        use clap::error::ErrorKind::{DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand};
        if !matches!(
            e.kind(),
            DisplayHelp | DisplayHelpOnMissingArgumentOrSubcommand
        ) {
            usage_exit(e)
        }
        // Help that lists the commands shows what each does: every one
        // built, as deferred ones are not.
        let mut all = full_command().term_width(width);
        all.build();
        usage_exit(
            all.try_get_matches_from_mut(&argv)
                .map_or_else(|e| e, |_| e),
        )
    });
    let mut command = parsed;
    refuse_global_conflicts(&mut command, &matches);
    let mut cli = Globals::from_arg_matches(&matches)
        .and_then(|globals| {
            let command = Command::from_arg_matches(&matches)?;
            Ok(Cli { globals, command })
        })
        .unwrap_or_else(|e| usage_exit(e));
    let from_env = |id| matches.value_source(id) == Some(clap::parser::ValueSource::EnvVariable);
    cli.globals.fsroot_from_env = from_env("fsroot");
    if cli.globals.fsroot.is_some() && cli.globals.hwloc_xml.is_some() {
        if from_env("fsroot") {
            // An explicit --hwloc-xml beats the environment's default
            // machine: a conflict of where a value came from, not of two
            // flags, so clap cannot declare it.
            cli.globals.fsroot = None;
        } else {
            conflict_exit(&mut command, "fsroot", "hwloc_xml");
        }
    }
    cli.globals.kinds_from_env = from_env("kinds");
    cli
}

/// The root with only the command `argv` names, `None` when it names none
/// (help, version, a mistyped name: the whole definition answers those).
///
/// Why not the whole definition: clap copies each global flag into every
/// command of the root before it parses (`Command::_propagate_global_args`,
/// deferred commands included), about 110 KB of heap and 0.08-0.1 ms of
/// every start on the test VM (`run cpus:0 -- true`, runs taking turns:
/// 2.03 -> 1.95 ms). The name is
/// found by clap itself, over the root's flags alone (so a global flag's
/// value is never taken for a command), and the command's definition is the
/// derive's own.
fn typed_command(argv: &[std::ffi::OsString]) -> Option<clap::Command> {
    let root = || <Root as clap::CommandFactory>::command();
    let found = root()
        .allow_external_subcommands(true)
        .try_get_matches_from(argv)
        .ok()?;
    let name = found.subcommand_name()?;
    let every = Command::augment_subcommands(clap::Command::new("pinsight"));
    let one = every.find_subcommand(name)?.clone();
    Some(root().subcommand(one))
}

/// Runs the command: each one parses, calls its library, renders.
fn dispatch(command: Command, g: &cli::Globals) -> errors::CmdResult {
    match command {
        Command::Topo(a) => cmd::topo::run(a, g),
        Command::Snapshot(a) => cmd::snapshot::run(a, g),
        Command::Plan(a) => cmd::plan::run(a, g),
        Command::Run(a) => cmd::run::run(a, g),
        Command::Pin(a) => cmd::pin::run(a, g),
        Command::Balance(a) => cmd::balance::run(a, g),
        Command::Latency(a) => cmd::latency::run(a, g),
        Command::Speed(a) => cmd::speed::run(a, g),
        Command::Report(a) => cmd::report::run(a, g),
        Command::Compare(a) => cmd::compare::run(*a, g),
        Command::Workload(a) => cmd::workload::run(a, g),
        Command::Simulate(a) => cmd::simulate::run(a, g),
        Command::Tune(a) => cmd::tune::run(a, g),
        Command::Model(a) => cmd::model::run(a, g),
        Command::Slice(a) => cmd::slice::run(a, g),
        Command::Gather(a) => cmd::gather::run(a, g),
        Command::Sched(a) => cmd::sched::run(a, g),
        Command::Mix(a) => cmd::mix::run(a, g),
        Command::Sf(a) => cmd::sf::run(a, g),
        Command::Emulate(a) => cmd::emulate::run(a, g),
        Command::Load(a) => cmd::load::run(a, g),
        Command::Irq(a) => cmd::irq::run(a, g),
        // Every command's definition (`generate` builds them all).
        Command::Generate(a) => cmd::generate::run(a, g, full_command()),
    }
}

/// clap checks a subcommand's declared conflicts (`conflicts_with`) over
/// the flags typed after its name: a global flag typed before it
/// (`pinsight --fsroot DIR tune --machine 6P+8E`) reaches the subcommand
/// only after that check. The same declarations, checked again over the
/// subcommand's final matches, refused in clap's words.
fn refuse_global_conflicts(command: &mut clap::Command, matches: &clap::ArgMatches) {
    use clap::parser::ValueSource;
    let Some((name, m)) = matches.subcommand() else {
        return;
    };
    let Some(sub) = command.find_subcommand_mut(name) else {
        return;
    };
    let typed = |a: &clap::Arg| {
        matches!(
            m.value_source(a.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let found = sub
        .get_arguments()
        .filter(|a| !a.is_global_set() && typed(a))
        .find_map(|a| {
            sub.get_arg_conflicts_with(a)
                .into_iter()
                .find(|o| o.is_global_set() && typed(o))
                .map(|o| (a.get_id().clone(), o.get_id().clone()))
        });
    if let Some((a, b)) = found {
        conflict_exit(sub, a.as_str(), b.as_str());
    }
}

/// Ends with clap's refusal of two flags that do not go together (ids
/// `a` and `b` of `command`), worded as clap words its own.
fn conflict_exit(command: &mut clap::Command, a: &str, b: &str) -> ! {
    let shown = |id: &str| {
        command
            .get_arguments()
            .find(|x| x.get_id() == id)
            .map_or(id.to_string(), ToString::to_string)
    };
    let message = format!(
        "the argument '{}' cannot be used with '{}'",
        shown(a),
        shown(b)
    );
    usage_exit(command.error(clap::error::ErrorKind::ArgumentConflict, message))
}

/// Ends on a clap error: help and version as clap prints them; a usage
/// error with its control characters escaped (clap quotes the value it
/// refuses as typed), a refused value, a conflict or a missing input in one
/// line, exit 2.
fn usage_exit(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit()
    }
    let text = e.render().to_string();
    // A refused value is one line (the value, the flag, what is allowed);
    // other errors keep clap's usage lines and tips.
    let text = match e.kind() {
        // Two flags that do not go together: the first line names both.
        ErrorKind::ValueValidation | ErrorKind::InvalidValue | ErrorKind::ArgumentConflict => {
            format!("{}\n", text.lines().next().unwrap_or_default())
        }
        // "...were not provided:" then one indented line per input: one
        // line naming them all.
        ErrorKind::MissingRequiredArgument => {
            let mut lines = text.lines();
            let first = lines.next().unwrap_or_default();
            let missing: Vec<&str> = lines
                .take_while(|l| l.starts_with("  "))
                .map(str::trim)
                .collect();
            format!("{first} {}\n", missing.join(", "))
        }
        _ => text,
    };
    eprint!("{}", errors::safe_message(&text));
    std::process::exit(pinsight_term::out::finish(e.exit_code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parse_holds_only_the_typed_command_found_over_the_global_flags() {
        let argv = |a: &[&str]| {
            a.iter()
                .map(Into::into)
                .collect::<Vec<std::ffi::OsString>>()
        };
        let names = |c: &clap::Command| {
            c.get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect::<Vec<_>>()
        };
        // A global flag's value that is a command's name is not the command.
        let one = typed_command(&argv(&[
            "pinsight", "--fsroot", "run", "-q", "topo", "--json",
        ]));
        assert_eq!(one.as_ref().map(names), Some(vec!["topo".to_string()]));
        let one = typed_command(&argv(&["pinsight", "run", "cpus:0", "--", "topo"]));
        assert_eq!(one.as_ref().map(names), Some(vec!["run".to_string()]));
        // Help, version, no command and a mistyped one: the whole definition.
        for a in [
            &["pinsight", "--help"][..],
            &["pinsight", "-V"],
            &["pinsight"],
            &["pinsight", "tpoo"],
        ] {
            assert!(typed_command(&argv(a)).is_none(), "{a:?}");
        }
    }

    #[test]
    fn a_subcommands_flags_are_built_only_when_it_is_parsed() {
        let mut cmd = full_command();
        let flags = |c: &clap::Command, name: &str| {
            c.find_subcommand(name).map_or(0, |s| {
                s.get_arguments().filter(|a| !a.is_global_set()).count()
            })
        };
        assert_eq!(
            flags(&cmd, "compare"),
            0,
            "compare is built before it is asked for"
        );
        cmd.try_get_matches_from_mut(["pinsight", "run", "cpus:0", "--", "true"])
            .unwrap();
        assert!(
            flags(&cmd, "run") > 5,
            "run's flags are built once it is parsed"
        );
        assert_eq!(
            flags(&cmd, "compare"),
            0,
            "only the parsed subcommand is built"
        );
    }
}
