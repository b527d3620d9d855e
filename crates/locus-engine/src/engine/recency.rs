//! Clocks and per-item recency fields: the LRU clock, LFU counters and the idle times the sampled policies compare.

use super::*;

impl Engine {
    // Clocks and per-item recency fields.

    #[inline]
    pub(super) fn lru_clock(&self) -> u32 {
        match self.cfg.lru_clock {
            LruClockMode::Redis => redis_lru_clock(self.clock.now_ms()),
            LruClockMode::Logical => self.logical as u32,
        }
    }

    #[inline]
    pub(super) fn idle_of(&self, lruclock: u32, lru: u32) -> u64 {
        match self.cfg.lru_clock {
            LruClockMode::Redis => redis_idle_ms(lruclock, lru),
            LruClockMode::Logical => u64::from(lruclock.wrapping_sub(lru)),
        }
    }

    /// Touches an item on access (Redis `lookupKey`: LFU update or LRU stamp; list move).
    #[inline]
    pub(super) fn touch(&mut self, t: usize, h: u32) {
        let policy = self.tenants[t].cfg.policy;
        let v = if policy.is_lfu() {
            let old = self.store.lru(h);
            lfu_touch(
                old,
                lfu_minutes(self.clock.now_ms()),
                self.cfg.lfu_decay_time,
                self.cfg.lfu_log_factor,
                &mut self.rng,
            )
        } else {
            self.lru_clock()
        };
        self.store.set_lru(h, v);
        let pos = self.store.pos(h);
        let tn = &mut self.tenants[t];
        if let Some(l) = &mut tn.lru {
            l.move_front(pos);
        }
        if let Some(hy) = &mut tn.hyp {
            hy[pos as usize].uses = hy[pos as usize].uses.saturating_add(1);
        }
        self.tier_on_access(t, h, true);
    }

    /// Redis's `lfu-log-factor` and `lfu-decay-time`, changed at run time (CONFIG SET). Every
    /// LFU counter keeps its value and follows the new parameters from its next access or decay
    /// (as in Redis, where the two are read on each update).
    ///
    /// # Errors
    /// [`EngineError::InvalidConfig`] when a value is out of the configuration's range.
    pub fn set_lfu_params(&mut self, log_factor: u32, decay_time: u32) -> Result<(), EngineError> {
        let mut cfg = self.cfg.clone();
        cfg.lfu_log_factor = log_factor;
        cfg.lfu_decay_time = decay_time;
        cfg.validate()
            .map_err(|problems| EngineError::InvalidConfig { problems })?;
        self.cfg.lfu_log_factor = log_factor;
        self.cfg.lfu_decay_time = decay_time;
        Ok(())
    }

    /// Hyperbolic caching's clock: accesses (logical LRU clock) or milliseconds.
    pub(super) fn hyp_now(&self) -> u64 {
        match self.cfg.lru_clock {
            LruClockMode::Logical => self.logical,
            LruClockMode::Redis => self.clock.now_ms(),
        }
    }
}
