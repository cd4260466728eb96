//! The matrix as a heatmap picture (SVG or PNG) with plotters: CPU ids on
//! both axes, the viridis scale of [`super::colormap`] with its legend, and
//! lines between core kinds (P/E cores, big/LITTLE) when the caller knows
//! them, because the first question on a hybrid machine is whether the
//! latency blocks follow the kinds.
//!
//! Text needs a font and we may not touch the system's (no fontconfig, no
//! freetype): DejaVu Sans, embedded by the `dejavu` crate, is registered
//! with plotters' pure-Rust `ab_glyph` renderer as "sans-serif". SVG files
//! name that family and leave drawing the glyphs to the viewer.

use super::colormap;
use super::table::{format_ns, widest};
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::LatencyMatrix;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A run of CPUs of one kind, as the chart labels it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindBand {
    /// "P-core", "E-core", "Cortex-A76", ...
    pub name: String,
    pub cpus: CpuSet,
}

impl KindBand {
    /// The bands of `topo`'s core kinds (declared ones included): none
    /// when it has fewer than two, nothing to tell apart.
    pub fn of(topo: &pinsight_model::Topology) -> Vec<KindBand> {
        if topo.kinds.len() < 2 {
            return Vec::new();
        }
        let band = |k: &pinsight_model::Kind| KindBand {
            name: k.name.clone(),
            cpus: k.cpus.clone(),
        };
        topo.kinds.iter().map(band).collect()
    }
}

/// What to draw besides the matrix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChartOptions {
    pub title: String,
    /// Core kinds; lines are drawn where the kind changes along the axes.
    /// Leave empty for machines of one kind.
    pub kinds: Vec<KindBand>,
}

const FONT: &str = "sans-serif";

/// Why a chart could not be drawn or written. Plotters' own error text is
/// carried as `reason`; paths are the file asked for.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The DejaVu Sans font built into the binary was refused by plotters.
    #[error("the embedded DejaVu Sans font could not be loaded")]
    Font,
    /// Drawing the SVG document failed.
    #[error("drawing the SVG chart: {reason}")]
    Svg { reason: String },
    /// The SVG file could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    WriteSvg {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Drawing the PNG picture failed.
    #[error("{}: drawing the PNG chart: {reason}", path.display())]
    Png { path: PathBuf, reason: String },
    /// Encoding or writing the PNG file failed.
    #[error("{}: cannot write PNG: {reason}", path.display())]
    WritePng { path: PathBuf, reason: String },
}

/// Registers the embedded font once; every chart calls it first.
fn ensure_font() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ChartError::Font)
    }
}

/// Pixel geometry, derived from the matrix size alone.
#[derive(Clone, Copy, Debug)]
struct Layout {
    cell: i32,
    left: i32,
    top: i32,
    width: u32,
    height: u32,
    font: f64,
    /// Label every `row_step`-th row and `col_step`-th column, so labels
    /// never overlap on large machines.
    row_step: usize,
    col_step: usize,
}

fn layout(m: &LatencyMatrix) -> Layout {
    let n = m.len().max(1);
    // About 760 px of grid, cells 3..=40 px.
    let cell = (760 / n as i32).clamp(3, 40);
    let font = (cell as f64 * 0.8).clamp(9.0, 13.0);
    let digits = widest(m.cpus.iter().map(|c| c.to_string()));
    let label_px = digits as f64 * font * 0.64 + 4.0;
    let row_step = (font * 1.15 / cell as f64).ceil().max(1.0) as usize;
    let col_step = (label_px / cell as f64).ceil().max(1.0) as usize;
    let left = (label_px as i32) + 40;
    let top = 78;
    let grid = cell * n as i32;
    Layout {
        cell,
        left,
        top,
        width: (left + grid + 110).max(420) as u32,
        height: (top + grid.max(120) + 40) as u32,
        font,
        row_step,
        col_step,
    }
}

/// The heatmap as an SVG document.
pub fn svg(m: &LatencyMatrix, opts: &ChartOptions) -> Result<String, ChartError> {
    ensure_font()?;
    let l = layout(m);
    let mut buf = String::new();
    {
        let svg_error = |e: &dyn std::fmt::Display| ChartError::Svg {
            reason: e.to_string(),
        };
        let root = SVGBackend::with_string(&mut buf, (l.width, l.height)).into_drawing_area();
        draw(&root, m, opts, &l).map_err(|e| svg_error(&e))?;
        root.present().map_err(|e| svg_error(&e))?;
    }
    Ok(buf)
}

