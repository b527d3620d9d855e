//! Shadow queues and recency stacks with O(log N) reuse distances (MemSweeper §2.2 and §3.1,
//! Cliffhanger's shadow queues), shared by `memsweeper-*` and `memshare`.
//!
//! A *shadow queue* holds the keys (hash and size, never the value) a pool evicted, in eviction
//! order. A GET miss on a shadowed key would have been a hit in a larger cache: how much larger is
//! its *reuse distance beyond the cache*, the bytes evicted since it (itself included, keys that
//! came back into the cache excluded). MemSweeper keeps these keys in an AVL tree whose nodes count
//! their older descendants; here the same order statistic comes from a Fenwick tree over logical
//! timestamps kept in a ring ([`ReuseQueue`]):
//!
//! ```text
//!  seq (logical time of insertion):   tail ............................ head
//!  ring slot = seq mod cap:           [k7 40B][ -- ][k9 60B][k2 52B][k5 48B]   (-- = left)
//!  fenwick over slots:                 sizes of live entries, 0 elsewhere
//!  index: key hash -> seq
//!  distance(k9) = bytes in [seq(k9), head) = 60 + 52 + 48 = 160 B     (two prefix sums)
//! ```
//!
//! Every operation is O(log cap) (amortised: when the ring's window is full of live and dead
//! slots it is compacted, and at least half of it was dead). Memory is bounded by `max_entries`
//! (the ring grows by doubling up to `2 × max_entries` slots of 16 B, plus a Fenwick node of 8 B
//! per slot and the hash index) and optionally by `max_bytes` of shadowed items; the oldest
//! entries fall off first.
//! The same structure, fed with every access of a spatially sampled subset of keys and cleared of
//! evicted keys, is a *recency stack*: the distance of a GET hit is the item's LRU position in the
//! cache (MemSweeper's "hits on each page of the main queue"). The sample has a fixed budget of
//! keys ([`AdaptiveFilter`], SHARDS fixed-size): a pool of 50 keys is followed whole, one of
//! 100 M keys through about `recency_keys` of them.
//!
//! [`PoolShadows`] keeps both per pool plus decayed histograms of the distances ([`LogHist`]);
//! the controllers turn them into hits per page at decision time ([`PoolShadows::page_hits`]).

use locus_mrc::sampling::{AdaptiveFilter, U64Map};

use locus_engine::control::{Access, AccessKind, Evicted};

/// Keys in logical-time order with their sizes; reuse distance = bytes at or after a key.
#[derive(Debug, Clone)]
pub(crate) struct ReuseQueue {
    /// Ring of (key hash, size, live), slot = seq mod ring.len().
    ring: Vec<(u64, u32, bool)>,
    /// 1-based Fenwick tree over ring slots: sizes of live entries.
    tree: Vec<i64>,
    index: U64Map<u64>,
    /// Oldest seq still in the window (entries below are gone).
    tail: u64,
    /// Next seq to assign.
    head: u64,
    live_bytes: u64,
    max_entries: usize,
    max_bytes: u64,
}

const INITIAL_SLOTS: usize = 1024;

