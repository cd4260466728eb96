//! `pinsight plan` end to end on a recorded machine (`--fsroot`, the
//! i7-1370P: P-cores 0-11 with SMT siblings, E-cores 12-19): ordered CPU
//! lists, hex masks and `all`, set policies with more threads than CPUs,
//! and the thread counts every dialect exports.

use crate::common_cli;

use crate::common_cmd::usage_error;
use common_cli::*;

fn hybrid() -> String {
    hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t")
        .to_str()
        .unwrap()
        .to_string()
}

/// `pinsight --fsroot HYBRID plan ARGS...`, which must succeed.
fn plan(args: &[&str]) -> Out {
    let root = hybrid();
    let mut argv = vec!["--fsroot", root.as_str(), "plan"];
    argv.extend_from_slice(args);
    ok(&argv)
}

/// Same, but must be a usage error (exit 2) whose first line contains `needles`.
fn refused(args: &[&str], needles: &[&str]) -> Out {
    let root = hybrid();
    let mut argv = vec!["--fsroot", root.as_str(), "plan"];
    argv.extend_from_slice(args);
    // Planner errors are one line; clap's (bad POLICY text) add a
    // "For more information" hint after the one-line message.
    usage_error(&argv, needles)
}

fn var<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        l.strip_prefix(&format!("export {name}='"))
            .and_then(|v| v.strip_suffix('\''))
    })
}

#[test]
fn cpus_list_keeps_the_users_order_in_every_dialect() {
    let gomp = plan(&["cpus:1,0", "-t", "2", "--format", "gomp"]);
    assert_eq!(gomp.stdout, "export GOMP_CPU_AFFINITY='1 0'\n");

    let doc = plan(&["cpus:1,0", "--json"]).json();
    assert_eq!(doc["policy"], "cpus:1,0");
    assert_eq!(doc["threads"], 2);
    assert_eq!(doc["places"], serde_json::json!(["1", "0"]));

    let args = |f: &'static str| ["cpus:13,12,1", "--format", f];
    let omp = plan(&args("omp-places")).stdout;
    assert_eq!(var(&omp, "OMP_PLACES"), Some("{13},{12},{1}"), "{omp}");
    assert_eq!(var(&omp, "OMP_NUM_THREADS"), Some("3"), "{omp}");
    let kmp = plan(&args("kmp-affinity")).stdout;
    assert_eq!(
        var(&kmp, "KMP_AFFINITY"),
        Some("granularity=fine,explicit,proclist=[13,12,1]")
    );
    assert_eq!(plan(&args("slurm")).stdout, "--cpu-bind=map_cpu:13,12,1\n");
    let virt = plan(&args("libvirt")).stdout;
    assert!(virt.contains("<vcpupin vcpu='0' cpuset='13'/>"), "{virt}");
    assert!(virt.contains("<vcpupin vcpu='2' cpuset='1'/>"), "{virt}");
    // Sets are sets: taskset/numactl/cpulist show the mask.
    assert_eq!(plan(&args("cpulist")).stdout, "1,12-13\n");
    let table = plan(&["cpus:13,12,1"]).stdout;
    assert!(
        table.starts_with("policy cpus:13,12,1: 3 threads"),
        "{table}"
    );
    let rows: Vec<&str> = table.lines().skip(2).take(3).collect();
    assert!(rows[0].starts_with("0       13"), "{table}");
    assert!(rows[2].starts_with("2       1 "), "{table}");
}

#[test]
fn hex_masks_and_all() {
    for (policy, format, want) in [
        ("cpus:0xff0", "cpulist", "4-11\n"),
        // A mask has no order: ascending.
        ("cpus:0x3000", "gomp", "export GOMP_CPU_AFFINITY='12 13'\n"),
        ("cpus-set:all", "taskset", "taskset -c 0-19\n"),
        ("cpus:all", "gomp", "export GOMP_CPU_AFFINITY='0-19'\n"),
    ] {
        let got = plan(&[policy, "--format", format]).stdout;
        assert_eq!(got, want, "{policy} --format {format}");
    }
    let doc = plan(&["cpus-set:0x3", "--json"]).json();
    assert_eq!(doc["policy"], "cpus-set:0x3");
    assert_eq!(doc["process_mask"], "0-1");
    // hwloc's 32-bit words: CPU 32 does not exist on this machine.
    refused(
        &["cpus:0x00000001,0x00000000"],
        &["cpus:0x00000001,0x00000000", "CPU 32 is not present"],
    );
    refused(&["cpus:0xzz"], &["'cpus:0xzz'", "hex mask"]);
    refused(&["cpus:1,0,1"], &["'cpus:1,0,1'", "CPU 1 is listed twice"]);
}

