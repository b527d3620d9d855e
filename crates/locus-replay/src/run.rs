//! The driver: a reader thread turns the input into jobs, one task per connection sends them.
//!
//! ```text
//!  reader thread (trace / experiment workload)
//!    │ job {tenant, key, size, op, due}      per tenant: C bounded channels, a key always
//!    ├──► tenant 0: conn 0 … conn C-1        goes to the same connection (its GET, miss and
//!    └──► tenant 1: …                        SET stay in order); tenants set up on first sight
//!  conn task: [wait until due] GET ─ hit ─────────────────────────────► record
//!                                   └ miss ─ backend (delay | postgres) ─ SET ─► record
//!  sampler task, every second: per-tenant series, server INFO, progress line
//! ```
//! Closed loop: a connection sends its next job when the last is answered. Open loop: job `i`
//! is due at `start + i / rate` and its latency counts from then.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use locus_common::Rng;
use locus_sim::experiment::Penalty;
use locus_sim::workload::{Item, Workload};
use locus_trace::{Op, Request, RequestReader};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::client::{Conn, Proto, Reply};
use crate::config::{BackendSpec, Input, Pacing, PgQuery, ReplayConfig, Target, TenantMap, Warmup};
use crate::error::{ReplayError, Result};
use crate::fake::FakeServer;
use crate::postgres::{PgFetcher, PgServer};
use crate::report::Report;
use crate::stats::{Outcome, SeriesRow, ServerSample, TenantReport, TenantStats};
use crate::timer::Timer;

/// Most tenants one run drives.
pub const MAX_TENANTS: usize = 4096;

/// What the progress callback is shown once a second.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Seconds since the start.
    pub elapsed: f64,
    /// Requests completed.
    pub done: u64,
    /// Requests completed in the last second.
    pub last_second: u64,
    /// Hit ratio so far (warm-up included).
    pub hit_ratio: f64,
    /// p99 GET latency of the last second (µs).
    pub p99_us: u64,
    /// Requests in total, when known.
    pub total: Option<u64>,
}

struct Job {
    key: u64,
    value_size: u64,
    op: Op,
    penalty_us: Option<u32>,
    due: Option<Instant>,
    warm: bool,
}

/// The requests, whatever their source.
enum Stream {
    Trace(Box<dyn RequestReader>),
    Experiment(Box<Workload>),
}

impl Stream {
    fn next(&mut self, item: &mut Item) -> Result<bool> {
        match self {
            Stream::Trace(r) => {
                let mut req = Request::default();
                if !r.read_into(&mut req)? {
                    return Ok(false);
                }
                item.tenant = req.tenant as usize;
                item.req = req;
                Ok(true)
            }
            Stream::Experiment(w) => Ok(w.next(item)?),
        }
    }
}

/// A tenant's backend at run time.
#[derive(Clone)]
enum Backend {
    None,
    Delay(BackendSpec, Option<Penalty>),
    Postgres(PgQuery),
}

/// What every task shares.
struct Shared {
    cfg: ReplayConfig,
    addr: String,
    proto: Proto,
    timer: Timer,
    pg: Option<Arc<PgServer>>,
    names: Vec<String>,
    penalties: Vec<Penalty>,
    stats: Mutex<Vec<(String, Arc<Mutex<TenantStats>>)>>,
    tasks: Mutex<Vec<JoinHandle<Result<()>>>>,
    stop: AtomicBool,
    start: Instant,
    warm_until: Option<Instant>,
}

impl Shared {
    fn backend_of(&self, t: usize) -> Backend {
        let spec = self
            .cfg
            .tenant_backends
            .iter()
            .rev()
            .find(|(i, _)| *i == t)
            .map(|(_, s)| s.clone())
            .or_else(|| self.cfg.backend.clone())
            .unwrap_or(match self.cfg.input {
                Input::Experiment(_) => BackendSpec::Model,
                Input::Trace(_) => BackendSpec::TraceColumn(Duration::ZERO),
            });
        match spec {
            BackendSpec::None => Backend::None,
            BackendSpec::Postgres(q) => Backend::Postgres(q),
            BackendSpec::Model => Backend::Delay(spec, self.penalties.get(t).cloned()),
            s => Backend::Delay(s, None),
        }
    }

