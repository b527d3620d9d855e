//! Class-local eviction (`ClassMode::Manual`, memcached-like slabs; `ClassMode::RandomSlab`, Twemcache).

use super::*;

impl Engine {
    /// Switches between Redis-like pool-wide eviction with automatic class rebalancing and
    /// memcached-like class-local eviction ([`ClassMode`]). Items stay where they are.
    pub fn set_class_mode(&mut self, mode: ClassMode) {
        self.class_mode = mode;
    }

    /// The engine's class mode (pools without one of their own follow it).
    pub fn class_mode(&self) -> ClassMode {
        self.class_mode
    }

    /// Gives tenant `t`'s pool a class mode of its own (`None`: follow the engine's), so one
    /// engine can serve memcached-like pools (class-local eviction, pages moved by a slab
    /// controller) next to Redis-like ones. Items stay where they are.
    pub fn set_tenant_class_mode(&mut self, t: TenantId, mode: Option<ClassMode>) {
        self.tenants[t.0 as usize].class_mode = mode;
    }

    /// memcached's rule that a class always gets its first page, for tenant `t`'s pool in a
    /// class-local mode: when memory is full and one of its classes has no page, that class
    /// takes the emptiest page of another of the pool's classes (its items evicted, as a slab
    /// move does), or, when the pool holds only large items, one of them is evicted to make
    /// the page's budget. Only the pool's own memory is used. Off by default (the simulator's
    /// slab experiments model memcached without it).
    pub fn set_tenant_first_page(&mut self, t: TenantId, on: bool) {
        self.tenants[t.0 as usize].first_page = on;
    }

    /// memcached's automover giving memory back, for tenant `t`'s pool in a class-local mode:
    /// at each [`Engine::tick`], a class whose free chunks add up to more than
    /// [`GIVE_BACK_FREE_PAGES`] pages (deleted or expired items leave holes in its pages) has
    /// a page emptied into the free chunks of its later pages (the sparsest page whose items
    /// fit there, [`Engine::compaction_victim`]: the items move, nothing is evicted) and the
    /// page goes back to the free pages, where any class (or pool, as the arbiter allows) can
    /// take it. One page per pool per tick. Off by default (the simulator's slab experiments
    /// model memcached without it).
    pub fn set_tenant_gives_back_free_pages(&mut self, t: TenantId, on: bool) {
        self.tenants[t.0 as usize].gives_back_free = on;
    }

    /// One step of [`Engine::set_tenant_gives_back_free_pages`] for every pool that has it on:
    /// pages given back.
    pub(super) fn give_back_free_pages(&mut self) -> u64 {
        if self.tiers.is_some() {
            return 0;
        }
        let mut given = 0;
        for t in 0..self.tenants.len() {
            if self.tenants[t].gives_back_free
                && self.class_mode_of(t) != ClassMode::Auto
                && self.compact_a_class(t, |slots| GIVE_BACK_FREE_PAGES * slots + 1)
            {
                given += 1;
            }
        }
        given
    }

    /// The class mode in force for tenant `t`'s pool.
    pub fn tenant_class_mode(&self, t: TenantId) -> ClassMode {
        self.class_mode_of(t.0 as usize)
    }

    #[inline]
    pub(super) fn class_mode_of(&self, t: usize) -> ClassMode {
        self.tenants[t].class_mode.unwrap_or(self.class_mode)
    }

