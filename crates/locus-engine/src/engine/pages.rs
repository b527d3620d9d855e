//! Pages: taking free pages, reclaiming the emptiest page, releasing empty pages, moving pages between classes and pools.

use super::*;

impl Engine {
    // Pages.

    /// A chunk from a page of (t, c) with a free one.
    pub(super) fn take_free_chunk(&mut self, t: usize, c: u16) -> Option<u32> {
        self.take_free_chunk_in(t, c, 0)
    }

    /// A chunk from a page of (t, c) in `tier` with a free one.
    pub(super) fn take_free_chunk_in(&mut self, t: usize, c: u16, tier: u8) -> Option<u32> {
        let pg = *self.tenants[t].classes[c as usize]
            .partial_of(tier)
            .last()?;
        let slot = self.store.take_slot(pg);
        let page = &mut self.store.pages[pg as usize];
        if !page.has_free() {
            self.tenants[t].classes[c as usize]
                .partial_of_mut(tier)
                .pop();
            page.partial_pos = NIL;
        }
        Some(self.store.handle(pg, slot))
    }

    pub(super) fn attach_page(&mut self, pg: u32, t: usize, c: u16) {
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
        let partial = cp.partial_of_mut(page.tier);
        page.partial_pos = partial.len() as u32;
        partial.push(pg);
        page.class_pos = cp.list.len() as u32;
        cp.list.push(pg);
        tn.chunk_bytes += u64::from(slots) * u64::from(chunk);
        self.pages_used += 1;
        self.tier_on_page(t, pg, true);
    }

