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

/// `PERF_PMU_TYPE_SHIFT`: for `PERF_TYPE_HARDWARE`, bits 32..63 of `config`
/// name the PMU (hybrid "extended type", Linux 5.13+).
pub const PERF_PMU_TYPE_SHIFT: u32 = 32;

/// `enum perf_hw_id`.
pub const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
pub const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
pub const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;

/// `enum perf_sw_ids`.
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
pub const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
pub const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
pub const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;

/// `read_format` bits.
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;

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
    let mut flags = FLAG_DISABLED;
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
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
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
            -1 as libc::c_int,
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
        let start = cpu();
        while cpu() - start < 20_000_000 {
            std::hint::black_box(0);
        }
        let spent = cpu() - start;
        let r = c.read().unwrap();
        let ratio = r.value as f64 / spent as f64;
        assert!(
            (0.9..1.1).contains(&ratio),
            "{r:?} vs {spent} ns of thread CPU time"
        );
        assert!(r.time_running_ns > 0 && r.time_running_ns <= r.time_enabled_ns);
    }
}
