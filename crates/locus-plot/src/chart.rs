//! The chart description ([`Chart`], [`Series`]) and its layout into a [`Scene`] of pixel-space
//! shapes that both back ends draw.

use crate::error::{Axis, PlotError};
use crate::font;
use crate::scale::Scale;
use std::path::Path;

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Colours given to series in order (then repeated): ten well-separated hues.
pub const PALETTE: [Rgb; 10] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x7f, 0x7f, 0x7f),
    Rgb(0xbc, 0xbd, 0x22),
    Rgb(0x17, 0xbe, 0xcf),
];

pub(crate) const WHITE: Rgb = Rgb(255, 255, 255);
pub(crate) const BLACK: Rgb = Rgb(0, 0, 0);
const GRID: Rgb = Rgb(0xe3, 0xe3, 0xe3);
const MINOR_GRID: Rgb = Rgb(0xf3, 0xf3, 0xf3);
const TEXT: Rgb = Rgb(0x20, 0x20, 0x20);

/// Default image width in pixels.
pub const DEFAULT_WIDTH: u32 = 960;
/// Default image height in pixels.
pub const DEFAULT_HEIGHT: u32 = 600;
/// Largest accepted width or height (keeps a raster under ~150 MB).
pub const MAX_SIDE: u32 = 8192;
/// Width of series lines in pixels.
pub const LINE_WIDTH: f64 = 2.0;

/// One labelled line: points drawn in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// `(x, y)` points, finite; with a log x axis, x > 0.
    pub points: Vec<(f64, f64)>,
    /// Colour; `None` takes the next [`PALETTE`] entry by position.
    pub color: Option<Rgb>,
}

impl Series {
    /// A series with a palette colour.
    pub fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            color: None,
        }
    }
}

/// A line chart: title, axis labels, series, optional log-10 x axis and fixed ranges.
///
/// Build it with [`Chart::new`] and [`Chart::add_series`], adjust the public fields, then
/// [`Chart::render_svg`], [`Chart::render_png`] or [`Chart::save`] (format from the file name).
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title drawn above the plot (may be empty).
    pub title: String,
    /// Label under the x axis (may be empty).
    pub x_label: String,
    /// Label left of the y axis, drawn vertically (may be empty).
    pub y_label: String,
    /// The lines, drawn in order (later on top); the legend lists them in the same order.
    pub series: Vec<Series>,
    /// Base-10 logarithmic x axis (every x must then be > 0).
    pub log_x: bool,
    /// Fixed x range; `None` fits the data (widened to tick steps or powers of ten).
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range; `None` fits the data (widened to tick steps).
    pub y_range: Option<(f64, f64)>,
    /// Image width in pixels (SVG user units).
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
}

/// Output format of [`Chart::save`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Scalable vector graphics (text).
    Svg,
    /// 8-bit RGB PNG drawn by this crate's rasterizer.
    Png,
}

