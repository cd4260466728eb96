//! Parsers of `/proc/interrupts` and `/proc/softirqs`: pure functions over
//! the file text (outside input: fuzzed, property-tested).
//!
//! `/proc/interrupts` (kernel `kernel/irq/proc.c`, `show_interrupts`): a
//! header of `CPUn` columns, one per online CPU, then one line per
//! interrupt: `NAME:`, one count per column, then for a numbered IRQ the
//! chip name, the hardware IRQ number with its trigger (`2-edge`,
//! `1048576-edge`, `27 Level`), and the names of the handlers, comma
//! separated (`virtio0-input.0`, `eth0-TxRx-3`, `ehci_hcd:usb1,
//! i801_smbus`). The architecture's lines (`NMI`, `LOC`, `ERR`, ...) carry
//! a description instead, and some (`ERR`, `MIS`) a single count.
//!
//! `/proc/softirqs` (`fs/proc/softirqs.c`): the same header, then one
//! line per softirq (`HI`, `TIMER`, `NET_TX`, `NET_RX`, `BLOCK`,
//! `IRQ_POLL`, `TASKLET`, `SCHED`, `HRTIMER`, `RCU`).

use serde::Serialize;

/// One line of `/proc/interrupts`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IrqLine {
    /// What precedes the colon: `24`, `NMI`, `LOC`.
    pub name: String,
    /// One count per header column (missing counts read as 0).
    pub counts: Vec<u64>,
    /// The rest of the line, whitespace collapsed: chip, hardware IRQ,
    /// trigger and handler names, or the architecture's description.
    pub desc: String,
}

impl IrqLine {
    /// The IRQ number, for a numbered line (`24:`); `None` for `NMI`, `LOC`...
    pub fn number(&self) -> Option<u32> {
        self.name.parse().ok()
    }

    /// The handler names of a numbered IRQ (`virtio0-input.0`,
    /// `eth0-TxRx-3`): what follows the trigger (`-edge`, `-level`,
    /// ` Edge`, ` Level`), split at commas; the last word when no trigger
    /// is found. Empty for an IRQ with no handler.
    pub fn handlers(&self) -> Vec<String> {
        let words: Vec<&str> = self.desc.split(' ').filter(|w| !w.is_empty()).collect();
        let trigger = words.iter().position(|w| {
            let l = w.to_ascii_lowercase();
            l.ends_with("-edge")
                || l.ends_with("-level")
                || l.ends_with("-fasteoi")
                || l == "edge"
                || l == "level"
        });
        let rest: Vec<&str> = match trigger {
            Some(i) => words[i + 1..].to_vec(),
            None if words.len() >= 2 => words[words.len() - 1..].to_vec(),
            None => Vec::new(),
        };
        rest.join(" ")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The handler names that look like a network queue: a name with
    /// `rx`, `tx`, `TxRx`, `input.`/`output.` (virtio-net) or `comp`
    /// (mlx5 completion vectors) in it.
    pub fn queues(&self) -> Vec<String> {
        self.handlers()
            .into_iter()
            .filter(|h| is_queue_name(h))
            .collect()
    }

    /// The count on the CPU at header column `col`.
    pub fn count(&self, col: usize) -> u64 {
        self.counts.get(col).copied().unwrap_or(0)
    }
}

/// Whether a handler name looks like a NIC queue's (drivers name their
/// per-queue vectors `<dev>-TxRx-N` (ixgbe, i40e, ice), `<dev>-rx-N` /
/// `-tx-N`, `virtioN-input.N` / `-output.N` (virtio-net), `mlx5_compN`).
pub fn is_queue_name(h: &str) -> bool {
    let l = h.to_ascii_lowercase();
    l.contains("txrx")
        || l.contains("-rx")
        || l.contains("-tx")
        || l.contains("rx-")
        || l.contains("tx-")
        || l.contains("-input.")
        || l.contains("-output.")
        || l.contains("_comp")
}

/// `/proc/interrupts`: the CPUs of its columns and its lines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Interrupts {
    /// The CPU number of each column (`CPU0 CPU2` → `[0, 2]`).
    pub cpus: Vec<usize>,
    pub lines: Vec<IrqLine>,
}

impl Interrupts {
    /// The column of CPU `cpu`.
    pub fn col(&self, cpu: usize) -> Option<usize> {
        self.cpus.iter().position(|&c| c == cpu)
    }

    /// The line of IRQ `name` (`24`, `LOC`).
    pub fn line(&self, name: &str) -> Option<&IrqLine> {
        self.lines.iter().find(|l| l.name == name)
    }
}

/// `/proc/softirqs`: the CPUs of its columns and one row per softirq.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Softirqs {
    pub cpus: Vec<usize>,
    /// (name, one count per column).
    pub rows: Vec<(String, Vec<u64>)>,
}

/// The CPU columns of a header line (`CPU0 CPU1 ...`); `None` if it is no
/// such header or a column repeats.
fn header(line: &str) -> Option<Vec<usize>> {
    let cpus: Vec<usize> = line
        .split_ascii_whitespace()
        .map(|w| w.strip_prefix("CPU")?.parse().ok())
        .collect::<Option<_>>()?;
    let mut sorted = cpus.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (!cpus.is_empty() && sorted.len() == cpus.len()).then_some(cpus)
}

