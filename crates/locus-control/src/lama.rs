//! `lama`: locality-aware slab reallocation (Hu et al., *LAMA*, IEEE TC; paper 002 sections
//! 3.2–3.4, 5.4).
//!
//! Every repartition, per pool:
//!
//! 1. Each size class's request stream (GET hits, misses attributed through their filling SET,
//!    writes; see `slabs`) has fed a footprint profiler (`locus_mrc::Footprint`) over the
//!    repartitioning window `M`, giving `MR[i][j]`, the class's miss ratio with `j` pages
//!    (`j · slots_per_page` items), `j = 0..=MAX` (the pool's pages). The conversion is
//!    formula 2 (with `≤`) plus a window-edge correction ([`window_mrc`]): a reuse of time `t`
//!    shows in an `n`-access window only if its first access falls inside it (`n − t` chances
//!    in `n`), so it counts `n / (n − t)` hits. Without it every reuse longer than the window
//!    is a miss at every size and a class's curve flattens early (on the ETC-like experiment
//!    the uncorrected curves of a 250k-access window predicted 41% more misses than happened
//!    at the current allocation; corrected, within 1%).
//! 2. Cost per class (section 3.4, step 1): `OPT_MR`: `MR[i][j] · length(T[i])`; `OPT_ART`:
//!    `(MR[i][j] · T_m(i) + (1 − MR[i][j]) · T_h(i)) · length(T[i])` (equation 4), each class
//!    with its own times: `T_h(i)` = `hit_us` and `T_m(i)` = the pool's miss penalty (measured
//!    or hinted; the `miss_us` setting when unknown), each plus a transfer time per KiB of the
//!    class's chunk (`hit_us_per_kib`, `miss_us_per_kib`). The paper defines per-class times
//!    but gives no model for them; the per-KiB one is ours.
//! 3. Algorithm 1 (the DP, `locus_alloc::solve_dp`) with every class within `max_moves` pages of
//!    its current allocation (the radius-N variant).
//! 4. If the predicted cost falls by more than `min_gain` (relative), at most `max_moves` pages
//!    move, each from a class above its new allocation with the lowest PSA risk
//!    (requests / pages) to the class furthest below its own.
//!
//! The window `M` follows equation 8: the profilers keep running across decision intervals
//! until every class that misses has seen as many misses (new items) as it would hold at
//! `min(2 S_i, S_i + N)` pages, or `max_intervals` intervals have passed; then LAMA
//! repartitions and the profilers restart. (One interval per window, the first version, left
//! the small-item classes' curves flat: LAMA settled at 60% of the slab oracle's gain.)
//! `objective = "qos"` (section 4, Algorithm 2) partitions at two levels instead: the pools
//! (tenants) first, every pool with a `qos_hit_ratio` target getting the least pages whose
//! optimal class split reaches it, the rest of the memory going where it saves the most
//! misses, then each pool's pages among its classes (see `Lama::decide_qos`).
//!
//! Runs the engine in [`locus_engine::ClassMode::Manual`] (memcached: class-local eviction).

use locus_alloc::{DpProblem, solve_dp};
use locus_mrc::{Footprint, Profiler};

use crate::slabs::{ClassTracker, class_pages, slots_per_page};
use locus_engine::control::{
    Access, ControlError, ControlView, Controller, CurveRecord, Decision, Evicted, PageMove,
    Settings,
};
use locus_engine::ids::{ClassId, PoolId};

/// Classes with less than this share of a pool's misses in the window do not lengthen it
/// (equation 8's "classes with few or no misses").
const MIN_MISS_SHARE: f64 = 0.01;

/// What LAMA minimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LamaObjective {
    /// Total misses (`LAMA_OPT_MR`).
    MissRatio,
    /// Average response time (`LAMA_OPT_ART`), each class with its own hit and miss times
    /// ([`Lama::class_times`]).
    ResponseTime,
    /// The QoS partition (section 4): every pool (tenant) with a hit-ratio target
    /// (`qos_hit_ratio`) gets the least memory that meets it, the rest goes where it saves the
    /// most misses, across pools; each pool's share is then split among its classes by misses.
    /// Without targets: one miss-minimising partition of all pools' classes together.
    Qos,
}

/// Settings of [`Lama`].
#[derive(Clone, Debug, PartialEq)]
pub struct LamaConfig {
    /// `misses` (OPT_MR, default), `art` (OPT_ART) or `qos` (the QoS partition).
    pub objective: LamaObjective,
    /// Most pages moved per repartition (the paper's N; default 50).
    pub max_moves: u64,
    /// Hit time in µs for OPT_ART (default 100), before the per-KiB part.
    pub hit_us: f64,
    /// Miss time in µs for OPT_ART when the pool's penalty is unknown (default 1000), before
    /// the per-KiB part.
    pub miss_us: f64,
    /// OPT_ART: µs a hit costs per KiB of the class's chunk (default 8: sending it at about
    /// 1 Gbit/s).
    pub hit_us_per_kib: f64,
    /// OPT_ART: µs a miss costs per KiB of the class's chunk (default 16: fetching it from the
    /// backing store and setting it back, two transfers).
    pub miss_us_per_kib: f64,
    /// `qos`: the least hit ratio per pool, in pool (tenant) order; missing entries and 0 ask
    /// for nothing.
    pub qos_hit_ratio: Vec<f64>,
    /// Least relative cost reduction that justifies moving (default 0.0: any gain).
    pub min_gain: f64,
    /// Highest spatial sampling rate of the footprint profilers (default 1.0: every key).
    pub sample_rate: f64,
    /// Most distinct keys the footprint profilers of one pool (tenant) follow in a window,
    /// shared evenly by the pool's size classes that have seen accesses, at least
    /// [`MIN_CLASS_KEYS`] each (default 16,384): each window samples at the rate that would
    /// have kept the last one within its share, and a window that outgrows twice its share
    /// restarts at a rate scaled down to it, so the profilers' memory stays bounded whatever
    /// the key count and however many classes the values spread over (0: no budget). A
    /// budget per class instead held 16,384 keys in each of the ~20 classes values of 50 to
    /// 5,000 bytes fill, 9.7 MB of hash tables beside a 64 MB cache (issue 28).
    pub sample_keys: u64,
    /// Window-edge correction: a reuse of time `t` is seen in an `n`-access window only when
    /// its first access falls inside, `n - t` chances in `n`, so it counts `n / (n - t)` hits,
    /// the weight capped at `edge_cap`: 0 (default) no cap, 1 no correction (the paper's
    /// formula 2, which counts every reuse longer than the window as a miss).
    pub edge_cap: f64,
    /// Longest profiling window in decision intervals when equation 8 is not met sooner
    /// (default 4); 1 repartitions every interval on that interval's window.
    pub max_intervals: u64,
}

