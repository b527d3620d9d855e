//! `/metrics`: the [`Snapshot`] in the OpenMetrics text format (which Prometheus scrapes
//! natively), written by the Prometheus project's `prometheus-client` crate.
//!
//! The engine keeps its own counters (hits, evictions, pages are plain fields under the engine
//! lock), so nothing is registered ahead: a [`Collector`] turns one snapshot into metric
//! families on each scrape, the crate writes descriptors (`# HELP`, `# TYPE`, `# UNIT`), the
//! `_total`/`_bucket`/`_info` suffixes, label sets and the `# EOF` line.
//!
//! Names follow Prometheus's conventions: `locus_` prefix, base units (`_bytes`, `_seconds`),
//! `_total` on counters, one label per dimension (`tenant`, `cause`, `class`, `command`).
//! Label values are escaped here (the crate writes them as given): tenant names may hold `"`
//! and `\`.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::Ordering;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use locus_engine::EvictionReason;

use super::snapshot::Snapshot;
use crate::server::{LATENCY_BUCKETS, Shared};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Escapes a label value for the text format (`\` → `\\`, `"` → `\"`, newline → `\n`).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.contains(['\\', '"', '\n']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The whole exposition for the server's current state.
pub fn render(shared: &Shared) -> String {
    let snap = Snapshot::take(shared);
    let commands = command_stats(shared);
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Exposition { snap, commands }));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// One command's counters, copied out of `ServerStats`.
#[derive(Debug, Clone)]
struct CommandSnap {
    name: &'static str,
    calls: u64,
    nanos: u64,
    rejected: u64,
    failed: u64,
    durations: [u64; LATENCY_BUCKETS],
}

fn command_stats(shared: &Shared) -> Vec<CommandSnap> {
    shared
        .stats()
        .commands
        .used()
        .map(|(name, c)| CommandSnap {
            name,
            calls: c.calls.load(Ordering::Relaxed),
            nanos: c.nanos.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            durations: std::array::from_fn(|i| c.durations[i].load(Ordering::Relaxed)),
        })
        .collect()
}

#[derive(Debug)]
struct Exposition {
    snap: Snapshot,
    commands: Vec<CommandSnap>,
}

type Labels<'a> = Vec<(&'static str, Cow<'a, str>)>;

/// Writes one sample of a family under `labels` (none: the family's single sample).
fn sample(
    m: &mut MetricEncoder<'_>,
    labels: &Labels<'_>,
    f: impl FnOnce(&mut MetricEncoder<'_>) -> fmt::Result,
) -> fmt::Result {
    if labels.is_empty() {
        f(m)
    } else {
        f(&mut m.encode_family(labels)?)
    }
}

/// A sample's value.
#[derive(Clone, Copy)]
enum V {
    U(u64),
    F(f64),
}

/// Writes a counter or gauge family from its samples; a family without samples is left out.
fn family<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    ty: MetricType,
    samples: impl IntoIterator<Item = (Labels<'a>, V)>,
) -> fmt::Result {
    let samples: Vec<(Labels<'a>, V)> = samples.into_iter().collect();
    if samples.is_empty() {
        return Ok(());
    }
    let mut m = e.encode_descriptor(name, help, unit, ty)?;
    for (labels, v) in &samples {
        sample(&mut m, labels, |m| match (ty, *v) {
            (MetricType::Counter, V::U(x)) => m.encode_counter::<NoLabelSet, _, u64>(&x, None),
            (MetricType::Counter, V::F(x)) => m.encode_counter::<NoLabelSet, _, f64>(&x, None),
            (_, V::U(x)) => m.encode_gauge(&x),
            (_, V::F(x)) => m.encode_gauge(&x),
        })?;
    }
    Ok(())
}

fn counter<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: impl IntoIterator<Item = (Labels<'a>, V)>,
) -> fmt::Result {
    family(e, name, help, unit, MetricType::Counter, samples)
}

fn gauge<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: impl IntoIterator<Item = (Labels<'a>, V)>,
) -> fmt::Result {
    family(e, name, help, unit, MetricType::Gauge, samples)
}

fn one<'a>(v: V) -> Option<(Labels<'a>, V)> {
    Some((Vec::new(), v))
}

impl Collector for Exposition {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> fmt::Result {
        self.server(&mut e)?;
        self.tenants(&mut e)?;
        self.classes(&mut e)?;
        self.controller(&mut e)?;
        self.tiers(&mut e)?;
        self.engine_lock(&mut e)?;
        self.commands(&mut e)
    }
}

/// A histogram's buckets from counts in [`LATENCY_BUCKETS`] buckets of 1, 2, 4, ... µs.
fn micro_buckets(counts: &[u64]) -> Vec<(f64, u64)> {
    counts
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let upper = if i + 1 == LATENCY_BUCKETS {
                f64::MAX
            } else {
                (1u64 << i) as f64 * 1e-6
            };
            (upper, *n)
        })
        .collect()
}

