//! Showing a latency matrix: a terminal heatmap in the layout of
//! `core-to-core-latency` ([`table`]), SVG/PNG heatmaps ([`chart`]), both on
//! one colour scale ([`colormap`]). The terminal's width comes from
//! [`pinsight_term::terminal_width`]. The measuring code of this crate
//! neither draws nor uses plotters; only this module does.

pub mod chart;
pub mod colormap;
pub mod export;
pub mod report;
pub mod table;

pub use chart::{svg, write_png, write_svg, ChartError, ChartOptions, KindBand};
pub use table::{format_ns, format_pct, heatmap, summary, TableStyle};
