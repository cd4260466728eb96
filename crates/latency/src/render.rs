//! Showing a latency matrix: a terminal heatmap in the layout of
//! `core-to-core-latency` ([`table`]), SVG/PNG heatmaps ([`chart`]), both on
//! one colour scale ([`colormap`]).

pub mod chart;
pub mod colormap;
pub mod table;

pub use chart::{svg, write_png, write_svg, ChartOptions, KindBand};
pub use table::{format_ns, format_pct, heatmap, summary, TableStyle};

/// Width of the terminal on standard output, if it is one.
pub fn terminal_width() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes one winsize into ws; a non-terminal fd
    // makes it fail with ENOTTY and leaves ws untouched.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}
