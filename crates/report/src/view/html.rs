//! The self-contained HTML page: no external script, style, font or image,
//! so it can be mailed or attached to a bug report as one file.

use super::{esc, kind_colour, topology_svg};
use crate::ReportData;
use pinsight_latency::view::chart::{svg as heatmap_svg, ChartOptions, KindBand};
use pinsight_model::{Source, Topology};
use pinsight_speed::view::{
    any_disturbed_included, chunk_counts, kind_name, predicted, slots_text,
};
use pinsight_speed::SpeedReport;
use std::fmt::Write;

/// The page's style. On a narrow screen (a phone is 390 px wide) nothing
/// may reach past the edge: a long word (a path) breaks, and a wide table
/// scrolls sideways inside its own box ([`scroll_box`]), as `pre` does,
/// its cells kept on one line (a row reads across, `P-core` unbroken).
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;color:#222;padding:0 1em;line-height:1.4;overflow-wrap:break-word}
h1{font-size:1.5em;margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.05em;margin:1.2em 0 .3em}
.scroll{overflow-x:auto;margin:.5em 0}
table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right} td{white-space:nowrap}
th{background:#f0ede6} td.l,th.l{text-align:left} .sugg li{margin:.4em 0} .muted{color:#666} .small{font-size:.9em}
.skip li{color:#8a4b00} pre{background:#f7f6f2;padding:.6em;overflow-x:auto;font-size:.85em}
.swatch{display:inline-block;width:.9em;height:.9em;vertical-align:middle;margin-right:.3em}
svg{max-width:100%;height:auto}";

fn mhz(v: Option<u32>) -> String {
    v.map(|m| format!("{:.2} GHz", m as f64 / 1000.0))
        .unwrap_or_else(|| "unknown".into())
}

/// A table in a box of its own that scrolls sideways when the table is
/// wider than the page, so that the page itself never does.
fn scroll_box(table: &str) -> String {
    format!("<div class=\"scroll\">{table}</div>\n")
}

/// `2025-11-23 04:10 UTC` from Unix seconds: the calendar arithmetic is
/// `snapshot::rfc3339_utc`'s (one implementation in the project), shown
/// to the minute.
pub fn utc_date(unix: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix);
    let iso = pinsight_topology::snapshot::rfc3339_utc(t); // YYYY-MM-DDTHH:MM:SSZ
    format!("{} {} UTC", &iso[..10], &iso[11..16])
}

fn source_text(t: &Topology) -> String {
    match &t.source {
        Source::Live => "this machine".to_string(),
        Source::Fsroot(p) => format!("recorded machine ({p})"),
        Source::HwlocXml(p) => format!("hwloc XML ({p})"),
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// One line saying what the machine is made of.
pub fn machine_line(t: &Topology) -> String {
    let online = t.online();
    let nodes = t
        .numa_nodes
        .iter()
        .filter(|n| n.cpus.intersects(&online))
        .count();
    let mut parts = vec![
        format!(
            "{} online ({} usable)",
            plural(t.online().len(), "CPU"),
            t.usable().len()
        ),
        plural(t.cores.len(), "core"),
        plural(t.packages.len(), "package"),
    ];
    if nodes > 0 {
        parts.push(plural(nodes, "NUMA node"));
    }
    parts.push(plural(t.kinds.len(), "core kind"));
    parts.join(", ")
}

/// Renders the report.
pub fn html(r: &ReportData) -> String {
    let t = &r.topology;
    let mut s = page_head(r);
    s.push_str(&list(
        "<h2>What to do</h2>\n<ul class=\"sugg\">",
        &r.suggestions,
    ));
    if !r.skipped.is_empty() {
        s.push_str(&list(
            "<p><b>Not measured:</b></p><ul class=\"skip\">",
            &r.skipped,
        ));
    }

    if !r.conditions.is_empty() {
        s.push_str(&list(
            "<p><b>Measured under:</b></p><ul class=\"skip\">",
            &r.conditions,
        ));
    }

    s.push_str(&machine_section(t));
    s.push_str(&latency_section(r));

    s.push_str("<h2>Speed per CPU</h2>\n");
    match &r.speed {
        Some(sp) => speed_section(&mut s, t, sp),
        None => s.push_str("<p>Not measured (see above).</p>\n"),
    }
    if !t.warnings.is_empty() {
        s.push_str(&list("<h2>Discovery warnings</h2><ul>", &t.warnings));
    }
    s.push_str("<p class=\"muted small\">Made by <code>pinsight report</code>; every figure is also in the JSON file written beside this page.</p>\n</body></html>\n");
    s
}

/// The document's head, the title and the line of facts under it (host,
/// source, date, version, time taken).
fn page_head(r: &ReportData) -> String {
    let t = &r.topology;
    let title = format!(
        "pinsight report — {}",
        t.model_name.clone().unwrap_or_else(|| "unknown CPU".into())
    );
    let mut meta = Vec::new();
    if let Some(h) = &r.hostname {
        meta.push(format!("host {}", esc(h)));
    }
    meta.push(esc(&source_text(t)));
    meta.push(utc_date(r.generated_unix));
    meta.push(format!("pinsight {}", esc(&r.pinsight_version)));
    meta.push(format!(
        "took {:.1} s of a {} budget",
        r.elapsed_s,
        crate::budget::secs(std::time::Duration::from_secs_f64(r.budget_s))
    ));
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p class=\"muted\">{}</p>\n",
        esc(&title),
        esc(&title),
        meta.join(" · ")
    )
}

/// `open` (the list's heading and `<ul>`), an item per line, `</ul>`.
fn list(open: &str, lines: &[String]) -> String {
    let mut s = open.to_string();
    for line in lines {
        write!(s, "<li>{}</li>", esc(line)).ok();
    }
    s.push_str("</ul>\n");
    s
}

/// The machine: its one-line summary, its picture and its core kinds.
fn machine_section(t: &Topology) -> String {
    let mut s = format!("<h2>Machine</h2>\n<p>{}.</p>\n", esc(&machine_line(t)));
    s.push_str(&topology_svg(t));
    s.push('\n');
    let mut table = String::from("<table><tr><th>rank</th><th class=l>kind</th><th class=l>CPUs</th><th>capacity</th><th>max</th><th>base</th><th class=l>identified by</th></tr>");
    for k in &t.kinds {
        write!(
            table,
            "<tr><td>{}</td><td class=l><span class=swatch style=\"background:{}\"></span>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=l>{}</td></tr>",
            k.rank,
            kind_colour(k.rank, t.kinds.len()),
            esc(&k.name),
            k.cpus,
            k.capacity.map(|c| format!("{c:.2}")).unwrap_or_else(|| "unknown".into()),
            mhz(k.max_mhz),
            mhz(k.base_mhz),
            k.source.as_str()
        )
        .ok();
    }
    table.push_str("</table>");
    s.push_str(&scroll_box(&table));
    s
}

/// The core-to-core latency: where the matrix comes from, its heatmap and
/// the latency domains.
fn latency_section(r: &ReportData) -> String {
    let t = &r.topology;
    let mut s = String::from("<h2>Core-to-core latency</h2>\n");
    let Some(m) = &r.latency else {
        s.push_str("<p>Not measured (see above).</p>\n");
        return s;
    };
    let from = match m.source.as_deref() {
        Some("measured") | None => "measured here".to_string(),
        Some(file) => format!("loaded from {file}"),
    };
    writeln!(
        s,
        "<p class=\"muted small\">One-way latency of a cache line bounced between two CPUs, median per pair, {}; {}.</p>",
        esc(&from),
        plural(m.len(), "CPU")
    )
    .ok();
    let opts = ChartOptions {
        title: "core-to-core latency (ns, one way)".into(),
        kinds: if t.kinds.len() > 1 {
            t.kinds
                .iter()
                .map(|k| KindBand {
                    name: k.name.clone(),
                    cpus: k.cpus.clone(),
                })
                .collect()
        } else {
            Vec::new()
        },
    };
    match heatmap_svg(m, &opts) {
        Ok(svg) => s.push_str(&svg),
        Err(e) => {
            write!(s, "<p>Heatmap unavailable: {}</p>", esc(&e.to_string())).ok();
        }
    }
    if let Some(tree) = &r.domains {
        write!(
            s,
            "\n<h3>Latency domains</h3><pre>{}</pre>\n",
            esc(tree.describe().trim_end())
        )
        .ok();
    }
    s
}

/// The speed measurement: how it was taken, a row per CPU, the medians
/// per core kind and the speedup factors.
fn speed_section(s: &mut String, t: &Topology, sp: &SpeedReport) {
    let (chunks, disturbed) = chunk_counts(sp);
    writeln!(
        s,
        "<p class=\"muted small\">Single-thread throughput pinned to each CPU: median over timed chunks with its 95% interval; \
         {:.0} ms per CPU in {} interleaved pass{} over the CPUs ({}); {} of {} chunks descheduled by other load were left out; \
         pointer-chase buffer {} MiB. Relative: geometric mean over the kernels, fastest CPU = 1.</p>",
        sp.budget_per_cpu_s * 1e3,
        sp.passes,
        if sp.passes == 1 { "" } else { "es" },
        slots_text(&sp.slots),
        disturbed,
        chunks,
        sp.mem_bytes >> 20
    )
    .ok();
    s.push_str(&cpu_speed_table(t, sp));
    if any_disturbed_included(sp) {
        s.push_str("<p class=small>! too few undisturbed chunks: the figure includes descheduled ones and is a lower bound.</p>\n");
    }
    if sp.kinds.len() > 1 {
        s.push_str(&kind_speed_table(sp));
    }
    if !sp.speedups.is_empty() {
        s.push_str(&speedup_table(t, sp));
    }
}

/// A column head per kernel, `name (unit)`, each followed by `extra`.
fn kernel_heads(sp: &SpeedReport, extra: &str) -> String {
    let mut s = String::new();
    for k in &sp.kernels {
        write!(s, "<th>{} ({})</th>{extra}", k.name(), k.unit()).ok();
    }
    s
}

/// A row per CPU: its kind, each kernel's median and CI, its relative
/// speed.
fn cpu_speed_table(t: &Topology, sp: &SpeedReport) -> String {
    let mut s = String::from("<table><tr><th>CPU</th><th class=l>kind</th>");
    s.push_str(&kernel_heads(sp, "<th>±</th>"));
    s.push_str("<th>relative</th></tr>");
    for c in &sp.cpus {
        write!(
            s,
            "<tr><td>{}</td><td class=l>{}</td>",
            c.cpu,
            esc(&kind_name(t, c))
        )
        .ok();
        for res in &c.results {
            if res.median.is_finite() {
                write!(
                    s,
                    "<td>{:.1}{}</td><td class=muted>{:.1}%</td>",
                    res.median,
                    if res.disturbed_included { " !" } else { "" },
                    res.rel_ci_half() * 100.0
                )
                .ok();
            } else {
                s.push_str("<td>unavailable</td><td></td>");
            }
        }
        if c.relative.is_finite() {
            write!(s, "<td>{:.2}</td></tr>", c.relative).ok();
        } else {
            s.push_str("<td>-</td></tr>");
        }
    }
    s.push_str("</table>");
    scroll_box(&s)
}

/// A row per core kind: the median of its CPUs for each kernel.
fn kind_speed_table(sp: &SpeedReport) -> String {
    let mut s = String::from("<table><tr><th class=l>kind</th><th>CPUs measured</th>");
    s.push_str(&kernel_heads(sp, ""));
    s.push_str("</tr>");
    for k in &sp.kinds {
        write!(
            s,
            "<tr><td class=l>{}</td><td>{}</td>",
            esc(&k.name),
            k.cpus_measured
        )
        .ok();
        for kern in &sp.kernels {
            match k.median.iter().find(|(kk, _)| kk == kern) {
                Some((_, v)) => write!(s, "<td>{v:.1}</td>"),
                None => write!(s, "<td>-</td>"),
            }
            .ok();
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    format!(
        "<h3>Per core kind (median of its CPUs)</h3>{}",
        scroll_box(&s)
    )
}

/// The speedup factor of each pair of kinds and kernel: measured and
/// predicted.
fn speedup_table(t: &Topology, sp: &SpeedReport) -> String {
    let mut s = String::from("<table><tr><th class=l>faster / slower kind</th><th class=l>kernel</th><th>measured</th><th>predicted by max frequency</th><th>by capacity</th></tr>");
    for p in &sp.speedups {
        write!(
            s,
            "<tr><td class=l>{} / {}</td><td class=l>{}</td><td><b>{:.2}</b></td><td>{}</td><td>{}</td></tr>",
            esc(&t.kinds[p.fast_kind].name),
            esc(&t.kinds[p.slow_kind].name),
            p.kernel.name(),
            p.measured,
            predicted(p.predicted_by_frequency),
            predicted(p.predicted_by_capacity)
        )
        .ok();
    }
    s.push_str("</table>");
    format!("<h3>Speedup factor</h3>{}", scroll_box(&s))
}

#[cfg(test)]
mod tests {
    use super::{html, utc_date, STYLE};
    use pinsight_speed::run::{CpuSpeed, KernelResult};
    use pinsight_speed::{Kernel, SpeedReport};
    use std::time::{Duration, Instant};

    /// The recorded i7-1370P laptop's speed report: every kernel on every
    /// CPU, P-cores 1.5 times the E-cores.
    fn laptop_speed(topo: &pinsight_model::Topology) -> SpeedReport {
        let fast = topo.kinds.len() - 1;
        let mut cpus: Vec<CpuSpeed> = topo
            .usable()
            .iter()
            .map(|cpu| {
                let kind = topo.cpu(cpu).unwrap().kind;
                let m = if kind == Some(fast) { 300.0 } else { 200.0 };
                let results = Kernel::ALL
                    .iter()
                    .map(|&kernel| KernelResult {
                        kernel,
                        median: m,
                        ci_low: m * 0.99,
                        ci_high: m * 1.01,
                        samples: 100,
                        chunks: 100,
                        disturbed: 0,
                        disturbed_included: false,
                        relative: f64::NAN,
                    })
                    .collect();
                CpuSpeed {
                    cpu,
                    kind,
                    results,
                    relative: f64::NAN,
                    misplaced_chunks: 0,
                }
            })
            .collect();
        pinsight_speed::run::fill_relative(&mut cpus);
        let (kinds, speedups) = pinsight_speed::speedups(topo, &cpus, &Kernel::ALL);
        SpeedReport {
            kernels: Kernel::ALL.to_vec(),
            budget_per_cpu_s: 1.0,
            passes: 6,
            slots: Vec::new(),
            elapsed_s: 20.0,
            mem_bytes: 8 << 20,
            time_share: false,
            cpus,
            kinds,
            speedups,
            disturbance: None,
            smt_yield: None,
        }
    }

    /// Every table of the page (the core kinds, the speed per CPU and per
    /// kind, the speedup factors) sits in a box of its own that scrolls
    /// sideways: on a phone a wide table scrolls there, not the page
    /// (`tests/report_browser.rs` checks it in Chromium).
    #[test]
    fn every_table_scrolls_in_a_box_of_its_own() {
        let root = pinsight_testkit::fixtures::hwloc("20em64t-hybrid-1p6c2t+2ca4co1t");
        let topo = pinsight_topology::discover(&pinsight_sys::FsRoot::at(&root).unwrap());
        let speed = laptop_speed(&topo);
        let data = crate::session::assemble(
            topo,
            Some(speed),
            None,
            Vec::new(),
            "FILE",
            None,
            Duration::from_secs(60),
            Instant::now(),
        );
        let page = html(&data);
        let tables = page.matches("<table").count();
        assert_eq!(tables, 4, "{page}");
        assert_eq!(
            page.matches("<div class=\"scroll\"><table").count(),
            tables,
            "{page}"
        );
        assert_eq!(page.matches("</table></div>").count(), tables, "{page}");
        assert!(STYLE.contains(".scroll{overflow-x:auto"), "{STYLE}");
        // A long word (a path) breaks rather than widening the page.
        assert!(STYLE.contains("overflow-wrap:break-word"), "{STYLE}");
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_763_870_000), "2025-11-23 03:53 UTC");
    }
}
