//! `--kinds SPEC` / `PINSIGHT_KINDS`: declared core kinds, end to end.
//! Every command that reads the machine uses the declared kinds and says
//! so on stderr; `topo` marks them declared (human and JSON); kind
//! policies follow the declared order; a bad declaration is one usage line
//! naming the flag (or the variable) and what is allowed.

use crate::common_cli;

use crate::common_cmd::{assert_one_line, assert_says};
use common_cli::*;
use serde_json::Value;

fn hybrid() -> String {
    hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t")
        .to_str()
        .unwrap()
        .to_string()
}

/// Must be a usage error (exit 2) of one line containing every needle,
/// with nothing on stdout.
fn refused(o: &Out, needles: &[&str]) {
    assert_one_line(o, 2, needles);
    let first = o.first_err_line();
    assert!(first.starts_with("pinsight: error: "), "{first}");
}

/// The usable CPUs of the live machine (online and allowed), from `topo --json`.
fn live_usable() -> Vec<u64> {
    let topo = ok(&["topo", "--json", "-q"]).json();
    topo["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == true && c["allowed"] == true)
        .map(|c| c["id"].as_u64().unwrap())
        .collect()
}

fn list(cpus: &[u64]) -> String {
    cpus.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The acceptance case, on whatever CPUs this machine has: the first usable
/// CPU declared P, the second E (the rest, if any, a middle kind).
#[test]
fn live_p_and_e_follow_the_declaration() {
    let usable = live_usable();
    if usable.len() < 2 {
        pinsight_testkit::skip("kinds_cli: fewer than two usable CPUs here");
        return;
    }
    let (p, e, rest) = (usable[0], usable[1], &usable[2..]);
    let spec = if rest.is_empty() {
        format!("{p}:P,{e}:E")
    } else {
        format!("{p}:P,{}:mid,{e}:E", list(rest))
    };
    let o = ok(&["--kinds", &spec, "plan", "p-pinned", "-t", "1", "--json"]);
    assert_eq!(o.json()["places"][0], p.to_string(), "{}", o.stdout);
    assert!(
        o.says("pinsight: kinds declared by --kinds, not discovered: P-core"),
        "{}",
        o.stderr
    );
    let o = ok(&["--kinds", &spec, "plan", "e-set", "-t", "1", "--json"]);
    assert_eq!(o.json()["process_mask"], e.to_string(), "{}", o.stdout);
    // Declared the other way round, the other CPU is the P-core.
    let swapped = spec
        .replace(&format!("{p}:P"), "#")
        .replace(&format!("{e}:E"), &format!("{e}:P"));
    let swapped = swapped.replace('#', &format!("{p}:E"));
    let o = ok(&["--kinds", &swapped, "plan", "p-pinned", "-t", "1", "--json"]);
    assert_eq!(o.json()["places"][0], e.to_string(), "{swapped}");
    // topo marks them declared.
    let o = ok(&["--kinds", &spec, "topo"]);
    assert!(
        o.stdout.contains("identity: declared; rank: declared"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains(&format!("(P#{p}) [P]")), "{}", o.stdout);
    let kinds = ok(&["--kinds", &spec, "topo", "--json", "-q"]).json()["kinds"].clone();
    let kinds = kinds.as_array().unwrap();
    assert_eq!(kinds.len(), 2 + usize::from(!rest.is_empty()));
    for k in kinds {
        assert_eq!(k["source"], "declared");
        assert_eq!(k["rank_source"], "declared");
        assert_eq!(k["capacity"], Value::Null);
    }
    assert_eq!(kinds.last().unwrap()["cpus"], p.to_string());
}

/// `plan p-pinned -t 1 --json` on the recorded i7-1370P at `root` (P 0-11,
/// E 12-19) with its kinds declared the other way round (E 0-11, P 12-19),
/// global `flags` before the declaration; it must succeed.
fn plan_with_kinds_swapped(root: &str, flags: &[&str]) -> Out {
    ok(&[
        &["--fsroot", root][..],
        flags,
        &[
            "--kinds",
            "0-11:E,12-19:P",
            "plan",
            "p-pinned",
            "-t",
            "1",
            "--json",
        ],
    ]
    .concat())
}

/// On the recorded i7-1370P (P 0-11, E 12-19), a declaration overrides
/// what discovery found, in the declared order.
#[test]
fn a_declaration_overrides_discovery() {
    let root = hybrid();
    let base = ["--fsroot", root.as_str()];
    let discovered = ok(&[&base[..], &["plan", "p-pinned", "-t", "1", "--json", "-q"]].concat());
    assert_eq!(discovered.json()["places"][0], "0");
    // Known kinds: P > E whatever order they are listed in.
    let o = plan_with_kinds_swapped(&root, &[]);
    assert_eq!(o.json()["places"][0], "12", "{}", o.stdout);
    assert!(
        o.says("P-core (12-19) > E-core (0-11) (discovery found P-core (0-11) > E-core (12-19))"),
        "{}",
        o.stderr
    );
    // Other names: listed fastest first.
    let argv = [
        &base[..],
        &["--kinds", "12-19:big,0-11:little", "topo", "--json", "-q"],
    ]
    .concat();
    let t = ok(&argv).json();
    assert_eq!(t["kinds"][1]["name"], "big");
    assert_eq!(t["kinds"][1]["mark"], "B");
    assert_eq!(t["kinds"][1]["cpus"], "12-19");
    assert_eq!(t["kinds"][0]["name"], "little");
    assert_eq!(t["cpus"][12]["kind"], 1);
    assert_eq!(t["cpus"][0]["kind"], 0);
    // Kind names from the declaration work in kind:NAME policies.
    let argv = [
        &base[..],
        &[
            "--kinds",
            "12-19:big,0-11:little",
            "plan",
            "kind:big",
            "-t",
            "1",
            "--json",
            "-q",
        ],
    ]
    .concat();
    assert_eq!(ok(&argv).json()["places"][0], "12");
}

#[test]
fn hwloc_xml_machines_take_declarations_too() {
    let xml = xml_fixture("20em64t-hybrid-1p6c2t+2ca4co1t.hwloc29.xml");
    let xml = xml.to_str().unwrap();
    let o = ok(&["--hwloc-xml", xml, "--kinds", "0-19:only", "topo", "--json"]);
    let t = o.json();
    assert_eq!(t["kinds"].as_array().unwrap().len(), 1);
    assert_eq!(t["kinds"][0]["source"], "declared");
    assert!(o.says("declared by --kinds"), "{}", o.stderr);
}

#[test]
fn the_environment_declares_and_is_named() {
    let root = hybrid();
    let o = pinsight(&["--fsroot", &root, "plan", "p-pinned", "-t", "1", "--json"])
        .env("PINSIGHT_KINDS", "0-11:E,12-19:P")
        .run();
    assert_says(&o, 0, &["kinds declared by PINSIGHT_KINDS, not discovered"]);
    assert_eq!(o.json()["places"][0], "12");
    let o = pinsight(&["--fsroot", &root, "topo"])
        .env("PINSIGHT_KINDS", "0-11:E,12-18:P")
        .run();
    refused(
        &o,
        &["PINSIGHT_KINDS '0-11:E,12-18:P'", "CPU 19 not declared"],
    );
    // The flag beats the variable; an empty variable declares nothing.
    let o = pinsight(&[
        "--fsroot", &root, "--kinds", "0-19:x", "topo", "--json", "-q",
    ])
    .env("PINSIGHT_KINDS", "garbage")
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["kinds"][0]["name"], "x");
    let o = pinsight(&["--fsroot", &root, "topo", "--json"])
        .env("PINSIGHT_KINDS", "")
        .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_ne!(o.json()["kinds"][0]["source"], "declared");
    assert!(!o.says("declared"), "{}", o.stderr);
}

#[test]
fn quiet_hides_the_note_not_the_declaration() {
    let root = hybrid();
    let o = plan_with_kinds_swapped(&root, &["-q"]);
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert_eq!(o.json()["places"][0], "12");
}

#[test]
fn bad_declarations_are_one_usage_line() {
    let root = hybrid();
    let run = |spec: &str| pinsight(&["--fsroot", &root, "--kinds", spec, "topo"]).run();
    refused(
        &run("0-19"),
        &["--kinds '0-19'", "has no :NAME", "CPULIST:NAME"],
    );
    refused(&run("0-11:P,,12-19:E"), &["stray comma"]);
    refused(
        &run("0-11:P,12-20:E"),
        &["CPU 20 not present", "present: 0-19"],
    );
    refused(
        &run("0-11:P,11-19:E"),
        &["CPU 11 is in two groups", "'0-11:P'", "'11-19:E'"],
    );
    refused(
        &run("0-11:P,12-18:E"),
        &["CPU 19 not declared", "every usable CPU (0-19)"],
    );
    refused(&run("0-11:fast,12-19:FAST"), &["'FAST' is declared twice"]);
    refused(
        &run("0-5:E,6-11:P,12-19:mid"),
        &["'6-11:P' is listed after '0-5:E'"],
    );
    refused(
        &run("0-11:P!,12-19:E"),
        &["kind name 'P!'", "letters, digits"],
    );
    // Offline CPUs cannot be declared (CPUs 2-3 of this recording are offline).
    let off = hwloc_fixture("16em64t-4s2c2t-offlines");
    let t = ok(&["--fsroot", off.to_str().unwrap(), "topo", "--json", "-q"]).json();
    let ids = |online: bool| -> Vec<u64> {
        t["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["online"] == online)
            .map(|c| c["id"].as_u64().unwrap())
            .collect()
    };
    let offline = ids(false);
    assert!(!offline.is_empty());
    let spec = format!("{}:P,{}:E", offline[0], list(&ids(true)));
    let o = pinsight(&["--fsroot", off.to_str().unwrap(), "--kinds", &spec, "topo"]).run();
    refused(&o, &[&format!("CPU {} offline", offline[0])]);
}

/// Syntax is checked before any work, whatever the command: a bad
/// declaration given to `snapshot` writes nothing.
#[test]
fn syntax_is_checked_before_any_work() {
    let root = hybrid();
    let o = pinsight(&["--fsroot", &root, "--kinds", "0-3", "snapshot", "snap"]).run();
    refused(&o, &["--kinds '0-3'", "has no :NAME"]);
    assert!(!o.path("snap").exists());
    // A good one is not recorded in a snapshot: said so, and snapshot works.
    let o = pinsight(&["--fsroot", &root, "--kinds", "0-19:x", "snapshot", "snap"])
        .writes("snap")
        .run();
    assert_says(&o, 0, &["--kinds is not recorded in a snapshot"]);
}

/// `latency` draws the kinds beside its charts: a declaration it cannot
/// apply is refused before anything is loaded or written, not dropped.
#[test]
fn latency_charts_refuse_a_bad_declaration_first() {
    let root = hybrid();
    let csv = latency_fixture("Intel_Core_i9-12900K.csv");
    let o = pinsight(&[
        "--fsroot",
        &root,
        "--kinds",
        "0-11:P,12-18:E",
        "latency",
        "--latency",
        csv.to_str().unwrap(),
        "--export-svg",
        "m.svg",
    ])
    .run();
    refused(&o, &["CPU 19 not declared"]);
    assert!(!o.path("m.svg").exists());
}
