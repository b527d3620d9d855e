//! The planning step the model-driven controllers share, and the offline optimum plans with.
//!
//! * [`plan`]: given one miss-ratio curve per pool **in pages** (the miss ratio at 0, 1, 2, …
//!   pages), each pool's access rate and miss penalty, and the pages to divide, the best partition
//!   by [`locus_alloc::solve_dp`] (granularity `step` pages, floors, caps), with the pages a step
//!   does not cover handed out one at a time by marginal gain. The simulator calls it with exact
//!   curves of the whole run (or of each phase) to express results as a share of the achievable
//!   gain, as LAMA does; `mpart` and `predis` call it with their online curves.
//! * [`curve_in_pages`]: an [`Mrc`] in objects or bytes resampled at whole pages, given how many
//!   objects (bytes) a page holds.
//!
//! ```text
//!   exact MRCs (sim) ─► curve_in_pages ─► PoolCurve{miss_ratio[pages], rate, penalty}
//!                                              │ plan(curves, PlanOptions{pages_total, step,
//!                                              ▼       objective, floors, caps})
//!                                         Plan{pages, cost, miss_ratio} ─► Oracle::new(pages)
//! ```

use locus_alloc::{DpProblem, Objective, miss_cost, solve_dp};
use locus_mrc::{Metric, Mrc, Unit};

use locus_engine::control::CurveRecord;
use locus_engine::ids::PoolId;

/// Largest number of DP units [`plan`] uses when the step is automatic (`step = 0`).
pub const AUTO_MAX_UNITS: u64 = 1024;

/// One pool's input to [`plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct PoolCurve {
    /// Miss ratio of the pool at `0, 1, 2, …` pages (index = pages). Values in `[0, 1]`; pages
    /// beyond the end take the last value. An empty curve means "always misses".
    pub miss_ratio: Vec<f64>,
    /// The pool's access rate (GETs per unit time, or GETs in the window: only ratios matter).
    pub rate: f64,
    /// Mean miss penalty in µs (used by [`Objective::MissLatency`] only).
    pub penalty_us: f64,
}

/// What [`plan`] divides and how.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOptions {
    /// Pages to divide.
    pub pages_total: u64,
    /// Pages per DP unit (mPart's step `S`, pRedis's granularity `G`); `0` = automatic: 1, or
    /// larger so there are at most [`AUTO_MAX_UNITS`] units.
    pub step: u64,
    /// What the partition minimises.
    pub objective: Objective,
    /// Least pages per pool (empty = none).
    pub floors: Vec<u64>,
    /// Most pages per pool (empty = none).
    pub caps: Vec<Option<u64>>,
}

impl PlanOptions {
    /// Options for `pages_total` pages with an automatic step, no floors and no caps.
    pub fn new(pages_total: u64, objective: Objective) -> Self {
        PlanOptions {
            pages_total,
            step: 0,
            objective,
            floors: Vec::new(),
            caps: Vec::new(),
        }
    }
}

/// The answer of [`plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Pages per pool (sum ≤ `pages_total`).
    pub pages: Vec<u64>,
    /// The objective's value at `pages` (Σ cost, see [`locus_alloc::miss_cost`]).
    pub cost: f64,
    /// Each pool's predicted miss ratio at its pages.
    pub miss_ratio: Vec<f64>,
    /// The step used (pages per DP unit).
    pub step: u64,
}

/// Why [`plan`] or a schedule was refused.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum PlanError {
    /// No pools.
    #[error("nothing to plan: no pools")]
    NoPools,
    /// A curve, rate or penalty that is not usable.
    #[error("pool {pool}: {reason}")]
    BadPool {
        /// The pool index.
        pool: usize,
        /// What is wrong.
        reason: String,
    },
    /// Floors or caps whose length does not match the pools.
    #[error("{what} has {got} entries for {pools} pools")]
    Length {
        /// `floors` or `caps`.
        what: &'static str,
        /// Entries given.
        got: usize,
        /// Pools.
        pools: usize,
    },
    /// The solver found no partition (floors above the total, floors above caps, …).
    #[error("partition solver: {reason}")]
    Solver {
        /// The solver's message.
        reason: String,
    },
    /// A schedule that is empty or not in increasing request order.
    #[error("schedule: {reason}")]
    BadSchedule {
        /// What is wrong.
        reason: String,
    },
}

