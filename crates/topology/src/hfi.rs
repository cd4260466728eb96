//! Dynamic capacity: Intel's Hardware Feedback Interface (HFI) as the
//! kernel relays it over the `thermal` generic netlink family.
//!
//! # What the kernel sends
//!
//! When the hardware updates its HFI table (thermal or power limits
//! changed), `drivers/thermal/intel/intel_hfi.c` sends, at most once a
//! second per package, `THERMAL_GENL_EVENT_CPU_CAPABILITY_CHANGE` (command
//! 14) to the `event` multicast group of the `thermal` family
//! (`include/uapi/linux/thermal.h`). Its payload is one nested attribute
//! `THERMAL_GENL_ATTR_CPU_CAPABILITY` (20) holding, for up to 16 CPUs per
//! message, a flat run of u32 triples:
//! `_CPU_CAPABILITY_ID` (21, the logical CPU), `_PERFORMANCE` (22) and
//! `_EFFICIENCY` (23). The hardware's 0–255 capabilities are shifted left
//! by two, so values run 0–1020 ([`CAPABILITY_MAX`]); performance 0 means
//! "do not schedule here" (and efficiency 0 "do not use for efficiency").
//! The attribute numbers are ABI: Linux 6.13's thermal-threshold work
//! briefly inserted an attribute before them and was corrected before
//! release, keeping 20–23 (the family's version went to 2 meanwhile, so
//! the version is not used to decide the layout).
//!
//! # Subscribing turns HFI on
//!
//! Since the thermal netlink bind/unbind notifications (Linux 6.9),
//! `intel_hfi` enables the HFI only while at least one socket is a member
//! of the `event` group (`hfi_thermal_notify`: first bind enables every
//! package's table, last unbind disables it). Watching therefore changes
//! the machine: the hardware starts writing its table and raising thermal
//! interrupts. Older kernels enable HFI at boot.
//!
//! # Parsing and watching
//!
//! [`parse`] is pure: raw datagram bytes (as recorded, or as received) in,
//! [`CapabilityChange`]s out; other thermal events (trip points, cooling
//! devices, thresholds) are ignored, malformed input is a
//! [`HfiParseError`] naming the byte offset. [`HfiWatcher`] is the live
//! stream: it refuses a recorded machine, subscribes through
//! `pinsight_sys::netlink`, and yields batches with
//! [`HfiWatcher::next_batch`]. [`CapabilityTable`] keeps the latest values
//! per CPU (what a scheduler consults) and tells what each change replaced.

use netlink_packet_core::{NetlinkBuffer, NlaBuffer, NlasIterator};
use pinsight_sys::netlink::{GenlSubscription, NetlinkError, Received};
use pinsight_sys::FsRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::time::Duration;

/// The generic netlink family (`THERMAL_GENL_FAMILY_NAME`).
pub const FAMILY: &str = "thermal";
/// Its multicast group carrying events (`THERMAL_GENL_EVENT_GROUP_NAME`).
pub const EVENT_GROUP: &str = "event";
/// `THERMAL_GENL_EVENT_CPU_CAPABILITY_CHANGE`.
pub const CMD_CPU_CAPABILITY_CHANGE: u8 = 14;
/// `THERMAL_GENL_ATTR_CPU_CAPABILITY` (nested).
pub const ATTR_CPU_CAPABILITY: u16 = 20;
/// `THERMAL_GENL_ATTR_CPU_CAPABILITY_ID` (u32).
pub const ATTR_CPU_CAPABILITY_ID: u16 = 21;
/// `THERMAL_GENL_ATTR_CPU_CAPABILITY_PERFORMANCE` (u32).
pub const ATTR_CPU_CAPABILITY_PERFORMANCE: u16 = 22;
/// `THERMAL_GENL_ATTR_CPU_CAPABILITY_EFFICIENCY` (u32).
pub const ATTR_CPU_CAPABILITY_EFFICIENCY: u16 = 23;
/// The top of the scale: the hardware's 255 shifted left by two.
pub const CAPABILITY_MAX: u32 = 1020;

/// Netlink's own message types below this are control messages
/// (`NLMSG_MIN_TYPE`): no-op, error, done, overrun.
const NLMSG_MIN_TYPE: u16 = 0x10;
const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;

