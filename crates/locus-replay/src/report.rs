//! The result of a run: a table on stdout, and CSV, JSON and PNG plots in a directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{Pacing, ReplayConfig};
use crate::error::{ReplayError, Result};
use crate::stats::{SeriesRow, ServerSample, TenantReport};

/// Everything a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The target.
    pub target: String,
    /// The input file.
    pub input: String,
    /// `closed` or the open-loop rate.
    pub pacing: String,
    /// Connections per tenant.
    pub connections: usize,
    /// Wall time of the run (s).
    pub elapsed_s: f64,
    /// Time the figures cover, after the warm-up (s).
    pub measured_s: f64,
    /// Per tenant, in order of first appearance.
    pub tenants: Vec<TenantReport>,
    /// All tenants together.
    pub overall: TenantReport,
    /// Per second and tenant.
    pub series: Vec<SeriesRow>,
    /// The server's statistics: before the first request, once a second, after the last reply.
    pub server: Vec<ServerSample>,
    /// Why sampling the server stopped, if it did (e.g. INFO not allowed).
    pub server_error: Option<String>,
    /// The server's hit ratio over the run, from its `keyspace_hits`/`keyspace_misses` (or
    /// memcached's `get_hits`/`get_misses`) before and after, as the sampling connection sees
    /// them: a multi-tenant Locus shows a connection its own tenant only (db 0's, unless
    /// `info_auth` logs in as the administrator).
    pub server_hit_ratio: Option<f64>,
    /// `INFO tenants` after the run (Locus only).
    pub server_tenants: Vec<(String, String)>,
    /// The in-process server's own hit and miss counts (`fake` and `null` targets).
    pub fake_counts: Option<(u64, u64)>,
}

fn field(s: &ServerSample, names: &[&str]) -> Option<f64> {
    s.fields
        .iter()
        .find(|(k, _)| names.contains(&k.as_str()))
        .and_then(|(_, v)| v.parse().ok())
}

