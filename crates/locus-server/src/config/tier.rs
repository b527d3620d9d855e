//! `[tier]`: fast and slow memory tiers (sdTMM, dissertation section 5.1; issue 15). Absent =
//! one tier, the server exactly as without it.
//!
//! Every key of [`locus_engine::TierConfig`] is here under the same name and with the same
//! default (the dissertation's), plus `fast_memory` (the fast tier as a size instead of a share)
//! and a `slow_backend` of plain `"emulated"`, whose delay is measured at start-up
//! ([`crate::tiers::measured_fast_access_ns`]). The server runs the workers on a thread of their
//! own, so `worker_interval` (the data path's own runs) defaults to 0 here.

use locus_common::ByteSize;
use locus_engine::{PromotionMode, SlowBackend, TierConfig, tier as t};
use serde::{Deserialize, Serialize};

/// `[tier]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TierSection {
    /// `emulated` (delay measured at start-up), `emulated:<ns>`, `file:<path>` or `numa:<node>`.
    pub slow_backend: String,
    /// The fast tier's share of `memory.maxmemory` (0 < share < 1); default 0.2 unless
    /// `fast_memory` is given.
    pub fast_share: Option<f64>,
    /// The fast tier's size instead of a share (below `memory.maxmemory`).
    pub fast_memory: Option<ByteSize>,
    /// A tier's worker starts below this free share (sdTMM `lowMem`, 2%).
    pub low_watermark: f64,
    /// ... and stops at this free share (`highMem`, 5%).
    pub high_watermark: f64,
    /// Items demoted per demotion step.
    pub demotion_batch: u32,
    /// Items evicted per slow-tier eviction step.
    pub eviction_batch: u32,
    /// Items promoted per promotion step.
    pub promotion_batch: u32,
    /// Slow-tier items a promotion step examines per tenant.
    pub promotion_scan: u32,
    /// Fast-tier insertion point, a fraction of the list from its tail (1/4).
    pub fast_insertion: f64,
    /// Slow-tier insertion point (the midpoint).
    pub slow_insertion: f64,
    /// Promotion test: `reuse` (sdTMM), `naive` (naiveTMM) or `off`.
    pub promotion: PromotionMode,
    /// Fast-tier re-accesses in the rolling reuse-time window.
    pub reuse_window: u32,
    /// Data-path accesses between two runs of the workers by the data path itself; 0 (the
    /// server's default) leaves them to the worker thread alone.
    pub worker_interval: u64,
}

impl Default for TierSection {
    fn default() -> Self {
        let d = TierConfig::default();
        Self {
            slow_backend: "emulated".to_string(),
            fast_share: None,
            fast_memory: None,
            low_watermark: d.low_watermark,
            high_watermark: d.high_watermark,
            demotion_batch: d.demotion_batch,
            eviction_batch: d.eviction_batch,
            promotion_batch: d.promotion_batch,
            promotion_scan: d.promotion_scan,
            fast_insertion: d.fast_insertion,
            slow_insertion: d.slow_insertion,
            promotion: d.promotion,
            reuse_window: d.reuse_window,
            worker_interval: 0,
        }
    }
}

impl TierSection {
    /// The slow backend; plain `emulated` takes the delay measured at start-up.
    ///
    /// # Errors
    /// A message naming `tier.slow_backend`.
    pub fn backend(&self) -> Result<SlowBackend, String> {
        let s = self.slow_backend.trim();
        if s.eq_ignore_ascii_case("emulated") {
            return Ok(SlowBackend::Emulated {
                ns: crate::tiers::measured_fast_access_ns(),
            });
        }
        s.parse()
            .map_err(|e| format!("tier.slow_backend: {e} (or plain emulated)"))
    }

    /// The fast tier's share of `maxmemory`.
    ///
    /// # Errors
    /// A message naming `tier.fast_memory` or `tier.fast_share`.
    pub fn share(&self, maxmemory: u64) -> Result<f64, String> {
        match (self.fast_share, self.fast_memory) {
            (Some(_), Some(_)) => {
                Err("tier.fast_memory: give tier.fast_share or tier.fast_memory, not both".into())
            }
            (Some(s), None) => Ok(s),
            (None, None) => Ok(t::DEFAULT_FAST_SHARE),
            (None, Some(m)) if m.0 == 0 || m.0 >= maxmemory => Err(format!(
                "tier.fast_memory: {m} must be above 0 and below memory.maxmemory {} (the slow tier gets the rest)",
                ByteSize(maxmemory)
            )),
            (None, Some(m)) => Ok(m.0 as f64 / maxmemory as f64),
        }
    }

    /// The engine's tier configuration (a bad backend or share falls back to the default here;
    /// [`TierSection::problems`] reports it).
    pub fn tier_config(&self, maxmemory: u64) -> TierConfig {
        TierConfig {
            fast_share: self.share(maxmemory).unwrap_or(t::DEFAULT_FAST_SHARE),
            slow_backend: self.backend().unwrap_or_default(),
            low_watermark: self.low_watermark,
            high_watermark: self.high_watermark,
            demotion_batch: self.demotion_batch,
            eviction_batch: self.eviction_batch,
            promotion_batch: self.promotion_batch,
            promotion_scan: self.promotion_scan,
            fast_insertion: self.fast_insertion,
            slow_insertion: self.slow_insertion,
            promotion: self.promotion,
            reuse_window: self.reuse_window,
            worker_interval: self.worker_interval,
        }
    }

    /// The section's own problems (the engine's validation adds the rest, each naming its key).
    pub fn problems(&self, maxmemory: u64) -> Vec<String> {
        let mut p = Vec::new();
        if let Err(e) = self.backend() {
            p.push(e);
        }
        if let Err(e) = self.share(maxmemory) {
            p.push(e);
        }
        p
    }
}
