//! Run-time partitioning machinery shared by the controllers that plan pool targets from curves
//! (mPart, pRedis): demand-fill detection, mean item sizes, access rates between decisions,
//! contention detection, per-decision move bounds, the initial allocation, turning a plan into
//! a decision only when it gains enough, and fast-tier targets from the same curves.

use locus_engine::control::{ControlView, CurveRecord, Decision};

use crate::plan::{PlanOptions, PoolCurve, cost_at, plan};

/// Slots of the per-pool table of recent GET misses (demand-fill detection).
const FILL_SLOTS: usize = 1024;

/// Recent GET misses of one pool (direct-mapped by key hash), to recognise demand fills.
#[derive(Clone, Debug)]
pub(crate) struct FillFilter {
    slots: Vec<u64>,
}

impl FillFilter {
    pub(crate) fn new() -> Self {
        FillFilter {
            slots: vec![0; FILL_SLOTS],
        }
    }

    fn tag(h: u64) -> u64 {
        h.max(1)
    }

    /// A GET of `h` missed.
    pub(crate) fn miss(&mut self, h: u64) {
        self.slots[(h >> 7) as usize % FILL_SLOTS] = Self::tag(h);
    }

    /// A SET of `h`: true if it fills a recent miss (forgotten now).
    pub(crate) fn fill(&mut self, h: u64) -> bool {
        let s = &mut self.slots[(h >> 7) as usize % FILL_SLOTS];
        if *s == Self::tag(h) {
            *s = 0;
            true
        } else {
            false
        }
    }
}

/// Running mean of item sizes seen on the data path.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MeanSize {
    sum: f64,
    n: u64,
}

impl MeanSize {
    pub(crate) fn add(&mut self, size: u32) {
        if size > 0 {
            self.sum += f64::from(size);
            self.n += 1;
        }
    }

    pub(crate) fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// GETs per pool since the previous decision, from the cumulative counters of the view.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rates {
    last: Vec<u64>,
}

impl Rates {
    /// The GETs of each pool since the last call; all-zero windows fall back to cumulative.
    pub(crate) fn window(&mut self, view: &ControlView<'_>) -> Vec<f64> {
        let now: Vec<u64> = view.pools.iter().map(|p| p.hits + p.misses).collect();
        self.last.resize(now.len(), 0);
        let d: Vec<f64> = now
            .iter()
            .zip(&self.last)
            .map(|(n, l)| n.saturating_sub(*l) as f64)
            .collect();
        self.last = now.clone();
        if d.iter().all(|x| *x == 0.0) {
            now.iter().map(|x| *x as f64).collect()
        } else {
            d
        }
    }
}

/// Whether pools compete for memory yet: memory has filled (within a page per pool), or some
/// pool evicted (a pool held at its target evicts before memory is full). Before that the curves
/// are young (most samples still wait for their reuse) and a plan on them would only misplace
/// memory nobody needs yet. Sticky: once contended, always contended.
#[derive(Clone, Debug, Default)]
pub(crate) struct Contention {
    evictions: u64,
    seen: bool,
}

impl Contention {
    /// Updates from the view; true once memory has been contended.
    pub(crate) fn update(&mut self, view: &ControlView<'_>) -> bool {
        let ev: u64 = view.pools.iter().map(|p| p.evictions).sum();
        if ev > self.evictions || view.pages_used + view.pools.len() as u64 >= view.pages_total {
            self.seen = true;
        }
        self.evictions = ev;
        self.seen
    }
}

/// Floors and caps per pool for the DP: the tenant's static budget, narrowed to
/// `current ± max_change·max(current, pages_total/pools)` when `max_change > 0`.
pub(crate) fn bounds(view: &ControlView<'_>, max_change: f64) -> (Vec<u64>, Vec<Option<u64>>) {
    let n = view.pools.len().max(1) as u64;
    let fair = view.pages_total / n;
    view.pools
        .iter()
        .map(|p| {
            let cap = p.max_pages;
            let floor = p.min_pages.min(cap.unwrap_or(u64::MAX));
            if max_change <= 0.0 {
                return (floor, cap);
            }
            let cur = p.target_pages.unwrap_or(p.pages);
            let delta = (max_change * cur.max(fair) as f64).ceil() as u64;
            let hi = cur.saturating_add(delta).min(cap.unwrap_or(u64::MAX));
            let lo = cur.saturating_sub(delta).max(floor).min(hi);
            (lo, Some(hi))
        })
        .unzip()
}

/// The initial targets (pages, or shares of `pages_total`), sized to the pools; no targets
/// when neither is given.
pub(crate) fn initial_decision(
    initial: &[u64],
    shares: &[f64],
    pages_total: u64,
    pools: usize,
    note: &str,
) -> Decision {
    if initial.is_empty() && shares.is_empty() {
        return Decision {
            notes: vec![(note.into(), 0.0)],
            ..Decision::default()
        };
    }
    let mut t = if initial.is_empty() {
        shares
            .iter()
            .map(|x| (x * pages_total as f64).floor() as u64)
            .collect()
    } else {
        initial.to_vec()
    };
    t.resize(pools, 0);
    Decision {
        pool_pages: Some(t),
        notes: vec![(note.into(), 0.0)],
        ..Decision::default()
    }
}

