//! Plot series of a report: allocation (pages per tenant) over time for each controller, and hit
//! ratio over time (overall per controller, and per tenant per controller).
//!
//! [`charts`] builds the data; [`write_plots`] draws each chart as SVG and PNG with `locus-plot`.

use std::path::{Path, PathBuf};

use crate::{Report, SimError};

/// One line of a chart: (x = trace requests, y) points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// One chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// File stem.
    pub file: String,
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Lines.
    pub series: Vec<Series>,
}

/// The charts of a report: `alloc-<label>` (pages per tenant over time) for each controller,
/// `k-<label>` (K per tenant over time) for controllers that change K, `hit-ratio` (overall hit
/// ratio per controller over time) and `hit-ratio-<tenant>`.
pub fn charts(r: &Report) -> Vec<Chart> {
    let mut out = Vec::new();
    for run in &r.runs {
        let series = r
            .tenants
            .iter()
            .enumerate()
            .map(|(i, name)| Series {
                label: name.clone(),
                points: run
                    .intervals
                    .iter()
                    .map(|row| {
                        (
                            row.at_request as f64,
                            row.pages.get(i).copied().unwrap_or(0) as f64,
                        )
                    })
                    .collect(),
            })
            .collect();
        out.push(Chart {
            file: format!("alloc-{}", sanitize(&run.label)),
            title: format!("{}: {} allocation", r.name, run.label),
            x_label: "requests".into(),
            y_label: format!("pages of {} bytes", r.page_size),
            series,
        });
    }
    // K over time, for controllers that change it.
    for run in &r.runs {
        let first = run.intervals.first().map(|row| row.samples.clone());
        if run
            .intervals
            .iter()
            .all(|row| Some(&row.samples) == first.as_ref())
        {
            continue;
        }
        out.push(Chart {
            file: format!("k-{}", sanitize(&run.label)),
            title: format!("{}: {} K (maxmemory-samples)", r.name, run.label),
            x_label: "requests".into(),
            y_label: "K".into(),
            series: r
                .tenants
                .iter()
                .enumerate()
                .map(|(i, name)| Series {
                    label: name.clone(),
                    points: run
                        .intervals
                        .iter()
                        .map(|row| {
                            (
                                row.at_request as f64,
                                f64::from(row.samples.get(i).copied().unwrap_or(0)),
                            )
                        })
                        .collect(),
                })
                .collect(),
        });
    }
    let hr = |i: Option<usize>| -> Vec<Series> {
        r.runs
            .iter()
            .map(|run| Series {
                label: run.label.clone(),
                points: run
                    .intervals
                    .iter()
                    .filter_map(|row| {
                        let y = match i {
                            None => row.overall_hit_ratio,
                            Some(i) => row.hit_ratio.get(i).copied().flatten(),
                        }?;
                        Some((row.at_request as f64, y))
                    })
                    .collect(),
            })
            .collect()
    };
    out.push(Chart {
        file: "hit-ratio".into(),
        title: format!("{}: hit ratio per interval", r.name),
        x_label: "requests".into(),
        y_label: "hit ratio".into(),
        series: hr(None),
    });
    for (i, name) in r.tenants.iter().enumerate() {
        out.push(Chart {
            file: format!("hit-ratio-{}", sanitize(name)),
            title: format!("{}: {name} hit ratio per interval", r.name),
            x_label: "requests".into(),
            y_label: "hit ratio".into(),
            series: hr(Some(i)),
        });
    }
    out
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Renders [`charts`] into `dir` as `<file>.svg` and `<file>.png`; returns the files written.
/// Charts without any point (a run without decisions) are skipped.
///
/// # Errors
/// [`SimError::Plot`] when a chart cannot be drawn or written.
pub fn write_plots(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let mut files = Vec::new();
    for c in charts(r) {
        if c.series.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let mut chart = locus_plot::Chart::new(&c.title, &c.x_label, &c.y_label);
        for s in &c.series {
            chart.add_series(&s.label, s.points.clone());
        }
        if c.y_label == "hit ratio" {
            chart.y_range = Some((0.0, 1.0));
        }
        files.extend(save_svg_png(&chart, dir, &c.file)?);
    }
    Ok(files)
}

/// Draws `chart` into `dir` as `<stem>.svg` and `<stem>.png`; returns the two paths.
///
/// # Errors
/// [`SimError::Plot`] when the chart cannot be drawn or written.
pub fn save_svg_png(
    chart: &locus_plot::Chart,
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, SimError> {
    let mut files = Vec::new();
    for ext in ["svg", "png"] {
        let path = dir.join(format!("{stem}.{ext}"));
        chart.save(&path).map_err(|e| SimError::Plot {
            what: path.display().to_string(),
            message: e.to_string(),
        })?;
        files.push(path);
    }
    Ok(files)
}
