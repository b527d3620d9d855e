//! One consistent reading of the engine for a scrape or an API call: everything is copied out
//! under one short hold of the engine lock, then encoded without it.

use std::sync::atomic::Ordering;

use locus_engine::control::{CurveRecord, IntervalRecord};
use locus_engine::{ClassStats, Engine, EngineStats, TenantId, TenantStats};

use crate::server::Shared;

/// Decisions the live page lists ("the controller's last decisions").
pub const DECISIONS_SHOWN: usize = 20;

/// The curves one decision used for one tenant, and what they say about its allocation.
#[derive(Debug, Clone)]
pub struct TenantCurves {
    /// Index of the decision that built them.
    pub decision: u64,
    /// Engine clock (µs) at that decision.
    pub at_us: u64,
    /// The curves, as the controller recorded them (already thinned by it).
    pub curves: Vec<CurveRecord>,
    /// Curve capacity units (objects or bytes) one page holds, to place pages on the curve:
    /// the controller's `pool<i>.units_per_page` note, else the page size for a curve in bytes,
    /// else the tenant's items per page.
    pub units_per_page: Option<f64>,
    /// The curve the model figures are read from (`mmrc`, else the one of the tenant's K, else
    /// the first).
    pub main: usize,
}

impl TenantCurves {
    /// The curve the model figures are read from.
    pub fn main_curve(&self) -> Option<&CurveRecord> {
        self.curves.get(self.main)
    }

    /// Bytes of memory (pages of `page_size`) that `units` of curve capacity take; `None`
    /// while the units per page are unknown (a tenant without items, curve in objects).
    pub fn bytes_for_units(&self, units: f64, page_size: u64) -> Option<f64> {
        Some(units / self.units_per_page? * page_size as f64)
    }

    /// The memory the main curve says the tenant needs for `hit_ratio` (in `[0, 1]`): `None`
    /// when the curve does not reach it within the capacities it models, or cannot be placed
    /// in bytes.
    pub fn memory_for(&self, hit_ratio: f64, page_size: u64) -> Option<u64> {
        let units = self.main_curve()?.mrc.capacity_for(1.0 - hit_ratio)?;
        self.bytes_for_units(units, page_size)
            .map(|b| b.ceil() as u64)
    }
}

/// Tenant `t`'s newest curves (the newest decision that recorded one), if its controller
/// recorded any.
pub fn tenant_curves(eng: &Engine, t: TenantId) -> Option<TenantCurves> {
    let records = eng.recent_control_records(locus_engine::CONTROL_RECORD_LOG);
    newest_curves(&records, t, &eng.tenant_stats(t), eng.config().page_size)
}

/// One tenant.
#[derive(Debug, Clone)]
pub struct TenantSnap {
    /// Its id (= pool index).
    pub id: TenantId,
    /// Its name.
    pub name: String,
    /// The engine's counters and sizes.
    pub stats: TenantStats,
    /// Per size class (classes with pages or activity).
    pub classes: Vec<ClassStats>,
    /// Page target in force (`None`: none).
    pub target: Option<u64>,
    /// Mean miss penalty in µs (hint, measured, or 0).
    pub penalty_us: f64,
    /// Measured gaps behind `penalty_us`.
    pub penalty_samples: u64,
    /// Bytes used: its pages plus its large items (INFO tenants' `used_bytes`).
    pub used_bytes: u64,
    /// Connected clients currently routed to it.
    pub clients: u64,
    /// Its newest curves, if a controller recorded any.
    pub curves: Option<TenantCurves>,
    /// Its figures per memory tier (`None` without `[tier]`).
    pub tier: Option<locus_engine::TenantTierStats>,
}

impl TenantSnap {
    /// The model's miss ratio at the tenant's current allocation (from its main curve).
    pub fn modelled_miss_ratio(&self) -> Option<f64> {
        let c = self.curves.as_ref()?;
        let upp = c.units_per_page?;
        let mrc = &c.curves.get(c.main)?.mrc;
        let mr = mrc.miss_ratio(self.stats.pages as f64 * upp);
        mr.is_finite().then_some(mr.clamp(0.0, 1.0))
    }