/// One CPU's new capabilities, as one HFI event reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CapabilityChange {
    /// Logical CPU id.
    pub cpu: u32,
    /// Performance capability, 0–[`CAPABILITY_MAX`]; 0: do not schedule here.
    pub performance: u32,
    /// Energy-efficiency capability, 0–[`CAPABILITY_MAX`].
    pub efficiency: u32,
}

impl CapabilityChange {
    /// False when the hardware asks that nothing run here (performance 0).
    pub fn schedulable(&self) -> bool {
        self.performance > 0
    }

    /// Performance on a 0–1 scale (1 = the scale's top, 1020).
    pub fn performance_fraction(&self) -> f64 {
        f64::from(self.performance) / f64::from(CAPABILITY_MAX)
    }

    /// Efficiency on a 0–1 scale (1 = the scale's top, 1020).
    pub fn efficiency_fraction(&self) -> f64 {
        f64::from(self.efficiency) / f64::from(CAPABILITY_MAX)
    }
}

/// Why bytes are not a well-formed thermal netlink datagram.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HfiParseError {
    /// A netlink message header or length that does not fit the bytes.
    #[error("netlink message at byte {offset}: {reason}")]
    Message { offset: usize, reason: String },
    /// A thermal message too short for its generic netlink header.
    #[error("thermal message at byte {offset}: {len} payload bytes, shorter than the 4-byte generic netlink header")]
    GenlHeader { offset: usize, len: usize },
    /// An attribute whose length runs past its container.
    #[error("netlink attribute at byte {offset}: {reason}")]
    Attribute { offset: usize, reason: String },
    /// A capability field that is not a 4-byte u32.
    #[error("CPU capability {field} at byte {offset}: {len} value bytes, expected 4")]
    ValueSize {
        offset: usize,
        field: &'static str,
        len: usize,
    },
    /// Performance or efficiency before any CPU id in the nest.
    #[error("CPU capability {field} at byte {offset} comes before any CPU id")]
    FieldBeforeId { offset: usize, field: &'static str },
    /// A field given twice for one CPU.
    #[error("CPU {cpu}: {field} given twice (second at byte {offset})")]
    Duplicate {
        offset: usize,
        cpu: u32,
        field: &'static str,
    },
    /// A CPU entry without its performance or efficiency.
    #[error("CPU {cpu}: no {field} in its capability entry")]
    Missing { cpu: u32, field: &'static str },
}

/// Parses one datagram (one or more netlink messages) from the thermal
/// family into the capability changes it carries, in order. Messages of
/// other thermal events and netlink control messages are skipped; any
/// message type at or above `NLMSG_MIN_TYPE` is taken as the thermal
/// family's (the family id is assigned at boot; use [`parse_family`] to
/// filter on a known one).
pub fn parse(bytes: &[u8]) -> Result<Vec<CapabilityChange>, HfiParseError> {
    parse_messages(bytes, None)
}

/// [`parse`], keeping only messages of type `family_id` (the id nlctrl
/// gave for `thermal`).
pub fn parse_family(bytes: &[u8], family_id: u16) -> Result<Vec<CapabilityChange>, HfiParseError> {
    parse_messages(bytes, Some(family_id))
}

fn parse_messages(
    bytes: &[u8],
    family: Option<u16>,
) -> Result<Vec<CapabilityChange>, HfiParseError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let msg = NetlinkBuffer::new_checked(&bytes[at..]).map_err(|e| HfiParseError::Message {
            offset: at,
            reason: e.to_string(),
        })?;
        let len = msg.length() as usize;
        let kind = msg.message_type();
        let wanted = kind >= NLMSG_MIN_TYPE && family.is_none_or(|f| f == kind);
        if wanted {
            let payload = &bytes[at + NLMSG_HDRLEN..at + len];
            if payload.len() < GENL_HDRLEN {
                return Err(HfiParseError::GenlHeader {
                    offset: at,
                    len: payload.len(),
                });
            }
            // genlmsghdr: cmd, version, reserved (u16).
            if payload[0] == CMD_CPU_CAPABILITY_CHANGE {
                let attrs_at = at + NLMSG_HDRLEN + GENL_HDRLEN;
                parse_event(&payload[GENL_HDRLEN..], attrs_at, &mut out)?;
            }
        }
        // Messages are 4-byte aligned within a datagram.
        at += len.div_ceil(4) * 4;
    }
    Ok(out)
}