impl ReuseQueue {
    /// An empty queue holding at most `max_entries` keys (at least 1) and `max_bytes` bytes.
    pub(crate) fn new(max_entries: usize, max_bytes: u64) -> Self {
        let max_entries = max_entries.max(1);
        let slots = INITIAL_SLOTS.min(max_entries.saturating_mul(2));
        ReuseQueue {
            ring: vec![(0, 0, false); slots],
            tree: vec![0; slots + 1],
            index: U64Map::default(),
            tail: 0,
            head: 0,
            live_bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    /// Live keys.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Bytes of live keys.
    pub(crate) fn bytes(&self) -> u64 {
        self.live_bytes
    }

    #[cfg(test)]
    /// Whether `key` is in the queue.
    pub(crate) fn contains(&self, key: u64) -> bool {
        self.index.contains_key(&key)
    }

    /// Changes the byte bound (dropping the oldest entries if now over it).
    pub(crate) fn set_max_bytes(&mut self, max_bytes: u64) {
        self.max_bytes = max_bytes;
        self.trim();
    }

    fn slot(&self, seq: u64) -> usize {
        (seq % self.ring.len() as u64) as usize
    }

    fn add(&mut self, slot: usize, delta: i64) {
        let mut i = slot + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over slots `0..slot`.
    fn prefix(&self, slot: usize) -> i64 {
        let mut i = slot;
        let mut s = 0;
        while i > 0 {
            s += self.tree[i];
            i &= i - 1;
        }
        s
    }

    /// Bytes of live entries with seq in `[lo, head)` (`tail <= lo < head`).
    fn bytes_from(&self, lo: u64) -> u64 {
        let len = self.head - lo;
        if len == 0 {
            return 0;
        }
        let cap = self.ring.len() as u64;
        if len >= cap {
            return self.live_bytes;
        }
        let (a, b) = (self.slot(lo), self.slot(self.head));
        let s = if a < b {
            self.prefix(b) - self.prefix(a)
        } else {
            // Wrapped: everything except the slots [b, a), which lie outside the window.
            self.live_bytes as i64 - (self.prefix(a) - self.prefix(b))
        };
        s as u64
    }

    /// Removes the entry at `seq` (which must be live).
    fn kill(&mut self, seq: u64) {
        let slot = self.slot(seq);
        let (_, size, live) = self.ring[slot];
        debug_assert!(live, "killing a dead slot");
        self.ring[slot].2 = false;
        self.add(slot, -i64::from(size));
        self.live_bytes -= u64::from(size);
    }

    /// Drops the oldest window slot (live or not).
    fn pop_oldest(&mut self) {
        let slot = self.slot(self.tail);
        let (key, _, live) = self.ring[slot];
        if live {
            self.kill(self.tail);
            self.index.remove(&key);
        }
        self.tail += 1;
    }

    fn trim(&mut self) {
        while self.live_bytes > self.max_bytes && self.tail < self.head {
            self.pop_oldest();
        }
        // Dead slots at the tail cost nothing to skip later, but keep the window tight.
        while self.tail < self.head && !self.ring[self.slot(self.tail)].2 {
            self.tail += 1;
        }
    }

    /// Rebuilds the ring with `slots` slots, renumbering the live entries `0..len` in order
    /// (dropping the dead slots between them).
    fn rebuild(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.ring, vec![(0, 0, false); slots]);
        let old_len = old.len() as u64;
        let mut seq = 0u64;
        for s in self.tail..self.head {
            let e = old[(s % old_len) as usize];
            if e.2 {
                self.ring[seq as usize] = e;
                self.index.insert(e.0, seq);
                seq += 1;
            }
        }
        self.tail = 0;
        self.head = seq;
        // O(n) Fenwick build.
        self.tree = vec![0; slots + 1];
        for (i, e) in self.ring.iter().enumerate() {
            if e.2 {
                self.tree[i + 1] += i64::from(e.1);
            }
        }
        for i in 1..=slots {
            let j = i + (i & i.wrapping_neg());
            if j <= slots {
                self.tree[j] += self.tree[i];
            }
        }
    }

    /// Appends `key` as the newest entry (replacing an older entry of the same key). Returns the
    /// reuse distance of the replaced entry, as [`ReuseQueue::take`] would.
    ///
    /// The ring has up to `2 * max_entries` slots, so when its window is full of live and dead
    /// slots at least half are dead and compacting it is amortised O(1) per push.
    pub(crate) fn push(&mut self, key: u64, size: u32) -> Option<u64> {
        let prev = self.take(key);
        if self.index.len() >= self.max_entries {
            self.pop_oldest();
            self.trim();
        }
        if (self.head - self.tail) as usize == self.ring.len() {
            let max_slots = self.max_entries.saturating_mul(2);
            if self.index.len() * 2 > self.ring.len() && self.ring.len() < max_slots {
                self.rebuild((self.ring.len() * 2).min(max_slots));
            } else {
                self.rebuild(self.ring.len());
            }
        }
        let seq = self.head;
        let slot = self.slot(seq);
        self.ring[slot] = (key, size, true);
        self.add(slot, i64::from(size));
        self.live_bytes += u64::from(size);
        self.index.insert(key, seq);
        self.head += 1;
        self.trim();
        prev
    }

    #[cfg(test)]
    /// The reuse distance of `key` without removing it: bytes of the entries at or after it.
    pub(crate) fn distance(&self, key: u64) -> Option<u64> {
        let seq = *self.index.get(&key)?;
        Some(self.bytes_from(seq))
    }

    /// Removes `key`, returning its reuse distance (bytes of the entries at or after it).
    pub(crate) fn take(&mut self, key: u64) -> Option<u64> {
        let seq = self.index.remove(&key)?;
        let d = self.bytes_from(seq);
        self.kill(seq);
        self.trim();
        Some(d)
    }

    /// Removes `key`; whether it was there.
    pub(crate) fn remove(&mut self, key: u64) -> bool {
        self.take(key).is_some()
    }

    /// Drops the oldest entries until at most `n` are left.
    pub(crate) fn truncate_oldest(&mut self, n: usize) {
        while self.index.len() > n && self.tail < self.head {
            self.pop_oldest();
        }
        self.trim();
    }
}

/// A decayed log-linear histogram of byte distances: exact below 128, then 64 buckets per octave
/// (a bucket is at most 1/64 of its values wide).
#[derive(Debug, Clone, Default)]
pub(crate) struct LogHist {
    buckets: Vec<f64>,
}

const SUB_BITS: u32 = 6;

fn bucket_of(v: u64) -> usize {
    let top = 1u64 << (SUB_BITS + 1);
    if v < top {
        v as usize
    } else {
        let shift = (63 - v.leading_zeros()) - SUB_BITS;
        (((u64::from(shift) + 1) << SUB_BITS) + ((v >> shift) - (1 << SUB_BITS))) as usize
    }
}

/// Values `[lo, hi]` of bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < (1 << (SUB_BITS + 1)) {
        (i, i)
    } else {
        let shift = (i >> SUB_BITS) - 1;
        let lo = ((i & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS)) << shift;
        (lo, lo + ((1 << shift) - 1))
    }
}

