//! The one progress interface: every library that does long work reports
//! it through a [`Progress`] (`compare`, `tune`, `mix`, `report`, `speed`,
//! `latency`, `sf`, `sched`, `emulate`'s calibration, the workloads and
//! `snapshot`), and the command line gives it the one terminal
//! implementation (`pinsight_term::progress::Bar`: a bar on stderr,
//! shown only on a terminal and only past one second). Tests and quiet
//! callers pass [`Silent`].
//!
//! It is defined here, below every layer that reports (topology's
//! `snapshot` and the workloads depend on nothing higher); every crate
//! imports it from here.
//!
//! A task is `begin` … `step`* … `end`, and the library doing the work
//! calls all three: it names the task and knows its total. Nothing here
//! stops or steers the work: hooks that decide whether work goes on (a
//! run budget, a wait that a signal interrupts) are the libraries' own
//! small traits.

/// Receives the progress of one task at a time.
pub trait Progress {
    /// A task of `total` steps begins (0: the count is not known yet);
    /// `done` of them are already done (a resumed journal). `what` names
    /// it in words ("compare", "measuring core-to-core latency").
    fn begin(&mut self, _what: &str, _total: u64, _done: u64) {}
    /// `done` steps are finished; `label` names the step now running
    /// (empty: keep the last label).
    fn step(&mut self, _label: &str, _done: u64) {}
    /// The total became known or changed.
    fn resize(&mut self, _total: u64) {}
    /// A line to show to the user above the progress (a failed run).
    fn note(&mut self, _line: &str) {}
    /// The task ended: finished, stopped or failed.
    fn end(&mut self) {}
}

/// No progress shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_accepts_a_whole_task() {
        let p: &mut dyn Progress = &mut Silent;
        p.begin("work", 3, 1);
        p.step("second", 1);
        p.resize(4);
        p.note("a note");
        p.step("", 2);
        p.end();
    }
}