    fn tenant_addr(&self, t: usize) -> String {
        match &self.cfg.tenants {
            TenantMap::Port(ports) => {
                let host = self.addr.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
                format!("{host}:{}", ports[t])
            }
            _ => self.addr.clone(),
        }
    }
}

/// Runs a replay to the end (or Ctrl-C / SIGTERM), calling `progress` once a second.
///
/// # Errors
/// Invalid settings, an unreachable target or backend, a malformed input, a connection that
/// fails during the run, or an interruption. A PostgreSQL the run started is stopped before
/// this returns, whatever the outcome.
pub fn run(cfg: &ReplayConfig, progress: &(dyn Fn(&Progress) + Sync)) -> Result<Report> {
    cfg.validate()?;
    let threads = if cfg.threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        cfg.threads
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|e| ReplayError::Io {
            what: "starting the runtime".into(),
            error: e,
        })?;
    let result = rt.block_on(async {
        tokio::select! {
            r = drive(cfg, progress) => r,
            r = interrupted() => r,
        }
    });
    // Dropping the runtime cancels the connection tasks; the reader thread sees its channels
    // close and ends.
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}

async fn interrupted() -> Result<Report> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(|e| ReplayError::Io {
        what: "SIGTERM handler".into(),
        error: e,
    })?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Err(ReplayError::Interrupted)
}

/// The stream, the tenants' names and penalty models (experiments), and the request count.
type Opened = (Stream, Vec<String>, Vec<Penalty>, Option<u64>);

fn open_stream(cfg: &ReplayConfig) -> Result<Opened> {
    match &cfg.input {
        Input::Trace(p) => {
            let r = locus_trace::open(p, &locus_trace::ReadOptions::default())?;
            Ok((Stream::Trace(r), Vec::new(), Vec::new(), cfg.requests))
        }
        Input::Experiment(p) => {
            let mut exp = locus_sim::Experiment::load(p)?;
            if let Some(n) = cfg.requests {
                exp.requests = Some(n);
                if !exp.phases.is_empty() {
                    let total = exp.total_requests().unwrap_or(1).max(1);
                    for ph in &mut exp.phases {
                        ph.requests =
                            ((ph.requests as f64 * n as f64 / total as f64).round() as u64).max(1);
                    }
                }
            }
            let total = exp.total_requests();
            let names = exp.tenants.iter().map(|t| t.name.clone()).collect();
            let pens = exp.tenants.iter().map(|t| t.penalty.clone()).collect();
            let w = Workload::open(&exp)?;
            Ok((Stream::Experiment(Box::new(w)), names, pens, total))
        }
    }
}

