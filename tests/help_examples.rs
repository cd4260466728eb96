//! The examples in `--help` are true and copyable: at 80 columns every
//! line of an `Examples:` block stays an indented line of its own (no
//! example wraps inside an argument), and every `# prints: ...` claim is
//! what the next command prints on the machine the help names (the
//! recorded i7-1370P), `...` standing for anything.

use crate::common_cli::*;

/// The lines of each `Examples:` block of `text`, up to its blank line.
fn example_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() == "Examples:" {
            blocks.push(
                lines
                    .by_ref()
                    .take_while(|l| !l.trim().is_empty())
                    .collect(),
            );
        }
    }
    blocks
}

#[test]
fn examples_never_wrap_inside_an_argument() {
    let mut wrapped = Vec::new();
    let mut blocks = 0;
    for c in listed_commands() {
        let help = pinsight(&[c.as_str(), "--help"]).env("COLUMNS", "80").run();
        for block in example_blocks(&help.stdout) {
            blocks += 1;
            wrapped.extend(
                block
                    .iter()
                    .filter(|l| !l.starts_with("  "))
                    .map(|l| format!("{c}: {l}")),
            );
        }
    }
    assert!(blocks > 20, "only {blocks} example blocks");
    assert!(
        wrapped.is_empty(),
        "example lines wrapped at 80 columns:\n{}",
        wrapped.join("\n")
    );
}

/// The `pinsight ...` words of an example line (inside `$(...)` when the
/// line wraps the call in a shell construct).
fn invocation(line: &str) -> Vec<String> {
    let line = line.trim();
    let inner = match line.find("$(") {
        Some(i) => &line[i + 2..line[i..].find(')').map_or(line.len(), |j| i + j)],
        None => line,
    };
    let words: Vec<String> = inner.split_whitespace().map(str::to_owned).collect();
    assert_eq!(
        words.first().map(String::as_str),
        Some("pinsight"),
        "{line}"
    );
    words[1..].to_vec()
}

/// Whether `output` holds the claim's fragments (split at `...`) in order.
fn holds(output: &str, claim: &str) -> bool {
    let flat = output.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut rest = flat.as_str();
    for part in claim.split("...").map(str::trim).filter(|p| !p.is_empty()) {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn every_printed_claim_is_what_the_command_prints() {
    let machine = hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let mut checked = 0;
    let mut wrong = Vec::new();
    for c in listed_commands() {
        let help = pinsight(&[c.as_str(), "--help"]).env("COLUMNS", "80").run();
        for block in example_blocks(&help.stdout) {
            for pair in block.windows(2) {
                let Some((_, claim)) = pair[0].split_once("# prints: ") else {
                    continue;
                };
                let args = invocation(pair[1]);
                let o = pinsight(&args).env("PINSIGHT_FSROOT", &machine).run();
                checked += 1;
                if o.code != 0 || !holds(&o.stdout, claim) {
                    wrong.push(format!(
                        "{c}: `{}` prints (exit {}):\n{}\nnot: {claim}",
                        pair[1].trim(),
                        o.code,
                        o.stdout
                    ));
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} claims");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn a_claim_matches_in_order_with_gaps() {
    assert!(holds(
        "export A='1'\nexport B='2 3'\n",
        "export A='1' ... B='2 3'"
    ));
    assert!(!holds("export B='2'\nexport A='1'\n", "A='1' ... B='2'"));
    assert_eq!(
        invocation("  eval \"$(pinsight plan p-set --format gomp)\""),
        ["plan", "p-set", "--format", "gomp"]
    );
}
