//! The [`Engine`]: tenants, their pools, the allocation path, eviction, TTL, stats, page API.

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

/// A tenant and its pool (one pool per tenant for now).
struct Tenant {
    cfg: TenantConfig,
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
}

impl Tenant {
    fn new(cfg: TenantConfig, nclasses: usize) -> Self {
        let lru = (cfg.policy == Policy::AllkeysExactLru).then(LruList::new);
        let hyp = (cfg.policy == Policy::AllkeysHyperbolic).then(Vec::new);
        let evpool = EvPool::new(cfg.evpool_size as usize);
        Self {
            cfg,
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
    control_due: bool,
    /// Miss penalty per tenant (hints, and GET miss → SET gaps while a controller runs).
    penalty: PenaltyTracker,
    /// How classes get pages and who evicts for them.
    class_mode: ClassMode,
}

/// Decisions kept for `control_records`.
pub const CONTROL_RECORD_LOG: usize = 256;

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
            penalty: PenaltyTracker::default(),
            class_mode: ClassMode::Auto,
            cfg,
            clock,
        })
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
        self.tenants.push(Tenant::new(cfg, self.classes.len()));
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
            .position(|t| t.cfg.name == name)
            .map(|i| TenantId(i as u32))
    }

    /// Every tenant, in creation order.
    pub fn tenant_ids(&self) -> Vec<TenantId> {
        (0..self.tenants.len() as u32).map(TenantId).collect()
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

    // ----------------------------------------------------------------------------------------
    // Clocks and per-item recency fields.

    #[inline]
    fn lru_clock(&self) -> u32 {
        match self.cfg.lru_clock {
            LruClockMode::Redis => redis_lru_clock(self.clock.now_ms()),
            LruClockMode::Logical => self.logical as u32,
        }
    }

    #[inline]
    fn idle_of(&self, lruclock: u32, lru: u32) -> u64 {
        match self.cfg.lru_clock {
            LruClockMode::Redis => redis_idle_ms(lruclock, lru),
            LruClockMode::Logical => u64::from(lruclock.wrapping_sub(lru)),
        }
    }

    /// Touches an item on access (Redis `lookupKey`: LFU update or LRU stamp; list move).
    #[inline]
    fn touch(&mut self, t: usize, h: u32) {
        let policy = self.tenants[t].cfg.policy;
        let v = if policy.is_lfu() {
            let old = self.store.lru(h);
            lfu_touch(
                old,
                lfu_minutes(self.clock.now_ms()),
                self.cfg.lfu_decay_time,
                self.cfg.lfu_log_factor,
                &mut self.rng,
            )
        } else {
            self.lru_clock()
        };
        self.store.set_lru(h, v);
        let pos = self.store.pos(h);
        let tn = &mut self.tenants[t];
        if let Some(l) = &mut tn.lru {
            l.move_front(pos);
        }
        if let Some(hy) = &mut tn.hyp {
            hy[pos as usize].uses = hy[pos as usize].uses.saturating_add(1);
        }
    }

    /// Hyperbolic caching's clock: accesses (logical LRU clock) or milliseconds.
    fn hyp_now(&self) -> u64 {
        match self.cfg.lru_clock {
            LruClockMode::Logical => self.logical,
            LruClockMode::Redis => self.clock.now_ms(),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Index.

    #[inline]
    fn find(&self, t: usize, key: &[u8], hash: u64) -> Option<u32> {
        let store = &self.store;
        self.tenants[t]
            .index
            .find(hash, |&h| store.key(h) == key)
            .copied()
    }

    fn expiry(&self, t: usize, h: u32) -> Option<u64> {
        if self.store.has_ttl(h) {
            self.tenants[t].expires.get(&h).map(|e| e.at_ms)
        } else {
            None
        }
    }

    /// Finds a key, expiring it lazily when its TTL has passed.
    #[inline]
    fn lookup(&mut self, t: usize, key: &[u8], hash: u64) -> Option<u32> {
        let h = self.find(t, key, hash)?;
        if self.store.has_ttl(h) {
            let at = self.tenants[t]
                .expires
                .get(&h)
                .map_or(u64::MAX, |e| e.at_ms);
            if at <= self.clock.now_ms() {
                self.expire_item(t, h);
                return None;
            }
        }
        Some(h)
    }

    fn expire_item(&mut self, t: usize, h: u32) {
        let c = self.unlink_item(t, h, true);
        let tn = &mut self.tenants[t];
        tn.counters.expired += 1;
        tn.class_counters[c as usize].expired += 1;
    }

    fn add_ttl(&mut self, t: usize, h: u32, at_ms: u64) {
        let tn = &mut self.tenants[t];
        if let Some(e) = tn.expires.get_mut(&h) {
            e.at_ms = at_ms;
            return;
        }
        let vpos = tn.vol.len() as u32;
        tn.vol.push(h);
        tn.expires.insert(h, Exp { at_ms, vpos });
        self.store.set_ttl_flag(h, true);
    }

    fn remove_ttl(&mut self, t: usize, h: u32) {
        let tn = &mut self.tenants[t];
        if let Some(e) = tn.expires.remove(&h) {
            let last = tn.vol.pop().expect("vol holds every TTL handle");
            if last != h {
                tn.vol[e.vpos as usize] = last;
                if let Some(m) = tn.expires.get_mut(&last) {
                    m.vpos = e.vpos;
                }
            }
        }
        self.store.set_ttl_flag(h, false);
    }

    /// Links a freshly written chunk `h` as key `key` of tenant `t`.
    #[expect(
        clippy::too_many_arguments,
        reason = "one internal call site per caller, all fields needed"
    )]
    fn link_item(
        &mut self,
        t: usize,
        h: u32,
        hash: u64,
        key: &[u8],
        value: &[u8],
        lru: u32,
        exp: Option<u64>,
    ) {
        let pos = self.tenants[t].all.len() as u32;
        let born = self.hyp_now();
        self.store.write(h, lru, pos, key, value, false);
        let store = &self.store;
        let tn = &mut self.tenants[t];
        tn.all.push(h);
        if let Some(l) = &mut tn.lru {
            l.push(pos);
        }
        if let Some(hy) = &mut tn.hyp {
            hy.push(Hyp { born, uses: 1 });
        }
        tn.index.insert_unique(hash, h, |&x| hash_key(store.key(x)));
        let (pi, _) = store.split(h);
        let page = &store.pages[pi];
        let bytes = (key.len() + value.len()) as u64;
        tn.item_bytes += bytes;
        tn.charged_bytes += u64::from(page.chunk);
        let cc = &mut tn.class_counters[page.class as usize];
        cc.items += 1;
        cc.item_bytes += bytes;
        self.total_items += 1;
        if let Some(at) = exp {
            self.add_ttl(t, h, at);
        }
    }

    /// Removes item `h` of tenant `t` from every structure and frees its chunk. Returns its class.
    /// With `release_empty`, a page left without items goes back to the free list.
    fn unlink_item(&mut self, t: usize, h: u32, release_empty: bool) -> u16 {
        let hash = hash_key(self.store.key(h));
        let (klen, vlen) = self.store.lens(h);
        let pos = self.store.pos(h);
        if self.store.has_ttl(h) {
            self.remove_ttl(t, h);
        }
        let tn = &mut self.tenants[t];
        match tn.index.find_entry(hash, |&x| x == h) {
            Ok(e) => {
                e.remove();
            }
            Err(_) => locus_common::strict_assert!(false, "item missing from its index"),
        }
        let last = tn.all.pop().expect("all holds every handle");
        if let Some(l) = &mut tn.lru {
            l.swap_remove(pos);
        }
        if let Some(hy) = &mut tn.hyp {
            hy.swap_remove(pos as usize);
        }
        if last != h {
            tn.all[pos as usize] = last;
            self.store.set_pos(last, pos);
        }
        let (pi, _) = self.store.split(h);
        let (class, chunk) = {
            let p = &self.store.pages[pi];
            (p.class, p.chunk)
        };
        let bytes = (klen + vlen) as u64;
        tn.item_bytes -= bytes;
        tn.charged_bytes -= u64::from(chunk);
        let cc = &mut tn.class_counters[class as usize];
        cc.items -= 1;
        cc.item_bytes -= bytes;
        self.total_items -= 1;
        self.store.free_slot(h);
        let page = &mut self.store.pages[pi];
        if page.partial_pos == NIL {
            let partial = &mut tn.classes[class as usize].partial;
            page.partial_pos = partial.len() as u32;
            partial.push(pi as u32);
        }
        if release_empty && page.live == 0 {
            self.release_page(pi as u32);
        }
        class
    }

    // ----------------------------------------------------------------------------------------
    // Pages.

    /// A chunk from a page of (t, c) with a free one.
    fn take_free_chunk(&mut self, t: usize, c: u16) -> Option<u32> {
        let pg = *self.tenants[t].classes[c as usize].partial.last()?;
        let slot = self.store.take_slot(pg);
        let page = &mut self.store.pages[pg as usize];
        if !page.has_free() {
            self.tenants[t].classes[c as usize].partial.pop();
            page.partial_pos = NIL;
        }
        Some(self.store.handle(pg, slot))
    }

    fn attach_page(&mut self, pg: u32, t: usize, c: u16) {
        let chunk = self.classes.chunk(c);
        let slots = self.classes.slots(c);
        let tn = &mut self.tenants[t];
        let page = &mut self.store.pages[pg as usize];
        page.owner = t as u32;
        page.class = c;
        page.chunk = chunk;
        page.slots = slots;
        page.live = 0;
        page.bump = 0;
        page.free_head = NIL;
        page.pool_pos = tn.pages.len() as u32;
        tn.pages.push(pg);
        let cp = &mut tn.classes[c as usize];
        cp.pages += 1;
        page.partial_pos = cp.partial.len() as u32;
        cp.partial.push(pg);
        page.class_pos = cp.list.len() as u32;
        cp.list.push(pg);
        tn.chunk_bytes += u64::from(slots) * u64::from(chunk);
        self.pages_used += 1;
    }

    /// Takes an (empty) page away from its owner.
    fn detach_page(&mut self, pg: u32) {
        let page = &self.store.pages[pg as usize];
        locus_common::strict_assert!(page.live == 0, "detaching a page with live items");
        let (t, c, pool_pos, partial_pos, class_pos) = (
            page.owner as usize,
            page.class,
            page.pool_pos,
            page.partial_pos,
            page.class_pos,
        );
        let bytes = u64::from(page.slots) * u64::from(page.chunk);
        let tn = &mut self.tenants[t];
        let last = tn.pages.pop().expect("owner lists its pages");
        if last != pg {
            tn.pages[pool_pos as usize] = last;
            self.store.pages[last as usize].pool_pos = pool_pos;
        }
        let cp = &mut tn.classes[c as usize];
        cp.pages -= 1;
        let last = cp.list.pop().expect("class list holds the page");
        if last != pg {
            cp.list[class_pos as usize] = last;
            self.store.pages[last as usize].class_pos = class_pos;
        }
        if partial_pos != NIL {
            let last = cp.partial.pop().expect("partial list holds the page");
            if last != pg {
                cp.partial[partial_pos as usize] = last;
                self.store.pages[last as usize].partial_pos = partial_pos;
            }
        }
        tn.chunk_bytes -= bytes;
        let page = &mut self.store.pages[pg as usize];
        page.owner = NIL;
        page.pool_pos = NIL;
        page.partial_pos = NIL;
        page.class_pos = NIL;
        self.pages_used -= 1;
    }

    fn release_page(&mut self, pg: u32) {
        self.detach_page(pg);
        self.free_with_buf.push(pg);
    }

    /// Gives a free page to (t, c). The caller checked `pages_used < pages_total`.
    fn grant_page(&mut self, t: usize, c: u16) {
        let pg = if let Some(pg) = self.free_with_buf.pop() {
            pg
        } else {
            let pg = if let Some(pg) = self.free_no_buf.pop() {
                pg
            } else {
                let id = self.store.pages.len() as u32;
                locus_common::strict_assert!(u64::from(id) < self.max_page_ids);
                self.store.pages.push(Page::empty());
                id
            };
            // Zeroed allocation: large buffers come from fresh mappings, so RSS grows with use.
            self.store.pages[pg as usize].buf = vec![0u8; self.cfg.page_size as usize];
            self.allocated_bufs += 1;
            pg
        };
        self.attach_page(pg, t, c);
    }

    /// Evicts everything on `pg` (counted with `reason`) and hands it to (t, c). Returns the
    /// number of items evicted.
    fn reassign_page(&mut self, pg: u32, t: usize, c: u16, reason: EvictionReason) -> u64 {
        let from = self.page_owner(pg);
        let evicted = self.empty_page(pg, reason);
        self.detach_page(pg);
        self.attach_page(pg, t, c);
        self.record_page_event(
            pg,
            from,
            Some((PoolId(t as u32), ClassId(c))),
            reason,
            evicted,
        );
        evicted
    }

    fn page_owner(&self, pg: u32) -> (PoolId, ClassId) {
        let p = &self.store.pages[pg as usize];
        (PoolId(p.owner), ClassId(p.class))
    }

    /// Takes a page away (its items evicted with reason `Shrink`) and frees it.
    fn shrink_page(&mut self, pg: u32) {
        let from = self.page_owner(pg);
        let evicted = self.empty_page(pg, EvictionReason::Shrink);
        self.release_page(pg);
        self.record_page_event(pg, from, None, EvictionReason::Shrink, evicted);
    }

    fn record_page_event(
        &mut self,
        page: u32,
        from: (PoolId, ClassId),
        to: Option<(PoolId, ClassId)>,
        reason: EvictionReason,
        evicted: u64,
    ) {
        self.page_event_count += 1;
        if self.page_events.len() == PAGE_EVENT_LOG {
            self.page_events.pop_front();
        }
        self.page_events.push_back(PageEvent {
            at_ms: self.clock.now_ms(),
            page,
            from,
            to,
            reason,
            evicted,
        });
    }

    /// Evicts every live item of `pg`; the page stays attached (empty).
    fn empty_page(&mut self, pg: u32, reason: EvictionReason) -> u64 {
        let (owner, bump) = {
            let p = &self.store.pages[pg as usize];
            (p.owner as usize, p.bump)
        };
        let mut n = 0;
        for slot in 0..bump {
            let h = self.store.handle(pg, slot);
            if self.store.is_live(h) {
                self.evict_handle(owner, h, reason, false);
                n += 1;
            }
        }
        n
    }

    /// The page of `t` (optionally of class `class` only, or excluding `exclude`) with the lowest
    /// occupancy, looking at all pages or a seeded sample of them.
    fn sparsest_page(&mut self, t: usize, class: Option<u16>, exclude: Option<u16>) -> Option<u32> {
        let n = self.tenants[t].pages.len();
        if n == 0 {
            return None;
        }
        let ok =
            |p: &Page| class.is_none_or(|c| p.class == c) && exclude.is_none_or(|c| p.class != c);
        let better = |p: &Page, best: Option<(u64, u64)>| {
            // occupancy live/slots compared as fractions: live_a * slots_b < live_b * slots_a
            best.is_none_or(|(l, s)| u64::from(p.live) * s < l * u64::from(p.slots))
        };
        let mut best: Option<(u32, (u64, u64))> = None;
        if n <= RECLAIM_SAMPLE || class.is_some() {
            for &pg in &self.tenants[t].pages {
                let p = &self.store.pages[pg as usize];
                if ok(p) && better(p, best.map(|b| b.1)) {
                    best = Some((pg, (u64::from(p.live), u64::from(p.slots))));
                }
            }
        } else {
            for _ in 0..RECLAIM_SAMPLE {
                let pg = self.tenants[t].pages[self.rng.below(n as u64) as usize];
                let p = &self.store.pages[pg as usize];
                if ok(p) && better(p, best.map(|b| b.1)) {
                    best = Some((pg, (u64::from(p.live), u64::from(p.slots))));
                }
            }
            if best.is_none() {
                for &pg in &self.tenants[t].pages {
                    let p = &self.store.pages[pg as usize];
                    if ok(p) && better(p, best.map(|b| b.1)) {
                        best = Some((pg, (u64::from(p.live), u64::from(p.slots))));
                    }
                }
            }
        }
        best.map(|b| b.0)
    }

    fn refresh_views(&mut self) {
        let ps = self.cfg.page_size;
        self.views.clear();
        for (i, tn) in self.tenants.iter().enumerate() {
            self.views.push(PoolView {
                pool: PoolId(i as u32),
                pages: tn.pages.len() as u64,
                items: tn.all.len() as u64,
                free_chunk_bytes: tn.chunk_bytes - tn.charged_bytes,
                min_pages: tn.cfg.min_bytes / ps,
                max_pages: tn.cfg.max_bytes.map(|m| m / ps),
                evicts: tn.cfg.policy != Policy::NoEviction,
            });
        }
    }

    /// A page that can be taken back for (t, c): from a pool the arbiter allows (the requester
    /// first) whose free chunk bytes exceed a page plus a quarter of its chunk bytes (or which has
    /// any free chunk, when `force`), its emptiest page (not of class `c` in `t` itself). Pools
    /// whose policy restricts eviction (noeviction, volatile-*) only give pages holding nothing.
    fn pick_reclaim_page(&mut self, t: usize, c: u16, force: bool) -> Option<u32> {
        let ps = self.cfg.page_size;
        let p = PoolId(t as u32);
        let n = self.tenants.len();
        for i in 0..n {
            // The requester first, then the others in id order.
            let r = match i {
                0 => t,
                i if i <= t => i - 1,
                i => i,
            };
            let tn = &self.tenants[r];
            // Pools whose policy restricts what may be evicted (noeviction, volatile-*) only give
            // pages that hold nothing.
            let restricted = tn.cfg.policy == Policy::NoEviction || tn.cfg.policy.is_volatile();
            let free = tn.chunk_bytes - tn.charged_bytes;
            // Cheap: a lot of the pool is free chunks (deletes, expiries, a shifted size mix).
            let cheap = free >= ps + tn.chunk_bytes / 4;
            if tn.pages.is_empty() || free == 0 || !(restricted || force || cheap) {
                continue;
            }
            let view = ArbiterView {
                pools: &self.views,
                pages_used: self.pages_used,
                pages_total: self.pages_total,
                page_size: ps,
            };
            if !self.arbiter.may_reclaim_from(&view, p, PoolId(r as u32)) {
                continue;
            }
            let exclude = (r == t).then_some(c);
            if let Some(pg) = self.sparsest_page(r, None, exclude) {
                if restricted && self.store.pages[pg as usize].live > 0 {
                    continue;
                }
                return Some(pg);
            }
        }
        None
    }

    /// A chunk for an item of class `c` in tenant `t`: free chunk, new page, page taken back, or
    /// evictions (MODELS.md section 8 "Trigger", adapted to pages), as the arbiter decides.
    fn alloc_chunk(&mut self, t: usize, c: u16) -> Result<u32, EngineError> {
        let p = PoolId(t as u32);
        let mut fruitless = 0u32;
        loop {
            if let Some(h) = self.take_free_chunk(t, c) {
                return Ok(h);
            }
            self.refresh_views();
            let view = ArbiterView {
                pools: &self.views,
                pages_used: self.pages_used,
                pages_total: self.pages_total,
                page_size: self.cfg.page_size,
            };
            if self.pages_used < self.pages_total && self.arbiter.may_grow(&view, p) {
                self.grant_page(t, c);
                continue;
            }
            if self.class_mode == ClassMode::RandomSlab
                && self.tenants[t].cfg.policy != Policy::NoEviction
            {
                let n = self.tenants[t].pages.len();
                if n > 0 {
                    let pg = self.tenants[t].pages[self.rng.below(n as u64) as usize];
                    self.reassign_page(pg, t, c, EvictionReason::PageReclaim);
                    continue;
                }
            }
            if self.class_mode != ClassMode::Auto {
                if self.tenants[t].cfg.policy == Policy::NoEviction
                    || !self.evict_in_class(t, c, EvictionReason::Memory)
                {
                    return Err(EngineError::OutOfMemory);
                }
                continue;
            }
            if let Some(pg) = self.pick_reclaim_page(t, c, fruitless >= FRUITLESS_EVICTIONS) {
                self.reassign_page(pg, t, c, EvictionReason::PageReclaim);
                fruitless = 0;
                continue;
            }
            if !self.evict_for(t, EvictionReason::Memory) {
                // Nothing more to evict: a page somewhere may still hold free chunks.
                if let Some(pg) = self.pick_reclaim_page(t, c, true) {
                    self.reassign_page(pg, t, c, EvictionReason::PageReclaim);
                    continue;
                }
                return Err(EngineError::OutOfMemory);
            }
            fruitless += 1;
        }
    }

    /// One eviction on behalf of `t`, as the arbiter decides. False when nothing may be evicted.
    fn evict_for(&mut self, t: usize, reason: EvictionReason) -> bool {
        if self.tenants[t].cfg.policy == Policy::NoEviction {
            return false;
        }
        self.refresh_views();
        let view = ArbiterView {
            pools: &self.views,
            pages_used: self.pages_used,
            pages_total: self.pages_total,
            page_size: self.cfg.page_size,
        };
        match self.arbiter.victim(&view, PoolId(t as u32)) {
            Victim::Pool(q) if (q.0 as usize) < self.tenants.len() => {
                self.evict_from(q.0 as usize, reason)
            }
            Victim::Pool(_) | Victim::Nothing => false,
            Victim::Coldest => self.evict_coldest(reason),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Eviction policies.

    /// Draws `k` distinct positions in `0..n` uniformly (all of them when `k >= n`) into
    /// `sample_scratch`, in draw order.
    fn sample_positions(&mut self, n: usize, k: usize) {
        self.sample_scratch.clear();
        if k >= n {
            self.sample_scratch.extend(0..n as u32);
            return;
        }
        while self.sample_scratch.len() < k {
            let i = self.rng.below(n as u64) as u32;
            if !self.sample_scratch.contains(&i) {
                self.sample_scratch.push(i);
            }
        }
    }

    /// The eviction score of a live item under its pool's policy (larger = evict first).
    fn score(&self, t: usize, h: u32, lruclock: u32, now_min: u32) -> u64 {
        let tn = &self.tenants[t];
        match tn.cfg.policy {
            Policy::AllkeysLfu | Policy::VolatileLfu => {
                255 - u64::from(lfu_decr_and_return(
                    self.store.lru(h),
                    now_min,
                    self.cfg.lfu_decay_time,
                ))
            }
            Policy::VolatileTtl => u64::MAX - self.expiry(t, h).unwrap_or(0),
            Policy::AllkeysHyperbolic => {
                let m = tn.hyp.as_ref().map_or(Hyp { born: 0, uses: 1 }, |hy| {
                    hy[self.store.pos(h) as usize]
                });
                let age = self.hyp_now().saturating_sub(m.born) + 1;
                let cost = self.penalty.penalty(t).0.max(1.0);
                // Larger evicts first: the inverse of the priority cost * uses / age. The bits of
                // a positive f64 order like its value, so no resolution is lost: a fixed-point
                // score truncated every item to 0 once costs (µs) exceeded ages (accesses).
                (age as f64 / (f64::from(m.uses.max(1)) * cost)).to_bits()
            }
            _ => self.idle_of(lruclock, self.store.lru(h)),
        }
    }

    /// `evictionPoolPopulate` for one pool: K samples from the pool's keys (volatile: keys with a
    /// TTL) inserted into its eviction pool.
    fn populate(&mut self, t: usize, global: bool) {
        let volatile = self.tenants[t].cfg.policy.is_volatile();
        let n = if volatile {
            self.tenants[t].vol.len()
        } else {
            self.tenants[t].all.len()
        };
        let k = self.tenants[t].cfg.samples as usize;
        self.sample_positions(n, k);
        let lruclock = self.lru_clock();
        let now_min = lfu_minutes(self.clock.now_ms());
        for i in 0..self.sample_scratch.len() {
            let pos = self.sample_scratch[i] as usize;
            let tn = &self.tenants[t];
            let h = if volatile { tn.vol[pos] } else { tn.all[pos] };
            let score = self.score(t, h, lruclock, now_min);
            let key = self.store.key(h);
            if global {
                self.shared_evpool.insert_for(score, key, t as u32);
            } else {
                self.tenants[t].evpool.insert_for(score, key, t as u32);
            }
        }
    }

    /// The policy's next victim in pool `t` (not yet evicted).
    fn candidate(&mut self, t: usize) -> Option<Candidate> {
        let policy = self.tenants[t].cfg.policy;
        let volatile = policy.is_volatile();
        let n = if volatile {
            self.tenants[t].vol.len()
        } else {
            self.tenants[t].all.len()
        };
        if n == 0 || policy == Policy::NoEviction {
            return None;
        }
        let lruclock = self.lru_clock();
        let now_min = lfu_minutes(self.clock.now_ms());
        match policy {
            Policy::NoEviction => None,
            Policy::AllkeysRandom | Policy::VolatileRandom => {
                let i = self.rng.below(n as u64) as usize;
                let tn = &self.tenants[t];
                let handle = if volatile { tn.vol[i] } else { tn.all[i] };
                let score = self.rng.next_u64();
                Some(Candidate {
                    handle,
                    score,
                    from_evpool: false,
                })
            }
            Policy::AllkeysExactLru => {
                let tn = &self.tenants[t];
                let pos = match &tn.lru {
                    Some(l) => l.tail()?,
                    None => return None,
                };
                let handle = tn.all[pos as usize];
                Some(Candidate {
                    handle,
                    score: self.idle_of(lruclock, self.store.lru(handle)),
                    from_evpool: false,
                })
            }
            _ if self.tenants[t].evpool.size() == 0 => {
                // Textbook K-LRU: the oldest of K distinct samples (first one on ties).
                let k = self.tenants[t].cfg.samples as usize;
                self.sample_positions(n, k);
                let mut best: Option<Candidate> = None;
                for i in 0..self.sample_scratch.len() {
                    let pos = self.sample_scratch[i] as usize;
                    let tn = &self.tenants[t];
                    let h = if volatile { tn.vol[pos] } else { tn.all[pos] };
                    let s = self.score(t, h, lruclock, now_min);
                    if best.is_none_or(|b| s > b.score) {
                        best = Some(Candidate {
                            handle: h,
                            score: s,
                            from_evpool: false,
                        });
                    }
                }
                best
            }
            _ => loop {
                self.populate(t, false);
                // Scan from the right: ghosts (gone, or without TTL for volatile-*) are dropped.
                while let Some(e) = self.tenants[t].evpool.best() {
                    self.key_scratch.clear();
                    self.key_scratch.extend_from_slice(&e.key);
                    let score = e.idle;
                    let hash = hash_key(&self.key_scratch);
                    let store = &self.store;
                    let key = &self.key_scratch;
                    let found = self.tenants[t]
                        .index
                        .find(hash, |&h| store.key(h) == key.as_slice())
                        .copied();
                    match found {
                        Some(h) if !volatile || self.store.has_ttl(h) => {
                            return Some(Candidate {
                                handle: h,
                                score,
                                from_evpool: true,
                            });
                        }
                        _ => self.tenants[t].evpool.pop_best(),
                    }
                }
            },
        }
    }

    fn evict_handle(&mut self, t: usize, h: u32, reason: EvictionReason, release_empty: bool) {
        if self.control.is_some() {
            self.observe_eviction(t, h);
        }
        let c = self.unlink_item(t, h, release_empty);
        let tn = &mut self.tenants[t];
        tn.counters.evictions.add(reason);
        tn.class_counters[c as usize].evictions.add(reason);
    }

    fn evict_candidate(&mut self, t: usize, cand: Candidate, reason: EvictionReason) {
        if cand.from_evpool {
            self.tenants[t].evpool.pop_best();
        }
        self.evict_handle(t, cand.handle, reason, true);
    }

    /// Evicts one item of pool `t` by its policy.
    fn evict_from(&mut self, t: usize, reason: EvictionReason) -> bool {
        match self.candidate(t) {
            Some(c) => {
                self.evict_candidate(t, c, reason);
                true
            }
            None => false,
        }
    }

    /// Free competition. When every evicting pool has the same sampled policy with an eviction
    /// pool, this is Redis with one database per pool: each round samples K keys from every
    /// pool into one shared eviction pool and evicts its best live entry; when they all share a
    /// random policy, pools take turns (Redis's `next_db`). Mixed policies: each pool proposes
    /// its own candidate and the largest score goes (ties: the lowest pool id).
    fn evict_coldest(&mut self, reason: EvictionReason) -> bool {
        let mut common: Option<Policy> = None;
        let mut mixed = false;
        for tn in &self.tenants {
            let p = tn.cfg.policy;
            if p == Policy::NoEviction {
                continue;
            }
            let has_pool = tn.cfg.evpool_size > 0 && !p.is_random() && p != Policy::AllkeysExactLru;
            match common {
                None if has_pool || p.is_random() => common = Some(p),
                Some(c) if c == p && (has_pool || p.is_random()) => {}
                _ => mixed = true,
            }
        }
        match common {
            Some(p) if !mixed && p.is_random() => self.evict_round_robin(reason),
            Some(p) if !mixed => {
                // The shared pool is as large as the largest pool size asked for.
                let size = self
                    .tenants
                    .iter()
                    .filter(|tn| tn.cfg.policy != Policy::NoEviction)
                    .map(|tn| tn.cfg.evpool_size as usize)
                    .max()
                    .unwrap_or(0);
                if self.shared_evpool.size() != size {
                    self.shared_evpool = EvPool::new(size);
                }
                self.evict_shared_pool(p.is_volatile(), reason)
            }
            _ => self.evict_best_candidate(reason),
        }
    }

    fn evict_round_robin(&mut self, reason: EvictionReason) -> bool {
        let n = self.tenants.len();
        for _ in 0..n {
            self.next_db = (self.next_db + 1) % n;
            let t = self.next_db;
            if self.tenants[t].cfg.policy == Policy::NoEviction {
                continue;
            }
            if self.evict_from(t, reason) {
                return true;
            }
        }
        false
    }

    fn evict_shared_pool(&mut self, volatile: bool, reason: EvictionReason) -> bool {
        loop {
            let mut total = 0;
            for t in 0..self.tenants.len() {
                let tn = &self.tenants[t];
                if tn.cfg.policy == Policy::NoEviction {
                    continue;
                }
                let n = if volatile { tn.vol.len() } else { tn.all.len() };
                if n > 0 {
                    self.populate(t, true);
                    total += n;
                }
            }
            if total == 0 {
                return false;
            }
            while let Some(e) = self.shared_evpool.best() {
                let t = e.pool as usize;
                self.key_scratch.clear();
                self.key_scratch.extend_from_slice(&e.key);
                self.shared_evpool.pop_best();
                let hash = hash_key(&self.key_scratch);
                let store = &self.store;
                let key = &self.key_scratch;
                let found = self.tenants.get(t).and_then(|tn| {
                    tn.index
                        .find(hash, |&h| store.key(h) == key.as_slice())
                        .copied()
                });
                if let Some(h) = found.filter(|&h| !volatile || self.store.has_ttl(h)) {
                    self.evict_handle(t, h, reason, true);
                    return true;
                }
            }
        }
    }

    fn evict_best_candidate(&mut self, reason: EvictionReason) -> bool {
        let mut best: Option<(usize, Candidate)> = None;
        for t in 0..self.tenants.len() {
            if let Some(c) = self.candidate(t)
                && best.is_none_or(|(_, b)| c.score > b.score)
            {
                best = Some((t, c));
            }
        }
        match best {
            Some((t, c)) => {
                self.evict_candidate(t, c, reason);
                true
            }
            None => false,
        }
    }

    /// Sum of key + value bytes over all tenants.
    fn total_item_bytes(&self) -> u64 {
        self.tenants.iter().map(|tn| tn.item_bytes).sum()
    }

    /// Enforces the item-bytes cap after `t` stored or grew an item: evicts (reason `ItemLimit`)
    /// until the sum of key + value bytes fits. The new item may itself be chosen, as with
    /// `max_items`.
    fn enforce_byte_cap(&mut self, t: usize) -> bool {
        while let Some(cap) = self.max_item_bytes {
            if self.total_item_bytes() <= cap {
                break;
            }
            if !self.evict_for(t, EvictionReason::ItemLimit) {
                return false;
            }
        }
        true
    }

    /// Enforces the per-tenant and global item caps after `t` added an item.
    fn enforce_item_caps(&mut self, t: usize) -> bool {
        while let Some(cap) = self.tenants[t].cfg.max_items {
            if self.tenants[t].all.len() as u64 <= cap {
                break;
            }
            if !self.evict_from(t, EvictionReason::ItemLimit) {
                return false;
            }
        }
        while let Some(cap) = self.cfg.max_items {
            if self.total_items <= cap {
                break;
            }
            if !self.evict_for(t, EvictionReason::ItemLimit) {
                return false;
            }
        }
        true
    }

    /// The value of the recency field for a stored object (Redis: new object, or an overwrite
    /// that keeps the touched LFU counter of the old one).
    fn fresh_lru(&mut self, t: usize, old: Option<u32>) -> u32 {
        if self.tenants[t].cfg.policy.is_lfu() {
            let now_min = lfu_minutes(self.clock.now_ms());
            match old {
                Some(h) => lfu_touch(
                    self.store.lru(h),
                    now_min,
                    self.cfg.lfu_decay_time,
                    self.cfg.lfu_log_factor,
                    &mut self.rng,
                ),
                None => lfu_new(now_min),
            }
        } else {
            self.lru_clock()
        }
    }

    // ----------------------------------------------------------------------------------------
    // Data path.

    /// GET: a hit touches the item (LRU stamp or LFU increment); expired keys are removed lazily
    /// and count as misses.
    pub fn get(&mut self, t: TenantId, key: &[u8]) -> Option<&[u8]> {
        let ti = t.0 as usize;
        if self.control_due {
            self.run_controller();
        }
        self.logical += 1;
        let hash = hash_key(key);
        match self.lookup(ti, key, hash) {
            Some(h) => {
                self.touch(ti, h);
                let c = self.store.pages[self.store.split(h).0].class;
                let tn = &mut self.tenants[ti];
                tn.counters.hits += 1;
                tn.class_counters[c as usize].hits += 1;
                if self.control.is_some() {
                    let (klen, vlen) = self.store.lens(h);
                    let size = (klen + vlen) as u32;
                    self.observe(ti, AccessKind::GetHit, hash, size, Some(c));
                }
                Some(self.store.value(h))
            }
            None => {
                self.tenants[ti].counters.misses += 1;
                if self.control.is_some() {
                    self.observe(ti, AccessKind::GetMiss, hash, 0, None);
                }
                None
            }
        }
    }

    /// The value without touching or counting (lazy expiry still applies).
    pub fn peek(&mut self, t: TenantId, key: &[u8]) -> Option<&[u8]> {
        let h = self.lookup(t.0 as usize, key, hash_key(key))?;
        Some(self.store.value(h))
    }

    /// Whether the key exists (no touch).
    pub fn exists(&mut self, t: TenantId, key: &[u8]) -> bool {
        self.lookup(t.0 as usize, key, hash_key(key)).is_some()
    }

    /// SET with Redis's semantics. `Ok(false)` when an NX/XX condition is not met.
    ///
    /// # Errors
    /// [`EngineError::ItemTooLarge`] when key + value + header exceed a page;
    /// [`EngineError::OutOfMemory`] when memory (or an item cap) is full and nothing may be
    /// evicted.
    pub fn set(
        &mut self,
        t: TenantId,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
    ) -> Result<bool, EngineError> {
        if self.control_due {
            self.run_controller();
        }
        let r = self.set_inner(t, key, value, opts);
        // The controller sees every SET request that was attempted, stored or refused for
        // memory: profilers model the request stream, not what this cache happened to keep.
        if self.control.is_some() && matches!(r, Ok(true) | Err(EngineError::OutOfMemory)) {
            let c = self
                .classes
                .class_for((HDR + key.len()) as u64 + value.len() as u64);
            let size = (key.len() + value.len()) as u32;
            self.observe(t.0 as usize, AccessKind::Set, hash_key(key), size, c);
        }
        r
    }

    fn set_inner(
        &mut self,
        t: TenantId,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
    ) -> Result<bool, EngineError> {
        let ti = t.0 as usize;
        let size = (HDR + key.len()) as u64 + value.len() as u64;
        let Some(c) = self.classes.class_for(size) else {
            return Err(EngineError::ItemTooLarge {
                size,
                max: self.cfg.page_size,
            });
        };
        self.logical += 1;
        let hash = hash_key(key);
        let existing = self.lookup(ti, key, hash);
        match opts.cond {
            SetCond::IfAbsent if existing.is_some() => return Ok(false),
            SetCond::IfPresent if existing.is_none() => return Ok(false),
            _ => {}
        }
        let old_exp = existing.and_then(|h| self.expiry(ti, h));
        let new_exp = match opts.expire {
            Expire::Keep => old_exp,
            Expire::Persist => None,
            Expire::AtMs(at) => Some(at),
        };
        let now = self.clock.now_ms();
        if new_exp.is_some_and(|at| at <= now) {
            // Redis: a SET whose absolute expiry has passed stores nothing and deletes the key.
            if let Some(h) = existing {
                self.unlink_item(ti, h, true);
            }
            self.tenants[ti].counters.sets += 1;
            return Ok(true);
        }
        let lru = self.fresh_lru(ti, existing);
        let same_class = existing.filter(|&h| self.store.pages[self.store.split(h).0].class == c);
        if let Some(h) = same_class {
            let (_, old_vlen) = self.store.lens(h);
            self.store.rewrite_value(h, value);
            self.store.set_lru(h, lru);
            let tn = &mut self.tenants[ti];
            tn.item_bytes = tn.item_bytes - old_vlen as u64 + value.len() as u64;
            let cc = &mut tn.class_counters[c as usize];
            cc.item_bytes = cc.item_bytes - old_vlen as u64 + value.len() as u64;
            if let Some(hy) = &mut tn.hyp {
                let m = &mut hy[self.store.pos(h) as usize];
                m.uses = m.uses.saturating_add(1);
            }
            if let Some(l) = &mut tn.lru {
                l.move_front(self.store.pos(h));
            }
            match new_exp {
                Some(at) => self.add_ttl(ti, h, at),
                None if old_exp.is_some() => self.remove_ttl(ti, h),
                None => {}
            }
        } else {
            let h = self.alloc_chunk(ti, c)?;
            // Allocation may have evicted the old item: look it up again.
            let old = if existing.is_some() {
                self.find(ti, key, hash)
            } else {
                None
            };
            if let Some(o) = old {
                self.unlink_item(ti, o, true);
            }
            self.link_item(ti, h, hash, key, value, lru, new_exp);
            if old.is_none() && !self.enforce_item_caps(ti) {
                if let Some(n) = self.find(ti, key, hash) {
                    self.unlink_item(ti, n, true);
                }
                return Err(EngineError::OutOfMemory);
            }
        }
        if self.max_item_bytes.is_some() && !self.enforce_byte_cap(ti) {
            if let Some(n) = self.find(ti, key, hash) {
                self.unlink_item(ti, n, true);
            }
            return Err(EngineError::OutOfMemory);
        }
        let tn = &mut self.tenants[ti];
        tn.counters.sets += 1;
        tn.class_counters[c as usize].sets += 1;
        Ok(true)
    }

    /// DEL of one key. True when it existed.
    pub fn delete(&mut self, t: TenantId, key: &[u8]) -> bool {
        let ti = t.0 as usize;
        if self.control_due {
            self.run_controller();
        }
        let hash = hash_key(key);
        let found = match self.lookup(ti, key, hash) {
            Some(h) => {
                self.unlink_item(ti, h, true);
                self.tenants[ti].counters.deletes += 1;
                true
            }
            None => false,
        };
        if self.control.is_some() {
            self.observe(ti, AccessKind::Delete, hash, 0, None);
        }
        found
    }

    /// Sets (`Some(at_ms)`) or removes (`None`) a key's TTL. A time already passed deletes the
    /// key (Redis `EXPIREAT` in the past). False when the key does not exist.
    pub fn set_expire(&mut self, t: TenantId, key: &[u8], at_ms: Option<u64>) -> bool {
        let ti = t.0 as usize;
        let Some(h) = self.lookup(ti, key, hash_key(key)) else {
            return false;
        };
        match at_ms {
            Some(at) if at <= self.clock.now_ms() => {
                self.unlink_item(ti, h, true);
                self.tenants[ti].counters.deletes += 1;
            }
            Some(at) => self.add_ttl(ti, h, at),
            None => {
                if self.store.has_ttl(h) {
                    self.remove_ttl(ti, h);
                }
            }
        }
        true
    }

    /// `None`: no key; `Some(None)`: no TTL; `Some(Some(at))`: expires at `at` ms.
    pub fn expire_at(&mut self, t: TenantId, key: &[u8]) -> Option<Option<u64>> {
        let ti = t.0 as usize;
        let h = self.lookup(ti, key, hash_key(key))?;
        Some(self.expiry(ti, h))
    }

    /// DBSIZE: items stored (keys past their TTL count until removed, as in Redis).
    pub fn len(&self, t: TenantId) -> u64 {
        self.tenants[t.0 as usize].all.len() as u64
    }

    /// True when the tenant holds no items.
    pub fn is_empty(&self, t: TenantId) -> bool {
        self.len(t) == 0
    }

    /// FLUSHDB for one tenant: every item and page of its pool is released.
    pub fn flush(&mut self, t: TenantId) {
        let ti = t.0 as usize;
        let pages = self.tenants[ti].pages.clone();
        for pg in pages {
            let page = &mut self.store.pages[pg as usize];
            page.live = 0;
            page.bump = 0;
            page.free_head = NIL;
            self.release_page(pg);
        }
        let n = self.tenants[ti].all.len() as u64;
        self.total_items -= n;
        let tn = &mut self.tenants[ti];
        tn.index = HashTable::new();
        tn.all = Vec::new();
        tn.vol = Vec::new();
        tn.expires = ExpMap::default();
        if tn.lru.is_some() {
            tn.lru = Some(LruList::new());
        }
        if tn.hyp.is_some() {
            tn.hyp = Some(Vec::new());
        }
        tn.evpool.clear();
        tn.item_bytes = 0;
        tn.charged_bytes = 0;
        for cc in &mut tn.class_counters {
            cc.items = 0;
            cc.item_bytes = 0;
        }
        locus_common::strict_assert!(tn.chunk_bytes == 0);
    }

    /// SCAN: returns the next cursor (0 when done) and appends up to about `count` keys to `out`.
    ///
    /// The cursor is a (page, slot) position; items never move while they live, so every key
    /// present for the whole scan is returned at least once (Redis's guarantee).
    pub fn scan(&mut self, t: TenantId, cursor: u64, count: usize, out: &mut Vec<Vec<u8>>) -> u64 {
        let ti = t.0;
        let bits = self.store.slot_bits;
        let mut pg = (cursor >> bits) as usize;
        let mut slot = (cursor & u64::from(self.store.slot_mask)) as u32;
        let want = count.max(1);
        let budget = want.saturating_mul(64);
        let mut visited = 0usize;
        let mut got = 0usize;
        let now = self.clock.now_ms();
        while pg < self.store.pages.len() {
            let (owner, bump) = {
                let p = &self.store.pages[pg];
                (p.owner, p.bump)
            };
            if owner == ti {
                while slot < bump {
                    let h = self.store.handle(pg as u32, slot);
                    slot += 1;
                    visited += 1;
                    if self.store.is_live(h) {
                        let expired = self.expiry(ti as usize, h).is_some_and(|at| at <= now);
                        if !expired {
                            out.push(self.store.key(h).to_vec());
                            got += 1;
                        }
                    }
                    if got >= want || visited >= budget {
                        return if slot < bump {
                            (u64::from(pg as u32) << bits) | u64::from(slot)
                        } else {
                            self.next_page_cursor(pg)
                        };
                    }
                }
            }
            pg += 1;
            slot = 0;
        }
        0
    }

    fn next_page_cursor(&self, pg: usize) -> u64 {
        if pg + 1 >= self.store.pages.len() {
            0
        } else {
            ((pg + 1) as u64) << self.store.slot_bits
        }
    }

    /// RANDOMKEY (expired keys met on the way are removed).
    pub fn random_key(&mut self, t: TenantId) -> Option<Vec<u8>> {
        let ti = t.0 as usize;
        for _ in 0..100 {
            let n = self.tenants[ti].all.len();
            if n == 0 {
                return None;
            }
            let h = self.tenants[ti].all[self.rng.below(n as u64) as usize];
            if self
                .expiry(ti, h)
                .is_some_and(|at| at <= self.clock.now_ms())
            {
                self.expire_item(ti, h);
                continue;
            }
            return Some(self.store.key(h).to_vec());
        }
        None
    }

    /// RENAME / RENAMENX: the value, TTL and recency move to `to`. `Ok(false)` when `nx` and `to`
    /// exists.
    ///
    /// # Errors
    /// [`EngineError::NoSuchKey`] when `from` does not exist; [`EngineError::ItemTooLarge`] or
    /// [`EngineError::OutOfMemory`] when the renamed item cannot be stored (nothing changes).
    pub fn rename(
        &mut self,
        t: TenantId,
        from: &[u8],
        to: &[u8],
        nx: bool,
    ) -> Result<bool, EngineError> {
        let ti = t.0 as usize;
        let fh = hash_key(from);
        let Some(h) = self.lookup(ti, from, fh) else {
            return Err(EngineError::NoSuchKey);
        };
        if from == to {
            return Ok(!nx);
        }
        let th = hash_key(to);
        if nx && self.lookup(ti, to, th).is_some() {
            return Ok(false);
        }
        let value = self.store.value(h).to_vec();
        let exp = self.expiry(ti, h);
        let lru = self.store.lru(h);
        let size = (HDR + to.len() + value.len()) as u64;
        let Some(c) = self.classes.class_for(size) else {
            return Err(EngineError::ItemTooLarge {
                size,
                max: self.cfg.page_size,
            });
        };
        let nh = self.alloc_chunk(ti, c)?;
        if let Some(o) = self.find(ti, from, fh) {
            self.unlink_item(ti, o, true);
        }
        if let Some(o) = self.find(ti, to, th) {
            self.unlink_item(ti, o, true);
            self.tenants[ti].counters.deletes += 1;
        }
        self.link_item(ti, nh, th, to, &value, lru, exp);
        Ok(true)
    }

    /// OBJECT IDLETIME / FREQ and friends (no touch).
    pub fn object_info(&mut self, t: TenantId, key: &[u8]) -> Option<ObjectInfo> {
        let ti = t.0 as usize;
        let h = self.lookup(ti, key, hash_key(key))?;
        let lfu = self.tenants[ti].cfg.policy.is_lfu();
        let field = self.store.lru(h);
        let (idle_ms, lfu_freq) = if lfu {
            (
                0,
                lfu_decr_and_return(
                    field,
                    lfu_minutes(self.clock.now_ms()),
                    self.cfg.lfu_decay_time,
                ),
            )
        } else {
            (self.idle_of(self.lru_clock(), field), 0)
        };
        let (pi, _) = self.store.split(h);
        Some(ObjectInfo {
            idle_ms,
            lfu_freq,
            value_len: self.store.lens(h).1,
            charged_bytes: u64::from(self.store.pages[pi].chunk),
            expire_at_ms: self.expiry(ti, h),
        })
    }

    // ----------------------------------------------------------------------------------------
    // Background work.

    /// The active expiry sweep: samples keys with a TTL, pool by pool (round robin), removing
    /// those whose time has passed; a pool is sampled again while more than 10% of its sample
    /// was stale (Redis's `activeExpireCycle` acceptance rule). Examines at most `max_keys` keys;
    /// returns how many expired.
    pub fn run_active_expire(&mut self, max_keys: usize) -> usize {
        let n = self.tenants.len();
        let per_loop = self.cfg.active_expire_keys_per_cycle as usize;
        let mut examined = 0usize;
        let mut expired = 0usize;
        for _ in 0..n {
            if examined >= max_keys {
                break;
            }
            let t = self.expire_cursor % n;
            self.expire_cursor = self.expire_cursor.wrapping_add(1);
            loop {
                let batch = per_loop.min(max_keys - examined);
                if batch == 0 || self.tenants[t].vol.is_empty() {
                    break;
                }
                let mut stale = 0;
                for _ in 0..batch {
                    let len = self.tenants[t].vol.len();
                    if len == 0 {
                        break;
                    }
                    let h = self.tenants[t].vol[self.rng.below(len as u64) as usize];
                    examined += 1;
                    if self
                        .expiry(t, h)
                        .is_some_and(|at| at <= self.clock.now_ms())
                    {
                        self.expire_item(t, h);
                        stale += 1;
                    }
                }
                expired += stale;
                if stale * 100 <= batch * ACCEPTABLE_STALE_PCT || examined >= max_keys {
                    break;
                }
            }
        }
        expired
    }

    /// Periodic housekeeping (call ~10 times a second, or whenever a simulation likes): returns
    /// spare capacity of the sampling arrays. Times are read from the clock on every access, so
    /// nothing else needs refreshing.
    pub fn tick(&mut self) {
        if let Some(cs) = &self.control
            && (self.control_due
                || matches!(cs.cfg.interval, Interval::Millis(_))
                    && self.clock.now_us() >= cs.next_at)
        {
            self.run_controller();
        }
        for tn in &mut self.tenants {
            if tn.all.capacity() > 64 && tn.all.capacity() > 4 * tn.all.len() {
                tn.all.shrink_to(2 * tn.all.len());
            }
            if tn.vol.capacity() > 64 && tn.vol.capacity() > 4 * tn.vol.len() {
                tn.vol.shrink_to(2 * tn.vol.len());
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Runtime settings.

    /// CONFIG SET maxmemory. Lowering it releases pages at once (their items are evicted with
    /// reason [`EvictionReason::Shrink`], emptiest pages first) and frees spare page buffers.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] when below one page or above the addressable pages.
    pub fn set_maxmemory(&mut self, bytes: u64) -> Result<(), EngineError> {
        let ps = self.cfg.page_size;
        if bytes < ps {
            return Err(invalid(vec![format!(
                "maxmemory: {bytes} is smaller than one page ({ps} bytes)"
            )]));
        }
        if bytes / ps > self.max_page_ids {
            return Err(invalid(vec![format!(
                "maxmemory: {bytes} needs {} pages; at most {} are addressable",
                bytes / ps,
                self.max_page_ids
            )]));
        }
        self.cfg.maxmemory = bytes;
        self.pages_total = bytes / ps;
        while self.pages_used > self.pages_total {
            let Some(pg) = self.global_sparsest_page() else {
                break;
            };
            self.shrink_page(pg);
        }
        self.trim_buffers();
        Ok(())
    }

    fn global_sparsest_page(&self) -> Option<u32> {
        let mut best: Option<(u32, u64, u64)> = None;
        for (i, p) in self.store.pages.iter().enumerate() {
            if p.owner == NIL {
                continue;
            }
            let (l, s) = (u64::from(p.live), u64::from(p.slots));
            if best.is_none_or(|(_, bl, bs)| l * bs < bl * s) {
                best = Some((i as u32, l, s));
            }
        }
        best.map(|b| b.0)
    }

    fn trim_buffers(&mut self) {
        while self.allocated_bufs > self.pages_total {
            let Some(pg) = self.free_with_buf.pop() else {
                break;
            };
            self.store.pages[pg as usize].buf = Vec::new();
            self.allocated_bufs -= 1;
            self.free_no_buf.push(pg);
        }
    }

    /// CONFIG SET maxmemory-policy for one tenant. The eviction pool is emptied; switching to
    /// `allkeys-exact-lru` builds the recency list from the items' LRU fields.
    pub fn set_policy(&mut self, t: TenantId, p: Policy) {
        let ti = t.0 as usize;
        self.tenants[ti].cfg.policy = p;
        self.tenants[ti].evpool.clear();
        self.shared_evpool.clear();
        if p == Policy::AllkeysExactLru {
            if self.tenants[ti].lru.is_none() {
                let lruclock = self.lru_clock();
                let tn = &self.tenants[ti];
                let mut order: Vec<(u64, u32)> = tn
                    .all
                    .iter()
                    .enumerate()
                    .map(|(pos, &h)| (self.idle_of(lruclock, self.store.lru(h)), pos as u32))
                    .collect();
                // Oldest first, so the most recent ends at the head.
                order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                let mut l = LruList::new();
                // Positions must be pushed in index order; link order is fixed afterwards.
                for pos in 0..tn.all.len() as u32 {
                    l.push(pos);
                }
                for &(_, pos) in &order {
                    l.move_front(pos);
                }
                self.tenants[ti].lru = Some(l);
            }
        } else {
            self.tenants[ti].lru = None;
        }
        if p == Policy::AllkeysHyperbolic {
            if self.tenants[ti].hyp.is_none() {
                let born = self.hyp_now();
                let n = self.tenants[ti].all.len();
                self.tenants[ti].hyp = Some(vec![Hyp { born, uses: 1 }; n]);
            }
        } else {
            self.tenants[ti].hyp = None;
        }
    }

    /// CONFIG SET maxmemory-samples for one tenant.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] outside 1..=64.
    pub fn set_samples(&mut self, t: TenantId, k: u32) -> Result<(), EngineError> {
        let mut c = self.tenants[t.0 as usize].cfg.clone();
        c.samples = k;
        c.validate().map_err(invalid)?;
        self.tenants[t.0 as usize].cfg.samples = k;
        Ok(())
    }

    /// Changes a tenant's eviction pool size (16 = Redis, 0 = textbook K-LRU).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] when out of range.
    pub fn set_evpool_size(&mut self, t: TenantId, size: u32) -> Result<(), EngineError> {
        let mut c = self.tenants[t.0 as usize].cfg.clone();
        c.evpool_size = size;
        c.validate().map_err(invalid)?;
        let tn = &mut self.tenants[t.0 as usize];
        tn.cfg.evpool_size = size;
        tn.evpool = EvPool::new(size as usize);
        Ok(())
    }

    /// Changes a tenant's item cap; lowering it evicts at once (reason `ItemLimit`).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] for `Some(0)`.
    pub fn set_tenant_max_items(
        &mut self,
        t: TenantId,
        cap: Option<u64>,
    ) -> Result<(), EngineError> {
        let ti = t.0 as usize;
        let mut c = self.tenants[ti].cfg.clone();
        c.max_items = cap;
        c.validate().map_err(invalid)?;
        self.tenants[ti].cfg.max_items = cap;
        let _ = self.enforce_item_caps(ti);
        Ok(())
    }

    /// Caps the sum of key + value bytes over all tenants (`None` = no cap), the byte capacity
    /// of the papers' simulators (`Σ sizes ≤ B`) independent of pages, chunks and metadata.
    /// Used by miniature simulation in byte mode; `maxmemory` still bounds pages. Like
    /// `max_items` it is enforced right after a SET (the new key can be chosen, Redis-style);
    /// lowering it evicts at once (reason `ItemLimit`).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] for `Some(0)`.
    pub fn set_max_item_bytes(&mut self, cap: Option<u64>) -> Result<(), EngineError> {
        if cap == Some(0) {
            return Err(invalid(vec![
                "max_item_bytes: must be at least 1 when set".into(),
            ]));
        }
        self.max_item_bytes = cap;
        if let Some(cap) = cap {
            let mut t = 0;
            while self.total_item_bytes() > cap && !self.tenants.is_empty() {
                let before = self.total_item_bytes();
                for _ in 0..self.tenants.len() {
                    if self.total_item_bytes() <= cap {
                        break;
                    }
                    self.evict_for(t % self.tenants.len(), EvictionReason::ItemLimit);
                    t += 1;
                }
                if self.total_item_bytes() == before {
                    break;
                }
            }
        }
        Ok(())
    }

    /// The cap set by [`Engine::set_max_item_bytes`].
    pub fn max_item_bytes(&self) -> Option<u64> {
        self.max_item_bytes
    }

    /// Changes the global item cap; lowering it evicts at once (reason `ItemLimit`).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] for `Some(0)`.
    pub fn set_max_items(&mut self, cap: Option<u64>) -> Result<(), EngineError> {
        if cap == Some(0) {
            return Err(invalid(vec![
                "max_items: must be at least 1 when set".into(),
            ]));
        }
        self.cfg.max_items = cap;
        if let Some(cap) = cap {
            let mut t = 0;
            while self.total_items > cap && !self.tenants.is_empty() {
                // Evict on behalf of tenants in turn until under the cap or nothing can go.
                let before = self.total_items;
                for _ in 0..self.tenants.len() {
                    if self.total_items <= cap {
                        break;
                    }
                    self.evict_for(t % self.tenants.len(), EvictionReason::ItemLimit);
                    t += 1;
                }
                if self.total_items == before {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Sets a tenant's static budget. Under static partitioning, a pool above its new cap gives
    /// back its emptiest pages at once (reason `Shrink`).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] when `max_bytes < min_bytes`.
    pub fn set_budget(
        &mut self,
        t: TenantId,
        min_bytes: u64,
        max_bytes: Option<u64>,
    ) -> Result<(), EngineError> {
        let ti = t.0 as usize;
        let mut c = self.tenants[ti].cfg.clone();
        c.min_bytes = min_bytes;
        c.max_bytes = max_bytes;
        c.validate().map_err(invalid)?;
        self.tenants[ti].cfg = c;
        if self.cfg.partition == PartitionMode::Static
            && let Some(max) = max_bytes
        {
            let max_pages = max / self.cfg.page_size;
            while self.tenants[ti].pages.len() as u64 > max_pages {
                let Some(pg) = self.sparsest_page(ti, None, None) else {
                    break;
                };
                self.empty_page(pg, EvictionReason::Shrink);
                self.release_page(pg);
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------------------------------
    // Statistics.

    /// Engine-wide snapshot.
    pub fn stats(&self) -> EngineStats {
        let mut s = EngineStats {
            maxmemory: self.cfg.maxmemory,
            used_bytes: self.pages_used * self.cfg.page_size,
            page_size: self.cfg.page_size,
            pages_used: self.pages_used,
            pages_total: self.pages_total,
            pages_allocated: self.allocated_bufs,
            items: self.total_items,
            metadata_bytes: (self.store.pages.capacity() * std::mem::size_of::<Page>()) as u64,
            ..EngineStats::default()
        };
        for tn in &self.tenants {
            s.item_bytes += tn.item_bytes;
            s.charged_bytes += tn.charged_bytes;
            s.metadata_bytes += tn.metadata_bytes();
            s.evictions += tn.counters.evictions.total();
            s.expired += tn.counters.expired;
        }
        s
    }

    /// One tenant's snapshot.
    pub fn tenant_stats(&self, t: TenantId) -> TenantStats {
        let tn = &self.tenants[t.0 as usize];
        TenantStats {
            name: tn.cfg.name.clone(),
            hits: tn.counters.hits,
            misses: tn.counters.misses,
            sets: tn.counters.sets,
            deletes: tn.counters.deletes,
            evictions: tn.counters.evictions.total(),
            evictions_by_reason: tn.counters.evictions,
            expired: tn.counters.expired,
            items: tn.all.len() as u64,
            volatile_items: tn.vol.len() as u64,
            item_bytes: tn.item_bytes,
            charged_bytes: tn.charged_bytes,
            pages: tn.pages.len() as u64,
            metadata_bytes: tn.metadata_bytes(),
            min_bytes: tn.cfg.min_bytes,
            max_bytes: tn.cfg.max_bytes,
            max_items: tn.cfg.max_items,
            policy: tn.cfg.policy,
            samples: tn.cfg.samples,
            evpool_size: tn.cfg.evpool_size,
        }
    }

    /// Per size class of the tenant's pool (classes with no pages and no activity are skipped).
    pub fn class_stats(&self, t: TenantId) -> Vec<ClassStats> {
        let tn = &self.tenants[t.0 as usize];
        (0..self.classes.len())
            .filter_map(|i| {
                let cc = &tn.class_counters[i];
                let cp = &tn.classes[i];
                let active = cp.pages > 0
                    || cc.hits > 0
                    || cc.sets > 0
                    || cc.evictions.total() > 0
                    || cc.expired > 0;
                active.then(|| ClassStats {
                    class: ClassId(i as u16),
                    chunk_size: self.classes.chunk(i as u16),
                    pages: cp.pages,
                    chunks: cp.pages * u64::from(self.classes.slots(i as u16)),
                    items: cc.items,
                    item_bytes: cc.item_bytes,
                    hits: cc.hits,
                    sets: cc.sets,
                    evictions: cc.evictions,
                    expired: cc.expired,
                })
            })
            .collect()
    }

    /// CONFIG RESETSTAT: zeroes hit/miss/set/delete/eviction/expiry counters (not sizes).
    pub fn reset_stats(&mut self) {
        for tn in &mut self.tenants {
            tn.counters = TenantCounters::default();
            for cc in &mut tn.class_counters {
                let (items, item_bytes) = (cc.items, cc.item_bytes);
                *cc = ClassCounters {
                    items,
                    item_bytes,
                    ..ClassCounters::default()
                };
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Page API (controllers).

    /// Every size class and its chunk size.
    pub fn size_classes(&self) -> Vec<(ClassId, u32)> {
        self.classes.all()
    }

    /// The class an item with these lengths would use (None: larger than a page).
    pub fn class_for(&self, key_len: usize, value_len: usize) -> Option<ClassId> {
        let size = (HDR as u64)
            .saturating_add(key_len as u64)
            .saturating_add(value_len as u64);
        self.classes.class_for(size).map(ClassId)
    }

    /// The pool of a tenant (one per tenant for now).
    pub fn pool_of(&self, t: TenantId) -> PoolId {
        PoolId(t.0)
    }

    /// Pages `maxmemory` allows.
    pub fn pages_total(&self) -> u64 {
        self.pages_total
    }

    /// Pages owned by (pool, class); 0 for unknown ids.
    pub fn pages_of(&self, pool: PoolId, class: ClassId) -> u64 {
        self.tenants
            .get(pool.0 as usize)
            .and_then(|t| t.classes.get(class.0 as usize))
            .map_or(0, |c| c.pages)
    }

    /// Moves the emptiest page of `from` to `to`, evicting what it held (reason `PageMove`).
    /// Returns the number of items evicted. Moving to the same (pool, class) does nothing.
    ///
    /// # Errors
    /// [`EngineError::UnknownPool`], [`EngineError::UnknownClass`], or
    /// [`EngineError::NoPageToMove`] when `from` owns no page.
    pub fn move_page(
        &mut self,
        from: (PoolId, ClassId),
        to: (PoolId, ClassId),
    ) -> Result<u64, EngineError> {
        for (p, c) in [from, to] {
            if p.0 as usize >= self.tenants.len() {
                return Err(EngineError::UnknownPool { pool: p.0 });
            }
            if c.0 as usize >= self.classes.len() {
                return Err(EngineError::UnknownClass { class: c.0 });
            }
        }
        if self.pages_of(from.0, from.1) == 0 {
            return Err(EngineError::NoPageToMove {
                pool: from.0.0,
                class: from.1.0,
            });
        }
        if from == to {
            return Ok(0);
        }
        let pg = self
            .sparsest_page(from.0.0 as usize, Some(from.1.0), None)
            .ok_or(EngineError::NoPageToMove {
                pool: from.0.0,
                class: from.1.0,
            })?;
        Ok(self.reassign_page(pg, to.0.0 as usize, to.1.0, EvictionReason::PageMove))
    }

    /// The tenant's eviction pool, idle ascending: (score at sampling time, key). For tests and
    /// admin commands.
    pub fn eviction_pool(&self, t: TenantId) -> Vec<(u64, Vec<u8>)> {
        self.tenants[t.0 as usize]
            .evpool
            .entries()
            .iter()
            .map(|e| (e.idle, e.key.clone()))
            .collect()
    }

    /// The last [`PAGE_EVENT_LOG`] page events, oldest first.
    pub fn page_events(&self) -> Vec<PageEvent> {
        self.page_events.iter().copied().collect()
    }

    /// Page events since the engine started (including those dropped from the log).
    pub fn page_event_count(&self) -> u64 {
        self.page_event_count
    }

    /// Free competition's shared eviction pool, idle ascending: (score, key, tenant).
    pub fn shared_eviction_pool(&self) -> Vec<(u64, Vec<u8>, TenantId)> {
        self.shared_evpool
            .entries()
            .iter()
            .map(|e| (e.idle, e.key.clone(), TenantId(e.pool)))
            .collect()
    }

    /// Checks every internal invariant (tests and fuzzing; O(items)).
    ///
    /// # Panics
    /// Panics with a description when an invariant is broken (a bug in the engine).
    pub fn check_invariants(&self) {
        assert!(self.pages_used <= self.pages_total, "pages over maxmemory");
        assert!(self.allocated_bufs <= self.pages_total.max(self.pages_used));
        let mut used = 0;
        let mut items = 0;
        for (ti, tn) in self.tenants.iter().enumerate() {
            assert_eq!(
                tn.index.len(),
                tn.all.len(),
                "index and dense array disagree"
            );
            assert_eq!(tn.vol.len(), tn.expires.len());
            if let Some(hy) = &tn.hyp {
                assert_eq!(hy.len(), tn.all.len(), "hyperbolic state per item");
            }
            let mut charged = 0u64;
            for (pos, &h) in tn.all.iter().enumerate() {
                assert!(self.store.is_live(h));
                assert_eq!(self.store.pos(h) as usize, pos);
                let key = self.store.key(h);
                assert_eq!(self.find(ti, key, hash_key(key)), Some(h));
                let (pi, _) = self.store.split(h);
                assert_eq!(
                    self.store.pages[pi].owner as usize, ti,
                    "item on a foreign page"
                );
                charged += u64::from(self.store.pages[pi].chunk);
                assert_eq!(self.store.has_ttl(h), tn.expires.contains_key(&h));
            }
            for (vpos, &h) in tn.vol.iter().enumerate() {
                assert_eq!(tn.expires[&h].vpos as usize, vpos);
            }
            assert_eq!(charged, tn.charged_bytes);
            let mut live = 0u64;
            let mut chunk_bytes = 0u64;
            for (c, cp) in tn.classes.iter().enumerate() {
                assert_eq!(cp.list.len() as u64, cp.pages, "class page list and count");
                for (i, &pg) in cp.list.iter().enumerate() {
                    let p = &self.store.pages[pg as usize];
                    assert_eq!((p.owner as usize, p.class as usize), (ti, c));
                    assert_eq!(p.class_pos as usize, i);
                }
            }
            for (i, &pg) in tn.pages.iter().enumerate() {
                let p = &self.store.pages[pg as usize];
                assert_eq!(p.owner as usize, ti);
                assert_eq!(p.pool_pos as usize, i);
                live += u64::from(p.live);
                chunk_bytes += u64::from(p.slots) * u64::from(p.chunk);
                assert_eq!(
                    p.partial_pos != NIL,
                    p.has_free(),
                    "partial list out of sync"
                );
            }
            assert_eq!(live, tn.all.len() as u64);
            assert_eq!(chunk_bytes, tn.chunk_bytes);
            used += tn.pages.len() as u64;
            items += tn.all.len() as u64;
            if let Some(cap) = tn.cfg.max_items {
                assert!(tn.all.len() as u64 <= cap, "tenant item cap exceeded");
            }
        }
        assert_eq!(used, self.pages_used);
        assert_eq!(items, self.total_items);
        if let Some(cap) = self.cfg.max_items {
            assert!(items <= cap, "global item cap exceeded");
        }
        if let Some(cap) = self.max_item_bytes {
            assert!(self.total_item_bytes() <= cap, "item-bytes cap exceeded");
        }
    }
}

// --------------------------------------------------------------------------------------------
// Controllers (control/mod.rs): installation, data-path observation, decisions carried out.

impl Engine {
    /// Installs a memory controller: from now on its decisions drive the pools (the configured
    /// arbiter is replaced by the target-driven one, which is free competition until the first
    /// targets arrive). The first decision is due after one interval.
    pub fn set_controller(&mut self, ctl: Box<dyn Controller>, cfg: ControlConfig) {
        let next_at = match cfg.interval {
            Interval::Requests(n) => n.max(1),
            Interval::Millis(ms) => self.clock.now_us() + ms.max(1) * 1000,
        };
        self.arbiter = Box::new(TargetArbiter::default());
        if let Some(mode) = ctl.class_mode() {
            self.class_mode = mode;
        }
        self.control = Some(Box::new(ControlState {
            ctl: Host::new(ctl, cfg.offload),
            cfg,
            requests: 0,
            next_at,
            decisions: 0,
            targets: vec![None; self.tenants.len()],
            records: VecDeque::new(),
        }));
        self.control_due = false;
    }

    /// Removes the controller; the arbiter of the configured partition mode takes over again.
    pub fn clear_controller(&mut self) {
        self.control = None;
        self.control_due = false;
        self.arbiter = match self.cfg.partition {
            PartitionMode::Shared => Box::new(SharedArbiter),
            PartitionMode::Static => Box::new(StaticArbiter),
        };
    }

    /// Waits until an offloaded controller has seen every event so far (at once when it runs
    /// inline, or without a controller).
    pub fn sync_controller(&mut self) {
        if let Some(cs) = self.control.as_mut() {
            cs.ctl.sync();
        }
    }

    /// Whether the installed controller profiles on a thread of its own.
    pub fn controller_offloaded(&self) -> bool {
        self.control.as_ref().is_some_and(|c| c.ctl.offloaded())
    }

    /// The installed controller's name.
    pub fn controller_name(&self) -> Option<&'static str> {
        self.control.as_ref().map(|c| c.ctl.name())
    }

    /// The installed controller's run settings.
    pub fn control_config(&self) -> Option<ControlConfig> {
        self.control.as_ref().map(|c| c.cfg)
    }

    /// Data-path accesses the controller has seen.
    pub fn control_requests(&self) -> u64 {
        self.control.as_ref().map_or(0, |c| c.requests)
    }

    /// Decisions made so far.
    pub fn control_decisions(&self) -> u64 {
        self.control.as_ref().map_or(0, |c| c.decisions)
    }

    /// The last decisions (at most [`CONTROL_RECORD_LOG`]), oldest first.
    pub fn control_records(&self) -> Vec<IntervalRecord> {
        self.control
            .as_ref()
            .map(|c| c.records.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The newest decision, without copying the log.
    pub fn last_control_record(&self) -> Option<&IntervalRecord> {
        self.control.as_ref().and_then(|c| c.records.back())
    }

    /// Page targets per pool (`None`: no target).
    pub fn targets(&self) -> Vec<Option<u64>> {
        match &self.control {
            Some(c) => {
                let mut t = c.targets.clone();
                t.resize(self.tenants.len(), None);
                t
            }
            None => vec![None; self.tenants.len()],
        }
    }

    /// The operator's miss penalty for `t` in µs (`None`: measure it).
    pub fn set_penalty_hint(&mut self, t: TenantId, us: Option<f64>) {
        self.penalty.set_hint(t.0 as usize, us);
    }

    /// (mean miss penalty µs, measured samples) for `t`: the hint, the measured mean, or (0, 0).
    pub fn penalty(&self, t: TenantId) -> (f64, u64) {
        self.penalty.penalty(t.0 as usize)
    }

    /// Feeds one data-path access to the controller; marks a decision due.
    #[inline]
    fn observe(&mut self, t: usize, kind: AccessKind, hash: u64, size: u32, class: Option<u16>) {
        let Some(cs) = self.control.as_mut() else {
            return;
        };
        let now_us = self.clock.now_us();
        match kind {
            AccessKind::GetMiss => self.penalty.miss(t, hash, now_us),
            AccessKind::Set => self.penalty.set(t, hash, now_us),
            _ => {}
        }
        cs.ctl.on_access(Access {
            tenant: TenantId(t as u32),
            pool: PoolId(t as u32),
            kind,
            key_hash: hash,
            size,
            class: class.map(ClassId),
            now_us,
        });
        cs.requests += 1;
        let due = match cs.cfg.interval {
            Interval::Requests(_) => cs.requests >= cs.next_at,
            Interval::Millis(_) => now_us >= cs.next_at,
        };
        if due {
            self.control_due = true;
        }
    }

    /// Tells the controller about an eviction of `h` (still linked).
    fn observe_eviction(&mut self, t: usize, h: u32) {
        let hash = hash_key(self.store.key(h));
        let (klen, vlen) = self.store.lens(h);
        let class = self.store.pages[self.store.split(h).0].class;
        let idle_ms = if self.tenants[t].cfg.policy.is_lfu() {
            0
        } else {
            let idle = self.idle_of(self.lru_clock(), self.store.lru(h));
            match self.cfg.lru_clock {
                LruClockMode::Redis => idle,
                LruClockMode::Logical => 0,
            }
        };
        let now_us = self.clock.now_us();
        if let Some(cs) = self.control.as_mut() {
            cs.ctl.on_evict(Evicted {
                tenant: TenantId(t as u32),
                pool: PoolId(t as u32),
                class: ClassId(class),
                key_hash: hash,
                size: (klen + vlen) as u32,
                idle_ms,
                now_us,
            });
        }
    }

    /// Every pool as a controller sees it.
    fn pool_states(&self, targets: &[Option<u64>]) -> Vec<PoolState> {
        let ps = self.cfg.page_size;
        self.tenants
            .iter()
            .enumerate()
            .map(|(i, tn)| {
                let (penalty_us, penalty_samples) = self.penalty.penalty(i);
                let classes = (0..self.classes.len())
                    .filter_map(|c| {
                        let cp = &tn.classes[c];
                        let cc = &tn.class_counters[c];
                        (cp.pages > 0 || cc.items > 0).then(|| ClassState {
                            class: ClassId(c as u16),
                            chunk_bytes: self.classes.chunk(c as u16),
                            pages: cp.pages,
                            items: cc.items,
                            hits: cc.hits,
                            sets: cc.sets,
                            evictions: cc.evictions.total(),
                        })
                    })
                    .collect();
                PoolState {
                    pool: PoolId(i as u32),
                    tenant: TenantId(i as u32),
                    name: tn.cfg.name.clone(),
                    pages: tn.pages.len() as u64,
                    items: tn.all.len() as u64,
                    item_bytes: tn.item_bytes,
                    charged_bytes: tn.charged_bytes,
                    hits: tn.counters.hits,
                    misses: tn.counters.misses,
                    sets: tn.counters.sets,
                    deletes: tn.counters.deletes,
                    evictions: tn.counters.evictions.total(),
                    samples: tn.cfg.samples,
                    evpool_size: tn.cfg.evpool_size,
                    min_pages: tn.cfg.min_bytes / ps,
                    max_pages: tn.cfg.max_bytes.map(|m| m / ps),
                    target_pages: targets.get(i).copied().flatten(),
                    penalty_us,
                    penalty_samples,
                    classes,
                }
            })
            .collect()
    }

    /// Asks the controller for a decision now and carries it out: targets (clamped so their sum
    /// fits `maxmemory`), explicit page moves and releases of pages above target (together at
    /// most `max_moves`), K per pool. Records the decision. Does nothing without a controller.
    pub fn run_controller(&mut self) {
        self.control_due = false;
        let Some(mut cs) = self.control.take() else {
            return;
        };
        let n = self.tenants.len();
        cs.targets.resize(n, None);
        let pools = self.pool_states(&cs.targets);
        let view = ControlView {
            now_us: self.clock.now_us(),
            requests: cs.requests,
            interval: cs.decisions,
            page_size: self.cfg.page_size,
            pages_total: self.pages_total,
            pages_used: self.pages_used,
            pools: &pools,
        };
        let decision = cs.ctl.decide(&view);
        let mut notes = decision.notes;

        // Targets: one per pool; a sum above maxmemory is scaled down (and noted).
        if let Some(mut t) = decision.pool_pages {
            t.resize(n, 0);
            let sum: u64 = t.iter().sum();
            if sum > self.pages_total && sum > 0 {
                notes.push(("targets_clamped_from_pages".into(), sum as f64));
                let total = self.pages_total;
                for x in &mut t {
                    *x = ((*x as u128 * total as u128) / sum as u128) as u64;
                }
            }
            cs.targets = t.into_iter().map(Some).collect();
        }
        // Tenant budgets hold under every controller: targets are clamped into [min, max].
        let ps = self.cfg.page_size;
        for (ti, target) in cs.targets.iter_mut().enumerate() {
            if let Some(x) = target {
                let c = &self.tenants[ti].cfg;
                let lo = c.min_bytes / ps;
                let hi = c.max_bytes.map_or(u64::MAX, |m| m / ps);
                *x = (*x).max(lo).min(hi);
            }
        }
        self.arbiter.set_targets(&cs.targets);

        // K per pool.
        for (pool, k) in decision.samples {
            let ti = pool.0 as usize;
            if ti < n {
                self.tenants[ti].cfg.samples = k.clamp(1, 64);
            }
        }

        // Explicit moves, then releases of pages above target, within the move budget. The
        // controller is back in place meanwhile, so it hears of the evictions they cause.
        let mut budget = u64::from(cs.cfg.max_moves);
        let targets = cs.targets.clone();
        self.control = Some(cs);
        let (mut moves_done, mut evicted) = (0u64, 0u64);
        for mv in decision.moves {
            if budget == 0 {
                notes.push(("moves_dropped_over_budget".into(), 1.0));
                break;
            }
            if let Ok(e) = self.move_page(mv.from, mv.to) {
                budget -= 1;
                moves_done += 1;
                evicted += e;
            }
        }
        for (ti, target) in targets.iter().enumerate().take(n) {
            let Some(target) = *target else {
                continue;
            };
            while budget > 0 && self.tenants[ti].pages.len() as u64 > target {
                let Some(pg) = self.sparsest_page(ti, None, None) else {
                    break;
                };
                let from = self.page_owner(pg);
                let e = self.empty_page(pg, EvictionReason::Shrink);
                self.release_page(pg);
                self.record_page_event(pg, from, None, EvictionReason::Shrink, e);
                budget -= 1;
                moves_done += 1;
                evicted += e;
            }
        }
        let mut cs = self
            .control
            .take()
            .expect("the controller was put back above");

        let record = IntervalRecord {
            interval: cs.decisions,
            at_us: view.now_us,
            at_request: cs.requests,
            pages: self
                .tenants
                .iter()
                .map(|tn| tn.pages.len() as u64)
                .collect(),
            targets: cs.targets.clone(),
            samples: self.tenants.iter().map(|tn| tn.cfg.samples).collect(),
            moves_done,
            items_evicted_by_moves: evicted,
            hits: pools.iter().map(|p| p.hits).collect(),
            misses: pools.iter().map(|p| p.misses).collect(),
            penalty_us: pools.iter().map(|p| p.penalty_us).collect(),
            curves: decision.curves,
            notes,
        };
        if cs.records.len() == CONTROL_RECORD_LOG {
            cs.records.pop_front();
        }
        cs.records.push_back(record);
        cs.decisions += 1;
        cs.next_at = match cs.cfg.interval {
            Interval::Requests(k) => cs.requests + k.max(1),
            Interval::Millis(ms) => self.clock.now_us() + ms.max(1) * 1000,
        };
        self.control = Some(cs);
    }
}

// --------------------------------------------------------------------------------------------
// Class-local eviction (ClassMode::Manual, memcached-like slabs).

impl Engine {
    /// Switches between Redis-like pool-wide eviction with automatic class rebalancing and
    /// memcached-like class-local eviction ([`ClassMode`]). Items stay where they are.
    pub fn set_class_mode(&mut self, mode: ClassMode) {
        self.class_mode = mode;
    }

    /// The class mode in force.
    pub fn class_mode(&self) -> ClassMode {
        self.class_mode
    }

    /// Evicts one item of class `c` in pool `t`: K live items sampled uniformly by page and slot
    /// (pages of one class have equal slot counts, so this is uniform over the class's chunks,
    /// with dead chunks rejected), the one with the largest eviction score under the pool's
    /// policy goes (random policies: the first). False when the class holds no item.
    fn evict_in_class(&mut self, t: usize, c: u16, reason: EvictionReason) -> bool {
        let npages = self.tenants[t].classes[c as usize].list.len();
        if npages == 0 {
            return false;
        }
        let policy = self.tenants[t].cfg.policy;
        let k = if matches!(policy, Policy::AllkeysRandom | Policy::VolatileRandom) {
            1
        } else {
            self.tenants[t].cfg.samples.max(1) as usize
        };
        let lruclock = self.lru_clock();
        let now_min = lfu_minutes(self.clock.now_ms());
        let mut best: Option<(u64, u32)> = None;
        let (mut found, mut tries) = (0usize, 0usize);
        while found < k && tries < 8 * k + 64 {
            tries += 1;
            let pg =
                self.tenants[t].classes[c as usize].list[self.rng.below(npages as u64) as usize];
            let bump = self.store.pages[pg as usize].bump;
            if bump == 0 {
                continue;
            }
            let slot = self.rng.below(u64::from(bump)) as u32;
            let h = self.store.handle(pg, slot);
            if !self.store.is_live(h) || policy.is_volatile() && !self.store.has_ttl(h) {
                continue;
            }
            found += 1;
            let s = self.score(t, h, lruclock, now_min);
            if best.is_none_or(|(bs, _)| s > bs) {
                best = Some((s, h));
            }
        }
        if best.is_none() {
            // Sparse pages: take the first live item of the class deterministically.
            'pages: for i in 0..npages {
                let pg = self.tenants[t].classes[c as usize].list[i];
                for slot in 0..self.store.pages[pg as usize].bump {
                    let h = self.store.handle(pg, slot);
                    if self.store.is_live(h) && (!policy.is_volatile() || self.store.has_ttl(h)) {
                        best = Some((0, h));
                        break 'pages;
                    }
                }
            }
        }
        match best {
            Some((_, h)) => {
                self.evict_handle(t, h, reason, true);
                true
            }
            None => false,
        }
    }
}
