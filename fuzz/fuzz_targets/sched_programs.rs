//! Programs of `simulate --programs FILE`: the CSV parser never panics,
//! errors are one line, accepted programs are valid, and small accepted
//! sets are simulated under every policy with finite metrics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_sched_model::{parse_programs, simulate, Machine, Policy, SfQuality, SimConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let programs = match parse_programs(text) {
        Ok(p) => p,
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
            return;
        }
    };
    for (i, p) in programs.iter().enumerate() {
        assert!(!p.phases.is_empty());
        assert!(programs[..i].iter().all(|q| q.name != p.name));
        for f in &p.phases {
            assert!(f.instructions > 0.0 && f.instructions.is_finite());
            assert!(f.sf > 0.0 && f.sf <= 100.0);
            assert!((0.0..=1.0).contains(&f.mem));
        }
    }
    if programs.len() <= 4 {
        let mut cfg = SimConfig::new(Machine { big: 1, small: 1 });
        cfg.quality = SfQuality::Mae(0.2);
        cfg.max_work = 8_000;
        cfg.repeat = 1;
        for policy in [
            Policy::Os,
            Policy::aarr(0.2),
            Policy::to(),
            Policy::acfs(0.2),
        ] {
            match simulate(&cfg, &programs, policy) {
                Ok(r) => {
                    let m = r.metrics;
                    assert!(m.stp.is_finite() && m.antt.is_finite());
                    assert!(m.unfairness.is_finite() && m.unfairness >= 1.0);
                }
                Err(e) => assert!(!e.to_string().contains('\n')),
            }
        }
    }
});
