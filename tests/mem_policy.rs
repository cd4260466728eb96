//! `--mem` end to end: `pinsight run --mem SPEC` starts the program with
//! that memory policy (checked in the program's own `/proc/self/numa_maps`,
//! where the kernel prints the policy of every mapping, and
//! `Mems_allowed_list` in `/proc/self/status`), a node the machine does not
//! have is refused before anything runs (exit 2, naming it), and `plan`
//! speaks the policy in numactl's words (golden on hwloc's recorded
//! 8-node machine).

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_says, usage_error, with_sh, words};
use common_cli::*;

/// The NUMA nodes this process may allocate on (`Mems_allowed_list`).
fn allowed_nodes() -> Option<Vec<u32>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Mems_allowed_list:"))?
        .trim()
        .to_string();
    let mut out = Vec::new();
    for part in list.split(',').filter(|s| !s.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// A node with memory this process may use, or a logged skip.
fn a_node() -> Option<u32> {
    let node = allowed_nodes().and_then(|v| v.first().copied());
    let has = node.is_some_and(|n| {
        std::path::Path::new(&format!("/sys/devices/system/node/node{n}")).exists()
    });
    if !has {
        pinsight_testkit::skip("no NUMA node in /sys/devices/system/node (kernel without NUMA)");
        return None;
    }
    node
}

/// The policy word numa_maps prints on the probe's heap, after
/// `pinsight run os --mem SPEC`.
fn heap_policy(spec: &str) -> (String, Out) {
    let run = format!("run os --mem {spec} --");
    let o = ok(&with_sh(
        &run,
        "grep Mems_allowed_list /proc/self/status; grep -E ' (heap|stack) ' /proc/self/numa_maps",
    ));
    assert!(
        o.stdout.contains("Mems_allowed_list:"),
        "{}: {}",
        o.argv,
        o.stdout
    );
    let heap = o
        .stdout
        .lines()
        .find(|l| l.contains(" heap ") || l.contains(" stack "))
        .unwrap_or_else(|| panic!("{}: no heap/stack line: {}", o.argv, o.stdout));
    // `ADDR POLICY [file=...|heap|stack] ...`; weighted interleave is two
    // words ("weighted interleave:0").
    let rest = heap.split_once(' ').unwrap().1;
    let policy = rest
        .split(" heap")
        .next()
        .unwrap()
        .split(" stack")
        .next()
        .unwrap()
        .to_string();
    (policy, o)
}

#[test]
fn every_policy_is_in_effect_in_the_program() {
    let Some(n) = a_node() else { return };
    for (spec, expected) in [
        (format!("bind:{n}"), format!("bind:{n}")),
        (format!("interleave:{n}"), format!("interleave:{n}")),
        (format!("preferred:{n}"), format!("prefer:{n}")),
        ("local".to_string(), "local".to_string()),
    ] {
        let (policy, _) = heap_policy(&spec);
        assert_eq!(policy, expected, "--mem {spec}");
    }
    // Without --mem the program keeps the default policy.
    let o = ok(&[
        "run",
        "os",
        "--",
        "sh",
        "-c",
        "grep ' heap ' /proc/self/numa_maps",
    ]);
    assert!(o.stdout.contains(" default heap "), "{}", o.stdout);
}

#[test]
fn weighted_interleave_is_applied_or_refused_by_an_old_kernel() {
    let Some(n) = a_node() else { return };
    let supported = std::path::Path::new("/sys/kernel/mm/mempolicy/weighted_interleave").exists();
    if supported {
        let (policy, _) = heap_policy(&format!("weighted-interleave:{n}"));
        assert_eq!(policy, format!("weighted interleave:{n}"));
    } else {
        let o = pinsight(&words("run os --mem weighted-interleave -- true")).run();
        assert_exit(&o, 1, &["does not support"]);
    }
}

#[test]
fn a_node_that_does_not_exist_is_refused_before_the_run() {
    let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    let Some(max) = online
        .trim()
        .split([',', '-'])
        .filter_map(|s| s.parse::<u32>().ok())
        .max()
    else {
        return pinsight_testkit::skip("no /sys/devices/system/node/online");
    };
    let absent = max + 1;
    let marker = tempfile::tempdir().unwrap();
    let touched = marker.path().join("ran");
    let spec = format!("bind:{absent}");
    let o = pinsight(&[
        "run",
        "os",
        "--mem",
        &spec,
        "--",
        "touch",
        touched.to_str().unwrap(),
    ])
    .run();
    assert_eq!(o.code, 2, "{}: {}", o.argv, o.stderr);
    assert_eq!(
        o.first_err_line(),
        format!(
            "pinsight: error: --mem {spec}: node {absent} does not exist on this machine (nodes: {})",
            online.trim()
        )
    );
    assert!(!touched.exists(), "the program ran");
    // plan and compare say the same.
    usage_error(
        &["plan", "os", "--mem", &spec],
        &[&format!("node {absent} does not exist")],
    );
    let o = pinsight(&[
        "compare",
        "--policies",
        &format!("os,compact+mem:{spec}"),
        "--",
        "true",
    ])
    .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(
        o.first_err_line(),
        format!(
            "pinsight: error: --policies compact+mem:{spec}: node {absent} does not exist on this machine (nodes: {})",
            online.trim()
        )
    );
}

#[test]
fn bad_specs_are_usage_errors_listing_the_forms() {
    for spec in ["bogus", "bind", "preferred:0-1", "bind:99999"] {
        usage_error(
            &["plan", "os", "--mem", spec],
            &["expected local, bind:NODES"],
        );
    }
    // pin cannot change another process's policy: said, not ignored.
    usage_error(
        &words("pin 1 os --mem local"),
        &["cannot change its memory policy"],
    );
}

#[test]
fn run_json_reports_the_policy_applied() {
    let Some(n) = a_node() else { return };
    let o = ok(&[
        "run",
        "os",
        "--json",
        "--mem",
        &format!("bind:{n}"),
        "--",
        "true",
    ]);
    // run's JSON is stdout's only content (the program's output goes to stderr).
    let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(doc["run"]["memory"], format!("bind:{n}"));
    assert_eq!(doc["plan"]["memory"]["mode"], "bind");
    assert_eq!(doc["plan"]["memory"]["nodes"][0], n);
}

#[test]
fn plan_numactl_golden_on_a_recorded_machine() {
    let root = hwloc_fixture("16amd64-8n2c");
    let root = root.to_str().unwrap();
    let mut out = String::new();
    for args in [
        &[
            "scatter",
            "-t",
            "4",
            "--mem",
            "interleave:all",
            "--format",
            "numactl",
        ][..],
        &[
            "compact", "-t", "4", "--mem", "bind:0-1", "--format", "numactl",
        ],
        &["os", "--mem", "preferred:3", "--format", "numactl"],
        &["os", "--mem", "local", "--format", "numactl"],
        &[
            "p-set",
            "--mem",
            "weighted-interleave",
            "--format",
            "numactl",
        ],
    ] {
        let mut argv = vec!["--fsroot", root, "plan"];
        argv.extend_from_slice(args);
        let o = ok(&argv);
        out.push_str(&format!("$ pinsight plan {}\n{}", args.join(" "), o.stdout));
    }
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("mem_policy_numactl_16amd64-8n2c", out);
    });
}

/// `pinsight run --mem bind:N -- CMD` without a POLICY (as with numactl): the
/// placement is `os` and the memory policy is in effect in the program.
#[test]
fn run_without_a_policy_applies_only_the_memory_policy() {
    let Some(node) = a_node() else { return };
    let spec = format!("bind:{node}");
    let o = pinsight(&["run", "--mem", &spec, "--", "cat", "/proc/self/status"]).ok();
    assert!(o.stdout.contains("Mems_allowed_list:"), "{}", o.stdout);
    let run = format!("run --mem {spec} --");
    let o = ok(&with_sh(
        &run,
        "grep -E ' (heap|stack) ' /proc/self/numa_maps",
    ));
    assert!(
        o.stdout.contains(&format!(" bind:{node} ")),
        "{}: {}",
        o.argv,
        o.stdout
    );
    // No program at all is a usage error naming the form.
    let o = pinsight(&["run", "--mem", &spec]).run();
    assert_says(&o, 2, &["no program given"]);
}
