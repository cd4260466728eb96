//! Policy names: the public vocabulary of `pinsight plan/run/pin`.
//!
//! Grammar: `BASE[+smt-physical-first]`, where BASE is one of
//!
//! | text                 | meaning                                                        |
//! |----------------------|----------------------------------------------------------------|
//! | `os`                 | no pinning: the OS scheduler decides (baseline)                |
//! | `p-set` / `e-set`    | process mask = all CPUs of the fastest / slowest kind; threads float |
//! | `p-pinned`/`e-pinned`| one CPU of that kind per thread, one PU per core before siblings |
//! | `p-first`/`e-first`  | fill the fastest (slowest) kind, then the next kind, ...       |
//! | `smt-physical-first` | every core's first PU, then the SMT siblings                   |
//! | `compact` (`close`)  | nearest CPUs first (siblings, then cores sharing the deepest cache) |
//! | `scatter` (`spread`) | spread over packages, NUMA nodes, L3 then L2 domains           |
//! | `kind:RANK\|NAME`    | pinned on one kind (rank 0 = slowest, or its name/mark: `E-core`, `E`) |
//! | `kind-set:RANK\|NAME`| process mask = that kind; threads float                        |
//! | `cpus:LIST`          | thread i pinned on the i-th CPU of LIST, in the user's order (likwid-pin `-c` style) |
//! | `cpus-set:LIST`      | process mask = LIST; threads float (`taskset -c` style)        |
//! | `balance`            | M tasks over all usable CPUs in proportion to capacity         |
//! | `latency-group`      | k CPUs with the lowest mean pairwise latency (`--latency FILE`) |
//! | `latency-pipeline`   | k CPUs in the order with the lowest neighbour-to-neighbour latency |
//!
//! The `+smt-physical-first` suffix (or `--smt-physical-first`) re-orders
//! pinned placements so every core gets one thread before any core gets a
//! second: `p-first+smt-physical-first` is the "hybrid SMT" scenario of
//! Adnan 2023 (Array 19, §3.1), physical first (P physical, then E, then
//! the P siblings).
//!
//! A LIST ([`CpuList`]) is a cpulist kept in the order written (`1,0`,
//! `8-11,0-3`, `0-15:2`; a CPU listed twice is an error), a hex mask as
//! taskset and hwloc-calc print it (`0xff`, `0x00000001,0x00000000`;
//! ascending), or `all` (every usable CPU, ascending). The policy's text
//! keeps the list as written: `cpus:1,0` stays `cpus:1,0`.

use pinsight_cpuset::CpuSet;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Which kind a kind-based policy means.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "by", content = "value")]
pub enum KindSel {
    /// The most performant kind (`p-*`).
    Fastest,
    /// The least performant kind (`e-*`).
    Slowest,
    /// A kind by rank (0 = least performant).
    Rank(usize),
    /// A kind by name or mark, case-insensitive (`E-core`, `e`, `Cortex-A76`).
    Name(String),
}

/// What a policy does, without modifiers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "policy", content = "arg")]
pub enum BasePolicy {
    /// No pinning.
    Os,
    /// Process mask = one kind's CPUs; threads float inside.
    KindSet(KindSel),
    /// One CPU of one kind per thread.
    KindPinned(KindSel),
    /// Fill the fastest kind first, then slower ones.
    PFirst,
    /// Fill the slowest kind first, then faster ones.
    EFirst,
    /// All usable CPUs, one PU per core first.
    SmtPhysicalFirst,
    /// Nearest CPUs first.
    Compact,
    /// Spread across the hierarchy.
    Scatter,
    /// Pinned on an explicit list: thread i on the list's i-th CPU.
    Cpus(CpuList),
    /// Process mask = an explicit list; threads float.
    CpusSet(CpuList),
    /// Tasks in proportion to capacity.
    Balance,
    /// k CPUs minimising mean pairwise latency on a measured matrix.
    LatencyGroup,
    /// k CPUs, in stage order, minimising latency between neighbours.
    LatencyPipeline,
}

