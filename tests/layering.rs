//! The crate graph is written down: every edge between workspace packages
//! is declared in [`EDGES`] with the reason it exists, and the check over
//! `cargo metadata` fails on any edge that is used but not declared, or
//! declared but not used. A new edge is therefore a reviewed change to this
//! file. Beside the edges:
//!
//! - the declared graph is a DAG, and every edge goes to the same or a
//!   lower layer (see docs/src/architecture.md):
//!
//!   ```text
//!   pure         cpuset, stats, model, latency-model, plan, tune-model,
//!                sched-model                          (no I/O, no OS)
//!   os           sys                                  (the only OS calls)
//!   terminal     term                                 (width, wrapping, escaping,
//!                                                     progress bar; no domain)
//!   discovery    topology                             (reads /sys, hwloc XML)
//!   measurement  lifecycle, measure, launch, latency, speed, workload,
//!                compare, tune, sched, report, emulate, load
//!   cli          pinsight
//!   test-support testkit                              (dev-dependency only)
//!   ```
//!
//! - a pure package uses no OS, terminal or drawing crate, and its sources
//!   name no `std::fs`, `std::process`, `std::net`, `std::env` or `libc`
//!   (checked by source, not by crate name);
//! - every package but the ones in [`UNSAFE_ALLOWED`] forbids unsafe code
//!   at its root;
//! - one import path per type: no source re-exports another crate's item
//!   (`pub use other_crate::...`), and below a crate's root no module
//!   re-exports an item from elsewhere in its crate (`pub use crate::...`,
//!   `pub use super::...`).
//! - one spawn path: production code starts programs only through
//!   `pinsight_sys::spawn::Spawn` (see [`COMMAND_ALLOWED`] and
//!   [`command_violations`] for exactly what is scanned and exempt).
//!
//! Dev- and build-dependencies are not checked (any suite may use
//! testkit). `cargo test --release --test layering` runs it (CI: `.ci/run`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The layers, lowest first. A declared edge may go only to a package of
/// the same or a lower layer.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "pure",
        &[
            "pinsight-cpuset",
            "pinsight-stats",
            "pinsight-model",
            "pinsight-latency-model",
            "pinsight-plan",
            "pinsight-tune-model",
            "pinsight-sched-model",
        ],
    ),
    ("os", &["pinsight-sys"]),
    ("terminal", &["pinsight-term"]),
    ("discovery", &["pinsight-topology"]),
    (
        "measurement",
        &[
            "pinsight-lifecycle",
            "pinsight-measure",
            "pinsight-launch",
            "pinsight-latency",
            "pinsight-speed",
            "pinsight-workload",
            "pinsight-compare",
            "pinsight-tune",
            "pinsight-sched",
            "pinsight-report",
            "pinsight-emulate",
            "pinsight-load",
        ],
    ),
    ("cli", &["pinsight"]),
    // A dev-dependency of any suite, a normal dependency of nothing.
    ("test-support", &["pinsight-testkit"]),
    // The libFuzzer targets of the parsers of outside input (fuzz/).
    ("fuzz", &["pinsight-fuzz"]),
];

/// An edge: the package used, and why.
type Edge = (&'static str, &'static str);

