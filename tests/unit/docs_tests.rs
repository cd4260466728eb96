//! The command pages cannot drift from the flags: every visible flag of
//! every command appears in a table of `docs/src/commands/CMD.md` (as
//! `` `--flag` ``), and every flag a table's first column names exists
//! (the command's own, an alias (an old spelling kept hidden), or a global
//! flag, which `global-options.md` documents).

use std::collections::BTreeSet;

/// The table rows of a page: lines starting with `|`.
fn rows(page: &str) -> Vec<&str> {
    page.lines().filter(|l| l.starts_with('|')).collect()
}

/// Every `` `--flag `` in `text` (a backtick, then the flag).
fn flags_in(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|code| code.split([' ', ',', '=', '[', '|']))
        .filter(|w| w.starts_with("--") && w[2..].starts_with(|c: char| c.is_ascii_alphanumeric()))
        .map(|w| w.trim_end_matches(['.', ')', ':']).to_owned())
        .collect()
}

/// (visible long flags, every spelling it accepts) of one command.
fn spellings(cmd: &clap::Command) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut visible, mut all) = (BTreeSet::new(), BTreeSet::new());
    // clap's own help and version flags are not a command's (built commands have them).
    let own =
        |a: &&clap::Arg| !a.is_global_set() && !matches!(a.get_id().as_str(), "help" | "version");
    for a in cmd.get_arguments().filter(own) {
        let Some(long) = a.get_long() else { continue };
        if !a.is_hide_set() {
            visible.insert(format!("--{long}"));
        }
        all.insert(format!("--{long}"));
        for alias in a.get_all_aliases().unwrap_or_default() {
            all.insert(format!("--{alias}"));
        }
    }
    (visible, all)
}