/// An explicit CPU list of `cpus:LIST` / `cpus-set:LIST`, as written.
///
/// Accepted forms:
/// - a cpulist kept in the order written: `1,0`, `8-11,0-3`, `0-15:2`
///   (ranges and strides expand ascending; a CPU given twice is an error);
/// - a hex mask, as `taskset -p` and `hwloc-calc` print it: `0xff`,
///   `0x00000001,0x00000000` (32-bit words, most significant first; an
///   empty word is zero). A mask has no order: its CPUs are ascending;
/// - `all`: every usable CPU of the machine, ascending (resolved when
///   planning, see [`CpuList::resolve`]).
///
/// Serializes (and displays) as the text it was parsed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList {
    text: String,
    /// The CPUs in order; `None` for `all`.
    cpus: Option<Vec<usize>>,
}

/// Why a CPU LIST (of `cpus:`/`cpus-set:`) was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// Not a cpulist or mask.
    #[error(transparent)]
    Syntax(#[from] pinsight_cpuset::ParseError),
    /// A CPU given twice.
    #[error("CPU {cpu} is listed twice in '{text}'; each CPU may appear once")]
    Twice { cpu: usize, text: String },
    /// No CPU at all.
    #[error("the CPU list is empty")]
    Empty,
    /// hwloc's `...` (infinite) mask form.
    #[error("'{0}' is an infinite hwloc mask; use 'all' for every usable CPU")]
    InfiniteMask(String),
    /// `0x` not followed by hex digits.
    #[error("'{0}' is not a hex mask (expected 0x followed by hex digits, e.g. 0xff)")]
    NotHex(String),
    /// A hex mask the cpuset parser rejected.
    #[error("'{text}': {source}")]
    Mask {
        text: String,
        source: pinsight_cpuset::ParseError,
    },
}

impl CpuList {
    /// Parses a LIST; the error is the reason, for [`PolicyParseError`].
    pub fn parse(text: &str) -> Result<CpuList, CpuListError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(CpuList {
                text: "all".into(),
                cpus: None,
            });
        }
        let cpus: Vec<usize> = if text.starts_with("0x") || text.starts_with("0X") {
            parse_hex_mask(text)?.iter().collect()
        } else {
            // Validates the whole list first (stray commas, decreasing
            // ranges, bad strides), then expands it token by token in order.
            CpuSet::parse_list(text)?;
            let mut seen = CpuSet::new();
            let mut cpus = Vec::new();
            for token in text.split(',') {
                let part = CpuSet::parse_list(token)?;
                for c in part.iter() {
                    if !seen.insert(c) {
                        return Err(CpuListError::Twice {
                            cpu: c,
                            text: text.to_string(),
                        });
                    }
                    cpus.push(c);
                }
            }
            cpus
        };
        if cpus.is_empty() {
            return Err(CpuListError::Empty);
        }
        Ok(CpuList {
            text: text.split(',').map(str::trim).collect::<Vec<_>>().join(","),
            cpus: Some(cpus),
        })
    }

    /// The list as written (`1,0`, `0xff`, `all`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether this is `all`.
    pub fn is_all(&self) -> bool {
        self.cpus.is_none()
    }

    /// The CPUs in order: the listed ones, or for `all` those of `usable`
    /// ascending.
    pub fn resolve(&self, usable: &CpuSet) -> Vec<usize> {
        match &self.cpus {
            Some(c) => c.clone(),
            None => usable.iter().collect(),
        }
    }
}