/// Every package's normal dependencies inside the workspace, each with its
/// reason. The check demands equality with Cargo.toml: add an edge here
/// (with a reason a reviewer can weigh) to add it there.
const EDGES: &[(&str, &[Edge])] = &[
    // ---- pure ----
    ("pinsight-cpuset", &[]),
    ("pinsight-stats", &[]),
    (
        "pinsight-model",
        &[("pinsight-cpuset", "a topology's objects are CPU sets")],
    ),
    (
        "pinsight-tune-model",
        &[(
            "pinsight-model",
            "--machine's one grammar (machine_spec::MachineSpec)",
        )],
    ),
    (
        "pinsight-sched-model",
        &[(
            "pinsight-model",
            "--machine's one grammar (machine_spec::MachineSpec)",
        )],
    ),
    (
        "pinsight-latency-model",
        &[
            (
                "pinsight-cpuset",
                "matrices and groups are over CPU ids and sets",
            ),
            ("pinsight-stats", "a pair's latency is a median of samples"),
        ],
    ),
    (
        "pinsight-plan",
        &[
            ("pinsight-cpuset", "a plan is CPU sets"),
            ("pinsight-model", "plans are made on the topology model"),
            (
                "pinsight-latency-model",
                "latency-aware groups and pipelines",
            ),
            (
                "pinsight-tune-model",
                "tune's P/E/SMT configuration laid out as a plan",
            ),
        ],
    ),
    // ---- os ----
    (
        "pinsight-sys",
        &[("pinsight-cpuset", "affinity masks are CPU sets")],
    ),
    // ---- terminal ----
    (
        "pinsight-term",
        &[(
            "pinsight-sys",
            "the progress bar draws sys's Progress and escapes its labels",
        )],
    ),
    // ---- discovery ----
    (
        "pinsight-topology",
        &[
            ("pinsight-cpuset", "sysfs CPU lists"),
            ("pinsight-model", "discovery fills in the topology model"),
            (
                "pinsight-sys",
                "every read through FsRoot; affinity for CPUID",
            ),
            (
                "pinsight-term",
                "the machine's views: width, wrapping, size units",
            ),
        ],
    ),
    // ---- measurement ----
    (
        "pinsight-lifecycle",
        &[("pinsight-sys", "signals, waiting, files, /proc")],
    ),
    (
        "pinsight-measure",
        &[
            ("pinsight-cpuset", "runs are pinned to CPU sets"),
            ("pinsight-model", "sf per core kind"),
            ("pinsight-sys", "spawn, rusage, perf counters, /proc/stat"),
            ("pinsight-lifecycle", "exit codes, signals, progress"),
            (
                "pinsight-sched-model",
                "the speedup-factor estimator from counters",
            ),
            (
                "pinsight-emulate",
                "an emulation's own stealers are not disturbance",
            ),
        ],
    ),
    (
        "pinsight-launch",
        &[
            ("pinsight-cpuset", "plans and masks are CPU sets"),
            ("pinsight-model", "the topology a plan was made on"),
            ("pinsight-plan", "launch applies the planner's plans"),
            ("pinsight-sys", "affinity, spawn, signals, /proc"),
            (
                "pinsight-lifecycle",
                "program resolution, exit codes, state files",
            ),
            ("pinsight-stats", "medians of followed threads' rates"),
            (
                "pinsight-load",
                "rebalance weighs moves by per-task progress",
            ),
            ("pinsight-term", "the views: wrapping, escaping"),
        ],
    ),
    (
        "pinsight-latency",
        &[
            ("pinsight-cpuset", "the CPUs measured"),
            (
                "pinsight-model",
                "the charts' bands are the machine's core kinds",
            ),
            ("pinsight-latency-model", "the matrix it measures and loads"),
            ("pinsight-stats", "confidence intervals of pair medians"),
            ("pinsight-sys", "pinned threads, bounded file reads"),
            (
                "pinsight-measure",
                "each run's disturbance beside the matrix",
            ),
            ("pinsight-term", "the views: width, wrapping, escaping"),
            ("pinsight-lifecycle", "chart files written crash-safe"),
        ],
    ),
    (
        "pinsight-speed",
        &[
            ("pinsight-cpuset", "the CPUs measured"),
            ("pinsight-model", "speed per core kind"),
            ("pinsight-topology", "discovers the machine it measures"),
            ("pinsight-stats", "medians and their intervals"),
            ("pinsight-sys", "pinned threads, progress"),
            ("pinsight-measure", "disturbance during the measurement"),
            ("pinsight-emulate", "says when it runs inside an emulation"),
            ("pinsight-lifecycle", "the weights file written crash-safe"),
        ],
    ),
    (
        "pinsight-workload",
        &[
            ("pinsight-sys", "pinned worker threads, progress"),
            ("pinsight-cpuset", "the view names a run's CPUs as a list"),
        ],
    ),
    (
        "pinsight-compare",
        &[
            ("pinsight-cpuset", "placements are CPU sets"),
            ("pinsight-model", "the machine a comparison runs on"),
            (
                "pinsight-topology",
                "the recorded machine and VM identity in journals",
            ),
            ("pinsight-latency-model", "latency-aware placements"),
            ("pinsight-plan", "each placement is a plan"),
            ("pinsight-launch", "each run is launched under its plan"),
            ("pinsight-measure", "each run is measured"),
            ("pinsight-lifecycle", "journal, signals, output files"),
            ("pinsight-stats", "the statistics of the verdict"),
            ("pinsight-sys", "spawn, memory policy, files"),
            (
                "pinsight-term",
                "the views: wrapping, escaping, progress lines",
            ),
        ],
    ),
    (
        "pinsight-tune",
        &[
            ("pinsight-cpuset", "configurations are CPU sets"),
            ("pinsight-model", "the machine tuned for"),
            ("pinsight-tune-model", "the asymmetric Amdahl fit"),
            ("pinsight-plan", "a configuration laid out as a plan"),
            (
                "pinsight-compare",
                "runs, journals and program metrics of compare",
            ),
            ("pinsight-measure", "run records and metrics"),
            (
                "pinsight-lifecycle",
                "exit codes, signals, program resolution",
            ),
            ("pinsight-sys", "FsRoot, progress"),
            ("pinsight-term", "the views: wrapping, escaping, width"),
        ],
    ),
    (
        "pinsight-sched",
        &[
            ("pinsight-cpuset", "CPU sets per kind"),
            ("pinsight-model", "the machine scheduled"),
            ("pinsight-sched-model", "AARR, TO and ACFS themselves"),
            ("pinsight-compare", "program metrics and output capture"),
            ("pinsight-measure", "sf from counters, disturbance"),
            ("pinsight-lifecycle", "journal, signals, exit codes"),
            ("pinsight-stats", "mean intervals of program results"),
            ("pinsight-sys", "affinity and /proc of managed threads"),
            ("pinsight-term", "the views: wrapping"),
            (
                "pinsight-topology",
                "sched's capacity feed (Intel HFI changes)",
            ),
        ],
    ),
    (
        "pinsight-report",
        &[
            ("pinsight-cpuset", "CPU sets in the report"),
            ("pinsight-model", "the machine reported"),
            ("pinsight-topology", "VM detection"),
            ("pinsight-latency-model", "latency domains and groups"),
            ("pinsight-latency", "measures the matrix within the budget"),
            (
                "pinsight-speed",
                "measures speed per kind within the budget",
            ),
            ("pinsight-measure", "disturbance during the report"),
            (
                "pinsight-lifecycle",
                "the report's files checked before measuring",
            ),
            ("pinsight-stats", "quantiles"),
            ("pinsight-sys", "FsRoot, progress"),
            (
                "pinsight-term",
                "the views: width, wrapping, escaping, sizes",
            ),
        ],
    ),
    (
        "pinsight-emulate",
        &[
            ("pinsight-cpuset", "the CPUs slowed"),
            ("pinsight-model", "the declared kinds it emulates"),
            ("pinsight-lifecycle", "exit codes, signals, progress"),
            ("pinsight-sys", "stealer threads, cpufreq caps, /proc/stat"),
            (
                "pinsight-term",
                "the report's view wrapped for the terminal",
            ),
        ],
    ),
    (
        "pinsight-load",
        &[
            ("pinsight-cpuset", "CPU sets"),
            ("pinsight-model", "load by capacity per kind"),
            ("pinsight-plan", "balance plans the moves"),
            ("pinsight-lifecycle", "signals, state files"),
            ("pinsight-sys", "/proc/stat, per-task stats, IRQ affinity"),
            ("pinsight-term", "the views: wrapping, escaping"),
        ],
    ),
    // ---- cli: translates flags into each feature's request ----
    (
        "pinsight",
        &[
            ("pinsight-cpuset", "CPU list flags"),
            ("pinsight-model", "--kinds and the machine"),
            ("pinsight-topology", "discovery for every command"),
            ("pinsight-latency-model", "latency file flags"),
            ("pinsight-plan", "plan, slice"),
            ("pinsight-tune-model", "tune, model"),
            ("pinsight-sched-model", "simulate"),
            ("pinsight-sys", "--fsroot, progress, text"),
            ("pinsight-lifecycle", "exit codes, signals"),
            ("pinsight-measure", "measurement root, sf"),
            ("pinsight-launch", "run, pin"),
            ("pinsight-latency", "latency"),
            ("pinsight-speed", "speed"),
            ("pinsight-workload", "workload"),
            ("pinsight-compare", "compare"),
            ("pinsight-tune", "tune"),
            ("pinsight-sched", "sched, mix, sf"),
            ("pinsight-report", "report"),
            ("pinsight-emulate", "emulate"),
            ("pinsight-load", "load, balance, irq"),
            (
                "pinsight-term",
                "the terminal width and wrapper, the progress bar",
            ),
        ],
    ),
    (
        "pinsight-testkit",
        &[
            ("pinsight-cpuset", "synthetic machines"),
            (
                "pinsight-model",
                "hand-built machines (one Topology builder)",
            ),
            ("pinsight-sys", "recorded archives"),
        ],
    ),
    (
        "pinsight-fuzz",
        &[
            ("pinsight-cpuset", "cpulists and masks"),
            ("pinsight-model", "kinds specs, shares"),
            ("pinsight-topology", "hwloc XML, sysfs, HFI, /proc/cpuinfo"),
            ("pinsight-latency-model", "latency CSV files"),
            ("pinsight-plan", "--mem specs, launcher variables"),
            ("pinsight-tune-model", "tune runs, machine and model specs"),
            ("pinsight-sched-model", "program lists, machine specs"),
            ("pinsight-tune", "the simulated executor's spec"),
            ("pinsight-sched", "--sf specs, the mix journal"),
            (
                "pinsight-measure",
                "counter windows, /proc/stat disturbance",
            ),
            ("pinsight-sys", "/proc/stat"),
            ("pinsight-load", "/proc/interrupts, schedstat, task stat"),
        ],
    ),
];

