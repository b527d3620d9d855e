//! `twemcache`: Twitter's random slab eviction (paper 002 section 2, "Twitter Policy"). When a
//! class is out of chunks and no free page is left, a page chosen uniformly among all the
//! pool's pages is emptied and given to that class. This happens on the allocation path, so the
//! controller only puts the engine in [`crate::ClassMode::RandomSlab`].

use super::{Access, ControlError, ControlView, Controller, Decision, Settings};

/// Twemcache's random slab eviction (module documentation).
#[derive(Debug, Default, Clone)]
pub struct Twemcache;

impl Controller for Twemcache {
    fn name(&self) -> &'static str {
        "twemcache"
    }

    fn on_access(&mut self, _a: &Access) {}

    fn observes(&self) -> bool {
        false
    }

    fn decide(&mut self, _view: &ControlView<'_>) -> Decision {
        Decision::default()
    }

    fn class_mode(&self) -> Option<crate::ClassMode> {
        Some(crate::ClassMode::RandomSlab)
    }
}

/// Builds `twemcache` (no settings).
pub(crate) fn build(s: Settings) -> Result<Box<dyn Controller>, ControlError> {
    s.finish()?;
    Ok(Box::new(Twemcache))
}
