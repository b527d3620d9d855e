//! Counters and snapshots: engine-wide, per tenant, per size class.

use crate::ids::ClassId;
use crate::policy::Policy;

/// Why an item left the cache without being deleted by a client.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EvictionReason {
    /// Chosen by the pool's policy because memory (pages) was full.
    Memory,
    /// Chosen by the pool's policy because an item-count cap (`max_items`) was reached.
    ItemLimit,
    /// Collateral: the page holding it was taken for another size class or pool when memory was
    /// full (slab rebalancing on demand).
    PageReclaim,
    /// The page holding it was moved by [`crate::Engine::move_page`] (a controller).
    PageMove,
    /// `maxmemory` or a budget was lowered and the page holding it was released.
    Shrink,
}

impl EvictionReason {
    /// Every reason, in the order of [`EvictionCounts::by_reason`].
    pub const ALL: [EvictionReason; 5] = [
        EvictionReason::Memory,
        EvictionReason::ItemLimit,
        EvictionReason::PageReclaim,
        EvictionReason::PageMove,
        EvictionReason::Shrink,
    ];

    /// A short snake_case name (metrics labels).
    pub fn name(self) -> &'static str {
        match self {
            EvictionReason::Memory => "memory",
            EvictionReason::ItemLimit => "item_limit",
            EvictionReason::PageReclaim => "page_reclaim",
            EvictionReason::PageMove => "page_move",
            EvictionReason::Shrink => "shrink",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Evictions, total and by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictionCounts {
    /// Indexed like [`EvictionReason::ALL`].
    pub by_reason: [u64; 5],
}

impl EvictionCounts {
    /// All evictions.
    pub fn total(&self) -> u64 {
        self.by_reason.iter().sum()
    }

    /// Evictions for one reason.
    pub fn get(&self, r: EvictionReason) -> u64 {
        self.by_reason[r.index()]
    }

    pub(crate) fn add(&mut self, r: EvictionReason) {
        self.by_reason[r.index()] += 1;
    }

    /// Adds another set of counts (a tenant's pools summed).
    pub fn merge(&mut self, o: &EvictionCounts) {
        for (a, b) in self.by_reason.iter_mut().zip(o.by_reason) {
            *a += b;
        }
    }
}

/// Engine-wide snapshot.
///
/// `maxmemory` bounds `used_bytes` (pages). `metadata_bytes` is the memory held outside pages
/// (index, sampling arrays, TTL table, page table), reported but not bounded by `maxmemory`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// The configured bound on pages in bytes.
    pub maxmemory: u64,
    /// Pages in use × page size, plus the metadata's pages when it counts toward the budget,
    /// plus the large items' bytes.
    pub used_bytes: u64,
    /// Bytes charged for large items (their own allocations, outside pages).
    pub large_bytes: u64,
    /// Page size in bytes.
    pub page_size: u64,
    /// Pages owned by some (pool, class).
    pub pages_used: u64,
    /// Pages `maxmemory` allows (`maxmemory / page_size`).
    pub pages_total: u64,
    /// Page buffers currently allocated (used or kept free for reuse); RSS follows this.
    pub pages_allocated: u64,
    /// Items stored.
    pub items: u64,
    /// Key + value bytes of those items.
    pub item_bytes: u64,
    /// Chunk bytes charged for them (item + header + class rounding).
    pub charged_bytes: u64,
    /// Bytes of per-item metadata outside pages (index, sampling arrays, TTL table).
    pub metadata_bytes: u64,
    /// Evictions over all tenants.
    pub evictions: u64,
    /// Expirations over all tenants (lazy + active).
    pub expired: u64,
}

/// One tenant's snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantStats {
    /// Tenant name.
    pub name: String,
    /// GET hits.
    pub hits: u64,
    /// GET misses (including keys found expired).
    pub misses: u64,
    /// Successful SETs (including NX/XX that stored).
    pub sets: u64,
    /// Keys removed by DEL (and RENAME's implicit delete of the destination).
    pub deletes: u64,
    /// Evictions, total.
    pub evictions: u64,
    /// Evictions by reason.
    pub evictions_by_reason: EvictionCounts,
    /// Keys removed because their TTL passed (lazy + active).
    pub expired: u64,
    /// Items stored.
    pub items: u64,
    /// Items with a TTL.
    pub volatile_items: u64,
    /// Key + value bytes.
    pub item_bytes: u64,
    /// Chunk bytes charged.
    pub charged_bytes: u64,
    /// Pages owned by the tenant's pool.
    pub pages: u64,
    /// Bytes charged for the tenant's large items (outside its pages).
    pub large_bytes: u64,
    /// Bytes of metadata outside pages (index, sampling arrays, TTL table).
    pub metadata_bytes: u64,
    /// Static floor in bytes.
    pub min_bytes: u64,
    /// Static cap in bytes.
    pub max_bytes: Option<u64>,
    /// Item cap.
    pub max_items: Option<u64>,
    /// Eviction policy.
    pub policy: Policy,
    /// `maxmemory-samples`.
    pub samples: u32,
    /// Eviction pool size.
    pub evpool_size: u32,
}