impl Exposition {
    /// The engine lock: acquisitions, contended acquisitions, and histograms of waits and holds.
    fn engine_lock(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let l = &self.snap.engine_lock;
        counter(
            e,
            "locus_engine_lock_acquisitions",
            "Times the engine lock was taken (a connection takes it once per batch of commands).",
            None,
            one(V::U(l.acquisitions)),
        )?;
        counter(
            e,
            "locus_engine_lock_contended",
            "Acquisitions of the engine lock that found it held and waited.",
            None,
            one(V::U(l.contended)),
        )?;
        let secs = Unit::Seconds;
        for (name, help, total_ns, hist) in [
            (
                "locus_engine_lock_wait",
                "Time spent waiting for the engine lock, per acquisition.",
                l.wait_ns,
                &l.wait_hist,
            ),
            (
                "locus_engine_lock_hold",
                "Time the engine lock was held, per acquisition: what every other tenant waited.",
                l.hold_ns,
                &l.hold_hist,
            ),
        ] {
            let mut m = e.encode_descriptor(name, help, Some(&secs), MetricType::Histogram)?;
            m.encode_histogram::<NoLabelSet>(
                total_ns as f64 / 1e9,
                hist.iter().sum(),
                &micro_buckets(hist),
                None,
            )?;
        }
        Ok(())
    }

    /// sdTMM's tiers: per tier, and per tenant and tier (nothing without `[tier]`).
    fn tiers(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let Some(ts) = &self.snap.tiers else {
            return Ok(());
        };
        let page = self.snap.engine.page_size;
        let per_tier = |f: &dyn Fn(usize) -> V| {
            locus_engine::Tier::ALL
                .iter()
                .map(|t| (vec![("tier", Cow::Borrowed(t.name()))], f(t.index())))
                .collect::<Vec<_>>()
        };
        let bytes = Unit::Bytes;
        gauge(
            e,
            "locus_tier_budget",
            "Each memory tier's budget (maxmemory split by tier.fast_share).",
            Some(&bytes),
            per_tier(&|i| V::U(ts.budget_pages[i] * page)),
        )?;
        gauge(
            e,
            "locus_tier_used",
            "Bytes of each tier's pages in use.",
            Some(&bytes),
            per_tier(&|i| V::U(ts.used_pages[i] * page)),
        )?;
        gauge(
            e,
            "locus_tier_free_ratio",
            "Each tier's free share (free chunks and unused pages over its budget), what the watermarks compare.",
            None,
            per_tier(&|i| V::F(ts.free_share[i])),
        )?;
        counter(
            e,
            "locus_tier_worker_runs",
            "Runs of the tier workers (promotion, demotion, slow-tier eviction steps).",
            None,
            one(V::U(ts.worker_runs)),
        )?;
        counter(
            e,
            "locus_tier_emulated_delay",
            "Emulated slow-tier delay spent by connections (slow-tier accesses times tier.slow_backend's ns).",
            Some(&Unit::Seconds),
            one(V::F(self.snap.tier_delay_ns as f64 / 1e9)),
        )?;
        let tenants = &self.snap.tenants;
        let by = |f: &dyn Fn(&locus_engine::tier::TierCounters) -> u64| {
            let mut v = Vec::new();
            for t in tenants {
                let Some(tt) = &t.tier else { continue };
                for tier in locus_engine::Tier::ALL {
                    v.push((
                        vec![
                            ("tenant", escape(&t.name)),
                            ("tier", Cow::Borrowed(tier.name())),
                        ],
                        V::U(f(&tt.tiers[tier.index()])),
                    ));
                }
            }
            v
        };
        gauge(
            e,
            "locus_tier_items",
            "Items per tenant and tier.",
            None,
            by(&|c| c.items),
        )?;
        gauge(
            e,
            "locus_tier_pages",
            "Pages per tenant and tier.",
            None,
            by(&|c| c.pages),
        )?;
        counter(
            e,
            "locus_tier_hits",
            "GET hits per tenant and the tier that served them.",
            None,
            by(&|c| c.hits),
        )?;
        counter(
            e,
            "locus_tier_moved_in",
            "Items moved into a tier by a worker (promotions into fast, demotions into slow).",
            None,
            by(&|c| c.moved_in),
        )?;
        let mut ev = Vec::new();
        for t in tenants {
            let Some(tt) = &t.tier else { continue };
            for tier in locus_engine::Tier::ALL {
                let c = &tt.tiers[tier.index()].evictions;
                for (cause, v) in [
                    ("reactive", c.reactive),
                    ("proactive", c.proactive),
                    ("page_reclaim", c.page_reclaim),
                ] {
                    ev.push((
                        vec![
                            ("tenant", escape(&t.name)),
                            ("tier", Cow::Borrowed(tier.name())),
                            ("cause", Cow::Borrowed(cause)),
                        ],
                        V::U(v),
                    ));
                }
            }
        }
        counter(
            e,
            "locus_tier_evictions",
            "Evictions per tenant, tier and cause.",
            None,
            ev,
        )?;
        for (name, help, f) in [
            (
                "locus_tier_promotions",
                "Slow-to-fast moves per tenant.",
                (|s| s.promotions) as fn(&locus_engine::TenantTierStats) -> u64,
            ),
            (
                "locus_tier_demotions",
                "Fast-to-slow moves per tenant.",
                |s| s.demotions,
            ),
        ] {
            let v: Vec<_> = tenants
                .iter()
                .filter_map(|t| {
                    t.tier
                        .as_ref()
                        .map(|tt| (vec![("tenant", escape(&t.name))], V::U(f(tt))))
                })
                .collect();
            counter(e, name, help, None, v)?;
        }
        Ok(())
    }