/// Crates a pure package may not depend on: OS calls, terminals, files,
/// progress bars, tables, charts and images.
const IMPURE_CRATES: &[&str] = &[
    "libc",
    "nix",
    "rustix",
    "signal-hook",
    "tempfile",
    "terminal_size",
    "indicatif",
    "comfy-table",
    "plotters",
    "image",
    "dejavu",
    "resvg",
    "tiny-skia",
];

/// What a pure package's source may not name (outside comments).
const IMPURE_PATHS: &[&str] = &["std::fs", "std::process", "std::net", "std::env", "libc::"];

/// Packages that may hold unsafe code, and why; every other package has
/// `#![forbid(unsafe_code)]` at its root.
const UNSAFE_ALLOWED: &[(&str, &str)] = &[
    ("pinsight-sys", "the one crate of OS calls"),
    (
        "pinsight-topology",
        "the CPUID instruction, live discovery only",
    ),
    (
        "pinsight-workload",
        "the LU kernel's threads write disjoint rows of one matrix",
    ),
    (
        "pinsight-fuzz",
        "libFuzzer's entry point is a #[no_mangle] function (fuzz_target!)",
    ),
];

/// The files of a package's `src/` that may still name
/// `std::process::Command` outside test code, and why. Every other use
/// fails [`command_violations`]; an entry whose file no longer names it
/// fails too, so the list only shrinks. `crates/sys/src/spawn.rs` (the
/// one spawn path) is exempt without an entry.
const COMMAND_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/sys/src/affinity.rs",
        "set_affinity_before_exec: the test suites start their helper processes with a std Command on a CPU mask",
    ),
];

