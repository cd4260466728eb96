//! The calibration probe: a CPU-bound loop pinned to each measured CPU,
//! all CPUs at once over the same wall-clock window, counting the work
//! done. Measuring them together lets background load that comes and goes
//! hit the fast and the slowed CPUs alike; the achieved speed of a slowed
//! CPU is its work divided by the reference CPU's.
//!
//! The probe threads run under `SCHED_FIFO` at priority 1, one below
//! the stealers (sched(7)): no ordinary task takes time from them, so on a
//! busy machine the ratio measures the CPUs and not how the load happens
//! to be spread over them (the scheduler moves ordinary tasks off a CPU
//! that a real-time stealer keeps busy, which makes a nice-0 probe on the
//! slowed CPU look faster than the CPU is). A window is short (200 ms by
//! default) and followed by an equal pause ([`PAUSE_FACTOR`]), so the
//! probes and stealers stay under the real-time throttling budget of each
//! second (Documentation/scheduler/sched-rt-group.rst) and ordinary tasks
//! are held off for at most one window at a time. Without `CAP_SYS_NICE`
//! the probes run at nice -20 where allowed, else as they are.
//!
//! The speed so defined is that of an uncontended program: one run under
//! the emulation at nice 0 on a busy machine shares its CPU as usual.

/// The probes' real-time priority: below the stealers'
/// ([`crate::duty::PRIORITY`]), so they only get the time left.
pub const PROBE_PRIORITY: i32 = 1;

/// The pause after a real-time window, as a multiple of the window.
pub const PAUSE_FACTOR: f64 = 1.0;

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// One chunk of work: an integer recurrence the compiler cannot fold
/// (a xorshift step, Marsaglia 2003), about 20 µs on a current core.
fn chunk(mut x: u64) -> u64 {
    for _ in 0..8192 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

/// Work per second on each CPU of `cpus`, measured together over
/// `window`, with the pause after it when the probes ran real-time. A CPU
/// that cannot be pinned to gives `None`.
pub fn rates(cpus: &[usize], window: Duration) -> Vec<Option<f64>> {
    let barrier = Barrier::new(cpus.len());
    let realtime = std::sync::atomic::AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let (barrier, realtime) = (&barrier, &realtime);
                s.spawn(move || {
                    let pinned = pinsight_sys::affinity::pin_current_thread(cpu).is_ok();
                    if pinsight_sys::stealer::fifo_calling_thread(PROBE_PRIORITY).is_ok() {
                        realtime.store(true, std::sync::atomic::Ordering::Relaxed);
                    } else {
                        // Best effort: without CAP_SYS_NICE it shares as usual.
                        let _ = pinsight_sys::stealer::nice_calling_thread(-20);
                    }
                    barrier.wait();
                    if !pinned {
                        return None;
                    }
                    let start = Instant::now();
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ cpu as u64;
                    let mut n = 0u64;
                    while start.elapsed() < window {
                        x = chunk(x);
                        n += 1;
                    }
                    let secs = start.elapsed().as_secs_f64();
                    (secs > 0.0 && n > 0).then(|| n as f64 / secs)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    if realtime.into_inner() {
        std::thread::sleep(window.mul_f64(PAUSE_FACTOR));
    }
    out
}
