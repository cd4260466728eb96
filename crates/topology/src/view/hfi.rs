//! `pinsight topo --watch`: one line (or one JSON object) per HFI
//! capability change.
//!
//! A text line reads `cpu 3  perf 1020 → 512  eff 400 → 380  (kind P-core)`;
//! the first report of a CPU has no arrow (nothing to compare with), and a
//! performance of 0 adds `do not schedule here`. Lines fit 80 columns: a
//! kind name is cut (with `…`) when it would not.

use crate::hfi::CapabilityChange;

/// The line a watch of capacity changes starts with: what it listens to
/// (the thermal netlink family's id) and how it stops.
pub fn watching(family_id: u16) -> String {
    pinsight_term::wrap80(&format!(
        "pinsight: watching HFI capability changes (netlink family \"thermal\", id {family_id}, \
         group \"event\"; listening turns HFI on where the CPU has it). Ctrl-C stops."
    ))
}
use unicode_width::UnicodeWidthStr;

/// Widest line the renderer produces.
pub const WIDTH: usize = 80;

fn value(now: u32, before: Option<u32>) -> String {
    match before {
        Some(b) if b != now => format!("{b} → {now}"),
        Some(_) => format!("{now} (same)"),
        None => now.to_string(),
    }
}

/// The text line for `change`, given what it replaced and the CPU's kind.
pub fn line(
    change: &CapabilityChange,
    previous: Option<&CapabilityChange>,
    kind: Option<&str>,
) -> String {
    let mut s = format!(
        "cpu {}  perf {}  eff {}",
        change.cpu,
        value(change.performance, previous.map(|p| p.performance)),
        value(change.efficiency, previous.map(|p| p.efficiency)),
    );
    if !change.schedulable() {
        s.push_str("  do not schedule here");
    }
    if let Some(k) = kind {
        // "  (kind " + name + ")": cut the name to what is left of 80.
        let room = WIDTH.saturating_sub(s.width() + "  (kind )".len());
        s.push_str("  (kind ");
        s.push_str(&fit(k, room));
        s.push(')');
    }
    s
}

/// `text` cut to at most `width` columns, ending in `…` when cut.
fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        if out.width() + c.to_string().width() + 1 > width {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// The JSON Lines object for `change` (one line, no trailing newline):
/// `cpu`, `performance`, `efficiency` (0–1020), `schedulable`,
/// `previous` (`{performance, efficiency}` or `null` on first report) and
/// `kind` (name or `null`).
pub fn json(
    change: &CapabilityChange,
    previous: Option<&CapabilityChange>,
    kind: Option<&str>,
) -> String {
    serde_json::json!({
        "cpu": change.cpu,
        "performance": change.performance,
        "efficiency": change.efficiency,
        "schedulable": change.schedulable(),
        "previous": previous.map(|p| serde_json::json!({
            "performance": p.performance,
            "efficiency": p.efficiency,
        })),
        "kind": kind,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(cpu: u32, performance: u32, efficiency: u32) -> CapabilityChange {
        CapabilityChange {
            cpu,
            performance,
            efficiency,
        }
    }

    #[test]
    fn a_change_shows_before_and_after() {
        assert_eq!(
            line(&c(3, 512, 380), Some(&c(3, 1020, 400)), Some("P-core")),
            "cpu 3  perf 1020 → 512  eff 400 → 380  (kind P-core)"
        );
    }

    #[test]
    fn a_first_report_and_an_unchanged_value() {
        assert_eq!(
            line(&c(12, 256, 1020), None, None),
            "cpu 12  perf 256  eff 1020"
        );
        assert_eq!(
            line(&c(12, 256, 900), Some(&c(12, 256, 1020)), Some("E-core")),
            "cpu 12  perf 256 (same)  eff 1020 → 900  (kind E-core)"
        );
    }

    #[test]
    fn performance_zero_says_do_not_schedule() {
        let l = line(&c(5, 0, 0), Some(&c(5, 4, 8)), Some("E-core"));
        assert_eq!(
            l,
            "cpu 5  perf 4 → 0  eff 8 → 0  do not schedule here  (kind E-core)"
        );
    }

    #[test]
    fn lines_fit_80_columns_even_with_a_long_kind_name() {
        let long = "Neoverse-V2 performance cluster with a needlessly long name";
        let l = line(&c(4095, 0, 1020), Some(&c(4095, 1020, 4)), Some(long));
        assert!(l.width() <= WIDTH, "{} columns: {l}", l.width());
        assert!(l.ends_with("…)"), "{l}");
    }

    #[test]
    fn json_carries_the_same_facts() {
        let v: serde_json::Value =
            serde_json::from_str(&json(&c(3, 0, 380), Some(&c(3, 1020, 400)), Some("P-core")))
                .unwrap();
        assert_eq!(v["cpu"], 3);
        assert_eq!(v["performance"], 0);
        assert_eq!(v["efficiency"], 380);
        assert_eq!(v["schedulable"], false);
        assert_eq!(v["previous"]["performance"], 1020);
        assert_eq!(v["previous"]["efficiency"], 400);
        assert_eq!(v["kind"], "P-core");
        let first: serde_json::Value =
            serde_json::from_str(&json(&c(1, 8, 8), None, None)).unwrap();
        assert!(first["previous"].is_null() && first["kind"].is_null());
        assert!(!json(&c(1, 8, 8), None, None).contains('\n'));
    }
}
