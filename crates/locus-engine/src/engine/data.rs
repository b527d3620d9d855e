//! The data path: GET, SET (with its conditions and options), DEL, TTL commands and the allocation of a chunk for a new item.

use super::*;

impl Engine {
    // Data path.

    /// GET: a hit touches the item (LRU stamp or LFU increment); expired keys are removed lazily
    /// and count as misses. An object (a hash, list, ...) reads as `None`: see
    /// [`Engine::get_str`] and [`Engine::get_value`].
    pub fn get(&mut self, t: TenantId, key: &[u8]) -> Option<&[u8]> {
        match self.get_value(t, key) {
            Some(ValueRef::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// The value without touching or counting (lazy expiry still applies); `None` for an object.
    pub fn peek(&mut self, t: TenantId, key: &[u8]) -> Option<&[u8]> {
        match self.peek_value(t, key) {
            Some(ValueRef::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// The metadata prefix of a string stored with one ([`Engine::set_with_meta`]) for edits in
    /// place, without touching, counting or telling the controller; lazy expiry still applies.
    /// `None` for a missing key, an object or a string stored without one. For per-item
    /// metadata a protocol keeps beside the value (memcached's fetched and stale bits).
    pub fn peek_meta_mut(&mut self, t: TenantId, key: &[u8]) -> Option<&mut [u8]> {
        let (_, h) = self.lookup_key(t.0 as usize, key, hash_key(key))?;
        if self.store.is_obj(h) || !self.store.has_meta(h) {
            return None;
        }
        Some(&mut self.store.value_mut(h)[..crate::store::META_PREFIX])
    }

    /// A string as GET reads it (touched, counted, seen by the controller), with its metadata
    /// prefix when it was stored with one ([`Engine::set_with_meta`]): `(prefix, value)`.
    /// `None` for a missing key or an object.
    pub fn get_with_meta(&mut self, t: TenantId, key: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
        if !matches!(self.get_value(t, key), Some(ValueRef::Str(_))) {
            return None;
        }
        self.peek_with_meta(t, key)
    }

    /// As [`Engine::get_with_meta`], with the metadata prefix writable in place (its length
    /// stays), in one lookup: a memcached get reads the item and sets its fetched bit.
    pub fn get_with_meta_mut(
        &mut self,
        t: TenantId,
        key: &[u8],
    ) -> Option<(Option<&mut [u8]>, &[u8])> {
        let h = self.get_handle(t, key)?;
        if self.store.is_obj(h) {
            return None;
        }
        let meta = self.store.has_meta(h);
        let raw = self.store.value_mut(h);
        Some(if meta {
            let (m, v) = raw.split_at_mut(crate::store::META_PREFIX);
            (Some(m), &*v)
        } else {
            (None, &*raw)
        })
    }

    /// As [`Engine::get_with_meta`], without touching or counting (lazy expiry still applies).
    pub fn peek_with_meta(&mut self, t: TenantId, key: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
        let (_, h) = self.lookup_key(t.0 as usize, key, hash_key(key))?;
        if self.store.is_obj(h) {
            return None;
        }
        let raw = self.store.raw_value(h);
        Some(if self.store.has_meta(h) {
            let (m, v) = raw.split_at(crate::store::META_PREFIX);
            (Some(m), v)
        } else {
            (None, raw)
        })
    }

    /// Whether the key exists (no touch).
    pub fn exists(&mut self, t: TenantId, key: &[u8]) -> bool {
        self.lookup_key(t.0 as usize, key, hash_key(key)).is_some()
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
        self.set_maybe_meta(t, key, value, opts, false)
    }

    /// SET of a value whose first [`crate::META_PREFIX`] bytes are a protocol's metadata
    /// (memcached's flags and CAS): stored and charged with the value, invisible to every
    /// reader of the value ([`Engine::get`], [`Engine::peek`], ...), read with
    /// [`Engine::get_with_meta`]. A later [`Engine::set`] of the key stores it without.
    ///
    /// # Errors
    /// As [`Engine::set`]; [`EngineError::ItemTooLarge`] too when `value` is shorter than the
    /// prefix.
    pub fn set_with_meta(
        &mut self,
        t: TenantId,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
    ) -> Result<bool, EngineError> {
        if value.len() < crate::store::META_PREFIX {
            return Err(EngineError::ItemTooLarge {
                size: value.len() as u64,
                max: self.max_item_size(),
            });
        }
        self.set_maybe_meta(t, key, value, opts, true)
    }

    fn set_maybe_meta(
        &mut self,
        t: TenantId,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
        meta: bool,
    ) -> Result<bool, EngineError> {
        if self.control_due {
            self.run_controller();
        }
        if self.tier_due() {
            self.run_tier_workers();
        }
        let ti = t.0 as usize;
        // The pool the key goes to: its own, or its penalty class's (`classes`).
        let p = if self.classes_on && self.tenants[ti].group.is_some() {
            self.class_place(ti, key, hash_key(key))
        } else {
            ti
        };
        let mut r = self.set_inner(t, p, key, value, opts, meta);
        if r == Err(EngineError::OutOfMemory) && self.drops_instead_of_refusing(p) {
            r = self.drop_write(t, p, key, value);
        }
        // The controller sees every SET request that was attempted, stored or refused for
        // memory: profilers model the request stream, not what this cache happened to keep.
        if self.control.is_some() && matches!(r, Ok(true) | Err(EngineError::OutOfMemory)) {
            let c = self
                .classes
                .class_for((HDR + key.len()) as u64 + value.len() as u64);
            let size = (key.len() + value.len()) as u32;
            self.observe(p, AccessKind::Set, hash_key(key), size, c);
        }
        r
    }

    /// Whether a write refused for memory is taken and dropped instead: the tenant evicts any key
    /// (`allkeys-*`) but holds none to evict, and no other pool may give it room (a controller's
    /// target of zero pages, as pRedis gives a class whose keys never repeat). A cache then
    /// behaves as if it stored the value and evicted it at once, which is what the partition
    /// means, instead of failing its client's write.
    fn drops_instead_of_refusing(&self, p: usize) -> bool {
        let tn = &self.tenants[p];
        tn.cfg.policy.is_allkeys() && tn.all.is_empty()
    }

    /// Takes a write and evicts it at once (counted as a memory eviction, and recorded for the
    /// `evicted` keyspace event), in pool `ti` of tenant `t`.
    fn drop_write(
        &mut self,
        t: TenantId,
        ti: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<bool, EngineError> {
        let c = self
            .classes
            .class_for((HDR + key.len()) as u64 + value.len() as u64)
            .unwrap_or((self.classes.len() - 1) as u16);
        let tn = &mut self.tenants[ti];
        tn.counters.sets += 1;
        tn.counters.evictions.add(EvictionReason::Memory);
        tn.class_counters[c as usize]
            .evictions
            .add(EvictionReason::Memory);
        if let Some(ev) = self.key_events.as_mut() {
            ev.push(KeyEvent {
                tenant: t,
                key: key.to_vec(),
                kind: KeyEventKind::Evicted,
            });
        }
        Ok(true)
    }

    /// SET of `key` to tenant `t`, stored in its pool `ti` (`t` itself without per-key classes;
    /// a key held by another of `t`'s pools moves to `ti`).
    pub(super) fn set_inner(
        &mut self,
        t: TenantId,
        ti: usize,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
        meta: bool,
    ) -> Result<bool, EngineError> {
        let size = (HDR + key.len()) as u64 + value.len() as u64;
        if key.len() >= crate::store::MAX_KEY_LEN {
            return Err(EngineError::ItemTooLarge {
                size,
                max: self.max_item_size(),
            });
        }
        let (c, large) = self.item_class(size)?;
        self.logical += 1;
        let hash = hash_key(key);
        let found = self.lookup_key(t.0 as usize, key, hash);
        let existing = found.map(|(_, h)| h);
        match opts.cond {
            SetCond::IfAbsent if existing.is_some() => return Ok(false),
            SetCond::IfPresent if existing.is_none() => return Ok(false),
            _ => {}
        }
        let old_exp = found.and_then(|(p, h)| self.expiry(p, h));
        let new_exp = match opts.expire {
            Expire::Keep => old_exp,
            Expire::Persist => None,
            Expire::AtMs(at) => Some(at),
        };
        let now = self.clock.now_ms();
        if new_exp.is_some_and(|at| at <= now) {
            // Redis: a SET whose absolute expiry has passed stores nothing and deletes the key.
            if let Some((p, h)) = found {
                self.unlink_item(p, h, true);
            }
            self.tenants[ti].counters.sets += 1;
            return Ok(true);
        }
        let lru = self.fresh_lru(ti, existing);
        // A value rewritten in place keeps its chunk: same pool and class, neither side large.
        let same_class = found
            .filter(|&(p, _)| p == ti)
            .map(|(_, h)| h)
            .filter(|&h| {
                let p = &self.store.pages[self.store.split(h).0];
                !large && !p.large && p.class == c && !self.store.is_obj(h)
            });
        if let Some(h) = same_class {
            let (_, old_vlen) = self.store.lens(h);
            self.store.rewrite_value(h, value);
            self.store.set_meta_flag(h, meta);
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
            self.tier_on_access(ti, h, false);
            match new_exp {
                Some(at) => self.add_ttl(ti, h, at),
                None if old_exp.is_some() => self.remove_ttl(ti, h),
                None => {}
            }
        } else {
            let h = self.alloc_item(ti, size)?;
            // Allocation may have evicted the old item: look it up again.
            let old = if existing.is_some() {
                self.find_key(t.0 as usize, key, hash)
            } else {
                None
            };
            if let Some((op, o)) = old {
                self.unlink_item(op, o, true);
            }
            self.link_item(ti, h, hash, key, value, lru, new_exp);
            if meta {
                self.store.set_meta_flag(h, true);
            }
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
        if self.tier_due() {
            self.run_tier_workers();
        }
        let hash = hash_key(key);
        let (p, found) = match self.lookup_key(ti, key, hash) {
            Some((p, h)) => {
                self.unlink_item(p, h, true);
                self.tenants[p].counters.deletes += 1;
                (p, true)
            }
            None => (ti, false),
        };
        if self.control.is_some() {
            self.observe(p, AccessKind::Delete, hash, 0, None);
        }
        found
    }

    /// Sets (`Some(at_ms)`) or removes (`None`) a key's TTL. A time already passed deletes the
    /// key (Redis `EXPIREAT` in the past). False when the key does not exist.
    pub fn set_expire(&mut self, t: TenantId, key: &[u8], at_ms: Option<u64>) -> bool {
        let Some((ti, h)) = self.lookup_key(t.0 as usize, key, hash_key(key)) else {
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
        let (ti, h) = self.lookup_key(t.0 as usize, key, hash_key(key))?;
        Some(self.expiry(ti, h))
    }

    /// DBSIZE: items stored (keys past their TTL count until removed, as in Redis).
    pub fn len(&self, t: TenantId) -> u64 {
        let ti = t.0 as usize;
        match &self.tenants[ti].group {
            None => self.tenants[ti].all.len() as u64,
            Some(g) => g
                .members
                .iter()
                .map(|&m| self.tenants[m as usize].all.len() as u64)
                .sum(),
        }
    }

    /// True when the tenant holds no items.
    pub fn is_empty(&self, t: TenantId) -> bool {
        self.len(t) == 0
    }

    /// FLUSHDB for one tenant: every item and page of its pools is released.
    pub fn flush(&mut self, t: TenantId) {
        for p in self.members(t.0 as usize) {
            self.flush_pool(p);
        }
    }

    fn flush_pool(&mut self, ti: usize) {
        self.free_tenant_objects(ti);
        let large: Vec<u32> = self.tenants[ti]
            .all
            .iter()
            .map(|&h| self.store.split(h).0 as u32)
            .filter(|&pg| self.store.pages[pg as usize].large)
            .collect();
        for pg in large {
            self.free_large(ti, pg);
        }
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
        self.note_metadata();
    }

    /// SCAN: returns the next cursor (0 when done) and appends up to about `count` keys to `out`.
    ///
    /// The cursor is a (page, slot) position; an item that moves while it lives (compaction,
    /// a rescuing page move) only moves to a later page, so every key present for the whole
    /// scan is returned at least once (Redis's guarantee). Tier migrations are the exception.
    pub fn scan(&mut self, t: TenantId, cursor: u64, count: usize, out: &mut Vec<Vec<u8>>) -> u64 {
        self.walk(t, cursor, count, |eng, _, h, expired| {
            if !expired {
                out.push(eng.store.key(h).to_vec());
            }
            !expired
        })
    }

    /// One bounded step of a crawl over tenant `t`'s items (memcached's `lru_crawler crawl`):
    /// removes the expired items of the classes `crawled` accepts among about `count` visited
    /// ones, from `cursor` (0 to start) on. Returns the next cursor (0 when done) and how many
    /// items it removed. Each class counts the items the crawl looked at and removed
    /// ([`ClassStats::crawl_checked`], [`ClassStats::crawled`]: memcached's per-class
    /// `crawler_items_checked` and `crawler_reclaimed`).
    pub fn reclaim_expired(
        &mut self,
        t: TenantId,
        cursor: u64,
        count: usize,
        crawled: impl Fn(ClassId) -> bool,
    ) -> (u64, u64) {
        let mut reclaimed = 0;
        let next = self.walk(t, cursor, count, |eng, ti, h, expired| {
            let (pi, _) = eng.store.split(h);
            let class = eng.store.pages[pi].class;
            if !crawled(ClassId(class)) {
                return true;
            }
            eng.tenants[ti].class_counters[class as usize].crawl_checked += 1;
            if expired && !eng.tenants[ti].expiry_held {
                eng.expire_item(ti, h);
                eng.tenants[ti].class_counters[class as usize].crawled += 1;
                reclaimed += 1;
            }
            true
        });
        (next, reclaimed)
    }

    /// Walks tenant `t`'s live items in storage order from `cursor`, calling
    /// `visit(engine, tenant, handle, expired)` on each until it has returned `true` `count`
    /// times (or 64 × `count` items were visited); returns the cursor to resume from, 0 at the
    /// end. `visit` may unlink the item it is given (items never move, so the walk stays valid).
    pub(super) fn walk(
        &mut self,
        t: TenantId,
        cursor: u64,
        count: usize,
        mut visit: impl FnMut(&mut Self, usize, u32, bool) -> bool,
    ) -> u64 {
        let pools: Vec<u32> = self.members(t.0 as usize).map(|p| p as u32).collect();
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
            if pools.contains(&owner) {
                let ti = owner;
                while slot < bump {
                    let h = self.store.handle(pg as u32, slot);
                    slot += 1;
                    visited += 1;
                    if self.store.is_live(h) {
                        let expired = self.expiry(ti as usize, h).is_some_and(|at| at <= now);
                        if visit(self, ti as usize, h, expired) {
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

    pub(super) fn next_page_cursor(&self, pg: usize) -> u64 {
        if pg + 1 >= self.store.pages.len() {
            0
        } else {
            ((pg + 1) as u64) << self.store.slot_bits
        }
    }

    /// RANDOMKEY (expired keys met on the way are removed).
    pub fn random_key(&mut self, t: TenantId) -> Option<Vec<u8>> {
        for _ in 0..100 {
            let n = self.len(t);
            if n == 0 {
                return None;
            }
            // Uniform over the tenant's keys: a position over its pools in turn.
            let mut i = self.rng.below(n);
            let mut ti = t.0 as usize;
            for p in self.members(t.0 as usize) {
                let len = self.tenants[p].all.len() as u64;
                if i < len {
                    ti = p;
                    break;
                }
                i -= len;
            }
            let h = self.tenants[ti].all[i as usize];
            if self
                .expiry(ti, h)
                .is_some_and(|at| at <= self.clock.now_ms())
            {
                if !self.tenants[ti].expiry_held {
                    self.expire_item(ti, h);
                }
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
        let lead = t.0 as usize;
        let fh = hash_key(from);
        // The renamed key stays in `from`'s pool (its penalty class).
        let Some((ti, h)) = self.lookup_key(lead, from, fh) else {
            return Err(EngineError::NoSuchKey);
        };
        if from == to {
            return Ok(!nx);
        }
        let th = hash_key(to);
        if nx && self.lookup_key(lead, to, th).is_some() {
            return Ok(false);
        }
        // With its metadata prefix, if any: the renamed key keeps it.
        let value = self.store.raw_value(h).to_vec();
        let meta = self.store.has_meta(h);
        let exp = self.expiry(ti, h);
        let lru = self.store.lru(h);
        let size = (HDR + to.len() + value.len()) as u64;
        let obj = self.store.is_obj(h);
        if obj {
            // The object stays while its old item goes (unlinked here, or evicted to make room).
            self.keep_object = Some(u32::from_le_bytes([value[0], value[1], value[2], value[3]]));
        }
        let nh = self.alloc_item(ti, size);
        let nh = match nh {
            Ok(nh) => nh,
            Err(e) => {
                if let Some(id) = self.keep_object.take()
                    && self.find_key(lead, from, fh).is_none()
                {
                    // Evicted while room was sought: its object goes too.
                    self.drop_object(ti, id);
                }
                return Err(e);
            }
        };
        if let Some((p, o)) = self.find_key(lead, from, fh) {
            self.unlink_item(p, o, true);
        }
        self.keep_object = None;
        if let Some((p, o)) = self.find_key(lead, to, th) {
            self.unlink_item(p, o, true);
            self.tenants[p].counters.deletes += 1;
        }
        self.link_item(ti, nh, th, to, &value, lru, exp);
        if obj {
            self.store.set_obj_flag(nh);
        }
        if meta {
            self.store.set_meta_flag(nh, true);
        }
        Ok(true)
    }

    /// OBJECT IDLETIME / FREQ and friends (no touch).
    pub fn object_info(&mut self, t: TenantId, key: &[u8]) -> Option<ObjectInfo> {
        let (ti, h) = self.lookup_key(t.0 as usize, key, hash_key(key))?;
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
            value_len: self.store.value(h).len(),
            charged_bytes: u64::from(self.store.pages[pi].chunk) + self.object_charge(h),
            expire_at_ms: self.expiry(ti, h),
        })
    }
}
