//! The [`Engine`]: tenants, their pools, the allocation path, eviction, TTL, stats, page API.
//!
//! The impl is split by concern, one file each: `recency` (LRU clock, LFU), `index` (key index,
//! TTLs), `pages` (page allocation, reclaim, moves), `victim` (each policy's victim choice),
//! `data` (GET/SET/DEL and allocation), `maintenance` (active expiry, tick), `settings` (runtime
//! changes), `stats` (counters, introspection), `page_api` (what controllers and tests drive),
//! `control` (the controller runtime), `slab` (class-local eviction), `snapshot` (walking and
//! restoring items with their metadata), `tier` (sdTMM's fast and slow tiers, opt-in) and
//! `classes` (pRedis(auto)'s per-key penalty classes: one tenant's keyspace over several pools,
//! opt-in). This file holds the types, the [`Engine`] struct and its constructor.

mod classes;
mod control;
mod data;
mod index;
mod large;
mod maintenance;
mod object;
mod page_api;
mod pages;
mod recency;
mod settings;
mod slab;
mod snapshot;
mod stats;
mod tier;
mod victim;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use hashbrown::HashTable;
use locus_common::{Rng, SharedClock, hash_key};

use crate::arbiter::{Arbiter, ArbiterView, PoolView, SharedArbiter, StaticArbiter, Victim};
use crate::class::SizeClasses;
use crate::config::{EngineConfig, LruClockMode, PartitionMode, TenantConfig};
use crate::control::host::Host;
use crate::control::target::TargetArbiter;
use crate::control::{
    Access, AccessKind, ClassState, ControlConfig, ControlView, Controller, Evicted, Interval,
    IntervalRecord, PenaltyTracker, PoolState,
};
use crate::error::EngineError;
use crate::evict::{
    EvPool, LruList, NIL, lfu_decr_and_return, lfu_minutes, lfu_new, lfu_touch, redis_idle_ms,
    redis_lru_clock,
};
use crate::ids::{ClassId, PoolId, TenantId};
use crate::policy::Policy;
use crate::stats::{
    ClassCounters, ClassStats, EngineStats, EvictionReason, TenantCounters, TenantStats,
};
use crate::store::{HDR, Page, Store};

pub use classes::{ClassPoolStats, MAX_CLASS_POOLS};
pub use object::{Detached, LAZYFREE_THRESHOLD, Object, ValueRef};
pub use snapshot::{ItemMeta, RecencyKind, RestoreValue};
pub use tier::TierWork;

/// Pages examined when choosing which page to take back (all of them when the pool has fewer).
const RECLAIM_SAMPLE: usize = 64;
/// Policy evictions that freed chunks only in other classes (or pools) before the allocation
/// takes a page back instead. The chunks they freed are not wasted: later inserts of those
/// classes reuse them, so in a stationary size mix one eviction per insert is the average.
const FRUITLESS_EVICTIONS: u32 = 64;
/// Page events kept for inspection.
pub const PAGE_EVENT_LOG: usize = 256;
/// Redis's `ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE` (percent).
const ACCEPTABLE_STALE_PCT: usize = 10;

/// What SET does with the key's TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Expire {
    /// Keep the existing TTL (Redis `KEEPTTL`).
    Keep,
    /// No TTL (plain SET clears a TTL, like Redis).
    #[default]
    Persist,
    /// Expire at this absolute time in clock milliseconds.
    AtMs(u64),
}

/// Why a key left the cache without a command deleting it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEventKind {
    /// Its TTL passed (on access or in an active-expiry cycle).
    Expired,
    /// Evicted: by its pool's policy, or with a page taken back, moved or released.
    Evicted,
}

/// A key removed by expiry or eviction (see [`Engine::record_key_events`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    /// Whose key.
    pub tenant: TenantId,
    /// The key.
    pub key: Vec<u8>,
    /// Expired or evicted.
    pub kind: KeyEventKind,
}

/// SET's condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SetCond {
    /// Always store.
    #[default]
    Always,
    /// Only if the key does not exist (`NX`).
    IfAbsent,
    /// Only if the key exists (`XX`).
    IfPresent,
}

/// Options of [`Engine::set`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SetOptions {
    /// TTL handling.
    pub expire: Expire,
    /// NX / XX.
    pub cond: SetCond,
}

/// A page that changed hands: taken back for another class or pool (`PageReclaim`), moved by a
/// controller (`PageMove`), or released because `maxmemory` or a budget shrank (`Shrink`, `to`
/// is None). Plain grants of free pages and releases of emptied pages are not logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageEvent {
    /// Clock time in ms.
    pub at_ms: u64,
    /// The page id.
    pub page: u32,
    /// Previous owner.
    pub from: (PoolId, ClassId),
    /// New owner (None: released to the free list).
    pub to: Option<(PoolId, ClassId)>,
    /// Why.
    pub reason: EvictionReason,
    /// Items evicted from it.
    pub evicted: u64,
}