    /// Evicts one item of class `c` in pool `t`: K live items sampled uniformly by page and slot
    /// (pages of one class have equal slot counts, so this is uniform over the class's chunks,
    /// with dead chunks rejected), the one with the largest eviction score under the pool's
    /// policy goes (random policies: the first). False when the class holds no item.
    pub(super) fn evict_in_class(&mut self, t: usize, c: u16, reason: EvictionReason) -> bool {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::VirtualClock;

    use crate::{ClassMode, Engine, EngineConfig, SetOptions, TenantConfig};

    #[test]
    fn a_pool_can_have_its_own_class_mode() {
        let cfg = EngineConfig {
            maxmemory: 8 << 12,
            page_size: 4 << 10,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(cfg, Arc::new(VirtualClock::new(0))).unwrap();
        let a = e.add_tenant(TenantConfig::new("a")).unwrap();
        let b = e.add_tenant(TenantConfig::new("b")).unwrap();
        e.set_tenant_class_mode(b, Some(ClassMode::Manual));
        assert_eq!(e.tenant_class_mode(a), ClassMode::Auto);
        assert_eq!(e.tenant_class_mode(b), ClassMode::Manual);
        // b's small items take every page; its large class has none and may not take one.
        for i in 0..2000 {
            let _ = e.set(
                b,
                format!("s{i}").as_bytes(),
                &[0; 8],
                SetOptions::default(),
            );
        }
        assert!(e.set(b, b"big", &[0; 1500], SetOptions::default()).is_err());
        // a (automatic mode) takes pages back for its own large item.
        assert!(e.set(a, b"big", &[0; 1500], SetOptions::default()).is_ok());
        e.set_tenant_class_mode(b, None);
        assert_eq!(e.tenant_class_mode(b), ClassMode::Auto);
        assert!(e.set(b, b"big", &[0; 1500], SetOptions::default()).is_ok());
        e.check_invariants();
    }

    fn manual_engine(large_items: Option<u64>) -> (Engine, crate::TenantId, crate::TenantId) {
        let cfg = EngineConfig {
            maxmemory: 16 << 12,
            page_size: 4 << 10,
            large_items,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(cfg, Arc::new(VirtualClock::new(0))).unwrap();
        let a = e.add_tenant(TenantConfig::new("a")).unwrap();
        let b = e.add_tenant(TenantConfig::new("b")).unwrap();
        for t in [a, b] {
            e.set_tenant_class_mode(t, Some(ClassMode::Manual));
            e.set_tenant_first_page(t, true);
        }
        (e, a, b)
    }

    #[test]
    fn a_class_gets_its_first_page_from_its_own_pool() {
        let (mut e, a, b) = manual_engine(None);
        // a fills half the memory with small items, b the other half.
        for i in 0..3000 {
            let _ = e.set(
                a,
                format!("a{i}").as_bytes(),
                &[1; 8],
                SetOptions::default(),
            );
            let _ = e.set(
                b,
                format!("b{i}").as_bytes(),
                &[2; 8],
                SetOptions::default(),
            );
        }
        let before_b = e.tenant_stats(b).items;
        let pages_b = e.tenant_stats(b).pages;
        // A new size in a: its class gets a page, taken from a's small class, not from b.
        assert!(e.set(a, b"big", &[0; 1500], SetOptions::default()).is_ok());
        assert_eq!(e.get(a, b"big").map(<[u8]>::len), Some(1500));
        assert_eq!(e.tenant_stats(b).items, before_b);
        assert_eq!(e.tenant_stats(b).pages, pages_b);
        e.check_invariants();
        // Without the rule (memcached-like calcification), a new size is refused.
        e.set_tenant_first_page(b, false);
        assert!(e.set(b, b"big", &[0; 1500], SetOptions::default()).is_err());
        e.check_invariants();
    }

    #[test]
    fn a_classs_surplus_free_memory_goes_back_and_another_class_takes_it() {
        let (mut e, a, b) = manual_engine(None);
        // a fills all the memory with items of one class (b holds nothing).
        let mut stored = Vec::new();
        for i in 0..100_000 {
            let k = format!("a{i:05}");
            if e.set(a, k.as_bytes(), &[1; 100], SetOptions::default())
                .is_err()
            {
                break;
            }
            stored.push(k);
            if e.tenant_stats(a).evictions > 0 {
                break;
            }
        }
        let live: Vec<String> = stored
            .into_iter()
            .filter(|k| e.get(a, k.as_bytes()).is_some())
            .collect();
        // Every other item goes: about half of each page is free, no page is empty.
        for k in live.iter().step_by(2) {
            assert!(e.delete(a, k.as_bytes()));
        }
        let kept: Vec<&String> = live.iter().skip(1).step_by(2).collect();
        let pages = e.tenant_stats(a).pages;
        // Off: a tick gives nothing back.
        e.tick();
        assert_eq!(e.tenant_stats(a).pages, pages);
        e.set_tenant_gives_back_free_pages(a, true);
        for _ in 0..pages {
            e.tick();
            e.check_invariants();
        }
        let after = e.tenant_stats(a).pages;
        // Pages were emptied until at most GIVE_BACK_FREE_PAGES pages' worth of holes remain.
        assert!(after < pages && after >= pages / 2, "{pages} -> {after}");
        let c = e.class_stats(a).into_iter().find(|c| c.items > 0).unwrap();
        let slots = c.chunks / c.pages;
        assert!(
            c.chunks - c.items <= crate::GIVE_BACK_FREE_PAGES * slots,
            "{c:?}"
        );
        assert!(c.rescued > 0, "{c:?}");
        // Nothing was evicted by it: every item kept is still there, with its value.
        for k in &kept {
            assert_eq!(e.get(a, k.as_bytes()), Some(&[1; 100][..]), "{k}");
        }
        // The freed pages serve another class (here another pool's) without evicting a's items.
        let evicted = e.tenant_stats(a).evictions;
        for i in 0..((pages - after) * 2) {
            assert!(
                e.set(
                    b,
                    format!("b{i}").as_bytes(),
                    &[2; 1000],
                    SetOptions::default()
                )
                .is_ok()
            );
        }
        assert_eq!(e.tenant_stats(a).evictions, evicted);
        e.check_invariants();
    }

    #[test]
    fn a_scan_across_a_give_back_returns_every_key_that_stayed() {
        let (mut e, a, _b) = manual_engine(None);
        let keys: Vec<String> = (0..160).map(|i| format!("a{i:03}")).collect();
        for k in &keys {
            e.set(a, k.as_bytes(), &[1; 200], SetOptions::default())
                .unwrap();
        }
        for k in keys.iter().step_by(2) {
            assert!(e.delete(a, k.as_bytes()));
        }
        e.set_tenant_gives_back_free_pages(a, true);
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        let mut cursor = 0;
        let mut gave = 0;
        loop {
            cursor = e.scan(a, cursor, 4, &mut out);
            seen.extend(out.drain(..));
            // Items move while the scan is half-way: a page is emptied each time.
            gave += e.give_back_free_pages();
            if cursor == 0 {
                break;
            }
        }
        assert!(gave > 0);
        for k in keys.iter().skip(1).step_by(2) {
            assert!(seen.contains(k.as_bytes()), "{k} missed by the scan");
        }
        e.check_invariants();
    }

    #[test]
    fn a_rescuing_page_move_evicts_only_what_finds_no_free_chunk() {
        let (mut e, a, _b) = manual_engine(None);
        let keys: Vec<String> = (0..120).map(|i| format!("a{i:03}")).collect();
        for k in &keys {
            e.set(a, k.as_bytes(), &[1; 300], SetOptions::default())
                .unwrap();
        }
        let c = e.class_stats(a)[0].class;
        assert!(e.class_stats(a)[0].pages >= 4);
        // A third of the items go: the other pages have room for a page's items.
        for k in keys.iter().step_by(3) {
            assert!(e.delete(a, k.as_bytes()));
        }
        let pool = e.pool_of(a);
        let other = crate::ClassId(c.0 + 3);
        let (rescued, evicted) = e.move_page_rescuing((pool, c), (pool, other)).unwrap();
        assert!(rescued > 0 && evicted == 0, "{rescued} {evicted}");
        for (i, k) in keys.iter().enumerate() {
            let want = (i % 3 != 0).then_some(&[1u8; 300][..]);
            assert_eq!(e.get(a, k.as_bytes()), want, "{k}");
        }
        e.check_invariants();
        // Full again: a move now evicts the page's items that find no room.
        for i in 0..200 {
            let _ = e.set(
                a,
                format!("f{i}").as_bytes(),
                &[2; 300],
                SetOptions::default(),
            );
        }
        let (_, evicted) = e.move_page_rescuing((pool, c), (pool, other)).unwrap();
        assert!(evicted > 0);
        e.check_invariants();
    }

    #[test]
    fn a_class_gets_its_first_page_after_large_items_filled_memory() {
        let (mut e, a, _b) = manual_engine(Some(512));
        // Large items (outside the pages) take the whole budget.
        let mut stored = 0;
        for i in 0..40 {
            if e.set(
                a,
                format!("L{i}").as_bytes(),
                &[3; 3000],
                SetOptions::default(),
            )
            .is_ok()
            {
                stored += 1;
            }
        }
        assert!(stored > 10);
        // A small item's class has no page and none is free: a large item makes room.
        assert!(e.set(a, b"small", b"hi", SetOptions::default()).is_ok());
        assert_eq!(e.get(a, b"small"), Some(&b"hi"[..]));
        e.check_invariants();
    }
}
