//! The human table of `pinsight pin`: one row per thread (before, after,
//! result) within 80 columns, long reasons whole below it.

use crate::pin::{Outcome, PinReport};
use pinsight_cpuset::CpuSet;
use pinsight_sys::text::shown;
use pinsight_term::{fill, Wrap};
use std::fmt::Write;

/// The human table of `pin`, then the long reasons of the threads that
/// failed below it (whole, wrapped to 80 columns).
pub fn table(report: &PinReport) -> String {
    let mut out = String::new();
    let failed = report.failed();
    let set = |s: &Option<CpuSet>| s.as_ref().map_or("-".into(), |c| c.to_list_string());
    let _ = writeln!(
        out,
        "pinsight pin: PID {}, policy {}{}",
        report.pid,
        report.policy,
        if report.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "{:>8}  {:<16} {:<10} {:<10} {:<10} result",
        "TID", "NAME", "ROLE", "BEFORE", "AFTER"
    );
    for t in &report.threads {
        let result = match (&t.outcome, &t.error) {
            (Outcome::Changed, _) => "changed".to_string(),
            (Outcome::Unchanged, _) => "unchanged".into(),
            (Outcome::WouldChange, _) => "would change".into(),
            (Outcome::LeftAlone, _) => "left alone (os)".into(),
            (Outcome::Exited, _) => "exited".into(),
            (Outcome::Failed, e) => format!("FAILED: {}", short_error(e)),
            (Outcome::WouldFail, e) => format!("would fail: {}", short_error(e)),
        };
        let _ = writeln!(
            out,
            "{:>8}  {:<16} {:<10} {:<10} {:<10} {result}",
            t.tid,
            shown(&t.name),
            t.role.to_string(),
            set(&t.before),
            set(&t.after)
        );
    }
    // Whole reasons below the table, which they would widen past 80
    // columns.
    for t in failed
        .iter()
        .filter(|t| t.error.as_deref().is_some_and(is_long))
    {
        let text = format!(
            "TID {}: {}",
            t.tid,
            shown(t.error.as_deref().unwrap_or("?"))
        );
        out.push_str(&fill(&text, REASON));
    }
    out
}

/// The widest result that keeps a table row within 80 columns.
const RESULT_WIDTH: usize = 20;

/// Whether a failure is said whole only below the table.
fn is_long(e: &str) -> bool {
    "would fail: ".len() + e.chars().count() > RESULT_WIDTH
}

/// A failure as it fits the table's last column: whole if short, else
/// its first part (`EINVAL`), the whole text following the table.
pub fn short_error(e: &Option<String>) -> String {
    match e.as_deref() {
        None => "?".into(),
        Some(e) if !is_long(e) => e.to_string(),
        Some(e) => match e.split_once(':') {
            Some((head, _)) if !is_long(head) => head.to_string(),
            _ => "see below".into(),
        },
    }
}

/// How a long reason is printed below the table: 80 columns, indented by
/// two, continuation lines by four.
pub const REASON: Wrap<'static> = Wrap::new(80).indent("  ", "    ");

/// The notes of `pin` for stderr: the report's (places reused, threads
/// that exited), then the plan's, one `pinsight: note:` line each.
pub fn notes(report: &PinReport, plan: &pinsight_plan::Plan) -> String {
    report
        .notes
        .iter()
        .chain(&plan.notes)
        .map(|n| format!("pinsight: note: {n}\n"))
        .collect()
}

