//! The two baselines every experiment compares against: `shared` (free competition, as Redis with
//! one database per tenant: no targets, the coldest candidate over all pools is evicted) and
//! `static` (fixed shares of memory per pool, equal by default).

use locus_engine::control::{ControlError, ControlView, Controller, Decision, Settings};

/// Free competition: never sets a target.
#[derive(Debug, Default, Clone)]
pub struct SharedController;

impl Controller for SharedController {
    fn name(&self) -> &'static str {
        "shared"
    }

    fn on_access(&mut self, _a: &super::Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
        Decision::default()
    }
}

/// Fixed shares: pool `i` gets `pages_total * w_i / Σw` pages (rounded down), where `w` is the
/// `shares` setting (one weight per pool in pool order; missing weights are 1).
#[derive(Debug, Default, Clone)]
pub struct StaticController {
    shares: Vec<f64>,
}

impl StaticController {
    /// Equal shares (`shares` empty) or the given weights.
    pub fn new(shares: Vec<f64>) -> Self {
        StaticController { shares }
    }

    /// The targets for `pools` pools and `pages_total` pages.
    pub fn targets(&self, pools: usize, pages_total: u64) -> Vec<u64> {
        let w: Vec<f64> = (0..pools)
            .map(|i| self.shares.get(i).copied().unwrap_or(1.0).max(0.0))
            .collect();
        let sum: f64 = w.iter().sum();
        if sum <= 0.0 {
            return vec![pages_total / pools.max(1) as u64; pools];
        }
        w.iter()
            .map(|wi| (pages_total as f64 * wi / sum).floor() as u64)
            .collect()
    }
}

impl Controller for StaticController {
    fn name(&self) -> &'static str {
        "static"
    }

    fn on_access(&mut self, _a: &super::Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        Decision {
            pool_pages: Some(self.targets(view.pools.len(), view.pages_total)),
            ..Decision::default()
        }
    }
}

pub(crate) fn build_shared(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    s.finish()?;
    Ok(Box::new(SharedController))
}

pub(crate) fn build_static(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let shares = s.f64_list("shares", &[])?;
    if shares.iter().any(|w| *w < 0.0) {
        return Err(ControlError::BadSetting {
            controller: "static".into(),
            key: "shares".into(),
            value: format!("{shares:?}"),
            expected: "non-negative weights".into(),
        });
    }
    s.finish()?;
    Ok(Box::new(StaticController::new(shares)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_shares_split_by_weight() {
        assert_eq!(StaticController::new(vec![]).targets(3, 10), vec![3, 3, 3]);
        assert_eq!(
            StaticController::new(vec![1.0, 3.0]).targets(2, 100),
            vec![25, 75]
        );
        assert_eq!(StaticController::new(vec![2.0]).targets(2, 9), vec![6, 3]);
    }
}