/// What `OBJECT` reports about a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Idle time: milliseconds (1 s resolution) in Redis clock mode, accesses in logical mode;
    /// 0 under LFU policies (the field holds the LFU counter).
    pub idle_ms: u64,
    /// The decayed LFU counter under LFU policies (`OBJECT FREQ`), else 0.
    pub lfu_freq: u8,
    /// Value length.
    pub value_len: usize,
    /// Chunk size charged for the item.
    pub charged_bytes: u64,
    /// Absolute expiry in clock ms.
    pub expire_at_ms: Option<u64>,
}

#[derive(Default)]
struct U32Hasher(u64);

impl Hasher for U32Hasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type ExpMap = HashMap<u32, Exp, BuildHasherDefault<U32Hasher>>;

#[derive(Clone, Copy, Debug)]
struct Exp {
    at_ms: u64,
    vpos: u32,
}

#[derive(Debug, Default, Clone)]
struct ClassPages {
    pages: u64,
    /// Pages of this (pool, class) with a free chunk.
    partial: Vec<u32>,
    /// Every page of this (pool, class) (class-local sampling in [`ClassMode::Manual`]).
    list: Vec<u32>,
    /// Slow-tier pages of this (pool, class) with a free chunk (`partial` holds the fast
    /// tier's, which is every page without tiers).
    slow_partial: Vec<u32>,
}

impl ClassPages {
    fn partial_of(&self, tier: u8) -> &Vec<u32> {
        if tier == 0 {
            &self.partial
        } else {
            &self.slow_partial
        }
    }

    fn partial_of_mut(&mut self, tier: u8) -> &mut Vec<u32> {
        if tier == 0 {
            &mut self.partial
        } else {
            &mut self.slow_partial
        }
    }
}

/// How size classes get pages and who evicts for them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClassMode {
    /// Redis-like (default): eviction samples the whole pool, and a class short of chunks takes
    /// pages from other classes by itself (no slab calcification).
    #[default]
    Auto,
    /// memcached-like: a class that is out of chunks, when no free page may be taken, evicts one
    /// of its own items (K sampled from its pages, the oldest goes); pages move between classes
    /// only by a controller's explicit moves (LAMA, automove, PSA, ...). Without such a
    /// controller this is memcached without `slab_automove`: the first pages go to whichever
    /// classes ask first and stay there.
    Manual,
    /// Twemcache's random slab eviction: a class that is out of chunks, when no free page may
    /// be taken, takes a page chosen uniformly among all its pool's pages (any class, its own
    /// included), evicting everything on it. No calcification, no locality.
    RandomSlab,
}

/// Hyperbolic caching's per-item state: when it was stored and how often it was used since.
#[derive(Clone, Copy, Debug)]
struct Hyp {
    born: u64,
    uses: u32,
}

/// A pool: a tenant's own (with its keyspace), or a class pool of a tenant with per-key penalty
/// classes (`leader` set; see the `classes` module).
struct Tenant {
    cfg: TenantConfig,
    /// Expired keys stay (a read answers a miss, nothing is removed, nothing counted): Redis
    /// keeps them while a CLIENT PAUSE holds writes ([`Engine::set_expiry_held`]).
    expiry_held: bool,
    index: HashTable<u32>,
    /// Every item handle (dense, for uniform sampling); the header's `pos` points back.
    all: Vec<u32>,
    /// Handles with a TTL (dense, for volatile-* sampling and the active sweep).
    vol: Vec<u32>,
    expires: ExpMap,
    lru: Option<LruList>,
    /// Insertion time and uses per item, by dense position (`allkeys-hyperbolic` only).
    hyp: Option<Vec<Hyp>>,
    evpool: EvPool,
    pages: Vec<u32>,
    classes: Vec<ClassPages>,
    counters: TenantCounters,
    class_counters: Vec<ClassCounters>,
    item_bytes: u64,
    charged_bytes: u64,
    /// Sum over owned pages of slots × chunk.
    chunk_bytes: u64,
    /// Bytes charged for the tenant's large items (`EngineConfig::large_items`), its objects,
    /// and what its clients hold outside both ([`Engine::charge_outside`]).
    large_bytes: u64,
    /// The part of `large_bytes` its clients hold ([`Engine::charge_outside`]).
    outside_bytes: u64,
    /// This pool's own class mode, overriding the engine's ([`Engine::set_tenant_class_mode`]).
    class_mode: Option<ClassMode>,
    /// Class-local modes: a class with no page takes its first one from the pool's own memory
    /// when none is free ([`Engine::set_tenant_first_page`]).
    first_page: bool,
    /// Class-local modes: a class holding more than [`GIVE_BACK_FREE_PAGES`] pages' worth of
    /// free chunks is compacted and the page it empties goes back to the free pages
    /// ([`Engine::set_tenant_gives_back_free_pages`]).
    gives_back_free: bool,
    /// Its tier lists and counters (tiered engines only).
    tier: Option<Box<tier::TenantTier>>,
    /// Set while the tenant is dumped ([`Engine::set_dormant`]).
    dormant: Option<snapshot::Dormant>,
    /// Per-key penalty classes: the pools of this tenant's keys (`classes` module).
    group: Option<Box<classes::ClassGroup>>,
    /// Set on a class pool: the tenant whose keys it holds.
    leader: Option<u32>,
}