async fn drive(cfg: &ReplayConfig, progress: &(dyn Fn(&Progress) + Sync)) -> Result<Report> {
    let (stream, names, penalties, total) = open_stream(cfg)?;
    // The in-process servers live in this runtime.
    let (addr, proto, fake) = match &cfg.target {
        Target::Redis { addr } => (addr.clone(), Proto::Resp, None),
        Target::Memcached { addr } => (addr.clone(), Proto::Memcached, None),
        Target::Null | Target::Fake => {
            let f = FakeServer::start(cfg.target == Target::Fake)
                .await
                .map_err(|e| ReplayError::Io {
                    what: "in-process server".into(),
                    error: e,
                })?;
            (f.addr.to_string(), Proto::Resp, Some(f))
        }
    };
    // Reach the target before starting anything else: a bad target fails fast.
    let mut probe = Conn::connect(
        &match &cfg.tenants {
            TenantMap::Port(p) => format!(
                "{}:{}",
                addr.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h),
                p[0]
            ),
            _ => addr.clone(),
        },
        proto,
    )
    .await?;
    if let Some((u, p)) = &cfg.info_auth {
        probe
            .command(&[b"AUTH", u.as_bytes(), p.as_bytes()])
            .await?;
    }
    let uses_pg = cfg
        .tenant_backends
        .iter()
        .map(|(_, s)| s)
        .chain(cfg.backend.as_ref())
        .any(|s| matches!(s, BackendSpec::Postgres(_)));
    let pg = if uses_pg {
        let tenants = cfg.tenants.limit().unwrap_or(names.len().max(1));
        let settings = cfg.pg.clone();
        let conns = cfg.connections * tenants + 8;
        let mut server = tokio::task::spawn_blocking(move || PgServer::start(&settings, conns))
            .await
            .map_err(|e| ReplayError::Config(format!("postgres start task: {e}")))??;
        server.ready().await?;
        Some(Arc::new(server))
    } else {
        None
    };
    let start = Instant::now();
    let sh = Arc::new(Shared {
        cfg: cfg.clone(),
        addr,
        proto,
        timer: Timer::start(),
        pg: pg.clone(),
        names,
        penalties,
        stats: Mutex::new(Vec::new()),
        tasks: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        start,
        warm_until: match cfg.warmup {
            Warmup::Time(d) => Some(start + d),
            _ => None,
        },
    });

    let mut samples = Vec::new();
    let mut info_error = None;
    sample_server(&mut probe, proto, 0.0, &mut samples, &mut info_error).await;

    let handle = tokio::runtime::Handle::current();
    let reader_sh = sh.clone();
    let reader = std::thread::Builder::new()
        .name("replay-reader".into())
        .spawn(move || produce(&reader_sh, stream, &handle))
        .map_err(|e| ReplayError::Io {
            what: "reader thread".into(),
            error: e,
        })?;

    // Once a second: the series, the server's view, the progress line; until the reader is
    // done and every connection has drained its queue.
    let mut series = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut reader = Some(reader);
    let mut reader_result = Ok(());
    loop {
        tick.tick().await;
        let reader_done = reader.as_ref().is_none_or(|r| r.is_finished());
        if reader_done && let Some(r) = reader.take() {
            reader_result = r
                .join()
                .unwrap_or_else(|_| Err(ReplayError::Config("the reader thread panicked".into())));
        }
        let tasks_done = reader_done && sh.tasks.lock().iter().all(|t| t.is_finished());
        let now = start.elapsed().as_secs_f64();
        let (mut done, mut sec, mut hits, mut gets, mut p99) = (0, 0, 0, 0, 0);
        for (name, st) in sh.stats.lock().iter() {
            let mut s = st.lock();
            let (c, mean, tp99) = s.take_second();
            done += s.all.gets + s.all.writes;
            hits += s.all.hits;
            gets += s.all.gets;
            sec += c.gets + c.writes;
            p99 = p99.max(tp99);
            series.push(SeriesRow {
                second: now,
                tenant: name.clone(),
                counters: c,
                mean_us: mean,
                p99_us: tp99,
            });
        }
        if !cfg.info_interval.is_zero() && info_error.is_none() {
            sample_server(&mut probe, proto, now, &mut samples, &mut info_error).await;
        }
        progress(&Progress {
            elapsed: now,
            done,
            last_second: sec,
            hit_ratio: if gets > 0 {
                hits as f64 / gets as f64
            } else {
                0.0
            },
            p99_us: p99,
            total,
        });
        if tasks_done {
            break;
        }
    }
    let elapsed = start.elapsed();
    let tasks: Vec<_> = std::mem::take(&mut *sh.tasks.lock());
    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(ReplayError::Config(format!(
                    "a connection task failed: {e}"
                )));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    reader_result?;
    // The final view of the server, after the last reply.
    let mut final_fields = Vec::new();
    if info_error.is_none() {
        sample_server(
            &mut probe,
            proto,
            elapsed.as_secs_f64(),
            &mut samples,
            &mut info_error,
        )
        .await;
    }
    if proto == Proto::Resp
        && let Ok(f) = probe.info("tenants").await
    {
        final_fields = f;
    }
    let stats = sh.stats.lock();
    let guards: Vec<_> = stats.iter().map(|(_, s)| s.lock()).collect();
    // The measured window: from the first measured request's start to the last completion
    // (exact, not rounded to the sampler's seconds).
    let first = guards.iter().filter_map(|g| g.first_begin).min();
    let last = guards.iter().filter_map(|g| g.last_done).max();
    let measured = match (first, last) {
        (Some(f), Some(l)) => l.saturating_duration_since(f).as_secs_f64().max(1e-9),
        _ => 1e-9,
    };
    let tenants: Vec<TenantReport> = stats
        .iter()
        .zip(&guards)
        .map(|((n, _), g)| TenantReport::new(n, g, measured))
        .collect();
    let refs: Vec<&TenantStats> = guards.iter().map(|g| &**g).collect();
    let overall = TenantReport::overall(&refs, measured);
    drop(guards);
    drop(stats);
    let fake_counts = fake.map(|f| {
        (
            f.stats.hits.load(Ordering::Relaxed),
            f.stats.misses.load(Ordering::Relaxed),
        )
    });
    drop(pg);
    Ok(Report::new(
        cfg,
        elapsed.as_secs_f64(),
        measured,
        tenants,
        overall,
        series,
        samples,
        info_error,
        final_fields,
        fake_counts,
    ))
}

