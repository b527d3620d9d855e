//! `[tier]`: fast and slow memory tiers (sdTMM, dissertation section 5.1; issue 15). Absent =
//! one tier, the server exactly as without it.
//!
//! The section is the engine's [`locus_engine::TierConfig`] (every key under its own name and
//! with its default, the dissertation's; an unknown key is refused by it) plus two server
//! forms: `fast_memory` (the fast tier as a size instead of a share) and a `slow_backend` of
//! plain `"emulated"` (the default), whose delay is measured at start-up
//! ([`crate::tiers::measured_fast_access_ns`]). The server runs the workers on a thread of their
//! own, so `worker_interval` (the data path's own runs) defaults to 0 here.

use locus_common::ByteSize;
use locus_engine::{SlowBackend, TierConfig};
use serde::{Deserialize, Serialize};

/// `[tier]`: its keys as written (read into a [`TierConfig`] by [`TierSection::tier_config`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TierSection(pub toml::Table);

impl TierSection {
    /// Sets a key (the command line's `--tier-backend`, `--fast-memory`).
    pub fn set(&mut self, key: &str, value: impl Into<toml::Value>) {
        self.0.insert(key.to_string(), value.into());
    }

    /// Removes a key.
    pub fn unset(&mut self, key: &str) {
        self.0.remove(key);
    }

    /// The engine's tier configuration for `maxmemory` and the section's own problems, each
    /// naming its key (the engine's validation of the values comes on top). A key with a problem
    /// keeps its default in the configuration; the others are applied, so the engine still
    /// checks them.
    pub fn read(&self, maxmemory: u64) -> (TierConfig, Vec<String>) {
        let mut t = self.0.clone();
        let backend = t.remove("slow_backend");
        let fast_memory = t.remove("fast_memory");
        let has_share = t.contains_key("fast_share");
        t.entry("worker_interval")
            .or_insert(toml::Value::Integer(0));
        let mut p = Vec::new();
        let mut cfg: TierConfig = t.try_into().unwrap_or_else(|e: toml::de::Error| {
            // toml puts the key on a line of its own (`... expected f64\nin `fast_share``).
            let text = e.to_string();
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            p.push(format!("tier: {}", lines.join(" ")));
            TierConfig {
                worker_interval: 0,
                ..TierConfig::default()
            }
        });
        match backend {
            None => cfg.slow_backend = measured(),
            Some(toml::Value::String(s)) if s.trim().eq_ignore_ascii_case("emulated") => {
                cfg.slow_backend = measured();
            }
            Some(toml::Value::String(s)) => match s.trim().parse() {
                Ok(b) => cfg.slow_backend = b,
                Err(e) => p.push(format!("tier.slow_backend: {e} (or plain emulated)")),
            },
            Some(v) => p.push(format!("tier.slow_backend: {v} is not a string")),
        }
        if let Some(v) = fast_memory {
            match ByteSize::deserialize(v.clone()) {
                Err(e) => p.push(format!("tier.fast_memory: {v}: {e}")),
                Ok(_) if has_share => p.push(
                    "tier.fast_memory: give tier.fast_share or tier.fast_memory, not both".into(),
                ),
                Ok(m) if m.0 == 0 || m.0 >= maxmemory => p.push(format!(
                    "tier.fast_memory: {m} must be above 0 and below memory.maxmemory {} (the slow tier gets the rest)",
                    ByteSize(maxmemory)
                )),
                Ok(m) => cfg.fast_share = m.0 as f64 / maxmemory as f64,
            }
        }
        (cfg, p)
    }

    /// The engine's tier configuration (see [`TierSection::read`]).
    pub fn tier_config(&self, maxmemory: u64) -> TierConfig {
        self.read(maxmemory).0
    }

    /// The section's own problems (the engine's validation adds the rest, each naming its key).
    pub fn problems(&self, maxmemory: u64) -> Vec<String> {
        self.read(maxmemory).1
    }
}

/// Plain `emulated`: the delay measured at start-up.
fn measured() -> SlowBackend {
    SlowBackend::Emulated {
        ns: crate::tiers::measured_fast_access_ns(),
    }
}
