//! The system-wide CPU accounting of `/proc/stat`, read through [`FsRoot`]:
//! per CPU, the time it was busy and the time the hypervisor stole from it,
//! plus the number of runnable tasks.
//!
//! Format (proc(5), "/proc/stat"): one `cpuN` line per online CPU with
//! `user nice system idle iowait irq softirq steal guest guest_nice`, in
//! `USER_HZ` ticks ([`crate::procfs::clock_ticks`], 100 on every common
//! kernel), and `procs_running N` (tasks runnable right now, the reader
//! included). `guest` and `guest_nice` are already counted in `user` and
//! `nice` (kernel `fs/proc/stat.c`), so they are not added again. Fields
//! missing on old kernels (steal before 2.6.11) read as 0.

use crate::fsroot::FsRoot;
use std::collections::BTreeMap;

/// One CPU's line of `/proc/stat`, in `USER_HZ` ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq: time something ran there.
    pub busy: u64,
    /// Time the hypervisor ran something else while this vCPU wanted to run.
    pub steal: u64,
}

/// What one read of `/proc/stat` says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Every `cpuN` line (the aggregate `cpu` line is left out).
    pub cpus: BTreeMap<usize, CpuTicks>,
    /// `procs_running`: runnable tasks at the moment of the read, the
    /// reading task included.
    pub procs_running: Option<u64>,
}

/// One CPU's line of `/proc/stat`, every field, in `USER_HZ` ticks
/// (`guest` and `guest_nice` left out: already inside `user` and `nice`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFields {
    /// Each field as proc(5) names it.
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuFields {
    /// The busy and steal times of [`CpuTicks`].
    pub fn ticks(&self) -> CpuTicks {
        let busy = [self.user, self.nice, self.system, self.irq, self.softirq]
            .into_iter()
            .fold(0u64, u64::saturating_add);
        CpuTicks {
            busy,
            steal: self.steal,
        }
    }

    /// Every field added up: the CPU's whole time since boot.
    pub fn total(&self) -> u64 {
        [
            self.user,
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .into_iter()
        .fold(0u64, u64::saturating_add)
    }
}

/// One `cpuN` line, `None` for any other line (the aggregate `cpu` line
/// included) or one with fewer than the four fields every kernel has.
fn cpu_line(line: &str) -> Option<(usize, CpuFields)> {
    let mut words = line.split_ascii_whitespace();
    let cpu = words
        .next()?
        .strip_prefix("cpu")
        .filter(|n| !n.is_empty())?
        .parse::<usize>()
        .ok()?;
    let mut f = [0u64; 8];
    let mut n = 0;
    for (slot, w) in f.iter_mut().zip(words) {
        match w.parse() {
            Ok(v) => *slot = v,
            Err(_) => break,
        }
        n += 1;
    }
    // user nice system idle: the four fields every kernel has.
    if n < 4 {
        return None;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = f;
    Some((
        cpu,
        CpuFields {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
        },
    ))
}

/// Every `cpuN` line of a `/proc/stat` text with all its fields; empty
/// when there is none.
pub fn parse_cpu_fields(text: &str) -> BTreeMap<usize, CpuFields> {
    text.lines().filter_map(cpu_line).collect()
}

/// Parses the text of `/proc/stat`. `None` when no `cpuN` line can be
/// read (not a `/proc/stat`); lines it does not know are skipped.
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let mut out = ProcStat::default();
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        if words.next() == Some("procs_running") {
            out.procs_running = words.next().and_then(|w| w.parse().ok());
            continue;
        }
        if let Some((cpu, f)) = cpu_line(line) {
            out.cpus.insert(cpu, f.ticks());
        }
    }
    if out.cpus.is_empty() {
        None
    } else {
        Some(out)
    }
}

/// Reads and parses `/proc/stat` under `fs`; `None` if it is missing or
/// unreadable.
pub fn read_proc_stat(fs: &FsRoot) -> Option<ProcStat> {
    parse_proc_stat(&fs.read_opt("/proc/stat")?)
}

/// `/proc/stat` kept open for repeated reads (the measurer reads it before
/// and after every run): one `pread` from offset 0 into a reused buffer
/// instead of open, read, close and a new `String` each time. On a
/// recorded machine (or a recording [`FsRoot`]) every read goes through
/// [`read_proc_stat`] as before.
#[derive(Debug)]
pub struct StatFile {
    file: Option<std::fs::File>,
    buf: Vec<u8>,
}

