//! `--help` of every subcommand wraps to `COLUMNS` (40, 80, 200): no line
//! wider than the terminal but an unbreakable token, the epilogue's
//! examples and table rows never broken at 80 or 200 columns, and its prose
//! filling a wide terminal instead of keeping 80-column breaks.

use std::process::Command;

const SUBCOMMANDS: &[&str] = &[
    "topo", "snapshot", "plan", "run", "pin", "latency", "speed", "report", "compare", "workload",
    "simulate", "tune", "model", "slice", "gather", "sched", "mix", "sf", "load", "irq",
];

/// `pinsight [SUB] --help` with `COLUMNS=columns`, stdout a pipe.
fn help(sub: Option<&str>, columns: usize) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pinsight"));
    cmd.args(sub)
        .arg("--help")
        .env("COLUMNS", columns.to_string());
    let out = cmd.output().expect("pinsight runs");
    assert!(out.status.success(), "{sub:?} --help: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

fn width(line: &str) -> usize {
    line.chars().count()
}

/// The epilogue: the lines after the last option (`-V, --version`).
fn epilogue(help: &str) -> Vec<&str> {
    let lines: Vec<&str> = help.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.contains("Print version"))
        .expect("every command has --version");
    // The global options follow the command's own, under their heading:
    // the epilogue is the first unindented text after them.
    let start = match lines[last..].iter().position(|l| *l == "Global options:") {
        Some(g) => {
            let from = last + g + 1;
            from + lines[from..]
                .iter()
                .position(|l| !l.is_empty() && !l.starts_with(' '))
                .unwrap_or(lines.len() - from)
        }
        None => last + 1,
    };
    lines[start..].to_vec()
}

fn all() -> impl Iterator<Item = Option<&'static str>> {
    std::iter::once(None).chain(SUBCOMMANDS.iter().map(|s| Some(*s)))
}

#[test]
fn no_line_is_wider_than_the_terminal() {
    for sub in all() {
        for columns in [40, 80, 200] {
            for line in help(sub, columns).lines() {
                // An unbreakable token (a path, a long option) may be wider,
                // and clap never wraps its usage line.
                let one_token = !line.trim().contains(' ') || line.starts_with("Usage: ");
                assert!(
                    width(line) <= columns || one_token,
                    "{sub:?} at {columns} columns: {} wide: {line:?}",
                    width(line)
                );
            }
        }
    }
}

#[test]
fn examples_and_table_rows_are_never_broken_at_80_or_200() {
    for sub in all() {
        let wide = help(sub, 100_000);
        let rows: Vec<&str> = epilogue(&wide)
            .into_iter()
            .filter(|l| l.starts_with("  "))
            .collect();
        // Indented lines (examples, their comments, table rows) fit 80.
        for row in &rows {
            assert!(width(row) <= 80, "{sub:?}: {} wide: {row:?}", width(row));
        }
        for columns in [80, 200] {
            let text = help(sub, columns);
            let lines: Vec<&str> = text.lines().collect();
            for row in &rows {
                assert!(
                    lines.contains(row),
                    "{sub:?} at {columns} columns broke {row:?}:\n{text}"
                );
            }
        }
    }
}

#[test]
fn paragraphs_fill_a_wide_terminal() {
    let mut long = 0;
    for sub in all() {
        let wide = help(sub, 100_000);
        let longest = |text: &str| {
            epilogue(text)
                .into_iter()
                .filter(|l| !l.starts_with(' '))
                .map(width)
                .max()
                .unwrap_or(0)
        };
        if longest(&wide) <= 200 {
            continue;
        }
        long += 1;
        let at200 = help(sub, 200);
        assert!(
            longest(&at200) > 100,
            "{sub:?}: prose at 200 columns still breaks before column 100:\n{at200}"
        );
    }
    assert!(long > 3, "only {long} commands have long paragraphs");
}
