//! The seam between the engine and the memory controllers: what a controller sees, what it may
//! decide, and how the engine runs it and carries its decisions out. The controllers themselves
//! (DLRU, kRedis, pRedis, mPart, LAMA, MemSweeper, ...) live in the `locus-control` crate:
//! deciding lives there, doing lives here.
//!
//! A controller sees every access the engine serves ([`Controller::on_access`], after the fact,
//! cheap: it samples inside) and every eviction ([`Controller::on_evict`]); every interval the
//! engine hands it a [`ControlView`] of the pools and carries out its [`Decision`]:
//!
//! ```text
//!   data path ──Access/Evicted──► Controller (profilers: KRR, AET, EAET, minisim, shadow queues)
//!                                     │ every Interval (requests, or time)
//!   ControlView (pools, counters,     ▼
//!   penalties, fast-tier budget) ─► decide() ──► Decision { pool targets, page moves, K per pool,
//!                                               │          fast-tier targets, curves used, notes }
//!                                               ▼
//!   engine: TargetArbiter (grow below target, evict above it), released pages (≤ max_moves),
//!           explicit moves, set_samples; an IntervalRecord per decision (observable)
//! ```
//!
//! Here: the [`Controller`] trait and the types it trades in, [`Settings`] (the one typed
//! key/value reader every controller builder uses), [`ControlError`], the host that runs a
//! controller inline or on a profiling thread (`host`), the arbiter that enforces page targets
//! (`target`) and the miss-penalty tracker (`penalty`).

pub(crate) mod host;
mod penalty;
mod settings;
pub(crate) mod target;

use std::fmt;
use std::str::FromStr;

use locus_mrc::Mrc;

use crate::ids::{ClassId, PoolId, TenantId};

pub(crate) use penalty::PenaltyTracker;
pub use penalty::{PENALTY_CLASSES, penalty_class, penalty_class_range};
pub use settings::Settings;

/// What happened on the data path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// A GET that found the key.
    GetHit,
    /// A GET that did not find the key (or found it expired).
    GetMiss,
    /// A SET request: stored, or refused for memory (profilers model the request stream, not
    /// what this cache kept).
    Set,
    /// A DEL (of a present or missing key).
    Delete,
}

/// One data-path access as a controller sees it (after the engine served it).
#[derive(Clone, Copy, Debug)]
pub struct Access {
    /// The tenant.
    pub tenant: TenantId,
    /// Its pool.
    pub pool: PoolId,
    /// What happened.
    pub kind: AccessKind,
    /// The engine's 64-bit key hash; use it for spatial sampling.
    pub key_hash: u64,
    /// Key + value bytes (GetHit, Set); 0 when unknown (GetMiss, Delete).
    pub size: u32,
    /// Size class of the item (GetHit, Set).
    pub class: Option<ClassId>,
    /// The engine clock in microseconds.
    pub now_us: u64,
}

/// One item leaving the cache by eviction (not by DEL or expiry).
#[derive(Clone, Copy, Debug)]
pub struct Evicted {
    /// The tenant.
    pub tenant: TenantId,
    /// Its pool.
    pub pool: PoolId,
    /// The item's size class.
    pub class: ClassId,
    /// The engine's key hash.
    pub key_hash: u64,
    /// Key + value bytes.
    pub size: u32,
    /// Time since the last access, from the LRU clock (approximate; 0 under LFU policies).
    pub idle_ms: u64,
    /// The engine clock in microseconds.
    pub now_us: u64,
}

/// One size class of a pool at an interval boundary (counters cumulative since start).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassState {
    /// The class.
    pub class: ClassId,
    /// Its chunk size.
    pub chunk_bytes: u32,
    /// Pages it owns in this pool.
    pub pages: u64,
    /// Items it holds.
    pub items: u64,
    /// GET hits on its items.
    pub hits: u64,
    /// SETs stored in it.
    pub sets: u64,
    /// Evictions from it.
    pub evictions: u64,
}

