//! The three kernels. Each does a fixed amount of work per call ("chunk")
//! and returns a value the optimiser cannot discard.

use serde::{Deserialize, Serialize};
use std::hint::black_box;

/// A built-in micro-kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// Integer arithmetic with data-dependent, hard-to-predict branches
    /// (xorshift stream driving a small state machine): front end and ALUs.
    Int,
    /// Floating-point multiply-add chains over several independent
    /// accumulators (polynomial evaluation): FP pipes and their latency.
    Fp,
    /// A random cyclic pointer chase over a buffer larger than L2: each load
    /// depends on the previous one, so it measures memory latency as seen
    /// from that core (its L2/L3 and fabric).
    Mem,
}

impl Kernel {
    /// All kernels in report order.
    pub const ALL: [Kernel; 3] = [Kernel::Int, Kernel::Fp, Kernel::Mem];

    /// Short name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Int => "int",
            Kernel::Fp => "fp",
            Kernel::Mem => "mem",
        }
    }

    /// What one unit of work is, for the throughput column.
    pub fn unit(self) -> &'static str {
        match self {
            Kernel::Int => "Mops/s",
            Kernel::Fp => "Mflop/s",
            Kernel::Mem => "Mloads/s",
        }
    }

    /// Parses `int`, `fp` or `mem`.
    pub fn parse(s: &str) -> Result<Kernel, crate::UnknownKernel> {
        match s {
            "int" => Ok(Kernel::Int),
            "fp" => Ok(Kernel::Fp),
            "mem" => Ok(Kernel::Mem),
            _ => Err(crate::UnknownKernel(s.to_string())),
        }
    }
}

/// Integer operations (xorshift steps) per `int` chunk.
///
/// Every kernel's chunk is sized to take roughly 0.2–1 ms on a current
/// core: short next to a scheduler time slice (so most chunks run
/// undisturbed, and the few that are interrupted can be recognised and
/// dropped), long next to the cost of reading the clocks (< 0.1%), and
/// fine enough that a 20 ms slot holds dozens of samples.
pub const INT_OPS: u64 = 100_000;
/// Horner steps per `fp` chunk (each step is 8 chains x 2 flops).
pub const FP_STEPS: u64 = 150_000;
/// Dependent loads per `mem` chunk (~80-250 ns each beyond L2).
pub const MEM_LOADS: u64 = 4096;

/// Integer/branchy chunk. Returns a checksum.
pub fn int_chunk(seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut acc = 0u64;
    for _ in 0..INT_OPS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Data-dependent branches the predictor cannot learn.
        if x & 1 == 0 {
            acc = acc.wrapping_add(x >> 3);
        } else if x & 2 == 0 {
            acc ^= x.rotate_left(7);
        } else {
            acc = acc.wrapping_mul(3).wrapping_add(1);
        }
    }
    black_box(acc)
}

/// Floating-point chunk: 8 independent Horner chains; 2 flops per step per
/// chain. Plain multiply then add, not `mul_add`: without the FMA target
/// feature `mul_add` becomes a call to libm's software `fma`, which would
/// measure libm rather than the core. Returns a checksum.
pub fn fp_chunk(seed: u64) -> f64 {
    let x = 0.999_999 + (seed % 7) as f64 * 1e-9;
    let mut a = [1.0f64, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7];
    for _ in 0..FP_STEPS {
        for v in a.iter_mut() {
            *v = *v * x + 1e-7;
        }
    }
    black_box(a.iter().sum())
}

/// A buffer laid out as one random cycle (Sattolo's algorithm), so a chase
/// visits every slot before repeating and prefetchers cannot guess the next
/// address. Each slot is a cache line (64 bytes) to defeat spatial locality.
pub struct ChaseBuffer {
    next: Vec<[usize; 8]>,
}

impl ChaseBuffer {
    /// A buffer of at least `bytes` bytes. Memory that cannot be had is an
    /// error (the size that was asked for), never an abort.
    pub fn new(bytes: usize) -> Result<ChaseBuffer, std::collections::TryReserveError> {
        let n = (bytes / 64).max(2);
        let mut order: Vec<usize> = Vec::new();
        order.try_reserve_exact(n)?;
        order.extend(0..n);
        let mut r = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..n).rev() {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let j = (r % i as u64) as usize; // j < i: Sattolo, one cycle
            order.swap(i, j);
        }
        let mut next: Vec<[usize; 8]> = Vec::new();
        next.try_reserve_exact(n)?;
        next.resize(n, [0usize; 8]);
        for i in 0..n {
            next[order[i]][0] = order[(i + 1) % n];
        }
        Ok(ChaseBuffer { next })
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.next.len() * 64
    }

    /// Cache lines in the cycle (loads for one full walk).
    pub fn lines(&self) -> usize {
        self.next.len()
    }

    /// Follows [`MEM_LOADS`] dependent loads from `start`; returns where it
    /// stopped (feed it back in to continue the walk).
    pub fn chase(&self, start: usize) -> usize {
        let mut p = start % self.next.len();
        for _ in 0..MEM_LOADS {
            p = self.next[p][0];
        }
        black_box(p)
    }
}

/// Units of work one chunk of `k` counts for.
pub fn chunk_units(k: Kernel) -> u64 {
    match k {
        Kernel::Int => INT_OPS,
        Kernel::Fp => FP_STEPS * 8 * 2,
        Kernel::Mem => MEM_LOADS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chase_is_one_cycle() {
        let b = ChaseBuffer::new(64 * 1000).unwrap();
        let mut seen = vec![false; 1000];
        let mut p = 0;
        for _ in 0..1000 {
            assert!(!seen[p], "slot {p} visited twice before the cycle closed");
            seen[p] = true;
            p = b.next[p][0];
        }
        assert_eq!(p, 0);
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn kernels_are_deterministic() {
        // The same seed gives the same checksum on another thread (no
        // hidden state), and the checksum depends on the seed (the work
        // cannot be folded into a constant).
        let (i5, f5) = std::thread::spawn(|| (int_chunk(5), fp_chunk(5)))
            .join()
            .unwrap();
        assert_eq!((int_chunk(5), fp_chunk(5)), (i5, f5));
        assert_ne!(int_chunk(5), int_chunk(6));
        assert_ne!(fp_chunk(5), fp_chunk(6));
        assert!(fp_chunk(1).is_finite() && fp_chunk(1) > 0.0);
    }

    #[test]
    fn kernel_names_round_trip() {
        for k in Kernel::ALL {
            assert_eq!(Kernel::parse(k.name()).unwrap(), k);
        }
        assert_eq!(
            Kernel::parse("gpu"),
            Err(crate::UnknownKernel("gpu".into()))
        );
        assert!(Kernel::parse("gpu")
            .unwrap_err()
            .to_string()
            .contains("int, fp or mem"));
    }

    #[test]
    fn impossible_buffer_is_an_error_not_an_abort() {
        assert!(ChaseBuffer::new(usize::MAX).is_err());
        assert!(ChaseBuffer::new(usize::MAX / 2).is_err());
    }
}
