//! Errors of chart validation, rendering and writing.

use std::path::PathBuf;

/// Which axis a problem concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// The horizontal axis.
    X,
    /// The vertical axis.
    Y,
}

impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Axis::X => "x",
            Axis::Y => "y",
        })
    }
}

/// Everything that can go wrong building, rendering or writing a chart.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// A point of a series is NaN or infinite.
    #[error("series {series:?}, point {index}: ({x}, {y}) is not a finite number")]
    NonFinite {
        /// The series label.
        series: String,
        /// Index of the point in the series.
        index: usize,
        /// The point's x.
        x: f64,
        /// The point's y.
        y: f64,
    },
    /// A log-scale x axis was asked for, and a point has x ≤ 0.
    #[error(
        "series {series:?}, point {index}: x = {x} cannot be drawn on a log x axis (needs x > 0)"
    )]
    NonPositiveLogX {
        /// The series label.
        series: String,
        /// Index of the point in the series.
        index: usize,
        /// The offending x.
        x: f64,
    },
    /// An explicit axis range is empty, reversed, not finite, or not positive on a log axis.
    #[error("{axis} range [{lo}, {hi}] is invalid: {reason}")]
    BadRange {
        /// The axis.
        axis: Axis,
        /// Lower end.
        lo: f64,
        /// Upper end.
        hi: f64,
        /// What is wrong.
        reason: &'static str,
    },
    /// The image size leaves no room for the plot, or is too large to allocate sensibly.
    #[error("image size {width}×{height} is invalid: {reason}")]
    BadSize {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// The output file name does not end in `.svg` or `.png`.
    #[error("{}: unknown plot format (the name must end in .svg or .png)", path.display())]
    UnknownFormat {
        /// The path given.
        path: PathBuf,
    },
    /// The PNG encoder failed.
    #[error("PNG encoding failed: {message}")]
    Png {
        /// The encoder's message.
        message: String,
    },
    /// Writing the output file failed.
    #[error("writing {}: {source}", path.display())]
    Io {
        /// The output path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
