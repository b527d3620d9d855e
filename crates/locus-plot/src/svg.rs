//! The SVG back end: one element per [`Shape`], series clipped to the plot area.

use crate::chart::{Anchor, Scene, Shape, TEXT_SCALE};
use crate::font;
use std::fmt::Write as _;

/// SVG font size for a bitmap text scale: a sans-serif face whose capitals are about as tall
/// as the bitmap font's (cap height ≈ 0.72 em).
fn font_size(scale: u32) -> f64 {
    (f64::from(font::CAP_H * scale) / 0.72).round()
}

/// Renders `scene` as a standalone SVG document.
pub(crate) fn render(scene: &Scene) -> String {
    let (w, h) = (scene.width, scene.height);
    let p = scene.plot;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{}">"#,
        font_size(TEXT_SCALE)
    );
    let _ = writeln!(
        s,
        r#"<defs><clipPath id="plot-area"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
        p.x0,
        p.y0,
        p.x1 - p.x0,
        p.y1 - p.y0
    );
    for sh in &scene.shapes {
        match sh {
            Shape::Rect { rect, fill, stroke } => {
                let _ = writeln!(
                    s,
                    r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="{}"/>"#,
                    num(rect.x0),
                    num(rect.y0),
                    num(rect.x1 - rect.x0),
                    num(rect.y1 - rect.y0),
                    fill.map_or("none".to_string(), |c| c.hex()),
                    stroke.map_or("none".to_string(), |c| c.hex()),
                );
            }
            Shape::Polyline {
                points,
                color,
                width,
                clipped,
            } => {
                if points.is_empty() {
                    continue;
                }
                let mut pts = String::new();
                for (i, &(x, y)) in points.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    let _ = write!(pts, "{sep}{},{}", num(x), num(y));
                }
                // A single point still shows (as a dot, by the round cap of a zero-length line).
                if points.len() == 1 {
                    let _ = write!(pts, " {},{}", num(points[0].0), num(points[0].1));
                }
                let clip = if *clipped {
                    r#" clip-path="url(#plot-area)""#
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    r#"<polyline fill="none" stroke="{}" stroke-width="{width}" stroke-linejoin="round" stroke-linecap="round"{clip} points="{pts}"/>"#,
                    color.hex()
                );
            }
            Shape::Text {
                x,
                y,
                text,
                anchor,
                vertical,
                scale,
                color,
            } => {
                let size = font_size(*scale);
                let anchor = match anchor {
                    Anchor::Start => "start",
                    Anchor::Middle => "middle",
                    Anchor::End => "end",
                };
                // The anchor's y is the middle of the capitals; SVG places the baseline.
                let size_attr = if *scale == TEXT_SCALE {
                    String::new()
                } else {
                    format!(r#" font-size="{size}""#)
                };
                if *vertical {
                    let (bx, by) = (x + size * 0.36, *y);
                    let _ = writeln!(
                        s,
                        r#"<text x="{}" y="{}" text-anchor="{anchor}" fill="{}"{size_attr} transform="rotate(-90 {} {})">{}</text>"#,
                        num(bx),
                        num(by),
                        color.hex(),
                        num(bx),
                        num(by),
                        escape(text)
                    );
                } else {
                    let _ = writeln!(
                        s,
                        r#"<text x="{}" y="{}" text-anchor="{anchor}" fill="{}"{size_attr}>{}</text>"#,
                        num(*x),
                        num(y + size * 0.36),
                        color.hex(),
                        escape(text)
                    );
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A coordinate with at most 2 decimals and no trailing zeros.
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Escapes text for an XML text node or attribute.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_escaping() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;?");
    }
}