impl LogHist {
    pub(crate) fn add(&mut self, v: u64, w: f64) {
        let i = bucket_of(v);
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, 0.0);
        }
        self.buckets[i] += w;
    }

    pub(crate) fn scale(&mut self, f: f64) {
        for b in &mut self.buckets {
            *b *= f;
        }
    }

    /// Non-empty buckets as `(lo, hi, weight)`, ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64, f64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, w)| **w > 0.0)
            .map(|(i, &w)| {
                let (lo, hi) = bucket_range(i);
                (lo, hi, w)
            })
    }

    /// Spreads the weight over pages: a distance `d` bytes, times `factor` (memory bytes per item
    /// byte), needs `ceil(d * factor / page)` pages; a bucket's weight is spread uniformly over
    /// the pages its value range covers. `out[j]` (1-based, `out[0]` unused) gets the weight
    /// needing exactly `j` pages; the weight needing more than `out.len() - 1` pages is returned.
    pub(crate) fn spread_pages(&self, factor: f64, page: f64, out: &mut [f64]) -> f64 {
        let last = out.len().saturating_sub(1);
        let mut over = 0.0;
        for (lo, hi, w) in self.iter() {
            // Continuous page range (a, b] covered by values (lo - 1, hi].
            let a = (lo as f64 - 1.0).max(0.0) * factor / page;
            let b = hi as f64 * factor / page;
            if a >= last as f64 {
                over += w;
                continue;
            }
            let width = (b - a).max(f64::MIN_POSITIVE);
            let first = (a.floor() as usize + 1).max(1);
            let end = (b.ceil() as usize).max(first);
            let share = |j: usize| {
                if end == first {
                    1.0
                } else {
                    let lo_j = (j as f64 - 1.0).max(a);
                    let hi_j = (j as f64).min(b);
                    ((hi_j - lo_j) / width).max(0.0)
                }
            };
            for (j, o) in out.iter_mut().enumerate().take(end + 1).skip(first) {
                *o += w * share(j);
            }
            for j in (last + 1).max(first)..=end {
                over += w * share(j);
            }
        }
        over
    }
}