/// Iterates the attributes in `buf` (which starts at byte `base` of the
/// datagram), giving each with its absolute offset.
fn attrs(
    buf: &[u8],
    base: usize,
) -> impl Iterator<Item = Result<(usize, NlaBuffer<&[u8]>), HfiParseError>> {
    let mut offset = base;
    NlasIterator::new(buf).map(move |nla| {
        let here = offset;
        match nla {
            Ok(nla) => {
                offset += (nla.length() as usize).div_ceil(4) * 4;
                Ok((here, nla))
            }
            Err(e) => Err(HfiParseError::Attribute {
                offset: here,
                reason: e.to_string(),
            }),
        }
    })
}

fn parse_event(
    buf: &[u8],
    base: usize,
    out: &mut Vec<CapabilityChange>,
) -> Result<(), HfiParseError> {
    for nla in attrs(buf, base) {
        let (offset, nla) = nla?;
        if nla.kind() != ATTR_CPU_CAPABILITY {
            continue;
        }
        parse_capabilities(nla.value(), offset + 4, out)?;
    }
    Ok(())
}

/// One CPU's entry while its triple is being read.
struct Entry {
    cpu: u32,
    performance: Option<u32>,
    efficiency: Option<u32>,
}

impl Entry {
    fn finish(self) -> Result<CapabilityChange, HfiParseError> {
        let missing = |field| HfiParseError::Missing {
            cpu: self.cpu,
            field,
        };
        Ok(CapabilityChange {
            cpu: self.cpu,
            performance: self.performance.ok_or_else(|| missing("performance"))?,
            efficiency: self.efficiency.ok_or_else(|| missing("efficiency"))?,
        })
    }
}

fn parse_capabilities(
    buf: &[u8],
    base: usize,
    out: &mut Vec<CapabilityChange>,
) -> Result<(), HfiParseError> {
    let mut current: Option<Entry> = None;
    for nla in attrs(buf, base) {
        let (offset, nla) = nla?;
        let field = match nla.kind() {
            ATTR_CPU_CAPABILITY_ID => "CPU id",
            ATTR_CPU_CAPABILITY_PERFORMANCE => "performance",
            ATTR_CPU_CAPABILITY_EFFICIENCY => "efficiency",
            // Attributes a later kernel may add: not ours to judge.
            _ => continue,
        };
        let value = nla.value();
        let Ok(raw) = <[u8; 4]>::try_from(value) else {
            return Err(HfiParseError::ValueSize {
                offset,
                field,
                len: value.len(),
            });
        };
        // Netlink attributes are in host byte order.
        let v = u32::from_ne_bytes(raw);
        match nla.kind() {
            ATTR_CPU_CAPABILITY_ID => {
                if let Some(done) = current.take() {
                    out.push(done.finish()?);
                }
                current = Some(Entry {
                    cpu: v,
                    performance: None,
                    efficiency: None,
                });
            }
            _ => {
                let Some(entry) = current.as_mut() else {
                    return Err(HfiParseError::FieldBeforeId { offset, field });
                };
                let slot = if nla.kind() == ATTR_CPU_CAPABILITY_PERFORMANCE {
                    &mut entry.performance
                } else {
                    &mut entry.efficiency
                };
                if slot.is_some() {
                    return Err(HfiParseError::Duplicate {
                        offset,
                        cpu: entry.cpu,
                        field,
                    });
                }
                *slot = Some(v);
            }
        }
    }
    if let Some(done) = current {
        out.push(done.finish()?);
    }
    Ok(())
}

/// The kernel's per-message limit (`HFI_MAX_THERM_NOTIFY_COUNT`).
pub const MAX_CPUS_PER_MESSAGE: usize = 16;

