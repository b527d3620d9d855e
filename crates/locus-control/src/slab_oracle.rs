//! `slab-oracle`: the theoretical upper bound LAMA is measured against (paper 002 section 5.7,
//! "TUB"): the exact per-class MRCs of the whole run give one best page allocation per size
//! class (Algorithm 1 without a move radius), and a second run holds the classes at it.
//!
//! [`plan_classes`] is the planning half (the simulator computes the exact curves in a first
//! pass); [`SlabOracle`] is the controller that moves pages toward the plan, at most
//! `max_moves` per interval, in [`locus_engine::ClassMode::Manual`]. From settings it takes the plan
//! as `targets = "pool:class:pages, ..."`.

use locus_alloc::{DpProblem, solve_dp};

use crate::slabs::{class_pages, page_move};
use locus_engine::control::{Access, ControlError, ControlView, Controller, Decision, Settings};
use locus_engine::ids::{ClassId, PoolId};

/// One class's curve for [`plan_classes`]: `cost[j]` is its cost (misses, or any cost to
/// minimise) when it owns `j` pages, `j = 0..=len-1`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassCurve {
    /// The pool.
    pub pool: PoolId,
    /// The class.
    pub class: ClassId,
    /// Cost at 0, 1, 2, ... pages.
    pub cost: Vec<f64>,
}

/// Best pages per (pool, class) for `pages_total` pages: Algorithm 1 over every class of every
/// pool at once (one memory, as memcached's slabs).
///
/// # Errors
/// [`ControlError::BadSetting`] (key `curves`) when the solver rejects the curves (NaN costs).
pub fn plan_classes(
    curves: &[ClassCurve],
    pages_total: u64,
) -> Result<Vec<(PoolId, ClassId, u64)>, ControlError> {
    let problem = DpProblem {
        costs: curves.iter().map(|c| c.cost.clone()).collect(),
        total: pages_total,
        ..DpProblem::default()
    };
    let best = solve_dp(&problem).map_err(|e| ControlError::BadSetting {
        controller: "slab-oracle".into(),
        key: "curves".into(),
        value: format!("{} curves", curves.len()),
        expected: e.to_string(),
    })?;
    Ok(curves
        .iter()
        .zip(best.units)
        .map(|(c, u)| (c.pool, c.class, u))
        .collect())
}

/// Holds every class at a given page count (module documentation).
#[derive(Debug, Clone)]
pub struct SlabOracle {
    targets: Vec<(PoolId, ClassId, u64)>,
    max_moves: u64,
}

impl SlabOracle {
    /// The controller for a plan (pages per (pool, class); classes not named get 0 pages).
    pub fn new(targets: Vec<(PoolId, ClassId, u64)>, max_moves: u64) -> Self {
        SlabOracle { targets, max_moves }
    }

    fn target(&self, pool: PoolId, class: ClassId) -> u64 {
        self.targets
            .iter()
            .find(|t| t.0 == pool && t.1 == class)
            .map_or(0, |t| t.2)
    }
}

impl Controller for SlabOracle {
    fn name(&self) -> &'static str {
        "slab-oracle"
    }

    fn on_access(&mut self, _a: &Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        let mut budget = self.max_moves;
        for ps in view.pools {
            let p = ps.pool;
            let mut classes: Vec<ClassId> = ps.classes.iter().map(|c| c.class).collect();
            for t in self.targets.iter().filter(|t| t.0 == p) {
                if !classes.contains(&t.1) {
                    classes.push(t.1);
                }
            }
            classes.sort();
            let mut over: Vec<(ClassId, u64)> = Vec::new();
            let mut under: Vec<(ClassId, u64)> = Vec::new();
            for &c in &classes {
                let (have, want) = (class_pages(ps, c), self.target(p, c));
                if have > want {
                    over.push((c, have - want));
                } else if want > have {
                    under.push((c, want - have));
                }
            }
            let (mut oi, mut ui) = (0, 0);
            while budget > 0 && oi < over.len() && ui < under.len() {
                d.moves.push(page_move(p, over[oi].0, under[ui].0));
                budget -= 1;
                over[oi].1 -= 1;
                under[ui].1 -= 1;
                if over[oi].1 == 0 {
                    oi += 1;
                }
                if under[ui].1 == 0 {
                    ui += 1;
                }
            }
        }
        d
    }

    fn class_mode(&self) -> Option<locus_engine::ClassMode> {
        Some(locus_engine::ClassMode::Manual)
    }
}

/// Builds `slab-oracle` from `targets = "pool:class:pages, ..."` and `max_moves` (default 64).
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let raw = s.string("targets", "")?;
    let max_moves = s.u64("max_moves", 64)?;
    s.finish()?;
    let bad = |v: &str| ControlError::BadSetting {
        controller: "slab-oracle".into(),
        key: "targets".into(),
        value: v.into(),
        expected: "a list of pool:class:pages (e.g. \"0:3:10, 0:7:22\")".into(),
    };
    if raw.trim().is_empty() {
        return Err(ControlError::NotAvailable {
            name: "slab-oracle".into(),
            why: "it needs a plan: `targets = \"pool:class:pages, ...\"` (the simulator computes \
                  one from the exact per-class curves of the whole run)"
                .into(),
        });
    }
    let mut targets = Vec::new();
    for item in raw.split(',') {
        let parts: Vec<&str> = item.trim().split(':').collect();
        let [p, c, n] = parts.as_slice() else {
            return Err(bad(item));
        };
        let (Ok(p), Ok(c), Ok(n)) = (p.parse::<u32>(), c.parse::<u16>(), n.parse::<u64>()) else {
            return Err(bad(item));
        };
        targets.push((PoolId(p), ClassId(c), n));
    }
    Ok(Box::new(SlabOracle::new(targets, max_moves)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_gives_pages_where_misses_fall_fastest() {
        // Class 1 drops to zero misses at 3 pages; class 2 gains little per page.
        let curves = vec![
            ClassCurve {
                pool: PoolId(0),
                class: ClassId(1),
                cost: vec![100.0, 70.0, 40.0, 0.0, 0.0, 0.0],
            },
            ClassCurve {
                pool: PoolId(0),
                class: ClassId(2),
                cost: vec![50.0, 45.0, 40.0, 35.0, 30.0, 25.0],
            },
        ];
        let plan = plan_classes(&curves, 5).unwrap();
        assert_eq!(
            plan,
            vec![(PoolId(0), ClassId(1), 3), (PoolId(0), ClassId(2), 2)]
        );
    }

    #[test]
    fn settings_parse_and_reject() {
        let ok = Settings::new(
            "slab-oracle",
            [("targets".to_string(), "0:3:10, 0:7:22".to_string())],
        );
        assert!(build(ok).is_ok());
        let bad = Settings::new("slab-oracle", [("targets".to_string(), "0:3".to_string())]);
        assert!(
            build(bad)
                .unwrap_err()
                .to_string()
                .contains("pool:class:pages")
        );
        let none = Settings::new("slab-oracle", []);
        assert!(matches!(
            build(none),
            Err(ControlError::NotAvailable { .. })
        ));
    }
}