/// How big the per-pool structures may grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShadowLimits {
    /// Keys per shadow queue.
    pub shadow_entries: usize,
    /// Highest sampling rate of the recency stack (`None`: no recency stack, shadow hits only).
    pub recency_rate: Option<f64>,
    /// Keys per recency stack.
    pub recency_entries: usize,
    /// Most distinct keys the recency stack's sample follows (its rate falls to keep to it).
    pub recency_keys: usize,
}

/// One pool's shadow queue, recency stack and distance histograms.
#[derive(Debug, Clone)]
pub(crate) struct PoolShadow {
    pub(crate) shadow: ReuseQueue,
    recency: Option<(ReuseQueue, AdaptiveFilter)>,
    /// Shadow hits by distance beyond the cache (bytes), decayed.
    pub(crate) beyond: LogHist,
    /// Sampled GET hits by recency-stack distance inside the cache (sampled bytes, unscaled),
    /// decayed; [`PoolShadows::page_hits`] scales them by the sampled share of the cache.
    pub(crate) within: LogHist,
    /// Shadow hits since the last [`PoolShadows::drain_new_hits`].
    pub(crate) new_hits: u64,
    /// Shadow hits since the start.
    pub(crate) hits_total: u64,
}

impl PoolShadow {
    /// The recency sample's distinct keys and current rate (`None` without a recency stack).
    pub(crate) fn recency_sample(&self) -> Option<(usize, f64)> {
        self.recency.as_ref().map(|(_, f)| (f.tracked(), f.rate()))
    }
}

/// Shadow queues and recency stacks for every pool (grown on demand by pool id).
#[derive(Debug, Clone)]
pub(crate) struct PoolShadows {
    limits: ShadowLimits,
    max_bytes: u64,
    pools: Vec<PoolShadow>,
    /// Keys the last access dropped from a sample (scratch).
    dropped: Vec<u64>,
}

impl PoolShadows {
    pub(crate) fn new(limits: ShadowLimits) -> Self {
        PoolShadows {
            limits,
            max_bytes: u64::MAX,
            pools: Vec::new(),
            dropped: Vec::new(),
        }
    }

    fn pool_mut(&mut self, p: usize) -> &mut PoolShadow {
        while self.pools.len() <= p {
            let recency = self.limits.recency_rate.map(|r| {
                // The rate and the budget were validated when the controller was built.
                let f = AdaptiveFilter::new(r, self.limits.recency_keys, 0x5AD0_7E11)
                    .expect("validated sampling rate and key budget");
                (ReuseQueue::new(self.limits.recency_entries, u64::MAX), f)
            });
            self.pools.push(PoolShadow {
                shadow: ReuseQueue::new(self.limits.shadow_entries, self.max_bytes),
                recency,
                beyond: LogHist::default(),
                within: LogHist::default(),
                new_hits: 0,
                hits_total: 0,
            });
        }
        &mut self.pools[p]
    }

    /// Pool `p` (`None` if it never had an access or eviction).
    pub(crate) fn pool(&self, p: usize) -> Option<&PoolShadow> {
        self.pools.get(p)
    }

    /// Bounds every shadow queue to `bytes` of shadowed items.
    pub(crate) fn set_max_bytes(&mut self, bytes: u64) {
        self.max_bytes = bytes;
        for p in &mut self.pools {
            p.shadow.set_max_bytes(bytes);
        }
    }

