//! The one terminal drawing of [`Progress`]: an indicatif bar on stderr,
//! shown only when stderr is a terminal, only when not asked to be quiet,
//! and only once a task has taken more than a second (short work stays
//! silent). A task of unknown length (total 0) is a spinner with the
//! elapsed time.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pinsight_sys::progress::Progress;
use std::io::IsTerminal;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How long a task runs before its bar appears.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often the spinner and the elapsed time move while no step comes
/// (a run may take minutes).
const TICK: Duration = Duration::from_millis(250);

/// The terminal's progress bar (see the module's documentation).
pub struct Bar {
    /// Whether anything may be drawn: stderr is a terminal, not quiet.
    enabled: bool,
    task: Option<Task>,
    /// The bar being drawn now, for [`Printer`]s.
    current: Arc<Mutex<Option<ProgressBar>>>,
}

/// Prints to stderr around a [`Bar`] (the bar is cleared while the text
/// is written and drawn again below it), from code that cannot hold the
/// bar itself.
#[derive(Clone)]
pub struct Printer {
    current: Arc<Mutex<Option<ProgressBar>>>,
}

impl Printer {
    /// Runs `f` (which writes to stderr) with the bar, if any, suspended.
    pub fn print(&self, f: impl FnOnce()) {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        match current.as_ref() {
            Some(pb) => pb.suspend(f),
            None => f(),
        }
    }
}

/// The task being shown.
struct Task {
    pb: ProgressBar,
    /// Dropped at the end: wakes the thread that would reveal the bar.
    _cancel: mpsc::Sender<()>,
    /// Set at the end, under the lock the revealing thread takes.
    ended: Arc<Mutex<bool>>,
}

impl Bar {
    /// A bar on stderr, hidden when `quiet` or when stderr is not a
    /// terminal.
    pub fn new(quiet: bool) -> Bar {
        Bar::with_enabled(!quiet && std::io::stderr().is_terminal())
    }

    /// A bar that never draws.
    pub fn hidden() -> Bar {
        Bar::with_enabled(false)
    }

    fn with_enabled(enabled: bool) -> Bar {
        Bar {
            enabled,
            task: None,
            current: Arc::new(Mutex::new(None)),
        }
    }

    /// A [`Printer`] that writes around this bar.
    pub fn printer(&self) -> Printer {
        Printer {
            current: self.current.clone(),
        }
    }

    fn style(total: u64) -> ProgressStyle {
        if total == 0 {
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template")
        } else {
            ProgressStyle::with_template(
                "{spinner} {msg} [{bar:30}] {pos}/{len} ({elapsed}, ETA {eta})",
            )
            .expect("a valid template")
            .progress_chars("=> ")
        }
    }
}

impl Progress for Bar {
    fn begin(&mut self, what: &str, total: u64, done: u64) {
        self.end();
        let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        pb.set_style(Bar::style(total));
        // Labels and notes may quote outside text (a program, a file):
        // escaped like every other line pinsight prints.
        pb.set_message(pinsight_sys::text::shown(what).into_owned());
        pb.set_position(done);
        pb.reset_eta();
        let (cancel, cancelled) = mpsc::channel::<()>();
        let ended = Arc::new(Mutex::new(false));
        if self.enabled {
            pb.enable_steady_tick(TICK);
            let (pb, ended) = (pb.clone(), ended.clone());
            std::thread::spawn(move || {
                // A message never comes: the sender is only dropped.
                if cancelled.recv_timeout(SHOW_AFTER) == Err(mpsc::RecvTimeoutError::Timeout) {
                    let ended = ended.lock().unwrap_or_else(|e| e.into_inner());
                    if !*ended {
                        pb.set_draw_target(ProgressDrawTarget::stderr());
                    }
                }
            });
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(pb.clone());
        self.task = Some(Task {
            pb,
            _cancel: cancel,
            ended,
        });
    }

    fn step(&mut self, label: &str, done: u64) {
        if let Some(t) = &self.task {
            if !label.is_empty() {
                t.pb.set_message(pinsight_sys::text::shown(label).into_owned());
            }
            t.pb.set_position(done);
        }
    }

    fn resize(&mut self, total: u64) {
        if let Some(t) = &self.task {
            if t.pb.length() == Some(0) && total > 0 {
                t.pb.set_style(Bar::style(total));
            }
            t.pb.set_length(total);
        }
    }

    fn note(&mut self, line: &str) {
        if !self.enabled {
            return;
        }
        match &self.task {
            Some(t) => {
                t.pb.suspend(|| eprintln!("pinsight: {}", pinsight_sys::text::shown_lines(line)))
            }
            None => eprintln!("pinsight: {}", pinsight_sys::text::shown_lines(line)),
        }
    }

    fn end(&mut self) {
        if let Some(t) = self.task.take() {
            *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
            let mut ended = t.ended.lock().unwrap_or_else(|e| e.into_inner());
            *ended = true;
            t.pb.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_bar_takes_a_whole_task_and_a_second_one() {
        let mut b = Bar::hidden();
        b.begin("first", 0, 0);
        b.resize(4);
        b.step("one", 1);
        b.note("never shown");
        b.end();
        b.begin("second", 3, 2);
        b.step("", 3);
        assert_eq!(b.task.as_ref().map(|t| t.pb.position()), Some(3));
        drop(b);
    }

    #[test]
    fn an_enabled_bar_ends_before_it_is_shown() {
        // Drawn to a hidden target until a second has passed: ending
        // first leaves nothing to reveal.
        let mut b = Bar::with_enabled(true);
        b.begin("short", 2, 0);
        b.step("x", 1);
        b.end();
        assert!(b.task.is_none());
    }
}