/// A hex mask starting with `0x`: one number of any length (`0xff`,
/// `0x1ffff`) or comma-separated 32-bit words as hwloc prints them
/// (`0x00000001,0x00000000`, `0x3,,0xf000`).
fn parse_hex_mask(text: &str) -> Result<CpuSet, CpuListError> {
    if text.contains(',') {
        if text.contains("...") {
            return Err(CpuListError::InfiniteMask(text.to_string()));
        }
        return Ok(CpuSet::parse_hwloc(text, 0)?);
    }
    let hex = &text[2..];
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CpuListError::NotHex(text.to_string()));
    }
    // Split into 32-bit words, least significant last.
    let digits = hex.trim_start_matches('0');
    let mut words = Vec::new();
    let mut end = digits.len();
    while end > 0 {
        let start = end.saturating_sub(8);
        words.push(&digits[start..end]);
        end = start;
    }
    if words.is_empty() {
        return Ok(CpuSet::new());
    }
    words.reverse();
    CpuSet::parse_mask(&words.join(",")).map_err(|source| CpuListError::Mask {
        text: text.to_string(),
        source,
    })
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// A placement policy: a base plus the SMT-physical-first modifier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub base: BasePolicy,
    /// Re-order pinned placements: every core's first PU before any sibling.
    pub smt_physical_first: bool,
}

/// The base policy names, for help text and error messages.
pub const POLICY_NAMES: &[&str] = &[
    "os",
    "p-set",
    "e-set",
    "p-pinned",
    "e-pinned",
    "p-first",
    "e-first",
    "smt-physical-first",
    "compact",
    "scatter",
    "kind:RANK|NAME",
    "kind-set:RANK|NAME",
    "cpus:LIST",
    "cpus-set:LIST",
    "balance",
    "latency-group",
    "latency-pipeline",
];

/// The modifier suffix.
pub const SMT_PHYSICAL_FIRST: &str = "smt-physical-first";

/// Why a policy text was rejected. Its message names the input and lists
/// the valid policies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyParseError {
    pub input: String,
    pub reason: String,
}

impl fmt::Display for PolicyParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid policy '{}': {}; valid policies: {} (optionally followed by +{})",
            self.input,
            self.reason,
            POLICY_NAMES.join(", "),
            SMT_PHYSICAL_FIRST
        )
    }
}

impl std::error::Error for PolicyParseError {}

/// A planning option that only some policies take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyOption {
    /// Per-CPU speed weights (balance's).
    Weights,
    /// What a second busy SMT thread adds to a core (balance's).
    SmtYield,
    /// Choosing CPUs for a pipeline (latency-group as latency-pipeline).
    Pipeline,
    /// A core-to-core latency matrix (the latency policies').
    Latency,
}

impl Policy {
    /// The policies `option` applies to, in words, when this one is not
    /// among them; `None` when it applies to this one.
    pub fn not_for(&self, option: PolicyOption) -> Option<&'static str> {
        let latency = matches!(
            self.base,
            BasePolicy::LatencyGroup | BasePolicy::LatencyPipeline
        );
        let (applies, what) = match option {
            PolicyOption::Weights | PolicyOption::SmtYield => {
                (self.base == BasePolicy::Balance, "the balance policy")
            }
            PolicyOption::Pipeline => (latency, "latency-group"),
            PolicyOption::Latency => (latency, "latency-group/latency-pipeline"),
        };
        (!applies).then_some(what)
    }

    /// Whether planning this policy reads the caches (and the die and
    /// cluster levels): the hierarchy orders of the pinned policies and
    /// balance do; a set (`os`, `kind-set:`, `cpus-set:`), an explicit
    /// list without `+smt-physical-first`, and the latency policies (the
    /// matrix decides) do not. Discovery may skip them then; the plan then
    /// lacks only the compute-unit note (read from the caches).
    pub fn uses_caches(&self) -> bool {
        match &self.base {
            BasePolicy::Os
            | BasePolicy::KindSet(_)
            | BasePolicy::CpusSet(_)
            | BasePolicy::LatencyGroup
            | BasePolicy::LatencyPipeline => false,
            BasePolicy::Cpus(_) => self.smt_physical_first,
            _ => true,
        }
    }

    /// Whether planning this policy reads the core kinds: every policy but
    /// the OS's, a CPU set and an explicit list (`os`, `cpus-set:`,
    /// `cpus:` without `+smt-physical-first`), which take the CPUs as
    /// named and whose plan (notes included) never looks at a kind.
    /// Discovery may skip the kinds then.
    pub fn uses_kinds(&self) -> bool {
        match &self.base {
            BasePolicy::Os | BasePolicy::CpusSet(_) => false,
            BasePolicy::Cpus(_) => self.smt_physical_first,
            _ => true,
        }
    }

    /// A policy without modifiers.
    pub fn new(base: BasePolicy) -> Policy {
        Policy {
            base,
            smt_physical_first: false,
        }
    }

    /// Whether the policy pins each thread to its own place (as opposed to
    /// a process-wide mask inside which threads float).
    pub fn is_pinned(&self) -> bool {
        !matches!(
            self.base,
            BasePolicy::Os | BasePolicy::KindSet(_) | BasePolicy::CpusSet(_)
        )
    }
}