    fn server(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let s = &self.snap;
        let sv = &s.server;
        let st = &s.engine;
        {
            let mut m = e.encode_descriptor(
                "locus_build",
                "Locus version and the Redis version whose commands it follows.",
                None,
                MetricType::Info,
            )?;
            m.encode_info(&[
                ("version", env!("CARGO_PKG_VERSION")),
                ("redis_version", crate::REDIS_VERSION),
            ])?;
        }
        let secs = Unit::Seconds;
        let bytes = Unit::Bytes;
        gauge(
            e,
            "locus_uptime",
            "Time since the server started.",
            Some(&secs),
            one(V::U(s.uptime_s)),
        )?;
        gauge(
            e,
            "locus_connected_clients",
            "Client connections open now.",
            None,
            one(V::U(sv.connected)),
        )?;
        gauge(
            e,
            "locus_max_clients",
            "Most simultaneous clients (server.maxclients).",
            None,
            one(V::U(sv.maxclients)),
        )?;
        for (name, help, v) in [
            (
                "locus_connections_received",
                "Client connections accepted.",
                sv.total_connections,
            ),
            (
                "locus_connections_rejected",
                "Client connections refused at maxclients.",
                sv.rejected_connections,
            ),
            (
                "locus_output_limit_disconnections",
                "Clients closed for passing their output buffer limit.",
                sv.output_limit_disconnections,
            ),
            (
                "locus_internal_errors",
                "Command handlers that panicked (each answered its client with an error and closed it).",
                sv.internal_errors,
            ),
            (
                "locus_commands_processed",
                "Commands executed, all tenants.",
                sv.total_commands,
            ),
        ] {
            counter(e, name, help, None, one(V::U(v)))?;
        }
        counter(
            e,
            "locus_net_input",
            "Bytes read from clients.",
            Some(&bytes),
            one(V::U(sv.net_input_bytes)),
        )?;
        counter(
            e,
            "locus_net_output",
            "Bytes written to clients.",
            Some(&bytes),
            one(V::U(sv.net_output_bytes)),
        )?;
        for (name, help, v) in [
            (
                "locus_memory_max",
                "The memory budget of all tenants (memory.maxmemory).",
                st.maxmemory,
            ),
            (
                "locus_memory_used",
                "Memory the budget holds: pages in use, large items and, as in Redis, the index.",
                st.used_bytes,
            ),
            ("locus_memory_page_size", "Page size.", st.page_size),
        ] {
            gauge(e, name, help, Some(&bytes), one(V::U(v)))?;
        }
        gauge(
            e,
            "locus_memory_pages_capacity",
            "Pages the budget allows (maxmemory / page size).",
            None,
            one(V::U(st.pages_total)),
        )?;
        gauge(
            e,
            "locus_memory_pages_used",
            "Pages owned by some tenant.",
            None,
            one(V::U(st.pages_used)),
        )?;
        // Lazy freeing (exec/lazyfree): INFO memory's two fields, server-wide.
        let (pending, freed) = crate::exec::lazyfree::counts(None);
        gauge(
            e,
            "locus_lazyfree_pending_objects",
            "Objects taken out by UNLINK or FLUSH ASYNC whose memory is not given back yet (INFO lazyfree_pending_objects).",
            None,
            one(V::U(pending)),
        )?;
        counter(
            e,
            "locus_lazyfreed_objects",
            "Objects freed in the background since start or CONFIG RESETSTAT (INFO lazyfreed_objects).",
            None,
            one(V::U(freed)),
        )
    }

