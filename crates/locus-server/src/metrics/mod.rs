//! The operator's HTTP listener (`[metrics] bind`): Prometheus metrics, a live page of every
//! tenant's curves and allocation, and the JSON the page reads.
//!
//! ```text
//!  tokio runtime (the server's)
//!  ├─ http::serve: accept ─► one task per connection: read head (≤ 8 KiB, 10 s) ─► route
//!  │      GET /metrics       prom::render     OpenMetrics text (prometheus-client)
//!  │      GET /              page.html        embedded, inline JS/CSS, no external asset
//!  │      GET /api/tenants   api::tenants     figures, "over time" series, last decisions
//!  │      GET /api/curves    api::curves      each tenant's newest miss ratio curves
//!  └─ sampler: every metrics.sample_interval, one short engine lock ─► History (a bounded ring
//!     of metrics.history samples per tenant: pages, target, hit ratio, miss penalty, ...)
//! ```
//!
//! Every route copies what it needs out of the engine under one short hold of its lock
//! ([`snapshot::Snapshot`]) and encodes afterwards. The listener shows every tenant's names
//! and figures: it is an operator's interface, loopback-only unless `metrics.allow_remote`
//! (docs/monitoring.md).

pub mod api;
pub mod http;
pub mod prom;
pub mod snapshot;

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::server::Shared;

/// The live page (HTML with inline CSS and JS).
pub const PAGE: &str = include_str!("page.html");

/// One sample of one tenant's "over time" series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Server clock (ms).
    pub t_ms: u64,
    /// Pages owned.
    pub pages: u64,
    /// Page target in force.
    pub target: Option<u64>,
    /// Keys stored.
    pub items: u64,
    /// Hits over the sample's interval / GETs over it (`None`: no GET in the interval).
    pub hit_ratio: Option<f64>,
    /// GETs per second over the interval.
    pub gets_per_s: f64,
    /// Mean miss penalty (µs).
    pub penalty_us: f64,
    /// K.
    pub samples: u32,
    /// Evictions over the interval.
    pub evictions: u64,
}

/// The bounded per-tenant rings of [`Sample`]s.
#[derive(Debug, Default)]
pub struct History {
    cap: usize,
    series: Vec<VecDeque<Sample>>,
    /// Cumulative (hits, misses, evictions) and time at the previous sample, per tenant.
    prev: Vec<Option<(u64, u64, u64, u64)>>,
}

impl History {
    /// Rings of at most `cap` samples (at least 1).
    pub fn new(cap: usize) -> Self {
        History {
            cap: cap.max(1),
            series: Vec::new(),
            prev: Vec::new(),
        }
    }

    /// Appends one sample per tenant from cumulative counters `(pages, target, items, hits,
    /// misses, evictions, penalty_us, samples)` read at `t_ms`. A counter that went down
    /// (CONFIG RESETSTAT) restarts the interval from it.
    #[expect(
        clippy::type_complexity,
        reason = "a row of plain counters, named in the doc"
    )]
    pub fn record(&mut self, t_ms: u64, rows: &[(u64, Option<u64>, u64, u64, u64, u64, f64, u32)]) {
        self.series.resize_with(rows.len(), VecDeque::new);
        self.prev.resize(rows.len(), None);
        for (i, &(pages, target, items, hits, misses, evictions, penalty_us, samples)) in
            rows.iter().enumerate()
        {
            let (dh, dm, de, dt) = match self.prev[i] {
                Some((h, m, e, t)) if hits >= h && misses >= m && evictions >= e => {
                    (hits - h, misses - m, evictions - e, t_ms.saturating_sub(t))
                }
                _ => (0, 0, 0, 0),
            };
            self.prev[i] = Some((hits, misses, evictions, t_ms));
            let gets = dh + dm;
            let ring = &mut self.series[i];
            if ring.len() == self.cap {
                ring.pop_front();
            }
            ring.push_back(Sample {
                t_ms,
                pages,
                target,
                items,
                hit_ratio: (gets > 0).then(|| dh as f64 / gets as f64),
                gets_per_s: if dt > 0 {
                    gets as f64 * 1000.0 / dt as f64
                } else {
                    0.0
                },
                penalty_us,
                samples,
                evictions: de,
            });
        }
    }

    /// Tenant `i`'s samples, oldest first.
    pub fn series(&self, i: usize) -> impl Iterator<Item = &Sample> {
        self.series.get(i).into_iter().flatten()
    }
}

/// The listener's state shared by its tasks.
#[derive(Debug)]
pub struct Monitor {
    /// The "over time" series.
    pub history: Mutex<History>,
    /// Milliseconds between samples.
    pub sample_ms: u64,
}

