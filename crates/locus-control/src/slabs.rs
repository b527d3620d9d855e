//! Per size class bookkeeping shared by the memcached-style slab controllers (`lama`,
//! `automove`, `psa`, `facebook`): what each (pool, class) saw in the current window.
//!
//! A GET miss carries no size, so its class is unknown until the client stores the value: a
//! miss is remembered by key hash and attributed to the class of the SET that follows it
//! (the demand fill). The request stream per class is therefore GET hits, plus GET misses
//! followed by their SET, plus SETs that follow no miss (writes).
//!
//! Tail ages (Facebook's age balancing) come from a spatially sampled last-access table: when a
//! sampled key is evicted, its age since last access is the age of that class's LRU tail.

use locus_mrc::Op;
use locus_mrc::sampling::U64Map;

use locus_engine::control::{Access, AccessKind, ControlView, Evicted, PageMove, PoolState};
use locus_engine::ids::{ClassId, PoolId};

/// Pending misses remembered (all pools together).
const MAX_PENDING: usize = 1 << 18;
/// One key in `2^AGE_SAMPLE_SHIFT` has its last access tracked for tail ages.
const AGE_SAMPLE_SHIFT: u32 = 4;
/// Tracked last accesses (all pools together).
const MAX_AGES: usize = 1 << 20;

/// What one (pool, class) saw in the current window.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ClassWindow {
    /// Requests (hits, misses filled by a SET, plain writes).
    pub requests: u64,
    /// GET misses (attributed through the SET that filled them).
    pub misses: u64,
    /// Evictions.
    pub evictions: u64,
    /// Sum of the ages (µs) of sampled evicted items.
    pub tail_age_sum_us: f64,
    /// Sampled evicted items behind `tail_age_sum_us`.
    pub tail_age_n: u64,
}

impl ClassWindow {
    /// Mean age at eviction (µs) of the class's LRU tail, if any sampled item was evicted.
    pub fn tail_age_us(&self) -> Option<f64> {
        (self.tail_age_n > 0).then(|| self.tail_age_sum_us / self.tail_age_n as f64)
    }
}

/// Per (pool, class) windows, the pending-miss table and the sampled last-access table.
///
/// The tables sit on every access's path (under the engine lock when the controller runs
/// inline), so they are indexed by pool and hashed with `U64Map`'s hasher, not SipHash: key
/// hashes are already uniform and come from the engine, not from an attacker choosing buckets.
#[derive(Debug, Default)]
pub(crate) struct ClassTracker {
    windows: Vec<Vec<ClassWindow>>,
    /// Pending misses per pool (key hashes); `pending_len` counts them over all pools.
    pending: Vec<U64Map<()>>,
    pending_len: usize,
    last_access: U64Map<u64>,
}

impl ClassTracker {
    fn window(&mut self, pool: PoolId, class: ClassId) -> &mut ClassWindow {
        let p = pool.0 as usize;
        if self.windows.len() <= p {
            self.windows.resize_with(p + 1, Vec::new);
        }
        let w = &mut self.windows[p];
        let c = class.0 as usize;
        if w.len() <= c {
            w.resize_with(c + 1, ClassWindow::default);
        }
        &mut w[c]
    }

    /// Records one access. Returns the class and the profiler operation it stands for, when
    /// the access belongs to a class's request stream (`Op::Get` for a hit or a filled miss,
    /// `Op::Set` for a plain write); `None` for a miss not yet attributed or a DEL.
    pub fn access(&mut self, a: &Access) -> Option<(ClassId, Op)> {
        match a.kind {
            AccessKind::GetMiss => {
                if self.pending_len >= MAX_PENDING {
                    self.pending.iter_mut().for_each(U64Map::clear);
                    self.pending_len = 0;
                }
                let p = a.pool.0 as usize;
                if self.pending.len() <= p {
                    self.pending.resize_with(p + 1, U64Map::default);
                }
                if self.pending[p].insert(a.key_hash, ()).is_none() {
                    self.pending_len += 1;
                }
                None
            }
            AccessKind::Delete => {
                self.unpend(a.pool, a.key_hash);
                None
            }
            AccessKind::GetHit | AccessKind::Set => {
                let class = a.class?;
                self.touch_age(a.key_hash, a.now_us);
                let filled = a.kind == AccessKind::Set && self.unpend(a.pool, a.key_hash);
                let w = self.window(a.pool, class);
                w.requests += 1;
                if filled {
                    w.misses += 1;
                }
                let op = if a.kind == AccessKind::Set && !filled {
                    Op::Set
                } else {
                    Op::Get
                };
                Some((class, op))
            }
        }
    }