    /// Takes an (empty) page away from its owner.
    pub(super) fn detach_page(&mut self, pg: u32) {
        let page = &self.store.pages[pg as usize];
        locus_common::strict_assert!(page.live == 0, "detaching a page with live items");
        let (t, c, pool_pos, partial_pos, class_pos, tier) = (
            page.owner as usize,
            page.class,
            page.pool_pos,
            page.partial_pos,
            page.class_pos,
            page.tier,
        );
        let bytes = u64::from(page.slots) * u64::from(page.chunk);
        self.tier_on_page(t, pg, false);
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
            let partial = cp.partial_of_mut(tier);
            let last = partial.pop().expect("partial list holds the page");
            if last != pg {
                partial[partial_pos as usize] = last;
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

    pub(super) fn release_page(&mut self, pg: u32) {
        self.detach_page(pg);
        if self.store.pages[pg as usize].buf.is_mapped() {
            self.tier_release_mapped(pg);
        } else {
            self.free_with_buf.push(pg);
        }
    }

    /// Gives a free page to (t, c). The caller checked `pages_used < pages_total`.
    pub(super) fn grant_page(&mut self, t: usize, c: u16) {
        self.grant_page_in(t, c, 0);
    }

    /// Gives a free page to (t, c) in `tier`. The caller checked the budgets.
    pub(super) fn grant_page_in(&mut self, t: usize, c: u16, tier: u8) {
        let mapped = if tier == 0 {
            None
        } else {
            self.tier_mapped_page()
        };
        let pg = if let Some(pg) = mapped {
            pg
        } else if let Some(pg) = self.free_with_buf.pop() {
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
            self.store.pages[pg as usize].buf =
                crate::region::PageBuf::zeroed(self.cfg.page_size as usize);
            self.allocated_bufs += 1;
            pg
        };
        self.store.pages[pg as usize].tier = tier;
        self.attach_page(pg, t, c);
    }

    /// Evicts everything on `pg` (counted with `reason`) and hands it to (t, c). Returns the
    /// number of items evicted.
    pub(super) fn reassign_page(
        &mut self,
        pg: u32,
        t: usize,
        c: u16,
        reason: EvictionReason,
    ) -> u64 {
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

    pub(super) fn page_owner(&self, pg: u32) -> (PoolId, ClassId) {
        let p = &self.store.pages[pg as usize];
        (PoolId(p.owner), ClassId(p.class))
    }

    /// Takes a page away (its items evicted with reason `Shrink`) and frees it.
    pub(super) fn shrink_page(&mut self, pg: u32) {
        let from = self.page_owner(pg);
        let evicted = self.empty_page(pg, EvictionReason::Shrink);
        self.release_page(pg);
        self.record_page_event(pg, from, None, EvictionReason::Shrink, evicted);
    }

    pub(super) fn record_page_event(
        &mut self,
        page: u32,
        from: (PoolId, ClassId),
        to: Option<(PoolId, ClassId)>,
        reason: EvictionReason,
        evicted: u64,
    ) {
        if let Some((pool, class)) = to
            && matches!(
                reason,
                EvictionReason::PageMove | EvictionReason::PageReclaim
            )
        {
            self.tenants[from.0.0 as usize].class_counters[from.1.0 as usize].pages_out += 1;
            self.tenants[pool.0 as usize].class_counters[class.0 as usize].pages_in += 1;
        }
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
    pub(super) fn empty_page(&mut self, pg: u32, reason: EvictionReason) -> u64 {
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
    pub(super) fn sparsest_page(
        &mut self,
        t: usize,
        class: Option<u16>,
        exclude: Option<u16>,
    ) -> Option<u32> {
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

    /// The page of `t` (of class `class` only, if given) a controller may take: its sparsest
    /// page when `t`'s policy evicts any item, else only a page holding nothing (noeviction and
    /// volatile-* pools never lose items to a controller's moves or releases).
    pub(super) fn takeable_page(&mut self, t: usize, class: Option<u16>) -> Option<u32> {
        if self.evicts_any(t) {
            return self.sparsest_page(t, class, None);
        }
        self.tenants[t].pages.iter().copied().find(|&pg| {
            let p = &self.store.pages[pg as usize];
            p.live == 0 && class.is_none_or(|c| p.class == c)
        })
    }

    pub(super) fn refresh_views(&mut self) {
        let ps = self.cfg.page_size;
        self.views.clear();
        for (i, tn) in self.tenants.iter().enumerate() {
            self.views.push(PoolView {
                pool: PoolId(i as u32),
                // Large items count as the pages their bytes would fill.
                pages: tn.pages.len() as u64 + tn.large_bytes.div_ceil(ps),
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
    pub(super) fn pick_reclaim_page(&mut self, t: usize, c: u16, force: bool) -> Option<u32> {
        let ps = self.cfg.page_size;
        let p = PoolId(t as u32);
        for r in requester_first(t, self.tenants.len()) {
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
    /// evictions (docs/models.md §8 "Trigger", adapted to pages), as the arbiter decides.
    pub(super) fn alloc_chunk(&mut self, t: usize, c: u16) -> Result<u32, EngineError> {
        if self.tiers.is_some() {
            return self.alloc_tiered(t, c, 0);
        }
        let p = PoolId(t as u32);
        let mut fruitless = 0u32;
        if self.meta_pages > 0 {
            self.enforce_metadata_budget(t);
        }
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
            if self.pages_used + self.meta_pages + self.large_pages() < self.pages_total
                && self.arbiter.may_grow(&view, p)
            {
                self.grant_page(t, c);
                continue;
            }
            let class_mode = self.class_mode_of(t);
            if class_mode == ClassMode::RandomSlab
                && self.tenants[t].cfg.policy != Policy::NoEviction
            {
                let n = self.tenants[t].pages.len();
                if n > 0 {
                    let pg = self.tenants[t].pages[self.rng.below(n as u64) as usize];
                    self.reassign_page(pg, t, c, EvictionReason::PageReclaim);
                    continue;
                }
            }
            if class_mode != ClassMode::Auto {
                if self.tenants[t].first_page && self.tenants[t].classes[c as usize].pages == 0 {
                    // memcached gives a class its first page even when memory is full (its
                    // movers rebalance later); without it a size first seen after the budget
                    // filled could never be stored. Here the page comes from the pool's own
                    // memory, never another pool's.
                    if self.first_page_for(t, c) {
                        continue;
                    }
                    return Err(EngineError::OutOfMemory);
                }
                if self.tenants[t].cfg.policy == Policy::NoEviction
                    || !self.evict_in_class(t, c, EvictionReason::Memory)
                {
                    return Err(EngineError::OutOfMemory);
                }
                continue;
            }
            // With large items out of the pages (the server's Redis mode), free chunks of other
            // classes become a page by moving items, not by evicting them.
            if self.cfg.large_items.is_some() && self.compact_one(t) {
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

    /// Class-local modes: a first page for (t, c), a class that has none, when no free page may
    /// be granted. From `t`'s own memory only (another pool's items are never evicted for it):
    /// the emptiest page of another of its classes, preferring a class that keeps a page after
    /// (its items are evicted, as a slab move does; a noeviction or volatile-* pool gives only a
    /// page holding nothing), else, when `t` holds only large items, one of them is evicted so
    /// that its budget makes a page (the caller retries the grant). False when neither is
    /// possible.
    fn first_page_for(&mut self, t: usize, c: u16) -> bool {
        let evicts = self.evicts_any(t);
        let mut best: Option<(u32, (bool, u64, u64))> = None;
        for &pg in &self.tenants[t].pages {
            let p = &self.store.pages[pg as usize];
            if p.class == c || (!evicts && p.live > 0) {
                continue;
            }
            let last = self.tenants[t].classes[p.class as usize].pages <= 1;
            let (live, slots) = (u64::from(p.live), u64::from(p.slots).max(1));
            // Order: a class with pages to spare first, then the lowest occupancy.
            let better = best
                .is_none_or(|(_, (bl, bliv, bslots))| (last, live * bslots) < (bl, bliv * slots));
            if better {
                best = Some((pg, (last, live, slots)));
            }
        }
        if let Some((pg, _)) = best {
            self.reassign_page(pg, t, c, EvictionReason::PageReclaim);
            return true;
        }
        // No page of its own: its budget is in large items (or in nothing). Free a page's worth
        // of it when a page could then be granted (the arbiter lets the pool grow), and only
        // when its own large items can make the page: never evict for nothing.
        let free = self.cfg.maxmemory.saturating_sub(self.budget_used());
        let large = self.tenants[t].large_bytes;
        evicts
            && large > 0
            && large + free >= self.cfg.page_size
            && self.arbiter_may_grow(t)
            && self.evict_from(t, EvictionReason::Memory)
    }

    /// Whether the arbiter lets pool `t` take another page, on fresh views.
    fn arbiter_may_grow(&mut self, t: usize) -> bool {
        self.refresh_views();
        let view = ArbiterView {
            pools: &self.views,
            pages_used: self.pages_used,
            pages_total: self.pages_total,
            page_size: self.cfg.page_size,
        };
        self.arbiter.may_grow(&view, PoolId(t as u32))
    }

    /// One eviction on behalf of `t`, as the arbiter decides. False when nothing may be evicted.
    pub(super) fn evict_for(&mut self, t: usize, reason: EvictionReason) -> bool {
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
                let q = q.0 as usize;
                // The arbiter's choice may have nothing its policy lets go (a volatile-* pool
                // without TTL keys): then the requester's own items go, as its policy allows,
                // rather than refusing the write.
                self.evict_from(q, reason) || (q != t && self.evict_from(t, reason))
            }
            Victim::Pool(_) | Victim::Nothing => false,
            Victim::Coldest => self.evict_coldest(reason),
        }
    }
}

/// Pool indices `0..n` with the requester `t` first, then the others in id order.
pub(super) fn requester_first(t: usize, n: usize) -> impl Iterator<Item = usize> {
    std::iter::once(t).chain((0..n).filter(move |&r| r != t))
}
