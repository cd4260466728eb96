//! What `compare` says on stderr around its runs: the notices before the
//! first run (journal, capabilities, arms not applicable here, how arms
//! are applied), each run's kept output (`--show-output`), the warnings
//! at the end, and why an experiment stopped with how to continue it.
//! Every function returns the lines (each ending in a newline) for the
//! front end to print.

use crate::session::{Finished, Session};
use crate::start::End;
use crate::{Gate, Report, RunLine};
use pinsight_term::progress::{Bar, Printer};
use pinsight_term::wrap80;
use std::fmt::Write;
use std::path::Path;

/// The warnings of the journal just opened: lines it skipped.
pub fn journal_warnings(session: &Session) -> String {
    let path = session.journal_path().display();
    let mut out = String::new();
    for w in session.journal_warnings() {
        let _ = writeln!(out, "pinsight: warning: journal {path}: {w}");
    }
    out
}

/// What an opened compare says before its first run: the journal's
/// warnings, then (unless `quiet`) its [`notices`].
pub fn started(started: &crate::start::Started, quiet: bool) -> String {
    let mut out = journal_warnings(&started.session);
    if !quiet {
        out += &notices(&started.session, started.reports.as_deref());
    }
    out
}

/// What the experiment is about to do, before the first run: the journal,
/// the machine's capabilities, arms that are not applicable here (grouped
/// by reason), how arms are applied when it is not the plain rule, and
/// where the ranks of a compare across ranks write their `reports`.
pub fn notices(session: &Session, reports: Option<&Path>) -> String {
    let header = session.header();
    let mut out = format!("pinsight: journal: {}\n", session.journal_path().display());
    let mut line = |text: String| {
        out.push_str(&wrap80(&text));
        out.push('\n');
    };
    for c in &header.machine.capabilities {
        line(format!("pinsight: {c}"));
    }
    if let Some(vm) = session.virtual_machine() {
        line(format!("pinsight: {vm}"));
    }
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for na in &header.not_applicable {
        match groups.iter_mut().find(|(_, r)| *r == na.reason) {
            Some(g) => g.0.push(&na.what),
            None => groups.push((vec![&na.what], &na.reason)),
        }
    }
    for (what, reason) in groups {
        line(format!(
            "pinsight: {}: not applicable here: {reason}",
            what.join(", ")
        ));
    }
    for (policy, note) in session.arm_notes() {
        line(format!("pinsight: {policy}: {note}"));
    }
    if let Some(dir) = reports {
        let _ = writeln!(out, "pinsight: rank reports: {}/run-N", dir.display());
    }
    out
}

/// The warnings of a finished experiment: a late signal cleanup, a
/// setting not restored.
pub fn finish_warnings(finished: &Finished) -> String {
    let mut out = String::new();
    if finished.cleanup_late {
        out.push_str("pinsight: warning: the signal cleanup did not report back within 5 s\n");
    }
    if let Some(e) = &finished.restore_failed {
        let _ = writeln!(out, "pinsight: warning: {e}");
    }
    out
}

/// What the command line says of an experiment that did not complete:
/// why it stopped (naming where the failed run's output is kept, unless
/// it was `shown` already), then how far it got and the `command` that
/// continues it. Nothing for a complete one; an error is the caller's
/// to say, after this.
pub fn ended(end: &End, report: &Report, journal: &Path, command: &str, shown: bool) -> String {
    let mut out = match end {
        End::Complete => return String::new(),
        End::Stopped { why, kept } => stopped(why, kept.as_deref(), shown),
        End::Interrupted { .. } => {
            "pinsight: interrupted: runs stopped, governors restored, journal intact\n".into()
        }
        End::Error(_) => String::new(),
    };
    let _ = writeln!(
        out,
        "pinsight: {} of {} runs are in {}; continue with:\n  {command}",
        report.runs_done,
        report.runs_planned,
        journal.display(),
    );
    out
}

/// Why the experiment stopped on a failed run, naming where its output
/// is kept (`kept`) unless it was shown already.
fn stopped(why: &str, kept: Option<&Path>, shown: bool) -> String {
    match kept {
        Some(p) if !shown => format!(
            "pinsight: error: stopped: {why} (its output: {})\n",
            p.display()
        ),
        _ => format!("pinsight: error: stopped: {why}\n"),
    }
}

/// Runs `session` with the progress `bar`, printing each run's kept output
/// around it when `show` ([`ShowOutput`]).
pub fn run_shown(
    session: Session,
    bar: &mut Bar,
    show: bool,
) -> Result<Finished, crate::session::SessionError> {
    let printer = bar.printer();
    session.run_gated(bar, &mut ShowOutput { printer, show })
}

/// Prints each run's kept output under a label naming arm and run, around
/// the progress bar, when `show` (`--show-output`); on stderr, so a JSON
/// report on stdout stays parseable.
pub struct ShowOutput {
    pub printer: Printer,
    pub show: bool,
}

impl ShowOutput {
    fn output_of(&mut self, label: &str, text: &str) {
        if self.show {
            self.printer.print(|| {
                eprintln!("── pinsight: output of {label} ──");
                eprint!("{text}");
                if !text.is_empty() && !text.ends_with('\n') {
                    eprintln!();
                }
            });
        }
    }
}

impl Gate for ShowOutput {
    fn output(&mut self, label: &str, _line: &RunLine, text: &str) {
        self.output_of(label, text);
    }

    fn prepare_output(&mut self, label: &str, text: &str) {
        self.output_of(label, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_run_names_its_output_unless_it_was_shown() {
        let kept = Path::new("j.out/arm-os-run-3.txt");
        assert_eq!(
            stopped("exit 1", Some(kept), false),
            "pinsight: error: stopped: exit 1 (its output: j.out/arm-os-run-3.txt)\n"
        );
        assert_eq!(
            stopped("exit 1", Some(kept), true),
            "pinsight: error: stopped: exit 1\n"
        );
        assert_eq!(
            stopped("exit 1", None, false),
            "pinsight: error: stopped: exit 1\n"
        );
    }
}