/// One pool at an interval boundary. Counters are cumulative since start: diff them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolState {
    /// The pool.
    pub pool: PoolId,
    /// Its tenant.
    pub tenant: TenantId,
    /// The tenant's name.
    pub name: String,
    /// Pages it owns.
    pub pages: u64,
    /// Items it holds.
    pub items: u64,
    /// Key + value bytes it holds.
    pub item_bytes: u64,
    /// Chunk bytes its items are charged.
    pub charged_bytes: u64,
    /// GET hits.
    pub hits: u64,
    /// GET misses.
    pub misses: u64,
    /// SETs.
    pub sets: u64,
    /// DELs.
    pub deletes: u64,
    /// Evictions (all reasons).
    pub evictions: u64,
    /// Current K (`maxmemory-samples`).
    pub samples: u32,
    /// Eviction pool size (16 = Redis, 0 = textbook K-LRU).
    pub evpool_size: u32,
    /// Static floor from the tenant configuration, in pages (lowered to the cap while the
    /// tenant is dormant).
    pub min_pages: u64,
    /// Static cap from the tenant configuration, in pages; while the tenant is dormant (dumped
    /// by pRedis's dump/load, [`crate::Engine::set_dormant`]) the pages its resident items
    /// need, so a planner gives the rest to the other pools.
    pub max_pages: Option<u64>,
    /// Whether the tenant is dormant (see `max_pages`).
    pub dormant: bool,
    /// The target in force.
    pub target_pages: Option<u64>,
    /// Mean miss penalty in µs: the operator's hint if set, else measured (GET miss to SET of the
    /// same key, as pRedis), else 0 (unknown).
    pub penalty_us: f64,
    /// Measured gaps behind `penalty_us` (0 for a hint or unknown).
    pub penalty_samples: u64,
    /// Classes that own pages or items.
    pub classes: Vec<ClassState>,
}

/// What a controller sees at an interval boundary.
#[derive(Clone, Copy, Debug)]
pub struct ControlView<'a> {
    /// The engine clock in microseconds.
    pub now_us: u64,
    /// Data-path accesses so far (all tenants).
    pub requests: u64,
    /// Index of this decision (0, 1, 2, ...).
    pub interval: u64,
    /// Page size in bytes.
    pub page_size: u64,
    /// Pages `maxmemory` allows.
    pub pages_total: u64,
    /// Pages owned by some pool.
    pub pages_used: u64,
    /// The fast tier's page budget when the engine is tiered (sdTMM); `None` untiered.
    pub fast_pages: Option<u64>,
    /// Every pool, indexed by `PoolId.0`.
    pub pools: &'a [PoolState],
}

/// An explicit page move, carried out at once (at most `max_moves` per interval); the page's
/// items are evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageMove {
    /// Where the page comes from.
    pub from: (PoolId, ClassId),
    /// Where it goes.
    pub to: (PoolId, ClassId),
}

/// An MRC a controller used for a decision (shown by the server and the simulator).
#[derive(Clone, Debug)]
pub struct CurveRecord {
    /// The pool it describes.
    pub pool: PoolId,
    /// What it is, e.g. `krr K=5`.
    pub label: String,
    /// The curve.
    pub mrc: Mrc,
}

/// A controller's decision.
#[derive(Clone, Debug, Default)]
pub struct Decision {
    /// Page targets per pool, indexed by `PoolId.0` (sum ≤ `pages_total`); `None` keeps the
    /// targets in force (none at first: free competition). The engine converges gradually: a
    /// pool below its target takes free pages or pages of pools above theirs (which evict); a
    /// pool above its target releases at most `max_moves` pages per interval.
    pub pool_pages: Option<Vec<u64>>,
    /// Fast-tier page targets per pool on a tiered engine, indexed by `PoolId.0` (sum ≤
    /// `ControlView::fast_pages`); `None` keeps the fast targets in force. The engine's demotion
    /// worker enforces them (sdTMM's multi-tenant partitioning); ignored untiered.
    pub fast_pages: Option<Vec<u64>>,
    /// Explicit page moves (slab moves, MemSweeper victim → victor).
    pub moves: Vec<PageMove>,
    /// New K per pool.
    pub samples: Vec<(PoolId, u32)>,
    /// Curves used.
    pub curves: Vec<CurveRecord>,
    /// Named figures worth showing (scores, objective values).
    pub notes: Vec<(String, f64)>,
    /// Lend free pages (in force until the next decision): a pool at or above its target may
    /// also take free pages that other pools' deficits would otherwise hold for them, until
    /// their owner claims them (a pool below its target then takes pages from pools above
    /// theirs, as ever), and pages above target are released at the interval boundary only as
    /// far as the deficits exceed the free pages. Memory a partition has given a pool that has
    /// not filled it yet is thus used, not left idle (the `oracle`'s static plan in the cold
    /// start).
    pub lend_free_pages: bool,
}

/// The decision logic of one memory controller.
pub trait Controller: Send + fmt::Debug {
    /// Registry name (`dlru`, `kredis`, ...).
    fn name(&self) -> &'static str;

    /// Every data-path access, after the engine served it. MUST be O(1) amortised: sample
    /// before doing real work.
    fn on_access(&mut self, a: &Access);

    /// Every eviction. Default: ignored.
    fn on_evict(&mut self, _e: &Evicted) {}