impl Tenant {
    fn new(cfg: TenantConfig, nclasses: usize, tiers: Option<&crate::tier::TierConfig>) -> Self {
        let lru = (cfg.policy == Policy::AllkeysExactLru).then(LruList::new);
        let hyp = (cfg.policy == Policy::AllkeysHyperbolic).then(Vec::new);
        let evpool = EvPool::new(cfg.evpool_size as usize);
        Self {
            cfg,
            expiry_held: false,
            index: HashTable::new(),
            all: Vec::new(),
            vol: Vec::new(),
            expires: ExpMap::default(),
            lru,
            hyp,
            evpool,
            pages: Vec::new(),
            classes: vec![ClassPages::default(); nclasses],
            counters: TenantCounters::default(),
            class_counters: vec![ClassCounters::default(); nclasses],
            item_bytes: 0,
            charged_bytes: 0,
            chunk_bytes: 0,
            large_bytes: 0,
            outside_bytes: 0,
            class_mode: None,
            first_page: false,
            gives_back_free: false,
            tier: tiers.map(|c| Box::new(tier::TenantTier::new(c))),
            dormant: None,
            group: None,
            leader: None,
        }
    }

    fn metadata_bytes(&self) -> u64 {
        let cap = self.index.capacity() as u64;
        let buckets = if cap == 0 {
            0
        } else {
            (cap * 8 / 7).next_power_of_two()
        };
        let exp = self.expires.capacity() as u64 * (std::mem::size_of::<(u32, Exp)>() as u64 + 1);
        buckets * 5
            + (self.all.capacity() + self.vol.capacity()) as u64 * 4
            + exp
            + self.lru.as_ref().map_or(0, LruList::bytes)
            + self
                .hyp
                .as_ref()
                .map_or(0, |v| (v.capacity() * std::mem::size_of::<Hyp>()) as u64)
            + self.tier.as_ref().map_or(0, |t| t.bytes())
            + self.group.as_ref().map_or(0, |g| g.bytes())
    }
}

/// A sampled eviction candidate.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    handle: u32,
    score: u64,
    from_evpool: bool,
}

