//! The crates whose `Cargo.toml` turns the doc-test pass off
//! (`doctest = false`: a rustdoc run per crate that found nothing) have no
//! runnable example in their documentation, so none is skipped in silence:
//! a crate that gains one must turn the pass back on.

use std::path::{Path, PathBuf};

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The lines (1-based) of `text` that open a doc-comment code block rustdoc
/// would run: a fence with no info string, or one naming rust (not `text`,
/// `ignore`, `no_run`, `compile_fail` or another language).
fn runnable_examples(text: &str) -> Vec<usize> {
    let mut open = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let Some(doc) = t.strip_prefix("///").or_else(|| t.strip_prefix("//!")) else {
            continue;
        };
        let Some(info) = doc.trim_start().strip_prefix("```") else {
            continue;
        };
        if open {
            open = false;
            continue;
        }
        open = true;
        let words: Vec<&str> = info.split(',').map(str::trim).collect();
        // Any other word (`text`, `ignore`, `no_run`, a language) keeps
        // the block from running.
        let runs = words
            .iter()
            .all(|w| w.is_empty() || *w == "rust" || w.starts_with("edition"));
        if runs {
            found.push(i + 1);
        }
    }
    found
}

#[test]
fn crates_without_the_doc_test_pass_have_no_runnable_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut off = 0;
    let mut problems = Vec::new();
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let manifest = std::fs::read_to_string(e.path().join("Cargo.toml")).unwrap_or_default();
        if !manifest.lines().any(|l| l.trim() == "doctest = false") {
            continue;
        }
        off += 1;
        let mut files = Vec::new();
        rs_files(&e.path().join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for line in runnable_examples(&text) {
                problems.push(format!("{}:{line}", f.display()));
            }
        }
    }
    assert!(off > 10, "only {off} crates read");
    assert!(
        problems.is_empty(),
        "runnable examples in crates whose doc-test pass is off (set doctest = true):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_example_reader_tells_runnable_blocks_from_text() {
    let text = "//! ```\n//! let x = 1;\n//! ```\n/// ```text\n/// a\n/// ```\n/// ```rust,no_run\n/// ```\n/// ```rust\n/// ```\n";
    assert_eq!(runnable_examples(text), vec![1, 9]);
}
