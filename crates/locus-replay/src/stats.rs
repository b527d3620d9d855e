//! What a run measures: per tenant, HDR histograms of end-to-end GET latency (GET, and on a
//! miss the backend fetch and the SET) and of backend time, counters, and a per-second series.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies are recorded in µs, up to an hour, 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// The live counters of one tenant (behind a mutex shared by its connections).
pub struct TenantStats {
    /// End-to-end GET latency of measured requests (µs).
    pub lat: Histogram<u64>,
    /// Backend time of measured misses (µs).
    pub backend: Histogram<u64>,
    /// GET latency in the current second.
    pub sec_lat: Histogram<u64>,
    /// Measured counters.
    pub c: Counters,
    /// Counters of the current second (warm-up included, so the series shows it).
    pub sec: Counters,
    /// Counters including the warm-up.
    pub all: Counters,
    /// When the first measured request began (the measured window opens).
    pub first_begin: Option<Instant>,
    /// When the last measured request completed (the window closes).
    pub last_done: Option<Instant>,
}

/// Request counters.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Counters {
    /// GETs.
    pub gets: u64,
    /// GETs that hit.
    pub hits: u64,
    /// GETs that missed (each followed by a backend fetch and a SET).
    pub misses: u64,
    /// SETs and DELs of the trace itself.
    pub writes: u64,
    /// Error replies from the server.
    pub errors: u64,
    /// Backend fetches.
    pub backend_calls: u64,
    /// Slow-class fetches (the `pg:two` backend's expensive query).
    pub backend_slow: u64,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        self.gets += o.gets;
        self.hits += o.hits;
        self.misses += o.misses;
        self.writes += o.writes;
        self.errors += o.errors;
        self.backend_calls += o.backend_calls;
        self.backend_slow += o.backend_slow;
    }
}

/// The outcome of one request, as a connection records it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// A GET (else a write).
    pub get: bool,
    /// The GET hit.
    pub hit: bool,
    /// The GET missed (the fetch and SET followed, whatever they answered).
    pub miss: bool,
    /// The server answered an error.
    pub error: bool,
    /// Backend time, when the request fetched.
    pub backend: Option<Duration>,
    /// The fetch ran the slow query.
    pub slow: bool,
    /// End-to-end latency.
    pub latency: Duration,
    /// In the warm-up.
    pub warm: bool,
    /// When the request began (its due time in open loop).
    pub begin: Option<Instant>,
}

impl Default for TenantStats {
    fn default() -> Self {
        TenantStats {
            lat: histogram(),
            backend: histogram(),
            sec_lat: histogram(),
            c: Counters::default(),
            sec: Counters::default(),
            all: Counters::default(),
            first_begin: None,
            last_done: None,
        }
    }
}

impl TenantStats {
    /// Records one request.
    pub fn record(&mut self, o: &Outcome) {
        let mut d = Counters::default();
        if o.get {
            d.gets = 1;
            d.hits = o.hit as u64;
            d.misses = o.miss as u64;
        } else {
            d.writes = 1;
        }
        d.errors = o.error as u64;
        d.backend_calls = o.backend.is_some() as u64;
        d.backend_slow = (o.backend.is_some() && o.slow) as u64;
        self.all.add(&d);
        self.sec.add(&d);
        let us = (o.latency.as_micros() as u64).max(1);
        if o.get {
            self.sec_lat.saturating_record(us);
        }
        if o.warm {
            return;
        }
        self.c.add(&d);
        if let Some(b) = o.begin {
            self.first_begin = Some(self.first_begin.map_or(b, |f| f.min(b)));
            let done = b + o.latency;
            self.last_done = Some(self.last_done.map_or(done, |l| l.max(done)));
        }
        if o.get {
            self.lat.saturating_record(us);
        }
        if let Some(b) = o.backend {
            self.backend
                .saturating_record((b.as_micros() as u64).max(1));
        }
    }

    /// Takes the current second's figures and starts the next second.
    pub fn take_second(&mut self) -> (Counters, f64, u64) {
        let c = std::mem::take(&mut self.sec);
        let (mean, p99) = if self.sec_lat.is_empty() {
            (0.0, 0)
        } else {
            (self.sec_lat.mean(), self.sec_lat.value_at_quantile(0.99))
        };
        self.sec_lat.reset();
        (c, mean, p99)
    }
}

/// Latency figures in µs.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Largest.
    pub max_us: u64,
}

impl Latency {
    /// The figures of a histogram (zeros when it is empty).
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            mean_us: h.mean(),
            p50_us: h.value_at_quantile(0.50),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        }
    }
}

/// The figures of one tenant (or of all of them).
#[derive(Clone, Debug, Serialize)]
pub struct TenantReport {
    /// Name.
    pub name: String,
    /// Measured counters (after the warm-up).
    pub counters: Counters,
    /// Counters including the warm-up.
    pub all: Counters,
    /// Hit ratio of measured GETs.
    pub hit_ratio: f64,
    /// Measured requests per second.
    pub throughput: f64,
    /// End-to-end GET latency.
    pub latency: Latency,
    /// Backend time per fetch.
    pub backend: Latency,
    /// Backend fetches per second.
    pub backend_rate: f64,
}

impl TenantReport {
    /// Builds the report of `s` over a measured window of `secs`.
    pub fn new(name: &str, s: &TenantStats, secs: f64) -> TenantReport {
        report(name, s.c, s.all, &s.lat, &s.backend, secs)
    }

    /// The report of all tenants together.
    pub fn overall(all: &[&TenantStats], secs: f64) -> TenantReport {
        let (mut lat, mut be) = (histogram(), histogram());
        let (mut c, mut a) = (Counters::default(), Counters::default());
        for s in all {
            let _ = lat.add(&s.lat);
            let _ = be.add(&s.backend);
            c.add(&s.c);
            a.add(&s.all);
        }
        report("all", c, a, &lat, &be, secs)
    }
}

fn report(
    name: &str,
    c: Counters,
    all: Counters,
    lat: &Histogram<u64>,
    be: &Histogram<u64>,
    secs: f64,
) -> TenantReport {
    let secs = secs.max(1e-9);
    TenantReport {
        name: name.to_string(),
        counters: c,
        all,
        hit_ratio: if c.gets > 0 {
            c.hits as f64 / c.gets as f64
        } else {
            0.0
        },
        throughput: (c.gets + c.writes) as f64 / secs,
        latency: Latency::of(lat),
        backend: Latency::of(be),
        backend_rate: c.backend_calls as f64 / secs,
    }
}

/// One second of one tenant.
#[derive(Clone, Debug, Serialize)]
pub struct SeriesRow {
    /// Seconds since the start (end of the interval).
    pub second: f64,
    /// Tenant name.
    pub tenant: String,
    /// Counters of that second (warm-up included).
    pub counters: Counters,
    /// Mean GET latency (µs).
    pub mean_us: f64,
    /// p99 GET latency (µs).
    pub p99_us: u64,
}

/// One sample of the server's own statistics.
#[derive(Clone, Debug, Serialize)]
pub struct ServerSample {
    /// Seconds since the start.
    pub second: f64,
    /// The sampled fields (`keyspace_hits`, `used_memory`, … or memcached's `get_hits`, …).
    pub fields: Vec<(String, String)>,
}
