//! Controllers that decide nothing: each only puts the engine in the class mode of the system it
//! stands for, and the engine's allocation path does the rest.
//!
//! * `memcached`: memcached's default slab allocation, the baseline of LAMA's evaluation (paper
//!   002 section 2). Pages go to classes on demand during the cold start and never move; a class
//!   out of chunks evicts its own least recently used items (here: the oldest of K sampled).
//!   Class mode [`ClassMode::Manual`].
//! * `twemcache`: Twitter's random slab eviction (paper 002 section 2, "Twitter Policy"). When a
//!   class is out of chunks and no free page is left, a page chosen uniformly among all the
//!   pool's pages is emptied and given to that class, on the allocation path. Class mode
//!   [`ClassMode::RandomSlab`].

use locus_engine::ClassMode;
use locus_engine::control::{Access, ControlError, ControlView, Controller, Decision, Settings};

/// A controller that only sets a class mode (module documentation).
#[derive(Debug, Clone, Copy)]
pub struct Passive {
    name: &'static str,
    mode: ClassMode,
}

impl Passive {
    /// `memcached`: pages stay with the class that took them.
    pub const MEMCACHED: Passive = Passive {
        name: "memcached",
        mode: ClassMode::Manual,
    };
    /// `twemcache`: a class out of chunks empties a random page of the pool.
    pub const TWEMCACHE: Passive = Passive {
        name: "twemcache",
        mode: ClassMode::RandomSlab,
    };
}

impl Controller for Passive {
    fn name(&self) -> &'static str {
        self.name
    }

    fn on_access(&mut self, _a: &Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
        Decision::default()
    }

    fn class_mode(&self) -> Option<ClassMode> {
        Some(self.mode)
    }
}

/// Builds `memcached` (no settings).
pub(crate) fn build_memcached(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    s.finish()?;
    Ok(Box::new(Passive::MEMCACHED))
}

/// Builds `twemcache` (no settings).
pub(crate) fn build_twemcache(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    s.finish()?;
    Ok(Box::new(Passive::TWEMCACHE))
}
