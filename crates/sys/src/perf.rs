//! `perf_event_open(2)` in counting mode, nothing else.
//!
//! Hand-written FFI, and why not a crate: nix does not wrap
//! `perf_event_open`. `perf-event2` (a `Builder` over the syscall) and
//! `perf-event-open-sys` (raw bindings) were checked: the first hides the
//! raw `type`/`config` pair that hybrid PMUs need (the PMU type in bits
//! 32..63 of `config`) behind its event enums, opens groups rather than
//! the independent inherit + enable-on-exec counters opened here on a child
//! paused before `exec`, and brings memmap2, bitflags and its bindings
//! crate for sampling we never do; the second would replace one 64-byte
//! struct with generated bindings of the whole header. We only count, need
//! the exact errno for honest "unavailable" reasons, and use the ABI
//! subset of 64 bytes (`PERF_ATTR_SIZE_VER0`), which every kernel since
//! 2.6.31 accepts.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `enum perf_type_id` (include/uapi/linux/perf_event.h).
pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_HW_CACHE: u32 = 3;

/// `PERF_PMU_TYPE_SHIFT`: for `PERF_TYPE_HARDWARE`, bits 32..63 of `config`
/// name the PMU (hybrid "extended type", Linux 5.13+).
pub const PERF_PMU_TYPE_SHIFT: u32 = 32;

/// `enum perf_hw_id`.
pub const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
pub const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
pub const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
pub const PERF_COUNT_HW_BRANCH_INSTRUCTIONS: u64 = 4;

/// `PERF_TYPE_HW_CACHE` config for L1 data-cache read accesses:
/// `PERF_COUNT_HW_CACHE_L1D (0) | OP_READ (0) << 8 | RESULT_ACCESS (0) << 16`.
pub const PERF_COUNT_HW_CACHE_L1D_READ_ACCESS: u64 = 0;

/// `enum perf_sw_ids`.
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
pub const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
pub const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
pub const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
/// Counts nothing (perf_event_open(2), "PERF_COUNT_SW_DUMMY", Linux 3.12).
pub const PERF_COUNT_SW_DUMMY: u64 = 9;

/// `read_format` bits.
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const PERF_FORMAT_GROUP: u64 = 1 << 3;

/// `PERF_EVENT_IOC_ENABLE` and `PERF_IOC_FLAG_GROUP`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_IOC_FLAG_GROUP: libc::c_ulong = 1;

/// Bit positions in the attr flag word (the C bitfield after `read_format`).
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_ATTR_SIZE_VER0: u32 = 64;

/// `struct perf_event_attr` up to `config1` (ABI version 0, 64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER0 as usize);

/// How to open one counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenSpec {
    pub type_: u32,
    pub config: u64,
    /// Count user space only (needed by unprivileged users when
    /// `perf_event_paranoid` >= 2).
    pub exclude_kernel: bool,
    /// Follow every thread and process the target creates later.
    pub inherit: bool,
    /// Start disabled and let the kernel enable the counter at the target's
    /// next `execve`, so the harness's own pre-exec work is not counted.
    pub enable_on_exec: bool,
}

/// One open counting event.
#[derive(Debug)]
pub struct Counter {
    fd: OwnedFd,
}

/// A counter's value with the times needed to scale for multiplexing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Reading {
    pub value: u64,
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
}

/// Opens `spec` on `pid` (0 = the caller), any CPU, close-on-exec.
pub fn open(spec: &OpenSpec, pid: libc::pid_t) -> io::Result<Counter> {
    open_raw(spec, pid, -1, FLAG_DISABLED, 0)
}

fn open_raw(
    spec: &OpenSpec,
    pid: libc::pid_t,
    group_fd: libc::c_int,
    mut flags: u64,
    extra_format: u64,
) -> io::Result<Counter> {
    if spec.inherit {
        flags |= FLAG_INHERIT;
    }
    if spec.enable_on_exec {
        flags |= FLAG_ENABLE_ON_EXEC;
    }
    if spec.exclude_kernel {
        flags |= FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV;
    }
    let attr = PerfEventAttr {
        type_: spec.type_,
        size: PERF_ATTR_SIZE_VER0,
        config: spec.config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | extra_format,
        flags,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid, initialised perf_event_attr of the size it
    // declares, alive for the call; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            -1 as libc::c_int,
            group_fd,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this new descriptor; we own it.
    Ok(Counter {
        fd: unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) },
    })
}

/// One read of a counter group: the leader's times and every member's
/// value, in the order they were opened (leader first).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GroupReading {
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
    pub values: Vec<u64>,
}

