//! Engine and tenant configuration, with defaults and a `validate()` that reports every problem.

use serde::{Deserialize, Serialize};

use crate::policy::Policy;
use crate::tier::TierConfig;

/// Default `maxmemory`: 1 GiB of pages.
pub const DEFAULT_MAXMEMORY: u64 = 1 << 30;
/// Default page size: 1 MiB.
pub const DEFAULT_PAGE_SIZE: u64 = 1 << 20;
/// Smallest allowed page size: 4 KiB.
pub const MIN_PAGE_SIZE: u64 = 4 << 10;
/// Largest allowed page size: 1 GiB (item lengths are stored in 30 bits).
pub const MAX_PAGE_SIZE: u64 = 1 << 30;
/// Default size-class growth factor.
pub const DEFAULT_GROWTH_FACTOR: f64 = 1.08;
/// Default smallest chunk in bytes.
pub const DEFAULT_MIN_CHUNK: u32 = 48;
/// Redis's `lfu-log-factor` default.
pub const DEFAULT_LFU_LOG_FACTOR: u32 = 10;
/// Redis's `lfu-decay-time` default (minutes).
pub const DEFAULT_LFU_DECAY_TIME: u32 = 1;
/// Redis's `ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`.
pub const DEFAULT_ACTIVE_EXPIRE_KEYS: u32 = 20;
/// Redis's `maxmemory-samples` default.
pub const DEFAULT_SAMPLES: u32 = 5;
/// Largest `maxmemory-samples` (Redis 8's range).
pub const MAX_SAMPLES: u32 = 64;
/// Redis's `EVPOOL_SIZE`.
pub const DEFAULT_EVPOOL_SIZE: u32 = 16;
/// Largest allowed eviction pool.
pub const MAX_EVPOOL_SIZE: u32 = 1024;

/// How memory is divided between pools (the [`crate::arbiter::Arbiter`] in use).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionMode {
    /// Free competition: any pool may take free pages; when memory is full the coldest candidate
    /// among all pools is evicted (Redis with one database per tenant). Budgets are ignored.
    #[default]
    Shared,
    /// Static budgets: a pool never holds more than `max_bytes` and is guaranteed `min_bytes`.
    Static,
}

/// How the per-item recency clock advances.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LruClockMode {
    /// Redis-compatible: 24-bit clock in seconds (`LRU_CLOCK_RESOLUTION` 1000 ms).
    #[default]
    Redis,
    /// Exact logical time: a counter advanced by every GET and SET (what the papers simulate).
    /// Idle times are then in accesses. TTLs and the LFU decay still use the clock's ms.
    Logical,
}

/// Engine-wide configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Bytes of pages; the sum of pages in use never exceeds it. Metadata outside pages (index,
    /// sampling arrays, TTL table) is reported separately in [`crate::EngineStats`], and counts
    /// toward `maxmemory` too when `metadata_in_budget` is set.
    pub maxmemory: u64,
    /// Count the metadata outside pages (key index, sampling arrays, TTL table, recency lists)
    /// toward `maxmemory`: pages are granted only while pages + metadata fit, and when the
    /// metadata grows (an index doubling) pages are reclaimed until they fit again, so the
    /// process's memory follows the budget for tiny values too. The server turns it on; the
    /// simulator leaves it off (the papers' caches, and every experiment, budget item memory).
    pub metadata_in_budget: bool,
    /// Page size in bytes (4 KiB ..= 1 GiB, power of two not required).
    pub page_size: u64,
    /// Items larger than this many bytes (header + key + value) live in an allocation of their
    /// own outside the slab pages, charged to the budget at their size as the allocator rounds it, and
    /// may be as large as `maxmemory` (up to 2 GiB). A big value then costs what it holds (in a
    /// page it takes a whole chunk of its class, and half a page or more takes the whole page)
    /// and its memory serves any size once it goes. `None`: every item lives in a page (the
    /// papers' slab model; the simulator's setting). The server uses an eighth of a page.
    pub large_items: Option<u64>,
    /// Optional global cap on the number of items (object-count capacity for simulations).
    pub max_items: Option<u64>,
    /// How memory is divided between pools.
    pub partition: PartitionMode,
    /// Recency clock.
    pub lru_clock: LruClockMode,
    /// Seed of the engine's RNG (sampling, LFU increments).
    pub seed: u64,
    /// Ratio between consecutive size classes (> 1.0, ≤ 2.0).
    pub slab_growth_factor: f64,
    /// Smallest chunk in bytes (≥ 24, ≤ page size).
    pub min_chunk: u32,
    /// Redis's `lfu-log-factor`.
    pub lfu_log_factor: u32,
    /// Redis's `lfu-decay-time` in minutes (0 = never decay).
    pub lfu_decay_time: u32,
    /// Keys examined per active-expire loop (Redis `ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
    pub active_expire_keys_per_cycle: u32,
    /// Fast and slow memory tiers (sdTMM); `None`: one tier, the engine exactly as without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<TierConfig>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            maxmemory: DEFAULT_MAXMEMORY,
            metadata_in_budget: false,
            page_size: DEFAULT_PAGE_SIZE,
            large_items: None,
            max_items: None,
            partition: PartitionMode::Shared,
            lru_clock: LruClockMode::Redis,
            seed: 0,
            slab_growth_factor: DEFAULT_GROWTH_FACTOR,
            min_chunk: DEFAULT_MIN_CHUNK,
            lfu_log_factor: DEFAULT_LFU_LOG_FACTOR,
            lfu_decay_time: DEFAULT_LFU_DECAY_TIME,
            active_expire_keys_per_cycle: DEFAULT_ACTIVE_EXPIRE_KEYS,
            tier: None,
        }
    }
}

