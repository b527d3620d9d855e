//! Large items (`EngineConfig::large_items`): an item above the threshold gets an allocation of
//! its own instead of a chunk in a slab page.
//!
//! In a page, a big value takes a chunk of its class (up to one growth factor more than it
//! needs), and one of more than half a page takes the whole page; worse, when memory is full its
//! class can get a page only by emptying the sparsest page of the pool, which is a page of small
//! items (a page holding one big item is always full), so big values crowd small keys out. Out
//! of the pages, a big item costs its size (as the allocator rounds it), an
//! eviction of any item frees memory any size can use, and the budget is shared: pages, the
//! metadata and the large items together stay within `maxmemory`.
//!
//! A large item sits on a page-table entry of its own (`Page::large`: one slot, `chunk` = the
//! item's bytes), so handles, the index, sampling, TTLs and SCAN treat it like any item; it is in
//! no page or class list and not in `pages_used`. Its budget is `large_bytes`, and the pools'
//! views count it in pages (`pool_pages`), so arbiters, caps and controller targets see it.

use super::*;

/// Large items of [`MAPPED`] bytes or more are charged in units of this many bytes.
const LARGE_GRAIN: u64 = 4096;
/// No size class: a large item needs a page of any class back.
const NO_CLASS: u16 = u16::MAX;
/// From this size on an allocation is a mapping of its own (glibc's default threshold).
const MAPPED: u64 = 128 << 10;
/// The largest item the large path stores (header + key + value).
const LARGE_MAX: u64 = 1 << 31;

impl Engine {
    /// Whether an item of `size` bytes (header + key + value) gets its own allocation.
    #[inline]
    pub(super) fn is_large(&self, size: u64) -> bool {
        self.cfg.large_items.is_some_and(|min| size > min)
    }

    /// The largest item (header + key + value) this engine stores.
    pub fn max_item_size(&self) -> u64 {
        if self.cfg.large_items.is_some() {
            self.cfg.maxmemory.min(LARGE_MAX)
        } else {
            self.cfg.page_size
        }
    }

    /// The class an item of `size` bytes is counted in, and whether it is large.
    ///
    /// # Errors
    /// [`EngineError::ItemTooLarge`] above [`Engine::max_item_size`].
    pub(super) fn item_class(&self, size: u64) -> Result<(u16, bool), EngineError> {
        let too_large = || EngineError::ItemTooLarge {
            size,
            max: self.max_item_size(),
        };
        if self.is_large(size) {
            if size > LARGE_MAX {
                return Err(too_large());
            }
            if size > self.cfg.maxmemory {
                // Larger than the whole budget: Redis's OOM error, and nothing is evicted for it.
                return Err(EngineError::OutOfMemory);
            }
            // Counted in the class its size falls in (the page-sized class above a page).
            let c = self
                .classes
                .class_for(size)
                .unwrap_or((self.classes.len() - 1) as u16);
            return Ok((c, true));
        }
        self.classes
            .class_for(size)
            .map(|c| (c, false))
            .ok_or_else(too_large)
    }

    /// A handle for a new item of `size` bytes in tenant `t`: a chunk, or a large item's own
    /// allocation.
    pub(super) fn alloc_item(&mut self, t: usize, size: u64) -> Result<u32, EngineError> {
        match self.item_class(size)? {
            (c, false) => self.alloc_chunk(t, c),
            (c, true) if self.large_id_available() => self.alloc_large(t, size, c),
            // Out of page-table ids (a huge maxmemory of small pages): a page's chunk, if any
            // class holds it.
            (_, true) => match self.classes.class_for(size) {
                Some(c) => self.alloc_chunk(t, c),
                None => Err(EngineError::OutOfMemory),
            },
        }
    }

    /// Whether a large item can get a page-table id without taking one that a page the budget
    /// allows would need.
    fn large_id_available(&self) -> bool {
        // Ids in use are the pages' and the large items'; every page the budget allows must
        // still find one.
        let free = (self.free_no_buf.len() + self.free_with_buf.len()) as u64;
        let large_items = self.store.pages.len() as u64 - free - self.pages_used;
        large_items + 1 + self.pages_total.max(self.pages_used) <= self.max_page_ids
    }

