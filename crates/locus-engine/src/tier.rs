//! Memory tiers (sdTMM, chapter 5 of the dissertation in `papers/`, section 5.1): the
//! configuration, the tier names and the per-tier counters.
//!
//! A tiered engine splits `maxmemory` into a fast tier (ordinary memory) and a slow tier (pages
//! from a slower backend); every page belongs to one tier and the page budget holds per tier.
//! The engine side (lists, allocation, workers) lives in `engine/tier.rs`.
//!
//! ```text
//!   new items, fills ──► fast tier (LRU, insert 1/4 from tail) ──reactive eviction──► gone
//!                          │ ▲
//!          demotion worker │ │ promotion worker (reuse time < fast tier's rolling mean)
//!   (free < low .. high)   ▼ │
//!                        slow tier (LRU, insert at midpoint) ──eviction worker / reactive──► gone
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Default fast-tier share of `maxmemory` (the dissertation's single-tenant setting: 20%).
pub const DEFAULT_FAST_SHARE: f64 = 0.2;
/// Default emulated slow-tier delay per access, in nanoseconds.
pub const DEFAULT_EMULATED_NS: u64 = 100;
/// sdTMM's `lowMem` watermark (section 5.1.3): a worker starts below 2% free.
pub const DEFAULT_LOW_WATERMARK: f64 = 0.02;
/// sdTMM's `highMem` watermark: a worker stops at 5% free.
pub const DEFAULT_HIGH_WATERMARK: f64 = 0.05;
/// Default items moved (or evicted) per worker step.
pub const DEFAULT_BATCH: u32 = 32;
/// Default slow-tier items a promotion step examines from the head of each slow list.
pub const DEFAULT_PROMOTION_SCAN: u32 = 256;
/// Fast-tier insertion point: a quarter of the list from the tail (section 5.1.2).
pub const DEFAULT_FAST_INSERTION: f64 = 0.25;
/// Slow-tier insertion point: the midpoint.
pub const DEFAULT_SLOW_INSERTION: f64 = 0.5;
/// Fast-tier re-accesses kept in the rolling reuse-time window.
pub const DEFAULT_REUSE_WINDOW: u32 = 1024;
/// Data-path accesses between two runs of the workers.
pub const DEFAULT_WORKER_INTERVAL: u64 = 100;

/// One of the two tiers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Ordinary memory (local DRAM).
    Fast,
    /// The slower tier (CXL, far NUMA node, a file mapping, or emulated).
    Slow,
}

impl Tier {
    /// Both tiers, fast first.
    pub const ALL: [Tier; 2] = [Tier::Fast, Tier::Slow];

    /// 0 for fast, 1 for slow.
    pub fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn from_index(i: u8) -> Tier {
        if i == 0 { Tier::Fast } else { Tier::Slow }
    }

    /// `fast` or `slow`.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Fast => "fast",
            Tier::Slow => "slow",
        }
    }
}

/// Where the slow tier's pages come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlowBackend {
    /// Ordinary memory; every slow-tier access costs the caller `ns` nanoseconds more (the
    /// simulator adds it to modelled time, a server would spin). The engine never sleeps.
    Emulated {
        /// Extra nanoseconds per slow-tier access.
        ns: u64,
    },
    /// A shared mapping of this file (a file on tmpfs, on a DAX/pmem file system, or a plain
    /// file): created or truncated at start, given the slow tier's budget in bytes with
    /// `posix_fallocate` (too little space is an error at start), every slow page a window of
    /// it, removed when the engine is dropped. Its contents are not kept across restarts; one
    /// engine per file (it is locked with `flock` while mapped).
    File {
        /// The file.
        path: String,
    },
    /// Anonymous memory bound to this NUMA node with `mbind(MPOL_BIND)` (CXL memory appears
    /// as a CPU-less node, a far socket as another node); every slow page is a window of it.
    Numa {
        /// The node.
        node: u32,
    },
}

impl Default for SlowBackend {
    fn default() -> Self {
        SlowBackend::Emulated {
            ns: DEFAULT_EMULATED_NS,
        }
    }
}

impl fmt::Display for SlowBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlowBackend::Emulated { ns } => write!(f, "emulated:{ns}"),
            SlowBackend::File { path } => write!(f, "file:{path}"),
            SlowBackend::Numa { node } => write!(f, "numa:{node}"),
        }
    }
}

impl FromStr for SlowBackend {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, arg) = s.split_once(':').ok_or_else(|| {
            format!("'{s}' is not one of emulated:<ns>, file:<path>, numa:<node>")
        })?;
        match kind {
            "emulated" => arg
                .parse()
                .map(|ns| SlowBackend::Emulated { ns })
                .map_err(|_| format!("'{arg}' is not a number of nanoseconds")),
            "file" if !arg.is_empty() => Ok(SlowBackend::File {
                path: arg.to_string(),
            }),
            "file" => Err("file: needs a path".to_string()),
            "numa" => arg
                .parse()
                .map(|node| SlowBackend::Numa { node })
                .map_err(|_| format!("'{arg}' is not a NUMA node number")),
            _ => Err(format!(
                "unknown backend '{kind}' (emulated:<ns>, file:<path>, numa:<node>)"
            )),
        }
    }
}

