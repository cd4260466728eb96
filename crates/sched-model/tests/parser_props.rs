//! The three parsers of outside input never panic, answer in one line,
//! and what they accept is valid.

use pinsight_sched_model::{parse_programs, Machine, SfQuality};
use proptest::prelude::*;

proptest! {
    #[test]
    fn machine_spec_never_panics(s in "[0-9PEL+a-z ]{0,20}|\\PC{0,30}") {
        match Machine::parse(&s) {
            Ok(m) => prop_assert!(m.big >= 1 && m.small >= 1 && m.big + m.small <= 4096),
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    #[test]
    fn sf_estimate_spec_never_panics(s in "(exact|classes:|mae:)?[0-9.,e-]{0,20}|\\PC{0,30}") {
        match SfQuality::parse(&s) {
            Ok(SfQuality::Classes(v)) => prop_assert!(!v.is_empty() && v.iter().all(|x| *x > 0.0 && *x <= 100.0)),
            Ok(SfQuality::Mae(e)) => prop_assert!((0.0..=10.0).contains(&e)),
            Ok(SfQuality::Exact) => {}
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    #[test]
    fn programs_csv_never_panics(
        rows in prop::collection::vec(
            ("[a-c#\"]{0,2}", "[0-9e.x-]{0,5}", "[0-9.x-]{0,4}", prop::option::of("[0-9.x-]{0,3}")),
            0..8),
        header in prop::sample::select(vec!["name,instructions,sf\n", "name,instructions,sf,mem\n", "", "x\n"]),
        junk in "\\PC{0,10}",
    ) {
        let mut text = header.to_string();
        for (n, i, s, m) in &rows {
            text.push_str(&format!("{n},{i},{s}"));
            if let Some(m) = m { text.push_str(&format!(",{m}")); }
            text.push('\n');
        }
        text.push_str(&junk);
        match parse_programs(&text) {
            Ok(ps) => {
                prop_assert!(!ps.is_empty());
                for p in &ps {
                    prop_assert!(!p.phases.is_empty());
                    for f in &p.phases {
                        prop_assert!(f.instructions > 0.0 && f.sf > 0.0 && (0.0..=1.0).contains(&f.mem));
                    }
                }
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}
