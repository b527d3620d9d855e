//! Runtime settings: maxmemory, policies, K, per-tenant budgets and caps, changed without a restart.

use super::*;

impl Engine {
    // Runtime settings.

    /// CONFIG SET maxmemory. Lowering it releases pages at once (their items are evicted with
    /// reason [`EvictionReason::Shrink`], emptiest pages first, whatever the pools' policies:
    /// the budget is the admin's to set) and frees spare page buffers.
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] when below one page or above the addressable pages.
    pub fn set_maxmemory(&mut self, bytes: u64) -> Result<(), EngineError> {
        let ps = self.cfg.page_size;
        if self.tiers.is_some() {
            return Err(invalid(vec![
                "maxmemory: cannot change at runtime with memory tiers (not implemented)".into(),
            ]));
        }
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
        while self.pages_used + self.meta_pages + self.large_pages() > self.pages_total
            && self.pages_used > 0
        {
            let Some(pg) = self.global_sparsest_page(false) else {
                break;
            };
            self.shrink_page(pg);
        }
        // Then large items, each pool by its policy (the least recently used first under LRU).
        let mut stuck = 0;
        while self.budget_used() > self.cfg.maxmemory && stuck < self.tenants.len() {
            let t = (0..self.tenants.len())
                .max_by_key(|&t| self.tenants[t].large_bytes)
                .unwrap_or(0);
            if self.tenants[t].large_bytes == 0 || !self.evict_from(t, EvictionReason::Shrink) {
                stuck += 1;
            }
        }
        self.trim_buffers();
        Ok(())
    }

    /// Whether pool `t`'s policy lets the engine evict any of its items (not noeviction or
    /// volatile-*): only such pools give up pages that still hold items.
    pub(super) fn evicts_any(&self, t: usize) -> bool {
        let p = self.tenants[t].cfg.policy;
        p != Policy::NoEviction && !p.is_volatile()
    }

    /// The page with the lowest occupancy of all pools; with `evictable_only`, among the pages
    /// that may be emptied: any page of a pool that evicts any item, an empty page of the others
    /// (noeviction, volatile-*).
    pub(super) fn global_sparsest_page(&self, evictable_only: bool) -> Option<u32> {
        let mut best: Option<(u32, u64, u64)> = None;
        for (i, p) in self.store.pages.iter().enumerate() {
            if p.owner == NIL
                || p.large
                || (evictable_only && p.live > 0 && !self.evicts_any(p.owner as usize))
            {
                continue;
            }
            let (l, s) = (u64::from(p.live), u64::from(p.slots));
            if best.is_none_or(|(_, bl, bs)| l * bs < bl * s) {
                best = Some((i as u32, l, s));
            }
        }
        best.map(|b| b.0)
    }

    /// Frees spare page buffers beyond the pages the budget leaves once large items and the
    /// metadata outside pages (`metadata_in_budget`) are paid.
    pub(super) fn trim_buffers(&mut self) {
        let limit = self
            .pages_total
            .saturating_sub(self.large_pages() + self.meta_pages);
        while self.allocated_bufs > limit {
            let Some(pg) = self.free_with_buf.pop() else {
                break;
            };
            self.store.pages[pg as usize].buf = crate::region::PageBuf::none();
            self.allocated_bufs -= 1;
            self.free_no_buf.push(pg);
        }
    }

    /// CONFIG SET maxmemory-policy for one tenant. The eviction pool is emptied; switching to
    /// `allkeys-exact-lru` builds the recency list from the items' LRU fields.
    pub fn set_policy(&mut self, t: TenantId, p: Policy) {
        for ti in self.members(t.0 as usize) {
            self.set_pool_policy(ti, p);
        }
    }

    fn set_pool_policy(&mut self, ti: usize, p: Policy) {
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
        for ti in self.members(t.0 as usize) {
            self.tenants[ti].cfg.samples = k;
        }
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
        for ti in self.members(t.0 as usize) {
            let tn = &mut self.tenants[ti];
            tn.cfg.evpool_size = size;
            tn.evpool = EvPool::new(size as usize);
        }
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
        self.refuse_bounds_with_classes(ti, cap.is_some())?;
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
        self.refuse_bounds_with_classes(ti, min_bytes > 0 || max_bytes.is_some())?;
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

    /// A floor or cap would bound only the default class pool of a tenant with per-key classes.
    fn refuse_bounds_with_classes(&self, ti: usize, bounded: bool) -> Result<(), EngineError> {
        if bounded && self.tenants[ti].group.is_some() {
            return Err(invalid(vec![format!(
                "tenant {} has per-key penalty classes: a floor or cap would bound only its default class pool",
                self.tenants[ti].cfg.name
            )]));
        }
        Ok(())
    }
}