impl Default for LamaConfig {
    fn default() -> Self {
        LamaConfig {
            objective: LamaObjective::MissRatio,
            max_moves: 50,
            hit_us: 100.0,
            miss_us: 1000.0,
            hit_us_per_kib: 8.0,
            miss_us_per_kib: 16.0,
            qos_hit_ratio: Vec::new(),
            min_gain: 0.0,
            sample_rate: 1.0,
            sample_keys: 16_384,
            edge_cap: 0.0,
            max_intervals: 4,
        }
    }
}

/// The LAMA controller (module documentation).
#[derive(Debug)]
pub struct Lama {
    cfg: LamaConfig,
    tracker: ClassTracker,
    /// Footprint profilers by pool, then by class (`None`: the class has seen no access).
    /// Indexed, not hashed: `on_access` runs for every request.
    profilers: Vec<Vec<Option<ProfilerBox>>>,
    /// Classes with a profiler, by pool: they share the pool's `sample_keys`.
    active: Vec<usize>,
    /// Largest item (+ header) seen per class, 0 for none: the chunk-size estimate for a class
    /// that owns no page yet (the view lists only classes with pages or items).
    seen_chunk: Vec<u32>,
    /// Decision intervals the current profiling window spans.
    window_intervals: u64,
}

/// `Footprint` is not `Debug`; this wrapper is.
struct ProfilerBox(Footprint);

impl std::fmt::Debug for ProfilerBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Footprint")
    }
}

impl Lama {
    /// A LAMA controller.
    pub fn new(cfg: LamaConfig) -> Self {
        Lama {
            cfg,
            tracker: ClassTracker::default(),
            profilers: Vec::new(),
            active: Vec::new(),
            seen_chunk: Vec::new(),
            window_intervals: 0,
        }
    }

    /// The largest item (+ header) `class` has seen, if any.
    fn seen(&self, class: ClassId) -> Option<u32> {
        self.seen_chunk
            .get(class.0 as usize)
            .copied()
            .filter(|&b| b > 0)
    }

    /// Miss ratios of (pool, class) at 0..=max pages.
    fn miss_ratios(&self, pool: PoolId, class: ClassId, slots: u64, max: u64) -> Option<Vec<f64>> {
        let p = self
            .profilers
            .get(pool.0 as usize)?
            .get(class.0 as usize)?
            .as_ref()?;
        let caps: Vec<f64> = (0..=max).map(|j| (j * slots) as f64).collect();
        let cap = if self.cfg.edge_cap <= 0.0 {
            f64::INFINITY
        } else {
            self.cfg.edge_cap
        };
        if cap > 1.0 {
            let f = &p.0;
            return Some(window_mrc(
                &f.footprint_curve(),
                f.reuse_times(),
                f.full_len(),
                f.rate(),
                &caps,
                cap,
            ));
        }
        let mrc = p.0.mrc(&caps).ok()?;
        Some(mrc.points().iter().map(|&(_, m)| m).collect())
    }

    /// Equation 8 (section 5.4): the window must have seen, in every class that misses, as many
    /// misses (new items) as the class holds at `min(2 S, S + N)` pages, so that its curve
    /// reaches that far. Classes with under [`MIN_MISS_SHARE`] of the pool's misses are ignored
    /// (the paper's "few or no misses").
    fn window_long_enough(&self, view: &ControlView<'_>, pool: PoolId) -> bool {
        let ps = &view.pools[pool.0 as usize];
        let classes = self.tracker.active_classes(pool);
        let total: u64 = classes
            .iter()
            .map(|&c| self.tracker.get(pool, c).misses)
            .sum();
        if total == 0 {
            return true;
        }
        classes.iter().all(|&c| {
            let w = self.tracker.get(pool, c);
            if (w.misses as f64) < MIN_MISS_SHARE * total as f64 {
                return true;
            }
            let Some(chunk) = view_chunk(ps, c).or_else(|| self.seen(c)) else {
                return true;
            };
            let s = class_pages(ps, c);
            let want = (2 * s).min(s + self.cfg.max_moves) * slots_per_page(view, chunk);
            w.misses >= want
        })
    }

    /// The per-class curves of `pool` at `0..=max` pages (the curves used are recorded in `d`).
    fn profile_pool(
        &self,
        view: &ControlView<'_>,
        pool: PoolId,
        max: u64,
        d: &mut Decision,
    ) -> PoolCurves {
        let ps = &view.pools[pool.0 as usize];
        let mut classes: Vec<ClassId> = ps.classes.iter().map(|c| c.class).collect();
        for c in self.tracker.active_classes(pool) {
            if !classes.contains(&c) {
                classes.push(c);
            }
        }
        classes.sort();
        let t_m = if ps.penalty_us > 0.0 {
            ps.penalty_us
        } else {
            self.cfg.miss_us
        };
        let mut out = PoolCurves::default();
        for &c in &classes {
            let w = self.tracker.get(pool, c);
            let chunk = view_chunk(ps, c).or_else(|| self.seen(c)).unwrap_or(0);
            let cur = class_pages(ps, c);
            let n = w.requests as f64;
            let mr = if chunk > 0 && n > 0.0 {
                let slots = slots_per_page(view, chunk);
                let mr = self.miss_ratios(pool, c, slots, max);
                if let Some(m) = &mr
                    && let Ok(curve) = locus_mrc::Mrc::new(
                        locus_mrc::Unit::Objects,
                        locus_mrc::Metric::Requests,
                        m.iter().enumerate().map(|(j, &x)| (j as f64, x)).collect(),
                    )
                {
                    d.curves.push(CurveRecord {
                        pool,
                        label: format!("footprint class {} (pages)", c.0),
                        mrc: curve,
                    });
                }
                mr
            } else {
                None
            };
            let (t_h, t_mi) = self.class_times(chunk, t_m);
            let cost: Vec<f64> = match mr {
                Some(mr) => mr
                    .iter()
                    .map(|&m| match self.cfg.objective {
                        LamaObjective::MissRatio | LamaObjective::Qos => m * n,
                        LamaObjective::ResponseTime => (m * t_mi + (1.0 - m) * t_h) * n,
                    })
                    .collect(),
                None => vec![0.0; max as usize + 1],
            };
            out.items.push((pool, c));
            out.costs.push(cost);
            out.current.push(cur);
            out.risk.push(n / cur.max(1) as f64);
            out.requests += n;
        }
        out
    }

