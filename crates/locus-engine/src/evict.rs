//! Redis's eviction machinery: the eviction pool, the LRU clock arithmetic, the LFU log counter,
//! and the intrusive list of `allkeys-exact-lru`.
//!
//! Everything here follows redis/redis `src/evict.c` (Redis 7), as summarised in docs/models.md
//! section 8. The functions are pure so the unit tests can check them against Redis's formulas.

use locus_common::Rng;

/// Redis's `LRU_BITS`-wide clock maximum (`LRU_CLOCK_MAX = (1 << 24) - 1`).
pub(crate) const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
/// Redis's `LRU_CLOCK_RESOLUTION` in milliseconds.
pub(crate) const LRU_CLOCK_RESOLUTION: u64 = 1000;
/// Redis's `LFU_INIT_VAL`.
pub const LFU_INIT_VAL: u8 = 5;

/// `LRU_CLOCK()` for a time in ms: `(ms / 1000) & LRU_CLOCK_MAX`.
#[inline]
pub(crate) fn redis_lru_clock(now_ms: u64) -> u32 {
    ((now_ms / LRU_CLOCK_RESOLUTION) & u64::from(LRU_CLOCK_MAX)) as u32
}

/// `estimateObjectIdleTime`: idle milliseconds of an object whose `lru` field is `lru`, including
/// Redis's wrap-around arithmetic (`lruclock + (LRU_CLOCK_MAX - lru)`).
#[inline]
pub(crate) fn redis_idle_ms(lruclock: u32, lru: u32) -> u64 {
    if lruclock >= lru {
        u64::from(lruclock - lru) * LRU_CLOCK_RESOLUTION
    } else {
        (u64::from(lruclock) + u64::from(LRU_CLOCK_MAX - lru)) * LRU_CLOCK_RESOLUTION
    }
}

/// `LFUGetTimeInMinutes`: `(unixtime / 60) & 65535`.
#[inline]
pub(crate) fn lfu_minutes(now_ms: u64) -> u32 {
    ((now_ms / 1000 / 60) & 65535) as u32
}

/// `LFUTimeElapsed`: minutes since `ldt`, with wrap-around.
#[inline]
pub(crate) fn lfu_time_elapsed(now_min: u32, ldt: u32) -> u32 {
    if now_min >= ldt {
        now_min - ldt
    } else {
        65535 - ldt + now_min
    }
}

/// `LFUDecrAndReturn`: the counter after decaying one per `decay_time` minutes elapsed
/// (no decay when `decay_time` is 0). `field` is `ldt << 8 | counter`.
#[inline]
pub(crate) fn lfu_decr_and_return(field: u32, now_min: u32, decay_time: u32) -> u8 {
    let ldt = (field >> 8) & 0xFFFF;
    let counter = field & 0xFF;
    let periods = lfu_time_elapsed(now_min, ldt)
        .checked_div(decay_time)
        .unwrap_or(0);
    if periods > 0 {
        if periods > counter {
            0
        } else {
            (counter - periods) as u8
        }
    } else {
        counter as u8
    }
}

/// `LFULogIncr`: increments with probability `1 / ((counter - LFU_INIT_VAL) * log_factor + 1)`.
/// `r` is a uniform double in `[0, 1)` (Redis: `rand() / RAND_MAX`).
#[inline]
pub(crate) fn lfu_log_incr(counter: u8, log_factor: u32, r: f64) -> u8 {
    if counter == 255 {
        return 255;
    }
    let baseval = (f64::from(counter) - f64::from(LFU_INIT_VAL)).max(0.0);
    let p = 1.0 / (baseval * f64::from(log_factor) + 1.0);
    if r < p { counter + 1 } else { counter }
}

/// `updateLFU`: decay, log-increment, stamp with the current minute.
#[inline]
pub(crate) fn lfu_touch(
    field: u32,
    now_min: u32,
    decay_time: u32,
    log_factor: u32,
    rng: &mut Rng,
) -> u32 {
    let c = lfu_decr_and_return(field, now_min, decay_time);
    let c = lfu_log_incr(c, log_factor, rng.next_f64());
    (now_min << 8) | u32::from(c)
}

/// The LFU field of a new object: `(minutes << 8) | LFU_INIT_VAL`.
#[inline]
pub(crate) fn lfu_new(now_min: u32) -> u32 {
    (now_min << 8) | u32::from(LFU_INIT_VAL)
}

/// One slot of the eviction pool: the idle score computed at sampling time and the key's name
/// (a reusable buffer, like Redis's cached sds).
#[derive(Debug, Clone, Default)]
pub(crate) struct EvEntry {
    pub idle: u64,
    pub key: Vec<u8>,
    /// The pool (Redis: `dbid`) the key belongs to; used by the shared pool of free competition.
    pub pool: u32,
}