impl StatFile {
    /// Opens `/proc/stat` of `fs` when it is the live machine.
    pub fn open(fs: &FsRoot) -> StatFile {
        let file = if fs.is_live() && !fs.is_recording() {
            std::fs::File::open(fs.path("/proc/stat")).ok()
        } else {
            None
        };
        StatFile {
            file,
            buf: Vec::with_capacity(16 * 1024),
        }
    }

    /// What `/proc/stat` says now (`fs`: the root this was opened on).
    pub fn read(&mut self, fs: &FsRoot) -> Option<ProcStat> {
        let Some(f) = &self.file else {
            return read_proc_stat(fs);
        };
        use std::os::unix::fs::FileExt;
        self.buf.clear();
        let mut chunk = [0u8; 4096];
        loop {
            // proc files are generated at offset 0 and read through to EOF
            // (fs/proc: seq_file).
            match f.read_at(&mut chunk, self.buf.len() as u64) {
                Ok(0) => break,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return read_proc_stat(fs),
            }
        }
        parse_proc_stat(std::str::from_utf8(&self.buf).ok()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_stat_file_reads_again_and_again() {
        let fs = FsRoot::live();
        let mut f = StatFile::open(&fs);
        let a = f.read(&fs).expect("live /proc/stat");
        let b = f.read(&fs).expect("read twice");
        assert_eq!(
            a.cpus.keys().collect::<Vec<_>>(),
            b.cpus.keys().collect::<Vec<_>>()
        );
        let fresh = read_proc_stat(&fs).unwrap();
        assert_eq!(a.cpus.len(), fresh.cpus.len());
        for (cpu, t) in &b.cpus {
            assert!(t.busy >= a.cpus[cpu].busy, "ticks only grow");
        }
    }

    #[test]
    fn reads_busy_steal_and_runnable() {
        let text = "cpu  10 20 30 40 50 60 70 80 90 100\n\
                    cpu0 1 2 3 400 5 6 7 8 9 10\n\
                    cpu3 100 0 50 9 9 0 0 25 0 0\n\
                    intr 1 2 3\nctxt 5\nprocs_running 3\nprocs_blocked 0\n";
        let s = parse_proc_stat(text).unwrap();
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(
            s.cpus[&0],
            CpuTicks {
                busy: 1 + 2 + 3 + 6 + 7,
                steal: 8
            }
        );
        assert_eq!(
            s.cpus[&3],
            CpuTicks {
                busy: 150,
                steal: 25
            }
        );
        assert_eq!(s.procs_running, Some(3));
    }

    #[test]
    fn every_field_of_every_cpu() {
        let text = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 400 5 6 7 8 9 10\ncpu2 1 0 0 4\nprocs_running 1\n";
        let f = parse_cpu_fields(text);
        assert_eq!(f.len(), 2);
        let c0 = f[&0];
        assert_eq!(
            (c0.user, c0.nice, c0.system, c0.idle, c0.iowait, c0.irq, c0.softirq, c0.steal),
            (1, 2, 3, 400, 5, 6, 7, 8)
        );
        assert_eq!(c0.total(), 1 + 2 + 3 + 400 + 5 + 6 + 7 + 8);
        assert_eq!(c0.ticks(), parse_proc_stat(text).unwrap().cpus[&0]);
        assert_eq!(f[&2].steal, 0);
        assert!(parse_cpu_fields("procs_running 3\n").is_empty());
    }

    #[test]
    fn old_kernels_and_garbage() {
        // 2.4-style: four fields, no steal.
        let s = parse_proc_stat("cpu0 1 2 3 4\n").unwrap();
        assert_eq!(s.cpus[&0], CpuTicks { busy: 6, steal: 0 });
        assert_eq!(s.procs_running, None);
        assert_eq!(parse_proc_stat(""), None);
        assert_eq!(
            parse_proc_stat("cpu 1 2 3 4\ncpux 1 2 3 4\ncpu1 a b\n"),
            None
        );
        let big = format!("cpu0 {} {} 0 0\n", u64::MAX, u64::MAX);
        assert_eq!(parse_proc_stat(&big).unwrap().cpus[&0].busy, u64::MAX);
    }
}
