//! `locus replay`: drives a live cache server over the network as a look-aside application
//! does (GET; on a miss, fetch from the backend, then SET), from a trace or an experiment
//! file's generators, and measures what the application sees.
//!
//! Goals: the same run drives Locus's tenants and redis-server's databases (tenants mapped by
//! port, user, db or key prefix), misses cost what a real backend costs (a precise delay, or a
//! PostgreSQL the harness starts, fills and always stops), and the client is never the
//! bottleneck (`--target null` measures its own ceiling). Non-goals: pipelining (one request in
//! flight per connection, as a blocking application thread), cluster clients.
//!
//! ```text
//!  trace / experiment ─► run (reader thread ─► C connections per tenant, tokio)
//!                              │ GET ─ miss ─► backend: delay (timer) | postgres (PgServer)
//!                              │              └─► SET
//!                              ▼
//!                        stats (HDR histograms, counters, per-second series)
//!                        + server samples (INFO / stats) ─► report: table, CSV, JSON, PNG
//! ```
//!
//! Components: [`config`] (settings and their text forms), [`client`] (RESP2 and memcached
//! text), [`fake`] (the in-process null and fake servers), [`timer`] (µs-precise sleeps),
//! [`postgres`] (the backend's lifecycle and queries), [`stats`], [`run`], [`report`].

pub mod client;
pub mod config;
pub mod error;
pub mod fake;
pub mod postgres;
pub mod report;
pub mod run;
pub mod stats;
pub mod timer;

pub use config::{
    BackendSpec, Input, Pacing, PgQuery, PgSettings, ReplayConfig, Target, TenantMap, Warmup,
};
pub use error::{ReplayError, Result};
pub use report::Report;
pub use run::{Progress, run};
