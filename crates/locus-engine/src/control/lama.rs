//! `lama`: locality-aware slab reallocation (Hu et al., *LAMA*, IEEE TC; paper 002 sections
//! 3.2–3.4).
//!
//! Every interval, per pool:
//!
//! 1. Each size class's request stream (GET hits, misses attributed through their filling SET,
//!    writes; see `slabs`) has fed a footprint profiler (`locus_mrc::Footprint`, LAMA's
//!    conversion with `≤`), giving `MR[i][j]`, the class's miss ratio with `j` pages
//!    (`j · slots_per_page` items), `j = 0..=MAX` (the pool's pages).
//! 2. Cost per class (section 3.4, step 1): `OPT_MR`: `MR[i][j] · length(T[i])`; `OPT_ART`:
//!    `(MR[i][j] · T_m + (1 − MR[i][j]) · T_h) · length(T[i])` with `T_m` the pool's miss
//!    penalty (measured or hinted; the `miss_us` setting when unknown) and `T_h` = `hit_us`.
//! 3. Algorithm 1 (the DP, `locus_alloc::solve_dp`) with every class within `max_moves` pages of
//!    its current allocation (the radius-N variant).
//! 4. If the predicted cost falls by more than `min_gain` (relative), at most `max_moves` pages
//!    move, each from a class above its new allocation with the lowest PSA risk
//!    (requests / pages) to the class furthest below its own.
//!
//! The footprint profilers restart every interval (the paper's repartitioning window `M`).
//! Runs the engine in [`crate::ClassMode::Manual`] (memcached: class-local eviction).

use std::collections::HashMap;

use locus_alloc::{DpProblem, solve_dp};
use locus_mrc::{Footprint, Profiler};

use super::slabs::{ClassTracker, class_pages, page_move, slots_per_page};
use super::{
    Access, ControlError, ControlView, Controller, CurveRecord, Decision, Evicted, Settings,
};
use crate::ids::{ClassId, PoolId};

/// What LAMA minimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LamaObjective {
    /// Total misses (`LAMA_OPT_MR`).
    MissRatio,
    /// Average response time (`LAMA_OPT_ART`).
    ResponseTime,
}

/// Settings of [`Lama`].
#[derive(Clone, Debug, PartialEq)]
pub struct LamaConfig {
    /// `misses` (OPT_MR, default) or `art` (OPT_ART).
    pub objective: LamaObjective,
    /// Most pages moved per repartition (the paper's N; default 50).
    pub max_moves: u64,
    /// Hit time in µs for OPT_ART (default 100).
    pub hit_us: f64,
    /// Miss time in µs for OPT_ART when the pool's penalty is unknown (default 1000).
    pub miss_us: f64,
    /// Least relative cost reduction that justifies moving (default 0.0: any gain).
    pub min_gain: f64,
    /// Spatial sampling rate of the footprint profilers (default 1.0: every key).
    pub sample_rate: f64,
}

impl Default for LamaConfig {
    fn default() -> Self {
        LamaConfig {
            objective: LamaObjective::MissRatio,
            max_moves: 50,
            hit_us: 100.0,
            miss_us: 1000.0,
            min_gain: 0.0,
            sample_rate: 1.0,
        }
    }
}

