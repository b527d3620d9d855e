//! Which pool may take a page, and which pool gives memory back when memory is full.
//!
//! The engine asks its [`Arbiter`] three questions on the allocation slow path (no free chunk in
//! the (pool, class) that needs one):
//!
//! ```text
//!   may_grow(p)?            -- take a free page from the global free list
//!   may_reclaim_from(p, r)? -- take a page (evicting what it holds) from pool r (r may be p)
//!   victim(p)               -- memory is full: which pool evicts one item by its policy
//! ```
//!
//! Two implementations today: [`SharedArbiter`] (free competition, like Redis with one database
//! per tenant) and [`StaticArbiter`] (per-pool `min`/`max` budgets). The MRC-guided controllers of
//! later issues implement the same trait and drive [`crate::Engine::move_page`].

use std::fmt::Debug;

use crate::ids::PoolId;

/// What the arbiter sees of one pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolView {
    /// The pool.
    pub pool: PoolId,
    /// Pages it owns.
    pub pages: u64,
    /// Items it holds.
    pub items: u64,
    /// Bytes of chunks in its pages minus the chunks in use (free chunk bytes).
    pub free_chunk_bytes: u64,
    /// Static floor in pages (`min_bytes / page_size`, rounded down).
    pub min_pages: u64,
    /// Static cap in pages (`max_bytes / page_size`, rounded down), if any.
    pub max_pages: Option<u64>,
    /// Whether its policy may evict at all (false for `noeviction`).
    pub evicts: bool,
}

/// The engine's state as the arbiter sees it.
#[derive(Clone, Copy, Debug)]
pub struct ArbiterView<'a> {
    /// Every pool, indexed by `PoolId.0`.
    pub pools: &'a [PoolView],
    /// Pages owned by some pool.
    pub pages_used: u64,
    /// Pages `maxmemory` allows.
    pub pages_total: u64,
    /// Page size in bytes.
    pub page_size: u64,
}

impl ArbiterView<'_> {
    /// The view of pool `p`.
    pub fn pool(&self, p: PoolId) -> &PoolView {
        &self.pools[p.0 as usize]
    }

    /// Pages not owned by any pool.
    pub fn free_pages(&self) -> u64 {
        self.pages_total.saturating_sub(self.pages_used)
    }
}

/// The arbiter's answer to "memory is full: who evicts?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    /// This pool evicts one item chosen by its own policy.
    Pool(PoolId),
    /// Free competition, as Redis with one database per pool: when the evicting pools share one
    /// sampled policy, K keys of every pool go into one shared eviction pool and its best live
    /// entry is evicted; random policies take turns between pools; with mixed policies each pool
    /// proposes its own candidate and the largest score is evicted.
    Coldest,
    /// Nothing may be evicted for this requester: the write fails with OOM.
    Nothing,
}

/// The partitioning decision, replaceable by controllers.
///
/// Contract: the engine guarantees `view` is current; the arbiter MUST NOT allow growth past
/// `pages_total` (the engine checks it again regardless, so a wrong arbiter cannot break the
/// `maxmemory` bound).
pub trait Arbiter: Send + Debug {
    /// A short name (`shared`, `static`).
    fn name(&self) -> &'static str;