    /// The mean miss latency per GET the model predicts: modelled miss ratio × miss penalty
    /// (kRedis's objective, Eq. 4.3, for this tenant), in µs.
    pub fn modelled_miss_latency_us(&self) -> Option<f64> {
        self.modelled_miss_ratio().map(|mr| mr * self.penalty_us)
    }
}

/// The running controller.
#[derive(Debug, Clone)]
pub struct ControllerSnap {
    /// Registry name.
    pub name: String,
    /// Decision interval as configured (`1s`, `100000req`).
    pub interval: String,
    /// Page moves per decision.
    pub max_moves: u32,
    /// Decisions so far.
    pub decisions: u64,
    /// Data-path accesses it saw.
    pub requests: u64,
    /// Page moves and releases carried out.
    pub moves: u64,
    /// Items those moves evicted.
    pub evicted_by_moves: u64,
    /// Its last decisions, oldest first, without their curves.
    pub recent: Vec<IntervalRecord>,
}

/// Server-wide counters (`ServerStats`).
#[derive(Debug, Clone, Default)]
pub struct ServerSnap {
    /// Connected clients.
    pub connected: u64,
    /// Connections accepted since start.
    pub total_connections: u64,
    /// Connections refused at maxclients.
    pub rejected_connections: u64,
    /// Clients closed for their output buffer.
    pub output_limit_disconnections: u64,
    /// Handler panics.
    pub internal_errors: u64,
    /// Commands executed.
    pub total_commands: u64,
    /// Bytes read from clients.
    pub net_input_bytes: u64,
    /// Bytes written to clients.
    pub net_output_bytes: u64,
    /// Most clients.
    pub maxclients: u64,
}

/// Everything a scrape shows.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Server clock (ms).
    pub now_ms: u64,
    /// Engine clock (µs), the time base of decisions.
    pub now_us: u64,
    /// Seconds since start.
    pub uptime_s: u64,
    /// Engine-wide figures.
    pub engine: EngineStats,
    /// Server-wide counters.
    pub server: ServerSnap,
    /// The engine lock's acquisitions, waits and holds.
    pub engine_lock: crate::server::LockSnapshot,
    /// Every tenant, in id order.
    pub tenants: Vec<TenantSnap>,
    /// The controller, if one runs.
    pub controller: Option<ControllerSnap>,
    /// The memory tiers' figures (`None` without `[tier]`).
    pub tiers: Option<locus_engine::TierStats>,
    /// Emulated slow-tier delay spent by connections, in ns.
    pub tier_delay_ns: u64,
}

impl Snapshot {
    /// Reads the engine (one hold of its lock) and the server's counters.
    pub fn take(shared: &Shared) -> Snapshot {
        let mut snap = {
            let eng = shared.engine();
            Self::from_engine(shared, &eng)
        };
        // Outside the engine lock: the clients registry has its own.
        for t in &mut snap.tenants {
            t.clients = shared.count_visible(Some(Some(t.id))) as u64;
        }
        let st = shared.stats();
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        snap.server = ServerSnap {
            connected: load(&st.connected),
            total_connections: load(&st.total_connections),
            rejected_connections: load(&st.rejected_connections),
            output_limit_disconnections: load(&st.output_limit_disconnections),
            internal_errors: load(&st.internal_errors),
            total_commands: load(&st.total_commands),
            net_input_bytes: load(&st.net_input_bytes),
            net_output_bytes: load(&st.net_output_bytes),
            maxclients: shared.config().server.maxclients,
        };
        snap.engine_lock = shared.engine_lock_stats().snapshot();
        snap
    }