    /// Forgets a pending miss of `key_hash` in `pool`; whether there was one.
    fn unpend(&mut self, pool: PoolId, key_hash: u64) -> bool {
        let gone = self
            .pending
            .get_mut(pool.0 as usize)
            .is_some_and(|m| m.remove(&key_hash).is_some());
        self.pending_len -= usize::from(gone);
        gone
    }

    fn touch_age(&mut self, key_hash: u64, now_us: u64) {
        if key_hash >> (64 - AGE_SAMPLE_SHIFT) != 0 {
            return;
        }
        if self.last_access.len() >= MAX_AGES {
            self.last_access.clear();
        }
        self.last_access.insert(key_hash, now_us);
    }

    /// Records one eviction.
    pub fn evicted(&mut self, e: &Evicted) {
        let age = self
            .last_access
            .remove(&e.key_hash)
            .map(|at| e.now_us.saturating_sub(at));
        let w = self.window(e.pool, e.class);
        w.evictions += 1;
        if let Some(age) = age {
            w.tail_age_sum_us += age as f64;
            w.tail_age_n += 1;
        }
    }

    /// The current window of (pool, class) (zero if nothing was seen).
    pub fn get(&self, pool: PoolId, class: ClassId) -> ClassWindow {
        self.windows
            .get(pool.0 as usize)
            .and_then(|w| w.get(class.0 as usize))
            .cloned()
            .unwrap_or_default()
    }

    /// Classes of `pool` with any activity in the window.
    pub fn active_classes(&self, pool: PoolId) -> Vec<ClassId> {
        self.windows
            .get(pool.0 as usize)
            .map(|w| {
                w.iter()
                    .enumerate()
                    .filter(|(_, cw)| cw.requests > 0 || cw.evictions > 0)
                    .map(|(c, _)| ClassId(c as u16))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Starts a new window.
    pub fn reset(&mut self) {
        for w in &mut self.windows {
            for cw in w.iter_mut() {
                *cw = ClassWindow::default();
            }
        }
    }
}

/// Pages a class of `pool` owns now.
pub(crate) fn class_pages(pool: &PoolState, class: ClassId) -> u64 {
    pool.classes
        .iter()
        .find(|c| c.class == class)
        .map_or(0, |c| c.pages)
}

/// Chunks per page of a class with this chunk size.
pub(crate) fn slots_per_page(view: &ControlView<'_>, chunk_bytes: u32) -> u64 {
    (view.page_size / u64::from(chunk_bytes.max(1))).max(1)
}

/// One page from `from` to `to` inside `pool`.
pub(crate) fn page_move(pool: PoolId, from: ClassId, to: ClassId) -> PageMove {
    PageMove {
        from: (pool, from),
        to: (pool, to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_engine::ids::TenantId;

    fn acc(kind: AccessKind, key_hash: u64, class: Option<u16>) -> Access {
        Access {
            tenant: TenantId(0),
            pool: PoolId(0),
            kind,
            key_hash,
            size: 10,
            class: class.map(ClassId),
            now_us: 5,
        }
    }

    #[test]
    fn misses_are_attributed_to_the_class_of_the_filling_set() {
        let mut t = ClassTracker::default();
        assert_eq!(t.access(&acc(AccessKind::GetMiss, 9, None)), None);
        assert_eq!(
            t.access(&acc(AccessKind::Set, 9, Some(3))),
            Some((ClassId(3), Op::Get))
        );
        assert_eq!(
            t.access(&acc(AccessKind::Set, 9, Some(3))),
            Some((ClassId(3), Op::Set)),
            "a second SET is a plain write"
        );
        assert_eq!(
            t.access(&acc(AccessKind::GetHit, 9, Some(3))),
            Some((ClassId(3), Op::Get))
        );
        let w = t.get(PoolId(0), ClassId(3));
        assert_eq!((w.requests, w.misses), (3, 1));
        assert_eq!(t.active_classes(PoolId(0)), vec![ClassId(3)]);
        t.reset();
        assert_eq!(t.get(PoolId(0), ClassId(3)), ClassWindow::default());
    }

    #[test]
    fn tail_ages_come_from_sampled_keys() {
        let mut t = ClassTracker::default();
        let sampled = 7u64; // top bits zero: sampled
        let mut a = acc(AccessKind::Set, sampled, Some(1));
        a.now_us = 100;
        t.access(&a);
        t.evicted(&Evicted {
            tenant: TenantId(0),
            pool: PoolId(0),
            class: ClassId(1),
            key_hash: sampled,
            size: 10,
            idle_ms: 0,
            now_us: 1_100,
        });
        let w = t.get(PoolId(0), ClassId(1));
        assert_eq!(w.evictions, 1);
        assert_eq!(w.tail_age_us(), Some(1000.0));
    }
}