/// INFO fields worth a time series (Redis, Locus) and memcached's `stats` equivalents.
const SERVER_FIELDS: &[&str] = &[
    "keyspace_hits",
    "keyspace_misses",
    "evicted_keys",
    "used_memory",
    "get_hits",
    "get_misses",
    "evictions",
    "bytes",
];

/// Per-tenant fields of Locus's `INFO tenants` kept in the series.
const TENANT_FIELDS: &[&str] = &["hits", "misses", "used_bytes", "evictions", "pages"];

async fn sample_server(
    probe: &mut Conn,
    proto: Proto,
    second: f64,
    out: &mut Vec<ServerSample>,
    error: &mut Option<String>,
) {
    let mut fields = Vec::new();
    let sections: &[&str] = match proto {
        Proto::Resp => &["stats", "memory"],
        Proto::Memcached => &[""],
    };
    for s in sections {
        match probe.info(s).await {
            Ok(f) => fields.extend(
                f.into_iter()
                    .filter(|(k, _)| SERVER_FIELDS.contains(&k.as_str())),
            ),
            Err(e) => {
                // A server that refuses INFO (no permission) is simply not sampled.
                *error = Some(e.to_string());
                return;
            }
        }
    }
    // Locus's per-tenant view (`tenant_<name>:hits=…,misses=…,used_bytes=…`): as
    // `tenant_<name>.hits` and so on. Redis answers an unknown section with nothing.
    if proto == Proto::Resp
        && let Ok(f) = probe.info("tenants").await
    {
        for (k, v) in f {
            for kv in v.split(',') {
                if let Some((name, val)) = kv.split_once('=')
                    && TENANT_FIELDS.contains(&name)
                {
                    fields.push((format!("{k}.{name}"), val.to_string()));
                }
            }
        }
    }
    out.push(ServerSample { second, fields });
}

