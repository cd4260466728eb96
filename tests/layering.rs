//! The crate graph keeps its layers: a check over `cargo metadata`.
//!
//! Every workspace package sits in one layer (see docs/src/architecture.md):
//!
//! ```text
//! pure        cpuset, stats, model, latency-model, plan,  (no I/O, no OS)
//!             tune-model, sched-model
//! os          sys                                       (the only OS calls)
//! discovery   topology                                  (reads /sys, hwloc XML)
//! measurement lifecycle, measure, launch, latency, speed, workload, compare,
//!             tune, sched, report, emulate, load
//! rendering   render
//! cli         pinsight
//! test-support testkit                                  (dev-dependency only)
//! ```
//!
//! A package may depend (normal dependencies, any target) only on packages
//! of its own or a lower layer, and a pure package on no known I/O,
//! OS or drawing crate. Dev- and build-dependencies are not checked.
//! Crates named in [`LAYERS`] but absent from the workspace are ignored; a
//! workspace package missing from [`LAYERS`] fails the check (give it a
//! layer). `cargo test --release --test layering` runs it (CI: `.ci/run`).

use serde_json::Value;
use std::process::Command;

/// The layers, lowest first. A package may depend only on packages whose
/// layer index is lower than or equal to its own.
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
            // Measures within a budget and words suggestions; draws nothing.
            "pinsight-report",
            // Slows CPUs to emulate core kinds (cpufreq caps, RT stealers).
            "pinsight-emulate",
            // Per-CPU load by capacity and IRQ placement (`load`, `irq`).
            "pinsight-load",
        ],
    ),
    ("rendering", &["pinsight-render"]),
    ("cli", &["pinsight"]),
    // Test support: a dev-dependency of any suite, a normal dependency of
    // nothing (being the top layer, no package may depend on it).
    ("test-support", &["pinsight-testkit"]),
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

/// Edges allowed to break the layers while a split is under way: empty
/// since the planner moved onto pure crates and compare's and latency's
/// renderers into pinsight-render. Never add to this list.
const TEMPORARY_ALLOWED: &[(&str, &str)] = &[];

fn layer_of(name: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, crates))| crates.contains(&name))
        .map(|(i, (layer, _))| (i, *layer))
}

/// The forbidden edges in `metadata` (the JSON of `cargo metadata
/// --format-version 1`), one message per edge, naming both ends.
fn violations(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let workspace: Vec<&Value> = packages
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| members.contains(&id)))
        .collect();
    let local: Vec<&str> = workspace
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut out = Vec::new();
    for package in &workspace {
        let name = package["name"].as_str().unwrap_or("?");
        let Some((rank, layer)) = layer_of(name) else {
            out.push(format!(
                "{name} has no layer: add it to LAYERS in tests/layering.rs and to README's Layout"
            ));
            continue;
        };
        let deps = package["dependencies"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for dep in &deps {
            if !dep["kind"].is_null() {
                continue; // dev or build dependency
            }
            let dep_name = dep["name"].as_str().unwrap_or("?");
            if TEMPORARY_ALLOWED.contains(&(name, dep_name)) {
                continue;
            }
            if local.contains(&dep_name) || layer_of(dep_name).is_some() {
                match layer_of(dep_name) {
                    Some((dep_rank, dep_layer)) if dep_rank > rank => out.push(format!(
                        "forbidden edge {name} -> {dep_name}: {layer} may not depend on {dep_layer}"
                    )),
                    Some(_) => {}
                    None => out.push(format!(
                        "forbidden edge {name} -> {dep_name}: {dep_name} has no layer"
                    )),
                }
            } else if rank == 0 && IMPURE_CRATES.contains(&dep_name) {
                out.push(format!(
                    "forbidden edge {name} -> {dep_name}: a pure crate may not use {dep_name}"
                ));
            }
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
fn workspace_keeps_its_layers() {
    let metadata = workspace_metadata();
    let found = violations(&metadata);
    assert!(
        found.is_empty(),
        "the crate graph breaks its layers:\n  {}",
        found.join("\n  ")
    );
}

/// A package `name` depending on `deps` (name, kind).
fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Value {
    serde_json::json!({
        "name": name,
        "id": format!("path+file:///ws#{name}@0.1.0"),
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
fn a_forbidden_edge_fails_and_is_named() {
    let md = metadata(vec![
        package("pinsight-cpuset", &[("serde", None)]),
        package(
            "pinsight-plan",
            &[("pinsight-cpuset", None), ("pinsight-measure", None)],
        ),
        package("pinsight-measure", &[("pinsight-cpuset", None)]),
    ]);
    let found = violations(&md);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("pinsight-plan -> pinsight-measure"),
        "{found:?}"
    );
}

#[test]
fn allowed_edges_pass_and_absent_rule_crates_are_ignored() {
    // No pinsight-sys, pinsight-model, pinsight-render in this workspace.
    let md = metadata(vec![
        package("pinsight-cpuset", &[("serde", None)]),
        package(
            "pinsight-topology",
            &[("pinsight-cpuset", None), ("libc", None)],
        ),
        package(
            "pinsight-report",
            &[("pinsight-topology", None), ("pinsight-speed", None)],
        ),
        package(
            "pinsight-speed",
            &[("pinsight-topology", None), ("libc", None)],
        ),
        // dev-dependencies are not layered
        package("pinsight-stats", &[("pinsight-report", Some("dev"))]),
    ]);
    assert_eq!(violations(&md), Vec::<String>::new());
}

#[test]
fn a_pure_crate_may_not_use_an_os_or_drawing_crate() {
    let md = metadata(vec![package(
        "pinsight-model",
        &[("serde", None), ("libc", None), ("plotters", None)],
    )]);
    let found = violations(&md);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("pinsight-model -> libc"), "{found:?}");
    assert!(found[1].contains("pinsight-model -> plotters"), "{found:?}");
}

#[test]
fn a_package_without_a_layer_fails() {
    let md = metadata(vec![package("pinsight-newthing", &[])]);
    let found = violations(&md);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("pinsight-newthing has no layer"),
        "{found:?}"
    );
}

#[test]
fn adding_a_forbidden_edge_to_the_real_workspace_fails() {
    let mut md = workspace_metadata();
    let packages = md["packages"].as_array_mut().expect("packages");
    let cpuset = packages
        .iter_mut()
        .find(|p| p["name"] == "pinsight-cpuset")
        .expect("pinsight-cpuset in the workspace");
    cpuset["dependencies"]
        .as_array_mut()
        .expect("dependencies")
        .push(serde_json::json!({"name": "pinsight-launch", "kind": null}));
    let found = violations(&md);
    assert!(
        found
            .iter()
            .any(|v| v.contains("pinsight-cpuset -> pinsight-launch")),
        "{found:?}"
    );
}

#[test]
fn the_temporary_allowance_covers_only_its_own_edges() {
    for (from, to) in TEMPORARY_ALLOWED {
        let md = metadata(vec![package(from, &[(to, None), ("pinsight", None)])]);
        let found = violations(&md);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains(&format!("{from} -> pinsight:")),
            "{found:?}"
        );
    }
}
