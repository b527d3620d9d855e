//! Class-local eviction (`ClassMode::Manual`, memcached-like slabs; `ClassMode::RandomSlab`, Twemcache).

use super::*;

impl Engine {
    /// Switches between Redis-like pool-wide eviction with automatic class rebalancing and
    /// memcached-like class-local eviction ([`ClassMode`]). Items stay where they are.
    pub fn set_class_mode(&mut self, mode: ClassMode) {
        self.class_mode = mode;
    }

    /// The class mode in force.
    pub fn class_mode(&self) -> ClassMode {
        self.class_mode
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