#[test]
fn set_policies_take_more_threads_than_cpus() {
    for policy in ["os", "p-set", "e-set", "kind-set:0", "cpus-set:0,1"] {
        let o = plan(&[policy, "-t", "64", "--format", "omp-places"]);
        assert_eq!(var(&o.stdout, "OMP_NUM_THREADS"), Some("64"), "{policy}");
        assert!(!o.stderr.contains("oversubscri"), "{policy}: {}", o.stderr);
        let doc = plan(&[policy, "-t", "64", "--json"]).json();
        assert_eq!(doc["threads"], 64, "{policy}");
        assert_eq!(doc["pinned"], false, "{policy}");
    }
    // Pinned policies still need --oversubscribe, and say so.
    refused(
        &["p-pinned", "-t", "13"],
        &["13 threads but only 12 CPUs", "--oversubscribe"],
    );
    refused(&["cpus:1,0", "-t", "3"], &["--threads 2 or less"]);
    let o = plan(&["cpus:1,0", "-t", "3", "--oversubscribe", "--format", "gomp"]);
    assert_eq!(o.stdout, "export GOMP_CPU_AFFINITY='1 0 1'\n");
}

#[test]
fn balance_exports_its_task_count_and_one_place_per_task() {
    let o = plan(&["balance", "--tasks", "40", "--format", "omp-places"]);
    assert_eq!(
        var(&o.stdout, "OMP_NUM_THREADS"),
        Some("40"),
        "{}",
        o.stdout
    );
    assert_eq!(var(&o.stdout, "OMP_PROC_BIND"), Some("close"));
    let places = var(&o.stdout, "OMP_PLACES").expect("OMP_PLACES");
    assert_eq!(places.split("},{").count(), 40, "{places}");
    // Place i is task i's CPU, as in the JSON plan.
    let doc = plan(&["balance", "--tasks", "40", "--json"]).json();
    let want: Vec<String> = doc["places"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{{{}}}", p.as_str().unwrap()))
        .collect();
    assert_eq!(places, want.join(","));
}

#[test]
fn help_documents_lists_masks_all_and_set_policies() {
    let help = plan(&["--help"]).stdout;
    for needle in [
        "in your order",
        "0x00000001,0x00000000",
        "or all (every usable CPU",
        "take any --threads",
        "cpus:1,0 --format gomp",
    ] {
        assert!(help.contains(needle), "plan --help lacks {needle:?}");
    }
}

/// `--smt-yield` replaces balance's default 0.25: tasks per physical
/// P-core (two siblings) follow its capacity x (1 + Y) against an E-core's
/// 0.58; as a number or a file (a number, or JSON `smt_yield`); refused
/// out of [0, 1], unreadable, or with another policy (exit 2, one line).
#[test]
fn smt_yield_sets_balance_per_core_share_and_is_checked() {
    let per_core = |extra: &[&str]| -> (usize, usize) {
        let mut args = vec!["balance", "--tasks", "200", "--json"];
        args.extend_from_slice(extra);
        let doc = plan(&args).json();
        let tasks = |cpu: u64| {
            doc["tasks_per_cpu"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["cpu"] == cpu)
                .map_or(0, |t| t["tasks"].as_u64().unwrap() as usize)
        };
        // P-core 0 (CPUs 0 and 1) and E-core CPU 12.
        (tasks(0) + tasks(1), tasks(12))
    };
    let (p_default, e_default) = per_core(&[]);
    let (p_one, e_one) = per_core(&["--smt-yield", "1"]);
    let (p_zero, e_zero) = per_core(&["--smt-yield", "0"]);
    // Core capacity 1.25 / 2.0 / 1.0 against 0.58, within a task's rounding.
    for (p, e, cap) in [
        (p_default, e_default, 1.25),
        (p_one, e_one, 2.0),
        (p_zero, e_zero, 1.0),
    ] {
        let ratio = p as f64 / e as f64;
        assert!(
            (ratio - cap / 0.58).abs() < 0.5,
            "P {p} E {e}: {ratio} vs {}",
            cap / 0.58
        );
    }
    assert!(p_one > p_default && p_default > p_zero);
    let doc = plan(&["balance", "--smt-yield", "0.4", "--json"]).json();
    assert!(doc["notes"][0]
        .as_str()
        .unwrap()
        .contains("given SMT yield 0.40"));

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("speed.json");
    std::fs::write(&json, r#"{"smt_yield": 1.0, "other": 3}"#).unwrap();
    let plain = dir.path().join("yield.txt");
    std::fs::write(&plain, "1\n").unwrap();
    // As `pinsight speed --json` writes it.
    let speed = dir.path().join("speed-out.json");
    std::fs::write(
        &speed,
        r#"{"cpus": [], "smt_yield": {"value": 1.0, "cpus": "0,1"}}"#,
    )
    .unwrap();
    for file in [&json, &plain, &speed] {
        assert_eq!(
            per_core(&["--smt-yield", file.to_str().unwrap()]),
            (p_one, e_one)
        );
    }
    refused(
        &["balance", "--smt-yield", "1.5"],
        &["--smt-yield", "out of range", "0 to 1"],
    );
    refused(
        &["balance", "--smt-yield=-0.1"],
        &["--smt-yield", "out of range"],
    );
    refused(
        &["balance", "--smt-yield", "/nonexistent/y"],
        &["neither a number nor a readable file"],
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"smt": 1}"#).unwrap();
    refused(
        &["balance", "--smt-yield", bad.to_str().unwrap()],
        &["no number \"smt_yield\""],
    );
    refused(
        &["compact", "--smt-yield", "0.3"],
        &["--smt-yield", "balance policy only"],
    );
}