impl Format {
    /// The format named by the file's extension (`.svg` or `.png`, any case).
    ///
    /// # Errors
    /// [`PlotError::UnknownFormat`] for any other name.
    pub fn from_path(path: &Path) -> Result<Format, PlotError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Format::Svg),
            Some(e) if e.eq_ignore_ascii_case("png") => Ok(Format::Png),
            _ => Err(PlotError::UnknownFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

impl Chart {
    /// An empty chart of the default size with these labels.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            log_x: false,
            x_range: None,
            y_range: None,
            width: DEFAULT_WIDTH,
            height: DEFAULT_HEIGHT,
        }
    }

    /// Appends a series with the next palette colour.
    pub fn add_series(&mut self, label: impl Into<String>, points: Vec<(f64, f64)>) -> &mut Self {
        self.series.push(Series::new(label, points));
        self
    }

    /// The chart as a standalone SVG document.
    ///
    /// # Errors
    /// See [`Chart::validate`].
    pub fn render_svg(&self) -> Result<String, PlotError> {
        Ok(crate::svg::render(&self.layout()?))
    }

    /// The chart as raw pixels (what [`Chart::render_png`] encodes).
    ///
    /// # Errors
    /// See [`Chart::validate`].
    pub fn render_image(&self) -> Result<crate::raster::Image, PlotError> {
        Ok(crate::raster::render(&self.layout()?))
    }

    /// The chart as a PNG file's bytes.
    ///
    /// # Errors
    /// See [`Chart::validate`]; [`PlotError::Png`] if encoding fails.
    pub fn render_png(&self) -> Result<Vec<u8>, PlotError> {
        self.render_image()?.to_png()
    }

    /// Renders in the format named by `path`'s extension and writes the file.
    ///
    /// # Errors
    /// [`PlotError::UnknownFormat`], the errors of [`Chart::validate`], [`PlotError::Png`],
    /// [`PlotError::Io`].
    pub fn save(&self, path: &Path) -> Result<(), PlotError> {
        let bytes = match Format::from_path(path)? {
            Format::Svg => self.render_svg()?.into_bytes(),
            Format::Png => self.render_png()?,
        };
        std::fs::write(path, bytes).map_err(|source| PlotError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Checks the data and settings without drawing.
    ///
    /// # Errors
    /// [`PlotError::NonFinite`] for a NaN or infinite coordinate, [`PlotError::NonPositiveLogX`]
    /// for x ≤ 0 on a log axis, [`PlotError::BadRange`] for an empty, reversed or non-finite
    /// fixed range (or one reaching x ≤ 0 on a log axis), [`PlotError::BadSize`] when the image
    /// is too small for the plot or larger than [`MAX_SIDE`].
    pub fn validate(&self) -> Result<(), PlotError> {
        self.layout().map(|_| ())
    }

    /// Data extent over every point: `((xmin, xmax), (ymin, ymax))`, `None` without points.
    fn extent(&self) -> Result<Option<Extent>, PlotError> {
        let mut ext: Option<Extent> = None;
        for s in &self.series {
            for (index, &(x, y)) in s.points.iter().enumerate() {
                if !(x.is_finite() && y.is_finite()) {
                    return Err(PlotError::NonFinite {
                        series: s.label.clone(),
                        index,
                        x,
                        y,
                    });
                }
                if self.log_x && x <= 0.0 {
                    return Err(PlotError::NonPositiveLogX {
                        series: s.label.clone(),
                        index,
                        x,
                    });
                }
                ext = Some(match ext {
                    None => ((x, x), (y, y)),
                    Some(((x0, x1), (y0, y1))) => ((x0.min(x), x1.max(x)), (y0.min(y), y1.max(y))),
                });
            }
        }
        Ok(ext)
    }

    fn scales(&self) -> Result<(Scale, Scale), PlotError> {
        let ext = self.extent()?;
        let check = |axis: Axis, (lo, hi): (f64, f64), log: bool| -> Result<(), PlotError> {
            let reason = if !(lo.is_finite() && hi.is_finite()) {
                "not finite"
            } else if lo >= hi {
                "the lower end must be below the upper end"
            } else if log && lo <= 0.0 {
                "a log axis needs a positive lower end"
            } else {
                return Ok(());
            };
            Err(PlotError::BadRange {
                axis,
                lo,
                hi,
                reason,
            })
        };
        let x = match (self.x_range, ext) {
            (Some(r), _) => {
                check(Axis::X, r, self.log_x)?;
                if self.log_x {
                    Scale::log10(r.0, r.1, true)
                } else {
                    Scale::linear(r.0, r.1, true)
                }
            }
            (None, Some(((lo, hi), _))) if self.log_x => Scale::log10(lo, hi, false),
            (None, Some(((lo, hi), _))) => Scale::linear(lo, hi, false),
            (None, None) if self.log_x => Scale::log10(1.0, 10.0, true),
            (None, None) => Scale::linear(0.0, 1.0, true),
        };
        let y = match (self.y_range, ext) {
            (Some(r), _) => {
                check(Axis::Y, r, false)?;
                Scale::linear(r.0, r.1, true)
            }
            (None, Some((_, (lo, hi)))) => Scale::linear(lo, hi, false),
            (None, None) => Scale::linear(0.0, 1.0, true),
        };
        Ok((x, y))
    }

    /// Lays the chart out in pixel space.
    pub(crate) fn layout(&self) -> Result<Scene, PlotError> {
        let (w, h) = (self.width, self.height);
        if w > MAX_SIDE || h > MAX_SIDE {
            return Err(PlotError::BadSize {
                width: w,
                height: h,
                reason: "each side must be at most 8192 pixels",
            });
        }
        let (xs, ys) = self.scales()?;
        let (wf, hf) = (f64::from(w), f64::from(h));
        let cw = f64::from(font::ADVANCE * TEXT_SCALE);
        let ch = f64::from(font::CAP_H * TEXT_SCALE);
        let title_h = f64::from(font::CAP_H * TITLE_SCALE);

        // Legend on the right: widest label, truncated to 40 % of the image.
        let max_chars = (((wf * 0.4 - 60.0) / cw).floor() as usize).max(6);
        let labels: Vec<String> = self
            .series
            .iter()
            .map(|s| truncate(&s.label, max_chars))
            .collect();
        let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let legend_w = if self.series.is_empty() {
            0.0
        } else {
            LEGEND_SWATCH + 8.0 + longest as f64 * cw + 8.0
        };
        let y_tick_w = ys
            .ticks
            .iter()
            .map(|t| f64::from(font::text_width(&t.label) * TEXT_SCALE))
            .fold(0.0, f64::max);
        let left =
            12.0 + if self.y_label.is_empty() {
                0.0
            } else {
                ch + 14.0
            } + y_tick_w
                + 12.0;
        let top = if self.title.is_empty() {
            20.0
        } else {
            16.0 + title_h + 20.0
        };
        let bottom = 12.0
            + ch
            + 12.0
            + if self.x_label.is_empty() {
                0.0
            } else {
                ch + 14.0
            };
        let right = if legend_w > 0.0 {
            legend_w + 28.0
        } else {
            24.0
        };
        let (px0, py0) = (left.round(), top.round());
        let (px1, py1) = ((wf - right).round(), (hf - bottom).round());
        if px1 - px0 < 60.0 || py1 - py0 < 60.0 {
            return Err(PlotError::BadSize {
                width: w,
                height: h,
                reason: "too small for the axes, labels and legend",
            });
        }
        let plot = Rect {
            x0: px0,
            y0: py0,
            x1: px1,
            y1: py1,
        };
        let map_x = |v: f64| px0 + xs.frac(v) * (px1 - px0);
        let map_y = |v: f64| py1 - ys.frac(v) * (py1 - py0);
        // Crisp 1-pixel lines sit on pixel centres.
        let snap = |v: f64| v.floor() + 0.5;

        let mut shapes = Vec::new();
        shapes.push(Shape::Rect {
            rect: Rect {
                x0: 0.0,
                y0: 0.0,
                x1: wf,
                y1: hf,
            },
            fill: Some(WHITE),
            stroke: None,
        });
        // Grid and ticks.
        let tick_len = 6.0;
        for t in &xs.ticks {
            let x = snap(map_x(t.value).clamp(px0, px1 - 1.0));
            let color = if t.label.is_empty() { MINOR_GRID } else { GRID };
            shapes.push(Shape::line(vec![(x, py0), (x, py1)], color, 1.0, false));
            if !t.label.is_empty() {
                shapes.push(Shape::line(
                    vec![(x, py1), (x, py1 + tick_len)],
                    BLACK,
                    1.0,
                    false,
                ));
                shapes.push(Shape::text(
                    x,
                    py1 + tick_len + 6.0 + ch / 2.0,
                    &t.label,
                    Anchor::Middle,
                ));
            }
        }
        for t in &ys.ticks {
            let y = snap(map_y(t.value).clamp(py0, py1 - 1.0));
            shapes.push(Shape::line(vec![(px0, y), (px1, y)], GRID, 1.0, false));
            shapes.push(Shape::line(
                vec![(px0 - tick_len, y), (px0, y)],
                BLACK,
                1.0,
                false,
            ));
            shapes.push(Shape::text(px0 - tick_len - 6.0, y, &t.label, Anchor::End));
        }
        // Series, clipped to the plot area.
        for (i, s) in self.series.iter().enumerate() {
            let color = s.color.unwrap_or(PALETTE[i % PALETTE.len()]);
            let pts = s
                .points
                .iter()
                .map(|&(x, y)| (map_x(x), map_y(y)))
                .collect();
            shapes.push(Shape::line(pts, color, LINE_WIDTH, true));
        }
        // Frame on top of grid and series ends.
        shapes.push(Shape::Rect {
            rect: Rect {
                x0: px0 + 0.5,
                y0: py0 + 0.5,
                x1: px1 - 0.5,
                y1: py1 - 0.5,
            },
            fill: None,
            stroke: Some(BLACK),
        });
        // Title and axis labels.
        if !self.title.is_empty() {
            let max = ((wf - 20.0) / f64::from(font::ADVANCE * TITLE_SCALE)) as usize;
            shapes.push(Shape::Text {
                x: wf / 2.0,
                y: 16.0 + title_h / 2.0,
                text: truncate(&self.title, max),
                anchor: Anchor::Middle,
                vertical: false,
                scale: TITLE_SCALE,
                color: TEXT,
            });
        }
        if !self.x_label.is_empty() {
            let y = py1 + tick_len + 6.0 + ch + 14.0 + ch / 2.0;
            shapes.push(Shape::text(
                (px0 + px1) / 2.0,
                y,
                &self.x_label,
                Anchor::Middle,
            ));
        }
        if !self.y_label.is_empty() {
            shapes.push(Shape::Text {
                x: 12.0 + ch / 2.0,
                y: (py0 + py1) / 2.0,
                text: self.y_label.clone(),
                anchor: Anchor::Middle,
                vertical: true,
                scale: TEXT_SCALE,
                color: TEXT,
            });
        }
        // Legend: a swatch and the label per series; what does not fit is summarised.
        let lx = px1 + 20.0;
        let row_h = ch + 10.0;
        let rows = (((py1 - py0 - 8.0) / row_h).floor() as usize).max(1);
        let n = self.series.len();
        let shown = if n > rows { rows - 1 } else { n };
        for (i, (s, label)) in self.series.iter().zip(&labels).take(shown).enumerate() {
            let color = s.color.unwrap_or(PALETTE[i % PALETTE.len()]);
            let y = snap(py0 + 8.0 + row_h * (i as f64 + 0.5));
            shapes.push(Shape::line(
                vec![(lx, y), (lx + LEGEND_SWATCH - 8.0, y)],
                color,
                3.0,
                false,
            ));
            shapes.push(Shape::text(lx + LEGEND_SWATCH, y, label, Anchor::Start));
        }
        if shown < n {
            let y = py0 + 8.0 + row_h * (shown as f64 + 0.5);
            shapes.push(Shape::text(
                lx,
                y,
                &format!("+{} more", n - shown),
                Anchor::Start,
            ));
        }
        Ok(Scene {
            width: w,
            height: h,
            plot,
            shapes,
        })
    }
}

/// `((xmin, xmax), (ymin, ymax))` of the data.
type Extent = ((f64, f64), (f64, f64));

/// Text scale (font pixels → image pixels) of labels, ticks and legend.
pub(crate) const TEXT_SCALE: u32 = 2;
/// Text scale of the title.
pub(crate) const TITLE_SCALE: u32 = 3;
/// Legend swatch length plus the gap before the label.
const LEGEND_SWATCH: f64 = 36.0;

/// At most `max` characters; longer text ends in `...`.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(3);
    let mut t: String = s.chars().take(keep).collect();
    t.push_str("...");
    t
}