    /// What a large item of `size` bytes costs the budget: as the allocator hands it out, in
    /// 16-byte steps plus a 16-byte header below 128 KiB, in whole 4 KiB pages (a mapping of
    /// its own) from there.
    pub(super) fn large_charge(size: u64) -> u64 {
        if size < MAPPED {
            (size + 16).div_ceil(16) * 16
        } else {
            size.div_ceil(LARGE_GRAIN) * LARGE_GRAIN
        }
    }

    /// Pages' worth of budget the large items hold.
    #[inline]
    pub(super) fn large_pages(&self) -> u64 {
        self.large_bytes.div_ceil(self.cfg.page_size)
    }

    /// A pool's size in pages as arbiters and controllers see it: its pages and its large items.
    pub(super) fn pool_pages(&self, t: usize) -> u64 {
        let tn = &self.tenants[t];
        tn.pages.len() as u64 + tn.large_bytes.div_ceil(self.cfg.page_size)
    }

    /// Bytes of the budget in use: pages, the metadata's pages and the large items.
    pub(super) fn budget_used(&self) -> u64 {
        (self.pages_used + self.meta_pages) * self.cfg.page_size + self.large_bytes
    }

    /// Makes room for `charge` bytes outside the pages for tenant `t` (a large item, an object's
    /// growth): within the tenant's cap (evicting its own items) and the budget, as
    /// [`Engine::alloc_large`] describes.
    pub(super) fn make_room_outside(&mut self, t: usize, charge: u64) -> Result<(), EngineError> {
        let ps = self.cfg.page_size;
        let cap = self.tenants[t].cfg.max_bytes.unwrap_or(u64::MAX);
        if charge > self.cfg.maxmemory.min(cap) {
            // More than the budget or the tenant's cap could ever hold: refused before anything
            // is evicted for it.
            return Err(EngineError::OutOfMemory);
        }
        if self.meta_pages > 0 {
            self.enforce_metadata_budget(t);
        }
        let mut fruitless = 0u32;
        loop {
            let tn = &self.tenants[t];
            let own = tn.pages.len() as u64 * ps + tn.large_bytes + charge;
            if tn.cfg.max_bytes.is_some_and(|m| own > m) {
                // Over the tenant's own cap: only its own items can make room.
                if tn.cfg.policy != Policy::NoEviction && self.evict_from(t, EvictionReason::Memory)
                {
                    continue;
                }
                return Err(EngineError::OutOfMemory);
            }
            if self.budget_used() + charge <= self.cfg.maxmemory {
                break;
            }
            if let Some(pg) = self.empty_page_anywhere() {
                let from = self.page_owner(pg);
                self.release_page(pg);
                self.record_page_event(pg, from, None, EvictionReason::PageReclaim, 0);
                continue;
            }
            // Free chunks a class could do without a page for: its items move, a page goes.
            if self.compact_one(t) {
                continue;
            }
            // Evict, by the policy and the arbiter, while the items (chunks, large items,
            // metadata) plus a page per class in use do not leave room: compaction keeps each
            // class under a page of free chunks, so past that point the room is there, only
            // scattered, and a page is taken back instead.
            let logical = self.tenants.iter().map(|tn| tn.charged_bytes).sum::<u64>()
                + self.large_bytes
                + self.meta_pages * ps;
            let scattered = self
                .tenants
                .iter()
                .map(|tn| tn.classes.iter().filter(|cp| cp.pages > 0).count() as u64)
                .sum::<u64>()
                * ps;
            if logical + charge + scattered > self.cfg.maxmemory
                && fruitless < FRUITLESS_EVICTIONS
                && self.evict_for(t, EvictionReason::Memory)
            {
                fruitless += 1;
                continue;
            }
            // Evictions free chunks, not pages: the emptiest page of a pool the arbiter lets `t`
            // take from (floors hold; noeviction and volatile-* pools give only empty pages).
            if let Some(pg) = self.pick_reclaim_page(t, NO_CLASS, true) {
                self.shrink_page(pg);
                fruitless = 0;
                continue;
            }
            if self.evict_for(t, EvictionReason::Memory) {
                continue;
            }
            return Err(EngineError::OutOfMemory);
        }
        Ok(())
    }

