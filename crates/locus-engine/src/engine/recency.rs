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

    /// RESTORE's IDLETIME and FREQ (Redis's `objectSetLRUOrLFU`): under an LFU policy a
    /// `freq` (0-255) becomes the key's counter, stamped now; under the others an `idle_secs`
    /// back-dates its LRU stamp (wrapping to half the clock ahead when it would go below 0, as
    /// Redis does). The value that does not apply to the policy is ignored, as is `idle_secs`
    /// under the logical clock (whose stamps count accesses, not seconds). True when set.
    pub fn set_recency(
        &mut self,
        t: TenantId,
        key: &[u8],
        idle_secs: Option<u64>,
        freq: Option<u8>,
    ) -> bool {
        let Some((ti, h)) = self.lookup_key(t.0 as usize, key, hash_key(key)) else {
            return false;
        };
        let v = if self.tenants[ti].cfg.policy.is_lfu() {
            let Some(f) = freq else { return false };
            (lfu_minutes(self.clock.now_ms()) << 8) | u32::from(f)
        } else {
            let Some(idle) = idle_secs else { return false };
            if self.cfg.lru_clock == LruClockMode::Logical {
                return false;
            }
            let clock = i64::from(self.lru_clock());
            let abs = clock - i64::try_from(idle).unwrap_or(i64::MAX / 2);
            if abs < 0 {
                ((clock + i64::from(crate::evict::LRU_CLOCK_MAX / 2))
                    % i64::from(crate::evict::LRU_CLOCK_MAX)) as u32
            } else {
                abs as u32
            }
        };
        self.store.set_lru(h, v);
        true
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
