//! Property tests of the parsers of outside input: `--sf NAME=SF` and the
//! `mix` journal.

use pinsight_sched::mix::{parse, Record};
use pinsight_sched::{GivenSf, ProgramRef, SfTarget};
use proptest::prelude::*;

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
        runs in proptest::collection::vec((0usize..4, 1u32..5, 0.001f64..1e4, 0i32..256), 0..12),
        torn in "\\PC{0,20}",
    ) {
        let mut recs = vec![Record::Start { scheduler: "aarr".into() }];
        recs.extend(runs.iter().map(|&(program, completion, time_s, exit_code)| Record::Run {
            scheduler: "aarr".into(), program, completion, time_s, exit_code,
        }));
        let text: String = recs.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
        prop_assert_eq!(&parse(&text).unwrap(), &recs);
        // Whatever a crash left after the last newline is dropped or read,
        // never a panic; a line that is a record is kept.
        let with_tail = format!("{text}{}", torn.replace('\n', " "));
        if let Ok(r) = parse(&with_tail) {
            prop_assert!(r.len() >= recs.len());
            prop_assert_eq!(&r[..recs.len()], &recs[..]);
        }
    }
}