/// Redis's eviction pool (`EVPOOL_SIZE` entries sorted by idle ascending, a filled prefix).
#[derive(Debug, Clone, Default)]
pub(crate) struct EvPool {
    entries: Vec<EvEntry>,
    len: usize,
}

impl EvPool {
    /// A pool of `size` entries (0 = no pool).
    pub(crate) fn new(size: usize) -> Self {
        Self {
            entries: vec![EvEntry::default(); size],
            len: 0,
        }
    }

    /// Capacity.
    pub(crate) fn size(&self) -> usize {
        self.entries.len()
    }

    /// Filled entries, idle ascending.
    pub(crate) fn entries(&self) -> &[EvEntry] {
        &self.entries[..self.len]
    }

    /// Empties the pool.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// The insertion step of `evictionPoolPopulate` for one sampled key (tests; pool 0).
    ///
    /// Finds the first slot whose entry is empty or has `idle >=` the new one; skips the key when
    /// that is slot 0 of a full pool; otherwise inserts there (shifting right) or, when full, drops
    /// slot 0 and inserts at `k - 1`. Equal idles: the new key goes left of the existing ones.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, idle: u64, key: &[u8]) {
        self.insert_for(idle, key, 0);
    }

    /// [`EvPool::insert`] for a key of pool `pool`.
    pub(crate) fn insert_for(&mut self, idle: u64, key: &[u8], pool: u32) {
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        let mut k = 0;
        while k < self.len && self.entries[k].idle < idle {
            k += 1;
        }
        let full = self.len == n;
        if k == 0 && full {
            return;
        }
        if !full {
            // Shift k..len right by one (rotate keeps the key buffers for reuse).
            self.entries[k..=self.len].rotate_right(1);
            self.len += 1;
        } else {
            // Drop slot 0 (the youngest), shift 1..k left, insert at k - 1.
            k -= 1;
            self.entries[..=k].rotate_left(1);
        }
        let e = &mut self.entries[k];
        e.idle = idle;
        e.pool = pool;
        e.key.clear();
        e.key.extend_from_slice(key);
    }

    /// The rightmost (largest idle) entry, if any.
    pub(crate) fn best(&self) -> Option<&EvEntry> {
        self.len.checked_sub(1).map(|i| &self.entries[i])
    }

    /// Removes the rightmost entry.
    pub(crate) fn pop_best(&mut self) {
        self.len = self.len.saturating_sub(1);
    }
}

/// `NONE` link.
pub(crate) const NIL: u32 = u32::MAX;

/// Head and tail of one list threaded through [`Links`] (`NIL` when empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ends {
    pub head: u32,
    pub tail: u32,
}

impl Ends {
    /// An empty list.
    pub(crate) const EMPTY: Ends = Ends {
        head: NIL,
        tail: NIL,
    };
}