/// The step [`plan`] uses for `pages_total` when asked for `step` (0 = automatic).
pub fn effective_step(pages_total: u64, step: u64) -> u64 {
    if step > 0 {
        step
    } else {
        pages_total.div_ceil(AUTO_MAX_UNITS).max(1)
    }
}

/// `mrc` resampled at `0, 1, …, pages` pages, where one page holds `units_per_page` of the
/// curve's capacity unit (objects or bytes). Index 0 is 1.0 (an empty pool misses everything).
///
/// A non-finite or non-positive `units_per_page` gives a curve that always misses.
pub fn curve_in_pages(mrc: &Mrc, units_per_page: f64, pages: u64) -> Vec<f64> {
    (0..=pages)
        .map(|p| {
            if p == 0 || !units_per_page.is_finite() || units_per_page <= 0.0 {
                1.0
            } else {
                mrc.miss_ratio(p as f64 * units_per_page)
            }
        })
        .collect()
}

fn check_pool(i: usize, c: &PoolCurve) -> Result<(), PlanError> {
    let bad = |reason: String| PlanError::BadPool { pool: i, reason };
    if !(c.rate.is_finite() && c.rate >= 0.0) {
        return Err(bad(format!("rate {} is not a finite number >= 0", c.rate)));
    }
    if !(c.penalty_us.is_finite() && c.penalty_us >= 0.0) {
        return Err(bad(format!(
            "penalty {} µs is not a finite number >= 0",
            c.penalty_us
        )));
    }
    if let Some((p, m)) = c
        .miss_ratio
        .iter()
        .enumerate()
        .find(|(_, m)| !(m.is_finite() && (0.0..=1.0).contains(*m)))
    {
        return Err(bad(format!("miss ratio {m} at {p} pages is not in [0, 1]")));
    }
    Ok(())
}

