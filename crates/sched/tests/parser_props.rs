//! Property tests of the parsers of outside input: `--sf NAME=SF` and the
//! `mix` journal.

use pinsight_lifecycle::journal::parse;
use pinsight_sched::mix::{HeaderLine, Record};
use pinsight_sched::{GivenSf, ProgramRef, SfTarget};
use proptest::prelude::*;
use std::path::Path;

proptest! {
    #[test]
    fn sf_specs_never_panic_and_accept_only_sane_values(s in "\\PC{0,24}") {
        let mut g = GivenSf::new();
        match g.add_spec(&s) {
            Ok(()) => {
                let (_, v) = &g.entries()[0];
                prop_assert!(v.is_finite() && (1.0..=100.0).contains(v));
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    #[test]
    fn given_sfs_are_found_by_name_and_position(
        name in "[a-z][a-z0-9._-]{0,10}",
        pos in 1usize..50,
        v in 1.0f64..100.0,
    ) {
        let mut g = GivenSf::new();
        g.add_spec(&format!("{name}={v}")).unwrap();
        g.add_spec(&format!("#{pos}={}", v / 2.0 + 0.5)).unwrap();
        prop_assert_eq!(&g.entries()[0].0, &SfTarget::Name(name.clone()));
        let other = ProgramRef { position: pos + 1, name: &name, pid: 1 };
        prop_assert_eq!(g.lookup(&other), Some(v));
        let at = ProgramRef { position: pos, name: "zz", pid: 1 };
        prop_assert_eq!(g.lookup(&at), Some(v / 2.0 + 0.5));
    }

    #[test]
    fn journals_round_trip(
        runs in proptest::collection::vec((0usize..4, 0.001f64..1e4, 0i32..256), 0..12),
        torn in "\\PC{0,20}",
    ) {
        let header = Record::Header {
            commands: (0..4).map(|i| format!("p{i}")).collect(),
            schedulers: vec!["aarr".into()],
            repeat: 3,
            period_s: 0.2,
            big_cpus: "0".into(),
            small_cpus: "1".into(),
            sf: vec![],
            metrics: vec![],
        };
        let mut recs = vec![Record::Start { scheduler: "aarr".into() }];
        recs.extend(runs.iter().enumerate().map(|(i, &(program, time_s, exit_code))| Record::Run {
            scheduler: "aarr".into(), program, completion: i as u32 + 1, time_s, exit_code,
            metrics: Default::default(), output: None,
        }));
        let text: String = std::iter::once(&header).chain(&recs)
            .map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
        let path = Path::new("j.jsonl");
        let read = parse::<HeaderLine, Record>(path, &text).unwrap();
        prop_assert_eq!(&read.header.0, &header);
        prop_assert_eq!(&read.records, &recs);
        // Whatever a crash left after the last newline is dropped or read,
        // never a panic or an error; a line that is a record is kept.
        let with_tail = format!("{text}{}", torn.replace('\n', " "));
        let r = parse::<HeaderLine, Record>(path, &with_tail).unwrap();
        prop_assert!(r.records.len() >= recs.len());
        prop_assert_eq!(&r.records[..recs.len()], &recs[..]);
    }
}
