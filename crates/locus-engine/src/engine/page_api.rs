//! The page API the controllers and tests drive: page ownership, moves, releases, the page event log and the invariant checker.

use super::*;

impl Engine {
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
    /// Returns the number of items evicted. Moving to the same (pool, class) does nothing. A
    /// pool whose policy forbids evicting its items (noeviction, volatile-*) gives only a page
    /// holding nothing.
    ///
    /// # Errors
    /// [`EngineError::UnknownPool`], [`EngineError::UnknownClass`], or
    /// [`EngineError::NoPageToMove`] when `from` owns no page it may give.
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
            .takeable_page(from.0.0 as usize, Some(from.1.0))
            .ok_or(EngineError::NoPageToMove {
                pool: from.0.0,
                class: from.1.0,
            })?;
        Ok(self.reassign_page(pg, to.0.0 as usize, to.1.0, EvictionReason::PageMove))
    }

    /// [`Engine::move_page`] as memcached's `slabs reassign` does it: before the page changes
    /// class, its items move to free chunks of the class's later pages while there are any
    /// (rescued, counted in the class's [`ClassStats::rescued`]); only the rest are evicted.
    /// Returns (rescued, evicted). Tiered engines evict as [`Engine::move_page`] does.
    ///
    /// # Errors
    /// As [`Engine::move_page`].
    pub fn move_page_rescuing(
        &mut self,
        from: (PoolId, ClassId),
        to: (PoolId, ClassId),
    ) -> Result<(u64, u64), EngineError> {
        if self.tiers.is_some()
            || from.0.0 as usize >= self.tenants.len()
            || from.1.0 as usize >= self.classes.len()
            || from == to
            || self.pages_of(from.0, from.1) == 0
        {
            return self.move_page(from, to).map(|n| (0, n));
        }
        let (t, c) = (from.0.0 as usize, from.1.0);
        // A page whose items all fit in the class's later pages first (none evicted, and
        // cursors stay sound: see `compaction_victim`), else the one `move_page` would take.
        let Some(pg) = self
            .compaction_victim(t, c)
            .or_else(|| self.takeable_page(t, Some(c)))
        else {
            return self.move_page(from, to).map(|n| (0, n));
        };
        let (rescued, _) = self.rescue_items(t, c, pg);
        let evicted = self.reassign_page(pg, to.0.0 as usize, to.1.0, EvictionReason::PageMove);
        Ok((rescued, evicted))
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
        let mut large = 0u64;
        let mut objects = 0u64;
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
            let (mut large_n, mut large_t) = (0u64, 0u64);
            for (pos, &h) in tn.all.iter().enumerate() {
                assert!(self.store.is_live(h));
                assert_eq!(self.store.pos(h) as usize, pos);
                let key = self.store.key(h);
                assert_eq!(self.find(ti, key, hash_key(key)), Some(h));
                let lead = tn.leader.map_or(ti, |l| l as usize);
                if self.tenants[lead].group.is_some() {
                    assert_eq!(
                        self.find_key(lead, key, hash_key(key)),
                        Some((ti, h)),
                        "a key in two pools of one tenant"
                    );
                }
                let (pi, _) = self.store.split(h);
                assert_eq!(
                    self.store.pages[pi].owner as usize, ti,
                    "item on a foreign page"
                );
                large_t += self.object_charge(h);
                objects += u64::from(self.store.is_obj(h));
                let page = &self.store.pages[pi];
                if page.large {
                    assert_eq!(
                        (page.slots, page.live, page.bump),
                        (1, 1, 1),
                        "a large item's page"
                    );
                    assert_eq!(page.buf.len(), page.chunk as usize);
                    large_t += Self::large_charge(page.buf.len() as u64);
                    large_n += 1;
                } else {
                    charged += u64::from(page.chunk);
                }
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
            assert_eq!(live + large_n, tn.all.len() as u64);
            let reserved = match self.objects_reserved() {
                Some((rt, r)) if rt == ti => r,
                _ => 0,
            };
            assert_eq!(
                large_t + reserved + tn.outside_bytes,
                tn.large_bytes,
                "a tenant's large bytes"
            );
            large += large_t + tn.outside_bytes;
            assert_eq!(chunk_bytes, tn.chunk_bytes);
            used += tn.pages.len() as u64;
            items += tn.all.len() as u64;
            if let Some(cap) = tn.cfg.max_items {
                assert!(tn.all.len() as u64 <= cap, "tenant item cap exceeded");
            }
        }
        assert_eq!(used, self.pages_used);
        let reserved = self.objects_reserved().map_or(0, |(_, r)| r);
        assert_eq!(large + reserved, self.large_bytes, "large bytes");
        assert_eq!(self.objects_live(), objects, "objects named by items");
        assert_eq!(items, self.total_items);
        if let Some(cap) = self.cfg.max_items {
            assert!(items <= cap, "global item cap exceeded");
        }
        if let Some(cap) = self.max_item_bytes {
            assert!(self.total_item_bytes() <= cap, "item-bytes cap exceeded");
        }
        self.check_tier_invariants();
    }
}