/// The plan for `curves` as a decision, unless the targets in force are within `min_gain`
/// (relative) of its cost: then they are kept, so noise in the curves does not move pages (each
/// released page evicts what it holds). A failed plan keeps the targets too.
pub(crate) fn planned_decision(
    name: &str,
    curves: &[PoolCurve],
    opts: &PlanOptions,
    view: &ControlView<'_>,
    min_gain: f64,
    records: Vec<CurveRecord>,
    mut notes: Vec<(String, f64)>,
) -> Decision {
    let fast_pages = fast_plan(curves, opts, view);
    let keep = |notes: Vec<(String, f64)>, records| Decision {
        fast_pages: fast_pages.clone(),
        curves: records,
        notes,
        ..Decision::default()
    };
    let p = match plan(curves, opts) {
        Ok(p) => p,
        Err(_) => {
            notes.push((format!("{name}.plan_failed"), 1.0));
            return keep(notes, records);
        }
    };
    notes.push(("objective".into(), p.cost));
    let current: Option<Vec<u64>> = view.pools.iter().map(|q| q.target_pages).collect();
    if let Some(cur) = current
        && min_gain > 0.0
        && cur.iter().sum::<u64>() <= opts.pages_total
    {
        let now = cost_at(curves, &cur, opts.objective);
        if now - p.cost <= min_gain * now.abs() {
            notes.push((format!("{name}.kept"), 1.0));
            return keep(notes, records);
        }
    }
    Decision {
        pool_pages: Some(p.pages),
        fast_pages,
        curves: records,
        notes,
        ..Decision::default()
    }
}

/// Fast-tier page targets on a tiered engine (sdTMM's multi-tenant partitioning, dissertation
/// section 5.1.5): the same plan over the same curves (LRU models, as the fast tier, which
/// demotes its exact LRU tail) with the fast tier's pages as the memory, no floors (tenant
/// floors are about all memory), the tenant caps kept. `None` untiered, or when no plan fits.
pub(crate) fn fast_plan(
    curves: &[PoolCurve],
    opts: &PlanOptions,
    view: &ControlView<'_>,
) -> Option<Vec<u64>> {
    let fast = view.fast_pages.filter(|&f| f > 0)?;
    let o = PlanOptions {
        pages_total: fast,
        step: opts.step,
        objective: opts.objective,
        floors: Vec::new(),
        caps: view.pools.iter().map(|p| p.max_pages).collect(),
    };
    plan(curves, &o).ok().map(|p| p.pages)
}

#[cfg(test)]
mod fast_tests {
    use locus_engine::control::PoolState;

    use super::*;
    use locus_alloc::Objective;

    fn view(pools: &[PoolState], fast: Option<u64>) -> ControlView<'_> {
        ControlView {
            now_us: 0,
            requests: 1,
            interval: 0,
            page_size: 4096,
            pages_total: 100,
            pages_used: 0,
            fast_pages: fast,
            pools,
        }
    }

    #[test]
    fn the_fast_tier_goes_where_its_pages_save_misses() {
        // Pool 0's misses fall to 0.1 at 8 pages; pool 1 loops over 200 pages (flat below).
        let steep: Vec<f64> = (0..=100)
            .map(|p| if p >= 8 { 0.1 } else { 1.0 - 0.1125 * p as f64 })
            .collect();
        let flat = vec![1.0; 101];
        let curves = [
            PoolCurve {
                miss_ratio: steep,
                rate: 1.0,
                penalty_us: 0.0,
            },
            PoolCurve {
                miss_ratio: flat,
                rate: 1.0,
                penalty_us: 0.0,
            },
        ];
        let opts = PlanOptions {
            pages_total: 100,
            step: 1,
            objective: Objective::Misses,
            floors: vec![10, 10],
            caps: Vec::new(),
        };
        let pools = [PoolState::default(), PoolState::default()];
        assert_eq!(
            fast_plan(&curves, &opts, &view(&pools, None)),
            None,
            "untiered"
        );
        let t = fast_plan(&curves, &opts, &view(&pools, Some(20))).unwrap();
        assert!(t.iter().sum::<u64>() <= 20, "{t:?}");
        assert!(t[0] >= 8 && t[0] > t[1], "{t:?}");
        // A planned decision carries them.
        let d = planned_decision(
            "t",
            &curves,
            &opts,
            &view(&pools, Some(20)),
            0.0,
            Vec::new(),
            Vec::new(),
        );
        assert_eq!(d.fast_pages, Some(t));
    }
}
