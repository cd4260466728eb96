//! The self-contained HTML page: no external script, style or font, so it
//! can be mailed or attached to a bug report as one file.

use crate::{esc, kind_colour, topology_svg, ReportData};
use pinsight_latency::render::chart::{svg as heatmap_svg, ChartOptions, KindBand};
use std::fmt::Write;

fn mhz(v: Option<u32>) -> String {
    v.map(|m| format!("{:.2} GHz", m as f64 / 1000.0)).unwrap_or_else(|| "unknown".into())
}

/// Renders the report. `heatmap` options come from the latency crate.
pub fn html(r: &ReportData) -> String {
    let t = &r.topology;
    let mut s = String::new();
    let title = format!("pinsight report — {}", t.model_name.clone().unwrap_or_else(|| "unknown CPU".into()));
    write!(
        s,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222;padding:0 1em}}
h1{{font-size:1.5em}} h2{{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}}
table{{border-collapse:collapse;margin:.5em 0}} td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:right}}
th{{background:#f0ede6}} td.l,th.l{{text-align:left}} .sugg li{{margin:.4em 0}} .muted{{color:#777}}
.swatch{{display:inline-block;width:.9em;height:.9em;vertical-align:middle;margin-right:.3em}}</style></head><body>
<h1>{}</h1>
<p class="muted">{}{} CPUs online, {} usable · pinsight {} · budget {:.0} s, used {:.1} s</p>
"#,
        esc(&title),
        esc(&title),
        r.hostname.as_deref().map(|h| format!("host {} · ", esc(h))).unwrap_or_default(),
        t.online().len(),
        t.usable().len(),
        esc(&r.pinsight_version),
        r.budget_s,
        r.elapsed_s
    )
    .ok();
    s.push_str("<h2>What to do</h2><ul class=\"sugg\">");
    for line in &r.suggestions {
        write!(s, "<li>{}</li>", esc(line)).ok();
    }
    s.push_str("</ul>");
    if !r.skipped.is_empty() {
        s.push_str("<p><b>Not measured:</b></p><ul>");
        for line in &r.skipped {
            write!(s, "<li>{}</li>", esc(line)).ok();
        }
        s.push_str("</ul>");
    }

    s.push_str("<h2>Machine</h2>");
    s.push_str(&topology_svg(t));
    s.push_str("<table><tr><th>rank</th><th class=l>kind</th><th class=l>CPUs</th><th>capacity</th><th>max</th><th>base</th><th class=l>identity from</th></tr>");
    for k in &t.kinds {
        write!(
            s,
            "<tr><td>{}</td><td class=l><span class=swatch style=\"background:{}\"></span>{} {}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=l>{}</td></tr>",
            k.rank,
            kind_colour(k.rank, t.kinds.len()),
            esc(&k.mark),
            esc(&k.name),
            k.cpus,
            k.capacity.map(|c| format!("{c:.2}")).unwrap_or_else(|| "unknown".into()),
            mhz(k.max_mhz),
            mhz(k.base_mhz),
            serde_json::to_value(k.source).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        )
        .ok();
    }
    s.push_str("</table>");

    s.push_str("<h2>Core-to-core latency</h2>");
    match &r.latency {
        Some(m) => {
            let opts = ChartOptions {
                title: "core-to-core latency (ns, one way)".into(),
                kinds: if t.kinds.len() > 1 {
                    t.kinds.iter().map(|k| KindBand { name: k.name.clone(), cpus: k.cpus.clone() }).collect()
                } else {
                    Vec::new()
                },
            };
            match heatmap_svg(m, &opts) {
                Ok(svg) => s.push_str(&svg),
                Err(e) => {
                    write!(s, "<p>Heatmap unavailable: {}</p>", esc(&e)).ok();
                }
            }
            if let Some(tree) = &r.domains {
                write!(s, "<pre>{}</pre>", esc(&tree.describe())).ok();
            }
        }
        None => s.push_str("<p>Not measured (see above).</p>"),
    }

    s.push_str("<h2>Speed per CPU</h2>");
    match &r.speed {
        Some(sp) => {
            s.push_str("<table><tr><th>CPU</th><th class=l>kind</th>");
            for k in &sp.kernels {
                write!(s, "<th>{} ({})</th>", k.name(), k.unit()).ok();
            }
            s.push_str("<th>relative</th></tr>");
            for c in &sp.cpus {
                let kind = c.kind.and_then(|k| t.kinds.get(k)).map(|k| k.mark.clone()).unwrap_or_else(|| "-".into());
                write!(s, "<tr><td>{}</td><td class=l>{}</td>", c.cpu, esc(&kind)).ok();
                for res in &c.results {
                    write!(s, "<td>{:.1}</td>", res.median).ok();
                }
                write!(s, "<td>{:.2}</td></tr>", c.relative).ok();
            }
            s.push_str("</table>");
            if !sp.speedups.is_empty() {
                s.push_str("<table><tr><th class=l>faster / slower kind</th><th>kernel</th><th>measured</th><th>by max frequency</th><th>by capacity</th></tr>");
                for p in &sp.speedups {
                    let f = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "unknown".into());
                    write!(
                        s,
                        "<tr><td class=l>{} / {}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
                        esc(&t.kinds[p.fast_kind].name),
                        esc(&t.kinds[p.slow_kind].name),
                        p.kernel.name(),
                        p.measured,
                        f(p.predicted_by_frequency),
                        f(p.predicted_by_capacity)
                    )
                    .ok();
                }
                s.push_str("</table>");
            }
        }
        None => s.push_str("<p>Not measured (see above).</p>"),
    }
    if !t.warnings.is_empty() {
        s.push_str("<h2>Discovery warnings</h2><ul>");
        for w in &t.warnings {
            write!(s, "<li>{}</li>", esc(w)).ok();
        }
        s.push_str("</ul>");
    }
    s.push_str("</body></html>\n");
    s
}
