//! Showing a latency matrix: a terminal heatmap in the layout of
//! `core-to-core-latency` ([`table`]), SVG/PNG heatmaps ([`chart`]), both on
//! one colour scale ([`colormap`]). The terminal's width comes from
//! [`crate::terminal_width`]. Moved here from `pinsight-latency`, so that
//! the measurement crate neither draws nor depends on plotters.

pub mod chart;
pub mod colormap;
pub mod report;
pub mod table;

pub use chart::{svg, write_png, write_svg, ChartError, ChartOptions, KindBand};
pub use table::{format_ns, format_pct, heatmap, summary, TableStyle};