impl EngineConfig {
    /// Checks every field; returns every problem found, each naming its key.
    ///
    /// # Errors
    /// One message per invalid field.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut p = Vec::new();
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size) {
            p.push(format!(
                "page_size: {} is outside {MIN_PAGE_SIZE}..={MAX_PAGE_SIZE} bytes",
                self.page_size
            ));
        }
        if self.maxmemory == 0 {
            p.push("maxmemory: must be at least one page (got 0)".to_string());
        } else if self.page_size >= MIN_PAGE_SIZE && self.maxmemory < self.page_size {
            p.push(format!(
                "maxmemory: {} is smaller than one page ({} bytes)",
                self.maxmemory, self.page_size
            ));
        }
        if let Some(l) = self.large_items
            && (l < 64 || (self.page_size >= MIN_PAGE_SIZE && l > self.page_size))
        {
            p.push(format!(
                "large_items: {l} must be between 64 bytes and the page size ({})",
                self.page_size
            ));
        }
        if self.max_items == Some(0) {
            p.push("max_items: must be at least 1 when set".to_string());
        }
        if !(self.slab_growth_factor.is_finite()
            && self.slab_growth_factor > 1.0
            && self.slab_growth_factor <= 2.0)
        {
            p.push(format!(
                "slab_growth_factor: {} must be > 1.0 and <= 2.0",
                self.slab_growth_factor
            ));
        }
        if self.min_chunk < 24 {
            p.push(format!("min_chunk: {} must be >= 24", self.min_chunk));
        } else if self.page_size >= MIN_PAGE_SIZE && u64::from(self.min_chunk) > self.page_size {
            p.push(format!(
                "min_chunk: {} is larger than page_size {}",
                self.min_chunk, self.page_size
            ));
        }
        if self.lfu_log_factor > 1_000_000 {
            p.push(format!(
                "lfu_log_factor: {} is out of range 0..=1000000",
                self.lfu_log_factor
            ));
        }
        if self.lfu_decay_time > 65_535 {
            p.push(format!(
                "lfu_decay_time: {} is out of range 0..=65535 minutes",
                self.lfu_decay_time
            ));
        }
        if self.active_expire_keys_per_cycle == 0 {
            p.push("active_expire_keys_per_cycle: must be >= 1".to_string());
        }
        if let Some(tier) = &self.tier {
            let pages = self.maxmemory.checked_div(self.page_size).unwrap_or(0);
            p.extend(tier.problems(pages));
            if self.large_items.is_some() {
                p.push(
                    "tier: large_items must be unset with tiers (large items have no tier yet)"
                        .to_string(),
                );
            }
            if self.metadata_in_budget {
                p.push(
                    "tier: metadata_in_budget must be off with tiers (the budget is per tier's pages)"
                        .to_string(),
                );
            }
        }
        if p.is_empty() { Ok(()) } else { Err(p) }
    }
}

/// Per-tenant configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TenantConfig {
    /// Unique tenant name.
    pub name: String,
    /// Eviction policy of the tenant's pool.
    #[serde(with = "policy_serde")]
    pub policy: Policy,
    /// `maxmemory-samples` K (1..=64).
    pub samples: u32,
    /// Eviction pool size: 16 = Redis; 0 = textbook K-LRU (evict the oldest of the K sampled).
    pub evpool_size: u32,
    /// Static floor in bytes (static partitioning only).
    pub min_bytes: u64,
    /// Static cap in bytes (static partitioning only).
    pub max_bytes: Option<u64>,
    /// Optional cap on the tenant's number of items.
    pub max_items: Option<u64>,
}

impl Default for TenantConfig {
    fn default() -> Self {
        Self::new("default")
    }
}

