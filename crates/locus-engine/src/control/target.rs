//! The arbiter a controller drives: pools converge to page targets by where new pages go and who
//! evicts, as kRedis and pRedis repartition Redis through eviction.
//!
//! * Tenant `max` caps hold under every controller: a pool at its cap neither grows nor takes
//!   pages, and evicts its own items; targets are clamped into `[min, max]` by the engine.
//! * No targets yet (or `shared`): free competition, exactly [`crate::arbiter::SharedArbiter`].
//! * With targets: a pool below its target takes free pages, then pages of pools above theirs
//!   (which evict what those pages held); a pool at or above its target evicts its own items.
//!   Free pages beyond the sum of the other pools' deficits may still be taken, so memory is
//!   never left idle while a pool needs it. Pools above target also release pages at interval
//!   boundaries (the engine's `max_moves` bound).
//! * Lending (`Decision::lend_free_pages`): any pool may take any free page, even one the
//!   other pools' deficits would hold; a pool below its target takes it back from the pools
//!   above theirs when it needs it.

use crate::arbiter::{Arbiter, ArbiterView, Victim};
use crate::ids::PoolId;

/// Page targets per pool (`None`: no target for that pool).
#[derive(Debug, Default, Clone)]
pub(crate) struct TargetArbiter {
    pub(crate) targets: Vec<Option<u64>>,
    /// Free pages held for pools below their target may be lent to the others.
    pub(crate) lend: bool,
}

impl TargetArbiter {
    fn target(&self, p: PoolId) -> Option<u64> {
        self.targets.get(p.0 as usize).copied().flatten()
    }

    fn active(&self) -> bool {
        self.targets.iter().any(Option::is_some)
    }

    /// Whether `p` is at its static cap (tenant `max`), which holds under every controller.
    fn capped(view: &ArbiterView<'_>, p: PoolId) -> bool {
        let v = view.pool(p);
        v.max_pages.is_some_and(|m| v.pages >= m)
    }

    fn below(&self, view: &ArbiterView<'_>, p: PoolId) -> bool {
        self.target(p).is_some_and(|t| view.pool(p).pages < t)
    }

    fn above(&self, view: &ArbiterView<'_>, p: PoolId) -> bool {
        let v = view.pool(p);
        self.target(p).is_some_and(|t| v.pages > t) || v.max_pages.is_some_and(|m| v.pages > m)
    }

    /// The pool (other than `p`) furthest above its target that can give something back.
    fn most_above(&self, view: &ArbiterView<'_>, p: PoolId) -> Option<PoolId> {
        view.pools
            .iter()
            .filter(|v| v.pool != p && (v.evicts || v.items == 0))
            .filter_map(|v| {
                let t = match (self.target(v.pool), v.max_pages) {
                    (Some(t), Some(m)) => t.min(m),
                    (t, m) => t.or(m)?,
                };
                v.pages
                    .checked_sub(t)
                    .filter(|&over| over > 0)
                    .map(|over| (over, v.pool))
            })
            .max_by_key(|(over, pool)| (*over, std::cmp::Reverse(pool.0)))
            .map(|(_, pool)| pool)
    }
}

impl Arbiter for TargetArbiter {
    fn name(&self) -> &'static str {
        "target"
    }

    fn may_grow(&self, view: &ArbiterView<'_>, p: PoolId) -> bool {
        let free = view.free_pages();
        if free == 0 || Self::capped(view, p) {
            return false;
        }
        if !self.active() || self.below(view, p) || self.lend {
            return true;
        }
        let reserved: u64 = view
            .pools
            .iter()
            .filter(|v| v.pool != p)
            .filter_map(|v| Some(self.target(v.pool)?.saturating_sub(v.pages)))
            .sum();
        free > reserved
    }

    fn may_reclaim_from(&self, view: &ArbiterView<'_>, p: PoolId, from: PoolId) -> bool {
        if p == from {
            return true;
        }
        if Self::capped(view, p) {
            return false;
        }
        if !self.active() {
            return true;
        }
        self.above(view, from) && !self.above(view, p)
    }

    fn set_targets(&mut self, targets: &[Option<u64>]) {
        self.targets = targets.to_vec();
    }

    fn set_lending(&mut self, lend: bool) {
        self.lend = lend;
    }

    fn victim(&mut self, view: &ArbiterView<'_>, p: PoolId) -> Victim {
        if Self::capped(view, p) && view.pool(p).items > 0 {
            return Victim::Pool(p);
        }
        if !self.active() {
            return Victim::Coldest;
        }
        if self.below(view, p)
            && let Some(r) = self.most_above(view, p)
        {
            return Victim::Pool(r);
        }
        if view.pool(p).items > 0 {
            Victim::Pool(p)
        } else if let Some(r) = self.most_above(view, p) {
            Victim::Pool(r)
        } else {
            Victim::Nothing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arbiter::PoolView;

    fn pv(pool: u32, pages: u64, items: u64) -> PoolView {
        PoolView {
            pool: PoolId(pool),
            pages,
            items,
            free_chunk_bytes: 0,
            min_pages: 0,
            max_pages: None,
            evicts: true,
        }
    }

    #[test]
    fn converges_toward_targets() {
        let pools = [pv(0, 6, 60), pv(1, 2, 20)];
        let full = ArbiterView {
            pools: &pools,
            pages_used: 8,
            pages_total: 8,
            page_size: 4096,
        };
        let mut a = TargetArbiter::default();
        assert_eq!(
            a.victim(&full, PoolId(1)),
            Victim::Coldest,
            "no targets: shared"
        );
        a.targets = vec![Some(4), Some(4)];
        assert_eq!(a.victim(&full, PoolId(1)), Victim::Pool(PoolId(0)));
        assert!(a.may_reclaim_from(&full, PoolId(1), PoolId(0)));
        assert!(!a.may_reclaim_from(&full, PoolId(0), PoolId(1)));
        assert_eq!(a.victim(&full, PoolId(0)), Victim::Pool(PoolId(0)));
        let pools = [pv(0, 3, 30), pv(1, 2, 20)];
        let roomy = ArbiterView {
            pools: &pools,
            pages_used: 5,
            pages_total: 8,
            page_size: 4096,
        };
        assert!(a.may_grow(&roomy, PoolId(0)), "below target");
        a.targets = vec![Some(3), Some(5)];
        assert!(
            !a.may_grow(&roomy, PoolId(0)),
            "3 free pages are pool 1's deficit"
        );
        a.targets = vec![Some(3), Some(3)];
        assert!(
            a.may_grow(&roomy, PoolId(0)),
            "spare pages are never left idle"
        );
        a.targets = vec![Some(3), Some(5)];
        a.set_lending(true);
        assert!(
            a.may_grow(&roomy, PoolId(0)),
            "lending: pool 1's unclaimed pages may be used"
        );
        // Once memory is full, the owner below its target takes its pages back.
        let pools = [pv(0, 5, 50), pv(1, 3, 30)];
        let lent = ArbiterView {
            pools: &pools,
            pages_used: 8,
            pages_total: 8,
            page_size: 4096,
        };
        assert_eq!(a.victim(&lent, PoolId(1)), Victim::Pool(PoolId(0)));
        assert!(a.may_reclaim_from(&lent, PoolId(1), PoolId(0)));
        assert!(!a.may_reclaim_from(&lent, PoolId(0), PoolId(1)));
    }
}