impl Serialize for SlowBackend {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SlowBackend {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// How the promotion worker decides that a slow-tier item is hot (section 5.1.4.1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PromotionMode {
    /// sdTMM: the item's last reuse time in the slow tier beats the fast tier's rolling-window
    /// mean reuse time.
    #[default]
    Reuse,
    /// naiveTMM: the item was accessed more recently than the fast tier's LRU tail.
    Naive,
    /// No promotion (the dissertation's "sdTMM-demotion" of section 5.2.5).
    Off,
}

/// Tiering configuration (`EngineConfig::tier`; `None` = one tier, the engine as without it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TierConfig {
    /// The fast tier's share of `maxmemory` (0 < share < 1); the slow tier gets the rest.
    pub fast_share: f64,
    /// The slow tier's backend: `emulated:<ns>`, `file:<path>` or `numa:<node>`.
    pub slow_backend: SlowBackend,
    /// A tier's worker starts when its free share falls below this (sdTMM `lowMem`).
    pub low_watermark: f64,
    /// ... and stops when the free share reaches this (sdTMM `highMem`).
    pub high_watermark: f64,
    /// Items demoted per demotion step.
    pub demotion_batch: u32,
    /// Items evicted per slow-tier eviction step.
    pub eviction_batch: u32,
    /// Items promoted per promotion step.
    pub promotion_batch: u32,
    /// Slow-tier items a promotion step examines from the head of each tenant's slow list.
    pub promotion_scan: u32,
    /// Where new items enter the fast tier's LRU list, as a fraction of its length from the
    /// tail (0 = at the tail, 1 = at the head).
    pub fast_insertion: f64,
    /// Where demoted items enter the slow tier's LRU list, likewise.
    pub slow_insertion: f64,
    /// Hotness test of the promotion worker.
    pub promotion: PromotionMode,
    /// Fast-tier re-accesses in the rolling window whose mean reuse time is the threshold.
    pub reuse_window: u32,
    /// Data-path accesses (GET, SET, DEL) between two runs of the workers (0: only when the
    /// caller runs them with `Engine::run_tier_workers`).
    pub worker_interval: u64,
}

impl Default for TierConfig {
    fn default() -> Self {
        Self {
            fast_share: DEFAULT_FAST_SHARE,
            slow_backend: SlowBackend::default(),
            low_watermark: DEFAULT_LOW_WATERMARK,
            high_watermark: DEFAULT_HIGH_WATERMARK,
            demotion_batch: DEFAULT_BATCH,
            eviction_batch: DEFAULT_BATCH,
            promotion_batch: DEFAULT_BATCH,
            promotion_scan: DEFAULT_PROMOTION_SCAN,
            fast_insertion: DEFAULT_FAST_INSERTION,
            slow_insertion: DEFAULT_SLOW_INSERTION,
            promotion: PromotionMode::Reuse,
            reuse_window: DEFAULT_REUSE_WINDOW,
            worker_interval: DEFAULT_WORKER_INTERVAL,
        }
    }
}

impl TierConfig {
    /// The fast and slow tiers' page budgets for `pages_total` pages.
    pub fn split_pages(&self, pages_total: u64) -> [u64; 2] {
        let fast = ((pages_total as f64 * self.fast_share).floor() as u64).clamp(1, pages_total);
        [fast, pages_total - fast]
    }

    /// Every problem, each naming its key under `tier.`; `pages_total` is `maxmemory` in pages.
    pub fn problems(&self, pages_total: u64) -> Vec<String> {
        let mut p = Vec::new();
        if !(self.fast_share > 0.0 && self.fast_share < 1.0) {
            p.push(format!(
                "tier.fast_share: {} must be above 0 and below 1 (the fast tier is a share of maxmemory; 1 or more leaves no slow tier)",
                self.fast_share
            ));
        } else if pages_total >= 2 {
            let [fast, slow] = self.split_pages(pages_total);
            if slow == 0 || fast == 0 {
                p.push(format!(
                    "tier.fast_share: {} of {pages_total} pages leaves a tier without a page",
                    self.fast_share
                ));
            }
        } else {
            p.push(format!(
                "tier.fast_share: maxmemory holds {pages_total} page(s); two tiers need at least 2"
            ));
        }
        for (key, v) in [
            ("tier.low_watermark", self.low_watermark),
            ("tier.high_watermark", self.high_watermark),
        ] {
            if !(0.0..1.0).contains(&v) {
                p.push(format!("{key}: {v} must be in [0, 1)"));
            }
        }
        if self.low_watermark > self.high_watermark {
            p.push(format!(
                "tier.low_watermark: {} is above tier.high_watermark {} (the watermarks are out of order)",
                self.low_watermark, self.high_watermark
            ));
        }
        for (key, v) in [
            ("tier.fast_insertion", self.fast_insertion),
            ("tier.slow_insertion", self.slow_insertion),
        ] {
            if !(0.0..=1.0).contains(&v) {
                p.push(format!(
                    "{key}: {v} must be in [0, 1] (a fraction of the list from its tail)"
                ));
            }
        }
        for (key, v) in [
            ("tier.demotion_batch", self.demotion_batch),
            ("tier.eviction_batch", self.eviction_batch),
            ("tier.promotion_batch", self.promotion_batch),
            ("tier.promotion_scan", self.promotion_scan),
            ("tier.reuse_window", self.reuse_window),
        ] {
            if v == 0 {
                p.push(format!("{key}: must be at least 1"));
            }
        }
        match &self.slow_backend {
            SlowBackend::Emulated { .. } => {}
            SlowBackend::Numa { node } => {
                if !crate::region::numa_node_exists(*node) {
                    p.push(format!(
                        "tier.slow_backend: NUMA node {node} does not exist on this machine (see /sys/devices/system/node)"
                    ));
                }
            }
            SlowBackend::File { path } => {
                if let Err(e) = crate::region::file_writable(path) {
                    p.push(format!("tier.slow_backend: {e}"));
                }
            }
        }
        p
    }
}