    /// Whether `on_access` and `on_evict` do anything. A controller that decides from the
    /// [`ControlView`] alone returns false, and the engine never runs it on a profiling thread
    /// (`ControlConfig::offload`): there would be nothing to profile, only events to hand over.
    fn observes(&self) -> bool {
        true
    }

    /// An interval boundary: decide.
    fn decide(&mut self, view: &ControlView<'_>) -> Decision;

    /// Bytes the controller's own models (profilers, histograms) hold now: the engine counts
    /// them with its metadata in `maxmemory` (`metadata_in_budget`), read after every
    /// decision. Default: 0 (nothing worth counting).
    fn model_bytes(&self) -> u64 {
        0
    }

    /// The class mode this controller needs (memcached-style slab controllers return
    /// [`crate::ClassMode::Manual`]); applied when it is installed. Default: keep the engine's.
    fn class_mode(&self) -> Option<crate::ClassMode> {
        None
    }
}

/// When decisions happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Every this many data-path accesses.
    Requests(u64),
    /// Every this many milliseconds of engine clock (checked on the data path and in `tick`).
    Millis(u64),
}

impl Default for Interval {
    fn default() -> Self {
        Interval::Requests(100_000)
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interval::Requests(n) => write!(f, "{n}req"),
            Interval::Millis(ms) if ms % 1000 == 0 => write!(f, "{}s", ms / 1000),
            Interval::Millis(ms) => write!(f, "{ms}ms"),
        }
    }
}

impl FromStr for Interval {
    type Err = String;

    /// `"100000"` or `"100000req"` (requests), or a duration: `"1s"`, `"500ms"`, `"2m"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let reqs = t.strip_suffix("req").unwrap_or(t);
        if let Ok(n) = reqs.trim().parse::<u64>() {
            return if n == 0 {
                Err(format!("interval '{s}': must be at least 1 request"))
            } else {
                Ok(Interval::Requests(n))
            };
        }
        match locus_common::parse_duration(t) {
            Ok(d) if d.as_millis() >= 1 => Ok(Interval::Millis(d.as_millis() as u64)),
            _ => Err(format!(
                "interval '{s}': expected a request count (100000, 100000req) or a duration (1s, 500ms)"
            )),
        }
    }
}

/// How the engine runs a controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlConfig {
    /// When decisions happen.
    pub interval: Interval,
    /// Pages released by pools above target, plus explicit moves, per interval.
    pub max_moves: u32,
    /// Run the controller's profiling on a thread of its own, fed in batches (same results,
    /// bit for bit; the data path pays a store per access instead of the profilers' work).
    pub offload: bool,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            interval: Interval::default(),
            max_moves: 64,
            offload: false,
        }
    }
}

/// One decision as carried out (kept for `INFO`, `LOCUS.CONTROLLER` and simulator reports).
#[derive(Clone, Debug, Default)]
pub struct IntervalRecord {
    /// Index of the decision.
    pub interval: u64,
    /// Engine clock (µs) at the decision.
    pub at_us: u64,
    /// Data-path accesses at the decision.
    pub at_request: u64,
    /// Pages per pool right after the decision was carried out.
    pub pages: Vec<u64>,
    /// Targets per pool after the decision.
    pub targets: Vec<Option<u64>>,
    /// K per pool after the decision.
    pub samples: Vec<u32>,
    /// Page moves and releases carried out.
    pub moves_done: u64,
    /// Items evicted by those moves.
    pub items_evicted_by_moves: u64,
    /// Cumulative GET hits per pool at the decision.
    pub hits: Vec<u64>,
    /// Cumulative GET misses per pool at the decision.
    pub misses: Vec<u64>,
    /// Miss penalty per pool (µs) the decision saw.
    pub penalty_us: Vec<f64>,
    /// Curves the controller used.
    pub curves: Vec<CurveRecord>,
    /// The controller's named figures.
    pub notes: Vec<(String, f64)>,
}

/// Problems building a controller.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum ControlError {
    /// No controller of that name.
    #[error("unknown controller '{name}' (known: {})", known.join(", "))]
    UnknownController {
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: Vec<&'static str>,
    },
    /// A setting's value does not parse or is out of range.
    #[error("controller '{controller}': setting '{key}' = '{value}': expected {expected}")]
    BadSetting {
        /// The controller.
        controller: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// A setting no controller reads (likely a typo).
    #[error("controller '{controller}': unknown setting '{key}' (settings: {})", known.join(", "))]
    UnknownSetting {
        /// The controller.
        controller: String,
        /// The unknown key.
        key: String,
        /// The keys it reads.
        known: Vec<String>,
    },
    /// A registered controller that this build cannot construct from settings alone.
    #[error("controller '{name}' is not available here: {why}")]
    NotAvailable {
        /// The controller.
        name: String,
        /// Why.
        why: String,
    },
}