fn produce(sh: &Arc<Shared>, mut stream: Stream, handle: &tokio::runtime::Handle) -> Result<()> {
    let cfg = &sh.cfg;
    let mut senders: HashMap<usize, Vec<mpsc::Sender<Job>>> = HashMap::new();
    let end = cfg.duration.map(|d| sh.start + d);
    let mut item = Item::default();
    let mut idx = 0u64;
    let limit = cfg.tenants.limit();
    loop {
        if sh.stop.load(Ordering::Relaxed) || cfg.requests.is_some_and(|n| idx >= n) {
            break;
        }
        if end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        if !stream.next(&mut item)? {
            break;
        }
        let t = item.tenant;
        let due = match cfg.pacing {
            Pacing::Open(rate) => Some(sh.start + Duration::from_secs_f64(idx as f64 / rate)),
            Pacing::Closed => None,
        };
        if let (Some(d), Some(e)) = (due, end)
            && d >= e
        {
            break;
        }
        let tx = match senders.entry(t) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                if t >= MAX_TENANTS || limit.is_some_and(|l| t >= l) {
                    return Err(ReplayError::Config(format!(
                        "request {idx} is for tenant {t}, which --tenants does not map ({} tenant(s) mapped)",
                        limit.unwrap_or(MAX_TENANTS)
                    )));
                }
                e.insert(start_tenant(sh, t, handle))
            }
        };
        let conn = (locus_common::hash_key(&item.req.key.to_le_bytes()) % tx.len() as u64) as usize;
        let job = Job {
            key: item.req.key,
            value_size: item.req.value_size,
            op: item.req.op,
            penalty_us: item.req.penalty_us,
            due,
            warm: matches!(cfg.warmup, Warmup::Requests(w) if idx < w),
        };
        if tx[conn].blocking_send(job).is_err() {
            // A connection ended (its error is reported from its task).
            break;
        }
        idx += 1;
    }
    Ok(())
}

fn start_tenant(
    sh: &Arc<Shared>,
    t: usize,
    handle: &tokio::runtime::Handle,
) -> Vec<mpsc::Sender<Job>> {
    let name = sh.names.get(t).cloned().unwrap_or_else(|| format!("t{t}"));
    let stats = Arc::new(Mutex::new(TenantStats::default()));
    sh.stats.lock().push((name, stats.clone()));
    let backend = sh.backend_of(t);
    let (mut txs, mut rxs) = (Vec::new(), Vec::new());
    for _ in 0..sh.cfg.connections {
        let (tx, rx) = mpsc::channel(256);
        txs.push(tx);
        rxs.push(rx);
    }
    let sh2 = sh.clone();
    let setup = handle.spawn(async move {
        // Load the tenant's rows once, before its connections start.
        if let (Backend::Postgres(q), Some(pg)) = (&backend, &sh2.pg) {
            pg.load_tenant(t, *q, sh2.cfg.pg.rows).await?;
        }
        let mut conns = Vec::new();
        for (c, rx) in rxs.into_iter().enumerate() {
            let (sh3, st, be) = (sh2.clone(), stats.clone(), backend.clone());
            conns.push(tokio::spawn(async move {
                let r = conn_task(&sh3, t, c, rx, &st, be).await;
                if r.is_err() {
                    sh3.stop.store(true, Ordering::Relaxed);
                }
                r
            }));
        }
        for c in conns {
            c.await
                .map_err(|e| ReplayError::Config(format!("connection task: {e}")))??;
        }
        Ok(())
    });
    sh.tasks.lock().push(setup);
    txs
}

