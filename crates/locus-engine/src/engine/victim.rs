//! Victim choice: which item each eviction policy evicts (Redis's sampled LRU/LFU/TTL/random with its eviction pool, exact LRU, hyperbolic caching), and evicting it.

use super::*;

impl Engine {
    // Eviction policies.

    /// Draws `k` distinct positions in `0..n` uniformly (all of them when `k >= n`) into
    /// `sample_scratch`, in draw order.
    pub(super) fn sample_positions(&mut self, n: usize, k: usize) {
        self.sample_scratch.clear();
        if k >= n {
            self.sample_scratch.extend(0..n as u32);
            return;
        }
        while self.sample_scratch.len() < k {
            let i = self.rng.below(n as u64) as u32;
            if !self.sample_scratch.contains(&i) {
                self.sample_scratch.push(i);
            }
        }
    }

    /// The eviction score of a live item under its pool's policy (larger = evict first).
    pub(super) fn score(&self, t: usize, h: u32, lruclock: u32, now_min: u32) -> u64 {
        let tn = &self.tenants[t];
        match tn.cfg.policy {
            Policy::AllkeysLfu | Policy::VolatileLfu => {
                255 - u64::from(lfu_decr_and_return(
                    self.store.lru(h),
                    now_min,
                    self.cfg.lfu_decay_time,
                ))
            }
            Policy::VolatileTtl => u64::MAX - self.expiry(t, h).unwrap_or(0),
            Policy::AllkeysHyperbolic => {
                let m = tn.hyp.as_ref().map_or(Hyp { born: 0, uses: 1 }, |hy| {
                    hy[self.store.pos(h) as usize]
                });
                let age = self.hyp_now().saturating_sub(m.born) + 1;
                let cost = self.penalty.penalty(t).0.max(1.0);
                // Larger evicts first: the inverse of the priority cost * uses / age. The bits of
                // a positive f64 order like its value, so no resolution is lost: a fixed-point
                // score truncated every item to 0 once costs (µs) exceeded ages (accesses).
                (age as f64 / (f64::from(m.uses.max(1)) * cost)).to_bits()
            }
            _ => self.idle_of(lruclock, self.store.lru(h)),
        }
    }

    /// `evictionPoolPopulate` for one pool: K samples from the pool's keys (volatile: keys with a
    /// TTL) inserted into its eviction pool.
    pub(super) fn populate(&mut self, t: usize, global: bool) {
        let volatile = self.tenants[t].cfg.policy.is_volatile();
        let n = if volatile {
            self.tenants[t].vol.len()
        } else {
            self.tenants[t].all.len()
        };
        let k = self.tenants[t].cfg.samples as usize;
        self.sample_positions(n, k);
        let lruclock = self.lru_clock();
        let now_min = lfu_minutes(self.clock.now_ms());
        for i in 0..self.sample_scratch.len() {
            let pos = self.sample_scratch[i] as usize;
            let tn = &self.tenants[t];
            let h = if volatile { tn.vol[pos] } else { tn.all[pos] };
            let score = self.score(t, h, lruclock, now_min);
            let key = self.store.key(h);
            if global {
                self.shared_evpool.insert_for(score, key, t as u32);
            } else {
                self.tenants[t].evpool.insert_for(score, key, t as u32);
            }
        }
    }