fn kind_sel_text(sel: &KindSel) -> String {
    match sel {
        KindSel::Fastest => "fastest".into(),
        KindSel::Slowest => "slowest".into(),
        KindSel::Rank(r) => r.to_string(),
        KindSel::Name(n) => n.clone(),
    }
}

impl fmt::Display for BasePolicy {
    /// The canonical text, which parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BasePolicy::Os => f.write_str("os"),
            BasePolicy::KindSet(KindSel::Fastest) => f.write_str("p-set"),
            BasePolicy::KindSet(KindSel::Slowest) => f.write_str("e-set"),
            BasePolicy::KindSet(s) => write!(f, "kind-set:{}", kind_sel_text(s)),
            BasePolicy::KindPinned(KindSel::Fastest) => f.write_str("p-pinned"),
            BasePolicy::KindPinned(KindSel::Slowest) => f.write_str("e-pinned"),
            BasePolicy::KindPinned(s) => write!(f, "kind:{}", kind_sel_text(s)),
            BasePolicy::PFirst => f.write_str("p-first"),
            BasePolicy::EFirst => f.write_str("e-first"),
            BasePolicy::SmtPhysicalFirst => f.write_str(SMT_PHYSICAL_FIRST),
            BasePolicy::Compact => f.write_str("compact"),
            BasePolicy::Scatter => f.write_str("scatter"),
            BasePolicy::Cpus(s) => write!(f, "cpus:{s}"),
            BasePolicy::CpusSet(s) => write!(f, "cpus-set:{s}"),
            BasePolicy::Balance => f.write_str("balance"),
            BasePolicy::LatencyGroup => f.write_str("latency-group"),
            BasePolicy::LatencyPipeline => f.write_str("latency-pipeline"),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.base)?;
        if self.smt_physical_first && self.base != BasePolicy::SmtPhysicalFirst {
            write!(f, "+{SMT_PHYSICAL_FIRST}")?;
        }
        Ok(())
    }
}

fn parse_kind_sel(arg: &str) -> Option<KindSel> {
    let arg = arg.trim();
    if arg.is_empty() {
        return None;
    }
    Some(match arg.to_ascii_lowercase().as_str() {
        "fastest" => KindSel::Fastest,
        "slowest" => KindSel::Slowest,
        _ => match arg.parse::<usize>() {
            Ok(r) => KindSel::Rank(r),
            Err(_) => KindSel::Name(arg.to_string()),
        },
    })
}

impl FromStr for BasePolicy {
    type Err = PolicyParseError;

