//! A [`Progress`] that records every call, and the check that a library
//! used the interface as documented: each task is `begin` … `end`, its
//! steps never go back and never pass a known total.

use pinsight_sys::progress::Progress;

/// One call a [`Recorder`] received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Begin { what: String, total: u64, done: u64 },
    Step { label: String, done: u64 },
    Resize { total: u64 },
    Note { line: String },
    End,
}

/// Records the calls in order.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    pub calls: Vec<Call>,
}

impl Progress for Recorder {
    fn begin(&mut self, what: &str, total: u64, done: u64) {
        self.calls.push(Call::Begin {
            what: what.to_string(),
            total,
            done,
        });
    }
    fn step(&mut self, label: &str, done: u64) {
        self.calls.push(Call::Step {
            label: label.to_string(),
            done,
        });
    }
    fn resize(&mut self, total: u64) {
        self.calls.push(Call::Resize { total });
    }
    fn note(&mut self, line: &str) {
        self.calls.push(Call::Note {
            line: line.to_string(),
        });
    }
    fn end(&mut self) {
        self.calls.push(Call::End);
    }
}

/// What one well-formed task looked like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// The name given to `begin`.
    pub what: String,
    /// The total at the end (after any `resize`).
    pub total: u64,
    /// The last `done` reported (the `begin`'s when no step came).
    pub done: u64,
    /// Steps reported.
    pub steps: usize,
    /// Labels given to steps, non-empty ones only, in order.
    pub labels: Vec<String>,
}

impl Recorder {
    /// The tasks, checked: every call lies between a `begin` and its
    /// `end`, tasks do not nest, `done` never decreases and never exceeds
    /// a known (non-zero) total. Panics naming the first call that breaks
    /// a rule.
    pub fn tasks(&self) -> Vec<Task> {
        let mut tasks = Vec::new();
        let mut open: Option<Task> = None;
        for (i, call) in self.calls.iter().enumerate() {
            let in_task = |open: &mut Option<Task>| -> Task {
                open.take()
                    .unwrap_or_else(|| panic!("call {i} ({call:?}) outside a task: {self:?}"))
            };
            match call {
                Call::Begin { what, total, done } => {
                    assert!(open.is_none(), "call {i}: begin inside a task: {self:?}");
                    assert!(
                        *total == 0 || done <= total,
                        "call {i}: begin past its total: {self:?}"
                    );
                    open = Some(Task {
                        what: what.clone(),
                        total: *total,
                        done: *done,
                        steps: 0,
                        labels: Vec::new(),
                    });
                }
                Call::Step { label, done } => {
                    let mut t = in_task(&mut open);
                    assert!(*done >= t.done, "call {i}: step went back: {self:?}");
                    assert!(
                        t.total == 0 || *done <= t.total,
                        "call {i}: step past the total: {self:?}"
                    );
                    t.done = *done;
                    t.steps += 1;
                    if !label.is_empty() {
                        t.labels.push(label.clone());
                    }
                    open = Some(t);
                }
                Call::Resize { total } => {
                    let mut t = in_task(&mut open);
                    t.total = *total;
                    open = Some(t);
                }
                Call::Note { .. } => open = Some(in_task(&mut open)),
                Call::End => tasks.push(in_task(&mut open)),
            }
        }
        assert!(open.is_none(), "a task never ended: {self:?}");
        tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_task_is_summarised() {
        let mut r = Recorder::default();
        r.begin("work", 0, 0);
        r.resize(3);
        r.step("one", 1);
        r.step("", 3);
        r.end();
        let t = &r.tasks()[0];
        assert_eq!(
            (t.what.as_str(), t.total, t.done, t.steps),
            ("work", 3, 3, 2)
        );
        assert_eq!(t.labels, ["one"]);
    }

    #[test]
    #[should_panic(expected = "step went back")]
    fn a_step_that_goes_back_is_refused() {
        let mut r = Recorder::default();
        r.begin("work", 3, 0);
        r.step("", 2);
        r.step("", 1);
        r.end();
        r.tasks();
    }

    #[test]
    #[should_panic(expected = "outside a task")]
    fn a_step_outside_a_task_is_refused() {
        let mut r = Recorder::default();
        r.step("", 1);
        r.tasks();
    }
}