/// The best partition of `opts.pages_total` pages between the pools of `curves`.
///
/// Costs come from [`locus_alloc::miss_cost`] (misses: `mr·rate`; latency: `mr·rate·penalty`;
/// hits: `−(1−mr)·rate`), the DP from [`locus_alloc::solve_dp`] on units of `step` pages above
/// each pool's floor (floors hold exactly, caps are rounded down to whole units). Pages left over
/// by the rounding go, one at a time, to the pool whose cost falls most with one more page (none
/// if no pool gains). With `step = 1` the answer is optimal.
///
/// # Errors
/// [`PlanError`] for no pools, a miss ratio outside `[0, 1]`, a negative or non-finite rate or
/// penalty, floors/caps of the wrong length, or a problem the solver finds infeasible.
pub fn plan(curves: &[PoolCurve], opts: &PlanOptions) -> Result<Plan, PlanError> {
    let n = curves.len();
    if n == 0 {
        return Err(PlanError::NoPools);
    }
    for (i, c) in curves.iter().enumerate() {
        check_pool(i, c)?;
    }
    for (what, got) in [("floors", opts.floors.len()), ("caps", opts.caps.len())] {
        if got != 0 && got != n {
            return Err(PlanError::Length {
                what,
                got,
                pools: n,
            });
        }
    }
    let total = opts.pages_total;
    let step = effective_step(total, opts.step);
    let floor = |i: usize| opts.floors.get(i).copied().unwrap_or(0);
    let cap = |i: usize| opts.caps.get(i).copied().flatten();

    // Cost per pool at every page count 0..=total (the curve's last value beyond its end).
    let page_costs: Vec<Vec<f64>> = curves
        .iter()
        .map(|c| {
            let mr: Vec<f64> = (0..=total)
                .map(|p| match c.miss_ratio.get(p as usize) {
                    Some(m) => *m,
                    None => c.miss_ratio.last().copied().unwrap_or(1.0),
                })
                .collect();
            miss_cost(&mr, c.rate, c.penalty_us, opts.objective)
        })
        .collect();
    // Unit u of pool i is floor_i + u·step pages, so floors hold exactly; caps round down.
    let floors: Vec<u64> = (0..n).map(floor).collect();
    let floor_sum = floors.iter().fold(0u64, |a, f| a.saturating_add(*f));
    if floor_sum > total {
        return Err(PlanError::Solver {
            reason: format!("floors sum to {floor_sum} pages, more than the {total} to divide"),
        });
    }
    if let Some(i) = (0..n).find(|&i| cap(i).is_some_and(|c| c < floors[i])) {
        return Err(PlanError::Solver {
            reason: format!("pool {i}: floor {} pages above its cap", floors[i]),
        });
    }
    let units = (total - floor_sum) / step;
    let problem = DpProblem {
        costs: page_costs
            .iter()
            .zip(&floors)
            .map(|(pc, f)| {
                (0..=units)
                    .map_while(|u| pc.get((f + u * step) as usize).copied())
                    .collect()
            })
            .collect(),
        total: units,
        floors: Vec::new(),
        caps: (0..n)
            .map(|i| cap(i).map(|c| (c - floors[i]) / step))
            .collect(),
        current: None,
        max_move: None,
    };
    let alloc = solve_dp(&problem).map_err(|e| PlanError::Solver {
        reason: e.to_string(),
    })?;
    let mut pages: Vec<u64> = (0..n)
        .map(|i| floors[i] + alloc.units.get(i).copied().unwrap_or(0) * step)
        .collect();

    // Hand out what the step's rounding left, page by page, by marginal gain.
    let mut left = total.saturating_sub(pages.iter().sum());
    while left > 0 {
        let best = (0..n)
            .filter(|&i| cap(i).is_none_or(|c| pages[i] < c))
            .map(|i| {
                let p = pages[i] as usize;
                (page_costs[i][p] - page_costs[i][p + 1], i)
            })
            .filter(|(gain, _)| *gain > 0.0)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        let Some((_, i)) = best else { break };
        pages[i] += 1;
        left -= 1;
    }
    let cost = (0..n).map(|i| page_costs[i][pages[i] as usize]).sum();
    let miss_ratio = (0..n)
        .map(|i| {
            let c = &curves[i].miss_ratio;
            c.get(pages[i] as usize)
                .or(c.last())
                .copied()
                .unwrap_or(1.0)
        })
        .collect();
    Ok(Plan {
        pages,
        cost,
        miss_ratio,
        step,
    })
}

/// The objective's value (Σ [`locus_alloc::miss_cost`]) of `pages` per pool on `curves`.
pub fn cost_at(curves: &[PoolCurve], pages: &[u64], objective: Objective) -> f64 {
    curves
        .iter()
        .zip(pages)
        .map(|(c, &p)| {
            let m = c
                .miss_ratio
                .get(p as usize)
                .or(c.miss_ratio.last())
                .copied()
                .unwrap_or(1.0);
            miss_cost(&[m], c.rate, c.penalty_us, objective)[0]
        })
        .sum()
}