    /// May pool `p` take a page from the free list?
    fn may_grow(&self, view: &ArbiterView<'_>, p: PoolId) -> bool;

    /// May pool `p` take a page from pool `from` (evicting what it holds)?
    fn may_reclaim_from(&self, view: &ArbiterView<'_>, p: PoolId, from: PoolId) -> bool;

    /// Memory is full for `p`: which pool gives up an item?
    fn victim(&mut self, view: &ArbiterView<'_>, p: PoolId) -> Victim;

    /// A controller's page targets per pool (`None`: no target). Arbiters that do not follow
    /// targets ignore them.
    fn set_targets(&mut self, _targets: &[Option<u64>]) {}

    /// Whether free pages held for pools below their target may be lent to the others
    /// ([`crate::control::Decision::lend_free_pages`]). Arbiters that do not follow targets
    /// ignore it.
    fn set_lending(&mut self, _lend: bool) {}
}

/// Free competition: budgets are ignored, any pool takes free pages, the coldest candidate over
/// all pools is evicted (Redis with one database per tenant).
#[derive(Debug, Default, Clone)]
pub struct SharedArbiter;

impl Arbiter for SharedArbiter {
    fn name(&self) -> &'static str {
        "shared"
    }

    fn may_grow(&self, view: &ArbiterView<'_>, _p: PoolId) -> bool {
        view.free_pages() > 0
    }

    fn may_reclaim_from(&self, _view: &ArbiterView<'_>, _p: PoolId, _from: PoolId) -> bool {
        true
    }

    fn victim(&mut self, _view: &ArbiterView<'_>, _p: PoolId) -> Victim {
        Victim::Coldest
    }
}

/// Static budgets: a pool never grows past `max_pages`; free pages needed to bring other pools
/// up to their floor are reserved for them; a pool below its floor takes pages from pools above
/// theirs; otherwise a pool evicts only its own items.
#[derive(Debug, Default, Clone)]
pub struct StaticArbiter;

impl StaticArbiter {
    /// The pool (other than `p`) furthest above its floor that can evict.
    fn richest_other(view: &ArbiterView<'_>, p: PoolId) -> Option<PoolId> {
        view.pools
            .iter()
            .filter(|v| v.pool != p && v.pages > v.min_pages && (v.evicts || v.items == 0))
            .max_by_key(|v| (v.pages - v.min_pages, std::cmp::Reverse(v.pool.0)))
            .map(|v| v.pool)
    }
}

impl Arbiter for StaticArbiter {
    fn name(&self) -> &'static str {
        "static"
    }

    fn may_grow(&self, view: &ArbiterView<'_>, p: PoolId) -> bool {
        let me = view.pool(p);
        if me.max_pages.is_some_and(|m| me.pages >= m) {
            return false;
        }
        let free = view.free_pages();
        if free == 0 {
            return false;
        }
        if me.pages < me.min_pages {
            return true;
        }
        let reserved: u64 = view
            .pools
            .iter()
            .filter(|v| v.pool != p)
            .map(|v| v.min_pages.saturating_sub(v.pages))
            .sum();
        free > reserved
    }

    fn may_reclaim_from(&self, view: &ArbiterView<'_>, p: PoolId, from: PoolId) -> bool {
        if p == from {
            return true;
        }
        let me = view.pool(p);
        let other = view.pool(from);
        let over_max = other.max_pages.is_some_and(|m| other.pages > m);
        let under_max = me.max_pages.is_none_or(|m| me.pages < m);
        over_max && under_max || (me.pages < me.min_pages && other.pages > other.min_pages)
    }

    fn victim(&mut self, view: &ArbiterView<'_>, p: PoolId) -> Victim {
        let me = view.pool(p);
        if me.pages < me.min_pages
            && let Some(r) = Self::richest_other(view, p)
        {
            return Victim::Pool(r);
        }
        if me.items > 0 {
            Victim::Pool(p)
        } else {
            Victim::Nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(pool: u32, pages: u64, min: u64, max: Option<u64>, items: u64) -> PoolView {
        PoolView {
            pool: PoolId(pool),
            pages,
            items,
            free_chunk_bytes: 0,
            min_pages: min,
            max_pages: max,
            evicts: true,
        }
    }

    #[test]
    fn static_respects_caps_floors_and_reservations() {
        let pools = [pv(0, 2, 0, Some(2), 10), pv(1, 1, 4, None, 5)];
        let v = ArbiterView {
            pools: &pools,
            pages_used: 3,
            pages_total: 6,
            page_size: 4096,
        };
        let a = StaticArbiter;
        assert!(!a.may_grow(&v, PoolId(0)), "at its cap");
        assert!(a.may_grow(&v, PoolId(1)), "under its floor");
        let pools2 = [pv(0, 2, 0, Some(5), 10), pv(1, 1, 4, None, 5)];
        let v2 = ArbiterView {
            pools: &pools2,
            ..v
        };
        assert!(
            !a.may_grow(&v2, PoolId(0)),
            "3 free pages are reserved for pool 1's floor"
        );
        let mut a = StaticArbiter;
        let full = [pv(0, 5, 0, None, 10), pv(1, 1, 4, None, 5)];
        let v3 = ArbiterView {
            pools: &full,
            pages_used: 6,
            ..v
        };
        assert_eq!(a.victim(&v3, PoolId(1)), Victim::Pool(PoolId(0)));
        assert!(a.may_reclaim_from(&v3, PoolId(1), PoolId(0)));
        assert!(!a.may_reclaim_from(&v3, PoolId(0), PoolId(1)));
        assert_eq!(a.victim(&v3, PoolId(0)), Victim::Pool(PoolId(0)));
        let empty = [pv(0, 6, 0, None, 10), pv(1, 0, 0, None, 0)];
        let v4 = ArbiterView {
            pools: &empty,
            pages_used: 6,
            ..v
        };
        assert_eq!(a.victim(&v4, PoolId(1)), Victim::Nothing);
    }

    #[test]
    fn shared_is_free_competition() {
        let pools = [pv(0, 6, 0, Some(1), 10)];
        let v = ArbiterView {
            pools: &pools,
            pages_used: 6,
            pages_total: 6,
            page_size: 4096,
        };
        let mut a = SharedArbiter;
        assert!(!a.may_grow(&v, PoolId(0)));
        assert_eq!(a.victim(&v, PoolId(0)), Victim::Coldest);
        let v = ArbiterView {
            pages_total: 7,
            ..v
        };
        assert!(a.may_grow(&v, PoolId(0)), "shared ignores max budgets");
    }
}