impl Report {
    /// Assembles the report.
    #[expect(
        clippy::too_many_arguments,
        reason = "one constructor for the driver's results"
    )]
    pub fn new(
        cfg: &ReplayConfig,
        elapsed_s: f64,
        measured_s: f64,
        tenants: Vec<TenantReport>,
        overall: TenantReport,
        series: Vec<SeriesRow>,
        server: Vec<ServerSample>,
        server_error: Option<String>,
        server_tenants: Vec<(String, String)>,
        fake_counts: Option<(u64, u64)>,
    ) -> Report {
        let server_hit_ratio = (|| {
            let (a, b) = (server.first()?, server.last()?);
            let h = ["keyspace_hits", "get_hits"];
            let m = ["keyspace_misses", "get_misses"];
            let dh = field(b, &h)? - field(a, &h)?;
            let dm = field(b, &m)? - field(a, &m)?;
            (server.len() > 1 && dh + dm > 0.0).then(|| dh / (dh + dm))
        })();
        Report {
            target: cfg.target.to_string(),
            input: match &cfg.input {
                crate::config::Input::Trace(p) | crate::config::Input::Experiment(p) => {
                    p.display().to_string()
                }
            },
            pacing: match cfg.pacing {
                Pacing::Closed => "closed".into(),
                Pacing::Open(r) => format!("open {r} req/s"),
            },
            connections: cfg.connections,
            elapsed_s,
            measured_s,
            tenants,
            overall,
            series,
            server,
            server_error,
            server_hit_ratio,
            server_tenants,
            fake_counts,
        }
    }

    /// The table `locus replay` prints.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} <- {} ({}, {} connection(s)/tenant): {:.1} s, {:.1} s measured",
            self.target, self.input, self.pacing, self.connections, self.elapsed_s, self.measured_s
        );
        let _ = writeln!(
            s,
            "{:<12} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7}",
            "tenant",
            "gets",
            "hit%",
            "req/s",
            "mean ms",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "fetch/s",
            "fetch ms",
            "errors"
        );
        for t in self.tenants.iter().chain(std::iter::once(&self.overall)) {
            let ms = |us: f64| us / 1000.0;
            let _ = writeln!(
                s,
                "{:<12} {:>9} {:>7.2} {:>10.0} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.0} {:>10.3} {:>7}",
                t.name,
                t.counters.gets,
                100.0 * t.hit_ratio,
                t.throughput,
                ms(t.latency.mean_us),
                ms(t.latency.p50_us as f64),
                ms(t.latency.p95_us as f64),
                ms(t.latency.p99_us as f64),
                ms(t.latency.p999_us as f64),
                t.backend_rate,
                ms(t.backend.mean_us),
                t.counters.errors
            );
        }
        if let Some(h) = self.server_hit_ratio {
            let _ = writeln!(
                s,
                "server's own hit ratio over the run, as its INFO connection may see it: {:.2}%",
                100.0 * h
            );
        }
        if let Some(e) = &self.server_error {
            let _ = writeln!(s, "server statistics not sampled: {e}");
        }
        s
    }

    /// Writes summary.csv, series.csv, server.csv, report.json and PNG plots into `dir`.
    ///
    /// # Errors
    /// A file that cannot be written, or a plot that cannot be drawn.
    pub fn write_dir(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let io = |what: &Path, e: std::io::Error| ReplayError::Io {
            what: what.display().to_string(),
            error: e,
        };
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let mut files = Vec::new();
        let mut write = |name: &str, body: String| -> Result<()> {
            let p = dir.join(name);
            std::fs::write(&p, body).map_err(|e| io(&p, e))?;
            files.push(p);
            Ok(())
        };
        let mut csv = String::from(
            "tenant,gets,hits,misses,writes,errors,hit_ratio,throughput,mean_us,p50_us,p95_us,p99_us,p999_us,max_us,backend_calls,backend_mean_us,backend_p99_us\n",
        );
        for t in self.tenants.iter().chain(std::iter::once(&self.overall)) {
            let (c, l, b) = (&t.counters, &t.latency, &t.backend);
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{:.6},{:.1},{:.1},{},{},{},{},{},{},{:.1},{}",
                t.name,
                c.gets,
                c.hits,
                c.misses,
                c.writes,
                c.errors,
                t.hit_ratio,
                t.throughput,
                l.mean_us,
                l.p50_us,
                l.p95_us,
                l.p99_us,
                l.p999_us,
                l.max_us,
                c.backend_calls,
                b.mean_us,
                b.p99_us
            );
        }
        write("summary.csv", csv)?;
        let mut csv = String::from(
            "second,tenant,gets,hits,misses,writes,errors,backend_calls,mean_us,p99_us\n",
        );
        for r in &self.series {
            let c = &r.counters;
            let _ = writeln!(
                csv,
                "{:.3},{},{},{},{},{},{},{},{:.1},{}",
                r.second,
                r.tenant,
                c.gets,
                c.hits,
                c.misses,
                c.writes,
                c.errors,
                c.backend_calls,
                r.mean_us,
                r.p99_us
            );
        }
        write("series.csv", csv)?;
        let mut csv = String::from("second,field,value\n");
        for s in &self.server {
            for (k, v) in &s.fields {
                let _ = writeln!(csv, "{:.3},{k},{v}", s.second);
            }
        }
        write("server.csv", csv)?;
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| ReplayError::Config(format!("report.json: {e}")))?;
        write("report.json", json)?;
        for (name, title, y, f) in [
            ("latency.png", "mean GET latency per second", "ms", 0),
            ("p99.png", "p99 GET latency per second", "ms", 1),
            ("hit_ratio.png", "hit ratio per second", "hit ratio", 2),
            ("throughput.png", "requests per second", "req/s", 3),
        ] {
            let mut chart = locus_plot::Chart::new(title, "seconds", y);
            for t in &self.tenants {
                let pts: Vec<(f64, f64)> = self
                    .series
                    .iter()
                    .filter(|r| r.tenant == t.name)
                    .map(|r| {
                        let c = &r.counters;
                        let v = match f {
                            0 => r.mean_us / 1000.0,
                            1 => r.p99_us as f64 / 1000.0,
                            2 if c.gets > 0 => c.hits as f64 / c.gets as f64,
                            2 => 0.0,
                            _ => (c.gets + c.writes) as f64,
                        };
                        (r.second, v)
                    })
                    .collect();
                if !pts.is_empty() {
                    chart.add_series(&t.name, pts);
                }
            }
            if chart.series.is_empty() {
                continue;
            }
            let p = dir.join(name);
            chart
                .save(&p)
                .map_err(|e| ReplayError::Config(format!("{}: {e}", p.display())))?;
            files.push(p);
        }
        Ok(files)
    }
}