    fn from_str(text: &str) -> Result<BasePolicy, PolicyParseError> {
        let input = text.trim();
        let err = |reason: String| PolicyParseError {
            input: input.to_string(),
            reason,
        };
        if let Some((head, arg)) = input.split_once(':') {
            let cpus = |arg: &str| CpuList::parse(arg).map_err(|e| err(e.to_string()));
            let kind = |arg: &str| {
                parse_kind_sel(arg).ok_or_else(|| {
                    err("needs a kind rank or name after ':' (e.g. kind:0, kind:E-core)".into())
                })
            };
            return match head.trim().to_ascii_lowercase().as_str() {
                "kind" => Ok(BasePolicy::KindPinned(kind(arg)?)),
                "kind-set" => Ok(BasePolicy::KindSet(kind(arg)?)),
                "cpus" => Ok(BasePolicy::Cpus(cpus(arg)?)),
                "cpus-set" => Ok(BasePolicy::CpusSet(cpus(arg)?)),
                other => Err(err(format!("unknown policy '{other}:'"))),
            };
        }
        Ok(match input.to_ascii_lowercase().as_str() {
            "os" | "none" => BasePolicy::Os,
            "p-set" => BasePolicy::KindSet(KindSel::Fastest),
            "e-set" => BasePolicy::KindSet(KindSel::Slowest),
            "p-pinned" => BasePolicy::KindPinned(KindSel::Fastest),
            "e-pinned" => BasePolicy::KindPinned(KindSel::Slowest),
            "p-first" => BasePolicy::PFirst,
            "e-first" => BasePolicy::EFirst,
            SMT_PHYSICAL_FIRST => BasePolicy::SmtPhysicalFirst,
            "compact" | "close" => BasePolicy::Compact,
            "scatter" | "spread" => BasePolicy::Scatter,
            "balance" => BasePolicy::Balance,
            "latency-group" => BasePolicy::LatencyGroup,
            "latency-pipeline" => BasePolicy::LatencyPipeline,
            "" => return Err(err("is empty".into())),
            other => return Err(err(format!("unknown policy '{other}'"))),
        })
    }
}

impl FromStr for Policy {
    type Err = PolicyParseError;

