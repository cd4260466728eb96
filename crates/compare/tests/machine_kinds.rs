//! The journal header's core kinds: written typed (`name`, `cpus`,
//! `rank`), and still read from the `"NAME: CPULIST"` text that older
//! journals hold, by `Machine::kind_cpus` and `sf::journal_sf` alike.

use pinsight_compare::journal::{Journal, Machine, MachineKind};
use pinsight_cpuset::CpuSet;

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// A header line as a journal holds it, with `kinds` as given.
fn header_line(kinds: &str) -> String {
    format!(
        r#"{{"type":"header","schema":"pinsight-compare/1","pinsight_version":"0.1.0","created":"2025-01-31T12:00:00Z","command":["true"],"prepare":null,"policies":["p-set","e-set"],"governors":[],"threads":2,"oversubscribe":false,"runs":2,"warmup":0,"seed":42,"timeout_s":null,"arms":[{{"id":"p-set","policy":"p-set","governor":null,"plan":{{"policy":"p-set","threads":2,"process_mask":"0-1","places":[],"pinned":false}},"env":[],"notes":[]}},{{"id":"e-set","policy":"e-set","governor":null,"plan":{{"policy":"e-set","threads":2,"process_mask":"2-3","places":[],"pinned":false}},"env":[],"notes":[]}}],"not_applicable":[],"machine":{{"hostname":"box","kernel":null,"model_name":null,"arch":null,"usable_cpus":"0-3","kinds":{kinds},"capabilities":[]}}}}"#
    )
}

fn read(line: &str) -> Journal {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    std::fs::write(&path, format!("{line}\n")).unwrap();
    Journal::read(&path).unwrap()
}

fn hybrid() -> Vec<MachineKind> {
    vec![
        MachineKind {
            name: "E-core".into(),
            cpus: cpus("2-3"),
            rank: 0,
        },
        MachineKind {
            name: "P-core".into(),
            cpus: cpus("0-1"),
            rank: 1,
        },
    ]
}

#[test]
fn an_old_journal_s_text_kinds_are_read_typed() {
    let j = read(&header_line(r#"["E-core: 2-3", "P-core: 0-1"]"#));
    assert_eq!(j.header.machine.kinds, hybrid());
    assert_eq!(j.header.machine.kind_cpus(), vec![cpus("2-3"), cpus("0-1")]);
    assert_eq!(j.header.machine.kinds_text(), "E-core: 2-3, P-core: 0-1");
    // journal_sf finds the big and small kinds in it: without runs, the
    // refusal is about the arms, not the kinds.
    let e = pinsight_compare::sf::journal_sf(&j).unwrap_err();
    assert!(
        matches!(e, pinsight_compare::sf::JournalSfError::NoPair { .. }),
        "{e}"
    );
}

#[test]
fn an_unreadable_old_kind_is_left_out_not_a_refused_journal() {
    let j = read(&header_line(r#"["uniform: 0-3", "garbage"]"#));
    assert_eq!(j.header.machine.kinds.len(), 1);
    assert_eq!(j.header.machine.kinds[0].name, "uniform");
    let e = pinsight_compare::sf::journal_sf(&j).unwrap_err();
    assert!(e.to_string().contains("1 core kind (uniform: 0-3)"), "{e}");
}

#[test]
fn new_journals_write_kinds_typed_and_read_them_back() {
    let m = Machine {
        usable_cpus: cpus("0-3"),
        kinds: hybrid(),
        ..Machine::default()
    };
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(
        v["kinds"],
        serde_json::json!([
            {"name": "E-core", "cpus": "2-3", "rank": 0},
            {"name": "P-core", "cpus": "0-1", "rank": 1}
        ])
    );
    let back: Machine = serde_json::from_value(v).unwrap();
    assert_eq!(back, m);
    let j = read(&header_line(&serde_json::to_string(&m.kinds).unwrap()));
    assert_eq!(j.header.machine.kinds, hybrid());
}