/// Doubly linked lists over the positions of a pool's dense item array: the `prev`/`next`
/// links of every position, and one [`Ends`] per list, kept by the caller. Each position is in
/// at most one list. `LruList` is one list over them; the memory tiers keep two (fast and
/// slow) over the same links, with an insertion point each (`engine/tier.rs`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Links {
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl Links {
    pub(crate) fn bytes(&self) -> u64 {
        (self.prev.capacity() + self.next.capacity()) as u64 * 4
    }

    /// The neighbour towards the head (more recent), or `NIL`.
    #[inline]
    pub(crate) fn prev(&self, pos: u32) -> u32 {
        self.prev[pos as usize]
    }

    /// The neighbour towards the tail (less recent), or `NIL`.
    #[inline]
    pub(crate) fn next(&self, pos: u32) -> u32 {
        self.next[pos as usize]
    }

    /// A new, unlinked position at the end (== the current length).
    pub(crate) fn push(&mut self) -> u32 {
        self.prev.push(NIL);
        self.next.push(NIL);
        (self.prev.len() - 1) as u32
    }

    /// Links `pos` into the list `e` just before `at` (towards the head), or at the tail when
    /// `at` is `NIL`.
    pub(crate) fn link_before(&mut self, e: &mut Ends, pos: u32, at: u32) {
        let p = pos as usize;
        let pr = if at == NIL {
            e.tail
        } else {
            self.prev[at as usize]
        };
        self.prev[p] = pr;
        self.next[p] = at;
        if pr != NIL {
            self.next[pr as usize] = pos;
        } else {
            e.head = pos;
        }
        if at != NIL {
            self.prev[at as usize] = pos;
        } else {
            e.tail = pos;
        }
    }

    /// Links `pos` at the head of `e`.
    pub(crate) fn link_front(&mut self, e: &mut Ends, pos: u32) {
        let head = e.head;
        self.link_before(e, pos, head);
    }

    /// Takes `pos` out of `e`.
    pub(crate) fn unlink(&mut self, e: &mut Ends, pos: u32) {
        let (pr, nx) = (self.prev[pos as usize], self.next[pos as usize]);
        self.repoint(e, pr, nx, nx, pr);
    }

    /// Points the node before a gap (`pr`, or the head) at `after` and the node after it
    /// (`nx`, or the tail) at `before`.
    fn repoint(&mut self, e: &mut Ends, pr: u32, nx: u32, after: u32, before: u32) {
        if pr != NIL {
            self.next[pr as usize] = after;
        } else {
            e.head = after;
        }
        if nx != NIL {
            self.prev[nx as usize] = before;
        } else {
            e.tail = before;
        }
    }

    /// Removes the last position, whose node (linked in `e_last`, unless `pos` is the last)
    /// moves into `pos` (which the caller unlinked): swap-remove, like the dense array.
    pub(crate) fn swap_remove(&mut self, pos: u32, e_last: &mut Ends) {
        let last = (self.prev.len() - 1) as u32;
        if last != pos {
            let (pr, nx) = (self.prev[last as usize], self.next[last as usize]);
            self.prev[pos as usize] = pr;
            self.next[pos as usize] = nx;
            self.repoint(e_last, pr, nx, pos, pos);
        }
        self.prev.pop();
        self.next.pop();
    }

    /// The number of positions.
    pub(crate) fn len(&self) -> usize {
        self.prev.len()
    }
}

/// The recency list of `allkeys-exact-lru`, over positions of the pool's dense item array
/// (head = most recently used). Kept only while the policy is exact LRU.
#[derive(Debug, Clone)]
pub(crate) struct LruList {
    links: Links,
    ends: Ends,
}

