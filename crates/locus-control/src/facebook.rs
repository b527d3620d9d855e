//! `facebook`: Facebook's age balancing of slab classes (Nishtala et al., NSDI'13; described in
//! paper 002 section 2). A class that is evicting and whose evicted items were used at least
//! `threshold` (20%) more recently than the average of the other classes' evicted items needs
//! memory: it receives one page from the class whose evicted items are oldest (the class holding
//! the overall least recently used item). Ages are measured per interval from sampled keys (see
//! `slabs`). A class that owns no page while it is asked to store items counts as evicting with
//! age 0 (everything it gets is dropped at once). This approximates global LRU across classes.

use crate::slabs::{ClassTracker, class_pages, page_move};
use locus_engine::control::{
    Access, ControlError, ControlView, Controller, Decision, Evicted, Settings,
};
use locus_engine::ids::ClassId;

/// Settings of [`Facebook`].
#[derive(Clone, Debug, PartialEq)]
pub struct FacebookConfig {
    /// How much younger than the others' average a class's tail must be (default 0.2).
    pub threshold: f64,
    /// Most page moves per interval (default 4).
    pub max_moves: u64,
}

impl Default for FacebookConfig {
    fn default() -> Self {
        FacebookConfig {
            threshold: 0.2,
            max_moves: 4,
        }
    }
}

/// Facebook's age balancing (module documentation).
#[derive(Debug)]
pub struct Facebook {
    cfg: FacebookConfig,
    tracker: ClassTracker,
}

impl Facebook {
    /// A Facebook age-balancing controller.
    pub fn new(cfg: FacebookConfig) -> Self {
        Facebook {
            cfg,
            tracker: ClassTracker::default(),
        }
    }
}

impl Controller for Facebook {
    fn name(&self) -> &'static str {
        "facebook"
    }

    fn on_access(&mut self, a: &Access) {
        self.tracker.access(a);
    }

    fn on_evict(&mut self, e: &Evicted) {
        self.tracker.evicted(e);
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        for ps in view.pools {
            let p = ps.pool;
            // (class, tail age µs, pages) of classes that evicted sampled items this window.
            let mut ages: Vec<(ClassId, f64, u64)> = self
                .tracker
                .active_classes(p)
                .into_iter()
                .filter_map(|c| {
                    let w = self.tracker.get(p, c);
                    let pages = class_pages(ps, c);
                    if pages == 0 && w.requests > 0 {
                        // Owns nothing: every item it is asked to store is dropped at once,
                        // the youngest possible tail.
                        return Some((c, 0.0, 0));
                    }
                    Some((c, w.tail_age_us()?, pages))
                })
                .collect();
            let mut moves = 0;
            // Youngest tails first: the neediest classes.
            ages.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.0.cmp(&b.0.0)));
            for i in 0..ages.len() {
                if moves >= self.cfg.max_moves || ages.len() < 2 {
                    break;
                }
                let (needy, age, _) = ages[i];
                let others: Vec<f64> = ages
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, a)| a.1)
                    .collect();
                let mean = others.iter().sum::<f64>() / others.len() as f64;
                if age > mean * (1.0 - self.cfg.threshold) {
                    continue;
                }
                let donor = ages
                    .iter_mut()
                    .filter(|a| a.0 != needy && a.2 > 1)
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                if let Some(donor) = donor {
                    d.moves.push(page_move(p, donor.0, needy));
                    donor.2 -= 1;
                    moves += 1;
                }
            }
        }
        self.tracker.reset();
        d
    }

    fn class_mode(&self) -> Option<locus_engine::ClassMode> {
        Some(locus_engine::ClassMode::Manual)
    }
}

/// Builds `facebook` from its settings.
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let dflt = FacebookConfig::default();
    let cfg = FacebookConfig {
        threshold: s.f64("threshold", dflt.threshold)?,
        max_moves: s.u64("max_moves", dflt.max_moves)?,
    };
    if !(0.0..1.0).contains(&cfg.threshold) {
        return Err(ControlError::BadSetting {
            controller: "facebook".into(),
            key: "threshold".into(),
            value: cfg.threshold.to_string(),
            expected: "a fraction in [0, 1)".into(),
        });
    }
    s.finish()?;
    Ok(Box::new(Facebook::new(cfg)))
}