/// The Locus cache engine. See the crate documentation for the layout and the algorithms.
///
/// All methods take `&mut self` (or `&self`) and run to completion; the server wraps the engine in
/// a lock. Methods taking a [`TenantId`] panic when given an id that this engine did not hand out
/// (a caller bug, not input).
pub struct Engine {
    cfg: EngineConfig,
    clock: SharedClock,
    rng: Rng,
    classes: SizeClasses,
    store: Store,
    max_page_ids: u64,
    free_with_buf: Vec<u32>,
    free_no_buf: Vec<u32>,
    pages_used: u64,
    pages_total: u64,
    /// Pages' worth of metadata outside pages (0 unless `metadata_in_budget`), recomputed when a
    /// container grows ([`Engine::note_metadata`]).
    meta_pages: u64,
    /// The controller's model bytes at its last decision ([`Controller::model_bytes`]), part
    /// of the metadata.
    model_bytes: u64,
    /// Bytes charged for large items over all tenants (their own allocations).
    large_bytes: u64,
    /// Objects (hashes, lists, sets, sorted sets) outside the pages.
    objects: object::Objects,
    /// The object RENAME is moving: its item may be unlinked (or evicted) meanwhile, the object
    /// stays for the new key.
    keep_object: Option<u32>,
    /// Keys removed by expiry or eviction, kept while [`Engine::record_key_events`] is on (the
    /// server's keyspace notifications).
    key_events: Option<Vec<KeyEvent>>,
    allocated_bufs: u64,
    tenants: Vec<Tenant>,
    arbiter: Box<dyn Arbiter>,
    views: Vec<PoolView>,
    logical: u64,
    expire_cursor: usize,
    total_items: u64,
    sample_scratch: Vec<u32>,
    key_scratch: Vec<u8>,
    /// Free competition's one eviction pool over all pools (Redis's pool across databases).
    shared_evpool: EvPool,
    /// Round-robin cursor of the random policies under free competition (Redis `next_db`).
    next_db: usize,
    /// The last page reassignments and releases (what, why, from, to).
    page_events: VecDeque<PageEvent>,
    page_event_count: u64,
    /// Optional cap on the sum of key + value bytes over all tenants (byte-capacity
    /// simulations: `minisim`); not part of [`EngineConfig`].
    max_item_bytes: Option<u64>,
    /// The installed controller and its bookkeeping (`None`: the configured arbiter alone).
    control: Option<Box<ControlState>>,
    /// Set on the data path when a decision is due; the decision runs at the start of the next
    /// data-path call (never in the middle of one, so no handle a caller holds is invalidated).
    /// Never set by the data path when decisions are off it ([`Engine::set_decisions_on_data_path`]).
    control_due: bool,
    /// Whether a due decision runs inside the next data-path call (the simulator: decisions at
    /// exact request counts, deterministic) or only in [`Engine::tick`] (the server: no client's
    /// request pays for a decision).
    decide_on_data_path: bool,
    /// Miss penalty per tenant (hints, and GET miss → SET gaps while a controller runs).
    penalty: PenaltyTracker,
    /// How classes get pages and who evicts for them.
    class_mode: ClassMode,
    /// Memory tiers (`EngineConfig::tier`), `None` for one tier.
    tiers: Option<Box<tier::TierState>>,
    /// Some tenant has per-key penalty classes (`classes`): checked first on the data path, so
    /// an engine without them reads no tenant field more than before.
    classes_on: bool,
    /// The size class of the item the engine expired last ([`Engine::last_expired_class`]).
    last_expired_class: Option<ClassId>,
}

/// Decisions kept for `control_records`.
pub const CONTROL_RECORD_LOG: usize = 256;

/// A class that gives back free pages ([`Engine::set_tenant_gives_back_free_pages`]) keeps up to
/// this many pages' worth of free chunks; past it, a page is emptied and goes back (memcached's
/// automover likewise returns a class's surplus free memory to its global page pool).
pub const GIVE_BACK_FREE_PAGES: u64 = 2;

/// A controller installed in the engine.
struct ControlState {
    ctl: Host,
    cfg: ControlConfig,
    /// Data-path accesses seen.
    requests: u64,
    /// When the next decision is due (requests, or µs for a time interval).
    next_at: u64,
    decisions: u64,
    targets: Vec<Option<u64>>,
    records: VecDeque<IntervalRecord>,
    /// Page moves and releases carried out, and the items they evicted, over every decision
    /// (the record log keeps only the last [`CONTROL_RECORD_LOG`]).
    moves_total: (u64, u64),
}

impl ControlState {
    /// Whether the interval has passed: by data-path accesses seen, or by the clock.
    fn decision_due(&self, now_us: u64) -> bool {
        match self.cfg.interval {
            Interval::Requests(_) => self.requests >= self.next_at,
            Interval::Millis(_) => now_us >= self.next_at,
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("tenants", &self.tenants.len())
            .field("pages_used", &self.pages_used)
            .field("pages_total", &self.pages_total)
            .field("items", &self.total_items)
            .field("arbiter", &self.arbiter.name())
            .finish()
    }
}

fn invalid(problems: Vec<String>) -> EngineError {
    EngineError::InvalidConfig { problems }
}

impl Engine {
    /// A new engine with no tenants.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] listing every problem of `cfg`, including a `maxmemory` with
    /// more pages than handles can address for this page size.
    pub fn new(cfg: EngineConfig, clock: SharedClock) -> Result<Engine, EngineError> {
        cfg.validate().map_err(invalid)?;
        let classes = SizeClasses::new(cfg.min_chunk, cfg.slab_growth_factor, cfg.page_size);
        let slot_bits = 32 - (classes.max_slots().max(2) - 1).leading_zeros();
        let max_page_ids = 1u64 << (32 - slot_bits);
        let pages_total = cfg.maxmemory / cfg.page_size;
        if pages_total > max_page_ids {
            return Err(invalid(vec![format!(
                "maxmemory: {} needs {pages_total} pages of {} bytes; at most {max_page_ids} are addressable (raise page_size or min_chunk)",
                cfg.maxmemory, cfg.page_size
            )]));
        }
        let arbiter: Box<dyn Arbiter> = match cfg.partition {
            PartitionMode::Shared => Box::new(SharedArbiter),
            PartitionMode::Static => Box::new(StaticArbiter),
        };
        Ok(Engine {
            rng: Rng::new(cfg.seed),
            classes,
            store: Store {
                pages: Vec::new(),
                slot_bits,
                slot_mask: (1u32 << slot_bits) - 1,
            },
            max_page_ids,
            free_with_buf: Vec::new(),
            free_no_buf: Vec::new(),
            pages_used: 0,
            pages_total,
            meta_pages: 0,
            model_bytes: 0,
            large_bytes: 0,
            objects: object::Objects::default(),
            keep_object: None,
            allocated_bufs: 0,
            tenants: Vec::new(),
            arbiter,
            views: Vec::new(),
            logical: 0,
            expire_cursor: 0,
            total_items: 0,
            sample_scratch: Vec::new(),
            key_scratch: Vec::new(),
            shared_evpool: EvPool::new(crate::config::DEFAULT_EVPOOL_SIZE as usize),
            next_db: 0,
            page_events: VecDeque::new(),
            page_event_count: 0,
            max_item_bytes: None,
            control: None,
            control_due: false,
            decide_on_data_path: true,
            key_events: None,
            penalty: PenaltyTracker::default(),
            class_mode: ClassMode::Auto,
            tiers: Self::tier_state(&cfg, pages_total)?,
            classes_on: false,
            last_expired_class: None,
            cfg,
            clock,
        })
    }

