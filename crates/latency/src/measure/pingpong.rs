//! The two latency benchmarks of `core-to-core-latency`, so numbers can be
//! compared with the tool people already run:
//!
//! - **cas** (its `-b 1`): both threads `compare_exchange` one shared
//!   cache line between PING and PONG. Each successful CAS needs the line
//!   exclusive in the other core's cache: one round trip is two line
//!   transfers. This is what a contended spinlock costs.
//! - **msg** (its `-b 2`): single writer / single reader on two cache
//!   lines. Each side writes only its own line and spins reading the
//!   other's (acquire/release), like a message-passing queue's head/tail.
//!
//! Both report one-way latency = round-trip time / 2, as the tool does.
//!
//! The pong side must stop when the ping side has enough samples, without
//! adding work to the timed loop: a third value, STOP, is written into the
//! line the pong side already spins on, and the pong side checks for it
//! only on the path it takes anyway (the value it just read).

use std::sync::atomic::{AtomicU32, Ordering};

/// One cache line to itself. 128 bytes, not 64: Intel's adjacent-line
/// prefetcher pulls pairs of lines, so 64-byte neighbours still interfere
/// (the same choice as crossbeam's `CachePadded`).
#[repr(C, align(128))]
#[derive(Default)]
struct Line(AtomicU32);

/// The shared state of one pair: two lines (cas uses the first only).
#[repr(C)]
#[derive(Default)]
pub struct PairLines {
    ping_line: Line,
    pong_line: Line,
}

/// Which benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// CAS round trips on one shared cache line.
    #[default]
    Cas,
    /// Single-writer single-reader message passing on two cache lines.
    Msg,
}

impl Method {
    /// The name used in matrices and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Cas => "cas",
            Method::Msg => "msg",
        }
    }

    /// One line for humans.
    pub fn describe(self) -> &'static str {
        match self {
            Method::Cas => "CAS latency on a single shared cache line",
            Method::Msg => "single-writer single-reader latency on two shared cache lines",
        }
    }

    /// Parses `cas`/`msg` (also the tool's bench numbers `1`/`2`).
    pub fn parse(s: &str) -> Result<Method, UnknownMethod> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cas" | "1" => Ok(Method::Cas),
            "msg" | "2" | "read-write" | "rw" => Ok(Method::Msg),
            other => Err(UnknownMethod {
                given: other.to_string(),
            }),
        }
    }
}

/// A method name [`Method::parse`] does not know (lower-cased, trimmed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown latency method '{given}': expected 'cas' or 'msg'")]
pub struct UnknownMethod {
    pub given: String,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const PING: u32 = 0;
const PONG: u32 = 1;
const STOP: u32 = 2;

/// The timing side of a pair. Holds the message-passing phase across
/// batches, so batches can be timed back to back.
pub struct Pinger<'a> {
    lines: &'a PairLines,
    method: Method,
    /// msg: the value this side waits for and then writes.
    phase: u32,
}

impl<'a> Pinger<'a> {
    pub fn new(lines: &'a PairLines, method: Method) -> Self {
        Pinger {
            lines,
            method,
            phase: 1,
        }
    }

    /// Performs `n` round trips (returns when the last one is complete).
    pub fn round_trips(&mut self, n: u64) {
        match self.method {
            Method::Cas => cas_ping(&self.lines.ping_line.0, n),
            Method::Msg => {
                self.phase = msg_ping(
                    &self.lines.ping_line.0,
                    &self.lines.pong_line.0,
                    self.phase,
                    n,
                )
            }
        }
    }

    /// Tells the pong side to return. Must be called exactly once, last.
    pub fn stop(self) {
        match self.method {
            // Wait for the pong side's answer to our last PING, then
            // replace it with STOP: its next CAS fails and sees STOP.
            Method::Cas => {
                let line = &self.lines.ping_line.0;
                while line
                    .compare_exchange(PONG, STOP, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {}
            }
            Method::Msg => self.lines.ping_line.0.store(STOP, Ordering::Release),
        }
    }
}

#[inline(never)]
fn cas_ping(line: &AtomicU32, n: u64) {
    for _ in 0..n {
        while line
            .compare_exchange(PONG, PING, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {}
    }
}

#[inline(never)]
fn msg_ping(mine: &AtomicU32, theirs: &AtomicU32, mut phase: u32, n: u64) -> u32 {
    for _ in 0..n {
        // Acquire -> Release orders the reply after the read it answers
        // (free on x86, needed on ARM), as in core-to-core-latency.
        while theirs.load(Ordering::Acquire) != phase {}
        mine.store(phase, Ordering::Release);
        phase ^= 1;
    }
    phase
}

/// The answering side: runs until the pinger calls [`Pinger::stop`].
pub fn pong(lines: &PairLines, method: Method) {
    match method {
        Method::Cas => cas_pong(&lines.ping_line.0),
        Method::Msg => msg_pong(&lines.ping_line.0, &lines.pong_line.0),
    }
}

#[inline(never)]
fn cas_pong(line: &AtomicU32) {
    // A failed CAS returns the value it saw: STOP costs no extra read.
    while line.compare_exchange(PING, PONG, Ordering::Relaxed, Ordering::Relaxed) != Err(STOP) {}
}

#[inline(never)]
fn msg_pong(theirs: &AtomicU32, mine: &AtomicU32) {
    let mut phase = 0;
    loop {
        let seen = theirs.load(Ordering::Acquire);
        if seen == phase {
            mine.store(phase ^ 1, Ordering::Release);
            phase ^= 1;
        } else if seen == STOP {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unpinned, the threads still make progress (the OS time-slices them
    /// if needed): the protocol itself is what is checked here.
    #[test]
    fn both_methods_complete_round_trips_and_stop() {
        for method in [Method::Cas, Method::Msg] {
            let lines = PairLines::default();
            std::thread::scope(|s| {
                s.spawn(|| pong(&lines, method));
                let mut p = Pinger::new(&lines, method);
                p.round_trips(1000);
                p.round_trips(1);
                p.round_trips(999);
                p.stop();
            });
        }
    }

    #[test]
    fn lines_do_not_share_a_cache_line() {
        assert_eq!(std::mem::align_of::<Line>(), 128);
        assert_eq!(std::mem::size_of::<PairLines>(), 256);
    }

    #[test]
    fn method_names() {
        assert_eq!(Method::parse("CAS"), Ok(Method::Cas));
        assert_eq!(Method::parse("2"), Ok(Method::Msg));
        assert_eq!(Method::Msg.to_string(), "msg");
        assert_eq!(
            Method::parse("tsc").unwrap_err().to_string(),
            "unknown latency method 'tsc': expected 'cas' or 'msg'"
        );
    }
}
