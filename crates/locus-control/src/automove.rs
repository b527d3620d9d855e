//! `automove`: memcached's original slab automover (paper 002 section 2, "Automove"; memcached
//! before 1.4.25). Every window (one controller interval; memcached used 10 s) the evictions of
//! each class are counted. When one class had the most evictions in each of the last three
//! windows, it receives one page from a class that evicted nothing in those three windows.
//! Greedy but lazy: on real workloads a class with no evictions for three windows is rare.

use std::collections::VecDeque;

use crate::slabs::{ClassTracker, class_pages, page_move};
use locus_engine::control::{
    Access, ControlError, ControlView, Controller, Decision, Evicted, Settings,
};
use locus_engine::ids::ClassId;

/// Windows a class must lead (and a donor must stay quiet).
const WINDOWS: usize = 3;

/// memcached's automover (module documentation).
#[derive(Debug, Default)]
pub struct Automove {
    tracker: ClassTracker,
    /// Per pool, the evictions per class of the last windows (newest last).
    history: Vec<VecDeque<Vec<(ClassId, u64)>>>,
}

impl Controller for Automove {
    fn name(&self) -> &'static str {
        "automove"
    }

    fn on_access(&mut self, a: &Access) {
        self.tracker.access(a);
    }

    fn on_evict(&mut self, e: &Evicted) {
        self.tracker.evicted(e);
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let mut d = Decision::default();
        if self.history.len() < view.pools.len() {
            self.history.resize_with(view.pools.len(), VecDeque::new);
        }
        for ps in view.pools {
            let p = ps.pool;
            let mut classes: Vec<ClassId> = ps.classes.iter().map(|c| c.class).collect();
            for c in self.tracker.active_classes(p) {
                if !classes.contains(&c) {
                    classes.push(c);
                }
            }
            let window: Vec<(ClassId, u64)> = classes
                .iter()
                .map(|&c| (c, self.tracker.get(p, c).evictions))
                .collect();
            let h = &mut self.history[p.0 as usize];
            h.push_back(window);
            if h.len() > WINDOWS {
                h.pop_front();
            }
            if h.len() < WINDOWS {
                continue;
            }
            let leader = |w: &Vec<(ClassId, u64)>| {
                w.iter()
                    .filter(|(_, e)| *e > 0)
                    .max_by_key(|(c, e)| (*e, std::cmp::Reverse(c.0)))
                    .map(|(c, _)| *c)
            };
            let Some(first) = leader(&h[0]) else {
                continue;
            };
            if !h.iter().all(|w| leader(w) == Some(first)) {
                continue;
            }
            let evictions_of = |w: &Vec<(ClassId, u64)>, c: ClassId| {
                w.iter().find(|(x, _)| *x == c).map_or(0, |(_, e)| *e)
            };
            let donor = classes
                .iter()
                .copied()
                .filter(|&c| c != first && class_pages(ps, c) > 0)
                .filter(|&c| h.iter().all(|w| evictions_of(w, c) == 0))
                .max_by_key(|&c| (class_pages(ps, c), std::cmp::Reverse(c.0)));
            if let Some(donor) = donor {
                d.moves.push(page_move(p, donor, first));
                // A fresh start: the receiver must lead three new windows.
                h.clear();
            }
        }
        self.tracker.reset();
        d
    }

    fn class_mode(&self) -> Option<locus_engine::ClassMode> {
        Some(locus_engine::ClassMode::Manual)
    }
}

/// Builds `automove` (no settings; the window is the controller interval).
pub(crate) fn build(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    s.finish()?;
    Ok(Box::new(Automove::default()))
}