/// Builds the datagram the kernel would send for `changes`: one
/// `CPU_CAPABILITY_CHANGE` message per [`MAX_CPUS_PER_MESSAGE`] CPUs, of
/// type `family_id`, laid out as `thermal_genl_event_cpu_capability_change`
/// writes it (nest flag set, host byte order). For tests, fuzz seeds and
/// replaying a recorded sequence; [`parse`] reads it back.
pub fn encode(family_id: u16, changes: &[CapabilityChange]) -> Vec<u8> {
    const NLA_F_NESTED: u16 = 1 << 15;
    fn nla(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
        out.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(value);
        out.resize(out.len().div_ceil(4) * 4, 0);
    }
    let mut out = Vec::new();
    for (seq, chunk) in changes.chunks(MAX_CPUS_PER_MESSAGE).enumerate() {
        let mut nest = Vec::new();
        for c in chunk {
            nla(&mut nest, ATTR_CPU_CAPABILITY_ID, &c.cpu.to_ne_bytes());
            nla(
                &mut nest,
                ATTR_CPU_CAPABILITY_PERFORMANCE,
                &c.performance.to_ne_bytes(),
            );
            nla(
                &mut nest,
                ATTR_CPU_CAPABILITY_EFFICIENCY,
                &c.efficiency.to_ne_bytes(),
            );
        }
        let mut body = vec![CMD_CPU_CAPABILITY_CHANGE, 1, 0, 0];
        nla(&mut body, ATTR_CPU_CAPABILITY | NLA_F_NESTED, &nest);
        let len = (NLMSG_HDRLEN + body.len()) as u32;
        out.extend_from_slice(&len.to_ne_bytes());
        out.extend_from_slice(&family_id.to_ne_bytes());
        out.extend_from_slice(&0u16.to_ne_bytes()); // flags
        out.extend_from_slice(&(seq as u32).to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel
        out.extend_from_slice(&body);
    }
    out
}

/// The latest capabilities per CPU, built from the changes seen so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CapabilityTable {
    cpus: BTreeMap<u32, CapabilityChange>,
}

impl CapabilityTable {
    /// An empty table (nothing heard yet).
    pub fn new() -> CapabilityTable {
        CapabilityTable::default()
    }

    /// Records `change`; returns what it replaced (`None` the first time
    /// this CPU is heard of).
    pub fn apply(&mut self, change: CapabilityChange) -> Option<CapabilityChange> {
        self.cpus.insert(change.cpu, change)
    }

    /// The latest capabilities of `cpu`, if any were heard.
    pub fn get(&self, cpu: u32) -> Option<&CapabilityChange> {
        self.cpus.get(&cpu)
    }

    /// CPUs the hardware currently asks not to be used (performance 0).
    pub fn unschedulable(&self) -> impl Iterator<Item = u32> + '_ {
        self.cpus
            .values()
            .filter(|c| !c.schedulable())
            .map(|c| c.cpu)
    }

    /// Every CPU heard of, by id.
    pub fn iter(&self) -> impl Iterator<Item = &CapabilityChange> {
        self.cpus.values()
    }
}

/// Why HFI events cannot be watched, or a watch failed.
#[derive(Debug, thiserror::Error)]
pub enum HfiError {
    /// The machine is a recorded one: its events are not here to hear.
    #[error("{} is a recorded machine: HFI events come only from the live kernel", root.display())]
    Recorded { root: PathBuf },
    /// The kernel offers no way to hear them (see [`NetlinkError`]'s
    /// variants: unsupported, permission, family or group absent).
    #[error(transparent)]
    Unavailable(#[from] NetlinkError),
    /// A message could not be parsed.
    #[error("malformed thermal netlink message: {0}")]
    Parse(#[from] HfiParseError),
}

/// What one wait on the watcher gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Batch {
    /// The changes of one datagram (possibly empty: another thermal event).
    Changes(Vec<CapabilityChange>),
    /// Nothing arrived in time.
    TimedOut,
    /// The wake-up descriptor became readable.
    Woken,
    /// The kernel dropped messages (receive buffer overrun): some changes
    /// were lost; the next ones are still exact.
    Lost,
}

/// The live stream of HFI capability changes on this machine.
///
/// ```no_run
/// use pinsight_sys::FsRoot;
/// use pinsight_topology::hfi::{Batch, HfiWatcher};
/// use std::time::Duration;
/// let mut w = HfiWatcher::open(&FsRoot::live())?;
/// loop {
///     if let Batch::Changes(changes) = w.next_batch(Duration::from_secs(1), None)? {
///         for c in changes {
///             println!("cpu {} perf {} eff {}", c.cpu, c.performance, c.efficiency);
///         }
///     }
/// }
/// # Ok::<(), pinsight_topology::hfi::HfiError>(())
/// ```
///
/// Opening it joins the `event` group, which turns HFI on (see the module
/// documentation); dropping it leaves the group.
#[derive(Debug)]
pub struct HfiWatcher {
    sub: GenlSubscription,
}

impl HfiWatcher {
    /// Subscribes to the thermal family's event group. `root` must be the
    /// live machine.
    pub fn open(root: &FsRoot) -> Result<HfiWatcher, HfiError> {
        if !root.is_live() {
            return Err(HfiError::Recorded {
                root: root.root().to_path_buf(),
            });
        }
        Ok(HfiWatcher {
            sub: GenlSubscription::subscribe(FAMILY, EVENT_GROUP)?,
        })
    }

