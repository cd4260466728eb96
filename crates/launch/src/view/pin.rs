//! The human table of `pinsight pin`: one row per thread (before, after,
//! result) within 80 columns, long reasons whole below it.

use crate::pin::{Outcome, PinReport, ThreadPin};
use pinsight_cpuset::CpuSet;
use pinsight_sys::text::shown;
use pinsight_term::{fill, Wrap};
use std::fmt::Write;

/// The human table of `pin`, then the long reasons of `failed` below it
/// (whole, wrapped to 80 columns).
pub fn table(report: &PinReport, failed: &[&ThreadPin]) -> String {
    let mut out = String::new();
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

/// Why `pin` failed when threads could not be pinned (`failed`, of the
/// report's threads), naming the kernel's reason when all of them are
/// per-CPU kernel threads.
pub fn failure(report: &PinReport, failed: &[&ThreadPin]) -> String {
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
    format!(
        "{} of {} thread(s) of PID {} {} be pinned: {cause}",
        failed.len(),
        report.threads.len(),
        report.pid,
        if report.dry_run {
            "cannot"
        } else {
            "could not"
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
