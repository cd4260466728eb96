//! `pinsight tune`'s view of a machine: which cores are the model's
//! P-cores and E-cores, how many SMT siblings each may add, and which CPUs
//! run a configuration (P-cores, E-cores, siblings).
//!
//! The asymmetric Amdahl model of `pinsight-tune-model` knows two kinds of
//! core. Here the fastest kind's usable cores are the P-cores and the next
//! kind's the E-cores; on a machine of one kind every usable core is a
//! "P-core" and the E count is 0. Kinds beyond the second are left out and
//! said so in [`TuneLayout::notes`], never merged into E (two speeds in one
//! kind would break the model's one-`sf` assumption).
//!
//! A configuration's CPUs are chosen as the other policies choose theirs:
//! cores in compact (hierarchy) order, one PU per core first; SMT siblings
//! go to the used P-cores first (second PU of each, then third, ...), then
//! to the used E-cores, the order the model assumes
//! ([`Config::smt_split`]).

use crate::order::{slots, Slot};
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_tune_model::{Config, Machine};

/// Why a machine or a configuration cannot be laid out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TuneLayoutError {
    /// No usable CPU among those given.
    #[error("no usable CPU to tune on (usable CPUs: {usable})")]
    NoUsableCpus {
        /// The usable CPUs the layout was asked to use.
        usable: CpuSet,
    },
    /// The configuration does not fit the machine.
    #[error("{config} does not fit this machine ({machine})")]
    DoesNotFit {
        /// The configuration asked for.
        config: Config,
        /// What the machine allows, as text (`6P+8E, 1 SMT sibling per P-core`).
        machine: String,
    },
    /// A tool's syntax cannot say this configuration.
    #[error("{tool} cannot express {config}: {why}")]
    NotExpressible {
        /// The tool (`KMP_HW_SUBSET`).
        tool: &'static str,
        /// The configuration.
        config: Config,
        /// Why not, in words.
        why: &'static str,
    },
}

/// One kind's usable cores, each a list of usable PUs (compact order).
#[derive(Clone, Debug, PartialEq, Eq)]
struct KindCores {
    name: String,
    cores: Vec<Vec<usize>>,
    /// libomp's KMP_HW_SUBSET attribute of the kind (`intel_core`,
    /// `intel_atom`, `effN`); `None` on a machine of one kind.
    omp_attr: Option<String>,
}

/// The machine as the tuning model sees it, and where each configuration runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuneLayout {
    /// Counts the model works with.
    pub machine: Machine,
    /// Name of the P kind ("P-core"); on one kind the kind's name, or
    /// "core" when the machine declares no kind.
    pub p_kind: String,
    /// Name of the E kind; `None` on a machine of one kind.
    pub e_kind: Option<String>,
    /// What the layout left out or rounded, in words (kinds beyond the
    /// second, cores with fewer usable siblings than others).
    pub notes: Vec<String>,
    p: KindCores,
    e: Option<KindCores>,
}

fn group_cores(slots: &[Slot]) -> Vec<Vec<usize>> {
    slots.iter().map(|s| s.pus.clone()).collect()
}