    /// The thermal family's id and version as the kernel reported them.
    pub fn family(&self) -> &pinsight_sys::netlink::GenlFamily {
        self.sub.family()
    }

    /// Waits up to `timeout` for the next datagram and parses it. `wake`
    /// (e.g. a signal self-pipe) ends the wait early with [`Batch::Woken`].
    pub fn next_batch(
        &mut self,
        timeout: Duration,
        wake: Option<BorrowedFd<'_>>,
    ) -> Result<Batch, HfiError> {
        Ok(match self.sub.recv(timeout, wake)? {
            Received::Datagram(bytes) => {
                Batch::Changes(parse_family(&bytes, self.sub.family().id)?)
            }
            Received::TimedOut => Batch::TimedOut,
            Received::Woken => Batch::Woken,
            Received::Overrun => Batch::Lost,
        })
    }
}

/// On x86, a CPU without the `hfi` flag in /proc/cpuinfo never sends
/// capability events: say so, so an empty watch is not a mystery.
pub fn no_hfi_flag(fs: &FsRoot) -> Option<String> {
    let text = fs.read_opt("/proc/cpuinfo")?;
    let Some(flags) = text.lines().find(|l| l.starts_with("flags")) else {
        // Arm and POWER list "Features"/"cpu" lines, never x86 "flags":
        // HFI is Intel's (Intel SDM vol. 3B, "Hardware Feedback Interface").
        if text
            .lines()
            .any(|l| l.starts_with("CPU implementer") || l.starts_with("Features"))
        {
            return Some(
                "/proc/cpuinfo describes a non-x86 CPU (no 'flags' line): the Hardware Feedback \
                 Interface is Intel's, so no capability change will come"
                    .to_string(),
            );
        }
        return None;
    };
    if flags.split_whitespace().any(|f| f == "hfi") {
        return None;
    }
    Some(
        "/proc/cpuinfo lists no 'hfi' flag: this CPU has no Hardware Feedback Interface, \
         so no capability change will come (only hybrid Intel parts, Alder Lake and later, have one)"
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedulable_and_fractions() {
        let c = CapabilityChange {
            cpu: 3,
            performance: 0,
            efficiency: 510,
        };
        assert!(!c.schedulable());
        assert_eq!(c.performance_fraction(), 0.0);
        assert_eq!(c.efficiency_fraction(), 0.5);
        let top = CapabilityChange {
            cpu: 0,
            performance: CAPABILITY_MAX,
            efficiency: 4,
        };
        assert!(top.schedulable());
        assert_eq!(top.performance_fraction(), 1.0);
    }

    #[test]
    fn the_table_remembers_and_returns_what_was_replaced() {
        let mut t = CapabilityTable::new();
        let a = CapabilityChange {
            cpu: 2,
            performance: 1020,
            efficiency: 400,
        };
        assert_eq!(t.apply(a), None);
        let b = CapabilityChange {
            performance: 0,
            ..a
        };
        assert_eq!(t.apply(b), Some(a));
        assert_eq!(t.get(2), Some(&b));
        assert_eq!(t.unschedulable().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn a_recorded_machine_is_refused() {
        let dir = std::env::temp_dir();
        let root = FsRoot::at(&dir).unwrap();
        match HfiWatcher::open(&root) {
            Err(HfiError::Recorded { root }) => assert_eq!(root, dir),
            other => panic!("expected Recorded, got {other:?}"),
        }
    }

    #[test]
    fn no_hfi_flag_names_a_cpu_without_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/cpuinfo"), "flags\t: fpu sse hfi\n").unwrap();
        let fs = FsRoot::at(dir.path()).unwrap();
        assert_eq!(no_hfi_flag(&fs), None);
        std::fs::write(dir.path().join("proc/cpuinfo"), "flags\t: fpu sse\n").unwrap();
        assert!(no_hfi_flag(&fs).unwrap().contains("no 'hfi' flag"));
    }
}
