//! The raster back end: draws a [`Scene`] into an RGB pixel buffer and encodes it as PNG.
//!
//! Pixel `(i, j)` covers `[i, i+1) × [j, j+1)`; its centre `(i + 0.5, j + 0.5)` is what is
//! tested. Lines are capsules: a pixel's coverage is `clamp(w/2 + 0.5 − d, 0, 1)` with `d` the
//! distance from its centre to the segment, the maximum over a polyline's segments (so joins are
//! not drawn twice), blended once per polyline. A line of width 1 on a pixel centre is exactly
//! one pixel wide; a series line (width 2) has full-colour pixels along its middle. Text is the
//! bitmap font of [`crate::font`] scaled by an integer, without anti-aliasing.

use crate::chart::{Anchor, Rect, Rgb, Scene, Shape};
use crate::error::PlotError;
use crate::font;

/// An 8-bit RGB image, rows top to bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Image {
    fn new(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            rgb: vec![255; width as usize * height as usize * 3],
        }
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The colour at `(x, y)`, `None` outside the image.
    pub fn pixel(&self, x: u32, y: u32) -> Option<Rgb> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        Some(Rgb(self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]))
    }

    /// The raw bytes, `width × height × 3`, rows top to bottom.
    pub fn rgb(&self) -> &[u8] {
        &self.rgb
    }

    /// Encodes as an 8-bit RGB PNG.
    ///
    /// # Errors
    /// [`PlotError::Png`] if the encoder fails.
    pub fn to_png(&self) -> Result<Vec<u8>, PlotError> {
        let png_err = |e: png::EncodingError| PlotError::Png {
            message: e.to_string(),
        };
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(png_err)?;
        w.write_image_data(&self.rgb).map_err(png_err)?;
        w.finish().map_err(png_err)?;
        Ok(out)
    }

    fn blend(&mut self, x: usize, y: usize, c: Rgb, a: f32) {
        let i = (y * self.width as usize + x) * 3;
        for (k, v) in [c.0, c.1, c.2].into_iter().enumerate() {
            let old = f32::from(self.rgb[i + k]);
            self.rgb[i + k] = (old + (f32::from(v) - old) * a).round() as u8;
        }
    }

    fn fill(&mut self, r: Rect, c: Rgb) {
        let (x0, x1) = self.cols(r.x0, r.x1);
        let (y0, y1) = self.rows(r.y0, r.y1);
        for y in y0..y1 {
            for x in x0..x1 {
                self.blend(x, y, c, 1.0);
            }
        }
    }

    /// Pixel columns whose centres lie in `[a, b)`.
    fn cols(&self, a: f64, b: f64) -> (usize, usize) {
        span(a, b, self.width)
    }

    /// Pixel rows whose centres lie in `[a, b)`.
    fn rows(&self, a: f64, b: f64) -> (usize, usize) {
        span(a, b, self.height)
    }

    fn polyline(&mut self, pts: &[(f64, f64)], c: Rgb, width: f64, clip: Option<Rect>) {
        if pts.is_empty() {
            return;
        }
        let r = width / 2.0;
        let pad = r + 1.0;
        let (mut bx0, mut by0, mut bx1, mut by1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
        for &(x, y) in pts {
            bx0 = bx0.min(x - pad);
            by0 = by0.min(y - pad);
            bx1 = bx1.max(x + pad);
            by1 = by1.max(y + pad);
        }
        if let Some(k) = clip {
            bx0 = bx0.max(k.x0);
            by0 = by0.max(k.y0);
            bx1 = bx1.min(k.x1);
            by1 = by1.min(k.y1);
        }
        let (cx0, cx1) = self.cols(bx0, bx1);
        let (cy0, cy1) = self.rows(by0, by1);
        if cx0 >= cx1 || cy0 >= cy1 {
            return;
        }
        let mw = cx1 - cx0;
        let mut mask = vec![0f32; mw * (cy1 - cy0)];
        let segs: Vec<((f64, f64), (f64, f64))> = if pts.len() == 1 {
            vec![(pts[0], pts[0])]
        } else {
            pts.windows(2).map(|w| (w[0], w[1])).collect()
        };
        for (a, b) in segs {
            let (sx0, sx1) = span(a.0.min(b.0) - pad, a.0.max(b.0) + pad, self.width);
            let (sy0, sy1) = span(a.1.min(b.1) - pad, a.1.max(b.1) + pad, self.height);
            for y in sy0.max(cy0)..sy1.min(cy1) {
                for x in sx0.max(cx0)..sx1.min(cx1) {
                    let d = seg_dist((x as f64 + 0.5, y as f64 + 0.5), a, b);
                    let cov = (r + 0.5 - d).clamp(0.0, 1.0) as f32;
                    let m = &mut mask[(y - cy0) * mw + (x - cx0)];
                    *m = m.max(cov);
                }
            }
        }
        for y in cy0..cy1 {
            for x in cx0..cx1 {
                let a = mask[(y - cy0) * mw + (x - cx0)];
                if a > 0.0 {
                    self.blend(x, y, c, a);
                }
            }
        }
    }

    fn text(&mut self, t: &TextSpec<'_>) {
        let s = f64::from(t.scale);
        let len = f64::from(font::text_width(t.text)) * s;
        let start = match t.anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -len / 2.0,
            Anchor::End => -len,
        };
        // Offset across the line that puts the middle of the capitals on the anchor.
        let across = (-f64::from(font::CAP_H) * s / 2.0).round();
        let sc = t.scale as usize;
        for (n, ch) in t.text.chars().enumerate() {
            let g = font::glyph(ch);
            let along = (start + (n as u32 * font::ADVANCE) as f64 * s).round();
            for (row, bits) in g.iter().enumerate() {
                for col in 0..font::GLYPH_W as usize {
                    if bits & (1 << (font::GLYPH_W as usize - 1 - col)) == 0 {
                        continue;
                    }
                    let (u, v) = (along + (col * sc) as f64, across + (row * sc) as f64);
                    // Horizontal: along = +x, across = +y. Vertical (reads upwards): along =
                    // −y, across = +x, so a glyph's pixel square extends towards −y.
                    let (px, py) = if t.vertical {
                        (t.x.round() + v, t.y.round() - u - s)
                    } else {
                        (t.x.round() + u, t.y.round() + v)
                    };
                    self.fill(
                        Rect {
                            x0: px,
                            y0: py,
                            x1: px + s,
                            y1: py + s,
                        },
                        t.color,
                    );
                }
            }
        }
    }
}