/// A curve in pages as an [`Mrc`] for [`CurveRecord`]s (at most `points` points).
pub(crate) fn pages_record(pool: usize, label: String, mr: &[f64], points: usize) -> CurveRecord {
    let n = mr.len().saturating_sub(1).max(1);
    let stride = n.div_ceil(points.max(1)).max(1);
    let mut pts: Vec<(f64, f64)> = (1..mr.len())
        .step_by(stride)
        .map(|p| (p as f64, mr[p]))
        .collect();
    if let Some(last) = mr.len().checked_sub(1).filter(|l| *l > 0)
        && pts.last().is_none_or(|p| p.0 < last as f64)
    {
        pts.push((last as f64, mr[last]));
    }
    // Capacities strictly increase and values are in [0, 1] by construction.
    let mrc = Mrc::new(Unit::Objects, Metric::Requests, pts)
        .unwrap_or_else(|_| Mrc::new(Unit::Objects, Metric::Requests, Vec::new()).unwrap());
    CurveRecord {
        pool: PoolId(pool as u32),
        label,
        mrc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Oracle;

    fn step_curve(cliff: usize, n: usize) -> Vec<f64> {
        (0..=n).map(|p| if p < cliff { 1.0 } else { 0.0 }).collect()
    }

    /// Brute force over every split of `total` pages (2 or 3 pools).
    fn brute(curves: &[PoolCurve], total: u64, obj: Objective) -> f64 {
        let cost = |i: usize, p: u64| {
            let c = &curves[i];
            let m = c
                .miss_ratio
                .get(p as usize)
                .or(c.miss_ratio.last())
                .copied()
                .unwrap_or(1.0);
            miss_cost(&[m], c.rate, c.penalty_us, obj)[0]
        };
        let mut best = f64::INFINITY;
        for a in 0..=total {
            for b in 0..=total - a {
                if curves.len() == 2 {
                    best = best.min(cost(0, a) + cost(1, b));
                } else {
                    for c in 0..=total - a - b {
                        debug_assert!(
                            (cost_at(curves, &[a, b, c], obj)
                                - cost(0, a)
                                - cost(1, b)
                                - cost(2, c))
                            .abs()
                                < 1e-9
                        );
                        best = best.min(cost(0, a) + cost(1, b) + cost(2, c));
                    }
                }
            }
        }
        best
    }

    #[test]
    fn predis_three_class_example() {
        // pRedis section 2.1: penalties 10/200/200 ms, rates 5:3:2, memory 5 objects;
        // mr1 cliff at 2, mr2 cliff at 3, class 3 never hits. Optimum c = (2, 3, 0), W = 40.
        let curves = vec![
            PoolCurve {
                miss_ratio: step_curve(2, 5),
                rate: 0.5,
                penalty_us: 10.0,
            },
            PoolCurve {
                miss_ratio: step_curve(3, 5),
                rate: 0.3,
                penalty_us: 200.0,
            },
            PoolCurve {
                miss_ratio: vec![1.0; 6],
                rate: 0.2,
                penalty_us: 200.0,
            },
        ];
        let p = plan(
            &curves,
            &PlanOptions {
                step: 1,
                ..PlanOptions::new(5, Objective::MissLatency)
            },
        )
        .unwrap();
        assert_eq!(p.pages, vec![2, 3, 0]);
        assert!((p.cost - 40.0).abs() < 1e-9, "{p:?}");
        // Mean latency with 1 ms hit time: 0.5·1 + 0.3·1 + 0.2·(200+1) = 41 ms.
        let lat: f64 = curves
            .iter()
            .zip(&p.miss_ratio)
            .map(|(c, m)| c.rate * (1.0 + m * c.penalty_us))
            .sum();
        assert!((lat - 41.0).abs() < 1e-9);
        // When both small classes need 3 of the 5 objects, misses favour the frequent class 1
        // and miss latency the expensive class 2.
        let mut c2 = curves.clone();
        c2[0].miss_ratio = step_curve(3, 5);
        c2[0].rate = 0.6;
        c2[1].rate = 0.2;
        let by_miss = plan(
            &c2,
            &PlanOptions {
                step: 1,
                ..PlanOptions::new(5, Objective::Misses)
            },
        )
        .unwrap();
        let by_lat = plan(
            &c2,
            &PlanOptions {
                step: 1,
                ..PlanOptions::new(5, Objective::MissLatency)
            },
        )
        .unwrap();
        assert!(by_miss.pages[0] >= 3 && by_miss.pages[1] < 3, "{by_miss:?}");
        assert!(by_lat.pages[0] < 3 && by_lat.pages[1] == 3, "{by_lat:?}");
    }

    #[test]
    fn plan_matches_brute_force_on_random_curves() {
        let mut rng = locus_common::Rng::new(7);
        for case in 0..200 {
            let n = 2 + (case % 2);
            let total = 1 + rng.below(12);
            let curves: Vec<PoolCurve> = (0..n)
                .map(|_| {
                    let len = 1 + rng.below(total + 3) as usize;
                    let mut m = 1.0;
                    let mr = (0..len)
                        .map(|p| {
                            if p > 0 {
                                m *= rng.next_f64();
                            }
                            m
                        })
                        .collect();
                    PoolCurve {
                        miss_ratio: mr,
                        rate: rng.next_f64() * 10.0,
                        penalty_us: rng.next_f64() * 1000.0,
                    }
                })
                .collect();
            for obj in [
                Objective::Misses,
                Objective::MissLatency,
                Objective::HitsPerSecond,
            ] {
                let p = plan(
                    &curves,
                    &PlanOptions {
                        step: 1,
                        ..PlanOptions::new(total, obj)
                    },
                )
                .unwrap();
                assert!(p.pages.iter().sum::<u64>() <= total);
                let want = brute(&curves, total, obj);
                assert!(
                    (p.cost - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "case {case} {obj:?}: {} vs brute {want}",
                    p.cost
                );
            }
        }
    }

    #[test]
    fn step_leftover_floors_and_caps() {
        // 10 pages, step 3: DP on 3 units, the 10th page goes by marginal gain.
        let lin = |n: usize| (0..=n).map(|p| 1.0 - p as f64 / n as f64).collect();
        let curves = vec![
            PoolCurve {
                miss_ratio: lin(10),
                rate: 1.0,
                penalty_us: 1.0,
            },
            PoolCurve {
                miss_ratio: lin(10),
                rate: 2.0,
                penalty_us: 1.0,
            },
        ];
        let p = plan(
            &curves,
            &PlanOptions {
                step: 3,
                ..PlanOptions::new(10, Objective::Misses)
            },
        )
        .unwrap();
        assert_eq!(p.pages, vec![0, 10]);
        for step in [1, 3] {
            let p = plan(
                &curves,
                &PlanOptions {
                    step,
                    floors: vec![4, 0],
                    caps: vec![None, Some(5)],
                    ..PlanOptions::new(10, Objective::Misses)
                },
            )
            .unwrap();
            assert!(p.pages[0] >= 4 && p.pages[1] <= 5, "{p:?}");
            assert!(p.pages.iter().sum::<u64>() <= 10);
            if step == 1 {
                assert_eq!(p.pages, vec![5, 5], "{p:?}");
            }
        }
        assert!(matches!(
            plan(
                &curves,
                &PlanOptions {
                    floors: vec![8, 8],
                    ..PlanOptions::new(10, Objective::Misses)
                }
            ),
            Err(PlanError::Solver { .. })
        ));
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let ok = PoolCurve {
            miss_ratio: vec![1.0, 0.5],
            rate: 1.0,
            penalty_us: 0.0,
        };
        let o = PlanOptions::new(4, Objective::Misses);
        assert_eq!(plan(&[], &o), Err(PlanError::NoPools));
        let mut nan = ok.clone();
        nan.miss_ratio[1] = f64::NAN;
        assert!(matches!(
            plan(&[ok.clone(), nan], &o),
            Err(PlanError::BadPool { pool: 1, .. })
        ));
        let mut neg = ok.clone();
        neg.rate = -1.0;
        assert!(matches!(
            plan(&[neg], &o),
            Err(PlanError::BadPool { pool: 0, .. })
        ));
        assert!(matches!(
            plan(
                std::slice::from_ref(&ok),
                &PlanOptions {
                    floors: vec![1, 2],
                    ..o.clone()
                }
            ),
            Err(PlanError::Length { what: "floors", .. })
        ));
        assert!(Oracle::with_schedule(vec![]).is_err());
        assert!(Oracle::with_schedule(vec![(5, vec![1])]).is_err());
        assert!(Oracle::with_schedule(vec![(0, vec![1]), (0, vec![2])]).is_err());
    }

    #[test]
    fn curve_in_pages_scales_capacity() {
        let m = Mrc::new(
            Unit::Objects,
            Metric::Requests,
            vec![(10.0, 0.5), (20.0, 0.0)],
        )
        .unwrap();
        let c = curve_in_pages(&m, 10.0, 3);
        assert_eq!(c, vec![1.0, 0.5, 0.0, 0.0]);
        assert_eq!(curve_in_pages(&m, f64::NAN, 1), vec![1.0, 1.0]);
    }
}