    fn tenants(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let ts = &self.snap.tenants;
        let by_tenant = |f: &dyn Fn(&super::snapshot::TenantSnap) -> Option<V>| {
            ts.iter()
                .filter_map(|t| f(t).map(|v| (vec![("tenant", escape(&t.name))], v)))
                .collect::<Vec<_>>()
        };
        let secs = Unit::Seconds;
        let bytes = Unit::Bytes;
        type F = fn(&super::snapshot::TenantSnap) -> u64;
        let counters: [(&str, &str, F); 5] = [
            (
                "locus_tenant_hits",
                "GET-like reads that found their key.",
                |t| t.stats.hits,
            ),
            (
                "locus_tenant_misses",
                "GET-like reads that did not find their key (or found it expired).",
                |t| t.stats.misses,
            ),
            ("locus_tenant_sets", "Writes that stored an item.", |t| {
                t.stats.sets
            }),
            (
                "locus_tenant_deletes",
                "Keys removed by DEL (and by RENAME of their destination).",
                |t| t.stats.deletes,
            ),
            (
                "locus_tenant_expirations",
                "Keys removed because their TTL passed (lazily or by the active sweep).",
                |t| t.stats.expired,
            ),
        ];
        for (name, help, f) in counters {
            counter(e, name, help, None, by_tenant(&|t| Some(V::U(f(t)))))?;
        }
        counter(
            e,
            "locus_tenant_evictions",
            "Items evicted, by cause: memory (the tenant's policy, memory full), item_limit, page_reclaim (its page taken for another class or tenant), page_move (a controller's move), shrink (budget or target lowered).",
            None,
            ts.iter().flat_map(|t| {
                EvictionReason::ALL.iter().map(move |r| {
                    (
                        vec![
                            ("tenant", escape(&t.name)),
                            ("cause", Cow::Borrowed(r.name())),
                        ],
                        V::U(t.stats.evictions_by_reason.get(*r)),
                    )
                })
            }),
        )?;
        let gauges: [(&str, &str, F); 4] = [
            ("locus_tenant_items", "Keys stored.", |t| t.stats.items),
            (
                "locus_tenant_volatile_items",
                "Keys stored with a TTL.",
                |t| t.stats.volatile_items,
            ),
            ("locus_tenant_pages", "Pages the tenant's pool owns.", |t| {
                t.stats.pages
            }),
            (
                "locus_tenant_clients",
                "Connected clients currently acting on the tenant.",
                |t| t.clients,
            ),
        ];
        for (name, help, f) in gauges {
            gauge(e, name, help, None, by_tenant(&|t| Some(V::U(f(t)))))?;
        }
        let byte_gauges: [(&str, &str, F); 5] = [
            (
                "locus_tenant_used",
                "Memory the tenant uses: its pages and its large items (INFO tenants used_bytes).",
                |t| t.used_bytes,
            ),
            (
                "locus_tenant_item",
                "Key and value bytes of the tenant's items.",
                |t| t.stats.item_bytes,
            ),
            (
                "locus_tenant_charged",
                "Chunk bytes charged for the tenant's items (item, header and class rounding).",
                |t| t.stats.charged_bytes,
            ),
            (
                "locus_tenant_metadata",
                "Bytes of the tenant's metadata outside pages (index, sampling arrays, TTL table).",
                |t| t.stats.metadata_bytes,
            ),
            (
                "locus_tenant_min",
                "The tenant's guaranteed memory (tenant.min).",
                |t| t.stats.min_bytes,
            ),
        ];
        for (name, help, f) in byte_gauges {
            gauge(
                e,
                name,
                help,
                Some(&bytes),
                by_tenant(&|t| Some(V::U(f(t)))),
            )?;
        }
        gauge(
            e,
            "locus_tenant_max",
            "The tenant's memory cap (tenant.max), when it has one.",
            Some(&bytes),
            by_tenant(&|t| t.stats.max_bytes.map(V::U)),
        )?;
        gauge(
            e,
            "locus_tenant_target_pages",
            "The page target the memory controller set for the tenant, when it set one.",
            None,
            by_tenant(&|t| t.target.map(V::U)),
        )?;
        gauge(
            e,
            "locus_tenant_eviction_samples",
            "K: keys the eviction policy samples per eviction (maxmemory-samples), as the controller last set it.",
            None,
            by_tenant(&|t| Some(V::U(u64::from(t.stats.samples)))),
        )?;
        gauge(
            e,
            "locus_tenant_miss_penalty",
            "Mean miss penalty: the operator's hint, else measured (a GET miss to the SET of the same key), else 0.",
            Some(&secs),
            by_tenant(&|t| Some(V::F(t.penalty_us / 1e6))),
        )?;
        gauge(
            e,
            "locus_tenant_miss_penalty_samples",
            "Measured miss-to-SET gaps behind the miss penalty (0 for a hint).",
            None,
            by_tenant(&|t| Some(V::U(t.penalty_samples))),
        )?;
        gauge(
            e,
            "locus_tenant_modelled_miss_ratio",
            "The miss ratio the controller's newest curve gives at the tenant's current pages.",
            None,
            by_tenant(&|t| t.modelled_miss_ratio().map(V::F)),
        )?;
        gauge(
            e,
            "locus_tenant_modelled_miss_latency",
            "Mean miss latency per GET the model predicts: modelled miss ratio times miss penalty.",
            Some(&secs),
            by_tenant(&|t| t.modelled_miss_latency_us().map(|us| V::F(us / 1e6))),
        )?;
        let mut m = e.encode_descriptor(
            "locus_tenant_policy",
            "The tenant's eviction policy.",
            None,
            MetricType::Info,
        )?;
        for t in ts {
            m.encode_info(&[
                ("tenant", escape(&t.name)),
                ("policy", Cow::Borrowed(t.stats.policy.name())),
            ])?;
        }
        Ok(())
    }