    /// The policy's next victim in pool `t` (not yet evicted).
    pub(super) fn candidate(&mut self, t: usize) -> Option<Candidate> {
        let policy = self.tenants[t].cfg.policy;
        let volatile = policy.is_volatile();
        let n = if volatile {
            self.tenants[t].vol.len()
        } else {
            self.tenants[t].all.len()
        };
        if n == 0 || policy == Policy::NoEviction {
            return None;
        }
        let lruclock = self.lru_clock();
        let now_min = lfu_minutes(self.clock.now_ms());
        match policy {
            Policy::NoEviction => None,
            Policy::AllkeysRandom | Policy::VolatileRandom => {
                let i = self.rng.below(n as u64) as usize;
                let tn = &self.tenants[t];
                let handle = if volatile { tn.vol[i] } else { tn.all[i] };
                let score = self.rng.next_u64();
                Some(Candidate {
                    handle,
                    score,
                    from_evpool: false,
                })
            }
            Policy::AllkeysExactLru => {
                let tn = &self.tenants[t];
                let pos = match &tn.lru {
                    Some(l) => l.tail()?,
                    None => return None,
                };
                let handle = tn.all[pos as usize];
                Some(Candidate {
                    handle,
                    score: self.idle_of(lruclock, self.store.lru(handle)),
                    from_evpool: false,
                })
            }
            _ if self.tenants[t].evpool.size() == 0 => {
                // Textbook K-LRU: the oldest of K distinct samples (first one on ties).
                let k = self.tenants[t].cfg.samples as usize;
                self.sample_positions(n, k);
                let mut best: Option<Candidate> = None;
                for i in 0..self.sample_scratch.len() {
                    let pos = self.sample_scratch[i] as usize;
                    let tn = &self.tenants[t];
                    let h = if volatile { tn.vol[pos] } else { tn.all[pos] };
                    let s = self.score(t, h, lruclock, now_min);
                    if best.is_none_or(|b| s > b.score) {
                        best = Some(Candidate {
                            handle: h,
                            score: s,
                            from_evpool: false,
                        });
                    }
                }
                best
            }
            _ => loop {
                self.populate(t, false);
                // Scan from the right: ghosts (gone, or without TTL for volatile-*) are dropped.
                while let Some(e) = self.tenants[t].evpool.best() {
                    self.key_scratch.clear();
                    self.key_scratch.extend_from_slice(&e.key);
                    let score = e.idle;
                    let hash = hash_key(&self.key_scratch);
                    let store = &self.store;
                    let key = &self.key_scratch;
                    let found = self.tenants[t]
                        .index
                        .find(hash, |&h| store.key(h) == key.as_slice())
                        .copied();
                    match found {
                        Some(h) if !volatile || self.store.has_ttl(h) => {
                            return Some(Candidate {
                                handle: h,
                                score,
                                from_evpool: true,
                            });
                        }
                        _ => self.tenants[t].evpool.pop_best(),
                    }
                }
            },
        }
    }

    pub(super) fn evict_handle(
        &mut self,
        t: usize,
        h: u32,
        reason: EvictionReason,
        release_empty: bool,
    ) {
        if self.control.is_some() {
            self.observe_eviction(t, h);
        }
        self.note_key_event(t, h, super::KeyEventKind::Evicted);
        let ttl = self.store.has_ttl(h);
        let c = self.unlink_item(t, h, release_empty);
        let tn = &mut self.tenants[t];
        tn.counters.evictions.add(reason);
        let cc = &mut tn.class_counters[c as usize];
        cc.evictions.add(reason);
        cc.evicted_ttl += u64::from(ttl);
    }

    pub(super) fn evict_candidate(&mut self, t: usize, cand: Candidate, reason: EvictionReason) {
        if cand.from_evpool {
            self.tenants[t].evpool.pop_best();
        }
        self.evict_handle(t, cand.handle, reason, true);
    }

    /// Evicts one item of pool `t` by its policy.
    pub(super) fn evict_from(&mut self, t: usize, reason: EvictionReason) -> bool {
        match self.candidate(t) {
            Some(c) => {
                self.evict_candidate(t, c, reason);
                true
            }
            None => false,
        }
    }

    /// Free competition. When every evicting pool has the same sampled policy with an eviction
    /// pool, this is Redis with one database per pool: each round samples K keys from every
    /// pool into one shared eviction pool and evicts its best live entry; when they all share a
    /// random policy, pools take turns (Redis's `next_db`). Mixed policies: each pool proposes
    /// its own candidate and the largest score goes (ties: the lowest pool id).
    pub(super) fn evict_coldest(&mut self, reason: EvictionReason) -> bool {
        let mut common: Option<Policy> = None;
        let mut mixed = false;
        for tn in &self.tenants {
            let p = tn.cfg.policy;
            if p == Policy::NoEviction {
                continue;
            }
            let has_pool = tn.cfg.evpool_size > 0 && !p.is_random() && p != Policy::AllkeysExactLru;
            match common {
                None if has_pool || p.is_random() => common = Some(p),
                Some(c) if c == p && (has_pool || p.is_random()) => {}
                _ => mixed = true,
            }
        }
        match common {
            Some(p) if !mixed && p.is_random() => self.evict_round_robin(reason),
            Some(p) if !mixed => {
                // The shared pool is as large as the largest pool size asked for.
                let size = self
                    .tenants
                    .iter()
                    .filter(|tn| tn.cfg.policy != Policy::NoEviction)
                    .map(|tn| tn.cfg.evpool_size as usize)
                    .max()
                    .unwrap_or(0);
                if self.shared_evpool.size() != size {
                    self.shared_evpool = EvPool::new(size);
                }
                self.evict_shared_pool(p.is_volatile(), reason)
            }
            _ => self.evict_best_candidate(reason),
        }
    }

