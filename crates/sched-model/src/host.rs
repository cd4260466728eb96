//! The simulated machine taken from a real topology (`pinsight simulate`
//! without a machine spec): the fastest kind's cores are big, every other
//! kind's small.
//!
//! Cores, not CPUs: the simulator runs one thread per core, so SMT
//! siblings count once. Where the topology has no core groups, or where
//! declared kinds split a core's CPUs, each CPU counts as one core (and
//! [`HostMachine`]'s description says "CPUs").

use crate::spec::Machine;
use pinsight_model::{Kind, Topology};
use thiserror::Error;

/// A machine taken from a topology, with what it was made of.
#[derive(Debug, Clone, PartialEq)]
pub struct HostMachine {
    /// The simulated machine.
    pub machine: Machine,
    /// The big kind's name and CPU list.
    pub big: (String, String),
    /// The small kinds' names and CPU lists, fastest first.
    pub small: Vec<(String, String)>,
    /// Whether cores were counted by CPU (no core groups, or kinds that
    /// split a core).
    pub by_cpu: bool,
}

/// Why a topology gives no machine to simulate.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostMachineError {
    /// The topology names no kind.
    #[error("the machine's kinds are unknown")]
    UnknownKinds,
    /// Only one kind.
    #[error("this machine has one ({0})")]
    OneKind(String),
    /// The big or the small kinds have no online core.
    #[error("two core kinds with online cores")]
    NoOnlineCores,
}

impl HostMachineError {
    /// The refusal of `simulate` on this machine, with the inputs that
    /// give it another named by the caller: `machine` (a machine declared
    /// whole, e.g. `8P+8E`) and `kinds` (core kinds declared on this one).
    pub fn refusal(&self, machine: &str, kinds: &str) -> String {
        match self {
            HostMachineError::NoOnlineCores => format!("simulate needs {self}, or {machine}"),
            HostMachineError::OneKind(_) => format!(
                "simulate needs two core kinds or {machine}: {self}; \
                 declare kinds with {kinds} or give e.g. {machine} 8P+8E"
            ),
            HostMachineError::UnknownKinds => {
                format!("simulate needs two core kinds or {machine}: {self}")
            }
        }
    }
}

impl Machine {
    /// The machine of `topo`: the fastest kind's cores big, all other
    /// kinds' small (see the module doc for how cores are counted).
    pub fn from_topology(topo: &Topology) -> Result<HostMachine, HostMachineError> {
        let Some(fast) = topo.fastest_kind() else {
            return Err(HostMachineError::UnknownKinds);
        };
        if topo.kinds.len() < 2 {
            return Err(HostMachineError::OneKind(fast.name.clone()));
        }
        let straddles = topo.cores.iter().any(|c| {
            topo.kinds
                .iter()
                .filter(|k| c.cpus.intersects(&k.cpus))
                .count()
                > 1
        });
        let by_cpu = topo.cores.is_empty() || straddles;
        let cores_of = |k: &Kind| {
            if by_cpu {
                k.cpus.len()
            } else {
                topo.cores
                    .iter()
                    .filter(|c| c.cpus.intersects(&k.cpus))
                    .count()
            }
        };
        let others = &topo.kinds[..topo.kinds.len() - 1];
        let machine = Machine {
            big: cores_of(fast),
            small: others.iter().map(cores_of).sum(),
        };
        if machine.big == 0 || machine.small == 0 {
            return Err(HostMachineError::NoOnlineCores);
        }
        let named = |k: &Kind| (k.name.clone(), k.cpus.to_string());
        Ok(HostMachine {
            machine,
            big: named(fast),
            small: others.iter().rev().map(named).collect(),
            by_cpu,
        })
    }
}

/// Which kinds are simulated as big and as small, e.g. "machine from the
/// topology: P-core (0-7, 4 cores) big, E-core (8-15) small (8 cores)".
impl std::fmt::Display for HostMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = if self.by_cpu { "CPUs" } else { "cores" };
        let Machine { big, small } = self.machine;
        let others: Vec<String> = self
            .small
            .iter()
            .map(|(name, cpus)| format!("{name} ({cpus})"))
            .collect();
        let (name, cpus) = &self.big;
        if self.small.len() > 1 {
            write!(
                f,
                "{} kinds: {name} ({cpus}, {big} {unit}) simulated as big, {} \
                 all as small ({small} {unit})",
                self.small.len() + 1,
                others.join(", ")
            )
        } else {
            write!(
                f,
                "machine from the topology: {name} ({cpus}, {big} {unit}) big, \
                 {} small ({small} {unit})",
                others.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smt_siblings_count_once_and_the_note_names_the_kinds() {
        let topo = pinsight_testkit::topology::i7_1370p();
        let host = Machine::from_topology(&topo).unwrap();
        assert!(!host.by_cpu);
        assert_eq!(host.machine, Machine { big: 6, small: 8 });
        assert_eq!(
            host.to_string(),
            "machine from the topology: P-core (0-11, 6 cores) big, E-core (12-19) small (8 cores)"
        );
    }

    #[test]
    fn one_kind_is_refused_with_its_name() {
        let topo = pinsight_testkit::topology::smt_machine();
        let e = Machine::from_topology(&topo).unwrap_err();
        assert!(matches!(e, HostMachineError::OneKind(_)), "{e:?}");
        assert!(e.to_string().starts_with("this machine has one ("), "{e}");
        let refusal = e.refusal("-m", "-k");
        assert!(
            refusal.starts_with("simulate needs two core kinds or -m: this machine has one (")
                && refusal.ends_with("; declare kinds with -k or give e.g. -m 8P+8E"),
            "{refusal}"
        );
        assert_eq!(
            HostMachineError::NoOnlineCores.refusal("-m", "-k"),
            "simulate needs two core kinds with online cores, or -m"
        );
    }

    #[test]
    fn three_kinds_are_one_big_and_two_small() {
        let topo = pinsight_testkit::topology::arm_phone();
        let host = Machine::from_topology(&topo).unwrap();
        assert_eq!(host.small.len(), 2);
        assert!(host.to_string().starts_with("3 kinds: "), "{host}");
        assert!(host.to_string().contains("simulated as big"), "{host}");
    }
}
