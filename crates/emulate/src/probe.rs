//! The calibration probe: a CPU-bound loop pinned to each measured CPU,
//! all CPUs at once over the same wall-clock window, counting the work
//! done. Measuring them together lets background load that comes and goes
//! hit the fast and the slowed CPUs alike; the achieved speed of a slowed
//! CPU is its work divided by the reference CPU's.

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
/// `window`. A CPU that cannot be pinned to gives `None`.
pub fn rates(cpus: &[usize], window: Duration) -> Vec<Option<f64>> {
    let barrier = Barrier::new(cpus.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let barrier = &barrier;
                s.spawn(move || {
                    let pinned = pinsight_sys::affinity::pin_current_thread(cpu).is_ok();
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
    })
}
