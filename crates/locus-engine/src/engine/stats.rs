//! Statistics: engine, tenant and class counters and the object introspection (`OBJECT`, `MEMORY USAGE`).

use super::*;

impl Engine {
    // Statistics.

    /// Engine-wide snapshot.
    pub fn stats(&self) -> EngineStats {
        let mut s = EngineStats {
            maxmemory: self.cfg.maxmemory,
            // With metadata in the budget, used memory is what the budget holds: pages and the
            // metadata outside them (as Redis's used_memory includes its dictionaries).
            used_bytes: self.budget_used(),
            large_bytes: self.large_bytes,
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

    /// One tenant's snapshot (summed over its pools when it has per-key classes).
    pub fn tenant_stats(&self, t: TenantId) -> TenantStats {
        let ti = t.0 as usize;
        let mut s = self.pool_stats(ti);
        for p in self.members(ti).skip(1) {
            let m = self.pool_stats(p);
            s.hits += m.hits;
            s.misses += m.misses;
            s.sets += m.sets;
            s.deletes += m.deletes;
            s.evictions += m.evictions;
            s.evictions_by_reason.merge(&m.evictions_by_reason);
            s.expired += m.expired;
            s.items += m.items;
            s.volatile_items += m.volatile_items;
            s.item_bytes += m.item_bytes;
            s.charged_bytes += m.charged_bytes;
            s.pages += m.pages;
            s.large_bytes += m.large_bytes;
            s.metadata_bytes += m.metadata_bytes;
        }
        s
    }

    /// Keys of tenant `t` removed because their TTL passed (lazy + active), without building
    /// the whole snapshot: memcached's face reads it around a lookup to tell an expired item
    /// from a missing one (`get_expired`).
    pub fn expired_count(&self, t: TenantId) -> u64 {
        // Read before and after every memcached get: no allocation (`members` collects).
        let ti = t.0 as usize;
        match &self.tenants[ti].group {
            None => self.tenants[ti].counters.expired,
            Some(g) => g
                .members
                .iter()
                .map(|&p| self.tenants[p as usize].counters.expired)
                .sum(),
        }
    }

    /// The size class of the item the engine expired last, by any path (`None` before the
    /// first expiry). A caller that saw [`Engine::expired_count`] move across one lookup reads
    /// here which class that item was in (memcached's per-class `get_expired`).
    pub fn last_expired_class(&self) -> Option<ClassId> {
        self.last_expired_class
    }

    /// Buckets of tenant `t`'s key index (its pools' summed): memcached's hash table size.
    pub fn index_buckets(&self, t: TenantId) -> u64 {
        self.members(t.0 as usize)
            .map(|p| {
                let cap = self.tenants[p].index.capacity() as u64;
                if cap == 0 {
                    0
                } else {
                    (cap * 8 / 7).next_power_of_two()
                }
            })
            .sum()
    }

    /// One pool's snapshot.
    pub(super) fn pool_stats(&self, ti: usize) -> TenantStats {
        let tn = &self.tenants[ti];
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
            large_bytes: tn.large_bytes,
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
        let mut all = self.pool_class_stats(t.0 as usize);
        for p in self.members(t.0 as usize).skip(1) {
            for c in self.pool_class_stats(p) {
                match all.iter_mut().find(|a| a.class == c.class) {
                    Some(a) => a.merge(&c),
                    None => all.push(c),
                }
            }
        }
        all.sort_by_key(|c| c.class);
        all
    }

    fn pool_class_stats(&self, ti: usize) -> Vec<ClassStats> {
        let tn = &self.tenants[ti];
        (0..self.classes.len())
            .filter_map(|i| {
                let cc = &tn.class_counters[i];
                let cp = &tn.classes[i];
                let active = cp.pages > 0
                    || cc.hits > 0
                    || cc.sets > 0
                    || cc.evictions.total() > 0
                    || cc.expired > 0
                    || cc.crawl_checked > 0;
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
                    evicted_ttl: cc.evicted_ttl,
                    expired: cc.expired,
                    crawled: cc.crawled,
                    crawl_checked: cc.crawl_checked,
                    rescued: cc.rescued,
                    pages_in: cc.pages_in,
                    pages_out: cc.pages_out,
                })
            })
            .collect()
    }

    /// CONFIG RESETSTAT: zeroes hit/miss/set/delete/eviction/expiry counters (not sizes).
    pub fn reset_stats(&mut self) {
        for t in 0..self.tenants.len() {
            self.reset_tenant_stats(TenantId(t as u32));
        }
    }

    /// Zeroes one tenant's hit/miss/set/delete/eviction/expiry counters, its classes' too (not
    /// sizes): memcached's `stats reset` on a tenant's port.
    pub fn reset_tenant_stats(&mut self, t: TenantId) {
        for p in self.members(t.0 as usize) {
            self.reset_pool_stats(p);
        }
    }

    fn reset_pool_stats(&mut self, ti: usize) {
        let tn = &mut self.tenants[ti];
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
