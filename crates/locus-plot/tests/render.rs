//! End-to-end: charts rendered to PNG and decoded back, SVG structure, files by extension.

use locus_plot::{Chart, PALETTE, PlotError, Rgb, Series};
use std::collections::HashSet;

/// Decodes a PNG into (width, height, RGB bytes).
fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut r = dec.read_info().expect("valid PNG header");
    let mut buf = vec![0; r.output_buffer_size().expect("buffer size")];
    let info = r.next_frame(&mut buf).expect("valid PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn colours(rgb: &[u8]) -> HashSet<Rgb> {
    rgb.chunks_exact(3).map(|p| Rgb(p[0], p[1], p[2])).collect()
}

/// Three decreasing curves, like an MRC comparison.
fn mrc_chart() -> Chart {
    let mut c = Chart::new(
        "Miss ratio curve: arc_P2.lis.zst",
        "cache capacity (objects)",
        "miss ratio",
    );
    for (i, name) in ["exact", "shards(R=0.01,adj)", "krr K=5"]
        .iter()
        .enumerate()
    {
        let pts = (0..=100)
            .map(|j| {
                let x = f64::from(j) * 9_000.0;
                (
                    x,
                    (1.0 / (1.0 + x / (20_000.0 + 15_000.0 * i as f64))).min(1.0),
                )
            })
            .collect();
        c.add_series(*name, pts);
    }
    c.y_range = Some((0.0, 1.0));
    c
}

#[test]
fn png_has_the_size_and_every_series_colour() {
    let chart = mrc_chart();
    let bytes = chart.render_png().unwrap();
    let (w, h, rgb) = decode(&bytes);
    assert_eq!((w, h), (chart.width, chart.height));
    assert_eq!(rgb.len(), (w * h * 3) as usize);
    let seen = colours(&rgb);
    for (i, s) in chart.series.iter().enumerate() {
        assert!(
            seen.contains(&PALETTE[i]),
            "colour of {:?} missing",
            s.label
        );
    }
    assert!(!seen.contains(&PALETTE[3]), "no fourth series was drawn");
    // Background white, frame and text black-ish.
    assert_eq!(&rgb[..3], &[255, 255, 255]);
    assert!(seen.contains(&Rgb(0, 0, 0)));
    // The decoded pixels are exactly the rasterized image.
    assert_eq!(rgb, chart.render_image().unwrap().rgb());
    if let Ok(dir) = std::env::var("LOCUS_PLOT_SAMPLES") {
        std::fs::write(format!("{dir}/mrc.png"), &bytes).unwrap();
        std::fs::write(format!("{dir}/mrc.svg"), chart.render_svg().unwrap()).unwrap();
    }
}

#[test]
fn series_lie_where_their_data_say() {
    // One horizontal series at y = 0.5 over a fixed [0, 1] × [0, 1]: its colour must appear on
    // the middle row of the plot area and nowhere far from it.
    let mut c = Chart::new("", "", "");
    c.series.push(Series {
        label: "half".into(),
        points: vec![(0.0, 0.5), (1.0, 0.5)],
        color: Some(Rgb(0, 200, 0)),
    });
    c.x_range = Some((0.0, 1.0));
    c.y_range = Some((0.0, 1.0));
    let img = c.render_image().unwrap();
    let mut rows = HashSet::new();
    for y in 0..img.height() {
        for x in 0..img.width() {
            if img.pixel(x, y) == Some(Rgb(0, 200, 0)) {
                rows.insert(y);
            }
        }
    }
    // The legend swatch is drawn in the same colour on its own row; the line's rows are two
    // adjacent ones (width 2) in the middle of the image.
    let mid: Vec<u32> = rows
        .iter()
        .copied()
        .filter(|&y| y > img.height() / 4 && y < img.height() * 3 / 4)
        .collect();
    assert!(!mid.is_empty() && mid.len() <= 2, "{rows:?}");
}

#[test]
fn log_x_chart_renders_and_rejects_zero() {
    let mut c = Chart::new("hit ratio over time", "time (s)", "hit ratio");
    c.log_x = true;
    c.add_series("tenant a", vec![(1.0, 0.2), (10.0, 0.5), (1000.0, 0.9)]);
    c.add_series("tenant b", vec![(2.0, 0.1), (50.0, 0.3), (5000.0, 0.35)]);
    let (w, h, rgb) = decode(&c.render_png().unwrap());
    assert_eq!((w, h), (c.width, c.height));
    let seen = colours(&rgb);
    assert!(seen.contains(&PALETTE[0]) && seen.contains(&PALETTE[1]));
    let svg = c.render_svg().unwrap();
    for label in ["1", "10", "100", "1k", "10k"] {
        assert!(
            svg.contains(&format!(">{label}</text>")),
            "tick {label} missing"
        );
    }
    if let Ok(dir) = std::env::var("LOCUS_PLOT_SAMPLES") {
        std::fs::write(format!("{dir}/logx.png"), c.render_png().unwrap()).unwrap();
    }
    c.series[0].points.push((0.0, 1.0));
    assert!(matches!(
        c.render_png(),
        Err(PlotError::NonPositiveLogX { index: 3, .. })
    ));
}

#[test]
fn svg_has_one_polyline_per_series_and_escaped_labels() {
    let mut c = mrc_chart();
    c.add_series("a<b & c", vec![(0.0, 0.3), (1.0, 0.2)]);
    let svg = c.render_svg().unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches(r#"clip-path="url(#plot-area)""#).count(), 4);
    assert!(svg.contains("a&lt;b &amp; c"));
    assert!(svg.contains(">miss ratio</text>") && svg.contains(">0.6</text>"));
}

#[test]
fn save_picks_the_format_from_the_name() {
    let dir = std::env::temp_dir().join(format!("locus-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = mrc_chart();
    c.save(&dir.join("a.png")).unwrap();
    c.save(&dir.join("a.SVG")).unwrap();
    assert!(
        std::fs::read(dir.join("a.png"))
            .unwrap()
            .starts_with(b"\x89PNG\r\n\x1a\n")
    );
    assert!(
        std::fs::read_to_string(dir.join("a.SVG"))
            .unwrap()
            .starts_with("<svg")
    );
    assert!(matches!(
        c.save(&dir.join("a.gif")),
        Err(PlotError::UnknownFormat { .. })
    ));
    let e = c.save(&dir.join("no/such/dir/a.png")).unwrap_err();
    assert!(matches!(e, PlotError::Io { .. }));
    assert!(e.to_string().contains("no/such/dir/a.png"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
