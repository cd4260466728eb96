//! `pinsight simulate`'s run: every policy simulated in turn on one
//! configuration by pinsight-sched-model's pure simulator, with progress.

use pinsight_sched_model::{simulate, Policy, PolicyResult, Program, SimConfig, SimError};
use pinsight_sys::progress::Progress;

/// A policy whose simulation failed, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {source}", policy.name())]
pub struct PolicyFailed {
    pub policy: Policy,
    #[source]
    pub source: SimError,
}

/// Simulates `programs` under each of `policies`, in order. `progress`
/// sees one task, "simulating", of one step per policy (each step named
/// "simulating NAME" while it runs). Stops at the first failure.
pub fn simulate_all(
    cfg: &SimConfig,
    programs: &[Program],
    policies: &[Policy],
    progress: &mut dyn Progress,
) -> Result<Vec<PolicyResult>, PolicyFailed> {
    progress.begin("simulating", policies.len() as u64, 0);
    let mut results = Vec::new();
    for (done, &policy) in policies.iter().enumerate() {
        progress.step(&format!("simulating {}", policy.name()), done as u64);
        let r = simulate(cfg, programs, policy).map_err(|source| PolicyFailed { policy, source });
        results.push(r?);
        progress.step("", done as u64 + 1);
    }
    progress.end();
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_sched_model::{parse_programs, Machine};

    #[test]
    fn one_result_per_policy_in_order_and_failures_name_the_policy() {
        let programs = parse_programs("name,instructions,sf\na,1e9,2\nb,2e9,1.5\n").unwrap();
        let cfg = SimConfig::new(Machine { big: 1, small: 1 });
        let policies = [Policy::to(), Policy::Os];
        let mut quiet = pinsight_sys::progress::Silent;
        let got = simulate_all(&cfg, &programs, &policies, &mut quiet).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].policy, "to");
        assert_eq!(got[1].policy, "os");
        let e = simulate_all(&cfg, &[], &policies, &mut quiet).unwrap_err();
        assert_eq!(e.policy, Policy::to());
        assert_eq!(e.to_string(), "to: no program to simulate");
    }
}