impl LruList {
    pub(crate) fn new() -> Self {
        Self {
            links: Links::default(),
            ends: Ends::EMPTY,
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.links.bytes()
    }

    /// The least recently used position.
    pub(crate) fn tail(&self) -> Option<u32> {
        (self.ends.tail != NIL).then_some(self.ends.tail)
    }

    /// The next more recently used position after `pos` (towards the head), for walking the
    /// list from [`LruList::tail`] to the most recent item.
    pub(crate) fn more_recent(&self, pos: u32) -> Option<u32> {
        let p = self.links.prev(pos);
        (p != NIL).then_some(p)
    }

    /// A new item at position `pos` (== current length), most recent.
    pub(crate) fn push(&mut self, pos: u32) {
        debug_assert_eq!(pos as usize, self.links.len());
        self.links.push();
        self.links.link_front(&mut self.ends, pos);
    }

    /// A touch.
    pub(crate) fn move_front(&mut self, pos: u32) {
        if self.ends.head != pos {
            self.links.unlink(&mut self.ends, pos);
            self.links.link_front(&mut self.ends, pos);
        }
    }

    /// Removes `pos`; the item at the last position moves into `pos` (swap-remove, like the
    /// dense array).
    pub(crate) fn swap_remove(&mut self, pos: u32) {
        self.links.unlink(&mut self.ends, pos);
        self.links.swap_remove(pos, &mut self.ends);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idles(p: &EvPool) -> Vec<u64> {
        p.entries().iter().map(|e| e.idle).collect()
    }

    fn keys(p: &EvPool) -> Vec<Vec<u8>> {
        p.entries().iter().map(|e| e.key.clone()).collect()
    }

    #[test]
    fn pool_keeps_sorted_and_drops_youngest_when_full() {
        let mut p = EvPool::new(4);
        for (i, idle) in [50u64, 10, 30, 20].iter().enumerate() {
            p.insert(*idle, &[i as u8]);
        }
        assert_eq!(idles(&p), [10, 20, 30, 50]);
        // Younger than everything in a full pool: skipped.
        p.insert(5, b"y");
        assert_eq!(idles(&p), [10, 20, 30, 50]);
        // Full: drop slot 0 (10), insert at k - 1.
        p.insert(25, b"n");
        assert_eq!(idles(&p), [20, 25, 30, 50]);
        p.insert(99, b"o");
        assert_eq!(idles(&p), [25, 30, 50, 99]);
        assert_eq!(p.best().unwrap().key, b"o");
    }

    #[test]
    fn equal_idles_go_left_so_older_entries_are_evicted_first() {
        let mut p = EvPool::new(16);
        p.insert(7, b"first");
        p.insert(7, b"second");
        p.insert(7, b"third");
        assert_eq!(
            keys(&p),
            [b"third".to_vec(), b"second".to_vec(), b"first".to_vec()]
        );
        assert_eq!(p.best().unwrap().key, b"first");
        // Full pool with ties at slot 0: a new equal-idle key has k == 0 and is skipped.
        let mut f = EvPool::new(2);
        f.insert(3, b"a");
        f.insert(3, b"b");
        f.insert(3, b"c");
        assert_eq!(keys(&f), [b"b".to_vec(), b"a".to_vec()]);
    }

    #[test]
    fn duplicates_are_not_filtered() {
        let mut p = EvPool::new(4);
        p.insert(9, b"k");
        p.insert(9, b"k");
        assert_eq!(p.entries().len(), 2);
        p.pop_best();
        p.pop_best();
        assert!(p.best().is_none());
        p.pop_best();
        assert_eq!(p.entries().len(), 0);
    }

    #[test]
    fn zero_sized_pool_ignores_inserts() {
        let mut p = EvPool::new(0);
        p.insert(1, b"k");
        assert!(p.best().is_none());
    }

    #[test]
    fn lru_clock_and_idle_match_redis() {
        assert_eq!(redis_lru_clock(12_345), 12);
        assert_eq!(redis_lru_clock((u64::from(LRU_CLOCK_MAX) + 3) * 1000), 2);
        assert_eq!(redis_idle_ms(10, 4), 6000);
        // Wrapped: Redis computes lruclock + (LRU_CLOCK_MAX - lru).
        assert_eq!(redis_idle_ms(2, LRU_CLOCK_MAX - 1), 3 * 1000);
    }

    #[test]
    fn lfu_log_incr_matches_redis_probabilities() {
        // Below and at LFU_INIT_VAL the counter always increments (p = 1).
        assert_eq!(lfu_log_incr(0, 10, 0.999_999), 1);
        assert_eq!(lfu_log_incr(5, 10, 0.999_999), 6);
        // counter 6: p = 1 / (1 * 10 + 1) = 0.0909...
        assert_eq!(lfu_log_incr(6, 10, 0.09), 7);
        assert_eq!(lfu_log_incr(6, 10, 0.091), 6);
        // counter 15: p = 1 / 101.
        assert_eq!(lfu_log_incr(15, 10, 1.0 / 101.0 - 1e-9), 16);
        assert_eq!(lfu_log_incr(15, 10, 1.0 / 101.0 + 1e-9), 15);
        assert_eq!(lfu_log_incr(255, 10, 0.0), 255);
        // Empirical: from 5, 1000 touches with factor 10 reach about Redis's table value (~18).
        let mut rng = Rng::new(1);
        let mut c = LFU_INIT_VAL;
        for _ in 0..1000 {
            c = lfu_log_incr(c, 10, rng.next_f64());
        }
        assert!((14..=22).contains(&c), "counter {c}");
    }

    #[test]
    fn lfu_decay_by_minutes() {
        let field = (100u32 << 8) | 20;
        assert_eq!(lfu_decr_and_return(field, 100, 1), 20);
        assert_eq!(lfu_decr_and_return(field, 103, 1), 17);
        assert_eq!(lfu_decr_and_return(field, 106, 2), 17);
        assert_eq!(lfu_decr_and_return(field, 200, 1), 0);
        assert_eq!(
            lfu_decr_and_return(field, 200, 0),
            20,
            "decay time 0: never decays"
        );
        // Wrap of the 16-bit minute clock: 65535 - ldt + now.
        let old = (65_530u32 << 8) | 20;
        assert_eq!(lfu_time_elapsed(3, 65_530), 8);
        assert_eq!(lfu_decr_and_return(old, 3, 1), 12);
        assert_eq!(lfu_minutes(3_600_000), 60);
        assert_eq!(lfu_new(7), (7 << 8) | 5);
    }

    #[test]
    fn lru_list_swap_remove_keeps_order() {
        let mut l = LruList::new();
        for i in 0..4 {
            l.push(i);
        }
        // Order (MRU..LRU): 3 2 1 0
        assert_eq!(l.tail(), Some(0));
        l.move_front(0); // 0 3 2 1
        assert_eq!(l.tail(), Some(1));
        l.swap_remove(1); // position 3 moves to 1: order 0 1(was 3) 2
        assert_eq!(l.tail(), Some(2));
        l.swap_remove(2); // 0 1
        assert_eq!(l.tail(), Some(1));
        l.swap_remove(1);
        assert_eq!(l.tail(), Some(0));
        l.swap_remove(0);
        assert_eq!(l.tail(), None);
    }
}