    fn classes(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let rows: Vec<(&super::snapshot::TenantSnap, &locus_engine::ClassStats)> = self
            .snap
            .tenants
            .iter()
            .flat_map(|t| t.classes.iter().map(move |c| (t, c)))
            .collect();
        fn labels<'t>(
            t: &'t super::snapshot::TenantSnap,
            c: &locus_engine::ClassStats,
        ) -> Labels<'t> {
            vec![
                ("tenant", escape(&t.name)),
                ("class", Cow::Owned(c.class.0.to_string())),
                ("chunk_bytes", Cow::Owned(c.chunk_size.to_string())),
            ]
        }
        type F = fn(&locus_engine::ClassStats) -> u64;
        let gauges: [(&str, &str, F); 3] = [
            (
                "locus_class_pages",
                "Pages of one size class in a tenant's pool.",
                |c| c.pages,
            ),
            ("locus_class_chunks", "Chunks those pages hold.", |c| {
                c.chunks
            }),
            ("locus_class_items", "Items stored in the class.", |c| {
                c.items
            }),
        ];
        for (name, help, f) in gauges {
            gauge(
                e,
                name,
                help,
                None,
                rows.iter().map(|(t, c)| (labels(t, c), V::U(f(c)))),
            )?;
        }
        gauge(
            e,
            "locus_class_item",
            "Key and value bytes of the class's items.",
            Some(&Unit::Bytes),
            rows.iter().map(|(t, c)| (labels(t, c), V::U(c.item_bytes))),
        )?;
        let counters: [(&str, &str, F); 3] = [
            (
                "locus_class_hits",
                "GET hits on items of the class (misses have no class).",
                |c| c.hits,
            ),
            (
                "locus_class_sets",
                "Writes that stored an item of the class.",
                |c| c.sets,
            ),
            (
                "locus_class_expirations",
                "Items of the class removed by their TTL.",
                |c| c.expired,
            ),
        ];
        for (name, help, f) in counters {
            counter(
                e,
                name,
                help,
                None,
                rows.iter().map(|(t, c)| (labels(t, c), V::U(f(c)))),
            )?;
        }
        counter(
            e,
            "locus_class_evictions",
            "Items of the class evicted, by cause (as locus_tenant_evictions).",
            None,
            rows.iter().flat_map(|(t, c)| {
                EvictionReason::ALL.iter().map(move |r| {
                    let mut l = labels(t, c);
                    l.push(("cause", Cow::Borrowed(r.name())));
                    (l, V::U(c.evictions.get(*r)))
                })
            }),
        )
    }

    fn controller(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        {
            let mut m = e.encode_descriptor(
                "locus_controller",
                "The memory controller that divides the budget between tenants (none: the memory.partition arbiter alone).",
                None,
                MetricType::Info,
            )?;
            match &self.snap.controller {
                Some(c) => {
                    m.encode_info(&[("name", c.name.as_str()), ("interval", c.interval.as_str())])?
                }
                None => m.encode_info(&[("name", crate::config::NO_CONTROLLER)])?,
            }
        }
        let Some(c) = &self.snap.controller else {
            return Ok(());
        };
        for (name, help, v) in [
            (
                "locus_controller_decisions",
                "Decisions the controller made.",
                c.decisions,
            ),
            (
                "locus_controller_requests",
                "Data-path accesses the controller saw.",
                c.requests,
            ),
            (
                "locus_controller_page_moves",
                "Pages its decisions moved or released (at most max_moves per decision).",
                c.moves,
            ),
            (
                "locus_controller_items_evicted_by_moves",
                "Items those page moves and releases evicted.",
                c.evicted_by_moves,
            ),
        ] {
            counter(e, name, help, None, one(V::U(v)))?;
        }
        gauge(
            e,
            "locus_controller_max_moves",
            "Pages a decision may move or release (controller.max_moves).",
            None,
            one(V::U(u64::from(c.max_moves))),
        )
    }

    fn commands(&self, e: &mut DescriptorEncoder<'_>) -> fmt::Result {
        let by_cmd = |f: fn(&CommandSnap) -> u64| {
            self.commands
                .iter()
                .map(move |c| (vec![("command", Cow::Borrowed(c.name))], V::U(f(c))))
        };
        counter(
            e,
            "locus_command_calls",
            "Executions per command (INFO commandstats calls).",
            None,
            by_cmd(|c| c.calls),
        )?;
        counter(
            e,
            "locus_command_rejected_calls",
            "Calls refused before executing (arity, authentication, permissions, ...).",
            None,
            by_cmd(|c| c.rejected),
        )?;
        counter(
            e,
            "locus_command_failed_calls",
            "Calls executed and answered with an error.",
            None,
            by_cmd(|c| c.failed),
        )?;
        if self.commands.is_empty() {
            return Ok(());
        }
        let secs = Unit::Seconds;
        let mut m = e.encode_descriptor(
            "locus_command_duration",
            "Time executing a command under the engine lock (not queueing or I/O), per command.",
            Some(&secs),
            MetricType::Histogram,
        )?;
        for c in &self.commands {
            let buckets = micro_buckets(&c.durations);
            let count: u64 = c.durations.iter().sum();
            let labels: Labels<'_> = vec![("command", Cow::Borrowed(c.name))];
            m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                c.nanos as f64 / 1e9,
                count,
                &buckets,
                None,
            )?;
        }
        Ok(())
    }
}