/// Why `pin` failed, if it did: the process exited meanwhile (the report
/// is partial), or threads could not be pinned, naming the kernel's
/// reason when all of them are per-CPU kernel threads.
pub fn failure(report: &PinReport) -> Option<String> {
    if report.process_exited {
        return Some(format!(
            "PID {} exited while being pinned; the report above is partial",
            report.pid
        ));
    }
    let failed = report.failed();
    if failed.is_empty() {
        return None;
    }
    let fixed = failed
        .iter()
        .filter(|t| {
            t.error
                .as_deref()
                .is_some_and(|e| e.contains("PF_NO_SETAFFINITY"))
        })
        .count();
    let would = if report.dry_run {
        "would refuse"
    } else {
        "refused"
    };
    let cause = if fixed == failed.len() {
        format!(
            "the kernel {would} (EINVAL): per-CPU kernel thread{} (PF_NO_SETAFFINITY) cannot be moved",
            if fixed == 1 { "" } else { "s" }
        )
    } else {
        "see above".to_string()
    };
    Some(format!(
        "{} of {} thread(s) of PID {} {} be pinned: {cause}",
        failed.len(),
        report.threads.len(),
        report.pid,
        if report.dry_run {
            "cannot"
        } else {
            "could not"
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pin::{Role, ThreadPin};

    fn thread(tid: i32, outcome: Outcome, error: Option<&str>) -> ThreadPin {
        ThreadPin {
            tid,
            name: format!("t{tid}"),
            role: Role::Thread(0),
            before: None,
            target: None,
            after: None,
            outcome,
            error: error.map(str::to_string),
        }
    }

    fn report(threads: Vec<ThreadPin>, dry_run: bool, exited: bool) -> PinReport {
        PinReport {
            pid: 42,
            policy: "compact".into(),
            dry_run,
            threads,
            process_exited: exited,
            notes: vec!["places were reused".into()],
        }
    }

    #[test]
    fn failure_says_why_pin_failed_or_nothing() {
        let fixed = crate::pin::fixed_affinity_reason("ksoftirqd/1");
        let ok = report(vec![thread(1, Outcome::Changed, None)], false, false);
        assert_eq!(failure(&ok), None);
        let exited = report(vec![thread(1, Outcome::Changed, None)], false, true);
        assert_eq!(
            failure(&exited).unwrap(),
            "PID 42 exited while being pinned; the report above is partial"
        );
        let kernel = report(
            vec![
                thread(1, Outcome::Changed, None),
                thread(2, Outcome::WouldFail, Some(&fixed)),
            ],
            true,
            false,
        );
        assert_eq!(kernel.failed().len(), 1);
        assert_eq!(
            failure(&kernel).unwrap(),
            "1 of 2 thread(s) of PID 42 cannot be pinned: the kernel would refuse (EINVAL): per-CPU kernel thread (PF_NO_SETAFFINITY) cannot be moved"
        );
        let other = report(
            vec![thread(3, Outcome::Failed, Some("EPERM"))],
            false,
            false,
        );
        assert!(failure(&other)
            .unwrap()
            .ends_with("could not be pinned: see above"));
        assert!(table(&kernel).contains("would fail: EINVAL"));
    }

    #[test]
    fn notes_are_the_report_s_then_the_plan_s() {
        let plan = pinsight_plan::Plan {
            notes: vec!["oversubscribed".into()],
            ..pinsight_plan::Plan::pinned_to("compact".into(), Vec::new(), Vec::new())
        };
        assert_eq!(
            notes(&report(Vec::new(), false, false), &plan),
            "pinsight: note: places were reused\npinsight: note: oversubscribed\n"
        );
    }

    #[test]
    fn long_reasons_wrap_and_shorten() {
        let reason = crate::pin::fixed_affinity_reason("ksoftirqd/1");
        assert_eq!(short_error(&Some(reason.clone())), "EINVAL");
        assert_eq!(short_error(&Some("ENOSYS".into())), "ENOSYS");
        assert_eq!(short_error(&Some("permission denied".into())), "see below");
        let text = format!("TID 22: {reason}");
        let lines = pinsight_term::wrap(&text, REASON);
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:?}");
        assert!(lines[0].starts_with("  TID 22:"), "{lines:?}");
        assert!(
            lines[1..].iter().all(|l| l.starts_with("    ")),
            "{lines:?}"
        );
        assert_eq!(
            lines.join(" ").split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
    }
}