impl Monitor {
    /// A monitor keeping `history` samples per tenant, one every `sample_ms`.
    pub fn new(history: usize, sample_ms: u64) -> Self {
        Monitor {
            history: Mutex::new(History::new(history)),
            sample_ms: sample_ms.max(1),
        }
    }

    /// Takes one sample of every tenant (one short engine lock).
    pub fn sample(&self, shared: &Shared) {
        let (t_ms, rows) = {
            let eng = shared.engine();
            let targets = eng.targets();
            let rows: Vec<_> = eng
                .tenant_ids()
                .into_iter()
                .map(|t| {
                    let s = eng.tenant_stats(t);
                    (
                        s.pages,
                        targets.get(t.0 as usize).copied().flatten(),
                        s.items,
                        s.hits,
                        s.misses,
                        s.evictions,
                        eng.penalty(t).0,
                        s.samples,
                    )
                })
                .collect();
            (shared.clock().now_ms(), rows)
        };
        self.history.lock().record(t_ms, &rows);
    }

    /// Answers one request.
    pub fn route(&self, shared: &Shared, req: &http::Request) -> http::Response {
        use http::Response;
        let json = "application/json";
        match req.path.as_str() {
            "/metrics" => Response::ok(prom::CONTENT_TYPE, prom::render(shared)),
            "/" | "/index.html" => Response::ok("text/html; charset=utf-8", PAGE)
                .with(
                    "Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                )
                .with("Referrer-Policy", "no-referrer"),
            "/api/tenants" => Response::ok(json, api::tenants(shared, self).to_string()),
            "/api/curves" => match api::tenant_filter(&req.query) {
                Ok(only) => Response::ok(json, api::curves(shared, only.as_deref()).to_string()),
                Err(why) => Response::error(400, &why),
            },
            _ => Response::error(404, "try /, /metrics, /api/tenants or /api/curves"),
        }
    }
}

/// Serves the listener and samples the tenants until the server shuts down.
pub async fn run(shared: Arc<Shared>, listener: tokio::net::TcpListener) {
    let (allow_remote, history, sample_ms) = {
        let c = shared.config();
        (
            c.metrics.allow_remote,
            c.metrics.history,
            u64::try_from(c.metrics.sample_interval.0.as_millis()).unwrap_or(u64::MAX),
        )
    };
    let mon = Arc::new(Monitor::new(history, sample_ms));
    mon.sample(&shared);
    let sampler = {
        let (shared, mon) = (shared.clone(), mon.clone());
        async move {
            let mut stop = shared.shutdown_rx();
            loop {
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_millis(mon.sample_ms)) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                mon.sample(&shared);
            }
        }
    };
    let mut stop = shared.shutdown_rx();
    let route = {
        let shared = shared.clone();
        move |req: &http::Request| mon.route(&shared, req)
    };
    let server = http::serve(listener, allow_remote, route, async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    tokio::join!(sampler, server);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_and_measures_intervals() {
        let mut h = History::new(3);
        let row = |hits, misses| (1, Some(2), 3, hits, misses, 0, 5.0, 5);
        h.record(0, &[row(0, 0)]);
        h.record(1000, &[row(30, 10)]);
        h.record(2000, &[row(30, 10)]);
        h.record(3000, &[row(40, 30)]);
        let s: Vec<&Sample> = h.series(0).collect();
        assert_eq!(s.len(), 3, "the ring keeps the newest 3");
        assert_eq!(s[0].t_ms, 1000);
        assert_eq!(s[0].hit_ratio, Some(0.75));
        assert_eq!(s[0].gets_per_s, 40.0);
        assert_eq!(s[1].hit_ratio, None, "no GET in the interval");
        assert_eq!(s[2].hit_ratio, Some(10.0 / 30.0));
        // CONFIG RESETSTAT: counters went down; the interval restarts.
        h.record(4000, &[row(1, 1)]);
        assert_eq!(h.series(0).last().unwrap().hit_ratio, None);
        h.record(5000, &[row(2, 1)]);
        assert_eq!(h.series(0).last().unwrap().hit_ratio, Some(1.0));
    }

    #[test]
    fn latency_buckets_are_powers_of_two_microseconds() {
        use crate::server::{LATENCY_BUCKETS, latency_bucket};
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(1000), 0);
        assert_eq!(latency_bucket(1001), 1);
        assert_eq!(latency_bucket(2000), 1);
        assert_eq!(latency_bucket(2001), 2);
        assert_eq!(latency_bucket(1_000_000 * 1000), LATENCY_BUCKETS - 2);
        assert_eq!(latency_bucket(((1 << 20) + 1) * 1000), LATENCY_BUCKETS - 1);
        assert_eq!(latency_bucket((1 << 20) * 1000), LATENCY_BUCKETS - 2);
        assert_eq!(latency_bucket(u64::MAX), LATENCY_BUCKETS - 1);
    }
}