/// Splits `NAME: c0 c1 ... rest` into the name, up to `n` counts and the
/// rest (whitespace collapsed). `None` without a colon or a name.
fn counted_line(line: &str, n: usize) -> Option<(String, Vec<u64>, String)> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let mut counts = Vec::with_capacity(n);
    let mut words = rest.split_ascii_whitespace().peekable();
    while counts.len() < n {
        match words.peek().and_then(|w| w.parse::<u64>().ok()) {
            Some(v) => {
                counts.push(v);
                words.next();
            }
            None => break,
        }
    }
    let desc: Vec<&str> = words.collect();
    Some((name.to_string(), counts, desc.join(" ")))
}

/// Parses `/proc/interrupts`. `None` when the first non-empty line is not
/// a `CPUn` header; lines without a `NAME:` are skipped.
pub fn parse_interrupts(text: &str) -> Option<Interrupts> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let cpus = header(lines.next()?)?;
    let lines = lines
        .filter_map(|l| counted_line(l, cpus.len()))
        .map(|(name, counts, desc)| IrqLine { name, counts, desc })
        .collect();
    Some(Interrupts { cpus, lines })
}

/// Parses `/proc/softirqs`. `None` when the first non-empty line is not a
/// `CPUn` header.
pub fn parse_softirqs(text: &str) -> Option<Softirqs> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let cpus = header(lines.next()?)?;
    let rows = lines
        .filter_map(|l| counted_line(l, cpus.len()))
        .map(|(name, counts, _)| (name, counts))
        .collect();
    Some(Softirqs { cpus, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &str = "           CPU0       CPU1       CPU2       CPU3       \n\
  0:         36          0          0          0   IO-APIC   2-edge      timer\n\
  8:          0          0          1          0   IO-APIC   8-edge      rtc0\n\
 16:          0        120          0          0   IO-APIC  16-fasteoi   ehci_hcd:usb1, i801_smbus\n\
 25:     900000          0          0          3  PCI-MSIX-0000:00:03.0   1-edge      virtio0-input.0\n\
 26:          0          0          0          0  PCI-MSIX-0000:00:03.0   2-edge      virtio0-output.0\n\
 27:          1          0          0          0  PCI-MSI 1048576-edge      eth0-TxRx-0\n\
 28:          0          0          0          0  PCI-MSI 1048577-edge\n\
NMI:          0          0          0          0   Non-maskable interrupts\n\
LOC:     123456     234567     345678     456789   Local timer interrupts\n\
ERR:          0\n\
MIS:          0\n";

    #[test]
    fn reads_x86_lines_handlers_and_queues() {
        let i = parse_interrupts(X86).unwrap();
        assert_eq!(i.cpus, vec![0, 1, 2, 3]);
        assert_eq!(i.lines.len(), 11);
        let l = i.line("25").unwrap();
        assert_eq!(l.number(), Some(25));
        assert_eq!(l.counts, vec![900000, 0, 0, 3]);
        assert_eq!(l.handlers(), vec!["virtio0-input.0"]);
        assert_eq!(l.queues(), vec!["virtio0-input.0"]);
        let shared = i.line("16").unwrap();
        assert_eq!(shared.handlers(), vec!["ehci_hcd:usb1", "i801_smbus"]);
        assert!(shared.queues().is_empty());
        assert_eq!(i.line("27").unwrap().queues(), vec!["eth0-TxRx-0"]);
        assert!(i.line("28").unwrap().handlers().is_empty());
        assert_eq!(i.line("0").unwrap().handlers(), vec!["timer"]);
        let loc = i.line("LOC").unwrap();
        assert_eq!(loc.number(), None);
        assert_eq!(loc.desc, "Local timer interrupts");
        let err = i.line("ERR").unwrap();
        assert_eq!(err.counts, vec![0]);
        assert_eq!(err.count(3), 0);
    }

    #[test]
    fn reads_arm_gic_lines() {
        let text = "           CPU0       CPU1\n\
 11:      12345      23456     GICv3  27 Level     arch_timer\n\
 45:          7          0     GICv3  79 Level     mmc0\n\
IPI0:       100        200       Rescheduling interrupts\n";
        let i = parse_interrupts(text).unwrap();
        assert_eq!(i.line("11").unwrap().handlers(), vec!["arch_timer"]);
        assert_eq!(i.line("45").unwrap().handlers(), vec!["mmc0"]);
        assert_eq!(i.line("IPI0").unwrap().counts, vec![100, 200]);
    }

    #[test]
    fn offline_cpus_leave_gaps_in_the_header() {
        let text = "     CPU0 CPU2\n 5: 1 2 chip 5-edge dev\n";
        let i = parse_interrupts(text).unwrap();
        assert_eq!(i.cpus, vec![0, 2]);
        assert_eq!(i.col(2), Some(1));
        assert_eq!(i.col(1), None);
    }

    #[test]
    fn reads_softirqs() {
        let text = "                    CPU0       CPU1\n\
          HI:          1          0\n\
       TIMER:     123456     234567\n\
      NET_RX:     900000         12\n";
        let s = parse_softirqs(text).unwrap();
        assert_eq!(s.cpus, vec![0, 1]);
        assert_eq!(s.rows[2], ("NET_RX".to_string(), vec![900000, 12]));
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(parse_interrupts(""), None);
        assert_eq!(parse_interrupts("cpu0 1 2 3\n"), None);
        assert_eq!(parse_interrupts("CPU0 CPU0\n"), None);
        assert_eq!(parse_softirqs("HI: 1 2\n"), None);
        // A header alone is a machine with no interrupt lines.
        assert_eq!(parse_interrupts("CPU0\n").unwrap().lines.len(), 0);
    }
}