    pub(super) fn evict_round_robin(&mut self, reason: EvictionReason) -> bool {
        let n = self.tenants.len();
        for _ in 0..n {
            self.next_db = (self.next_db + 1) % n;
            let t = self.next_db;
            if self.tenants[t].cfg.policy == Policy::NoEviction {
                continue;
            }
            if self.evict_from(t, reason) {
                return true;
            }
        }
        false
    }

    pub(super) fn evict_shared_pool(&mut self, volatile: bool, reason: EvictionReason) -> bool {
        loop {
            let mut total = 0;
            for t in 0..self.tenants.len() {
                let tn = &self.tenants[t];
                if tn.cfg.policy == Policy::NoEviction {
                    continue;
                }
                let n = if volatile { tn.vol.len() } else { tn.all.len() };
                if n > 0 {
                    self.populate(t, true);
                    total += n;
                }
            }
            if total == 0 {
                return false;
            }
            while let Some(e) = self.shared_evpool.best() {
                let t = e.pool as usize;
                self.key_scratch.clear();
                self.key_scratch.extend_from_slice(&e.key);
                self.shared_evpool.pop_best();
                let hash = hash_key(&self.key_scratch);
                let store = &self.store;
                let key = &self.key_scratch;
                let found = self.tenants.get(t).and_then(|tn| {
                    tn.index
                        .find(hash, |&h| store.key(h) == key.as_slice())
                        .copied()
                });
                if let Some(h) = found.filter(|&h| !volatile || self.store.has_ttl(h)) {
                    self.evict_handle(t, h, reason, true);
                    return true;
                }
            }
        }
    }

    pub(super) fn evict_best_candidate(&mut self, reason: EvictionReason) -> bool {
        let mut best: Option<(usize, Candidate)> = None;
        for t in 0..self.tenants.len() {
            if let Some(c) = self.candidate(t)
                && best.is_none_or(|(_, b)| c.score > b.score)
            {
                best = Some((t, c));
            }
        }
        match best {
            Some((t, c)) => {
                self.evict_candidate(t, c, reason);
                true
            }
            None => false,
        }
    }

    /// Sum of key + value bytes over all tenants.
    pub(super) fn total_item_bytes(&self) -> u64 {
        self.tenants.iter().map(|tn| tn.item_bytes).sum()
    }

    /// Enforces the item-bytes cap after `t` stored or grew an item: evicts (reason `ItemLimit`)
    /// until the sum of key + value bytes fits. The new item may itself be chosen, as with
    /// `max_items`.
    pub(super) fn enforce_byte_cap(&mut self, t: usize) -> bool {
        while let Some(cap) = self.max_item_bytes {
            if self.total_item_bytes() <= cap {
                break;
            }
            if !self.evict_for(t, EvictionReason::ItemLimit) {
                return false;
            }
        }
        true
    }

    /// Enforces the per-tenant and global item caps after `t` added an item.
    pub(super) fn enforce_item_caps(&mut self, t: usize) -> bool {
        while let Some(cap) = self.tenants[t].cfg.max_items {
            if self.tenants[t].all.len() as u64 <= cap {
                break;
            }
            if !self.evict_from(t, EvictionReason::ItemLimit) {
                return false;
            }
        }
        while let Some(cap) = self.cfg.max_items {
            if self.total_items <= cap {
                break;
            }
            if !self.evict_for(t, EvictionReason::ItemLimit) {
                return false;
            }
        }
        true
    }

    /// The value of the recency field for a stored object (Redis: new object, or an overwrite
    /// that keeps the touched LFU counter of the old one).
    pub(super) fn fresh_lru(&mut self, t: usize, old: Option<u32>) -> u32 {
        if self.tenants[t].cfg.policy.is_lfu() {
            let now_min = lfu_minutes(self.clock.now_ms());
            match old {
                Some(h) => lfu_touch(
                    self.store.lru(h),
                    now_min,
                    self.cfg.lfu_decay_time,
                    self.cfg.lfu_log_factor,
                    &mut self.rng,
                ),
                None => lfu_new(now_min),
            }
        } else {
            self.lru_clock()
        }
    }
}