#[test]
fn every_flag_is_in_its_command_page_and_every_listed_flag_exists() {
    use clap::Subcommand;
    let mut root = crate::Command::augment_subcommands(
        <crate::cli::Globals as clap::Args>::augment_args(clap::Command::new("pinsight")),
    )
    .disable_help_subcommand(true);
    // The subcommands' flags are deferred until a build.
    root.build();
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/commands");
    let mut problems = Vec::new();
    let mut checked = 0;
    for cmd in root.get_subcommands() {
        let name = cmd.get_name();
        let path = docs.join(format!("{name}.md"));
        let Ok(page) = std::fs::read_to_string(&path) else {
            problems.push(format!("{name}: no page {}", path.display()));
            continue;
        };
        let (visible, all) = spellings(cmd);
        let rows = rows(&page);
        let documented = flags_in(&rows.join("\n"));
        for flag in visible.difference(&documented) {
            problems.push(format!("{name}.md: no table names `{flag}`"));
        }
        let first_column: String = rows
            .iter()
            .filter_map(|r| r.split('|').nth(1))
            .collect::<Vec<_>>()
            .join(" ");
        let globals = ["--fsroot", "--hwloc-xml", "--json", "--quiet", "--kinds"];
        for flag in flags_in(&first_column) {
            if !all.contains(&flag) && !globals.contains(&flag.as_str()) {
                problems.push(format!(
                    "{name}.md: a table lists `{flag}`, which {name} lacks"
                ));
            }
        }
        checked += visible.len();
    }
    assert!(checked > 150, "only {checked} flags found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_flag_reader_reads_code_spans() {
    let f = flags_in("| `--a N`, `--b-c=X` (alias `--d`) | see `pinsight x --e` and --f |");
    let want: BTreeSet<String> = ["--a", "--b-c", "--d", "--e"].map(String::from).into();
    assert_eq!(f, want);
}

/// A vocabulary row: its flags, the commands the commands column names
/// (`every command` is none: a global flag) and the old spellings.
struct Row {
    flags: BTreeSet<String>,
    commands: BTreeSet<String>,
    old: BTreeSet<String>,
}

/// The rows of `docs/src/vocabulary.md`'s first table (the one whose
/// header names the commands).
fn vocabulary_rows(page: &str, names: &BTreeSet<String>) -> Vec<Row> {
    let table = page
        .split("\n\n")
        .find(|block| block.starts_with("| concept | flag | commands |"))
        .expect("the vocabulary table");
    rows(table)
        .into_iter()
        .skip(2)
        .map(|r| {
            // `\|` is a pipe inside a cell (`Y\|FILE`), not a border.
            let r = r.replace("\\|", "/");
            let cells: Vec<&str> = r.split('|').collect();
            // A flag's words, not its value's: `--smt-yield Y\|FILE`.
            let flags = flags_in(cells[2]);
            let commands = cells[3]
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .filter(|w| names.contains(*w))
                .map(String::from)
                .collect();
            Row {
                flags,
                commands,
                old: flags_in(cells[4]),
            }
        })
        .collect()
}

/// flag -> the commands that show it; command -> every spelling it accepts.
type Shown = std::collections::BTreeMap<String, BTreeSet<String>>;

fn shown_and_accepted(root: &clap::Command) -> (Shown, Shown) {
    let (mut shown, mut accepted) = (Shown::new(), Shown::new());
    for cmd in root.get_subcommands() {
        let (visible, all) = spellings(cmd);
        for f in visible {
            shown
                .entry(f)
                .or_default()
                .insert(cmd.get_name().to_owned());
        }
        accepted.insert(cmd.get_name().to_owned(), all);
    }
    (shown, accepted)
}

/// A shown flag: in no row (fine when one command has it), or in one row
/// whose commands are those of its flags.
fn flag_problem(
    flag: &str,
    commands: &BTreeSet<String>,
    table: &[Row],
    shown: &Shown,
) -> Option<String> {
    let rows: Vec<&Row> = table.iter().filter(|r| r.flags.contains(flag)).collect();
    match rows.as_slice() {
        [] if commands.len() > 1 => Some(format!(
            "{flag} ({}) is shared but not in the table",
            commands.iter().cloned().collect::<Vec<_>>().join(", ")
        )),
        [] => None,
        [row] => {
            // A row of several flags names the union of their commands.
            let union: BTreeSet<String> = row
                .flags
                .iter()
                .flat_map(|f| shown.get(f).cloned().unwrap_or_default())
                .collect();
            (row.commands != union).then(|| {
                format!(
                    "{flag}: the table says {:?}, the commands are {union:?}",
                    row.commands
                )
            })
        }
        _ => Some(format!("{flag} is in {} rows", rows.len())),
    }
}

/// A row's flags exist; its old spellings are accepted by a command of
/// the row and shown by none of them.
fn row_problems(row: &Row, shown: &Shown, accepted: &Shown) -> Vec<String> {
    let mut problems = Vec::new();
    for flag in &row.flags {
        if !shown.contains_key(flag) && !flag.starts_with("--kinds") {
            problems.push(format!("{flag}: in the table, in no command"));
        }
    }
    for old in &row.old {
        if !row.commands.iter().any(|c| accepted[c].contains(old)) {
            problems.push(format!("{old}: no command of its row accepts it"));
        }
        let visible_in_row = row
            .commands
            .iter()
            .any(|c| shown.get(old).is_some_and(|s| s.contains(c)));
        if visible_in_row && !row.flags.contains(old) {
            problems.push(format!("{old}: an old spelling still shown"));
        }
    }
    problems
}

#[test]
fn every_shared_flag_is_in_the_vocabulary_table() {
    use clap::Subcommand;
    let mut root = crate::Command::augment_subcommands(clap::Command::new("pinsight"))
        .disable_help_subcommand(true);
    root.build();
    let names: BTreeSet<String> = root
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/vocabulary.md"),
    )
    .unwrap();
    let table = vocabulary_rows(&page, &names);
    assert!(table.len() > 30, "only {} rows read", table.len());
    let (shown, accepted) = shown_and_accepted(&root);
    let mut problems: Vec<String> = shown
        .iter()
        .filter_map(|(flag, commands)| flag_problem(flag, commands, &table, &shown))
        .collect();
    for row in &table {
        problems.extend(row_problems(row, &shown, &accepted));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
