//! The only home of pinsight's OS calls.
//!
//! Every other crate reaches the kernel through this one (or through std),
//! so `unsafe` lives here and nowhere else except where a crate needs it
//! for something that is not an OS call (e.g. a shared matrix written by
//! several threads). Each module says which calls go through [`nix`] and
//! which are hand-written FFI, and why:
//!
//! - [`affinity`]: CPU affinity of any size (hand-written: nix's `CpuSet`
//!   and libc's `cpu_set_t` stop at 1024 CPUs);
//! - [`process`]: reaping with `rusage`, waiting without reaping, pidfds,
//!   process-group kill, CLOEXEC pipes, the pre-exec clock stamp;
//! - [`spawn`]: starting a program without copying this process
//!   (hand-written `clone(CLONE_VM | CLONE_VFORK)`, as glibc's
//!   `posix_spawn`), with the placement steps and the exec stamp;
//! - [`signals`]: forwarding signals to launched children, the self-pipe
//!   cleanup handler, deferring signals around a critical write;
//! - [`perf`]: `perf_event_open` in counting mode;
//! - [`mempolicy`]: the calling thread's NUMA memory policy
//!   (`set_mempolicy`/`get_mempolicy`) and the kernel's weighted-interleave
//!   weights;
//! - [`sched`]: the CPU a thread runs on, thread priority, clocks;
//! - [`entry`]: the process's C `main` for a `#![no_main]` binary: std's
//!   start without its stack-overflow handler (0.09 ms of each start);
//! - [`fs`]: file capabilities, close-on-exec, memfd mapping checks;
//! - [`fsroot`]: [`FsRoot`], the root-relative reader of `/sys` and
//!   `/proc` (live, or a recorded machine), through which every OS file
//!   read goes;
//! - [`archive`]: a recorded machine packed as `.tar.gz`, unpacked
//!   (hostile entries refused, size bounded) into a private temporary
//!   directory that [`FsRoot`] holds;
//! - [`netlink`]: generic netlink multicast subscriptions (the `thermal`
//!   family's HFI events), socket and controller messages from the
//!   `netlink-sys` / `netlink-packet-generic` crates;
//! - [`procfs`]: what `/proc` says about a process's threads (task list,
//!   `stat`, `status`, `schedstat`), read through [`FsRoot`];
//! - [`progress`]: the one progress interface (no OS call: a trait with
//!   no dependency, kept here so that every layer above may report through
//!   it);
//! - [`stealer`]: the forked children of `pinsight emulate`: a real-time
//!   duty-cycle stealer pinned to one CPU, and a watchdog that writes
//!   files back when pinsight dies (hand-written: fork without exec).
//!
//! Depends only on `pinsight-cpuset`, `libc`, `nix`, `thiserror`, the
//! three small `netlink-*` crates and, for archives, `flate2`, `tar` and
//! `tempfile`, so any
//! crate (topology discovery included) may use it.

pub mod affinity;
pub mod archive;
pub mod cpustat;
pub mod entry;
pub mod fs;
pub mod fsroot;
pub mod machine_lock;
pub mod mempolicy;
pub mod netlink;
pub mod perf;
pub mod process;
pub mod procfs;
pub mod progress;
pub mod sched;
pub mod signals;
pub mod spawn;
pub mod stealer;
pub mod text;

pub use fsroot::{FsRoot, FsRootError, FSROOT_ENV};