fn layer_of(name: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, crates))| crates.contains(&name))
        .map(|(i, (layer, _))| (i, *layer))
}

fn declared(name: &str) -> Option<&'static [Edge]> {
    EDGES.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
}

/// Problems of the table itself: every edge goes to a known package of
/// the same or a lower layer, has a reason, and the graph has no cycle.
fn table_violations() -> Vec<String> {
    let mut out = Vec::new();
    for (from, edges) in EDGES {
        let Some((rank, layer)) = layer_of(from) else {
            out.push(format!("{from} is in EDGES but has no layer"));
            continue;
        };
        for (to, why) in *edges {
            if why.trim().is_empty() {
                out.push(format!("edge {from} -> {to} has no reason"));
            }
            match layer_of(to) {
                None => out.push(format!("edge {from} -> {to}: {to} has no layer")),
                Some((r, to_layer)) if r > rank => out.push(format!(
                    "edge {from} -> {to}: {layer} may not depend on {to_layer}"
                )),
                _ => {}
            }
            if *to == "pinsight-testkit" {
                out.push(format!(
                    "edge {from} -> {to}: testkit is a dev-dependency only"
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle() {
        out.push(format!(
            "the declared graph has a cycle: {}",
            cycle.join(" -> ")
        ));
    }
    out
}

/// A cycle of the declared graph, if any (depth-first search).
fn find_cycle() -> Option<Vec<&'static str>> {
    fn visit(
        node: &'static str,
        path: &mut Vec<&'static str>,
        done: &mut Vec<&'static str>,
    ) -> Option<Vec<&'static str>> {
        if let Some(i) = path.iter().position(|n| *n == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if done.contains(&node) {
            return None;
        }
        path.push(node);
        for (to, _) in declared(node).unwrap_or(&[]) {
            if let Some(c) = visit(to, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(node);
        None
    }
    let mut done = Vec::new();
    EDGES
        .iter()
        .find_map(|(n, _)| visit(n, &mut Vec::new(), &mut done))
}

/// The workspace packages of `metadata` (`cargo metadata --format-version
/// 1`): name, directory, and normal dependencies.
fn workspace(metadata: &Value) -> Vec<(String, PathBuf, Vec<String>)> {
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for p in metadata["packages"].as_array().into_iter().flatten() {
        if !p["id"].as_str().is_some_and(|id| members.contains(&id)) {
            continue;
        }
        let name = p["name"].as_str().unwrap_or("?").to_string();
        let dir = Path::new(p["manifest_path"].as_str().unwrap_or("/"))
            .parent()
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        let deps = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str().map(str::to_string))
            .collect();
        out.push((name, dir, deps));
    }
    out
}

/// The edges used (Cargo.toml) against the edges declared, both ways, and
/// pure packages' external crates.
fn violations(metadata: &Value) -> Vec<String> {
    let packages = workspace(metadata);
    let local: Vec<&str> = packages.iter().map(|(n, _, _)| n.as_str()).collect();
    let mut out = Vec::new();
    for (name, _, deps) in &packages {
        let Some(edges) = declared(name) else {
            out.push(format!(
                "{name} has no entry in EDGES: add it (and to LAYERS) in tests/layering.rs"
            ));
            continue;
        };
        let pure = layer_of(name).is_some_and(|(r, _)| r == 0);
        for dep in deps {
            let is_local = local.contains(&dep.as_str()) || layer_of(dep).is_some();
            if is_local && !edges.iter().any(|(to, _)| to == dep) {
                out.push(format!(
                    "undeclared edge {name} -> {dep}: declare it in EDGES (tests/layering.rs) with its reason, or remove it"
                ));
            } else if !is_local && pure && IMPURE_CRATES.contains(&dep.as_str()) {
                out.push(format!(
                    "forbidden edge {name} -> {dep}: a pure crate may not use {dep}"
                ));
            }
        }
        for (to, _) in edges {
            if local.contains(to) && !deps.iter().any(|d| d == to) {
                out.push(format!(
                    "declared edge {name} -> {to} is not in Cargo.toml: remove it from EDGES"
                ));
            }
        }
    }
    out
}

/// The Rust sources under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A package's Rust sources: under `src/`, or for the fuzz package
/// (which has none) its `fuzz_targets/`.
fn package_sources(dir: &Path) -> Vec<PathBuf> {
    let src = ["src", "fuzz_targets"]
        .iter()
        .map(|d| dir.join(d))
        .find(|d| d.is_dir())
        .unwrap_or_else(|| dir.join("src"));
    sources(&src)
}

/// Every workspace package's name and sources ([`package_sources`]),
/// read; a package without any fails.
fn workspace_sources() -> Vec<(String, Vec<(PathBuf, String)>)> {
    workspace(&workspace_metadata())
        .into_iter()
        .map(|(name, dir, _)| {
            let files: Vec<(PathBuf, String)> = package_sources(&dir)
                .into_iter()
                .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
                .collect();
            assert!(
                !files.is_empty(),
                "{name}: no sources under {}",
                dir.display()
            );
            (name, files)
        })
        .collect()
}

/// `text` without comments (line, doc and block) and string literals'
/// contents, so that prose naming `std::fs` is not a use of it.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'r' && matches!(b.get(i + 1), Some(b'#' | b'"')) {
            // A raw string r"…" or r#"…"#: ends at the quote and as many #.
            let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            i += 2 + hashes;
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // An escaped char literal ('\'', '\"', '\n'): skip the escaped
            // character, then to the closing quote.
            i += 3;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A char literal such as '"' (not a lifetime).
            i += 3;
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push('"');
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Source-level problems of one package: impure paths in a pure one, a
/// missing `forbid(unsafe_code)`, re-exports of others' items.
fn source_violations(name: &str, files: &[(PathBuf, String)], root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let pure = layer_of(name).is_some_and(|(r, _)| r == 0);
    for (path, text) in files {
        let code = code_only(text);
        let shown = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        if pure {
            for bad in IMPURE_PATHS {
                if code.contains(bad) {
                    out.push(format!("{shown}: the pure crate {name} uses {bad}"));
                }
            }
        }
        let is_root = path.ends_with("src/lib.rs") || path.ends_with("src/main.rs");
        for line in code.lines() {
            let l = line.trim_start();
            let Some(rest) = l.strip_prefix("pub use ") else {
                continue;
            };
            let first = rest
                .trim_start_matches("::")
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            if first.starts_with("pinsight") {
                out.push(format!(
                    "{shown}: `{}` re-exports another crate's item: import it from its home",
                    l.trim_end()
                ));
            } else if !is_root && (first == "crate" || first == "super") {
                out.push(format!(
                    "{shown}: `{}` gives an item a second path: import it from its home",
                    l.trim_end()
                ));
            }
        }
    }
    let forbids = files.iter().any(|(p, t)| {
        (p.ends_with("src/lib.rs") || p.ends_with("src/main.rs"))
            && code_only(t).contains("#![forbid(unsafe_code)]")
    });
    if !forbids && !UNSAFE_ALLOWED.iter().any(|(n, _)| *n == name) {
        out.push(format!(
            "{name} does not forbid unsafe code at its root (only {} may hold it)",
            UNSAFE_ALLOWED
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}

/// `code` (as [`code_only`] gives it) without the items under
/// `#[cfg(test)]`: from the attribute to the end of its item, the `}`
/// matching the item's first `{` or a `;` before any `{` (a test module,
/// a test-only `impl`, `mod tests;`).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth <= 1 => {
                    end = i + 1;
                    break;
                }
                '}' => depth -= 1,
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Whether `code` names std's `Command` (or `CommandExt`): a path
/// `process::Command…` (`std::process::Command`, `use
/// std::os::unix::process::CommandExt`) or a group `process::{…, Command}`.
fn names_std_command(code: &str) -> bool {
    code.contains("process::Command")
        || code.match_indices("process::{").any(|(i, _)| {
            let group = &code[i..];
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "Command" || w == "CommandExt")
        })
}

/// One spawn path: the files (`path` relative to the workspace root,
/// its text) of a package's `src/` that start programs with
/// `std::process::Command` instead of `pinsight_sys::spawn::Spawn`, and
/// the [`COMMAND_ALLOWED`] entries no longer needed.
///
/// Scanned: every `.rs` file under each workspace package's `src/` (the
/// root package's `src/` too), as code only ([`code_only`]: comments,
/// doc comments and their examples, and string contents are prose).
/// Exempt: test code — items under `#[cfg(test)]` ([`without_test_items`];
/// `#[cfg(any(test, …))]` is not recognised), and everything outside
/// `src/` (`tests/`, `benches/`, `examples/`, `build.rs`) — the
/// test-support package `pinsight-testkit`, and `crates/sys/src/spawn.rs`
/// itself.
fn command_violations(package: &str, files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    if package == "pinsight-testkit" {
        return out;
    }
    for (path, text) in files {
        if path == "crates/sys/src/spawn.rs" {
            continue;
        }
        let uses = names_std_command(&without_test_items(&code_only(text)));
        let allowed = COMMAND_ALLOWED.iter().any(|(p, _)| p == path);
        if uses && !allowed {
            out.push(format!(
                "{path} starts a program with std::process::Command: use pinsight_sys::spawn::Spawn (the one spawn path)"
            ));
        } else if !uses && allowed {
            out.push(format!(
                "{path} no longer names std::process::Command: remove it from COMMAND_ALLOWED (tests/layering.rs)"
            ));
        }
    }
    out
}

fn workspace_metadata() -> Value {
    // --no-deps: the declared dependencies of the workspace packages are all
    // the check needs, and it works offline without a resolved registry.
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn the_declared_graph_is_a_layered_dag_with_reasons() {
    let found = table_violations();
    assert!(
        found.is_empty(),
        "EDGES is wrong:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn every_edge_in_cargo_toml_is_declared_and_every_declared_edge_is_used() {
    let found = violations(&workspace_metadata());
    assert!(
        found.is_empty(),
        "the crate graph differs from its declaration:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn sources_keep_purity_one_import_path_and_no_unsafe() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for (name, files) in workspace_sources() {
        found.extend(source_violations(&name, &files, root));
    }
    assert!(
        found.is_empty(),
        "source rules broken:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn production_code_starts_programs_only_through_spawn() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for (name, files) in workspace_sources() {
        let files: Vec<(String, String)> = files
            .into_iter()
            .map(|(p, text)| {
                let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                (rel, text)
            })
            .collect();
        found.extend(command_violations(&name, &files));
    }
    assert!(
        found.is_empty(),
        "more than one spawn path:\n  {}",
        found.join("\n  ")
    );
}

// ---- self-tests: each rule fails when broken ----

#[test]
fn a_std_command_outside_spawn_and_test_code_fails() {
    let files = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    };
    let ok = files(&[
        (
            "crates/x/src/a.rs",
            "//! Unlike `std::process::Command`, ...\nconst S: &str = \"std::process::Command\";\nfn f() { Spawn::new(\"true\"); }\n#[cfg(test)]\nmod tests {\n    fn t() { if true { std::process::Command::new(\"x\"); } }\n}\n",
        ),
        (
            "crates/x/src/b.rs",
            "/// A finished run.\n#[cfg(test)]\nimpl R {\n    fn s() { use std::process::{Command, Stdio}; }\n}\nfn g() {}\n",
        ),
        (
            "crates/sys/src/spawn.rs",
            "fn f() { std::process::Command::new(\"x\"); }\n",
        ),
        ("crates/sys/src/affinity.rs", "fn f(c: &mut std::process::Command) {}\n"),
    ]);
    assert_eq!(command_violations("pinsight-x", &ok), Vec::<String>::new());
    let bad = files(&[
        ("crates/x/src/a.rs", "use std::process::Command;\n"),
        ("crates/x/src/b.rs", "use std::process::{Child, Command};\n"),
        (
            "crates/x/src/c.rs",
            "use std::os::unix::process::CommandExt;\n",
        ),
        (
            "crates/x/src/d.rs",
            "#[cfg(test)]\nmod tests;\nfn f() { std::process::Command::new(\"x\"); }\n",
        ),
        (
            "crates/x/src/e.rs",
            "use std::process::{Child, ExitStatus};\n",
        ),
        // Once allowed, no longer: measure runs only a Spawn.
        ("crates/measure/src/run.rs", "use std::process::Command;\n"),
        ("crates/sys/src/affinity.rs", "use std::process::Child;\n"),
    ]);
    let found = command_violations("pinsight-x", &bad);
    assert_eq!(found.len(), 6, "{found:?}");
    for (i, f) in [
        "x/src/a",
        "x/src/b",
        "x/src/c",
        "x/src/d",
        "measure/src/run",
    ]
    .iter()
    .enumerate()
    {
        assert!(
            found[i].starts_with(&format!("crates/{f}.rs starts a program")),
            "{found:?}"
        );
    }
    assert!(
        found[5].contains("crates/sys/src/affinity.rs no longer names"),
        "{found:?}"
    );
    // The test-support crate is not production code.
    let kit = files(&[("crates/testkit/src/lib.rs", "use std::process::Command;\n")]);
    assert!(command_violations("pinsight-testkit", &kit).is_empty());
}

/// A package `name` depending on `deps` (name, kind).
fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Value {
    serde_json::json!({
        "name": name,
        "id": format!("path+file:///ws#{name}@0.1.0"),
        "manifest_path": format!("/ws/{name}/Cargo.toml"),
        "dependencies": deps
            .iter()
            .map(|(d, kind)| serde_json::json!({"name": d, "kind": kind}))
            .collect::<Vec<_>>(),
    })
}

fn metadata(packages: Vec<Value>) -> Value {
    let members: Vec<Value> = packages.iter().map(|p| p["id"].clone()).collect();
    serde_json::json!({"packages": packages, "workspace_members": members})
}

#[test]
fn adding_an_edge_to_the_real_workspace_fails_and_names_it() {
    let mut md = workspace_metadata();
    assert_eq!(violations(&md), Vec::<String>::new());
    let packages = md["packages"].as_array_mut().expect("packages");
    let launch = packages
        .iter_mut()
        .find(|p| p["name"] == "pinsight-launch")
        .expect("pinsight-launch in the workspace");
    // The same layer, so only the declaration stops it.
    launch["dependencies"]
        .as_array_mut()
        .expect("dependencies")
        .push(serde_json::json!({"name": "pinsight-tune", "kind": null}));
    let found = violations(&md);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("undeclared edge pinsight-launch -> pinsight-tune"),
        "{found:?}"
    );
}

#[test]
fn removing_a_used_edge_from_cargo_toml_asks_to_remove_the_declaration() {
    let md = metadata(vec![
        package("pinsight-cpuset", &[]),
        package("pinsight-model", &[]),
    ]);
    let found = violations(&md);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("declared edge pinsight-model -> pinsight-cpuset is not in Cargo.toml"),
        "{found:?}"
    );
}

#[test]
fn dev_dependencies_and_absent_packages_are_not_checked() {
    let md = metadata(vec![
        package("pinsight-cpuset", &[("serde", None)]),
        package(
            "pinsight-model",
            &[("pinsight-cpuset", None), ("serde", None)],
        ),
        package("pinsight-stats", &[("pinsight-report", Some("dev"))]),
    ]);
    assert_eq!(violations(&md), Vec::<String>::new());
}

#[test]
fn a_pure_crate_may_not_use_an_os_or_drawing_crate() {
    let md = metadata(vec![
        package("pinsight-cpuset", &[]),
        package(
            "pinsight-model",
            &[
                ("pinsight-cpuset", None),
                ("libc", None),
                ("plotters", None),
            ],
        ),
    ]);
    let found = violations(&md);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("pinsight-model -> libc"), "{found:?}");
    assert!(found[1].contains("pinsight-model -> plotters"), "{found:?}");
}

#[test]
fn a_package_without_an_entry_fails() {
    let md = metadata(vec![package("pinsight-newthing", &[])]);
    let found = violations(&md);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("pinsight-newthing has no entry"),
        "{found:?}"
    );
}

fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    list.iter()
        .map(|(p, t)| (PathBuf::from(format!("/ws/{p}")), t.to_string()))
        .collect()
}

#[test]
fn a_pure_crate_naming_std_fs_fails_but_prose_about_it_does_not() {
    let ok = files(&[(
        "plan/src/lib.rs",
        "//! reads no file (std::fs is its callers')\n#![forbid(unsafe_code)]\nconst S: &str = \"std::process\";\n",
    )]);
    assert_eq!(
        source_violations("pinsight-plan", &ok, Path::new("/ws")),
        Vec::<String>::new()
    );
    let bad = files(&[
        ("plan/src/lib.rs", "#![forbid(unsafe_code)]\nmod w;\n"),
        (
            "plan/src/w.rs",
            "fn f() { let _ = std::fs::read(\"x\"); }\n",
        ),
    ]);
    let found = source_violations("pinsight-plan", &bad, Path::new("/ws"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("plan/src/w.rs: the pure crate pinsight-plan uses std::fs"),
        "{found:?}"
    );
}

#[test]
fn re_exports_of_other_crates_and_second_paths_fail() {
    let bad = files(&[
        (
            "launch/src/lib.rs",
            "#![forbid(unsafe_code)]\npub use pinsight_sys::affinity;\npub use pin::pin_process;\n",
        ),
        (
            "launch/src/pin.rs",
            "pub use crate::watch::Follow;\npub use inner::x;\n",
        ),
    ]);
    let found = source_violations("pinsight-launch", &bad, Path::new("/ws"));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains("re-exports another crate's item"),
        "{found:?}"
    );
    assert!(
        found[1].contains("launch/src/pin.rs") && found[1].contains("second path"),
        "{found:?}"
    );
}

#[test]
fn a_crate_without_forbid_unsafe_fails_unless_allowed() {
    let bare = files(&[("load/src/lib.rs", "pub mod irq;\n")]);
    let found = source_violations("pinsight-load", &bare, Path::new("/ws"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("pinsight-load does not forbid unsafe code"),
        "{found:?}"
    );
    let sys = files(&[("sys/src/lib.rs", "pub mod affinity;\n")]);
    assert_eq!(
        source_violations("pinsight-sys", &sys, Path::new("/ws")),
        Vec::<String>::new()
    );
}

/// The crate graph as `docs/src/architecture.md` draws it: a layer a
/// block, a crate a line with the crates it uses (names without
/// `pinsight-`), written from `LAYERS` and `EDGES`.
fn diagram() -> String {
    let short = |n: &str| n.strip_prefix("pinsight-").unwrap_or(n).to_owned();
    let mut out = String::new();
    for (i, (layer, crates)) in LAYERS.iter().enumerate() {
        out += &format!("{}. {layer}\n", i + 1);
        for c in crates.iter() {
            let uses: Vec<String> = declared(c)
                .unwrap_or_default()
                .iter()
                .map(|(to, _)| short(to))
                .collect();
            let name = if *c == "pinsight" {
                "pinsight (the binary)".to_owned()
            } else {
                short(c)
            };
            if uses.is_empty() {
                out += &format!("   {name}\n");
            } else {
                let mut line = format!("   {name:<22}-> ");
                let indent = line.chars().count();
                let mut width = indent;
                for (k, u) in uses.iter().enumerate() {
                    let word = if k + 1 < uses.len() {
                        format!("{u}, ")
                    } else {
                        u.clone()
                    };
                    if width + word.trim_end().len() > 78 && width > indent {
                        line = line.trim_end().to_owned() + "\n" + &" ".repeat(indent);
                        width = indent;
                    }
                    width += word.len();
                    line += &word;
                }
                out += &line;
                out += "\n";
            }
        }
    }
    out
}

#[test]
fn the_architecture_diagram_is_the_declared_graph() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/architecture.md"),
    )
    .expect("docs/src/architecture.md");
    let begin = "<!-- crate graph: written from tests/layering.rs -->\n```text\n";
    let drawn = doc
        .split_once(begin)
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(d, _)| d)
        .unwrap_or_default();
    let want = diagram();
    assert!(
        drawn == want,
        "docs/src/architecture.md's crate graph is not EDGES; put this under `{}`:\n{want}",
        begin.lines().next().unwrap_or_default()
    );
}
