//! The Locus cache engine: tenants, pools, size classes, pages, items, eviction, TTL, statistics
//! and the page API the controllers drive.
//!
//! The engine is a plain single-threaded data structure (`&mut self`, no I/O, no threads): the
//! server wraps it in a lock, the simulator drives it with a [`locus_common::VirtualClock`].
//! Time comes from the injected clock, randomness from one seeded [`locus_common::Rng`], and
//! background work ([`Engine::run_active_expire`], [`Engine::tick`]) runs in bounded steps on
//! demand, so a run is reproducible bit for bit.
//!
//! # Components
//!
//! * [`config`]: [`EngineConfig`], [`TenantConfig`], validation reporting every problem.
//! * `store`: pages and the items stored inline in them (slab chunks).
//! * `class`: size classes (chunk sizes growing by `slab_growth_factor`, ~1.08).
//! * `evict`: Redis's eviction pool, LRU clock and LFU counter (docs/models.md §8).
//! * [`arbiter`]: which pool may grow and which pool evicts ([`arbiter::SharedArbiter`] = free
//!   competition, [`arbiter::StaticArbiter`] = per-tenant budgets).
//! * `engine/`: the [`Engine`] itself, one file per concern: `mod.rs` (types, the struct, its
//!   constructor), `recency`, `index` (key index, TTLs), `pages`, `victim` (each policy's victim
//!   choice), `data` (GET/SET/DEL, allocation), `large` (large items and compaction),
//!   `maintenance`, `settings`, `stats`, `page_api`, `control` (the controller runtime) and
//!   `slab` (class-local eviction).
//! * [`control`]: the seam to the memory controllers (which live in the `locus-control` crate):
//!   the `Controller` trait, its view and decision types, the host that runs it inline or on a
//!   profiling thread, and the target arbiter that carries its decisions out.
//! * [`stats`]: counters per engine, tenant and size class.
//! * [`tier`] and `region`: the optional fast and slow memory tiers (sdTMM) and the slow tier's
//!   memory (emulated, a file mapping or a NUMA node).
//! * [`policy`] (the eviction policies by Redis's names), [`ids`] (tenant, pool and class ids),
//!   [`error`] (the engine's typed errors).
//! * [`minisim`]: miniature simulation ([`minisim::MiniSim`], a `locus_mrc::Profiler` running
//!   scaled-down engines on a hash-sampled stream) and the full-size K-LRU ground truth
//!   ([`minisim::simulate_klru`]).
//!
//! # Memory layout
//!
//! ```text
//!  Engine
//!   +-- page table: Vec<Page> -------------------------------+   maxmemory bounds the pages
//!   |     page = page_size bytes owned by (pool, class)       |   in use (pages_used * page_size)
//!   |     [hdr|key|value|slack][hdr|key|value|slack]...       |
//!   +-- tenants (one pool each)                               |
//!         index:   HashTable<u32 handle>  (keys compared in the page; no key copies)
//!         all:     Vec<u32 handle>        (dense, uniform sampling; header.pos points back)
//!         vol:     Vec<u32 handle> + expires: HashMap<handle, (at_ms, pos)>  (TTL keys only)
//!         lru:     prev/next u32 per item (allkeys-exact-lru only)
//!         evpool:  16 entries (idle, key copy) (Redis's EVPOOL_SIZE)
//!         classes: per class, pages with a free chunk
//!
//!  item header (16 B): lru/lfu u32 | pos u32 | klen:30 + TTL + LIVE u32 | vlen u32
//!  handle (u32):       page_id << slot_bits | slot
//! ```
//!
//! Per item outside the chunk: ~5 B / load factor for the index (u32 + control byte), 4 B in the
//! dense array; TTL keys add ~30 B (vol entry + side table); exact LRU adds 8 B. [`EngineStats`] reports the metadata outside pages as
//! `metadata_bytes`; `maxmemory` bounds it too when `metadata_in_budget` is set (the server's
//! setting), pages only otherwise (the simulator's).
//!
//! # Allocation and eviction
//!
//! A SET of class `c` in pool `p` takes, in order: a free chunk of (p, c); a free page (if the
//! arbiter lets `p` grow and `pages_used < pages_total`); the emptiest page of a pool whose free
//! chunks exceed a page plus a quarter of its chunk bytes (evicting what is left on it, reason
//! `PageReclaim`); otherwise one eviction by policy in the pool the arbiter names, and again.
//! After 64 evictions that freed chunks only in other classes (those chunks are reused by later
//! inserts of their classes), the emptiest page is taken back regardless: this is how a class
//! gets pages from other classes (no slab calcification). Eviction is pool-wide: the sampled
//! policies draw K distinct keys uniformly from the pool (volatile-*: from its keys with a TTL)
//! exactly as Redis 7 does with one database, and keep Redis's 16-entry eviction pool.
//! Under free competition (`shared`) pools with the same policy share one eviction pool, as
//! Redis's databases do. Item caps (`max_items`) are enforced right after an insert, so the new
//! key can be sampled (Redis evicts at the next command, with the new key in the dictionary).
//! A page left without items goes back to the free list at once. Page reassignments and
//! releases are logged ([`Engine::page_events`]).
//!
//! With `large_items` (the server's Redis mode: above an eighth of a page), a bigger item gets an
//! allocation of its own, charged at its size, and may be as large as `maxmemory`; pages,
//! metadata and large items share the budget. A class short of a page, or a large item short of
//! budget, first compacts a class whose free chunks add up to a page (its sparsest page's items
//! move, the page goes, nothing is evicted), then evicts by policy as above. A log-uniform mix of
//! 1 B to 900 KB under 64 MiB then keeps 94-99% of the keys an exact LRU by bytes would, against
//! about 12% with every item in 1 MiB pages (`tests/budget.rs`).
//!
//! Measured (`cargo bench -p locus-engine --bench memory`): 1M keys of 14 + 100 bytes cost 32.7 B/key of RSS
//! beyond the payload (16 header + 6 class rounding + ~15 index and sampling array); churn at
//! 256 MiB with 50..5000-byte values peaks at 247 MiB RSS.