    /// Bounds each pool's recency stack to the keys its cache can hold: `items[p]` times the
    /// sampling rate, with 10% and 16 keys of slack for the sample's own noise. Keys evicted
    /// without an `on_evict` (the engine's own page releases and moves during a decision) would
    /// otherwise stay in the stack and stretch every distance; they are never touched again, so
    /// they sink to its old end and go first.
    pub(crate) fn bound_recency(&mut self, items: &[u64]) {
        for (p, n) in self.pools.iter_mut().zip(items) {
            if let Some((stack, f)) = &mut p.recency {
                let keep = (*n as f64 * f.rate() * 1.1) as usize + 16;
                stack.truncate_oldest(keep);
            }
        }
    }

    /// Multiplies every histogram by `f` (older intervals count less).
    pub(crate) fn decay(&mut self, f: f64) {
        for p in &mut self.pools {
            p.beyond.scale(f);
            p.within.scale(f);
        }
    }

    /// Shadow hits per pool since the last call.
    pub(crate) fn drain_new_hits(&mut self) -> Vec<u64> {
        self.pools
            .iter_mut()
            .map(|p| std::mem::take(&mut p.new_hits))
            .collect()
    }

    /// One data-path access (O(log N) on a miss or a SET; O(1) for unsampled hits).
    pub(crate) fn on_access(&mut self, a: &Access) {
        let mut dropped = std::mem::take(&mut self.dropped);
        let p = self.pool_mut(a.pool.0 as usize);
        // GET hits and SETs admit a key to the sample; keys the sample drops to stay within its
        // budget leave the stack (they are never sampled again).
        let sampled = match (&mut p.recency, a.kind) {
            (Some((stack, f)), AccessKind::GetHit | AccessKind::Set) => {
                let s = f.offer(a.key_hash, &mut dropped);
                for k in dropped.drain(..) {
                    stack.remove(k);
                }
                s
            }
            _ => false,
        };
        match a.kind {
            AccessKind::GetHit => {
                if sampled
                    && let Some((stack, _)) = &mut p.recency
                    && let Some(d) = stack.push(a.key_hash, a.size.max(1))
                {
                    p.within.add(d, 1.0);
                }
            }
            AccessKind::GetMiss => {
                if let Some(d) = p.shadow.take(a.key_hash) {
                    p.beyond.add(d, 1.0);
                    p.new_hits += 1;
                    p.hits_total += 1;
                }
            }
            AccessKind::Set => {
                p.shadow.remove(a.key_hash);
                if sampled && let Some((stack, _)) = &mut p.recency {
                    stack.push(a.key_hash, a.size.max(1));
                }
            }
            AccessKind::Delete => {
                p.shadow.remove(a.key_hash);
                if let Some((stack, _)) = &mut p.recency {
                    stack.remove(a.key_hash);
                }
            }
        }
        self.dropped = dropped;
    }

    /// One eviction: the key leaves the recency stack and enters the shadow queue.
    pub(crate) fn on_evict(&mut self, e: &Evicted) {
        let p = self.pool_mut(e.pool.0 as usize);
        if let Some((stack, _)) = &mut p.recency {
            stack.remove(e.key_hash);
        }
        p.shadow.push(e.key_hash, e.size.max(1));
    }