    /// OPT_ART's times of a class (equation 4's `T_h(i)` and `T_m(i)`), in µs: the fixed hit
    /// time and miss time (`t_m`: the pool's penalty) plus a transfer time per KiB of the
    /// class's chunk, so that a class of larger items costs more per hit and per miss.
    pub fn class_times(&self, chunk_bytes: u32, t_m: f64) -> (f64, f64) {
        let kib = f64::from(chunk_bytes) / 1024.0;
        (
            self.cfg.hit_us + self.cfg.hit_us_per_kib * kib,
            t_m + self.cfg.miss_us_per_kib * kib,
        )
    }

    fn decide_pool(&mut self, view: &ControlView<'_>, pool: PoolId, d: &mut Decision) {
        let max = view.pools[pool.0 as usize].pages;
        if max == 0 {
            return;
        }
        let pc = self.profile_pool(view, pool, max, d);
        let now_cost = pc.cost_at(&pc.current);
        let problem = DpProblem {
            costs: pc.costs.clone(),
            total: max,
            floors: Vec::new(),
            caps: Vec::new(),
            current: Some(pc.current.clone()),
            max_move: Some(self.cfg.max_moves),
        };
        let Ok(best) = solve_dp(&problem) else {
            d.notes.push((format!("pool{}.dp_failed", pool.0), 1.0));
            return;
        };
        d.notes.push((format!("pool{}.cost_now", pool.0), now_cost));
        d.notes
            .push((format!("pool{}.cost_planned", pool.0), best.cost));
        if now_cost - best.cost <= self.cfg.min_gain * now_cost.abs() || best.cost >= now_cost {
            return;
        }
        let moved = self.emit_moves(&pc, &best.units, d);
        d.notes
            .push((format!("pool{}.moves", pool.0), moved as f64));
    }

    /// Moves pages from the items above `target` to those below it, at most `max_moves`:
    /// donors give lowest PSA risk first, receivers take largest deficit first. Returns the
    /// moves made.
    fn emit_moves(&self, pc: &PoolCurves, target: &[u64], d: &mut Decision) -> u64 {
        let current = &pc.current;
        let mut surplus: Vec<(usize, u64)> = (0..pc.items.len())
            .filter(|&i| current[i] > target[i])
            .map(|i| (i, current[i] - target[i]))
            .collect();
        surplus.sort_by(|a, b| pc.risk[a.0].total_cmp(&pc.risk[b.0]).then(a.0.cmp(&b.0)));
        let mut deficit: Vec<(usize, u64)> = (0..pc.items.len())
            .filter(|&i| target[i] > current[i])
            .map(|i| (i, target[i] - current[i]))
            .collect();
        deficit.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut moved = 0u64;
        let (mut si, mut di) = (0, 0);
        while moved < self.cfg.max_moves && si < surplus.len() && di < deficit.len() {
            d.moves.push(PageMove {
                from: pc.items[surplus[si].0],
                to: pc.items[deficit[di].0],
            });
            moved += 1;
            surplus[si].1 -= 1;
            deficit[di].1 -= 1;
            if surplus[si].1 == 0 {
                si += 1;
            }
            if deficit[di].1 == 0 {
                di += 1;
            }
        }
        moved
    }

    /// The QoS partition (section 4, Algorithm 2, and section 5.7): the pools (tenants) first,
    /// each pool's curve being its classes split optimally at every size
    /// ([`locus_alloc::group_cost`]); every pool with a hit-ratio target gets at least the
    /// least pages at which its curve reaches it ([`locus_alloc::qos_partition`]), the rest
    /// goes where it saves the most misses; then each pool's pages are split among its
    /// classes (Algorithm 1). A target out of reach (the curve never gets there, or the targets
    /// together need more than the memory) is lowered to the best the pool's curve reaches,
    /// noted `poolN.qos_short`; if even that does not fit, the split minimises misses alone.
    fn decide_qos(&mut self, view: &ControlView<'_>, d: &mut Decision) {
        let total = view.pages_total;
        if total == 0 || view.pools.is_empty() {
            return;
        }
        let mut all = PoolCurves::default();
        let mut groups = Vec::with_capacity(view.pools.len());
        let mut pools = Vec::with_capacity(view.pools.len());
        for p in view.pools {
            let pc = self.profile_pool(view, p.pool, total, d);
            let Ok(g) = locus_alloc::group_cost(&pc.costs, total) else {
                d.notes.push(("qos.group_failed".into(), 1.0));
                return;
            };
            groups.push(g);
            pools.push(pc);
        }
        if pools.iter().all(|pc| pc.requests == 0.0) {
            // Nothing profiled yet (the first decision): every curve is flat, and a plan would
            // hand the whole memory to the first pool.
            return;
        }
        let hit: Vec<Vec<f64>> = groups
            .iter()
            .zip(&pools)
            .map(|(g, pc)| {
                g.iter()
                    .map(|&m| {
                        if pc.requests > 0.0 {
                            1.0 - m / pc.requests
                        } else {
                            1.0
                        }
                    })
                    .collect()
            })
            .collect();
        let mut floors: Vec<f64> = (0..view.pools.len())
            .map(|i| self.cfg.qos_hit_ratio.get(i).copied().unwrap_or(0.0))
            .collect();
        let problem = DpProblem {
            costs: groups,
            total,
            current: Some(view.pools.iter().map(|p| p.pages).collect()),
            ..DpProblem::default()
        };
        let plan = match locus_alloc::qos_partition(&problem, &hit, &floors) {
            Ok(a) => Ok(a),
            Err(locus_alloc::AllocError::Infeasible { .. }) => {
                for (i, f) in floors.iter_mut().enumerate() {
                    let best = hit[i].iter().copied().fold(0.0, f64::max);
                    if *f > best {
                        d.notes.push((format!("pool{i}.qos_short"), *f - best));
                        *f = best;
                    }
                }
                locus_alloc::qos_partition(&problem, &hit, &floors).or_else(|_| {
                    d.notes.push(("qos.infeasible".into(), 1.0));
                    solve_dp(&problem)
                })
            }
            Err(e) => Err(e),
        };
        let Ok(plan) = plan else {
            d.notes.push(("qos.dp_failed".into(), 1.0));
            return;
        };
        let mut target = Vec::new();
        for (i, pc) in pools.iter().enumerate() {
            let pages = plan.units[i];
            d.notes.push((format!("pool{i}.qos_pages"), pages as f64));
            d.notes
                .push((format!("pool{i}.qos_hit_planned"), hit[i][pages as usize]));
            let split = solve_dp(&DpProblem {
                costs: pc.costs.clone(),
                total: pages,
                ..DpProblem::default()
            });
            match split {
                Ok(a) => target.extend(a.units),
                Err(_) => {
                    d.notes.push((format!("pool{i}.dp_failed"), 1.0));
                    return;
                }
            }
            all.items.extend(&pc.items);
            all.costs.extend(pc.costs.iter().cloned());
            all.current.extend(&pc.current);
            all.risk.extend(&pc.risk);
        }
        let now_cost = all.cost_at(&all.current);
        d.notes.push(("qos.cost_now".into(), now_cost));
        d.notes.push(("qos.cost_planned".into(), plan.cost));
        d.pool_pages = Some(plan.units.clone());
        let moved = self.emit_moves(&all, &target, d);
        d.notes.push(("qos.moves".into(), moved as f64));
    }
}

