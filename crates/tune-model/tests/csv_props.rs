//! The runs CSV: generated valid files round-trip; arbitrary text never
//! panics and errors are one line.

use pinsight_tune_model::parse_runs;
use proptest::prelude::*;

proptest! {
    #[test]
    fn valid_csv_round_trips(rows in prop::collection::vec(
        (0u32..64, 0u32..64, 0u32..64, 1e-6f64..1e6, prop::option::of(0f64..1e6)), 1..20),
        energy in any::<bool>())
    {
        let mut text = String::from("# generated\n");
        text.push_str(if energy { "p,e,smt,time_s,energy_j\n" } else { "p,e,smt,time_s\n" });
        for (p, e, smt, t, j) in &rows {
            let p = if p + e == 0 { 1 } else { *p };
            if energy {
                let j = j.map(|x| x.to_string()).unwrap_or_default();
                text.push_str(&format!("{p},{e},{smt},{t},{j}\n"));
            } else {
                text.push_str(&format!("{p},{e},{smt},{t}\n"));
            }
        }
        let runs = parse_runs(&text).expect("valid");
        prop_assert_eq!(runs.len(), rows.len());
        for (r, (p, e, smt, t, j)) in runs.iter().zip(&rows) {
            let p = if p + e == 0 { 1 } else { *p };
            prop_assert_eq!((r.config.p, r.config.e, r.config.smt), (p, *e, *smt));
            prop_assert_eq!(r.time_s, *t);
            prop_assert_eq!(r.energy_j, if energy { *j } else { None });
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,200}") {
        if let Err(e) = parse_runs(&text) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn csv_like_text_never_panics(text in "[pesmti_ej0-9.,\\-#\n x]{0,120}") {
        let with_header = format!("p,e,smt,time_s\n{text}");
        for t in [&text, &with_header] {
            if let Err(e) = parse_runs(t) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }
}