/// Usable SMT siblings per core beyond the first PU: the fewest any core
/// of the kind has, so every configuration the machine allows can be
/// placed; a note when cores differ.
fn smt_width(k: &KindCores, notes: &mut Vec<String>) -> u32 {
    let min = k.cores.iter().map(Vec::len).min().unwrap_or(1);
    let max = k.cores.iter().map(Vec::len).max().unwrap_or(1);
    if min != max {
        notes.push(format!(
            "{} cores have {min} to {max} usable hardware threads; \
             the model uses {min} per core",
            k.name
        ));
    }
    u32::try_from(min.saturating_sub(1)).unwrap_or(u32::MAX)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl TuneLayout {
    /// Lays out `topo` restricted to `within` (the CPUs this process may
    /// use among the usable ones; pass `topo.usable()` for all).
    pub fn new(topo: &Topology, within: &CpuSet) -> Result<TuneLayout, TuneLayoutError> {
        let usable = topo.usable().intersection(within);
        if usable.is_empty() {
            return Err(TuneLayoutError::NoUsableCpus { usable });
        }
        let mut notes = Vec::new();
        // Kinds with usable CPUs, fastest first.
        let mut kinds: Vec<(String, CpuSet)> = topo
            .kinds
            .iter()
            .rev()
            .map(|k| (k.name.clone(), k.cpus.intersection(&usable)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        let (p, e) = if kinds.len() <= 1 {
            let name = kinds
                .pop()
                .map_or_else(|| "core".to_string(), |(name, _)| name);
            let p = KindCores {
                name,
                cores: group_cores(&slots(topo, &usable)),
                omp_attr: None,
            };
            (p, None)
        } else {
            let mut in_kinds = CpuSet::new();
            for (_, c) in &kinds {
                in_kinds = in_kinds.union(c);
            }
            let stray = usable.difference(&in_kinds);
            if !stray.is_empty() {
                notes.push(format!(
                    "CPUs {stray} belong to no core kind and are left out"
                ));
            }
            for (name, cpus) in kinds.iter().skip(2) {
                notes.push(format!(
                    "{name} cores (CPUs {cpus}) are left out: the model has two \
                     kinds, the fastest ({}) and the next ({})",
                    kinds[0].0, kinds[1].0
                ));
            }
            let mk = |(name, cpus): &(String, CpuSet)| KindCores {
                name: name.clone(),
                cores: group_cores(&slots(topo, cpus)),
                omp_attr: omp_attr(topo, name),
            };
            (mk(&kinds[0]), Some(mk(&kinds[1])))
        };
        let smt_p = smt_width(&p, &mut notes);
        let smt_e = e.as_ref().map_or(0, |k| smt_width(k, &mut notes));
        let machine = Machine {
            p_cores: count(p.cores.len()),
            e_cores: e.as_ref().map_or(0, |k| count(k.cores.len())),
            smt_per_p_core: smt_p,
            smt_per_e_core: smt_e,
        };
        Ok(TuneLayout {
            machine,
            p_kind: p.name.clone(),
            e_kind: e.as_ref().map(|k| k.name.clone()),
            notes,
            p,
            e,
        })
    }

    /// What the machine allows, in words: `6P+8E, 1 SMT sibling per P-core`
    /// or `2 cores (one kind), no SMT`.
    pub fn describe(&self) -> String {
        let m = &self.machine;
        let smt = |n: u32, what: &str| match n {
            0 => None,
            1 => Some(format!("1 SMT sibling per {what}")),
            n => Some(format!("{n} SMT siblings per {what}")),
        };
        if m.one_kind() {
            let cores = format!(
                "{} {} (one kind)",
                m.p_cores,
                if m.p_cores == 1 { "core" } else { "cores" }
            );
            match smt(m.smt_per_p_core, "core") {
                Some(s) => format!("{cores}, {s}"),
                None => format!("{cores}, no SMT"),
            }
        } else {
            let mut parts = vec![format!("{}P+{}E", m.p_cores, m.e_cores)];
            parts.extend(smt(m.smt_per_p_core, "P-core"));
            parts.extend(smt(m.smt_per_e_core, "E-core"));
            if m.smt_per_p_core == 0 && m.smt_per_e_core == 0 {
                parts.push("no SMT".to_string());
            }
            parts.join(", ")
        }
    }

    /// The CPUs that run `config`: its P-cores' first PUs, its E-cores'
    /// first PUs, then its SMT siblings (P-cores first).
    pub fn cpus(&self, config: Config) -> Result<CpuSet, TuneLayoutError> {
        Ok(self.ordered_cpus(config)?.into_iter().collect())
    }

    /// The CPUs of `config` in thread order (thread i on the i-th CPU when
    /// pinned): one per core, P-cores then E-cores, then the siblings.
    pub fn ordered_cpus(&self, config: Config) -> Result<Vec<usize>, TuneLayoutError> {
        if !self.machine.allows(config) {
            return Err(TuneLayoutError::DoesNotFit {
                config,
                machine: self.describe(),
            });
        }
        let p_cores = &self.p.cores[..config.p as usize];
        let e_cores: &[Vec<usize>] = match &self.e {
            Some(k) => &k.cores[..config.e as usize],
            None => &[],
        };
        let mut out: Vec<usize> = p_cores.iter().chain(e_cores).map(|c| c[0]).collect();
        let (on_p, on_e) = config.smt_split();
        out.extend(siblings(p_cores, self.machine.smt_per_p_core, on_p));
        out.extend(siblings(e_cores, self.machine.smt_per_e_core, on_e));
        Ok(out)
    }

    /// The pinsight policy that runs `config`: `cpus-set:LIST` (threads
    /// float inside the configuration's CPUs), or `cpus:LIST` (thread i on
    /// the i-th CPU of [`ordered_cpus`](Self::ordered_cpus)) when `pinned`.
    pub fn policy(&self, config: Config, pinned: bool) -> Result<String, TuneLayoutError> {
        if pinned {
            let list: Vec<String> = self
                .ordered_cpus(config)?
                .iter()
                .map(ToString::to_string)
                .collect();
            Ok(format!("cpus:{}", list.join(",")))
        } else {
            Ok(format!("cpus-set:{}", self.cpus(config)?))
        }
    }
}

/// libomp's KMP_HW_SUBSET core attribute for kind `name`: `intel_core` or
/// `intel_atom` when it is the only kind of that core type, else
/// `eff<rank>` (libomp numbers core efficiencies from 0, least performant
/// first, as hwloc and pinsight rank kinds; LLVM D114901).
fn omp_attr(topo: &Topology, name: &str) -> Option<String> {
    use pinsight_model::CoreType;
    let kind = topo.kinds.iter().find(|k| k.name == name)?;
    let only = |t: CoreType| topo.kinds.iter().filter(|k| k.core_type == Some(t)).count() == 1;
    Some(match kind.core_type {
        Some(CoreType::Core) if only(CoreType::Core) => "intel_core".into(),
        Some(CoreType::Atom)
            if only(CoreType::Atom)
                && !topo
                    .kinds
                    .iter()
                    .any(|k| k.core_type == Some(CoreType::LowPower)) =>
        {
            "intel_atom".into()
        }
        _ => format!("eff{}", kind.rank),
    })
}

impl TuneLayout {
    /// `config` as libomp's `KMP_HW_SUBSET` (`4c:intel_core,8c:intel_atom,1t`;
    /// `6c,2t` on one kind; `6c:intel_core,8c:intel_atom` for every thread
    /// of each chosen core when the kinds' SMT widths differ). Threads per
    /// core are one number for every core, or all of them, so a
    /// configuration with siblings on only some of its cores cannot be said.
    pub fn kmp_hw_subset(&self, config: Config) -> Result<String, TuneLayoutError> {
        if !self.machine.allows(config) {
            return Err(TuneLayoutError::DoesNotFit {
                config,
                machine: self.describe(),
            });
        }
        let no = |why| TuneLayoutError::NotExpressible {
            tool: "KMP_HW_SUBSET",
            config,
            why,
        };
        let (wp, we) = (self.machine.smt_per_p_core, self.machine.smt_per_e_core);
        // Threads per core: one number for every core, or no thread level
        // at all (every thread of each chosen core).
        let threads = if config.smt == 0 {
            Some(1)
        } else if config.smt == config.p * wp + config.e * we {
            match (config.p, config.e) {
                (_, 0) => Some(wp + 1),
                (0, _) => Some(we + 1),
                _ if wp == we => Some(wp + 1),
                _ => None,
            }
        } else {
            return Err(no(
                "it gives every core the same number of threads, or all of each core's, and this one uses SMT siblings on some cores only",
            ));
        };
        let mut parts = Vec::new();
        for (n, k) in [(config.p, Some(&self.p)), (config.e, self.e.as_ref())] {
            if n == 0 {
                continue;
            }
            let k = k.expect("allows() checked the E count");
            parts.push(match &k.omp_attr {
                Some(a) => format!("{n}c:{a}"),
                None => format!("{n}c"),
            });
        }
        if let Some(n) = threads {
            parts.push(format!("{n}t"));
        }
        Ok(parts.join(","))
    }
}

/// `n` siblings of `cores`, second PU of each core first, then third, ...
/// (at most `width` per core).
fn siblings(cores: &[Vec<usize>], width: u32, n: u32) -> Vec<usize> {
    let mut out = Vec::new();
    for round in 1..=width as usize {
        for c in cores {
            if out.len() == n as usize {
                return out;
            }
            if let Some(&pu) = c.get(round) {
                out.push(pu);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_go_round_the_cores() {
        let cores = vec![vec![0, 4, 8], vec![1, 5, 9]];
        assert_eq!(siblings(&cores, 2, 3), vec![4, 5, 8]);
        assert_eq!(siblings(&cores, 1, 3), vec![4, 5]);
        assert!(siblings(&cores, 2, 0).is_empty());
    }
}