/// One size class of one pool. Misses are not attributed to classes (a missing key has no size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassStats {
    /// The class.
    pub class: ClassId,
    /// Its chunk size in bytes.
    pub chunk_size: u32,
    /// Pages the pool owns in this class.
    pub pages: u64,
    /// Chunks those pages hold.
    pub chunks: u64,
    /// Live items.
    pub items: u64,
    /// Key + value bytes of the live items.
    pub item_bytes: u64,
    /// GET hits on items of this class.
    pub hits: u64,
    /// SETs that stored an item of this class.
    pub sets: u64,
    /// Evictions by reason.
    pub evictions: EvictionCounts,
    /// Evicted items that had a TTL (memcached's `evicted_nonzero`).
    pub evicted_ttl: u64,
    /// Expirations.
    pub expired: u64,
    /// Of the expirations, the items a crawl removed ([`Engine::reclaim_expired`](crate::Engine::reclaim_expired)).
    pub crawled: u64,
    /// Live items of this class a crawl looked at, expired or not.
    pub crawl_checked: u64,
    /// Items moved to another page of the class when theirs was emptied to be given back
    /// (memcached's `slab_reassign_rescues`), rather than evicted.
    pub rescued: u64,
    /// Pages that came to this class from another (moved by a controller or taken back).
    pub pages_in: u64,
    /// Pages this class gave to another.
    pub pages_out: u64,
}

impl ClassStats {
    /// Adds the same class of another pool (a tenant's pools summed).
    pub fn merge(&mut self, o: &ClassStats) {
        self.pages += o.pages;
        self.chunks += o.chunks;
        self.items += o.items;
        self.item_bytes += o.item_bytes;
        self.hits += o.hits;
        self.sets += o.sets;
        self.evictions.merge(&o.evictions);
        self.evicted_ttl += o.evicted_ttl;
        self.expired += o.expired;
        self.crawled += o.crawled;
        self.crawl_checked += o.crawl_checked;
        self.rescued += o.rescued;
        self.pages_in += o.pages_in;
        self.pages_out += o.pages_out;
    }
}

/// Per (tenant, class) counters kept by the engine.
#[derive(Clone, Debug, Default)]
pub(crate) struct ClassCounters {
    pub hits: u64,
    pub sets: u64,
    pub evictions: EvictionCounts,
    pub evicted_ttl: u64,
    pub expired: u64,
    pub crawled: u64,
    pub crawl_checked: u64,
    pub rescued: u64,
    pub pages_in: u64,
    pub pages_out: u64,
    pub items: u64,
    pub item_bytes: u64,
}

/// Per tenant counters kept by the engine.
#[derive(Clone, Debug, Default)]
pub(crate) struct TenantCounters {
    pub hits: u64,
    pub misses: u64,
    pub sets: u64,
    pub deletes: u64,
    pub evictions: EvictionCounts,
    pub expired: u64,
}