impl TenantConfig {
    /// A tenant with default settings (allkeys-lru, K = 5, Redis eviction pool, no budget).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            policy: Policy::AllkeysLru,
            samples: DEFAULT_SAMPLES,
            evpool_size: DEFAULT_EVPOOL_SIZE,
            min_bytes: 0,
            max_bytes: None,
            max_items: None,
        }
    }

    /// Checks every field; returns every problem found, each naming its key.
    ///
    /// # Errors
    /// One message per invalid field.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut p = Vec::new();
        if self.name.is_empty() {
            p.push("name: must not be empty".to_string());
        }
        if !(1..=MAX_SAMPLES).contains(&self.samples) {
            p.push(format!(
                "samples: {} is outside 1..={MAX_SAMPLES}",
                self.samples
            ));
        }
        if self.evpool_size > MAX_EVPOOL_SIZE {
            p.push(format!(
                "evpool_size: {} is outside 0..={MAX_EVPOOL_SIZE}",
                self.evpool_size
            ));
        }
        if let Some(max) = self.max_bytes
            && max < self.min_bytes
        {
            p.push(format!(
                "max_bytes: {max} is smaller than min_bytes {}",
                self.min_bytes
            ));
        }
        if self.max_items == Some(0) {
            p.push("max_items: must be at least 1 when set".to_string());
        }
        if p.is_empty() { Ok(()) } else { Err(p) }
    }
}

mod policy_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::policy::Policy;

    pub(super) fn serialize<S: Serializer>(p: &Policy, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(EngineConfig::default().validate(), Ok(()));
        assert_eq!(TenantConfig::new("a").validate(), Ok(()));
    }

    #[test]
    fn every_engine_problem_is_reported() {
        let c = EngineConfig {
            maxmemory: 0,
            page_size: 100,
            max_items: Some(0),
            slab_growth_factor: 0.5,
            min_chunk: 8,
            lfu_log_factor: 2_000_000,
            lfu_decay_time: 70_000,
            active_expire_keys_per_cycle: 0,
            ..EngineConfig::default()
        };
        let errs = c.validate().unwrap_err();
        for key in [
            "page_size",
            "maxmemory",
            "max_items",
            "slab_growth_factor",
            "min_chunk",
            "lfu_log_factor",
            "lfu_decay_time",
            "active_expire_keys_per_cycle",
        ] {
            assert!(
                errs.iter().any(|e| e.starts_with(key)),
                "{key} missing in {errs:?}"
            );
        }
        assert_eq!(errs.len(), 8);
        let nan = EngineConfig {
            slab_growth_factor: f64::NAN,
            maxmemory: 1000,
            ..EngineConfig::default()
        };
        assert_eq!(nan.validate().unwrap_err().len(), 2);
    }

    #[test]
    fn every_tenant_problem_is_reported() {
        let t = TenantConfig {
            name: String::new(),
            samples: 0,
            evpool_size: 5000,
            min_bytes: 10,
            max_bytes: Some(5),
            max_items: Some(0),
            ..TenantConfig::new("x")
        };
        let errs = t.validate().unwrap_err();
        assert_eq!(errs.len(), 5, "{errs:?}");
        let t = TenantConfig {
            samples: 65,
            ..TenantConfig::new("x")
        };
        assert!(t.validate().unwrap_err()[0].starts_with("samples"));
    }
}

impl PartitionMode {
    /// The configuration name (`shared`, `static`).
    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::Shared => "shared",
            PartitionMode::Static => "static",
        }
    }
}

impl std::fmt::Display for PartitionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PartitionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "shared" => Ok(PartitionMode::Shared),
            "static" => Ok(PartitionMode::Static),
            _ => Err(format!(
                "unknown partition mode {s:?} (expected shared or static)"
            )),
        }
    }
}

impl LruClockMode {
    /// The configuration name (`redis`, `logical`).
    pub fn name(self) -> &'static str {
        match self {
            LruClockMode::Redis => "redis",
            LruClockMode::Logical => "logical",
        }
    }
}

impl std::fmt::Display for LruClockMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LruClockMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "redis" => Ok(LruClockMode::Redis),
            "logical" => Ok(LruClockMode::Logical),
            _ => Err(format!(
                "unknown lru clock mode {s:?} (expected redis or logical)"
            )),
        }
    }
}

#[cfg(test)]
mod mode_tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for m in [PartitionMode::Shared, PartitionMode::Static] {
            assert_eq!(m.to_string().to_uppercase().parse::<PartitionMode>(), Ok(m));
        }
        for m in [LruClockMode::Redis, LruClockMode::Logical] {
            assert_eq!(m.to_string().parse::<LruClockMode>(), Ok(m));
        }
        assert!("dynamic".parse::<PartitionMode>().is_err());
        assert!("wall".parse::<LruClockMode>().is_err());
    }
}