/// One pool's classes (or several pools' together) at a decision: the (pool, class) of each,
/// its cost at `0..=max` pages, its pages and PSA risk (requests per page).
#[derive(Debug, Default)]
struct PoolCurves {
    items: Vec<(PoolId, ClassId)>,
    costs: Vec<Vec<f64>>,
    current: Vec<u64>,
    risk: Vec<f64>,
    /// Requests of the window, all classes.
    requests: f64,
}

impl PoolCurves {
    /// The summed cost at `units` pages per item.
    fn cost_at(&self, units: &[u64]) -> f64 {
        self.costs
            .iter()
            .zip(units)
            .map(|(c, &u)| c[(u as usize).min(c.len() - 1)])
            .sum()
    }
}

/// One size class for [`predict_default`] (section 3.5).
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultClass {
    /// `fp(w)` for `w = 0..=n`: the class's average footprint (distinct items) over windows of
    /// `w` of its own requests (`locus_mrc::Footprint::footprint_curve`).
    pub footprint: Vec<f64>,
    /// `q_i`: its share of all requests.
    pub share: f64,
    /// Items a page holds (`I_i`).
    pub slots: u64,
    /// Its miss ratio at `0, 1, 2, ...` pages.
    pub miss_ratio: Vec<f64>,
}

/// [`predict_default`]'s answer.
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultPrediction {
    /// `M`: requests until the cold start has filled the memory (equation 6); `None` when the
    /// classes' items never fill it.
    pub cold_start: Option<f64>,
    /// Pages each class holds once memory is full, in the order given.
    pub pages: Vec<u64>,
    /// The predicted miss ratio at that allocation (equation 3).
    pub miss_ratio: f64,
}