    fn from_engine(shared: &Shared, eng: &Engine) -> Snapshot {
        let engine = eng.stats();
        let targets = eng.targets();
        let records = eng.recent_control_records(locus_engine::CONTROL_RECORD_LOG);
        let tenants = eng
            .tenant_ids()
            .into_iter()
            .map(|t| {
                let stats = eng.tenant_stats(t);
                let (penalty_us, penalty_samples) = eng.penalty(t);
                let curves = newest_curves(&records, t, &stats, engine.page_size);
                TenantSnap {
                    id: t,
                    name: shared.tenancy().name(t).to_string(),
                    classes: eng.class_stats(t),
                    target: targets.get(t.0 as usize).copied().flatten(),
                    penalty_us,
                    penalty_samples,
                    used_bytes: stats.pages.saturating_mul(engine.page_size) + stats.large_bytes,
                    clients: 0,
                    curves,
                    tier: eng.tenant_tier_stats(t),
                    stats,
                }
            })
            .collect();
        let controller = eng.controller_name().map(|name| {
            let cc = eng.control_config();
            let (moves, evicted_by_moves) = eng.control_moves();
            ControllerSnap {
                name: name.to_string(),
                interval: cc.map_or_else(String::new, |c| c.interval.to_string()),
                max_moves: cc.map_or(0, |c| c.max_moves),
                decisions: eng.control_decisions(),
                requests: eng.control_requests(),
                moves,
                evicted_by_moves,
                recent: records
                    .iter()
                    .skip(records.len().saturating_sub(DECISIONS_SHOWN))
                    .map(|r| without_curves(r))
                    .collect(),
            }
        });
        let clock = shared.clock();
        Snapshot {
            now_ms: clock.now_ms(),
            now_us: clock.now_us(),
            uptime_s: shared.uptime_secs(),
            engine,
            server: ServerSnap::default(),
            engine_lock: Default::default(),
            tenants,
            controller,
            tiers: eng.tier_stats(),
            tier_delay_ns: shared.tier_workers().delay_ns.load(Ordering::Relaxed),
        }
    }
}

/// A copy of a decision without its curves (the log of decisions the page lists).
fn without_curves(r: &IntervalRecord) -> IntervalRecord {
    IntervalRecord {
        interval: r.interval,
        at_us: r.at_us,
        at_request: r.at_request,
        pages: r.pages.clone(),
        targets: r.targets.clone(),
        samples: r.samples.clone(),
        moves_done: r.moves_done,
        items_evicted_by_moves: r.items_evicted_by_moves,
        hits: r.hits.clone(),
        misses: r.misses.clone(),
        penalty_us: r.penalty_us.clone(),
        curves: Vec::new(),
        notes: r.notes.clone(),
    }
}

/// The newest decision among `records` with a curve of tenant `t`, and its curves.
fn newest_curves(
    records: &[&IntervalRecord],
    t: TenantId,
    stats: &TenantStats,
    page_size: u64,
) -> Option<TenantCurves> {
    let r = records
        .iter()
        .rev()
        .find(|r| r.curves.iter().any(|c| c.pool.0 == t.0))?;
    let curves: Vec<CurveRecord> = r
        .curves
        .iter()
        .filter(|c| c.pool.0 == t.0)
        .cloned()
        .collect();
    let note = format!("pool{}.units_per_page", t.0);
    let noted = r
        .notes
        .iter()
        .find(|(k, _)| *k == note)
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite() && *v > 0.0);
    let k_label = format!("K={}", stats.samples);
    let main = curves
        .iter()
        .position(|c| c.label == "mmrc")
        .or_else(|| curves.iter().position(|c| c.label.ends_with(&k_label)))
        .unwrap_or(0);
    let units_per_page =
        noted.or_else(|| match curves.get(main)?.mrc.unit().to_string().as_str() {
            "bytes" => Some(page_size as f64),
            _ if stats.pages > 0 && stats.items > 0 => {
                Some(stats.items as f64 / stats.pages as f64)
            }
            _ => None,
        });
    Some(TenantCurves {
        decision: r.interval,
        at_us: r.at_us,
        curves,
        units_per_page,
        main,
    })
}