/// Writes the heatmap as an SVG file.
pub fn write_svg(m: &LatencyMatrix, opts: &ChartOptions, path: &Path) -> Result<(), ChartError> {
    let text = svg(m, opts)?;
    pinsight_lifecycle::output::write(path, text.as_bytes()).map_err(|e| ChartError::WriteSvg {
        path: path.to_path_buf(),
        source: match e {
            pinsight_lifecycle::output::OutputError::Write { source, .. } => source,
            e => std::io::Error::other(e.reason()),
        },
    })
}

/// Writes the heatmap as a PNG file.
pub fn write_png(m: &LatencyMatrix, opts: &ChartOptions, path: &Path) -> Result<(), ChartError> {
    ensure_font()?;
    let l = layout(m);
    // Drawn into a temporary file next to `path`, renamed into place.
    let mut drawing = None;
    let written = pinsight_lifecycle::output::write_via(path, |tmp| {
        let root = BitMapBackend::new(tmp, (l.width, l.height)).into_drawing_area();
        if let Err(e) = draw(&root, m, opts, &l) {
            drawing = Some(e.to_string());
            return Err(std::io::Error::other("drawing failed"));
        }
        root.present()
            .map_err(|e| std::io::Error::other(e.to_string()))
    });
    match (drawing, written) {
        (Some(reason), _) => Err(ChartError::Png {
            path: path.to_path_buf(),
            reason,
        }),
        (None, Err(e)) => Err(ChartError::WritePng {
            path: path.to_path_buf(),
            reason: e.reason(),
        }),
        (None, Ok(())) => Ok(()),
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn text_style(size: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size).into_font(),
        color: color.to_backend_color(),
        pos: Pos::new(h, v),
    }
}

/// Draws the heatmap: title, cells, CPU ids, kind boundaries, colour
/// scale, in that order.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    m: &LatencyMatrix,
    opts: &ChartOptions,
    l: &Layout,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let measured: Vec<f64> = m.pair_values().collect();
    let h = Heatmap {
        m,
        opts,
        l,
        lo: measured.iter().copied().fold(f64::INFINITY, f64::min),
        hi: measured.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    };
    h.titles(root)?;
    h.cells(root)?;
    h.cpu_ids(root)?;
    if opts.kinds.len() > 1 {
        h.kind_boundaries(root)?;
    }
    if !measured.is_empty() {
        h.colour_scale(root)?;
    }
    Ok(())
}

/// What every step of drawing the heatmap needs: the matrix, the options,
/// the geometry and the range of the measured values.
struct Heatmap<'a> {
    m: &'a LatencyMatrix,
    opts: &'a ChartOptions,
    l: &'a Layout,
    /// The smallest measured value.
    lo: f64,
    /// The largest measured value.
    hi: f64,
}