    /// Parses `BASE[+smt-physical-first]`.
    fn from_str(text: &str) -> Result<Policy, PolicyParseError> {
        let input = text.trim();
        let mut parts = input.split('+');
        let base_text = parts.next().unwrap_or("");
        let mut policy =
            Policy::new(
                base_text
                    .parse::<BasePolicy>()
                    .map_err(|e| PolicyParseError {
                        input: input.to_string(),
                        reason: e.reason,
                    })?,
            );
        if policy.base == BasePolicy::SmtPhysicalFirst {
            policy.smt_physical_first = true;
        }
        for modifier in parts {
            if modifier.trim().eq_ignore_ascii_case(SMT_PHYSICAL_FIRST) {
                policy.smt_physical_first = true;
            } else {
                return Err(PolicyParseError {
                    input: input.to_string(),
                    reason: format!(
                        "unknown modifier '+{}' (the only one is +{SMT_PHYSICAL_FIRST})",
                        modifier.trim()
                    ),
                });
            }
        }
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_apply_to_their_policies_only() {
        let p = |t: &str| t.parse::<Policy>().unwrap();
        assert_eq!(p("balance").not_for(PolicyOption::Weights), None);
        assert_eq!(
            p("compact").not_for(PolicyOption::SmtYield),
            Some("the balance policy")
        );
        assert_eq!(p("latency-pipeline").not_for(PolicyOption::Pipeline), None);
        assert_eq!(
            p("p-pinned").not_for(PolicyOption::Latency),
            Some("latency-group/latency-pipeline")
        );
        assert_eq!(
            p("os").not_for(PolicyOption::Pipeline),
            Some("latency-group")
        );
    }

    #[test]
    fn canonical_round_trip() {
        // Every name without a parameter, then parameterised ones.
        let plain = POLICY_NAMES.iter().copied().filter(|n| !n.contains(':'));
        for text in plain.chain([
            "kind:1",
            "kind:E-core",
            "kind-set:0",
            "cpus:0-3,8",
            "cpus-set:4-7",
            "p-first+smt-physical-first",
            "compact+smt-physical-first",
        ]) {
            let p: Policy = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
    }

    fn list(text: &str) -> Vec<usize> {
        match format!("cpus:{text}").parse::<BasePolicy>().unwrap() {
            BasePolicy::Cpus(l) => l.resolve(&CpuSet::parse_list("0-7").unwrap()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lists_keep_the_users_order_and_text() {
        assert_eq!(list("1,0"), vec![1, 0]);
        assert_eq!(list("8-11,0-3"), vec![8, 9, 10, 11, 0, 1, 2, 3]);
        assert_eq!(list("7,0-6:2"), vec![7, 0, 2, 4, 6]);
        assert_eq!(list(" 3 , 2 "), vec![3, 2]);
        assert_eq!(
            "cpus: 3 , 2".parse::<Policy>().unwrap().to_string(),
            "cpus:3,2"
        );
        for text in [
            "cpus:1,0",
            "cpus-set:3,1",
            "cpus:8-11,0-3+smt-physical-first",
        ] {
            assert_eq!(text.parse::<Policy>().unwrap().to_string(), text);
        }
    }

    #[test]
    fn hex_masks_and_all() {
        assert_eq!(list("0xff"), (0..8).collect::<Vec<_>>());
        assert_eq!(list("0X3"), vec![0, 1]);
        assert_eq!(list("0xa"), vec![1, 3]);
        assert_eq!(list("0x100000000"), vec![32]);
        assert_eq!(list("0x00000001,0x00000000"), vec![32]);
        assert_eq!(list("0x00000003,,0x00000001"), vec![0, 64, 65]);
        assert_eq!(list("all"), (0..8).collect::<Vec<_>>());
        assert_eq!(list("ALL"), (0..8).collect::<Vec<_>>());
        assert_eq!(
            "cpus-set:0x3".parse::<Policy>().unwrap().to_string(),
            "cpus-set:0x3"
        );
        assert_eq!(
            "cpus:All".parse::<Policy>().unwrap().to_string(),
            "cpus:all"
        );
        for bad in ["cpus:0x", "cpus:0xfg", "cpus:0x0", "cpus:0xf...f,0x1"] {
            let e = bad.parse::<Policy>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("invalid policy '{bad}'")), "{e}");
        }
    }

    #[test]
    fn a_cpu_listed_twice_is_an_error() {
        for bad in ["cpus:1,1", "cpus:0-3,2", "cpus-set:0-7:2,4"] {
            let e = bad.parse::<Policy>().unwrap_err().to_string();
            assert!(e.contains("is listed twice"), "{e}");
        }
    }

    #[test]
    fn aliases_and_case() {
        assert_eq!("SPREAD".parse::<Policy>().unwrap().to_string(), "scatter");
        assert_eq!("close".parse::<Policy>().unwrap().to_string(), "compact");
        assert_eq!("none".parse::<Policy>().unwrap().to_string(), "os");
        assert_eq!(
            "P-First+SMT-Physical-First"
                .parse::<Policy>()
                .unwrap()
                .to_string(),
            "p-first+smt-physical-first"
        );
    }

    #[test]
    fn errors_list_valid_names() {
        let e = "fastest".parse::<Policy>().unwrap_err().to_string();
        assert!(e.contains("invalid policy 'fastest'"), "{e}");
        for name in POLICY_NAMES {
            assert!(e.contains(name), "{e} lacks {name}");
        }
        assert!("p-first+turbo"
            .parse::<Policy>()
            .unwrap_err()
            .to_string()
            .contains("+turbo"));
        assert!("cpus:"
            .parse::<Policy>()
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!("cpus:3-1"
            .parse::<Policy>()
            .unwrap_err()
            .to_string()
            .contains("decreasing"));
        assert!("kind:".parse::<Policy>().is_err());
        assert!("".parse::<Policy>().is_err());
    }
}
