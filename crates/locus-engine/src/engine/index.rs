//! The key index and TTLs: lookup by key hash, insertion and removal, the dense sampling array, and the side table of expiry times.

use super::*;

impl Engine {
    // Index.

    #[inline]
    pub(super) fn find(&self, t: usize, key: &[u8], hash: u64) -> Option<u32> {
        let store = &self.store;
        self.tenants[t]
            .index
            .find(hash, |&h| store.key(h) == key)
            .copied()
    }

    pub(super) fn expiry(&self, t: usize, h: u32) -> Option<u64> {
        if self.store.has_ttl(h) {
            self.tenants[t].expires.get(&h).map(|e| e.at_ms)
        } else {
            None
        }
    }

    /// Finds a key, expiring it lazily when its TTL has passed.
    #[inline]
    pub(super) fn lookup(&mut self, t: usize, key: &[u8], hash: u64) -> Option<u32> {
        let h = self.find(t, key, hash)?;
        if self.store.has_ttl(h) {
            let at = self.tenants[t]
                .expires
                .get(&h)
                .map_or(u64::MAX, |e| e.at_ms);
            if at <= self.clock.now_ms() {
                if !self.tenants[t].expiry_held {
                    self.expire_item(t, h);
                }
                return None;
            }
        }
        Some(h)
    }

    pub(super) fn expire_item(&mut self, t: usize, h: u32) {
        self.note_key_event(t, h, super::KeyEventKind::Expired);
        let c = self.unlink_item(t, h, true);
        let tn = &mut self.tenants[t];
        tn.counters.expired += 1;
        tn.class_counters[c as usize].expired += 1;
        self.last_expired_class = Some(ClassId(c));
    }

    pub(super) fn add_ttl(&mut self, t: usize, h: u32, at_ms: u64) {
        let tn = &mut self.tenants[t];
        if let Some(e) = tn.expires.get_mut(&h) {
            e.at_ms = at_ms;
            return;
        }
        let vpos = tn.vol.len() as u32;
        let caps = (tn.vol.capacity(), tn.expires.capacity());
        tn.vol.push(h);
        tn.expires.insert(h, Exp { at_ms, vpos });
        let grew = caps != (tn.vol.capacity(), tn.expires.capacity());
        self.store.set_ttl_flag(h, true);
        if grew {
            self.note_metadata();
        }
    }

