//! Markdown export (GitHub-flavoured tables), for issues and READMEs.

use super::*;

fn esc(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Renders the report as Markdown.
pub fn render(r: &Report, word: Word) -> String {
    let h = &r.header;
    let mut out = String::new();
    out.push_str(&format!(
        "## pinsight compare: `{}`\n\n",
        esc(&h.command.join(" "))
    ));
    out.push_str(&format!("**Verdict: {}**\n\n", esc(&r.verdict.headline)));
    for e in &r.verdict.evidence {
        out.push_str(&format!("- {}\n", esc(e)));
    }
    for c in &r.verdict.caveats {
        out.push_str(&format!("- ⚠ {}\n", esc(&c.worded(word))));
    }
    out.push_str(&format!(
        "\n{}; {}. Machine: {} ({} usable CPUs: {}).\n\n",
        design_line(r),
        status_line(r, word),
        h.machine.model_name.as_deref().unwrap_or("unknown CPU"),
        h.machine.usable_cpus.len(),
        h.machine.usable_cpus
    ));
    let base = r.baseline.clone().unwrap_or_default();
    out.push_str(&format!(
        "| Arm | Placement | Threads | Exports | Runs | Time (mean ± σ) | 95% CI | Range (min … max) | vs {base} | Test |\n"
    ));
    out.push_str("|:---|:---|---:|:---|---:|---:|:---|:---|:---|:---|\n");
    for a in &r.arms {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            esc(&a.label),
            esc(&a.placement),
            a.threads,
            a.env
                .iter()
                .map(|(k, v)| format!("`{}={}`", esc(k), esc(v)))
                .collect::<Vec<_>>()
                .join(" "),
            a.measured,
            time_cell(a),
            esc(&ci_cell(a)),
            range_cell(a),
            esc(&versus_cell(a, r)),
            esc(&p_cell(a))
        ));
    }
    for na in &r.not_applicable {
        out.push_str(&format!(
            "| `{}` | not applicable here: {} | | | | | | | | |\n",
            esc(&na.what),
            esc(&na.reason)
        ));
    }
    if let Some(note) = ci_methods_note(r) {
        out.push_str(&format!("\n{}\n", esc(&note)));
    }
    let keys = shown_keys(r);
    if !keys.is_empty() {
        out.push_str("\n| Metric (mean ± σ) |");
        for a in &r.arms {
            out.push_str(&format!(" `{}` |", esc(&a.label)));
        }
        out.push_str("\n|:---|");
        out.push_str(&"---:|".repeat(r.arms.len()));
        out.push('\n');
        for k in &keys {
            let Some(m0) = r.arms[0].metric(k) else {
                continue;
            };
            out.push_str(&format!("| {} |", esc(&m0.def.label)));
            for a in &r.arms {
                out.push_str(&format!(
                    " {} |",
                    esc(&a.metric(k).map(|m| show_mean(m, true)).unwrap_or_default())
                ));
            }
            out.push('\n');
        }
    }
    let groups = unavailable_groups(r);
    if !groups.is_empty() {
        out.push('\n');
        for (labels, reason) in groups {
            out.push_str(&format!(
                "- {}: unavailable ({})\n",
                esc(&labels),
                esc(&reason)
            ));
        }
    }
    out
}
