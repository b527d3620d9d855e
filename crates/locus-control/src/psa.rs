//! `psa`: periodic slab allocation (Carra and Michiardi; described in paper 002 section 2). In a
//! window, class `i` saw `R_i` requests and owns `S_i` pages; the risk of taking a page from it
//! is `R_i / S_i`. Every `misses_per_move` misses, one page moves from the class with the lowest
//! risk to the class with the most misses. Here the misses of each interval are counted and the
//! moves they pay for are made at the interval boundary (the remainder carries over).

use crate::slabs::{ClassTracker, class_pages, page_move};
use locus_engine::control::{
    Access, ControlError, ControlView, Controller, Decision, Evicted, Settings,
};
use locus_engine::ids::ClassId;

/// Settings of [`Psa`].
#[derive(Clone, Debug, PartialEq)]
pub struct PsaConfig {
    /// Misses per page move (the paper's M; default 1000).
    pub misses_per_move: u64,
}

impl Default for PsaConfig {
    fn default() -> Self {
        PsaConfig {
            misses_per_move: 1000,
        }
    }
}

/// Periodic slab allocation (module documentation).
#[derive(Debug)]
pub struct Psa {
    cfg: PsaConfig,
    tracker: ClassTracker,
    /// Per pool, misses not yet paid out in moves.
    carry: Vec<u64>,
}

impl Psa {
    /// A PSA controller.
    pub fn new(cfg: PsaConfig) -> Self {
        Psa {
            cfg,
            tracker: ClassTracker::default(),
            carry: Vec::new(),
        }
    }
}

impl Controller for Psa {
    fn name(&self) -> &'static str {
        "psa"
    }

    fn on_access(&mut self, a: &Access) {
        self.tracker.access(a);
    }

    fn on_evict(&mut self, e: &Evicted) {
        self.tracker.evicted(e);
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        if self.carry.len() < view.pools.len() {
            self.carry.resize(view.pools.len(), 0);
        }
        for ps in view.pools {
            let p = ps.pool;
            let mut classes: Vec<ClassId> = ps.classes.iter().map(|c| c.class).collect();
            for c in self.tracker.active_classes(p) {
                if !classes.contains(&c) {
                    classes.push(c);
                }
            }
            let windows: Vec<_> = classes.iter().map(|&c| self.tracker.get(p, c)).collect();
            let mut pages: Vec<u64> = classes.iter().map(|&c| class_pages(ps, c)).collect();
            let misses: u64 = windows.iter().map(|w| w.misses).sum();
            let carry = &mut self.carry[p.0 as usize];
            *carry += misses;
            let m = self.cfg.misses_per_move.max(1);
            let Some(needy) = (0..classes.len())
                .filter(|&i| windows[i].misses > 0)
                .max_by_key(|&i| (windows[i].misses, std::cmp::Reverse(classes[i].0)))
            else {
                continue;
            };
            while *carry >= m {
                *carry -= m;
                let donor = (0..classes.len())
                    .filter(|&i| i != needy && pages[i] > 0)
                    .min_by(|&a, &b| {
                        let ra = windows[a].requests as f64 / pages[a] as f64;
                        let rb = windows[b].requests as f64 / pages[b] as f64;
                        ra.total_cmp(&rb).then(classes[a].0.cmp(&classes[b].0))
                    });
                let Some(donor) = donor else {
                    break;
                };
                d.moves.push(page_move(p, classes[donor], classes[needy]));
                pages[donor] -= 1;
                pages[needy] += 1;
            }
        }
        self.tracker.reset();
        d
    }

    fn class_mode(&self) -> Option<locus_engine::ClassMode> {
        Some(locus_engine::ClassMode::Manual)
    }
}

/// Builds `psa` from its settings.
pub(crate) fn build(mut s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    let cfg = PsaConfig {
        misses_per_move: s.u64("misses_per_move", PsaConfig::default().misses_per_move)?,
    };
    if cfg.misses_per_move == 0 {
        return Err(ControlError::BadSetting {
            controller: "psa".into(),
            key: "misses_per_move".into(),
            value: "0".into(),
            expected: "at least 1".into(),
        });
    }
    s.finish()?;
    Ok(Box::new(Psa::new(cfg)))
}