/// The LAMA controller (module documentation).
#[derive(Debug)]
pub struct Lama {
    cfg: LamaConfig,
    tracker: ClassTracker,
    profilers: HashMap<(u32, u16), ProfilerBox>,
    /// Largest item (+ header) seen per class: the chunk-size estimate for a class that owns no
    /// page yet (the view lists only classes with pages or items).
    seen_chunk: HashMap<u16, u32>,
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
            profilers: HashMap::new(),
            seen_chunk: HashMap::new(),
        }
    }

    /// Miss ratios of (pool, class) at 0..=max pages.
    fn miss_ratios(&self, pool: PoolId, class: ClassId, slots: u64, max: u64) -> Option<Vec<f64>> {
        let p = self.profilers.get(&(pool.0, class.0))?;
        let caps: Vec<f64> = (0..=max).map(|j| (j * slots) as f64).collect();
        let mrc = p.0.mrc(&caps).ok()?;
        Some(mrc.points().iter().map(|&(_, m)| m).collect())
    }

    fn decide_pool(&mut self, view: &ControlView<'_>, pool: PoolId, d: &mut Decision) {
        let ps = &view.pools[pool.0 as usize];
        let max = ps.pages;
        if max == 0 {
            return;
        }
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
        let mut costs = Vec::with_capacity(classes.len());
        let mut current = Vec::with_capacity(classes.len());
        let mut risk = Vec::with_capacity(classes.len());
        for &c in &classes {
            let w = self.tracker.get(pool, c);
            let chunk = view_chunk(ps, c)
                .or_else(|| self.seen_chunk.get(&c.0).copied())
                .unwrap_or(0);
            let cur = class_pages(ps, c);
            current.push(cur);
            risk.push(w.requests as f64 / cur.max(1) as f64);
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
            let cost: Vec<f64> = match mr {
                Some(mr) => mr
                    .iter()
                    .map(|&m| match self.cfg.objective {
                        LamaObjective::MissRatio => m * n,
                        LamaObjective::ResponseTime => (m * t_m + (1.0 - m) * self.cfg.hit_us) * n,
                    })
                    .collect(),
                None => vec![0.0; max as usize + 1],
            };
            costs.push(cost);
        }
        let now_cost: f64 = costs
            .iter()
            .zip(&current)
            .map(|(c, &u)| c[(u as usize).min(c.len() - 1)])
            .sum();
        let problem = DpProblem {
            costs,
            total: max,
            floors: Vec::new(),
            caps: Vec::new(),
            current: Some(current.clone()),
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
        // Donors (above their new allocation) give pages, lowest PSA risk first; receivers
        // (below theirs) take them, largest deficit first.
        let mut surplus: Vec<(usize, u64)> = (0..classes.len())
            .filter(|&i| current[i] > best.units[i])
            .map(|i| (i, current[i] - best.units[i]))
            .collect();
        surplus.sort_by(|a, b| risk[a.0].total_cmp(&risk[b.0]).then(a.0.cmp(&b.0)));
        let mut deficit: Vec<(usize, u64)> = (0..classes.len())
            .filter(|&i| best.units[i] > current[i])
            .map(|i| (i, best.units[i] - current[i]))
            .collect();
        deficit.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut moved = 0u64;
        let (mut si, mut di) = (0, 0);
        while moved < self.cfg.max_moves && si < surplus.len() && di < deficit.len() {
            d.moves.push(page_move(
                pool,
                classes[surplus[si].0],
                classes[deficit[di].0],
            ));
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
        d.notes
            .push((format!("pool{}.moves", pool.0), moved as f64));
    }
}

/// The chunk size of class `c` if the pool knows it.
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
            let est = a.size.saturating_add(crate::store::HDR as u32);
            let e = self.seen_chunk.entry(class.0).or_insert(est);
            *e = (*e).max(est);
            let rate = self.cfg.sample_rate;
            let p = self
                .profilers
                .entry((a.pool.0, class.0))
                .or_insert_with(|| {
                    ProfilerBox(
                        Footprint::new(rate, u64::from(class.0))
                            .expect("sample_rate validated at build"),
                    )
                });
            p.0.access(a.key_hash, a.size, op);
        }
    }

    fn on_evict(&mut self, e: &Evicted) {
        self.tracker.evicted(e);
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        for p in view.pools {
            self.decide_pool(view, p.pool, &mut d);
        }
        self.tracker.reset();
        for p in self.profilers.values_mut() {
            // Footprint restarts (its only decay); a fresh window per repartition.
            let _ = p.0.decay(0.0);
        }
        d
    }

    fn class_mode(&self) -> Option<crate::ClassMode> {
        Some(crate::ClassMode::Manual)
    }
}

/// Builds `lama` from its settings.
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let d = LamaConfig::default();
    let objective = match s.string("objective", "misses")?.as_str() {
        "misses" | "mr" | "miss_ratio" => LamaObjective::MissRatio,
        "art" | "latency" | "response_time" => LamaObjective::ResponseTime,
        other => {
            return Err(ControlError::BadSetting {
                controller: "lama".into(),
                key: "objective".into(),
                value: other.into(),
                expected: "misses or art".into(),
            });
        }
    };
    let cfg = LamaConfig {
        objective,
        max_moves: s.u64("max_moves", d.max_moves)?,
        hit_us: s.f64("hit_us", d.hit_us)?,
        miss_us: s.f64("miss_us", d.miss_us)?,
        min_gain: s.f64("min_gain", d.min_gain)?,
        sample_rate: s.f64("sample_rate", d.sample_rate)?,
    };
    if !(cfg.sample_rate > 0.0 && cfg.sample_rate <= 1.0) {
        return Err(ControlError::BadSetting {
            controller: "lama".into(),
            key: "sample_rate".into(),
            value: cfg.sample_rate.to_string(),
            expected: "a rate in (0, 1]".into(),
        });
    }
    s.finish()?;
    Ok(Box::new(Lama::new(cfg)))
}
