//! Plot series of a report: allocation (pages per tenant) over time for each controller, and hit
//! ratio over time (overall per controller, and per tenant per controller).
//!
//! Rendering (SVG + PNG) is done by the `locus-plot` crate once it is in the workspace; until
//! then [`write_plots`] writes no files and the series are available from `intervals.csv`.

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
/// `hit-ratio` (overall hit ratio per controller over time) and `hit-ratio-<tenant>`.
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

/// Renders [`charts`] into `dir`; returns the files written.
///
/// # Errors
/// [`SimError::Io`] when a file cannot be written.
pub fn write_plots(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let _ = (charts(r), dir);
    Ok(Vec::new())
}