    /// Makes room for and allocates a large item of `size` bytes (class `c` for the counters):
    /// within the tenant's cap (evicting its own items) and the budget: releasing empty pages,
    /// compacting classes, evicting as the policy and the arbiter decide while the items need
    /// more than the budget, and when the free space is scattered in pages no class can spare,
    /// emptying the sparsest page a pool may lose.
    fn alloc_large(&mut self, t: usize, size: u64, c: u16) -> Result<u32, EngineError> {
        let charge = Self::large_charge(size);
        self.make_room_outside(t, charge)?;
        let pg = match self.free_no_buf.pop() {
            Some(pg) => pg,
            None => {
                self.store.pages.push(Page::empty());
                (self.store.pages.len() - 1) as u32
            }
        };
        let page = &mut self.store.pages[pg as usize];
        page.buf = crate::region::PageBuf::zeroed(size as usize);
        page.owner = t as u32;
        page.class = c;
        page.chunk = size as u32;
        page.slots = 1;
        page.live = 0;
        page.bump = 0;
        page.free_head = NIL;
        page.pool_pos = NIL;
        page.partial_pos = NIL;
        page.class_pos = NIL;
        page.large = true;
        let slot = self.store.take_slot(pg);
        self.large_bytes += charge;
        self.tenants[t].large_bytes += charge;
        // Spare page buffers beyond what the budget now leaves for pages go back.
        self.trim_buffers();
        self.note_metadata();
        Ok(self.store.handle(pg, slot))
    }

    /// Frees a large item's allocation (its item already unlinked) and its page-table entry.
    pub(super) fn free_large(&mut self, t: usize, pg: u32) {
        let page = &mut self.store.pages[pg as usize];
        locus_common::strict_assert!(page.large, "freeing a page that is not a large item");
        let charge = Self::large_charge(page.buf.len() as u64);
        *page = Page::empty();
        self.large_bytes -= charge;
        self.tenants[t].large_bytes -= charge;
        self.free_no_buf.push(pg);
    }

    /// A page owned by some pool that holds no item (kept by its class for reuse).
    pub(super) fn empty_page_anywhere(&self) -> Option<u32> {
        self.tenants.iter().find_map(|tn| {
            tn.pages
                .iter()
                .copied()
                .find(|&pg| self.store.pages[pg as usize].live == 0)
        })
    }

    /// Compaction, as memcached's slab mover does it: in a class of a pool the arbiter lets `t`
    /// take from (`t` first) whose free chunks add up to a whole page, the items of its sparsest
    /// page move to free chunks of its other pages, and the emptied page goes back to the free
    /// list. Nothing is evicted. False when no class has that much free.
    pub(super) fn compact_one(&mut self, t: usize) -> bool {
        self.refresh_views();
        for r in super::pages::requester_first(t, self.tenants.len()) {
            let view = ArbiterView {
                pools: &self.views,
                pages_used: self.pages_used,
                pages_total: self.pages_total,
                page_size: self.cfg.page_size,
            };
            if r != t
                && !self
                    .arbiter
                    .may_reclaim_from(&view, PoolId(t as u32), PoolId(r as u32))
            {
                continue;
            }
            if self.compact_a_class(r, |slots| slots) {
                return true;
            }
        }
        false
    }

    /// Empties one page of the first class of pool `t` (two pages or more) whose free chunks
    /// number at least `min_free(chunks per page)` ([`Engine::compact_class`]). False when none
    /// could be.
    pub(super) fn compact_a_class(&mut self, t: usize, min_free: impl Fn(u64) -> u64) -> bool {
        (0..self.classes.len() as u16).any(|c| {
            self.tenants[t].classes[c as usize].pages >= 2
                && self.class_free_chunks(t, c) >= min_free(u64::from(self.classes.slots(c)))
                && self.compact_class(t, c)
        })
    }

    /// Free chunks on the pages of (t, c) that have any.
    pub(super) fn class_free_chunks(&self, t: usize, c: u16) -> u64 {
        self.tenants[t].classes[c as usize]
            .partial
            .iter()
            .map(|&pg| {
                let p = &self.store.pages[pg as usize];
                u64::from(p.slots - p.live)
            })
            .sum()
    }

    /// Moves the live items of page `pg` of (t, c) to free chunks of the class's pages after it
    /// while there are any (each counted as rescued; see [`Engine::compaction_victim`] for the
    /// order). Returns how many moved and whether the page is now empty.
    pub(super) fn rescue_items(&mut self, t: usize, c: u16, pg: u32) -> (u64, bool) {
        let mut moved = 0;
        for slot in 0..self.store.pages[pg as usize].bump {
            let h = self.store.handle(pg, slot);
            if !self.store.is_live(h) {
                continue;
            }
            let Some(nh) = self.take_chunk_after(t, c, pg) else {
                return (moved, false);
            };
            self.relocate(t, h, nh);
            self.tenants[t].class_counters[c as usize].rescued += 1;
            moved += 1;
        }
        (moved, true)
    }