/// An axis-aligned rectangle in pixel space, `x0 ≤ x1`, `y0 ≤ y1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

/// Horizontal alignment of text relative to its anchor point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

/// What the back ends draw. Coordinates are pixels, y down; text is placed by its anchor
/// point: `x` per [`Anchor`] along the text, `y` the middle of the capitals (for vertical
/// text, rotated a quarter turn counter-clockwise, the roles of x and y swap).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    Polyline {
        points: Vec<(f64, f64)>,
        color: Rgb,
        width: f64,
        /// Clip to the plot area.
        clipped: bool,
    },
    Rect {
        rect: Rect,
        fill: Option<Rgb>,
        stroke: Option<Rgb>,
    },
    Text {
        x: f64,
        y: f64,
        text: String,
        anchor: Anchor,
        vertical: bool,
        scale: u32,
        color: Rgb,
    },
}

impl Shape {
    fn line(points: Vec<(f64, f64)>, color: Rgb, width: f64, clipped: bool) -> Shape {
        Shape::Polyline {
            points,
            color,
            width,
            clipped,
        }
    }

    fn text(x: f64, y: f64, text: &str, anchor: Anchor) -> Shape {
        Shape::Text {
            x,
            y,
            text: text.to_string(),
            anchor,
            vertical: false,
            scale: TEXT_SCALE,
            color: TEXT,
        }
    }
}