struct TextSpec<'a> {
    x: f64,
    y: f64,
    text: &'a str,
    anchor: Anchor,
    vertical: bool,
    scale: u32,
    color: Rgb,
}

/// Indices `i` in `0..n` with `a ≤ i + 0.5 < b`.
fn span(a: f64, b: f64, n: u32) -> (usize, usize) {
    let lo = (a - 0.5).ceil().clamp(0.0, f64::from(n)) as usize;
    let hi = (b - 0.5).ceil().clamp(0.0, f64::from(n)) as usize;
    (lo, hi.max(lo))
}

/// Distance from `p` to the segment `a`–`b`.
fn seg_dist(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (qx, qy) = (a.0 + t * dx, a.1 + t * dy);
    ((p.0 - qx).powi(2) + (p.1 - qy).powi(2)).sqrt()
}

/// Draws `scene`.
pub(crate) fn render(scene: &Scene) -> Image {
    let mut img = Image::new(scene.width, scene.height);
    for sh in &scene.shapes {
        match sh {
            Shape::Rect { rect, fill, stroke } => {
                if let Some(c) = fill {
                    img.fill(*rect, *c);
                }
                if let Some(c) = stroke {
                    let r = *rect;
                    let pts = [
                        (r.x0, r.y0),
                        (r.x1, r.y0),
                        (r.x1, r.y1),
                        (r.x0, r.y1),
                        (r.x0, r.y0),
                    ];
                    img.polyline(&pts, *c, 1.0, None);
                }
            }
            Shape::Polyline {
                points,
                color,
                width,
                clipped,
            } => img.polyline(points, *color, *width, clipped.then_some(scene.plot)),
            Shape::Text {
                x,
                y,
                text,
                anchor,
                vertical,
                scale,
                color,
            } => img.text(&TextSpec {
                x: *x,
                y: *y,
                text,
                anchor: *anchor,
                vertical: *vertical,
                scale: *scale,
                color: *color,
            }),
        }
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: Rgb = Rgb(255, 0, 0);

    #[test]
    fn one_pixel_line_on_pixel_centres_is_crisp() {
        let mut img = Image::new(10, 10);
        img.polyline(&[(1.5, 4.5), (8.5, 4.5)], RED, 1.0, None);
        for x in 0..10 {
            let want = if (1..=8).contains(&x) {
                RED
            } else {
                Rgb(255, 255, 255)
            };
            assert_eq!(img.pixel(x, 4), Some(want), "x = {x}");
            assert_eq!(img.pixel(x, 3), Some(Rgb(255, 255, 255)));
            assert_eq!(img.pixel(x, 5), Some(Rgb(255, 255, 255)));
        }
    }

    #[test]
    fn thick_diagonal_has_full_colour_core_and_soft_edges() {
        let mut img = Image::new(20, 20);
        img.polyline(&[(2.0, 2.0), (18.0, 18.0)], RED, 2.0, None);
        assert_eq!(img.pixel(10, 10), Some(RED));
        let edge = img.pixel(11, 9).unwrap();
        assert!(edge != RED && edge != Rgb(255, 255, 255), "{edge:?}");
        assert_eq!(img.pixel(15, 5), Some(Rgb(255, 255, 255)));
    }

    #[test]
    fn clip_rectangle_bounds_the_line() {
        let mut img = Image::new(20, 20);
        let clip = Rect {
            x0: 5.0,
            y0: 0.0,
            x1: 15.0,
            y1: 20.0,
        };
        img.polyline(&[(0.0, 10.5), (20.0, 10.5)], RED, 2.0, Some(clip));
        assert_eq!(img.pixel(4, 10), Some(Rgb(255, 255, 255)));
        assert_eq!(img.pixel(5, 10), Some(RED));
        assert_eq!(img.pixel(14, 10), Some(RED));
        assert_eq!(img.pixel(15, 10), Some(Rgb(255, 255, 255)));
    }

    #[test]
    fn text_draws_the_glyph_bits() {
        let mut img = Image::new(20, 20);
        img.text(&TextSpec {
            x: 2.0,
            y: 10.0,
            text: "I",
            anchor: Anchor::Start,
            vertical: false,
            scale: 1,
            color: RED,
        });
        // 'I' row 0 is .###. : columns 1..=3 inked, at y = 10 - round(3.5) = 6.
        let row: Vec<bool> = (2..7).map(|x| img.pixel(x, 6) == Some(RED)).collect();
        assert_eq!(row, [false, true, true, true, false]);
        // Row 1 is ..#..
        let row: Vec<bool> = (2..7).map(|x| img.pixel(x, 7) == Some(RED)).collect();
        assert_eq!(row, [false, false, true, false, false]);
    }

    #[test]
    fn png_round_trip() {
        let mut img = Image::new(7, 3);
        img.fill(
            Rect {
                x0: 0.0,
                y0: 0.0,
                x1: 1.0,
                y1: 1.0,
            },
            RED,
        );
        let bytes = img.to_png().unwrap();
        let dec = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (7, 3));
        assert_eq!(&buf[..info.buffer_size()], img.rgb());
    }
}