    /// Empties a page of (t, c) ([`Engine::compaction_victim`]) into free chunks of the class's
    /// later pages and releases it. False when no page's items fit there.
    pub(super) fn compact_class(&mut self, t: usize, c: u16) -> bool {
        let Some(victim) = self.compaction_victim(t, c) else {
            return false;
        };
        if !self.rescue_items(t, c, victim).1 {
            locus_common::strict_assert!(false, "compaction ran out of free chunks");
            return false;
        }
        let from = self.page_owner(victim);
        self.release_page(victim);
        self.record_page_event(victim, from, None, EvictionReason::PageReclaim, 0);
        true
    }

    /// A free chunk of (t, c) on a page after `after` in page order.
    fn take_chunk_after(&mut self, t: usize, c: u16, after: u32) -> Option<u32> {
        let partial = &self.tenants[t].classes[c as usize].partial;
        let pg = partial.iter().rev().copied().find(|&pg| pg > after)?;
        let slot = self.store.take_slot(pg);
        if !self.store.pages[pg as usize].has_free() {
            let pos = self.store.pages[pg as usize].partial_pos as usize;
            let partial = &mut self.tenants[t].classes[c as usize].partial;
            partial.swap_remove(pos);
            if let Some(&moved) = partial.get(pos) {
                self.store.pages[moved as usize].partial_pos = pos as u32;
            }
            self.store.pages[pg as usize].partial_pos = NIL;
        }
        Some(self.store.handle(pg, slot))
    }

    /// The page of (t, c) to empty by moving its items: the sparsest of those whose items fit
    /// in the free chunks of the class's pages after it. SCAN and crawl cursors walk pages in
    /// that order, so an item only moves ahead of a cursor, never behind one that passed its
    /// place: a key present for a whole SCAN is still returned at least once.
    pub(super) fn compaction_victim(&self, t: usize, c: u16) -> Option<u32> {
        let mut pages = self.tenants[t].classes[c as usize].list.clone();
        pages.sort_unstable();
        let mut free_after = 0u64;
        let mut best: Option<(u32, u64)> = None;
        for &pg in pages.iter().rev() {
            let p = &self.store.pages[pg as usize];
            let live = u64::from(p.live);
            if live <= free_after && best.is_none_or(|(_, l)| live < l) {
                best = Some((pg, live));
            }
            free_after += u64::from(p.slots - p.live);
        }
        best.map(|(pg, _)| pg)
    }

    /// Moves live item `h` of pool `t` into the free chunk `nh` of the same class: its bytes
    /// (recency and frequency live in its header), its index entry, its dense position and its
    /// TTL entry follow; the old chunk is freed.
    pub(super) fn relocate(&mut self, t: usize, h: u32, nh: u32) {
        let (klen, vlen) = self.store.lens(h);
        let len = HDR + klen + vlen;
        let ((op, os), (np, ns)) = (self.store.split(h), self.store.split(nh));
        let from = os * self.store.pages[op].chunk as usize;
        let to = ns * self.store.pages[np].chunk as usize;
        let mut bytes = std::mem::take(&mut self.key_scratch);
        bytes.clear();
        bytes.extend_from_slice(&self.store.pages[op].buf[from..from + len]);
        self.store.pages[np].buf[to..to + len].copy_from_slice(&bytes);
        let hash = hash_key(&bytes[HDR..HDR + klen]);
        self.key_scratch = bytes;
        let pos = self.store.pos(nh) as usize;
        let tn = &mut self.tenants[t];
        tn.all[pos] = nh;
        match tn.index.find_mut(hash, |&x| x == h) {
            Some(slot) => *slot = nh,
            None => locus_common::strict_assert!(false, "relocated item missing from its index"),
        }
        if self.store.has_ttl(nh)
            && let Some(e) = tn.expires.remove(&h)
        {
            tn.vol[e.vpos as usize] = nh;
            tn.expires.insert(nh, e);
        }
        self.store.free_slot(h);
        let page = &mut self.store.pages[op];
        if page.partial_pos == NIL {
            let partial = tn.classes[page.class as usize].partial_of_mut(page.tier);
            page.partial_pos = partial.len() as u32;
            partial.push(op as u32);
        }
    }
}
