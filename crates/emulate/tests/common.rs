//! Set-up shared by the test modules.

use pinsight_emulate::Targets;
use pinsight_model::declared::KindSpec;

/// The usable CPUs, and targets declaring the first a P-core and the
/// second an E-core at half its speed; none (a skip, saying `needs`) on a
/// machine with fewer than two usable CPUs.
pub fn second_cpu_at_half_speed(needs: &str) -> Option<(Vec<usize>, Targets)> {
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip(needs);
        return None;
    }
    let spec = KindSpec::parse(&format!("{}:P,{}:E@0.5", cpus[0], cpus[1])).unwrap();
    let targets = Targets::of(&spec).unwrap();
    Some((cpus, targets))
}