/// Opens a counter group on thread `tid` (not inherited, any CPU,
/// close-on-exec): `specs[0]` leads, the others are members scheduled on
/// the PMU together with it, so all count over exactly the same time.
/// The group starts counting when this returns. On error, the index of
/// the spec that failed.
pub fn open_group(specs: &[OpenSpec], tid: libc::pid_t) -> Result<Group, (usize, io::Error)> {
    let Some(first) = specs.first() else {
        return Err((0, io::Error::from(io::ErrorKind::InvalidInput)));
    };
    let leader = open_raw(first, tid, -1, FLAG_DISABLED, PERF_FORMAT_GROUP).map_err(|e| (0, e))?;
    let mut members = Vec::new();
    for (i, s) in specs.iter().enumerate().skip(1) {
        members.push(
            open_raw(s, tid, leader.fd.as_raw_fd(), 0, PERF_FORMAT_GROUP).map_err(|e| (i, e))?,
        );
    }
    // SAFETY: PERF_EVENT_IOC_ENABLE on a descriptor we own; the argument
    // is a plain flag (enable the whole group).
    let r = unsafe {
        libc::ioctl(
            leader.fd.as_raw_fd(),
            PERF_EVENT_IOC_ENABLE as _,
            PERF_IOC_FLAG_GROUP,
        )
    };
    if r < 0 {
        return Err((0, io::Error::last_os_error()));
    }
    Ok(Group { leader, members })
}

/// An open counter group (see [`open_group`]).
#[derive(Debug)]
pub struct Group {
    leader: Counter,
    members: Vec<Counter>,
}

impl Group {
    /// Reads every counter of the group in one `read(2)`.
    pub fn read(&self) -> io::Result<GroupReading> {
        let n = 1 + self.members.len();
        // { nr, time_enabled, time_running, value[nr] }
        let mut buf = vec![0u64; 3 + n];
        let bytes = std::mem::size_of_val(buf.as_slice());
        // SAFETY: `buf` is `bytes` writable bytes.
        let got = unsafe { libc::read(self.leader.fd.as_raw_fd(), buf.as_mut_ptr().cast(), bytes) };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        if got as usize != bytes || buf[0] as usize != n {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "perf group read {got} of {bytes} bytes ({} counters)",
                    buf[0]
                ),
            ));
        }
        Ok(GroupReading {
            time_enabled_ns: buf[1],
            time_running_ns: buf[2],
            values: buf[3..].to_vec(),
        })
    }
}

impl Counter {
    /// Reads value, time enabled and time running.
    pub fn read(&self) -> io::Result<Reading> {
        let mut buf = [0u64; 3];
        // SAFETY: `buf` is 24 writable bytes, the exact size of the
        // read_format we asked for.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                std::mem::size_of_val(&buf),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != std::mem::size_of_val(&buf) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("perf counter read {n} of 24 bytes"),
            ));
        }
        Ok(Reading {
            value: buf[0],
            time_enabled_ns: buf[1],
            time_running_ns: buf[2],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_clock_counts_our_own_work() {
        let spec = OpenSpec {
            type_: PERF_TYPE_SOFTWARE,
            config: PERF_COUNT_SW_TASK_CLOCK,
            exclude_kernel: false,
            inherit: false,
            enable_on_exec: false,
        };
        let c = match open(&spec, 0) {
            Ok(c) => c,
            // Kernels built without perf events, or seccomp: nothing to test.
            Err(e) => return pinsight_testkit::skip(format!("perf_event_open: {e}")),
        };
        // SAFETY: PERF_EVENT_IOC_ENABLE on our own fd, no argument.
        unsafe { libc::ioctl(c.fd.as_raw_fd(), 0x2400 as _, 0) };
        // Spin for 20 ms of this thread's CPU time (wall time would depend
        // on how busy the machine is).
        let cpu = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid out-pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let s0 = pinsight_testkit::steal_ms();
        let start = cpu();
        while cpu() - start < 20_000_000 {
            std::hint::black_box(0);
        }
        let spent = cpu() - start;
        let r = c.read().unwrap();
        let stolen_ns = (pinsight_testkit::steal_ms() - s0) * 1e6;
        // Within 10%, plus what the hypervisor stole meanwhile (task-clock
        // counts it, the thread's CPU clock does not).
        let v = r.value as f64;
        assert!(
            v >= spent as f64 * 0.9 && v <= spent as f64 * 1.1 + stolen_ns,
            "{r:?} vs {spent} ns of thread CPU time (steal {stolen_ns:.0} ns)"
        );
        assert!(r.time_running_ns > 0 && r.time_running_ns <= r.time_enabled_ns);
    }

    #[test]
    fn a_software_group_reads_all_members_with_shared_times() {
        let sw = |config| OpenSpec {
            type_: PERF_TYPE_SOFTWARE,
            config,
            exclude_kernel: false,
            inherit: false,
            enable_on_exec: false,
        };
        let g = match open_group(
            &[sw(PERF_COUNT_SW_TASK_CLOCK), sw(PERF_COUNT_SW_PAGE_FAULTS)],
            0,
        ) {
            Ok(g) => g,
            Err((_, e)) => return pinsight_testkit::skip(format!("perf_event_open: {e}")),
        };
        let mut v: Vec<u64> = Vec::new();
        for i in 0..200_000u64 {
            v.push(std::hint::black_box(i));
        }
        let r = g.read().unwrap();
        assert_eq!(r.values.len(), 2);
        assert!(r.values[0] > 0, "{r:?}");
        assert!(r.time_running_ns > 0 && r.time_running_ns <= r.time_enabled_ns);
        assert!(open_group(&[], 0).is_err());
    }
}