    /// Turns the recording of expired and evicted keys on or off (off by default: it costs a
    /// key copy per removal). Recorded events wait for [`Engine::take_key_events`].
    pub fn record_key_events(&mut self, on: bool) {
        if on {
            self.key_events.get_or_insert_with(Vec::new);
        } else {
            self.key_events = None;
        }
    }

    /// The expired and evicted keys recorded since the last call, oldest first.
    pub fn take_key_events(&mut self) -> Vec<KeyEvent> {
        self.key_events
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    #[inline]
    pub(super) fn note_key_event(&mut self, t: usize, h: u32, kind: KeyEventKind) {
        if let Some(ev) = self.key_events.as_mut() {
            ev.push(KeyEvent {
                tenant: TenantId(self.tenants[t].leader.unwrap_or(t as u32)),
                key: self.store.key(h).to_vec(),
                kind,
            });
        }
    }

    /// Replaces the arbiter (controllers of later issues).
    pub fn set_arbiter(&mut self, arbiter: Box<dyn Arbiter>) {
        self.arbiter = arbiter;
    }

    /// The arbiter's name.
    pub fn arbiter_name(&self) -> &'static str {
        self.arbiter.name()
    }

    /// Adds a tenant (and its pool).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] with every problem, or [`EngineError::DuplicateTenant`].
    pub fn add_tenant(&mut self, cfg: TenantConfig) -> Result<TenantId, EngineError> {
        cfg.validate().map_err(invalid)?;
        if self.tenant_by_name(&cfg.name).is_some() {
            return Err(EngineError::DuplicateTenant { name: cfg.name });
        }
        let id = TenantId(self.tenants.len() as u32);
        let tiers = self.cfg.tier.as_ref();
        self.tenants
            .push(Tenant::new(cfg, self.classes.len(), tiers));
        Ok(id)
    }

    /// The tenant with this name, as a typed error for the server.
    ///
    /// # Errors
    /// [`EngineError::UnknownTenant`].
    pub fn tenant(&self, name: &str) -> Result<TenantId, EngineError> {
        self.tenant_by_name(name)
            .ok_or_else(|| EngineError::UnknownTenant {
                name: name.to_string(),
            })
    }

    /// The tenant with this name.
    pub fn tenant_by_name(&self, name: &str) -> Option<TenantId> {
        self.tenants
            .iter()
            .position(|t| t.cfg.name == name && t.leader.is_none())
            .map(|i| TenantId(i as u32))
    }

    /// Every tenant, in creation order (not the class pools of tenants with per-key classes:
    /// see [`Engine::pools_of`]).
    pub fn tenant_ids(&self) -> Vec<TenantId> {
        (0..self.tenants.len() as u32)
            .filter(|&i| self.tenants[i as usize].leader.is_none())
            .map(TenantId)
            .collect()
    }

    /// A tenant's configuration (as changed at runtime).
    pub fn tenant_config(&self, t: TenantId) -> &TenantConfig {
        &self.tenants[t.0 as usize].cfg
    }

    /// The engine configuration (as changed at runtime).
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The engine's clock in ms.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}