/// A laid-out chart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scene {
    pub width: u32,
    pub height: u32,
    /// The plot area (clip rectangle of the series).
    pub plot: Rect,
    /// Drawn in order.
    pub shapes: Vec<Shape>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_data_and_settings_are_typed_errors() {
        let mut c = Chart::new("t", "x", "y");
        c.add_series("a", vec![(0.0, 1.0), (1.0, f64::NAN)]);
        assert!(matches!(
            c.validate(),
            Err(PlotError::NonFinite { index: 1, .. })
        ));
        let mut c = Chart::new("t", "x", "y");
        c.add_series("a", vec![(0.0, 1.0)]);
        c.log_x = true;
        assert!(matches!(
            c.validate(),
            Err(PlotError::NonPositiveLogX { index: 0, .. })
        ));
        let mut c = Chart::new("t", "x", "y");
        c.x_range = Some((1.0, 1.0));
        assert!(matches!(
            c.validate(),
            Err(PlotError::BadRange { axis: Axis::X, .. })
        ));
        c.x_range = Some((0.0, 10.0));
        c.log_x = true;
        assert!(matches!(c.validate(), Err(PlotError::BadRange { .. })));
        let mut c = Chart::new("t", "x", "y");
        c.y_range = Some((0.0, f64::INFINITY));
        assert!(matches!(
            c.validate(),
            Err(PlotError::BadRange { axis: Axis::Y, .. })
        ));
        let mut c = Chart::new("t", "x", "y");
        c.width = 100;
        assert!(matches!(c.validate(), Err(PlotError::BadSize { .. })));
        c.width = MAX_SIDE + 1;
        assert!(matches!(c.validate(), Err(PlotError::BadSize { .. })));
        assert!(matches!(
            Format::from_path(Path::new("a.jpg")),
            Err(PlotError::UnknownFormat { .. })
        ));
        assert_eq!(Format::from_path(Path::new("A.PNG")).unwrap(), Format::Png);
        assert_eq!(Format::from_path(Path::new("a.svg")).unwrap(), Format::Svg);
    }

    #[test]
    fn empty_chart_lays_out() {
        let c = Chart::new("", "", "");
        let s = c.layout().unwrap();
        assert!(s.plot.x1 > s.plot.x0 && s.plot.y1 > s.plot.y0);
    }

    #[test]
    fn long_labels_are_truncated_and_many_series_summarised() {
        assert_eq!(truncate("abcdefgh", 6), "abc...");
        assert_eq!(truncate("abc", 6), "abc");
        let mut c = Chart::new("t", "x", "y");
        for i in 0..60 {
            c.add_series(format!("series {i}"), vec![(0.0, 0.0), (1.0, f64::from(i))]);
        }
        let s = c.layout().unwrap();
        assert!(s.shapes.iter().any(
            |sh| matches!(sh, Shape::Text { text, .. } if text.starts_with('+') && text.ends_with("more"))
        ));
    }
}
