//! `memcached`: memcached's default slab allocation, the baseline of LAMA's evaluation (paper
//! 002 section 2). Pages go to classes on demand during the cold start and never move; a class
//! out of chunks evicts its own least recently used items (here: the oldest of K sampled).
//! The controller itself decides nothing: it only puts the engine in
//! [`crate::ClassMode::Manual`].

use super::{Access, ControlError, ControlView, Controller, Decision, Settings};

/// memcached without a slab mover (module documentation).
#[derive(Debug, Default, Clone)]
pub struct Memcached;

impl Controller for Memcached {
    fn name(&self) -> &'static str {
        "memcached"
    }

    fn on_access(&mut self, _a: &Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
        Decision::default()
    }

    fn class_mode(&self) -> Option<crate::ClassMode> {
        Some(crate::ClassMode::Manual)
    }
}

/// Builds `memcached` (no settings).
pub(crate) fn build(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    s.finish()?;
    Ok(Box::new(Memcached))
}
