//! A barrier that spins briefly before sleeping.
//!
//! LU crosses one barrier per column (≈1500 per run). `std::sync::Barrier`
//! always sleeps in the kernel, and a futex wake-up costs tens of
//! microseconds in a VM: that would drown the cache-line latency between the
//! workers — the very thing a placement changes. Spinning first makes the
//! barrier cost what the hardware makes it cost; sleeping after
//! [`SPIN_FOR`] keeps an oversubscribed or badly pinned run (two workers on
//! one CPU) from burning whole scheduler slices.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long to spin before sleeping: a few cache-line round trips' worth
/// many times over, yet short next to a scheduler time slice.
const SPIN_FOR: Duration = Duration::from_micros(20);

pub(crate) struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    sleepers: Mutex<usize>,
    wake: Condvar,
}

impl SpinBarrier {
    pub(crate) fn new(parties: usize) -> SpinBarrier {
        SpinBarrier {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleepers: Mutex::new(0),
            wake: Condvar::new(),
        }
    }

    /// Blocks until all `parties` have called `wait` for this generation.
    /// Everything written before a `wait` is visible after it returns.
    pub(crate) fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            // Reset before publishing the new generation: a waiter that sees
            // the new generation (Acquire) also sees the reset.
            self.arrived.store(0, Ordering::Relaxed);
            let sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
            self.generation
                .store(generation.wrapping_add(1), Ordering::Release);
            if *sleepers > 0 {
                self.wake.notify_all();
            }
            return;
        }
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            // Reading the clock (a vDSO call) every 64 spins keeps it cheap.
            if spins & 63 == 0 && start.elapsed() > SPIN_FOR {
                break;
            }
        }
        // Checking and sleeping under the lock the last arriver takes before
        // publishing means its wake-up cannot be missed.
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        while self.generation.load(Ordering::Acquire) == generation {
            *sleepers += 1;
            sleepers = self.wake.wait(sleepers).unwrap_or_else(|e| e.into_inner());
            *sleepers -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn no_thread_passes_early() {
        // Each round every thread adds 1, then waits; after the barrier the
        // total must be exactly threads × rounds so far. More threads than
        // CPUs forces the sleeping path too.
        for threads in [1, 2, 5] {
            let b = SpinBarrier::new(threads);
            let total = AtomicU64::new(0);
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        for round in 1..=200u64 {
                            total.fetch_add(1, Ordering::Relaxed);
                            b.wait();
                            assert_eq!(total.load(Ordering::Relaxed), round * threads as u64);
                            b.wait();
                        }
                    });
                }
            });
        }
    }
}