/// Evictions of one tier, by cause.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierEvictions {
    /// On the allocation path, when the tier was full (fast: a new item or fill; slow: a
    /// demotion needed room).
    pub reactive: u64,
    /// By the slow tier's eviction worker (free space below the low watermark).
    pub proactive: u64,
    /// Collateral: the page holding it was taken for another size class.
    pub page_reclaim: u64,
}

impl TierEvictions {
    /// All causes.
    pub fn total(&self) -> u64 {
        self.reactive + self.proactive + self.page_reclaim
    }
}

/// One tenant's figures in one tier.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierCounters {
    /// Pages owned in the tier.
    pub pages: u64,
    /// Items in the tier.
    pub items: u64,
    /// Chunk bytes charged for them.
    pub charged_bytes: u64,
    /// GET hits served from the tier.
    pub hits: u64,
    /// Items moved into the tier by a worker (promotions into fast, demotions into slow).
    pub moved_in: u64,
    /// Evictions from the tier.
    pub evictions: TierEvictions,
}

/// One tenant's tier figures (index by [`Tier::index`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TenantTierStats {
    /// Fast then slow.
    pub tiers: [TierCounters; 2],
    /// Slow → fast moves.
    pub promotions: u64,
    /// Fast → slow moves.
    pub demotions: u64,
    /// Demotions made to give a promotion room (naiveTMM's chained moves).
    pub chained_demotions: u64,
    /// The fast tier's byte target (multi-tenant partitioning), if any.
    pub fast_target_bytes: Option<u64>,
}

/// The engine's tier figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TierStats {
    /// Page budget per tier.
    pub budget_pages: [u64; 2],
    /// Pages in use per tier.
    pub used_pages: [u64; 2],
    /// Chunk bytes charged per tier.
    pub charged_bytes: [u64; 2],
    /// Free share per tier, what the watermarks compare: free chunks of the tier's pages plus
    /// its pages not in use, over its budget in bytes.
    pub free_share: [f64; 2],
    /// The fast tier's rolling-window mean reuse time (accesses), if any re-access was seen.
    pub mean_reuse: Option<f64>,
    /// Worker runs so far.
    pub worker_runs: u64,
    /// The emulated slow-tier delay per access (ns), or 0.
    pub slow_access_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_parse_and_print() {
        for s in ["emulated:250", "file:/tmp/x", "numa:1"] {
            assert_eq!(s.parse::<SlowBackend>().unwrap().to_string(), s);
        }
        for bad in ["emulated", "emulated:x", "file:", "numa:-1", "dram:0"] {
            assert!(bad.parse::<SlowBackend>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_bad_setting_names_its_key() {
        let cfg = TierConfig {
            fast_share: 1.5,
            low_watermark: 0.1,
            high_watermark: 0.05,
            fast_insertion: 2.0,
            promotion_batch: 0,
            slow_backend: SlowBackend::Numa { node: 4096 },
            ..TierConfig::default()
        };
        let p = cfg.problems(100).join("\n");
        for key in [
            "tier.fast_share",
            "tier.low_watermark",
            "tier.fast_insertion",
            "tier.promotion_batch",
            "NUMA node 4096 does not exist",
        ] {
            assert!(p.contains(key), "{key} missing from {p}");
        }
        let file = TierConfig {
            slow_backend: SlowBackend::File {
                path: "/proc/no/such/dir/x".into(),
            },
            ..TierConfig::default()
        };
        assert!(
            file.problems(100)
                .join("")
                .contains("cannot be opened for writing")
        );
        assert!(TierConfig::default().problems(100).is_empty());
        let node0 = TierConfig {
            slow_backend: SlowBackend::Numa { node: 0 },
            ..TierConfig::default()
        };
        assert!(node0.problems(100).is_empty(), "node 0 always exists");
        assert_eq!(TierConfig::default().split_pages(100), [20, 80]);
    }
}