pub mod arbiter;
mod class;
pub mod config;
pub mod control;
mod engine;
pub mod error;
mod evict;
pub mod ids;
pub mod minisim;
pub mod policy;
mod region;
pub mod stats;
mod store;
pub mod tier;

pub use config::{EngineConfig, LruClockMode, PartitionMode, TenantConfig};
pub use engine::TierWork;
pub use engine::{
    CONTROL_RECORD_LOG, ClassMode, Engine, Expire, ItemMeta, KeyEvent, KeyEventKind, Object,
    ObjectInfo, PAGE_EVENT_LOG, PageEvent, RecencyKind, RestoreValue, SetCond, SetOptions,
    ValueRef,
};
pub use engine::{ClassPoolStats, MAX_CLASS_POOLS};
pub use engine::{Detached, GIVE_BACK_FREE_PAGES, LAZYFREE_THRESHOLD};
pub use error::EngineError;
pub use evict::LFU_INIT_VAL;
pub use store::META_PREFIX;
pub use tier::{PromotionMode, SlowBackend, TenantTierStats, Tier, TierConfig, TierStats};

/// Bytes of the header every item carries in its chunk (key and value follow it): an item of
/// `size` key + value bytes needs a chunk of at least `size + ITEM_HEADER_BYTES`.
pub const ITEM_HEADER_BYTES: u32 = store::HDR as u32;
pub use ids::{ClassId, PoolId, TenantId};
pub use policy::Policy;
pub use stats::{ClassStats, EngineStats, EvictionCounts, EvictionReason, TenantStats};

#[cfg(test)]
mod send_check {
    fn assert_send<T: Send>() {}

    #[test]
    fn engine_is_send() {
        assert_send::<super::Engine>();
    }
}
