//! A compact picture of the machine: packages holding L3 domains holding
//! cores, each core showing its hardware threads coloured by core kind —
//! the part of an `lstopo` drawing that matters for placement.

use crate::{esc, kind_colour};
use pinsight_cpuset::CpuSet;
use pinsight_topology::Topology;
use std::fmt::Write;

const WIDTH: usize = 960;
const CELL_W: usize = 56;
const CELL_H: usize = 40;
const PAD: usize = 8;
const HEAD: usize = 22;

/// The cores of `within`, grouped by the L3 (else the package) they share.
fn l3_groups(topo: &Topology, within: &CpuSet) -> Vec<(String, CpuSet)> {
    let mut groups: Vec<(String, CpuSet)> = topo
        .caches_at(3)
        .filter(|c| c.cpus.is_subset(within))
        .map(|c| {
            let size = c.size_kib.map(|k| format!(" {} MiB", k / 1024)).unwrap_or_default();
            (format!("L3{size}"), c.cpus.clone())
        })
        .collect();
    let covered = groups.iter().fold(CpuSet::new(), |acc, (_, s)| acc.union(s));
    let rest = within.difference(&covered);
    if !rest.is_empty() {
        groups.push((String::new(), rest));
    }
    groups.sort_by_key(|(_, s)| s.first());
    groups
}

/// The topology as an SVG document (embeddable in HTML).
pub fn topology_svg(topo: &Topology) -> String {
    let per_row = (WIDTH - 4 * PAD) / (CELL_W + PAD);
    let mut body = String::new();
    let mut y = PAD;
    let packages: Vec<(String, CpuSet)> = if topo.packages.is_empty() {
        vec![("Machine".into(), topo.online())]
    } else {
        topo.packages.iter().map(|p| (format!("Package {}", p.id), p.cpus.clone())).collect()
    };
    for (pname, pcpus) in &packages {
        let pkg_top = y;
        y += HEAD;
        let mut inner = String::new();
        for (gname, gcpus) in l3_groups(topo, pcpus) {
            let cores: Vec<_> = topo.cores.iter().filter(|c| c.cpus.is_subset(&gcpus)).collect();
            let rows = cores.len().div_ceil(per_row).max(1);
            let gh = HEAD + rows * (CELL_H + PAD) + PAD;
            let gx = 2 * PAD;
            writeln!(
                inner,
                r##"<rect x="{gx}" y="{y}" width="{}" height="{gh}" rx="4" fill="#f4f1ea" stroke="#b9b2a3"/><text x="{}" y="{}" class="lbl">{} CPUs {}</text>"##,
                WIDTH - 4 * PAD,
                gx + 6,
                y + 15,
                esc(&gname),
                gcpus
            )
            .ok();
            for (i, core) in cores.iter().enumerate() {
                let cx = gx + PAD + (i % per_row) * (CELL_W + PAD);
                let cy = y + HEAD + (i / per_row) * (CELL_H + PAD);
                writeln!(
                    inner,
                    r##"<rect x="{cx}" y="{cy}" width="{CELL_W}" height="{CELL_H}" rx="3" fill="#ffffff" stroke="#8a8170"/><text x="{}" y="{}" class="small">core {}</text>"##,
                    cx + 4,
                    cy + 12,
                    core.id
                )
                .ok();
                let pus: Vec<usize> = core.cpus.iter().collect();
                let pw = (CELL_W - 8) / pus.len().clamp(1, 4);
                for (j, pu) in pus.iter().enumerate().take(4) {
                    let kind = topo.cpu(*pu).and_then(|c| c.kind);
                    let colour = kind.map(|k| kind_colour(k, topo.kinds.len())).unwrap_or("#cccccc");
                    let allowed = topo.cpu(*pu).is_some_and(|c| c.allowed);
                    let px = cx + 4 + j * pw;
                    writeln!(
                        inner,
                        r##"<rect x="{px}" y="{}" width="{}" height="18" fill="{colour}" opacity="{}"><title>CPU {pu}</title></rect><text x="{}" y="{}" class="pu">{pu}</text>"##,
                        cy + 17,
                        pw.saturating_sub(2),
                        if allowed { "1" } else { "0.35" },
                        px + 2,
                        cy + 30
                    )
                    .ok();
                }
            }
            y += gh + PAD;
        }
        writeln!(
            body,
            r##"<rect x="{PAD}" y="{pkg_top}" width="{}" height="{}" rx="6" fill="#e6e0d2" stroke="#6d6556"/><text x="{}" y="{}" class="title">{} (CPUs {})</text>"##,
            WIDTH - 2 * PAD,
            y - pkg_top,
            PAD + 8,
            pkg_top + 16,
            esc(pname),
            pcpus
        )
        .ok();
        body.push_str(&inner);
        y += PAD;
    }
    // Legend: one swatch per kind.
    let mut x = PAD;
    for k in &topo.kinds {
        let label = format!("{} {} (rank {}, CPUs {})", k.mark, k.name, k.rank, k.cpus);
        writeln!(
            body,
            r##"<rect x="{x}" y="{y}" width="14" height="14" fill="{}"/><text x="{}" y="{}" class="lbl">{}</text>"##,
            kind_colour(k.rank, topo.kinds.len()),
            x + 18,
            y + 12,
            esc(&label)
        )
        .ok();
        x += 30 + 7 * label.len();
    }
    y += 24;
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y}" viewBox="0 0 {WIDTH} {y}" font-family="sans-serif"><style>.title{{font-size:13px;font-weight:bold}} .lbl{{font-size:11px}} .small{{font-size:9px;fill:#555}} .pu{{font-size:9px;fill:#fff}}</style>
{body}</svg>"##
    )
}