/// The performance of memcached's default allocation, predicted from the classes' footprints
/// (paper 002, section 3.5). A cold cache stores every new item, so after `M` requests class
/// `i` holds `fp_i(M q_i)` items in `ceil(fp_i(M q_i) / I_i)` pages; `M` is the length at which
/// these pages fill the memory (equation 6, with pages for the paper's capacity `C`), found by
/// bisection (each class's pages grow with `M`). The allocation then stays (calcified) and the
/// miss ratio is equation 3 at it. Where several classes take their next page at `M` and only
/// some fit, the lower class indexes get them.
pub fn predict_default(classes: &[DefaultClass], pages_total: u64) -> DefaultPrediction {
    let fp_at = |c: &DefaultClass, w: f64| -> f64 {
        let n = c.footprint.len().saturating_sub(1);
        if n == 0 || w <= 0.0 {
            return 0.0;
        }
        let w = w.min(n as f64);
        let lo = w.floor() as usize;
        let hi = (lo + 1).min(n);
        let f = w - lo as f64;
        c.footprint[lo] * (1.0 - f) + c.footprint[hi] * f
    };
    let pages_at = |m: f64| -> Vec<u64> {
        classes
            .iter()
            .map(|c| {
                (fp_at(c, m * c.share) / c.slots.max(1) as f64 - 1e-9)
                    .ceil()
                    .max(0.0) as u64
            })
            .collect()
    };
    let sum = |p: &[u64]| p.iter().sum::<u64>();
    let end = classes
        .iter()
        .filter(|c| c.share > 0.0)
        .map(|c| c.footprint.len().saturating_sub(1) as f64 / c.share)
        .fold(0.0, f64::max);
    let (cold_start, pages) = if sum(&pages_at(end)) < pages_total {
        (None, pages_at(end))
    } else {
        // Least M whose pages reach the memory: bisect to a request.
        let (mut lo, mut hi) = (0.0, end);
        while hi - lo > 0.5 {
            let mid = (lo + hi) / 2.0;
            if sum(&pages_at(mid)) >= pages_total {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let mut pages = pages_at(lo);
        let next = pages_at(hi);
        let mut left = pages_total.saturating_sub(sum(&pages));
        for (p, n) in pages.iter_mut().zip(&next) {
            let take = (n - *p).min(left);
            *p += take;
            left -= take;
        }
        (Some(hi), pages)
    };
    // Equation 3: the request-weighted miss ratio, i.e. the misses of shares as rates.
    let curves: Vec<crate::PoolCurve> = classes
        .iter()
        .map(|c| crate::PoolCurve {
            miss_ratio: c.miss_ratio.clone(),
            rate: c.share,
            penalty_us: 0.0,
        })
        .collect();
    let shares: f64 = classes.iter().map(|c| c.share).sum();
    let miss_ratio = if shares > 0.0 {
        crate::cost_at(&curves, &pages, locus_alloc::Objective::Misses) / shares
    } else {
        0.0
    };
    DefaultPrediction {
        cold_start,
        pages,
        miss_ratio,
    }
}

/// Miss ratios at `caps` (objects) from one window's footprint `fp[w]` (`w = 0..=n`) and
/// reuse-time histogram `rt`: formula 2 (`≤`) with each reuse of time `t` weighted
/// `min(n / (n - t), cap)` (`LamaConfig::edge_cap`). `full` and `rate`: `_adj` for spatial
/// sampling (accesses the sample should have had count as hits).
pub fn window_mrc(
    fp: &[f64],
    rt: &[u64],
    full: u64,
    rate: f64,
    caps: &[f64],
    cap: f64,
) -> Vec<f64> {
    let n = fp.len().saturating_sub(1) as f64;
    let zero = if rate < 1.0 {
        (full as f64 * rate - n).max(0.0)
    } else {
        0.0
    };
    let total = n + zero;
    if total <= 0.0 {
        return vec![1.0; caps.len()];
    }
    // hits[w]: weighted reuses with time ≤ w.
    let mut out = Vec::with_capacity(caps.len());
    let mut w = 0usize;
    let mut hits = 0.0;
    for &c in caps {
        let c = c * rate + 1e-9;
        while w + 1 < fp.len() && fp[w + 1] <= c {
            w += 1;
            let r = rt.get(w).copied().unwrap_or(0) as f64;
            if r > 0.0 {
                let weight = (n / (n - w as f64).max(1.0)).min(cap.max(1.0));
                hits += r * weight;
            }
        }
        out.push((1.0 - ((zero + hits) / total).min(1.0)).max(0.0));
    }
    out
}

/// The chunk size of class `c` if the pool knows it.
/// `v[i]`, growing `v` with defaults to reach it.
fn grow_to<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

/// Fewest keys a class's profiler may follow in a window, however many classes share the
/// pool's `sample_keys`.
pub const MIN_CLASS_KEYS: usize = 256;

/// A class's share of its pool's key budget `sample_keys` when `active` classes share it (0:
/// no budget).
fn class_budget(sample_keys: u64, active: usize) -> usize {
    if sample_keys == 0 {
        return 0;
    }
    (sample_keys as usize / active.max(1)).max(MIN_CLASS_KEYS)
}

/// The rate at which `tracked` keys seen at `rate` would have been about `budget`, at most `top`
/// and at least the finest rate the filter has.
fn budget_rate(rate: f64, tracked: usize, budget: usize, top: f64) -> f64 {
    let want = if tracked == 0 {
        top
    } else {
        rate * budget as f64 / tracked as f64
    };
    want.clamp(MIN_SAMPLE_RATE, top)
}

/// The finest footprint sampling rate (64 of the filter's 2^24 hash values).
const MIN_SAMPLE_RATE: f64 = 64.0 / locus_mrc::sampling::SAMPLE_MODULUS as f64;

fn view_chunk(ps: &super::PoolState, c: ClassId) -> Option<u32> {
    ps.classes
        .iter()
        .find(|x| x.class == c)
        .map(|x| x.chunk_bytes)
}

impl Controller for Lama {
    fn name(&self) -> &'static str {
        "lama"
    }

    fn on_access(&mut self, a: &Access) {
        if let Some((class, op)) = self.tracker.access(a) {
            let c = class.0 as usize;
            let est = a.size.saturating_add(locus_engine::ITEM_HEADER_BYTES);
            let seen = grow_to(&mut self.seen_chunk, c);
            *seen = (*seen).max(est);
            let rate = self.cfg.sample_rate;
            let active = grow_to(&mut self.active, a.pool.0 as usize);
            let pool = grow_to(&mut self.profilers, a.pool.0 as usize);
            let p = grow_to(pool, c).get_or_insert_with(|| {
                *active += 1;
                ProfilerBox(
                    Footprint::new(rate, u64::from(class.0))
                        .expect("sample_rate validated at build"),
                )
            });
            p.0.access(a.key_hash, a.size, op);
            let budget = class_budget(self.cfg.sample_keys, *active);
            if budget > 0 && p.0.tracked() > 2 * budget {
                // The key set outgrew the budget inside the window: restart the class's window
                // at the rate that would have held it to the budget.
                let r = budget_rate(p.0.rate(), p.0.tracked(), budget, rate);
                let _ = p.0.restart_at(r);
            }
        }
    }

    fn on_evict(&mut self, e: &Evicted) {
        self.tracker.evicted(e);
    }

    fn model_bytes(&self) -> u64 {
        self.profilers
            .iter()
            .flatten()
            .flatten()
            .map(|p| p.0.bytes())
            .sum()
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        self.window_intervals += 1;
        let long_enough = view
            .pools
            .iter()
            .all(|p| self.window_long_enough(view, p.pool));
        d.notes
            .push(("window_intervals".into(), self.window_intervals as f64));
        if !long_enough && self.window_intervals < self.cfg.max_intervals.max(1) {
            // Equation 8 not met yet: keep profiling the same window.
            return d;
        }
        if self.cfg.objective == LamaObjective::Qos {
            self.decide_qos(view, &mut d);
        } else {
            for p in view.pools {
                self.decide_pool(view, p.pool, &mut d);
            }
        }
        self.tracker.reset();
        let top = self.cfg.sample_rate;
        for (pool, active) in self.profilers.iter_mut().zip(&self.active) {
            let budget = class_budget(self.cfg.sample_keys, *active);
            for p in pool.iter_mut().flatten() {
                // Footprint restarts (its only decay); a fresh window per repartition, sampled
                // at the rate that would have kept this one within the class's share.
                let r = if budget > 0 {
                    budget_rate(p.0.rate(), p.0.tracked(), budget, top)
                } else {
                    top
                };
                if p.0.restart_at(r).is_err() {
                    let _ = p.0.decay(0.0);
                }
                if budget > 0 {
                    // A class whose share fell as others joined gives back its table.
                    p.0.shrink_to(2 * budget);
                }
            }
        }
        self.window_intervals = 0;
        d
    }

    fn class_mode(&self) -> Option<locus_engine::ClassMode> {
        Some(locus_engine::ClassMode::Manual)
    }
}

/// Builds `lama` from its settings.
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let d = LamaConfig::default();
    let objective = match s.string("objective", "misses")?.as_str() {
        "misses" | "mr" | "miss_ratio" => LamaObjective::MissRatio,
        "art" | "latency" | "response_time" => LamaObjective::ResponseTime,
        "qos" => LamaObjective::Qos,
        other => {
            return Err(ControlError::BadSetting {
                controller: "lama".into(),
                key: "objective".into(),
                value: other.into(),
                expected: "misses, art or qos".into(),
            });
        }
    };
    let cfg = LamaConfig {
        objective,
        max_moves: s.u64("max_moves", d.max_moves)?,
        hit_us: s.f64("hit_us", d.hit_us)?,
        miss_us: s.f64("miss_us", d.miss_us)?,
        hit_us_per_kib: s.f64("hit_us_per_kib", d.hit_us_per_kib)?,
        miss_us_per_kib: s.f64("miss_us_per_kib", d.miss_us_per_kib)?,
        qos_hit_ratio: s.f64_list("qos_hit_ratio", &[])?,
        min_gain: s.f64("min_gain", d.min_gain)?,
        sample_rate: s.f64("sample_rate", d.sample_rate)?,
        sample_keys: s.u64("sample_keys", d.sample_keys)?,
        edge_cap: s.f64("edge_cap", d.edge_cap)?,
        max_intervals: s.u64("max_intervals", d.max_intervals)?,
    };
    if !(cfg.sample_rate > 0.0 && cfg.sample_rate <= 1.0) {
        return Err(ControlError::BadSetting {
            controller: "lama".into(),
            key: "sample_rate".into(),
            value: cfg.sample_rate.to_string(),
            expected: "a rate in (0, 1]".into(),
        });
    }
    if let Some(bad) = cfg
        .qos_hit_ratio
        .iter()
        .find(|h| !(0.0..=1.0).contains(*h))
        .or([cfg.hit_us_per_kib, cfg.miss_us_per_kib]
            .iter()
            .find(|x| **x < 0.0))
    {
        return Err(ControlError::BadSetting {
            controller: "lama".into(),
            key: "qos_hit_ratio / hit_us_per_kib / miss_us_per_kib".into(),
            value: bad.to_string(),
            expected: "hit ratios in [0, 1], times per KiB >= 0".into(),
        });
    }
    if !cfg.qos_hit_ratio.is_empty() && objective != LamaObjective::Qos {
        return Err(ControlError::BadSetting {
            controller: "lama".into(),
            key: "qos_hit_ratio".into(),
            value: format!("{:?}", cfg.qos_hit_ratio),
            expected: "objective = \"qos\" (the targets apply only there)".into(),
        });
    }
    if cfg.edge_cap < 0.0 || cfg.max_intervals == 0 {
        let (key, value) = if cfg.edge_cap < 0.0 {
            ("edge_cap", cfg.edge_cap.to_string())
        } else {
            ("max_intervals", "0".to_string())
        };
        return Err(ControlError::BadSetting {
            controller: "lama".into(),
            key: key.into(),
            value,
            expected: "edge_cap >= 0 (0: no cap, 1: no correction), max_intervals >= 1".into(),
        });
    }
    s.finish()?;
    Ok(Box::new(Lama::new(cfg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(key: u64) -> Access {
        Access {
            tenant: locus_engine::TenantId(0),
            pool: PoolId(0),
            kind: locus_engine::control::AccessKind::Set,
            key_hash: key.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            size: 100,
            class: Some(ClassId(3)),
            now_us: key,
        }
    }

    #[test]
    fn the_footprint_profilers_keep_to_their_key_budget() {
        let cfg = LamaConfig {
            sample_keys: 1000,
            ..LamaConfig::default()
        };
        let mut l = Lama::new(cfg);
        // A small class is followed whole: 500 keys, rate 1.
        for k in 0..500 {
            l.on_access(&set(k));
        }
        fn f(l: &Lama) -> &Footprint {
            &l.profilers[0][3].as_ref().unwrap().0
        }
        assert_eq!((f(&l).tracked(), f(&l).rate()), (500, 1.0));
        // 200,000 new keys in one window: the profiler restarts at lower rates and never holds
        // more than twice its budget.
        let mut most = 0;
        for k in 500..200_500 {
            l.on_access(&set(k));
            most = most.max(f(&l).tracked());
        }
        assert!(most <= 2 * 1000 + 1, "{most}");
        let r = f(&l).rate();
        assert!(r < 0.02, "{r}");
        // Sampled at that rate, a window of the same 200,000 keys holds about the budget.
        let mut l2 = Lama::new(LamaConfig {
            sample_keys: 1000,
            ..LamaConfig::default()
        });
        l2.on_access(&set(0));
        let _ = l2.profilers[0][3].as_mut().unwrap().0.restart_at(r);
        for k in 0..200_000 {
            l2.on_access(&set(k));
        }
        let held = f(&l2).tracked();
        assert!((400..=2001).contains(&held), "{held}");
        // With no budget every key is followed.
        let mut l3 = Lama::new(LamaConfig {
            sample_keys: 0,
            ..LamaConfig::default()
        });
        for k in 0..5000 {
            l3.on_access(&set(k));
        }
        assert_eq!(f(&l3).tracked(), 5000);
        // Four classes share the pool's budget: each follows at most twice its quarter.
        let mut l4 = Lama::new(LamaConfig {
            sample_keys: 4000,
            ..LamaConfig::default()
        });
        for k in 0..200_000u64 {
            l4.on_access(&Access {
                class: Some(ClassId(3 + (k % 4) as u16)),
                ..set(k)
            });
        }
        let held: Vec<usize> = (3..7)
            .map(|c| l4.profilers[0][c].as_ref().unwrap().0.tracked())
            .collect();
        assert!(held.iter().all(|&h| h <= 2 * 1000 + 1), "{held:?}");
        assert_eq!(class_budget(4000, 4), 1000);
        assert_eq!(class_budget(4000, 100), MIN_CLASS_KEYS);
        assert_eq!(class_budget(0, 3), 0);
        assert_eq!(budget_rate(1.0, 0, 10, 1.0), 1.0);
        assert_eq!(budget_rate(1.0, 20, 10, 1.0), 0.5);
        assert_eq!(budget_rate(0.5, 1, 10, 1.0), 1.0);
        assert!(budget_rate(1.0, usize::MAX, 10, 1.0) >= MIN_SAMPLE_RATE);
    }

    /// Footprint and reuse times of a key stream.
    fn profile(keys: &[u64]) -> Footprint {
        let mut f = Footprint::new(1.0, 0).unwrap();
        for &k in keys {
            f.access(k, 1, locus_mrc::Op::Get);
        }
        f
    }

    #[test]
    fn without_the_correction_the_window_mrc_is_formula_2() {
        let keys: Vec<u64> = (0..600).map(|i| (i * 7 + i / 5) % 40).collect();
        let f = profile(&keys);
        let caps: Vec<f64> = (0..=50).map(f64::from).collect();
        let want: Vec<f64> = f.mrc(&caps).unwrap().points().iter().map(|p| p.1).collect();
        let got = window_mrc(
            &f.footprint_curve(),
            f.reuse_times(),
            f.full_len(),
            1.0,
            &caps,
            1.0,
        );
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn the_edge_correction_recovers_long_reuses_of_a_short_window() {
        // A cyclic scan of 100 keys seen through a 150-access window: in steady state a cache
        // of 100 items hits every access, but 100 of the 150 accesses are first in the window.
        let keys: Vec<u64> = (0..150).map(|i| i % 100).collect();
        let f = profile(&keys);
        let caps = [50.0, 100.0, 150.0];
        let fp = f.footprint_curve();
        let plain = window_mrc(&fp, f.reuse_times(), f.full_len(), 1.0, &caps, 1.0);
        let fixed = window_mrc(
            &fp,
            f.reuse_times(),
            f.full_len(),
            1.0,
            &caps,
            f64::INFINITY,
        );
        assert_eq!(plain[0], 1.0);
        assert!((plain[1] - 100.0 / 150.0).abs() < 1e-9, "{plain:?}");
        // 50 reuses of time 100, each weighted 150 / 50 = 3: every access hits.
        assert!(fixed[1].abs() < 1e-9, "{fixed:?}");
        assert_eq!(fixed[0], 1.0, "below the loop no reuse fits");
        // A cap bounds the weight.
        let capped = window_mrc(&fp, f.reuse_times(), f.full_len(), 1.0, &caps, 2.0);
        assert!(
            (capped[1] - (1.0 - 100.0 / 150.0)).abs() < 1e-9,
            "{capped:?}"
        );
    }

    #[test]
    fn equation_8_keeps_the_window_open_until_the_classes_have_missed_enough() {
        use locus_engine::control::{AccessKind, ClassState, PoolState};
        use locus_engine::ids::TenantId;
        let mut l = Lama::new(LamaConfig {
            max_intervals: 3,
            ..LamaConfig::default()
        });
        let chunk = 1024u32;
        let pool = |pages| PoolState {
            classes: vec![ClassState {
                class: ClassId(1),
                chunk_bytes: chunk,
                pages,
                ..ClassState::default()
            }],
            pages,
            ..PoolState::default()
        };
        // 10 misses (new keys) per interval; 1 page of 64 slots: eq. 8 wants 128 misses.
        let mut key = 0u64;
        let mut interval = |l: &mut Lama| {
            for _ in 0..10 {
                key += 1;
                for kind in [AccessKind::GetMiss, AccessKind::Set] {
                    l.on_access(&Access {
                        tenant: TenantId(0),
                        pool: PoolId(0),
                        kind,
                        key_hash: key,
                        size: chunk - locus_engine::ITEM_HEADER_BYTES,
                        class: (kind == AccessKind::Set).then_some(ClassId(1)),
                        now_us: key,
                    });
                }
            }
        };
        let pools = [pool(1)];
        let view = ControlView {
            now_us: 0,
            requests: 0,
            interval: 0,
            page_size: 64 * 1024,
            pages_total: 1,
            pages_used: 1,
            fast_pages: None,
            pools: &pools,
        };
        let window = |d: &Decision| {
            d.notes
                .iter()
                .find(|n| n.0 == "window_intervals")
                .map(|n| n.1)
        };
        interval(&mut l);
        let d = l.decide(&view);
        assert_eq!(window(&d), Some(1.0));
        assert!(!d.notes.iter().any(|n| n.0.ends_with("cost_now")), "{d:?}");
        interval(&mut l);
        assert!(
            !l.decide(&view)
                .notes
                .iter()
                .any(|n| n.0.ends_with("cost_now"))
        );
        interval(&mut l);
        let d = l.decide(&view);
        assert!(
            d.notes.iter().any(|n| n.0 == "pool0.cost_now"),
            "the cap: {d:?}"
        );
        // A window restarted: the next decision waits again.
        interval(&mut l);
        assert_eq!(window(&l.decide(&view)), Some(1.0));
    }

    /// A pool state of `classes` given as (class, chunk bytes, pages).
    fn pool_state(pool: u32, classes: &[(u32, u32, u64)]) -> locus_engine::control::PoolState {
        use locus_engine::control::{ClassState, PoolState};
        PoolState {
            pool: PoolId(pool),
            tenant: locus_engine::TenantId(pool),
            classes: classes
                .iter()
                .map(|&(c, chunk, pages)| ClassState {
                    class: ClassId(c as u16),
                    chunk_bytes: chunk,
                    pages,
                    ..ClassState::default()
                })
                .collect(),
            pages: classes.iter().map(|c| c.2).sum(),
            ..PoolState::default()
        }
    }

    /// GET hits `from..from + n` of a loop over `keys` keys of `class` in `pool` (distinct
    /// hashes per pool and class).
    fn loop_hits(
        l: &mut Lama,
        (pool, class, chunk): (u32, u32, u32),
        keys: u64,
        from: u64,
        n: u64,
    ) {
        for i in from..from + n {
            let key = (u64::from(pool) << 40) | (u64::from(class) << 32) | (i % keys);
            l.on_access(&Access {
                tenant: locus_engine::TenantId(pool),
                pool: PoolId(pool),
                kind: locus_engine::control::AccessKind::GetHit,
                key_hash: key.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                size: chunk - locus_engine::ITEM_HEADER_BYTES,
                class: Some(ClassId(class as u16)),
                now_us: i,
            });
        }
    }

    fn view(pools: &[locus_engine::control::PoolState]) -> ControlView<'_> {
        let pages = pools.iter().map(|p| p.pages).sum();
        ControlView {
            now_us: 0,
            requests: 0,
            interval: 0,
            page_size: 64 * 1024,
            pages_total: pages,
            pages_used: pages,
            fast_pages: None,
            pools,
        }
    }

    #[test]
    fn opt_art_weighs_each_class_by_its_item_size() {
        // Three pages. Class 1 (1 KiB chunks, 64 a page) loops over 128 keys, 1,150 requests;
        // class 2 (32 KiB chunks, 2 a page) loops over 4 keys, 1,000 requests. Each needs 2
        // pages to hit. Misses: class 1 saves more (1,150 against 1,000). Response time: a
        // class-2 miss costs 1,000 + 16 x 32 µs against a hit's 100 + 8 x 32 (1,156 µs saved),
        // a class-1 miss 1,016 against 108 (908 saved): class 2 saves more (1.156 s against
        // 1.044 s).
        let run = |objective, per_kib: bool| {
            let mut l = Lama::new(LamaConfig {
                objective,
                max_intervals: 1,
                hit_us_per_kib: if per_kib { 8.0 } else { 0.0 },
                miss_us_per_kib: if per_kib { 16.0 } else { 0.0 },
                ..LamaConfig::default()
            });
            for r in 0..50 {
                loop_hits(&mut l, (0, 1, 1024), 128, r * 23, 23);
                loop_hits(&mut l, (0, 2, 32 * 1024), 4, r * 20, 20);
            }
            let pools = [pool_state(0, &[(1, 1024, 2), (2, 32 * 1024, 1)])];
            l.decide(&view(&pools)).moves
        };
        let to_class_2 = vec![PageMove {
            from: (PoolId(0), ClassId(1)),
            to: (PoolId(0), ClassId(2)),
        }];
        assert_eq!(run(LamaObjective::MissRatio, true), vec![]);
        assert_eq!(run(LamaObjective::ResponseTime, true), to_class_2);
        // With one hit time and one miss time for every class, OPT_ART is OPT_MR.
        assert_eq!(run(LamaObjective::ResponseTime, false), vec![]);
        let l = Lama::new(LamaConfig::default());
        assert_eq!(l.class_times(2048, 500.0), (116.0, 532.0));
    }

    #[test]
    fn the_qos_partition_guarantees_a_pool_its_hit_ratio_and_gives_the_rest_away() {
        // Two pools, one class each (1 KiB chunks), three pages in all. Pool 0 loops over 128
        // keys (2 pages) at 300 requests, pool 1 over 128 keys at 1,000: minimising misses gives
        // pool 1 its two pages and pool 0 one (no hits).
        let run = |targets: Vec<f64>| {
            let mut l = Lama::new(LamaConfig {
                objective: LamaObjective::Qos,
                max_intervals: 1,
                qos_hit_ratio: targets,
                ..LamaConfig::default()
            });
            for r in 0..10 {
                loop_hits(&mut l, (0, 1, 1024), 128, r * 30, 30);
                loop_hits(&mut l, (1, 1, 1024), 128, r * 100, 100);
            }
            let pools = [
                pool_state(0, &[(1, 1024, 1)]),
                pool_state(1, &[(1, 1024, 2)]),
            ];
            l.decide(&view(&pools))
        };
        let note = |d: &Decision, k: &str| d.notes.iter().find(|n| n.0 == k).map(|n| n.1);
        // Before any request there is nothing to plan on: no targets.
        let pools = [
            pool_state(0, &[(1, 1024, 1)]),
            pool_state(1, &[(1, 1024, 2)]),
        ];
        let mut cold = Lama::new(LamaConfig {
            objective: LamaObjective::Qos,
            qos_hit_ratio: vec![0.9],
            ..LamaConfig::default()
        });
        assert_eq!(cold.decide(&view(&pools)).pool_pages, None);
        let free = run(Vec::new());
        assert_eq!(free.moves, vec![]);
        assert_eq!(free.pool_pages, Some(vec![1, 2]));
        assert_eq!(note(&free, "pool0.qos_hit_planned"), Some(0.0));
        // A 90% target for pool 0: it gets its two pages, from pool 1.
        let q = run(vec![0.9]);
        assert_eq!(q.pool_pages, Some(vec![2, 1]));
        assert_eq!(
            q.moves,
            vec![PageMove {
                from: (PoolId(1), ClassId(1)),
                to: (PoolId(0), ClassId(1)),
            }]
        );
        assert!(note(&q, "pool0.qos_hit_planned").unwrap() >= 0.9);
        // Both pools at 90%: four pages needed, three exist. Each target is within its own
        // curve's reach, so nothing is short; the split falls back to misses alone.
        let both = run(vec![0.9, 0.9]);
        assert_eq!(note(&both, "qos.infeasible"), Some(1.0));
        assert_eq!(both.pool_pages, Some(vec![1, 2]));
    }

    #[test]
    fn qos_settings_are_checked() {
        let build = |pairs: &[(&str, &str)]| {
            super::build(Settings::new(
                "lama",
                pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            ))
        };
        assert!(build(&[("objective", "qos"), ("qos_hit_ratio", "0.8,0")]).is_ok());
        assert!(build(&[("objective", "qos"), ("qos_hit_ratio", "1.5")]).is_err());
        assert!(build(&[("objective", "misses"), ("qos_hit_ratio", "0.8")]).is_err());
        assert!(build(&[("objective", "art"), ("miss_us_per_kib", "-1")]).is_err());
        assert!(build(&[("objective", "p99")]).is_err());
    }

    #[test]
    fn equation_6_predicts_the_cold_start_allocation() {
        // Two classes, 10 items a page. Class 0 (3/4 of the requests) has footprint w (every
        // request new) up to 100 items; class 1 (1/4) grows as w / 2. A class takes a page with
        // its first item that does not fit: class 1 has its second page once 0.125 M > 10
        // (M > 80), class 0 its eighth once 0.75 M > 70 (M > 93.3), and then the ten pages are
        // gone: [8, 2].
        let a = DefaultClass {
            footprint: (0..=400).map(|w| f64::from(w.min(100))).collect(),
            share: 0.75,
            slots: 10,
            miss_ratio: (0..=10).map(|p| 1.0 - f64::from(p) / 10.0).collect(),
        };
        let b = DefaultClass {
            footprint: (0..=400).map(|w| f64::from(w) / 2.0).collect(),
            share: 0.25,
            slots: 10,
            miss_ratio: vec![1.0, 0.5, 0.0],
        };
        let p = predict_default(&[a.clone(), b.clone()], 10);
        assert_eq!(p.pages, vec![8, 2]);
        let m = p.cold_start.unwrap();
        assert!((m - 280.0 / 3.0).abs() < 1.0, "{m}");
        // Equation 3: 0.75 x 0.2 + 0.25 x 0.
        assert!((p.miss_ratio - 0.15).abs() < 1e-9, "{}", p.miss_ratio);
        // Room for everything: no cold start ends, every class holds its whole footprint.
        let all = predict_default(&[a, b], 100);
        assert_eq!((all.cold_start, all.pages), (None, vec![10, 20]));
        assert!((all.miss_ratio - 0.0).abs() < 1e-9);
        assert_eq!(predict_default(&[], 4).pages, Vec::<u64>::new());
    }
}