    pub(super) fn remove_ttl(&mut self, t: usize, h: u32) {
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
    pub(super) fn link_item(
        &mut self,
        t: usize,
        h: u32,
        hash: u64,
        key: &[u8],
        value: &[u8],
        lru: u32,
        exp: Option<u64>,
    ) {
        // A key whose expired item is held (see `Tenant::expiry_held`) is written over: the old
        // item goes first, so the index never holds a key twice.
        if self.tenants[t].expiry_held
            && let Some(old) = self.find(t, key, hash)
        {
            self.expire_item(t, old);
        }
        let pos = self.tenants[t].all.len() as u32;
        let born = self.hyp_now();
        self.store.write(h, lru, pos, key, value, false);
        let store = &self.store;
        let tn = &mut self.tenants[t];
        let caps = (tn.all.capacity(), tn.index.capacity());
        tn.all.push(h);
        if let Some(l) = &mut tn.lru {
            l.push(pos);
        }
        if let Some(hy) = &mut tn.hyp {
            hy.push(Hyp { born, uses: 1 });
        }
        tn.index.insert_unique(hash, h, |&x| hash_key(store.key(x)));
        let grew = caps != (tn.all.capacity(), tn.index.capacity());
        self.tier_on_link(t, h, pos);
        let store = &self.store;
        let tn = &mut self.tenants[t];
        let (pi, _) = store.split(h);
        let page = &store.pages[pi];
        let bytes = (key.len() + value.len()) as u64;
        tn.item_bytes += bytes;
        if !page.large {
            tn.charged_bytes += u64::from(page.chunk);
        }
        let cc = &mut tn.class_counters[page.class as usize];
        cc.items += 1;
        cc.item_bytes += bytes;
        self.total_items += 1;
        if grew {
            self.note_metadata();
        }
        if let Some(at) = exp {
            self.add_ttl(t, h, at);
        }
    }

    /// A metadata container grew: recompute the pages' worth of metadata the budget carries
    /// (`metadata_in_budget`); the next allocation reclaims pages if they no longer fit.
    pub(super) fn note_metadata(&mut self) {
        if !self.cfg.metadata_in_budget {
            return;
        }
        let bytes = (self.store.pages.capacity() * std::mem::size_of::<Page>()) as u64
            + self.tenants.iter().map(Tenant::metadata_bytes).sum::<u64>()
            + self.model_bytes;
        self.meta_pages = bytes.div_ceil(self.cfg.page_size);
    }

    /// Reclaims pages (the sparsest of tenant `t` first) until pages and metadata fit in
    /// `maxmemory` again: the metadata outside pages is memory too.
    pub(super) fn enforce_metadata_budget(&mut self, t: usize) {
        if self.pages_used + self.meta_pages + self.large_pages() > self.pages_total {
            self.shrink_metadata();
        }
        while self.meta_pages > 0
            && self.pages_used + self.meta_pages + self.large_pages() > self.pages_total
        {
            // The writer's own pool first, if it may lose any item; never items of a pool whose
            // policy forbids evicting them.
            let own = if self.evicts_any(t) {
                self.sparsest_page(t, None, None)
            } else {
                None
            };
            if let Some(pg) = own.or_else(|| self.global_sparsest_page(true)) {
                self.shrink_page(pg);
            } else if let Some(pg) = self.empty_page_anywhere() {
                let from = self.page_owner(pg);
                self.release_page(pg);
                self.record_page_event(pg, from, None, EvictionReason::PageReclaim, 0);
            } else if self.cfg.large_items.is_some() && self.compact_one(t) {
                // A page freed by moving items.
            } else if self.tenants[t].cfg.policy == Policy::NoEviction
                || !self.evict_from(t, EvictionReason::Memory)
            {
                // A volatile-* writer evicts what its policy allows (keys with a TTL) until a
                // page empties; with nothing left to evict the metadata waits over budget, as
                // Redis's noeviction does.
                break;
            }
            if self.pages_used == 0 {
                // Everything is gone: the containers are empty and can be given back.
                self.shrink_metadata();
            }
        }
        // A page given up for metadata gives its buffer back too: kept as a spare, it stayed
        // in the process's memory beside the metadata that replaced it (issue 28: a memcached
        // tenant at 64 MiB held 63 page buffers for 62 pages in use).
        self.trim_buffers();
    }

    /// Removes item `h` of tenant `t` from every structure and frees its chunk. Returns its class.
    /// With `release_empty`, a page left without items goes back to the free list.
    pub(super) fn unlink_item(&mut self, t: usize, h: u32, release_empty: bool) -> u16 {
        let hash = hash_key(self.store.key(h));
        let (klen, vlen) = self.store.lens(h);
        let pos = self.store.pos(h);
        if self.store.has_ttl(h) {
            self.remove_ttl(t, h);
        }
        if self.store.is_obj(h) {
            self.free_object(t, h);
        }
        self.tier_on_unlink(t, h, pos);
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
        let (class, chunk, large) = {
            let p = &self.store.pages[pi];
            (p.class, p.chunk, p.large)
        };
        let bytes = (klen + vlen) as u64;
        tn.item_bytes -= bytes;
        if !large {
            tn.charged_bytes -= u64::from(chunk);
        }
        let cc = &mut tn.class_counters[class as usize];
        cc.items -= 1;
        cc.item_bytes -= bytes;
        self.total_items -= 1;
        if large {
            self.free_large(t, pi as u32);
            return class;
        }
        self.store.free_slot(h);
        let page = &mut self.store.pages[pi];
        if page.partial_pos == NIL {
            let partial = tn.classes[class as usize].partial_of_mut(page.tier);
            page.partial_pos = partial.len() as u32;
            partial.push(pi as u32);
        }
        if release_empty && page.live == 0 {
            self.release_page(pi as u32);
        }
        class
    }
}
