//! Line charts for Locus's tools, drawn to SVG and PNG without external renderers.
//!
//! `locus mrc --plot` draws miss ratio curves with it; `locus-sim` draws allocation and hit
//! ratio over time. A chart is generic: labelled series of `(x, y)` points, axis labels, a
//! title, an optional log-10 x axis and optional fixed ranges. The data are checked (finite,
//! x > 0 on a log axis, sane ranges and size) and every problem is a [`PlotError`].
//!
//! ```text
//!  Chart { title, x_label, y_label, series: [(label, [(x, y)…])…], log_x, ranges, size }
//!     │ layout (chart.rs): scales + ticks (scale.rs), margins from label widths,
//!     │ legend on the right, everything in pixel coordinates
//!     ▼
//!  Scene [ rect | polyline(width, clipped to plot) | text(anchor, vertical) ]
//!     ├──► svg.rs     one element per shape                      → String
//!     └──► raster.rs  anti-aliased capsule lines, bitmap text    → Image ──png──► Vec<u8>
//!                     (font.rs: a 5×9 ASCII font drawn for this crate)
//!
//!  ┌──────────── title ─────────────┐
//!  │ y  ┌───────────────┐ ── label 1 │
//!  │ l  │ plot area     │ ── label 2 │   legend: one row per series; rows that do not fit
//!  │ a  │               │            │   are summarised as "+N more"
//!  │ b  └───────────────┘            │
//!  │      ticks, x label             │
//!  └────────────────────────────────┘
//! ```
//!
//! Both back ends draw the same layout, so an SVG and a PNG of one chart match except for the
//! typeface. Series colours come from [`PALETTE`] in order unless a series sets its own.
//!
//! ```
//! use locus_plot::Chart;
//! let mut c = Chart::new("Miss ratio curve", "cache capacity (objects)", "miss ratio");
//! c.add_series("exact", vec![(0.0, 1.0), (100.0, 0.4), (200.0, 0.1)]);
//! c.y_range = Some((0.0, 1.0));
//! let svg = c.render_svg()?;
//! let png = c.render_png()?;
//! assert!(svg.starts_with("<svg") && png.starts_with(b"\x89PNG"));
//! # Ok::<(), locus_plot::PlotError>(())
//! ```

mod chart;
mod error;
mod font;
mod raster;
mod scale;
mod svg;

pub use chart::{
    Chart, DEFAULT_HEIGHT, DEFAULT_WIDTH, Format, LINE_WIDTH, MAX_SIDE, PALETTE, Rgb, Series,
};
pub use error::{Axis, PlotError};
pub use raster::Image;
