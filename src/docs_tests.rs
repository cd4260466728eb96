//! The command pages cannot drift from the flags: every visible flag of
//! every command appears in a table of `docs/src/commands/CMD.md` (as
//! `` `--flag` ``), and every flag a table's first column names exists
//! (the command's own, an alias, an old spelling kept hidden, or a global
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
    for a in cmd.get_arguments().filter(|a| !a.is_global_set()) {
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
    let root = crate::vocabulary::with_old_spellings(crate::Command::augment_subcommands(
        <crate::cli::Globals as clap::Args>::augment_args(clap::Command::new("pinsight")),
    ));
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