async fn conn_task(
    sh: &Shared,
    t: usize,
    c: usize,
    mut rx: mpsc::Receiver<Job>,
    stats: &Mutex<TenantStats>,
    backend: Backend,
) -> Result<()> {
    let cfg = &sh.cfg;
    let mut conn = Conn::connect(&sh.tenant_addr(t), sh.proto).await?;
    match &cfg.tenants {
        TenantMap::User(users) => {
            let (u, p) = &users[t];
            conn.command(&[b"AUTH", u.as_bytes(), p.as_bytes()]).await?;
        }
        TenantMap::Db(dbs) => {
            let db = dbs.get(t).copied().unwrap_or(t as u32).to_string();
            conn.command(&[b"SELECT", db.as_bytes()]).await?;
        }
        _ => {}
    }
    let fetcher = match (&backend, &sh.pg) {
        (Backend::Postgres(q), Some(pg)) => Some(PgFetcher::new(pg, t, *q, cfg.pg.rows).await?),
        _ => None,
    };
    let prefix = cfg.tenants.prefix(t);
    let mut rng = Rng::new(cfg.seed ^ ((t as u64) << 32) ^ c as u64 ^ 0x5EED);
    let mut key = Vec::with_capacity(64);
    let mut value = Vec::new();
    while let Some(job) = rx.recv().await {
        if let Some(due) = job.due {
            let now = Instant::now();
            if due > now {
                sh.timer.sleep(due - now).await;
            }
        }
        let begin = job.due.unwrap_or_else(Instant::now);
        key.clear();
        key.extend_from_slice(prefix.as_bytes());
        key.extend_from_slice(format!("k{}", job.key).as_bytes());
        let size = job.value_size.clamp(1, cfg.max_value) as usize;
        let mut o = Outcome {
            get: job.op == Op::Get,
            ..Outcome::default()
        };
        match job.op {
            Op::Get => match conn.get(&key).await? {
                Reply::Hit(_) => o.hit = true,
                Reply::Error(_) => o.error = true,
                Reply::Miss | Reply::Ok => {
                    o.miss = true;
                    let t0 = Instant::now();
                    let body = match (&backend, &fetcher) {
                        (Backend::Postgres(q), Some(f)) => {
                            o.slow = PgFetcher::is_slow(*q, job.key);
                            f.fetch(job.key).await?
                        }
                        (Backend::Delay(spec, model), _) => {
                            let d = delay(spec, model.as_ref(), job.penalty_us, &mut rng);
                            sh.timer.sleep(d).await;
                            String::new()
                        }
                        _ => String::new(),
                    };
                    if !matches!(backend, Backend::None) {
                        o.backend = Some(t0.elapsed());
                    }
                    fill(&mut value, body.as_bytes(), size);
                    if let Reply::Error(_) = conn.set(&key, &value).await? {
                        o.error = true;
                    }
                }
            },
            Op::Set => {
                fill(&mut value, b"", size);
                o.error = matches!(conn.set(&key, &value).await?, Reply::Error(_));
            }
            Op::Delete => o.error = matches!(conn.del(&key).await?, Reply::Error(_)),
        }
        let now = Instant::now();
        o.latency = now.saturating_duration_since(begin);
        o.begin = Some(begin);
        o.warm = job.warm || sh.warm_until.is_some_and(|w| now < w);
        stats.lock().record(&o);
    }
    Ok(())
}

/// The value a SET stores: the backend's answer, padded with `x` (or cut) to the trace's size.
fn fill(value: &mut Vec<u8>, body: &[u8], size: usize) {
    value.clear();
    value.extend_from_slice(&body[..body.len().min(size)]);
    value.resize(size, b'x');
}

fn delay(
    spec: &BackendSpec,
    model: Option<&Penalty>,
    column: Option<u32>,
    rng: &mut Rng,
) -> Duration {
    let us = match spec {
        BackendSpec::Constant(d) => return *d,
        BackendSpec::Exponential(m) => -(m.as_secs_f64() * 1e6) * (1.0 - rng.next_f64()).ln(),
        BackendSpec::Uniform(a, b) => {
            let (a, b) = (a.as_secs_f64() * 1e6, b.as_secs_f64() * 1e6);
            a + (b - a) * rng.next_f64()
        }
        BackendSpec::TraceColumn(d) => column.map_or(d.as_secs_f64() * 1e6, f64::from),
        BackendSpec::Model => model
            .and_then(|m| m.draw(rng.next_f64(), column))
            .unwrap_or(0.0),
        BackendSpec::None | BackendSpec::Postgres(_) => 0.0,
    };
    Duration::from_secs_f64(us.max(0.0) / 1e6)
}