impl Heatmap<'_> {
    /// The left edge of column `j`.
    fn x_of(&self, j: usize) -> i32 {
        self.l.left + j as i32 * self.l.cell
    }

    /// The top edge of row `i`.
    fn y_of(&self, i: usize) -> i32 {
        self.l.top + i as i32 * self.l.cell
    }

    /// The right edge of the grid.
    fn grid_end(&self) -> i32 {
        self.l.left + self.m.len() as i32 * self.l.cell
    }

    /// Whether the pair `(i, j)` was marked noisy.
    fn noisy(&self, i: usize, j: usize) -> bool {
        self.m
            .stats
            .as_ref()
            .and_then(|s| s[i][j].as_ref())
            .is_some_and(|s| s.noisy)
    }

    /// The chart's title (when there is one) and the axes' "CPU".
    fn titles<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let l = self.l;
        if !self.opts.title.is_empty() {
            root.draw(&Text::new(
                self.opts.title.clone(),
                (l.left, 10),
                text_style(16.0, BLACK, HPos::Left, VPos::Top),
            ))?;
        }
        root.draw(&Text::new(
            "CPU".to_string(),
            (8, l.top - 14),
            text_style(l.font, BLACK, HPos::Left, VPos::Center),
        ))
    }

    /// Every cell, row by row.
    fn cells<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let n = self.m.len();
        for i in 0..n {
            for j in 0..n {
                self.cell(root, i, j)?;
            }
        }
        Ok(())
    }

    /// Cell `(i, j)`: its colour, a red dot when noisy, its value when
    /// cells are large enough to hold it.
    fn cell<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        i: usize,
        j: usize,
    ) -> DrawResult<DB> {
        let l = self.l;
        let v = self.m.get(i, j);
        let (x0, y0) = (self.x_of(j), self.y_of(i));
        let rect = [(x0, y0), (x0 + l.cell, y0 + l.cell)];
        let rgb = if i == j {
            [225, 225, 225]
        } else if v.is_nan() {
            [250, 250, 250]
        } else {
            colormap::viridis(colormap::position(v, self.lo, self.hi))
        };
        root.draw(&Rectangle::new(
            rect,
            RGBColor(rgb[0], rgb[1], rgb[2]).filled(),
        ))?;
        if i != j && self.noisy(i, j) && l.cell >= 6 {
            let r = (l.cell / 6).max(1);
            root.draw(&Circle::new(
                (x0 + l.cell - r - 1, y0 + r + 1),
                r,
                RED.filled(),
            ))?;
        }
        let values_fit = l.cell >= 30;
        if values_fit && i != j && !v.is_nan() {
            let fg = if colormap::prefers_dark_text(rgb) {
                BLACK
            } else {
                WHITE
            };
            root.draw(&Text::new(
                format_ns(v),
                (x0 + l.cell / 2, y0 + l.cell / 2),
                text_style(l.cell as f64 * 0.34, fg, HPos::Center, VPos::Center),
            ))?;
        }
        Ok(())
    }

    /// CPU ids: along the top and the left.
    fn cpu_ids<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let l = self.l;
        for (k, cpu) in self.m.cpus.iter().enumerate() {
            if k % l.col_step == 0 {
                root.draw(&Text::new(
                    cpu.to_string(),
                    (self.x_of(k) + l.cell / 2, l.top - 4),
                    text_style(l.font, BLACK, HPos::Center, VPos::Bottom),
                ))?;
            }
            if k % l.row_step == 0 {
                root.draw(&Text::new(
                    cpu.to_string(),
                    (l.left - 4, self.y_of(k) + l.cell / 2),
                    text_style(l.font, BLACK, HPos::Right, VPos::Center),
                ))?;
            }
        }
        Ok(())
    }

    /// Kind names above each run of CPUs of one kind, lines between runs.
    fn kind_boundaries<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (l, m, n) = (self.l, self.m, self.m.len());
        let kind_of = |cpu: usize| self.opts.kinds.iter().position(|k| k.cpus.contains(cpu));
        let mut run_start = 0;
        for k in 1..=n {
            let changed = k == n || kind_of(m.cpus[k]) != kind_of(m.cpus[k - 1]);
            if !changed {
                continue;
            }
            if let Some(kind) = kind_of(m.cpus[run_start]) {
                let mid = (self.x_of(run_start) + self.x_of(k)) / 2;
                root.draw(&Text::new(
                    self.opts.kinds[kind].name.clone(),
                    (mid, l.top - 22),
                    text_style(l.font, BLACK, HPos::Center, VPos::Bottom),
                ))?;
            }
            if k < n {
                let edge = BLACK.stroke_width(2);
                root.draw(&PathElement::new(
                    vec![(self.x_of(k), l.top - 20), (self.x_of(k), self.y_of(n))],
                    edge,
                ))?;
                root.draw(&PathElement::new(
                    vec![(l.left - 20, self.y_of(k)), (self.grid_end(), self.y_of(k))],
                    edge,
                ))?;
            }
            run_start = k;
        }
        Ok(())
    }

    /// The colour scale right of the grid: the gradient, its labels (high,
    /// middle, low; each once) and the noisy-dot legend when needed.
    fn colour_scale<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (l, n) = (self.l, self.m.len());
        let (lo, hi) = (self.lo, self.hi);
        let (bx, by, bh) = (self.grid_end() + 16, l.top, (n as i32 * l.cell).max(120));
        let steps = 64;
        for s in 0..steps {
            let t = 1.0 - s as f64 / (steps - 1) as f64;
            let rgb = colormap::viridis(t);
            let y0 = by + s * bh / steps;
            let y1 = by + (s + 1) * bh / steps;
            root.draw(&Rectangle::new(
                [(bx, y0), (bx + 16, y1)],
                RGBColor(rgb[0], rgb[1], rgb[2]).filled(),
            ))?;
        }
        let mut shown: Vec<String> = Vec::new();
        for (t, v) in [(1.0, hi), (0.5, (lo + hi) / 2.0), (0.0, lo)] {
            // A uniform matrix would repeat one value three times.
            let label = format!("{} ns", format_ns(v));
            if shown.contains(&label) {
                continue;
            }
            shown.push(label);
            let y = by + ((1.0 - t) * bh as f64) as i32;
            root.draw(&Text::new(
                shown.last().cloned().unwrap_or_default(),
                (bx + 20, y),
                text_style(l.font, BLACK, HPos::Left, VPos::Center),
            ))?;
        }
        if (0..n).any(|i| (0..i).any(|j| self.noisy(i, j))) {
            root.draw(&Text::new(
                "red dot: noisy".to_string(),
                (bx, by + bh + 14),
                text_style(l.font, BLACK, HPos::Left, VPos::Center),
            ))?;
        }
        Ok(())
    }
}