    /// Hits per page of pool `p` on an absolute page axis, and the width in pages of the band
    /// the sampled LRU positions blur over at the end of the cache.
    ///
    /// `out[j]` (1-based) is the (decayed) GET hits that need a `j`-th page: recency-stack hits
    /// for `j <= pages`, shadow hits at `pages + ceil(distance)` beyond it. `factor` is the
    /// pool's memory bytes per item byte (pages × page size / item bytes) and maps shadow
    /// distances; sampled recency distances map through the sampled share of the cache instead
    /// (the stack's bytes stand for the `pages`, its keys for the pool's `items`), which cancels
    /// the sampling rate's error on this key set. A sampled position is still the cache's recency
    /// rank estimated from `n` sampled keys, off by about `pages / sqrt(n)` pages, so hits
    /// estimated beyond the cache are hits in its tail: they are spread over the last
    /// `band = ceil(2 pages / sqrt(n))` pages rather than dropped or piled on the last page.
    pub(crate) fn page_hits(
        &self,
        p: usize,
        pages: u64,
        items: u64,
        horizon: u64,
        factor: f64,
        page: u64,
    ) -> (Vec<f64>, u64) {
        let n = (pages + horizon) as usize;
        let mut out = vec![0.0; n + 1];
        let Some(ps) = self.pools.get(p) else {
            return (out, 1);
        };
        let mut band = 1;
        if pages > 0
            && let Some((stack, _)) = &ps.recency
            && stack.len() > 0
        {
            let sampled = stack.len() as f64;
            band = ((2.0 * pages as f64 / sampled.sqrt()).ceil() as u64).clamp(1, pages);
            let mut inside = vec![0.0; pages as usize + 1];
            let f = (pages * page) as f64 / stack.bytes().max(1) as f64;
            let over = ps.within.spread_pages(f, page as f64, &mut inside);
            let weight = items as f64 / sampled;
            for (o, w) in out.iter_mut().zip(&inside) {
                *o += w * weight;
            }
            let first = (pages - band + 1) as usize;
            for o in &mut out[first..=pages as usize] {
                *o += over * weight / band as f64;
            }
        }
        let mut beyond = vec![0.0; horizon as usize + 1];
        ps.beyond.spread_pages(factor, page as f64, &mut beyond);
        for (x, w) in beyond.iter().enumerate().skip(1) {
            out[pages as usize + x] += w;
        }
        (out, band)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_common::Rng;

    /// The brute-force model: a list in logical-time order.
    #[derive(Default)]
    struct Model {
        list: Vec<(u64, u32)>,
        max_entries: usize,
        max_bytes: u64,
    }

    impl Model {
        fn take(&mut self, key: u64) -> Option<u64> {
            let i = self.list.iter().position(|e| e.0 == key)?;
            let d = self.list[i..].iter().map(|e| u64::from(e.1)).sum();
            self.list.remove(i);
            Some(d)
        }
        fn push(&mut self, key: u64, size: u32) -> Option<u64> {
            let prev = self.take(key);
            self.list.push((key, size));
            while self.list.len() > self.max_entries {
                self.list.remove(0);
            }
            while self.list.iter().map(|e| u64::from(e.1)).sum::<u64>() > self.max_bytes {
                self.list.remove(0);
            }
            prev
        }
    }

    fn check(max_entries: usize, max_bytes: u64, keys: u64, ops: usize, seed: u64) {
        let mut q = ReuseQueue::new(max_entries, max_bytes);
        let mut m = Model {
            max_entries,
            max_bytes,
            ..Model::default()
        };
        let mut rng = Rng::new(seed);
        for step in 0..ops {
            let key = rng.below(keys);
            match rng.below(10) {
                0..=4 => {
                    let size = 1 + rng.below(300) as u32;
                    assert_eq!(q.push(key, size), m.push(key, size), "push at step {step}");
                }
                5..=7 => assert_eq!(q.take(key), m.take(key), "take at step {step}"),
                8 => assert_eq!(q.remove(key), m.take(key).is_some(), "remove at {step}"),
                _ => {
                    let want = m
                        .list
                        .iter()
                        .position(|e| e.0 == key)
                        .map(|i| m.list[i..].iter().map(|e| u64::from(e.1)).sum());
                    assert_eq!(q.distance(key), want, "distance at step {step}");
                }
            }
            assert_eq!(q.len(), m.list.len(), "len at step {step}");
            let bytes: u64 = m.list.iter().map(|e| u64::from(e.1)).sum();
            assert_eq!(q.bytes(), bytes, "bytes at step {step}");
        }
    }

    fn access(pool: u32, kind: AccessKind, key: u64) -> Access {
        Access {
            tenant: locus_engine::TenantId(pool),
            pool: locus_engine::PoolId(pool),
            kind,
            key_hash: key,
            size: 100,
            class: None,
            now_us: 0,
        }
    }

    /// The recency sample has a fixed key budget: a pool of 50 keys is followed whole (the old
    /// fixed 1/16 rate followed about 3 of them), a pool of 100 000 keys through at most the
    /// budget, and both get hits inside the cache.
    #[test]
    fn recency_sample_follows_small_pools_whole_and_bounds_large_ones() {
        let mut sh = PoolShadows::new(ShadowLimits {
            shadow_entries: 1 << 16,
            recency_rate: Some(1.0),
            recency_entries: 1 << 18,
            recency_keys: 2048,
        });
        let mut rng = Rng::new(3);
        for round in 0..20 {
            for k in 0..50u64 {
                let kind = if round == 0 {
                    AccessKind::Set
                } else {
                    AccessKind::GetHit
                };
                sh.on_access(&access(0, kind, k.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
            }
        }
        for _ in 0..300_000 {
            let k = 1_000_000 + rng.below(100_000);
            sh.on_access(&access(1, AccessKind::Set, k));
            sh.on_access(&access(1, AccessKind::GetHit, k));
        }
        let (small, large) = (sh.pool(0).unwrap(), sh.pool(1).unwrap());
        let (stack, f) = small.recency.as_ref().unwrap();
        assert_eq!((stack.len(), f.rate()), (50, 1.0), "the small pool whole");
        let (hits, _) = sh.page_hits(0, 1, 50, 0, 1.0, 16 << 10);
        assert!(
            (hits[1] - 19.0 * 50.0).abs() < 1e-6,
            "every GET hit of the small pool is on its one page: {hits:?}"
        );
        let (stack, f) = large.recency.as_ref().unwrap();
        assert!(stack.len() <= 2048 && stack.len() > 1500, "{}", stack.len());
        assert!(f.rate() < 0.03, "rate {}", f.rate());
        let (hits, _) = sh.page_hits(1, 600, 100_000, 0, 1.0, 16 << 10);
        assert!(hits.iter().sum::<f64>() > 0.0);
    }

    #[test]
    fn reuse_distances_equal_a_brute_force_list() {
        // Unbounded bytes, ring growing past its initial 1024 slots, keys coming and going.
        check(5000, u64::MAX, 3000, 40_000, 1);
        // Entry-bounded: the oldest keys fall off (ring wraps many times).
        check(257, u64::MAX, 2000, 30_000, 2);
        // Byte-bounded.
        check(100_000, 20_000, 1000, 30_000, 3);
        // Tiny.
        check(1, u64::MAX, 4, 2000, 4);
        check(3, 500, 8, 5000, 5);
    }

    #[test]
    fn set_max_bytes_drops_oldest() {
        let mut q = ReuseQueue::new(100, u64::MAX);
        for k in 0..10 {
            q.push(k, 10);
        }
        assert_eq!(q.distance(0), Some(100));
        q.set_max_bytes(35);
        assert_eq!(q.len(), 3);
        assert!(!q.contains(6) && q.contains(7));
        assert_eq!(q.distance(7), Some(30));
        q.truncate_oldest(1);
        assert_eq!((q.len(), q.distance(9)), (1, Some(10)));
    }

    #[test]
    fn log_hist_buckets_cover_values() {
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            65_535,
            1 << 40,
            u64::MAX / 3,
        ] {
            let (lo, hi) = bucket_range(bucket_of(v));
            assert!(lo <= v && v <= hi, "{v} in [{lo}, {hi}]");
            assert!((hi - lo) as f64 <= (v as f64) / 64.0 + 1.0);
        }
    }

    #[test]
    fn spread_pages_conserves_weight_inside_the_horizon() {
        let mut h = LogHist::default();
        h.add(100, 1.0); // page 1 at 4096-byte pages
        h.add(10_000, 2.0); // ~2.44 pages -> page 3
        h.add(1 << 30, 5.0); // far beyond
        let mut out = vec![0.0; 6];
        let over = h.spread_pages(1.0, 4096.0, &mut out);
        assert!((out[1] - 1.0).abs() < 1e-9, "{out:?}");
        assert!((out[3] - 2.0).abs() < 1e-9, "{out:?}");
        assert!((out.iter().sum::<f64>() - 3.0).abs() < 1e-9);
        assert!((over - 5.0).abs() < 1e-9, "beyond the pages: {over}");
    }
}
